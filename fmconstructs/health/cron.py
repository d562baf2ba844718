"""The longest gap between two runs of a five-field cron schedule, so that staleness is judged against the schedule.

The schedule is checked by the library's crontab checker, :func:`fmconstructs._validate_schedule.check_crontab`: the
forms Slurm's scrontab (``src/scrontab/parse.c``) and the Kubernetes CronJob (robfig/cron v3 ``ParseStandard``) read
alike, names (``mon``, ``jan``) and ``@daily``-style macros included. Both treat only a bare ``*`` in day of month or
day of week as unrestricted; when both are restricted, either matching runs the job (crontab(5): "the command will be
run when either field matches the current time").
"""

from __future__ import annotations

import datetime
import itertools

from .._validate_schedule import check_crontab
from ..errors import FmValidationError

_START = datetime.date(2024, 1, 1)  # a leap year; eight years cover two leap days and every weekday/date pairing
_SPAN_DAYS = (datetime.date(2032, 1, 1) - _START).days
_DAY_SECONDS = 86400


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
    """The longest time (seconds) between two consecutive runs of ``expression`` (:func:`check_crontab`); refuses an
    expression that never runs (``0 0 31 2 *``)."""
    parsed = check_crontab("schedule", expression)
    times = sorted(h * 3600 + m * 60 for h in parsed.hours for m in parsed.minutes)
    either = not (parsed.any_day_of_month or parsed.any_day_of_week)
    days = _run_days(parsed.days_of_month, parsed.months, parsed.days_of_week, either)
    if not days:
        raise FmValidationError("schedule", expression, "a cron expression that runs (this one matches no day)")
    return _max_gap(days, times)
