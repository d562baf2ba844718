"""Node health on ParallelCluster: the boot gate as each GPU queue's OnNodeConfigured action (never drains a node:
clustermgtd replaces DRAIN nodes; a failing node is held in a reservation and the bootstrap goes on), the prolog
checks dispatched from /opt/slurm/etc/scripts/prolog.d/95_... by a head node action, a prolog budget within
BatchStartTimeout, typed HealthChecks/Gpu passing aws-parallelcluster's schema; the installed scripts run in a sandbox
with stub nvidia-smi, dcgmi, fi_info, scontrol and squeue."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs import OnDemand
from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.health import NodeHealthOptions
from fmconstructs.parallelcluster import ComputeResource, ParallelCluster, SlurmQueue
from fmconstructs.parallelcluster.health import (
    GATE_FAILED_MARKER,
    GATE_HOLD,
    HEALTH_DIR,
    NODE_HEALTH_STEP,
    PROLOG_DISPATCH_PATH,
    PROLOG_STEP,
    node_health_files,
)

from tests.conftest import Scene, new_scene, require_tool
from tests.support.health_checks import Sandbox
from tests.support.health_slurm_gate import HOSTNAME, SCONTROL
from tests.support.parallelcluster import make_cluster
from tests.support.parallelcluster_schema import check_configs, replace_intrinsics

NODE = "gpu-st-r0-1"
GATE = f"{HEALTH_DIR}/p5.48xlarge/boot-gate.sh"
CHECKS = f"{HEALTH_DIR}/p5.48xlarge/prolog-checks.sh"


def _queue(scene: Scene, *types: str, **props: Any) -> SlurmQueue:
    resources = [
        ComputeResource(name=f"r{i}", instance_type=t, capacity=OnDemand(), max_nodes=2) for i, t in enumerate(types)
    ]
    return SlurmQueue(name="gpu", subnets=[scene.subnet_a], compute_resources=resources, **props)


def _cluster(scene: Scene, *types: str, **props: Any) -> ParallelCluster:
    return make_cluster(scene, queues=[_queue(scene, *(types or ("p5.48xlarge",)), **props)])


def _steps(bootstraps: list[NodeBootstrap]) -> dict[str, Any]:
    return {step.name: step for b in bootstraps for step in b.steps}


# --- configuration -----------------------------------------------------------------------------------------------------


def test_queue_runs_the_gate_on_node_configured_and_the_head_node_installs_the_prolog() -> None:
    cluster = _cluster(new_scene())
    steps = _steps(cluster.enable_node_health(NodeHealthOptions()))
    config = cluster.to_dict()
    (queue,) = config["Scheduling"]["SlurmQueues"]
    assert set(queue["CustomActions"]) == {"OnNodeConfigured"}
    assert set(config["HeadNode"]["CustomActions"]) == {"OnNodeConfigured"}
    node = steps[NODE_HEALTH_STEP]
    assert set(node.files) == {GATE, CHECKS}
    # Synchronous, and never a failure of the bootstrap (ParallelCluster would shut the node down).
    assert node.commands[-1].startswith(f'{HEALTH_DIR}/node/boot-gate.sh || echo "{GATE_FAILED_MARKER}: ')
    gate = node.files[GATE][0]
    assert "DRAIN_WHILE_CHECKING=0" in gate and 'PATH="/opt/slurm/bin:${PATH}"' in gate
    assert "*) echo 30 ;;" in gate and "gpu-st-r0-[0-9]*) echo UNLIMITED ;;" in gate
    assert set(steps[PROLOG_STEP].files) == {PROLOG_DISPATCH_PATH}
    assert PROLOG_DISPATCH_PATH == "/opt/slurm/etc/scripts/prolog.d/95_fmconstructs_node_checks.sh"
    # The name earlier releases installed (it ran after 90_/91_) is removed where the new one is installed.
    assert steps[PROLOG_STEP].commands == ("rm -f /opt/slurm/etc/scripts/prolog.d/85_fmconstructs_node_checks.sh",)


def test_a_queue_of_several_types_picks_its_own_from_imds() -> None:
    cluster = _cluster(new_scene(), "p5.48xlarge", "p5en.48xlarge")
    node = _steps(cluster.enable_node_health(NodeHealthOptions(prolog_checks=False)))[NODE_HEALTH_STEP]
    assert {GATE, f"{HEALTH_DIR}/p5en.48xlarge/boot-gate.sh"} == set(node.files)
    assert any("meta-data/instance-type" in c for c in node.commands)
    assert "HeadNode" not in cluster.to_dict() or "CustomActions" not in cluster.to_dict()["HeadNode"]


def test_disabled_options_add_nothing() -> None:
    cluster = _cluster(new_scene())
    assert cluster.enable_node_health(NodeHealthOptions(enabled=False)) == []
    assert "CustomActions" not in cluster.to_dict()["Scheduling"]["SlurmQueues"][0]


def test_prolog_budget_must_stay_within_half_of_batch_start_timeout() -> None:
    cluster = _cluster(new_scene())
    with pytest.raises(
        FmValidationError, match=r"node_health.prolog_budget_seconds .* at most 90 s.* \(got 100 s\), got 20"
    ):
        cluster.enable_node_health(NodeHealthOptions(prolog_budget_seconds=20))


def test_a_cpu_queue_is_refused() -> None:
    cluster = _cluster(new_scene(), "c7i.2xlarge")
    with pytest.raises(FmValidationError, match=r"instance_type must be a catalog GPU instance type"):
        cluster.enable_node_health()


def test_a_queue_with_its_own_on_node_configured_bootstrap_is_refused() -> None:
    scene = new_scene()
    cluster = _cluster(scene)
    mine = NodeBootstrap(cluster, "Mine", name="mine")
    mine.add_commands("echo mine")
    cluster.add_node_bootstrap(mine)
    with pytest.raises(FmValidationError, match=r"queues must be a queue without a node bootstrap already"):
        cluster.enable_node_health()


@pytest.mark.parametrize("value", ["yes", 1, {"enabled": True}])
def test_rejects_options_that_are_not_node_health_options(value: object) -> None:
    with pytest.raises(FmTypeError, match=r"options must be a NodeHealthOptions"):
        _cluster(new_scene()).enable_node_health(value)  # type: ignore[arg-type]


# --- HealthChecks/Gpu ----------------------------------------------------------------------------------------------------


def test_typed_gpu_health_checks_render_on_queue_and_compute_resource() -> None:
    scene = new_scene()
    resource = ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=1, gpu_health_checks=False)
    queue = SlurmQueue(name="gpu", subnets=[scene.subnet_a], compute_resources=[resource], gpu_health_checks=True)
    out = queue.to_config()
    assert out["HealthChecks"] == {"Gpu": {"Enabled": True}}
    assert out["ComputeResources"][0]["HealthChecks"] == {"Gpu": {"Enabled": False}}
    assert "HealthChecks" not in _queue(scene, "p5.48xlarge").to_config()


@pytest.mark.parametrize("value", ["true", 1])
def test_rejects_gpu_health_checks_that_are_not_bool(value: object) -> None:
    scene = new_scene()
    with pytest.raises(FmTypeError, match=r"gpu_health_checks must be a bool"):
        _queue(scene, "p5.48xlarge", gpu_health_checks=value)
    with pytest.raises(FmTypeError, match=r"gpu_health_checks must be a bool"):
        ComputeResource(name="p5", instance_type="p5.48xlarge", gpu_health_checks=value)  # type: ignore[arg-type]


def test_gpu_health_checks_and_node_health_pass_the_parallelcluster_schema() -> None:
    cluster = _cluster(new_scene(), gpu_health_checks=True)
    cluster.enable_node_health(NodeHealthOptions(dcgm_level=None))
    (result,) = check_configs([replace_intrinsics(cluster.to_dict())])
    assert result["ok"], result


def test_the_gate_checks_the_clusters_first_shared_lustre_mount() -> None:
    # Found by the cluster twin (tests/twin/test_twin_node_scenarios.py): the ParallelCluster gate passed a node with
    # no Lustre mount, the spec never got the shared storage's mount point.
    from fmconstructs.parallelcluster import SharedLustre
    from fmconstructs.storage import LustreFileSystem

    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster = make_cluster(
        scene, queues=[_queue(scene, "p5.48xlarge")], shared_storage=[SharedLustre(file_system=fs, mount_point="/lus")]
    )
    gate = _steps(cluster.enable_node_health(NodeHealthOptions()))[NODE_HEALTH_STEP].files[GATE][0]
    assert 'findmnt -t lustre -n "/lus"' in gate


def test_dcgm_twice_is_warned() -> None:
    scene = new_scene()
    cluster = _cluster(scene, gpu_health_checks=True)
    cluster.enable_node_health(NodeHealthOptions())
    Annotations.from_stack(scene.stack).has_warning(
        "*", Match.string_like_regexp(f"{WarningId.PARALLELCLUSTER_DCGM_TWICE.qualified}|runs DCGM in every prolog")
    )


# --- the installed scripts, run in a sandbox ----------------------------------------------------------------------------


def _files() -> dict[str, tuple[str, int]]:
    scene = new_scene()
    return node_health_files(NodeHealthOptions(dcgm_level=1), _queue(scene, "p5.48xlarge"))


# slurmctld's reservations and node comment, kept in $SLURM_STATE, for the hold (GateHold).
HOLD_SCONTROL = SCONTROL.replace(
    'state_file="${SLURM_STATE}/state"',
    r"""state_file="${SLURM_STATE}/state"
