"""Lustre on ParallelCluster: aws-parallelcluster 3.16.1's FsxLustreSettings has no EFA client setting (its own schema
refuses one) and the cookbook mounts <dns>@tcp, so SharedLustre writes only the file system id; EFA queues get LNet
over EFA from an OnNodeStart step before that mount, as the User Guide tutorial "tutorial-efa-enabled-fsx-lustre"
does, and count against the file system's EFA connection budget (details: test_parallelcluster_lustre_efa.py)."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import EfaSecurityGroup, LustreFileSystem
from fmconstructs.parallelcluster import ParallelCluster, SharedLustre
from fmconstructs.storage import LustreMetadataConfiguration

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster import make_cluster
from tests.support.parallelcluster_schema import check_configs, replace_intrinsics


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
    # the EFA queue keeps its EFA (for NCCL/MPI) and configures LNet over EFA before ParallelCluster mounts
    (queue,) = efa_lustre["config"]["Scheduling"]["SlurmQueues"]
    assert queue["ComputeResources"][0]["Efa"]["Enabled"] is True
    assert queue["CustomActions"]["OnNodeStart"]["Args"][0] == "lustre-efa-gpu"


def test_efa_clients_count_against_the_efa_connection_budget(efa_lustre: dict[str, Any]) -> None:
    # GIVEN the p5en block queue of 4 nodes THEN 4 nodes x 8 EFA interfaces (catalog) are registered
    fs: LustreFileSystem = efa_lustre["fs"]
    assert fs.efa_enabled is True
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [
        ("Test/Cluster/LustreEfa-gpu", 32)
    ]


def test_opting_out_mounts_over_tcp_and_uses_none_of_the_budget() -> None:
    scene = new_scene()
    fs, group = _efa_file_system(scene)
    cluster = make_cluster(
        scene, shared_storage=[SharedLustre(file_system=fs, efa_clients=False)], node_security_group=group
    )
    assert "CustomActions" not in cluster.to_dict()["Scheduling"]["SlurmQueues"][0]
    assert fs.efa_client_groups == ()


def test_parallelclusters_schema_has_no_lustre_efa_client_setting(efa_lustre: dict[str, Any]) -> None:
    config = replace_intrinsics(efa_lustre["config"])
    with_efa = replace_intrinsics(efa_lustre["config"])
    with_efa["SharedStorage"][0]["FsxLustreSettings"]["EfaEnabled"] = True
    ok, refused = check_configs([config, with_efa])
    assert ok["ok"], ok
    assert not refused["ok"]
    assert "EfaEnabled" in str(refused["errors"])


def test_the_documentation_names_its_sources() -> None:
    doc = SharedLustre.__doc__ or ""
    assert "Lustre over EFA" in doc
    assert "FsxLustreSettingsSchema" in doc
    assert "@tcp" in doc
    assert "tutorial-efa-enabled-fsx-lustre" in doc
    assert "fetch_and_run -preinstall" in doc  # OnNodeStart runs before the config recipe mounts
    cluster_doc = " ".join((ParallelCluster.__doc__ or "").replace("``", "").split())
    assert "FsxLustreSettings has no EFA client setting" in cluster_doc
    assert "parallelcluster-lustre-over-tcp" in cluster_doc
