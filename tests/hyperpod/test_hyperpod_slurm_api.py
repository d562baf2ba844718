"""HyperPodCluster with HyperPod's API-driven Slurm configuration (the default without a base-config):
``Orchestrator.Slurm``, each group's ``SlurmConfig``, ``OnInitComplete`` per group, the Lustre mount (storage module or
``FsxLustreConfig``) and fmconstructs' node collectors; invalid combinations refused at construction."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import (
    LUSTRE_MOUNT_POINT,
    ON_CREATE,
    ON_CREATE_SCRIPT,
    ON_INIT_COMPLETE,
    ON_INIT_COMPLETE_SCRIPT,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    HyperPodOrchestrator,
    SlurmConfigStrategy,
    SlurmConfiguration,
    SlurmNodeType,
    is_gpu,
)
from fmconstructs.observability.sources import ExporterSource
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.storage import LustreFileSystem

from tests.conftest import new_scene


def groups(partition: str | None = "train") -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="login", instance_type="m5.4xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, partition_name=partition),
        HyperPodInstanceGroup(name="cpu", instance_type="c6i.8xlarge", nodes=2),
    ]


def slurm(**kwargs) -> HyperPodOrchestrator:
    return HyperPodOrchestrator.slurm(controller_group="controller", login_group="login", **kwargs)


def cluster_props(template: Template) -> dict:
    return next(iter(template.find_resources("AWS::SageMaker::Cluster").values()))["Properties"]


def group_props(template: Template) -> dict[str, dict]:
    return {g["InstanceGroupName"]: g for g in cluster_props(template)["InstanceGroups"]}


@pytest.fixture(scope="module")
def api_scene():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    workspace = PrometheusWorkspace(scene.stack, "Amp")
    cluster = HyperPodCluster(scene.stack, "HyperPod", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              file_system=fs, prometheus_workspace=workspace,
                              setup_commands=["echo fmconstructs-user-step"])  # fmt: skip
    return scene, cluster, fs, workspace, scene.template()


# --- the cluster resource ----------------------------------------------------------------------------------------
def test_default_slurm_configuration_is_api(api_scene):
    _, cluster, *_ = api_scene
    assert cluster.slurm_configuration is SlurmConfiguration.API
    assert cluster.provisioning_parameters is None


def test_orchestrator_slurm_with_managed_strategy_by_default(api_scene):
    assert cluster_props(api_scene[-1])["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}


@pytest.mark.parametrize("strategy", list(SlurmConfigStrategy))
def test_orchestrator_slurm_strategy_given(strategy):
    scene = new_scene()
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(strategy=strategy))
    assert cluster_props(scene.template())["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": strategy.value}}


def test_slurm_config_per_group(api_scene):
    slurm_config = {name: g["SlurmConfig"] for name, g in group_props(api_scene[-1]).items()}
    assert slurm_config == {
        "controller": {"NodeType": "Controller"},
        "login": {"NodeType": "Login"},
        "gpu": {"NodeType": "Compute", "PartitionNames": ["train"]},
        "cpu": {"NodeType": "Compute", "PartitionNames": ["cpu"]},
    }


def test_node_types_are_the_botocore_enum():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    assert {t.value for t in SlurmNodeType} == set(model.shape_for("ClusterSlurmNodeType").enum)
    assert {s.value for s in SlurmConfigStrategy} == set(model.shape_for("ClusterSlurmConfigStrategy").enum)


def test_on_init_complete_per_group_prefix(api_scene):
    for name, group in group_props(api_scene[-1]).items():
        life_cycle = group["LifeCycleConfig"]
        assert life_cycle["OnInitComplete"] == ON_INIT_COMPLETE and "OnCreate" not in life_cycle
        assert life_cycle["SourceS3Uri"]["Fn::Join"][1][-1].endswith(f"/lifecycle/{name}/")


def test_lifecycle_upload_has_entry_and_setup_for_every_group(api_scene):
    scene, *_ = api_scene
    (deployment,) = scene.template().find_resources("Custom::CDKBucketDeployment").values()
    assert deployment["Properties"]["DestinationBucketKeyPrefix"] == "lifecycle/"
    assert len(deployment["Properties"]["SourceObjectKeys"]) == 8  # 4 groups x (entry script, setup script)


def test_no_fsx_lustre_config_when_fmconstructs_mounts(api_scene):
    for group in group_props(api_scene[-1]).values():
        assert all("FsxLustreConfig" not in c for c in group.get("InstanceStorageConfigs", []))


def test_hyperpod_mounts_lustre_when_asked():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              file_system=fs, lustre_mount=HyperPodLustreMount.HYPERPOD)  # fmt: skip
    for group in group_props(scene.template()).values():
        (config,) = [c["FsxLustreConfig"] for c in group["InstanceStorageConfigs"] if "FsxLustreConfig" in c]
        assert config["MountPath"] == LUSTRE_MOUNT_POINT
        assert config["DnsName"] == scene.stack.resolve(fs.dns_name)
        assert config["MountName"] == scene.stack.resolve(fs.mount_name)
    assert all(not any(s.name == "lustre" for s in b.steps) for b in cluster.node_bootstraps.values())


def test_hyperpod_lustre_mount_keeps_extra_ebs():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1, extra_ebs_gib=500)
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=[groups()[0], gpu],
                    orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"), file_system=fs,
                    lustre_mount=HyperPodLustreMount.HYPERPOD)  # fmt: skip
    storage = group_props(scene.template())["gpu"]["InstanceStorageConfigs"]
    assert [next(iter(c)) for c in storage] == ["EbsVolumeConfig", "FsxLustreConfig"]


def test_without_login_group_the_controller_collects_slurm_states():
    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Amp")
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=[groups()[0], groups()[2]],
                              orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
                              prometheus_workspace=workspace)  # fmt: skip
    assert "fm-slurm-textfile" in cluster.node_bootstraps["controller"].render()
    assert "fm-slurm-textfile" not in cluster.node_bootstraps["gpu"].render()


# --- the lifecycle scripts ---------------------------------------------------------------------------------------
def test_every_node_mounts_lustre_with_the_storage_module(api_scene):
    _, cluster, fs, *_ = api_scene
    for name, bootstrap in cluster.node_bootstraps.items():
        (step,) = [s for s in bootstrap.steps if s.name == "lustre"]
        spec = next(g for g in cluster.instance_groups if g.name == name).instance_spec
        gds = None if name == "gpu" else False
        expected = fs.mount_commands(LUSTRE_MOUNT_POINT, instance_spec=spec, gpudirect_storage=gds)
        assert list(step.commands) == expected


def test_collectors_on_gpu_and_login_groups_only(api_scene):
    _, cluster, *_ = api_scene
    with_collectors = {n for n, b in cluster.node_bootstraps.items() if any(s.name == "observability" for s in b.steps)}
    assert with_collectors == {"gpu", "login"}
    assert "fm-dcgm-exporter" in cluster.node_bootstraps["gpu"].render()
    assert "fm-slurm-textfile" in cluster.node_bootstraps["login"].render()


def test_gpu_collectors_labels_and_remote_write(api_scene):
    scene, cluster, _, workspace, _ = api_scene
    text = scene.stack.resolve(cluster.node_bootstraps["gpu"].render())
    flat = str(text)
    assert "node_group: gpu" in flat and "queue: train" in flat and "instance_type: ml.p5.48xlarge" in flat
    assert "cluster: Test-HyperPod" in flat
    assert str(scene.stack.resolve(workspace.remote_write_url)) != ""
    assert "remote_write" in flat


def test_base_config_observability_not_used_with_api(api_scene):
    _, cluster, *_ = api_scene
    assert all("enable_observability" not in b.render() for b in cluster.node_bootstraps.values())


def test_user_commands_run_after_mount_and_collectors(api_scene):
    _, cluster, *_ = api_scene
    assert [s.name for s in cluster.node_bootstraps["gpu"].steps] == [
        "lustre",
        "observability",
        "slurm-scripts",
        "commands",
    ]
    assert [s.name for s in cluster.node_bootstraps["controller"].steps] == ["lustre", "slurm-prolog-flags", "commands"]


def test_execution_role_can_remote_write(api_scene):
    scene, _, _, workspace, template = api_scene
    workspace_id = scene.stack.resolve(workspace.node.default_child.logical_id)
    policies = template.find_resources("AWS::IAM::Policy")
    statements = next(p for k, p in policies.items() if k.startswith("HyperPodExecutionRole"))["Properties"][
        "PolicyDocument"
    ]["Statement"]
    assert {"Action": "aps:RemoteWrite", "Effect": "Allow", "Resource": {"Fn::GetAtt": [workspace_id, "Arn"]}} in (
        statements
    )


def _shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True)


def test_on_init_complete_script_passes_shellcheck(tmp_path: Path):
    script = tmp_path / ON_INIT_COMPLETE
    script.write_text(ON_INIT_COMPLETE_SCRIPT)
    result = _shellcheck(script)
    assert result.returncode == 0, result.stdout


def test_setup_scripts_pass_shellcheck(api_scene, tmp_path: Path):
    _, cluster, *_ = api_scene
    for name, bootstrap in cluster.node_bootstraps.items():
        # Deploy-time values (${Token[...]}) stand for the file system's names and the workspace URL.
        text = re.sub(r"\$\{Token\[[^\]]+\]\}", "fs-0123456789abcdef0", bootstrap.render())
        script = tmp_path / f"{name}.sh"
        script.write_text(text + "\n")
        result = _shellcheck(script)
        assert result.returncode == 0, f"{name}: {result.stdout}"


def test_on_init_complete_runs_the_setup_script(tmp_path: Path):
    (tmp_path / ON_INIT_COMPLETE).write_text(ON_INIT_COMPLETE_SCRIPT)
    (tmp_path / "fmconstructs_setup.sh").write_text("#!/bin/bash\necho setup-ran > ran.txt\n")
    # The script logs under /var/log/provision; run it with a writable stand-in for that directory.
    text = ON_INIT_COMPLETE_SCRIPT.replace("/var/log/provision", str(tmp_path / "log"))
    (tmp_path / "entry.sh").write_text(text)
    subprocess.run(["bash", str(tmp_path / "entry.sh")], check=True, capture_output=True)
    assert (tmp_path / "ran.txt").read_text() == "setup-ran\n"
    assert "lifecycle done" in (tmp_path / "log" / "fmconstructs.log").read_text()


def test_gpu_helper():
    assert is_gpu("ml.p5.48xlarge") and is_gpu("ml.g6e.12xlarge")
    assert not is_gpu("ml.trn2.48xlarge") and not is_gpu("ml.m5.2xlarge")


# --- the published lifecycle scripts stay an option --------------------------------------------------------------
def test_base_config_selects_lifecycle_scripts(tmp_path: Path):
    (tmp_path / "lifecycle_script.py").write_text("")
    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Amp")
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(), orchestrator=slurm(),
                              base_config_dir=str(tmp_path), prometheus_workspace=workspace)  # fmt: skip
    assert cluster.slurm_configuration is SlurmConfiguration.LIFECYCLE_SCRIPTS
    props = cluster_props(scene.template())
    assert "Orchestrator" not in props
    assert all(g["LifeCycleConfig"]["OnCreate"] == ON_CREATE for g in props["InstanceGroups"])
    # One collector set per node: the base-config's (turned on in config.py), not fmconstructs'.
    text = cluster.node_bootstraps["gpu"].render()
    assert "enable_observability" in text and "fm-prometheus-agent" not in text


# --- invalid input -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "parameter"),
    [
        ({"configuration": "api"}, FmTypeError, "configuration"),
        ({"strategy": "Managed"}, FmTypeError, "strategy"),
        (
            {"configuration": SlurmConfiguration.LIFECYCLE_SCRIPTS, "strategy": SlurmConfigStrategy.MERGE},
            FmValidationError,
            "strategy",
        ),
    ],
    ids=["configuration-str", "strategy-str", "strategy-with-lifecycle-scripts"],
)
def test_slurm_orchestrator_rejects(kwargs, error, parameter):
    with pytest.raises(error, match=parameter):
        slurm(**kwargs)


@pytest.mark.parametrize("partition", ["gpu_train", "gpu.a", "-gpu", "gpu-", "_gpu"])
def test_api_refuses_partition_names_the_api_rejects(partition):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"instance_groups\[2\]\.partition_name"):
        HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups(partition), orchestrator=slurm())


def test_lifecycle_scripts_accept_partition_names_with_underscores(tmp_path: Path):
    scene = new_scene()
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups("gpu_train"),
                              orchestrator=slurm(configuration=SlurmConfiguration.LIFECYCLE_SCRIPTS),
                              base_config_dir=str(tmp_path))  # fmt: skip
    assert cluster.provisioning_parameters is not None
    assert {"instance_group_name": "gpu", "partition_name": "gpu_train"} in (
        cluster.provisioning_parameters["worker_groups"]
    )


def _bad_cluster_kwargs(tmp_path: Path, case: str) -> dict:
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    workspace = PrometheusWorkspace(scene.stack, "Amp")
    base = {"scope": scene.stack, "id": "H", "vpc": scene.vpc, "instance_groups": groups(), "orchestrator": slurm()}
    cases = {
        "api-with-base-config": {"orchestrator": slurm(configuration=SlurmConfiguration.API),
                                 "base_config_dir": str(tmp_path)},
        "lifecycle-scripts-without-base-config": {
            "orchestrator": slurm(configuration=SlurmConfiguration.LIFECYCLE_SCRIPTS)},
        "lustre-mount-str": {"file_system": fs, "lustre_mount": "hyperpod"},
        "lustre-mount-without-file-system": {"lustre_mount": HyperPodLustreMount.HYPERPOD},
        "lustre-mount-with-lifecycle-scripts": {"file_system": fs, "base_config_dir": str(tmp_path),
                                                "lustre_mount": HyperPodLustreMount.NODE_BOOTSTRAP},
        "exporter-source-str": {"prometheus_workspace": workspace, "exporter_source": "internet"},
        "exporter-source-without-workspace": {"exporter_source": ExporterSource.INTERNET},
        "exporter-source-with-lifecycle-scripts": {"prometheus_workspace": workspace, "base_config_dir": str(tmp_path),
                                                   "exporter_source": ExporterSource.INTERNET},
    }  # fmt: skip
    return {**base, **cases[case]}


@pytest.mark.parametrize(
    ("case", "parameter"),
    [
        ("api-with-base-config", "base_config_dir"),
        ("lifecycle-scripts-without-base-config", "base_config_dir"),
        ("lustre-mount-str", "lustre_mount"),
        ("lustre-mount-without-file-system", "lustre_mount"),
        ("lustre-mount-with-lifecycle-scripts", "lustre_mount"),
        ("exporter-source-str", "exporter_source"),
        ("exporter-source-without-workspace", "exporter_source"),
        ("exporter-source-with-lifecycle-scripts", "exporter_source"),
    ],
)
def test_cluster_rejects_bad_combinations(tmp_path: Path, case: str, parameter: str):
    kwargs = _bad_cluster_kwargs(tmp_path, case)
    with pytest.raises((FmValidationError, FmTypeError), match=parameter):
        HyperPodCluster(kwargs.pop("scope"), kwargs.pop("id"), **kwargs)


def test_efa_file_system_registers_gpu_groups_and_opens_efa_rules():
    from fmconstructs.networking import EfaSecurityGroup
    from fmconstructs.storage import LustreMetadataConfiguration

    # GIVEN an EFA-enabled file system in its own EFA security group, in the nodes' zone
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=4800,
                          throughput_mbps_per_tib=1000, metadata_configuration=LustreMetadataConfiguration.automatic(),
                          efa_enabled=True, efa_security_group=EfaSecurityGroup(scene.stack, "FsEfa", vpc=scene.vpc))  # fmt: skip
    # WHEN the cluster mounts it with the storage module
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a],
                              instance_groups=[groups()[0], groups()[2]],
                              orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
                              file_system=fs)  # fmt: skip
    # THEN the p5 group counts against the 1,024 EFA connections (2 nodes x 8 interfaces, the FSx default for p5)
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [("Test/H/Bootstrap-gpu", 16)]
    # the mount script runs with LNet over 8 EFA interfaces and GPUDirect Storage (arguments EFA GDS FAMILY)
    assert cluster.node_bootstraps["gpu"].render().endswith(" 8 1 p5")
    # and the nodes' EFA group and the file system's allow all traffic to each other
    node_group = scene.stack.resolve(cluster.security_group.security_group_id)
    ingress = scene.template().find_resources("AWS::EC2::SecurityGroupIngress")
    assert any(r["Properties"].get("SourceSecurityGroupId") == node_group and r["Properties"]["IpProtocol"] == "-1"
               for r in ingress.values())  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "text"), [(ON_INIT_COMPLETE, ON_INIT_COMPLETE_SCRIPT), (ON_CREATE, ON_CREATE_SCRIPT)]
)
def test_a_failing_setup_step_fails_the_lifecycle_script(tmp_path: Path, entry: str, text: str):
    # GIVEN a set-up script whose first command fails (no 'set -e' of its own, as NodeBootstrap renders it)
    (tmp_path / "fmconstructs_setup.sh").write_text("#!/bin/bash\nfalse\necho after > after.txt\n")
    (tmp_path / entry).write_text(text.replace("/var/log/provision", str(tmp_path / "log")))
    # WHEN HyperPod runs the entry script
    result = subprocess.run(["bash", str(tmp_path / entry)], capture_output=True,
                            env={"PATH": "/usr/bin:/bin", "FMCONSTRUCTS_ON_CREATE_PAUSE_SECONDS": "0"})  # fmt: skip
    # THEN the lifecycle fails and later set-up lines never ran
    assert result.returncode != 0
    assert not (tmp_path / "after.txt").exists()
