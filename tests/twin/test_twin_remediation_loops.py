"""Loops b, c, d and f of issue 29 end to end: real Slurm 24.11, node_exporter, Prometheus and Alertmanager, and the
remediation handler's code, all fed with one synthesized TrainingPlatform per Slurm backend (tests/support/twin/
world.py).

GIVEN a p5.48xlarge TrainingPlatform on PCS, ParallelCluster or HyperPod Slurm with remediation acting
(``PlatformHealth(remediation=RemediationPolicy(dry_run=False, job_kill=JobKill.FATAL), replace_nodes=True)``: the
documented way to let a fatal Xid end the job on its node; the rest of the policy is the default, 2 replacements per
hour) and a twin world built from it, WHEN faults are injected through the nodes' fake tools, THEN the alert fires,
the handler acts on Slurm through SSM and EC2, and the cluster heals (PCS: the handler terminates the instance;
ParallelCluster: the twin's clustermgtd replaces DOWN/DRAINED nodes; HyperPod Slurm, the same platform there: the
handler calls BatchReplaceClusterNodes and sets no Slurm state, the twin replaces the node as HyperPod would,
test_twin_remediation_loops_hyperpod.py says what these loops found there before). One world per backend.

A requeued job starts no sooner than cred_expire + 1 s after its requeue: Slurm sets its BeginTime to now + the
credential lifetime + 1 (Slurm 24.11 src/slurmctld/job_mgr.c ``batch_requeue_fini``: ``begin_time = now +
cred_lifetime + 1``; src/interfaces/cred.h ``DEFAULT_EXPIRATION_WINDOW 120``, ``AuthInfo=cred_expire=`` changes it;
neither PCS's custom settings nor the library set it, so on AWS the delay is 121 s). The twin's own slurm.conf sets
``cred_expire`` to 15 s (tests/support/twin/slurm.py ``CRED_EXPIRE_S``): the delay is 16 s. The job-completion test
still comes last, so the other loops run inside that delay.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.platform import Backend, PlatformHealth
from fmconstructs.remediation import HELD_BACK_METRIC, HELD_BACK_NAMESPACE, JobKill, RemediationPolicy

from tests.support.twin.fixtures import ran_on, require_twin, submit, wait_job, wait_until
from tests.support.twin.nodes import HEALTHY
from tests.support.twin.rendered import build_platform
from tests.support.twin.slurm import REQUEUE_DELAY_S  # the twin's requeue delay (module docstring)
from tests.support.twin.world import TwinWorld

#: This file runs the loops on PCS; test_twin_remediation_loops_parallelcluster.py runs the same tests on
#: ParallelCluster (one file per backend, so that `pytest -n 2 --dist loadfile` runs them side by side).
BACKENDS = [Backend.PCS]
POLICY = RemediationPolicy(dry_run=False, job_kill=JobKill.FATAL)
ALERT_S = 45  # real seconds: for 2m (2 s), scrapes, group_wait, the handler, on a shared 2-core host
REPLACE_S = 90  # the node's new instance boots (gate checks) and is scraped again
JOBS: dict[Backend, dict[str, str]] = {}
#: gpu-2: loop d; gpu-3: loop c; gpu-4: loop b; gpu-1, gpu-2, gpu-5: loop f's burst (3 = the limit of 2, plus one)
NODES = 5


@pytest.fixture(scope="module", params=BACKENDS, ids=lambda b: b.value)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinWorld]:
    yield from backend_world(request.param, tmp_path_factory)


def backend_world(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinWorld]:
    """The world of ``backend``, its nodes idle (both backends' files use it)."""
    require_twin()
    rendered = build_platform(backend, nodes=NODES, health=PlatformHealth(remediation=POLICY, replace_nodes=True))
    home: Path = tmp_path_factory.mktemp(f"world-{backend.value}")
    twin = TwinWorld(rendered=rendered, home=home, nodes=NODES)
    try:
        twin.start()
        for name in twin.cluster.node_names:
            twin.slurm.wait_node(name, r"^IDLE", timeout_s=90)
        JOBS[backend] = {}
        yield twin
    finally:
        twin.close()


def _held(state: dict[str, str]) -> bool:
    return "held" in state.get("Reason", "").lower() or state.get("Priority") == "0"


def _requeued(world: TwinWorld, job: str) -> dict[str, str]:
    info: dict[str, str] = wait_until(  # type: ignore[assignment]
        f"job {job} requeued",
        lambda: (lambda i: i if i.get("Restarts", "0") != "0" else None)(world.slurm.job_info(job)),
        60,
    )
    return info


def _wait_started(world: TwinWorld, job: str) -> None:
    """Until the job's batch script runs (it logs where it ran): RUNNING alone is seen while its prolog still runs
    (PrologFlags=Alloc), and a fault injected then fails the prolog, not the job."""
    wait_until(f"job {job}'s script to start", lambda: job in ran_on(world.cluster), 60)


def _wait_record(world: TwinWorld, instance: str, trigger: str) -> dict[str, Any]:
    record = world.bridge.wait_for_record(instance=instance, trigger=trigger, timeout_s=ALERT_S)
    notices = [n.get("Message", "") for n in world.bridge.notices if instance in str(n.get("Subject", ""))]
    return {**record, "notices": notices}


def _replacement_passes_its_gate(world: TwinWorld, name: str, new_instance: str) -> None:
    assert world.slurm.nodes[name].instance_id == new_instance
    boot = world.slurm.nodes[name].textfile_dir / "fm_node_checks_boot.prom"
    wait_until(f"{name}'s boot checks", boot.exists, REPLACE_S)
    text = wait_until(  # the gate writes the file once its checks ran
        f"{name}'s boot check results",
        lambda: boot.read_text() if "fm_node_check_status" in boot.read_text() else "",
        30,
    )
    assert re.search(r"^fm_node_check_status\{.*\} 1$", str(text), re.M), text
    assert not re.search(r"^fm_node_check_status\{.*\} 0$", str(text), re.M), text
    world.slurm.wait_node(name, r"^(IDLE|MIXED|ALLOCATED)(?!.*DRAIN)", timeout_s=REPLACE_S)


def test_b_a_prolog_check_failure_requeues_drains_alerts_and_replaces(world: TwinWorld) -> None:
    name = "gpu-4"
    old = world.slurm.nodes[name].instance_id
    # A one-second job keeps the node MIXED while the fault appears, so that the between-jobs check (PCS:
    # HealthCheckProgram on IDLE nodes, CYCLE) cannot drain it before the job's prolog meets the fault; seen in the
    # twin: the idle check drained gpu-4 first and the job never started (so was never requeued). It ends before
    # the alert fires, so the node is idle when remediation looks (a busy node would wait: replace-deferred).
    guard = submit(world.cluster, "-N1", "-w", name, seconds=1)
    _wait_started(world, guard)
    world.cluster.set_scenario(name, HEALTHY.but(efa_devices=31))
    job = submit(world.cluster, "-N1", "-w", name, "--requeue", seconds=2)
    JOBS[world.backend]["b"] = job
    info = world.slurm.wait_node(name, r"DRAIN|DOWN", timeout_s=60)
    if world.backend is not Backend.PARALLELCLUSTER:
        assert info.get("Reason", "").startswith(("Prolog error", "fmconstructs:")), info
    else:  # clustermgtd (1 s loops) may have set its own reason already: what it saw was Slurm's drain
        mgtd = world.clustermgtd
        assert mgtd is not None
        wait_until(f"clustermgtd to see {name} drained", lambda: [s for s in mgtd.seen if s[0] == name], 30)
        (seen,) = [s for s in mgtd.seen if s[0] == name]
        assert "DRAIN" in seen[1] and seen[2].startswith("Prolog error"), seen
    state = _requeued(world, job)
    assert state.get("JobState") == "PENDING" and not _held(state), state
    # PCS: the prolog's failed check reaches Prometheus, the alert fires and the handler replaces the node (within
    # the hourly limit). ParallelCluster: Slurm's drain ("Prolog error") makes the node DRAINED, which clustermgtd
    # replaces within a loop (seen 0.1 s after the drain, before any scrape), before FmNodeCheckFailed's 2 minutes
    # and outside remediation's limit (ParallelCluster's own rule, see world.Clustermgtd). HyperPod: as PCS, the
    # handler's BatchReplaceClusterNodes.
    if world.backend is not Backend.PARALLELCLUSTER:
        series = f'fm_node_check_status{{instance_id="{old}",check="efa-devices",mode="prolog"}}'
        world.monitoring.prometheus.wait_for_query(
            f"min_over_time({series}[1m]) == 0", lambda result: len(result) == 1, ALERT_S
        )
        alert = world.monitoring.prometheus.wait_for_alert(
            "FmNodeCheckFailed", labels={"instance_id": old}, timeout_s=ALERT_S
        )
        assert alert["labels"]["check"] == "efa-devices", alert
        record = _wait_record(world, old, "node-check-failed")
        assert record["outcome"] == "replaced", record
    replacement = world.wait_replaced(name, old, REPLACE_S)
    assert replacement.by == ("clustermgtd" if world.backend is Backend.PARALLELCLUSTER else "handler")
    _replacement_passes_its_gate(world, name, replacement.new_instance)


def test_c_a_fatal_xid_during_a_job_replaces_the_node_and_requeues_the_job(world: TwinWorld) -> None:
    name = "gpu-3"
    old = world.slurm.nodes[name].instance_id
    job = submit(world.cluster, "-N1", "-w", name, "--requeue", seconds=20)
    JOBS[world.backend]["c"] = job
    _wait_started(world, job)
    world.cluster.set_scenario(name, HEALTHY.but(xids=(79,)))  # the GPU falls off the bus mid-job
    alert = world.monitoring.prometheus.wait_for_alert("GpuCriticalXid", labels={"instance_id": old}, timeout_s=ALERT_S)
    assert alert["labels"]["xid_class"] == "fatal" and float(alert["value"]) == 79, alert
    record = _wait_record(world, old, "fatal-xid")
    assert record["outcome"] == ("replace-requested" if world.backend is Backend.PARALLELCLUSTER else "replaced"), (
        record
    )
    state = _requeued(world, job)
    assert state.get("JobState") == "PENDING" and not _held(state), state
    replacement = world.wait_replaced(name, old, REPLACE_S)
    _replacement_passes_its_gate(world, name, replacement.new_instance)


def test_d_a_contained_xid_ends_no_node(world: TwinWorld) -> None:
    name = "gpu-2"
    old = world.slurm.nodes[name].instance_id
    job = submit(world.cluster, "-N1", "-w", name, seconds=6)
    _wait_started(world, job)
    world.cluster.set_scenario(name, HEALTHY.but(xids=(94,)))
    alert = world.monitoring.prometheus.wait_for_alert(
        "GpuContainedXid", labels={"instance_id": old}, timeout_s=ALERT_S
    )
    assert alert["labels"]["fmconstructs_trigger"] == "contained-xid", alert
    record = _wait_record(world, old, "contained-xid")
    assert record["outcome"] == "notified" and record["action"] == "notify", record
    done = wait_job(world.cluster, job, "COMPLETED", 60)
    assert done.get("Restarts") == "0", done
    # the node keeps taking work: its prolog checks pass with Xid 94 in the kernel log
    after = submit(world.cluster, "-N1", "-w", name, seconds=0.5)
    wait_job(world.cluster, after, "COMPLETED", 60)
    assert "DRAIN" not in world.slurm.state(name) and "DOWN" not in world.slurm.state(name)
    assert world.slurm.nodes[name].instance_id == old
    assert not [r for r in world.replacements if r.old_instance == old]


def test_f_a_burst_beyond_the_rate_limit_only_drains_the_excess(world: TwinWorld) -> None:
    limit = int(world.bridge.artifacts.policy["max_replacements_per_hour"])
    burst = ["gpu-1", "gpu-2", "gpu-5"][: limit + 1]  # not gpu-3, gpu-4: loops b and c's jobs wait for them
    time.sleep(world.clock.twin_seconds_until_next_hour() + 0.5)  # a fresh hourly window (one twin minute)
    old = {name: world.slurm.nodes[name].instance_id for name in burst}
    before = len(world.replacements)
    seen_before = len(world.clustermgtd.seen) if world.clustermgtd is not None else 0
    for name in burst:  # the fatal Xid on idle nodes: the same alert for all, grouped by Alertmanager
        world.cluster.set_scenario(name, HEALTHY.but(xids=(79,)))
    records = {name: _wait_record(world, old[name], "fatal-xid") for name in burst}
    outcomes = sorted(r["outcome"] for r in records.values())
    replaced = "replace-requested" if world.backend is Backend.PARALLELCLUSTER else "replaced"
    assert outcomes == sorted([replaced] * limit + ["rate-limited"]), records
    (held,) = [name for name, r in records.items() if r["outcome"] == "rate-limited"]
    # the handler's log line the construct's metric filter counts, for the target's cluster
    lines = [e for e in world.handler_log if e.get("outcome") == "rate-limited" and e.get("event") == "remediation"]
    assert [e["instance"] for e in lines] == [old[held]], world.handler_log
    assert lines[0]["cluster"] == world.bridge.artifacts.target["cluster"]
    _held_back_filter_counts(world, lines[0])
    time.sleep(10)  # long enough for every replacement the handler asked for and for two clustermgtd loops
    info = world.slurm.node_info(held)
    if world.backend is Backend.PCS:  # drained with remediation's reason
        assert "DRAIN" in info["State"] and info["Reason"].startswith("fmconstructs: remediation fatal-xid"), info
    elif world.backend is Backend.HYPERPOD:  # the handler sets no Slurm state there (no SSM Run Command)
        assert not re.search("DRAIN|DOWN", info["State"]), info
        (notice,) = [n for n in world.bridge.notices if str(n.get("Subject", "")).startswith("[rate-limited]")]
        assert "not replaced and not drained" in notice["Message"], notice
    else:  # held in a reservation: clustermgtd replaces a DRAIN or DOWN node at once, whatever the reason
        assert "RESERVED" in info["State"] and not re.search("DRAIN|DOWN", info["State"]), info
        assert info.get("Comment", "").startswith("fmconstructs: remediation fatal-xid"), info
        assert world.clustermgtd is not None and held not in [seen[0] for seen in world.clustermgtd.seen[seen_before:]]
    assert world.slurm.nodes[held].instance_id == old[held], world.replacements[before:]
    assert len(world.replacements) - before == limit, world.replacements[before:]


def _held_back_filter_counts(world: TwinWorld, line: dict[str, Any]) -> None:
    """The rendered metric filter selects the handler's line: each ``$.field = "value"`` term of its pattern holds,
    and the metric is the construct's (namespace, name, dimension Cluster from ``$.cluster``)."""
    filters = world.rendered.resources("AWS::Logs::MetricFilter")
    (metric_filter,) = [
        f["Properties"]
        for f in filters.values()
        if f["Properties"]["MetricTransformations"][0]["MetricName"] == HELD_BACK_METRIC
    ]
    transformation = metric_filter["MetricTransformations"][0]
    assert transformation["MetricNamespace"] == HELD_BACK_NAMESPACE
    assert transformation["Dimensions"] == [{"Key": "Cluster", "Value": "$.cluster"}]
    terms = re.findall(r'\(\$\.(\w+)\s*=\s*"([^"]*)"\)', metric_filter["FilterPattern"])
    rest = re.sub(r'\(\$\.\w+\s*=\s*"[^"]*"\)|&&|[{}\s]', "", metric_filter["FilterPattern"])
    assert terms and not rest, metric_filter["FilterPattern"]  # only equality terms joined by &&
    assert all(str(line.get(key)) == value for key, value in terms), (terms, line)


def test_b_and_c_the_requeued_jobs_complete_on_the_replacements(world: TwinWorld) -> None:
    for loop in ("b", "c"):
        job = JOBS[world.backend][loop]
        done = wait_job(world.cluster, job, "COMPLETED", REQUEUE_DELAY_S + 60)
        assert int(done.get("Restarts", "0")) >= 1 and not _held(done), done
        assert ran_on(world.cluster).get(job) == {"gpu-4" if loop == "b" else "gpu-3"}
