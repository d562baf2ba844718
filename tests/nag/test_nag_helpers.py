"""fmconstructs._nag: cdk-nag finding ids built the way cdk-nag 3.0.2 flattens them, reasons required, and the
constructs' acknowledgements recorded in their metadata (no cdk-nag at run time)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from fmconstructs import _nag
from fmconstructs.pcs import PcsInstanceProfile

from tests.conftest import ENV, new_app

CLUSTER_ARN = "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abcdef1234"


def _acknowledged(construct: object) -> dict[str, str]:
    """The rules acknowledged on ``construct`` (its ``aws:cdk:acknowledged-rules`` metadata; aws-cdk-lib keys them
    ``Annotation::<id>``)."""
    found: dict[str, str] = {}
    for entry in construct.node.metadata:  # type: ignore[attr-defined]
        if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
            found.update({key.removeprefix("Annotation::"): reason for key, reason in entry.data.items()})
    return found


@pytest.mark.parametrize(
    ("value", "flat"),
    [
        ("*", "*"),
        ({"Fn::GetAtt": ["Bucket83908E77", "Arn"]}, "<Bucket83908E77.Arn>"),
        ({"Ref": "AWS::Partition"}, "<AWS::Partition>"),
        (
            {"Fn::Join": ["", [{"Fn::GetAtt": ["B", "Arn"]}, "/datasets/*"]]},
            "<B.Arn>/datasets/*",
        ),
        (
            {"Fn::Sub": "arn:${AWS::Partition}:s3:::cdk-x-assets-${AWS::AccountId}/*"},
            "arn:<AWS::Partition>:s3:::cdk-x-assets-<AWS::AccountId>/*",
        ),
        ({"Fn::If": ["C", "a", "b"]}, '{"Fn::If":["C","a","b"]}'),
    ],
)
def test_flatten_matches_cdk_nag(value: object, flat: str) -> None:
    assert _nag.flatten(value) == flat


def test_managed_policy_and_action_ids() -> None:
    assert (
        _nag.aws_managed_policy_finding("service-role/AWSLambdaBasicExecutionRole")
        == "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]"
    )
    assert _nag.iam5_action("s3:GetObject*") == "AwsSolutions-IAM5[Action::s3:GetObject*]"


def test_iam5_resource_resolves_tokens_in_the_stack() -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    bucket = s3.Bucket(stack, "Data")
    logical_id = stack.resolve(bucket.node.default_child.logical_id)  # type: ignore[union-attr]
    finding = _nag.iam5_resource(stack, bucket.arn_for_objects("datasets/*"))
    assert finding == f"AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/datasets/*]"


@pytest.mark.parametrize("reason", ["", "needed", "x" * (_nag.MIN_REASON_LENGTH - 1)])
def test_acknowledge_refuses_a_reason_that_says_nothing(reason: str) -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    with pytest.raises(ValueError, match="must say why"):
        _nag.acknowledge(stack, "AwsSolutions-IAM5[Resource::*]", reason)
    with pytest.raises(ValueError, match="must say why"):
        _nag.acknowledge_cfn_lint(s3.CfnBucket(stack, "B"), "E3628", reason)


def test_cfn_lint_acknowledgement_keeps_earlier_rules_and_records_reasons() -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    bucket = s3.CfnBucket(stack, "B")
    _nag.acknowledge_cfn_lint(bucket, "W1001", "first rule, with a reason of some length")
    _nag.acknowledge_cfn_lint(bucket, "E3628", "second rule, with a reason of some length")
    assert bucket.get_metadata("cfn-lint") == {"config": {"ignore_checks": ["E3628", "W1001"]}}
    assert set(bucket.get_metadata(_nag.CFN_LINT_REASONS_KEY)) == {"E3628", "W1001"}


@pytest.mark.parametrize("enable_ssm", [True, False])
def test_pcs_node_role_acknowledges_the_ssm_policy_only_when_attached(enable_ssm: bool) -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    profile = PcsInstanceProfile(stack, "Profile", cluster_arn=CLUSTER_ARN, enable_ssm=enable_ssm)
    finding = _nag.aws_managed_policy_finding("AmazonSSMManagedInstanceCore")
    assert (finding in _acknowledged(profile.role)) is enable_ssm


def test_pcs_prefix_grant_acknowledges_exactly_its_prefix() -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    profile = PcsInstanceProfile(stack, "Profile", cluster_arn=CLUSTER_ARN)
    bucket = s3.Bucket(stack, "Data")
    profile.grant_read_bucket(bucket, prefix="datasets/")
    logical_id = stack.resolve(bucket.node.default_child.logical_id)  # type: ignore[union-attr]
    wildcards = {k for k in _acknowledged(profile.role) if k.startswith("AwsSolutions-IAM5")}
    assert wildcards == {f"AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/datasets/*]"}


def test_an_unrelated_role_gets_nothing() -> None:
    stack = cdk.Stack(new_app(), "S", env=ENV)
    role = iam.Role(stack, "Mine", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    PcsInstanceProfile(stack, "Profile", cluster_arn=CLUSTER_ARN)
    assert _acknowledged(role) == {}


def test_exporter_mirror_grant_acknowledges_its_prefix() -> None:
    from fmconstructs.observability.sources import ExporterSource

    stack = cdk.Stack(new_app(), "S", env=ENV)
    role = iam.Role(stack, "Nodes", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    bucket = s3.Bucket(stack, "Mirror")
    ExporterSource.s3_mirror(bucket, prefix="mirror/").grant_read(role)
    logical_id = stack.resolve(bucket.node.default_child.logical_id)  # type: ignore[union-attr]
    assert set(_acknowledged(role)) == {f"AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/mirror/*]"}
