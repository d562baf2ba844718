"""The GPU health rules are built one alert family at a time (issue 25): the rendered default rule file is unchanged.

``tests/data/default_rules.yaml`` is ``rules_yaml(default_rule_groups())`` as rendered before the split.
"""

from __future__ import annotations

from pathlib import Path

from fmconstructs.observability import rules
from fmconstructs.observability.rules import AlertThresholds, default_rule_groups, gpu_health_rules, rules_yaml

GOLDEN = Path(__file__).parents[1] / "data" / "default_rules.yaml"


def test_default_rules_yaml_byte_identical() -> None:
    assert rules_yaml(default_rule_groups()) == GOLDEN.read_text(encoding="utf-8")


def test_gpu_health_rules_is_the_families_in_order() -> None:
    t = AlertThresholds()
    families = (
        rules._gpu_xid_rules,
        rules._gpu_memory_rules,
        rules._gpu_temperature_rules,
        rules._gpu_throttling_rules,
        rules._gpu_interconnect_rules,
    )
    expected = [rule.name for family in families for rule in family(t)]
    assert [rule.name for rule in gpu_health_rules(t).rules] == expected
    # GpuCriticalXid twice (fatal, reset: issue 29), then GpuContainedXid and GpuXidError
    assert expected[:4] == ["GpuCriticalXid", "GpuCriticalXid", "GpuContainedXid", "GpuXidError"]
    assert expected[-1] == "GpuPcieReplays" and len(expected) == 13
