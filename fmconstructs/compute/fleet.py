"""GpuAutoScalingGroup: a self-managed fleet on a GpuLaunchTemplate."""

from __future__ import annotations

from aws_cdk import Duration, Fn, Stack, Token
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from .._validate import (
    NOT_GIVEN,
    RemovedAttribute,
    check_count,
    check_duration_seconds,
    check_enum,
    known,
    located,
    removed_keywords,
)
from ..capacity import CapacityBlockScaling, check_backend_capacity
from ..errors import FmTypeError, is_token
from . import rules
from .launch_template import GpuLaunchTemplate


class GpuAutoScalingGroup(Construct):
    """An Auto Scaling group of GPU nodes in the launch template's one subnet.

    Capacity Block rules (Auto Scaling User Guide "capacity-reservation-create-asg-procedure"): no mixed-instances
    policy and no warm pool (this construct creates neither), the launch template version pinned (always the
    template's version number, never ``$Latest``), and a fixed size (min == max == desired). EC2 reclaims block
    instances 30 minutes before the block ends.

    Two ways to deploy on a Capacity Block (``capacity_block_scaling``):

    - ``CapacityBlockScaling.AT_DEPLOY`` (default): min == max == desired; deploy after the block starts (the block
      launches instances only while it is active).
    - ``CapacityBlockScaling.ON_BLOCK_EVENTS``: MinSize 0, MaxSize ``max_nodes`` and no DesiredCapacity in the
      template, so the group starts empty (Auto Scaling's initial desired capacity is then the minimum, aws-cdk
      pull request #5507) and can be deployed before the block starts. Give the group to
      :class:`~fmconstructs.capacity_events.CapacityBlockEvents` (``scaling_targets=``): it sets MinSize and
      DesiredCapacity to ``max_nodes`` (autoscaling:UpdateAutoScalingGroup) when EC2 reports the block delivered and
      0 on the expiration warning. Leaving DesiredCapacity out is what keeps a later ``cdk deploy`` from resetting
      the running group: with DesiredCapacity in the template, every deployment resets the group to it (aws-cdk pull
      request #5507, "fix(autoscaling): every deployment resets capacity").

    Sizes may be number tokens (``CfnParameter.value_as_number``): they reach the template as references and the
    checks that need their value are skipped.

    :param launch_template: a template built with the SELF_MANAGED policy and a subnet.
    :param min_nodes: minimum nodes (required); equal to ``max_nodes`` on a Capacity Block. May be a number token.
    :param max_nodes: maximum nodes (required); at most the reservation's size when known. May be a number token.
    :param desired_nodes: default: ``min_nodes``.
    :param notifications_topic: SNS topic for launch/terminate events. Default: none. When the topic is
        encrypted with a key this app owns, the key policy lets the Auto Scaling service-linked role encrypt for
        it; an imported key's policy must grant the same by hand (see ``_allow_autoscaling_to_use_key``).
    :param health_check_grace_period: default: 15 minutes (GPU nodes boot slowly).
    :param capacity_block_scaling: on a Capacity Block, ``AT_DEPLOY`` (default) or ``ON_BLOCK_EVENTS`` (then
        ``min_nodes`` must be 0 and ``desired_nodes`` 0 or omitted; see the class docstring). Refused on other
        capacity.
    """

    @located
    @removed_keywords(
        "GpuAutoScalingGroup", min_count="min_nodes", max_count="max_nodes", desired_count="desired_nodes"
    )
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        launch_template: GpuLaunchTemplate,
        min_nodes: int = NOT_GIVEN,
        max_nodes: int = NOT_GIVEN,
        desired_nodes: int | None = None,
        notifications_topic: sns.ITopic | None = None,
        health_check_grace_period: Duration | None = None,
        capacity_block_scaling: CapacityBlockScaling = CapacityBlockScaling.AT_DEPLOY,
    ) -> None:
        minimum, maximum, desired, grace_seconds, on_events = self._validate(
            launch_template,
            min_nodes,
            max_nodes,
            desired_nodes,
            notifications_topic,
            health_check_grace_period,
            capacity_block_scaling,
        )
        super().__init__(scope, id)
        self.launch_template = launch_template
        self.min_nodes: int = minimum
        self.max_nodes: int = maximum
        self.desired_nodes: int = desired
        #: When the group gets its instances on a Capacity Block (see the class docstring).
        self.capacity_block_scaling: CapacityBlockScaling = capacity_block_scaling

        self.resource = self._build_group(minimum, maximum, desired, on_events, grace_seconds, notifications_topic)

        # Asset delivery (launch template ``bootstrap_delivery=ASSET``): instances fetch their set-up as they boot, so
        # the group waits for the node role's read and log permissions.
        launch_template.bootstrap.add_dependent(self.resource)

        if notifications_topic is not None:
            self._allow_autoscaling_to_use_key(notifications_topic)

    @staticmethod
    def _validate(
        launch_template: GpuLaunchTemplate,
        min_nodes: int,
        max_nodes: int,
        desired_nodes: int | None,
        notifications_topic: sns.ITopic | None,
        health_check_grace_period: Duration | None,
        capacity_block_scaling: CapacityBlockScaling,
    ) -> tuple[int, int, int, int, bool]:
        """The checked sizes (min, max, desired), grace period in seconds and whether it scales on block events."""
        for name, value in (("min_nodes", min_nodes), ("max_nodes", max_nodes)):
            if value is NOT_GIVEN:
                raise FmTypeError(name, None, "a number of nodes (a required keyword argument)")
        if not isinstance(launch_template, GpuLaunchTemplate):
            raise FmTypeError("launch_template", launch_template, "an fmconstructs GpuLaunchTemplate")
        minimum = check_count("min_nodes", min_nodes, minimum=0)
        maximum = check_count("max_nodes", max_nodes, minimum=1)
        desired = minimum if desired_nodes is None else check_count("desired_nodes", desired_nodes, minimum=0)
        if notifications_topic is not None and not hasattr(notifications_topic, "topic_arn"):
            raise FmTypeError("notifications_topic", notifications_topic, "an sns.ITopic")
        grace = health_check_grace_period if health_check_grace_period is not None else Duration.minutes(15)
        grace_seconds = check_duration_seconds("health_check_grace_period", grace)  # whole seconds (ASG API)
        rules.an_auto_scaling_group_takes_a_self_managed_template(launch_template.policy)
        rules.an_auto_scaling_group_needs_the_template_subnet(subnet_given=launch_template.subnet is not None)
        check_backend_capacity(launch_template.capacity, backend="self-managed Auto Scaling groups")
        check_enum("capacity_block_scaling", capacity_block_scaling, CapacityBlockScaling)
        on_events = capacity_block_scaling is CapacityBlockScaling.ON_BLOCK_EVENTS
        # ON_BLOCK_EVENTS: only on a Capacity Block, and the group starts empty.
        rules.on_block_events_needs_a_capacity_block(scaling=capacity_block_scaling, capacity=launch_template.capacity)
        rules.on_block_events_starts_empty(scaling=capacity_block_scaling, min_nodes=minimum, desired_nodes=desired)
        # ON_BLOCK_EVENTS: checked as the fixed fleet it becomes when the block starts (min == max).
        launch_template.capacity.validate_for(
            launch_template.instance_spec, min_nodes=maximum if on_events else minimum, max_nodes=maximum
        )
        rules.desired_nodes_are_between_min_and_max(min_nodes=minimum, max_nodes=maximum, desired_nodes=desired)
        return minimum, maximum, desired, grace_seconds, on_events

    def _build_group(
        self,
        minimum: int,
        maximum: int,
        desired: int,
        on_events: bool,
        grace_seconds: int,
        notifications_topic: sns.ITopic | None,
    ) -> autoscaling.CfnAutoScalingGroup:
        """The Auto Scaling group on the pinned launch template version in the template's one subnet."""
        assert self.launch_template.subnet is not None  # checked in _validate
        return autoscaling.CfnAutoScalingGroup(
            self,
            "Resource",
            # Number tokens render as their reference (Token.as_string), never as -1.888e+289.
            min_size=_size(minimum),
            max_size=_size(maximum),
            # ON_BLOCK_EVENTS: no DesiredCapacity, so that deployments never reset the scaled group.
            desired_capacity=None if on_events else _size(desired),
            vpc_zone_identifier=[self.launch_template.subnet.subnet_id],
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=self.launch_template.launch_template_id,
                version=self.launch_template.version_number,
            ),
            health_check_type="EC2",
            health_check_grace_period=grace_seconds,
            notification_configurations=_notification_configurations(notifications_topic),
        )

    def _allow_autoscaling_to_use_key(self, topic: sns.ITopic) -> bool:
        """Let Auto Scaling publish to ``topic`` when it is encrypted with a customer managed key.

        Auto Scaling sends notifications as its service-linked role ``AWSServiceRoleForAutoScaling`` (this group sets
        no other role), whose permissions cover AWS managed keys only: for a customer managed key the key policy must
        name the role (Auto Scaling User Guide "Required AWS KMS key policy for use with encrypted volumes", the one
        Auto Scaling page that shows such a key policy), and a publisher to an SSE topic needs
        ``kms:GenerateDataKey*`` and ``kms:Decrypt`` (Amazon SNS Developer Guide "Key management"). The role is the
        principal itself: an account-root principal would also need an IAM policy on the role, which a
        service-linked role cannot get. KMS rejects a key policy naming a role that does not exist yet, so the role
        must exist before deployment (README "Prerequisites a deployer needs").

        Returns False when the topic is unencrypted or its key's policy cannot be changed from here (imported key).
        """
        key = topic.master_key
        if key is None:
            return False
        result = key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowAutoScalingNotifications",
                principals=[iam.ArnPrincipal(autoscaling_service_linked_role_arn(Stack.of(self)))],
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=["*"],
            )
        )
        return bool(result.statement_added)

    @property
    def auto_scaling_group_name(self) -> str:
        """The group's name (``Ref``)."""
        return self.resource.ref

    @property
    def launch_template_id(self) -> str:
        return self.launch_template.launch_template_id

    @property
    def launch_template_version(self) -> str:
        """The pinned launch template version the group uses."""
        return self.launch_template.version_number

    @property
    def subnet_id(self) -> str:
        """The fleet's one subnet."""
        subnet = self.launch_template.subnet
        assert subnet is not None
        return subnet.subnet_id

    @property
    def connections(self) -> ec2.Connections:
        """Network rules for the nodes (the launch template's groups)."""
        return self.launch_template.connections

    @property
    def describe_command(self) -> str:
        """An AWS CLI command listing the group's instances and their health."""
        return Fn.join(
            "",
            [
                "aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names ",
                self.auto_scaling_group_name,
                " --query 'AutoScalingGroups[0].Instances'",
            ],
        )

    @property
    def total_gpus(self) -> int | None:
        """GPUs at the desired size (None when the size is a deploy-time value)."""
        if not known(self.desired_nodes):
            return None
        return int(self.desired_nodes) * self.launch_template.gpus_per_node

    min_count = RemovedAttribute("min_nodes")
    max_count = RemovedAttribute("max_nodes")
    desired_count = RemovedAttribute("desired_nodes")


