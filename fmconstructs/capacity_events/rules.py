"""The cross-property rules of :class:`~fmconstructs.capacity_events.CapacityBlockEvents`, as pure functions (the
shape of :mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the construct attaches with :func:`~fmconstructs._rules.warn`.

Checks of one option on its own (types, id patterns, the event pattern's size) stay with the constructor
(:mod:`.construct`, :mod:`.patterns`, :mod:`.reclaim`); the reachability findings are worded in :mod:`.reachability`.
Values that are deploy-time tokens are never compared.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import aws_ec2 as ec2

from .._rules import Advice
from ..capacity import CapacityBlockScaling
from ..errors import FmValidationError, WarningId, is_token
from ..networking.endpoints import ClusterBackend, EndpointService, services_for
from . import lead_times as _lead_times

if TYPE_CHECKING:
    from .lead_times import CapacityKind

_CORDON_FAILS = "the Capacity Block cordon {verb} fail at run time (the notice still goes out)"

__all__ = [
    "a_scaling_target_scales_on_block_events",
    "endpoints_need_the_handler_in_the_vpc",
    "job_warning_needs_a_backend",
    "scaling_targets_are_on_the_reservations",
    "the_drain_starts_before_termination",
    "the_handler_reaches_the_api_server",
    "the_handler_reaches_the_aws_apis",
]


def job_warning_needs_a_backend(*, job_warning_given: bool, pcs: bool, eks: bool) -> None:
    """A ``job_warning`` is delivered through a backend: Slurm on PCS login nodes or a ParallelCluster head node
    (``pcs``) or an EKS cluster (``eks``)."""
    if job_warning_given and not (pcs or eks):
        raise FmValidationError(
            "job_warning",
            "given",
            "None unless pcs_login_node_group_id, parallelcluster_cluster_name or eks_cluster is given "
            "(nothing to warn)",
        )


def endpoints_need_the_handler_in_the_vpc(*, endpoints_given: bool, eks_in_vpc: bool, eks_cluster_given: bool) -> None:
    """``endpoints`` are for a handler that runs in the cluster's VPC (``eks_cluster`` given, ``eks_in_vpc=True``)."""
    if endpoints_given and not (eks_in_vpc and eks_cluster_given):
        raise FmValidationError(
            "endpoints", "given", "None unless the handler runs in the VPC (eks_cluster given, eks_in_vpc=True)"
        )


def scaling_targets_are_on_the_reservations(*, target_blocks: Sequence[str], reservation_ids: Sequence[str]) -> None:
    """Each scaling target's block (``target_blocks``, in order) is one of ``reservation_ids`` when those are given:
    the rule only receives those blocks' events. A deploy-time block is not compared."""
    for index, block in enumerate(target_blocks):
        if reservation_ids and not is_token(block) and block not in reservation_ids:
            raise FmValidationError(
                f"scaling_targets[{index}]",
                block,
                f"a group on one of capacity_reservation_ids ({', '.join(reservation_ids)}): the rule only receives "
                "those blocks' events",
            )


def a_scaling_target_scales_on_block_events(*, parameter: str, scaling: CapacityBlockScaling) -> None:
    """A scaling target is built with ``ON_BLOCK_EVENTS``: an ``AT_DEPLOY`` fleet is fixed by each deployment."""
    if scaling is not CapacityBlockScaling.ON_BLOCK_EVENTS:
        raise FmValidationError(
            f"{parameter}.capacity_block_scaling",
            scaling.name,
            "CapacityBlockScaling.ON_BLOCK_EVENTS (a fleet built AT_DEPLOY is a fixed fleet: scaling it to 0 at the "
            "block's end would be undone by the next deployment)",
        )


def the_drain_starts_before_termination(
    *, parameter: str, lead_minutes: int, given: object, kind: CapacityKind
) -> None:
    """The drain lead (``lead_minutes``, known at synthesis) is more than the minutes before a block's end at which
    EC2 starts terminating a block of ``kind`` (:data:`~.lead_times.TERMINATION_LEAD_MINUTES`). ``given``: the value
    as the caller passed it (the message shows it)."""
    termination = _lead_times.TERMINATION_LEAD_MINUTES[kind]
    if lead_minutes <= termination:
        raise FmValidationError(
            parameter,
            given,
            f"more than {termination} minutes: EC2 starts terminating a {kind.value} Capacity Block's instances "
            f"{termination} minutes before its end, and the drain must start before that",
        )


