"""Image Builder cron expressions are checked field by field at construction (issue 18 section 5), per the EC2 Image
Builder User Guide "Use cron expressions in Image Builder" (cron-expressions): six fields, their ranges and the
wildcards each field takes, '?' in exactly one of Day and Day of the week."""

from __future__ import annotations

import pytest
from aws_cdk import Token

from fmconstructs.errors import FmValidationError
from fmconstructs.images import BuildSchedule
from fmconstructs.images.cron import check_schedule_expression

VALID = [
    "cron(0 6 ? * MON *)",
    "cron(0 6 ? * mon *)",
    "cron(0 2 1 * ? *)",
    "cron(59 23 31 12 ? 2199)",
    "cron(0 0 ? 1 1 1970)",
    "cron(*/15 * * * ? *)",
    "cron(0/30 0-23/2 ? * * *)",
    "cron(0 6 ? jan,feb,mar mon-fri *)",
    "cron(0 6 L * ? *)",
    "cron(0 6 3W * ? *)",
    "cron(0 6 ? * fri#2 *)",
    "cron(0 6 ? * 6#5 *)",
    "cron(0 6 ? * L *)",
    "cron(5,10,15 1,2 ? * 1,7 2026-2030)",
    "cron(0 6 */2 * ? *)",
    "rate(7 days)",
    "rate(1 day)",
    "cron(0 6 ? * 5L *)",  # the month's last Thursday
]


@pytest.mark.parametrize("expression", VALID)
def test_valid_expressions_are_accepted(expression: str) -> None:
    assert BuildSchedule.cron(expression).expression == expression


# (expression, a fragment the message must contain): each breaks one rule of the page.
INVALID = [
    ("cron(0 6 ? * MON)", "six fields"),
    ("cron(0 6 ? * MON * *)", "six fields"),
    ("cron(0  6 ? * MON *)", "six fields"),
    ("cron( 0 6 ? * MON *)", "six fields"),
    ("cron(0 6 ? * MON * )", "six fields"),
    ("cron(60 6 ? * MON *)", "Minutes field (field 1) is 0-59"),
    ("cron(-1 6 ? * MON *)", "Minutes field"),
    ("cron(0 24 ? * MON *)", "Hours field (field 2) is 0-23"),
    ("cron(0 6 0 * ? *)", "Day-of-month field (field 3) is 1-31"),
    ("cron(0 6 32 * ? *)", "Day-of-month field"),
    ("cron(0 6 ? 13 MON *)", "Month field (field 4) is 1-12 or JAN-DEC"),
    ("cron(0 6 ? 0 MON *)", "Month field"),
    ("cron(0 6 ? foo MON *)", "Month field"),
    ("cron(0 6 ? * 8 *)", "Day-of-week field (field 5) is 1-7 or SUN-SAT"),
    ("cron(0 6 ? * 0 *)", "Day-of-week field"),
    ("cron(0 6 ? * monday *)", "Day-of-week field"),
    ("cron(0 6 ? * MON 1969)", "Year field (field 6) is 1970-2199"),
    ("cron(0 6 ? * MON 2200)", "Year field"),
    ("cron(? 6 ? * MON *)", "Minutes field"),
    ("cron(0 ? 1 * ? *)", "Hours field"),
    ("cron(0 6 ? ? MON *)", "Month field"),
    ("cron(0 6 ? * MON ?)", "Year field"),
    ("cron(L 6 ? * MON *)", "Minutes field"),
    ("cron(0 6 ? L MON *)", "Month field"),
    ("cron(0 6 1W ? * *)", "Month field"),
    ("cron(0 6W ? * MON *)", "Hours field"),
    ("cron(0 6 ? * MONW *)", "Day-of-week field"),
    ("cron(0 6 1#2 * ? *)", "Day-of-month field"),
    ("cron(0 6 ? * MON#6 *)", "Day-of-week field"),
    ("cron(0 6 ? * MON#0 *)", "Day-of-week field"),
    ("cron(0 6 ? * 6#5/2 *)", "Day-of-week field"),
    ("cron(0 6 ? * */2 *)", "Day-of-week field"),
    ("cron(*/0 6 ? * MON *)", "Minutes field"),
    ("cron(*/61 6 ? * MON *)", "Minutes field"),
    ("cron(0 6 ? * MON,, *)", "Day-of-week field"),
    ("cron(0 6 1-32 * ? *)", "Day-of-month field"),
    ("cron(0 6 * * * *)", "'?' in exactly one of Day-of-month and Day-of-week"),
    ("cron(0 6 ? * ? *)", "'?' in exactly one"),
    ("cron(0 6 1 * MON *)", "'?' in exactly one"),
    ("cron(0 6 * * MON *)", "'?' in exactly one"),
    ("cron()", "six fields"),
    ("rate(1 days)", "unit minute, hour or day for N = 1"),
    ("rate(7 day)", "minutes, hours or days above"),
    ("rate(0 minutes)", "at least 1"),
    ("rate(abc)", "rate(N unit)"),
    ("cron(0 6 ? * 3#1,6#3 *)", "Day-of-week field"),
    ("0 6 ? * MON *", "Image Builder cron expression of six fields"),
    ("cron(0 6 ? * MON *", "six fields"),
    ("cron(0 6 ? * MON *)" + " " * 1100, "1-1024 characters"),
]


@pytest.mark.parametrize(("expression", "fragment"), INVALID)
def test_invalid_expressions_are_refused_naming_the_parameter(expression: str, fragment: str) -> None:
    with pytest.raises(FmValidationError, match=r"^schedule\.expression must be ") as caught:
        BuildSchedule.cron(expression)
    assert fragment in str(caught.value)


def test_the_field_text_is_quoted_in_the_message() -> None:
    with pytest.raises(FmValidationError, match=r"not '25'"):
        BuildSchedule.cron("cron(0 25 ? * MON *)")


def test_the_helper_names_its_parameter_and_skips_tokens() -> None:
    with pytest.raises(FmValidationError, match=r"^pipeline_schedule must be "):
        check_schedule_expression("pipeline_schedule", "cron(0 6 * * * *)")
    token = Token.as_string({"Ref": "Schedule"})
    assert check_schedule_expression("pipeline_schedule", token) == token


def test_too_long_is_refused() -> None:
    expression = "cron(" + ",".join(["1"] * 600) + " 6 ? * MON *)"
    with pytest.raises(FmValidationError, match="1-1024 characters"):
        check_schedule_expression("schedule.expression", expression)
