"""An EC2 placement group, kept separate from EFA so that it can be attached or skipped per capacity choice."""

from __future__ import annotations

from enum import Enum

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from .._validate import check_enum, check_number, known, located
from ..errors import FmValidationError
from . import rules


class PlacementStrategy(str, Enum):
    """``AWS::EC2::PlacementGroup.Strategy``."""

    CLUSTER = "cluster"
    PARTITION = "partition"
    SPREAD = "spread"


class ClusterPlacementGroup(Construct):
    """A placement group (default strategy ``cluster``) for GPU nodes.

    Optional and decoupled from EFA (terraform-aws-eks#3730): Capacity Blocks are already placed in UltraClusters
    and a placement group on top risks insufficient capacity, so the launch template attaches it only when asked.
    :attr:`placement_group_arn` lets a caller create an On-Demand Capacity Reservation inside the group.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        strategy: PlacementStrategy = PlacementStrategy.CLUSTER,
        partition_count: int | None = None,
    ) -> None:
        """
        :param strategy: ``cluster`` (default), ``partition`` or ``spread``.
        :param partition_count: partitions of a PARTITION group, 1-7 (may be a number token).
        """
        check_enum("strategy", strategy, PlacementStrategy)
        # EC2 User Guide "placement-strategies" (partition): at most seven partitions per Availability Zone.
        if partition_count is not None:
            partition_count = check_number("partition_count", partition_count, integer=True)
            rules.partition_count_needs_the_partition_strategy(partition_count=partition_count, strategy=strategy)
            if known(partition_count) and not 1 <= partition_count <= 7:
                raise FmValidationError("partition_count", partition_count, "between 1 and 7")
        super().__init__(scope, id)
        self.strategy = strategy
        self.resource = ec2.CfnPlacementGroup(
            self, "Resource", strategy=strategy.value, partition_count=partition_count
        )

    @property
    def placement_group_name(self) -> str:
        """The group's name (``Ref``), as ``Placement.GroupName`` in a launch template takes it."""
        return self.resource.ref

    @property
    def placement_group_arn(self) -> str:
        """``arn:...:ec2:region:account:placement-group/NAME`` (for ``PlacementGroupArn`` of a reservation)."""
        return Stack.of(self).format_arn(
            service="ec2",
            resource="placement-group",
            resource_name=self.placement_group_name,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    @property
    def placement_group(self) -> ec2.IPlacementGroup:
        """An L2 reference for APIs that take ``ec2.IPlacementGroup``."""
        return ec2.PlacementGroup.from_placement_group_name(self, "Ref", self.placement_group_name)


__all__ = ["ClusterPlacementGroup", "PlacementStrategy"]
