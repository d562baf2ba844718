"""Lustre over TCP on ParallelCluster: aws-parallelcluster 3.16.1's FsxLustreSettings has no EFA client setting (its
own schema refuses one), the cookbook mounts <dns>@tcp, so SharedLustre writes only the file system id, registers no
EFA clients against the file system's connection budget, and says so in its documentation."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import EfaSecurityGroup, LustreFileSystem
from fmconstructs.parallelcluster import ParallelCluster, SharedLustre
from fmconstructs.storage import LustreMetadataConfiguration
from tests.conftest import Scene, new_scene
from tests.test_parallelcluster import make_cluster
from tests.test_parallelcluster_schema import check_configs, replace_intrinsics


def _efa_file_system(scene: Scene) -> tuple[LustreFileSystem, EfaSecurityGroup]:
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        efa_enabled=True,
        efa_security_group=group,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
    )
    return fs, group


@pytest.fixture(scope="module")
def efa_lustre() -> dict[str, Any]:
    scene = new_scene()
    fs, group = _efa_file_system(scene)
    cluster = make_cluster(scene, shared_storage=[SharedLustre(file_system=fs)], node_security_group=group)
    return {"scene": scene, "fs": fs, "cluster": cluster, "config": cluster.to_dict()}


def test_efa_enabled_file_system_is_mounted_by_id_only(efa_lustre: dict[str, Any]) -> None:
    (storage,) = efa_lustre["config"]["SharedStorage"]
    assert storage["StorageType"] == "FsxLustre"
    assert list(storage["FsxLustreSettings"]) == ["FileSystemId"]
    # the EFA queue keeps its EFA (for NCCL/MPI), Lustre traffic goes over TCP
    (queue,) = efa_lustre["config"]["Scheduling"]["SlurmQueues"]
    assert queue["ComputeResources"][0]["Efa"]["Enabled"] is True


def test_tcp_clients_use_none_of_the_efa_connection_budget(efa_lustre: dict[str, Any]) -> None:
    fs: LustreFileSystem = efa_lustre["fs"]
    assert fs.efa_enabled is True
    assert fs.efa_client_groups == ()


def test_parallelclusters_schema_has_no_lustre_efa_client_setting(efa_lustre: dict[str, Any]) -> None:
    config = replace_intrinsics(efa_lustre["config"])
    with_efa = replace_intrinsics(efa_lustre["config"])
    with_efa["SharedStorage"][0]["FsxLustreSettings"]["EfaEnabled"] = True
    ok, refused = check_configs([config, with_efa])
    assert ok["ok"], ok
    assert not refused["ok"]
    assert "EfaEnabled" in str(refused["errors"])


def test_the_documentation_says_lustre_goes_over_tcp() -> None:
    doc = SharedLustre.__doc__ or ""
    assert "Lustre over TCP" in doc
    assert "FsxLustreSettingsSchema" in doc
    assert "@tcp" in doc
    assert "tutorial-efa-enabled-fsx-lustre" in doc
    assert "FsxLustreSettings has no EFA client setting" in (ParallelCluster.__doc__ or "").replace("``", "")
