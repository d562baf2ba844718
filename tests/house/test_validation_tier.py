"""Validation tier: every example stack with aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on,
then cfn-lint on every synthesized template. Zero errors allowed; acknowledgements must carry a reason."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

pytestmark = pytest.mark.validation

EXPECTED_STACKS = {
    "FmCompute",
    "FmStorage",
    "FmPcsP5",
    "FmPcsGb200",
    "FmEksP5en",
    "FmEksGb200",
    "FmServeP5en",
    "FmObservability",
    "FmImages",
    "FmPrivateP5",
    "FmParallelClusterP5en",
    "FmParallelClusterGb200",
    "FmHyperPodSlurm",
    "FmHyperPodEks",
    "FmPlatform",
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from examples.app import build

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    build(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    return outdir


def test_every_example_stack_is_synthesized(assembly):
    names = {p.name.removesuffix(".template.json") for p in assembly.glob("*.template.json")}
    assert names >= EXPECTED_STACKS


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    failures = [r for r in report["pluginReports"] if r.get("conclusion") != "success"]
    assert failures == []


def test_builtin_cloudformation_validation_ran(assembly):
    # aws-cdk-lib records rules it acknowledged itself: proof that its CloudFormation validation ran.
    metadata = (assembly / "FmCompute.metadata.json").read_text()
    assert "CloudFormation-Validate" in metadata


def test_nag_acknowledgements_have_specific_reasons(assembly):
    for path in assembly.glob("*.metadata.json"):
        for entries in json.loads(path.read_text()).values():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    for rule, reason in entry["data"].items():
                        assert len(reason) >= 30, f"{path.name}: {rule} acknowledged without a specific reason"


def test_cfn_lint_has_zero_findings(assembly):
    from cfnlint.api import lint_file

    findings = {}
    for template in sorted(assembly.glob("*.template.json")):
        matches = lint_file(template)
        findings[template.name] = [f"{m.rule.id} {m.message[:200]}" for m in matches if m.rule.severity == "error"]
    assert findings == {name: [] for name in findings}


def test_cfn_lint_acknowledgements_have_reasons(assembly):
    for template in assembly.glob("*.template.json"):
        for logical_id, res in json.loads(template.read_text())["Resources"].items():
            ignored = res.get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("ignore_checks", [])
            reasons = res.get("Metadata", {}).get("fmconstructs:cfn-lint-acknowledgements", {})
            for rule in ignored:
                assert len(reasons.get(rule, "")) >= 30, f"{logical_id}: {rule} ignored without a reason"
