""":class:`NodeRemediation`: one handler per cluster that drains, reboots or replaces faulty nodes, rate-limited.

Inputs: the alert topic (the Prometheus workspace's Alertmanager publishes there) through an SNS subscription, and an
EventBridge rule on AWS Health EC2 scheduled-change events. The subscription's filter policy drops the handler's own
notices (attribute ``fmconstructs_notice``): ``{"exists": false}`` matches a message without that attribute, but
only a message that has at least one attribute (SNS Developer Guide, attribute-key-matching: '"exists": false only
matches when at least one attribute is present. If the set of attributes is empty, the filter doesn't match'). The
Alertmanager configuration of :class:`~fmconstructs.observability.PrometheusWorkspace` gives every alert the attribute
``severity``, so its alerts pass; a workspace configured elsewhere must set at least one ``attributes`` entry on its
``sns_configs``. Outputs: notices to the same topic; state (idempotency claims and
the hourly replacement counters) in a DynamoDB table.

The table holds only disposable state (claims and counters expire after a day through TTL), so it is destroyed with
the stack (``RemovalPolicy.DESTROY``): a new stack starts with a fresh hour. It is encrypted at rest (AWS managed key),
on-demand and has point-in-time recovery (cdk-nag AwsSolutions-DDB3), cheap for a table this small.

Asynchronous invocations (SNS and EventBridge invoke Lambda asynchronously) that fail after Lambda's retries go to an
encrypted SQS dead-letter queue (:attr:`NodeRemediation.dead_letter_queue`). The handler fails an invocation on
purpose when its deadline left faults unreached, so that Lambda's retry delivers them again.

Replacements held back by the hourly limit (``max_replacements_per_hour``; the node is only drained, on
ParallelCluster held in a Slurm reservation: handler/backends.py ``SLURM_HOLD``, on HyperPod left as it is) are
counted by a metric filter on the handler's ``rate-limited`` log lines (:attr:`NodeRemediation.held_back_metric`,
namespace ``fmconstructs/Remediation``, metric ``ReplacementsHeldBack``, dimension ``Cluster``), and an alarm on it
(:attr:`NodeRemediation.held_back_alarm`) notifies the alert topic: "replacement held back" is something an alert can
read, although the handler writes no Prometheus metric. The alarm's own message carries no SNS message attribute,
so the handler's subscription (whose filter needs one) never receives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .. import _nag
from .._rules import warn
from .._validate import check_construct, check_enum, check_instance, located
from ..eks.handler_network import ENI_POLICY, in_cluster_network
from ..eks.metrics_consumers import warn_without_scraper
from ..errors import WarningId
from .handler.backends import PC_CLUSTER_TAG, PC_HEAD_NODE, PC_NODE_TYPE_TAG, PCS_NODE_GROUP_TAG, RUN_SHELL_DOCUMENT
from .handler.faults import HEALTH_DETAIL_TYPE, HEALTH_SOURCE, SCHEDULED_CHANGE
from .handler.runtime import NOTICE_ATTRIBUTE
from .policy import Backend, RemediationPolicy, RemediationTarget
from .rules import hyperpod_acts_through_the_sagemaker_api_only

__all__ = ["EVICTION_RULES", "HELD_BACK_METRIC", "HELD_BACK_NAMESPACE", "NodeRemediation"]

_HANDLER_DIR = Path(__file__).resolve().parent / "handler"
#: Kubernetes RBAC of the EKS handler: find and read the node (list, get), cordon and annotate it (patch), list its
#: pods and evict them through the Eviction API (create on pods/eviction, kubectl drain's subresource).
EVICTION_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
)
# EKS managed node groups tag their instances eks:cluster-name (UNCONFIRMED: no EKS page seen that lists the instance
# tags; without the tag, the handler's TerminateInstances / RebootInstances are denied and the notice says so).
EKS_CLUSTER_TAG = "eks:cluster-name"
#: What the handler may do to a HyperPod cluster's nodes (handler/backends.py ``hyperpod_batch``).
HYPERPOD_ACTIONS = ("BatchRebootClusterNodes", "BatchReplaceClusterNodes")
#: Where the held-back replacements are counted (see the module docstring).
HELD_BACK_NAMESPACE = "fmconstructs/Remediation"
HELD_BACK_METRIC = "ReplacementsHeldBack"
# The handler's timeout: a burst of faults each waits for its SSM command (the idle check); the handler stops before
# it (context.get_remaining_time_in_millis) and leaves the rest to Lambda's retry. Lambda allows up to 900 s
# (Lambda Developer Guide, "Lambda quotas": function timeout 900 seconds).
HANDLER_TIMEOUT = cdk.Duration.minutes(5)
# Auto Scaling tags the instances it launches with aws:autoscaling:groupName (EC2 Auto Scaling User Guide,
# "Tag Auto Scaling groups and instances": "Amazon EC2 Auto Scaling adds a tag ... aws:autoscaling:groupName";
# UNCONFIRMED: page not opened for this module).
ASG_TAG = "aws:autoscaling:groupName"


class NodeRemediation(Construct):
    """Drain, reboot or replace a cluster's faulty nodes as ``policy`` says, at most
    ``policy.max_replacements_per_hour`` replacements per hour (see the module docstring).

    :param alert_topic: the alert topic (``PrometheusWorkspace.alert_topic``): the handler subscribes to it and
        publishes its notices there.
    :param target: the cluster and its backend (:class:`RemediationTarget`).
    :param policy: :class:`RemediationPolicy`. default: ``RemediationPolicy()`` (dry run: only notify).
    :param log_retention: the handler's log retention. default: ONE_MONTH.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alert_topic: sns.ITopic,
        target: RemediationTarget,
        policy: RemediationPolicy | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        check_construct("alert_topic", alert_topic, attribute="topic_arn", expected="an sns.ITopic")
        check_instance("target", target, RemediationTarget, "a RemediationTarget (RemediationTarget.pcs(...), ...)")
        policy = RemediationPolicy() if policy is None else policy
        check_instance("policy", policy, RemediationPolicy, "a RemediationPolicy or None")
        check_enum("log_retention", log_retention, logs.RetentionDays)
        super().__init__(scope, id)
        self.alert_topic = alert_topic
        self.target = target
        self.policy = policy
        self._wildcards: dict[str, str] = {}
        self.security_group: ec2.SecurityGroup | None = None
        self.table = self._create_table()
        self.dead_letter_queue = self._create_dead_letter_queue()
        self.role = self._create_role(log_retention)
        self._grant_backend()
        self.function = self._create_function()
        self.subscription = self._subscribe()
        self.rule = self._create_health_rule()
        self.held_back_metric, self.held_back_alarm = self._count_held_back()
        self._acknowledge()

    def _create_table(self) -> dynamodb.Table:
        return dynamodb.Table(
            self,
            "State",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="expires_at",
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )

    def _create_dead_letter_queue(self) -> sqs.Queue:
        return sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
        )

    def _create_role(self, log_retention: logs.RetentionDays) -> iam.Role:
        self.log_group = logs.LogGroup(
            self, "HandlerLogs", retention=log_retention, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Node remediation ({self.target.backend.value}): drain, reboot, replace faulty nodes",
        )
        self.log_group.grant_write(role)
        self.alert_topic.grant_publish(role)
        self.table.grant(role, "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
        return role

    def _instances_arn(self) -> str:
        return cdk.Stack.of(self).format_arn(service="ec2", resource="instance", resource_name="*")

    def _allow(self, sid: str, actions: list[str], resources: list[str], conditions: Any = None) -> None:
        self.role.add_to_policy(
            iam.PolicyStatement(sid=sid, actions=actions, resources=resources, conditions=conditions)
        )

    def _grant_backend(self) -> None:
        """The backend's AWS actions, each on the cluster's instances only (tag conditions) where IAM allows."""
        backend = self.target.backend
        instances = self._instances_arn()
        if backend in (Backend.PCS, Backend.PARALLELCLUSTER):
            # ec2:DescribeInstances has no resource-level permissions (Service Authorization Reference, Amazon EC2).
            self._allow("DescribeInstances", ["ec2:DescribeInstances"], ["*"])
            document = cdk.Stack.of(self).format_arn(
                service="ssm", account="", resource="document", resource_name=RUN_SHELL_DOCUMENT
            )
            self._allow("RunShellScriptDocument", ["ssm:SendCommand"], [document])
            # ssm:GetCommandInvocation (reading the script's result) takes "*", as in CapacityBlockEvents
            # (UNCONFIRMED that the Service Authorization Reference lists no resource type for it). Read-only.
            self._allow("ReadScriptResult", ["ssm:GetCommandInvocation"], ["*"])
            self._wildcards["*"] = (
                "ec2:DescribeInstances has no resource-level permissions and ssm:GetCommandInvocation (read-only: "
                "a command's status and output) takes none, so their Resource is *"
            )
        if backend is Backend.PCS:
            login = {f"ssm:resourceTag/{PCS_NODE_GROUP_TAG}": self.target.login_node_group_id}
            self._allow("SlurmOnLoginNodes", ["ssm:SendCommand"], [instances], {"StringEquals": login})
            computes = {f"ec2:ResourceTag/{PCS_NODE_GROUP_TAG}": list(self.target.compute_node_group_ids)}
            self._allow("ReplaceComputeNodes", ["ec2:TerminateInstances"], [instances], {"StringEquals": computes})
        elif backend is Backend.PARALLELCLUSTER:
            head = {
                f"ssm:resourceTag/{PC_CLUSTER_TAG}": self.target.cluster,
                f"ssm:resourceTag/{PC_NODE_TYPE_TAG}": PC_HEAD_NODE,
            }
            self._allow("SlurmOnHeadNode", ["ssm:SendCommand"], [instances], {"StringEquals": head})
        elif backend is Backend.EKS:
            self._grant_eks(instances)
        elif backend is Backend.HYPERPOD:
            self._grant_hyperpod()
        else:
            self._grant_auto_scaling(instances)
        if backend in (Backend.PCS, Backend.PARALLELCLUSTER):
            self._wildcards[instances] = (
                "ssm:SendCommand / ec2:TerminateInstances on instance/* are limited by resource tag conditions "
                "to the cluster's own login or head node and compute node groups"
            )

    def _grant_hyperpod(self) -> None:
        """The cluster's own nodes through the SageMaker API, on the cluster's ARN only (the ``cluster`` resource type
        of these actions: UNCONFIRMED, the Service Authorization Reference for SageMaker was not opened here; a
        wrong resource type shows as ``access-denied`` in the handler's notices)."""
        warn(self, hyperpod_acts_through_the_sagemaker_api_only(backend=self.target.backend))
        self._allow("FindClusterNodes", ["sagemaker:ListClusterNodes"], [str(self.target.cluster_arn)])
        self._allow(
            "RebootOrReplaceClusterNodes",
            [f"sagemaker:{action}" for action in HYPERPOD_ACTIONS],
            [str(self.target.cluster_arn)],
        )

    def _grant_eks(self, instances: str) -> None:
        cluster = self.target.eks_cluster
        warn_without_scraper(
            self,
            cluster,
            warning=WarningId.EKS_REMEDIATION_WITHOUT_SCRAPER,
            message=(
                "NodeRemediation on EKS acts on alerts from the cluster's metrics, but no AmpEksScraper collects "
                "this cluster's metrics: no alert (FmNodeCheckFailed, GpuCriticalXid ...) will ever reach it, only "
                "AWS Health scheduled events. Add an AmpEksScraper for the cluster."
            ),
        )
        self._allow("DescribeCluster", ["eks:DescribeCluster"], [cluster.cluster_arn])
        tag = {f"ec2:ResourceTag/{EKS_CLUSTER_TAG}": cluster.cluster_name}
        self._allow(
            "RebootOrReplaceNodes",
            ["ec2:RebootInstances", "ec2:TerminateInstances"],
            [instances],
            {"StringEquals": tag},
        )
        self._wildcards[instances] = (
            "ec2:RebootInstances / TerminateInstances on instance/* are limited by the eks:cluster-name resource tag "
            "condition to the EKS cluster's own nodes"
        )
        self._add_kubernetes_access(cluster)

    def _grant_auto_scaling(self, instances: str) -> None:
        name = self.target.cluster
        group_arn = cdk.Stack.of(self).format_arn(
            service="autoscaling",
            resource="autoScalingGroup",
            resource_name=f"*:autoScalingGroupName/{name}",
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        self._allow("ReplaceGroupInstances", ["autoscaling:SetInstanceHealth"], [group_arn])
        # DescribeAutoScalingInstances has no resource-level permissions (UNCONFIRMED: Service Authorization
        # Reference for Amazon EC2 Auto Scaling not opened for this module).
        self._allow("FindGroupOfInstance", ["autoscaling:DescribeAutoScalingInstances"], ["*"])
        self._allow(
            "RebootGroupInstances",
            ["ec2:RebootInstances"],
            [instances],
            {"StringEquals": {f"ec2:ResourceTag/{ASG_TAG}": name}},
        )
        self._wildcards["*"] = "autoscaling:DescribeAutoScalingInstances has no resource-level permissions"
        self._wildcards[group_arn] = (
            "autoscaling:SetInstanceHealth on one group by name: the '*' is the group's id, which its ARN contains"
        )
        self._wildcards[instances] = (
            "ec2:RebootInstances on instance/* is limited by the aws:autoscaling:groupName resource tag condition"
        )

    def _add_kubernetes_access(self, cluster: Any) -> None:
        """An access entry mapping the role to one Kubernetes group, bound to :data:`EVICTION_RULES`."""
        suffix = self.node.addr[:8]
        group = f"fmconstructs:node-remediation:{suffix}"
        name = f"fmconstructs-node-remediation-{suffix}"
        eks.CfnAccessEntry(
            self,
            "KubernetesAccess",
            cluster_name=cluster.cluster_name,
            principal_arn=self.role.role_arn,
            kubernetes_groups=[group],
            type="STANDARD",
        )
        labels = {"app.kubernetes.io/managed-by": "fmconstructs"}
        eks.KubernetesManifest(
            self,
            "EvictionRbac",
            cluster=cluster.icluster,
            manifest=[
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": name, "labels": labels},
                    "rules": [dict(rule) for rule in EVICTION_RULES],
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": name, "labels": labels},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
                },
            ],
        )

    def _network(self) -> dict[str, Any]:
        """For EKS: the handler in the cluster's subnets, admitted to the API server on 443 (as CapacityBlockEvents)."""
        if self.target.backend is not Backend.EKS:
            return {}
        self.security_group, props = in_cluster_network(
            self, self.target.eks_cluster, self.role, description="Node remediation handler"
        )
        return props

    def _create_function(self) -> lambda_.Function:
        function = lambda_.Function(
            self,
            "Handler",
            description=f"fmconstructs: node remediation for {self.target.backend.value}",
            # Latest Python the aws-cdk-lib Runtime enum offers (cdk-nag AwsSolutions-L1), as CapacityBlockEvents.
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(_HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=HANDLER_TIMEOUT,
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            dead_letter_queue=self.dead_letter_queue,
            environment={
                "TOPIC_ARN": self.alert_topic.topic_arn,
                "TABLE_NAME": self.table.table_name,
                "POLICY": self.policy.to_json(),
                "TARGET": self.target.to_json(),
            },
            **self._network(),
        )
        function.node.add_dependency(self.role)
        return function

    def _subscribe(self) -> sns.Subscription:
        """Subscribe the handler to the alert topic, without its own notices (the filter policy)."""
        subscription = subscriptions.LambdaSubscription(
            self.function,
            filter_policy={NOTICE_ATTRIBUTE: sns.SubscriptionFilter(conditions=[{"exists": False}])},
        )
        return self.alert_topic.add_subscription(subscription)

    def _create_health_rule(self) -> events.Rule:
        """AWS Health EC2 scheduled changes (retirement, maintenance) of this account and Region."""
        return events.Rule(
            self,
            "Ec2ScheduledEvents",
            description="AWS Health EC2 scheduled changes -> node remediation (drain ahead of the date)",
            event_pattern=events.EventPattern(
                source=[HEALTH_SOURCE],
                detail_type=[HEALTH_DETAIL_TYPE],
                detail={"service": ["EC2"], "eventTypeCategory": [SCHEDULED_CHANGE]},
            ),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2, dead_letter_queue=self.dead_letter_queue)],
        )

    def _count_held_back(self) -> tuple[cloudwatch.Metric, cloudwatch.Alarm]:
        """A metric filter on the handler's ``rate-limited`` lines and an alarm to the alert topic (module docstring).
        The JSON fields are those of the handler's log line (index.py: ``event`` "remediation", ``outcome``,
        ``cluster``); metric filter JSON selectors ``$.field`` (CloudWatch Logs User Guide, "Filter pattern syntax for
        metric filters", JSON log events)."""
        logs.MetricFilter(
            self,
            "HeldBackFilter",
            log_group=self.log_group,
            filter_pattern=logs.FilterPattern.all(
                logs.FilterPattern.string_value("$.event", "=", "remediation"),
                logs.FilterPattern.string_value("$.outcome", "=", "rate-limited"),
            ),
            metric_namespace=HELD_BACK_NAMESPACE,
            metric_name=HELD_BACK_METRIC,
            metric_value="1",
            dimensions={"Cluster": "$.cluster"},
            unit=cloudwatch.Unit.COUNT,
        )
        metric = cloudwatch.Metric(
            namespace=HELD_BACK_NAMESPACE,
            metric_name=HELD_BACK_METRIC,
            dimensions_map={"Cluster": self.target.cluster},
            statistic=cloudwatch.Stats.SUM,
            period=cdk.Duration.minutes(5),
        )
        alarm = metric.create_alarm(
            self,
            "HeldBackAlarm",
            alarm_description=(
                f"fmconstructs node remediation ({self.target.backend.value}): replacement held back, "
                f"max_replacements_per_hour={int(self.policy.max_replacements_per_hour)} reached; the excess nodes "
                "are only drained until a later alert replaces them"
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cw_actions.SnsAction(self.alert_topic))
        return metric, alarm

    def _acknowledge(self) -> None:
        """cdk-nag acknowledgements, each with its reason."""
        _nag.acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "this queue is the dead-letter queue of the remediation handler and its EventBridge target",
        )
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is None:
            return
        if self.alert_topic.node.try_find_child("Resource") is not None:  # an owned topic may have a KMS key
            _nag.acknowledge(
                policy,
                _nag.iam5_action("kms:GenerateDataKey*"),
                "grant_publish on a KMS-encrypted alert topic grants kms:GenerateDataKey* on that topic's key only",
            )
        for resource, reason in self._wildcards.items():
            _nag.acknowledge(policy, _nag.iam5_resource(self, resource), reason)
        if self.target.backend is Backend.EKS:
            _nag.acknowledge(
                self.role,
                _nag.aws_managed_policy_finding(ENI_POLICY),
                "the handler runs in the cluster's VPC to reach the private EKS endpoint; Lambda creates its network "
                "interfaces with the execution role, and AWSLambdaENIManagementAccess holds only those ENI actions",
            )
