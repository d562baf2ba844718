"""The longest gap between two runs of a cron schedule: what NcclCheckStale judges the check against."""

from __future__ import annotations

import pytest

from fmconstructs import FmValidationError
from fmconstructs.health.cron import cron_max_gap_seconds

HOUR = 3600


@pytest.mark.parametrize(
    ("expression", "hours"),
    [
        ("0 3 * * *", 24),  # the default: daily
        ("0 */6 * * *", 6),
        ("0 3,15 * * *", 12),
        ("0 1-5 * * *", 20),  # 05:00 to 01:00 the next day
        ("30 2 * * 0", 168),  # weekly
        ("30 2 * * 7", 168),  # 7 is Sunday too
        ("0 0 1 * *", 31 * 24),  # monthly: the longest month
        ("0 0 1 1 *", 366 * 24),  # yearly: a leap year
        ("0 0 29 2 *", 4 * 366 * 24 - 3 * 24),  # leap days only: four years
        ("* * * * *", 1 / 60),
        ("5/20 * * * *", 20 / 60),  # N/STEP is N-max/STEP: minutes 5, 25, 45
        # day of month and day of week both restricted: either matches (crontab(5)): the 1st or any Monday
        ("0 0 1 * 1", 7 * 24),
        # */2 in day of month: unrestricted for Vixie cron (odd days AND Mondays: up to 3 weeks), restricted for
        # Kubernetes' parser (odd days OR Mondays: 2 days); the longer gap is taken
        ("0 0 */2 * 1", 21 * 24),
    ],
)
def test_the_longest_gap_between_two_runs(expression: str, hours: float) -> None:
    assert cron_max_gap_seconds(expression) == pytest.approx(hours * HOUR)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("0 0 31 2 *", "a cron expression that runs"),
        ("0 0 30 2 *", "a cron expression that runs"),
        ("60 * * * *", "a cron minute from 0 to 59"),
        ("0 24 * * *", "a cron hour from 0 to 23"),
        ("0 0 0 * *", "a cron day of month from 1 to 31"),
        ("0 0 * 13 *", "a cron month from 1 to 12"),
        ("0 0 * * 8", "a cron day of week from 0 to 7"),
        ("0 0 5-1 * *", "a cron day of month from 1 to 31"),
        ("*/0 * * * *", "a cron minute from 0 to 59 with a step of at least 1"),
        ("0 0 * * mon", "a cron day of week field of"),
        ("0 0 * *", "a five-field cron expression"),
        ("0 0 * * * *", "a five-field cron expression"),
        ("0 0 1,,2 * *", "a cron day of month field of"),
    ],
)
def test_bad_schedules_are_refused(expression: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=f"schedule must be {message}"):
        cron_max_gap_seconds(expression)
