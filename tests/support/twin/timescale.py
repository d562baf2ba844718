"""Time in the cluster twin: one documented factor, applied to the rendered artifacts, never per test.

:data:`FACTOR` = 60: **one minute of library time is one second of twin time**. An alert's ``for: 2m`` becomes
``for: 2s``, a rule group's ``interval: 1m`` becomes ``1s``, the agent's ``scrape_interval: 30s`` becomes ``500ms``,
Alertmanager's ``group_wait: 30s`` becomes ``500ms`` and ``repeat_interval: 4h`` becomes ``4m``. Issue 29's
constraint: "alert ``for:`` durations, scrape and evaluation intervals and check schedules may be scaled down by one
documented factor applied to the rendered artifacts, never rewritten by hand per test".

What is scaled (every place a duration is written, as Prometheus's and Alertmanager's configuration reference name
them):

- rule files (:func:`scale_rules_yaml`): each group's ``interval`` (and ``query_offset`` where present), each rule's
  ``for`` and ``keep_firing_for``, and in each ``expr`` every range selector ``[5m]``, subquery ``[1h:5m]`` /
  ``[1h:]`` and ``offset 5m`` (:func:`scale_promql`; string literals and comments are left alone);
- a Prometheus configuration (:func:`scale_prometheus_config`): ``global.scrape_interval``, ``scrape_timeout``,
  ``evaluation_interval``, the same keys of each scrape config and each ``file_sd_configs[].refresh_interval``;
- Prometheus's own time flags (:func:`prometheus_time_flags`): ``--rules.alert.resend-delay`` (default 1m) and
  ``--query.lookback-delta`` (default 5m), so staleness and re-sending keep their ratio to the scrape interval;
- an Alertmanager configuration (:func:`scale_alertmanager_config`): ``global.resolve_timeout`` and every route's
  ``group_wait``, ``group_interval`` and ``repeat_interval``, child routes included;
- the Slurm settings the library renders (:func:`scale_slurm_settings`): ``HealthCheckInterval`` (seconds, the idle
  checks' schedule), whole seconds, at least 1;
- the remediation handler's clock (:class:`LibraryClock`): it advances ``FACTOR`` library seconds per twin second, so
  the handler's hourly windows (rate limit, idempotency claims) last one twin minute;
- check schedules the library renders as seconds (:func:`scale_check_schedule`): the NCCL job script's report
  arguments ``--schedule-interval-seconds`` and ``--time-limit-seconds``, from which the report writes
  ``fm_nccl_next_run_due_timestamp_seconds`` (what ``NcclCheckStale`` compares with ``time()``), and a systemd
  timer's ``OnUnitActiveSec``/``OnBootSec`` (:func:`systemd_seconds`, for the twin's own timer loop).

Not scaled: numbers of seconds written into an expression as plain numbers (``predict_linear(v[1h], 3600)``):
PromQL cannot tell them from any other number, and the timestamps they are compared with are wall-clock times written
by node scripts. (``NcclCheckStale`` has none: its threshold is the due time the report writes from the scaled
schedule arguments, and the queue probe's freshness is a range selector.) Slurm's own ``--time`` limits are not scaled
(whole minutes; the twin's jobs end in seconds).

Rounding: a scaled duration is rounded to the nearest millisecond (Prometheus's resolution), and a positive duration
never becomes zero (at least ``1ms``); a duration that is a whole multiple of ``FACTOR`` milliseconds (every duration
the library renders) scales exactly, so :func:`unscale_duration` gives it back.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from fmconstructs.observability._checks import format_prometheus_duration, parse_prometheus_duration

__all__ = [
    "FACTOR",
    "LibraryClock",
    "prometheus_time_flags",
    "scale_alertmanager_config",
    "scale_check_schedule",
    "scale_duration",
    "scale_prometheus_config",
    "scale_promql",
    "scale_rules_yaml",
    "scale_slurm_settings",
    "systemd_seconds",
    "twin_seconds",
    "unscale_duration",
]

#: One minute of library time is one second of twin time.
FACTOR = 60

_NS_PER_MS = 1_000_000
# prometheus/common model/time.go durationRE units, largest first; "ms" before "m" so that "500ms" is one unit.
_DURATION = r"(?:[0-9]+(?:ms|y|w|d|h|m|s))+"
# A range selector [5m] or a subquery [1h:5m] / [1h:] (PromQL grammar, prometheus/prometheus promql/parser/
# generated_parser.y ``matrix_selector`` and ``subquery_expr``; 2.42 takes only duration literals inside brackets).
_RANGE = re.compile(rf"\[(\s*)({_DURATION})(\s*)(?::(\s*)({_DURATION})?(\s*))?\]")
# ``offset <duration>``, also negative (``offset -5m``, promql/parser ``offset_expr``). ``\b`` keeps ``my_offset``
# (a metric or label name) out.
_OFFSET = re.compile(rf"\b(offset\s+)(-?)({_DURATION})\b")
# PromQL string literals ("...", '...' with backslash escapes, `...` raw) and comments (# to end of line).
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`|#[^\n]*')

#: Prometheus server defaults that are durations (prometheus/prometheus cmd/prometheus/main.go, 2.42 flags):
#: ``--rules.alert.resend-delay`` "Minimum amount of time to wait before resending an alert to Alertmanager"
#: default 1m; ``--query.lookback-delta`` default 5m.
PROMETHEUS_TIME_FLAG_DEFAULTS: Mapping[str, str] = {"rules.alert.resend-delay": "1m", "query.lookback-delta": "5m"}
_PROMETHEUS_GLOBAL_KEYS = ("scrape_interval", "scrape_timeout", "evaluation_interval")
_SCRAPE_KEYS = ("scrape_interval", "scrape_timeout")
_ROUTE_KEYS = ("group_wait", "group_interval", "repeat_interval")
_GROUP_KEYS = ("interval", "query_offset")
_RULE_KEYS = ("for", "keep_firing_for")


def _milliseconds(text: str) -> int:
    try:
        return parse_prometheus_duration(text) // _NS_PER_MS
    except ValueError as error:
        raise ValueError(f"not a Prometheus duration: {text!r} ({error})") from None


def scale_duration(text: str, factor: int = FACTOR) -> str:
    """``text`` (a Prometheus duration) in twin time: divided by ``factor``, to the nearest millisecond, at least
    ``1ms`` when positive. ``'0'``/``'0s'``/``'0m'`` stay as written. ``scale_duration('2m') == '2s'``,
    ``scale_duration('30s') == '500ms'``, ``scale_duration('4h') == '4m'``."""
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
        raise ValueError(f"factor must be a whole number >= 1, got {factor!r}")
    milliseconds = _milliseconds(text)
    if milliseconds == 0:
        return text
    return format_prometheus_duration(max(1, round(milliseconds / factor)))


def unscale_duration(text: str, factor: int = FACTOR) -> str:
    """The library duration a twin duration stands for (``'2s'`` -> ``'2m'``): the inverse of :func:`scale_duration`
    for durations that are whole multiples of ``factor`` milliseconds."""
    milliseconds = _milliseconds(text)
    return text if milliseconds == 0 else format_prometheus_duration(milliseconds * factor)


def twin_seconds(library_duration: str, factor: int = FACTOR) -> float:
    """How many real seconds a library duration lasts in the twin (``twin_seconds('2m') == 2.0``)."""
    return _milliseconds(library_duration) / factor / 1000


def _scale_code(code: str, factor: int) -> str:
    def scale_range(match: re.Match[str]) -> str:
        lead, rng, mid, colon_space, step, tail = match.groups()
        out = f"[{lead}{scale_duration(rng, factor)}{mid}"
        if colon_space is not None:  # a subquery: [range:] or [range:step]
            out += f":{colon_space}{scale_duration(step, factor) if step else ''}{tail or ''}"
        return out + "]"

    def scale_offset(match: re.Match[str]) -> str:
        keyword, sign, duration = match.groups()
        return f"{keyword}{sign}{scale_duration(duration, factor)}"

    return _OFFSET.sub(scale_offset, _RANGE.sub(scale_range, code))


def scale_promql(expr: str, factor: int = FACTOR) -> str:
    """``expr`` with every range selector, subquery range and step, and ``offset`` divided by ``factor``; string
    literals (label matcher values such as ``=~"[0-9]+"``) and comments are copied unchanged."""
    out: list[str] = []
    position = 0
    for literal in _LITERAL.finditer(expr):
        out.append(_scale_code(expr[position : literal.start()], factor))
        out.append(literal.group(0))
        position = literal.end()
    out.append(_scale_code(expr[position:], factor))
    return "".join(out)


def _scale_keys(mapping: dict[str, Any], keys: tuple[str, ...], factor: int) -> None:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, str):
            mapping[key] = scale_duration(value, factor)


def scale_rule_groups(document: Mapping[str, Any], factor: int = FACTOR) -> dict[str, Any]:
    """A parsed rule file (``{"groups": [...]}``) in twin time (a copy; the input is not changed)."""
    scaled: dict[str, Any] = copy.deepcopy(dict(document))
    for group in scaled.get("groups") or []:
        _scale_keys(group, _GROUP_KEYS, factor)
        for rule in group.get("rules") or []:
            _scale_keys(rule, _RULE_KEYS, factor)
            if isinstance(rule.get("expr"), str):
                rule["expr"] = scale_promql(rule["expr"], factor)
    return scaled


def scale_rules_yaml(text: str, factor: int = FACTOR) -> str:
    """A rule file (the ``Data`` of an AMP rule groups namespace) in twin time, as YAML."""
    document = yaml.safe_load(text)
    if not isinstance(document, dict) or not isinstance(document.get("groups"), list):
        raise ValueError("not a Prometheus rule file: no top-level 'groups' list")
    return str(yaml.safe_dump(scale_rule_groups(document, factor), sort_keys=False, width=200))


def scale_prometheus_config(config: Mapping[str, Any], factor: int = FACTOR) -> dict[str, Any]:
    """A Prometheus (or agent) configuration in twin time (a copy)."""
    scaled: dict[str, Any] = copy.deepcopy(dict(config))
    if isinstance(scaled.get("global"), dict):
        _scale_keys(scaled["global"], _PROMETHEUS_GLOBAL_KEYS, factor)
    for scrape in scaled.get("scrape_configs") or []:
        _scale_keys(scrape, _SCRAPE_KEYS, factor)
        for discovery in scrape.get("file_sd_configs") or []:
            _scale_keys(discovery, ("refresh_interval",), factor)
    return scaled


def prometheus_time_flags(factor: int = FACTOR) -> list[str]:
    """Prometheus's duration flags at their defaults, in twin time (``--rules.alert.resend-delay=1s`` ...)."""
    return [f"--{flag}={scale_duration(value, factor)}" for flag, value in PROMETHEUS_TIME_FLAG_DEFAULTS.items()]


