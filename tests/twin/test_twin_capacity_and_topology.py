"""Loops (h) and (i) of issue 29 on real Slurm 24.11, per Slurm backend, with what the library renders.

(h) A Capacity Block ending. GIVEN a TrainingPlatform with ``capacity_block_events=PlatformCapacityEvents(
job_warning=JobWarning())`` and a twin cluster built from it, with gpu-1 and gpu-2 in the platform's block and gpu-3
and gpu-4 in another reservation, each pair running a job whose batch script and ``srun`` step trap SIGUSR1; WHEN EC2's
"Capacity Block Expiration Warning" for the block reaches the library's handler (its rendered rule must match it;
the AWS side is moto and Stubber, tests/support/twin/capacity.py) and the script it sends through SSM runs on the
login/head node of the twin; THEN the block's nodes are drained with the handler's reason, the other nodes are not,
and SIGUSR1 reaches the block's job steps (the default scope, ``STEPS``: scancel(1) "By default, signals other than
SIGKILL are not sent to the batch step") before EC2 starts terminating the instances: within the lead time minus
EC2's termination lead, in twin time (tests/support/twin/timescale.py).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.capacity_events import JobWarning, SlurmSignalScope
from fmconstructs.capacity_events.handler import index as handler_index
from fmconstructs.capacity_events.handler import lead as handler_lead
from fmconstructs.capacity_events.lead_times import TERMINATION_LEAD_MINUTES, CapacityKind
from fmconstructs.errors import FmValidationError
from fmconstructs.parallelcluster import topology as pc_topology
from fmconstructs.platform import Backend, PlatformCapacityEvents
from fmconstructs.topology.slurm import UNPLACED_SWITCH

from tests.support.platform import BLOCK
from tests.support.twin.capacity import (
    CapacityBridge,
    CapacityEventsArtifacts,
    capacity_events_artifacts,
    expiration_warning,
)
from tests.support.twin.cluster import TwinCluster
from tests.support.twin.fixtures import require_twin, wait_job, wait_until
from tests.support.twin.rendered import build_platform
from tests.support.twin.topology import HeadNode, TopologyFeed, head_node_setup, parallelcluster_node_prefix

BACKENDS = [Backend.PCS, Backend.PARALLELCLUSTER]
#: A reservation that is not the platform's block (its nodes must be left alone).
OTHER_BLOCK = "cr-0aaaabbbbccccdddd"
IN_BLOCK, OUTSIDE = ("gpu-1", "gpu-2"), ("gpu-3", "gpu-4")
#: A node of the block an operator drained before it ends (Slurm appends "[user@time]" to the reason).
OPERATOR_NODE, OPERATOR_REASON = "gpu-2", "ops: DIMM swap ticket 4711"
#: Where the twin jobs write what they saw (the shared /opt of the twin).
SIGNALS_DIR = "/opt/twin-capacity"
#: A job whose batch script and whose srun step (one task per node) each trap SIGUSR1 and note it; the step says
#: when it is ready. Bash runs a trap between two foreground commands, hence the short sleeps.
JOB_SCRIPT = f"""#!/bin/bash
out={SIGNALS_DIR}/$SLURM_JOB_ID
mkdir -p "$out"
trap 'echo "$(date +%s.%N) $(hostname -s)" >> "$out/batch-USR1"' USR1
srun --ntasks-per-node=1 bash -c '
  trap "echo \\$(date +%s.%N) \\$(hostname -s) >> {SIGNALS_DIR}/$SLURM_JOB_ID/step-USR1" USR1
  touch {SIGNALS_DIR}/$SLURM_JOB_ID/ready-$SLURM_PROCID
  while :; do sleep 0.2; done' &
