"""When the handler runs a block's expiry actions: per-kind lead times and an EventBridge Scheduler one-time schedule.

Standard library + boto3 only (Lambda). EC2's "Capacity Block Expiration Warning" comes forty minutes before the end
(EC2 User Guide capacity-blocks-monitor); a lead time longer than that (UltraServer blocks, see
:mod:`fmconstructs.capacity_events.lead_times`) cannot be met by the event, so:

- on "Capacity Block Delivered", the handler reads the block (ec2:DescribeCapacityReservations ``EndDate`` and
  ``CapacityBlockId``; ec2:DescribeCapacityBlocks ``UltraserverType``: set for an UltraServer block) and, when the
  lead for its kind is longer than 40 minutes, creates a one-time schedule (EventBridge Scheduler CreateSchedule:
  ``ScheduleExpression`` ``at(yyyy-mm-ddThh:mm:ss)`` "one-time schedules that invoke a target once", with
  ``ScheduleExpressionTimezone`` UTC, ``FlexibleTimeWindow`` OFF, ``ActionAfterCompletion`` DELETE: "EventBridge
  Scheduler deletes the schedule after its last target invocation", Scheduler User Guide managing-schedule-delete)
  that invokes this function at ``end - lead`` with :func:`due_event` as ``Target.Input`` ("If you are configuring a
  templated Lambda ... target, the input must be a well-formed JSON": botocore scheduler model, Target.Input);
- when that event arrives, the block is read again: an extended block (same reservation id, later ``EndDate``) is
  scheduled again for its new end and nothing else happens; otherwise the expiry actions run;
- EC2's warning still runs the expiry actions (a safety net for a block delivered before the handler existed or a
  schedule that failed): the drain, the cordon and the pod warning are idempotent; Slurm jobs get the signal again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

#: The source and detail-type of the scheduled "expiry due" event (the handler's own; not an EC2 event).
DUE_SOURCE = "fmconstructs.capacity-events"
DUE_DETAIL_TYPE = "fmconstructs Capacity Block Expiry Due"
INSTANCES, ULTRASERVER = "instances", "ultraserver"
#: The EC2 warning's lead, in minutes (capacity-blocks-monitor: "Forty minutes before").
WARNING_MINUTES = 40
# A schedule less than this far ahead is not created: the time has come, the expiry actions run now.
MIN_AHEAD = dt.timedelta(minutes=2)
# An EndDate this much later than the scheduled one means the block was extended.
EXTENDED_SLACK = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class LeadSettings:
    """The handler's LEAD_MINUTES / SCHEDULE_* settings; ``function_arn`` from the Lambda context."""

    lead_minutes: dict[str, int]
    group: str = ""
    role_arn: str = ""
    function_arn: str = ""

    def lead_for(self, kind: str) -> int:
        return int(self.lead_minutes.get(kind, WARNING_MINUTES))


@dataclass
class Timing:
    """Whether the expiry actions run now, and what to say about it."""

    expiring: bool
    lines: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


def parse_time(value: object) -> dt.datetime | None:
    """A datetime (boto3 answers) or ISO 8601 text (event fields) as an aware UTC datetime, or None."""
    if isinstance(value, dt.datetime):
        when = value
    else:
        try:
            when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def describe_block(ec2: Any, reservation_id: str) -> tuple[str, dt.datetime | None]:
    """(kind, EndDate) of a Capacity Block's reservation."""
    found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id]).get("CapacityReservations")
    reservation = (found or [{}])[0]
    end = parse_time(reservation.get("EndDate")) if reservation.get("EndDate") else None
    block_id = str(reservation.get("CapacityBlockId") or "")
    if not block_id:
        return INSTANCES, end
    blocks = ec2.describe_capacity_blocks(CapacityBlockIds=[block_id]).get("CapacityBlocks") or [{}]
    return (ULTRASERVER if blocks[0].get("UltraserverType") else INSTANCES), end


def due_event(reservation_id: str, end: dt.datetime, kind: str, lead_minutes: int) -> dict[str, Any]:
    """The event the schedule delivers (shaped like EC2's, so that the handler reads it the same way)."""
    return {
        "source": DUE_SOURCE,
        "detail-type": DUE_DETAIL_TYPE,
        "detail": {
            "capacity-reservation-id": reservation_id,
            "end-date": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "kind": kind,
            "lead-minutes": lead_minutes,
        },
    }


