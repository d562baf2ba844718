"""HyperPod honours ``PlatformStorage.mount_point`` (API-driven Slurm: fmconstructs' mount step or HyperPod's
``FsxLustreConfig.MountPath``) and refuses another than ``/fsx`` where nothing can mount it there (the published
base-config's lifecycle_script.py mounts at /fsx; on EKS pods mount the claim). ``base_config_dir`` no longer turns
the platform's file system to TCP behind the user's back: it needs ``PlatformStorage(efa_enabled=False)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import (
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    HyperPodOrchestrator,
    SlurmConfiguration,
)
from fmconstructs.platform import HyperPodOptions, HyperPodOrchestration, PlatformStorage, TrainingPlatform
from fmconstructs.storage import LustreFileSystem

from tests.conftest import Scene, new_scene
from tests.support.hyperpod_platform_eks import CHART


def _storage(**options: Any) -> PlatformStorage:
    return PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, **options)


def _platform(scene: Scene, storage: PlatformStorage | None, **options: Any) -> TrainingPlatform:
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=HyperPodOptions(**options),
        storage=storage,
    )


# --- the platform's mount point ----------------------------------------------------------------------------------
def test_slurm_nodes_mount_at_the_platforms_mount_point():
    scene = new_scene("HyperPodMount")
    platform = _platform(scene, _storage(mount_point="/data"))
    cluster = platform.cluster
    assert isinstance(cluster, HyperPodCluster) and cluster.mount_point == "/data"
    for name in ("controller", "login", "gpu"):
        script = cluster.node_bootstraps[name].render()
        assert "/data" in script, name
        assert "'/fsx'" not in script and " /fsx " not in script, name
    outputs = scene.template().to_json()["Outputs"]
    (fs_id,) = [o for k, o in outputs.items() if k.startswith("PlatformFileSystemId")]
    assert fs_id["Description"].endswith("mounted at /data")


def test_hyperpod_fsx_lustre_config_takes_the_mount_point():
    # GIVEN HyperPod's own mount (InstanceStorageConfigs[].FsxLustreConfig) WHEN mount_point=/data THEN MountPath
    scene = new_scene("HyperPodMountPath")
    file_system = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    groups = [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
    ]
    HyperPodCluster(
        scene.stack,
        "H",
        vpc=scene.vpc,
        subnets=[scene.subnet_a],
        instance_groups=groups,
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        file_system=file_system,
        lustre_mount=HyperPodLustreMount.HYPERPOD,
        mount_point="/data",
    )
    (resource,) = scene.template().find_resources("AWS::SageMaker::Cluster").values()
    configs = [
        c["FsxLustreConfig"]
        for g in resource["Properties"]["InstanceGroups"]
        for c in g.get("InstanceStorageConfigs", [])
        if "FsxLustreConfig" in c
    ]
    assert configs and all(c["MountPath"] == "/data" for c in configs)


def test_default_mount_point_is_unchanged():
    scene = new_scene("HyperPodMountDefault")
    platform = _platform(scene, _storage())
    assert isinstance(platform.cluster, HyperPodCluster) and platform.cluster.mount_point == "/fsx"


# --- refusals ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("storage", "options", "pattern"),
    [
        (
            {"mount_point": "/data", "efa_enabled": False},
            {"base_config_dir": "BASE"},
            r"storage.mount_point must be '/fsx' with HyperPodOptions\(base_config_dir=...\): the published "
            r"lifecycle_script.py mounts the file system at /fsx.* got '/data'",
        ),
        (
            {"mount_point": "/data"},
            {"orchestrator": HyperPodOrchestration.EKS, "dependencies_chart": CHART},
            r"storage.mount_point must be '/fsx' with HyperPod on EKS: nothing mounts .* PersistentVolumeClaim default/fsx",
        ),
        (
            {},
            {"base_config_dir": "BASE"},
            r"storage.efa_enabled must be False, given explicitly as PlatformStorage\(efa_enabled=False\), with "
            r"HyperPodOptions\(base_config_dir=...\).*or drop base_config_dir to keep EFA.*got None",
        ),
        (
            {"efa_enabled": True},
            {"base_config_dir": "BASE"},
            r"storage.efa_enabled must be False, given explicitly.*got True",
        ),
    ],
    ids=["base-config-other-mount-point", "eks-other-mount-point", "base-config-implicit-efa", "base-config-efa"],
)
def test_platform_refuses(tmp_path: Path, storage, options, pattern):
    scene = new_scene("HyperPodMountRefused")
    options = {k: (str(tmp_path) if v == "BASE" else v) for k, v in options.items()}
    with pytest.raises(FmValidationError, match=pattern):
        _platform(scene, _storage(**storage), **options)
    assert scene.stack.node.try_find_child("Platform") is None


def test_base_config_with_an_explicit_tcp_file_system(tmp_path: Path):
    scene = new_scene("HyperPodBaseConfigTcp")
    platform = _platform(scene, _storage(efa_enabled=False), base_config_dir=str(tmp_path))
    assert platform.file_system is not None and platform.file_system.efa_enabled is False
    assert isinstance(platform.cluster, HyperPodCluster)
    assert platform.cluster.slurm_configuration is SlurmConfiguration.LIFECYCLE_SCRIPTS


def test_base_config_without_storage_needs_nothing(tmp_path: Path):
    scene = new_scene("HyperPodBaseConfigNoStorage")
    platform = _platform(scene, None, base_config_dir=str(tmp_path))
    assert platform.file_system is None


def _cluster(scene: Scene, **kwargs: Any) -> HyperPodCluster:
    groups = [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
    ]
    kwargs.setdefault("orchestrator", HyperPodOrchestrator.slurm(controller_group="controller"))
    return HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=groups, **kwargs)


@pytest.mark.parametrize(
    ("mount_point", "with_fs", "base_config", "pattern"),
    [
        ("/data", False, False, r"mount_point must be '/fsx' \(the default\) without a file_system"),
        ("/data", True, True, r"mount_point must be '/fsx' with base_config_dir"),
        ("relative", True, False, r"mount_point must be an absolute path"),
        ("/fsx/../etc", True, False, r"mount_point must be .*no '..'"),
        ("/", True, False, r"mount_point must be (an absolute path|a directory other than '/')"),
        (42, True, False, r"mount_point must be"),
    ],
    ids=["no-file-system", "base-config", "relative", "dot-dot", "root", "not-a-string"],
)
def test_cluster_refuses_bad_mount_points(tmp_path: Path, mount_point, with_fs, base_config, pattern):
    scene = new_scene("HyperPodMountBad")
    kwargs: dict[str, Any] = {"mount_point": mount_point}
    if with_fs:
        kwargs["file_system"] = LustreFileSystem(
            scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200
        )
    if base_config:
        kwargs["base_config_dir"] = str(tmp_path)
        kwargs["orchestrator"] = HyperPodOrchestrator.slurm(
            controller_group="controller", configuration=SlurmConfiguration.LIFECYCLE_SCRIPTS
        )
    with pytest.raises((FmValidationError, TypeError), match=pattern):
        _cluster(scene, **kwargs)