while :; do sleep 0.2; done
"""


#: (backend, signal scope): the default scope (job steps) and BATCH, "for a script that traps the signal".
#: EC2's warning acts at the default lead (40 minutes); a longer lead (60) acts through the handler's schedule.
CASES = [
    (b, scope, lead) for b in BACKENDS for scope, lead in ((SlurmSignalScope.STEPS, 40), (SlurmSignalScope.BATCH, 60))
]
#: Which file of JOB_SCRIPT each scope must reach, and which it must not (scancel(1): by default "signals other than
#: SIGKILL are not sent to the batch step"; ``--batch`` "signals only the batch step, but not any other steps").
REACHES = {SlurmSignalScope.STEPS: ("step-USR1", "batch-USR1"), SlurmSignalScope.BATCH: ("batch-USR1", "step-USR1")}


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0].value}-{c[1].value}-lead{c[2]}")
def block_twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinCluster]:
    require_twin()
    backend, scope, lead = request.param
    events = PlatformCapacityEvents(drain_lead_minutes=lead, job_warning=JobWarning(slurm_signal_scope=scope))
    rendered = build_platform(backend, nodes=4, capacity_block_events=events)
    home = tmp_path_factory.mktemp(f"capacity-{backend.value}-{scope.value}")
    cluster = TwinCluster(rendered=rendered, home=home, nodes=4)
    try:
        cluster.start()
        assert cluster.slurm is not None
        cluster.slurm.wait_nodes_idle(timeout_s=90)
        cluster.slurm.install(f"{SIGNALS_DIR}/job.sh", JOB_SCRIPT, 0o755)
        yield cluster
    finally:
        cluster.stop()


def _run_script(cluster: TwinCluster) -> object:
    def run(script: str) -> tuple[int, str, str]:
        assert cluster.slurm is not None
        done = cluster.slurm.run(["/bin/bash", "-c", script], check=False, timeout_s=60)
        return done.returncode, done.stdout, done.stderr

    return run


def _start_job(cluster: TwinCluster, nodes: tuple[str, ...]) -> tuple[str, Path]:
    assert cluster.slurm is not None
    job = cluster.slurm.sbatch(
        "-p", cluster.partition, f"-N{len(nodes)}", "-w", ",".join(nodes), f"{SIGNALS_DIR}/job.sh"
    )
    wait_job(cluster, job, "RUNNING", 60)
    out = cluster.home / "opt" / Path(SIGNALS_DIR).name / job
    wait_until(f"job {job}'s steps ready", lambda: len(list(out.glob("ready-*"))) == len(nodes), 60)
    return job, out


def _first_signal(path: Path) -> float | None:
    if not path.exists() or not path.read_text().strip():
        return None
    return min(float(line.split()[0]) for line in path.read_text().splitlines() if line.strip())


def _bridge(cluster: TwinCluster, artifacts: CapacityEventsArtifacts) -> CapacityBridge:
    return CapacityBridge(artifacts, run_slurm_script=_run_script(cluster))  # type: ignore[arg-type]


def _fleet(cluster: TwinCluster, bridge: CapacityBridge, ends_at: dt.datetime) -> None:
    """The Slurm host, the platform's block (gpu-1, gpu-2) and another reservation (gpu-3, gpu-4)."""
    assert cluster.slurm is not None
    bridge.slurm_host()
    bridge.add_block(BLOCK, ends_at=ends_at, instance_count=len(IN_BLOCK))
    bridge.add_block(OTHER_BLOCK, ends_at=ends_at + dt.timedelta(days=2), instance_count=len(OUTSIDE))
    for names, reservation in ((IN_BLOCK, BLOCK), (OUTSIDE, OTHER_BLOCK)):
        for name in names:
            bridge.launch_into(reservation, private_ip=cluster.slurm.nodes[name].address)