def the_handler_reaches_the_aws_apis(
    *, eks_in_vpc: bool, needed: Sequence[str], covered: Sequence[str], isolated_subnet_ids: Sequence[str]
) -> Advice | None:
    """Advice when the handler runs in isolated subnets of the cluster's VPC without interface endpoints for the AWS
    APIs it calls (``needed`` minus ``covered``); see :func:`~.reachability._no_api_route_problem`."""
    if not eks_in_vpc:
        return None
    problem = _no_api_route_problem(needed=needed, covered=covered, isolated_subnet_ids=isolated_subnet_ids)
    return None if problem is None else Advice(WarningId.CAPACITY_EVENTS_NO_API_ROUTE, problem)


def the_handler_reaches_the_api_server(
    *,
    eks_in_vpc: bool,
    endpoint_public: bool,
    endpoint_private: bool,
    isolated_subnet_ids: Sequence[str],
    public_access_cidrs: Sequence[str] | None,
) -> Advice | None:
    """Advice when the handler cannot be known to reach the EKS API server endpoint: in the VPC (``eks_in_vpc``)
    through isolated subnets to a public-only endpoint, outside it to a private-only or CIDR-limited endpoint."""
    if eks_in_vpc:
        problem = _in_vpc_endpoint_problem(
            endpoint_public=endpoint_public, endpoint_private=endpoint_private, isolated_subnet_ids=isolated_subnet_ids
        )
    else:
        problem = _outside_vpc_endpoint_problem(
            endpoint_public=endpoint_public,
            endpoint_private=endpoint_private,
            public_access_cidrs=public_access_cidrs,
        )
    return None if problem is None else Advice(WarningId.CAPACITY_EVENTS_EKS_ENDPOINT_UNREACHABLE, problem)


# --- the reachability findings (moved from :mod:`.reachability`, which re-exports them) --------------------------
def _no_api_route_problem(
    *, needed: Sequence[str], covered: Sequence[str], isolated_subnet_ids: Sequence[str]
) -> str | None:
    """Why a handler in isolated subnets may not reach the AWS APIs it calls, or None.

    A Lambda function connected to a VPC reaches the internet and AWS APIs only through that VPC (Lambda API
    CreateFunction VpcConfig: "When you connect a function to a VPC, it can access resources and the internet only
    through that VPC"; Lambda Developer Guide configuration-vpc: "When you attach your function to a VPC, it can only
    access resources available within that VPC"): a NAT route or interface VPC endpoints (AWS ParallelCluster User
    Guide lambda-vpc-v3: Lambda functions connected to a private VPC "need to access AWS services", through the
    internet with NAT or through VPC endpoints; Lambda Developer Guide configuration-vpc-endpoints: with AWS
    PrivateLink "without an internet gateway, NAT device, VPN connection, or AWS Direct Connect connection").
    Isolated subnets have no NAT route. A call without a route fails only after the handler's connect timeout and
    retries (handler CLIENT_CONFIG), and the SNS notice, sent last, cannot get out either: the event ends in the
    failed-events queue.
    """
    missing = [service for service in needed if service not in covered]
    if not isolated_subnet_ids or not missing:
        return None
    eks_set = {service.value for service in services_for([ClusterBackend.EKS])}
    enum_names = {service.value: service.name for service in EndpointService}
    default = [service for service in missing if service in eks_set]
    extra = [service for service in missing if service in enum_names and service not in eks_set]
    other = [service for service in missing if service not in enum_names]
    fixes: list[str] = []
    if default:
        fixes.append(f"GpuClusterEndpoints(backends=[ClusterBackend.EKS]) creates {', '.join(default)}")
    if extra:
        listed = ", ".join(f"EndpointService.{enum_names[service]}" for service in extra)
        fixes.append(f"GpuClusterEndpoints(extra_services=[{listed}]) adds {', '.join(extra)}")
    if other:
        listed = ", ".join(
            f"InterfaceVpcEndpointAwsService.{service.upper()}"
            if hasattr(ec2.InterfaceVpcEndpointAwsService, service.upper())
            else f'InterfaceVpcEndpointService("com.amazonaws.<Region>.{service}")'
            for service in other
        )
        fixes.append(f"ec2.InterfaceVpcEndpoint(vpc=..., service={listed}) creates {', '.join(other)}")
    return (
        f"The Capacity Block events handler runs in the EKS cluster's subnets, {len(isolated_subnet_ids)} of them "
        f"isolated (no NAT route), and calls the AWS APIs {', '.join(needed)}; no interface endpoint with private DNS "
        f"in this VPC was passed for {', '.join(missing)} (endpoints=): a Lambda function in a VPC reaches AWS APIs "
        "only through a NAT route or interface VPC endpoints, so those calls cannot connect; each waits out boto3's "
        "60-second connect timeout, so the 1-minute handler can time out before the notice is sent. "
        f"Create interface endpoints for {', '.join(missing)} in the VPC ({'; '.join(fixes)}) and pass them as "
        "endpoints=[...], or give the cluster subnets with a NAT route."
    )


