"""cdk-nag acknowledgements the library records on the resources it creates, each with its reason.

A user who runs cdk-nag (``Validations.of(app).add_plugins(AwsSolutionsChecks(app))``, cdk-nag 3.x) in their own app
sees only what they must decide themselves; what a construct owns (an AWS managed policy the service documents as
required, a wildcard whose resource names are made at run time, aws-cdk-lib's own Lambda handlers) is acknowledged
here, where the construct is built. aws-cdk-lib's ``Validations.of(scope).acknowledge(Acknowledgment(...))`` stores the
acknowledgement on the construct (it covers the construct and everything below it), so the library needs no cdk-nag at
run time.

Finding ids follow cdk-nag 3.0.2 (``lib/rules/iam/IAMNoManagedPolicies.js``: ``Policy::<arn>``;
``IAMNoWildcardPermissions.js``: ``Action::<action>`` and ``Resource::<resource>``, a resource flattened by
``lib/utils/flatten-cfn-reference.js``: ``Fn::GetAtt`` -> ``<Id.Attr>``, ``Ref`` -> ``<Id>``, ``Fn::Join`` joined,
``${X}`` of ``Fn::Sub`` -> ``<X>``, anything else JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import aws_cdk as cdk
from constructs import IConstruct

from .errors import WarningId, add_warning

if TYPE_CHECKING:
    from aws_cdk import aws_s3_assets as s3_assets

__all__ = [
    "MIN_REASON_LENGTH",
    "acknowledge",
    "acknowledge_all",
    "acknowledge_cfn_lint",
    "acknowledge_chart_asset",
    "acknowledge_no_access_logs",
    "aws_managed_policy_finding",
    "flatten",
    "iam5_action",
    "iam5_resource",
    "wildcard_resource_findings",
]

#: Reasons shorter than this are refused (tests/house/test_validation_tier.py asks every acknowledgement for a specific
#: one).
MIN_REASON_LENGTH = 30

IAM4 = "AwsSolutions-IAM4"
IAM5 = "AwsSolutions-IAM5"
#: cdk-nag AwsSolutions-S1: an S3 bucket without server access logs (``S3BucketLoggingEnabled``).
S1 = "AwsSolutions-S1"
#: cdk-nag AwsSolutions-L1: a Lambda function not on the latest runtime of its family.
L1 = "AwsSolutions-L1"


def acknowledge(scope: IConstruct, finding_id: str, reason: str) -> None:
    """Acknowledge the cdk-nag finding ``finding_id`` on ``scope`` and below it, with ``reason`` recorded."""
    if len(reason) < MIN_REASON_LENGTH:
        raise ValueError(f"the reason for {finding_id} must say why in at least {MIN_REASON_LENGTH} characters")
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=finding_id, reason=reason))


def acknowledge_all(scope: IConstruct, findings: Iterable[str], reason: str) -> None:
    """:func:`acknowledge` each of ``findings`` on ``scope`` with the same reason."""
    for finding in findings:
        acknowledge(scope, finding, reason)


def aws_managed_policy_finding(name: str) -> str:
    """AwsSolutions-IAM4 for the AWS managed policy ``name`` (e.g. ``service-role/AWSLambdaBasicExecutionRole``)."""
    return f"{IAM4}[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]"


def iam5_action(action: str) -> str:
    """AwsSolutions-IAM5 for a wildcard action (``s3:GetObject*``)."""
    return f"{IAM5}[Action::{action}]"


def iam5_resource(scope: IConstruct, resource: str) -> str:
    """AwsSolutions-IAM5 for a wildcard resource as the policy holds it (a string or a token such as
    ``bucket.arn_for_objects("prefix/*")``), resolved in ``scope``'s stack and flattened the way cdk-nag does."""
    return f"{IAM5}[Resource::{flatten(cdk.Stack.of(scope).resolve(resource))}]"


