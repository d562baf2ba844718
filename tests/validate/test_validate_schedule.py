"""The library's schedule checkers (fmconstructs._validate_schedule): each kind of schedule against its own rule.

AWS cron/rate: EventBridge "Cron expressions reference" and "Rate expressions"; crontab: Slurm scrontab parse.c and
robfig/cron v3 (the Kubernetes CronJob); OnCalendar: systemd.time(7), cross-checked with ``systemd-analyze calendar``
where it is installed.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmconstructs._validate_schedule import (
    AWS_CRON_FIELDS,
    check_aws_cron,
    check_aws_rate,
    check_aws_schedule,
    check_crontab,
    check_on_calendar,
)
from fmconstructs.errors import FmTypeError, FmValidationError


@pytest.mark.parametrize(
    "expression",
    [
        "cron(0 3 ? * SUN *)",
        "cron(0 3 ? * sun *)",
        "cron(0 18 ? * MON-FRI *)",
        "cron(0 18 ? * MON,WED,FRI *)",
        "cron(0/15 * * * ? *)",
        "cron(0 0 L * ? *)",
        "cron(0 0 15W * ? *)",
        "cron(0 0 ? * 3#2 *)",
        "cron(0 0 ? * 5L *)",
        "cron(0 0 1 JAN-MAR ? 2026-2030)",
        "cron(59 23 31 12 ? 2199)",
    ],
)
def test_aws_cron_accepts_the_documented_forms(expression: str) -> None:
    assert check_aws_cron("s", expression) == expression


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("cron(60 3 ? * SUN *)", "Minutes field (field 1) is 0-59"),
        ("cron(0 24 ? * SUN *)", "Hours field"),
        ("cron(0 0 32 * ? *)", "Day-of-month field"),
        ("cron(0 0 ? 13 SUN *)", "Month field"),
        ("cron(0 0 ? * 8 *)", "Day-of-week field"),
        ("cron(0 0 ? * MONDAY *)", "Day-of-week field"),
        ("cron(0 0 ? * 3#1,6#3 *)", "Day-of-week field"),  # one '#' expression only
        ("cron(0 0 1 * ? 2200)", "Year field"),
        ("cron(0 0 * * * *)", "'?' in exactly one"),
        ("cron(0 0 1 * MON *)", "'?' in exactly one"),
        ("cron(0 0 ? * SUN)", "six fields"),
        ("cron(0  0 ? * SUN *)", "six fields"),
        ("0 0 ? * SUN *", "six fields"),
    ],
)
def test_aws_cron_refuses_what_the_reference_does_not_allow(expression: str, fragment: str) -> None:
    with pytest.raises(FmValidationError, match=r"^s must be ") as caught:
        check_aws_cron("s", expression)
    assert fragment in str(caught.value)


def _field_value(index: int) -> st.SearchStrategy[str]:
    field = AWS_CRON_FIELDS[index]
    return st.integers(field.low, field.high).map(str)


@settings(max_examples=200, deadline=None)
@given(st.tuples(*(_field_value(i) for i in range(6))), st.booleans())
def test_aws_cron_accepts_every_in_range_value(values: tuple[str, ...], day_of_month: bool) -> None:
    fields = list(values)
    fields[2 if not day_of_month else 4] = "?"
    assert check_aws_cron("s", f"cron({' '.join(fields)})")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5), st.integers(1, 400))
def test_aws_cron_refuses_every_out_of_range_value(index: int, excess: int) -> None:
    fields = ["0", "0", "?", "*", "MON", "*"]
    field = AWS_CRON_FIELDS[index]
    fields[index] = str(field.high + excess)
    with pytest.raises(FmValidationError, match=f"{field.name} field"):
        check_aws_cron("s", f"cron({' '.join(fields)})")


@pytest.mark.parametrize("good", ["rate(1 minute)", "rate(5 minutes)", "rate(1 hour)", "rate(12 hours)", "rate(1 day)"])
def test_rate_accepts_singular_for_one_and_plural_above(good: str) -> None:
    assert check_aws_rate("s", good) == good


@pytest.mark.parametrize("bad", ["rate(1 minutes)", "rate(5 minute)", "rate(0 days)", "rate(1 week)", "rate(x)"])
def test_rate_refuses_other_forms(bad: str) -> None:
    with pytest.raises(FmValidationError, match=r"rate\(N unit\)"):
        check_aws_rate("s", bad)


def test_an_aws_schedule_is_cron_or_rate_within_the_api_length() -> None:
    assert check_aws_schedule("s", "rate(7 days)", service="X", max_length=256)
    with pytest.raises(FmValidationError, match="1-12 characters"):
        check_aws_schedule("s", "cron(0 3 ? * SUN *)", service="X", max_length=12)
    with pytest.raises(FmTypeError):
        check_aws_schedule("s", 5, service="X", max_length=256)


@pytest.mark.parametrize(
    "good", ["0 3 * * *", "*/15 * * * *", "0 3 * * MON", "0 3 1 jan *", "0 1-5,22 * * 1-5", "@daily", "@weekly"]
)
def test_crontab_accepts_what_both_backends_read_alike(good: str) -> None:
    check_crontab("schedule", good)


@pytest.mark.parametrize(
    "bad", ["60 * * * *", "0 3 * * 7", "5/20 * * * *", "*/1 * * * *", "0 0 * * mon-fri", "0 0 ? * *", "@reboot"]
)
def test_crontab_refuses_forms_one_backend_reads_otherwise(bad: str) -> None:
    with pytest.raises(FmValidationError, match="Slurm scrontab and the Kubernetes CronJob read alike"):
        check_crontab("schedule", bad)


ON_CALENDAR_GOOD = [
    "*-*-* 03:00:00",
    "daily",
    "Weekly",
    "semi-annually",
    "Mon..Fri *-*-* 08:00",
    "Mon-Fri 08:00",
    "Sat,Sun 10:00",
    "monday *-*-1..7 15:00",
    "*-02~03",
    "*-*-* *:0/15",
    "2026-12-31 23:59:59.5",
    "12:05",
    "*-*-* 03:00:00 UTC",
    "@1700000000",
]
ON_CALENDAR_BAD = [
    "*-*-* 25:00:00",
    "*-*-* 03:60",
    "*-13-01",
    "*-*-32",
    "2200-01-01",
    "Sun..Mon",
    "Thurs 03:00",
    "23..01:00",
    "*/5",
    "*:*/15",
    "*-07/6-*",
    "",
    " daily",
    "daily ",
    "Mon\t03:00",
    "Mon weekly",
    "*-*-* 03:00\n",
]


@pytest.mark.parametrize("good", ON_CALENDAR_GOOD)
def test_on_calendar_accepts_systemd_calendar_events(good: str) -> None:
    assert check_on_calendar("on_calendar", good) == good


@pytest.mark.parametrize("bad", ON_CALENDAR_BAD)
def test_on_calendar_refuses_out_of_range_and_malformed_events(bad: str) -> None:
    with pytest.raises(FmValidationError, match=r"^on_calendar must be a systemd OnCalendar event"):
        check_on_calendar("on_calendar", bad)


_SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(_SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")


def _systemd_accepts(expression: str) -> bool:
    assert _SYSTEMD_ANALYZE is not None
    run = subprocess.run([_SYSTEMD_ANALYZE, "calendar", expression], capture_output=True, check=False)
    return run.returncode == 0


def _accepts(expression: str) -> bool:
    try:
        check_on_calendar("on_calendar", expression)
    except FmValidationError:
        return False
    return True


@needs_systemd
@pytest.mark.parametrize("expression", ON_CALENDAR_GOOD + ON_CALENDAR_BAD)
def test_the_examples_agree_with_systemd_analyze(expression: str) -> None:
    assert _accepts(expression) == _systemd_accepts(expression)


_NUMBER = st.integers(0, 2300).map(str) | st.sampled_from(["00", "07", "59", "60", "23", "24", "31", "32", "1970"])
_ITEM = st.one_of(
    st.just("*"),
    _NUMBER,
    st.tuples(_NUMBER, _NUMBER).map("..".join),
    st.tuples(_NUMBER, st.integers(0, 40)).map(lambda t: f"{t[0]}/{t[1]}"),
)
_COMPONENT = st.lists(_ITEM, min_size=1, max_size=3).map(",".join)
_WEEKDAY = st.sampled_from(["Mon", "tue", "Wednesday", "THU", "fri", "Sat", "sun", "Fr"])
_WEEKDAYS = st.lists(st.one_of(_WEEKDAY, st.tuples(_WEEKDAY, _WEEKDAY).map("..".join)), min_size=1, max_size=3).map(
    ",".join
)
_DATE = st.one_of(
    st.tuples(_COMPONENT, _COMPONENT, _COMPONENT).map("-".join),
    st.tuples(_COMPONENT, _COMPONENT).map("-".join),
    st.tuples(_COMPONENT, _ITEM).map("~".join),  # systemd refuses some lists after '~' ('*~26,4'): single items
)
_TIME = st.tuples(_COMPONENT, _COMPONENT).map(":".join) | st.tuples(_COMPONENT, _COMPONENT, _COMPONENT).map(":".join)
_CALENDAR = st.tuples(st.none() | _WEEKDAYS, st.none() | _DATE, st.none() | _TIME, st.sampled_from([None, "UTC"])).map(
    lambda parts: " ".join(p for p in parts if p)
)


@needs_systemd
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_CALENDAR)
def test_on_calendar_agrees_with_systemd_analyze(expression: str) -> None:
    assert _accepts(expression) == _systemd_accepts(expression), expression
