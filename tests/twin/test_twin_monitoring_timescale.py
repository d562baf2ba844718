"""The twin's one time factor (tests/support/twin/timescale.py): durations, PromQL ranges and offsets, rule files,
Prometheus and Alertmanager configurations, the handler's clock. The library's own rule files, scaled, still pass
``promtool check rules``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fmconstructs.health import nccl_rule_group
from fmconstructs.observability._checks import format_prometheus_duration, parse_prometheus_duration
from fmconstructs.observability.rules import default_rule_groups, rules_yaml
from fmconstructs.serving.observability import serving_rule_groups

from tests.conftest import require_tool
from tests.support.twin.timescale import (
    FACTOR,
    LibraryClock,
    prometheus_time_flags,
    scale_alertmanager_config,
    scale_check_schedule,
    scale_duration,
    scale_prometheus_config,
    scale_promql,
    scale_rules_yaml,
    systemd_seconds,
    twin_seconds,
    unscale_duration,
)


def _ms(text: str) -> int:
    return parse_prometheus_duration(text) // 1_000_000


def _library_rule_files() -> dict[str, str]:
    return {
        "fmconstructs": rules_yaml(default_rule_groups()),
        "nccl": rules_yaml([nccl_rule_group()]),
        "serving": rules_yaml(serving_rule_groups()),
    }


# --- durations ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("library", "twin"),
    [
        ("2m", "2s"),
        ("30s", "500ms"),
        ("10s", "167ms"),  # rounded to the millisecond
        ("4h", "4m"),
        ("1h30m", "1m30s"),
        ("15m", "15s"),
        ("1w", "2h48m"),
        ("1ms", "1ms"),  # a positive duration never becomes 0
        ("0", "0"),
        ("0m", "0m"),
    ],
)
def test_a_library_duration_lasts_one_sixtieth_in_the_twin(library: str, twin: str) -> None:
    assert FACTOR == 60
    assert scale_duration(library) == twin


@pytest.mark.parametrize("bad", ["", "5", "1.5h", "-1m", "30m1h", "1h 30m", "2 m"])
def test_a_non_duration_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        scale_duration(bad)


@pytest.mark.parametrize("factor", [0, -60, True, 1.5])
def test_the_factor_is_a_whole_number_of_at_least_one(factor: object) -> None:
    with pytest.raises(ValueError, match="factor must be a whole number"):
        scale_duration("1m", factor)  # type: ignore[arg-type]


def test_twin_seconds_and_unscale() -> None:
    assert twin_seconds("2m") == 2.0 and twin_seconds("30s") == 0.5
    assert unscale_duration("2s") == "2m" and unscale_duration("500ms") == "30s" and unscale_duration("0") == "0"


# 2e9 ms x 3600 stays below Prometheus's largest duration (2^63-1 ns, about 9.2e12 ms)
@given(milliseconds=st.integers(min_value=0, max_value=2 * 10**9), factor=st.integers(min_value=1, max_value=3600))
def test_whole_multiples_of_the_factor_round_trip(milliseconds: int, factor: int) -> None:
    library = format_prometheus_duration(milliseconds * factor)
    twin = scale_duration(library, factor)
    assert _ms(twin) == milliseconds
    assert _ms(unscale_duration(twin, factor)) == milliseconds * factor


@given(milliseconds=st.integers(min_value=1, max_value=10**12), factor=st.integers(min_value=1, max_value=3600))
def test_any_positive_duration_scales_to_the_nearest_millisecond(milliseconds: int, factor: int) -> None:
    twin = _ms(scale_duration(format_prometheus_duration(milliseconds), factor))
    assert twin >= 1
    assert abs(twin * factor - milliseconds) <= max(factor / 2, factor - milliseconds)


# --- PromQL ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("library", "twin"),
    [
        ("rate(x[5m]) > 0", "rate(x[5s]) > 0"),
        ("changes(DCGM_FI_DEV_XID_ERRORS[15m]) > 0", "changes(DCGM_FI_DEV_XID_ERRORS[15s]) > 0"),
        ("max_over_time(rate(x[5m])[1h:1m])", "max_over_time(rate(x[5s])[1m:1s])"),
        ("max_over_time(x[1h:])", "max_over_time(x[1m:])"),
        ("max_over_time(x[ 1h : 5m ])", "max_over_time(x[ 1m : 5s ])"),
        ("x offset 1h", "x offset 1m"),
        ("sum(rate(x[5m] offset 1d))", "sum(rate(x[5s] offset 24m))"),
        ("x offset -5m", "x offset -5s"),
        ("sum_over_time(g[1h]) / 60", "sum_over_time(g[1m]) / 60"),  # numbers are not durations
        ("time() - last > 93600", "time() - last > 93600"),
        ("x{job=~\"[5m]\", a='offset 1h'} and y[5m]", "x{job=~\"[5m]\", a='offset 1h'} and y[5s]"),
        ("my_offset 5 + x{state=~`[1h]`}", "my_offset 5 + x{state=~`[1h]`}"),
        ("x[5m] # a comment [1h]\n+ y[1h]", "x[5s] # a comment [1h]\n+ y[1m]"),
        ('x{a="\\"[5m]"}[1m]', 'x{a="\\"[5m]"}[1s]'),
    ],
)
def test_ranges_subqueries_and_offsets_scale_and_strings_do_not(library: str, twin: str) -> None:
    assert scale_promql(library) == twin


_LABEL_TEXT = st.text(alphabet=st.sampled_from(list("ab[]:5mh offset")), max_size=12)


@given(value=_LABEL_TEXT, window=st.sampled_from(["5m", "1h", "15m", "30s"]))
def test_label_values_are_never_touched(value: str, window: str) -> None:
    library = f'rate(x{{a="{value}"}}[{window}])'
    assert scale_promql(library) == f'rate(x{{a="{value}"}}[{scale_duration(window)}])'


# --- rule files -----------------------------------------------------------------------------------------------------


def test_rule_files_scale_every_duration_and_nothing_else() -> None:
    library = yaml.safe_load(_library_rule_files()["fmconstructs"])
    twin = yaml.safe_load(scale_rules_yaml(_library_rule_files()["fmconstructs"]))
    assert [g["name"] for g in twin["groups"]] == [g["name"] for g in library["groups"]]
    for library_group, twin_group in zip(library["groups"], twin["groups"], strict=True):
        assert _ms(twin_group["interval"]) * FACTOR == _ms(library_group["interval"])
        for library_rule, twin_rule in zip(library_group["rules"], twin_group["rules"], strict=True):
            assert twin_rule["expr"] == scale_promql(library_rule["expr"])
            if "for" in library_rule:
                assert _ms(twin_rule["for"]) * FACTOR == _ms(library_rule["for"])
            same = {k: v for k, v in library_rule.items() if k not in ("expr", "for")}
            assert {k: v for k, v in twin_rule.items() if k not in ("expr", "for")} == same


def test_keep_firing_for_and_query_offset_scale() -> None:
    text = yaml.safe_dump(
        {
            "groups": [
                {
                    "name": "g",
                    "interval": "1m",
                    "query_offset": "1m",
                    "limit": 5,
                    "rules": [{"alert": "A", "expr": "up == 0", "for": "5m", "keep_firing_for": "10m"}],
                }
            ]
        }
    )
    group = yaml.safe_load(scale_rules_yaml(text))["groups"][0]
    assert (group["interval"], group["query_offset"], group["limit"]) == ("1s", "1s", 5)
    assert (group["rules"][0]["for"], group["rules"][0]["keep_firing_for"]) == ("5s", "10s")


@pytest.mark.parametrize("bad", ["[]", "groups: 3", "name: x"])
def test_a_document_without_groups_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="no top-level 'groups' list"):
        scale_rules_yaml(bad)


@pytest.mark.validation
def test_the_scaled_library_rules_pass_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    for name, text in _library_rule_files().items():
        path = tmp_path / f"{name}.yml"
        path.write_text(scale_rules_yaml(text))
        done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


# --- configurations and the clock -----------------------------------------------------------------------------------


def test_prometheus_configuration_and_flags_scale() -> None:
    config = {
        "global": {"scrape_interval": "30s", "scrape_timeout": "10s", "evaluation_interval": "1m"},
        "scrape_configs": [
            {"job_name": "a", "scrape_interval": "1m", "file_sd_configs": [{"files": ["x"], "refresh_interval": "1m"}]}
        ],
    }
    scaled = scale_prometheus_config(config)
    assert scaled["global"] == {"scrape_interval": "500ms", "scrape_timeout": "167ms", "evaluation_interval": "1s"}
    assert scaled["scrape_configs"][0]["scrape_interval"] == "1s"
    assert scaled["scrape_configs"][0]["file_sd_configs"][0] == {"files": ["x"], "refresh_interval": "1s"}
    assert config["global"]["scrape_interval"] == "30s"  # the input is not changed
    assert prometheus_time_flags() == ["--rules.alert.resend-delay=1s", "--query.lookback-delta=5s"]


def test_alertmanager_routes_scale_at_every_depth() -> None:
    config = {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": "sns",
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [{"receiver": "x", "group_wait": "1m", "routes": [{"repeat_interval": "1h"}]}],
        },
        "receivers": [{"name": "sns"}],
    }
    scaled = scale_alertmanager_config(config)
    assert scaled["global"]["resolve_timeout"] == "5s"
    assert (scaled["route"]["group_wait"], scaled["route"]["group_interval"], scaled["route"]["repeat_interval"]) == (
        "500ms",
        "5s",
        "4m",
    )
    assert scaled["route"]["routes"][0]["group_wait"] == "1s"
    assert scaled["route"]["routes"][0]["routes"][0]["repeat_interval"] == "1m"
    assert scaled["receivers"] == config["receivers"] and config["route"]["group_wait"] == "30s"


def test_the_library_clock_starts_an_hour_and_runs_factor_times_faster() -> None:
    now = [7 * 3600 + 1234.5]
    clock = LibraryClock(wall=lambda: now[0])
    assert clock() == 7 * 3600  # the top of the current hour
    now[0] += 30  # 30 real seconds
    assert clock() == 7 * 3600 + 30 * FACTOR
    assert clock.twin_seconds_until_next_hour() == pytest.approx(30)


def test_the_nccl_job_s_schedule_numbers_are_scaled_and_nothing_else() -> None:
    from fmconstructs.health import NcclCheckSpec, render_sbatch

    script = render_sbatch(NcclCheckSpec(instance_type="p5.48xlarge"))
    scaled = scale_check_schedule(script)
    assert "--schedule-interval-seconds 86400 " in script and "--time-limit-seconds 1800 " in script
    assert "--schedule-interval-seconds 1440 " in scaled and "--time-limit-seconds 30 " in scaled
    assert scaled.replace("1440 ", "86400 ", 1).replace("--time-limit-seconds 30 ", "--time-limit-seconds 1800 ") == (
        script
    )


@pytest.mark.parametrize(("span", "seconds"), [("1min", 60), ("30s", 30), ("1h 30min", 5400), ("500ms", 0.5)])
def test_systemd_time_spans(span: str, seconds: float) -> None:
    assert systemd_seconds(span) == seconds
