"""CapacityBlockEvents warns when its in-VPC handler has no route to the AWS APIs it calls (isolated subnets)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.capacity_events import CapacityBlockEvents, _endpoint_service, _no_api_route_problem
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.networking.endpoints import ClusterBackend, GpuClusterEndpoints, services_for

from tests.conftest import ENV, new_app

WARNING = WarningId.CAPACITY_EVENTS_NO_API_ROUTE
LOGIN_GROUP = "pcs_abcdef0123"


def _stack() -> tuple[cdk.Stack, ec2.IVpc]:
    stack = cdk.Stack(new_app(), "CbApiRoute", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        vpc_cidr_block="10.0.0.0/16",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
        isolated_subnet_ids=["subnet-0ccccccccccccccc3", "subnet-0ddddddddddddddd4"],
        isolated_subnet_route_table_ids=["rtb-0ccccccccccccccc3", "rtb-0ddddddddddddddd4"],
    )
    return stack, vpc


def _endpoints(stack: cdk.Stack, vpc: ec2.IVpc, kinds: str) -> list[Any]:
    """'eks': GpuClusterEndpoints for EKS; 'sns': an SNS interface endpoint; 'sns-no-dns': one with private DNS off;
    'scheduler': an EventBridge Scheduler interface endpoint (the expiry schedule's CreateSchedule)."""
    out: list[Any] = []
    for kind in kinds.split("+") if kinds else []:
        if kind == "scheduler":
            out.append(
                ec2.InterfaceVpcEndpoint(
                    stack,
                    "Scheduler",
                    vpc=vpc,
                    service=ec2.InterfaceVpcEndpointService("com.amazonaws.us-east-1.scheduler"),
                    subnets=ec2.SubnetSelection(subnets=vpc.isolated_subnets),
                    private_dns_enabled=True,
                )
            )
        elif kind == "eks":
            out.append(
                GpuClusterEndpoints(
                    stack, "Endpoints", vpc=vpc, backends=[ClusterBackend.EKS], subnets=vpc.isolated_subnets
                )
            )
        else:
            out.append(
                ec2.InterfaceVpcEndpoint(
                    stack,
                    "Sns",
                    vpc=vpc,
                    service=ec2.InterfaceVpcEndpointAwsService.SNS,
                    subnets=ec2.SubnetSelection(subnets=vpc.isolated_subnets),
                    private_dns_enabled=kind != "sns-no-dns",
                )
            )
    return out


def _build(
    *, subnets: str = "isolated", in_vpc: bool = True, endpoints: str = "", pcs: bool = False
) -> tuple[cdk.Stack, CapacityBlockEvents]:
    stack, vpc = _stack()
    chosen = {
        "private": vpc.private_subnets,
        "isolated": vpc.isolated_subnets,
        "unknown": [ec2.Subnet.from_subnet_id(stack, "Imported", "subnet-0eeeeeeeeeeeeeee5")],
    }[subnets]
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, subnets=chosen, system_node_group=None)
    given = _endpoints(stack, vpc, endpoints) if endpoints else None
    blocks = CapacityBlockEvents(
        stack,
        "Blocks",
        alert_topic=sns.Topic(stack, "Alerts"),
        eks_cluster=cluster,
        eks_in_vpc=in_vpc,
        pcs_login_node_group_id=LOGIN_GROUP if pcs else None,
        endpoints=given,
    )
    return stack, blocks


def _assert_no_warning(stack: cdk.Stack) -> None:
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp(WARNING.value))


def _assert_warning(stack: cdk.Stack, text: str) -> None:
    Annotations.from_stack(stack).has_warning(
        "/CbApiRoute/Blocks", Match.string_like_regexp(f"{text}.*{WARNING.qualified}")
    )


