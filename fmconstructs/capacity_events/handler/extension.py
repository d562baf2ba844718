"""Is the block of an expiration warning still ending then? (standard library + boto3 only; no fmconstructs import).

A Capacity Block can be extended (EC2 User Guide "Extend Capacity Blocks", capacity-blocks-extend): the reservation id
stays the same and its end date moves when the extension's payment succeeds; a payment not processed within 12 hours,
or by 35 minutes before the block ends, fails and the block ends at its original end date. EC2 sends the expiration
warning "forty minutes before your Capacity Block reservation ends" (capacity-blocks-monitor) and documents no event
for an extension. So a warning can name an end that is no longer in force (an extension paid after it was sent), or
arrive while an extension is still ``payment-pending`` (it may still succeed until 35 minutes before the end, or fail).

:func:`block_extension` reads the reservation's current ``EndDate`` (ec2:DescribeCapacityReservations) and its
extensions still ``payment-pending`` (ec2:DescribeCapacityBlockExtensionHistory, filter
``capacity-block-extension-status``; botocore 1.44 EC2 model). The handler skips the drain, the cordon and the
scale-down only when the block now ends later than the warning said (:data:`EXTENDED`); with a pending payment it acts
as before (the payment may fail and the instances then terminate) and says how to undo it; when the check cannot be
made it acts as before.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

#: The block ends later than the warning said: do not drain, cordon or scale down.
EXTENDED = "extended"
#: An extension is payment-pending: act on the warning, and say how to undo it if the payment succeeds.
PENDING = "payment-pending"
#: Nothing seen changes the warning (or the check failed): act on it.
ENDING = "ending"
#: How much later than the warning's end the current end must be to count as extended. Extensions last whole days
#: (capacity-blocks-extend: "1-day increments"), so any margin below a day works; this one absorbs clock and
#: rounding differences between the event's end-date and the API's EndDate.
EXTENDED_MARGIN = dt.timedelta(hours=1)
#: The warning's lead time, used when the event's end-date cannot be read (capacity-blocks-monitor: forty minutes).
WARNING_LEAD = dt.timedelta(minutes=40)


def parse_end(value: object) -> dt.datetime | None:
    """The event's ``end-date`` as an aware datetime; None when it is not ISO 8601 (the page shows a placeholder,
    "[ODCR End Date]", not a format)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def block_extension(
    ec2: Any, reservation_id: str, event_end: object, *, now: dt.datetime | None = None
) -> tuple[str, str]:
    """(:data:`EXTENDED` | :data:`PENDING` | :data:`ENDING`, a line for the notice)."""
    warned_end = parse_end(event_end) or (now or dt.datetime.now(dt.UTC)) + WARNING_LEAD
    try:
        found = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
        items = found.get("CapacityReservations") or []
        current = items[0].get("EndDate") if items else None
        if isinstance(current, dt.datetime) and current > warned_end + EXTENDED_MARGIN:
            return EXTENDED, (
                f"The block was extended: it now ends {current.isoformat()}. Nodes NOT drained or cordoned, groups "
                "NOT scaled down: EC2 warns again forty minutes before the new end."
            )
        history = ec2.describe_capacity_block_extension_history(
            CapacityReservationIds=[reservation_id],
            Filters=[{"Name": "capacity-block-extension-status", "Values": [PENDING]}],
        )
        pending = history.get("CapacityBlockExtensions") or []
    except Exception as error:  # the warning is acted on whatever this check hits
        return ENDING, f"Could not check for an extension of the block ({error}): acting on the warning."
    if pending:
        new_end = pending[0].get("CapacityBlockExtensionEndDate")
        until = f" to {new_end.isoformat()}" if isinstance(new_end, dt.datetime) else ""
        return PENDING, (
            f"An extension{until} is payment-pending: acting on the warning anyway (a payment not processed 35 "
            "minutes before the end fails). If it succeeds, resume the nodes (scontrol update nodename=... "
            "state=RESUME; kubectl uncordon) and scale the groups back up."
        )
    return ENDING, ""
