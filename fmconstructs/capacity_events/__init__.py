"""Capacity Block awareness at run time: EC2's Capacity Block events -> SNS, a Slurm drain on PCS, a cordon on EKS.

:class:`CapacityBlockEvents` subscribes an EventBridge rule to EC2's Capacity Block events (EC2 User Guide,
"Monitor Capacity Blocks using EventBridge", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html:
"Capacity Block Delivered" when the block starts, "Capacity Block Expiration Warning" forty minutes before it ends,
ten minutes before its instances begin to terminate; older copies of the page spell them "Capacity Block Reservation
Delivered" / "... Expiration Warning", and the rule matches both spellings). A Python Lambda publishes each event to
``alert_topic``. With ``pcs_login_node_group_id`` it also drains the block's Slurm nodes on the warning: it finds
the block's instances (ec2:DescribeInstances, filter ``capacity-reservation-id``), a running login node (tag
``aws:pcs:compute-node-group-id``) and runs ``scontrol update nodename=... state=DRAIN reason="capacity block ends"``
there through SSM Run Command (``AWS-RunShellScript``). The login node needs the SSM agent and
``AmazonSSMManagedInstanceCore`` (the PCS login node role has it by default).

With ``eks_cluster`` (a :class:`~fmconstructs.eks.GpuEksCluster`) the warning also cordons the block's Kubernetes
nodes: the handler finds the block's instances (same filter), matches them to nodes by ``spec.providerID``
(``aws:///<zone>/<instance-id>``; by name = private DNS name only for a node without one), and PATCHes each node with
``spec.unschedulable: true`` (what ``kubectl cordon`` does) and two annotations that say why,
``fmconstructs.io/capacity-block-ends-at`` (the event's ``end-date``) and ``fmconstructs.io/capacity-reservation-id``.
Running pods are not evicted: the cordon only stops new pods from landing on nodes about to go away. It talks to the
API server with an EKS bearer token (a presigned sts:GetCallerIdentity URL, the aws-iam-authenticator format) and
verifies TLS against the cluster's CA from eks:DescribeCluster; boto3 and the standard library only.

Least privilege on the Kubernetes side: an EKS access entry maps the handler's role to one Kubernetes group (no EKS
access policy: the documented ones that can patch nodes are far broader, and the EKS User Guide's
access-policy-permissions page says to create Kubernetes RBAC objects and group names when the policies do not fit),
and a ClusterRole allowing only ``get``/``list``/``patch`` on ``nodes`` is bound to that group. IAM: eks:DescribeCluster
on that cluster only. The handler runs in the cluster's subnets with its own security group, allowed into the cluster
security group on 443 (the private endpoint; :class:`GpuEksCluster` always keeps it on); ``eks_in_vpc=False`` keeps the
handler outside the VPC for a cluster whose public endpoint admits it. What can be known at synthesis about whether the
handler reaches the endpoint is checked from the cluster's :attr:`~GpuEksCluster.endpoint_public`,
:attr:`~GpuEksCluster.endpoint_private` and :attr:`~GpuEksCluster.public_access_cidrs` (warning
``capacity-events-eks-endpoint-unreachable``): outside the VPC, a private-only endpoint, or a public one limited to
CIDRs that do not cover every IPv4 address (a Lambda function outside a VPC has no fixed egress address); in the VPC,
a public-only endpoint with handler subnets that are isolated (no route out). Deploy-time CIDRs are not checked.

In the VPC the handler also calls regional AWS APIs (:attr:`CapacityBlockEvents.api_services`): ``sns`` (Publish),
``ec2`` (DescribeInstances), ``eks`` (DescribeCluster) and, with ``pcs_login_node_group_id``, ``ssm`` (SendCommand,
GetCommandInvocation).
The EKS token is a presigned sts:GetCallerIdentity URL: signed in the handler, never sent by it, so no ``sts``. A
function in a VPC reaches those APIs only through a NAT route or interface VPC endpoints. When its subnets are known to
be isolated (the VPC's ``isolated_subnets``, matched by subnet id; imported subnets of unknown kind are not judged),
warning ``capacity-events-no-api-route`` names the services that no interface endpoint passed as ``endpoints=``
covers. An endpoint counts for a service when it is an interface endpoint of the cluster's VPC (same ``vpc_id``) with
private DNS on (or a deploy-time value) and a service name ``com.amazonaws.<Region>.<service>`` known at synthesis.
Endpoints are not looked up in the app or the account: pass them.

With ``scaling_targets`` (EKS node groups and self-managed Auto Scaling groups built with
``CapacityBlockScaling.ON_BLOCK_EVENTS``) the handler also scales each target of the event's block: to its size when
the block is delivered, to 0 on the expiration warning (:mod:`fmconstructs.capacity_events.scaling`). Throttled calls
are retried with exponential backoff; a duplicate delivery of the same event changes nothing (the node group is read
first and the update carries a token derived from the event id; Auto Scaling sizes are absolute). The notice lists
what was scaled and what failed.

Extended blocks (EC2 User Guide "Extend Capacity Blocks", capacity-blocks-extend: "Your Capacity Reservation ID will
remain the same after extending the block"; the end date moves when the extension's payment succeeds) keep matching the
rule, whose pattern names reservation ids only. Nothing here is computed from an end date at deploy time: the drain,
the cordon and the scale-down run on EC2's expiration warning, sent forty minutes before the block ends
(capacity-blocks-monitor, which lists no event for an extension). Before acting on a warning the handler reads the
reservation's current ``EndDate`` and its ``payment-pending`` extensions (ec2:DescribeCapacityReservations,
ec2:DescribeCapacityBlockExtensionHistory): a block that now ends later than the warning said is left alone (the notice
says so), a pending extension is named in the notice with how to undo the drain if it is paid
(:mod:`fmconstructs.capacity_events.handler.extension`). ``fmc capacity extend`` lists and buys extensions.

The expiry actions run ``drain_lead_minutes`` (instance blocks, default 40: EC2's warning) or
``ultraserver_drain_lead_minutes`` (UltraServer blocks, default 70) before the end; a lead past the warning is met by an
EventBridge Scheduler one-time schedule (:mod:`.lead_times`, :mod:`.expiry`). ``job_warning`` (:class:`JobWarning`)
also signals running Slurm jobs and annotates running pods so that jobs can checkpoint.

With ``interruptible_reservation_ids`` a second rule (:attr:`CapacityBlockEvents.reclaim_rule`) receives EC2's
two-minute reclaim warning of interruptible Capacity Reservations, and the handler drains (PCS) and cordons (EKS) the
warned instance when it runs in one of them (:mod:`fmconstructs.capacity_events.reclaim`).

With ``capacity_reservation_ids`` the rule's event pattern lists them; when the pattern would exceed EventBridge's
event pattern size quota the ids are split over several rules (:mod:`fmconstructs.capacity_events.patterns`):
:attr:`CapacityBlockEvents.rules` holds them all, :attr:`CapacityBlockEvents.rule` the first.

The notice always goes out: a failed drain, cordon or scaling is logged and written into the notice, never raised.
The handler works within a time budget (the Lambda's remaining time less a reserve for the notice): Kubernetes calls
have a timeout each and are retried with backoff on 429, 5xx and connection errors, nodes are cordoned in parallel, a
node already unschedulable is left alone (a duplicate delivery is harmless and reported as such), and what was not
reached in time is named in the notice. The drain waits for the SSM command (ssm:GetCommandInvocation) and reports its
status, exit code and output. If the notice itself cannot be published the handler fails, Lambda retries the event
twice and then sends it to :attr:`CapacityBlockEvents.failure_queue` (an encrypted SQS queue that requires TLS; also
the rule target's dead-letter queue): see :mod:`fmconstructs.capacity_events.delivery`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from .._log_groups import encrypted_log_group
from .._validate import (
    check_bool,
    check_construct,
    check_enum,
    check_scope_id,
    check_sequence,
    check_str,
    check_str_sequence,
    located,
)
from ..compute.fleet import GpuAutoScalingGroup
from ..eks import GpuEksCluster, GpuNodeGroup
from ..eks.handler_network import ENI_POLICY, in_cluster_network
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from ..networking.endpoints import ClusterBackend, EndpointService, GpuClusterEndpoints, services_for
from ..pcs.node_group import NODE_GROUP_ID_TAG
from .delivery import failure_queue, wire_failure_queue
from .expiry import JOB_WARNING_RULES, JobWarning, SlurmSignalScope, add_expiry_schedule
from .handler.index import DETAIL_TYPES, RUN_SHELL_DOCUMENT
from .lead_times import DEFAULT_LEAD_MINUTES, CapacityKind, check_lead_minutes, lead_minutes_json, needs_schedule
from .patterns import event_pattern, split_reservation_ids
from .reclaim import add_reclaim_rule, check_interruptible_ids
from .scaling import (
    AUTO_SCALING_GROUP,
    EKS_NODEGROUP,
    BlockScalingTarget,
    grant_scaling,
    scaling_target,
    scaling_targets_json,
)

__all__ = ["CORDON_RULES", "DETAIL_TYPES", "CapacityBlockEvents", "CapacityKind", "JobWarning", "SlurmSignalScope"]

_HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER = "index.handler"

# Capacity reservation ids: "cr-" + 17 hex digits, or 8 for older ids (UNCONFIRMED: the usual EC2 id form, not seen
# as a documented pattern).
_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{8}(?:[0-9a-f]{9})?")
# PCS compute node group ids (PCS API reference, ComputeNodeGroup.id: "The generated unique ID"; UNCONFIRMED pattern:
# any non-empty id without whitespace is accepted).
_NODE_GROUP_ID = re.compile(r"\S{1,256}")

#: The ClusterRole rules the EKS cordon needs: list nodes (to match them to the block's instances), get and patch them
#: (spec.unschedulable and the annotations). Nothing else: no pods, no eviction.
CORDON_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
)
# Kubernetes API server port of the EKS endpoint (EKS User Guide sec-group-reqs: the control plane is reached on 443).


_CORDON_FAILS = "the Capacity Block cordon {verb} fail at run time (the notice still goes out)"

# The regional AWS APIs the handler calls (handler/index.py: sns.publish always; ec2.describe_instances for the drain
# and the cordon; eks.describe_cluster for the cordon; ssm.send_command and get_command_invocation for the drain), as
# interface endpoint service short names (com.amazonaws.<Region>.<name>; aws-cdk-lib
# InterfaceVpcEndpointAwsService.SNS/EC2/EKS/SSM). sts is absent: eks_token() only presigns GetCallerIdentity
# (botocore generate_presigned_url signs locally, sends nothing).
# No kms for a KMS-encrypted alert topic: SNS itself calls KMS for server-side encryption (UNCONFIRMED: no AWS page
# seen that says a publisher never needs a route to KMS).
_SNS, _EC2, _EKS, _SSM = "sns", "ec2", "eks", "ssm"
# The expiry schedule: ec2 (DescribeCapacityReservations, DescribeCapacityBlocks) and EventBridge Scheduler
# (CreateSchedule; interface endpoint com.amazonaws.<Region>.scheduler, UNCONFIRMED: not in aws-cdk-lib 2.275's
# InterfaceVpcEndpointAwsService).
_SCHEDULER = "scheduler"
# Scaling targets: eks (DescribeNodegroup, UpdateNodegroupConfig) and autoscaling (UpdateAutoScalingGroup); interface
# endpoint short names as aws-cdk-lib InterfaceVpcEndpointAwsService.EKS / AUTOSCALING.
_AUTOSCALING = "autoscaling"
# An AWS service's interface endpoint service name: com.amazonaws.<Region>.<service> (aws-cdk-lib
# InterfaceVpcEndpointAwsService; the Region is a literal in a stack with an environment). Region: letters, dashes,
# a number (us-east-1, us-gov-west-1), so that endpoint services ("com.amazonaws.vpce.<Region>.vpce-svc-...") differ.
_AWS_SERVICE_NAME = re.compile(r"com\.amazonaws\.[a-z]{2}(?:-[a-z]+)+-[0-9]+\.([a-z0-9.-]+)")


def _api_services(
    *, pcs: bool, eks: bool, scaling: Sequence[BlockScalingTarget] = (), schedule: bool = False, reclaim: bool = False
) -> tuple[str, ...]:
    """The interface endpoint services of the AWS APIs the handler calls (see ``_SNS`` above)."""
    services = [_SNS]
    if pcs or eks or scaling or schedule or reclaim:  # ec2: DescribeInstances (pcs, eks); DescribeCapacityReservations
        services.append(_EC2)
    if eks or any(target.kind == EKS_NODEGROUP for target in scaling):
        services.append(_EKS)
    if pcs:
        services.append(_SSM)
    if any(target.kind == AUTO_SCALING_GROUP for target in scaling):
        services.append(_AUTOSCALING)
    if schedule:
        services.append(_SCHEDULER)
    return tuple(services)


def _vpc_endpoints(parameter: str, value: object) -> tuple[ec2.CfnVPCEndpoint, ...]:
    """The CfnVPCEndpoint resources of ``endpoints=``: GpuClusterEndpoints, InterfaceVpcEndpoint, CfnVPCEndpoint."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise FmTypeError(parameter, value, f"a list of VPC endpoints (got a {type(value).__name__})")
    found: list[ec2.CfnVPCEndpoint] = []
    for index, item in enumerate(value):
        if isinstance(item, GpuClusterEndpoints):
            found += item.interface_endpoints.values()
        elif isinstance(item, ec2.CfnVPCEndpoint):
            found.append(item)
        elif isinstance(item, ec2.InterfaceVpcEndpoint) and isinstance(item.node.default_child, ec2.CfnVPCEndpoint):
            found.append(item.node.default_child)
        else:
            raise FmTypeError(
                f"{parameter}[{index}]",
                item,
                f"a GpuClusterEndpoints, ec2.InterfaceVpcEndpoint or ec2.CfnVPCEndpoint (got a {type(item).__name__})",
            )
    return tuple(found)


