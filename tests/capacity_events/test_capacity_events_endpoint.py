"""CapacityBlockEvents warns when its EKS handler cannot be known to reach the cluster's API server endpoint."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from fmconstructs.capacity_events import (
    CapacityBlockEvents,
    _in_vpc_endpoint_problem,
    _outside_vpc_endpoint_problem,
)
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import WarningId

from tests.conftest import ENV, new_app

WARNING = WarningId.CAPACITY_EVENTS_EKS_ENDPOINT_UNREACHABLE


class _PublicOnlyCluster(GpuEksCluster):
    """Test double: GpuEksCluster always keeps its private endpoint on, so a public-only endpoint (what another cluster
    construct could expose) is only reachable by overriding the attribute; the synthesized cluster is unchanged."""

    @property
    def endpoint_private(self) -> bool:
        return False


def _stack() -> tuple[cdk.Stack, ec2.IVpc]:
    stack = cdk.Stack(new_app(), "CbEndpoint", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
        isolated_subnet_ids=["subnet-0ccccccccccccccc3", "subnet-0ddddddddddddddd4"],
        isolated_subnet_route_table_ids=["rtb-0ccccccccccccccc3", "rtb-0ddddddddddddddd4"],
    )
    return stack, vpc


def _build(*, in_vpc: bool, cidrs: Any = None, subnets: str = "private", public_only: bool = False) -> cdk.Stack:
    stack, vpc = _stack()
    chosen = {
        "private": vpc.private_subnets,
        "isolated": vpc.isolated_subnets,
        "unknown": [ec2.Subnet.from_subnet_id(stack, "Imported", "subnet-0eeeeeeeeeeeeeee5")],
    }[subnets]
    if cidrs == "token":
        cidrs = cdk.CfnParameter(stack, "Cidrs", type="CommaDelimitedList").value_as_list
    cls = _PublicOnlyCluster if public_only else GpuEksCluster
    cluster = cls(stack, "Cluster", vpc=vpc, subnets=chosen, system_node_group=None, public_endpoint_cidrs=cidrs)
    CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), eks_cluster=cluster, eks_in_vpc=in_vpc)
    return stack


def _warning(text: str) -> Any:
    return Match.string_like_regexp(f"{text}.*{WARNING.qualified}")


# (case id, build options, regexp the warning must match, or None for no warning)
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("outside-private-only", {"in_vpc": False}, r"private only .*Keep eks_in_vpc=True"),
    (
        "outside-restricted",
        {"in_vpc": False, "cidrs": ["203.0.113.0/24"]},
        r"admits only 203\.0\.113\.0/24.*no fixed egress IP",
    ),
    ("outside-ipv6-only-open", {"in_vpc": False, "cidrs": ["::/0"]}, r"no outbound IPv6"),
    ("outside-open", {"in_vpc": False, "cidrs": ["0.0.0.0/0"]}, None),
    ("outside-open-in-halves", {"in_vpc": False, "cidrs": ["0.0.0.0/1", "128.0.0.0/1"]}, None),
    ("outside-open-dual-stack", {"in_vpc": False, "cidrs": ["0.0.0.0/0", "::/0"]}, None),
    ("outside-token-cidrs", {"in_vpc": False, "cidrs": "token"}, None),
    (
        "outside-public-only-restricted",
        {"in_vpc": False, "cidrs": ["198.51.100.7/32"], "public_only": True},
        r"NAT gateway's Elastic IP",
    ),
    ("vpc-private-only", {"in_vpc": True}, None),
    ("vpc-private-only-isolated", {"in_vpc": True, "subnets": "isolated"}, None),
    ("vpc-public-and-private", {"in_vpc": True, "cidrs": ["203.0.113.0/24"]}, None),
    (
        "vpc-public-only-isolated",
        {"in_vpc": True, "cidrs": ["0.0.0.0/0"], "subnets": "isolated", "public_only": True},
        r"public only .*2 of them isolated",
    ),
    ("vpc-public-only-nat", {"in_vpc": True, "cidrs": ["0.0.0.0/0"], "public_only": True}, None),
    (
        "vpc-public-only-unknown-subnets",
        {"in_vpc": True, "cidrs": ["0.0.0.0/0"], "subnets": "unknown", "public_only": True},
        None,
    ),
]


@pytest.mark.parametrize(("options", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_endpoint_reachability_warning(options: dict[str, Any], expected: str | None) -> None:
    annotations = Annotations.from_stack(_build(**options))
    if expected is None:
        annotations.has_no_warning("*", Match.string_like_regexp(WARNING.value))
    else:
        annotations.has_warning("/CbEndpoint/Blocks", _warning(expected))


def test_no_warning_without_eks() -> None:
    stack, _ = _stack()
    CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"))
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp(WARNING.value))


def test_warning_id_is_stable() -> None:
    assert WARNING.value == "capacity-events-eks-endpoint-unreachable"


@pytest.mark.parametrize(
    ("public", "private", "cidrs", "warns"),
    [
        (False, True, None, True),
        (True, True, None, False),  # no CIDRs: the EKS default 0.0.0.0/0
        (True, False, None, False),
        (True, True, ["10.0.0.0/8", "172.16.0.0/12"], True),
        (True, True, ["0.0.0.0/0"], False),
        (True, True, ["0.0.0.1/0"], False),  # host bits set: EKS takes it (no strict parse)
    ],
)
def test_outside_vpc_rule(public: bool, private: bool, cidrs: list[str] | None, warns: bool) -> None:
    problem = _outside_vpc_endpoint_problem(endpoint_public=public, endpoint_private=private, public_access_cidrs=cidrs)
    assert (problem is not None) == warns


@pytest.mark.parametrize(
    ("public", "private", "isolated", "warns"),
    [
        (True, False, ["subnet-1"], True),
        (True, False, [], False),
        (True, True, ["subnet-1"], False),
        (False, True, ["subnet-1"], False),
    ],
)
def test_in_vpc_rule(public: bool, private: bool, isolated: list[str], warns: bool) -> None:
    problem = _in_vpc_endpoint_problem(endpoint_public=public, endpoint_private=private, isolated_subnet_ids=isolated)
    assert (problem is not None) == warns
