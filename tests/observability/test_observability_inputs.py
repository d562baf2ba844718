"""Every public constructor and function of fmconstructs.observability against wrong types, NaN/inf, bools as
numbers, a str where a list is expected, newline-suffixed strings and deploy-time values (issue 10 §1): the library's
error naming the parameter (a TypeError for a wrong type), never a raw exception or a raw token; and one stack where
everything that may be a deploy-time value is one, which synthesizes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.observability.collection import NodeLabels, agent_config, node_collection_commands
from fmconstructs.observability.eks import AmpEksScraper, eks_scrape_config, node_exporter_manifests
from fmconstructs.observability.grafana import (
    GrafanaAuthentication,
    GrafanaProvisioner,
    GrafanaWorkspace,
    SamlOptions,
)
from fmconstructs.observability.grafana.workspace import GrafanaNetworkAccess
from fmconstructs.observability.metrics import efa_metric
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.rules import (
    AlertRule,
    AlertThresholds,
    RuleGroup,
    Severity,
    default_rule_groups,
    rules_yaml,
)
from fmconstructs.observability.workspace import PrometheusWorkspace, alertmanager_config
from fmconstructs.pcs import PcsCluster

from tests.conftest import ENV, new_scene

AMP_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-11111111-2222-3333-4444-555555555555"
AMP_URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-11111111-2222-3333-4444-555555555555/"
TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:alerts"
KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
URL = AMP_URL + "api/v1/remote_write"
NAN, INF = float("nan"), float("inf")
T = True  # the case expects a TypeError (FmTypeError)
V = False  # the case expects a value error (FmValidationError, not a TypeError)

_counter = iter(range(1_000_000))


def _uid(prefix: str) -> str:
    return f"{prefix}{next(_counter)}"


@pytest.fixture(scope="module")
def world() -> dict[str, Any]:
    """One app with a workspace, a Grafana workspace, a PCS cluster and an EKS cluster that cases build on."""
    scene = new_scene()
    stack = scene.stack
    return {
        "scene": scene,
        "stack": stack,
        "amp": PrometheusWorkspace(stack, "Amp"),
        "grafana": GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[AMP_ARN]),
        "pcs": PcsCluster(stack, "Pcs", vpc=scene.vpc, subnet=scene.subnet_a),
        "eks": GpuEksCluster(stack, "Eks", vpc=scene.vpc),
        "token": cdk.CfnParameter(stack, "Anything").value_as_string,
        "number_token": cdk.CfnParameter(stack, "AnyNumber", type="Number").value_as_number,
    }


def _amp(w: dict[str, Any], **kw: Any) -> object:
    return PrometheusWorkspace(kw.pop("scope", w["stack"]), kw.pop("id", _uid("Amp")), **kw)


def _grafana(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("prometheus_workspace_arns", [AMP_ARN])
    return GrafanaWorkspace(kw.pop("scope", w["stack"]), kw.pop("id", _uid("Grafana")), **kw)


def _saml(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("idp_metadata_url", "https://idp.example.com/metadata")
    kw.setdefault("admin_role_values", ("admins",))
    return SamlOptions(**kw)


def _network(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("allowed_cidrs", ["203.0.113.0/24"])
    return GrafanaNetworkAccess(**kw)


def _provision(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("prometheus_workspace_arn", AMP_ARN)
    kw.setdefault("prometheus_endpoint", AMP_URL)
    return w["grafana"].provision(id=_uid("Provisioner"), **kw)


def _provisioner(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("prometheus_workspace_arn", AMP_ARN)
    kw.setdefault("prometheus_endpoint", AMP_URL)
    kw.setdefault("workspace", w["grafana"])
    return GrafanaProvisioner(w["stack"], _uid("Provisioner"), **kw)


def _labels(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("cluster", "training")
    return NodeLabels(**kw)


def _agent(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("remote_write_url", URL)
    kw.setdefault("region", "us-east-1")
    kw.setdefault("labels", NodeLabels(cluster="training"))
    return agent_config(**kw)


def _commands(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("remote_write_url", URL)
    kw.setdefault("region", "us-east-1")
    kw.setdefault("labels", NodeLabels(cluster="training"))
    return node_collection_commands(**kw)


def _scrape_config(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("cluster_label", "eks")
    return eks_scrape_config(**kw)


def _manifests(w: dict[str, Any], **kw: Any) -> object:
    return node_exporter_manifests(**kw)


def _monitor(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("cluster", w["pcs"])
    kw.setdefault("workspace", w["amp"])
    kw.setdefault("cluster_label", "training")
    cluster, workspace = kw.pop("cluster"), kw.pop("workspace")
    return monitor_pcs_cluster(cluster, workspace, **kw)


def _scraper(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("cluster", w["eks"])
    kw.setdefault("workspace", w["amp"])
    kw.setdefault("cluster_label", "eks")
    return AmpEksScraper(kw.pop("scope", w["stack"]), kw.pop("id", _uid("Scraper")), **kw)


def _thresholds(w: dict[str, Any], **kw: Any) -> object:
    return AlertThresholds(**kw)


def _rule(w: dict[str, Any], **kw: Any) -> object:
    args = {
        "name": "A",
        "expr": "up == 0",
        "for_": "5m",
        "severity": Severity.WARNING,
        "summary": "s",
        "description": "d",
        "metrics": ("up",),
    }
    args.update(kw)
    return AlertRule(**args)


def _group(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("name", "team")
    kw.setdefault("rules", (_rule(w),))
    return RuleGroup(**kw)


def _alertmanager(w: dict[str, Any], **kw: Any) -> object:
    kw.setdefault("topic_arn", TOPIC_ARN)
    kw.setdefault("region", "us-east-1")
    return alertmanager_config(**kw)


FACTORIES: dict[str, Callable[..., object]] = {
    "PrometheusWorkspace": _amp,
    "GrafanaWorkspace": _grafana,
    "SamlOptions": _saml,
    "GrafanaNetworkAccess": _network,
    "GrafanaWorkspace.provision": _provision,
    "GrafanaProvisioner": _provisioner,
    "NodeLabels": _labels,
    "agent_config": _agent,
    "node_collection_commands": _commands,
    "eks_scrape_config": _scrape_config,
    "node_exporter_manifests": _manifests,
    "monitor_pcs_cluster": _monitor,
    "AmpEksScraper": _scraper,
    "AlertThresholds": _thresholds,
    "AlertRule": _rule,
    "RuleGroup": _group,
    "alertmanager_config": _alertmanager,
}

TOKEN = "<string token>"  # replaced by a CfnParameter string in the test
NUMBER_TOKEN = "<number token>"

# (factory, parameter, value, TypeError?, parameter named in the message if not the keyword)
CASES: list[tuple[str, str, object, bool, str | None]] = [
    # --- PrometheusWorkspace
    ("PrometheusWorkspace", "scope", "stack", T, None),
    ("PrometheusWorkspace", "id", 5, T, None),
    ("PrometheusWorkspace", "alias", 5, T, None),
    ("PrometheusWorkspace", "alias", b"training", T, None),
    ("PrometheusWorkspace", "alias", "", V, None),
    ("PrometheusWorkspace", "alias", "x" * 101, V, None),
    ("PrometheusWorkspace", "encryption_key", 5, T, None),
    ("PrometheusWorkspace", "encryption_key", "alias/my-key", V, None),
    ("PrometheusWorkspace", "encryption_key", KEY_ARN + "\n", V, None),
    ("PrometheusWorkspace", "encryption_key", KEY_ARN.upper(), V, None),
    ("PrometheusWorkspace", "log_group", "my-log-group", T, None),
    ("PrometheusWorkspace", "enable_logging", "yes", T, None),
    ("PrometheusWorkspace", "enable_logging", 1, T, None),
    ("PrometheusWorkspace", "alert_topic", 5, T, None),
    ("PrometheusWorkspace", "alert_topic", "alerts", V, None),
    ("PrometheusWorkspace", "alert_topic", TOPIC_ARN + "\n", V, None),
    ("PrometheusWorkspace", "thresholds", {"idle_for": "1h"}, T, None),
    ("PrometheusWorkspace", "extra_rule_groups", "team", T, None),
    ("PrometheusWorkspace", "extra_rule_groups", [5], T, "extra_rule_groups[0]"),
    ("PrometheusWorkspace", "rule_namespace", 5, T, None),
    ("PrometheusWorkspace", "rule_namespace", "", V, None),
    ("PrometheusWorkspace", "rule_namespace", "fm\n", V, None),
    ("PrometheusWorkspace", "rule_namespace", "x" * 58, V, None),
    ("PrometheusWorkspace", "removal_policy", "RETAIN", T, None),
    # --- GrafanaWorkspace
    ("GrafanaWorkspace", "prometheus_workspace_arns", AMP_ARN, T, None),
    ("GrafanaWorkspace", "prometheus_workspace_arns", None, T, None),
    ("GrafanaWorkspace", "prometheus_workspace_arns", [5], T, "prometheus_workspace_arns[0]"),
    ("GrafanaWorkspace", "prometheus_workspace_arns", [AMP_ARN + "\n"], V, "prometheus_workspace_arns[0]"),
    ("GrafanaWorkspace", "prometheus_workspace_arns", [], V, None),
    ("GrafanaWorkspace", "workspace_name", 5, T, None),
    ("GrafanaWorkspace", "workspace_name", "grafana\n", V, None),
    ("GrafanaWorkspace", "workspace_name", "x" * 256, V, None),
    ("GrafanaWorkspace", "description", 5, T, None),
    ("GrafanaWorkspace", "description", "GPU observability\n", V, None),
    ("GrafanaWorkspace", "description", "tab\there", V, None),
    ("GrafanaWorkspace", "description", "x" * 2049, V, None),
    ("GrafanaWorkspace", "authentication", GrafanaAuthentication.AWS_SSO, T, None),
    ("GrafanaWorkspace", "authentication", "AWS_SSO", T, None),
    ("GrafanaWorkspace", "authentication", ["AWS_SSO"], T, "authentication[0]"),
    ("GrafanaWorkspace", "saml", "saml", T, None),
    ("GrafanaWorkspace", "permission_type", "CUSTOMER_MANAGED", T, None),
    ("GrafanaWorkspace", "account_access", "CURRENT_ACCOUNT", T, None),
    ("GrafanaWorkspace", "organizational_units", "ou-abcd-12345678", T, None),
    ("GrafanaWorkspace", "organizational_units", [5], T, "organizational_units[0]"),
    ("GrafanaWorkspace", "grafana_version", "10.4", T, None),
    ("GrafanaWorkspace", "notification_topics", TOPIC_ARN, T, None),
    ("GrafanaWorkspace", "notification_topics", [5], T, "notification_topics[0]"),
    ("GrafanaWorkspace", "notification_topics", ["alerts"], V, "notification_topics[0]"),
    ("GrafanaWorkspace", "plugin_admin_enabled", 0, T, None),
    ("GrafanaWorkspace", "plugin_admin_enabled", "false", T, None),
    ("GrafanaWorkspace", "network_access", "203.0.113.0/24", T, None),
    ("GrafanaWorkspace", "removal_policy", "DESTROY", T, None),
    # --- SamlOptions
    ("SamlOptions", "admin_role_values", "grafana-admins", T, None),
    ("SamlOptions", "admin_role_values", [5], T, "admin_role_values[0]"),
    ("SamlOptions", "admin_role_values", [""], V, "admin_role_values[0]"),
    ("SamlOptions", "admin_role_values", ["x" * 257], V, "admin_role_values[0]"),
    ("SamlOptions", "editor_role_values", "editors", T, None),
    ("SamlOptions", "allowed_organizations", "my-org", T, None),
    ("SamlOptions", "login_validity_minutes", True, T, None),
    ("SamlOptions", "login_validity_minutes", "120", T, None),
    ("SamlOptions", "login_validity_minutes", NAN, V, None),
    ("SamlOptions", "login_validity_minutes", INF, V, None),
    ("SamlOptions", "login_validity_minutes", 1.5, V, None),
    ("SamlOptions", "login_validity_minutes", 0, V, None),
    ("SamlOptions", "idp_metadata_url", 5, T, None),
    ("SamlOptions", "idp_metadata_url", "", V, None),
    ("SamlOptions", "role_attribute", 5, T, None),
    ("SamlOptions", "role_attribute", "", V, None),
    ("SamlOptions", "email_attribute", 5, T, None),
    # --- GrafanaNetworkAccess (AWS::Grafana::Workspace NetworkAccessControl takes prefix lists, not CIDRs)
    ("GrafanaNetworkAccess", "allowed_cidrs", "203.0.113.0/24", T, None),
    ("GrafanaNetworkAccess", "allowed_cidrs", [5], T, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "allowed_cidrs", ["203.0.113.7/24"], V, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "allowed_cidrs", ["300.0.0.0/8"], V, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "allowed_cidrs", ["203.0.113.0/24\n"], V, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "allowed_cidrs", ["my office"], V, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "allowed_cidrs", [TOKEN], V, "allowed_cidrs[0]"),
    ("GrafanaNetworkAccess", "prefix_list_ids", "pl-1a2b3c4d", T, None),
    ("GrafanaNetworkAccess", "prefix_list_ids", [""], V, "prefix_list_ids[0]"),
    ("GrafanaNetworkAccess", "vpc_endpoint_ids", "vpce-1a2b3c4d", T, None),
    ("GrafanaNetworkAccess", "allowed_cidrs", [], V, "network_access"),
    # --- provision() / GrafanaProvisioner
    ("GrafanaWorkspace.provision", "prometheus_workspace_arn", 5, T, None),
    (
        "GrafanaWorkspace.provision",
        "prometheus_workspace_arn",
        "arn:aws:aps:us-east-1:123456789012:workspace/",
        V,
        None,
    ),
    ("GrafanaWorkspace.provision", "prometheus_endpoint", 5, T, None),
    ("GrafanaWorkspace.provision", "prometheus_endpoint", "http://aps.example", V, None),
    ("GrafanaWorkspace.provision", "prometheus_endpoint", AMP_URL + "\n", V, None),
    ("GrafanaWorkspace.provision", "data_source_uid", 5, T, None),
    ("GrafanaWorkspace.provision", "data_source_uid", "fm-amp\n", V, None),
    ("GrafanaWorkspace.provision", "folder_uid", "x" * 41, V, None),
    ("GrafanaWorkspace.provision", "data_source_name", 5, T, None),
    ("GrafanaWorkspace.provision", "data_source_name", "AMP\n", V, None),
    ("GrafanaWorkspace.provision", "folder_title", "   ", V, None),
    ("GrafanaWorkspace.provision", "service_account_name", 5, T, None),
    ("GrafanaWorkspace.provision", "service_account_name", "", V, None),
    ("GrafanaWorkspace.provision", "data_source_is_default", "yes", T, None),
    ("GrafanaWorkspace.provision", "log_retention", 90, T, None),
    ("GrafanaProvisioner", "workspace", "g-1234567890", T, None),
    # --- node collection
    ("NodeLabels", "cluster", 5, T, None),
    ("NodeLabels", "cluster", None, T, None),
    ("NodeLabels", "cluster", "", V, None),
    ("NodeLabels", "cluster", "training\n", V, None),
    ("NodeLabels", "cluster", "has space", V, None),
    ("NodeLabels", "queue", 5, T, None),
    ("NodeLabels", "instance_type", "p5.48xlarge\n", V, None),
    ("agent_config", "remote_write_url", 5, T, None),
    ("agent_config", "remote_write_url", "", V, None),
    ("agent_config", "region", None, T, None),
    ("agent_config", "labels", "training", T, None),
    ("agent_config", "instance_id", 5, T, None),
    ("agent_config", "scrape_interval", 30, T, None),
    ("agent_config", "scrape_interval", 30.0, T, None),
    ("agent_config", "scrape_interval", True, T, None),
    ("agent_config", "scrape_interval", "30", V, None),
    ("agent_config", "scrape_interval", "30s\n", V, None),
    ("agent_config", "login_node", "no", T, None),
    ("agent_config", "login_node", 1, T, None),
    ("node_collection_commands", "node_exporter_version", "1.9.1; rm -rf /", V, None),
    ("node_collection_commands", "node_exporter_version", 191, T, None),
    ("node_collection_commands", "node_exporter_version", "1.9.1\n", V, None),
    ("node_collection_commands", "prometheus_version", TOKEN, V, None),
    ("node_collection_commands", "dcgm_exporter_image", "my image", V, None),
    ("node_collection_commands", "scrape_interval", NAN, T, None),
    ("node_collection_commands", "login_node", None, T, None),
    # --- EKS
    ("eks_scrape_config", "cluster_label", 5, T, None),
    ("eks_scrape_config", "cluster_label", TOKEN, V, None),
    ("eks_scrape_config", "cluster_label", "eks\n", V, None),
    ("eks_scrape_config", "scrape_interval", INF, T, None),
    ("node_exporter_manifests", "namespace", "Bad_Namespace", V, None),
    ("node_exporter_manifests", "namespace", "fm-monitoring\n", V, None),
    ("node_exporter_manifests", "namespace", 5, T, None),
    ("AmpEksScraper", "cluster", "my-cluster", T, None),
    ("AmpEksScraper", "workspace", 5, T, None),
    ("AmpEksScraper", "workspace", "ws-12345", V, None),
    ("AmpEksScraper", "cluster_label", 5, T, None),
    ("AmpEksScraper", "cluster_label", TOKEN, V, None),
    ("AmpEksScraper", "subnets", "subnet-0aaaaaaaaaaaaaaa1", T, None),
    ("AmpEksScraper", "subnets", ["subnet-0aaaaaaaaaaaaaaa1"], T, "subnets[0]"),
    ("AmpEksScraper", "subnets", [], V, None),
    ("AmpEksScraper", "scrape_interval", True, T, None),
    ("AmpEksScraper", "install_node_exporter", "yes", T, None),
    ("AmpEksScraper", "id", None, T, None),
    # --- PCS
    ("monitor_pcs_cluster", "cluster", "pcs_abc123", T, None),
    ("monitor_pcs_cluster", "workspace", AMP_ARN, T, None),
    ("monitor_pcs_cluster", "cluster_label", 5, T, None),
    ("monitor_pcs_cluster", "cluster_label", "bad label", V, None),
    ("monitor_pcs_cluster", "cluster_label", "training\n", V, None),
    ("monitor_pcs_cluster", "scrape_interval", "30m1h", V, None),
    ("monitor_pcs_cluster", "scrape_interval", 30, T, None),
    # --- rules
    ("AlertThresholds", "gpu_temperature_celsius", NAN, V, None),
    ("AlertThresholds", "gpu_temperature_celsius", INF, V, None),
    ("AlertThresholds", "gpu_temperature_celsius", True, T, None),
    ("AlertThresholds", "gpu_temperature_celsius", "87", T, None),
    ("AlertThresholds", "gpu_temperature_celsius", NUMBER_TOKEN, V, None),
    ("AlertThresholds", "memory_temperature_celsius", -INF, V, None),
    ("AlertThresholds", "idle_gpu_util_percent", 101, V, None),
    ("AlertThresholds", "idle_gpu_min_memory_mib", -1, V, None),
    ("AlertThresholds", "pcie_replays_per_second", NAN, V, None),
    ("AlertThresholds", "throttle_ratio", NAN, V, None),
    ("AlertThresholds", "filesystem_free_ratio", False, T, None),
    ("AlertThresholds", "critical_xids", "48", T, None),
    ("AlertThresholds", "critical_xids", 48, T, None),
    ("AlertThresholds", "critical_xids", [True], T, "critical_xids[0]"),
    ("AlertThresholds", "critical_xids", [79.5], V, "critical_xids[0]"),
    ("AlertThresholds", "critical_xids", [NAN], V, "critical_xids[0]"),
    ("AlertThresholds", "temperature_for", 5, T, None),
    ("AlertThresholds", "temperature_for", True, T, None),
    ("AlertThresholds", "temperature_for", "5m\n", V, None),
    ("AlertRule", "name", 5, T, None),
    ("AlertRule", "name", "", V, None),
    ("AlertRule", "expr", "", V, None),
    ("AlertRule", "for_", 300, T, None),
    ("AlertRule", "severity", "critical", T, None),
    ("AlertRule", "summary", None, T, None),
    ("AlertRule", "metrics", "up", T, None),
    ("AlertRule", "labels", "team=gpu", T, None),
    ("AlertRule", "labels", {"severity": "page"}, V, None),
    ("AlertRule", "labels", {"__name__": "x"}, V, "labels key"),
    ("AlertRule", "labels", {5: "x"}, T, "labels key"),
    ("RuleGroup", "name", "", V, None),
    ("RuleGroup", "name", 5, T, None),
    ("RuleGroup", "rules", "rule", T, None),
    ("RuleGroup", "rules", [5], T, "rules[0]"),
    ("RuleGroup", "interval", 60, T, None),
    ("alertmanager_config", "topic_arn", 5, T, None),
    ("alertmanager_config", "region", 5, T, None),
    ("alertmanager_config", "group_by", "cluster", T, None),
    ("alertmanager_config", "group_by", [""], V, "group_by[0]"),
]


def _resolve(world: dict[str, Any], value: object) -> object:
    if value == TOKEN:
        return world["token"]
    if value == NUMBER_TOKEN:
        return world["number_token"]
    if isinstance(value, list):
        return [_resolve(world, v) for v in value]
    return value


@pytest.mark.parametrize(("factory", "parameter", "value", "type_error", "named"), CASES)
def test_bad_input_raises_the_library_error_naming_the_parameter(world, factory, parameter, value, type_error, named):
    with pytest.raises(FmValidationError) as raised:
        FACTORIES[factory](world, **{parameter: _resolve(world, value)})
    message = str(raised.value)
    assert re.match(rf"{re.escape(named or parameter)} must be ", message), message
    assert isinstance(raised.value, TypeError) == type_error, message
    assert isinstance(raised.value, FmTypeError) == type_error
    assert "${Token[" not in message and "Token[" not in message


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: rules_yaml("groups"), "groups"),
        (lambda: rules_yaml([5]), r"groups\[0\]"),
        (lambda: default_rule_groups("strict"), "thresholds"),
        (lambda: efa_metric(5), "counter"),
        (lambda: efa_metric("tx_bytes\n"), "counter"),
        (lambda: efa_metric("Tx Bytes"), "counter"),
        (lambda: AlertThresholds(critical_xids=()), "critical_xids"),
        (lambda: AlertThresholds(throttle_ratio=1.5), "throttle_ratio"),
    ],
)
def test_module_functions_name_their_parameter(call, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be "):
        call()


def test_duplicate_rule_group_names_are_refused(world):
    group = _group(world)
    with pytest.raises(FmValidationError, match=r"^extra_rule_groups must be rule groups with distinct names"):
        _amp(world, extra_rule_groups=[group, group])


def test_a_str_is_never_iterated_as_a_list(world):
    """The issue's examples: SAML admin values and CIDRs given as one string used to become one value per character."""
    with pytest.raises(TypeError, match=r"^admin_role_values must be a list of str"):
        SamlOptions(idp_metadata_url="https://idp.example.com/metadata", admin_role_values="grafana-admins")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^allowed_cidrs must be a list of str"):
        GrafanaNetworkAccess(allowed_cidrs="203.0.113.0/24")  # type: ignore[arg-type]


