"""The NCCL alerts are real Prometheus: promtool checks the rules and runs them on the series the report script wrote
for nccl-tests outputs (a healthy fabric, a 5% and a 15% drop, a degraded first run) and on schedule series (an
overdue check, a check deferred behind a long job, a dead probe)."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.health import NcclAlertOptions, nccl_report, nccl_rule_group
from fmconstructs.health.nccl_report import METRICS, QUEUE_METRICS, BaselinePolicy
from fmconstructs.health.nccl_rules import PROBE_FRESH, below_baseline_expr
from fmconstructs.observability.rules import default_rule_groups, rules_yaml

from tests.conftest import require_tool
from tests.support.health_nccl import P5_SRUN, scaled

# The login node's node exporter publishes the file the job wrote (render_publish_units).
LOGIN = {"cluster": "training", "instance": "10.0.0.5:9100", "job": "node"}
P5_FLOOR = 389.672  # 0.8 x the catalog's 487.09 GB/s for 2 x p5.48xlarge at 16 GiB
BELOW = "NcclBusBandwidthBelowBaseline"


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


def _passes(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


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


def _report_series(tmp_path: Path, outputs: list[str], floor: float | None = P5_FLOOR) -> list[dict[str, str]]:
    """The gauges (no labels of their own) the report script wrote after ``outputs`` ran in order, as constant
    series of the login node."""
    state = tmp_path / f"state-{len(list(tmp_path.glob('state-*')))}"
    state.mkdir()
    for index, text in enumerate(outputs):
        (state / "run.log").write_text(text)
        nccl_report.report(
            state / "run.log",
            state / "baseline.json",
            state / "fm_nccl.prom",
            policy=BaselinePolicy(floor=floor),
            now=index * 86400.0,
        )
    series = []
    for line in (state / "fm_nccl.prom").read_text().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            series.append(_series(name, f"{value}x60"))
    return series


def _below_case(name: str, inputs: list[dict[str, str]], value: str | None) -> dict:
    group = nccl_rule_group()
    return {
        "name": name,
        "interval": "1m",
        "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": BELOW, "exp_alerts": []},  # within for: 15m
            {
                "eval_time": "30m",
                "alertname": BELOW,
                "exp_alerts": [] if value is None else _firing(group, BELOW, value),
            },
        ],
    }


def test_the_reports_series_alert_on_a_15_percent_drop_not_on_5_percent(tmp_path: Path) -> None:
    tests = [
        _below_case("healthy", _report_series(tmp_path, [P5_SRUN, P5_SRUN]), None),
        _below_case("5% drop", _report_series(tmp_path, [P5_SRUN, scaled(P5_SRUN, 0.95)]), None),
        _below_case("15% drop", _report_series(tmp_path, [P5_SRUN, scaled(P5_SRUN, 0.85)]), "414.03"),
        # the next 5% run after a 15% one: still judged against the healthy baseline (the 15% run stayed out)
        _below_case(
            "5% after 15%",
            _report_series(tmp_path, [P5_SRUN, scaled(P5_SRUN, 0.85), scaled(P5_SRUN, 0.95)]),
            None,
        ),
        # a lasting 15% drop keeps alerting: it never enters the window
        _below_case("lasting 15%", _report_series(tmp_path, [P5_SRUN, *[scaled(P5_SRUN, 0.85)] * 8]), "414.03"),
    ]
    _passes(_promtool_test(tmp_path, [nccl_rule_group()], tests))


def test_a_degraded_first_run_alerts_against_the_floor(tmp_path: Path) -> None:
    tests = [
        # 30% under the published figure, first run: the baseline is the floor, the run is far below it
        _below_case("degraded first run", _report_series(tmp_path, [scaled(P5_SRUN, 0.7)]), "340.96"),
        # 5% under the floor: within the tolerance of a floor-only baseline, still below the floor
        _below_case("just under the floor", _report_series(tmp_path, [scaled(P5_SRUN, 0.76)]), "370.19"),
        # a healthy first run after it: the degraded run never became the standard
        _below_case("repaired", _report_series(tmp_path, [scaled(P5_SRUN, 0.7), P5_SRUN]), None),
        # no floor (a type without a published figure): the first run is the baseline, nothing to alert on
        _below_case("no floor", _report_series(tmp_path, [scaled(P5_SRUN, 0.7)], floor=None), None),
    ]
    _passes(_promtool_test(tmp_path, [nccl_rule_group()], tests))


def test_a_drop_percentage_in_the_options_overrides_the_reports_tolerance(tmp_path: Path) -> None:
    group = nccl_rule_group(NcclAlertOptions(drop_percent=3, for_="5m"))
    rule = group.rules[0]
    assert rule.expr == below_baseline_expr(3) and "0.97 * fm_nccl_allreduce_baseline" in rule.expr
    assert rule.for_ == "5m" and "fm_nccl_allreduce_drop_tolerance_ratio" not in rule.metrics
    # three healthy runs, then one 5% below: admitted by the report's 10%, alerting by the rule's 3%
    inputs = _report_series(tmp_path, [P5_SRUN, P5_SRUN, P5_SRUN, scaled(P5_SRUN, 0.95)])
    tests = [
        {
            "interval": "1m",
            "input_series": inputs,
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": BELOW, "exp_alerts": _firing(group, BELOW, "462.74")}
            ],
        }
    ]
    _passes(_promtool_test(tmp_path, [group], tests))


# --- staleness against the schedule ----------------------------------------------------------------------------------
# promtool's time() starts at 0; with interval 1m, "0+60x3000" is a series whose value is the time in seconds.
DUE = "fm_nccl_next_run_due_timestamp_seconds"
DEFERRED = "fm_nccl_check_deferred"
PROBED = "fm_nccl_queue_probe_timestamp_seconds"
STALE = "NcclCheckStale"


def _stale_case(name: str, inputs: list[dict[str, str]], quiet_at: str, fires_at: str | None) -> dict:
    group = nccl_rule_group()
    checks = [{"eval_time": quiet_at, "alertname": STALE, "exp_alerts": []}]
    if fires_at is not None:
        checks.append({"eval_time": fires_at, "alertname": STALE, "exp_alerts": _firing(group, STALE)})
    return {"name": name, "interval": "1m", "input_series": inputs, "alert_rule_test": checks}


def test_stale_only_when_overdue_against_the_schedule(tmp_path: Path) -> None:
    # the last report (t=0) said: next one due at 24h30m (daily schedule + a 30 min time limit)
    due = _series(DUE, "88200x3000")
    tests = [
        # due, then a grace of 1h (the rule's for): quiet until 25h30m, firing after
        _stale_case("overdue", [due], quiet_at="25h", fires_at="26h"),
        # a weekly schedule: a day without a run is no alert
        _stale_case("weekly", [_series(DUE, "606600x3000")], quiet_at="48h", fires_at=None),
        # the check waits behind a long job (the probe says deferred, and it looked a minute ago): quiet for days
        _stale_case(
            "deferred by a long job",
            [due, _series(DEFERRED, "1x3000"), _series(PROBED, "0+60x3000")],
            quiet_at="48h",
            fires_at=None,
        ),
        # the probe says "not deferred": the check is not waiting for nodes, it stopped
        _stale_case("not deferred", [due, _series(DEFERRED, "0x3000"), _series(PROBED, "0+60x3000")], "25h", "26h"),
        # the probe died (its last look at t=0): its "deferred" no longer holds the alert back
        _stale_case("dead probe", [due, _series(DEFERRED, "1x3000"), _series(PROBED, "0x3000")], "25h", "26h"),
    ]
    _passes(_promtool_test(tmp_path, [nccl_rule_group()], tests))


def test_a_failed_check_warns(tmp_path: Path) -> None:
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
        }
    ]
    _passes(_promtool_test(tmp_path, [group], tests))


def test_the_grace_is_an_option_and_is_the_rules_for() -> None:
    rule = next(r for r in nccl_rule_group(NcclAlertOptions(stale_grace="3h")).rules if r.name == STALE)
    assert rule.for_ == "3h"
    assert rule.expr.startswith(f"time() > {DUE} unless (")


def test_rules_read_only_what_the_report_and_the_probe_write_and_are_not_in_the_default_groups() -> None:
    for rule in nccl_rule_group().rules:
        assert set(rule.metrics) <= METRICS | QUEUE_METRICS
        assert all(metric in rule.expr for metric in rule.metrics)
    assert "fmconstructs-nccl" not in {g.name for g in default_rule_groups()}


def test_stale_compares_no_plain_seconds_with_time() -> None:
    # the probe's freshness is a range (a duration a time factor scales, and a frozen textfile does not pass);
    # the only time() comparison is with the due time the report writes from the schedule
    rule = next(r for r in nccl_rule_group().rules if r.name == STALE)
    assert f"changes(fm_nccl_queue_probe_timestamp_seconds[{PROBE_FRESH}]) > 0" in rule.expr
    assert rule.expr.count("time()") == 1 and "time() -" not in rule.expr


def test_stale_after_hours_is_deprecated_and_ignored() -> None:
    with pytest.warns(DeprecationWarning, match="stale_after_hours is deprecated"):
        options = NcclAlertOptions(stale_after_hours=26)
    assert nccl_rule_group(options).rules[-1].expr == nccl_rule_group().rules[-1].expr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NcclAlertOptions()  # no warning by default


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"drop_percent": 0}, "drop_percent must be greater than 0"),
        ({"drop_percent": 100}, "drop_percent must be a percentage below 100"),
        ({"drop_percent": -5}, "drop_percent must be greater than 0"),
        ({"for_": "15 minutes"}, "for_ must be a Prometheus duration"),
        ({"stale_grace": "an hour"}, "stale_grace must be a Prometheus duration"),
        ({"stale_after_hours": 0}, "stale_after_hours must be greater than 0"),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        NcclAlertOptions(**kwargs)
