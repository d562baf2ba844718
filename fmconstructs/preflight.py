"""Run-time preflight checks for capacity (boto3; never called at import or synth time).

Synthesis makes no AWS calls, so a reservation's zone and size are known at synth time only if you state them
(``CapacityBlock(reservation_id=..., zone=..., instance_count=...)``). These helpers read them from EC2 once, in a
deploy pipeline or a notebook, so that you can pass them in (e.g. as CDK context) and let the constructs check the
subnet zone and node counts::

    info = describe_reservation("cr-0123...", ec2_client=boto3.client("ec2"))
    capacity = capacity_from_reservation(info)          # CapacityBlock/CapacityReservation with zone + count
    problems = check_capacity(capacity, "p5.48xlarge", node_count=2, info=info)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .capacity import Capacity, CapacityBlock, CapacityReservation
from .catalog import get_instance_spec
from .errors import FmValidationError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

# States in which instances can (or soon will) launch into the reservation (DescribeCapacityReservations State).
USABLE_STATES = frozenset({"active", "scheduled", "pending", "payment-pending"})


@dataclass(frozen=True)
class ReservationInfo:
    """What EC2 says about one capacity reservation (``DescribeCapacityReservations``)."""

    reservation_id: str
    instance_type: str
    availability_zone: str
    total_instance_count: int
    available_instance_count: int
    state: str
    reservation_type: str
    """``default`` (an ODCR) or ``capacity-block``."""
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    placement_group_arn: str | None = None

    @property
    def is_capacity_block(self) -> bool:
        return self.reservation_type == "capacity-block"


def describe_reservation(reservation_id: str, *, ec2_client: EC2Client) -> ReservationInfo:
    """Read one reservation; raises :class:`FmValidationError` if EC2 does not know it."""
    response: Any = ec2_client.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    items = response.get("CapacityReservations", [])
    if not items:
        raise FmValidationError("reservation_id", reservation_id, "an existing capacity reservation in this region")
    r = items[0]
    return ReservationInfo(
        reservation_id=r["CapacityReservationId"],
        instance_type=r["InstanceType"],
        availability_zone=r["AvailabilityZone"],
        total_instance_count=int(r["TotalInstanceCount"]),
        available_instance_count=int(r.get("AvailableInstanceCount", 0)),
        state=r["State"],
        reservation_type=r.get("ReservationType", "default"),
        start_date=r.get("StartDate"),
        end_date=r.get("EndDate"),
        placement_group_arn=r.get("PlacementGroupArn"),
    )


def capacity_from_reservation(info: ReservationInfo) -> Capacity:
    """The capacity choice for a reservation, with its zone and size filled in for synth-time checks."""
    cls = CapacityBlock if info.is_capacity_block else CapacityReservation
    return cls(
        reservation_id=info.reservation_id, instance_count=info.total_instance_count, zone=info.availability_zone
    )


def check_capacity(capacity: Capacity, instance_type: str, *, node_count: int, info: ReservationInfo) -> list[str]:
    """Problems that would make a fleet of ``node_count`` ``instance_type`` nodes fail to launch; empty if none."""
    get_instance_spec(instance_type)
    problems: list[str] = []
    if info.instance_type != instance_type:
        problems.append(f"{info.reservation_id} reserves {info.instance_type}, not {instance_type}")
    if node_count > info.total_instance_count:
        problems.append(f"{node_count} nodes exceed the {info.total_instance_count} instances of {info.reservation_id}")
    if info.state not in USABLE_STATES:
        problems.append(f"{info.reservation_id} is {info.state}; instances launch only into {sorted(USABLE_STATES)}")
    if capacity.is_capacity_block != info.is_capacity_block:
        wanted = "a Capacity Block" if capacity.is_capacity_block else "an On-Demand Capacity Reservation"
        problems.append(f"the fleet is configured for {wanted} but {info.reservation_id} is {info.reservation_type}")
    zone = capacity.availability_zone
    if zone is not None and zone != info.availability_zone:
        problems.append(f"the fleet is pinned to {zone} but {info.reservation_id} is in {info.availability_zone}")
    return problems
