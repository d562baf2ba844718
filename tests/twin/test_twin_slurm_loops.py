"""The day-2 loops on real Slurm 24.11, per Slurm backend, with what the library renders (issue 29, loops a, b, e).

GIVEN a TrainingPlatform synthesized on the backend (node checks, observability, remediation on) and a twin cluster
built from it (tests/support/twin/), WHEN nodes boot and jobs run with faults injected through the nodes' fake tools,
THEN the loops hold. One cluster per backend for the whole module: jobs are queued before the nodes boot, so the
first job meets a node the moment its slurmd registers (the window a dynamic node has before its boot gate).

Backends: PCS, ParallelCluster and HyperPod Slurm (API-driven configuration, TrainingPlatform's default there:
HyperPod's AMI configures and starts Slurm, then each group's OnInitComplete runs the library's set-up; the twin's
profile is tests/support/twin/cluster.py ``PROFILES``). On HyperPod the library renders the job mapping's
prolog.d/epilog.d pieces, the node checks (fmconstructs.hyperpod.node_health: the boot gate in the GPU group's
OnInitComplete set-up, the prolog checks as ``95_fmconstructs_node_checks.sh`` in the AMI's prolog.d, no DCGM:
HyperPod's InstanceStress deep health check runs DCGM level 4) and, on the controller, the PrologFlags and
``nohold_on_prolog_fail`` merge into slurm.conf; a replacement is HyperPod's (the twin's
``TwinCluster.hyperpod_replace``, what BatchReplaceClusterNodes does in test_twin_remediation_loops_hyperpod.py).

What loops (a) and (b) found on HyperPod before its fix: the library rendered no node checks there ("HyperPod runs its
own deep health checks and node recovery"), so the 7-GPU node gpu-2 took jobs (seen: the module's HyperPod test then
asserted a job on gpu-2; HyperPod's GPU count deep health check would catch that one, but its documented checks test
neither the expected EFA device count of the launch layout nor the Lustre mount) and loop (b) had no prolog check to
meet (it skipped). With the checks rendered, the controller also merges ``nohold_on_prolog_fail`` (whether the AMI's
slurm.conf sets it is UNCONFIRMED; without it Slurm holds a job whose prolog failed). The gate runs inline in
OnInitComplete and must never make it fail (a failing lifecycle script fails the cluster's creation): it drains and
the step goes on.

- loop (e) (an operator-drained node is never touched) is the library's everywhere: its pieces and set-up must leave
  the drain as it is through jobs, prologs, epilogs and a replacement's set-up. It runs on all three backends, and
  on PCS also with the between-jobs HealthCheckProgram (the only backend where the library renders one).

What loop (e) found on PCS before its fix: the boot gate drained the node while it checked ("look, then write":
Slurm has no compare-and-set), so an operator's drain landing between the gate's look and its drain was overwritten
and then resumed; the twin saw the operator-drained node MIXED, running a job. The gate now reserves the node while
it checks (fmconstructs.health.slurm_gate ``reserve_while_checking``) and never writes a passing node's state.
Loop (b) was marked open on PCS and ParallelCluster; what kept it from passing was the loop's own timing, not the
library: the node was faulted while its own gate still ran (so the gate drained it and the job never started) or an
earlier job met the fault first. It now waits for the node's set-up, clears earlier jobs and faults the node while a
job runs there (so neither the gate nor the idle check sees the fault before the next job's prolog).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fmconstructs.platform import Backend
from fmconstructs.remediation.handler.backends import slurm_script

from tests.support.twin.cluster import TwinCluster
from tests.support.twin.fixtures import ran_on, require_twin, submit, wait_until
from tests.support.twin.nodes import HEALTHY
from tests.support.twin.rendered import build_platform

BACKENDS = [Backend.PCS, Backend.PARALLELCLUSTER, Backend.HYPERPOD]
OPERATOR_REASON = "ops: DIMM swap ticket 4711"
#: gpu-1 healthy, gpu-2 fails its boot checks (7 GPUs), gpu-3 drained by an operator, gpu-4 healthy at boot and
#: loses an EFA device later (a prolog failure).
SCENARIOS = {"gpu-2": HEALTHY.but(gpus=7)}
#: A test of the HyperPod cluster only (the module's one, shared with the other tests).
HYPERPOD_ONLY = pytest.mark.parametrize("twin", [Backend.HYPERPOD], indirect=True, ids=["hyperpod"])


@pytest.fixture(scope="module", params=BACKENDS, ids=lambda b: b.value)
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinCluster]:
    require_twin()
    rendered = build_platform(request.param, nodes=4)
    home: Path = tmp_path_factory.mktemp(f"twin-{request.param.value}")
    cluster = TwinCluster(rendered=rendered, home=home, nodes=4)
    try:
        cluster.start(SCENARIOS, boot=False)
        assert cluster.slurm is not None
        cluster.early_jobs = [submit(cluster, "-N1") for _ in range(6)]  # type: ignore[attr-defined]
        cluster.boot_all()
        cluster.slurm.run(["scontrol", "update", "nodename=gpu-3", "state=drain", f"reason={OPERATOR_REASON}"])
        yield cluster
    finally:
        cluster.stop()


def test_a_node_failing_its_boot_checks_never_runs_a_job(twin: TwinCluster) -> None:
    assert twin.slurm is not None
    # Jobs queued before the nodes boot meet gpu-2 the moment its slurmd registers: its prolog checks fail, the job
    # is requeued (not held) and runs elsewhere once Slurm's requeue delay passes; gpu-2 never runs one.
    wait_until("a job to run", lambda: ran_on(twin), 60)
    for job in twin.early_jobs:  # type: ignore[attr-defined]
        state = twin.slurm.job_info(job)
        assert "held" not in state.get("Reason", "").lower() and state.get("Priority") != "0", state
    ran = {node for nodes in ran_on(twin).values() for node in nodes}
    assert "gpu-2" not in ran
    # PCS drains a failing node; ParallelCluster holds it in a reservation of its own instead (GateHold: a DRAIN
    # node would be replaced by clustermgtd before the alert fires), the check's reason in the node's comment.
    pattern = r"RESERVED|DRAIN" if twin.rendered.backend is Backend.PARALLELCLUSTER else r"DRAIN"
    info = twin.slurm.wait_node("gpu-2", pattern, timeout_s=60)
    reason = info.get("Reason", "") + info.get("Comment", "")
    assert "fmconstructs: gpu-count: 7 GPUs visible, expected 8" in reason or "Prolog error" in reason, info


def test_a_boot_gate_failure_names_the_check_in_the_metrics(twin: TwinCluster) -> None:
    assert twin.slurm is not None
    textfile = twin.slurm.nodes["gpu-2"].textfile_dir / "fm_node_checks_boot.prom"
    wait_until("gpu-2's boot check metrics", textfile.exists, 60)
    text = textfile.read_text()
    assert 'fm_node_check_status{check="gpu-count",mode="boot"} 0' in text
    assert 'reason="7 GPUs visible, expected 8"' in text


def test_healthy_nodes_take_jobs_after_their_gate(twin: TwinCluster) -> None:
    assert twin.slurm is not None
    for name in ("gpu-1", "gpu-4"):
        twin.slurm.wait_node(name, r"^(IDLE|MIXED|ALLOCATED)", timeout_s=60)


def test_b_prolog_failure_requeues_the_job_without_holding_it(twin: TwinCluster) -> None:
    assert twin.slurm is not None
    slurm = twin.slurm
    # Nothing else in the way: no earlier job left to meet gpu-4 first, gpu-4's own set-up (gate) done, gpu-4 idle.
    clear_queue(twin)
    wait_for_set_up(twin, "gpu-4")
    slurm.wait_node("gpu-4", r"^IDLE$", timeout_s=60)
    # gpu-4 loses an EFA device while it runs a job, so the between-jobs check (PCS: HealthCheckNodeState=IDLE)
    # cannot see it first: the next job, queued behind, meets the fault in its prolog.
    busy = submit(twin, "-N1", "-w", "gpu-4", seconds=4)
    wait_until("the busy job's script to start (its prolog passed)", lambda: busy in ran_on(twin), 30)
    twin.set_scenario("gpu-4", HEALTHY.but(efa_devices=31))
    job = submit(twin, "-N1", "-w", "gpu-4", "--requeue")
    info = slurm.wait_node("gpu-4", r"DRAIN", timeout_s=60)
    assert "Prolog" in info.get("Reason", "") or info.get("Reason", "").startswith("fmconstructs:"), info
    wait_until("the job requeued", lambda: slurm.job_info(job).get("Restarts") not in (None, "0"), 60)
    state = slurm.job_info(job)
    assert state.get("JobState") == "PENDING", state
    assert "held" not in state.get("Reason", "").lower() and state.get("Priority") != "0", state
    textfile = slurm.nodes["gpu-4"].textfile_dir / "fm_node_checks_prolog.prom"
    wait_until("gpu-4's prolog check metrics", textfile.exists, 30)
    assert 'fm_node_check_status{check="efa-devices",mode="prolog"} 0' in textfile.read_text()
    if twin.rendered.backend is Backend.HYPERPOD:
        # The handler's BatchReplaceClusterNodes (the alert half: test_twin_remediation_loops_hyperpod.py): HyperPod
        # replaces the instance, which registers as a fresh node and passes its gate.
        twin.hyperpod_replace("gpu-4")
    else:
        # Remediation's own Slurm script (the handler's code; the alert half: tests/twin/test_twin_monitoring*.py),
        # then the replacement instance: its gate resumes the node, whose drain is now remediation's.
        script = slurm_script([slurm.nodes["gpu-4"].address], "replace", "fmconstructs: remediation node-check-failed")
        done = slurm.run(["/bin/bash", "-c", script])
        assert "FMC_REMEDIATION result=down" in done.stdout, done.stdout
        twin.replace("gpu-4")
    slurm.wait_node("gpu-4", r"^(IDLE|MIXED|ALLOCATED)$", timeout_s=90)
    # The job runs again once Slurm's requeue delay passes (seen: eligible 121 s after the requeue, not scaled by
    # the twin); it is not held meanwhile.
    state = slurm.job_info(job)
    assert state.get("JobState") in ("PENDING", "RUNNING", "COMPLETED"), state
    assert state.get("Priority") != "0" and "held" not in state.get("Reason", "").lower(), state


def test_e_an_operator_drained_node_is_never_touched(twin: TwinCluster) -> None:
    assert twin.slurm is not None
    info = twin.slurm.node_info("gpu-3")
    assert "DRAIN" in info["State"]
    assert info["Reason"].startswith(OPERATOR_REASON)  # Slurm appends [user@time]
    twin.replace("gpu-3")  # even a new instance: its set-up (and gate) run, the operator's drain stays
    wait_for_set_up(twin, "gpu-3")
    info = twin.slurm.node_info("gpu-3")
    assert "DRAIN" in info["State"] and info["Reason"].startswith(OPERATOR_REASON), info


IDLE_REASON = "fmconstructs: efa-devices: 31 EFA devices, expected 32"
OPERATOR_OVER_OURS = "ops: reseat EFA cable ticket 4712"


def test_e_the_idle_check_drains_a_bad_idle_node_resumes_its_own_drain_and_never_an_operators(
    twin: TwinCluster,
) -> None:
    assert twin.slurm is not None
    settings = dict(twin.settings())
    if "HealthCheckProgram" not in settings:
        # Only PCS wires the between-jobs check (fmconstructs.health.options: "ParallelCluster: not wired").
        assert twin.rendered.backend is not Backend.PCS, settings
        pytest.skip(f"the library renders no HealthCheckProgram on {twin.rendered.backend.value}")
    assert settings["HealthCheckProgram"] == "/opt/fmconstructs/health/idle-check.sh"
    interval = float(settings["HealthCheckInterval"])  # twin time (tests/support/twin/timescale.py)
    # no job left to land on a node in between (its prolog checks would drain it with Slurm's "Prolog error")
    clear_queue(twin)
    for name in ("gpu-1", "gpu-4"):
        twin.slurm.wait_node(name, r"^IDLE$", timeout_s=60)  # idle, no job: HealthCheckNodeState=IDLE
        twin.set_scenario(name, HEALTHY.but(efa_devices=31))
    for name in ("gpu-1", "gpu-4"):
        info = twin.slurm.wait_node(name, r"DRAIN", timeout_s=10 * interval + 30)
        assert info["Reason"].startswith(IDLE_REASON), info
    twin.slurm.run(["scontrol", "update", "nodename=gpu-4", "state=drain", f"reason={OPERATOR_OVER_OURS}"])
    for name in ("gpu-1", "gpu-4"):
        twin.set_scenario(name, HEALTHY)
    twin.slurm.wait_node("gpu-1", r"^IDLE$", timeout_s=10 * interval + 30)  # resumed (Slurm may keep the reason)
    log = twin.slurm.nodes["gpu-4"].log_dir / "node-checks.log"
    wait_until("the idle check to see gpu-4's operator drain", lambda: OPERATOR_OVER_OURS in log.read_text(), 60)
    for name, reason in (("gpu-4", OPERATOR_OVER_OURS), ("gpu-3", OPERATOR_REASON)):
        info = twin.slurm.node_info(name)
        assert "DRAIN" in info["State"] and info["Reason"].startswith(reason), info
    text = (twin.slurm.nodes["gpu-1"].textfile_dir / "fm_node_checks_idle.prom").read_text()
    assert 'fm_node_check_status{check="efa-devices",mode="idle"} 1' in text


def clear_queue(twin: TwinCluster) -> None:
    """Cancel what earlier tests left queued or running (a requeued job waits out Slurm's requeue delay, then could
    land on the node a test is about to fault) and wait until no job is left."""
    assert twin.slurm is not None
    slurm = twin.slurm
    slurm.run(["scancel", "--user=root"])
    wait_until("the queue to empty", lambda: not slurm.run(["squeue", "-h"]).stdout.strip(), 60)


def wait_for_set_up(twin: TwinCluster, name: str) -> None:
    """Until node ``name``'s boot steps have run and, where the library gates a node, its boot checks have."""
    assert twin.slurm is not None
    node = twin.slurm.nodes[name]
    last = f"== step {twin.profile.boot_steps[-1]}:"
    steps = node.log_dir / "twin-steps.log"
    wait_until(f"{name}'s set-up", lambda: steps.exists() and last in steps.read_text(), 60)
    if twin.rendered.bootstrap(twin.profile.gpu_bootstrap).step("node-health") is not None:
        wait_until(f"{name}'s boot checks", (node.textfile_dir / "fm_node_checks_boot.prom").exists, 60)


