"""Links between an FSx for Lustre file system and S3: data repository associations and a secure bucket for them.

- :class:`DataRepositoryAssociation` wraps ``AWS::FSx::DataRepositoryAssociation`` (L1: aws-cdk-lib has no L2). It is
  usually created through ``file_system.add_data_repository(...)``, which passes ``file_system=self``; the per-file-
  system rules (at most 8, ``/`` only for the first and then alone, none on SCRATCH_1, unique and non-nested paths)
  are checked by the file system when an association registers.
- :class:`DataRepositoryLink` is the value object for one association's settings; :data:`DEFAULT_LAYOUT` is the
  documented default: ``/datasets`` imports NEW/CHANGED/DELETED from ``s3://bucket/datasets/`` and ``/checkpoints``
  imports and exports NEW/CHANGED/DELETED to ``s3://bucket/checkpoints/``, so checkpoints written on the file system
  reach S3 without a manual export task.
- :class:`DataRepositoryBucket` creates a bucket with secure defaults (SSE-S3 or SSE-KMS, versioning, all public
  access blocked, TLS only, optional server access logs, RETAIN) and lifecycle rules that bound what versioning keeps
  (noncurrent versions expire after 7 days, incomplete multipart uploads are aborted after 7 days).

FSx reaches the bucket through its service-linked role (``AWSServiceRoleForFSxS3Access_<fs-id>``), whose policy AWS
manages, so no bucket policy statement is needed; a customer-managed KMS key needs a key policy statement for that
role, which :class:`DataRepositoryBucket` adds to keys it can modify (``kms.Key`` in the app).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Required, TypedDict

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .._nag import acknowledge_no_access_logs
from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_instance,
    check_kms_key,
    check_scope_id,
    check_sequence,
    check_str,
    known,
    located,
)
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from .create_only import CREATE_ONLY_PROPERTIES as CREATE_ONLY_PROPERTIES

if TYPE_CHECKING:
    from .lustre import LustreFileSystemBase

#: At most this many data repository associations per file system.
MAX_DATA_REPOSITORIES = 8
#: ImportedFileChunkSize bounds (MiB); FSx default 1024.
MAX_IMPORTED_FILE_CHUNK_SIZE_MIB = 512_000

WARNING_OVERLAPPING_S3_PATHS = WarningId.LUSTRE_OVERLAPPING_DATA_REPOSITORY_PATHS.qualified

#: The info message on a retained association (its create-only properties: storage/create_only.py, with sources).
_RETAINED_CREATE_ONLY_NOTE = (
    "fmconstructs: this data repository association is retained (RETAIN) and its file_system_path, bucket, "
    "data_repository_prefix and batch_import_meta_data_on_create are create-only: a change cannot deploy in one step "
    "(the replacement collides with this association: FSx wants a unique file system path and S3 prefix per "
    "association). Remove the association from the app and deploy, delete it (aws fsx "
    "delete-data-repository-association --association-id dra-... --no-delete-data-in-file-system), then add the "
    "new link and deploy again"
)

#: Days a noncurrent object version is kept before S3 deletes it (``NoncurrentVersionExpiration.NoncurrentDays``; S3
#: API reference: "a non-zero positive integer"). Why 7: ``/checkpoints`` exports every change, so each overwritten or
#: deleted checkpoint (a script pruning old steps becomes an S3 delete marker) leaves a noncurrent version of up to
#: several TB; a week is long enough to notice and restore a wrong overwrite or delete, and short enough that at most a
#: week of superseded checkpoints is billed. It also matches the file system's default automatic backup retention
#: (7 days, :class:`~fmconstructs.storage.LustreFileSystem`), so both recovery windows are the same.
DEFAULT_NONCURRENT_VERSION_EXPIRATION_DAYS = 7
#: Days after which S3 aborts an incomplete multipart upload and deletes its parts
#: (``AbortIncompleteMultipartUpload.DaysAfterInitiation``; FSx exports large files in parts, and an interrupted
#: export or copy leaves parts that are billed but never listed as objects).
DEFAULT_ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS = 7

# FSx API CreateDataRepositoryAssociation (botocore fsx 2018-03-01 service-2.json), the patterns CloudFormation's
# AWS::FSx::DataRepositoryAssociation hands on:
# - FileSystemPath: shape Namespace, pattern "^[^\u0000\u0085\u2028\u2029\r\n]{1,4096}$"; "The leading forward slash
#   in the name is required" (its documentation, whose examples are "/ns1/" and "/ns1/subdir/").
# - DataRepositoryPath: shape ArchivePath, pattern "^[^\u0000\u0085\u2028\u2029\r\n]{3,4357}$", "in the format
#   s3://bucket-name/prefix/ (where prefix is optional)".
# Spaces, non-ASCII characters and a trailing "/" are allowed; only NUL, NEL, LINE/PARAGRAPH SEPARATOR, CR and LF are
# not.
_NOT_IN_PATHS = "\u0000\u0085\u2028\u2029\r\n"
_FS_PATH = re.compile(f"/[^{_NOT_IN_PATHS}]{{0,4095}}")
_PATH_TEXT = re.compile(f"[^{_NOT_IN_PATHS}]*")
_MAX_DATA_REPOSITORY_PATH = 4357
_FS_PATH_RULE = (
    "'/' or an absolute path such as '/datasets' or '/ns1/subdir/' (FSx API FileSystemPath: a leading '/', at most "
    "4096 characters, no NUL, CR, LF, U+0085, U+2028 or U+2029)"
)
_PREFIX_RULE = (
    "'' or an S3 key prefix such as 'datasets/' (the FSx API DataRepositoryPath s3://bucket/prefix/ allows any "
    "characters but NUL, CR, LF, U+0085, U+2028 and U+2029, at most 4357 characters in all)"
)

# S3 User Guide "General purpose bucket naming rules" (bucketnamingrules): 3-63 characters; lowercase letters,
# numbers, periods and hyphens; begin and end with a letter or number; no two adjacent periods; not formatted as an IP
# address; not starting with "xn--", "sthree-" or "amzn-s3-demo-"; not ending with "-s3alias", "--ol-s3", ".mrap" or
# "--x-s3".
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")
# An S3 bucket ARN: arn:<partition>:s3:::<bucket> (Service Authorization Reference, Amazon S3, resource type bucket).
_BUCKET_ARN = re.compile(r"arn:(aws[a-z-]*):s3:::(.+)")
_BUCKET_RULE = (
    "an S3 bucket name (S3 User Guide bucket naming rules: 3-63 lowercase letters, numbers, '.' and '-', beginning "
    "and ending with a letter or number, no '..', not an IP address, no reserved prefix or suffix)"
)


def check_bucket_name(parameter: str, value: object) -> str:
    """An S3 general purpose bucket name (or a deploy-time value), by the S3 User Guide's naming rules."""
    name: str = check_str(parameter, value, allowed=_BUCKET_RULE)
    if is_token(name):
        return name
    if (
        not _BUCKET_NAME.fullmatch(name)
        or ".." in name
        or _IP_ADDRESS.fullmatch(name)
        or name.startswith(_BUCKET_PREFIXES)
        or name.endswith(_BUCKET_SUFFIXES)
    ):
        raise FmValidationError(parameter, value, _BUCKET_RULE)
    return name


