"""The data repositories of a Lustre file system: its links to S3 (``AWS::FSx::DataRepositoryAssociation``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack, cast

from aws_cdk import aws_s3 as s3
from constructs import Construct

from .._validate import (
    check_sequence,
    known,
)
from ..errors import FmTypeError, FmValidationError
from .data_repository import (
    DEFAULT_LAYOUT,
    MAX_DATA_REPOSITORIES,
    DataRepositoryAssociation,
    DataRepositoryAssociationOptions,
    DataRepositoryLink,
    check_bucket,
    import_bucket,
    normalize_file_system_path,
    paths_overlap,
    warn_overlapping_s3_paths,
)
from .sizing import (
    LustreDeploymentType,
)

if TYPE_CHECKING:
    from .lustre import LustreFileSystemBase

    _Construct = Construct  # mypy sees the mixin as a construct; at run time it is a plain class
else:
    _Construct = object


class _LustreDataRepositories(_Construct):
    """The S3 link side of :class:`~fmconstructs.storage.lustre.LustreFileSystemBase` (a mixin)."""

    deployment_type: LustreDeploymentType | None
    _data_repositories: list[DataRepositoryAssociation]

    if TYPE_CHECKING:

        def _create_export_alarms(self) -> None:
            raise NotImplementedError

    # --- S3 links ------------------------------------------------------------------------------------------------
    @property
    def data_repositories(self) -> tuple[DataRepositoryAssociation, ...]:
        return tuple(self._data_repositories)

    def add_data_repository(
        self, id: str, **options: Unpack[DataRepositoryAssociationOptions]
    ) -> DataRepositoryAssociation:
        """Link ``file_system_path`` to ``s3://bucket/data_repository_prefix`` (AWS::FSx::DataRepositoryAssociation).

        ``bucket``: an ``s3.IBucket``, or a bucket name or ``arn:<partition>:s3:::<name>`` ARN (checked against the S3
        bucket naming rules, then imported). ``file_system_path``: any path the FSx API accepts (a leading ``/``;
        spaces, non-ASCII and a trailing ``/`` are fine). Defaults: import NEW, CHANGED, DELETED; no export; no batch
        import; FSx chunk size (1024 MiB); the file system's removal policy. Rules: at most 8 per file system, ``/``
        only as the first and only one, none on SCRATCH_1, unique paths, no path nested in another (``/ns1/`` and
        ``/ns1`` are the same directory). Note: a tag change on a file system with associations can fail its
        CloudFormation update (cloudformation-coverage-roadmap#1687).
        """
        # this mixin is always a LustreFileSystemBase
        return DataRepositoryAssociation(self, id, file_system=cast("LustreFileSystemBase", self), **options)

    def add_data_repositories(
        self, bucket: s3.IBucket | str, layout: Sequence[DataRepositoryLink] = DEFAULT_LAYOUT
    ) -> list[DataRepositoryAssociation]:
        """One association per link of ``layout`` (default :data:`DEFAULT_LAYOUT`: /datasets and /checkpoints).

        Construct ids come from the paths: ``/datasets`` -> ``Datasets``, ``/a/b-c`` -> ``ABC``; a path with other
        characters (spaces, non-ASCII, a trailing ``/``) also gets a short hash of the path, so that ids stay distinct.
        """
        links = check_sequence("layout", layout, _check_link)
        ids = [_id_from_path(link.file_system_path) for link in links]
        for index, association_id in enumerate(ids):
            if association_id in ids[:index] or self.node.try_find_child(association_id) is not None:
                raise FmValidationError(
                    f"layout[{index}].file_system_path",
                    links[index].file_system_path,
                    f"a path whose construct id ({association_id!r}) is not taken on {self.node.path}: call "
                    "add_data_repository(id, ...) with your own id for it",
                )
        if isinstance(bucket, str):
            bucket = import_bucket(self, check_bucket("bucket", bucket))
        return [
            self.add_data_repository(
                association_id,
                bucket=bucket,
                file_system_path=link.file_system_path,
                data_repository_prefix=link.data_repository_prefix,
                auto_import_events=link.auto_import_events,
                auto_export_events=link.auto_export_events,
                batch_import_meta_data_on_create=link.batch_import_meta_data_on_create,
                imported_file_chunk_size_mib=link.imported_file_chunk_size_mib,
            )
            for association_id, link in zip(ids, links, strict=True)
        ]

    def _check_new_data_repository(self, file_system_path: str) -> None:
        """Check the per-file-system rules for a new association at ``file_system_path`` (before it is created)."""
        existing = self._data_repositories
        if self.deployment_type is LustreDeploymentType.SCRATCH_1:
            raise FmValidationError(
                "deployment_type", self.deployment_type.value, "not SCRATCH_1 for data repository associations"
            )
        if len(existing) >= MAX_DATA_REPOSITORIES:
            raise FmValidationError(
                "data repository associations",
                len(existing) + 1,
                f"at most {MAX_DATA_REPOSITORIES} per file system",
            )
        if not known(file_system_path):
            return  # a deploy-time path: FSx checks it
        path = normalize_file_system_path(file_system_path)
        if path == "/" and existing:
            raise FmValidationError(
                "file_system_path", file_system_path, "used only by the first and only association of a file system"
            )
        for other in existing:
            if not known(other.file_system_path):
                continue
            if normalize_file_system_path(other.file_system_path) == path:
                raise FmValidationError(
                    "file_system_path",
                    file_system_path,
                    f"unique on the file system ({other.file_system_path!r} is already linked)",
                )
            if paths_overlap(other.file_system_path, file_system_path):
                raise FmValidationError(
                    "file_system_path", file_system_path, f"not nested in or containing {other.file_system_path!r}"
                )

    def _register_data_repository(self, association: DataRepositoryAssociation) -> None:
        """Record a new association (checked by :meth:`_check_new_data_repository`)."""
        warn_overlapping_s3_paths(association, association, self._data_repositories)
        self._data_repositories.append(association)
        self._create_export_alarms()


def _check_link(parameter: str, value: object) -> DataRepositoryLink:
    if not isinstance(value, DataRepositoryLink):
        raise FmTypeError(parameter, value, f"a DataRepositoryLink (got a {type(value).__name__})")
    return value


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: The paths the 0.1 releases accepted; their construct ids stay as they were (ids are public API).
_PLAIN_PATH = re.compile(r"/([A-Za-z0-9._@+-]+(/[A-Za-z0-9._@+-]+)*)?")


def _id_from_path(path: str) -> str:
    name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", path) if part) or "Root"
    if _PLAIN_PATH.fullmatch(path):
        return name
    return f"{name}{hashlib.sha256(path.encode()).hexdigest()[:8]}"
