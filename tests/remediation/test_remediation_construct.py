"""NodeRemediation's template: least-privilege IAM per backend, encrypted DLQ, the alert-topic subscription that drops
the handler's own notices, the AWS Health rule, the state table, EKS access, and cdk-nag with nothing unacknowledged."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.remediation import (
    EVICTION_RULES,
    HELD_BACK_METRIC,
    HELD_BACK_NAMESPACE,
    JobKill,
    NodeRemediation,
    RemediationPolicy,
    RemediationTarget,
)

from tests.conftest import ENV, new_app

PCS = {"cluster_id": "pcs_c1", "login_node_group_id": "pcs_login", "compute_node_group_ids": ["pcs_gpu", "pcs_gpu2"]}


def _stack() -> tuple[cdk.Stack, sns.Topic]:
    stack = cdk.Stack(new_app(), "Remediation", env=ENV)
    return stack, sns.Topic(stack, "Alerts")


def _build(target: RemediationTarget | None = None, **kwargs: Any) -> Template:
    stack, topic = _stack()
    NodeRemediation(stack, "Fix", alert_topic=topic, target=target or RemediationTarget.pcs(**PCS), **kwargs)
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def pcs_template() -> Template:
    return _build(policy=RemediationPolicy(dry_run=False, job_kill=JobKill.FATAL, max_replacements_per_hour=4))


def _statements(template: Template) -> list[dict[str, Any]]:
    (policy,) = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for lid, r in template.find_resources("AWS::IAM::Policy").items()
        if lid.startswith("FixHandlerRole")
    ]
    return list(policy)


def _by_sid(template: Template) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in _statements(template) if "Sid" in s}


def test_pcs_iam_is_scoped_to_the_clusters_node_groups(pcs_template):
    sids = _by_sid(pcs_template)
    assert sids["SlurmOnLoginNodes"]["Condition"] == {
        "StringEquals": {"ssm:resourceTag/aws:pcs:compute-node-group-id": "pcs_login"}
    }
    assert sids["ReplaceComputeNodes"]["Action"] == "ec2:TerminateInstances"
    assert sids["ReplaceComputeNodes"]["Condition"] == {
        "StringEquals": {"ec2:ResourceTag/aws:pcs:compute-node-group-id": ["pcs_gpu", "pcs_gpu2"]}
    }
    actions = {
        a for s in _statements(pcs_template) for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert "autoscaling:SetInstanceHealth" not in actions and "eks:DescribeCluster" not in actions
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "sns:Publish"} <= actions
    assert not any(a.endswith("*") and a.startswith("dynamodb") for a in actions)
    wildcard = [s for s in _statements(pcs_template) if s["Resource"] == "*"]
    assert [s["Action"] for s in wildcard] == ["ec2:DescribeInstances", "ssm:GetCommandInvocation"]


def test_handler_gets_policy_and_target_and_a_dead_letter_queue(pcs_template):
    (function,) = pcs_template.find_resources("AWS::Lambda::Function").values()
    props = function["Properties"]
    env = props["Environment"]["Variables"]
    assert json.loads(env["POLICY"])["max_replacements_per_hour"] == 4
    assert json.loads(env["TARGET"])["compute_node_group_ids"] == ["pcs_gpu", "pcs_gpu2"]
    assert props["Runtime"] == "python3.14"
    assert "DeadLetterConfig" in props
    pcs_template.has_resource_properties("AWS::SQS::Queue", {"SqsManagedSseEnabled": True})


def test_handler_runs_long_enough_for_a_burst_of_ssm_commands(pcs_template):
    (function,) = pcs_template.find_resources("AWS::Lambda::Function").values()
    assert function["Properties"]["Timeout"] == 300
    assert _by_sid(pcs_template)["ReadScriptResult"]["Action"] == "ssm:GetCommandInvocation"


def test_held_back_replacements_are_counted_from_the_handlers_log(pcs_template):
    (mf,) = pcs_template.find_resources("AWS::Logs::MetricFilter").values()
    props = mf["Properties"]
    assert props["FilterPattern"] == '{ ($.event = "remediation") && ($.outcome = "rate-limited") }'
    assert props["LogGroupName"]["Ref"].startswith("FixHandlerLogs")
    (transformation,) = props["MetricTransformations"]
    assert transformation == {
        "MetricNamespace": HELD_BACK_NAMESPACE,
        "MetricName": HELD_BACK_METRIC,
        "MetricValue": "1",
        "Dimensions": [{"Key": "Cluster", "Value": "$.cluster"}],
        "Unit": "Count",
    }


def test_an_alarm_on_held_back_replacements_notifies_the_alert_topic(pcs_template):
    (alarm,) = pcs_template.find_resources("AWS::CloudWatch::Alarm").values()
    props = alarm["Properties"]
    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == (
        HELD_BACK_NAMESPACE,
        HELD_BACK_METRIC,
        "Sum",
    )
    assert props["Dimensions"] == [{"Name": "Cluster", "Value": "pcs_c1"}]
    assert (props["Threshold"], props["EvaluationPeriods"], props["Period"]) == (1, 1, 300)
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    (action,) = props["AlarmActions"]
    assert action["Ref"].startswith("Alerts")
    assert "max_replacements_per_hour=4" in props["AlarmDescription"]


def test_subscription_drops_the_handlers_own_notices(pcs_template):
    pcs_template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "lambda", "FilterPolicy": {"fmconstructs_notice": [{"exists": False}]}},
    )


def test_health_rule_matches_ec2_scheduled_changes_with_a_dlq(pcs_template):
    pcs_template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.health"],
                "detail-type": ["AWS Health Event"],
                "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
            },
            "Targets": [Match.object_like({"DeadLetterConfig": Match.any_value(), "RetryPolicy": Match.any_value()})],
        },
    )


def test_state_table_is_encrypted_on_demand_with_pitr_and_ttl_and_disposable(pcs_template):
    pcs_template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "BillingMode": "PAY_PER_REQUEST",
                    "SSESpecification": {"SSEEnabled": True},
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
                }
            ),
            "DeletionPolicy": "Delete",
        },
    )


def test_parallelcluster_sends_commands_to_its_head_node_only():
    sids = _by_sid(_build(RemediationTarget.parallelcluster(cluster_name="train")))
    assert sids["SlurmOnHeadNode"]["Condition"] == {
        "StringEquals": {
            "ssm:resourceTag/parallelcluster:cluster-name": "train",
            "ssm:resourceTag/parallelcluster:node-type": "HeadNode",
        }
    }
    assert "ReplaceComputeNodes" not in sids  # clustermgtd replaces ParallelCluster nodes


def test_auto_scaling_group_health_is_scoped_to_the_group():
    sids = _by_sid(_build(RemediationTarget.auto_scaling_group(group_name="gpu-asg")))
    resource = json.dumps(sids["ReplaceGroupInstances"]["Resource"])
    assert "autoScalingGroupName/gpu-asg" in resource
    assert sids["RebootGroupInstances"]["Condition"] == {
        "StringEquals": {"ec2:ResourceTag/aws:autoscaling:groupName": "gpu-asg"}
    }
    assert "SlurmOnLoginNodes" not in sids and "DescribeInstances" not in sids


HYPERPOD_ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"


def test_hyperpod_calls_the_sagemaker_api_on_its_cluster_only():
    sids = _by_sid(_build(RemediationTarget.hyperpod(cluster_name="train", cluster_arn=HYPERPOD_ARN)))
    assert sids["FindClusterNodes"]["Action"] == "sagemaker:ListClusterNodes"
    assert sids["FindClusterNodes"]["Resource"] == HYPERPOD_ARN
    assert sorted(sids["RebootOrReplaceClusterNodes"]["Action"]) == [
        "sagemaker:BatchRebootClusterNodes",
        "sagemaker:BatchReplaceClusterNodes",
    ]
    assert sids["RebootOrReplaceClusterNodes"]["Resource"] == HYPERPOD_ARN
    # no Slurm through SSM, no EC2 (HyperPod's instances are the service's)
    actions = json.dumps([s["Action"] for s in sids.values()])
    assert "ssm:" not in actions and "ec2:" not in actions


@pytest.mark.parametrize("backend", ["hyperpod", "pcs", "parallelcluster"])
def test_only_hyperpod_warns_that_it_sets_no_slurm_state(backend):
    stack, topic = _stack()
    target = {
        "hyperpod": lambda: RemediationTarget.hyperpod(cluster_name="train", cluster_arn=HYPERPOD_ARN),
        "pcs": lambda: RemediationTarget.pcs(**PCS),
        "parallelcluster": lambda: RemediationTarget.parallelcluster(cluster_name="train"),
    }[backend]()
    NodeRemediation(stack, "Fix", alert_topic=topic, target=target)
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("SSM Run Command does not reach"))
    if backend == "hyperpod":
        assert [w.id for w in found] == ["/Remediation/Fix"]
        assert WarningId.HYPERPOD_REMEDIATION_LIMITS.qualified in str(found[0].entry.data)
    else:
        assert not found


@pytest.fixture(scope="module")
def eks_template() -> Template:
    stack = cdk.Stack(new_app(), "RemediationEks", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc, system_node_group=None)
    NodeRemediation(stack, "Fix", alert_topic=sns.Topic(stack, "Alerts"), target=RemediationTarget.eks(cluster=cluster))
    return Template.from_stack(stack)


def test_eks_rbac_allows_cordon_and_eviction_only(eks_template):
    (manifest,) = [
        json.loads(r["Properties"]["Manifest"])
        for lid, r in eks_template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").items()
        if lid.startswith("FixEvictionRbac")
    ]
    role = next(m for m in manifest if m["kind"] == "ClusterRole")
    assert role["rules"] == [dict(rule) for rule in EVICTION_RULES]
    verbs = {(tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"]}
    assert (("pods/eviction",), ("create",)) in verbs
    assert not any("delete" in v for _, v in verbs)
    eks_template.has_resource_properties(
        "AWS::EKS::AccessEntry", {"KubernetesGroups": [Match.string_like_regexp("fmconstructs:node-remediation:")]}
    )


def test_eks_termination_is_scoped_by_the_cluster_tag_and_runs_in_the_vpc(eks_template):
    sids = _by_sid(eks_template)
    statement = sids["RebootOrReplaceNodes"]
    assert set(statement["Action"]) == {"ec2:RebootInstances", "ec2:TerminateInstances"}
    assert list(statement["Condition"]["StringEquals"]) == ["ec2:ResourceTag/eks:cluster-name"]
    (function,) = [
        r for lid, r in eks_template.find_resources("AWS::Lambda::Function").items() if lid.startswith("FixHandler")
    ]
    assert "VpcConfig" in function["Properties"]
    eks_template.has_resource_properties("AWS::EC2::SecurityGroupIngress", {"FromPort": 443, "ToPort": 443})


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"alert_topic": "arn:aws:sns:us-east-1:123456789012:alerts"}, "alert_topic"),
        ({"target": "pcs"}, "target"),
        ({"policy": {"dry_run": False}}, "policy"),
        ({"log_retention": 30}, "log_retention"),
    ],
)
def test_bad_props_are_refused(kwargs, parameter):
    stack, topic = _stack()
    props: dict[str, Any] = {"alert_topic": topic, "target": RemediationTarget.pcs(**PCS), **kwargs}
    with pytest.raises(FmValidationError) as info:
        NodeRemediation(stack, "Fix", **props)
    assert info.value.parameter == parameter


@pytest.mark.validation
def test_cdk_nag_reports_nothing_unacknowledged(tmp_path):
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "FmRemediation", env=ENV)
    key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key, enforce_ssl=True)
    NodeRemediation(stack, "Pcs", alert_topic=topic, target=RemediationTarget.pcs(**PCS))
    NodeRemediation(stack, "Pc", alert_topic=topic, target=RemediationTarget.parallelcluster(cluster_name="train"))
    NodeRemediation(stack, "Asg", alert_topic=topic, target=RemediationTarget.auto_scaling_group(group_name="gpu"))
    hyperpod = RemediationTarget.hyperpod(cluster_name="train", cluster_arn=HYPERPOD_ARN)
    NodeRemediation(stack, "HyperPod", alert_topic=topic, target=hyperpod)
    eks_stack = cdk.Stack(app, "FmRemediationEks", env=ENV)
    vpc = ec2.Vpc(eks_stack, "Vpc", max_azs=2, nat_gateways=1)
    vpc.add_flow_log("FlowLog")
    cluster = GpuEksCluster(eks_stack, "Cluster", vpc=vpc)
    eks_topic = sns.Topic(
        eks_stack, "Alerts", enforce_ssl=True, master_key=kms.Key(eks_stack, "K", enable_key_rotation=True)
    )
    NodeRemediation(eks_stack, "Eks", alert_topic=eks_topic, target=RemediationTarget.eks(cluster=cluster))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
