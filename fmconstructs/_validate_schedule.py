"""Schedule expressions: one checker per kind, each the service's or program's own rule, fields parsed and ranged.

- :func:`check_aws_cron`: the six-field ``cron(...)`` of EventBridge (rules and Scheduler), which Image Builder and
  SageMaker HyperPod ``ScheduledUpdateConfig`` write the same way. EventBridge User Guide "Cron expressions
  reference" (eb-cron-expressions): Minutes 0-59 ``, - * /``; Hours 0-23 ``, - * /``; Day-of-month 1-31
  ``, - * ? / L W``; Month 1-12 or JAN-DEC ``, - * /``; Day-of-week 1-7 or SUN-SAT ``, - * ? L #``; Year 1970-2199
  ``, - * /``. "You can't use * in both the Day-of-month and Day-of-week fields. If you use it in one, you must use ?
  in the other"; "If you use the '#' character, you can define only one expression in the day-of-week field"
  ("3#1,6#3" is not valid). Names are matched in any case (the Image Builder page writes ``jan``/``fri``, EventBridge
  ``JAN``/``FRI``).
- :func:`check_aws_rate`: ``rate(value unit)`` (EventBridge User Guide eb-scheduled-rule-pattern, "Rate expressions"):
  a positive whole value; unit ``minute | minutes | hour | hours | day | days``; "If the value is equal to 1, then the
  unit must be singular. If the value is greater than 1, the unit must be plural".
- :func:`check_crontab`: a five-field schedule that Slurm's scrontab and the Kubernetes CronJob read alike (both
  backends of ``NcclCheckSpec.schedule``). Slurm ``src/scrontab/parse.c`` ``cronspec_to_bitstring``: each field ``*``
  or a list of ``N`` / ``N-M`` (``bit_unfmt``), or for month and day of week one three-letter name (any case; no
  lists or ranges of names); an optional ``/STEP`` after the field with ``STEP > 1`` (``stepval <= 1`` is "bad step
  value"), masked from the field's start; ``@yearly @annually @monthly @weekly @daily @midnight @hourly``. Kubernetes
  validates ``spec.schedule`` with robfig/cron v3 ``ParseStandard``: day of week 0-6 (Slurm also takes 7), names any
  case, steps per item from the item's start. Where the two differ (``N/STEP``, ``N-M/STEP``, a step in day of week,
  ``7``, ``?``) the form is refused: it would run at other times, or not at all, on one of them.
- :func:`check_on_calendar`: a systemd ``OnCalendar=`` calendar event, systemd.time(7) "CALENDAR EVENTS":
  ``[WEEKDAY] [[YEAR-]MONTH-DAY] [HOUR:MINUTE[:SECOND]] [TIMEZONE]``; weekdays by English name, full or abbreviated
  (any case), as lists with ``,`` and ranges with ``..`` (or ``-``); every other component a list of ``*``, values,
  ranges ``A..B`` and repetitions ``/N``; ``~`` between month and day counts days from the month's end; seconds may
  carry a fraction; the shorthands ``minutely hourly daily weekly monthly yearly annually quarterly semiannually
  semi-annually``; ``@EPOCH``; a time zone ``UTC`` or a tz database name. Ranges from systemd's calendarspec.c as
  ``systemd-analyze calendar`` (systemd 252) reads them: years 1970-2199 (two-digit years 00-99 are 2000-2069 and
  1970-1999), months 1-12, days 1-31, hours 0-23, minutes and seconds 0-59; a range must not run backwards; a
  repetition must be positive.

Tokens are skipped by every checker; the error names the parameter, the field and what the rule allows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "CrontabSchedule",
    "check_aws_cron",
    "check_aws_rate",
    "check_aws_schedule",
    "check_crontab",
    "check_on_calendar",
]

_INT = re.compile(r"[0-9]+")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_SUN_FIRST = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _text(parameter: str, value: object) -> str:
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"a str (got a {type(value).__name__})")
    return value


# --- AWS six-field cron(...) ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _AwsField:
    name: str
    low: int
    high: int
    wildcards: str
    names: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        values = f"{self.low}-{self.high}" + (
            f" or {self.names[0].upper()}-{self.names[-1].upper()}" if self.names else ""
        )
        return f"{values} with the wildcards {' '.join(self.wildcards)}"


#: EventBridge "Cron expressions reference", in field order.
AWS_CRON_FIELDS = (
    _AwsField("Minutes", 0, 59, ",-*/"),
    _AwsField("Hours", 0, 23, ",-*/"),
    _AwsField("Day-of-month", 1, 31, ",-*?/LW"),
    _AwsField("Month", 1, 12, ",-*/", _MONTHS),
    _AwsField("Day-of-week", 1, 7, ",-*?L#", _SUN_FIRST),
    _AwsField("Year", 1970, 2199, ",-*/"),
)
_DOM, _DOW = 2, 4
_AWS_CRON = re.compile(r"cron\((.*)\)", re.DOTALL)
_AWS_SOURCE = "EventBridge User Guide, eb-cron-expressions"


def _aws_value(field: _AwsField, text: str) -> bool:
    if _INT.fullmatch(text):
        return field.low <= int(text) <= field.high
    return text.lower() in field.names


def _aws_range_or_value(field: _AwsField, text: str) -> bool:
    if "-" in text:
        low, _, high = text.partition("-")
        return "-" in field.wildcards and _aws_value(field, low) and _aws_value(field, high)
    return _aws_value(field, text)


def _aws_item(field: _AwsField, text: str) -> bool:
    """One comma-separated item: ``*``, ``L``, a value, ``a-b``, ``x/n``, ``nW``, ``nL``, ``d#k``."""
    if text == "*":
        return True
    if text == "L":
        return "L" in field.wildcards
    if "/" in text:
        start, _, step = text.partition("/")
        step_ok = bool(_INT.fullmatch(step)) and 1 <= int(step) <= field.high - field.low + 1
        return "/" in field.wildcards and step_ok and (start == "*" or _aws_range_or_value(field, start))
    if "#" in text:
        day, _, week = text.partition("#")
        return "#" in field.wildcards and _aws_value(field, day) and week in {"1", "2", "3", "4", "5"}
    if text.endswith("W"):
        return "W" in field.wildcards and bool(_INT.fullmatch(text[:-1])) and _aws_value(field, text[:-1])
    if text.endswith("L") and "#" in field.wildcards:  # day of week: 5L, the month's last Thursday
        return _aws_value(field, text[:-1])
    return _aws_range_or_value(field, text)


