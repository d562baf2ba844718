"""Observability: metric names, alert rules (this release); AMP/AMG constructs and node collectors follow."""

from .metrics import ALL_METRICS, dcgm_counters_csv, efa_metric
from .rules import AlertRule, AlertThresholds, RuleGroup, Severity, default_rule_groups, rules_yaml

__all__ = [
    "ALL_METRICS",
    "AlertRule",
    "AlertThresholds",
    "RuleGroup",
    "Severity",
    "dcgm_counters_csv",
    "default_rule_groups",
    "efa_metric",
    "rules_yaml",
]
