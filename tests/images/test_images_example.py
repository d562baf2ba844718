"""FmImages: synthesized with aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on, then cfn-lint; zero
findings of any severity, acknowledgements with reasons. The validated assembly and its cfn-lint findings are the
example app's (tests/conftest.py ``example_assembly``, ``example_lint``: made once per run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from examples.images_stack import GB200_AMI_PARAMETER, X86_AMI_PARAMETER, ImagesStack
from fmconstructs import CpuArchitecture

from tests.conftest import new_app

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def assembly(example_assembly: Path) -> Path:
    """FmImages as the example app synthesizes it with CloudFormation validation and cdk-nag on (tests/conftest.py:
    one synthesis per run; the stack is the one ``ImagesStack(app, "FmImages")`` makes, its description aside)."""
    return example_assembly


@pytest.fixture(scope="module")
def stack() -> ImagesStack:
    return ImagesStack(new_app(), "FmImages")


def test_stack_is_synthesized(assembly):
    assert (assembly / "FmImages.template.json").exists()


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_builtin_cloudformation_validation_ran(assembly):
    metadata = (assembly / "FmImages.metadata.json").read_text()
    assert "CloudFormation-Validate" in metadata
    assert "[Warning] Template validation" not in metadata


def test_nag_acknowledgements_have_specific_reasons(assembly):
    acknowledged = {}
    for entries in json.loads((assembly / "FmImages.metadata.json").read_text()).values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                acknowledged.update(entry["data"])
    assert acknowledged
    assert all(len(reason) >= 30 for reason in acknowledged.values()), acknowledged


def test_cfn_lint_has_zero_findings(example_lint):
    # every severity (cfn-lint ran once per run on the shared assembly, tests/support/shared_outputs.py)
    assert [f"{f['rule']} {f['message']}" for f in example_lint["FmImages.template.json"]] == []


def test_two_pipelines_one_per_architecture(stack):
    assert stack.x86.architecture is CpuArchitecture.X86_64
    assert stack.gb200.architecture is CpuArchitecture.ARM64
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ImageBuilder::ImagePipeline", 2)
    template.has_resource_properties(
        "AWS::ImageBuilder::DistributionConfiguration",
        {
            "Distributions": [
                Match.object_like(
                    {"SsmParameterConfigurations": [Match.object_like({"ParameterName": X86_AMI_PARAMETER})]}
                )
            ]
        },
    )
    template.has_resource_properties(
        "AWS::ImageBuilder::DistributionConfiguration",
        {
            "Distributions": [
                Match.object_like(
                    {"SsmParameterConfigurations": [Match.object_like({"ParameterName": GB200_AMI_PARAMETER})]}
                )
            ]
        },
    )


def test_outputs_for_operators(stack):
    outputs = Template.from_stack(stack).find_outputs("*")
    for name in ("X86", "Gb200"):
        for suffix in ("PipelineArn", "AmiParameter", "StartCommand", "LogsBucket"):
            assert outputs[f"{name}{suffix}"]["Description"], f"{name}{suffix}"
    assert outputs["Gb200AmiParameter"]["Value"] == GB200_AMI_PARAMETER


def test_logs_buckets_send_server_access_logs(stack):
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {"LoggingConfiguration": Match.object_like({"LogFilePrefix": Match.string_like_regexp("^fmimages-x86-")})},
    )
