"""GpuClusterEndpoints: the VPC endpoints a GPU cluster needs with no internet route (issue 11 section 3)."""

from __future__ import annotations

import json
import math
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.networking import ClusterBackend, EndpointService, GpuClusterEndpoints, services_for
from fmconstructs.networking.endpoints import BACKEND_SERVICES, COMMON_SERVICES

from tests.conftest import new_app

COMMON = {"ssm", "ssmmessages", "ec2messages", "logs", "monitoring", "ecr.api", "ecr.dkr", "sts", "aps-workspaces"}


def isolated_vpc(stack: cdk.Stack) -> ec2.Vpc:
    return ec2.Vpc(
        stack,
        "Vpc",
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="nodes", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=20)
        ],
    )


def endpoints_template(backends, **kwargs) -> tuple[cdk.Stack, GpuClusterEndpoints, Template]:
    stack = cdk.Stack(new_app(), "Endpoints")
    vpc = isolated_vpc(stack)
    endpoints = GpuClusterEndpoints(stack, "Endpoints", vpc=vpc, backends=backends, **kwargs)
    return stack, endpoints, Template.from_stack(stack)


def interface_services(template: Template) -> dict[str, dict]:
    """Interface endpoints by the service short name at the end of their (Fn::Join) service name."""
    out = {}
    for resource in template.find_resources("AWS::EC2::VPCEndpoint").values():
        props = resource["Properties"]
        if props["VpcEndpointType"] == "Interface":
            parts = props["ServiceName"]["Fn::Join"][1]
            out[parts[-1].lstrip(".")] = props
    return out


@pytest.fixture(scope="module")
def both():
    return endpoints_template([ClusterBackend.PCS, ClusterBackend.EKS])


# --- which endpoints ------------------------------------------------------------------------------------------------
def test_pcs_nodes_get_the_common_endpoints_and_pcs():
    """PCS UG vpc-interface-endpoints: without internet access, nodes call RegisterComputeNodeGroupInstance through
    the com.amazonaws.<region>.pcs endpoint."""
    _, _, template = endpoints_template([ClusterBackend.PCS])
    assert set(interface_services(template)) == COMMON | {"pcs"}


def test_eks_nodes_get_eks_eks_auth_ec2_and_lambda():
    """EKS UG private-clusters lists ec2, ecr.api, ecr.dkr, s3, logs, sts, eks-auth and eks; the kubectl handler's
    provider framework invokes Lambda from inside the VPC."""
    _, _, template = endpoints_template([ClusterBackend.EKS])
    assert set(interface_services(template)) == COMMON | {"eks", "eks-auth", "ec2", "lambda"}


def test_two_backends_share_one_endpoint_per_service(both):
    _, endpoints, template = both
    services = interface_services(template)
    assert set(services) == COMMON | {"pcs", "eks", "eks-auth", "ec2", "lambda"}
    template.resource_count_is("AWS::EC2::VPCEndpoint", len(services) + 1)  # + the S3 gateway
    assert endpoints.services == services_for([ClusterBackend.PCS, ClusterBackend.EKS])


def test_every_service_names_its_source():
    for service in EndpointService:
        assert len(service.source) > 20, service
    # SNS is offered through extra_services only (e.g. CapacityBlockEvents' handler in isolated subnets).
    in_sets = set(COMMON_SERVICES) | {s for v in BACKEND_SERVICES.values() for s in v}
    assert in_sets | {EndpointService.SNS} == set(EndpointService)


def test_service_names_come_from_the_stacks_region(both):
    """No Region or partition literal: com.amazonaws.<Ref AWS::Region>.<service>."""
    _, _, template = both
    for resource in template.find_resources("AWS::EC2::VPCEndpoint").values():
        name = resource["Properties"]["ServiceName"]
        assert name["Fn::Join"][1][1] == {"Ref": "AWS::Region"}, name
    text = json.dumps(template.to_json())
    assert not re.search(r"(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d", text)
    assert "arn:aws" not in text and "amazonaws.com" not in text


def test_pcs_service_name_matches_aws_cdk_libs_constant(both):
    stack, endpoints, _ = both
    built = stack.resolve(endpoints.interface_endpoints[EndpointService.PCS].service_name)
    assert built == stack.resolve(ec2.InterfaceVpcEndpointAwsService.PARALLEL_COMPUTING_SERVICE.name)


