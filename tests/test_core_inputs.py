"""Foundation-floor inputs (issue 10): subnets without zones, deploy-time values, types and non-finite numbers."""

from __future__ import annotations

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
    GpuAutoScalingGroup(stack, "Fleet", launch_template=lt, min_count=nodes, max_count=nodes)
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
        node_count=18,
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