@HYPERPOD_ONLY
def test_a_on_hyperpod_the_gate_runs_from_on_init_complete_without_dcgm(twin: TwinCluster) -> None:
    """The library's node checks on HyperPod (fmconstructs.hyperpod.node_health): the gate runs in the GPU group's
    set-up after Slurm started and never fails it; DCGM is left to HyperPod's InstanceStress deep health check."""
    assert twin.slurm is not None
    gpu = twin.rendered.bootstrap(twin.profile.gpu_bootstrap)
    assert [step.name for step in gpu.steps] == ["lustre", "observability", "slurm-scripts", "node-health"]
    gate = gpu.step("node-health")
    assert gate is not None and "dcgmi diag -r" not in gate.files["/opt/fmconstructs/health/boot-gate.sh"][0]
    log = (twin.slurm.nodes["gpu-2"].log_dir / "twin-steps.log").read_text()
    assert "== step node-health: exit 0" in log and "FMCONSTRUCTS-NODE-CHECKS-FAILED" in log, log


@HYPERPOD_ONLY
def test_on_hyperpod_the_controller_merges_prolog_flags_into_slurm_conf(twin: TwinCluster) -> None:
    """The library's controller step on HyperPod (fmconstructs.hyperpod.slurm_scripts): PrologFlags=Alloc merged
    into /opt/slurm/etc/slurm.conf, slurmctld restarted and the configuration pushed; the job mapping's pieces run
    from the AMI's prolog.d/epilog.d."""
    assert twin.slurm is not None
    log = (twin.home / "log" / "twin-controller-steps.log").read_text()
    assert "== step slurm-prolog-flags: exit 0" in log and "fmconstructs: PrologFlags=Alloc" in log, log
    config = twin.slurm.run(["scontrol", "show", "config"]).stdout
    assert re.search(r"^PrologFlags\s*=\s*Alloc\b", config, re.MULTILINE), config
    conf = twin.home / "opt" / "slurm" / "etc"
    assert (conf / "slurm.conf.fmconstructs.bak").exists()
    text = (conf / "slurm.conf").read_text()
    assert "PrologFlags=Alloc" in text and re.search(r"^SchedulerParameters=.*nohold_on_prolog_fail", text, re.M)
    assert sorted(p.name for p in (conf / "prolog.d").iterdir()) == [
        "20_fmconstructs_dcgm_job_mapping.sh",
        "30_fmconstructs_app_metrics.sh",
        "95_fmconstructs_node_checks.sh",
    ]
