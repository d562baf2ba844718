"""Data repository associations (rules, events, defaults) and the secure data bucket."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.storage import (
    DEFAULT_LAYOUT,
    DataRepositoryAssociation,
    DataRepositoryBucket,
    DataRepositoryEvent,
    DataRepositoryLink,
    LustreDeploymentType,
    LustreFileSystem,
)
from fmconstructs.storage.data_repository import WARNING_OVERLAPPING_S3_PATHS, normalize_prefix, paths_overlap

from tests.conftest import new_scene

DRA = "AWS::FSx::DataRepositoryAssociation"
NEW, CHANGED, DELETED = DataRepositoryEvent.NEW, DataRepositoryEvent.CHANGED, DataRepositoryEvent.DELETED


def _fs(scene, **overrides):
    props = {"vpc": scene.vpc, "storage_capacity_gib": 1200}
    props.update(overrides)
    return LustreFileSystem(scene.stack, "Fs", **props)


def _bucket(scene, name="data-bucket"):
    existing = scene.stack.node.try_find_child(f"Bucket{name}")
    return existing or s3.Bucket.from_bucket_name(scene.stack, f"Bucket{name}", name)


@pytest.fixture(scope="module")
def layout():
    """The default layout on a new secure bucket, synthesized once."""
    scene = new_scene()
    fs = _fs(scene)
    bucket = DataRepositoryBucket(scene.stack, "Data")
    associations = fs.add_data_repositories(bucket.bucket)
    return scene, fs, bucket, associations, scene.template()


def test_default_layout_creates_datasets_and_checkpoints(layout):
    _, fs, _, associations, template = layout
    template.resource_count_is(DRA, 2)
    assert [a.file_system_path for a in associations] == ["/datasets", "/checkpoints"]
    assert fs.data_repositories == tuple(associations)
    assert [a.node.id for a in associations] == ["Datasets", "Checkpoints"]


def test_datasets_imports_new_changed_deleted_only(layout):
    layout[4].has_resource_properties(
        DRA,
        {
            "FileSystemPath": "/datasets",
            "DataRepositoryPath": {"Fn::Join": ["", ["s3://", {"Ref": Match.any_value()}, "/datasets/"]]},
            "BatchImportMetaDataOnCreate": True,
            "S3": {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}},
        },
    )


def test_checkpoints_import_and_export_new_changed_deleted(layout):
    layout[4].has_resource_properties(
        DRA,
        {
            "FileSystemPath": "/checkpoints",
            "DataRepositoryPath": {"Fn::Join": ["", ["s3://", {"Ref": Match.any_value()}, "/checkpoints/"]]},
            "S3": {
                "AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
                "AutoExportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
            },
        },
    )
    assert layout[3][1].exports_to_s3 and not layout[3][0].exports_to_s3


def test_associations_reference_the_file_system_and_retain(layout):
    scene, fs, _, _, template = layout
    fs_id = scene.stack.get_logical_id(fs.resource)
    template.has_resource_properties(DRA, {"FileSystemId": {"Ref": fs_id}})
    assert all(r["DeletionPolicy"] == "Retain" for r in template.find_resources(DRA).values())


def test_bucket_has_secure_defaults(layout):
    template = layout[4]
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
                    "VersioningConfiguration": {"Status": "Enabled"},
                    "PublicAccessBlockConfiguration": {
                        "BlockPublicAcls": True,
                        "BlockPublicPolicy": True,
                        "IgnorePublicAcls": True,
                        "RestrictPublicBuckets": True,
                    },
                    "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                }
            ),
        },
    )


def test_bucket_is_tls_only(layout):
    layout[4].has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        ),
                        Match.object_like({"Effect": "Deny", "Condition": {"NumericLessThan": {"s3:TlsVersion": 1.2}}}),
                    ]
                )
            }
        },
    )


def test_kms_bucket_with_access_logs_and_fsx_key_grant():
    scene = new_scene()
    key = kms.Key(scene.stack, "Key", enable_key_rotation=True)
    logs_bucket = s3.Bucket.from_bucket_name(scene.stack, "Logs", "access-logs")
    DataRepositoryBucket(
        scene.stack,
        "Data",
        encryption_key=key,
        server_access_logs_bucket=logs_bucket,
        server_access_logs_prefix="data/",
    )
    template = scene.template()
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": Match.any_value(),
                        },
                    }
                ]
            },
            "LoggingConfiguration": {"DestinationBucketName": "access-logs", "LogFilePrefix": "data/"},
        },
    )
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "AllowFsxLustreS3AccessServiceLinkedRoles",
                                "Action": Match.array_with(["kms:Decrypt", "kms:GenerateDataKey*"]),
                                "Condition": {
                                    "ArnLike": {"aws:PrincipalArn": Match.any_value()},
                                    "StringEquals": {"kms:CallerAccount": "123456789012"},
                                },
                            }
                        )
                    ]
                )
            }
        },
    )


def test_kms_grant_names_the_fsx_s3_service_linked_roles():
    scene = new_scene()
    DataRepositoryBucket(scene.stack, "Data", encryption_key=kms.Key(scene.stack, "Key", enable_key_rotation=True))
    text = json.dumps(scene.template().find_resources("AWS::KMS::Key"))
    assert "role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*" in text


def test_bucket_removal_policy_is_configurable():
    scene = new_scene()
    DataRepositoryBucket(scene.stack, "Data", removal_policy=cdk.RemovalPolicy.DESTROY, versioned=False)
    template = scene.template()
    template.has_resource("AWS::S3::Bucket", {"DeletionPolicy": "Delete"})
    props = next(iter(template.find_resources("AWS::S3::Bucket").values()))["Properties"]
    assert "VersioningConfiguration" not in props


def test_bucket_refuses_a_log_prefix_without_a_log_bucket():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"server_access_logs_prefix must be None unless"):
        DataRepositoryBucket(scene.stack, "Data", server_access_logs_prefix="x/")


def test_every_association_option_reaches_the_template():
    scene = new_scene()
    fs = _fs(scene)
    association = fs.add_data_repository(
        "Scratch",
        bucket=_bucket(scene),
        file_system_path="/scratch/out",
        data_repository_prefix="runs/out",
        auto_import_events=[NEW],
        auto_export_events=[NEW, CHANGED],
        batch_import_meta_data_on_create=True,
        imported_file_chunk_size_mib=2048,
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    assert association.data_repository_path == "s3://data-bucket/runs/out/"
    scene.template().has_resource(
        DRA,
        {
            "DeletionPolicy": "Delete",
            "Properties": {
                "FileSystemId": Match.any_value(),
                "FileSystemPath": "/scratch/out",
                "DataRepositoryPath": "s3://data-bucket/runs/out/",
                "BatchImportMetaDataOnCreate": True,
                "ImportedFileChunkSize": 2048,
                "S3": {"AutoImportPolicy": {"Events": ["NEW"]}, "AutoExportPolicy": {"Events": ["NEW", "CHANGED"]}},
            },
        },
    )


def test_no_events_means_no_s3_policy():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("Manual", bucket=_bucket(scene), file_system_path="/manual", auto_import_events=[])
    props = next(iter(scene.template().find_resources(DRA).values()))["Properties"]
    assert "S3" not in props
    assert props["DataRepositoryPath"] == "s3://data-bucket/"


def test_root_path_for_the_first_and_only_association():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("Root", bucket=_bucket(scene), file_system_path="/")
    with pytest.raises(
        FmValidationError, match=r"file_system_path must be not nested in or containing '/', got '/data'"
    ):
        fs.add_data_repository("Data", bucket=_bucket(scene, "other"), file_system_path="/data")


def test_root_path_refused_after_the_first():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("Data", bucket=_bucket(scene), file_system_path="/data")
    with pytest.raises(
        FmValidationError, match=r"file_system_path must be used only by the first and only association"
    ):
        fs.add_data_repository("Root", bucket=_bucket(scene, "other"), file_system_path="/")


def test_at_most_eight_per_file_system():
    scene = new_scene()
    fs = _fs(scene)
    bucket = _bucket(scene)
    for i in range(8):
        fs.add_data_repository(f"D{i}", bucket=bucket, file_system_path=f"/d{i}", data_repository_prefix=f"d{i}/")
    with pytest.raises(
        FmValidationError, match=r"data repository associations must be at most 8 per file system, got 9"
    ):
        fs.add_data_repository("D8", bucket=bucket, file_system_path="/d8", data_repository_prefix="d8/")


def test_none_on_scratch1():
    scene = new_scene()
    fs = _fs(scene, deployment_type=LustreDeploymentType.SCRATCH_1)
    with pytest.raises(
        FmValidationError, match=r"deployment_type must be not SCRATCH_1 for data repository associations"
    ):
        fs.add_data_repository("D", bucket=_bucket(scene), file_system_path="/d")


def test_paths_are_unique():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("A", bucket=_bucket(scene), file_system_path="/data", data_repository_prefix="a/")
    with pytest.raises(FmValidationError, match=r"file_system_path must be unique on the file system .*, got '/data'"):
        fs.add_data_repository("B", bucket=_bucket(scene), file_system_path="/data", data_repository_prefix="b/")


@pytest.mark.parametrize(("first", "second"), [("/data", "/data/sub"), ("/data/sub", "/data")])
def test_paths_are_not_nested(first, second):
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("A", bucket=_bucket(scene), file_system_path=first, data_repository_prefix="a/")
    with pytest.raises(FmValidationError, match=rf"not nested in or containing '{first}', got '{second}'"):
        fs.add_data_repository("B", bucket=_bucket(scene), file_system_path=second, data_repository_prefix="b/")


def test_sibling_paths_with_a_common_prefix_are_fine():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("A", bucket=_bucket(scene), file_system_path="/data", data_repository_prefix="a/")
    fs.add_data_repository("B", bucket=_bucket(scene), file_system_path="/database", data_repository_prefix="b/")
    assert len(fs.data_repositories) == 2


def test_overlapping_s3_prefixes_warn():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("A", bucket=_bucket(scene), file_system_path="/a", data_repository_prefix="data/")
    fs.add_data_repository("B", bucket=_bucket(scene), file_system_path="/b", data_repository_prefix="data/b/")
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Fs/B", Match.string_like_regexp(f".*overlaps s3://data-bucket/data/.*{WARNING_OVERLAPPING_S3_PATHS}.*")
    )


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"file_system_path": "data"}, r"file_system_path must be '/' or an absolute path .*, got 'data'"),
        ({"file_system_path": ""}, r"file_system_path must be '/' or an absolute path"),
        ({"file_system_path": "/data\n"}, r"file_system_path .* got '/data\\n'"),
        ({"file_system_path": "/a\rb"}, r"file_system_path .* got '/a\\rb'"),
        ({"file_system_path": "/a\x00b"}, r"file_system_path .* got '/a\\x00b'"),
        ({"file_system_path": "/a\u2028b"}, r"file_system_path .*4096 characters"),
        ({"file_system_path": "/" + "a" * 4096}, r"file_system_path .*at most 4096 characters"),
        ({"file_system_path": b"/data"}, r"file_system_path must be a str \(got a bytes\)"),
        ({"file_system_path": None}, r"file_system_path must be a str \(got a NoneType\)"),
        ({"data_repository_prefix": "data\n"}, r"data_repository_prefix must be '' or an S3 key prefix"),
        ({"data_repository_prefix": "a\u0085b"}, r"data_repository_prefix must be '' or an S3 key prefix"),
        ({"data_repository_prefix": 3}, r"data_repository_prefix must be a str"),
        ({"data_repository_prefix": "p" * 4400}, r"data_repository_prefix must be short enough .*4357 characters"),
        ({"auto_import_events": ["NEW"]}, r"auto_import_events\[0\] must be a DataRepositoryEvent \("),
        ({"auto_export_events": "NEW"}, r"auto_export_events must be a list \(got a str\)"),
        ({"auto_export_events": NEW}, r"auto_export_events must be a list \(got a DataRepositoryEvent\)"),
        (
            {"auto_export_events": [NEW, NEW]},
            r"auto_export_events must be a sequence without duplicates, got \['NEW', 'NEW'\]",
        ),
        ({"imported_file_chunk_size_mib": 0}, r"imported_file_chunk_size_mib must be at least 1, got 0"),
        ({"imported_file_chunk_size_mib": 512001}, r"imported_file_chunk_size_mib must be at most 512000, got 512001"),
        ({"imported_file_chunk_size_mib": 1.5}, r"imported_file_chunk_size_mib must be a whole number, got 1.5"),
        ({"imported_file_chunk_size_mib": float("nan")}, r"imported_file_chunk_size_mib must be a finite number"),
        ({"imported_file_chunk_size_mib": True}, r"imported_file_chunk_size_mib must be an integer .*got True"),
        ({"batch_import_meta_data_on_create": "yes"}, r"batch_import_meta_data_on_create must be a bool"),
        ({"removal_policy": "retain"}, r"removal_policy must be a RemovalPolicy"),
    ],
)
def test_rejects_invalid_association_props(overrides, match):
    scene = new_scene()
    fs = _fs(scene)
    props = {"bucket": _bucket(scene), "file_system_path": "/data"}
    props.update(overrides)
    with pytest.raises(FmValidationError, match=match):
        fs.add_data_repository("D", **props)
    assert fs.data_repositories == ()
    assert fs.node.try_find_child("D") is None  # nothing half-built is left in the tree


# --- paths the FSx API accepts (issue 10: "valid values rejected") --------------------------------------------------
# botocore fsx service-2.json, CreateDataRepositoryAssociation: FileSystemPath (shape Namespace)
# "^[^\u0000\u0085\u2028\u2029\r\n]{1,4096}$" with a leading "/" (its examples: "/ns1/", "/ns1/subdir/");
# DataRepositoryPath (shape ArchivePath) "^[^\u0000\u0085\u2028\u2029\r\n]{3,4357}$".
@pytest.mark.parametrize(
    "path",
    [
        "/ns1/",  # the API documentation's own example, trailing "/"
        "/ns1/subdir/",
        "/has space",
        "/données/été",
        "/数据集",
        "/a//b",
        "/a/../b",
        "/team (a)/data#1",
        "/" + "a" * 4095,
    ],
)
def test_accepts_every_file_system_path_the_api_allows(path):
    scene = new_scene()
    fs = _fs(scene)
    association = fs.add_data_repository("D", bucket=_bucket(scene), file_system_path=path)
    assert association.file_system_path == path
    scene.template().has_resource_properties(DRA, {"FileSystemPath": path})


@pytest.mark.parametrize(
    ("prefix", "path"),
    [
        ("my data/2024", "s3://data-bucket/my data/2024/"),
        ("données/", "s3://data-bucket/données/"),
        ("/leading", "s3://data-bucket//leading/"),
        ("a//b", "s3://data-bucket/a//b/"),
        ("a/../b", "s3://data-bucket/a/../b/"),
    ],
)
def test_accepts_every_s3_prefix_the_api_allows(prefix, path):
    scene = new_scene()
    fs = _fs(scene)
    association = fs.add_data_repository(
        "D", bucket=_bucket(scene), file_system_path="/d", data_repository_prefix=prefix
    )
    assert association.data_repository_path == path
    scene.template().has_resource_properties(DRA, {"DataRepositoryPath": path})


def test_a_trailing_slash_names_the_same_directory():
    scene = new_scene()
    fs = _fs(scene)
    fs.add_data_repository("A", bucket=_bucket(scene), file_system_path="/ns1/", data_repository_prefix="a/")
    with pytest.raises(FmValidationError, match=r"file_system_path must be unique on the file system \('/ns1/' is"):
        fs.add_data_repository("B", bucket=_bucket(scene), file_system_path="/ns1", data_repository_prefix="b/")
    with pytest.raises(FmValidationError, match=r"not nested in or containing '/ns1/', got '/ns1/ns2'"):
        fs.add_data_repository("C", bucket=_bucket(scene), file_system_path="/ns1/ns2", data_repository_prefix="c/")


def test_ids_of_paths_with_other_characters_stay_distinct():
    scene = new_scene()
    fs = _fs(scene)
    links = [DataRepositoryLink("/a b", "a/"), DataRepositoryLink("/a-b", "b/"), DataRepositoryLink("/数据", "c/")]
    ids = [a.node.id for a in fs.add_data_repositories(_bucket(scene), links)]
    assert ids[1] == "AB"  # a path the 0.1 releases accepted keeps its id
    assert len(set(ids)) == 3 and ids[0].startswith("AB") and ids[2].startswith("Root")


def test_colliding_layout_ids_are_refused_naming_the_path():
    scene = new_scene()
    fs = _fs(scene)
    links = [DataRepositoryLink("/a-b", "a/"), DataRepositoryLink("/a_b", "b/")]
    with pytest.raises(FmValidationError, match=r"layout\[1\].file_system_path must be a path whose construct id"):
        fs.add_data_repositories(_bucket(scene), links)
    assert fs.data_repositories == ()


# --- buckets: names and ARNs checked with the S3 naming rules before aws-cdk-lib sees them -------------------------
# S3 User Guide "General purpose bucket naming rules" (bucketnamingrules).
@pytest.mark.parametrize(
    "bucket",
    [
        "ab",  # too short
        "a" * 64,  # too long
        "Data-Bucket",  # upper case
        "data_bucket",  # underscore
        "-data",  # starts with a hyphen
        "data-",  # ends with a hyphen
        "data..bucket",  # adjacent periods
        "192.168.5.4",  # an IP address
        "xn--data",
        "sthree-data",
        "amzn-s3-demo-data",
        "data-s3alias",
        "data--ol-s3",
        "data.mrap",
        "data--x-s3",
        "data bucket",
        "data-bucket\n",
        "arn:aws:s3:::Bad_Name",
        "arn:aws:s3:us-east-1:123456789012:accesspoint/ap",
        "arn:aws:sqs:us-east-1:123456789012:queue",
    ],
)
def test_invalid_bucket_names_and_arns_raise_our_error(bucket):
    scene = new_scene()
    fs = _fs(scene)
    with pytest.raises(FmValidationError, match=r"^bucket must be an (S3 bucket name|s3.IBucket)"):
        fs.add_data_repository("D", bucket=bucket, file_system_path="/d")
    assert fs.node.try_find_child("D") is None


def test_an_imported_bucket_with_an_invalid_name_is_refused():
    scene = new_scene()
    fs = _fs(scene)
    bad = s3.Bucket.from_bucket_name(scene.stack, "Bad", "Bad_Bucket")
    with pytest.raises(FmValidationError, match=r"^bucket.bucket_name must be an S3 bucket name .*got 'Bad_Bucket'"):
        fs.add_data_repository("D", bucket=bad, file_system_path="/d")


@pytest.mark.parametrize(
    ("bucket", "expected"),
    [
        ("my.data-bucket-1", "s3://my.data-bucket-1/d/"),
        ("arn:aws:s3:::my-data", "s3://my-data/d/"),
        ("arn:aws-cn:s3:::my-data", "s3://my-data/d/"),
        ("arn:aws-us-gov:s3:::my-data", "s3://my-data/d/"),
    ],
)
def test_a_bucket_name_or_arn_is_imported(bucket, expected):
    scene = new_scene()
    fs = _fs(scene)
    association = fs.add_data_repository("D", bucket=bucket, file_system_path="/d", data_repository_prefix="d")
    assert association.bucket.bucket_name == expected.split("/")[2]
    scene.template().has_resource_properties(DRA, {"DataRepositoryPath": expected})


def test_a_deploy_time_bucket_name_is_accepted():
    scene = new_scene()
    fs = _fs(scene)
    name = cdk.CfnParameter(scene.stack, "BucketName").value_as_string
    fs.add_data_repository("D", bucket=name, file_system_path="/d")
    fs.add_data_repositories(s3.Bucket.from_bucket_name(scene.stack, "ByParameter", name), [DataRepositoryLink("/e")])
    scene.app.synth()


@pytest.mark.parametrize("bucket", [None, 3, ["data-bucket"], {"name": "data-bucket"}])
def test_a_bucket_of_the_wrong_type_raises_a_type_error(bucket):
    scene = new_scene()
    fs = _fs(scene)
    with pytest.raises(FmTypeError, match=r"^bucket must be an s3.IBucket, an S3 bucket name or an S3 bucket ARN"):
        fs.add_data_repository("D", bucket=bucket, file_system_path="/d")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bucket_name": "Bad_Name"}, r"^bucket_name must be an S3 bucket name"),
        ({"bucket_name": "xn--data"}, r"^bucket_name must be an S3 bucket name"),
        ({"bucket_name": 3}, r"^bucket_name must be a str"),
        ({"versioned": "yes"}, r"^versioned must be a bool"),
        ({"encryption_key": "alias/data"}, r"^encryption_key must be a kms.IKey"),
        ({"server_access_logs_bucket": "logs-bucket"}, r"^server_access_logs_bucket must be an s3.IBucket"),
        ({"removal_policy": "RETAIN"}, r"^removal_policy must be a RemovalPolicy"),
    ],
)
def test_bucket_construct_refuses_bad_props_before_aws_cdk_lib(kwargs, match):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=match):
        DataRepositoryBucket(scene.stack, "Data", **kwargs)
    assert scene.stack.node.try_find_child("Data") is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"file_system_path": "datasets"}, r"^file_system_path must be '/'"),
        ({"auto_import_events": "NEW"}, r"^auto_import_events must be a list"),
        ({"auto_export_events": ("NEW",)}, r"^auto_export_events\[0\] must be a DataRepositoryEvent"),
        ({"imported_file_chunk_size_mib": float("inf")}, r"^imported_file_chunk_size_mib must be a finite number"),
        ({"batch_import_meta_data_on_create": 1}, r"^batch_import_meta_data_on_create must be a bool"),
    ],
)
def test_link_value_object_checks_its_fields(kwargs, match):
    props = {"file_system_path": "/datasets"}
    props.update(kwargs)
    with pytest.raises(FmValidationError, match=match):
        DataRepositoryLink(**props)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda fs, b: fs.add_data_repositories(b, "/datasets"), r"^layout must be a list \(got a str\)"),
        (lambda fs, b: fs.add_data_repositories(b, ["/datasets"]), r"^layout\[0\] must be a DataRepositoryLink"),
        (lambda fs, b: fs.add_data_repository(3, bucket=b, file_system_path="/d"), r"^id must be a str"),
        (
            lambda fs, b: DataRepositoryAssociation(fs, "X", file_system="fs-1", bucket=b, file_system_path="/d"),
            r"^file_system must be a LustreFileSystem",
        ),
    ],
)
def test_factories_refuse_wrong_types(call, match):
    scene = new_scene()
    fs = _fs(scene)
    with pytest.raises(FmTypeError, match=match):
        call(fs, _bucket(scene))


def test_standalone_association_registers_with_its_file_system():
    scene = new_scene()
    fs = _fs(scene)
    association = DataRepositoryAssociation(
        scene.stack, "Standalone", file_system=fs, bucket=_bucket(scene), file_system_path="/x"
    )
    assert fs.data_repositories == (association,)
    assert association.association_id


def test_custom_layout_and_ids():
    scene = new_scene()
    fs = _fs(scene)
    links = [
        DataRepositoryLink("/team-a/data", "a/"),
        DataRepositoryLink("/team-b/data", "b/", auto_export_events=(NEW,)),
    ]
    associations = fs.add_data_repositories(_bucket(scene), links)
    assert [a.node.id for a in associations] == ["TeamAData", "TeamBData"]


def test_default_layout_is_documented_values():
    datasets, checkpoints = DEFAULT_LAYOUT
    assert (datasets.file_system_path, datasets.auto_import_events, datasets.auto_export_events) == (
        "/datasets",
        (NEW, CHANGED, DELETED),
        (),
    )
    assert (checkpoints.file_system_path, checkpoints.auto_export_events) == ("/checkpoints", (NEW, CHANGED, DELETED))


def test_association_on_an_imported_file_system():
    scene = new_scene()
    from aws_cdk import aws_ec2 as ec2

    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="m",
        security_group=group,
    )
    fs.add_data_repository("D", bucket=_bucket(scene), file_system_path="/d")
    template = scene.template()
    template.has_resource(
        DRA, {"DeletionPolicy": "Retain", "Properties": Match.object_like({"FileSystemId": "fs-0123456789abcdef0"})}
    )


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [("/a", "/a/b", True), ("/a", "/ab", False), ("/", "/x", True), ("/a/b", "/a/c", False), ("", "x/", True)],
)
def test_paths_overlap(a, b, overlap):
    assert paths_overlap(a, b) is overlap


@pytest.mark.parametrize(("prefix", "normalized"), [("", ""), ("datasets", "datasets/"), ("a/b/", "a/b/")])
def test_normalize_prefix(prefix, normalized):
    assert normalize_prefix(prefix) == normalized