# (case id, build options, regexp the warning must match, or None for no warning)
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "isolated-no-endpoints",
        {},
        r"2 of them isolated .*calls the AWS APIs sns, ec2, eks, scheduler; .*was passed for sns, ec2, eks, scheduler .*"
        r"GpuClusterEndpoints\(backends=\[ClusterBackend.EKS\]\) creates ec2, eks; "
        r"GpuClusterEndpoints\(extra_services=\[EndpointService.SNS\]\) adds sns; "
        r"ec2.InterfaceVpcEndpoint\(vpc=..., service=InterfaceVpcEndpointService\(\"com.amazonaws.<Region>.scheduler\"\)\) "
        r"creates scheduler.*NAT route",
    ),
    ("isolated-all-endpoints", {"endpoints": "eks+sns+scheduler"}, None),
    ("isolated-no-scheduler-endpoint", {"endpoints": "eks+sns"}, r"was passed for scheduler \(endpoints=\)"),
    ("isolated-cluster-endpoints-only", {"endpoints": "eks+scheduler"}, r"was passed for sns \(endpoints=\)"),
    ("isolated-sns-only", {"endpoints": "sns+scheduler"}, r"was passed for ec2, eks \(endpoints=\)"),
    (
        "isolated-sns-without-private-dns",
        {"endpoints": "eks+sns-no-dns+scheduler"},
        r"was passed for sns \(endpoints=\)",
    ),
    ("private-with-nat", {"subnets": "private"}, None),
    ("unknown-subnets", {"subnets": "unknown"}, None),
    ("outside-vpc", {"in_vpc": False}, None),
    (
        "pcs-and-eks-isolated",
        {"pcs": True},
        r"calls the AWS APIs sns, ec2, eks, ssm, scheduler; .*creates ec2, eks, ssm",
    ),
    ("pcs-and-eks-all-endpoints", {"pcs": True, "endpoints": "eks+sns+scheduler"}, None),
]


@pytest.mark.parametrize(("options", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_api_route_warning(options: dict[str, Any], expected: str | None) -> None:
    stack, _ = _build(**options)
    if expected is None:
        _assert_no_warning(stack)
    else:
        _assert_warning(stack, expected)


def test_pcs_only_handler_is_outside_any_vpc_and_not_warned() -> None:
    # GIVEN only a PCS login node group: the handler is not put in a VPC (no eks_cluster), so Lambda's own network
    # reaches the APIs and there is nothing to judge.
    stack, _ = _stack()
    blocks = CapacityBlockEvents(
        stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), pcs_login_node_group_id=LOGIN_GROUP
    )
    assert blocks.api_services == ("sns", "ec2", "ssm", "scheduler")
    Template.from_stack(stack).has_resource_properties("AWS::Lambda::Function", {"VpcConfig": Match.absent()})
    _assert_no_warning(stack)


def test_endpoints_refused_when_the_handler_is_outside_the_vpc() -> None:
    stack, vpc = _stack()
    with pytest.raises(FmValidationError, match=r"endpoints must be None unless the handler runs in the VPC"):
        CapacityBlockEvents(
            stack,
            "Blocks",
            alert_topic=sns.Topic(stack, "Alerts"),
            pcs_login_node_group_id=LOGIN_GROUP,
            endpoints=_endpoints(stack, vpc, "sns"),
        )


@pytest.mark.parametrize("bad", ["vpce-0123456789abcdef0", ["vpce-0123456789abcdef0"], [None], 3])
def test_endpoints_rejects_non_endpoints(bad: Any) -> None:
    stack, vpc = _stack()
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, subnets=vpc.isolated_subnets, system_node_group=None)
    with pytest.raises(FmTypeError, match=r"endpoints"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), eks_cluster=cluster, endpoints=bad)


def test_api_services_in_vpc() -> None:
    _, blocks = _build(pcs=True, endpoints="eks+sns")
    assert blocks.api_services == ("sns", "ec2", "eks", "ssm", "scheduler")
    # Every interface endpoint of the GpuClusterEndpoints, and the SNS InterfaceVpcEndpoint's CfnVPCEndpoint.
    assert len(blocks.endpoints) == len(services_for([ClusterBackend.EKS])) + 1
    assert all(isinstance(e, ec2.CfnVPCEndpoint) for e in blocks.endpoints)


