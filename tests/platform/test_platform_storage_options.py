"""Issue 18: PlatformStorage's removal policy, KMS key and access logs bucket reach what the platform creates; a
deploy-time capacity is passed on; the platform's default subnet falls back to isolated subnets like LustreFileSystem.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match

from fmconstructs import CapacityReservation, OnDemand
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    Backend,
    EksOptions,
    HyperPodOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformStorage,
    TrainingPlatform,
)

from tests.conftest import ENV, Scene, new_app, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
FSX = "AWS::FSx::FileSystem"
BUCKET = "AWS::S3::Bucket"
DRA = "AWS::FSx::DataRepositoryAssociation"


def _platform(scene: Scene, **overrides: Any) -> TrainingPlatform:
    props: dict[str, Any] = {
        "vpc": scene.vpc,
        "instance_type": "p5.48xlarge",
        "nodes": 2,
        "orchestrator": PcsOptions(ami=AMI),
        "storage": PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    }
    props.update(overrides)
    return TrainingPlatform(scene.stack, "Platform", **props)


def _orchestrator(backend: Backend) -> Any:
    return {
        Backend.PCS: PcsOptions(ami=AMI),
        Backend.PARALLELCLUSTER: ParallelClusterOptions(cluster_name="platform-pc"),
        Backend.EKS: EksOptions(),
        Backend.HYPERPOD: HyperPodOptions(),
    }[backend]


# --- removal policy and KMS key --------------------------------------------------------------------------------------
def test_destroy_reaches_the_file_system_its_associations_and_the_bucket(scene):
    storage = PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, removal_policy=cdk.RemovalPolicy.DESTROY)
    _platform(scene, storage=storage)
    template = scene.template()
    for resource in (FSX, DRA):
        template.all_resources(resource, Match.object_like({"DeletionPolicy": "Delete"}))
    # The data bucket goes; the server access log target the platform creates stays (audit logs outlive the data).
    buckets = template.find_resources(BUCKET)
    policies = {
        "Delete" if "LoggingConfiguration" in b["Properties"] else "log target": b["DeletionPolicy"]
        for b in buckets.values()
    }
    assert policies == {"Delete": "Delete", "log target": "Retain"}
    # Emptying the bucket is the user's choice (DataRepositoryBucket(auto_delete_objects=True) or their own bucket).
    template.resource_count_is("Custom::S3AutoDeleteObjects", 0)


def test_encryption_key_encrypts_the_file_system_and_the_bucket(scene):
    key = kms.Key(scene.stack, "Key", enable_key_rotation=True)
    _platform(scene, storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, encryption_key=key))
    template = scene.template()
    key_id = scene.stack.resolve(key.key_id)
    template.has_resource_properties(FSX, {"KmsKeyId": key_id})
    template.has_resource_properties(
        BUCKET,
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like(
                        {
                            "BucketKeyEnabled": True,
                            "ServerSideEncryptionByDefault": {
                                "SSEAlgorithm": "aws:kms",
                                "KMSMasterKeyID": scene.stack.resolve(key.key_arn),
                            },
                        }
                    )
                ]
            }
        },
    )


def test_defaults_retain_everything_with_aws_managed_keys_and_the_bucket_has_the_lifecycle_rules(scene):
    _platform(scene)
    template = scene.template()
    for resource in (FSX, DRA, BUCKET):
        template.all_resources(resource, Match.object_like({"DeletionPolicy": "Retain"}))
    (fs,) = template.find_resources(FSX).values()
    assert "KmsKeyId" not in fs["Properties"]
    # The data bucket (it logs to the platform's server access log target, the other bucket).
    (bucket,) = (b for b in template.find_resources(BUCKET).values() if "LoggingConfiguration" in b["Properties"])
    encryption = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    ids = [rule["Id"] for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]]
    assert ids == ["ExpireNoncurrentVersions", "AbortIncompleteMultipartUploads"]


@pytest.mark.parametrize(
    ("field", "value", "error", "match"),
    [
        ("removal_policy", "RETAIN", FmTypeError, r"^removal_policy must be"),
        ("removal_policy", None, FmTypeError, r"^removal_policy must be"),
        ("encryption_key", "alias/aws/fsx", FmTypeError, r"^encryption_key must be a kms.IKey"),
        (
            "encryption_key",
            "arn:aws:kms:us-east-1:123456789012:key/abc",
            FmTypeError,
            r"^encryption_key must be a kms.IKey",
        ),
    ],
)
def test_rejects_bad_removal_policy_and_encryption_key(field, value, error, match):
    with pytest.raises(error, match=match):
        PlatformStorage.for_throughput(target_gbytes_per_s=1, **{field: value})


# --- access logs -----------------------------------------------------------------------------------------------------
def test_storage_access_logs_bucket_reaches_the_data_bucket(scene):
    logs = s3.Bucket.from_bucket_name(scene.stack, "Logs", "storage-access-logs")
    _platform(scene, storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, access_logs_bucket=logs))
    scene.template().has_resource_properties(
        BUCKET, {"LoggingConfiguration": {"DestinationBucketName": "storage-access-logs", "LogFilePrefix": "data/"}}
    )


def test_storage_access_logs_bucket_takes_precedence_over_the_platforms(scene):
    mine = s3.Bucket.from_bucket_name(scene.stack, "Mine", "storage-access-logs")
    platform_logs = s3.Bucket.from_bucket_name(scene.stack, "PlatformLogs", "platform-access-logs")
    storage = PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, access_logs_bucket=mine)
    _platform(scene, storage=storage, access_logs_bucket=platform_logs)
    scene.template().has_resource_properties(
        BUCKET, {"LoggingConfiguration": Match.object_like({"DestinationBucketName": "storage-access-logs"})}
    )
    # Without the storage's, the platform's is used as before.
    other = new_scene()
    platform_logs = s3.Bucket.from_bucket_name(other.stack, "PlatformLogs", "platform-access-logs")
    _platform(other, access_logs_bucket=platform_logs)
    other.template().has_resource_properties(
        BUCKET, {"LoggingConfiguration": Match.object_like({"DestinationBucketName": "platform-access-logs"})}
    )


def test_access_logs_bucket_with_an_existing_data_bucket_is_refused():
    stack = cdk.Stack(new_app(), "Test", env=ENV)
    data = s3.Bucket.from_bucket_name(stack, "Data", "my-training-data")
    logs = s3.Bucket.from_bucket_name(stack, "Logs", "access-logs")
    with pytest.raises(FmValidationError, match=r"^access_logs_bucket must be None when data_bucket is given"):
        PlatformStorage.for_throughput(target_gbytes_per_s=1, data_bucket=data, access_logs_bucket=logs)


# --- deploy-time capacity --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.EKS, Backend.HYPERPOD])
def test_of_capacity_accepts_a_deploy_time_capacity(backend):
    scene = new_scene()
    capacity = cdk.CfnParameter(scene.stack, "CapacityGiB", type="Number", default=4800).value_as_number
    platform = _platform(
        scene,
        storage=PlatformStorage.of_capacity(storage_capacity_gib=capacity),
        orchestrator=_orchestrator(backend),
        capacity=OnDemand(),
    )
    assert platform.sizing is None and platform.file_system is not None
    template = scene.template()
    template.has_resource_properties(FSX, {"StorageCapacity": {"Ref": "CapacityGiB"}})
    # No saturation alarms: their thresholds need the capacity.
    assert not any(
        "FreeDataStorageCapacity" in str(alarm) for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
    )
    # Literal capacities are still checked.
    for bad in (0, -2400, 2.5, float("nan")):
        with pytest.raises(FmValidationError, match=r"^storage_capacity_gib must be"):
            PlatformStorage.of_capacity(storage_capacity_gib=bad)


# --- default subnet --------------------------------------------------------------------------------------------------
def _vpc(stack: cdk.Stack, **subnets: Any) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a", "us-east-1b"], **subnets
    )


ISOLATED = {"isolated_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]}


def test_an_isolated_only_vpc_is_used_like_lustre_file_system_does():
    stack = cdk.Stack(new_app(), "Test", env=ENV)
    vpc = _vpc(stack, **ISOLATED)
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )
    assert platform.subnet.subnet_id == "subnet-0aaaaaaaaaaaaaaa1"
    assert platform.file_system is not None and platform.file_system.subnet is platform.subnet


def test_an_isolated_subnet_in_the_reservations_zone_is_chosen():
    stack = cdk.Stack(new_app(), "Test", env=ENV)
    capacity = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2, zone="us-east-1b")
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=_vpc(stack, **ISOLATED),
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=capacity,
        orchestrator=PcsOptions(ami=AMI),
    )
    assert platform.subnet.subnet_id == "subnet-0bbbbbbbbbbbbbbb2"


def test_no_subnet_in_the_reservations_zone_names_the_zone_and_what_to_pass():
    stack = cdk.Stack(new_app(), "Test", env=ENV)
    capacity = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2, zone="us-east-1d")
    vpc = _vpc(stack, private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"])
    with pytest.raises(FmValidationError) as raised:
        TrainingPlatform(
            stack,
            "Platform",
            vpc=vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            capacity=capacity,
            orchestrator=PcsOptions(ami=AMI),
        )
    message = str(raised.value)
    assert "the VPC has no private subnet in us-east-1d" in message
    assert "pass subnet=" in message
    assert stack.node.try_find_child("Platform") is None


def test_a_vpc_with_only_public_subnets_says_what_to_pass():
    stack = cdk.Stack(new_app(), "Test", env=ENV)
    vpc = _vpc(stack, public_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"])
    with pytest.raises(FmValidationError, match=r"^subnet must be given \(subnet=ec2.Subnet.from_subnet_attributes"):
        TrainingPlatform(
            stack, "Platform", vpc=vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=PcsOptions(ami=AMI)
        )
