"""CapacityBlockEvents under aws-cdk-lib's CloudFormation validation, cdk-nag AwsSolutions and cfn-lint (PCS and notify
in one stack, the EKS cordon in another)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from cdk_nag import AwsSolutionsChecks

from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.eks import GpuEksCluster

from tests.conftest import ENV

pytestmark = pytest.mark.validation


STACKS = ("FmCapacityEvents", "FmCapacityEventsEks")


def _eks_stack(app: cdk.App) -> None:
    """The EKS cordon in the cluster's VPC (GpuEksCluster acknowledges its own findings)."""
    stack = cdk.Stack(app, "FmCapacityEventsEks", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    vpc.add_flow_log("FlowLog")
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key, enforce_ssl=True)
    CapacityBlockEvents(stack, "CordonBlocks", alert_topic=topic, eks_cluster=cluster)
    CapacityBlockEvents(stack, "PublicCordon", alert_topic=topic, eks_cluster=cluster, eks_in_vpc=False)


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "FmCapacityEvents", env=ENV)
    key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key, enforce_ssl=True)
    CapacityBlockEvents(stack, "PcsBlocks", alert_topic=topic, pcs_login_node_group_id="pcs_abcdef1234")
    CapacityBlockEvents(stack, "EksBlocks", alert_topic=topic, capacity_reservation_ids=["cr-0123456789abcdef0"])
    _eks_stack(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    return outdir


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    failures = [r for r in report["pluginReports"] if r.get("conclusion") != "success"]
    assert failures == []


@pytest.mark.parametrize("stack", STACKS)
def test_nag_acknowledgements_have_specific_reasons(assembly, stack):
    for entries in json.loads((assembly / f"{stack}.metadata.json").read_text()).values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                for rule, reason in entry["data"].items():
                    assert len(reason) >= 30, f"{rule} acknowledged without a specific reason"


@pytest.mark.parametrize("stack", STACKS)
def test_cfn_lint_has_zero_errors(assembly, stack):
    from cfnlint.api import lint_file

    matches = lint_file(assembly / f"{stack}.template.json")
    assert [f"{m.rule.id} {m.message[:200]}" for m in matches if m.rule.severity == "error"] == []


def test_eks_stack_acknowledges_only_what_the_cordon_needs(assembly):
    acknowledged: set[str] = set()
    for path, entries in json.loads((assembly / "FmCapacityEventsEks.metadata.json").read_text()).items():
        if "/CordonBlocks/" in path or "/PublicCordon/" in path:
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    acknowledged |= {rule.removeprefix("Annotation::") for rule in entry["data"]}
    # scheduler:CreateSchedule in each construct's own schedule group (the expiry schedule for long lead times)
    schedule_group = re.compile(
        r"AwsSolutions-IAM5\[Resource::arn:<AWS::Partition>:scheduler:us-east-1:\d{12}:schedule/<\w+ExpirySchedules\w+>/\*\]"
    )
    scheduled = {rule for rule in acknowledged if schedule_group.fullmatch(rule)}
    assert len(scheduled) == 2
    assert acknowledged - scheduled == {
        "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
        "AwsSolutions-IAM5[Resource::*]",
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaENIManagementAccess]",
        # the failed-events queue is itself a dead-letter queue
        "AwsSolutions-SQS3",
    }
