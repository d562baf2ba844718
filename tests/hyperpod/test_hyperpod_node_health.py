"""Node checks on HyperPod Slurm (API-driven configuration): each GPU compute group's OnInitComplete set-up runs the
boot gate (reserve while checking, drain on failure, never fail the set-up) and installs the prolog checks first in
the AMI's prolog.d; the controller adds nohold_on_prolog_fail; DCGM is left to HyperPod's InstanceStress deep health
check. Sandbox runs of the controller step with fakes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import NodeHealthOptions
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.node_health import (
    BOOT_GATE_PATH,
    GATE_FAILED_MARKER,
    NODE_CHECKS_PROLOG_PATH,
    NODE_HEALTH_STEP,
)
from fmconstructs.hyperpod.slurm_scripts import PROLOG_FLAGS_STEP, SLURM_SCRIPTS_STEP, prolog_flags_commands
from fmconstructs.hyperpod.types import DeepHealthCheck
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import new_scene

DCGM_DIAG = "dcgmi diag -r"


def _cluster(*, gpu: HyperPodInstanceGroup | None = None, workspace: bool = True, **kwargs: Any) -> HyperPodCluster:
    scene = new_scene()
    groups = [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        gpu or HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2),
        HyperPodInstanceGroup(name="cpu", instance_type="c6i.8xlarge", nodes=1),
    ]
    return HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=groups,
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        prometheus_workspace=PrometheusWorkspace(scene.stack, "Amp") if workspace else None,
        **kwargs,
    )


def _steps(bootstrap: NodeBootstrap) -> list[str]:
    return [s.name for s in bootstrap.steps]


def _step(bootstrap: NodeBootstrap, name: str) -> Any:
    (found,) = [s for s in bootstrap.steps if s.name == name]
    return found


@pytest.fixture(scope="module")
def checked() -> HyperPodCluster:
    return _cluster(node_health=NodeHealthOptions())


def test_default_is_off_and_renders_nothing() -> None:
    cluster = _cluster()
    assert cluster.node_health is None
    assert NODE_HEALTH_STEP not in _steps(cluster.node_bootstraps["gpu"])


def test_the_gpu_group_runs_the_gate_after_its_pieces_and_installs_the_prolog_checks(checked: HyperPodCluster) -> None:
    gpu = checked.node_bootstraps["gpu"]
    assert _steps(gpu)[-2:] == [SLURM_SCRIPTS_STEP, NODE_HEALTH_STEP]
    step = _step(gpu, NODE_HEALTH_STEP)
    assert set(step.files) == {BOOT_GATE_PATH, NODE_CHECKS_PROLOG_PATH}
    assert NODE_CHECKS_PROLOG_PATH == "/opt/slurm/etc/prolog.d/95_fmconstructs_node_checks.sh"
    assert NODE_HEALTH_STEP not in _steps(checked.node_bootstraps["cpu"])
    assert NODE_HEALTH_STEP not in _steps(checked.node_bootstraps["controller"])


def test_the_gate_reserves_while_checking_and_never_fails_on_init_complete(checked: HyperPodCluster) -> None:
    step = _step(checked.node_bootstraps["gpu"], NODE_HEALTH_STEP)
    gate, _mode = step.files[BOOT_GATE_PATH]
    assert "fmconstructs-checking-" in gate and "/opt/slurm/bin" in gate
    (command,) = step.commands
    assert command.startswith(f"{BOOT_GATE_PATH} || echo") and GATE_FAILED_MARKER in command
    # the command as the set-up runs it (bash -euo pipefail): a failing gate does not end the set-up
    script = command.replace(BOOT_GATE_PATH, "false", 1)
    done = subprocess.run(["/bin/bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and GATE_FAILED_MARKER in done.stderr


def test_dcgm_is_left_to_hyperpods_instance_stress_deep_health_check(checked: HyperPodCluster) -> None:
    gate, _mode = _step(checked.node_bootstraps["gpu"], NODE_HEALTH_STEP).files[BOOT_GATE_PATH]
    assert DCGM_DIAG not in gate
    gpu = HyperPodInstanceGroup(
        name="gpu", instance_type="p5.48xlarge", nodes=2, deep_health_checks=[DeepHealthCheck.INSTANCE_CONNECTIVITY]
    )
    cluster = _cluster(gpu=gpu, node_health=NodeHealthOptions(dcgm_level=2))
    gate, _mode = _step(cluster.node_bootstraps["gpu"], NODE_HEALTH_STEP).files[BOOT_GATE_PATH]
    assert f"{DCGM_DIAG} 2" in gate


def test_the_controller_keeps_a_failed_prologs_job_from_being_held(checked: HyperPodCluster) -> None:
    step = _step(checked.node_bootstraps["controller"], PROLOG_FLAGS_STEP)
    text = "\n".join(step.commands)
    assert "fm_merge_setting SchedulerParameters nohold_on_prolog_fail" in text
    assert "fm_merge_setting PrologFlags Alloc" in text


def test_without_prolog_checks_or_job_mapping_the_controller_leaves_slurm_conf_alone() -> None:
    cluster = _cluster(workspace=False, node_health=NodeHealthOptions(prolog_checks=False))
    assert PROLOG_FLAGS_STEP not in _steps(cluster.node_bootstraps["controller"])
    step = _step(cluster.node_bootstraps["gpu"], NODE_HEALTH_STEP)
    assert set(step.files) == {BOOT_GATE_PATH}


def test_disabled_options_are_off() -> None:
    assert _cluster(node_health=NodeHealthOptions(enabled=False)).node_health is None


@pytest.mark.parametrize(("value", "error"), [("yes", FmTypeError), (True, FmTypeError), (2, FmTypeError)])
def test_bad_node_health_is_refused(value: object, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        _cluster(node_health=value)
    assert info.value.parameter == "node_health"  # type: ignore[attr-defined]


def test_node_health_with_the_published_lifecycle_scripts_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lifecycle_script.py").write_text("")
    with pytest.raises(FmValidationError) as info:
        _cluster(base_config_dir=str(tmp_path), node_health=NodeHealthOptions())
    assert info.value.parameter == "node_health"


@pytest.mark.parametrize("bad", ["nohold on prolog fail", "", "a;b", "x=$(id)"])
def test_bad_scheduler_parameters_are_refused(bad: str) -> None:
    with pytest.raises(FmValidationError):
        prolog_flags_commands(["Alloc"], scheduler_parameters=[bad])


# --- sandbox: the controller's merge, with fake systemctl and scontrol ------------------------------------------------
def _controller(tmp_path: Path, conf_text: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    conf, calls, bin_dir = tmp_path / "slurm.conf", tmp_path / "calls.log", tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("systemctl", "scontrol", "sleep"):
        (bin_dir / tool).write_text(f'#!/bin/bash\necho "{tool} $*" >>{calls}\n')
        (bin_dir / tool).chmod(0o755)
    conf.write_text(conf_text)
    lines = prolog_flags_commands(["Alloc"], slurm_conf=str(conf), scheduler_parameters=["nohold_on_prolog_fail"])
    script = tmp_path / "controller.sh"
    script.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    result = subprocess.run(["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    return result, conf, calls


@pytest.mark.parametrize(
    ("before", "prolog_flags", "scheduler_parameters"),
    [
        ("ClusterName=c\n", "PrologFlags=Alloc", "SchedulerParameters=nohold_on_prolog_fail"),
        (
            "PrologFlags=Contain\nSchedulerParameters=batch_sched_delay=3\n",
            "PrologFlags=Contain,Alloc",
            "SchedulerParameters=batch_sched_delay=3,nohold_on_prolog_fail",
        ),
        ("PrologFlags=Alloc\n", "PrologFlags=Alloc", "SchedulerParameters=nohold_on_prolog_fail"),
    ],
)
def test_controller_merges_both_settings_and_restarts_once(
    tmp_path: Path, before: str, prolog_flags: str, scheduler_parameters: str
) -> None:
    result, conf, calls = _controller(tmp_path, before)
    assert result.returncode == 0, result.stderr
    lines = conf.read_text().splitlines()
    assert [x for x in lines if x.startswith("PrologFlags=")] == [prolog_flags]
    assert [x for x in lines if x.startswith("SchedulerParameters=")] == [scheduler_parameters]
    assert calls.read_text().splitlines() == ["systemctl restart slurmctld", "sleep 2", "scontrol reconfigure"]
    assert (tmp_path / "slurm.conf.fmconstructs.bak").read_text() == before


def test_controller_leaves_a_configuration_that_has_both(tmp_path: Path) -> None:
    text = "PrologFlags=alloc\nSchedulerParameters=NOHOLD_ON_PROLOG_FAIL\n"
    result, conf, calls = _controller(tmp_path, text)
    assert result.returncode == 0 and conf.read_text() == text and not calls.exists()
