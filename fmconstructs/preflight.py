"""Run-time preflight checks for capacity (boto3; never called at import or synth time).

Synthesis makes no AWS calls, so a reservation's zone and size are known at synth time only if you state them
(``CapacityBlock(reservation_id=..., zone=..., instance_count=...)``). These helpers read them from EC2 once, in a
deploy pipeline or a notebook, so that you can pass them in (e.g. as CDK context) and let the constructs check the
subnet zone and node counts::

    info = describe_reservation("cr-0123...", ec2_client=boto3.client("ec2"))
    capacity = capacity_from_reservation(info)          # CapacityBlock/CapacityReservation with zone + count
    problems = check_capacity(capacity, "p5.48xlarge", max_nodes=2, info=info)

UltraServer Capacity Blocks: a reservation that belongs to a Capacity Block (``CapacityReservation.CapacityBlockId``)
is looked up with ``DescribeCapacityBlocks``, whose ``CapacityBlock.UltraserverType`` names the UltraServer type
(botocore ec2 service model, shapes ``CapacityReservation`` and ``CapacityBlock``); :func:`capacity_from_reservation`
then returns an :class:`~fmconstructs.capacity.UltraServerCapacityBlock`. :func:`describe_capacity_block` reads a
block by its ``cb-...`` id. Zones are reported by name (``zone``) and id (``zone_id``, ``AvailabilityZoneId``).

IAM: ``ec2:DescribeCapacityReservations``, plus ``ec2:DescribeCapacityBlocks`` for reservations in Capacity Blocks.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._validate import (
    NOT_GIVEN,
    RemovedAttribute,
    check_count,
    check_str,
    is_zone_id,
    known,
    removed_keywords,
    same_zone,
)
from ._validate_ids import CAPACITY_RESERVATION_ID
from .capacity import Capacity, CapacityBlock, CapacityReservation, UltraServerCapacityBlock
from .catalog import ULTRASERVERS, get_instance_spec
from .errors import FmTypeError, FmValidationError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

# States in which instances can (or soon will) launch into the reservation (DescribeCapacityReservations State).
USABLE_STATES = frozenset({"active", "scheduled", "pending", "payment-pending"})

# EC2 ids: a prefix, a hyphen, 8 or 17 characters of 0-9/a-f (EC2 User Guide "resource-ids"; the API's
# CapacityReservationId shape is a plain string). The CapacityBlockId shape is a plain string too and no AWS page
# seen shows its prefix (UNCONFIRMED "cb-"): any id without whitespace is sent.
_RESERVATION_ID = CAPACITY_RESERVATION_ID.pattern
_CAPACITY_BLOCK_ID = re.compile(r"\S+")


@dataclass(frozen=True, init=False)
class ReservationInfo:
    """What EC2 says about one capacity reservation (``DescribeCapacityReservations``)."""

    reservation_id: str
    instance_type: str
    zone: str
    """``AvailabilityZone``: the zone name (a Local Zone name for blocks sold there)."""
    total_instance_count: int
    available_instance_count: int
    state: str
    reservation_type: str
    """``default`` (an ODCR) or ``capacity-block``."""
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    placement_group_arn: str | None = None
    zone_id: str | None = None
    """``AvailabilityZoneId`` (``use1-az4``), when EC2 returns it."""
    capacity_block_id: str | None = None
    """``CapacityBlockId``: the Capacity Block the reservation belongs to, if any."""
    ultraserver_type: str | None = None
    """``CapacityBlock.UltraserverType`` of that block (``u-p6e-gb200x72``), None for instance blocks and ODCRs."""

    @removed_keywords("ReservationInfo", availability_zone="zone")
    def __init__(
        self,
        reservation_id: str,
        instance_type: str,
        zone: str = NOT_GIVEN,
        total_instance_count: int = NOT_GIVEN,
        available_instance_count: int = NOT_GIVEN,
        state: str = NOT_GIVEN,
        reservation_type: str = NOT_GIVEN,
        start_date: dt.datetime | None = None,
        end_date: dt.datetime | None = None,
        placement_group_arn: str | None = None,
        zone_id: str | None = None,
        capacity_block_id: str | None = None,
        ultraserver_type: str | None = None,
    ) -> None:
        required = {
            "zone": zone,
            "total_instance_count": total_instance_count,
            "available_instance_count": available_instance_count,
            "state": state,
            "reservation_type": reservation_type,
        }
        for name, value in required.items():
            if value is NOT_GIVEN:
                raise FmTypeError(name, None, "given (a required argument of ReservationInfo)")
        values = {
            "reservation_id": check_str("reservation_id", reservation_id),
            "instance_type": check_str("instance_type", instance_type),
            "zone": check_str("zone", zone),
            "total_instance_count": check_count("total_instance_count", total_instance_count),
            "available_instance_count": check_count("available_instance_count", available_instance_count),
            "state": check_str("state", state),
            "reservation_type": check_str("reservation_type", reservation_type),
            "start_date": _check_date("start_date", start_date),
            "end_date": _check_date("end_date", end_date),
            "placement_group_arn": _optional_str("placement_group_arn", placement_group_arn),
            "zone_id": _optional_str("zone_id", zone_id),
            "capacity_block_id": _optional_str("capacity_block_id", capacity_block_id),
            "ultraserver_type": _optional_str("ultraserver_type", ultraserver_type),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    availability_zone = RemovedAttribute("zone")

    @property
    def is_capacity_block(self) -> bool:
        return self.reservation_type == "capacity-block"

    @property
    def is_ultraserver_block(self) -> bool:
        return self.ultraserver_type is not None

    @property
    def ultraserver_count(self) -> int | None:
        """UltraServers in this reservation (its instances over the UltraServer's), for catalog UltraServer types.

        EC2 returns no UltraServer count for a block (``CapacityBlock`` has ``UltraserverType`` only): it is derived
        from ``TotalInstanceCount``, rounded up (UNCONFIRMED that a block's reservations always hold whole
        UltraServers).
        """
        if self.ultraserver_type is None or self.ultraserver_type not in ULTRASERVERS:
            return None
        per = ULTRASERVERS[self.ultraserver_type].instance_count
        return max(1, math.ceil(self.total_instance_count / per))


@dataclass(frozen=True)
class CapacityBlockInfo:
    """What EC2 says about one Capacity Block (``DescribeCapacityBlocks``)."""

    capacity_block_id: str
    zone: str | None
    """``AvailabilityZone``."""
    zone_id: str | None
    """``AvailabilityZoneId``."""
    ultraserver_type: str | None
    """``UltraserverType``: None for a block of instances."""
    reservation_ids: tuple[str, ...]
    """``CapacityReservationIds``."""
    state: str | None
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None


def _check_date(parameter: str, value: object) -> dt.datetime | None:
    if value is not None and not isinstance(value, dt.datetime):
        raise FmTypeError(parameter, value, "a datetime.datetime or None")
    return value


def _optional_str(parameter: str, value: object) -> str | None:
    return None if value is None else str(check_str(parameter, value))


def _check_client(ec2_client: object) -> None:
    if not hasattr(ec2_client, "describe_capacity_reservations"):
        raise FmTypeError("ec2_client", ec2_client, "a boto3 EC2 client (boto3.client('ec2'))")


def _check_known_str(parameter: str, value: object, pattern: re.Pattern[str], allowed: str) -> str:
    checked = check_str(parameter, value, pattern=pattern, allowed=allowed)
    if not known(checked):
        raise FmValidationError(parameter, value, f"{allowed}, known when preflight runs (not a CDK token)")
    return str(checked)


def describe_capacity_block(capacity_block_id: str, *, ec2_client: EC2Client) -> CapacityBlockInfo:
    """Read one Capacity Block (``DescribeCapacityBlocks``); raises :class:`FmValidationError` if EC2 does not know
    it. UltraServer blocks carry ``ultraserver_type``; read their reservations with :func:`describe_reservation`."""
    block_id = _check_known_str(
        "capacity_block_id", capacity_block_id, _CAPACITY_BLOCK_ID, "a Capacity Block id (CapacityBlockId)"
    )
    _check_client(ec2_client)
    response: Any = ec2_client.describe_capacity_blocks(CapacityBlockIds=[block_id])
    items = response.get("CapacityBlocks", [])
    if not items:
        raise FmValidationError("capacity_block_id", block_id, "an existing Capacity Block in this region")
    return _block_info(items[0])


def _block_info(item: Any) -> CapacityBlockInfo:
    return CapacityBlockInfo(
        capacity_block_id=item["CapacityBlockId"],
        zone=item.get("AvailabilityZone"),
        zone_id=item.get("AvailabilityZoneId"),
        ultraserver_type=item.get("UltraserverType"),
        reservation_ids=tuple(item.get("CapacityReservationIds", ())),
        state=item.get("State"),
        start_date=item.get("StartDate"),
        end_date=item.get("EndDate"),
    )


def describe_reservation(reservation_id: str, *, ec2_client: EC2Client) -> ReservationInfo:
    """Read one reservation; raises :class:`FmValidationError` if EC2 does not know it.

    A reservation in a Capacity Block (``CapacityBlockId``) is completed from ``DescribeCapacityBlocks``: the
    block's ``UltraserverType`` (None for a block of instances) and, where the reservation lacks them, its zone
    name and id.
    """
    rid = _check_known_str(
        "reservation_id", reservation_id, _RESERVATION_ID, "a capacity reservation id like 'cr-0123456789abcdef0'"
    )
    _check_client(ec2_client)
    response: Any = ec2_client.describe_capacity_reservations(CapacityReservationIds=[rid])
    items = response.get("CapacityReservations", [])
    if not items:
        raise FmValidationError("reservation_id", rid, "an existing capacity reservation in this region")
    r = items[0]
    block: CapacityBlockInfo | None = None
    block_id = r.get("CapacityBlockId")
    if block_id:
        blocks: Any = ec2_client.describe_capacity_blocks(CapacityBlockIds=[block_id])
        found = blocks.get("CapacityBlocks", [])
        block = _block_info(found[0]) if found else None
    return ReservationInfo(
        reservation_id=r["CapacityReservationId"],
        instance_type=r["InstanceType"],
        zone=r.get("AvailabilityZone") or (block.zone if block else None) or "",
        total_instance_count=int(r["TotalInstanceCount"]),
        available_instance_count=int(r.get("AvailableInstanceCount", 0)),
        state=r["State"],
        reservation_type=r.get("ReservationType", "default"),
        start_date=r.get("StartDate"),
        end_date=r.get("EndDate"),
        placement_group_arn=r.get("PlacementGroupArn"),
        zone_id=r.get("AvailabilityZoneId") or (block.zone_id if block else None),
        capacity_block_id=block_id or None,
        ultraserver_type=block.ultraserver_type if block else None,
    )


def _check_info(info: object) -> ReservationInfo:
    if not isinstance(info, ReservationInfo):
        raise FmTypeError("info", info, "a ReservationInfo (fmconstructs.preflight.describe_reservation)")
    return info


def capacity_from_reservation(info: ReservationInfo) -> Capacity:
    """The capacity choice for a reservation, with its zone and size filled in for synth-time checks: an
    :class:`UltraServerCapacityBlock` for a reservation in an UltraServer block, a :class:`CapacityBlock` for an
    instance block, else a :class:`CapacityReservation`."""
    info = _check_info(info)
    if info.ultraserver_type in ULTRASERVERS:
        return UltraServerCapacityBlock(
            reservation_id=info.reservation_id,
            ultraserver_type=str(info.ultraserver_type),
            ultraserver_count=info.ultraserver_count or 1,
            zone=info.zone,
        )
    cls = CapacityBlock if info.is_capacity_block else CapacityReservation
    return cls(reservation_id=info.reservation_id, instance_count=info.total_instance_count, zone=info.zone)


@removed_keywords("check_capacity", node_count="max_nodes")
def check_capacity(
    capacity: Capacity,
    instance_type: str,
    *,
    max_nodes: int = NOT_GIVEN,
    info: ReservationInfo,
) -> list[str]:
    """Problems that would make a fleet of up to ``max_nodes`` ``instance_type`` nodes fail to launch; empty if none.

    :param max_nodes: the fleet's largest size.
    """
    if max_nodes is NOT_GIVEN:
        raise FmTypeError("max_nodes", None, "a number of nodes (a required keyword argument)")
    nodes = check_count("max_nodes", max_nodes, minimum=1)
    if not known(nodes):
        raise FmValidationError("max_nodes", nodes, "a number known when preflight runs (not a CDK token)")
    if not isinstance(capacity, Capacity):
        raise FmTypeError("capacity", capacity, "a Capacity (CapacityReservation, CapacityBlock, ...)")
    check_str("instance_type", instance_type)
    info = _check_info(info)
    get_instance_spec(instance_type)
    problems: list[str] = []
    if info.instance_type != instance_type:
        problems.append(f"{info.reservation_id} reserves {info.instance_type}, not {instance_type}")
    if nodes > info.total_instance_count:
        problems.append(f"{nodes} nodes exceed the {info.total_instance_count} instances of {info.reservation_id}")
    if info.state not in USABLE_STATES:
        problems.append(f"{info.reservation_id} is {info.state}; instances launch only into {sorted(USABLE_STATES)}")
    if capacity.is_capacity_block != info.is_capacity_block:
        wanted = "a Capacity Block" if capacity.is_capacity_block else "an On-Demand Capacity Reservation"
        problems.append(f"the fleet is configured for {wanted} but {info.reservation_id} is {info.reservation_type}")
    problems.extend(_ultraserver_problems(capacity, info))
    zone = capacity.zone
    if known(zone):
        assert zone is not None
        theirs = info.zone_id if is_zone_id(zone) else info.zone
        if same_zone(zone, theirs) is False:
            where = info.zone if info.zone_id is None else f"{info.zone} ({info.zone_id})"
            problems.append(f"the fleet is pinned to {zone} but {info.reservation_id} is in {where}")
    return problems


def _ultraserver_problems(capacity: Capacity, info: ReservationInfo) -> list[str]:
    if isinstance(capacity, UltraServerCapacityBlock):
        if info.ultraserver_type is None:
            return [
                f"the fleet is configured for an UltraServer Capacity Block but {info.reservation_id} is not in one"
            ]
        if info.ultraserver_type != capacity.ultraserver_type:
            return [
                f"the fleet is configured for {capacity.ultraserver_type} UltraServers but {info.reservation_id} "
                f"holds {info.ultraserver_type}"
            ]
    elif info.ultraserver_type is not None:
        return [
            f"{info.reservation_id} is in a {info.ultraserver_type} UltraServer Capacity Block: use "
            "UltraServerCapacityBlock"
        ]
    return []


def block_end_problem(
    info: ReservationInfo, *, training_window_hours: float, now: dt.datetime | None = None
) -> str | None:
    """A warning when ``info`` ends before a training run of ``training_window_hours`` started ``now`` would finish.

    EC2 terminates the instances of a Capacity Block when it ends (EC2 API Reference ``CapacityBlock.endDate``:
    "When a Capacity Block expires, all instances in the Capacity Block are terminated"); an On-Demand Capacity
    Reservation with an ``EndDate`` stops reserving capacity then. None when the reservation has no end date or outlives
    the window. A scheduled reservation's window starts at its ``StartDate`` when that is later than ``now``.
    """
    from ._validate import check_number  # appended helper; keeps the module's import block unchanged

    info = _check_info(info)
    hours = check_number("training_window_hours", training_window_hours, minimum=0, exclusive_minimum=True)
    if not known(hours):
        raise FmValidationError("training_window_hours", hours, "a number of hours known when preflight runs")
    if info.end_date is None:
        return None
    if now is not None and not isinstance(now, dt.datetime):
        raise FmTypeError("now", now, "a datetime.datetime or None")
    start = now or dt.datetime.now(dt.UTC)
    since = "now"
    if info.start_date is not None and info.start_date > start:
        start, since = info.start_date, "it starts"
    finish = start + dt.timedelta(hours=float(hours))
    if info.end_date >= finish:
        return None
    left = max((info.end_date - start).total_seconds() / 3600, 0.0)
    kind = "Capacity Block" if info.is_capacity_block else "capacity reservation"
    return (
        f"{info.reservation_id} ({kind}) ends {info.end_date.isoformat()}, {left:,.1f} h after "
        f"{since}: shorter than the {float(hours):,.1f} h training window"
    )