def check_bucket(parameter: str, bucket: object) -> s3.IBucket | str:
    """An ``s3.IBucket`` (its name checked when known), or a checked bucket name or ``arn:<partition>:s3:::<name>``."""
    if isinstance(bucket, str):
        if is_token(bucket):
            return bucket
        arn = _BUCKET_ARN.fullmatch(bucket)
        if arn is not None:
            check_bucket_name(parameter, arn.group(2))
            return bucket
        if bucket.startswith("arn:"):
            raise FmValidationError(
                parameter, bucket, "an s3.IBucket, an S3 bucket name or an S3 bucket ARN arn:<partition>:s3:::<name>"
            )
        return check_bucket_name(parameter, bucket)
    checked: s3.IBucket = check_construct(
        parameter,
        bucket,
        attribute="bucket_name",
        expected="an s3.IBucket, an S3 bucket name or an S3 bucket ARN",
    )
    check_bucket_name(f"{parameter}.bucket_name", checked.bucket_name)
    return checked


def _bucket_name(bucket: s3.IBucket | str) -> str:
    if not isinstance(bucket, str):
        return bucket.bucket_name
    arn = _BUCKET_ARN.fullmatch(bucket)
    return arn.group(2) if arn is not None and not is_token(bucket) else bucket


def import_bucket(scope: Construct, bucket: s3.IBucket | str) -> s3.IBucket:
    """The bucket; a name or ARN (already checked) is imported as ``<scope>/Bucket``."""
    if not isinstance(bucket, str):
        return bucket
    if bucket.startswith("arn:"):
        return s3.Bucket.from_bucket_arn(scope, "Bucket", bucket)
    return s3.Bucket.from_bucket_name(scope, "Bucket", bucket)


