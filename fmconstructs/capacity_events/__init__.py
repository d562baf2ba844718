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
With ``parallelcluster_cluster_name`` instead, the same drain (and job warning) runs on that ParallelCluster
cluster's head node (tags ``parallelcluster:cluster-name`` and ``parallelcluster:node-type=HeadNode``, as remediation
finds it; Slurm in ``/opt/slurm/bin``); that the head node is an SSM managed instance by default is UNCONFIRMED.

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
``ec2`` (DescribeInstances), ``eks`` (DescribeCluster) and, with ``pcs_login_node_group_id`` or
``parallelcluster_cluster_name``, ``ssm`` (SendCommand,
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

from .construct import CORDON_RULES as CORDON_RULES
from .construct import HANDLER as HANDLER
from .construct import CapacityBlockEvents as CapacityBlockEvents
from .expiry import JobWarning as JobWarning
from .expiry import SlurmSignalScope as SlurmSignalScope
from .handler.index import DETAIL_TYPES as DETAIL_TYPES
from .lead_times import CapacityKind as CapacityKind
from .reachability import _endpoint_service as _endpoint_service
from .reachability import _in_vpc_endpoint_problem as _in_vpc_endpoint_problem
from .reachability import _no_api_route_problem as _no_api_route_problem
from .reachability import _outside_vpc_endpoint_problem as _outside_vpc_endpoint_problem

__all__ = ["CORDON_RULES", "DETAIL_TYPES", "CapacityBlockEvents", "CapacityKind", "JobWarning", "SlurmSignalScope"]
