"""Observability: metric names, alert rules, the AMP workspace, node-side collection for Slurm nodes, the AMP managed
scraper for EKS (``fmconstructs.observability.eks``), PCS wiring (``fmconstructs.observability.pcs``), Grafana and
dashboards."""

from .collection import NodeLabels, agent_config, node_collection_commands
from .dashboards import Dashboard, load_dashboards
from .grafana import (
    GrafanaAccountAccess,
    GrafanaAuthentication,
    GrafanaNetworkAccess,
    GrafanaPermissionType,
    GrafanaProvisioner,
    GrafanaVersion,
    GrafanaWorkspace,
    SamlOptions,
)
from .metrics import ALL_METRICS, dcgm_counters_csv, efa_metric
from .rules import AlertRule, AlertThresholds, RuleGroup, Severity, default_rule_groups, rules_yaml
from .sources import ExporterSource, ExporterSourceKind
from .workspace import PrometheusWorkspace, alertmanager_config

__all__ = [
    "ALL_METRICS",
    "AlertRule",
    "AlertThresholds",
    "Dashboard",
    "ExporterSource",
    "ExporterSourceKind",
    "GrafanaAccountAccess",
    "GrafanaAuthentication",
    "GrafanaNetworkAccess",
    "GrafanaPermissionType",
    "GrafanaProvisioner",
    "GrafanaVersion",
    "GrafanaWorkspace",
    "NodeLabels",
    "PrometheusWorkspace",
    "RuleGroup",
    "SamlOptions",
    "Severity",
    "agent_config",
    "alertmanager_config",
    "dcgm_counters_csv",
    "default_rule_groups",
    "efa_metric",
    "load_dashboards",
    "node_collection_commands",
    "rules_yaml",
]
