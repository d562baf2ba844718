"""CapacityBlockEvents under aws-cdk-lib's CloudFormation validation, cdk-nag AwsSolutions and cfn-lint (one stack)."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from cdk_nag import AwsSolutionsChecks
from conftest import ENV

from fmconstructs.capacity_events import CapacityBlockEvents

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "FmCapacityEvents", env=ENV)
    key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Alerts", master_key=key, enforce_ssl=True)
    CapacityBlockEvents(stack, "PcsBlocks", alert_topic=topic, pcs_login_node_group_id="pcs_abcdef1234")
    CapacityBlockEvents(stack, "EksBlocks", alert_topic=topic, capacity_reservation_ids=["cr-0123456789abcdef0"])
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    return outdir


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    failures = [r for r in report["pluginReports"] if r.get("conclusion") != "success"]
    assert failures == []


def test_nag_acknowledgements_have_specific_reasons(assembly):
    for entries in json.loads((assembly / "FmCapacityEvents.metadata.json").read_text()).values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                for rule, reason in entry["data"].items():
                    assert len(reason) >= 30, f"{rule} acknowledged without a specific reason"


def test_cfn_lint_has_zero_errors(assembly):
    from cfnlint.api import lint_file

    matches = lint_file(assembly / "FmCapacityEvents.template.json")
    assert [f"{m.rule.id} {m.message[:200]}" for m in matches if m.rule.severity == "error"] == []