def flatten(node: Any) -> str:
    """cdk-nag's ``flattenCfnReference`` of a resolved CloudFormation value."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict):
        if node.get("Fn::Join"):
            delimiter, items = node["Fn::Join"]
            return str(delimiter).join(flatten(item) for item in items)
        if node.get("Fn::Sub"):
            return flatten(node["Fn::Sub"])
        if node.get("Fn::GetAtt"):
            resource, attribute = node["Fn::GetAtt"]
            return f"<{flatten(resource)}.{flatten(attribute)}>"
        if node.get("Fn::ImportValue"):
            return flatten(node["Fn::ImportValue"])
        if node.get("Ref"):
            return f"<{flatten(node['Ref'])}>"
    return json.dumps(node, separators=(",", ":"))


def wildcard_resource_findings(policy: IConstruct, pattern: re.Pattern[str]) -> list[str]:
    """The AwsSolutions-IAM5 resource findings that ``policy`` (an ``iam.Policy``, its document as built so far)
    holds now and whose flattened resource matches ``pattern`` in full: for grants aws-cdk-lib makes inside its own
    constructs, whose resource is known only in resolved form (e.g. the CDK asset bucket)."""
    document = cdk.Stack.of(policy).resolve(policy.document)  # type: ignore[attr-defined]
    findings: list[str] = []
    for statement in document.get("Statement", []) if isinstance(document, dict) else []:
        if statement.get("Effect") != "Allow":
            continue
        resources = statement.get("Resource", [])
        for resource in resources if isinstance(resources, list) else [resources]:
            flat = flatten(resource)
            if "*" in flat and pattern.fullmatch(flat):
                findings.append(f"{IAM5}[Resource::{flat}]")
    return sorted(set(findings))


#: Where each cfn-lint rule ignored on a resource gets its reason (beside ``Metadata.cfn-lint.config.ignore_checks``).
CFN_LINT_REASONS_KEY = "fmconstructs:cfn-lint-acknowledgements"


def acknowledge_cfn_lint(resource: cdk.CfnResource, rule_id: str, reason: str) -> None:
    """Ignore cfn-lint rule ``rule_id`` on ``resource`` (``Metadata.cfn-lint.config.ignore_checks``, cfn-lint's
    per-resource configuration) and record ``reason`` beside it, so that the template says why."""
    if len(reason) < MIN_REASON_LENGTH:
        raise ValueError(f"the reason for {rule_id} must say why in at least {MIN_REASON_LENGTH} characters")
    existing = resource.get_metadata("cfn-lint") or {"config": {"ignore_checks": []}}
    existing["config"]["ignore_checks"] = sorted({*existing["config"]["ignore_checks"], rule_id})
    resource.add_metadata("cfn-lint", existing)
    reasons = resource.get_metadata(CFN_LINT_REASONS_KEY) or {}
    reasons[rule_id] = reason
    resource.add_metadata(CFN_LINT_REASONS_KEY, reasons)


_CHART_ASSET_REASON = (
    "aws-cdk-lib's HelmChart grants the kubectl handler read on the chart's CDK asset (Asset.grantRead: s3:GetObject*, "
    "s3:GetBucket*, s3:List* on the bootstrap asset bucket) so that it downloads the chart archive"
)


def acknowledge_chart_asset(eks_cluster: IConstruct, asset: s3_assets.Asset) -> None:
    """A Helm chart installed from a CDK asset on ``eks_cluster`` (an ``aws_eks_v2.Cluster``): the kubectl handler
    role's read on the asset bucket. Here, below the backends, so that every backend installing a chart on EKS uses it.
    """
    kubectl = eks_cluster.node.try_find_child("KubectlProvider")
    if kubectl is None:
        return
    findings = [iam5_action(f"s3:{action}*") for action in ("GetObject", "GetBucket", "List")]
    findings.append(iam5_resource(kubectl, asset.bucket.arn_for_objects("*")))
    acknowledge_all(kubectl.node.find_child("Handler"), findings, _CHART_ASSET_REASON)


def acknowledge_no_access_logs(bucket: IConstruct, *, parameter: str) -> None:
    """Acknowledge S1 on ``bucket`` (given no log target through ``parameter``) and warn that it has no logs."""
    acknowledge(
        bucket,
        S1,
        f"no server access logs: the construct was given no {parameter} (where the logs go, and for how long, is "
        "the user's decision); the warning bucket-without-access-logs says so at synth",
    )
    add_warning(
        bucket,
        WarningId.BUCKET_WITHOUT_ACCESS_LOGS,
        f"this bucket writes no S3 server access logs: pass {parameter}= (a bucket of yours, or "
        "fmconstructs.storage.server_access_logs_bucket(scope)) to record who reads and writes it",
    )
