"""Foundation-floor inputs (issue 10): subnets without zones, deploy-time values, types and non-finite numbers."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from conftest import ENV, new_app

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
    UltraServerCapacityBlock,
)
from fmconstructs._validate import subnet_zone
from fmconstructs.errors import FmTypeError


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


# --- 4. Vocabulary: old names still work and warn ----------------------------------------------------------------------


def test_launch_template_node_count_is_a_deprecated_alias_of_max_nodes():
    stack = cdk.Stack(new_app(), "OldLt", env=ENV)
    vpc = _imported_vpc(stack)
    with pytest.warns(DeprecationWarning, match=r"node_count is deprecated .* use max_nodes"):
        lt = GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=vpc, node_count=3)
    assert lt.max_nodes == 3 and lt.total_gpus == 24
    with pytest.warns(DeprecationWarning, match=r"GpuLaunchTemplate.node_count is deprecated"):
        assert lt.node_count == 3
    with pytest.raises(FmValidationError, match=r"^node_count must be omitted when max_nodes is given"):
        GpuLaunchTemplate(stack, "Both", instance_type="p5.48xlarge", vpc=vpc, node_count=3, max_nodes=3)


def test_fleet_count_names_are_deprecated_aliases():
    stack = cdk.Stack(new_app(), "OldFleet", env=ENV)
    subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    lt = GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=_imported_vpc(stack), subnet=subnet)
    with pytest.warns(DeprecationWarning, match=r"(min|max|desired)_count is deprecated"):
        fleet = GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_count=1, max_count=3, desired_count=2)
    assert (fleet.min_nodes, fleet.max_nodes, fleet.desired_nodes) == (1, 3, 2)
    with pytest.warns(DeprecationWarning, match=r"GpuAutoScalingGroup.max_count is deprecated"):
        assert fleet.max_count == 3
    with pytest.raises(FmValidationError, match=r"^max_count must be omitted when max_nodes is given"):
        GpuAutoScalingGroup(stack, "Both", launch_template=lt, min_nodes=1, max_nodes=3, max_count=3)


def test_fleet_sizes_are_required():
    stack = cdk.Stack(new_app(), "Required", env=ENV)
    subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    lt = GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge", vpc=_imported_vpc(stack), subnet=subnet)
    with pytest.raises(FmTypeError, match=r"^max_nodes must be a number of nodes"):
        GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_nodes=1)