def _scale_route(route: dict[str, Any], factor: int) -> None:
    _scale_keys(route, _ROUTE_KEYS, factor)
    for child in route.get("routes") or []:
        _scale_route(child, factor)


def scale_alertmanager_config(config: Mapping[str, Any], factor: int = FACTOR) -> dict[str, Any]:
    """An Alertmanager configuration in twin time (a copy): ``resolve_timeout`` and every route's timers."""
    scaled: dict[str, Any] = copy.deepcopy(dict(config))
    if isinstance(scaled.get("global"), dict):
        _scale_keys(scaled["global"], ("resolve_timeout",), factor)
    if isinstance(scaled.get("route"), dict):
        _scale_route(scaled["route"], factor)
    return scaled


# fmconstructs.health.nccl.NcclCheckSpec.report_arguments: "--schedule-interval-seconds S", "--time-limit-seconds L".
_CHECK_SCHEDULE = re.compile(r"(--(?:schedule-interval|time-limit)-seconds)( +)([0-9]+(?:\.[0-9]+)?)\b")
# systemd.time(7) time span units, as seconds.
_SYSTEMD_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400}
_SYSTEMD_SPAN = re.compile(r"([0-9.]+)\s*([a-z]*)")


def scale_check_schedule(script: str, factor: int = FACTOR) -> str:
    """A rendered job script with its schedule numbers (seconds) in twin time: ``--schedule-interval-seconds 86400``
    -> ``1440``. Everything else is copied unchanged."""

    def scale(match: re.Match[str]) -> str:
        option, space, seconds = match.groups()
        return f"{option}{space}{float(seconds) / factor:g}"

    return _CHECK_SCHEDULE.sub(scale, script)


