"""``fmc capacity``'s EC2 calls and the Capacity Block extension rules (no click, no rendering, no aws_cdk).

Calls (field names as botocore 1.44's EC2 service model spells them):

- ``DescribeCapacityReservations`` (paginated): ``CapacityReservationId``, ``ReservationType`` (``default`` |
  ``capacity-block``), ``CapacityBlockId``, ``InstanceType``, ``TotalInstanceCount``, ``AvailableInstanceCount``,
  ``AvailabilityZone``, ``StartDate``, ``EndDate``, ``State``. The API's ``Filters`` have no reservation-type filter,
  so ``fmc capacity blocks`` keeps ``ReservationType == "capacity-block"`` itself;
- ``DescribeCapacityBlockExtensionOfferings`` (paginated; required ``CapacityReservationId`` and
  ``CapacityBlockExtensionDurationHours``): ``CapacityBlockExtensionOfferingId``, ``InstanceType``, ``InstanceCount``,
  ``AvailabilityZone``, ``CapacityBlockExtensionStartDate`` ("the same as the end date of the Capacity Block that will
  be extended"), ``CapacityBlockExtensionEndDate`` (the new end), ``CapacityBlockExtensionDurationHours``,
  ``UpfrontFee`` (a string), ``CurrencyCode``;
- ``PurchaseCapacityBlockExtension`` (``CapacityBlockExtensionOfferingId``, ``CapacityReservationId``, ``DryRun``):
  ``CapacityBlockExtensions[]`` with ``CapacityBlockExtensionStatus`` (``payment-pending`` | ``payment-failed`` |
  ``payment-succeeded``) and ``CapacityBlockExtensionEndDate``. With ``DryRun`` EC2 answers the error
  ``DryRunOperation`` when the caller may buy, ``UnauthorizedOperation`` when not (the ``DryRun`` member's doc).

Extension rules, EC2 User Guide "Extend Capacity Blocks"
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-extend.html): the block must be ``active`` or
``scheduled`` with no extension ``payment-pending``; an extension can be requested from 56 days until 1 hour before
the block expires; it lasts 1-14 days in 1-day steps or up to 182 days in 7-day steps; the reservation id stays the
same and the end date moves when the payment succeeds; a payment not processed within 12 hours, or by 35 minutes before
the block ends, fails (``payment-failed``) and the block ends at its original end date. EC2 enforces them: fmc reads
the reservation and writes what it sees as notes, then lets the API answer (:func:`extension_notes`).

IAM: ``ec2:DescribeCapacityReservations``, ``ec2:DescribeCapacityBlockExtensionOfferings``,
``ec2:PurchaseCapacityBlockExtension`` (only with ``--yes`` or ``--dry-run``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from .._validate_ids import CAPACITY_RESERVATION_ID
from .aws_call import AwsFailure, call_aws
from .errors import ExitCode, FmcError

T = TypeVar("T")

#: EC2 ids: ``cr-`` and 8 or 17 hex digits (EC2 User Guide "resource-ids"; the same pattern as
#: fmconstructs.preflight._RESERVATION_ID).
RESERVATION_ID = CAPACITY_RESERVATION_ID.pattern
#: The ``OfferingId`` shape is a plain string and no AWS page seen shows an extension offering id: letters, digits and
#: hyphens are accepted (UNCONFIRMED format; anything else would not be an id EC2 returned).
OFFERING_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,127}")
#: Reservation states in which a block can be extended (EC2 User Guide capacity-blocks-extend).
EXTENDABLE_STATES = frozenset({"active", "scheduled"})
#: An extension can be requested at most this long before the block expires (same page: "a maximum of 56 days").
EXTEND_EARLIEST_BEFORE_END = dt.timedelta(days=56)
#: ... and at least this long before it expires (same page: "a minimum of 1 hour").
EXTEND_LATEST_BEFORE_END = dt.timedelta(hours=1)
#: A pending payment fails when not processed by this long before the block ends (same page, "Billing").
PAYMENT_DEADLINE_BEFORE_END = dt.timedelta(minutes=35)
#: States ``fmc capacity blocks`` hides without ``--all``: the block is over or never started
#: (DescribeCapacityReservations ``State`` enum).
ENDED_STATES = frozenset({"expired", "cancelled", "failed", "payment-failed"})
#: EC2's answer to a ``DryRun`` request that would have succeeded (EC2 API ``DryRun`` member documentation).
DRY_RUN_OK = "DryRunOperation"


def _exit_with(code: ExitCode) -> Callable[[str], FmcError]:
    return lambda message: FmcError(message, code)


#: ``fmc capacity``: a failed call ends ``fmc`` (1 for an error AWS answered, 5 when no AWS answer came).
_AS_EXIT = AwsFailure(
    answered=_exit_with(ExitCode.CHECKS_FAILED),
    unreachable=_exit_with(ExitCode.AWS_SETUP),
    not_aws="{action}: the answer is not an AWS response: {error}",
)


def call(action: str, fn: Callable[..., T], **kwargs: Any) -> T:
    """``fn(**kwargs)``; every failure ends ``fmc`` with one line: 4 for missing or refused credentials, 5 for an
    endpoint that cannot be reached or does not answer like AWS, 1 for an error AWS answered (not found, missing
    permission, throttling, no capacity...)."""
    return call_aws(action, fn, _AS_EXIT, **kwargs)


def _iso(value: object) -> str | None:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat(timespec="seconds")
    return None if value is None else str(value)


@dataclass(frozen=True)
class Block:
    """One Capacity Block reservation (DescribeCapacityReservations)."""

    reservation_id: str
    capacity_block_id: str | None
    instance_type: str
    instance_count: int | None
    available_count: int | None
    zone: str | None
    state: str
    start: dt.datetime | None
    end: dt.datetime | None

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> Block:
        return cls(
            reservation_id=str(item["CapacityReservationId"]),
            capacity_block_id=item.get("CapacityBlockId"),
            instance_type=str(item.get("InstanceType", "-")),
            instance_count=item.get("TotalInstanceCount"),
            available_count=item.get("AvailableInstanceCount"),
            zone=item.get("AvailabilityZone"),
            state=str(item.get("State", "-")),
            start=item.get("StartDate"),
            end=item.get("EndDate"),
        )

    def to_json(self, now: dt.datetime, *, is_block: bool = True) -> dict[str, Any]:
        return {
            "reservation_id": self.reservation_id,
            "capacity_block_id": self.capacity_block_id,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "available_instance_count": self.available_count,
            "availability_zone": self.zone,
            "state": self.state,
            "start_date": _iso(self.start),
            "end_date": _iso(self.end),
            "extendable_now": not extension_notes(self, now, is_block=is_block),
        }


def extension_notes(block: Block, now: dt.datetime, *, is_block: bool = True) -> list[str]:
    """Why EC2 would refuse to extend ``block`` now, per the EC2 User Guide (capacity-blocks-extend); empty when
    nothing seen says so. Not a verdict: EC2 decides (and may have pending extensions fmc does not read)."""
    notes: list[str] = []
    if not is_block:
        notes.append(f"{block.reservation_id} is not a Capacity Block (ReservationType default): only blocks extend")
    if block.state not in EXTENDABLE_STATES:
        notes.append(f"state {block.state}: a block extends only when active or scheduled")
    if block.end is not None:
        left = block.end - now
        if left < EXTEND_LATEST_BEFORE_END:
            notes.append(f"ends {_iso(block.end)}: extensions can be requested until 1 hour before the end")
        elif left > EXTEND_EARLIEST_BEFORE_END:
            opens = block.end - EXTEND_EARLIEST_BEFORE_END
            notes.append(f"ends {_iso(block.end)}: extensions can be requested from 56 days before, {_iso(opens)}")
    return notes


def list_blocks(ec2: Any, *, include_ended: bool) -> list[Block]:
    """The account's Capacity Block reservations in the client's region, by end date."""

    def read() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in ec2.get_paginator("describe_capacity_reservations").paginate():
            items.extend(page.get("CapacityReservations", []))
        return items

    items = call("ec2:DescribeCapacityReservations", read)
    blocks = [Block.from_api(i) for i in items if i.get("ReservationType") == "capacity-block"]
    if not include_ended:
        blocks = [b for b in blocks if b.state not in ENDED_STATES]
    far = dt.datetime.max.replace(tzinfo=dt.UTC)
    return sorted(blocks, key=lambda b: (b.end or far, b.reservation_id))


def describe_reservation(ec2: Any, reservation_id: str, *, hint: str = "") -> dict[str, Any]:
    """The reservation as ec2:DescribeCapacityReservations answers; exit 1 when this region has none by that id
    (``hint`` ends the message)."""
    response = call(
        "ec2:DescribeCapacityReservations",
        ec2.describe_capacity_reservations,
        CapacityReservationIds=[reservation_id],
    )
    items = response.get("CapacityReservations", [])
    if not items:
        raise FmcError(
            f"capacity reservation {reservation_id} not found in this region: check --region and the id{hint}",
            ExitCode.CHECKS_FAILED,
        )
    item: dict[str, Any] = items[0]
    return item


def read_reservation(ec2: Any, reservation_id: str) -> tuple[Block, bool]:
    """(the reservation, whether it is a Capacity Block)."""
    item = describe_reservation(ec2, reservation_id, hint=" (fmc capacity blocks lists yours)")
    return Block.from_api(item), item.get("ReservationType") == "capacity-block"


@dataclass(frozen=True)
class Offering:
    """One Capacity Block extension offering."""

    offering_id: str
    instance_type: str | None
    instance_count: int | None
    zone: str | None
    current_end: dt.datetime | None
    new_end: dt.datetime | None
    duration_hours: int | None
    upfront_fee: str | None
    currency: str | None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_api(cls, item: dict[str, Any]) -> Offering:
        return cls(
            offering_id=str(item["CapacityBlockExtensionOfferingId"]),
            instance_type=item.get("InstanceType"),
            instance_count=item.get("InstanceCount"),
            zone=item.get("AvailabilityZone"),
            current_end=item.get("CapacityBlockExtensionStartDate"),
            new_end=item.get("CapacityBlockExtensionEndDate"),
            duration_hours=item.get("CapacityBlockExtensionDurationHours"),
            upfront_fee=item.get("UpfrontFee"),
            currency=item.get("CurrencyCode"),
            raw=item,
        )

    @property
    def price(self) -> str:
        return f"{self.upfront_fee} {self.currency or ''}".strip() if self.upfront_fee is not None else "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "offering_id": self.offering_id,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "availability_zone": self.zone,
            "current_end_date": _iso(self.current_end),
            "new_end_date": _iso(self.new_end),
            "duration_hours": self.duration_hours,
            "upfront_fee": self.upfront_fee,
            "currency_code": self.currency,
        }


def extension_offerings(ec2: Any, reservation_id: str, *, days: int) -> list[Offering]:
    """The extension offerings of ``days`` days for the block ``reservation_id``."""

    def read() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        pages = ec2.get_paginator("describe_capacity_block_extension_offerings").paginate(
            CapacityReservationId=reservation_id, CapacityBlockExtensionDurationHours=days * 24
        )
        for page in pages:
            items.extend(page.get("CapacityBlockExtensionOfferings", []))
        return items

    return [Offering.from_api(i) for i in call("ec2:DescribeCapacityBlockExtensionOfferings", read)]


def purchase(ec2: Any, reservation_id: str, offering_id: str, *, dry_run: bool) -> list[dict[str, Any]] | None:
    """Buy ``offering_id`` for ``reservation_id``: the purchased extensions, or None for a dry run EC2 allowed."""
    action = "ec2:PurchaseCapacityBlockExtension"

    def buy() -> dict[str, Any] | None:
        try:
            response: dict[str, Any] = ec2.purchase_capacity_block_extension(
                CapacityBlockExtensionOfferingId=offering_id, CapacityReservationId=reservation_id, DryRun=dry_run
            )
        except ClientError as error:
            if dry_run and error.response.get("Error", {}).get("Code") == DRY_RUN_OK:
                return None
            raise
        return response

    response = call(action, buy)
    if response is None:
        return None
    if dry_run:
        raise FmcError(f"{action} with DryRun answered without {DRY_RUN_OK}: nothing is known", ExitCode.AWS_SETUP)
    return [
        {
            "reservation_id": e.get("CapacityReservationId"),
            "offering_id": e.get("CapacityBlockExtensionOfferingId"),
            "status": e.get("CapacityBlockExtensionStatus"),
            "new_end_date": _iso(e.get("CapacityBlockExtensionEndDate")),
            "duration_hours": e.get("CapacityBlockExtensionDurationHours"),
            "upfront_fee": e.get("UpfrontFee"),
            "currency_code": e.get("CurrencyCode"),
        }
        for e in response.get("CapacityBlockExtensions", [])
    ]
