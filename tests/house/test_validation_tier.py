"""Validation tier: every example stack with aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on,
then cfn-lint on every synthesized template. Zero errors allowed; acknowledgements must carry a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.shared_outputs import errors

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
def assembly(example_assembly: Path) -> Path:
    """The example app with CloudFormation validation and cdk-nag on (tests/conftest.py: one synthesis per run, shared
    with the other tests that read the example app's cdk.out); its synthesis raises on any unacknowledged cdk-nag
    error."""
    return example_assembly


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


def test_cfn_lint_has_zero_findings(assembly, example_lint):
    # cfn-lint ran once per run on every template of the shared assembly (tests/support/shared_outputs.py)
    assert set(example_lint) == {p.name for p in assembly.glob("*.template.json")}
    findings = {name: errors(found) for name, found in example_lint.items()}
    assert findings == {name: [] for name in findings}


def test_cfn_lint_acknowledgements_have_reasons(assembly):
    for template in assembly.glob("*.template.json"):
        for logical_id, res in json.loads(template.read_text())["Resources"].items():
            ignored = res.get("Metadata", {}).get("cfn-lint", {}).get("config", {}).get("ignore_checks", [])
            reasons = res.get("Metadata", {}).get("fmconstructs:cfn-lint-acknowledgements", {})
            for rule in ignored:
                assert len(reasons.get(rule, "")) >= 30, f"{logical_id}: {rule} ignored without a reason"