def _outside_vpc_endpoint_problem(
    *, endpoint_public: bool, endpoint_private: bool, public_access_cidrs: Sequence[str] | None
) -> str | None:
    """Why a handler outside any VPC (``eks_in_vpc=False``) may not reach the API server endpoint, or None.

    A private-only endpoint admits only the cluster's VPC and connected networks (EKS User Guide cluster-endpoint: the
    public endpoint can be limited to CIDRs or disabled). A public endpoint admits the handler only if its CIDRs cover
    every IPv4 address: a function outside a VPC has no outbound IPv6 (Lambda Developer Guide configuration-vpc,
    "IPv6 support": no outbound IPv6 "for functions that are not connected to a VPC") and no fixed IPv4 egress address
    to list (UNCONFIRMED as an AWS statement: no AWS page seen that publishes or fixes it; a fixed address is the
    Elastic IP of a NAT gateway, i.e. a function in a VPC). ``public_access_cidrs`` None means the EKS default,
    ``0.0.0.0/0``. Any deploy-time CIDR skips the check.
    """
    if not endpoint_public:
        return (
            "eks_in_vpc=False runs the handler outside the VPC, but the EKS cluster's API server endpoint is private "
            f"only (GpuEksCluster public_endpoint_cidrs=None): {_CORDON_FAILS.format(verb='would')}. Keep "
            "eks_in_vpc=True (the handler then runs in the cluster's subnets and reaches the private endpoint)."
        )
    if public_access_cidrs is None or any(is_token(cidr) for cidr in public_access_cidrs):
        return None
    ipv4 = [
        network
        for network in (ipaddress.ip_network(cidr, strict=False) for cidr in public_access_cidrs)
        if isinstance(network, ipaddress.IPv4Network)
    ]
    if list(ipaddress.collapse_addresses(ipv4)) == [ipaddress.IPv4Network("0.0.0.0/0")]:
        return None
    remedy = (
        "Keep eks_in_vpc=True (the handler then reaches the private endpoint)"
        if endpoint_private
        else "Run the handler in a VPC whose NAT gateway's Elastic IP the public endpoint admits"
    )
    return (
        "eks_in_vpc=False runs the handler outside the VPC, and the EKS cluster's public endpoint admits only "
        f"{', '.join(public_access_cidrs)}: a Lambda function outside a VPC has no fixed egress IP address (its "
        "traffic leaves from AWS-owned IPv4 addresses that can change, and it has no outbound IPv6), so these CIDRs "
        f"cannot be known to admit it and {_CORDON_FAILS.format(verb='may')}. {remedy}."
    )


def _in_vpc_endpoint_problem(
    *, endpoint_public: bool, endpoint_private: bool, isolated_subnet_ids: Sequence[str]
) -> str | None:
    """Why a handler in the cluster's subnets (``eks_in_vpc=True``) may not reach the API server endpoint, or None.

    With the private endpoint on, the handler reaches it inside the VPC (its security group is admitted on 443). A
    public-only endpoint is reached through the internet, which a function in a VPC has only through a NAT gateway
    route of its subnets (Lambda Developer Guide configuration-vpc, "Internet access when attached to a VPC": "When
    you attach your function to a VPC, it can only access resources available within that VPC"); isolated subnets
    have none. ``isolated_subnet_ids``: the handler's subnets known at synthesis to be isolated (the VPC's
    ``isolated_subnets``); subnets of unknown kind are not judged. Public subnets never get here: aws-cdk-lib's
    Lambda Function refuses them without ``allow_public_subnet`` (aws-cdk-lib 2.275.0 aws-lambda/lib/function.js:
    "Lambda Functions in a public subnet can NOT access the internet"; Lambda Developer Guide configuration-vpc:
    "Connecting a function to a public subnet doesn't give it internet access or a public IP address").
    """
    if endpoint_private or not endpoint_public or not isolated_subnet_ids:
        return None
    return (
        "The EKS cluster's API server endpoint is public only and the Capacity Block events handler runs in the "
        f"cluster's subnets, {len(isolated_subnet_ids)} of them isolated (no route to a NAT gateway): a Lambda "
        f"function in a VPC reaches the internet only through a NAT gateway, so {_CORDON_FAILS.format(verb='would')}. "
        "Give the cluster subnets with a NAT route, or turn its private endpoint on."
    )
