"""The :class:`CapacityBlockEvents` construct (see :mod:`fmconstructs.capacity_events` for what it does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from .._log_groups import encrypted_log_group
from .._rules import warn
from .._validate import (
    check_bool,
    check_construct,
    check_enum,
    check_scope_id,
    check_sequence,
    located,
)
from .._validate_ids import PARALLELCLUSTER_CLUSTER_NAME, PCS_NODE_GROUP_ID, check_service_id
from ..compute.fleet import GpuAutoScalingGroup
from ..eks import GpuEksCluster, GpuNodeGroup
from ..eks.handler_network import ENI_POLICY, in_cluster_network
from ..errors import FmTypeError, FmValidationError
from ..networking.endpoints import GpuClusterEndpoints
from ..pcs.node_group import NODE_GROUP_ID_TAG
from .delivery import failure_queue, handler_rule, wire_failure_queue
from .expiry import JOB_WARNING_RULES, JobWarning, add_expiry_schedule
from .handler.index import DETAIL_TYPES, PC_CLUSTER_TAG, PC_HEAD_NODE, PC_NODE_TYPE_TAG, RUN_SHELL_DOCUMENT
from .lead_times import DEFAULT_LEAD_MINUTES, CapacityKind, check_lead_minutes, lead_minutes_json, needs_schedule
from .patterns import check_reservation_ids, event_pattern, split_reservation_ids
from .reachability import (
    _api_services,
    _endpoint_service,
    _vpc_endpoints,
)
from .reclaim import add_reclaim_rule, check_interruptible_ids
from .rules import (
    endpoints_need_the_handler_in_the_vpc,
    job_warning_needs_a_backend,
    scaling_targets_are_on_the_reservations,
    the_handler_reaches_the_api_server,
    the_handler_reaches_the_aws_apis,
)
from .scaling import (
    AUTO_SCALING_GROUP,
    BlockScalingTarget,
    grant_scaling,
    scaling_target,
    scaling_targets_json,
)

_HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER = "index.handler"


#: The ClusterRole rules the EKS cordon needs: list nodes (to match them to the block's instances), get and patch them
#: (spec.unschedulable and the annotations). Nothing else: no pods, no eviction.
CORDON_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
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
    job_warning_needs_a_backend(job_warning_given=True, pcs=pcs, eks=eks)


def _check_targets(value: object, reservation_ids: Sequence[str]) -> tuple[BlockScalingTarget, ...]:
    """``scaling_targets`` as targets; each target's known block must be in ``reservation_ids`` when those are given."""
    if value is None:
        return ()
    found = check_sequence("scaling_targets", value, scaling_target)
    scaling_targets_are_on_the_reservations(
        target_blocks=[target.reservation_id for target in found], reservation_ids=reservation_ids
    )
    return found


class _CheckedProps(NamedTuple):
    """The props of :class:`CapacityBlockEvents` once checked, and what follows from them."""

    ids: tuple[str, ...]
    vpc_endpoints: tuple[ec2.CfnVPCEndpoint, ...]
    block_targets: tuple[BlockScalingTarget, ...]
    leads: dict[CapacityKind, Any]
    rule_ids: list[tuple[str, ...]]
    interruptible_ids: tuple[str, ...]
    scheduled: bool


def _check_reservation_ids(value: object) -> tuple[str, ...]:
    """``capacity_reservation_ids``: one or more distinct capacity reservation ids, or None (every block)."""
    return check_reservation_ids("capacity_reservation_ids", value, allowed="a capacity reservation id (cr-<hex>)")


@dataclass(frozen=True)
class _Props:
    """The keyword arguments of :class:`CapacityBlockEvents` as given (checked by :func:`_check_props`)."""

    alert_topic: Any
    pcs_login_node_group_id: str | None
    parallelcluster_cluster_name: str | None
    capacity_reservation_ids: Sequence[str] | None
    eks_cluster: GpuEksCluster | None
    eks_in_vpc: bool
    endpoints: Sequence[GpuClusterEndpoints | ec2.InterfaceVpcEndpoint | ec2.CfnVPCEndpoint] | None
    log_retention: logs.RetentionDays
    scaling_targets: Sequence[GpuNodeGroup | GpuAutoScalingGroup] | None
    drain_lead_minutes: int
    ultraserver_drain_lead_minutes: int
    job_warning: JobWarning | None
    interruptible_reservation_ids: Sequence[str] | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Props:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


