"""Prometheus durations (issue 10: `1h30m`, `1w`, `500ms` were rejected): every place that takes one uses Prometheus's
own grammar (prometheus/common model.ParseDuration), cross-checked here against the real `promtool`, and also takes
an `aws_cdk.Duration`."""

from __future__ import annotations

import subprocess

import aws_cdk as cdk
import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.observability._checks import (
    check_prometheus_duration,
    format_prometheus_duration,
    parse_prometheus_duration,
)
from fmconstructs.observability.collection import (
    NodeLabels,
    agent_config,
    node_collection_commands,
    shutdown_wait_seconds,
)
from fmconstructs.observability.eks import eks_scrape_config, node_exporter_manifests
from fmconstructs.observability.rules import AlertRule, AlertThresholds, RuleGroup, Severity, rules_yaml

from tests.conftest import embedded_files, require_tool

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
LABELS = NodeLabels(cluster="training")
MS = 1
SECOND = 1000 * MS
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

VALID = [
    ("0", 0),
    ("0s", 0),
    ("0m", 0),
    ("500ms", 500),
    ("15s", 15 * SECOND),
    ("1m30s", 90 * SECOND),
    ("90s", 90 * SECOND),
    ("1h30m", 90 * MINUTE),
    ("1d12h", 36 * HOUR),
    ("1w", 7 * DAY),
    ("2w3d", 17 * DAY),
    ("1y", 365 * DAY),
    ("1y1w1d1h1m1s1ms", 365 * DAY + 7 * DAY + DAY + HOUR + MINUTE + SECOND + 1),
    ("01m", MINUTE),
]
INVALID = [
    "",
    "1",
    "m",
    "1.5h",
    "-1m",
    "+1m",
    "30m1h",  # units largest first
    "1h1h",  # each unit once
    "1s500ms500ms",
    "1h 30m",
    " 1h",
    "1h\n",  # a trailing newline never passes
    "5 minutes",
    "1M",
    "1H",
    "1us",
    "1ns",
    "1ms1s",
    "1٣s",  # a non-ASCII digit
    "1000000000000000000000s",  # does not fit uint64
]


@pytest.mark.parametrize(("text", "milliseconds"), VALID)
def test_prometheus_grammar_accepts(text, milliseconds):
    assert parse_prometheus_duration(text) == milliseconds * 1_000_000


@pytest.mark.parametrize("text", INVALID)
def test_prometheus_grammar_refuses(text):
    with pytest.raises(ValueError):
        parse_prometheus_duration(text)


def test_durations_beyond_int64_nanoseconds_are_out_of_range():
    assert parse_prometheus_duration("106751d23h47m16s854ms") == 9_223_372_036_854_000_000
    with pytest.raises(ValueError, match="out of range"):
        parse_prometheus_duration("106751d23h47m16s855ms")
    with pytest.raises(ValueError, match="out of range"):
        parse_prometheus_duration("293y")


@pytest.fixture(scope="module")
def promtool() -> str:
    return require_tool("promtool", "prometheus")


def _promtool_accepts_for(promtool: str, tmp_path, text: str) -> bool:
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up", "for": text}]}]}))
    return subprocess.run([promtool, "check", "rules", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("text", [t for t, _ in VALID] + INVALID)
def test_grammar_matches_promtool(promtool, tmp_path, text):
    """Our parser and Prometheus's agree on every case (promtool reads `for:` with model.ParseDuration)."""
    try:
        parse_prometheus_duration(text)
        ours = True
    except ValueError:
        ours = False
    assert ours == _promtool_accepts_for(promtool, tmp_path, text)


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        (cdk.Duration.minutes(90), "1h30m"),
        (cdk.Duration.millis(500), "500ms"),
        (cdk.Duration.days(7), "1w"),
        (cdk.Duration.seconds(0), "0s"),
        (cdk.Duration.hours(25), "1d1h"),
    ],
)
def test_cdk_durations_become_prometheus_durations(duration, expected):
    assert check_prometheus_duration("for_", duration) == expected
    assert parse_prometheus_duration(expected) == duration.to_milliseconds() * 1_000_000


def test_format_round_trips():
    for text, milliseconds in VALID:
        assert parse_prometheus_duration(format_prometheus_duration(milliseconds)) == milliseconds * 1_000_000, text


# --- every place that takes a duration --------------------------------------------------------------------------


