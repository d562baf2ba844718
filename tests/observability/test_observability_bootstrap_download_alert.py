"""NodeBootstrapDownloadFailed: a node that could not install an exporter raises a warning (promtool, the same way
tests/observability/test_observability_rules.py proves every other alert)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from fmconstructs.observability.metrics import ALL_METRICS
from fmconstructs.observability.rules import Severity, alerts_table_markdown, default_rule_groups, rules_yaml
from fmconstructs.observability.sources import BOOTSTRAP_TEXTFILE

from tests.conftest import require_tool

NODE = {"cluster": "training", "instance": "i-0aaaaaaaaaaaaaaa1", "job": "node"}


@pytest.fixture(scope="module")
def rule():
    return next(r for g in default_rule_groups() for r in g.rules if r.name == "NodeBootstrapDownloadFailed")


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def test_rule_is_a_warning_on_a_collected_metric(rule):
    assert rule.severity is Severity.WARNING
    assert rule.metrics == ("fm_bootstrap_download_failed",) and set(rule.metrics) <= ALL_METRICS
    assert "FMCONSTRUCTS-DOWNLOAD-FAILED" in rule.description
    assert BOOTSTRAP_TEXTFILE.endswith(".prom")  # node exporter's textfile collector reads *.prom


def test_readme_alert_table_row(rule):
    rows = [line for line in alerts_table_markdown().splitlines() if "`NodeBootstrapDownloadFailed`" in line]
    assert rows == [f"| `NodeBootstrapDownloadFailed` | nodes | warning | 0m | {rule.description} |"]


def test_promtool_fires_on_a_failed_component_and_stays_quiet_otherwise(rule, tmp_path):
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(default_rule_groups()))
    failed = {**NODE, "component": "dcgm-exporter"}
    installed = {**NODE, "component": "node_exporter"}
    firing = {
        "exp_labels": {**failed, "severity": "warning"},
        "exp_annotations": {
            "summary": f"dcgm-exporter is not installed on {NODE['instance']}",
            "description": rule.description,
        },
    }
    tests = [
        {
            "interval": "1m",
            "input_series": [
                {"series": series("fm_bootstrap_download_failed", failed), "values": "1x30"},
                {"series": series("fm_bootstrap_download_failed", installed), "values": "0x30"},
            ],
            "alert_rule_test": [
                {"eval_time": "1m", "alertname": "NodeBootstrapDownloadFailed", "exp_alerts": [firing]},
                {"eval_time": "20m", "alertname": "NodeBootstrapDownloadFailed", "exp_alerts": [firing]},
            ],
        },
        {
            "interval": "1m",
            "input_series": [{"series": series("fm_bootstrap_download_failed", installed), "values": "0x30"}],
            "alert_rule_test": [{"eval_time": "20m", "alertname": "NodeBootstrapDownloadFailed", "exp_alerts": []}],
        },
    ]
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