def _check_props(props: _Props) -> _CheckedProps:
    """Check every prop of :class:`CapacityBlockEvents` (in the order of its signature) before anything is built."""
    check_construct("alert_topic", props.alert_topic, attribute="topic_arn", expected="an sns.ITopic")
    if props.pcs_login_node_group_id is not None:
        # The id: the handler finds the login instance by the tag aws:pcs:compute-node-group-id (botocore pcs).
        check_service_id("pcs_login_node_group_id", props.pcs_login_node_group_id, PCS_NODE_GROUP_ID)
    if props.parallelcluster_cluster_name is not None:
        check_service_id(
            "parallelcluster_cluster_name", props.parallelcluster_cluster_name, PARALLELCLUSTER_CLUSTER_NAME
        )
        if props.pcs_login_node_group_id is not None:
            raise FmValidationError(
                "parallelcluster_cluster_name", props.parallelcluster_cluster_name, "None with pcs_login_node_group_id"
            )
    ids = _check_reservation_ids(props.capacity_reservation_ids)
    eks_cluster = props.eks_cluster
    if eks_cluster is not None and not isinstance(eks_cluster, GpuEksCluster):
        raise FmTypeError("eks_cluster", eks_cluster, f"a GpuEksCluster or None (got a {type(eks_cluster).__name__})")
    check_bool("eks_in_vpc", props.eks_in_vpc)
    endpoints = props.endpoints
    vpc_endpoints = _vpc_endpoints("endpoints", endpoints) if endpoints is not None else ()
    endpoints_need_the_handler_in_the_vpc(
        endpoints_given=endpoints is not None, eks_in_vpc=props.eks_in_vpc, eks_cluster_given=eks_cluster is not None
    )
    check_enum("log_retention", props.log_retention, logs.RetentionDays)
    block_targets = _check_targets(props.scaling_targets, ids)
    checked_leads = _check_leads(props.drain_lead_minutes, props.ultraserver_drain_lead_minutes)
    slurm = props.pcs_login_node_group_id is not None or props.parallelcluster_cluster_name is not None
    _check_job_warning(props.job_warning, pcs=slurm, eks=eks_cluster is not None)
    return _CheckedProps(
        ids=ids,
        vpc_endpoints=vpc_endpoints,
        block_targets=block_targets,
        leads=checked_leads,
        rule_ids=split_reservation_ids(ids, detail_types=DETAIL_TYPES),
        interruptible_ids=check_interruptible_ids(props.interruptible_reservation_ids),
        scheduled=any(needs_schedule(lead) for lead in checked_leads.values()),
    )


