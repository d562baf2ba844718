"""S3 server access logs of the buckets the library creates (issue 30, faults and exposure).

GIVEN the library's log target (``server_access_logs_bucket``) and the lower-level constructs that create a bucket
(DataRepositoryBucket, FmImage's logs bucket, HyperPodCluster's lifecycle bucket, checked in tests/house/
test_nag_user_app.py through the platform) WHEN a construct is given a log target THEN its bucket logs there and
nothing is acknowledged; WHEN it is given none THEN cdk-nag AwsSolutions-S1 is acknowledged on that bucket with the
reason and the warning ``bucket-without-access-logs`` tells the user at synth, so a user's app is nag-clean and says
what it lacks.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from fmconstructs.errors import WarningId
from fmconstructs.storage import DataRepositoryBucket, server_access_logs_bucket

from tests.conftest import ENV

WARNING = WarningId.BUCKET_WITHOUT_ACCESS_LOGS.qualified


def _stack() -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App()
    return app, cdk.Stack(app, "Logs", env=ENV)


def _warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found]


def _acknowledged(stack: cdk.Stack) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for child in stack.node.find_all():
        for entry in child.node.metadata:
            if entry.type == "aws:cdk:acknowledged-rules":
                reasons.update(entry.data)
    return reasons


def test_the_log_target_is_encrypted_private_retained_and_open_to_the_logging_service_only():
    _, stack = _stack()
    target = server_access_logs_bucket(stack)
    DataRepositoryBucket(stack, "Data", server_access_logs_bucket=target, server_access_logs_prefix="data/")
    template = Template.from_stack(stack)
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "BucketEncryption": {
                        "ServerSideEncryptionConfiguration": [
                            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                        ]
                    },
                    "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                    "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
                    "VersioningConfiguration": {"Status": "Enabled"},
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {"LoggingConfiguration": {"DestinationBucketName": Match.any_value(), "LogFilePrefix": "data/"}},
    )
    policies = json.dumps(template.find_resources("AWS::S3::BucketPolicy"))
    assert "logging.s3.amazonaws.com" in policies and "aws:SourceAccount" in policies
    assert "AccessControl" not in json.dumps(template.find_resources("AWS::S3::Bucket"))  # no ACLs
    assert WARNING not in " ".join(_warnings(stack))


def test_a_bucket_given_no_log_target_is_acknowledged_and_warns():
    _, stack = _stack()
    DataRepositoryBucket(stack, "Data")
    assert any(WARNING in m and "server_access_logs_bucket=" in m for m in _warnings(stack))
    reasons = _acknowledged(stack)
    reason = next(r for rule, r in reasons.items() if rule.endswith("AwsSolutions-S1"))
    assert "server_access_logs_bucket" in reason


@pytest.mark.parametrize("logged", [True, False], ids=["with-target", "without-target"])
def test_a_users_app_of_lower_level_buckets_is_nag_clean_either_way(tmp_path, logged):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Logs", env=ENV)
    target = server_access_logs_bucket(stack) if logged else None
    DataRepositoryBucket(stack, "Data", server_access_logs_bucket=target)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on an unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    s1 = [v for p in report["pluginReports"] for v in p.get("violations", []) if v["ruleName"] == "AwsSolutions-S1"]
    assert s1 == []
    assert (WARNING in " ".join(_warnings(stack))) is not logged


def test_an_imported_log_target_is_used_as_given():
    _, stack = _stack()
    mine = s3.Bucket.from_bucket_name(stack, "Mine", "my-org-access-logs")
    DataRepositoryBucket(stack, "Data", server_access_logs_bucket=mine, server_access_logs_prefix="d/")
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket",
        {"LoggingConfiguration": {"DestinationBucketName": "my-org-access-logs", "LogFilePrefix": "d/"}},
    )
    assert WARNING not in " ".join(_warnings(stack))
