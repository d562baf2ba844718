"""Input checks shared by the observability constructs: Prometheus durations, AWS ARNs and object-or-ARN props.

Prometheus durations follow Prometheus's own grammar, ``model.ParseDuration`` of github.com/prometheus/common
(model/time.go at d2417e2, 2026-08, v0.70.x; Prometheus 3 reads every duration of its configuration and rule files
with it): ``"0"``, or one or more ``<digits><unit>`` with the units ``y`` (365d), ``w`` (7d), ``d`` (24h), ``h``, ``m``,
``s``, ``ms``, each at most once and largest first (``1h30m``, ``1w``, ``500ms``; not ``30m1h``, ``1h1h``, ``1.5h``,
``-1m``, ``1h 30m`` or ``""``), the whole string (a trailing newline never passes), at most 2^63-1 nanoseconds. Where a
duration is rendered into a configuration at synth time (rule files, agent and scraper configurations, node scripts),
a deploy-time token cannot be used: the checks say so instead of rendering ``${Token[...]}`` into a file.
"""

from __future__ import annotations

import re
from typing import Any

import aws_cdk as cdk

from ..errors import FmTypeError, FmValidationError, is_token

PrometheusDuration = str | cdk.Duration
"""A Prometheus duration string (``'30s'``, ``'1h30m'``, ``'1w'``, ``'500ms'``) or an ``aws_cdk.Duration``."""

_NS_PER_MS = 1_000_000
# prometheus/common model/time.go unitMap: unit -> (position, nanoseconds). Units must go from biggest to smallest.
_UNITS: dict[str, tuple[int, int]] = {
    "y": (1, 365 * 24 * 3600 * 10**9),
    "w": (2, 7 * 24 * 3600 * 10**9),
    "d": (3, 24 * 3600 * 10**9),
    "h": (4, 3600 * 10**9),
    "m": (5, 60 * 10**9),
    "s": (6, 10**9),
    "ms": (7, _NS_PER_MS),
}
_MAX_NS = 2**63 - 1  # time.Duration is an int64 of nanoseconds ("duration out of range" above it)
_DIGITS = "0123456789"  # Go's isdigit: ASCII digits only
DURATION_TEXT = (
    "a Prometheus duration such as '30s', '1h30m', '1w' or '500ms' (units y, w, d, h, m, s, ms, largest first, "
    "each at most once; or '0')"
)


def parse_prometheus_duration(text: str) -> int:
    """The duration in nanoseconds, as prometheus/common ``model.ParseDuration`` reads it; ``ValueError`` otherwise."""
    if text == "0":
        return 0
    if text == "":
        raise ValueError("empty duration string")
    rest, total, last_position = text, 0, 0
    while rest:
        digits = len(rest) - len(rest.lstrip(_DIGITS))
        if digits == 0:
            raise ValueError(f"not a valid duration string: {text!r}")
        value = int(rest[:digits])
        if value > 2**64 - 1:  # strconv.ParseUint(s, 10, 0) fails
            raise ValueError(f"not a valid duration string: {text!r}")
        rest = rest[digits:]
        unit_length = next((i for i, c in enumerate(rest) if c in _DIGITS), len(rest))
        if unit_length == 0:
            raise ValueError(f"not a valid duration string: {text!r}")
        unit, rest = rest[:unit_length], rest[unit_length:]
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        position, nanoseconds = _UNITS[unit]
        if position <= last_position:
            raise ValueError(f"not a valid duration string: {text!r}")
        last_position = position
        if value > 2**63 // nanoseconds:
            raise ValueError("duration out of range")
        total += value * nanoseconds
        if total > _MAX_NS:
            raise ValueError("duration out of range")
    return total


def format_prometheus_duration(milliseconds: int) -> str:
    """``5400000`` -> ``'1h30m'`` (prometheus/common ``Duration.String``); ``0`` -> ``'0s'``."""
    if milliseconds == 0:
        return "0s"
    out, rest = "", milliseconds
    for unit, (_, nanoseconds) in _UNITS.items():
        size = nanoseconds // _NS_PER_MS
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out