class DataRepositoryEvent(str, Enum):
    """S3 events for ``AutoImportPolicy`` / ``AutoExportPolicy``."""

    NEW = "NEW"
    CHANGED = "CHANGED"
    DELETED = "DELETED"


ALL_EVENTS: tuple[DataRepositoryEvent, ...] = (
    DataRepositoryEvent.NEW,
    DataRepositoryEvent.CHANGED,
    DataRepositoryEvent.DELETED,
)


@dataclass(frozen=True)
class DataRepositoryLink:
    """The settings of one association (a value object; the bucket is supplied when it is created).

    ``data_repository_prefix`` is the S3 key prefix (``""`` for the whole bucket; a trailing ``/`` is added).
    ``auto_import_events`` default: NEW, CHANGED, DELETED; ``auto_export_events`` default: none (import only).
    ``batch_import_meta_data_on_create`` default False; ``imported_file_chunk_size_mib`` default None (FSx: 1024).
    """

    file_system_path: str
    data_repository_prefix: str = ""
    auto_import_events: tuple[DataRepositoryEvent, ...] = ALL_EVENTS
    auto_export_events: tuple[DataRepositoryEvent, ...] = ()
    batch_import_meta_data_on_create: bool = False
    imported_file_chunk_size_mib: int | None = None

    def __post_init__(self) -> None:
        check_file_system_path(self.file_system_path)
        normalize_prefix(self.data_repository_prefix)
        # Frozen: store the checked tuples (a list given for the events becomes a tuple).
        object.__setattr__(self, "auto_import_events", _check_events("auto_import_events", self.auto_import_events))
        object.__setattr__(self, "auto_export_events", _check_events("auto_export_events", self.auto_export_events))
        check_bool("batch_import_meta_data_on_create", self.batch_import_meta_data_on_create)
        _check_chunk_size(self.imported_file_chunk_size_mib)


def _check_chunk_size(value: object) -> Any:
    """ImportedFileChunkSize: MiB, FSx API shape Megabytes (1-512000); FSx default 1024."""
    if value is None:
        return None
    return check_count("imported_file_chunk_size_mib", value, minimum=1, maximum=MAX_IMPORTED_FILE_CHUNK_SIZE_MIB)


def _check_events(parameter: str, events: object) -> tuple[DataRepositoryEvent, ...]:
    checked = check_sequence(parameter, events, lambda name, event: check_enum(name, event, DataRepositoryEvent))
    if len(set(checked)) != len(checked):
        raise FmValidationError(parameter, [e.value for e in checked], "a sequence without duplicates")
    return checked


def check_file_system_path(file_system_path: object) -> str:
    """A ``FileSystemPath`` the FSx API accepts: ``/``, ``/datasets``, ``/ns1/subdir/``, spaces and non-ASCII too."""
    checked: str = check_str("file_system_path", file_system_path, pattern=_FS_PATH, allowed=_FS_PATH_RULE)
    return checked


def normalize_file_system_path(file_system_path: str) -> str:
    """The directory a path names, for comparisons: ``/ns1/`` -> ``/ns1``; ``/`` stays ``/``."""
    stripped = file_system_path.rstrip("/")
    return stripped or "/"


def normalize_prefix(prefix: object) -> str:
    """``datasets`` -> ``datasets/``; ``""`` stays ``""`` (the whole bucket)."""
    checked: str = check_str("data_repository_prefix", prefix, pattern=_PATH_TEXT, allowed=_PREFIX_RULE)
    if is_token(checked):
        return checked
    return checked if checked == "" or checked.endswith("/") else checked + "/"