def test_nan_and_inf_never_reach_jsii(world):
    """After a refused NaN the jsii runtime still works (issue 10: NaN used to kill every later CDK call)."""
    for value in (NAN, INF, -INF):
        with pytest.raises(FmValidationError):
            _saml(world, login_validity_minutes=value)
        with pytest.raises(FmValidationError):
            AlertThresholds(gpu_temperature_celsius=value)
    assert math.isnan(NAN)
    _amp(world)  # jsii still answers


# --- everything is a deploy-time value ------------------------------------------------------------------------


def test_everything_that_may_be_a_deploy_time_value_synthesizes():
    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Tokens")  # environment-agnostic

    def param(name: str) -> str:
        return cdk.CfnParameter(stack, name).value_as_string

    amp = PrometheusWorkspace(
        stack,
        "Amp",
        alias=param("Alias"),
        encryption_key=param("KeyArn"),
        alert_topic=cdk.Fn.import_value("AlertTopicArn"),
        rule_namespace=param("Namespace"),
    )
    saml = SamlOptions(
        idp_metadata_url=param("IdpMetadataUrl"),
        admin_role_values=(param("AdminRole"),),
        editor_role_values=(param("EditorRole"),),
        role_attribute=param("RoleAttribute"),
        allowed_organizations=(param("Org"),),
        login_validity_minutes=cdk.CfnParameter(stack, "LoginMinutes", type="Number").value_as_number,
    )
    grafana = GrafanaWorkspace(
        stack,
        "Grafana",
        prometheus_workspace_arns=[amp.workspace_arn, cdk.Fn.import_value("OtherWorkspaceArn")],
        workspace_name=param("GrafanaName"),
        description=param("GrafanaDescription"),
        authentication=[GrafanaAuthentication.SAML],
        saml=saml,
        notification_topics=[amp.alert_topic, param("TeamTopicArn")],
        network_access=GrafanaNetworkAccess(
            allowed_cidrs=["203.0.113.0/24", "2001:db8::/32"],
            prefix_list_ids=[param("PrefixListId")],
            vpc_endpoint_ids=[param("VpceId")],
        ),
    )
    grafana.provision(
        prometheus_workspace_arn=cdk.Fn.import_value("OtherWorkspaceArn"),
        prometheus_endpoint=param("PrometheusUrl"),
        data_source_name=param("DataSourceName"),
        folder_title=param("FolderTitle"),
        service_account_name=param("ServiceAccount"),
        # network_access: the provisioner runs in a VPC given by deploy-time ids too
        vpc=ec2.Vpc.from_vpc_attributes(
            stack, "Vpc", vpc_id=param("VpcId"), availability_zones=["a"], private_subnet_ids=[param("SubnetId")]
        ),
    )
    template = Template.from_stack(stack)
    text = json.dumps(template.to_json())
    assert "${Token[" not in text
    template.has_resource_properties("AWS::APS::Workspace", {"Alias": {"Ref": "Alias"}, "KmsKeyArn": {"Ref": "KeyArn"}})
    template.has_resource_properties("AWS::APS::RuleGroupsNamespace", {"Name": {"Ref": "Namespace"}})
    grafana_props = next(iter(template.find_resources("AWS::Grafana::Workspace").values()))["Properties"]
    assert grafana_props["Name"] == {"Ref": "GrafanaName"}
    assert grafana_props["SamlConfiguration"]["LoginValidityDuration"] == {"Ref": "LoginMinutes"}
    access = grafana_props["NetworkAccessControl"]
    assert {"Ref": "PrefixListId"} in access["PrefixListIds"] and access["VpceIds"] == [{"Ref": "VpceId"}]
    families = {p["Properties"]["AddressFamily"] for p in template.find_resources("AWS::EC2::PrefixList").values()}
    assert families == {"IPv4", "IPv6"}


