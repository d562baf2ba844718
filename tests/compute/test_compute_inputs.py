"""Foundation-floor inputs (issue 10): subnets without zones, deploy-time values, types and non-finite numbers."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    ClusterPlacementGroup,
    EfaSecurityGroup,
    FmValidationError,
    GpuAutoScalingGroup,
    GpuLaunchTemplate,
    InterfacePolicy,
    OnDemand,
    PlacementStrategy,
    UltraServerCapacityBlock,
    get_instance_spec,
    nvme_raid_commands,
    plan_network_interfaces,
)
from fmconstructs._validate import subnet_zone
from fmconstructs.compute.launch_template import UserDataFormat
from fmconstructs.errors import FmTypeError

from tests.conftest import ENV, new_app


@pytest.fixture(scope="module")
def stack() -> cdk.Stack:
    return cdk.Stack(new_app(), "SubnetZones", env=ENV)


def test_subnet_zone_of_subnet_imported_by_id_is_none(stack):
    subnet = ec2.Subnet.from_subnet_id(stack, "ById", "subnet-0123456789abcdef0")
    with pytest.raises(RuntimeError, match="CannotReferenceSubnetSAvailability"):
        _ = subnet.availability_zone  # what the old code read directly
    assert subnet_zone(subnet) is None
    assert cdk.Stack(new_app(), "StillAlive").stack_name == "StillAlive"  # jsii runtime survives


def test_subnet_zone_of_subnet_from_attributes_without_zone_is_none(stack):
    subnet = ec2.Subnet.from_subnet_attributes(stack, "NoZone", subnet_id="subnet-0123456789abcdef1")
    assert subnet_zone(subnet) is None


def test_subnet_zone_of_parameter_subnet_is_none(stack):
    subnet_id = cdk.CfnParameter(stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    assert subnet_zone(ec2.Subnet.from_subnet_id(stack, "FromParameter", subnet_id)) is None


def test_subnet_zone_of_token_zone_is_none(stack):
    zone = cdk.CfnParameter(stack, "Zone", type="AWS::EC2::AvailabilityZone::Name").value_as_string
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "TokenZone", subnet_id="subnet-0123456789abcdef2", availability_zone=zone
    )
    assert subnet_zone(subnet) is None


@pytest.mark.parametrize("zone", ["us-east-1a", "us-east-1-dfw-2a", "use1-az4"])
def test_subnet_zone_known(stack, zone):
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, f"Known{zone}", subnet_id="subnet-0123456789abcdef3", availability_zone=zone
    )
    assert subnet_zone(subnet) == zone


def test_subnet_zone_of_environment_agnostic_vpc_is_none():
    stack = cdk.Stack(new_app(), "Agnostic")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    assert subnet_zone(vpc.private_subnets[0]) is None


def test_subnet_zone_of_non_subnet_is_none():
    assert subnet_zone(object()) is None


# --- 1. Subnets without zone information never crash the constructs --------------------------------------------------


def _zoneless_subnets(stack: cdk.Stack) -> dict[str, ec2.ISubnet]:
    parameter = cdk.CfnParameter(stack, "GpuSubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    return {
        "from_subnet_id": ec2.Subnet.from_subnet_id(stack, "ById", "subnet-0123456789abcdef0"),
        "attributes_without_zone": ec2.Subnet.from_subnet_attributes(
            stack, "NoZone", subnet_id="subnet-0123456789abcdef1"
        ),
        "parameter": ec2.Subnet.from_subnet_id(stack, "FromParameter", parameter),
    }


ZONELESS = ["from_subnet_id", "attributes_without_zone", "parameter"]
CAPACITIES = {
    "on_demand": lambda: OnDemand(),
    "odcr_in_zone": lambda: CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
    "block_in_zone": lambda: CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a", instance_count=2),
}


def _imported_vpc(stack: cdk.Stack) -> ec2.IVpc:
    vpc_id = cdk.CfnParameter(stack, "VpcId", type="AWS::EC2::VPC::Id").value_as_string
    return ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=vpc_id, availability_zones=cdk.Fn.get_azs())


@pytest.mark.parametrize("capacity", list(CAPACITIES))
@pytest.mark.parametrize("kind", ZONELESS)
def test_zoneless_subnet_launch_template_and_fleet_synthesize(kind, capacity):
    stack = cdk.Stack(new_app(), "Zoneless")
    subnet = _zoneless_subnets(stack)[kind]
    vpc = _imported_vpc(stack)
    efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    placement = ClusterPlacementGroup(stack, "Pg")
    cap = CAPACITIES[capacity]()
    cap.check_subnet(subnet)
    lt = GpuLaunchTemplate(
        stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=vpc,
        subnet=subnet,
        capacity=cap,
        efa_security_group=efa,
        placement_group=None if cap.is_capacity_block else placement,
        instance_store_mount_point=None,
    )
    nodes = 2 if cap.is_capacity_block else 1
    GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_nodes=nodes, max_nodes=nodes)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::EC2::LaunchTemplate", 1)
    template.has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup", {"VPCZoneIdentifier": [stack.resolve(subnet.subnet_id)]}
    )


@pytest.mark.parametrize("policy", [InterfacePolicy.PCS, InterfacePolicy.SELF_MANAGED])
def test_zoneless_subnet_with_pcs_and_self_managed_templates(policy):
    stack = cdk.Stack(new_app(), "ZonelessPolicies")
    subnet = _zoneless_subnets(stack)["parameter"]
    GpuLaunchTemplate(
        stack,
        "Lt",
        instance_type="p6e-gb200.36xlarge",
        vpc=_imported_vpc(stack),
        subnet=subnet,
        policy=policy,
        capacity=UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
        max_nodes=18,
    )
    Template.from_stack(stack).resource_count_is("AWS::EC2::LaunchTemplate", 1)


@pytest.mark.parametrize(
    ("reservation_zone", "subnet_zone_value", "raises"),
    [
        ("us-east-1a", "us-east-1a", False),
        ("us-east-1a", "us-east-1b", True),
    ],
)
def test_zone_rule_holds_when_both_zones_are_known(reservation_zone, subnet_zone_value, raises):
    stack = cdk.Stack(new_app(), "Zones")
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "S", subnet_id="subnet-0123456789abcdef0", availability_zone=subnet_zone_value
    )
    capacity = CapacityBlock(reservation_id="cr-0123456789abcdef0", zone=reservation_zone)
    if raises:
        with pytest.raises(FmValidationError, match=rf"subnet must be a subnet in {reservation_zone}"):
            capacity.check_subnet(subnet)
    else:
        capacity.check_subnet(subnet)


def test_zone_mismatch_with_a_token_subnet_id_never_shows_the_token():
    stack = cdk.Stack(new_app(), "TokenId")
    subnet_id = cdk.CfnParameter(stack, "SubnetId").value_as_string
    subnet = ec2.Subnet.from_subnet_attributes(stack, "S", subnet_id=subnet_id, availability_zone="us-east-1b")
    with pytest.raises(FmValidationError) as raised:
        CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a").check_subnet(subnet)
    assert "Token[" not in str(raised.value)
    assert "deploy-time" in str(raised.value)


# --- 2. Counts, sizes and ids as deploy-time values ---------------------------------------------------------------------


def test_everything_is_a_token_launch_template_and_fleet_synthesize():
    """One GpuLaunchTemplate and its fleet where every id, count, size and zone is a CloudFormation parameter."""
    stack = cdk.Stack(new_app(), "AllTokens")

    def number(name: str) -> float:
        return cdk.CfnParameter(stack, name, type="Number").value_as_number

    def text(name: str, kind: str = "String") -> str:
        return cdk.CfnParameter(stack, name, type=kind).value_as_string

    vpc = _imported_vpc(stack)
    subnet = ec2.Subnet.from_subnet_attributes(
        stack, "Subnet", subnet_id=text("SubnetId", "AWS::EC2::Subnet::Id"), availability_zone=text("SubnetZone")
    )
    node_sg = ec2.SecurityGroup.from_security_group_id(
        stack, "NodeSg", text("NodeSecurityGroupId", "AWS::EC2::SecurityGroup::Id")
    )
    capacity = CapacityBlock(
        reservation_id=text("ReservationId"), instance_count=number("ReservedInstances"), zone=text("ReservationZone")
    )
    nodes = number("Nodes")
    lt = GpuLaunchTemplate(
        stack,
        "Lt",
        instance_type="p5en.48xlarge",
        vpc=vpc,
        subnet=subnet,
        capacity=capacity,
        max_nodes=nodes,
        security_groups=[node_sg],
        image_id=text("ImageId", "AWS::EC2::Image::Id"),
        root_volume_size_gib=number("RootGiB"),
        http_put_response_hop_limit=number("HopLimit"),
        launch_template_name=text("TemplateName"),
        tags={"team": text("Team")},
        placement_group=None,
    )
    fleet = GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_nodes=nodes, max_nodes=nodes)
    assert lt.total_gpus is None and fleet.total_gpus is None
    template = Template.from_stack(stack)
    data = next(iter(template.find_resources("AWS::EC2::LaunchTemplate").values()))["Properties"]
    lt_data = data["LaunchTemplateData"]
    assert lt_data["ImageId"] == {"Ref": "ImageId"}
    assert lt_data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == {"Ref": "RootGiB"}
    assert lt_data["MetadataOptions"]["HttpPutResponseHopLimit"] == {"Ref": "HopLimit"}
    assert lt_data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": {"Ref": "ReservationId"}}
    }
    assert data["LaunchTemplateName"] == {"Ref": "TemplateName"}
    assert all(nic["SubnetId"] == {"Ref": "SubnetId"} for nic in lt_data["NetworkInterfaces"])
    template.has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup",
        {"MinSize": {"Ref": "Nodes"}, "MaxSize": {"Ref": "Nodes"}, "DesiredCapacity": {"Ref": "Nodes"}},
    )
    assert "Token[" not in json.dumps(data)


def test_number_token_counts_are_never_compared_as_numbers():
    stack = cdk.Stack(new_app(), "NumberTokens")
    count = cdk.CfnParameter(stack, "Count", type="Number").value_as_number
    subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    vpc = _imported_vpc(stack)
    capacity = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=count)
    lt = GpuLaunchTemplate(
        stack, "Lt", instance_type="p5.48xlarge", vpc=vpc, subnet=subnet, capacity=capacity, max_nodes=4
    )
    GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_nodes=0, max_nodes=count, desired_nodes=count)
    Template.from_stack(stack).has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup", {"MinSize": "0", "MaxSize": {"Ref": "Count"}}
    )


def test_token_efa_interface_count_is_refused_by_name():
    stack = cdk.Stack(new_app(), "EfaToken")
    count = cdk.CfnParameter(stack, "Efa", type="Number").value_as_number
    with pytest.raises(FmValidationError, match=r"^efa_interface_count must be known at synth time") as raised:
        GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=_imported_vpc(stack), efa_interface_count=count)
    assert "Token[" not in str(raised.value) and "e+289" not in str(raised.value)


def test_token_instance_type_is_refused_by_name():
    stack = cdk.Stack(new_app(), "TypeToken")
    with pytest.raises(FmValidationError, match=r"^instance_type must be a catalog instance type known at synth"):
        GpuLaunchTemplate(
            stack, "Lt", instance_type=cdk.CfnParameter(stack, "T").value_as_string, vpc=_imported_vpc(stack)
        )


# --- 4. Vocabulary: the node-count names ------------------------------------------------------------------------------


def test_fleet_sizes_are_required():
    stack = cdk.Stack(new_app(), "Required", env=ENV)
    subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    lt = GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=_imported_vpc(stack), subnet=subnet)
    with pytest.raises(FmTypeError, match=r"^max_nodes must be a number of nodes"):
        GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_nodes=1)


# --- 5. Types, non-finite numbers, strings for sequences, trailing newlines --------------------------------------------

NAN, INF = math.nan, math.inf


@pytest.fixture(scope="module")
def lt_scene() -> dict[str, object]:
    stack = cdk.Stack(new_app(), "LtTypes", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    return {"stack": stack, "vpc": vpc, "subnet": vpc.private_subnets[0], "counter": [0]}


LT_BAD = [
    # (overrides, parameter, error type)
    ({"instance_type": None}, "instance_type", FmTypeError),
    ({"instance_type": 5}, "instance_type", FmTypeError),
    ({"instance_type": "p5.48xlarge\n"}, "instance_type", FmValidationError),
    ({"vpc": "vpc-0123456789abcdef0"}, "vpc", FmTypeError),
    ({"vpc": None}, "vpc", FmTypeError),
    ({"policy": "pcs"}, "policy", FmTypeError),
    ({"capacity": "on-demand"}, "capacity", FmTypeError),
    ({"max_nodes": True}, "max_nodes", FmTypeError),
    ({"max_nodes": NAN}, "max_nodes", FmValidationError),
    ({"max_nodes": INF}, "max_nodes", FmValidationError),
    ({"max_nodes": -INF}, "max_nodes", FmValidationError),
    ({"max_nodes": "4"}, "max_nodes", FmTypeError),
    ({"max_nodes": 2.5}, "max_nodes", FmValidationError),
    ({"subnet": "subnet-0aaaaaaaaaaaaaaa1"}, "subnet", FmTypeError),
    ({"efa_security_group": "sg-0123"}, "efa_security_group", FmTypeError),
    ({"security_groups": "sg-0123456789abcdef0"}, "security_groups", FmTypeError),
    ({"security_groups": ["sg-0123456789abcdef0"]}, "security_groups[0]", FmTypeError),
    ({"security_groups": []}, "security_groups", FmValidationError),
    ({"placement_group": "my-group"}, "placement_group", FmTypeError),
    ({"efa_interface_count": True}, "efa_interface_count", FmTypeError),
    ({"efa_interface_count": NAN}, "efa_interface_count", FmValidationError),
    ({"efa_interface_count": INF}, "efa_interface_count", FmValidationError),
    ({"efa_interface_count": "8"}, "efa_interface_count", FmTypeError),
    ({"efa_interface_count": 3.5}, "efa_interface_count", FmValidationError),
    ({"extra_ena_interfaces": 1}, "extra_ena_interfaces", FmTypeError),
    ({"extra_ena_interfaces": "yes"}, "extra_ena_interfaces", FmTypeError),
    ({"efa_cards": "all"}, "efa_cards", FmTypeError),
    ({"machine_image": "ami-0123456789abcdef0"}, "machine_image", FmTypeError),
    ({"image_id": 12}, "image_id", FmTypeError),
    ({"image_id": "ami-0123456789abcdef0\n"}, "image_id", FmValidationError),
    ({"image_id": "my image"}, "image_id", FmValidationError),
    ({"instance_profile": "arn:aws:iam::123456789012:instance-profile/x"}, "instance_profile", FmTypeError),
    ({"http_put_response_hop_limit": True}, "http_put_response_hop_limit", FmTypeError),
    ({"http_put_response_hop_limit": NAN}, "http_put_response_hop_limit", FmValidationError),
    ({"http_put_response_hop_limit": 2.0000001}, "http_put_response_hop_limit", FmValidationError),
    ({"root_volume_size_gib": "200"}, "root_volume_size_gib", FmTypeError),
    ({"root_volume_size_gib": INF}, "root_volume_size_gib", FmValidationError),
    ({"root_volume_size_gib": NAN}, "root_volume_size_gib", FmValidationError),
    ({"root_volume_size_gib": False}, "root_volume_size_gib", FmTypeError),
    ({"root_device_name": None}, "root_device_name", FmTypeError),
    ({"root_device_name": "/dev/xvda\n"}, "root_device_name", FmValidationError),
    ({"encryption_key": "alias/aws/ebs"}, "encryption_key", FmTypeError),
    ({"instance_store_mount_point": ["/scratch"]}, "instance_store_mount_point", FmTypeError),
    ({"instance_store_mount_point": "/scratch\n"}, "instance_store_mount_point", FmValidationError),
    ({"instance_store_mount_point": "/scratch; rm -rf /"}, "instance_store_mount_point", FmValidationError),
    ({"launch_template_name": "ab"}, "launch_template_name", FmValidationError),
    ({"launch_template_name": "gpu nodes"}, "launch_template_name", FmValidationError),
    ({"launch_template_name": "gpu-nodes\n"}, "launch_template_name", FmValidationError),
    ({"launch_template_name": 7}, "launch_template_name", FmTypeError),
    ({"tags": "team=ml"}, "tags", FmTypeError),
    ({"tags": [("team", "ml")]}, "tags", FmTypeError),
    ({"tags": {"team": 1}}, "tags['team']", FmTypeError),
    ({"user_data_format": "shell"}, "user_data_format", FmTypeError),
    ({"reservation_target_form": "CapacityReservationId"}, "reservation_target_form", FmTypeError),
    ({"max_nodes": NAN}, "max_nodes", FmValidationError),
]


@pytest.mark.parametrize(
    ("overrides", "parameter", "error"), LT_BAD, ids=[f"{p}-{i}" for i, (_, p, _e) in enumerate(LT_BAD)]
)
def test_launch_template_bad_inputs_name_the_parameter(lt_scene, overrides, parameter, error):
    lt_scene["counter"][0] += 1
    props = {"instance_type": "p5.48xlarge", "vpc": lt_scene["vpc"], "subnet": lt_scene["subnet"], **overrides}
    with pytest.raises(error) as raised:
        GpuLaunchTemplate(lt_scene["stack"], f"Lt{lt_scene['counter'][0]}", **props)
    assert raised.value.parameter == parameter, raised.value
    assert str(raised.value).startswith(f"{parameter} must be"), raised.value
    assert "Token[" not in str(raised.value)


def test_no_construct_is_left_behind_by_a_refused_input(lt_scene):
    stack = cdk.Stack(new_app(), "Clean", env=ENV)
    with pytest.raises(FmTypeError):
        GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=lt_scene["vpc"], max_nodes="4")
    assert stack.node.try_find_child("Lt") is None


@pytest.mark.parametrize(
    ("commands", "parameter"),
    [((["echo a", "echo b"],), "commands[0]"), ((b"echo",), "commands[0]"), (("echo a", 3), "commands[1]")],
)
def test_user_data_commands_must_be_strings(lt_scene, commands, parameter):
    lt_scene["counter"][0] += 1
    lt = GpuLaunchTemplate(
        lt_scene["stack"], f"Ud{lt_scene['counter'][0]}", instance_type="p5.48xlarge", vpc=lt_scene["vpc"]
    )
    with pytest.raises(FmTypeError, match=rf"^{re.escape(parameter)} must be a str"):
        lt.add_user_data(*commands)


def test_mime_parts_are_typed(lt_scene):
    lt_scene["counter"][0] += 1
    lt = GpuLaunchTemplate(
        lt_scene["stack"],
        f"Mime{lt_scene['counter'][0]}",
        instance_type="p5.48xlarge",
        vpc=lt_scene["vpc"],
        user_data_format=UserDataFormat.MIME_MULTIPART,
    )
    with pytest.raises(FmTypeError, match=r"^content_type must be a str"):
        lt.add_user_data_part(None, "x")
    with pytest.raises(FmTypeError, match=r"^body must be a str"):
        lt.add_user_data_part("text/x-shellscript", ["echo"])
    with pytest.raises(FmValidationError, match=r"^content_type/body must be a one-line content type"):
        lt.add_user_data_part("text/x-shellscript\r", "echo")


FLEET_BAD = [
    ({"launch_template": "lt-0123"}, "launch_template", FmTypeError),
    ({"min_nodes": True}, "min_nodes", FmTypeError),
    ({"min_nodes": NAN}, "min_nodes", FmValidationError),
    ({"max_nodes": INF}, "max_nodes", FmValidationError),
    ({"max_nodes": "2"}, "max_nodes", FmTypeError),
    ({"max_nodes": 0}, "max_nodes", FmValidationError),
    ({"desired_nodes": NAN}, "desired_nodes", FmValidationError),
    ({"desired_nodes": 1.5}, "desired_nodes", FmValidationError),
    ({"desired_nodes": False}, "desired_nodes", FmTypeError),
    ({"notifications_topic": "arn:aws:sns:us-east-1:123456789012:t"}, "notifications_topic", FmTypeError),
    ({"health_check_grace_period": 900}, "health_check_grace_period", FmTypeError),
]


@pytest.mark.parametrize(("overrides", "parameter", "error"), FLEET_BAD)
def test_fleet_bad_inputs_name_the_parameter(lt_scene, overrides, parameter, error):
    lt_scene["counter"][0] += 1
    n = lt_scene["counter"][0]
    lt = GpuLaunchTemplate(
        lt_scene["stack"], f"FleetLt{n}", instance_type="p5.48xlarge", vpc=lt_scene["vpc"], subnet=lt_scene["subnet"]
    )
    props = {"launch_template": lt, "min_nodes": 1, "max_nodes": 2, **overrides}
    with pytest.raises(error) as raised:
        GpuAutoScalingGroup(lt_scene["stack"], f"Fleet{n}", **props)
    assert raised.value.parameter == parameter, raised.value


@pytest.mark.parametrize(
    ("kwargs", "parameter", "error"),
    [
        ({"vpc": "vpc-0123"}, "vpc", FmTypeError),
        ({"description": 5}, "description", FmTypeError),
        ({"description": "EFA\n"}, "description", FmValidationError),
        ({"description": "EFA <all>"}, "description", FmValidationError),
        ({"description": "x" * 256}, "description", FmValidationError),
    ],
)
def test_efa_security_group_bad_inputs(lt_scene, kwargs, parameter, error):
    lt_scene["counter"][0] += 1
    props = {"vpc": lt_scene["vpc"], **kwargs}
    with pytest.raises(error) as raised:
        EfaSecurityGroup(lt_scene["stack"], f"Efa{lt_scene['counter'][0]}", **props)
    assert raised.value.parameter == parameter


def test_efa_security_group_accepts_the_api_character_set(lt_scene):
    EfaSecurityGroup(lt_scene["stack"], "EfaChars", vpc=lt_scene["vpc"], description="EFA ._-:/()#,@[]+=&;{}!$* 1")


@pytest.mark.parametrize(
    ("kwargs", "parameter", "error"),
    [
        ({"strategy": "cluster"}, "strategy", FmTypeError),
        ({"strategy": PlacementStrategy.PARTITION, "partition_count": True}, "partition_count", FmTypeError),
        ({"strategy": PlacementStrategy.PARTITION, "partition_count": NAN}, "partition_count", FmValidationError),
        ({"strategy": PlacementStrategy.PARTITION, "partition_count": "3"}, "partition_count", FmTypeError),
        ({"strategy": PlacementStrategy.PARTITION, "partition_count": 2.5}, "partition_count", FmValidationError),
    ],
)
def test_placement_group_bad_inputs(lt_scene, kwargs, parameter, error):
    lt_scene["counter"][0] += 1
    with pytest.raises(error) as raised:
        ClusterPlacementGroup(lt_scene["stack"], f"Pg{lt_scene['counter'][0]}", **kwargs)
    assert raised.value.parameter == parameter


def test_placement_group_partition_count_may_be_a_token():
    stack = cdk.Stack(new_app(), "PgToken")
    count = cdk.CfnParameter(stack, "Partitions", type="Number").value_as_number
    ClusterPlacementGroup(stack, "Pg", strategy=PlacementStrategy.PARTITION, partition_count=count)
    Template.from_stack(stack).has_resource_properties(
        "AWS::EC2::PlacementGroup", {"PartitionCount": {"Ref": "Partitions"}}
    )


P5 = get_instance_spec("p5.48xlarge")


@pytest.mark.parametrize(
    ("call", "parameter", "error"),
    [
        (lambda: plan_network_interfaces("p5.48xlarge"), "spec", FmTypeError),
        (lambda: plan_network_interfaces(P5, policy="pcs"), "policy", FmTypeError),
        (lambda: plan_network_interfaces(P5, efa_interface_count=True), "efa_interface_count", FmTypeError),
        (lambda: plan_network_interfaces(P5, efa_interface_count=NAN), "efa_interface_count", FmValidationError),
        (lambda: plan_network_interfaces(P5, efa_interface_count="4"), "efa_interface_count", FmTypeError),
        (lambda: plan_network_interfaces(P5, extra_ena_interfaces=None), "extra_ena_interfaces", FmTypeError),
        (lambda: plan_network_interfaces(P5, efa_cards="all"), "efa_cards", FmTypeError),
        (lambda: nvme_raid_commands(None), "instance_store_mount_point", FmTypeError),
        (lambda: nvme_raid_commands("/scratch\n"), "instance_store_mount_point", FmValidationError),
        (lambda: nvme_raid_commands(["/scratch"]), "instance_store_mount_point", FmTypeError),
        (lambda: nvme_raid_commands("/scratch", label="fmscratch\n"), "label", FmValidationError),
        (lambda: nvme_raid_commands("/scratch", label=12), "label", FmTypeError),
    ],
)
def test_pure_functions_bad_inputs(call, parameter, error):
    with pytest.raises(error) as raised:
        call()
    assert raised.value.parameter == parameter, raised.value


ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.binary(max_size=4),
)


def _refused(call: Callable[[], object]) -> str | None:
    """None when ``call`` succeeds, the parameter named when it raises the library's error (anything else fails)."""
    try:
        call()
    except FmValidationError as error:
        return error.parameter
    return None