def _endpoint_service(endpoint: ec2.CfnVPCEndpoint, vpc_id: str) -> str | None:
    """The service short name an interface endpoint with private DNS in VPC ``vpc_id`` serves, or None.

    Private DNS is what sends the SDK's default regional name (``sns.<Region>.amazonaws.com``) to the endpoint (EC2 API
    CreateVpcEndpoint PrivateDnsEnabled: the private hosted zone "contains a record set for the default public DNS
    name for the service for the Region ... which resolves to the private IP addresses of the endpoint network
    interfaces in the VPC"); CloudFormation's default for AWS::EC2::VPCEndpoint PrivateDnsEnabled is false
    (UNCONFIRMED: the AWS::EC2::VPCEndpoint page was not opened; aws-cdk-lib's InterfaceVpcEndpoint writes it
    explicitly). A deploy-time PrivateDnsEnabled is taken as on. The VPC is compared by its id string (the same token
    for the same ec2.IVpc), so an endpoint of another import of the same VPC does not count.
    """
    if endpoint.vpc_id != vpc_id or endpoint.vpc_endpoint_type != "Interface":
        return None
    dns = endpoint.private_dns_enabled
    if dns is not True and not cdk.Token.is_unresolved(dns):
        return None
    # InterfaceVpcEndpointAwsService names are tokens ("${Token[..]}.${Token[..]}.sns${Token[..]}"): resolve them;
    # an environment-agnostic stack gives {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".sns"]]}.
    name = cdk.Stack.of(endpoint).resolve(endpoint.service_name)
    if isinstance(name, str):
        match = _AWS_SERVICE_NAME.fullmatch(name)
        return match.group(1) if match else None
    join = name.get("Fn::Join") if isinstance(name, dict) else None
    if isinstance(join, list) and len(join) == 2 and join[0] == "" and isinstance(join[1], list):
        parts = join[1]
        if len(parts) == 3 and parts[0] == "com.amazonaws." and isinstance(parts[2], str) and parts[2][:1] == ".":
            return str(parts[2][1:]) or None
    return None


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