def _expire(cluster: TwinCluster, bridge: CapacityBridge, lead: int) -> tuple[dict[str, Any], dt.datetime, dt.datetime]:
    """The block ends ``lead`` + a few minutes from now (library time). At EC2's 40 minutes the warning acts; a longer
    lead acts through the schedule the handler creates when the block is delivered. Returns the acting result, when
    the actions were due and when the block ends (library time)."""
    assert cluster.slurm is not None
    ahead = dt.timedelta(minutes=lead) + (
        handler_lead.MIN_AHEAD + dt.timedelta(minutes=1) if lead > 40 else dt.timedelta()
    )
    ends_at = bridge.now().replace(microsecond=0) + ahead
    _fleet(cluster, bridge, ends_at)
    if lead <= handler_lead.WARNING_MINUTES:
        due = bridge.now()
        result = bridge.deliver(expiration_warning(BLOCK, ends_at=ends_at))
        assert bridge.scheduler is not None and bridge.scheduler.schedules == []
        return result, due, ends_at
    delivered = bridge.deliver(expiration_warning(BLOCK, ends_at=ends_at, detail_type="Capacity Block Delivered"))
    print(f"on delivery: {delivered['message']}")
    assert bridge.commands == [] and not any("DRAIN" in cluster.slurm.state(n) for n in IN_BLOCK if n != OPERATOR_NODE)
    result, due = bridge.fire_due()
    assert due == ends_at - dt.timedelta(minutes=lead), (due, ends_at, lead)
    return result, due, ends_at


def test_h_capacity_block_ending_drains_its_nodes_and_signals_their_jobs(block_twin: TwinCluster) -> None:
    assert block_twin.slurm is not None
    artifacts = capacity_events_artifacts(block_twin.rendered.template)
    reached, spared = REACHES[SlurmSignalScope(artifacts.job_warning["slurm_scope"])]
    lead = artifacts.lead_minutes[CapacityKind.INSTANCES.value]
    in_job, in_out = _start_job(block_twin, IN_BLOCK)
    out_job, out_out = _start_job(block_twin, OUTSIDE)
    # An operator drains one of the block's nodes (its job runs on) before the block ends: their reason must stay.
    block_twin.slurm.run(
        ["scontrol", "update", f"nodename={OPERATOR_NODE}", "state=drain", f"reason={OPERATOR_REASON}"]
    )
    with _bridge(block_twin, artifacts) as bridge:
        result, due, ends_at = _expire(block_twin, bridge, lead)
        terminating = ends_at - dt.timedelta(minutes=TERMINATION_LEAD_MINUTES[CapacityKind.INSTANCES])
        margin_s = (terminating - due).total_seconds() / bridge.clock.factor
        print(f"lead {lead} min: {result['message']}")
        assert len(bridge.commands) == 1, bridge.commands
        assert result.get("drain_status") == "Success", result
        for name in IN_BLOCK:
            info = block_twin.slurm.node_info(name)
            reason = OPERATOR_REASON if name == OPERATOR_NODE else handler_index.DRAIN_REASON
            assert "DRAIN" in info["State"] and info.get("Reason", "").startswith(reason), info
        for name in OUTSIDE:
            assert "DRAIN" not in block_twin.slurm.state(name)
        seen = wait_until(f"SIGUSR1 in the block's job ({reached})", lambda: _first_signal(in_out / reached), margin_s)
        assert isinstance(seen, float)
        seen_at = bridge.library_time(seen)
    print(f"SIGUSR1 reached {reached} at end - {(ends_at - seen_at).total_seconds() / 60:.1f} min (library time)")
    assert due <= seen_at <= terminating, (due, seen_at, terminating)
    if reached == "step-USR1":
        assert set(IN_BLOCK) <= set((in_out / reached).read_text().split())  # every node's task got it
    time.sleep(1.0)  # what else the signal reached has had time to arrive
    assert not any((out_out / f).exists() for f in REACHES[SlurmSignalScope.STEPS]), "a job outside was signaled"
    assert not (in_out / spared).exists(), f"{artifacts.job_warning['slurm_scope']} scope also reached {spared}"
    for job in (in_job, out_job):
        block_twin.slurm.run(["scancel", job], check=False)


# --- (i) topology ---------------------------------------------------------------------------------------------------
#: Two leaf switches under one spine (p5.48xlarge has three network node layers: EC2 User Guide, topology
#: prerequisites), interleaved so that Slurm's node order (1, 2, ...) would straddle them: nodes 1 and 3 under LEAF_A,
#: 2 and 4 under LEAF_B. Network node ids: "nn-" and 17 hex digits (UNCONFIRMED form; the renderer treats ids as
#: opaque names).
TOP, SPINE = "nn-1000000000000000a", "nn-2000000000000000b"
LEAF_A, LEAF_B = "nn-3000000000000000c", "nn-4000000000000000d"


