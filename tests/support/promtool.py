"""``promtool test rules`` for tests that fire a few alerts of a rendered rule file (the Xid classes, issue 29)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from fmconstructs.observability.rules import AlertRule, RuleGroup, rules_yaml

Series = tuple[str, dict[str, str], str]


def promtool_path() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make test` installs it (Debian package prometheus)"
    return path


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def render(template: str, labels: dict[str, str], value: str | None) -> str:
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    if "$value" in out:
        assert value is not None, f"set the rendered $value for {template!r}"
        out = out.replace("{{ $value }}", value)
    return out


def rule_for(groups: Iterable[RuleGroup], name: str, labels: dict[str, str]) -> AlertRule:
    """The one rule named ``name`` whose own labels ``labels`` carries (an alert name may have a rule per class)."""
    rules = [
        r
        for g in groups
        for r in g.rules
        if isinstance(r, AlertRule) and r.name == name and r.labels.items() <= labels.items()
    ]
    assert len(rules) == 1, (name, labels, rules)
    return rules[0]


def expected_alert(rule: AlertRule, labels: dict[str, str], value: str | None) -> dict[str, Any]:
    """What promtool should see firing: ``labels`` (the series' and the rule's) and the rendered annotations."""
    return {
        "exp_labels": {**labels, "severity": rule.severity.value},
        "exp_annotations": {
            "summary": render(rule.summary, labels, value),
            "description": render(rule.description, labels, value),
        },
    }


def case(
    name: str, inputs: Sequence[Series], eval_time: str, expected: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """One promtool test: the input series, then each alert name's exact list of firing alerts at ``eval_time``."""
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": series(m, lbl), "values": v} for m, lbl, v in inputs],
        "alert_rule_test": [
            {"eval_time": eval_time, "alertname": alert, "exp_alerts": alerts} for alert, alerts in expected.items()
        ],
    }


def run_tests(groups: Sequence[RuleGroup], tests: list[dict[str, Any]], tmp_path: Path) -> str:
    """``promtool test rules`` of ``tests`` against ``groups`` rendered; returns promtool's output (asserts success)."""
    rule_file = tmp_path / "rules.yml"
    rule_file.write_text(rules_yaml(groups))
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rule_file)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run([promtool_path(), "test", "rules", str(test_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-8000:]
    assert "SUCCESS" in proc.stdout
    return proc.stdout