def check_prometheus_duration(parameter: str, value: object, *, positive: bool = False) -> str:
    """A Prometheus duration: the string as given (checked with Prometheus's grammar) or an ``aws_cdk.Duration``
    rendered as one (``Duration.minutes(90)`` -> ``'1h30m'``). ``positive`` refuses zero."""
    if isinstance(value, cdk.Duration):
        if value.is_unresolved():
            raise FmValidationError(parameter, value, "a duration known at synth time (it is written into a file)")
        try:
            milliseconds = int(value.to_milliseconds(integral=True))
        except RuntimeError:
            raise FmValidationError(parameter, value.to_human_string(), "a whole number of milliseconds") from None
        text = format_prometheus_duration(milliseconds)
    elif isinstance(value, str):
        if is_token(value):
            raise FmValidationError(parameter, value, "a duration known at synth time (it is written into a file)")
        try:
            parse_prometheus_duration(value)
        except ValueError:
            raise FmValidationError(parameter, value, DURATION_TEXT) from None
        text = value
    else:
        raise FmTypeError(parameter, value, f"a Prometheus duration str or an aws_cdk.Duration (got a {_name(value)})")
    if positive and parse_prometheus_duration(text) == 0:
        raise FmValidationError(parameter, value if isinstance(value, str) else text, "a positive duration")
    return text


def duration_milliseconds(text: str) -> int:
    """Milliseconds of a checked Prometheus duration string."""
    return parse_prometheus_duration(text) // _NS_PER_MS


def _name(value: object) -> str:
    return type(value).__name__


# --- ARNs -----------------------------------------------------------------------------------------------------------
#: botocore amp 2020-08-01 ``WorkspaceArn`` (DescribeWorkspace ``arn``, CreateScraper ``workspaceArn``).
APS_WORKSPACE_ARN = re.compile(r"arn:aws[-a-z]*:aps:[-a-z0-9]+:[0-9]{12}:workspace/.+")
#: botocore amp 2020-08-01 ``KmsKeyArn`` (CreateWorkspace ``kmsKeyArn``), 20-2048 characters.
KMS_KEY_ARN = re.compile(r"arn:aws[-a-z]*:kms:[-a-z0-9]+:[0-9]{12}:key/[-a-f0-9]+")
#: An SNS topic ARN; the name part per the SNS API reference ``CreateTopic`` ``Name`` ("only uppercase and lowercase
#: ASCII letters, numbers, underscores, and hyphens, and must be between 1 and 256 characters long"; FIFO topics end
#: in ``.fifo``).
SNS_TOPIC_ARN = re.compile(r"arn:aws[-a-z]*:sns:[-a-z0-9]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?")


def check_arn(parameter: str, value: object, pattern: re.Pattern[str], what: str, *, max_length: int = 2048) -> Any:
    """A str ARN matching ``pattern`` entirely (a token is accepted unchecked)."""
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"{what} (a str; got a {_name(value)})")
    if is_token(value):
        return value
    if len(value) > max_length or not pattern.fullmatch(value):
        raise FmValidationError(parameter, value, what)
    return value


def check_aps_workspace_arn(parameter: str, value: object) -> Any:
    return check_arn(
        parameter,
        value,
        APS_WORKSPACE_ARN,
        "an Amazon Managed Prometheus workspace ARN (arn:aws:aps:...:workspace/...)",
    )


def check_topic(parameter: str, value: object) -> Any:
    """An ``sns.ITopic`` or a topic ARN (str, or a deploy-time value)."""
    if isinstance(value, str):
        return check_arn(parameter, value, SNS_TOPIC_ARN, "an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)")
    if not hasattr(value, "node") or not hasattr(value, "topic_arn"):
        raise FmTypeError(parameter, value, f"an sns.ITopic or a topic ARN (got a {_name(value)})")
    return value
