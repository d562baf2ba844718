"""FmNodeCheckFailed in promtool: healthy, degraded and planned-scale-down nodes; the alert it raises is the one the
remediation handler turns into a NODE_CHECK_FAILED fault."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from fmconstructs.errors import FmValidationError
from fmconstructs.health import metric_names as names
from fmconstructs.health.nccl_rules import nccl_rule_group
from fmconstructs.observability.rules import AlertThresholds, default_rule_groups, node_check_rules, rules_yaml
from fmconstructs.remediation.handler.faults import alert_faults
from fmconstructs.remediation.policy import RemediationPolicy, Trigger

from tests.conftest import require_tool

NODE = {"cluster": "training", "instance": "i-0aaaaaaaaaaaaaaa1", "instance_id": "i-0aaaaaaaaaaaaaaa1", "job": "node"}
OTHER = {**NODE, "instance": "i-0bbbbbbbbbbbbbbb2", "instance_id": "i-0bbbbbbbbbbbbbbb2"}
EFA_BOOT = {"check": "efa-devices", "mode": "boot"}
REASON = "16 EFA devices, expected 32"
ALERT = names.ALERT_NODE_CHECK_FAILED


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    return {"series": name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def _rule():
    return next(r for g in default_rule_groups() for r in g.rules if r.name == ALERT)


def _firing(labels: dict[str, str]) -> dict:
    rule = _rule()
    exp = {**labels, "severity": "critical", names.TRIGGER_LABEL: names.TRIGGER_NODE_CHECK_FAILED}
    return {
        "exp_labels": exp,
        "exp_annotations": {
            "summary": f"Node check {labels['check']} ({labels['mode']}) fails on {labels['instance']}",
            "description": rule.description.replace("{{ $labels.reason }}", labels.get("reason", "")),
        },
    }


def _promtool_test(tmp_path: Path, cases: dict[str, tuple[list[dict], dict[str, list[dict]]]]) -> None:
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(default_rule_groups()))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = [
        {
            "name": name,
            "interval": "1m",
            "input_series": inputs,
            "alert_rule_test": [
                {"eval_time": t, "alertname": ALERT, "exp_alerts": alerts} for t, alerts in expected.items()
            ],
        }
        for name, (inputs, expected) in cases.items()
    ]
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]


def test_node_check_failed_on_healthy_degraded_and_scaled_down_nodes(tmp_path: Path) -> None:
    failing = {**NODE, **EFA_BOOT, "reason": REASON}
    cases = {
        # every check passes on two nodes, boot and prolog: quiet
        "healthy": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "1x60"),
                _series(names.NODE_CHECK_STATUS, {**OTHER, "check": "gpu-count", "mode": "prolog"}, "1x60"),
                _series(names.NODE_CHECK_LAST_RUN, {**NODE, "mode": "boot"}, "0x60"),
            ],
            {"10m": [], "50m": []},
        ),
        # a check starts failing at 5m: quiet within for (2m), then fires per instance with check, mode and reason;
        # the passing node stays quiet; the node repaired at 30m resolves
        "degraded-then-repaired": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "1x5 0x25 1x30"),
                _series(names.NODE_CHECK_FAILURE_INFO, {**NODE, **EFA_BOOT, "reason": REASON}, "_x5 1x25 stale"),
                _series(names.NODE_CHECK_STATUS, {**OTHER, **EFA_BOOT}, "1x60"),
            ],
            {"6m": [], "10m": [_firing(failing)], "25m": [_firing(failing)], "40m": []},
        ),
        # a failure without its info series (older node script) still fires, without reason
        "degraded-without-reason": (
            [_series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "0x30")],
            {"10m": [_firing({**NODE, **EFA_BOOT})]},
        ),
        # planned scale-down of a healthy node: its series end (agent gone, no staleness marker): never fires
        "healthy-node-scaled-down": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "1x10"),
                _series(names.NODE_CHECK_LAST_RUN, {**NODE, "mode": "boot"}, "0x10"),
            ],
            {"5m": [], "12m": [], "30m": [], "60m": []},
        ),
        # a failed node removed by scale-down or replacement: the alert ends with its series (absent series do not
        # fire) and its stale last-run timestamp fires nothing either
        "failed-node-removed": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "0x10"),
                _series(names.NODE_CHECK_FAILURE_INFO, {**NODE, **EFA_BOOT, "reason": REASON}, "1x10"),
                _series(names.NODE_CHECK_LAST_RUN, {**NODE, "mode": "boot"}, "0x10"),
            ],
            {"8m": [_firing(failing)], "20m": [], "60m": []},
        ),
        # EKS scale-in: the scraper writes staleness markers for the dropped target
        "eks-node-scaled-in": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "1x10 stale"),
                _series(names.NODE_CHECK_LAST_RUN, {**NODE, "mode": "boot"}, "0x10 stale"),
            ],
            {"12m": [], "40m": []},
        ),
        # the same failing check at boot and in the prolog: one alert per mode
        "boot-and-prolog": (
            [
                _series(names.NODE_CHECK_STATUS, {**NODE, **EFA_BOOT}, "0x20"),
                _series(names.NODE_CHECK_STATUS, {**NODE, "check": "efa-devices", "mode": "prolog"}, "0x20"),
            ],
            {"10m": [_firing({**NODE, **EFA_BOOT}), _firing({**NODE, "check": "efa-devices", "mode": "prolog"})]},
        ),
    }
    _promtool_test(tmp_path, cases)


def test_rule_shape() -> None:
    rule = _rule()
    assert rule.severity.value == "critical"
    assert rule.labels == {names.TRIGGER_LABEL: names.TRIGGER_NODE_CHECK_FAILED}
    assert rule.for_ == "2m"
    assert set(rule.metrics) == {names.NODE_CHECK_STATUS, names.NODE_CHECK_FAILURE_INFO}
    assert "absent" not in rule.expr and names.NODE_CHECK_LAST_RUN not in rule.expr
    assert "fmconstructs-node-checks" in {g.name for g in default_rule_groups()}


def test_for_duration_is_a_threshold() -> None:
    group = node_check_rules(AlertThresholds(node_check_for="0m"))
    assert group.rules[0].for_ == "0m"
    with pytest.raises(FmValidationError, match=r"node_check_for must be a Prometheus duration"):
        AlertThresholds(node_check_for="two minutes")


def _alertmanager_message(labels: dict[str, str]) -> str:
    return json.dumps({"status": "firing", "alerts": [{"status": "firing", "labels": labels}]})


def test_the_alert_becomes_a_node_check_failed_fault() -> None:
    # GIVEN the labels FmNodeCheckFailed fires with, as Alertmanager sends them to SNS
    labels = {"alertname": ALERT, **NODE, **EFA_BOOT, "reason": REASON, "severity": "critical", **_rule().labels}
    policy = json.loads(RemediationPolicy().to_json())
    # WHEN the remediation handler reads it
    faults, skipped = alert_faults(_alertmanager_message(labels), policy["alert_triggers"])
    # THEN one NODE_CHECK_FAILED fault on the node, with the reason kept
    assert skipped == 0
    assert [(f.instance_id, f.trigger) for f in faults] == [(NODE["instance_id"], Trigger.NODE_CHECK_FAILED.value)]
    assert faults[0].details["reason"] == REASON


def test_the_trigger_label_wins_over_a_renamed_alert() -> None:
    labels = {"alertname": "MyRenamedCheckAlert", **NODE, names.TRIGGER_LABEL: names.TRIGGER_NODE_CHECK_FAILED}
    faults, _ = alert_faults(_alertmanager_message(labels), {})
    assert [f.trigger for f in faults] == [Trigger.NODE_CHECK_FAILED.value]


def test_cluster_wide_nccl_drop_remediates_no_node() -> None:
    # The login node publishes the NCCL metrics: its instance id must not become a fault.
    login = {**NODE, "instance": "i-0cccccccccccccccc", "instance_id": "i-0cccccccccccccccc"}
    labels = {"alertname": names.ALERT_NCCL_BELOW_BASELINE, **login, "severity": "warning"}
    policy = json.loads(RemediationPolicy().to_json())
    faults, skipped = alert_faults(_alertmanager_message(labels), policy["alert_triggers"])
    assert (faults, skipped) == ([], 1)


# --- FmNcclOutlier: the pairwise NCCL run's suspect, published by the login node ----------------------------------

LOGIN = {"cluster": "training", "instance": "i-0cccccccccccccccc", "instance_id": "i-0cccccccccccccccc", "job": "node"}
SUSPECT_ID = "i-02222222222222222"


def _outlier_cases() -> list[dict]:
    rule = next(r for r in nccl_rule_group().rules if r.name == names.ALERT_NCCL_OUTLIER)
    labels = {**LOGIN, "node": "gpu-2", "suspect_instance_id": SUSPECT_ID}
    fired = {
        **labels,
        "instance": SUSPECT_ID,
        "instance_id": SUSPECT_ID,
        "severity": "warning",
        names.TRIGGER_LABEL: names.TRIGGER_NCCL_OUTLIER,
    }
    firing = [
        {
            "exp_labels": fired,
            "exp_annotations": {
                "summary": rule.summary.replace("{{ $labels.node }}", "gpu-2"),
                "description": rule.description,
            },
        }
    ]
    no_id = {**LOGIN, "node": "gpu-5"}
    return [
        {
            "name": "suspect-then-cleared",
            "interval": "1m",
            "input_series": [
                _series(names.NCCL_SUSPECT_NODE, labels, "0x5 1x10 0x10"),
                _series(
                    names.NCCL_SUSPECT_NODE,
                    {**LOGIN, "node": "gpu-1", "suspect_instance_id": "i-01111111111111111"},
                    "0x30",
                ),
            ],
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": []},
                {"eval_time": "10m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": firing},
                {"eval_time": "25m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": []},
            ],
        },
        {
            # without the node's instance id the alert would name the login node: nothing fires
            "name": "suspect-without-instance-id",
            "interval": "1m",
            "input_series": [_series(names.NCCL_SUSPECT_NODE, no_id, "1x20")],
            "alert_rule_test": [{"eval_time": "10m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": []}],
        },
        {
            # the login node's metrics stop (it was replaced): the alert ends with its series
            "name": "publisher-gone",
            "interval": "1m",
            "input_series": [_series(names.NCCL_SUSPECT_NODE, labels, "1x5")],
            "alert_rule_test": [
                {"eval_time": "4m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": firing},
                {"eval_time": "20m", "alertname": names.ALERT_NCCL_OUTLIER, "exp_alerts": []},
            ],
        },
    ]


def test_nccl_outlier_fires_on_the_suspect_node_itself(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "nccl.yml"
    rules.write_text(rules_yaml([nccl_rule_group()]))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump(
            {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": _outlier_cases()}, sort_keys=False
        )
    )
    proc = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]


def test_the_outlier_alert_drains_the_suspect_not_the_login_node() -> None:
    rule = next(r for r in nccl_rule_group().rules if r.name == names.ALERT_NCCL_OUTLIER)
    labels = {
        "alertname": names.ALERT_NCCL_OUTLIER,
        **LOGIN,
        "instance": SUSPECT_ID,
        "instance_id": SUSPECT_ID,
        "node": "gpu-2",
        "severity": "warning",
        **rule.labels,
    }
    policy = RemediationPolicy()
    faults, _ = alert_faults(_alertmanager_message(labels), json.loads(policy.to_json())["alert_triggers"])
    assert [(f.instance_id, f.trigger) for f in faults] == [(SUSPECT_ID, Trigger.NCCL_OUTLIER.value)]
    assert policy.action_for(Trigger.NCCL_OUTLIER).value == "drain"


def test_only_the_outlier_rule_carries_a_trigger() -> None:
    carrying = {r.name for r in nccl_rule_group().rules if names.TRIGGER_LABEL in r.labels}
    assert carrying == {names.ALERT_NCCL_OUTLIER}