def _notification_configurations(
    topic: sns.ITopic | None,
) -> list[autoscaling.CfnAutoScalingGroup.NotificationConfigurationProperty] | None:
    """Launch and terminate events (and their errors) to ``topic``; None without a topic."""
    if not topic:
        return None
    return [
        autoscaling.CfnAutoScalingGroup.NotificationConfigurationProperty(
            topic_arn=topic.topic_arn,
            notification_types=[
                "autoscaling:EC2_INSTANCE_LAUNCH",
                "autoscaling:EC2_INSTANCE_LAUNCH_ERROR",
                "autoscaling:EC2_INSTANCE_TERMINATE",
                "autoscaling:EC2_INSTANCE_TERMINATE_ERROR",
            ],
        )
    ]


def _size(value: int) -> str:
    """An ASG size as CloudFormation wants it (a string); number tokens render as their reference."""
    return Token.as_string(value) if is_token(value) else str(int(value))


def autoscaling_service_linked_role_arn(stack: Stack) -> str:
    """ARN of the account's default Auto Scaling service-linked role, ``AWSServiceRoleForAutoScaling`` under the path
    ``/aws-service-role/autoscaling.amazonaws.com/`` (Auto Scaling User Guide "Service-linked roles for Amazon EC2
    Auto Scaling")."""
    return stack.format_arn(
        service="iam",
        region="",
        resource="role",
        resource_name="aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling",
    )