def test_interface_endpoints_have_private_dns_and_every_subnet(both):
    stack, endpoints, template = both
    subnets = [stack.resolve(s.subnet_id) for s in endpoints.subnets]
    assert len(subnets) == 2
    for props in interface_services(template).values():
        assert props["PrivateDnsEnabled"] is True
        assert props["SubnetIds"] == subnets
        assert props["SecurityGroupIds"] == [stack.resolve(endpoints.security_group.security_group_id)]


def test_security_group_accepts_https_from_the_vpc_only(both):
    _, endpoints, template = both
    groups = template.find_resources("AWS::EC2::SecurityGroup")
    assert len(groups) == 1
    props = next(iter(groups.values()))["Properties"]
    rules = [{k: v for k, v in rule.items() if k != "Description"} for rule in props["SecurityGroupIngress"]]
    # a VPC created in the app: its literal CIDR block (cdk-nag AwsSolutions-EC23 cannot evaluate a GetAtt)
    cidr = endpoints.vpc.node.default_child.cidr_block
    assert cidr == "10.0.0.0/16"
    assert rules == [{"CidrIp": cidr, "FromPort": 443, "ToPort": 443, "IpProtocol": "tcp"}]
    assert [r["CidrIp"] for r in props["SecurityGroupEgress"]] == ["255.255.255.255/32"]  # CDK's no-traffic rule


def test_s3_gateway_goes_on_the_subnets_route_tables(both):
    stack, endpoints, template = both
    tables = [stack.resolve(s.route_table.route_table_id) for s in endpoints.subnets]
    template.has_resource_properties(
        "AWS::EC2::VPCEndpoint",
        {
            "VpcEndpointType": "Gateway",
            "ServiceName": {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".s3"]]},
            "RouteTableIds": tables,
        },
    )
    assert endpoints.s3_gateway_endpoint_id is not None


def test_services_and_extra_services():
    _, endpoints, template = endpoints_template(
        [ClusterBackend.PCS],
        services=[EndpointService.PCS, EndpointService.PROMETHEUS_WORKSPACES],
        extra_services=[EndpointService.EC2, EndpointService.PCS],
    )
    assert endpoints.services == (EndpointService.PCS, EndpointService.PROMETHEUS_WORKSPACES, EndpointService.EC2)
    assert set(interface_services(template)) == {"pcs", "aps-workspaces", "ec2"}


def test_construct_ids_are_stable():
    assert EndpointService.SSM_MESSAGES.construct_id == "SsmMessages"
    assert EndpointService.PROMETHEUS_WORKSPACES.construct_id == "PrometheusWorkspaces"
    _, endpoints, _ = endpoints_template([ClusterBackend.PCS])
    assert endpoints.node.find_child("Pcs") is endpoints.interface_endpoints[EndpointService.PCS]
    assert endpoints.node.find_child("S3Gateway") is endpoints.s3_gateway_endpoint


def test_endpoint_ids_and_connections(both):
    stack, endpoints, _ = both
    assert stack.resolve(endpoints.endpoint_ids[EndpointService.PCS]) == {
        "Ref": stack.resolve(endpoints.interface_endpoints[EndpointService.PCS].logical_id)
    }
    assert endpoints.connections.security_groups == [endpoints.security_group]


# --- any network ---------------------------------------------------------------------------------------------------
def test_imported_vpc_with_zoneless_subnets_and_given_route_tables_and_peers(scene):
    subnets = [ec2.Subnet.from_subnet_id(scene.stack, f"S{i}", f"subnet-0{i}bcdef0123456789") for i in range(2)]
    GpuClusterEndpoints(
        scene.stack,
        "Endpoints",
        vpc=scene.vpc,
        backends=[ClusterBackend.PCS],
        subnets=subnets,
        route_tables=["rtb-0aaaa", "rtb-0bbbb"],
        peers=[ec2.Peer.ipv4("10.0.0.0/16"), ec2.Peer.ipv4("10.1.0.0/16")],
    )
    t = scene.template()
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"RouteTableIds": ["rtb-0aaaa", "rtb-0bbbb"]})
    props = next(iter(t.find_resources("AWS::EC2::SecurityGroup").values()))["Properties"]
    assert [r["CidrIp"] for r in props["SecurityGroupIngress"]] == ["10.0.0.0/16", "10.1.0.0/16"]


