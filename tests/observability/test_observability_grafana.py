"""GrafanaWorkspace and GrafanaProvisioner constructs: template shape, least-privilege IAM, validation, the Lambda
asset, and (marked ``validation``) cdk-nag AwsSolutions and cfn-lint on a small stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_aps as aps
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.errors import FmValidationError
from fmconstructs.observability.dashboards import load_dashboards
from fmconstructs.observability.grafana import (
    GrafanaAccountAccess,
    GrafanaAuthentication,
    GrafanaPermissionType,
    GrafanaProvisioner,
    GrafanaWorkspace,
    SamlOptions,
)
from fmconstructs.observability.grafana.provisioner import GRAFANA_ACTIONS
from fmconstructs.observability.grafana.workspace import PROMETHEUS_QUERY_ACTIONS

from tests.conftest import ENV, new_app

AMP_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-11111111-2222-3333-4444-555555555555"
AMP_URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-11111111-2222-3333-4444-555555555555/"
SAML = SamlOptions(idp_metadata_url="https://idp.example.com/metadata", admin_role_values=("grafana-admins",))


def new_stack(app: cdk.App | None = None) -> cdk.Stack:
    return cdk.Stack(app or new_app(), "Obs", env=ENV)


def workspace(stack: cdk.Stack | None = None, **kwargs: object) -> GrafanaWorkspace:
    kwargs.setdefault("prometheus_workspace_arns", [AMP_ARN])
    return GrafanaWorkspace(stack or new_stack(), "Grafana", **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def provisioned() -> tuple[Template, GrafanaWorkspace, GrafanaProvisioner]:
    stack = new_stack()
    amp = aps.CfnWorkspace(stack, "Amp", alias="fm")
    ws = GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[AMP_ARN])
    prov = ws.provision(prometheus_workspace_arn=amp.attr_arn, prometheus_endpoint=amp.attr_prometheus_endpoint)
    return Template.from_stack(stack), ws, prov


def policy_statements(template: Template) -> list[dict]:
    return [
        s
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


# ---------------------------------------------------------------------------------------------------------------
# Workspace
# ---------------------------------------------------------------------------------------------------------------


def test_default_workspace_uses_sso_customer_managed_prometheus_and_is_retained():
    ws = workspace()
    template = Template.from_stack(cdk.Stack.of(ws))
    template.has_resource_properties(
        "AWS::Grafana::Workspace",
        {
            "AccountAccessType": "CURRENT_ACCOUNT",
            "AuthenticationProviders": ["AWS_SSO"],
            "PermissionType": "CUSTOMER_MANAGED",
            "DataSources": ["PROMETHEUS"],
            "GrafanaVersion": "10.4",
            "NotificationDestinations": Match.absent(),
            "SamlConfiguration": Match.absent(),
            "RoleArn": {"Fn::GetAtt": [Match.string_like_regexp("GrafanaRole"), "Arn"]},
        },
    )
    template.has_resource("AWS::Grafana::Workspace", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_workspace_role_trusts_grafana_for_this_account_only():
    template = Template.from_stack(cdk.Stack.of(workspace()))
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Service": "grafana.amazonaws.com"},
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": "123456789012"},
                                "StringLike": {"aws:SourceArn": Match.any_value()},
                            },
                        }
                    )
                ]
            }
        },
    )


def test_workspace_role_may_only_query_the_given_prometheus_workspaces():
    other = AMP_ARN.replace("ws-1111", "ws-9999")
    template = Template.from_stack(cdk.Stack.of(workspace(prometheus_workspace_arns=[AMP_ARN, other])))
    statements = policy_statements(template)
    assert statements == [
        {
            "Sid": "QueryAmazonManagedPrometheus",
            "Effect": "Allow",
            "Action": list(PROMETHEUS_QUERY_ACTIONS),
            "Resource": [AMP_ARN, other],
        }
    ]
    assert set(PROMETHEUS_QUERY_ACTIONS) == {
        "aps:QueryMetrics",
        "aps:GetSeries",
        "aps:GetLabels",
        "aps:GetMetricMetadata",
    }


def test_saml_configuration_is_typed_and_rendered():
    ws = workspace(authentication=[GrafanaAuthentication.AWS_SSO, GrafanaAuthentication.SAML], saml=SAML)
    Template.from_stack(cdk.Stack.of(ws)).has_resource_properties(
        "AWS::Grafana::Workspace",
        {
            "AuthenticationProviders": ["AWS_SSO", "SAML"],
            "SamlConfiguration": {
                "IdpMetadata": {"Url": "https://idp.example.com/metadata"},
                "AssertionAttributes": {"Role": "role"},
                "RoleValues": {"Admin": ["grafana-admins"]},
                "LoginValidityDuration": 120,
            },
        },
    )


def test_sns_notifications_grant_publish_and_the_topic_key_without_wildcards():
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key)
    template = Template.from_stack(cdk.Stack.of(workspace(stack, notification_topics=[topic])))
    template.has_resource_properties("AWS::Grafana::Workspace", {"NotificationDestinations": ["SNS"]})
    actions = {
        a for s in policy_statements(template) for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {"sns:Publish", "kms:GenerateDataKey", "kms:Decrypt"} <= actions
    assert not any("*" in a for a in actions)


def test_service_managed_permissions_warn():
    ws = workspace(permission_type=GrafanaPermissionType.SERVICE_MANAGED)
    Annotations.from_stack(cdk.Stack.of(ws)).has_warning(
        "/Obs/Grafana", Match.string_like_regexp("permission_type SERVICE_MANAGED")
    )
    Template.from_stack(cdk.Stack.of(ws)).has_resource_properties(
        "AWS::Grafana::Workspace", {"PermissionType": "SERVICE_MANAGED"}
    )


def test_organization_access_takes_organizational_units():
    ws = workspace(account_access=GrafanaAccountAccess.ORGANIZATION, organizational_units=["ou-abcd-12345678"])
    Template.from_stack(cdk.Stack.of(ws)).has_resource_properties(
        "AWS::Grafana::Workspace", {"AccountAccessType": "ORGANIZATION", "OrganizationalUnits": ["ou-abcd-12345678"]}
    )


def test_workspace_exposes_id_endpoint_and_arn():
    ws = workspace()
    stack = cdk.Stack.of(ws)
    assert stack.resolve(ws.workspace_id) == {"Fn::GetAtt": [stack.get_logical_id(ws.resource), "Id"]}
    arn = json.dumps(stack.resolve(ws.workspace_arn))
    assert ":grafana:us-east-1:123456789012:/workspaces/" in arn
    assert ws.prometheus_workspace_arns == (AMP_ARN,)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"prometheus_workspace_arns": []}, "prometheus_workspace_arns"),
        ({"prometheus_workspace_arns": ["arn:aws:s3:::bucket"]}, "prometheus_workspace_arns"),
        ({"authentication": [GrafanaAuthentication.SAML]}, "saml"),
        ({"saml": SAML}, "authentication"),
        ({"authentication": []}, "authentication"),
        ({"authentication": [GrafanaAuthentication.AWS_SSO, GrafanaAuthentication.AWS_SSO]}, "authentication"),
        ({"account_access": GrafanaAccountAccess.ORGANIZATION}, "organizational_units"),
        ({"organizational_units": ["ou-abcd-12345678"]}, "organizational_units"),
        ({"workspace_name": "bad name!"}, "workspace_name"),
        ({"permission_type": "CUSTOMER_MANAGED"}, "permission_type"),
        ({"description": "x" * 2049}, "description"),
    ],
)
def test_workspace_rejects_misuse(kwargs, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter}(\[\d+\])? must be .*, got "):
        workspace(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({}, "saml"),
        ({"idp_metadata_url": "https://x", "idp_metadata_xml": "<xml/>"}, "saml"),
        ({"idp_metadata_url": ""}, "idp_metadata_url"),
        ({"idp_metadata_url": "https://idp.example.com/" + "x" * 2048}, "idp_metadata_url"),
        ({"idp_metadata_xml": "<xml/>", "admin_role_values": ()}, "admin_role_values"),
        ({"idp_metadata_xml": "<xml/>", "login_validity_minutes": 0}, "login_validity_minutes"),
    ],
)
def test_saml_options_reject_misuse(kwargs, parameter):
    kwargs.setdefault("admin_role_values", ("admins",))
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be "):
        SamlOptions(**kwargs)


# ---------------------------------------------------------------------------------------------------------------
# Provisioner
# ---------------------------------------------------------------------------------------------------------------


def test_provisioner_custom_resource_carries_no_secret_and_names_every_dashboard(provisioned):
    template, _, _ = provisioned
    resources = template.find_resources("Custom::FmGrafanaProvisioning")
    assert len(resources) == 1
    props = next(iter(resources.values()))["Properties"]
    assert props["DashboardUids"] == [d.uid for d in load_dashboards()]
    assert props["DataSourceUid"] == "fm-amp"
    assert props["PrometheusUrl"] == {"Fn::GetAtt": ["Amp", "PrometheusEndpoint"]}
    assert set(props) == {
        "ServiceToken", "WorkspaceId", "GrafanaEndpoint", "PrometheusWorkspaceArn", "PrometheusUrl", "DataSourceUid",
        "DataSourceName", "DataSourceIsDefault", "FolderUid", "FolderTitle", "DashboardUids", "ServiceAccountName",
        "DashboardsDigest", "HandlerDigest",
    }  # fmt: skip
    assert not any(k.lower().endswith(("token", "key", "secret")) for k in props if k != "ServiceToken")


def test_provisioner_lambda_runs_the_latest_python_with_the_bundled_handler(provisioned):
    template, _, _ = provisioned
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Runtime": "python3.14", "Handler": "grafana.handler.index.on_event", "Timeout": 300},
    )


def test_provisioner_role_has_only_the_grafana_actions_it_needs_on_the_workspace(provisioned):
    template, _, _ = provisioned
    grafana_statements = [s for s in policy_statements(template) if "grafana:" in json.dumps(s["Action"])]
    assert len(grafana_statements) == 1
    (statement,) = grafana_statements
    assert statement["Action"] == list(GRAFANA_ACTIONS)
    assert ":/workspaces/" in json.dumps(statement["Resource"])
    assert "*" not in json.dumps(statement["Resource"])
    actions = {
        a for s in policy_statements(template) for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert not any(a.endswith("*") for a in actions)
    assert template.find_resources("AWS::IAM::Role", {"Properties": {"ManagedPolicyArns": Match.any_value()}}) == {}


def test_provision_lets_the_workspace_role_query_the_provisioned_prometheus(provisioned):
    template, ws, _ = provisioned
    query = [s for s in policy_statements(template) if s.get("Sid") == "QueryAmazonManagedPrometheus"]
    assert query[0]["Resource"] == [AMP_ARN, {"Fn::GetAtt": ["Amp", "Arn"]}]
    assert len(ws.prometheus_workspace_arns) == 2


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"prometheus_endpoint": "http://aps.example"}, "prometheus_endpoint"),
        ({"data_source_uid": "has space"}, "data_source_uid"),
        ({"folder_uid": "x" * 41}, "folder_uid"),
        ({"folder_title": "  "}, "folder_title"),
        ({"service_account_name": ""}, "service_account_name"),
        ({"service_account_name": "x" * 129}, "service_account_name"),
    ],
)
def test_provisioner_rejects_misuse(kwargs, parameter):
    ws = workspace()
    kwargs.setdefault("prometheus_endpoint", AMP_URL)
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be "):
        GrafanaProvisioner(ws, "P", workspace=ws, prometheus_workspace_arn=AMP_ARN, **kwargs)


def test_lambda_asset_holds_only_the_handler_and_dashboards_and_imports_standalone(tmp_path):
    # GIVEN a synthesized app
    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    ws = workspace(new_stack(app))
    ws.provision(prometheus_workspace_arn=AMP_ARN, prometheus_endpoint=AMP_URL)
    app.synth()
    # WHEN we look at the handler's asset
    (asset,) = [p for p in tmp_path.glob("asset.*") if (p / "grafana").exists()]
    files = sorted(str(p.relative_to(asset)) for p in asset.rglob("*") if p.is_file())
    # THEN it has the handler and the dashboards, and not grafana/__init__.py (which imports aws_cdk)
    assert files == sorted(
        ["grafana/handler/__init__.py", "grafana/handler/index.py"]
        + [f"dashboards/{d.file_name}" for d in load_dashboards()]
    )
    # AND the Lambda handler path imports from the asset alone and finds the dashboards
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import importlib; "
        "m = importlib.import_module('grafana.handler.index'); "
        "assert callable(m.on_event); print(len(m.load_dashboards()))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(asset)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == str(len(load_dashboards()))


def test_handler_imports_only_stdlib_and_boto3():
    import ast

    source = Path(__file__).parents[2] / "fmconstructs/observability/grafana/handler/index.py"
    roots = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.split(".")[0])
    assert roots - set(sys.stdlib_module_names) == {"boto3", "botocore"}


# ---------------------------------------------------------------------------------------------------------------
# Validation tier: cdk-nag AwsSolutions and cfn-lint with built-in validation on
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.validation
def test_workspace_and_provisioner_are_nag_and_cfn_lint_clean(tmp_path):
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = new_stack(app)
    amp = aps.CfnWorkspace(stack, "Amp", alias="fm")
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key, enforce_ssl=True)
    ws = GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[amp.attr_arn], notification_topics=[topic])
    ws.provision(prometheus_workspace_arn=amp.attr_arn, prometheus_endpoint=amp.attr_prometheus_endpoint)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding

    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [
        f"{m.rule.id} {m.message}" for m in lint_file(tmp_path / "Obs.template.json") if m.rule.severity == "error"
    ]
    assert errors == []
    acknowledged = [
        entry["data"]
        for entries in json.loads((tmp_path / "Obs.metadata.json").read_text()).values()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
    ]
    for rules in acknowledged:
        for rule, reason in rules.items():
            assert len(reason) >= 30, rule