def paths_overlap(a: str, b: str, *, separator: str = "/") -> bool:
    """Whether one path equals or contains the other (``/a`` and ``/a/b`` overlap, ``/a`` and ``/ab`` do not)."""
    a_parts = [p for p in a.split(separator) if p]
    b_parts = [p for p in b.split(separator) if p]
    shorter = min(len(a_parts), len(b_parts))
    return a_parts[:shorter] == b_parts[:shorter]


#: Datasets: read-mostly, imported from S3 as objects change there.
DATASETS_LINK = DataRepositoryLink(
    file_system_path="/datasets",
    data_repository_prefix="datasets/",
    auto_import_events=ALL_EVENTS,
    auto_export_events=(),
    batch_import_meta_data_on_create=True,
)
#: Checkpoints: imported (to resume from S3) and exported (so checkpoints written on /fsx reach S3).
CHECKPOINTS_LINK = DataRepositoryLink(
    file_system_path="/checkpoints",
    data_repository_prefix="checkpoints/",
    auto_import_events=ALL_EVENTS,
    auto_export_events=ALL_EVENTS,
    batch_import_meta_data_on_create=True,
)
#: The documented default layout, in creation order.
DEFAULT_LAYOUT: tuple[DataRepositoryLink, ...] = (DATASETS_LINK, CHECKPOINTS_LINK)


class DataRepositoryAssociationOptions(TypedDict, total=False):
    """The options of :meth:`LustreFileSystemBase.add_data_repository`: those of :class:`DataRepositoryAssociation`
    but ``file_system`` (the file system it is called on); their defaults and checks are the association's.

    :var bucket: an ``s3.IBucket``, or a bucket name or ``arn:<partition>:s3:::<name>`` ARN (required).
    :var file_system_path: the Lustre directory (required).
    :var data_repository_prefix: the S3 prefix. Default: the bucket's root.
    :var auto_import_events: default: NEW, CHANGED, DELETED.
    :var auto_export_events: default: none.
    :var batch_import_meta_data_on_create: default: False.
    :var imported_file_chunk_size_mib: default: the FSx chunk size (1024 MiB).
    :var removal_policy: default: the file system's.
    """

    bucket: Required[s3.IBucket | str]
    file_system_path: Required[str]
    data_repository_prefix: str
    auto_import_events: Sequence[DataRepositoryEvent]
    auto_export_events: Sequence[DataRepositoryEvent]
    batch_import_meta_data_on_create: bool
    imported_file_chunk_size_mib: int | None
    removal_policy: RemovalPolicy | None