@settings(max_examples=300, deadline=None)
@given(count=ANYTHING, extra=ANYTHING)
def test_plan_network_interfaces_never_raises_anything_else(count, extra):
    spec = get_instance_spec("p6e-gb200.36xlarge")
    refused = _refused(lambda: plan_network_interfaces(spec, efa_interface_count=count, extra_ena_interfaces=extra))
    assert refused in (None, "efa_interface_count", "extra_ena_interfaces")


@settings(max_examples=300, deadline=None)
@given(reservation_id=ANYTHING, instance_count=ANYTHING, zone=ANYTHING)
def test_capacity_constructors_never_raise_anything_else(reservation_id, instance_count, zone):
    allowed = (None, "reservation_id", "instance_count", "zone", "reservation_id/resource_group_arn")
    for cls in (CapacityReservation, CapacityBlock):
        assert (
            _refused(lambda c=cls: c(reservation_id=reservation_id, instance_count=instance_count, zone=zone))
            in allowed
        )
    refused = _refused(
        lambda: UltraServerCapacityBlock(
            reservation_id="cr-0123456789abcdef0", ultraserver_count=instance_count, zone=zone
        )
    )
    assert refused in (None, "ultraserver_count", "zone")


@settings(max_examples=200, deadline=None)
@given(mount_point=ANYTHING, label=ANYTHING)
def test_nvme_raid_commands_never_raises_anything_else(mount_point, label):
    assert _refused(lambda: nvme_raid_commands(mount_point, label=label)) in (
        None,
        "instance_store_mount_point",
        "label",
    )


@pytest.mark.parametrize("subnet", ["subnet-0123456789abcdef0", None, 3])
def test_check_subnet_needs_a_subnet(subnet):
    with pytest.raises(FmTypeError, match=r"^subnet must be an ec2.ISubnet"):
        OnDemand().check_subnet(subnet)


@pytest.mark.parametrize(
    ("policy", "capacity", "parameter"), [("pcs", OnDemand(), "policy"), (InterfacePolicy.PCS, "block", "capacity")]
)
def test_reservation_target_form_for_types(policy, capacity, parameter):
    from fmconstructs.compute.launch_template import reservation_target_form_for

    with pytest.raises(FmTypeError, match=rf"^{parameter} must be"):
        reservation_target_form_for(policy, capacity)
