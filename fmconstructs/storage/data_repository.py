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
  access blocked, TLS only, optional server access logs, RETAIN).

FSx reaches the bucket through its service-linked role (``AWSServiceRoleForFSxS3Access_<fs-id>``), whose policy AWS
manages, so no bucket policy statement is needed; a customer-managed KMS key needs a key policy statement for that
role, which :class:`DataRepositoryBucket` adds to keys it can modify (``kms.Key`` in the app).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from aws_cdk import Annotations, RemovalPolicy, Stack, Token
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..errors import FmValidationError, one_of

if TYPE_CHECKING:
    from .lustre import LustreFileSystemBase

#: At most this many data repository associations per file system.
MAX_DATA_REPOSITORIES = 8
#: ImportedFileChunkSize bounds (MiB); FSx default 1024.
MAX_IMPORTED_FILE_CHUNK_SIZE_MIB = 512_000

WARNING_OVERLAPPING_S3_PATHS = "fmconstructs:lustre-overlapping-data-repository-paths"

_FS_PATH = re.compile(r"^/([A-Za-z0-9._@+-]+(/[A-Za-z0-9._@+-]+)*)?$")
_S3_PREFIX = re.compile(r"^([A-Za-z0-9!_.*'()@+=-]+/)*$")


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


def _check_events(parameter: str, events: Sequence[DataRepositoryEvent]) -> tuple[DataRepositoryEvent, ...]:
    if isinstance(events, str) or not all(isinstance(e, DataRepositoryEvent) for e in events):
        raise FmValidationError(parameter, events, f"a sequence of DataRepositoryEvent ({one_of(DataRepositoryEvent)})")
    if len(set(events)) != len(events):
        raise FmValidationError(parameter, [e.value for e in events], "a sequence without duplicates")
    return tuple(events)


def check_file_system_path(file_system_path: str) -> None:
    """``/`` or an absolute path without a trailing slash, ``..`` or empty segments (at most 4096 characters)."""
    if (
        not isinstance(file_system_path, str)
        or len(file_system_path) > 4096
        or not _FS_PATH.match(file_system_path)
        or ".." in file_system_path.split("/")
    ):
        raise FmValidationError(
            "file_system_path", file_system_path, "'/' or an absolute path such as '/datasets' (no trailing '/')"
        )


def normalize_prefix(prefix: str) -> str:
    """``datasets`` -> ``datasets/``; ``""`` stays ``""`` (the whole bucket)."""
    if not isinstance(prefix, str):
        raise FmValidationError("data_repository_prefix", prefix, "a string")
    normalized = prefix if prefix == "" or prefix.endswith("/") else prefix + "/"
    if normalized.startswith("/") or not _S3_PREFIX.match(normalized) or ".." in normalized.split("/"):
        raise FmValidationError(
            "data_repository_prefix", prefix, "'' or an S3 key prefix such as 'datasets/' (no leading '/')"
        )
    return normalized


def paths_overlap(a: str, b: str, *, separator: str = "/") -> bool:
    """Whether one path equals or contains the other (``/a`` and ``/a/b`` overlap, ``/a`` and ``/ab`` do not)."""
    a_parts = [p for p in a.split(separator) if p]
    b_parts = [p for p in b.split(separator) if p]
    shorter = min(len(a_parts), len(b_parts))
    return a_parts[:shorter] == b_parts[:shorter]


class DataRepositoryAssociation(Construct):
    """An ``AWS::FSx::DataRepositoryAssociation`` between a Lustre directory and an S3 prefix.

    Prefer ``file_system.add_data_repository(id, bucket=..., file_system_path=...)``. Settings are those of
    :class:`DataRepositoryLink`, plus ``bucket`` (``s3.IBucket``) and ``removal_policy`` (default: the file system's,
    RETAIN unless set; deleting an association never deletes file-system data).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        file_system: LustreFileSystemBase,
        bucket: s3.IBucket,
        file_system_path: str,
        data_repository_prefix: str = "",
        auto_import_events: Sequence[DataRepositoryEvent] = ALL_EVENTS,
        auto_export_events: Sequence[DataRepositoryEvent] = (),
        batch_import_meta_data_on_create: bool = False,
        imported_file_chunk_size_mib: int | None = None,
        removal_policy: RemovalPolicy | None = None,
    ) -> None:
        super().__init__(scope, id)
        check_file_system_path(file_system_path)
        prefix = normalize_prefix(data_repository_prefix)
        imports = _check_events("auto_import_events", auto_import_events)
        exports = _check_events("auto_export_events", auto_export_events)
        chunk = imported_file_chunk_size_mib
        if (
            chunk is not None
            and not Token.is_unresolved(chunk)
            and (
                isinstance(chunk, bool)
                or not isinstance(chunk, int)
                or not 1 <= chunk <= MAX_IMPORTED_FILE_CHUNK_SIZE_MIB
            )
        ):
            raise FmValidationError(
                "imported_file_chunk_size_mib",
                imported_file_chunk_size_mib,
                f"an integer from 1 to {MAX_IMPORTED_FILE_CHUNK_SIZE_MIB} (MiB)",
            )

        self.file_system = file_system
        self.bucket = bucket
        self.file_system_path = file_system_path
        self.data_repository_prefix = prefix
        self.auto_import_events = imports
        self.auto_export_events = exports
        self.data_repository_path = f"s3://{bucket.bucket_name}/{prefix}"
        # Checks the per-file-system rules (raises before anything is created) and records this association.
        file_system._register_data_repository(self)

        s3_config: fsx.CfnDataRepositoryAssociation.S3Property | None = None
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
            file_system_id=file_system.file_system_id,
            file_system_path=file_system_path,
            data_repository_path=self.data_repository_path,
            batch_import_meta_data_on_create=batch_import_meta_data_on_create,
            imported_file_chunk_size=imported_file_chunk_size_mib,
            s3=s3_config,
        )
        self.resource.apply_removal_policy(removal_policy if removal_policy is not None else file_system.removal_policy)

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
    - ``removal_policy`` default RETAIN.
    """

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
    ) -> None:
        super().__init__(scope, id)
        if server_access_logs_prefix is not None and server_access_logs_bucket is None:
            raise FmValidationError(
                "server_access_logs_prefix", server_access_logs_prefix, "None unless server_access_logs_bucket is set"
            )
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
            removal_policy=removal_policy,
        )
        self.encryption_key = encryption_key
        if encryption_key is not None:
            _allow_fsx_s3_access_to_key(encryption_key)

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    @property
    def bucket_arn(self) -> str:
        return self.bucket.bucket_arn


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
            Annotations.of(scope).add_warning_v2(
                WARNING_OVERLAPPING_S3_PATHS,
                f"{new.file_system_path} links {new.data_repository_path}, which overlaps "
                f"{other.data_repository_path} of {other.file_system_path}: the same objects would appear twice",
            )