class DataRepositoryAssociation(Construct):
    """An ``AWS::FSx::DataRepositoryAssociation`` between a Lustre directory and an S3 prefix.

    Prefer ``file_system.add_data_repository(id, bucket=..., file_system_path=...)``. Settings are those of
    :class:`DataRepositoryLink`, plus ``bucket`` (``s3.IBucket``) and ``removal_policy`` (default: the file system's,
    RETAIN unless set; deleting an association never deletes file-system data).

    Create-time choices: ``file_system_path``, ``bucket`` and ``data_repository_prefix`` (together
    ``DataRepositoryPath``) and ``batch_import_meta_data_on_create`` are create-only (cfn-lint 1.58.0 schema of
    AWS::FSx::DataRepositoryAssociation, :data:`CREATE_ONLY_PROPERTIES`). Changing one cannot be deployed in one step:
    CloudFormation creates the replacement before it removes the old association (CloudFormation User Guide, "Update
    behaviors of stack resources"), and FSx refuses the new one because "each data repository association must have
    a unique Amazon FSx file system directory and a unique S3 bucket or prefix" (FSx API
    CreateDataRepositoryAssociation). To change one: remove the association from the app and deploy (RETAIN leaves
    it linked on the file system, importing and exporting as before); delete that association (``aws fsx
    delete-data-repository-association --association-id dra-... --no-delete-data-in-file-system``: the files on the
    file system stay); then add the new link and deploy again. Import/export events and the chunk size change in
    place. Every retained association gets an info message saying so (``cdk synth`` prints it).
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        file_system: LustreFileSystemBase,
        bucket: s3.IBucket | str,
        file_system_path: str,
        data_repository_prefix: str = "",
        auto_import_events: Sequence[DataRepositoryEvent] = ALL_EVENTS,
        auto_export_events: Sequence[DataRepositoryEvent] = (),
        batch_import_meta_data_on_create: bool = False,
        imported_file_chunk_size_mib: int | None = None,
        removal_policy: RemovalPolicy | None = None,
    ) -> None:
        check_scope_id(scope, id)
        from .lustre import LustreFileSystemBase

        if not isinstance(file_system, LustreFileSystemBase):
            raise FmTypeError(
                "file_system",
                file_system,
                "a LustreFileSystem (or LustreFileSystem.from_lustre_file_system_attributes(...))",
            )
        file_system_path = check_file_system_path(file_system_path)
        prefix = normalize_prefix(data_repository_prefix)
        imports = _check_events("auto_import_events", auto_import_events)
        exports = _check_events("auto_export_events", auto_export_events)
        batch_import_meta_data_on_create = check_bool(
            "batch_import_meta_data_on_create", batch_import_meta_data_on_create
        )
        imported_file_chunk_size_mib = _check_chunk_size(imported_file_chunk_size_mib)
        if removal_policy is not None:
            removal_policy = check_enum("removal_policy", removal_policy, RemovalPolicy)
        given_bucket = check_bucket("bucket", bucket)
        bucket_name = _bucket_name(given_bucket)
        if known(bucket_name) and known(prefix) and len(f"s3://{bucket_name}/{prefix}") > _MAX_DATA_REPOSITORY_PATH:
            raise FmValidationError(
                "data_repository_prefix",
                data_repository_prefix,
                f"short enough for s3://<bucket>/<prefix>/ to stay within {_MAX_DATA_REPOSITORY_PATH} characters "
                "(FSx API DataRepositoryPath)",
            )
        # The per-file-system rules, before anything is created.
        file_system._check_new_data_repository(file_system_path)
        super().__init__(scope, id)
        bucket = import_bucket(self, given_bucket)
        data_repository_path = f"s3://{bucket.bucket_name}/{prefix}"

        self.file_system = file_system
        self.bucket = bucket
        self.file_system_path = file_system_path
        self.data_repository_prefix = prefix
        self.auto_import_events = imports
        self.auto_export_events = exports
        self.data_repository_path = data_repository_path
        file_system._register_data_repository(self)

        self._build_association(
            batch_import_meta_data_on_create=batch_import_meta_data_on_create,
            imported_file_chunk_size_mib=imported_file_chunk_size_mib,
            removal_policy=removal_policy,
        )

    def _build_association(
        self,
        *,
        batch_import_meta_data_on_create: bool,
        imported_file_chunk_size_mib: int | None,
        removal_policy: RemovalPolicy | None,
    ) -> None:
        """The ``AWS::FSx::DataRepositoryAssociation`` (child id "Resource") and its removal policy."""
        s3_config: fsx.CfnDataRepositoryAssociation.S3Property | None = None
        imports, exports = self.auto_import_events, self.auto_export_events
        if imports or exports:
            s3_config = fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                    events=[e.value for e in imports]
                )
                if imports
                else None,
                auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                    events=[e.value for e in exports]
                )
                if exports
                else None,
            )
        self.resource = fsx.CfnDataRepositoryAssociation(
            self,
            "Resource",
            file_system_id=self.file_system.file_system_id,
            file_system_path=self.file_system_path,
            data_repository_path=self.data_repository_path,
            batch_import_meta_data_on_create=batch_import_meta_data_on_create,
            imported_file_chunk_size=imported_file_chunk_size_mib,
            s3=s3_config,
        )
        policy = removal_policy if removal_policy is not None else self.file_system.removal_policy
        self.resource.apply_removal_policy(policy)
        if policy is RemovalPolicy.RETAIN:
            Annotations.of(self).add_info(_RETAINED_CREATE_ONLY_NOTE)

    @property
    def association_id(self) -> str:
        return self.resource.attr_association_id

    @property
    def exports_to_s3(self) -> bool:
        return bool(self.auto_export_events)


class DataRepositoryBucket(Construct):
    """An S3 bucket for data repository associations, with secure defaults.

    - ``encryption_key`` (``kms.IKey``; default none: SSE-S3). With a key, SSE-KMS with an S3 Bucket Key, and a key
      policy statement for the FSx S3 service-linked roles of this account when the key is a ``kms.Key`` in the app.
    - ``versioned`` default True; public access blocked; TLS 1.2+ only (``enforce_ssl``); bucket-owner-enforced
      object ownership.
    - ``server_access_logs_bucket`` / ``server_access_logs_prefix`` default none (no access logs).
    - ``noncurrent_version_expiration_days`` default 7 (:data:`DEFAULT_NONCURRENT_VERSION_EXPIRATION_DAYS`, where
      the choice is explained): S3 deletes an object version that many days after it was overwritten or deleted.
      None keeps every version forever (each overwritten checkpoint stays billed). Ignored when ``versioned`` is
      False.
    - ``abort_incomplete_multipart_upload_days`` default 7: S3 aborts multipart uploads left incomplete that long
      and deletes their parts. None: never.
    - ``lifecycle_rules`` (``s3.LifecycleRule`` list) default none: more rules, added after the two defaults. To
      replace the defaults, set both day counts to None and give your own rules (``bucket.add_lifecycle_rule``
      works too).
    - ``removal_policy`` default RETAIN: ``cdk destroy`` leaves the bucket and every object version. With DESTROY,
      CloudFormation deletes only an empty bucket (every version and delete marker removed); pass
      ``auto_delete_objects=True`` (default False, DESTROY only) for aws-cdk-lib's custom resource that empties it
      first: for throw-away test stacks only, it deletes the data.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        encryption_key: kms.IKey | None = None,
        versioned: bool = True,
        server_access_logs_bucket: s3.IBucket | None = None,
        server_access_logs_prefix: str | None = None,
        bucket_name: str | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        noncurrent_version_expiration_days: int | None = DEFAULT_NONCURRENT_VERSION_EXPIRATION_DAYS,
        abort_incomplete_multipart_upload_days: int | None = DEFAULT_ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS,
        lifecycle_rules: Sequence[s3.LifecycleRule] = (),
        auto_delete_objects: bool = False,
    ) -> None:
        check_scope_id(scope, id)
        if encryption_key is not None:
            check_kms_key("encryption_key", encryption_key)
        versioned = check_bool("versioned", versioned)
        _check_access_log_types(server_access_logs_bucket, server_access_logs_prefix)
        if bucket_name is not None:
            bucket_name = check_bucket_name("bucket_name", bucket_name)
        removal_policy = check_enum("removal_policy", removal_policy, RemovalPolicy)
        if server_access_logs_prefix is not None and server_access_logs_bucket is None:
            raise FmValidationError(
                "server_access_logs_prefix", server_access_logs_prefix, "None unless server_access_logs_bucket is set"
            )
        rules = _lifecycle_rules(
            versioned=versioned,
            noncurrent_version_expiration_days=noncurrent_version_expiration_days,
            abort_incomplete_multipart_upload_days=abort_incomplete_multipart_upload_days,
            lifecycle_rules=lifecycle_rules,
        )
        if check_bool("auto_delete_objects", auto_delete_objects) and removal_policy is not RemovalPolicy.DESTROY:
            raise FmValidationError(
                "auto_delete_objects",
                True,
                "False unless removal_policy is RemovalPolicy.DESTROY (it deletes the data)",
            )
        super().__init__(scope, id)
        self.bucket = s3.Bucket(
            self,
            "Resource",
            bucket_name=bucket_name,
            encryption=s3.BucketEncryption.KMS if encryption_key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=encryption_key,
            bucket_key_enabled=True if encryption_key else None,
            versioned=versioned,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=server_access_logs_bucket,
            server_access_logs_prefix=server_access_logs_prefix,
            lifecycle_rules=list(rules) or None,
            removal_policy=removal_policy,
            auto_delete_objects=True if auto_delete_objects else None,
        )
        self.encryption_key = encryption_key
        self.removal_policy = removal_policy
        if server_access_logs_bucket is None:
            acknowledge_no_access_logs(self.bucket, parameter="server_access_logs_bucket")
        if encryption_key is not None:
            _allow_fsx_s3_access_to_key(encryption_key)

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    @property
    def bucket_arn(self) -> str:
        return self.bucket.bucket_arn