def _aws_field_ok(index: int, text: str) -> bool:
    field = AWS_CRON_FIELDS[index]
    if text == "?":
        return "?" in field.wildcards
    items = text.split(",")
    if len(items) > 1 and any("#" in item for item in items):
        return False  # one '#' expression only
    return all(item and _aws_item(field, item) for item in items)


def check_aws_cron(parameter: str, value: object, *, service: str = "EventBridge") -> str:
    """A ``cron(...)`` expression of six fields in range (:data:`AWS_CRON_FIELDS`), ``?`` in exactly one of
    Day-of-month and Day-of-week; ``service`` names whose expression it is in the message."""
    text = _text(parameter, value)
    if is_token(text):
        return text
    match = _AWS_CRON.fullmatch(text)
    fields = match.group(1).split(" ") if match else []
    if len(fields) != len(AWS_CRON_FIELDS) or not all(fields):
        raise FmValidationError(
            parameter,
            value,
            f"a {service} cron expression of six fields separated by single spaces, "
            f"cron(<Minutes> <Hours> <Day-of-month> <Month> <Day-of-week> <Year>), such as 'cron(0 3 ? * SUN *)' "
            f"({_AWS_SOURCE})",
        )
    for index, field_text in enumerate(fields):
        if not _aws_field_ok(index, field_text):
            field = AWS_CRON_FIELDS[index]
            raise FmValidationError(
                parameter,
                value,
                f"a {service} cron expression whose {field.name} field (field {index + 1}) is {field.allowed}, "
                f"not {field_text!r} ({_AWS_SOURCE})",
            )
    if (fields[_DOM] == "?") == (fields[_DOW] == "?"):
        raise FmValidationError(
            parameter,
            value,
            f"a {service} cron expression with '?' in exactly one of Day-of-month and Day-of-week (a value or '*' in "
            f"one, '?' in the other: {_AWS_SOURCE})",
        )
    return text


_AWS_RATE = re.compile(r"rate\(([0-9]+) (minute|minutes|hour|hours|day|days)\)")


def check_aws_rate(parameter: str, value: object) -> str:
    """``rate(N unit)``: N >= 1, unit singular for 1 and plural above (EventBridge "Rate expressions")."""
    text = _text(parameter, value)
    if is_token(text):
        return text
    match = _AWS_RATE.fullmatch(text)
    if match is None or int(match.group(1)) < 1 or (int(match.group(1)) == 1) == match.group(2).endswith("s"):
        raise FmValidationError(
            parameter,
            value,
            "a rate expression 'rate(N unit)' with N a whole number of at least 1 and unit minute, hour or day for "
            "N = 1, minutes, hours or days above (EventBridge User Guide, eb-scheduled-rule-pattern)",
        )
    return text


