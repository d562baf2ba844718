"""Node health on PCS: the cluster's Prolog is the prolog runner (checks, then IMEX), every GPU node group installs
the boot gate as a systemd unit that waits for slurmd; the installed gate, runner and checks executed in a sandbox
with stub nvidia-smi, dcgmi, fi_info, scontrol and pgrep (reserved while checking; fail -> drained with the failing check)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import CpuArchitecture, UltraServerCapacityBlock
from fmconstructs.bootstrap import BootstrapDelivery, lift_embedded_files
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import CheckName, NodeHealthOptions
from fmconstructs.pcs import ClusterSetting, PcsAmi, PcsCluster, PcsGpuNodeGroup
from fmconstructs.pcs.health import (
    BOOT_GATE_PATH,
    BOOT_GATE_UNIT_PATH,
    IDLE_CHECK_PATH,
    NODE_CHECKS_PROLOG_PATH,
    NODE_HEALTH_STEP,
    PROLOG_DIR,
    PROLOG_RUNNER_PATH,
    pcs_node_health_step,
)
from fmconstructs.pcs.user_data import IMEX_PROLOG_PATH

from tests.conftest import new_scene, require_tool
from tests.support.health_checks import Sandbox
from tests.support.health_slurm_gate import HOSTNAME, OPERATOR_REASON, RACING_SCONTROL

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
GB200_AMI = PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.ARM64)
NODE = "gpu-st-p5-1"
PCS_BIN = "opt/aws/pcs/scheduler/slurm-25.11/bin"


def _cluster(**props: Any) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)


def _p5(cluster: PcsCluster, **props: Any) -> PcsGpuNodeGroup:
    return cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, **props)


def _step_files(group: PcsGpuNodeGroup) -> dict[str, tuple[str, int]]:
    (step,) = [s for s in group.bootstrap.steps if s.name == NODE_HEALTH_STEP]
    return dict(step.files)


# --- the cluster's Prolog ----------------------------------------------------------------------------------------------


def test_node_health_sets_the_cluster_prolog_to_the_runner() -> None:
    cluster = _cluster(node_health=NodeHealthOptions(idle_check_interval_seconds=None))
    assert cluster.slurm_settings == {
        ClusterSetting.PROLOG: PROLOG_RUNNER_PATH,
        ClusterSetting.SCHEDULER_PARAMETERS: "nohold_on_prolog_fail",  # a failed prolog requeues, never holds
    }
    Template.from_stack(cdk.Stack.of(cluster)).has_resource_properties(
        "AWS::PCS::Cluster",
        {
            "SlurmConfiguration": Match.object_like(
                {
                    "SlurmCustomSettings": [
                        {"ParameterName": "Prolog", "ParameterValue": PROLOG_RUNNER_PATH},
                        {"ParameterName": "SchedulerParameters", "ParameterValue": "nohold_on_prolog_fail"},
                    ]
                }
            )
        },
    )


def test_with_imex_the_runner_is_the_prolog_and_links_the_imex_prolog_after_the_checks() -> None:
    cluster = _cluster(node_health=NodeHealthOptions(), enable_imex=True)
    assert cluster.slurm_settings[ClusterSetting.PROLOG] == PROLOG_RUNNER_PATH
    assert cluster.slurm_settings[ClusterSetting.PROLOG_FLAGS] == "Alloc,NoHold"
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", ultraserver_type="u-p6e-gb200x72")
    group = cluster.add_gpu_node_group(
        "Gb200", instance_type="p6e-gb200.36xlarge", ami=GB200_AMI, capacity=block, max_nodes=block.max_instances
    )
    (step,) = [s for s in group.bootstrap.steps if s.name == NODE_HEALTH_STEP]
    # the runner runs prolog.d in name order: 10-node-checks.sh, then 91-nvidia-imex.sh
    assert f"ln -sfn {IMEX_PROLOG_PATH} {PROLOG_DIR}/91-nvidia-imex.sh" in step.commands
    assert NODE_CHECKS_PROLOG_PATH in step.files


def test_no_node_health_leaves_the_prolog_alone() -> None:
    cluster = _cluster()
    group = _p5(cluster)
    assert ClusterSetting.PROLOG not in cluster.slurm_settings
    assert NODE_HEALTH_STEP not in [s.name for s in group.bootstrap.steps]


def test_user_data_carries_the_gate_unit_runner_and_checks() -> None:
    cluster = _cluster(node_health=NodeHealthOptions(dcgm_level=None))
    _p5(cluster, bootstrap_delivery=BootstrapDelivery.INLINE)
    template = Template.from_stack(cdk.Stack.of(cluster))
    (lt,) = template.find_resources("AWS::EC2::LaunchTemplate").values()
    value = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    text = value if isinstance(value, str) else "".join(p for p in value["Fn::Join"][1] if isinstance(p, str))
    lines, files = lift_embedded_files(text.splitlines())
    assert {BOOT_GATE_PATH, BOOT_GATE_UNIT_PATH, PROLOG_RUNNER_PATH, NODE_CHECKS_PROLOG_PATH} <= set(files)
    gate = files[BOOT_GATE_PATH][0].decode()
    assert "pgrep -x slurmd" in gate and "/opt/aws/pcs/scheduler/slurm-25.11/bin" in gate
    assert "dcgmi" not in gate.split("# --- Slurm boot gate")[0].split("function run_checks")[1]
    assert "ExecStart=/opt/fmconstructs/health/boot-gate.sh" in files[BOOT_GATE_UNIT_PATH][0].decode()
    assert "systemctl start --no-block fmconstructs-node-checks.service" in lines


def test_a_group_can_turn_its_checks_off_and_still_installs_the_runner() -> None:
    cluster = _cluster(node_health=NodeHealthOptions())
    files = _step_files(_p5(cluster, node_health=NodeHealthOptions(enabled=False)))
    assert set(files) == {PROLOG_RUNNER_PATH, IDLE_CHECK_PATH}  # the cluster's HealthCheckProgram passes here
    assert files[IDLE_CHECK_PATH][0].rstrip().endswith("exit 0")


def test_a_group_without_prolog_checks_keeps_the_gate() -> None:
    cluster = _cluster(node_health=NodeHealthOptions())
    files = _step_files(_p5(cluster, node_health=NodeHealthOptions(prolog_checks=False)))
    assert BOOT_GATE_PATH in files and NODE_CHECKS_PROLOG_PATH not in files


def test_group_prolog_checks_need_the_cluster_prolog() -> None:
    cluster = _cluster()
    with pytest.raises(FmValidationError, match=r"node_health.prolog_checks must be False when the cluster"):
        _p5(cluster, node_health=NodeHealthOptions())
    group = cluster.add_gpu_node_group(
        "Gate", instance_type="p5.48xlarge", ami=AMI, max_nodes=1, node_health=NodeHealthOptions(prolog_checks=False)
    )
    assert set(_step_files(group)) == {BOOT_GATE_PATH, BOOT_GATE_UNIT_PATH}


def test_own_prolog_setting_clashes_with_node_health() -> None:
    with pytest.raises(FmValidationError, match=r"slurm_settings\[Prolog\] must be unset when node_health"):
        _cluster(node_health=NodeHealthOptions(), slurm_settings={ClusterSetting.PROLOG: "/opt/mine.sh"})


@pytest.mark.parametrize("value", ["yes", True, {"enabled": True}, 2])
def test_rejects_node_health_that_is_not_options(value: object) -> None:
    with pytest.raises(FmTypeError, match=r"node_health must be a NodeHealthOptions"):
        _cluster(node_health=value)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"dcgm_level": 5}, r"dcgm_level must be"),
        ({"enabled": "yes"}, r"enabled must be a bool"),
        ({"prolog_checks": 1}, r"prolog_checks must be a bool"),
        ({"prolog_budget_seconds": 0}, r"prolog_budget_seconds must be"),
        ({"prolog_budget_seconds": 61}, r"prolog_budget_seconds must be"),
        ({"budget_seconds": {CheckName.DCGM_DIAG: 30}}, r"budget_seconds\[dcgm-diag\] must be at least 120"),
        ({"fatal_xids": (79, 79)}, r"fatal_xids must be Xid numbers without repeats"),
    ],
)
def test_rejects_bad_options(props: dict[str, Any], message: str) -> None:
    with pytest.raises((FmValidationError, FmTypeError), match=message):
        NodeHealthOptions(**props)


# --- the installed scripts, run in a sandbox ----------------------------------------------------------------------------


def _pcs_step(**options: Any) -> dict[str, tuple[str, int]]:
    step = pcs_node_health_step(
        NodeHealthOptions(dcgm_level=1, **options),
        instance_type="p5.48xlarge",
        efa_interfaces=32,
        lustre_mount_point=None,
        slurm_version="25.11",
        cluster_prolog=True,
        imex=False,
    )
    return step.files


class PcsNode(Sandbox):
    def __init__(self, tmp_path: Path, state: str = "IDLE") -> None:
        super().__init__(tmp_path, {"hostname": HOSTNAME, "pgrep": '#!/bin/bash\nexit "${FAKE_PGREP_RC:-0}"\n'})
        self.add_stub("scontrol", RACING_SCONTROL, directory=PCS_BIN)
        self.state_dir = tmp_path / "slurm"
        self.state_dir.mkdir()
        (self.state_dir / "state").write_text(state + "\n")
        (self.state_dir / "reason").write_text("")
        self.files = _pcs_step()
        for path, (text, mode) in self.files.items():
            target = self.root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            target.chmod(mode)

    def gate(self, **env: str) -> Any:
        return self.run(self.files[BOOT_GATE_PATH][0], SLURM_STATE=str(self.state_dir), **env)

    @property
    def node(self) -> tuple[str, str]:
        return (self.state_dir / "state").read_text().strip(), (self.state_dir / "reason").read_text()


def test_pcs_gate_reserves_a_healthy_node_while_checking_and_writes_nothing_to_it(tmp_path: Path) -> None:
    node = PcsNode(tmp_path)
    run = node.gate()
    assert run.rc == 0, run.out
    assert [c for c in run.calls if c.startswith("scontrol update")] == []
    assert any(c.startswith("scontrol create reservation ReservationName=fmconstructs-checking-") for c in run.calls)
    assert any(c.startswith("scontrol delete reservation fmconstructs-checking-") for c in run.calls)
    assert node.node == ("IDLE", "")


def test_pcs_gate_keeps_an_operator_drain_that_lands_while_it_looks(tmp_path: Path) -> None:
    # loop (e) of the twin: the drain-while-checking gate overwrote it when it landed between its look and its drain
    node = PcsNode(tmp_path)
    run = node.gate(FAKE_DRAIN_AT="3")
    assert run.rc == 0, run.out
    assert node.node == ("IDLE+DRAIN", OPERATOR_REASON)


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"FAKE_GPU_COUNT": "7"}, "fmconstructs: gpu-count: 7 GPUs visible, expected 8"),
        ({"FAKE_EFA_COUNT": "30"}, "fmconstructs: efa-devices: 30 EFA devices, expected 32"),
        ({"FAKE_DCGM_RESULT": "Fail"}, "fmconstructs: dcgm-diag: dcgmi diag -r 1: Memory Fail"),
        ({"FAKE_FM_STATE": "failed"}, "fmconstructs: fabric-manager: nvidia-fabricmanager is failed"),
    ],
)
def test_pcs_gate_keeps_a_failing_node_drained_with_the_check_as_reason(
    tmp_path: Path, env: dict[str, str], reason: str
) -> None:
    node = PcsNode(tmp_path)
    run = node.gate(**env)
    assert run.rc == 1
    assert node.node == ("IDLE+DRAIN", reason)
    assert not [c for c in run.calls if "state=resume" in c]


def test_gate_waits_for_slurmd_and_never_touches_slurm_without_it(tmp_path: Path) -> None:
    from fmconstructs.health import PARALLELCLUSTER_SLURM_BIN_DIR, render_slurm_boot_gate

    node = PcsNode(tmp_path)
    spec = NodeHealthOptions(dcgm_level=1).spec_for("p5.48xlarge")
    script = render_slurm_boot_gate(
        spec, slurm_bin_dir=PARALLELCLUSTER_SLURM_BIN_DIR, node_wait_seconds=0, ready_command="pgrep -x slurmd"
    )
    run = node.run(script, SLURM_STATE=str(node.state_dir), FAKE_PGREP_RC="1")
    assert run.rc == 0
    assert not [c for c in run.calls if c.startswith("scontrol")]
    assert "no Slurm node found" in run.out


def _runner_env(node: PcsNode) -> dict[str, str]:
    return {"SLURM_STATE": str(node.state_dir)}


def test_prolog_runner_runs_the_checks_then_imex(tmp_path: Path) -> None:
    node = PcsNode(tmp_path)
    imex = node.root / PROLOG_DIR.lstrip("/") / "91-nvidia-imex.sh"
    imex.write_text('#!/bin/bash\necho "imex-prolog" >>"$CALLS"\n')
    imex.chmod(0o755)
    run = node.run(node.files[PROLOG_RUNNER_PATH][0], **_runner_env(node))
    assert run.rc == 0, run.out
    assert run.calls[-1] == "imex-prolog"
    assert "dcgmi diag -r 1" not in run.calls  # never DCGM in the prolog
    assert not [c for c in run.calls if c.startswith("scontrol")]  # a prolog calls no Slurm command


def test_prolog_runner_stops_at_the_first_failure(tmp_path: Path) -> None:
    node = PcsNode(tmp_path)
    imex = node.root / PROLOG_DIR.lstrip("/") / "91-nvidia-imex.sh"
    imex.write_text('#!/bin/bash\necho "imex-prolog" >>"$CALLS"\n')
    imex.chmod(0o755)
    run = node.run(node.files[PROLOG_RUNNER_PATH][0], FAKE_GPU_COUNT="7", **_runner_env(node))
    assert run.rc == 1
    assert "FAIL gpu-count: 7 GPUs visible, expected 8" in run.out
    assert "imex-prolog" not in run.calls


def test_prolog_runner_passes_an_empty_directory(tmp_path: Path) -> None:
    node = PcsNode(tmp_path)
    for script in (node.root / PROLOG_DIR.lstrip("/")).iterdir():
        script.unlink()
    assert node.run(node.files[PROLOG_RUNNER_PATH][0]).rc == 0


@pytest.mark.parametrize("path", [BOOT_GATE_PATH, PROLOG_RUNNER_PATH, NODE_CHECKS_PROLOG_PATH])
def test_installed_scripts_pass_shellcheck(tmp_path: Path, path: str) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "script.sh"
    script.write_text(_pcs_step()[path][0])
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
