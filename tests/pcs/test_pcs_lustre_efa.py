"""PCS node groups mount FSx for Lustre over EFA as the FSx User Guide "Configuring EFA clients" describes: the
per-type number of EFA interfaces for LNet (capped by the node's), TCP on login nodes, and every EFA client group
counted against the file system's 1,024 EFA connections."""

from __future__ import annotations

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.pcs import FileSystemMount, PcsAmi, PcsCluster
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import new_scene

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
        max_nodes=16,
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
        max_nodes=4,
        mounts=[FileSystemMount(fs, efa_interfaces_for_lustre=2)],
    )
    cluster.add_gpu_node_group(
        "P5Tcp",
        instance_type="p5.48xlarge",
        ami=AMI,
        max_nodes=4,
        mounts=[FileSystemMount(fs, "/fsx2", efa_interfaces_for_lustre=0)],
    )
    assert [g.max_efa_connections for g in fs.efa_client_groups] == [8]


def test_too_many_efa_clients_are_refused_naming_the_pcs_group():
    # Issue 18: every count is known, so the node group is refused at construction (it was a synthesis error).
    _scene, cluster, fs = _scene_with_fs()
    with pytest.raises(FmValidationError, match=r"(?s)^EFA connections .* at most 1,024.*Big \(65 nodes x 16"):
        cluster.add_gpu_node_group(
            "Big", instance_type="p6-b300.48xlarge", ami=AMI, max_nodes=65, mounts=[FileSystemMount(fs)]
        )


def test_tcp_file_system_counts_nothing():
    _scene, cluster, fs = _scene_with_fs(efa_enabled=False)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=4, mounts=[FileSystemMount(fs)])
    assert fs.efa_client_groups == ()


# --- EFA security group and zone: errors, not warnings (issue 10 section 3) ------------------------------------------


def _efa_fs(scene, *, efa_group=None, subnet=None) -> LustreFileSystem:
    return LustreFileSystem(
        scene.stack,
        "OtherFs",
        vpc=scene.vpc,
        subnet=subnet,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=efa_group or EfaSecurityGroup(scene.stack, "OtherEfa", vpc=scene.vpc),
    )


def test_a_file_system_in_another_efa_group_fails():
    # Before: only a warning (fmconstructs:pcs-fsx-efa-security-group); LNet over EFA cannot connect across groups.
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = _efa_fs(scene)
    with pytest.raises(
        FmValidationError, match=r"^efa_security_group of Test/Cluster/P5 must be the EFA security group"
    ):
        cluster.add_gpu_node_group(
            "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, mounts=[FileSystemMount(fs)]
        )


def test_deliberately_separate_groups_opened_for_each_other_work():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = _efa_fs(scene)
    fs.allow_efa_clients_from(cluster.efa_security_group)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, mounts=[FileSystemMount(fs)])
    assert [g.max_efa_connections for g in fs.efa_client_groups] == [2 * 8]


def test_a_tcp_mount_of_an_efa_file_system_in_another_group_is_not_checked():
    # Mounting over TCP (efa_interfaces_for_lustre=0) uses no EFA: no error and no warning id is needed.
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = _efa_fs(scene)
    cluster.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=AMI,
        max_nodes=2,
        mounts=[FileSystemMount(fs, efa_interfaces_for_lustre=0)],
    )
    cluster.add_login_node_group("Login", ami=AMI, mounts=[FileSystemMount(fs)])
    assert fs.efa_client_groups == ()
    warnings = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp("EFA"))
    assert [w for w in warnings if "pcs-fsx-efa-security-group" in str(w)] == []


def test_an_efa_file_system_in_another_zone_fails():
    # EFA traffic does not cross Availability Zones: the node group's subnet (us-east-1a) and the file system's
    # (us-east-1b) are both known.
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = _efa_fs(scene, efa_group=cluster.efa_security_group, subnet=scene.subnet_b)
    with pytest.raises(FmValidationError, match=r"^subnets\[0\] of Test/Cluster/P5 must be a subnet in us-east-1b"):
        cluster.add_gpu_node_group(
            "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, mounts=[FileSystemMount(fs)]
        )


def test_an_efa_file_system_beside_a_zoneless_subnet_is_not_compared():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = _efa_fs(scene, efa_group=cluster.efa_security_group, subnet=scene.subnet_b)
    subnet = ec2.Subnet.from_subnet_id(scene.stack, "Zoneless", "subnet-0cccccccccccccc03")
    cluster.add_gpu_node_group(
        "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, subnet=subnet, mounts=[FileSystemMount(fs)]
    )