def test_imported_subnets_without_route_tables_need_route_tables(scene):
    subnets = [ec2.Subnet.from_subnet_id(scene.stack, "S0", "subnet-0abc")]
    with pytest.raises(FmValidationError, match=r"route_tables must be given .*subnets\[0\]"):
        GpuClusterEndpoints(
            scene.stack,
            "Endpoints",
            vpc=scene.vpc,
            backends=[ClusterBackend.PCS],
            subnets=subnets,
            peers=[ec2.Peer.ipv4("10.0.0.0/16")],
        )


def test_no_s3_gateway_needs_no_route_tables(scene):
    subnets = [ec2.Subnet.from_subnet_id(scene.stack, "S0", "subnet-0abc")]
    endpoints = GpuClusterEndpoints(
        scene.stack,
        "Endpoints",
        vpc=scene.vpc,
        backends=[ClusterBackend.PCS],
        subnets=subnets,
        s3_gateway=False,
        peers=[ec2.Peer.ipv4("10.0.0.0/16")],
    )
    assert endpoints.s3_gateway_endpoint is None and endpoints.s3_gateway_endpoint_id is None
    scene.template().resource_count_is("AWS::EC2::VPCEndpoint", 10)


def test_vpc_imported_without_cidr_needs_peers(scene):
    with pytest.raises(FmValidationError, match=r"^peers must be given .*CIDR block"):
        GpuClusterEndpoints(scene.stack, "Endpoints", vpc=scene.vpc, backends=[ClusterBackend.PCS])


def test_given_security_group_is_used_as_is(scene):
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "Sg", "sg-0123456789abcdef0")
    endpoints = GpuClusterEndpoints(
        scene.stack, "Endpoints", vpc=scene.vpc, backends=[ClusterBackend.PCS], security_group=group
    )
    assert endpoints.security_group is group
    scene.template().resource_count_is("AWS::EC2::SecurityGroup", 0)
    scene.template().has_resource_properties("AWS::EC2::VPCEndpoint", {"SecurityGroupIds": ["sg-0123456789abcdef0"]})


def test_one_subnet_per_zone(scene):
    second_in_a = ec2.Subnet.from_subnet_attributes(
        scene.stack, "A2", subnet_id="subnet-0ccc", availability_zone="us-east-1a", route_table_id="rtb-0ccc"
    )
    with pytest.raises(FmValidationError, match=r"subnets\[1\] must be one subnet per Availability Zone"):
        GpuClusterEndpoints(
            scene.stack,
            "Endpoints",
            vpc=scene.vpc,
            backends=[ClusterBackend.PCS],
            subnets=[scene.subnet_a, second_in_a],
            peers=[ec2.Peer.ipv4("10.0.0.0/16")],
        )


def test_shared_route_table_appears_once(scene):
    subnets = [
        ec2.Subnet.from_subnet_attributes(
            scene.stack, f"S{i}", subnet_id=f"subnet-0{i}", availability_zone=zone, route_table_id="rtb-0shared"
        )
        for i, zone in enumerate(("us-east-1a", "us-east-1b"))
    ]
    GpuClusterEndpoints(
        scene.stack,
        "Endpoints",
        vpc=scene.vpc,
        backends=[ClusterBackend.PCS],
        subnets=subnets,
        peers=[ec2.Peer.ipv4("10.0.0.0/16")],
    )
    scene.template().has_resource_properties("AWS::EC2::VPCEndpoint", {"RouteTableIds": ["rtb-0shared"]})


def test_everything_is_a_token():
    stack = cdk.Stack(new_app(), "Tokens")
    vpc_id = cdk.CfnParameter(stack, "VpcId").value_as_string
    subnet_ids = cdk.CfnParameter(stack, "SubnetIds", type="List<AWS::EC2::Subnet::Id>").value_as_list
    tables = cdk.CfnParameter(stack, "RouteTables", type="CommaDelimitedList").value_as_list
    cidr = cdk.CfnParameter(stack, "Cidr").value_as_string
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=vpc_id, availability_zones=cdk.Fn.get_azs())
    subnets = [ec2.Subnet.from_subnet_id(stack, f"S{i}", cdk.Fn.select(i, subnet_ids)) for i in range(2)]
    GpuClusterEndpoints(
        stack,
        "Endpoints",
        vpc=vpc,
        backends=[ClusterBackend.PCS, ClusterBackend.EKS],
        subnets=subnets,
        route_tables=[cdk.Fn.select(0, tables), cdk.Fn.select(1, tables)],
        peers=[ec2.Peer.ipv4(cidr)],
    )
    t = Template.from_stack(stack)
    t.has_resource_properties(
        "AWS::EC2::VPCEndpoint",
        {
            "VpcEndpointType": "Gateway",
            "RouteTableIds": [{"Fn::Select": [0, {"Ref": "RouteTables"}]}, Match.any_value()],
        },
    )
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcId": {"Ref": "VpcId"}, "VpcEndpointType": "Interface"})


