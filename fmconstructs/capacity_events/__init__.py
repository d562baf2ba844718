"""Capacity Block awareness at run time: EC2's Capacity Block events -> SNS, and a Slurm drain on PCS.

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

EKS: notify only (cordoning through the Kubernetes API is not implemented).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from .._validate import check_construct, check_enum, check_scope_id, check_str, check_str_sequence
from ..errors import FmValidationError
from ..pcs.node_group import NODE_GROUP_ID_TAG
from .handler.index import DETAIL_TYPES, RUN_SHELL_DOCUMENT

__all__ = ["DETAIL_TYPES", "CapacityBlockEvents"]

_HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER = "index.handler"

# Capacity reservation ids: "cr-" + 17 hex digits, or 8 for older ids (UNCONFIRMED: the usual EC2 id form, not seen
# as a documented pattern).
_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{8}(?:[0-9a-f]{9})?")
# PCS compute node group ids (PCS API reference, ComputeNodeGroup.id: "The generated unique ID"; UNCONFIRMED pattern:
# any non-empty id without whitespace is accepted).
_NODE_GROUP_ID = re.compile(r"\S{1,256}")


class CapacityBlockEvents(Construct):
    """EventBridge rule on EC2's Capacity Block events, a Lambda that notifies ``alert_topic`` and drains PCS nodes.

    :param alert_topic: the SNS topic to notify (e.g. :class:`~fmconstructs.observability` alert topic).
    :param pcs_login_node_group_id: the PCS login node group id; when given, the block's Slurm nodes are drained on
        the expiration warning through SSM Run Command on one of its running instances. default: notify only.
    :param capacity_reservation_ids: only these blocks. default: every Capacity Block of the account and region.
    :param log_retention: retention of the handler's log group. default: ONE_MONTH.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        alert_topic: Any,
        pcs_login_node_group_id: str | None = None,
        capacity_reservation_ids: Sequence[str] | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
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
        check_enum("log_retention", log_retention, logs.RetentionDays)
        super().__init__(scope, id)
        self.alert_topic = alert_topic
        self.pcs_login_node_group_id = pcs_login_node_group_id
        self.capacity_reservation_ids = ids

        self.log_group = logs.LogGroup(
            self, "HandlerLogs", retention=log_retention, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        self.role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Capacity Block events: notify the alert topic, drain the block's PCS nodes",
        )
        self.log_group.grant_write(self.role)
        alert_topic.grant_publish(self.role)
        environment = {"TOPIC_ARN": alert_topic.topic_arn}
        if pcs_login_node_group_id is not None:
            environment["PCS_LOGIN_NODE_GROUP_ID"] = pcs_login_node_group_id
            stack = cdk.Stack.of(self)
            # ec2:DescribeInstances supports no resource-level permissions (Service Authorization Reference, "Actions,
            # resources, and condition keys for Amazon EC2": no resource type for Describe* actions), so "*".
            # UNCONFIRMED: the page was not opened while writing this.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="FindBlockAndLoginInstances", actions=["ec2:DescribeInstances"], resources=["*"]
                )
            )
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
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="LoginNodesOnly",
                    actions=["ssm:SendCommand"],
                    resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
                    conditions={"StringEquals": {f"ssm:resourceTag/{NODE_GROUP_ID_TAG}": pcs_login_node_group_id}},
                )
            )
        self.function = lambda_.Function(
            self,
            "Handler",
            description="fmconstructs: Capacity Block events -> alert topic, Slurm drain on PCS",
            # Latest Python the aws-cdk-lib Runtime enum offers (cdk-nag AwsSolutions-L1), as the Grafana provisioner.
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(_HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=cdk.Duration.minutes(1),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            environment=environment,
        )
        self.function.node.add_dependency(self.role)

        detail: dict[str, Any] | None = {"capacity-reservation-id": list(ids)} if ids else None
        self.rule = events.Rule(
            self,
            "Rule",
            description="EC2 Capacity Block delivered / expiration warning",
            event_pattern=events.EventPattern(source=["aws.ec2"], detail_type=list(DETAIL_TYPES), detail=detail),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
        self._acknowledge()

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
        if self.pcs_login_node_group_id is not None:
            stack = cdk.Stack.of(self)
            region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
            account = "<AWS::AccountId>" if cdk.Token.is_unresolved(stack.account) else stack.account
            findings["AwsSolutions-IAM5[Resource::*]"] = (
                "ec2:DescribeInstances has no resource-level permissions (Service Authorization Reference for "
                "Amazon EC2: no resource type), so its Resource must be *; the handler only reads instances"
            )
            findings[f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:{region}:{account}:instance/*]"] = (
                "ssm:SendCommand on instance/* is limited by the condition "
                "ssm:resourceTag/aws:pcs:compute-node-group-id to the PCS login node group's instances"
            )
        for rule_id, reason in findings.items():
            cdk.Validations.of(policy).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))
