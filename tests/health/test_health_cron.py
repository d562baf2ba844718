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
        ("30 2 * * sun", 168),  # a name (Slurm and Kubernetes both read one three-letter name, any case)
        ("0 0 1 JAN *", 366 * 24),
        ("@weekly", 168),
        ("@daily", 24),
        ("@hourly", 1),
        ("0 0 1 * *", 31 * 24),  # monthly: the longest month
        ("0 0 1 1 *", 366 * 24),  # yearly: a leap year
        ("0 0 29 2 *", 4 * 366 * 24 - 3 * 24),  # leap days only: four years
        ("* * * * *", 1 / 60),
        ("*/20 * * * *", 20 / 60),
        # day of month and day of week both restricted: either matches (crontab(5)): the 1st or any Monday
        ("0 0 1 * 1", 7 * 24),
        # */2 in day of month is restricted for both Slurm (CRON_WILD_DOM only for a bare *) and Kubernetes' parser
        # (a step above 1 clears the star bit): odd days OR Mondays, at most 2 days apart
        ("0 0 */2 * 1", 2 * 24),
    ],
)
def test_the_longest_gap_between_two_runs(expression: str, hours: float) -> None:
    assert cron_max_gap_seconds(expression) == pytest.approx(hours * HOUR)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("0 0 31 2 *", "a cron expression that runs"),
        ("0 0 30 2 *", "a cron expression that runs"),
        ("60 * * * *", "minute field '60' is outside 0-59"),
        ("0 24 * * *", "hour field '24' is outside 0-23"),
        ("0 0 0 * *", "day of month field '0' is outside 1-31"),
        ("0 0 * 13 *", "month field '13' is outside 1-12"),
        ("0 0 * * 7", "day of week field '7' is outside 0-6"),  # Slurm reads 7 as Sunday, Kubernetes refuses it
        ("0 0 * * 8", "day of week field '8' is outside 0-6"),
        ("0 0 5-1 * *", "a range runs backwards"),
        ("*/0 * * * *", "a step outside 2-59"),
        ("*/1 * * * *", "a step outside 2-59"),  # Slurm: "bad step value" for a step of 1
        ("5/20 * * * *", "minute field '5/20'"),  # Slurm masks from 0 (never runs), Kubernetes from 5
        ("0 1-5/2 * * *", "hour field '1-5/2'"),
        ("0 0 * * */2", "day of week"),  # Slurm steps day of week from 1, Kubernetes from 0
        ("0 0 * * mon-fri", "day of week field 'mon-fri'"),  # Slurm: no ranges of names
        ("0 0 * * monday", "day of week field 'monday'"),
        ("0 0 ? * *", "day of month field '?'"),
        ("0 0 * *", "a five-field cron schedule"),
        ("0 0 * * * *", "a five-field cron schedule"),
        ("0  0 * * *", "a five-field cron schedule"),
        ("@reboot", "a five-field cron schedule"),
        ("0 0 1,,2 * *", "day of month field '1,,2'"),
    ],
)
def test_bad_schedules_are_refused(expression: str, fragment: str) -> None:
    with pytest.raises(FmValidationError, match=r"^schedule must be ") as caught:
        cron_max_gap_seconds(expression)
    assert fragment in str(caught.value)