@pytest.fixture(scope="module")
def topology_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TwinCluster, HeadNode]]:
    require_twin()
    rendered = build_platform(Backend.PARALLELCLUSTER, nodes=4, slurm_topology=True)
    cluster = TwinCluster(rendered=rendered, home=tmp_path_factory.mktemp("topology-parallelcluster"), nodes=4)
    cluster.node_prefix = parallelcluster_node_prefix(cluster)
    heads: list[HeadNode] = []

    def on_node_start(twin: TwinCluster) -> None:
        heads.append(HeadNode(twin))
        head_node_setup(heads[0])

    cluster.before_controller = on_node_start
    try:
        cluster.start()
        assert cluster.slurm is not None
        cluster.slurm.wait_nodes_idle(timeout_s=90)
        yield cluster, heads[0]
    finally:
        cluster.stop()


def _leaves(cluster: TwinCluster) -> dict[str, set[str]]:
    names = cluster.node_names
    return {LEAF_A: {names[0], names[2]}, LEAF_B: {names[1], names[3]}}


def _node_list(cluster: TwinCluster, job: str) -> set[str]:
    assert cluster.slurm is not None
    out = cluster.slurm.run(["scontrol", "show", "hostnames", cluster.slurm.job_info(job)["NodeList"]]).stdout
    return set(out.split())


def test_i_topology_from_describe_instance_topology_reaches_slurmctld(
    topology_twin: tuple[TwinCluster, HeadNode],
) -> None:
    cluster, head = topology_twin
    assert cluster.slurm is not None
    conf = cluster.home / "opt" / pc_topology.TOPOLOGY_CONF_PATH.removeprefix("/opt/")
    initial = cluster.rendered.bootstrap("SlurmTopology").files()[f"{pc_topology.TOPOLOGY_DIR}/topology.conf.initial"]
    assert conf.read_text() == initial[0]  # OnNodeStart left the library's first file for slurmctld's start
    assert ("TopologyPlugin", "topology/tree") in cluster.settings()
    assert f"enable --now {pc_topology.UNIT}.timer" in head.calls("systemctl-calls.log")
    leaves = _leaves(cluster)
    # Before EC2's topology arrives, every node sits under the unplaced switch: a two-node job takes Slurm's first two
    # nodes, which straddle the two leaf switches EC2 is about to report (what the loop below must change).
    before = cluster.slurm.sbatch("-p", cluster.partition, "-N2", "--wrap", "sleep 300")
    wait_job(cluster, before, "RUNNING", 60)
    straddling = _node_list(cluster, before)
    cluster.slurm.run(["scancel", before], check=False)
    print(f"before the refresh, job {before}: {sorted(straddling)}")
    assert all(not straddling <= members for members in leaves.values()), straddling
    from moto import mock_aws

    with mock_aws():
        feed = TopologyFeed(head, cluster_name=head.environment()["FM_CLUSTER_NAME"])
        for name in cluster.node_names:
            feed.launch(name, cluster.slurm.nodes[name].address)
        feed.write({node: (TOP, SPINE, leaf) for leaf, nodes in leaves.items() for node in sorted(nodes)})
        done = head.refresh()
        print(f"refresh exit {done.returncode}: {done.stderr.strip()}\n{conf.read_text()}")
        assert done.returncode == 0, done.stderr
        calls = feed.check_calls()
    assert [c[:2] for c in calls] == [["ec2", "describe-instances"], ["ec2", "describe-instance-topology"]]
    shown = cluster.slurm.run(["scontrol", "show", "topology"]).stdout
    print(shown)
    for leaf, nodes in leaves.items():
        line = next(line for line in shown.splitlines() if f"SwitchName={leaf}" in line)
        assert all(node in _expand(cluster, line) for node in nodes), line
    assert UNPLACED_SWITCH not in shown  # every node was placed
    again = head.refresh()
    assert again.returncode == 0 and "reconfigure" not in again.stderr  # unchanged file: no reconfigure