def _check_leads(instances: object, ultraserver: object) -> dict[CapacityKind, Any]:
    """``drain_lead_minutes`` and ``ultraserver_drain_lead_minutes`` per kind (see :mod:`.lead_times`)."""
    return {
        CapacityKind.INSTANCES: check_lead_minutes("drain_lead_minutes", instances, CapacityKind.INSTANCES),
        CapacityKind.ULTRASERVER: check_lead_minutes(
            "ultraserver_drain_lead_minutes", ultraserver, CapacityKind.ULTRASERVER
        ),
    }


def _check_job_warning(value: object, *, pcs: bool, eks: bool) -> None:
    """``job_warning``: a JobWarning, and only with a backend that can deliver it."""
    if value is None:
        return
    if not isinstance(value, JobWarning):
        raise FmTypeError("job_warning", value, f"a JobWarning or None (got a {type(value).__name__})")
    if not (pcs or eks):
        raise FmValidationError(
            "job_warning", "given", "None unless pcs_login_node_group_id or eks_cluster is given (nothing to warn)"
        )


def _check_targets(value: object, reservation_ids: Sequence[str]) -> tuple[BlockScalingTarget, ...]:
    """``scaling_targets`` as targets; each target's known block must be in ``reservation_ids`` when those are given."""
    if value is None:
        return ()
    found = check_sequence("scaling_targets", value, scaling_target)
    for index, target in enumerate(found):
        block = target.reservation_id
        if reservation_ids and not is_token(block) and block not in reservation_ids:
            raise FmValidationError(
                f"scaling_targets[{index}]",
                block,
                f"a group on one of capacity_reservation_ids ({', '.join(reservation_ids)}): the rule only receives "
                "those blocks' events",
            )
    return found


