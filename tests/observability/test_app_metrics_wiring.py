"""The application-metrics prolog/epilog (issue 22, section 3) installed with the job mapping on the Slurm backends:
on FmPcsP5 and FmParallelClusterP5en a job that declares its metrics ports gets a file-discovery entry, run through
the installed runners in a sandbox, that the GPU node's agent (job ``fm-app``) reads; the epilog removes it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from examples.parallelcluster_stacks import ParallelClusterP5enStack
from examples.pcs_stacks import PcsP5Stack
from fmconstructs import CapacityBlock
from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.errors import FmTypeError
from fmconstructs.observability.app_metrics import AppMetricsSpec
from fmconstructs.observability.job_mapping import JobMappingSpec
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.slurm_job_mapping import check_app_metrics
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup

from tests.conftest import ENV, new_app, new_scene

PCS_PROLOG = "/opt/fmconstructs/slurm/prolog.d/30-fm-app-metrics.sh"
PCS_EPILOG = "/opt/fmconstructs/slurm/epilog.d/30-fm-app-metrics.sh"
PC_PROLOG = "/opt/slurm/etc/scripts/prolog.d/30_fmconstructs_app_metrics.sh"
PC_EPILOG = "/opt/slurm/etc/scripts/epilog.d/30_fmconstructs_app_metrics.sh"


def _files(bootstrap: NodeBootstrap) -> dict[str, tuple[str, int]]:
    return {path: entry for step in bootstrap.steps for path, entry in step.files.items()}


@pytest.fixture(scope="module")
def pcs_files() -> dict[str, tuple[str, int]]:
    app = new_app()
    workspace = PrometheusWorkspace(cdk.Stack(app, "Obs", env=ENV), "Workspace")
    stack = PcsP5Stack(app, "FmPcsP5", workspace=workspace, env=ENV)
    cdk.assertions.Template.from_stack(stack)
    return _files(stack.gpu.bootstrap)


@pytest.fixture(scope="module")
def pc_files() -> dict[str, tuple[str, int]]:
    app = new_app()
    workspace = PrometheusWorkspace(cdk.Stack(app, "Obs", env=ENV), "Workspace")
    stack = ParallelClusterP5enStack(app, "FmParallelClusterP5en", workspace=workspace, env=ENV)
    cdk.assertions.Template.from_stack(stack)
    return _files(stack.head_bootstrap)


def test_pcs_p5_gpu_nodes_install_the_app_metrics_pieces(pcs_files: dict[str, tuple[str, int]]) -> None:
    assert pcs_files[PCS_PROLOG][1] == 0o755 and "/var/run/fmconstructs/app-metrics-sd" in pcs_files[PCS_PROLOG][0]
    assert pcs_files[PCS_EPILOG][1] == 0o755


def test_pc_p5en_head_node_installs_the_app_metrics_pieces(pc_files: dict[str, tuple[str, int]]) -> None:
    assert pc_files[PC_PROLOG][1] == 0o755 and "/var/run/fmconstructs/app-metrics-sd" in pc_files[PC_PROLOG][0]
    assert pc_files[PC_EPILOG][1] == 0o755


def _sandbox(files: dict[str, tuple[str, int]], root: Path, sd_dir: Path) -> None:
    for path, (text, mode) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("/var/run/fmconstructs/app-metrics-sd", str(sd_dir)))
        target.chmod(mode)


def _run(program: Path, root: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        ["/bin/bash", str(program)],
        env={"FMCONSTRUCTS_ROOT": str(root), "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_pcs_runners_write_and_remove_the_discovery_file(tmp_path: Path) -> None:
    scene, pcs, group, workspace = _cluster()
    sd_dir = tmp_path / "sd"
    monitor_pcs_cluster(
        pcs,
        workspace,
        cluster_label="t",
        job_mapping=JobMappingSpec(mapping_dir=str(tmp_path / "map")),
        app_metrics=AppMetricsSpec(sd_dir=str(sd_dir)),
    )
    cdk.assertions.Template.from_stack(scene.stack)
    root = tmp_path / "node"
    _sandbox(_files(group.bootstrap), root, sd_dir)
    env = {"SLURM_JOB_ID": "311", "SLURM_JOB_GPUS": "0", "SLURM_JOB_COMMENT": "fm_metrics_ports=9300-9301"}
    _run(root / "opt/fmconstructs/slurm/prolog.sh", root, env)
    (entry,) = json.loads((sd_dir / "311.json").read_text())
    assert entry == {"targets": ["127.0.0.1:9300", "127.0.0.1:9301"], "labels": {"hpc_job": "311"}}
    assert (tmp_path / "map" / "0").read_text().split() == ["311"]  # the job mapping ran first, in the same runner
    _run(root / "opt/fmconstructs/slurm/epilog.sh", root, {"SLURM_JOB_ID": "311"})
    assert not (sd_dir / "311.json").exists() and not (tmp_path / "map" / "0").exists()


def test_pc_pieces_write_and_remove_the_discovery_file(pc_files: dict[str, tuple[str, int]], tmp_path: Path) -> None:
    # slurm.conf runs every file of prolog.d/epilog.d (Prolog=/opt/slurm/etc/scripts/prolog.d/*).
    root, sd_dir = tmp_path / "node", tmp_path / "sd"
    _sandbox(pc_files, root, sd_dir)
    env = {"SLURM_JOB_ID": "12", "SLURM_JOB_EXTRA": "fm_metrics_ports=9400"}  # 9400 is dcgm-exporter's: refused
    _run(root / PC_PROLOG.lstrip("/"), root, env)
    assert not list(sd_dir.glob("*.json")) if sd_dir.exists() else True
    _run(root / PC_PROLOG.lstrip("/"), root, {**env, "SLURM_JOB_EXTRA": "fm_metrics_ports=9500"})
    assert json.loads((sd_dir / "12.json").read_text())[0]["targets"] == ["127.0.0.1:9500"]
    _run(root / PC_EPILOG.lstrip("/"), root, {"SLURM_JOB_ID": "12"})
    assert not (sd_dir / "12.json").exists()


def _cluster() -> tuple[Any, PcsCluster, PcsGpuNodeGroup, PrometheusWorkspace]:
    scene = new_scene()
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    group = pcs.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id("ami-0123456789abcdef0"),
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
        max_nodes=2,
    )
    return scene, pcs, group, workspace


def test_pcs_app_metrics_opt_out_keeps_the_job_mapping() -> None:
    scene, pcs, group, workspace = _cluster()
    monitor_pcs_cluster(pcs, workspace, cluster_label="t", app_metrics=False)
    cdk.assertions.Template.from_stack(scene.stack)
    paths = _files(group.bootstrap)
    assert PCS_PROLOG not in paths and "/opt/fmconstructs/slurm/prolog.d/20-dcgm-job-mapping.sh" in paths


def test_pcs_app_metrics_spec_is_rendered() -> None:
    scene, pcs, group, workspace = _cluster()
    monitor_pcs_cluster(pcs, workspace, cluster_label="t", app_metrics=AppMetricsSpec(declaration_key="metrics_ports"))
    cdk.assertions.Template.from_stack(scene.stack)
    assert "metrics_ports" in _files(group.bootstrap)[PCS_PROLOG][0]


def test_pcs_without_job_mapping_installs_no_app_metrics() -> None:
    scene, pcs, group, workspace = _cluster()
    monitor_pcs_cluster(pcs, workspace, cluster_label="t", job_mapping=False)
    cdk.assertions.Template.from_stack(scene.stack)
    assert PCS_PROLOG not in _files(group.bootstrap)


@pytest.mark.parametrize("value", ["yes", 1, JobMappingSpec(), {"sd_dir": "/x"}])
def test_bad_app_metrics(value: object) -> None:
    with pytest.raises(FmTypeError, match="app_metrics"):
        check_app_metrics("app_metrics", value)
    _, pcs, _, workspace = _cluster()
    with pytest.raises(FmTypeError, match="app_metrics"):
        monitor_pcs_cluster(pcs, workspace, cluster_label="t", app_metrics=value)  # type: ignore[arg-type]


def test_app_metrics_values() -> None:
    assert check_app_metrics("a", True) == AppMetricsSpec()
    assert check_app_metrics("a", False) is None and check_app_metrics("a", None) is None
    spec = AppMetricsSpec(max_ports_per_job=2)
    assert check_app_metrics("a", spec) is spec