def test_endpoint_in_another_vpc_does_not_count() -> None:
    stack, vpc = _stack()
    other = ec2.CfnVPCEndpoint(
        stack,
        "OtherVpcSns",
        vpc_id="vpc-0fffffffffffffff9",
        service_name=ec2.InterfaceVpcEndpointAwsService.SNS.name,
        vpc_endpoint_type="Interface",
        private_dns_enabled=True,
    )
    assert _endpoint_service(other, vpc.vpc_id) is None
    assert _endpoint_service(other, "vpc-0fffffffffffffff9") == "sns"


@pytest.mark.parametrize(
    ("service_name", "endpoint_type", "dns", "expected"),
    [
        ("com.amazonaws.us-east-1.ec2", "Interface", True, "ec2"),
        ("com.amazonaws.us-east-1.ec2messages", "Interface", True, "ec2messages"),
        ("com.amazonaws.us-east-1.eks-auth", "Interface", True, "eks-auth"),
        ("com.amazonaws.us-east-1.sns", "Interface", False, None),
        ("com.amazonaws.us-east-1.sns", "Interface", None, None),  # CloudFormation's default: private DNS off
        ("com.amazonaws.us-east-1.s3", "Gateway", None, None),
        ("com.amazonaws.vpce.us-east-1.vpce-svc-0123456789abcdef0", "Interface", True, None),
    ],
)
def test_endpoint_service(service_name: str, endpoint_type: str, dns: bool | None, expected: str | None) -> None:
    stack, vpc = _stack()
    endpoint = ec2.CfnVPCEndpoint(
        stack,
        "Endpoint",
        vpc_id=vpc.vpc_id,
        service_name=service_name,
        vpc_endpoint_type=endpoint_type,
        private_dns_enabled=dns,
    )
    assert _endpoint_service(endpoint, vpc.vpc_id) == expected


def test_endpoint_service_in_environment_agnostic_stack() -> None:
    # The service name resolves to Fn::Join ["", ["com.amazonaws.", Ref AWS::Region, ".sns"]].
    stack = cdk.Stack(new_app(), "Agnostic")
    endpoint = ec2.CfnVPCEndpoint(
        stack,
        "Sns",
        vpc_id="vpc-0123456789abcdef0",
        service_name=ec2.InterfaceVpcEndpointAwsService.SNS.name,
        vpc_endpoint_type="Interface",
        private_dns_enabled=True,
    )
    assert _endpoint_service(endpoint, "vpc-0123456789abcdef0") == "sns"


def test_deploy_time_private_dns_counts() -> None:
    stack, vpc = _stack()
    dns = cdk.CfnParameter(stack, "Dns", type="String").value_as_string
    endpoint = ec2.CfnVPCEndpoint(
        stack,
        "Sns",
        vpc_id=vpc.vpc_id,
        service_name="com.amazonaws.us-east-1.sns",
        vpc_endpoint_type="Interface",
        private_dns_enabled=cdk.Fn.condition_equals(dns, "true"),
    )
    assert _endpoint_service(endpoint, vpc.vpc_id) == "sns"


@pytest.mark.parametrize(
    ("covered", "isolated", "warns"),
    [
        ([], ["subnet-1"], True),
        (["sns", "ec2"], ["subnet-1"], True),
        (["sns", "ec2", "eks"], ["subnet-1"], False),
        ([], [], False),
    ],
)
def test_no_api_route_rule(covered: list[str], isolated: list[str], warns: bool) -> None:
    problem = _no_api_route_problem(needed=("sns", "ec2", "eks"), covered=covered, isolated_subnet_ids=isolated)
    assert (problem is not None) == warns


def test_warning_id_is_stable() -> None:
    assert WARNING.value == "capacity-events-no-api-route"
