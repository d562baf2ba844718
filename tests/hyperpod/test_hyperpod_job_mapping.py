"""HyperPod Slurm (API-driven configuration): GPU series carry the Slurm job (dcgm-exporter HPC job mapping) and jobs
publish their own metrics (fm-app), as on PCS and ParallelCluster: the GPU compute groups' lifecycle set-up copies
the pieces into the HyperPod AMI's prolog.d/epilog.d and points the exporter at the mapping; the controller merges
PrologFlags=Alloc into slurm.conf. Sandbox runs of the installed pieces and of the controller step, with fakes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator, SlurmConfiguration
from fmconstructs.hyperpod.slurm_scripts import (
    HYPERPOD_SLURM_SCRIPT_DIRS,
    PROLOG_FLAGS_STEP,
    SLURM_SCRIPTS_STEP,
    prolog_flags_commands,
)
from fmconstructs.observability.app_metrics import AppMetricsSpec
from fmconstructs.observability.job_mapping import DEFAULT_JOB_MAPPING_DIR, JobMappingSpec
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import new_scene

PROLOG_D = "/opt/slurm/etc/prolog.d"
EPILOG_D = "/opt/slurm/etc/epilog.d"
MAPPING = f"{PROLOG_D}/20_fmconstructs_dcgm_job_mapping.sh"
APP = f"{PROLOG_D}/30_fmconstructs_app_metrics.sh"
FLAG = f"--hpc-job-mapping-dir {DEFAULT_JOB_MAPPING_DIR}"


def _groups() -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="login", instance_type="m5.4xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, partition_name="train"),
        HyperPodInstanceGroup(name="cpu", instance_type="c6i.8xlarge", nodes=2),
    ]


def _cluster(*, workspace: bool = True, base_config_dir: str | None = None, **kwargs: Any) -> HyperPodCluster:
    scene = new_scene()
    return HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=_groups(),
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller", login_group="login"),
        prometheus_workspace=PrometheusWorkspace(scene.stack, "Amp") if workspace else None,
        base_config_dir=base_config_dir,
        **kwargs,
    )


def _step_names(bootstrap: NodeBootstrap) -> list[str]:
    return [s.name for s in bootstrap.steps]


def _files(bootstrap: NodeBootstrap) -> dict[str, tuple[str, int]]:
    return {path: entry for step in bootstrap.steps for path, entry in step.files.items()}


@pytest.fixture(scope="module")
def default_cluster() -> HyperPodCluster:
    return _cluster()


# --- what each group's lifecycle set-up holds ------------------------------------------------------------------------
def test_gpu_compute_group_installs_the_pieces_and_maps_the_exporter(default_cluster: HyperPodCluster) -> None:
    gpu = default_cluster.node_bootstraps["gpu"]
    assert _step_names(gpu) == ["observability", SLURM_SCRIPTS_STEP]
    files = _files(gpu)
    assert sorted(files) == sorted([MAPPING, APP, MAPPING.replace(PROLOG_D, EPILOG_D), APP.replace(PROLOG_D, EPILOG_D)])
    assert all(mode == 0o755 and text.startswith("#!") for text, mode in files.values())
    rendered = gpu.render()  # the group's fmconstructs_setup.sh, uploaded under lifecycle/gpu/
    assert FLAG in rendered and "fmconstructs-slurm-scripts.tar.gz" in rendered  # the pieces, embedded
    assert f"-v {DEFAULT_JOB_MAPPING_DIR}:{DEFAULT_JOB_MAPPING_DIR}:ro" in rendered


def test_controller_merges_prolog_flags_and_other_groups_get_nothing(default_cluster: HyperPodCluster) -> None:
    controller = default_cluster.node_bootstraps["controller"]
    assert _step_names(controller) == [PROLOG_FLAGS_STEP]
    assert "PrologFlags" in controller.render() and "scontrol reconfigure" in controller.render()
    login = default_cluster.node_bootstraps["login"]
    assert _step_names(login) == ["observability"] and FLAG not in login.render()
    assert default_cluster.node_bootstraps["cpu"].is_empty
    assert default_cluster.job_mapping == JobMappingSpec() and default_cluster.app_metrics == AppMetricsSpec()


def test_pieces_live_in_the_hyperpod_ami_directories() -> None:
    assert (HYPERPOD_SLURM_SCRIPT_DIRS.prolog_dir, HYPERPOD_SLURM_SCRIPT_DIRS.epilog_dir) == (PROLOG_D, EPILOG_D)


@pytest.mark.parametrize("off", [False, None])
def test_opt_out(off: bool | None) -> None:
    cluster = _cluster(job_mapping=off)
    assert cluster.job_mapping is None
    assert _step_names(cluster.node_bootstraps["gpu"]) == ["observability"]
    assert FLAG not in cluster.node_bootstraps["gpu"].render()
    assert cluster.node_bootstraps["controller"].is_empty


def test_app_metrics_opt_out_keeps_the_job_mapping() -> None:
    cluster = _cluster(app_metrics=False)
    assert sorted(_files(cluster.node_bootstraps["gpu"])) == sorted([MAPPING, MAPPING.replace(PROLOG_D, EPILOG_D)])


def test_a_spec_chooses_the_mapping_directory() -> None:
    cluster = _cluster(job_mapping=JobMappingSpec(mapping_dir="/run/fm-map"))
    rendered = cluster.node_bootstraps["gpu"].render()
    assert "--hpc-job-mapping-dir /run/fm-map" in rendered and FLAG not in rendered


def test_without_workspace_the_default_is_dropped() -> None:
    cluster = _cluster(workspace=False)
    assert cluster.job_mapping is None
    assert all(b.is_empty for b in cluster.node_bootstraps.values())


def test_lifecycle_scripts_mode_keeps_the_base_config_collectors(tmp_path: Path) -> None:
    (tmp_path / "lifecycle_script.py").write_text("")
    cluster = _cluster(base_config_dir=str(tmp_path))
    assert cluster.slurm_configuration is SlurmConfiguration.LIFECYCLE_SCRIPTS and cluster.job_mapping is None
    assert SLURM_SCRIPTS_STEP not in _step_names(cluster.node_bootstraps["gpu"])


# --- bad input --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"job_mapping": "yes"}, FmTypeError),
        ({"job_mapping": 1}, FmTypeError),
        ({"app_metrics": "on"}, FmTypeError),
        ({"app_metrics": JobMappingSpec()}, FmTypeError),
        ({"job_mapping": JobMappingSpec(), "workspace": False}, FmValidationError),
    ],
)
def test_bad_input(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        _cluster(**kwargs)


def test_a_spec_with_lifecycle_scripts_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lifecycle_script.py").write_text("")
    with pytest.raises(FmValidationError, match="job_mapping"):
        _cluster(base_config_dir=str(tmp_path), job_mapping=JobMappingSpec())


# --- shellcheck ---------------------------------------------------------------------------------------------------------
def test_rendered_set_up_and_pieces_pass_shellcheck(default_cluster: HyperPodCluster, tmp_path: Path) -> None:
    scripts = {f"{name}.sh": b.render() for name, b in default_cluster.node_bootstraps.items() if not b.is_empty}
    scripts.update(
        {Path(p).name + Path(p).parent.name: t for p, (t, _) in _files(default_cluster.node_bootstraps["gpu"]).items()}
    )
    for name, text in scripts.items():
        script = tmp_path / name
        script.write_text(re.sub(r"\$\{Token\[[^\]]+\]\}", "tok", text) + "\n")
        result = subprocess.run(["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}: {result.stdout}"


# --- sandbox: slurmd runs every file of prolog.d / epilog.d -----------------------------------------------------------
def _install(files: dict[str, tuple[str, int]], root: Path) -> None:
    for path, (text, mode) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)


def _run_dir(directory: Path, env: dict[str, str]) -> None:
    for script in sorted(directory.iterdir()):
        result = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False, timeout=60)
        assert result.returncode == 0, f"{script.name}: {result.stderr}"


def _listing(directory: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted(directory.iterdir())} if directory.exists() else {}


def test_installed_pieces_map_a_job_and_publish_its_metrics_targets(tmp_path: Path) -> None:
    mapping, sd = tmp_path / "run" / "map", tmp_path / "run" / "sd"
    cluster = _cluster(job_mapping=JobMappingSpec(mapping_dir=str(mapping)), app_metrics=AppMetricsSpec(sd_dir=str(sd)))
    root = tmp_path / "node"
    _install(_files(cluster.node_bootstraps["gpu"]), root)
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_GPUS": "0,3", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300"}
    _run_dir(root / PROLOG_D.lstrip("/"), env)
    assert _listing(mapping) == {"0": ["4242"], "3": ["4242"]}
    assert any("9300" in p.read_text() and "4242" in p.read_text() for p in sd.iterdir())
    _run_dir(root / EPILOG_D.lstrip("/"), {"SLURM_JOB_ID": "4242"})
    assert _listing(mapping) == {} and list(sd.iterdir()) == []


# --- sandbox: the controller's PrologFlags merge, with fake systemctl and scontrol --------------------------------------
def _controller(tmp_path: Path, conf_text: str | None) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    conf, calls, bin_dir = tmp_path / "slurm.conf", tmp_path / "calls.log", tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("systemctl", "scontrol", "sleep"):
        (bin_dir / tool).write_text(f'#!/bin/bash\necho "{tool} $*" >>{calls}\n')
        (bin_dir / tool).chmod(0o755)
    if conf_text is not None:
        conf.write_text(conf_text)
    script = tmp_path / "controller.sh"
    script.write_text("#!/bin/bash\n" + "\n".join(prolog_flags_commands(["Alloc"], slurm_conf=str(conf))) + "\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    result = subprocess.run(["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    return result, conf, calls


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("ClusterName=c\nProlog=/opt/slurm/etc/prolog.d/*", "PrologFlags=Alloc"),
        ("ClusterName=c\nPrologFlags=Contain\n", "PrologFlags=Contain,Alloc"),
    ],
)
def test_controller_adds_alloc_and_pushes_the_configuration(tmp_path: Path, before: str, after: str) -> None:
    result, conf, calls = _controller(tmp_path, before)
    assert result.returncode == 0, result.stderr
    lines = conf.read_text().splitlines()
    assert lines[-1] == after and [line for line in lines if line.startswith("PrologFlags=")] == [after]
    assert "ClusterName=c" in lines
    assert calls.read_text().splitlines() == ["systemctl restart slurmctld", "sleep 2", "scontrol reconfigure"]
    assert (tmp_path / "slurm.conf.fmconstructs.bak").read_text() == before


@pytest.mark.parametrize("present", ["PrologFlags=Alloc\n", "PrologFlags=contain,alloc\n"])
def test_controller_leaves_a_configuration_that_has_alloc(tmp_path: Path, present: str) -> None:
    result, conf, calls = _controller(tmp_path, present)
    assert result.returncode == 0 and conf.read_text() == present and not calls.exists()


def test_controller_without_slurm_conf_goes_on(tmp_path: Path) -> None:
    result, conf, calls = _controller(tmp_path, None)
    assert result.returncode == 0 and "not found" in result.stderr
    assert not conf.exists() and not calls.exists()


def test_controller_failure_is_logged_not_fatal(tmp_path: Path) -> None:
    result, conf, _calls = _controller(tmp_path, "PrologFlags=Contain\n")
    assert result.returncode == 0
    (tmp_path / "bin" / "systemctl").write_text("#!/bin/bash\nexit 1\n")
    conf.write_text("PrologFlags=Contain\n")
    again = subprocess.run(
        ["/bin/bash", str(tmp_path / "controller.sh")],
        env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and "PrologFlags not updated" in again.stderr


def test_no_gpu_compute_group_leaves_slurm_conf_alone() -> None:
    scene = new_scene()
    cluster = HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=[_groups()[0], _groups()[3]],
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        prometheus_workspace=PrometheusWorkspace(scene.stack, "Amp"),
    )
    assert cluster.job_mapping is not None
    assert PROLOG_FLAGS_STEP not in _step_names(cluster.node_bootstraps["controller"])
    assert SLURM_SCRIPTS_STEP not in _step_names(cluster.node_bootstraps["cpu"])
