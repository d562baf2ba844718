"""Issue 18 (storage cost): DataRepositoryBucket expires noncurrent versions and aborts incomplete multipart uploads.

The bucket is versioned and ``/checkpoints`` exports every change: without lifecycle rules every overwritten or deleted
multi-TB checkpoint was kept forever.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.storage import DataRepositoryBucket
from fmconstructs.storage.data_repository import (
    DEFAULT_ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS,
    DEFAULT_NONCURRENT_VERSION_EXPIRATION_DAYS,
)

from tests.conftest import new_scene

BUCKET = "AWS::S3::Bucket"
NONCURRENT = {
    "Id": "ExpireNoncurrentVersions",
    "NoncurrentVersionExpiration": {"NoncurrentDays": 7},
    "Status": "Enabled",
}
ABORT = {
    "Id": "AbortIncompleteMultipartUploads",
    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
    "Status": "Enabled",
}


def _rules(**props: Any) -> list[dict[str, Any]]:
    scene = new_scene()
    DataRepositoryBucket(scene.stack, "Data", **props)
    (bucket,) = scene.template().find_resources(BUCKET).values()
    rules: list[dict[str, Any]] = bucket["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])
    return rules


def test_defaults_expire_noncurrent_versions_and_abort_multipart_uploads_after_7_days():
    assert DEFAULT_NONCURRENT_VERSION_EXPIRATION_DAYS == 7
    assert DEFAULT_ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS == 7
    assert _rules() == [NONCURRENT, ABORT]


def test_day_counts_are_configurable():
    rules = _rules(noncurrent_version_expiration_days=30, abort_incomplete_multipart_upload_days=2)
    assert [r.get("NoncurrentVersionExpiration") for r in rules] == [{"NoncurrentDays": 30}, None]
    assert rules[1]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}


def test_none_drops_a_default_and_both_none_leave_no_lifecycle_configuration():
    assert _rules(noncurrent_version_expiration_days=None) == [ABORT]
    assert _rules(abort_incomplete_multipart_upload_days=None) == [NONCURRENT]
    assert _rules(noncurrent_version_expiration_days=None, abort_incomplete_multipart_upload_days=None) == []


def test_lifecycle_rules_are_added_after_the_defaults():
    tmp = s3.LifecycleRule(id="ExpireScratch", prefix="scratch/", expiration=cdk.Duration.days(14))
    rules = _rules(lifecycle_rules=[tmp])
    assert rules[:2] == [NONCURRENT, ABORT]
    assert rules[2] == {"Id": "ExpireScratch", "Prefix": "scratch/", "ExpirationInDays": 14, "Status": "Enabled"}


def test_lifecycle_rules_replace_the_defaults_when_both_are_none():
    own = s3.LifecycleRule(id="Own", noncurrent_version_expiration=cdk.Duration.days(90))
    rules = _rules(
        noncurrent_version_expiration_days=None, abort_incomplete_multipart_upload_days=None, lifecycle_rules=[own]
    )
    assert rules == [{"Id": "Own", "NoncurrentVersionExpiration": {"NoncurrentDays": 90}, "Status": "Enabled"}]


def test_an_unversioned_bucket_gets_no_noncurrent_rule():
    assert _rules(versioned=False) == [ABORT]


def test_a_deploy_time_day_count_is_passed_on():
    scene = new_scene()
    days = cdk.CfnParameter(scene.stack, "Days", type="Number").value_as_number
    DataRepositoryBucket(scene.stack, "Data", noncurrent_version_expiration_days=days)
    scene.template().has_resource_properties(
        BUCKET,
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [Match.object_like({"NoncurrentVersionExpiration": {"NoncurrentDays": {"Ref": "Days"}}})]
                )
            }
        },
    )


@pytest.mark.parametrize("parameter", ["noncurrent_version_expiration_days", "abort_incomplete_multipart_upload_days"])
@pytest.mark.parametrize("days", [0, -1, 2.5, float("nan"), float("inf")])
def test_rejects_day_counts_that_are_not_positive_whole_numbers(parameter, days):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        DataRepositoryBucket(scene.stack, "Data", **{parameter: days})
    assert scene.stack.node.try_find_child("Data") is None


@pytest.mark.parametrize("parameter", ["noncurrent_version_expiration_days", "abort_incomplete_multipart_upload_days"])
@pytest.mark.parametrize("days", ["7", True])
def test_rejects_day_counts_of_the_wrong_type(parameter, days):
    with pytest.raises(FmTypeError, match=rf"^{parameter} must be"):
        DataRepositoryBucket(new_scene().stack, "Data", **{parameter: days})


@pytest.mark.parametrize(
    "rules", [[{"id": "x"}], ["ExpireAfter7Days"], [None], "rule", s3.LifecycleRule(id="not-in-a-list")]
)
def test_rejects_lifecycle_rules_that_are_not_a_list_of_s3_lifecycle_rules(rules):
    with pytest.raises(FmTypeError, match=r"^lifecycle_rules"):
        DataRepositoryBucket(new_scene().stack, "Data", lifecycle_rules=rules)


def test_auto_delete_objects_needs_destroy():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^auto_delete_objects must be False unless removal_policy"):
        DataRepositoryBucket(scene.stack, "Data", auto_delete_objects=True)
    DataRepositoryBucket(scene.stack, "Data", auto_delete_objects=True, removal_policy=cdk.RemovalPolicy.DESTROY)
    template: Template = scene.template()
    template.has_resource(BUCKET, {"DeletionPolicy": "Delete"})
    template.resource_count_is("Custom::S3AutoDeleteObjects", 1)
