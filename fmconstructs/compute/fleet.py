"""GpuAutoScalingGroup: a self-managed fleet on a GpuLaunchTemplate."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from ..errors import FmValidationError
from ..networking import InterfacePolicy
from .launch_template import GpuLaunchTemplate


class GpuAutoScalingGroup(Construct):
    """An Auto Scaling group of GPU nodes in the launch template's one subnet.

    Capacity Block rules (Auto Scaling User Guide "capacity-reservation-create-asg-procedure"): no mixed-instances
    policy and no warm pool (this construct creates neither), the launch template version pinned (always the
    template's version number, never ``$Latest``), and a fixed size (min == max == desired). EC2 reclaims block
    instances 30 minutes before the block ends.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        launch_template: GpuLaunchTemplate,
        min_count: int,
        max_count: int,
        desired_count: int | None = None,
        notifications_topic: sns.ITopic | None = None,
        health_check_grace_period: Duration | None = None,
    ) -> None:
        """
        :param launch_template: a template built with the SELF_MANAGED policy and a subnet.
        :param min_count: minimum nodes; equal to ``max_count`` on a Capacity Block.
        :param max_count: maximum nodes; at most the reservation's size when known.
        :param desired_count: default: ``min_count``.
        :param notifications_topic: SNS topic for launch/terminate events. Default: none. When the topic is
            encrypted with a key this app owns, the key policy lets the Auto Scaling service-linked role encrypt for
            it; an imported key's policy must grant the same by hand (see ``_allow_autoscaling_to_use_key``).
        :param health_check_grace_period: default: 15 minutes (GPU nodes boot slowly).
        """
        super().__init__(scope, id)
        if launch_template.policy is not InterfacePolicy.SELF_MANAGED:
            raise FmValidationError(
                "launch_template.policy",
                launch_template.policy.value,
                "'self-managed' for an Auto Scaling group",
            )
        if launch_template.subnet is None:
            raise FmValidationError("launch_template.subnet", None, "the one subnet of the fleet")
        desired = min_count if desired_count is None else desired_count
        launch_template.capacity.validate_for(launch_template.instance_spec, min_count=min_count, max_count=max_count)
        if not min_count <= desired <= max_count:
            raise FmValidationError(
                "desired_count", desired, f"between min_count ({min_count}) and max_count ({max_count})"
            )
        self.launch_template = launch_template
        self.min_count, self.max_count, self.desired_count = min_count, max_count, desired

        self.resource = autoscaling.CfnAutoScalingGroup(
            self,
            "Resource",
            min_size=str(min_count),
            max_size=str(max_count),
            desired_capacity=str(desired),
            vpc_zone_identifier=[launch_template.subnet.subnet_id],
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=launch_template.launch_template_id,
                version=launch_template.version_number,
            ),
            health_check_type="EC2",
            health_check_grace_period=int((health_check_grace_period or Duration.minutes(15)).to_seconds()),
            notification_configurations=(
                [
                    autoscaling.CfnAutoScalingGroup.NotificationConfigurationProperty(
                        topic_arn=notifications_topic.topic_arn,
                        notification_types=[
                            "autoscaling:EC2_INSTANCE_LAUNCH",
                            "autoscaling:EC2_INSTANCE_LAUNCH_ERROR",
                            "autoscaling:EC2_INSTANCE_TERMINATE",
                            "autoscaling:EC2_INSTANCE_TERMINATE_ERROR",
                        ],
                    )
                ]
                if notifications_topic
                else None
            ),
        )

        if notifications_topic is not None:
            self._allow_autoscaling_to_use_key(notifications_topic)

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
        return self.resource.ref

    @property
    def total_gpus(self) -> int:
        """GPUs at the desired size."""
        return self.desired_count * self.launch_template.gpus_per_node


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
