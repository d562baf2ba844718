"""PrometheusWorkspace: AMP workspace, rule namespace, Alertmanager to an encrypted SNS topic."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match

from fmconstructs import FmValidationError
from fmconstructs.observability.rules import (
    AlertThresholds,
    RuleGroup,
    default_rule_groups,
    gpu_health_rules,
    rules_yaml,
)
from fmconstructs.observability.workspace import PrometheusWorkspace, alertmanager_config


def test_workspace_defaults(scene):
    ws = PrometheusWorkspace(scene.stack, "Metrics", alias="training")
    t = scene.template()
    t.has_resource("AWS::APS::Workspace", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
    t.has_resource_properties(
        "AWS::APS::Workspace",
        {"Alias": "training", "LoggingConfiguration": {"LogGroupArn": Match.any_value()}},
    )
    t.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    t.has_resource_properties(
        "AWS::APS::RuleGroupsNamespace", {"Name": "fmconstructs", "Data": rules_yaml(default_rule_groups())}
    )
    assert ws.remote_write_url.endswith("api/v1/remote_write")


def test_sns_topic_accepts_only_amp_from_this_workspace_and_tls(scene):
    PrometheusWorkspace(scene.stack, "Metrics")
    policies = scene.template().find_resources("AWS::SNS::TopicPolicy")
    statements = next(iter(policies.values()))["Properties"]["PolicyDocument"]["Statement"]
    amp = [s for s in statements if s.get("Principal") == {"Service": "aps.amazonaws.com"}]
    assert amp and set(amp[0]["Action"]) == {"sns:Publish", "sns:GetTopicAttributes"}
    assert "aws:SourceArn" in amp[0]["Condition"]["ArnEquals"]
    assert any(s["Effect"] == "Deny" and "aws:SecureTransport" in str(s.get("Condition")) for s in statements)


def test_alert_manager_definition_routes_to_the_topic(scene):
    ws = PrometheusWorkspace(scene.stack, "Metrics")
    definition = scene.template().find_resources("AWS::APS::Workspace")
    raw = next(iter(definition.values()))["Properties"]["AlertManagerDefinition"]
    # The topic ARN is a reference: CloudFormation joins it into the YAML.
    assert "Fn::Join" in raw
    assert ws.alert_topic is not None


@pytest.fixture(scope="module")
def amtool() -> str:
    path = shutil.which("amtool")
    assert path, "amtool is missing: `make test` installs it (Debian package prometheus-alertmanager)"
    return path


def test_alertmanager_config_passes_amtool(amtool, tmp_path):
    text = alertmanager_config(topic_arn="arn:aws:sns:us-east-1:123456789012:alerts", region="us-east-1")
    path = tmp_path / "am.yml"
    path.write_text(text)
    proc = subprocess.run([amtool, "check-config", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parsed = yaml.safe_load(text)
    assert parsed["receivers"][0]["sns_configs"][0]["topic_arn"] == "arn:aws:sns:us-east-1:123456789012:alerts"


def test_custom_key_topic_and_extra_rules(scene):
    key = kms.Key(scene.stack, "Key")
    from aws_cdk import aws_sns as sns

    topic = sns.Topic(scene.stack, "Mine")
    extra = RuleGroup("team", gpu_health_rules(AlertThresholds()).rules[:1])
    PrometheusWorkspace(scene.stack, "Metrics", encryption_key=key, alert_topic=topic, extra_rule_groups=[extra])
    t = scene.template()
    t.has_resource_properties("AWS::APS::Workspace", {"KmsKeyArn": scene.stack.resolve(key.key_arn)})
    t.resource_count_is("AWS::SNS::Topic", 1)
    t.has_resource_properties("AWS::APS::RuleGroupsNamespace", {"Name": "fmconstructs-custom"})


def test_logging_can_be_off(scene):
    PrometheusWorkspace(scene.stack, "Metrics", enable_logging=False)
    props = next(iter(scene.template().find_resources("AWS::APS::Workspace").values()))["Properties"]
    assert "LoggingConfiguration" not in props
    scene.template().resource_count_is("AWS::Logs::LogGroup", 0)


def test_grants_are_scoped_to_the_workspace(scene):
    ws = PrometheusWorkspace(scene.stack, "Metrics")
    role = iam.Role(scene.stack, "Node", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    ws.grant_remote_write(role)
    ws.grant_query(role)
    doc = next(iter(scene.template().find_resources("AWS::IAM::Policy").values()))["Properties"]["PolicyDocument"]
    arn = scene.stack.resolve(ws.workspace_arn)
    actions = set()
    for statement in doc["Statement"]:
        assert statement["Resource"] == arn
        actions |= set(statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    assert actions == {"aps:RemoteWrite", "aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alias": ""}, r"alias must be 1-100 characters"),
        ({"alias": "x" * 101}, r"alias must be 1-100 characters"),
        ({"rule_namespace": "-_."}, r"rule_namespace must be 1-57 characters with a letter or digit"),
        ({"rule_namespace": "x" * 58}, r"rule_namespace must be 1-57 characters"),
        ({"rule_namespace": "fm\n"}, r"rule_namespace must be 1-57 characters"),
    ],
)
def test_invalid_props(scene, kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        PrometheusWorkspace(scene.stack, "Metrics", **kwargs)


def test_cloudwatch_alarms_may_publish_to_the_encrypted_topic(scene):
    PrometheusWorkspace(scene.stack, "Metrics")
    t = scene.template()
    topic_statements = next(iter(t.find_resources("AWS::SNS::TopicPolicy").values()))["Properties"]["PolicyDocument"][
        "Statement"
    ]
    cw = [s for s in topic_statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert cw and cw[0]["Action"] == "sns:Publish" and "AWS:SourceAccount" in str(cw[0]["Condition"])
    key_statements = next(iter(t.find_resources("AWS::KMS::Key").values()))["Properties"]["KeyPolicy"]["Statement"]
    services = [s["Principal"].get("Service") for s in key_statements if isinstance(s.get("Principal"), dict)]
    assert ["aps.amazonaws.com", "cloudwatch.amazonaws.com"] in services