class CapacityBlockEvents(Construct):
    """EventBridge rule on EC2's Capacity Block events, a Lambda that notifies ``alert_topic`` and drains PCS nodes.

    :param alert_topic: the SNS topic to notify (e.g. :class:`~fmconstructs.observability` alert topic).
    :param pcs_login_node_group_id: the PCS login node group id; when given, the block's Slurm nodes are drained on
        the expiration warning through SSM Run Command on one of its running instances. default: notify only.
    :param capacity_reservation_ids: only these blocks. default: every Capacity Block of the account and region.
    :param eks_cluster: a :class:`~fmconstructs.eks.GpuEksCluster`; when given, the block's Kubernetes nodes are
        cordoned (and annotated) on the expiration warning. default: no EKS cordon.
    :param eks_in_vpc: with ``eks_cluster``: run the handler in the cluster's subnets with a security group allowed
        into the cluster security group on 443, to reach the private endpoint. False only when the cluster's public
        endpoint admits the handler's egress. Warning ``capacity-events-eks-endpoint-unreachable`` when the cluster's
        endpoint access (:attr:`~GpuEksCluster.endpoint_public`, :attr:`~GpuEksCluster.endpoint_private`,
        :attr:`~GpuEksCluster.public_access_cidrs`) says the handler may not reach it. default: True.
    :param endpoints: with the handler in the VPC: interface VPC endpoints of the cluster's VPC that serve the AWS APIs
        the handler calls (:attr:`api_services`): :class:`~fmconstructs.networking.GpuClusterEndpoints`,
        ``ec2.InterfaceVpcEndpoint`` or ``ec2.CfnVPCEndpoint``. Only read for warning ``capacity-events-no-api-route``
        (handler subnets known to be isolated and a service without an endpoint here); nothing is created or changed
        (the endpoints' security group must admit the handler on 443: GpuClusterEndpoints admits the VPC's CIDR by
        default). default: none.
    :param scaling_targets: :class:`~fmconstructs.eks.GpuNodeGroup` and
        :class:`~fmconstructs.compute.GpuAutoScalingGroup` built with ``CapacityBlockScaling.ON_BLOCK_EVENTS`` on a
        Capacity Block given by ``reservation_id``: scaled to their size (min and desired) when their block is
        delivered and to 0 on its expiration warning. IAM: the EKS actions on each node group's ARN, the Auto Scaling
        action on each group's ARN. With ``capacity_reservation_ids``, each target's block must be listed. default:
        none.
    :param log_retention: retention of the handler's log group. default: ONE_MONTH.
    :param drain_lead_minutes: when the expiry actions (job warning, drain, cordon, scaling to 0) run for an instance
        Capacity Block, in minutes before its end: 40 acts on EC2's expiration warning; more uses a one-time
        EventBridge Scheduler schedule created when the block is delivered (:mod:`.lead_times`). 40 to 1440.
        default: 40.
    :param ultraserver_drain_lead_minutes: the same for an UltraServer Capacity Block (told apart at run time by
        DescribeCapacityBlocks ``UltraserverType``); more than 60, the minutes before the end when its instances are
        reported to start terminating (UNCONFIRMED by AWS). default: 70.
    :param job_warning: a :class:`JobWarning`: a signal to every running Slurm job on the block's nodes after the
        drain (with ``pcs_login_node_group_id``) and an annotation and Event on every running pod of the cordoned
        nodes (with ``eks_cluster``). default: None (no job-level warning: an unhandled SIGUSR1 ends a process).
    :param interruptible_reservation_ids: interruptible Capacity Reservations (I-ODCRs) the platform runs on: on
        EC2's two-minute reclaim warning of one of their instances, notify and drain / cordon that instance
        (:mod:`.reclaim`). default: none (no reclaim rule).
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alert_topic: Any,
        pcs_login_node_group_id: str | None = None,
        capacity_reservation_ids: Sequence[str] | None = None,
        eks_cluster: GpuEksCluster | None = None,
        eks_in_vpc: bool = True,
        endpoints: Sequence[GpuClusterEndpoints | ec2.InterfaceVpcEndpoint | ec2.CfnVPCEndpoint] | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        scaling_targets: Sequence[GpuNodeGroup | GpuAutoScalingGroup] | None = None,
        drain_lead_minutes: int = DEFAULT_LEAD_MINUTES[CapacityKind.INSTANCES],
        ultraserver_drain_lead_minutes: int = DEFAULT_LEAD_MINUTES[CapacityKind.ULTRASERVER],
        job_warning: JobWarning | None = None,
        interruptible_reservation_ids: Sequence[str] | None = None,
    ) -> None:
        check_scope_id(scope, id)
        check_construct("alert_topic", alert_topic, attribute="topic_arn", expected="an sns.ITopic")
        if pcs_login_node_group_id is not None:
            check_str(
                "pcs_login_node_group_id",
                pcs_login_node_group_id,
                pattern=_NODE_GROUP_ID,
                allowed="a PCS compute node group id (non-empty, no whitespace)",
            )
        ids: tuple[str, ...] = ()
        if capacity_reservation_ids is not None:
            ids = check_str_sequence(
                "capacity_reservation_ids",
                capacity_reservation_ids,
                item=lambda name, value: check_str(
                    name, value, pattern=_RESERVATION_ID, allowed="a capacity reservation id (cr-<hex>)"
                ),
                min_items=1,
            )
            if len(set(ids)) != len(ids):
                raise FmValidationError("capacity_reservation_ids", list(ids), "a list without duplicates")
        if eks_cluster is not None and not isinstance(eks_cluster, GpuEksCluster):
            raise FmTypeError(
                "eks_cluster", eks_cluster, f"a GpuEksCluster or None (got a {type(eks_cluster).__name__})"
            )
        check_bool("eks_in_vpc", eks_in_vpc)
        vpc_endpoints = _vpc_endpoints("endpoints", endpoints) if endpoints is not None else ()
        if endpoints is not None and not (eks_in_vpc and eks_cluster is not None):
            raise FmValidationError(
                "endpoints", "given", "None unless the handler runs in the VPC (eks_cluster given, eks_in_vpc=True)"
            )
        check_enum("log_retention", log_retention, logs.RetentionDays)
        block_targets = _check_targets(scaling_targets, ids)
        leads = _check_leads(drain_lead_minutes, ultraserver_drain_lead_minutes)
        _check_job_warning(job_warning, pcs=pcs_login_node_group_id is not None, eks=eks_cluster is not None)
        rule_ids = split_reservation_ids(ids, detail_types=DETAIL_TYPES)
        interruptible_ids = check_interruptible_ids(interruptible_reservation_ids)
        super().__init__(scope, id)
        #: The interruptible reservations whose reclaim warnings drain and cordon.
        self.interruptible_reservation_ids = interruptible_ids
        self.alert_topic = alert_topic
        self.pcs_login_node_group_id = pcs_login_node_group_id
        self.capacity_reservation_ids = ids
        self.eks_cluster = eks_cluster
        self.eks_in_vpc = eks_in_vpc and eks_cluster is not None
        #: The AWS APIs the handler calls, as interface endpoint service names (com.amazonaws.<Region>.<name>).
        #: Lead times of the expiry actions per kind of block, in minutes before the end.
        self.lead_minutes: dict[CapacityKind, Any] = leads
        self.job_warning = job_warning
        scheduled = any(needs_schedule(lead) for lead in leads.values())
        self.api_services: tuple[str, ...] = _api_services(
            pcs=pcs_login_node_group_id is not None,
            eks=eks_cluster is not None,
            scaling=block_targets,
            schedule=scheduled,
            reclaim=bool(interruptible_ids),
        )
        #: The fleets scaled on their block's events (see ``scaling_targets``).
        self.scaling_targets: tuple[BlockScalingTarget, ...] = block_targets
        #: The VPC endpoints given as ``endpoints=`` (their CfnVPCEndpoint resources).
        self.endpoints: tuple[ec2.CfnVPCEndpoint, ...] = vpc_endpoints
        #: The Kubernetes group of the handler's access entry (bound to the cordon ClusterRole); None without EKS.
        self.kubernetes_group: str | None = None
        #: Name of the ClusterRole (and ClusterRoleBinding) that lets the group get, list and patch nodes.
        self.cluster_role_name: str | None = None
        self.access_entry: eks.CfnAccessEntry | None = None
        self.rbac: eks.KubernetesManifest | None = None
        self.security_group: ec2.SecurityGroup | None = None

        self.log_group = encrypted_log_group(
            self, "HandlerLogs", retention=log_retention, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        self.role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Capacity Block events: notify the alert topic, drain PCS / cordon EKS nodes of the block",
        )
        self.log_group.grant_write(self.role)
        alert_topic.grant_publish(self.role)
        environment = {"TOPIC_ARN": alert_topic.topic_arn}
        stack = cdk.Stack.of(self)
        environment.update(self._expiry_settings(scheduled))
        if pcs_login_node_group_id is not None or eks_cluster is not None:
            # ec2:DescribeInstances supports no resource-level permissions (Service Authorization Reference, "Actions,
            # resources, and condition keys for Amazon EC2": no resource type for Describe* actions), so "*".
            # UNCONFIRMED: the page was not opened while writing this.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="FindBlockAndLoginInstances", actions=["ec2:DescribeInstances"], resources=["*"]
                )
            )
        if pcs_login_node_group_id is not None or eks_cluster is not None or block_targets:
            # Before acting on an expiration warning the handler checks whether the block was extended
            # (handler/extension.py). Describe* actions: "*" as for DescribeInstances above (UNCONFIRMED likewise).
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadBlockEndDate",
                    actions=["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlockExtensionHistory"],
                    resources=["*"],
                )
            )
        if pcs_login_node_group_id is not None:
            environment["PCS_LOGIN_NODE_GROUP_ID"] = pcs_login_node_group_id
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="RunShellScriptDocument",
                    actions=["ssm:SendCommand"],
                    resources=[
                        stack.format_arn(
                            service="ssm", account="", resource="document", resource_name=RUN_SHELL_DOCUMENT
                        )
                    ],
                )
            )
            # Only instances of the login node group: ssm:resourceTag/<key> on the instance resource (the form seen in
            # Session Manager example policies for ssm:StartSession; UNCONFIRMED for ssm:SendCommand and for a tag key
            # with the reserved "aws:" prefix, which PCS sets itself).
            # ssm:GetCommandInvocation (reading the drain's result) takes "*": the Service Authorization Reference
            # for AWS Systems Manager lists resource types per action, and "if there is no value for this column, you
            # must specify all resources ("*")"; UNCONFIRMED that the GetCommandInvocation row has none (the row was
            # not visible in the copy searched). Read-only: the status and output of commands.
            self.role.add_to_policy(
                iam.PolicyStatement(sid="ReadDrainResult", actions=["ssm:GetCommandInvocation"], resources=["*"])
            )
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="LoginNodesOnly",
                    actions=["ssm:SendCommand"],
                    resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
                    conditions={"StringEquals": {f"ssm:resourceTag/{NODE_GROUP_ID_TAG}": pcs_login_node_group_id}},
                )
            )
        if eks_cluster is not None:
            environment["EKS_CLUSTER_NAME"] = eks_cluster.cluster_name
            self._add_kubernetes_access(eks_cluster)
        if block_targets:
            environment["SCALING_TARGETS"] = scaling_targets_json(self, block_targets)
            grant_scaling(self.role, block_targets)
        self.function = lambda_.Function(
            self,
            "Handler",
            description="fmconstructs: Capacity Block events -> alert topic, Slurm drain (PCS), cordon (EKS)",
            # Latest Python the aws-cdk-lib Runtime enum offers (cdk-nag AwsSolutions-L1), as the Grafana provisioner.
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(_HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            # Two minutes: the drain waits for its SSM command; the handler keeps NOTICE_RESERVE_S for the notice.
            timeout=cdk.Duration.minutes(2),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            environment=environment,
            **self._network(eks_cluster if self.eks_in_vpc else None),
        )
        self.function.node.add_dependency(self.role)
        if self.expiry_schedule is not None:
            self.expiry_schedule.grant_invoke(self.function)
        #: Events the handler could not finish (notice not published) after Lambda's retries, and events EventBridge
        #: could not deliver to the function: encrypted SQS queue, TLS only.
        self.failure_queue = failure_queue(self, "FailedEvents")
        wire_failure_queue(self.function, self.failure_queue)

        #: One rule per group of reservation ids whose event pattern fits the quota (one rule without ids).
        self.rules: tuple[events.Rule, ...] = tuple(
            self._rule("Rule" if index == 0 else f"Rule{index + 1}", group) for index, group in enumerate(rule_ids)
        )
        self.rule = self.rules[0]
        #: The rule on the reclaim warning of ``interruptible_reservation_ids`` (None without them).
        self.reclaim_rule: events.Rule | None = add_reclaim_rule(self, interruptible_ids) if interruptible_ids else None
        self._acknowledge()
        if eks_cluster is not None:
            self._check_endpoint_reachable(eks_cluster)
            self._check_api_route(eks_cluster)

    def _expiry_settings(self, scheduled: bool) -> dict[str, str]:
        """The handler's LEAD_MINUTES and JOB_WARNING, and the expiry schedule (group, role) when a lead needs it."""
        stack = cdk.Stack.of(self)
        settings = {"LEAD_MINUTES": stack.to_json_string(lead_minutes_json(self.lead_minutes))}
        if self.job_warning is not None:
            settings["JOB_WARNING"] = stack.to_json_string(self.job_warning.settings())
        #: The schedule group and Scheduler role for lead times past EC2's 40-minute warning (None when none is).
        self.expiry_schedule = add_expiry_schedule(self, self.role) if scheduled else None
        if self.expiry_schedule is not None:
            settings.update(self.expiry_schedule.environment())
        return settings

    def _rule(self, id: str, reservation_ids: Sequence[str]) -> events.Rule:
        """A rule on EC2's Capacity Block events (of ``reservation_ids`` when given) that invokes the handler."""
        pattern = event_pattern(DETAIL_TYPES, reservation_ids)
        return events.Rule(
            self,
            id,
            description="EC2 Capacity Block delivered / expiration warning",
            event_pattern=events.EventPattern(
                source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern.get("detail")
            ),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2, dead_letter_queue=self.failure_queue)],
        )

    def _check_api_route(self, cluster: GpuEksCluster) -> None:
        """Warn when the handler runs in isolated subnets without endpoints for the AWS APIs it calls."""
        if not self.eks_in_vpc:
            return
        isolated = {subnet.subnet_id for subnet in cluster.vpc.isolated_subnets}
        vpc_id = cluster.vpc.vpc_id
        problem = _no_api_route_problem(
            needed=self.api_services,
            covered=[name for name in (_endpoint_service(e, vpc_id) for e in self.endpoints) if name is not None],
            isolated_subnet_ids=[s.subnet_id for s in cluster.subnets if s.subnet_id in isolated],
        )
        if problem is not None:
            add_warning(self, WarningId.CAPACITY_EVENTS_NO_API_ROUTE, problem)

    def _check_endpoint_reachable(self, cluster: GpuEksCluster) -> None:
        """Warn when the handler cannot be known to reach the cluster's API server endpoint (see the module doc)."""
        if self.eks_in_vpc:
            isolated = {subnet.subnet_id for subnet in cluster.vpc.isolated_subnets}
            problem = _in_vpc_endpoint_problem(
                endpoint_public=cluster.endpoint_public,
                endpoint_private=cluster.endpoint_private,
                isolated_subnet_ids=[s.subnet_id for s in cluster.subnets if s.subnet_id in isolated],
            )
        else:
            problem = _outside_vpc_endpoint_problem(
                endpoint_public=cluster.endpoint_public,
                endpoint_private=cluster.endpoint_private,
                public_access_cidrs=cluster.public_access_cidrs,
            )
        if problem is not None:
            add_warning(self, WarningId.CAPACITY_EVENTS_EKS_ENDPOINT_UNREACHABLE, problem)

    def _add_kubernetes_access(self, cluster: GpuEksCluster) -> None:
        """eks:DescribeCluster on the cluster, an access entry to one Kubernetes group, the node-cordon RBAC."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeTheCluster", actions=["eks:DescribeCluster"], resources=[cluster.cluster_arn]
            )
        )
        # One group and role per construct (several CapacityBlockEvents may share a cluster): a stable suffix from
        # the construct path. Group names are free text (EKS CreateAccessEntry kubernetesGroups: "The value for name
        # that you've specified for kind: Group as a subject in a Kubernetes RoleBinding or ClusterRoleBinding").
        suffix = self.node.addr[:8]
        self.kubernetes_group = f"fmconstructs:capacity-block-cordon:{suffix}"
        self.cluster_role_name = f"fmconstructs-capacity-block-cordon-{suffix}"
        # An access entry with Kubernetes groups and no access policy: Kubernetes RBAC alone authorizes the role
        # (EKS User Guide create-k8s-group-access-entry; CreateAccessEntry kubernetesGroups).
        self.access_entry = eks.CfnAccessEntry(
            self,
            "KubernetesAccess",
            cluster_name=cluster.cluster_name,
            principal_arn=self.role.role_arn,
            kubernetes_groups=[self.kubernetes_group],
            type="STANDARD",
        )
        self.rbac = eks.KubernetesManifest(
            self,
            "CordonRbac",
            cluster=cluster.icluster,
            manifest=[
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {
                        "name": self.cluster_role_name,
                        "labels": {"app.kubernetes.io/managed-by": "fmconstructs"},
                    },
                    "rules": [
                        dict(rule)
                        for rule in CORDON_RULES
                        + (JOB_WARNING_RULES if self.job_warning and self.job_warning.pod_annotation else ())
                    ],
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {
                        "name": self.cluster_role_name,
                        "labels": {"app.kubernetes.io/managed-by": "fmconstructs"},
                    },
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": self.cluster_role_name,
                    },
                    "subjects": [
                        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": self.kubernetes_group}
                    ],
                },
            ],
        )

    def _network(self, cluster: GpuEksCluster | None) -> dict[str, Any]:
        """Function props that put the handler in the cluster's subnets, allowed into the API server on 443."""
        if cluster is None:
            return {}
        self.security_group, props = in_cluster_network(
            self, cluster, self.role, description="Capacity Block events handler: EKS API server (443) and AWS APIs"
        )
        return props

    def _acknowledge(self) -> None:
        """cdk-nag AwsSolutions-IAM5 acknowledgements, one per wildcard finding, each with its reason."""
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is None:
            return
        findings = {
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": (
                "sns.ITopic.grant_publish on a KMS-encrypted alert topic grants kms:GenerateDataKey* on that "
                "topic's key only (SNS server-side encryption needs the publisher to generate data keys)"
            ),
        }
        if (
            self.pcs_login_node_group_id is not None
            or self.eks_cluster is not None
            or self.scaling_targets
            or self.expiry_schedule
            or self.interruptible_reservation_ids
        ):
            findings["AwsSolutions-IAM5[Resource::*]"] = (
                "ec2:DescribeInstances, DescribeCapacityReservations, DescribeCapacityBlockExtensionHistory and "
                "DescribeCapacityBlocks have no resource-level permissions (Service Authorization Reference for Amazon "
                "EC2: no resource type), so their Resource must be *; the handler only reads instances and reservations"
            )
        if self.expiry_schedule is not None:
            findings.update(self.expiry_schedule.nag_findings(_nag_text))
        if self.pcs_login_node_group_id is not None:
            stack = cdk.Stack.of(self)
            region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
            account = "<AWS::AccountId>" if cdk.Token.is_unresolved(stack.account) else stack.account
            findings[f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:{region}:{account}:instance/*]"] = (
                "ssm:SendCommand on instance/* is limited by the condition "
                "ssm:resourceTag/aws:pcs:compute-node-group-id to the PCS login node group's instances"
            )
        for target in self.scaling_targets:
            if target.kind == AUTO_SCALING_GROUP:
                arn = _nag_text(cdk.Stack.of(self).resolve(target.resource_arn))
                findings[f"AwsSolutions-IAM5[Resource::{arn}]"] = (
                    "autoscaling:UpdateAutoScalingGroup on one group by name: the '*' stands for the group's id, "
                    "which an Auto Scaling group ARN contains and CloudFormation does not return"
                )
        for rule_id, reason in findings.items():
            cdk.Validations.of(policy).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))
        if self.eks_in_vpc:
            cdk.Validations.of(self.role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{ENI_POLICY}]",
                    reason="the handler runs in the cluster's VPC to reach the private EKS endpoint; Lambda creates "
                    "its network interfaces with the execution role, and AWSLambdaENIManagementAccess holds only those "
                    "ENI actions (their Resource must be *)",
                )
            )


def _nag_text(value: object) -> str:
    """A resolved CloudFormation value as cdk-nag writes it in a finding id (``<AWS::Partition>``, ``<LogicalId>``,
    ``<LogicalId.Attr>``; UNCONFIRMED beyond the forms seen in this module's acknowledgements)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_nag_text(part) for part in parts)
    return str(value)
