"""PCS node groups mount FSx for Lustre over EFA as the FSx User Guide "Configuring EFA clients" describes: the
per-type number of EFA interfaces for LNet (capped by the node's), TCP on login nodes, and every EFA client group
counted against the file system's 1,024 EFA connections."""

from __future__ import annotations

import pytest
from conftest import new_scene

from fmconstructs import CapacityBlock
from fmconstructs.pcs import FileSystemMount, PcsAmi, PcsCluster
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _scene_with_fs(*, efa_enabled: bool = True):
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=efa_enabled,
        efa_security_group=cluster.efa_security_group if efa_enabled else None,
    )
    return scene, cluster, fs


def test_gpu_group_registers_its_nodes_times_the_fsx_default():
    _scene, cluster, fs = _scene_with_fs()
    cluster.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=AMI,
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=16),
        max_instance_count=16,
        mounts=[FileSystemMount(fs)],
    )
    cluster.add_login_node_group("Login", ami=AMI, mounts=[FileSystemMount(fs)])
    # p5: 8 EFA interfaces for Lustre (FSx UG Step 4 table); login nodes use TCP and are not counted.
    assert [(g.consumer_path.rsplit("/", 1)[-1], g.max_efa_connections) for g in fs.efa_client_groups] == [
        ("P5", 16 * 8)
    ]


def test_explicit_interface_count_and_tcp():
    _scene, cluster, fs = _scene_with_fs()
    cluster.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=AMI,
        max_instance_count=4,
        mounts=[FileSystemMount(fs, efa_interfaces_for_lustre=2)],
    )
    cluster.add_gpu_node_group(
        "P5Tcp",
        instance_type="p5.48xlarge",
        ami=AMI,
        max_instance_count=4,
        mounts=[FileSystemMount(fs, "/fsx2", efa_interfaces_for_lustre=0)],
    )
    assert [g.max_efa_connections for g in fs.efa_client_groups] == [8]


def test_too_many_efa_clients_fail_synthesis_naming_the_pcs_group():
    scene, cluster, fs = _scene_with_fs()
    cluster.add_gpu_node_group(
        "Big", instance_type="p6-b300.48xlarge", ami=AMI, max_instance_count=65, mounts=[FileSystemMount(fs)]
    )
    with pytest.raises(RuntimeError, match=r"(?s)EFA connections .* at most 1,024.*Big \(65 nodes x 16"):
        scene.app.synth()


def test_tcp_file_system_counts_nothing():
    _scene, cluster, fs = _scene_with_fs(efa_enabled=False)
    cluster.add_gpu_node_group(
        "P5", instance_type="p5.48xlarge", ami=AMI, max_instance_count=4, mounts=[FileSystemMount(fs)]
    )
    assert fs.efa_client_groups == ()