def _expand(cluster: TwinCluster, line: str) -> set[str]:
    assert cluster.slurm is not None
    nodes = next(part.split("=", 1)[1] for part in line.split() if part.startswith("Nodes="))
    return set(cluster.slurm.run(["scontrol", "show", "hostnames", nodes]).stdout.split())


def test_i_two_node_jobs_land_inside_one_leaf_switch(topology_twin: tuple[TwinCluster, HeadNode]) -> None:
    cluster, _ = topology_twin
    assert cluster.slurm is not None
    cluster.slurm.wait_nodes_idle(timeout_s=30)
    if "nn-" not in cluster.slurm.run(["scontrol", "show", "topology"]).stdout:
        pytest.fail("the topology of test_i_topology_from_describe_instance_topology_reaches_slurmctld is not loaded")
    leaves = _leaves(cluster)
    first = cluster.slurm.sbatch("-p", cluster.partition, "-N2", "--wrap", "sleep 300")
    second = cluster.slurm.sbatch("-p", cluster.partition, "-N2", "--switches=1", "--wrap", "sleep 300")
    try:
        placed = []
        for job in (first, second):
            wait_job(cluster, job, "RUNNING", 60)
            nodes = _node_list(cluster, job)
            print(f"job {job}: {sorted(nodes)}")
            assert any(nodes == members for members in leaves.values()), (nodes, leaves)
            placed.append(nodes)
        assert placed[0] != placed[1]
    finally:
        cluster.slurm.run(["scancel", first, second], check=False)


def test_i_a_job_larger_than_a_leaf_waits_for_switches_or_spans_the_spine(
    topology_twin: tuple[TwinCluster, HeadNode],
) -> None:
    """sbatch(1) --switches: "If Slurm finds an allocation containing more switches than the count specified, the job
    remains pending until it either finds an allocation with desired switch count or the time limit expires";
    without it, topology.conf(5): jobs span nodes connected by the same switch fabric (here the spine)."""
    cluster, _ = topology_twin
    assert cluster.slurm is not None
    cluster.slurm.wait_nodes_idle(timeout_s=30)
    strict = cluster.slurm.sbatch("-p", cluster.partition, "-N3", "--switches=1@10:00", "--wrap", "sleep 300")
    try:
        time.sleep(3.0)  # several scheduling passes (job submission triggers one) with four idle nodes
        info = cluster.slurm.job_info(strict)
        print(f"job {strict} with --switches=1: {info.get('JobState')} Reason={info.get('Reason')}")
        assert info.get("JobState") == "PENDING", info
    finally:
        cluster.slurm.run(["scancel", strict], check=False)
    spanning = cluster.slurm.sbatch("-p", cluster.partition, "-N3", "--wrap", "sleep 300")
    try:
        wait_job(cluster, spanning, "RUNNING", 60)
        nodes = _node_list(cluster, spanning)
        print(f"job {spanning} without --switches: {sorted(nodes)}")
        assert len(nodes) == 3 and all(not nodes <= members for members in _leaves(cluster).values())
    finally:
        cluster.slurm.run(["scancel", spanning], check=False)


@pytest.mark.xfail(
    strict=True,
    raises=FmValidationError,
    reason="open: TrainingPlatform refuses slurm_topology on PCS, while the PCS User Guide page 'Network "
    "topology-aware scheduling in AWS PCS' (network-topology) says PCS itself tells Slurm where each node sits "
    "(topology/tree, enabled per queue, --switches); how a queue enables it is in neither botocore 1.44.8's PCS model "
    "nor aws-cdk-lib 2.275.0's CfnQueue (UNCONFIRMED), so fmconstructs has nothing to render or feed the twin",
)
def test_i_pcs_topology_from_the_library() -> None:
    build_platform(Backend.PCS, nodes=4, slurm_topology=True)
