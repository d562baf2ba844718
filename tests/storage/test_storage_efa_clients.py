"""EFA clients of an EFA-enabled FSx for Lustre file system: the same EFA security group, the same zone (issue 10).

Both mistakes passed silently before: a node group in another EFA security group (a warning on PCS only), and a
node group in another zone (nothing). ``register_efa_clients(..., efa_security_group=, subnets=)`` now raises when
both sides are known and differ; unknown values (groups imported by a deploy-time id, subnets without a zone) skip.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match
from constructs import Construct

from fmconstructs import EfaSecurityGroup, FmValidationError
from fmconstructs.storage import LustreDeploymentType, LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import new_scene


def _efa_fs(scene, *, subnet=None, efa_group=None):
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=subnet or scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=efa_group or EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
    )


# --- security groups ---------------------------------------------------------------------------------------------
def test_another_efa_group_is_an_error_naming_both_groups():
    scene = new_scene()
    fs = _efa_fs(scene)
    nodes = EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc)
    with pytest.raises(FmValidationError) as raised:
        fs.register_efa_clients(
            Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, efa_security_group=nodes
        )
    message = str(raised.value)
    assert message.startswith("efa_security_group of Test/Gpu must be the EFA security group of the EFA-enabled")
    assert "Test/Fs (Test/Efa/Resource)" in message
    assert "got 'Test/NodesEfa/Resource'" in message
    assert "fs.allow_efa_clients_from(" in message
    assert "LustreFileSystem(efa_security_group=...)" in message


@pytest.mark.parametrize("wrap", [True, False], ids=["EfaSecurityGroup", "ISecurityGroup"])
def test_the_same_efa_group_passes(wrap):
    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, efa_group=efa)
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"),
        max_nodes=4,
        efa_interfaces_per_node=8,
        efa_security_group=efa if wrap else efa.security_group,
    )
    assert fs.max_efa_connections == 32


def test_two_literal_ids_compare_as_strings():
    scene = new_scene()
    fs_group = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsEfa", "sg-0aaaaaaaaaaaaaaa1")
    fs = _efa_fs(scene, efa_group=fs_group)
    same = ec2.SecurityGroup.from_security_group_id(scene.stack, "SameEfa", "sg-0aaaaaaaaaaaaaaa1")
    fs.register_efa_clients(
        Construct(scene.stack, "A"), max_nodes=1, efa_interfaces_per_node=8, efa_security_group=same
    )
    other = ec2.SecurityGroup.from_security_group_id(scene.stack, "OtherEfa", "sg-0bbbbbbbbbbbbbbb2")
    with pytest.raises(FmValidationError, match=r"Test/Fs \(sg-0aaaaaaaaaaaaaaa1\).*got 'sg-0bbbbbbbbbbbbbbb2'"):
        fs.register_efa_clients(
            Construct(scene.stack, "B"), max_nodes=1, efa_interfaces_per_node=8, efa_security_group=other
        )


def test_a_group_imported_by_a_deploy_time_id_is_not_checked():
    scene = new_scene()
    fs = _efa_fs(scene)
    group_id = cdk.CfnParameter(scene.stack, "NodesEfaId", type="AWS::EC2::SecurityGroup::Id").value_as_string
    nodes = ec2.SecurityGroup.from_security_group_id(scene.stack, "NodesEfa", group_id)
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, efa_security_group=nodes
    )
    scene.app.synth()


def test_tcp_clients_are_not_checked():
    scene = new_scene()
    fs = _efa_fs(scene)
    nodes = EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc)
    fs.register_efa_clients(
        Construct(scene.stack, "Tcp"),
        max_nodes=4,
        efa_interfaces_per_node=0,
        efa_security_group=nodes,
        subnets=[scene.subnet_b],
    )


def test_allow_efa_clients_from_opens_all_traffic_both_ways_and_accepts_the_group():
    scene = new_scene()
    fs = _efa_fs(scene)
    nodes = EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc)
    fs.allow_efa_clients_from(nodes)
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, efa_security_group=nodes
    )
    template = scene.template()
    fs_group = {"Fn::GetAtt": [Match.string_like_regexp("^Efa"), "GroupId"]}
    nodes_group = {"Fn::GetAtt": [Match.string_like_regexp("^NodesEfa"), "GroupId"]}
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "-1", "GroupId": fs_group, "SourceSecurityGroupId": nodes_group},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"IpProtocol": "-1", "GroupId": fs_group, "DestinationSecurityGroupId": nodes_group},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "-1", "GroupId": nodes_group, "SourceSecurityGroupId": fs_group},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"IpProtocol": "-1", "GroupId": nodes_group, "DestinationSecurityGroupId": fs_group},
    )


def test_allow_efa_clients_from_needs_an_efa_file_system():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmValidationError, match=r"allow_efa_clients_from must be called on an EFA-enabled"):
        fs.allow_efa_clients_from(EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc))


def test_imported_file_system_checks_its_efa_group():
    scene = new_scene()
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=ec2.SecurityGroup.from_security_group_id(scene.stack, "FsGroup", "sg-0123456789abcdef0"),
        deployment_type=LustreDeploymentType.PERSISTENT_2,
        efa_enabled=True,
        efa_security_group=ec2.SecurityGroup.from_security_group_id(scene.stack, "FsEfa", "sg-0aaaaaaaaaaaaaaa1"),
        zone="us-east-1a",
    )
    nodes = EfaSecurityGroup(scene.stack, "NodesEfa", vpc=scene.vpc)
    # A created group vs a literal id: unknown at synthesis (the created group's id is only known at deploy time).
    fs.register_efa_clients(
        Construct(scene.stack, "A"), max_nodes=1, efa_interfaces_per_node=8, efa_security_group=nodes
    )
    other = ec2.SecurityGroup.from_security_group_id(scene.stack, "OtherEfa", "sg-0bbbbbbbbbbbbbbb2")
    with pytest.raises(FmValidationError, match=r"efa_security_group of Test/B must be the EFA security group"):
        fs.register_efa_clients(
            Construct(scene.stack, "B"), max_nodes=1, efa_interfaces_per_node=8, efa_security_group=other
        )
    with pytest.raises(FmValidationError, match=r"subnets\[0\] of Test/C must be a subnet in us-east-1a"):
        fs.register_efa_clients(
            Construct(scene.stack, "C"), max_nodes=1, efa_interfaces_per_node=8, subnets=[scene.subnet_b]
        )


# --- zones -------------------------------------------------------------------------------------------------------
def test_a_client_subnet_in_another_zone_is_an_error():
    scene = new_scene()
    fs = _efa_fs(scene, subnet=scene.subnet_a)
    with pytest.raises(FmValidationError) as raised:
        fs.register_efa_clients(
            Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, subnets=[scene.subnet_b]
        )
    message = str(raised.value)
    assert message.startswith("subnets[0] of Test/Gpu must be a subnet in us-east-1a, the zone of the EFA-enabled")
    assert "got 'subnet subnet-0bbbbbbbbbbbbbbb2 in us-east-1b'" in message
    assert "EFA traffic does not cross Availability Zones" in message
    assert "efa_interfaces_for_lustre=0" in message


def test_a_client_subnet_in_the_same_zone_passes():
    scene = new_scene()
    fs = _efa_fs(scene, subnet=scene.subnet_b)
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, subnets=[scene.subnet_b]
    )
    assert fs.zone == "us-east-1b"


def test_subnets_without_zone_information_are_skipped():
    scene = new_scene()
    fs = _efa_fs(scene, subnet=scene.subnet_a)
    parameter = cdk.CfnParameter(scene.stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    subnets = [
        ec2.Subnet.from_subnet_id(scene.stack, "ById", "subnet-0ccccccccccccccc3"),
        ec2.Subnet.from_subnet_attributes(scene.stack, "NoZone", subnet_id="subnet-0ddddddddddddddd4"),
        ec2.Subnet.from_subnet_attributes(scene.stack, "FromParameter", subnet_id=parameter),
    ]
    fs.register_efa_clients(Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, subnets=subnets)
    scene.app.synth()


def test_file_system_in_a_subnet_without_zone_skips_the_zone_check():
    scene = new_scene()
    fs = _efa_fs(scene, subnet=ec2.Subnet.from_subnet_id(scene.stack, "FsSubnet", "subnet-0ccccccccccccccc3"))
    assert fs.zone is None
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, subnets=[scene.subnet_b]
    )


def test_a_zone_name_and_a_zone_id_are_not_compared():
    scene = new_scene()
    zone_id_subnet = ec2.Subnet.from_subnet_attributes(
        scene.stack, "ById", subnet_id="subnet-0ccccccccccccccc3", availability_zone="use1-az4"
    )
    fs = _efa_fs(scene, subnet=scene.subnet_a)
    fs.register_efa_clients(
        Construct(scene.stack, "Gpu"), max_nodes=4, efa_interfaces_per_node=8, subnets=[zone_id_subnet]
    )
