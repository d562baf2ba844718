"""The NCCL baseline alerts are real Prometheus: promtool checks the rules and runs them on series of a healthy
fabric, a 5% and a 15% drop, a cluster with no baseline yet, a failed check and a check that stopped running."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.health import NcclAlertOptions, nccl_rule_group
from fmconstructs.health.nccl_report import METRICS
from fmconstructs.observability.rules import default_rule_groups, rules_yaml

from tests.conftest import require_tool

# The login node's node exporter publishes the file the job wrote (render_publish_units).
LOGIN = {"cluster": "training", "instance": "10.0.0.5:9100", "job": "node"}
AVG = "fm_nccl_allreduce_avg_busbw_gbytes_per_second"
BASELINE = "fm_nccl_allreduce_baseline_busbw_gbytes_per_second"


def _series(name: str, values: str, labels: dict[str, str] = LOGIN) -> dict[str, str]:
    return {"series": name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def _promtool_test(tmp_path: Path, groups, tests: list[dict]) -> subprocess.CompletedProcess[str]:
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(groups))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    return subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)


def _firing(group, alert: str, value: str = "") -> list[dict]:
    rule = next(r for r in group.rules if r.name == alert)
    return [
        {
            "exp_labels": {**LOGIN, "severity": rule.severity.value},
            "exp_annotations": {
                "summary": rule.summary.replace("{{ $value }}", value),
                "description": rule.description.replace("{{ $value }}", value),
            },
        }
    ]


def _below_baseline_case(name: str, avg: str, baseline: str | None, fires: bool, value: str = "") -> dict:
    inputs = [_series(AVG, f"{avg}x60")]
    if baseline is not None:
        inputs.append(_series(BASELINE, f"{baseline}x60"))
    expected = []
    if fires:
        expected = [
            {
                "exp_labels": {**LOGIN, "severity": "warning"},
                "exp_annotations": {
                    "summary": f"NCCL all-reduce bus bandwidth is {value} GB/s, more than 10% below the cluster's "
                    "baseline",
                    "description": nccl_rule_group().rules[0].description,
                },
            }
        ]
    return {
        "name": name,
        "interval": "1m",
        "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": "NcclBusBandwidthBelowBaseline", "exp_alerts": []},  # within for:
            {"eval_time": "30m", "alertname": "NcclBusBandwidthBelowBaseline", "exp_alerts": expected},
        ],
    }


def test_baseline_alert_fires_on_a_15_percent_drop_and_stays_quiet_on_5_percent_and_without_baseline(tmp_path):
    tests = [
        _below_baseline_case("15% drop", "414", "487", fires=True, value="414"),
        _below_baseline_case("5% drop", "462.65", "487", fires=False),
        _below_baseline_case("healthy", "490", "487", fires=False),
        _below_baseline_case("no baseline yet", "300", None, fires=False),
    ]
    proc = _promtool_test(tmp_path, [nccl_rule_group()], tests)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_drop_percentage_is_an_option(tmp_path):
    group = nccl_rule_group(NcclAlertOptions(drop_percent=3, for_="5m"))
    assert group.rules[0].expr == f"{AVG} < 0.97 * {BASELINE}" and group.rules[0].for_ == "5m"
    tests = [
        {
            "interval": "1m",
            "input_series": [_series(AVG, "462.65x30"), _series(BASELINE, "487x30")],
            "alert_rule_test": [
                {
                    "eval_time": "10m",
                    "alertname": "NcclBusBandwidthBelowBaseline",
                    "exp_alerts": _firing(group, "NcclBusBandwidthBelowBaseline", "462.65"),
                }
            ],
        }
    ]
    proc = _promtool_test(tmp_path, [group], tests)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_failed_and_stale_checks_warn(tmp_path):
    group = nccl_rule_group()
    tests = [
        {
            "name": "failed check",
            "interval": "1m",
            "input_series": [_series("fm_nccl_last_run_success", "1x10 0x10")],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "NcclCheckFailed", "exp_alerts": []},
                {"eval_time": "15m", "alertname": "NcclCheckFailed", "exp_alerts": _firing(group, "NcclCheckFailed")},
            ],
        },
        {
            # The last run at t=0 (timestamp 0); promtool's time() starts at 0 too.
            "name": "stale check",
            "interval": "1h",
            "input_series": [_series("fm_nccl_last_run_timestamp_seconds", "0x30")],
            "alert_rule_test": [
                {"eval_time": "25h", "alertname": "NcclCheckStale", "exp_alerts": []},
                {"eval_time": "27h", "alertname": "NcclCheckStale", "exp_alerts": _firing(group, "NcclCheckStale")},
            ],
        },
    ]
    proc = _promtool_test(tmp_path, [group], tests)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_rules_read_only_what_the_report_writes_and_are_not_in_the_default_groups():
    for rule in nccl_rule_group().rules:
        assert set(rule.metrics) <= METRICS
        assert all(metric in rule.expr for metric in rule.metrics)
    assert "fmconstructs-nccl" not in {g.name for g in default_rule_groups()}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"drop_percent": 0}, "drop_percent must be greater than 0"),
        ({"drop_percent": 100}, "drop_percent must be a percentage below 100"),
        ({"drop_percent": -5}, "drop_percent must be greater than 0"),
        ({"for_": "15 minutes"}, "for_ must be a Prometheus duration"),
        ({"stale_after_hours": 0}, "stale_after_hours must be greater than 0"),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        NcclAlertOptions(**kwargs)
