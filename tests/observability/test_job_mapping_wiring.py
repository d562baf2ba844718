"""The dcgm-exporter HPC job mapping wired into the Slurm backends (issue 22, section 1): on FmPcsP5 and
FmParallelClusterP5en the exporter reads the mapping directory and the prolog/epilog keep it; the installed pieces,
run through the installed runners in a sandbox, map a job to its GPUs and unmap it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from examples.parallelcluster_stacks import ParallelClusterP5enStack
from examples.pcs_stacks import PcsP5Stack
from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.bootstrap import NodeBootstrap, read_tar_gz
from fmconstructs.compute.slurm_scripts import (
    SlurmHook,
    SlurmScriptDirs,
    SlurmScriptPiece,
    merge_flags,
    slurm_script_files,
)
from fmconstructs.errors import FmTypeError
from fmconstructs.health import NodeHealthOptions
from fmconstructs.health.install import render_epilog_runner
from fmconstructs.observability.collection import NodeLabels, node_collection_commands
from fmconstructs.observability.job_mapping import JobMappingSpec
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.slurm_job_mapping import check_job_mapping, job_mapping_pieces
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.parallelcluster import CustomActionEvent
from fmconstructs.parallelcluster.slurm_scripts import merge_prolog_flag_settings
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup
from fmconstructs.pcs.slurm import ClusterSetting, SlurmVersion

from tests.conftest import ENV, new_app, new_scene, require_tool

MAP_DIR = "/var/run/fmconstructs/dcgm-job-mapping"
MOUNT = f"-v {MAP_DIR}:{MAP_DIR}:ro"
FLAG = f"--hpc-job-mapping-dir {MAP_DIR}"
PCS_PROLOG = "/opt/fmconstructs/slurm/prolog.d/20-dcgm-job-mapping.sh"
PCS_EPILOG = "/opt/fmconstructs/slurm/epilog.d/20-dcgm-job-mapping.sh"
PC_PROLOG = "/opt/slurm/etc/scripts/prolog.d/20_fmconstructs_dcgm_job_mapping.sh"
PC_EPILOG = "/opt/slurm/etc/scripts/epilog.d/20_fmconstructs_dcgm_job_mapping.sh"
AMI = "ami-0123456789abcdef0"


def _files(bootstrap: NodeBootstrap) -> dict[str, tuple[str, int]]:
    return {path: entry for step in bootstrap.steps for path, entry in step.files.items()}


def _step(bootstrap: NodeBootstrap, name: str) -> Any:
    (step,) = [s for s in bootstrap.steps if s.name == name]
    return step


def _settings(template: Template) -> dict[str, str]:
    (cluster,) = template.find_resources("AWS::PCS::Cluster").values()
    items = cluster["Properties"]["SlurmConfiguration"].get("SlurmCustomSettings", [])
    return {s["ParameterName"]: s["ParameterValue"] for s in items}


# --- the examples ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pcs_p5() -> tuple[PcsP5Stack, Template]:
    app = new_app()
    workspace = PrometheusWorkspace(cdk.Stack(app, "Obs", env=ENV), "Workspace")
    stack = PcsP5Stack(app, "FmPcsP5", workspace=workspace, env=ENV)
    return stack, Template.from_stack(stack)


@pytest.fixture(scope="module")
def pc_p5en() -> tuple[ParallelClusterP5enStack, dict[str, Any]]:
    app = new_app()
    workspace = PrometheusWorkspace(cdk.Stack(app, "Obs", env=ENV), "Workspace")
    stack = ParallelClusterP5enStack(app, "FmParallelClusterP5en", workspace=workspace, env=ENV)
    Template.from_stack(stack)
    return stack, stack.cluster.to_dict()


def test_pcs_p5_cluster_prolog_and_epilog_are_the_runners(pcs_p5: tuple[PcsP5Stack, Template]) -> None:
    _, template = pcs_p5
    assert _settings(template) == {
        "Prolog": "/opt/fmconstructs/slurm/prolog.sh",
        "Epilog": "/opt/fmconstructs/slurm/epilog.sh",
        "PrologFlags": "Alloc",
        "SchedulerParameters": "nohold_on_prolog_fail",  # the library's Prolog: a failed prolog requeues unheld
        "HealthCheckProgram": "/opt/fmconstructs/health/idle-check.sh",  # node health re-checks idle nodes
        "HealthCheckInterval": "300",
        "HealthCheckNodeState": "IDLE,CYCLE",
    }


def test_pcs_p5_gpu_exporter_reads_the_mapping(pcs_p5: tuple[PcsP5Stack, Template]) -> None:
    stack, _ = pcs_p5
    text = "\n".join(_step(stack.gpu.bootstrap, "observability").commands)
    (run,) = [line for line in text.splitlines() if "docker run" in line]
    assert MOUNT in run
    assert FLAG in text and f"/var/lib/fm-prometheus-agent {MAP_DIR}" in text  # the user data creates the directory
    login = "\n".join(_step(stack.login.bootstrap, "observability").commands)
    assert "--hpc-job-mapping-dir" not in login  # no GPU, no mapping


def test_pcs_p5_gpu_nodes_install_the_pieces_in_the_asset(pcs_p5: tuple[PcsP5Stack, Template]) -> None:
    stack, _ = pcs_p5
    files = _files(stack.gpu.bootstrap)
    assert files[PCS_PROLOG][1] == 0o755 and "Slurm Prolog" in files[PCS_PROLOG][0]
    assert files[PCS_EPILOG][1] == 0o755 and "Slurm Epilog" in files[PCS_EPILOG][0]
    assert "fmconstructs Slurm epilog runner" in files["/opt/fmconstructs/slurm/epilog.sh"][0]
    # node checks still run first (node health installs them and the prolog runner)
    assert "/opt/fmconstructs/slurm/prolog.d/10-node-checks.sh" in files
    data, _ = stack.gpu.bootstrap.archive()
    names = set(read_tar_gz(data))
    assert {f"steps/005-slurm-scripts/files{PCS_PROLOG}", f"steps/005-slurm-scripts/files{PCS_EPILOG}"} <= names


def test_pc_p5en_gpu_exporter_reads_the_mapping(pc_p5en: tuple[ParallelClusterP5enStack, dict[str, Any]]) -> None:
    stack, _ = pc_p5en
    text = "\n".join(_step(stack.gpu_bootstrap, "observability").commands)
    (run,) = [line for line in text.splitlines() if "docker run" in line]
    assert MOUNT in run and FLAG in text
    head = "\n".join(_step(stack.head_bootstrap, "observability").commands)
    assert "--hpc-job-mapping-dir" not in head


def test_pc_p5en_head_node_installs_the_pieces_and_alloc(
    pc_p5en: tuple[ParallelClusterP5enStack, dict[str, Any]],
) -> None:
    stack, config = pc_p5en
    files = _files(stack.head_bootstrap)
    assert "Slurm Prolog" in files[PC_PROLOG][0] and "Slurm Epilog" in files[PC_EPILOG][0]
    custom = config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    assert [s for s in custom if "PrologFlags" in s] == [{"PrologFlags": "Alloc"}]
    (head,) = stack.cluster.head_node_actions(CustomActionEvent.ON_NODE_CONFIGURED)
    assert head["Args"][0] == "parallelcluster-head"
    data, _ = stack.head_bootstrap.archive()
    names = set(read_tar_gz(data))
    assert {f"steps/003-slurm-scripts/files{PC_PROLOG}", f"steps/003-slurm-scripts/files{PC_EPILOG}"} <= names


def test_pc_without_workspace_has_no_mapping() -> None:
    stack = ParallelClusterP5enStack(new_app(), "FmParallelClusterP5en")
    assert stack.job_mapping is None
    assert PC_PROLOG not in _files(stack.head_bootstrap)
    assert "PrologFlags" not in str(stack.cluster.to_dict()["Scheduling"]["SlurmSettings"])


# --- sandbox: the installed runners run the installed pieces --------------------------------------------------------


def _install(files: dict[str, tuple[str, int]], root: Path) -> None:
    for path, (text, mode) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)


def _mapping(directory: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted(directory.iterdir())} if directory.exists() else {}


def _pcs_cluster(tmp_path: Path, **cluster: Any) -> tuple[PcsCluster, PcsGpuNodeGroup, Path]:
    scene = new_scene()
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a, **cluster)
    group = pcs.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id(AMI),
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
        max_nodes=2,
    )
    mapping_dir = tmp_path / "run" / "map"
    monitor_pcs_cluster(pcs, workspace, cluster_label="t", job_mapping=JobMappingSpec(mapping_dir=str(mapping_dir)))
    Template.from_stack(scene.stack)
    return pcs, group, mapping_dir


def _run(program: Path, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(program)],
        env={"FMCONSTRUCTS_ROOT": str(root), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_pcs_runners_map_and_unmap_a_job(tmp_path: Path) -> None:
    _, group, mapping_dir = _pcs_cluster(tmp_path)
    root = tmp_path / "node"
    _install(_files(group.bootstrap), root)
    prolog, epilog = root / "opt/fmconstructs/slurm/prolog.sh", root / "opt/fmconstructs/slurm/epilog.sh"
    result = _run(prolog, root, {"SLURM_JOB_ID": "4242", "SLURM_JOB_GPUS": "0,3"})
    assert result.returncode == 0, result.stderr
    assert _mapping(mapping_dir) == {"0": ["4242"], "3": ["4242"]}
    assert _run(prolog, root, {"SLURM_JOB_ID": "77", "SLURM_JOB_GPUS": "3"}).returncode == 0
    result = _run(epilog, root, {"SLURM_JOB_ID": "4242"})
    assert result.returncode == 0, result.stderr
    assert _mapping(mapping_dir) == {"3": ["77"]}
    assert _run(epilog, root, {"SLURM_JOB_ID": "77"}).returncode == 0
    assert _mapping(mapping_dir) == {}


def test_parallelcluster_pieces_map_and_unmap_a_job(tmp_path: Path) -> None:
    # slurm.conf runs every file of prolog.d/epilog.d (Prolog=/opt/slurm/etc/scripts/prolog.d/*): simulated in order.
    spec = JobMappingSpec(mapping_dir=str(tmp_path / "map"))
    pieces = job_mapping_pieces(spec, name="20_fmconstructs_dcgm_job_mapping.sh")
    dirs = SlurmScriptDirs(prolog_dir="/opt/slurm/etc/scripts/prolog.d", epilog_dir="/opt/slurm/etc/scripts/epilog.d")
    root = tmp_path / "node"
    _install(slurm_script_files(pieces, dirs), root)
    env = {"SLURM_JOB_ID": "9", "CUDA_VISIBLE_DEVICES": "1"}
    for script in sorted((root / "opt/slurm/etc/scripts/prolog.d").iterdir()):
        assert subprocess.run([str(script)], env=env, check=False).returncode == 0
    assert _mapping(tmp_path / "map") == {"1": ["9"]}
    for script in sorted((root / "opt/slurm/etc/scripts/epilog.d").iterdir()):
        assert subprocess.run([str(script)], env=env, check=False).returncode == 0
    assert _mapping(tmp_path / "map") == {}


def test_epilog_runner_runs_every_piece_and_returns_the_first_failure(tmp_path: Path) -> None:
    directory = tmp_path / "epilog.d"
    directory.mkdir()
    for name, code in (("10-a", 3), ("20-b", 0), ("30-c", 5)):
        (directory / name).write_text(f"#!/bin/bash\necho {name} >>{tmp_path}/ran\nexit {code}\n")
        (directory / name).chmod(0o755)
    (directory / "40-not-executable").write_text("#!/bin/bash\nexit 9\n")
    runner = tmp_path / "epilog.sh"
    runner.write_text(render_epilog_runner("/epilog.d"))
    result = subprocess.run(
        ["/bin/bash", str(runner)], env={"FMCONSTRUCTS_ROOT": str(tmp_path)}, capture_output=True, text=True
    )
    assert result.returncode == 3
    assert (tmp_path / "ran").read_text().split() == ["10-a", "20-b", "30-c"]
    assert "epilog 10-a exited 3" in result.stderr and "epilog 30-c exited 5" in result.stderr


@pytest.mark.parametrize("which", ["epilog_runner", "prolog_piece", "epilog_piece"])
def test_new_scripts_pass_shellcheck(which: str, tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    prolog, epilog = job_mapping_pieces(JobMappingSpec(), name="20-dcgm-job-mapping.sh")
    text = {
        "epilog_runner": render_epilog_runner("/opt/fmconstructs/slurm/epilog.d"),
        "prolog_piece": prolog.text,
        "epilog_piece": epilog.text,
    }[which]
    script = tmp_path / "s.sh"
    script.write_text(text)
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


# --- PCS: ordering with node health and IMEX; opt-out; conflicts -----------------------------------------------------


def test_pcs_order_node_checks_then_job_mapping_then_imex(tmp_path: Path) -> None:
    pcs, group, _ = _pcs_cluster(
        tmp_path, slurm_version=SlurmVersion.V25_11, enable_imex=True, node_health=NodeHealthOptions()
    )
    files = _files(group.bootstrap)
    prolog_d = sorted(Path(p).name for p in files if p.startswith("/opt/fmconstructs/slurm/prolog.d/"))
    commands = "\n".join(c for step in group.bootstrap.steps for c in step.commands)
    assert "/opt/fmconstructs/slurm/prolog.d/91-nvidia-imex.sh" in commands  # the IMEX link, after the others
    assert sorted([*prolog_d, "91-nvidia-imex.sh"]) == [
        "10-node-checks.sh",
        "20-dcgm-job-mapping.sh",
        "30-fm-app-metrics.sh",  # the application metrics' discovery (installed with the job mapping)
        "91-nvidia-imex.sh",
    ]
    assert pcs.slurm_settings[ClusterSetting.PROLOG] == "/opt/fmconstructs/slurm/prolog.sh"
    assert pcs.slurm_settings[ClusterSetting.PROLOG_FLAGS] == "Alloc,NoHold"  # IMEX's flags already hold Alloc


def test_pcs_imex_without_node_health_gets_the_runner_and_the_imex_link(tmp_path: Path) -> None:
    pcs, group, _ = _pcs_cluster(tmp_path, slurm_version=SlurmVersion.V25_11, enable_imex=True)
    step = _step(group.bootstrap, "slurm-scripts")
    assert "/opt/fmconstructs/slurm/prolog.sh" in step.files
    assert any("91-nvidia-imex.sh" in c for c in step.commands)
    assert pcs.slurm_settings[ClusterSetting.PROLOG] == "/opt/fmconstructs/slurm/prolog.sh"


def test_pcs_opt_out_keeps_settings_and_exporter_unchanged() -> None:
    scene = new_scene()
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    group = pcs.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id(AMI),
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
        max_nodes=2,
    )
    monitor_pcs_cluster(pcs, workspace, cluster_label="t", job_mapping=False)
    template = Template.from_stack(scene.stack)
    assert _settings(template) == {}
    assert not [s for s in group.bootstrap.steps if s.name == "slurm-scripts"]
    assert "--hpc-job-mapping-dir" not in group.bootstrap.render()


def test_pcs_own_prolog_default_warns_and_skips() -> None:
    scene = new_scene()
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(
        scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a, slurm_settings={ClusterSetting.EPILOG: "/x.sh"}
    )
    monitor_pcs_cluster(pcs, workspace, cluster_label="t")
    template = Template.from_stack(scene.stack)
    assert _settings(template) == {"Epilog": "/x.sh"}
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Cluster", Match.string_like_regexp("fmconstructs:job-mapping-skipped")
    )
    with pytest.raises(FmValidationError, match=r"slurm_settings\[Epilog\] must be unset when the cluster runs"):
        monitor_pcs_cluster(pcs, workspace, cluster_label="t", job_mapping=JobMappingSpec())


def test_pcs_add_slurm_scripts_refuses_repeats_and_reserved_names() -> None:
    scene = new_scene()
    pcs = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    piece = SlurmScriptPiece(hook=SlurmHook.PROLOG, name="30-mine.sh", text="#!/bin/bash\nexit 0\n")
    pcs.add_slurm_scripts(piece)
    with pytest.raises(FmValidationError, match="unique among the Prologs"):
        pcs.add_slurm_scripts(piece)
    reserved = SlurmScriptPiece(hook=SlurmHook.PROLOG, name="10-node-checks.sh", text="#!/bin/bash\n")
    with pytest.raises(FmValidationError, match="not a name the cluster uses itself"):
        pcs.add_slurm_scripts(reserved)
    with pytest.raises(FmTypeError, match=r"pieces\[1\] must be a SlurmScriptPiece"):
        pcs.add_slurm_scripts("#!/bin/bash")  # type: ignore[arg-type]
    assert pcs.slurm_script_pieces == (piece,)
    assert ClusterSetting.EPILOG not in pcs.slurm_settings  # a prolog piece only


def test_pcs_token_prolog_flags_refused_when_alloc_is_needed() -> None:
    scene = new_scene()
    flags = cdk.CfnParameter(scene.stack, "Flags").value_as_string
    pcs = PcsCluster(
        scene.stack,
        "Cluster",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        slurm_settings={ClusterSetting.PROLOG_FLAGS: flags},
    )
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    with pytest.raises(FmValidationError, match="a literal value"):
        monitor_pcs_cluster(pcs, workspace, cluster_label="t", job_mapping=JobMappingSpec())


def test_pcs_login_nodes_only_get_no_pieces() -> None:
    scene = new_scene()
    workspace = PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    login: PcsLoginNodeGroup = pcs.add_login_node_group("Login", ami=PcsAmi.from_image_id(AMI))
    monitor_pcs_cluster(pcs, workspace, cluster_label="t")
    Template.from_stack(scene.stack)
    assert not [s for s in login.bootstrap.steps if s.name == "slurm-scripts"]


# --- bad input -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", 1, 0, JobMappingSpec])
def test_bad_job_mapping(value: object) -> None:
    with pytest.raises(FmTypeError, match="job_mapping must be True, False, None or a JobMappingSpec"):
        check_job_mapping("job_mapping", value)


def test_job_mapping_values() -> None:
    assert check_job_mapping("j", True) == JobMappingSpec()
    assert check_job_mapping("j", False) is None and check_job_mapping("j", None) is None


def test_node_collection_refuses_a_non_spec() -> None:
    with pytest.raises(FmTypeError, match="job_mapping must be a JobMappingSpec or None"):
        node_collection_commands(
            remote_write_url="https://x",
            region="us-east-1",
            labels=NodeLabels(cluster="c"),
            job_mapping="/var/run/x",  # type: ignore[arg-type]
        )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "job-mapping.sh"}, FmValidationError, "name must be two digits"),
        ({"name": "20-../x"}, FmValidationError, "name must be two digits"),
        ({"name": "20 x"}, FmValidationError, "name must be two digits"),
        ({"text": "echo hi"}, FmValidationError, "text must be a script starting with '#!'"),
        ({"mode": 0o644}, FmValidationError, "mode must be executable"),
        ({"mode": True}, FmTypeError, "mode must be an executable file mode"),
        ({"hook": "Prolog"}, FmTypeError, "hook"),
    ],
)
def test_bad_piece(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    base: dict[str, Any] = {"hook": SlurmHook.PROLOG, "name": "20-x.sh", "text": "#!/bin/bash\n"}
    with pytest.raises(error, match=match):
        SlurmScriptPiece(**{**base, **kwargs})


@pytest.mark.parametrize(
    ("prolog_dir", "epilog_dir"), [("relative", "/e"), ("/p/", "/e"), ("/p", "/p"), ("/p", "/e/$(id)")]
)
def test_bad_dirs(prolog_dir: str, epilog_dir: str) -> None:
    with pytest.raises(FmValidationError):
        SlurmScriptDirs(prolog_dir=prolog_dir, epilog_dir=epilog_dir)


def test_merge_flags() -> None:
    assert merge_flags(("Alloc",), "Alloc,NoHold") == "Alloc,NoHold"
    assert merge_flags("Contain", None, ["alloc", "Contain"]) == "Contain,alloc"
    with pytest.raises(FmValidationError):
        merge_flags("Alloc;rm")


def test_parallelcluster_prolog_flags_merge_with_imex() -> None:
    settings = [{"PrologFlags": "Alloc,NoHold"}, {"MessageTimeout": 240}, {"PrologFlags": "Alloc"}]
    assert merge_prolog_flag_settings(settings) == [{"PrologFlags": "Alloc,NoHold"}, {"MessageTimeout": 240}]
    assert merge_prolog_flag_settings([{"PrologFlags": "Contain"}, {"PrologFlags": "Alloc"}]) == [
        {"PrologFlags": "Contain,Alloc"}
    ]
    assert merge_prolog_flag_settings([{"A": "1"}]) == [{"A": "1"}]


def test_pcs_default_skipped_with_a_warning_where_user_data_is_inline() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Inline", env=ENV, synthesizer=cdk.BootstraplessSynthesizer())
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    workspace = PrometheusWorkspace(cdk.Stack(app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(stack, "Cluster", vpc=vpc)
    monitor_pcs_cluster(pcs, workspace, cluster_label="t")
    assert pcs.slurm_script_pieces == ()
    Annotations.from_stack(stack).has_warning("/Inline/Cluster", Match.string_like_regexp("publishes no file assets"))


# --- TrainingPlatform: the same wiring where it installs collectors on Slurm GPU nodes ------------------------------


def test_platform_parallelcluster_installs_the_mapping() -> None:
    from fmconstructs.platform import Backend

    from tests.support.platform import _built

    built = _built(Backend.PARALLELCLUSTER)
    platform: Any = built.platform
    assert FLAG in "\n".join(_step(platform.node_bootstrap, "observability").commands)
    config = platform.cluster.to_dict()
    first = platform.cluster.head_node_actions(CustomActionEvent.ON_NODE_START)[0]
    assert first["Args"][0] == "slurm-scripts"
    custom = config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    assert [s for s in custom if "PrologFlags" in s] == [{"PrologFlags": "Alloc"}]
    (bootstrap,) = [
        c for c in platform.cluster.node.children if isinstance(c, NodeBootstrap) and c.name == "slurm-scripts"
    ]
    assert {PC_PROLOG, PC_EPILOG} <= set(_files(bootstrap))


def test_platform_pcs_installs_the_mapping() -> None:
    from fmconstructs.platform import Backend

    from tests.support.platform import _built

    built = _built(Backend.PCS)
    assert _settings(built.template)["Epilog"] == "/opt/fmconstructs/slurm/epilog.sh"
    platform: Any = built.platform
    assert PCS_EPILOG in _files(platform.node_group.bootstrap)