def _check_access_log_types(server_access_logs_bucket: object, server_access_logs_prefix: str | None) -> None:
    """The server access log bucket (an ``s3.IBucket``) and key prefix, when given."""
    if server_access_logs_bucket is not None:
        check_construct(
            "server_access_logs_bucket",
            server_access_logs_bucket,
            attribute="bucket_name",
            expected="an s3.IBucket",
        )
    if server_access_logs_prefix is not None:
        # An S3 object key prefix (S3 User Guide "Naming Amazon S3 objects": any UTF-8, up to 1,024 bytes).
        check_str(
            "server_access_logs_prefix",
            server_access_logs_prefix,
            pattern=_PATH_TEXT,
            allowed="an S3 key prefix such as 'data-bucket/' (one line, at most 1024 bytes)",
        )
        if len(server_access_logs_prefix.encode()) > 1024:
            raise FmValidationError(
                "server_access_logs_prefix", server_access_logs_prefix, "at most 1024 bytes (an S3 key prefix)"
            )


def _check_days(parameter: str, value: object) -> int | None:
    """None, or a whole number of days of at least 1 (a deploy-time number is passed on for S3 to check)."""
    if value is None:
        return None
    days: int = check_count(parameter, value, minimum=1)
    return days


def _lifecycle_rules(
    *,
    versioned: bool,
    noncurrent_version_expiration_days: object,
    abort_incomplete_multipart_upload_days: object,
    lifecycle_rules: object,
) -> tuple[s3.LifecycleRule, ...]:
    """The default rules (noncurrent version expiry on versioned buckets, aborted multipart uploads), then the given
    ones. S3 API ``LifecycleRule``: ``NoncurrentVersionExpiration.NoncurrentDays`` "must be a non-zero positive
    integer" and applies to versioned buckets; ``AbortIncompleteMultipartUpload.DaysAfterInitiation`` is a number of
    days (botocore s3 2006-03-01 service-2.json)."""
    noncurrent = _check_days("noncurrent_version_expiration_days", noncurrent_version_expiration_days)
    abort = _check_days("abort_incomplete_multipart_upload_days", abort_incomplete_multipart_upload_days)
    extra = check_sequence(
        "lifecycle_rules",
        lifecycle_rules,
        lambda name, rule: check_instance(name, rule, s3.LifecycleRule, "an s3.LifecycleRule"),
    )
    rules: list[s3.LifecycleRule] = []
    if noncurrent is not None and versioned:  # an unversioned bucket keeps no noncurrent versions
        rules.append(
            s3.LifecycleRule(id="ExpireNoncurrentVersions", noncurrent_version_expiration=Duration.days(noncurrent))
        )
    if abort is not None:
        rules.append(
            s3.LifecycleRule(
                id="AbortIncompleteMultipartUploads", abort_incomplete_multipart_upload_after=Duration.days(abort)
            )
        )
    return (*rules, *extra)


