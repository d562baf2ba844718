"""Foundation-floor inputs (issue 10): subnets without zones, deploy-time values, types and non-finite numbers."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from conftest import ENV, new_app

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
