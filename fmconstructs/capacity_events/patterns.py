"""EventBridge event patterns of :class:`~fmconstructs.capacity_events.CapacityBlockEvents`, split to fit the quota.

An event pattern has a size limit in characters: the EventBridge quota "Event pattern size" is 2,048 characters by
default, adjustable (Amazon EventBridge User Guide, eb-quota / cloudwatch-limits-eventbridge: "Maximum size of event
pattern in characters"), and the API refuses more than 4,096 whatever the quota (botocore ``events`` service model,
PutRule ``EventPattern``: max 4096). A pattern listing many reservation ids is split into several patterns of at most
:data:`EVENT_PATTERN_MAX_CHARS` characters each, one rule per pattern. Pure functions (no aws_cdk).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._validate import check_str_sequence
from .._validate_ids import CAPACITY_RESERVATION_ID, check_service_id
from ..errors import FmValidationError, is_token

#: The default EventBridge quota for an event pattern's size, in characters (see the module docstring). Patterns are
#: kept within it, so that no account needs a quota increase.
EVENT_PATTERN_MAX_CHARS = 2048
#: The largest pattern the EventBridge API accepts (PutRule EventPattern max length 4096, botocore events model).
EVENT_PATTERN_API_MAX_CHARS = 4096
# The longest reservation id ("cr-" and 17 hex digits): what a deploy-time id (a token) is counted as.
_LONGEST_RESERVATION_ID = "cr-" + "f" * 17
# Capacity reservation ids: "cr-" + 17 hex digits, or 8 for older ids (UNCONFIRMED: the usual EC2 id form, not seen
# as a documented pattern).


def check_reservation_ids(parameter: str, value: object, *, allowed: str) -> tuple[str, ...]:
    """``parameter``: one or more distinct reservation ids, each ``allowed`` (deploy-time values accepted), or None
    (an empty tuple)."""
    if value is None:
        return ()
    ids = check_str_sequence(
        parameter,
        value,
        item=lambda name, item: check_service_id(name, item, CAPACITY_RESERVATION_ID),
        min_items=1,
    )
    if len(set(ids)) != len(ids):
        raise FmValidationError(parameter, list(ids), "a list without duplicates")
    return ids


def event_pattern(detail_types: Sequence[str], reservation_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The pattern of EC2 events of ``detail_types``, limited to ``reservation_ids`` when given."""
    pattern: dict[str, Any] = {"source": ["aws.ec2"], "detail-type": list(detail_types)}
    if reservation_ids:
        pattern["detail"] = {"capacity-reservation-id": list(reservation_ids)}
    return pattern


def pattern_chars(pattern: dict[str, Any]) -> int:
    """Characters of ``pattern`` as JSON with spaces after separators (more than a compact rendering: a safe bound);
    deploy-time reservation ids count as the longest id."""
    ids = pattern.get("detail", {}).get("capacity-reservation-id", [])
    measured = json.loads(json.dumps(pattern))
    if ids:
        measured["detail"]["capacity-reservation-id"] = [
            _LONGEST_RESERVATION_ID if is_token(value) else value for value in ids
        ]
    return len(json.dumps(measured))


def split_reservation_ids(
    reservation_ids: Sequence[str], *, detail_types: Sequence[str], max_chars: int = EVENT_PATTERN_MAX_CHARS
) -> list[tuple[str, ...]]:
    """``reservation_ids`` in order, cut into the fewest consecutive groups whose pattern fits ``max_chars``."""
    if not reservation_ids:
        return [()]
    groups: list[tuple[str, ...]] = []
    current: list[str] = []
    for reservation_id in reservation_ids:
        if pattern_chars(event_pattern(detail_types, [*current, reservation_id])) <= max_chars:
            current.append(reservation_id)
            continue
        if not current:
            raise FmValidationError(
                "capacity_reservation_ids",
                reservation_id,
                f"ids whose event pattern fits {max_chars} characters (one id alone does not)",
            )
        groups.append(tuple(current))
        current = [reservation_id]
        if pattern_chars(event_pattern(detail_types, current)) > max_chars:
            raise FmValidationError(
                "capacity_reservation_ids",
                reservation_id,
                f"ids whose event pattern fits {max_chars} characters (one id alone does not)",
            )
    groups.append(tuple(current))
    return groups
