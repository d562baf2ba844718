"""The FmStorage example stack (examples/storage_stack.py), synthesized once with validation off."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

from examples.storage_stack import StorageStack

from tests.conftest import ENV, new_app


@pytest.fixture(scope="module")
def storage():
    app = new_app()
    stack = StorageStack(app, "FmStorage", env=ENV)
    return stack, Template.from_stack(stack)


def test_efa_enabled_persistent2_file_system_retained(storage):
    _, template = storage
    template.resource_count_is("AWS::FSx::FileSystem", 1)
    template.has_resource(
        "AWS::FSx::FileSystem",
        {
            "DeletionPolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "FileSystemTypeVersion": "2.15",
                    "StorageCapacity": 4800,
                    "LustreConfiguration": Match.object_like(
                        {
                            "DeploymentType": "PERSISTENT_2",
                            "PerUnitStorageThroughput": 1000,
                            "EfaEnabled": True,
                            "MetadataConfiguration": {"Mode": "AUTOMATIC"},
                            "DataCompressionType": "LZ4",
                        }
                    ),
                }
            ),
        },
    )


def test_two_associations_with_the_documented_events(storage):
    _, template = storage
    template.resource_count_is("AWS::FSx::DataRepositoryAssociation", 2)
    template.has_resource_properties(
        "AWS::FSx::DataRepositoryAssociation",
        {"FileSystemPath": "/datasets", "S3": {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}},
    )
    template.has_resource_properties(
        "AWS::FSx::DataRepositoryAssociation",
        {
            "FileSystemPath": "/checkpoints",
            "S3": {
                "AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                "AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
            },
        },
    )


def test_data_bucket_is_encrypted_tls_only_and_logged(storage):
    stack, template = storage
    data = stack.get_logical_id(stack.data_bucket.bucket.node.default_child)
    bucket = template.find_resources("AWS::S3::Bucket")[data]
    assert bucket["DeletionPolicy"] == "Retain"
    assert bucket["Properties"]["BucketEncryption"]
    assert bucket["Properties"]["LoggingConfiguration"]["LogFilePrefix"] == "data-bucket/"
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": data},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            },
        },
    )


def test_sized_by_the_helper(storage):
    stack, _ = storage
    # 4,800 GiB = 4.6875 TiB at 1,000 MB/s/TiB (GiB / 1024, not / 1000).
    assert stack.sizing.storage_capacity_gib == 4800
    assert stack.sizing.aggregate_throughput_gbytes_per_s == 4.6875
    assert stack.file_system.aggregate_throughput_mbps == 4687.5


def test_outputs_have_descriptions(storage):
    _, template = storage
    outputs = template.find_outputs("*")
    expected = {"FileSystemId", "DnsName", "MountName", "MountCommand", "DataBucketName", "AggregateThroughputMBps"}
    assert expected <= set(outputs)
    assert all(outputs[name].get("Description") for name in expected)
    assert outputs["AggregateThroughputMBps"]["Value"] == "4687.5"
    assert "DNS name" in outputs["DnsName"]["Description"]
    assert "mount name" in outputs["MountName"]["Description"]


def test_the_mount_command_output_is_the_fsx_guide_line(storage):
    stack, template = storage
    fs_id = stack.get_logical_id(stack.file_system.resource)
    command = template.find_outputs("MountCommand")["MountCommand"]["Value"]
    assert command == {
        "Fn::Join": [
            "",
            [
                "sudo mkdir -p /fsx && sudo mount -t lustre -o relatime,flock ",
                {"Fn::GetAtt": [fs_id, "DNSName"]},
                "@tcp:/",
                {"Fn::GetAtt": [fs_id, "LustreMountName"]},
                " /fsx",
            ],
        ]
    }