resv="${SLURM_STATE}/reservations"
mkdir -p "$resv"
case "$1 $2" in
  "show reservation") [ -f "$resv/$3" ] && { cat "$resv/$3"; exit 0; }; echo "Reservation $3 not found"; exit 1 ;;
  "delete reservation") rm "$resv/$3" 2>/dev/null; exit $? ;;
  "create reservation")
    [ -z "${FAKE_RESV_FAIL:-}" ] || { echo "Error creating the reservation: Requested nodes are busy"; exit 1; }
    name=""
    for arg in "${@:3}"; do case "$arg" in ReservationName=*) name="${arg#*=}" ;; esac; done
    echo "ReservationName=$name ${*:3}" >"$resv/$name"
    exit 0 ;;
esac
if [ "$1" = requeue ]; then echo "$2" >>"${SLURM_STATE}/requeued"; exit 0; fi
if [ "$1" = update ]; then
  for arg in "${@:2}"; do case "$arg" in comment=*) printf '%s' "${arg#comment=}" >"${SLURM_STATE}/comment" ;; esac; done
fi""",
).replace(
    '  [ -n "$reason" ] && echo "   Reason=${reason} [root@2026-12-01T14:00:00]"',
    '  [ -n "$reason" ] && echo "   Reason=${reason} [root@2026-12-01T14:00:00]"\n'
    '  [ -s "${SLURM_STATE}/comment" ] && echo "   Comment=$(cat "${SLURM_STATE}/comment")"',
)
SQUEUE = '#!/bin/bash\necho "squeue $*" >>"$CALLS"\nprintf "%s\\n" ${FAKE_JOBS:-}\n'


class PcNode(Sandbox):
    def __init__(self, tmp_path: Path, state: str = "IDLE", node: str = NODE) -> None:
        super().__init__(tmp_path, {"hostname": HOSTNAME})
        self.add_stub("scontrol", HOLD_SCONTROL, directory="opt/slurm/bin")
        self.add_stub("squeue", SQUEUE, directory="opt/slurm/bin")
        self.state_dir = tmp_path / "slurm"
        self.state_dir.mkdir()
        (self.state_dir / "state").write_text(state + "\n")
        (self.state_dir / "reason").write_text("")
        self.name = node
        self.files = _files()

    def gate(self, **env: str) -> Any:
        return self.run(
            self.files[GATE][0], SLURM_STATE=str(self.state_dir), FAKE_NODE=self.name, FAKE_HOSTNAME=self.name, **env
        )

    def install_checks(self) -> None:
        target = self.root / f"{HEALTH_DIR}/node/prolog-checks.sh".lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.files[CHECKS][0])
        target.chmod(0o755)

    @property
    def node(self) -> tuple[str, str]:
        return (self.state_dir / "state").read_text().strip(), (self.state_dir / "reason").read_text()

    @property
    def reservation(self) -> str | None:
        path = self.state_dir / "reservations" / f"{GATE_HOLD.reservation_prefix}{self.name}"
        return path.read_text() if path.exists() else None

    @property
    def comment(self) -> str:
        path = self.state_dir / "comment"
        return path.read_text() if path.exists() else ""

    @property
    def marker(self) -> Path:
        return self.root / GATE_HOLD.marker_path.lstrip("/")


def test_pc_gate_never_drains_a_healthy_node(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    run = node.gate()
    assert run.rc == 0, run.out
    assert not [c for c in run.calls if "state=drain" in c]
    assert node.node == ("IDLE", "")
    assert "dcgmi diag -r 1" in run.calls


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"FAKE_GPU_COUNT": "7"}, "fmconstructs: gpu-count: 7 GPUs visible, expected 8"),
        ({"FAKE_FI_RC": "1", "FAKE_EFA_COUNT": "0"}, "fmconstructs: efa-devices: 0 EFA devices, expected 32"),
        ({"FAKE_REMAP_PENDING": "Yes"}, "fmconstructs: gpu-memory: GPU 00000000:53:00.0: row remapping pending"),
    ],
)
def test_pc_gate_holds_a_failing_static_node_in_a_reservation_without_draining_it(
    tmp_path: Path, env: dict[str, str], reason: str
) -> None:
    node = PcNode(tmp_path)
    run = node.gate(**env)
    assert run.rc == 1  # the gate's own status; the node command goes on (see below)
    assert node.node == ("IDLE", "")  # not drained: clustermgtd would replace a DRAIN node at once
    assert not [c for c in run.calls if "state=drain" in c]
    held = node.reservation
    assert held is not None
    assert f"Nodes={NODE} Users=root StartTime=now Duration=UNLIMITED Flags=IGNORE_JOBS,OVERLAP" in held
    assert node.comment.startswith(reason)
    assert node.marker.read_text().startswith(reason)


def test_pc_gate_holds_a_dynamic_node_for_a_while_and_requeues_its_jobs(tmp_path: Path) -> None:
    node = PcNode(tmp_path, state="ALLOCATED", node="gpu-dy-r0-3")
    run = node.gate(FAKE_GPU_COUNT="7", FAKE_JOBS="41 42")
    assert run.rc == 1
    assert "Duration=30 " in (node.reservation or "")
    assert (node.state_dir / "requeued").read_text().split() == ["41", "42"]
    assert "squeue -h -w gpu-dy-r0-3 -o %A" in run.calls


def test_pc_gate_drains_when_no_reservation_can_be_made(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    run = node.gate(FAKE_GPU_COUNT="7", FAKE_RESV_FAIL="1")
    assert run.rc == 1
    state, reason = node.node
    assert state == "IDLE+DRAIN" and reason.startswith("fmconstructs: gpu-count: ")
    assert "drained instead" in run.log


def test_pc_gate_releases_the_hold_of_an_earlier_failure_when_it_passes(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    assert node.gate(FAKE_GPU_COUNT="7").rc == 1  # the failed instance
    run = node.gate()  # its replacement, under the same node name
    assert run.rc == 0, run.out
    assert node.reservation is None and node.comment == "" and not node.marker.exists()
    assert f"scontrol delete reservation {GATE_HOLD.reservation_prefix}{NODE}" in run.calls


def test_pc_gate_leaves_an_operator_drained_node_drained_and_marks_the_failure(tmp_path: Path) -> None:
    node = PcNode(tmp_path, state="IDLE+DRAIN")
    (node.state_dir / "reason").write_text("disk swap by ops")
    run = node.gate(FAKE_GPU_COUNT="7")
    assert run.rc == 1
    assert node.node == ("IDLE+DRAIN", "disk swap by ops") and node.reservation is None
    assert node.marker.exists()  # the dispatch fails jobs here if ops resume it before it is fixed


def test_pc_node_command_never_fails_the_bootstrap(tmp_path: Path) -> None:
    cluster = _cluster(new_scene())
    last = _steps(cluster.enable_node_health(NodeHealthOptions(prolog_checks=False)))[NODE_HEALTH_STEP].commands[-1]
    gate = tmp_path / "boot-gate.sh"
    gate.write_text("#!/bin/bash\nexit 1\n")
    gate.chmod(0o755)
    run = subprocess.run(
        ["bash", "-e", "-c", last.replace(f"{HEALTH_DIR}/node/boot-gate.sh", str(gate))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0
    assert run.stderr.startswith(f"{GATE_FAILED_MARKER}: the boot checks failed")


def test_dispatch_runs_the_node_checks(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    node.install_checks()
    dispatch = _steps(_cluster(new_scene()).enable_node_health())[PROLOG_STEP].files[PROLOG_DISPATCH_PATH][0]
    assert node.run(dispatch).rc == 0
    failed = node.run(dispatch, FAKE_GPU_COUNT="7")
    assert failed.rc == 1 and "FAIL gpu-count" in failed.out
    assert "dcgmi diag -r 1" not in failed.calls


def test_dispatch_fails_on_a_node_whose_gate_failed(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    node.install_checks()
    assert node.gate(FAKE_GPU_COUNT="7").rc == 1
    dispatch = _steps(_cluster(new_scene()).enable_node_health())[PROLOG_STEP].files[PROLOG_DISPATCH_PATH][0]
    run = node.run(dispatch)  # the GPUs came back, but the node is held: the job is requeued, the node drained
    assert run.rc == 1


def test_dispatch_passes_a_node_without_checks(tmp_path: Path) -> None:
    node = PcNode(tmp_path)
    dispatch = _steps(_cluster(new_scene()).enable_node_health())[PROLOG_STEP].files[PROLOG_DISPATCH_PATH][0]
    run = node.run(dispatch, FAKE_GPU_COUNT="7")
    assert run.rc == 0 and run.calls == []


@pytest.mark.parametrize("which", ["gate", "checks", "dispatch"])
def test_installed_scripts_pass_shellcheck(tmp_path: Path, which: str) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    files = _files()
    dispatch = _steps(_cluster(new_scene()).enable_node_health())[PROLOG_STEP].files[PROLOG_DISPATCH_PATH][0]
    text = {"gate": files[GATE][0], "checks": files[CHECKS][0], "dispatch": dispatch}[which]
    script = tmp_path / "script.sh"
    script.write_text(text)
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