def test_eks_scraper_writes_to_a_workspace_given_by_arn():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    subnet = ec2.Subnet.from_subnet_id(scene.stack, "NoZone", cdk.Fn.import_value("ScraperSubnet"))
    AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=cdk.Fn.import_value("SharedWorkspaceArn"),
        cluster_label="eks",
        subnets=[subnet],
    )
    props = next(iter(Template.from_stack(scene.stack).find_resources("AWS::APS::Scraper").values()))["Properties"]
    assert props["Destination"]["AmpConfiguration"]["WorkspaceArn"] == {"Fn::ImportValue": "SharedWorkspaceArn"}
    assert props["Source"]["EksConfiguration"]["SubnetIds"] == [{"Fn::ImportValue": "ScraperSubnet"}]


def test_node_collection_takes_deploy_time_url_region_and_labels():
    stack = cdk.Stack(cdk.App(), "S", env=ENV)
    url = cdk.CfnParameter(stack, "Url").value_as_string
    label = cdk.CfnParameter(stack, "Label").value_as_string
    lines = node_collection_commands(remote_write_url=url, region=cdk.Aws.REGION, labels=NodeLabels(cluster=label))
    assert any("{Token[" in line for line in lines)  # resolved by CloudFormation in user data


def test_imported_topic_is_used_as_the_alert_destination():
    stack = cdk.Stack(cdk.App(), "S", env=ENV)
    amp = PrometheusWorkspace(stack, "Amp", alert_topic=TOPIC_ARN)
    assert amp.alert_topic.topic_arn == TOPIC_ARN
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 0)
    definition = next(iter(template.find_resources("AWS::APS::Workspace").values()))["Properties"]
    assert TOPIC_ARN in json.dumps(definition["AlertManagerDefinition"])
