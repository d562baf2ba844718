"""FmImages standalone: synthesized with aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on, then
cfn-lint; zero findings, acknowledgements with reasons (the validation tier, for one stack, before the app has it)."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from examples.images_stack import GB200_AMI_PARAMETER, X86_AMI_PARAMETER, ImagesStack
from fmconstructs import CpuArchitecture

from tests.conftest import new_app

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    ImagesStack(app, "FmImages", description="fmconstructs example: GPU node images with EC2 Image Builder")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error
    return outdir


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


def test_cfn_lint_has_zero_findings(assembly):
    from cfnlint.api import lint_file

    matches = lint_file(assembly / "FmImages.template.json")
    assert [f"{m.rule.id} {m.message[:200]}" for m in matches] == []


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