def systemd_seconds(span: str) -> float:
    """A systemd time span (``1min``, ``30s``, ``1h 30min``; systemd.time(7)) in seconds of library time."""
    total = 0.0
    for number, unit in _SYSTEMD_SPAN.findall(span.strip()):
        if unit not in _SYSTEMD_UNITS and unit != "":
            raise ValueError(f"not a systemd time span: {span!r}")
        total += float(number) * _SYSTEMD_UNITS.get(unit or "s", 1)
    return total


#: Slurm settings that are a schedule in seconds (slurm.conf(5) ``HealthCheckInterval``: "The interval in seconds
#: between executions of HealthCheckProgram").
SLURM_SECONDS_SETTINGS = ("HealthCheckInterval",)


def scale_slurm_settings(
    settings: list[tuple[str, str]] | tuple[tuple[str, str], ...], factor: int = FACTOR
) -> list[tuple[str, str]]:
    """The (name, value) Slurm settings with each schedule of :data:`SLURM_SECONDS_SETTINGS` in twin time (whole
    seconds, at least 1; ``0``, which turns the schedule off, stays); the rest as given."""
    scaled: list[tuple[str, str]] = []
    for name, value in settings:
        if name in SLURM_SECONDS_SETTINGS and value.isdigit() and int(value) > 0:
            value = str(max(1, round(int(value) / factor)))
        scaled.append((name, value))
    return scaled


@dataclass
class LibraryClock:
    """Library time for code that reads a clock (the remediation handler's ``clock``): starts at the top of the
    current UTC hour and runs ``factor`` times faster than the wall clock, so an hourly window starts when the clock
    does and lasts ``3600 / factor`` real seconds (one twin minute)."""

    factor: int = FACTOR
    wall: Callable[[], float] = time.time
    started_wall: float = field(init=False)
    anchor: float = field(init=False)

    def __post_init__(self) -> None:
        self.started_wall = self.wall()
        self.anchor = float(int(self.started_wall) // 3600 * 3600)

    def __call__(self) -> float:
        return self.anchor + (self.wall() - self.started_wall) * self.factor

    def twin_seconds_until_next_hour(self) -> float:
        """Real seconds until the library clock reaches the next full hour (a new rate-limit window)."""
        library_now = self()
        return (3600 - library_now % 3600) / self.factor