class CapacityBlockEvents(Construct):
    """EventBridge rule on EC2's Capacity Block events, a Lambda that notifies ``alert_topic`` and drains PCS nodes.

    :param alert_topic: the SNS topic to notify (e.g. :class:`~fmconstructs.observability` alert topic).
    :param pcs_login_node_group_id: the PCS login node group id; when given, the block's Slurm nodes are drained on
        the expiration warning through SSM Run Command on one of its running instances. default: notify only.
    :param parallelcluster_cluster_name: a ParallelCluster cluster's name; when given, the block's Slurm nodes are
        drained (and jobs warned) the same way on the cluster's head node (found by its ``parallelcluster:cluster-name``
        and ``parallelcluster:node-type=HeadNode`` tags; the head node must be an SSM managed instance: UNCONFIRMED
        that ParallelCluster's head node role allows it by default). Not with ``pcs_login_node_group_id``. default:
        notify only.
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
        parallelcluster_cluster_name: str | None = None,
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
        props = _Props.of(locals())
        checked = _check_props(props)
        super().__init__(scope, id)
        self._record_props(checked, props)
        self._build_role(props.log_retention)
        self._build_function(self._build_environment(checked.scheduled))
        self._build_rules(checked.rule_ids)
        self._acknowledge()
        if eks_cluster is not None:
            self._check_endpoint_reachable(eks_cluster)
            self._check_api_route(eks_cluster)

    def _record_props(self, checked: _CheckedProps, props: _Props) -> None:
        """The checked props as attributes, and the attributes the build steps fill in."""
        #: The interruptible reservations whose reclaim warnings drain and cordon.
        self.interruptible_reservation_ids = checked.interruptible_ids
        self.alert_topic = props.alert_topic
        self.pcs_login_node_group_id = props.pcs_login_node_group_id
        #: The ParallelCluster cluster whose head node drains the block's Slurm nodes (None: not ParallelCluster).
        self.parallelcluster_cluster_name = props.parallelcluster_cluster_name
        self.capacity_reservation_ids = checked.ids
        self.eks_cluster = props.eks_cluster
        self.eks_in_vpc = props.eks_in_vpc and props.eks_cluster is not None
        #: The AWS APIs the handler calls, as interface endpoint service names (com.amazonaws.<Region>.<name>).
        #: Lead times of the expiry actions per kind of block, in minutes before the end.
        self.lead_minutes: dict[CapacityKind, Any] = checked.leads
        self.job_warning = props.job_warning
        self.api_services: tuple[str, ...] = _api_services(
            pcs=props.pcs_login_node_group_id is not None or props.parallelcluster_cluster_name is not None,
            eks=props.eks_cluster is not None,
            scaling=checked.block_targets,
            schedule=checked.scheduled,
            reclaim=bool(checked.interruptible_ids),
        )
        #: The fleets scaled on their block's events (see ``scaling_targets``).
        self.scaling_targets: tuple[BlockScalingTarget, ...] = checked.block_targets
        #: The VPC endpoints given as ``endpoints=`` (their CfnVPCEndpoint resources).
        self.endpoints: tuple[ec2.CfnVPCEndpoint, ...] = checked.vpc_endpoints
        #: The Kubernetes group of the handler's access entry (bound to the cordon ClusterRole); None without EKS.
        self.kubernetes_group: str | None = None
        #: Name of the ClusterRole (and ClusterRoleBinding) that lets the group get, list and patch nodes.
        self.cluster_role_name: str | None = None
        self.access_entry: eks.CfnAccessEntry | None = None
        self.rbac: eks.KubernetesManifest | None = None
        self.security_group: ec2.SecurityGroup | None = None

    def _build_role(self, log_retention: logs.RetentionDays) -> None:
        """The handler's log group and execution role, allowed to write the logs and publish to the alert topic."""
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
        self.alert_topic.grant_publish(self.role)

    def _build_environment(self, scheduled: bool) -> dict[str, str]:
        """The handler's environment, with the IAM statements (and EKS access) of each action it is given."""
        environment = {"TOPIC_ARN": self.alert_topic.topic_arn}
        environment.update(self._expiry_settings(scheduled))
        self._grant_block_reads()
        if self.pcs_login_node_group_id is not None:
            environment["PCS_LOGIN_NODE_GROUP_ID"] = self.pcs_login_node_group_id
            self._grant_slurm_drain(
                "LoginNodesOnly", {f"ssm:resourceTag/{NODE_GROUP_ID_TAG}": self.pcs_login_node_group_id}
            )
        if self.parallelcluster_cluster_name is not None:
            environment["PARALLELCLUSTER_CLUSTER_NAME"] = self.parallelcluster_cluster_name
            self._grant_slurm_drain(
                "HeadNodeOnly",
                {
                    f"ssm:resourceTag/{PC_CLUSTER_TAG}": self.parallelcluster_cluster_name,
                    f"ssm:resourceTag/{PC_NODE_TYPE_TAG}": PC_HEAD_NODE,
                },
            )
        if self.eks_cluster is not None:
            environment["EKS_CLUSTER_NAME"] = self.eks_cluster.cluster_name
            self._add_kubernetes_access(self.eks_cluster)
        if self.scaling_targets:
            environment["SCALING_TARGETS"] = scaling_targets_json(self, self.scaling_targets)
            grant_scaling(self.role, self.scaling_targets)
        return environment

    def _grant_block_reads(self) -> None:
        """ec2 reads of the block's instances (drain, cordon) and of its end date (before acting on a warning)."""
        if self._drains or self.eks_cluster is not None:
            # ec2:DescribeInstances supports no resource-level permissions (Service Authorization Reference, "Actions,
            # resources, and condition keys for Amazon EC2": no resource type for Describe* actions), so "*".
            # UNCONFIRMED: the page was not opened while writing this.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="FindBlockAndLoginInstances", actions=["ec2:DescribeInstances"], resources=["*"]
                )
            )
        if self._drains or self.eks_cluster is not None or self.scaling_targets:
            # Before acting on an expiration warning the handler checks whether the block was extended
            # (handler/extension.py). Describe* actions: "*" as for DescribeInstances above (UNCONFIRMED likewise).
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadBlockEndDate",
                    actions=["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlockExtensionHistory"],
                    resources=["*"],
                )
            )

    @property
    def _drains(self) -> bool:
        """Whether the handler drains Slurm nodes (PCS login nodes or a ParallelCluster head node)."""
        return self.pcs_login_node_group_id is not None or self.parallelcluster_cluster_name is not None

    def _grant_slurm_drain(self, sid: str, tags: dict[str, str]) -> None:
        """SSM Run Command (AWS-RunShellScript) on the instances with ``tags`` (the PCS login node group's, or the
        ParallelCluster head node: the same conditions remediation's handler uses), and reading its result."""
        stack = cdk.Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="RunShellScriptDocument",
                actions=["ssm:SendCommand"],
                resources=[
                    stack.format_arn(service="ssm", account="", resource="document", resource_name=RUN_SHELL_DOCUMENT)
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
                sid=sid,
                actions=["ssm:SendCommand"],
                resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
                conditions={"StringEquals": tags},
            )
        )

    def _build_function(self, environment: dict[str, str]) -> None:
        """The handler function, its invoke grant to the expiry schedule, and the failed-events queue."""
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
            **self._network(self.eks_cluster if self.eks_in_vpc else None),
        )
        self.function.node.add_dependency(self.role)
        if self.expiry_schedule is not None:
            self.expiry_schedule.grant_invoke(self.function)
        #: Events the handler could not finish (notice not published) after Lambda's retries, and events EventBridge
        #: could not deliver to the function: encrypted SQS queue, TLS only.
        self.failure_queue = failure_queue(self, "FailedEvents")
        wire_failure_queue(self.function, self.failure_queue)

    def _build_rules(self, rule_ids: Sequence[Sequence[str]]) -> None:
        """The Capacity Block event rules (one per group of reservation ids) and the reclaim-warning rule."""
        #: One rule per group of reservation ids whose event pattern fits the quota (one rule without ids).
        self.rules: tuple[events.Rule, ...] = tuple(
            self._rule("Rule" if index == 0 else f"Rule{index + 1}", group) for index, group in enumerate(rule_ids)
        )
        self.rule = self.rules[0]
        #: The rule on the reclaim warning of ``interruptible_reservation_ids`` (None without them).
        self.reclaim_rule: events.Rule | None = (
            add_reclaim_rule(self, self.interruptible_reservation_ids) if self.interruptible_reservation_ids else None
        )

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
        return handler_rule(
            self,
            id,
            description="EC2 Capacity Block delivered / expiration warning",
            pattern=event_pattern(DETAIL_TYPES, reservation_ids),
            function=self.function,
            dead_letter_queue=self.failure_queue,
        )

    def _check_api_route(self, cluster: GpuEksCluster) -> None:
        """Warn when the handler runs in isolated subnets without endpoints for the AWS APIs it calls."""
        if not self.eks_in_vpc:
            return
        isolated = {subnet.subnet_id for subnet in cluster.vpc.isolated_subnets}
        vpc_id = cluster.vpc.vpc_id
        advice = the_handler_reaches_the_aws_apis(
            eks_in_vpc=self.eks_in_vpc,
            needed=self.api_services,
            covered=[name for name in (_endpoint_service(e, vpc_id) for e in self.endpoints) if name is not None],
            isolated_subnet_ids=[s.subnet_id for s in cluster.subnets if s.subnet_id in isolated],
        )
        warn(self, advice)

    def _check_endpoint_reachable(self, cluster: GpuEksCluster) -> None:
        """Warn when the handler cannot be known to reach the cluster's API server endpoint (see the module doc)."""
        isolated = {subnet.subnet_id for subnet in cluster.vpc.isolated_subnets} if self.eks_in_vpc else set[str]()
        advice = the_handler_reaches_the_api_server(
            eks_in_vpc=self.eks_in_vpc,
            endpoint_public=cluster.endpoint_public,
            endpoint_private=cluster.endpoint_private,
            isolated_subnet_ids=[s.subnet_id for s in cluster.subnets if s.subnet_id in isolated],
            public_access_cidrs=cluster.public_access_cidrs,
        )
        warn(self, advice)

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
            self._drains
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
        if self._drains:
            stack = cdk.Stack.of(self)
            region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
            account = "<AWS::AccountId>" if cdk.Token.is_unresolved(stack.account) else stack.account
            findings[f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:{region}:{account}:instance/*]"] = (
                "ssm:SendCommand on instance/* is limited by resource tag conditions to the PCS login node group's "
                "instances (ssm:resourceTag/aws:pcs:compute-node-group-id) or the ParallelCluster head node "
                "(ssm:resourceTag/parallelcluster:cluster-name and parallelcluster:node-type)"
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
