"""HyperPod's lifecycle bucket is named ``sagemaker-...``: ClusterLifeCycleConfig.SourceS3Uri must start with
``s3://sagemaker-`` (SageMaker API reference), and the default name is unique per stack creation."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator

from tests.conftest import ENV, new_app


def _cluster(stack: cdk.Stack, **kwargs: Any) -> HyperPodCluster:
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1) if stack.node.try_find_child("Vpc") is None else stack.node.find_child("Vpc")
    return HyperPodCluster(
        stack,
        kwargs.pop("id", "HyperPod"),
        vpc=vpc,  # type: ignore[arg-type]
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        instance_groups=[
            HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
            HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2),
        ],
        **kwargs,
    )


def _bucket_names(stack: cdk.Stack) -> list[Any]:
    buckets = Template.from_stack(stack).find_resources("AWS::S3::Bucket")
    return [b["Properties"]["BucketName"] for b in buckets.values() if "BucketName" in b.get("Properties", {})]


def test_default_name_starts_with_sagemaker_and_uses_stack_uuid_account_and_path() -> None:
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    cluster = _cluster(stack)
    (name,) = _bucket_names(stack)
    parts = name["Fn::Join"][1]
    assert isinstance(parts[0], str) and parts[0].startswith("sagemaker-")
    text = json.dumps(name)
    assert "AWS::StackId" in text and "AWS::AccountId" in text
    # SourceS3Uri of every group points into that bucket: s3://sagemaker-...
    uri = stack.resolve(cluster.lifecycle_s3_uri)
    assert uri["Fn::Join"][1][0] == "s3://"
    resolved_bucket = stack.resolve(cluster.lifecycle_bucket.bucket_name)
    assert resolved_bucket in uri["Fn::Join"][1]


def test_two_clusters_in_one_stack_get_different_names() -> None:
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    _cluster(stack, id="A")
    _cluster(stack, id="B")
    first, second = _bucket_names(stack)
    assert first != second


def test_default_name_fits_the_s3_limit() -> None:
    # sagemaker-fmc- (14) + account (12) + '-' + 8 + '-' + 6 = 42 <= 63
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    _cluster(stack)
    (name,) = _bucket_names(stack)
    literal_length = sum(len(p) for p in name["Fn::Join"][1] if isinstance(p, str))
    assert literal_length + 12 + 8 <= 63


def test_given_name_is_used() -> None:
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    _cluster(stack, lifecycle_bucket_name="sagemaker-my-team-lifecycle")
    assert _bucket_names(stack) == ["sagemaker-my-team-lifecycle"]


def test_token_name_is_accepted() -> None:
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    name = cdk.CfnParameter(stack, "BucketName").value_as_string
    _cluster(stack, lifecycle_bucket_name=name)
    assert _bucket_names(stack) == [{"Ref": "BucketName"}]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("my-lifecycle-bucket", FmValidationError),  # no sagemaker- prefix
        ("sagemaker-UPPER", FmValidationError),
        ("sagemaker-" + "x" * 60, FmValidationError),  # 70 characters
        ("sagemaker-trailing-", FmValidationError),
        ("", FmValidationError),
        (42, FmTypeError),
    ],
)
def test_bad_names_are_refused(name: object, error: type[Exception]) -> None:
    stack = cdk.Stack(new_app(), "Hp", env=ENV)
    with pytest.raises(error, match="lifecycle_bucket_name"):
        _cluster(stack, lifecycle_bucket_name=name)
