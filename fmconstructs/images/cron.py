"""Image Builder schedule expressions, checked at construction.

The cron rules are the EC2 Image Builder User Guide's, "Use cron expressions in Image Builder"
(https://docs.aws.amazon.com/imagebuilder/latest/userguide/cron-expressions.html):

- six required fields, "each one is separated from the others by a space in between, with no leading or trailing
  spaces": ``<Minute> <Hour> <Day> <Month> <Day of the week> <Year>``;
- "Supported values for cron expressions": Minute 0-59 (``, - * /``), Hour 0-23 (``, - * /``), Day 1-31
  (``, - * ? / L W``), Month 1-12 or jan-dec (``, - * /``), Day of the week 1-7 or sun-sat (``, - * ? L #``), Year
  1970-2199 (``, - * /``);
- "Wildcards" table (paraphrased): ``#`` only in Day of the week, followed by a number from 1 to 5 (``fri#2``: the
  second Friday); ``W`` after a day number (``3W``: the weekday closest to the 3rd); ``L`` the last day; ``/`` an
  increment (``*/2``);
- "Limitations" (paraphrased): Day and Day of the week cannot both be specified; when one holds a value or ``*``,
  the other must be ``?``; expressions more frequent than once a minute are not supported (the Minute field cannot
  express one).

Names are matched without regard to case (the page writes ``jan``/``fri``; EventBridge's cron page writes ``JAN``/
``FRI``; that Image Builder takes upper case is UNCONFIRMED, so both are accepted). ``L`` is accepted alone (the
page's only form). The API takes ``Schedule.scheduleExpression`` of 1-1,024 characters (Image Builder API Reference
"Schedule"); ``rate(...)`` expressions are passed through unchanged (not on the cron page).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import FmValidationError, is_token

# Image Builder API Reference "Schedule": scheduleExpression, length 1-1024.
MAX_EXPRESSION_LENGTH = 1024
_RATE = re.compile(r"rate\([^()\n]+\)")
_CRON = re.compile(r"cron\((.*)\)", re.DOTALL)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_INT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    wildcards: str
    names: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        values = f"{self.low}-{self.high}" + (f" or {self.names[0]}-{self.names[-1]}" if self.names else "")
        return f"{values} with the wildcards {' '.join(self.wildcards)}"


#: The page's "Supported values for cron expressions" table, in field order.
FIELDS = (
    _Field("Minute", 0, 59, ",-*/"),
    _Field("Hour", 0, 23, ",-*/"),
    _Field("Day", 1, 31, ",-*?/LW"),
    _Field("Month", 1, 12, ",-*/", _MONTHS),
    _Field("Day of the week", 1, 7, ",-*?L#", _DAYS),
    _Field("Year", 1970, 2199, ",-*/"),
)
_DAY, _WEEKDAY = 2, 4


def _value(field: _Field, text: str) -> bool:
    """One value of the field: a number in range or (Month, Day of the week) a name."""
    if _INT.fullmatch(text):
        return field.low <= int(text) <= field.high
    return text.lower() in field.names


def _item(field: _Field, text: str) -> bool:
    """One comma-separated item: ``*``, ``L``, a value, a range ``a-b``, an increment ``x/n``, ``nW``, ``d#k``."""
    if text == "*":
        return True
    if text == "L":
        return "L" in field.wildcards
    if "/" in text:
        start, _, step = text.partition("/")
        span = field.high - field.low + 1
        step_ok = bool(_INT.fullmatch(step)) and 1 <= int(step) <= span
        return "/" in field.wildcards and step_ok and (start == "*" or _range_or_value(field, start))
    if "#" in text:
        day, _, week = text.partition("#")
        return "#" in field.wildcards and _value(field, day) and week in {"1", "2", "3", "4", "5"}
    if text.endswith("W"):
        return "W" in field.wildcards and bool(_INT.fullmatch(text[:-1])) and _value(field, text[:-1])
    return _range_or_value(field, text)


def _range_or_value(field: _Field, text: str) -> bool:
    if "-" in text:
        low, _, high = text.partition("-")
        return "-" in field.wildcards and _value(field, low) and _value(field, high)
    return _value(field, text)


def _check_field(parameter: str, expression: str, index: int, text: str) -> None:
    field = FIELDS[index]
    if text == "?":
        ok = "?" in field.wildcards
    else:
        items = text.split(",")
        ok = (len(items) == 1 or "," in field.wildcards) and all(item and _item(field, item) for item in items)
    if not ok:
        raise FmValidationError(
            parameter,
            expression,
            f"an Image Builder cron expression whose {field.name} field (field {index + 1}) is {field.allowed} "
            f"(EC2 Image Builder User Guide, cron-expressions), not {text!r}",
        )


def check_schedule_expression(parameter: str, expression: str) -> str:
    """``expression`` when it is a valid Image Builder ``cron(...)`` expression (or a ``rate(...)`` one, passed
    through); :class:`FmValidationError` naming ``parameter`` and the failing field otherwise. Tokens are skipped."""
    if is_token(expression):
        return expression
    if not isinstance(expression, str) or not 1 <= len(expression) <= MAX_EXPRESSION_LENGTH:
        raise FmValidationError(
            parameter, expression, f"a cron(...) or rate(...) expression of 1-{MAX_EXPRESSION_LENGTH} characters"
        )
    if _RATE.fullmatch(expression):
        return expression
    match = _CRON.fullmatch(expression)
    if match is None:
        raise FmValidationError(
            parameter, expression, "an Image Builder cron expression such as 'cron(0 6 ? * mon *)' or rate(...)"
        )
    body = match.group(1)
    fields = body.split(" ")
    if len(fields) != len(FIELDS) or any(not text for text in fields):
        raise FmValidationError(
            parameter,
            expression,
            "an Image Builder cron expression of six fields separated by single spaces, with no leading or trailing "
            "spaces: <Minute> <Hour> <Day> <Month> <Day of the week> <Year>",
        )
    for index, text in enumerate(fields):
        _check_field(parameter, expression, index, text)
    if (fields[_DAY] == "?") == (fields[_WEEKDAY] == "?"):
        raise FmValidationError(
            parameter,
            expression,
            "an Image Builder cron expression with '?' in exactly one of Day and Day of the week (a value or '*' "
            "in one, '?' in the other: EC2 Image Builder User Guide, cron-expressions)",
        )
    return expression