def schedule_name(reservation_id: str, at: dt.datetime) -> str:
    """``<reservation>-expiry-<UTC minute>``: at most 64 characters of [0-9a-zA-Z-_.] (CreateSchedule Name)."""
    return f"{reservation_id}-expiry-{at:%Y%m%dT%H%M}"


def schedule_expiry(
    scheduler: Any, settings: LeadSettings, *, reservation_id: str, kind: str, end: dt.datetime, now: dt.datetime
) -> str:
    """Create the one-time schedule at ``end - lead``; returns a line for the notice."""
    lead = settings.lead_for(kind)
    at = end - dt.timedelta(minutes=lead)
    if at - now < MIN_AHEAD:
        return f"Expiry actions due now ({kind} block, lead {lead} min): not scheduled."
    name = schedule_name(reservation_id, at)
    token = hashlib.sha256(name.encode()).hexdigest()[:64]
    try:
        scheduler.create_schedule(
            Name=name,
            GroupName=settings.group,
            ScheduleExpression=f"at({at:%Y-%m-%dT%H:%M:%S})",
            ScheduleExpressionTimezone="UTC",
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Description=f"fmconstructs: expiry actions of {reservation_id} {lead} min before its end"[:512],
            ClientToken=token,
            Target={
                "Arn": settings.function_arn,
                "RoleArn": settings.role_arn,
                "Input": json.dumps(due_event(reservation_id, end, kind, lead)),
                "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 600},
            },
        )
    except ClientError as error:
        if str(error.response.get("Error", {}).get("Code", "")) != "ConflictException":
            raise
        return f"Expiry actions already scheduled at {at:%Y-%m-%dT%H:%M}Z (schedule {name})."
    return f"Expiry actions scheduled at {at:%Y-%m-%dT%H:%M}Z, {lead} min before the end ({kind} block; {name})."


def expiry_timing(
    event: dict[str, Any],
    *,
    ec2: Any,
    scheduler: Any,
    settings: LeadSettings,
    delivered: bool,
    warning: bool,
    now: dt.datetime | None = None,
) -> Timing:
    """Decide, for one event, whether the expiry actions run now (and schedule them when they cannot wait)."""
    now = now or dt.datetime.now(dt.UTC)
    detail = event.get("detail") or {}
    reservation_id = str(detail.get("capacity-reservation-id") or "")
    due = event.get("source") == DUE_SOURCE and event.get("detail-type") == DUE_DETAIL_TYPE
    if not (delivered or warning or due):
        return Timing(expiring=False)
    if not due and max(settings.lead_minutes.values(), default=WARNING_MINUTES) <= WARNING_MINUTES:
        return Timing(expiring=warning)  # every lead is EC2's warning: nothing to read or schedule
    try:
        kind, end = describe_block(ec2, reservation_id)
    except Exception as error:  # the notice goes out; the EC2 warning still acts later
        timing = Timing(expiring=warning or due, result={"lead_error": str(error)})
        timing.lines.append(f"Could not read the block's kind and end date: {error}"[:500])
        return timing
    lead = settings.lead_for(kind)
    timing = Timing(expiring=False, result={"capacity_kind": kind, "lead_minutes": lead})
    if delivered:
        if lead > WARNING_MINUTES and end is not None:
            timing.lines.append(
                schedule_expiry(scheduler, settings, reservation_id=reservation_id, kind=kind, end=end, now=now)
            )
        return timing
    if due:
        planned = parse_time(detail.get("end-date"))
        if end is not None and planned is not None and end - planned > EXTENDED_SLACK:
            timing.result["extended_to"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
            timing.lines.append(f"The block was extended to {timing.result['extended_to']}: expiry actions moved.")
            timing.lines.append(
                schedule_expiry(scheduler, settings, reservation_id=reservation_id, kind=kind, end=end, now=now)
            )
            return timing
        timing.expiring = True
        timing.lines.append(f"Expiry actions at the {kind} block's lead time ({lead} min before the end).")
        return timing
    timing.expiring = True
    if lead > WARNING_MINUTES:
        timing.lines.append(
            f"EC2's 40-minute warning: the {kind} block's lead is {lead} min, so a scheduled run should have acted "
            "already; the expiry actions run again (drain and cordon are idempotent; Slurm jobs are signaled again)."
        )
    return timing