def test_thresholds_take_compound_week_and_millisecond_durations(promtool, tmp_path):
    from fmconstructs.observability.rules import default_rule_groups

    thresholds = AlertThresholds(
        temperature_for="1h30m",
        idle_for="1w",
        nvlink_errors_for="500ms",
        node_missing_window="1d12h",
        xid_window=cdk.Duration.minutes(90),
    )
    assert thresholds.xid_window == "1h30m"
    text = rules_yaml(default_rule_groups(thresholds))
    assert "for: 1h30m" in text and "for: 1w" in text and "[1d12h]" in text
    path = tmp_path / "rules.yml"
    path.write_text(text)
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("field", ["xid_window", "node_missing_window"])
def test_range_windows_must_be_positive(field):
    # PromQL refuses a zero range selector ("duration must be greater than 0").
    with pytest.raises(FmValidationError, match=rf"^{field} must be a positive duration"):
        AlertThresholds(**{field: "0s"})


@pytest.mark.parametrize("text", ["30m1h", "1h1h", "1.5h", "1h\n", "5 minutes", ""])
@pytest.mark.parametrize("field", ["temperature_for", "node_stopped_for", "slurm_for"])
def test_thresholds_refuse_what_prometheus_refuses(field, text):
    with pytest.raises(FmValidationError, match=rf"^{field} must be a Prometheus duration"):
        AlertThresholds(**{field: text})


def test_rule_and_group_durations():
    rule = AlertRule("A", "up == 0", "1h30m", Severity.WARNING, "s", "d", ("up",))
    group = RuleGroup("team", (rule,), interval=cdk.Duration.seconds(90))
    assert group.interval == "1m30s"
    assert yaml.safe_load(rules_yaml([group]))["groups"][0]["rules"][0]["for"] == "1h30m"
    with pytest.raises(FmValidationError, match=r"^for_ must be a Prometheus duration"):
        AlertRule("A", "up == 0", "1h1h", Severity.WARNING, "s", "d", ("up",))
    with pytest.raises(FmValidationError, match=r"^interval must be a Prometheus duration"):
        RuleGroup("team", (rule,), interval="1m\n")


@pytest.mark.parametrize(("interval", "timeout"), [("1m30s", "10s"), ("500ms", "500ms"), ("5s", "5s"), ("1h", "10s")])
def test_agent_scrape_interval_and_timeout(promtool, tmp_path, interval, timeout):
    config = agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, scrape_interval=interval)
    assert config["global"] == {"scrape_interval": interval, "scrape_timeout": timeout}
    path = tmp_path / "agent.yml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("interval", ["0", "0s", "30m1h", "1h\n"])
def test_agent_scrape_interval_refused(interval):
    with pytest.raises(FmValidationError, match=r"^scrape_interval must be a (positive|Prometheus) duration"):
        agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, scrape_interval=interval)


@pytest.mark.parametrize(("interval", "wait"), [("1m30s", 120), ("500ms", 31), (cdk.Duration.seconds(45), 75)])
def test_shutdown_wait_rounds_sub_second_intervals_up(interval, wait):
    assert shutdown_wait_seconds(interval) == wait
    commands = "\n".join(
        node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, scrape_interval=interval)
    )
    unit = embedded_files(commands)["/etc/systemd/system/fm-node-lifecycle.service"]
    assert f"TimeoutStopSec={wait + 15}\n" in unit
    assert f" {wait} {wait - 30}\n" in unit  # ExecStop: wait seconds, then the interval in whole seconds


@pytest.mark.parametrize("interval", ["45s", "1m30s", "2m", cdk.Duration.seconds(20)])
def test_eks_scraper_takes_any_prometheus_interval(interval):
    config = eks_scrape_config(cluster_label="eks", scrape_interval=interval)
    text = check_prometheus_duration("scrape_interval", interval)
    assert config["global"]["scrape_interval"] == text
    manifests = node_exporter_manifests(scrape_interval=interval)
    daemonset = next(m for m in manifests if m["kind"] == "DaemonSet")
    assert daemonset["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == shutdown_wait_seconds(text) + 15


def test_durations_that_are_deploy_time_values_are_refused_by_name():
    token = cdk.Token.as_string(cdk.Fn.ref("Interval"))
    with pytest.raises(FmValidationError, match=r"^scrape_interval must be a duration known at synth time") as error:
        eks_scrape_config(cluster_label="eks", scrape_interval=token)
    assert "${Token[" not in str(error.value)
    with pytest.raises(FmValidationError, match=r"^idle_for must be a duration known at synth time"):
        AlertThresholds(idle_for=token)