def check_aws_schedule(parameter: str, value: object, *, service: str, max_length: int) -> str:
    """A ``cron(...)`` (:func:`check_aws_cron`) or ``rate(...)`` (:func:`check_aws_rate`) of 1-``max_length``
    characters (the API's own length limit)."""
    text = _text(parameter, value)
    if is_token(text):
        return text
    if not 1 <= len(text) <= max_length:
        raise FmValidationError(parameter, value, f"a cron(...) or rate(...) expression of 1-{max_length} characters")
    if text.startswith("rate("):
        return check_aws_rate(parameter, text)
    return check_aws_cron(parameter, text, service=service)


# --- five-field crontab (Slurm scrontab and the Kubernetes CronJob) ------------------------------------------------


@dataclass(frozen=True)
class CrontabSchedule:
    """A checked five-field schedule: the values of each field, and which of day of month/week is a bare ``*``."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    any_day_of_month: bool
    any_day_of_week: bool


_CRONTAB_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _SUN_FIRST),
)
#: Slurm scrontab parse.c and robfig/cron v3 ``parseDescriptor``, lower case (robfig matches them exactly).
CRONTAB_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_CRONTAB_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_CRONTAB_TEXT = (
    "a five-field cron schedule '<minute> <hour> <day of month> <month> <day of week>' that Slurm scrontab and the "
    "Kubernetes CronJob read alike: each field '*', '*/STEP' (STEP 2 or more; not in day of week) or a list of N and "
    "N-M, a month or weekday also as one three-letter name; day of week 0-6; or @yearly, @monthly, @weekly, @daily, "
    "@hourly (Slurm src/scrontab/parse.c, robfig/cron v3 ParseStandard)"
)


def _crontab_field(parameter: str, expression: str, index: int, text: str) -> frozenset[int]:
    name, low, high, names = _CRONTAB_FIELDS[index]

    def refuse(why: str) -> FmValidationError:
        return FmValidationError(parameter, expression, f"{_CRONTAB_TEXT}; its {name} field {text!r} {why}")

    if text == "*":
        return frozenset(range(low, high + 1))
    if text.startswith("*/"):
        step = text[2:]
        if name == "day of week" or not _INT.fullmatch(step) or not 2 <= int(step) <= high:
            raise refuse(f"has a step outside 2-{high} (or a step in day of week)")
        return frozenset(range(low, high + 1, int(step)))
    if text.lower() in names:
        return frozenset({names.index(text.lower()) + low})
    values: set[int] = set()
    for item in text.split(","):
        match = _CRONTAB_ITEM.fullmatch(item)
        if match is None:
            raise refuse("is not '*', '*/STEP', a name or a list of N and N-M")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if not low <= first <= last <= high:
            raise refuse(f"is outside {low}-{high} (or a range runs backwards)")
        values.update(range(first, last + 1))
    return frozenset(values)


def check_crontab(parameter: str, value: object) -> CrontabSchedule:
    """A five-field schedule both backends read alike (module docstring), parsed. Tokens are refused: the schedule
    is written into the scrontab file and the CronJob manifest at synthesis."""
    text = _text(parameter, value)
    if is_token(text):
        raise FmValidationError(parameter, value, "a schedule known at synthesis")
    expanded = CRONTAB_MACROS.get(text, text)
    fields = expanded.split()
    if len(fields) != len(_CRONTAB_FIELDS) or expanded != " ".join(fields):
        raise FmValidationError(parameter, value, _CRONTAB_TEXT)
    minutes, hours, doms, months, dows = (
        _crontab_field(parameter, text, index, field) for index, field in enumerate(fields)
    )
    return CrontabSchedule(minutes, hours, doms, months, dows, fields[2] == "*", fields[4] == "*")


# --- systemd OnCalendar ---------------------------------------------------------------------------------------------

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SHORTHANDS = frozenset(
    {"minutely", "hourly", "daily", "weekly", "monthly", "yearly", "annually", "quarterly", "semiannually",
     "semi-annually"}
)  # fmt: skip
_EPOCH = re.compile(r"@[0-9]+")
_CAL_NUMBER = re.compile(r"[0-9]+")
_SECOND = re.compile(r"([0-9]+)(?:\.[0-9]+)?")
_TIMEZONE = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)+")
_CALENDAR_TEXT = (
    "a systemd OnCalendar event '[WEEKDAY] [[YEAR-]MONTH-DAY] [HOUR:MINUTE[:SECOND]] [TIMEZONE]' such as "
    "'Mon..Fri *-*-* 03:00:00' or 'daily' (systemd.time(7), CALENDAR EVENTS)"
)


def _weekday(token: str) -> int | None:
    lowered = token.lower()
    for index, name in enumerate(_WEEKDAYS):
        if lowered in (name, name[:3]):
            return index
    return None


def _weekdays_ok(text: str) -> bool:
    for item in text.split(","):
        if not item:
            return False
        parts = item.split("..") if ".." in item else item.split("-")
        days = [_weekday(part) for part in parts]
        if len(days) > 2 or None in days or (len(days) == 2 and days[0] > days[1]):  # type: ignore[operator]
            return False
    return True


def _year(text: str) -> int | None:
    if not _CAL_NUMBER.fullmatch(text):
        return None
    year = int(text)
    if len(text) <= 2:  # systemd: two-digit years are 1970-1999 and 2000-2069
        year += 1900 if year >= 70 else 2000
    return year if 1970 <= year <= 2199 else None


def _component_ok(
    text: str, low: int, high: int, *, year: bool = False, second: bool = False, from_end: bool = False
) -> bool:
    """``*``, or a list of ``N`` and ``A..B``, each with an optional ``/REPEAT``, in ``low``-``high``."""

    def number(part: str) -> int | None:
        if year:
            return _year(part)
        match = (_SECOND if second else _CAL_NUMBER).fullmatch(part)
        return int(match.group(1) if second else part) if match else None

    items = text.split(",")
    if len(items) > 1 and "*" in items:
        return False  # '*' stands alone (systemd-analyze refuses '*,1')
    for item in items:
        start, slash, repeat = item.partition("/")
        if slash and (not _CAL_NUMBER.fullmatch(repeat) or int(repeat) == 0 or start == "*"):
            return False
        if start == "*":
            continue
        ends = start.split("..")
        values = [number(end) for end in ends]
        if len(ends) > 2 or None in values or not all(low <= v <= high for v in values if v is not None):
            return False
        if len(values) == 2 and (values[0] > values[1] or (second and (values[0] == values[1] or "." in start))):  # type: ignore[operator]
            return False  # a seconds range must rise and be whole (systemd-analyze refuses '3:3:3..3', '3:3:3.5..4')
        first = values[0]
        assert first is not None
        if slash and not low <= (first - int(repeat) if from_end else first + int(repeat)) <= high:
            return False  # systemd-analyze: the first repetition must fall in range ('*-07/6-*' is refused)
    return True


def _date_ok(text: str) -> bool:
    from_end = "~" in text  # '~': days counted from the month's end, 1-28 (systemd-analyze refuses '*~29')
    if from_end:
        head, _, day = text.rpartition("~")
        parts = [*head.split("-"), day] if head else []
    else:
        parts = text.split("-")
    if len(parts) == 2:
        parts = ["*", *parts]
    if len(parts) != 3:
        return False
    year, month, day = parts
    return (
        _component_ok(year, 1970, 2199, year=True)
        and _component_ok(month, 1, 12)
        and _component_ok(day, 1, 28 if from_end else 31, from_end=from_end)
    )


def _time_ok(text: str) -> bool:
    parts = text.split(":")
    if len(parts) not in (2, 3):
        return False
    hour, minute = parts[0], parts[1]
    ok = _component_ok(hour, 0, 23) and _component_ok(minute, 0, 59)
    return ok and (len(parts) == 2 or _component_ok(parts[2], 0, 59, second=True))


def _calendar_ok(text: str) -> bool:
    if text != text.strip(" ") or not text.isprintable():
        return False
    tokens = [t for t in text.split(" ") if t]
    if tokens and (tokens[-1].lower() == "utc" or _TIMEZONE.fullmatch(tokens[-1])):
        tokens = tokens[:-1]
    if not tokens:
        return False
    if len(tokens) == 1 and (tokens[0].lower() in _SHORTHANDS or _EPOCH.fullmatch(tokens[0])):
        return True
    if tokens and tokens[0][:1].isalpha() and not _weekdays_ok(tokens.pop(0)):
        return False
    if tokens and ":" not in tokens[0] and not _date_ok(tokens.pop(0)):
        return False
    if tokens and not _time_ok(tokens.pop(0)):
        return False
    return not tokens


def check_on_calendar(parameter: str, value: object) -> str:
    """A systemd ``OnCalendar=`` expression (module docstring). Tokens are refused: it is written into a timer unit
    at synthesis."""
    text = _text(parameter, value)
    if is_token(text):
        raise FmValidationError(parameter, value, "an OnCalendar expression known at synthesis")
    if len(text) > 200 or not _calendar_ok(text):
        raise FmValidationError(parameter, value, _CALENDAR_TEXT)
    zone = text.rsplit(" ", 1)[-1]
    if _TIMEZONE.fullmatch(zone) and not _known_timezone(zone):
        raise FmValidationError(parameter, value, f"{_CALENDAR_TEXT}, with a time zone of the tz database")
    return text


def _known_timezone(name: str) -> bool:
    """Whether ``name`` is in the tz database (True when this machine has none to ask)."""
    import zoneinfo

    available = zoneinfo.available_timezones()
    return not available or name in available
