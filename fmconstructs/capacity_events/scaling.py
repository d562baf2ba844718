"""What :class:`~fmconstructs.capacity_events.CapacityBlockEvents` scales when a Capacity Block starts and ends.

A fleet deployed with :attr:`~fmconstructs.capacity.CapacityBlockScaling.ON_BLOCK_EVENTS` is created empty, before its
block starts. The events handler scales it: when EC2 reports the block delivered (detail-type "Capacity Block
Delivered", EC2 User Guide capacity-blocks-monitor: "When your Capacity Block reservation starts, Amazon EC2 will emit
an event through EventBridge that indicates your capacity is ready to use") its minimum and desired size go to the
fleet's size; on the expiration warning (forty minutes before the end; "any instances running in the reservation
will begin to terminate in 10 minutes", same page) they go back to 0. The warning is the last event EC2 documents for
a block, so the scale-in happens then: it terminates the nodes up to ten minutes before EC2 would, and keeps the
group from trying to replace the instances EC2 terminates.

- EKS managed node groups (:class:`~fmconstructs.eks.GpuNodeGroup`): eks:DescribeNodegroup, then
  eks:UpdateNodegroupConfig ``scalingConfig`` {minSize, desiredSize} (max stays the template's) with a
  ``clientRequestToken`` derived from the event id (EKS API UpdateNodegroupConfig clientRequestToken: "A unique,
  case-sensitive identifier that you provide to ensure the idempotency of the request"), on that node group's ARN.
- Self-managed Auto Scaling groups (:class:`~fmconstructs.compute.GpuAutoScalingGroup`):
  autoscaling:UpdateAutoScalingGroup {MinSize, DesiredCapacity} on
  ``arn:<partition>:autoscaling:<region>:<account>:autoScalingGroup:*:autoScalingGroupName/<name>`` (the group's id
  in the ARN is not known in the template; aws-cdk-lib's AutoScalingGroup builds its ARN the same way,
  aws-autoscaling/lib/auto-scaling-group.js). Setting absolute sizes is idempotent.

Resource-level permissions for these actions (nodegroup ARN, autoScalingGroup ARN) are UNCONFIRMED: the Service
Authorization Reference pages were not opened while writing this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..capacity import Capacity, CapacityBlockScaling
from ..compute.fleet import GpuAutoScalingGroup
from ..eks import GpuNodeGroup
from ..errors import FmTypeError, FmValidationError
from .rules import a_scaling_target_scales_on_block_events

__all__ = ["AUTO_SCALING_GROUP", "EKS_NODEGROUP", "BlockScalingTarget", "scaling_target", "scaling_targets_json"]

#: ``kind`` of a target in the handler's SCALING_TARGETS environment variable.
EKS_NODEGROUP = "eks-nodegroup"
AUTO_SCALING_GROUP = "auto-scaling-group"


@dataclass(frozen=True)
class BlockScalingTarget:
    """One fleet the handler scales: its kind, names, block, size and the ARN its IAM statement names."""

    kind: str
    path: str
    reservation_id: str
    size: Any
    name: str
    cluster_name: str | None
    resource_arn: str

    def to_environment(self) -> dict[str, Any]:
        """The target as the handler reads it (tokens resolve at deploy time)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "path": self.path,
            "reservation": self.reservation_id,
            "size": self.size,
            "name": self.name,
        }
        if self.cluster_name is not None:
            out["cluster"] = self.cluster_name
        return out


def _block_reservation_id(parameter: str, capacity: Capacity) -> str:
    """The reservation id the block's events carry (``detail.capacity-reservation-id``)."""
    reservation_id = getattr(capacity, "reservation_id", None)
    if not isinstance(reservation_id, str):
        raise FmValidationError(
            f"{parameter}.capacity.reservation_id",
            None,
            "the block's reservation id (cr-...): Capacity Block events name the block by it (detail "
            "capacity-reservation-id), so a block given only by resource_group_arn cannot be matched",
        )
    return reservation_id


def _check_on_events(parameter: str, scaling: CapacityBlockScaling) -> None:
    a_scaling_target_scales_on_block_events(parameter=parameter, scaling=scaling)


def scaling_target(parameter: str, value: object) -> BlockScalingTarget:
    """A :class:`GpuNodeGroup` or :class:`GpuAutoScalingGroup` built with ``ON_BLOCK_EVENTS``, as a target."""
    if isinstance(value, GpuNodeGroup):
        _check_on_events(parameter, value.capacity_block_scaling)
        return BlockScalingTarget(
            kind=EKS_NODEGROUP,
            path=value.node.path,
            reservation_id=_block_reservation_id(parameter, value.capacity),
            size=value.max_nodes,
            name=value.node_group_name,
            cluster_name=value.cluster.cluster_name,
            resource_arn=value.nodegroup.nodegroup_arn,
        )
    if isinstance(value, GpuAutoScalingGroup):
        _check_on_events(parameter, value.capacity_block_scaling)
        name = value.auto_scaling_group_name
        return BlockScalingTarget(
            kind=AUTO_SCALING_GROUP,
            path=value.node.path,
            reservation_id=_block_reservation_id(parameter, value.launch_template.capacity),
            size=value.max_nodes,
            name=name,
            cluster_name=None,
            resource_arn=cdk.Stack.of(value).format_arn(
                service="autoscaling",
                resource="autoScalingGroup:*:autoScalingGroupName",
                resource_name=name,
            ),
        )
    raise FmTypeError(
        parameter,
        value,
        f"a GpuNodeGroup or GpuAutoScalingGroup built with CapacityBlockScaling.ON_BLOCK_EVENTS "
        f"(got a {type(value).__name__})",
    )


def scaling_targets_json(scope: Construct, targets: Sequence[BlockScalingTarget]) -> str:
    """The SCALING_TARGETS environment value: a JSON list (tokens become CloudFormation references)."""
    return cdk.Stack.of(scope).to_json_string([target.to_environment() for target in targets])


def grant_scaling(role: iam.IRole, targets: Sequence[BlockScalingTarget]) -> None:
    """Least privilege: the EKS actions on each node group's ARN, the Auto Scaling action on each group's ARN."""
    nodegroups = [t.resource_arn for t in targets if t.kind == EKS_NODEGROUP]
    groups = [t.resource_arn for t in targets if t.kind == AUTO_SCALING_GROUP]
    if nodegroups:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ScaleBlockNodegroups",
                actions=["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"],
                resources=nodegroups,
            )
        )
    if groups:
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ScaleBlockAutoScalingGroups", actions=["autoscaling:UpdateAutoScalingGroup"], resources=groups
            )
        )