# --- bad input --------------------------------------------------------------------------------------------------------
NUMBER_TOKEN = cdk.Token.as_number(cdk.Fn.ref("N"))
STRING_TOKEN = cdk.Fn.ref("S")

BAD = [
    ("backends", "pcs", FmTypeError),
    ("backends", ["pcs"], FmTypeError),
    ("backends", [], FmValidationError),
    ("backends", None, FmTypeError),
    ("backends", STRING_TOKEN, FmTypeError),
    ("services", "ssm", FmTypeError),
    ("services", ["ssm"], FmTypeError),
    ("services", [], FmValidationError),
    ("extra_services", [True], FmTypeError),
    ("subnets", "subnet-0abc", FmTypeError),
    ("subnets", ["subnet-0abc"], FmTypeError),
    ("subnets", [], FmValidationError),
    ("route_tables", "rtb-0abc", FmTypeError),
    ("route_tables", ["rtb-0abc\n"], FmValidationError),
    ("route_tables", ["igw-0abc"], FmValidationError),
    ("route_tables", [NUMBER_TOKEN], FmTypeError),
    ("route_tables", [math.nan], FmTypeError),
    ("s3_gateway", 1, FmTypeError),
    ("s3_gateway", "true", FmTypeError),
    ("peers", "10.0.0.0/16", FmTypeError),
    ("peers", ["10.0.0.0/16"], FmTypeError),
    ("peers", [], FmValidationError),
    ("security_group", "sg-0abc", FmTypeError),
    ("vpc", "vpc-0abc", FmTypeError),
    ("vpc", None, FmTypeError),
]


@pytest.mark.parametrize(("parameter", "value", "error"), BAD, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(BAD)])
def test_bad_input_names_the_parameter(parameter, value, error):
    stack = cdk.Stack(new_app(), "Bad")
    vpc = isolated_vpc(stack)
    kwargs: dict = {"vpc": vpc, "backends": [ClusterBackend.PCS], parameter: value}
    with pytest.raises(error) as raised:
        GpuClusterEndpoints(stack, "Endpoints", **kwargs)
    assert raised.value.parameter.startswith(parameter)  # type: ignore[attr-defined]


def test_peers_and_security_group_together_are_refused():
    stack = cdk.Stack(new_app(), "Bad")
    vpc = isolated_vpc(stack)
    group = ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-0123456789abcdef0")
    with pytest.raises(FmValidationError, match=r"^peers must be None when security_group is given"):
        GpuClusterEndpoints(
            stack,
            "Endpoints",
            vpc=vpc,
            backends=[ClusterBackend.PCS],
            peers=[ec2.Peer.ipv4("10.0.0.0/16")],
            security_group=group,
        )


@pytest.mark.parametrize("bad_id", ["", STRING_TOKEN, 3, "Endpoints"], ids=["empty", "token", "int", "taken"])
def test_bad_ids_are_refused(bad_id):
    stack = cdk.Stack(new_app(), "Bad")
    vpc = isolated_vpc(stack)
    GpuClusterEndpoints(stack, "Endpoints", vpc=vpc, backends=[ClusterBackend.PCS])
    with pytest.raises(FmValidationError, match=r"^id must be"):
        GpuClusterEndpoints(stack, bad_id, vpc=vpc, backends=[ClusterBackend.PCS])


def test_scope_must_be_a_construct():
    with pytest.raises(FmTypeError, match=r"^scope must be"):
        GpuClusterEndpoints("stack", "E", vpc=None, backends=[ClusterBackend.PCS])  # type: ignore[arg-type]


def test_vpc_without_private_or_isolated_subnets_needs_subnets():
    stack = cdk.Stack(new_app(), "Bad")
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-1", availability_zones=["us-east-1a"])
    with pytest.raises(FmValidationError, match=r"^subnets must be given"):
        GpuClusterEndpoints(stack, "Endpoints", vpc=vpc, backends=[ClusterBackend.PCS])