def _allow_fsx_s3_access_to_key(key: kms.IKey) -> None:
    """Let the FSx S3 service-linked roles of this account use ``key`` (SSE-KMS buckets linked to Lustre).

    The role of each file system is created with its first association, so the statement names it by an
    ``aws:PrincipalArn`` pattern rather than as a principal (a key policy cannot name a role that does not exist yet).
    Imported keys are left alone (``allow_no_op``): their owners add the statement.
    """
    stack = Stack.of(key)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowFsxLustreS3AccessServiceLinkedRoles",
            principals=[iam.AnyPrincipal()],
            actions=["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
            resources=["*"],
            conditions={
                "ArnLike": {
                    "aws:PrincipalArn": f"arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/"
                    "s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*"
                },
                "StringEquals": {"kms:CallerAccount": stack.account},
            },
        ),
        allow_no_op=True,
    )


def warn_overlapping_s3_paths(
    scope: Construct, new: DataRepositoryAssociation, existing: Sequence[DataRepositoryAssociation]
) -> None:
    """Warn when two associations of one file system link overlapping prefixes of the same bucket."""
    for other in existing:
        if other.bucket.bucket_name == new.bucket.bucket_name and paths_overlap(
            other.data_repository_prefix, new.data_repository_prefix
        ):
            add_warning(
                scope,
                WarningId.LUSTRE_OVERLAPPING_DATA_REPOSITORY_PATHS,
                f"{new.file_system_path} links {new.data_repository_path}, which overlaps "
                f"{other.data_repository_path} of {other.file_system_path}: the same objects would appear twice",
            )
