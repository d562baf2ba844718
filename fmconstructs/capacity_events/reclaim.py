"""Reclaim warnings of interruptible Capacity Reservations for :class:`.CapacityBlockEvents`.

EC2 sends "EC2 Capacity Reservation Instance Interruption Warning" (source ``aws.ec2``) to the account running an
instance in an interruptible reservation 2 minutes before the instance is terminated, when the reservation's owner
reclaims capacity (EC2 User Guide "Monitor interruptible Capacity Reservations with EventBridge and CloudTrail",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html; PCS User Guide "Using I-ODCRs with
AWS PCS", capacity-reservations-iodcr: "Consumer instances receive a 2-minute termination warning"). Its ``detail``
names the instance (``instance-id``, ``instance-termination-time``), not the reservation, so the rule cannot filter by
reservation: it matches the detail-type, and the handler reads the instance's ``CapacityReservationId``
(ec2:DescribeInstances) and acts only on the reservations listed in ``interruptible_reservation_ids``
(:mod:`fmconstructs.capacity_events.handler.reclaim`). The action is the Capacity Block drain (Slurm, through SSM on
the PCS login node) and cordon (EKS), with the job warning when configured, on that one instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam

from .delivery import handler_rule
from .handler.reclaim import RECLAIM_DETAIL_TYPES
from .patterns import check_reservation_ids

__all__ = ["RECLAIM_DETAIL_TYPES", "add_reclaim_rule", "check_interruptible_ids", "reclaim_pattern"]


def check_interruptible_ids(value: object) -> tuple[str, ...]:
    """``interruptible_reservation_ids``: one or more distinct reservation ids (deploy-time values accepted)."""
    return check_reservation_ids(
        "interruptible_reservation_ids", value, allowed="an interruptible capacity reservation id (cr-<hex>)"
    )


def reclaim_pattern() -> dict[str, Any]:
    """The event pattern of the reclaim warning (source and detail-type, as the EC2 User Guide's example event)."""
    return {"source": ["aws.ec2"], "detail-type": list(RECLAIM_DETAIL_TYPES)}


def add_reclaim_rule(owner: Any, reservation_ids: Sequence[str]) -> events.Rule:
    """The rule on reclaim warnings targeting ``owner.function`` (retries and dead-letter queue as the block rules),
    the handler's INTERRUPTIBLE_RESERVATION_IDS setting, and ec2:DescribeInstances to read the warned instance."""
    owner.function.add_environment(
        "INTERRUPTIBLE_RESERVATION_IDS", cdk.Stack.of(owner).to_json_string(list(reservation_ids))
    )
    # ec2:DescribeInstances has no resource-level permissions (the same "*" as the block drain's statement).
    owner.role.add_to_policy(
        iam.PolicyStatement(sid="ReadReclaimedInstance", actions=["ec2:DescribeInstances"], resources=["*"])
    )
    return handler_rule(
        owner,
        "ReclaimRule",
        description="EC2 interruptible Capacity Reservation: instance interruption warning (2 minutes)",
        pattern=reclaim_pattern(),
        function=owner.function,
        dead_letter_queue=owner.failure_queue,
    )
