"""The longest gap between two runs of a five-field cron schedule, so that staleness is judged against the schedule.

The format is crontab(5)'s, which scrontab(1) ("uses the same format as crontab(5)") and the Kubernetes CronJob
(``spec.schedule``, "Cron schedule syntax") share: minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of week
0-7 (0 and 7 are Sunday); each field a list of ``*``, ``N``, ``N-M``, each optionally ``/STEP``. crontab(5): "If both
fields are restricted (i.e., don't start with *), the command will be run when either field matches the current time";
Vixie cron treats a field starting with ``*`` (also ``*/2``) as unrestricted, the Go cron parser of Kubernetes
(robfig/cron ``getRange``) only a bare ``*`` (a step above 1 clears its star bit). Where the two readings differ, the
longer gap is returned (a late alert, never a false one). ``N/STEP`` is read as ``N-max/STEP`` (robfig/cron: "'N/step'
means 'N-max/step'"). Names (``mon``, ``jan``) are refused, as :class:`~fmconstructs.health.NcclCheckSpec` always did.
"""

from __future__ import annotations

import datetime
import itertools
import re

from ..errors import FmValidationError

_START = datetime.date(2024, 1, 1)  # a leap year; eight years cover two leap days and every weekday/date pairing
_SPAN_DAYS = (datetime.date(2032, 1, 1) - _START).days
_DAY_SECONDS = 86400
_ITEM = re.compile(r"(\*|[0-9]+(?:-[0-9]+)?)(?:/([0-9]+))?")
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))


def _refuse(expression: str, allowed: str) -> FmValidationError:
    return FmValidationError("schedule", expression, allowed)


def _values(expression: str, text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise _refuse(expression, f"a cron {name} field of *, N, N-M and /STEP items (got {item!r})")
        span, step_text = match.group(1), match.group(2)
        step = int(step_text) if step_text else 1
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (int(v) for v in span.split("-"))
        else:
            first = int(span)
            last = high if step_text else first
        if step < 1 or not low <= first <= last <= high:
            raise _refuse(expression, f"a cron {name} from {low} to {high} with a step of at least 1 (got {item!r})")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _run_days(doms: frozenset[int], months: frozenset[int], dows: frozenset[int], either: bool) -> list[int]:
    days = []
    for offset in range(_SPAN_DAYS):
        day = _START + datetime.timedelta(days=offset)
        if day.month not in months:
            continue
        on_date, on_weekday = day.day in doms, day.isoweekday() % 7 in dows
        if (on_date or on_weekday) if either else (on_date and on_weekday):
            days.append(offset)
    return days


def _max_gap(days: list[int], times: list[int]) -> int:
    gap = max((b - a for a, b in itertools.pairwise(times)), default=0)
    for day, next_day in itertools.pairwise(days):
        gap = max(gap, (next_day - day) * _DAY_SECONDS + times[0] - times[-1])
    if len(days) == 1 and len(times) == 1:
        gap = _SPAN_DAYS * _DAY_SECONDS  # once in eight years: at least that long
    return gap


def cron_max_gap_seconds(expression: str) -> int:
    """The longest time (seconds) between two consecutive runs of ``expression`` (crontab(5), five fields); refuses an
    expression that never runs (``0 0 31 2 *``)."""
    fields = expression.split()
    if len(fields) != len(_FIELDS):
        raise _refuse(expression, "a five-field cron expression such as '0 3 * * *'")
    minutes, hours, doms, months, dows = (
        _values(expression, text, name, low, high) for text, (name, low, high) in zip(fields, _FIELDS, strict=True)
    )
    dows = frozenset(d % 7 for d in dows)
    times = sorted(h * 3600 + m * 60 for h in hours for m in minutes)
    dom_text, dow_text = fields[2], fields[4]
    readings = {not (dom_text.startswith("*") or dow_text.startswith("*"))}  # Vixie cron
    readings.add(dom_text != "*" and dow_text != "*")  # robfig/cron (a bare * only)
    gaps = []
    for either in readings:
        days = _run_days(doms, months, dows, either)
        if not days:
            raise _refuse(expression, "a cron expression that runs (this one matches no day)")
        gaps.append(_max_gap(days, times))
    return max(gaps)
