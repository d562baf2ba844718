"""Storage edits that cannot deploy in one step say so at synthesis.

- A retained data repository association: its create-only properties (file system path, bucket and prefix, batch
  import) cannot change in one deploy (the replacement collides with it); an info message says what to do.
- A retained log group of the app with a fixed name given to a file system blocks destroy-then-redeploy: a warning.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match

from fmconstructs.errors import WarningId
from fmconstructs.storage import LustreFileSystem

from tests.conftest import Scene, new_scene

_DRA_NOTE = Match.string_like_regexp(
    r".*retained \(RETAIN\).*create-only.*delete-data-repository-association --association-id dra-\.\.\. "
    r"--no-delete-data-in-file-system.*"
)
_LOG_WARNING = WarningId.LUSTRE_LOG_GROUP_RETAINED_FIXED_NAME.qualified


def _fs(scene: Scene, **options: Any) -> LustreFileSystem:
    return LustreFileSystem(
        scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200, **options
    )


def _bucket(scene: Scene) -> s3.IBucket:
    return s3.Bucket.from_bucket_name(scene.stack, "Data", "data-bucket")


def test_a_retained_association_says_how_to_change_its_create_only_properties() -> None:
    scene = new_scene()
    _fs(scene).add_data_repository("Datasets", bucket=_bucket(scene), file_system_path="/datasets")
    Annotations.from_stack(scene.stack).has_info("/Test/Fs/Datasets", _DRA_NOTE)


def test_the_default_layout_notes_each_association() -> None:
    scene = new_scene()
    _fs(scene).add_data_repositories(_bucket(scene))
    infos = Annotations.from_stack(scene.stack).find_info("*", _DRA_NOTE)
    assert sorted(i.id for i in infos) == ["/Test/Fs/Checkpoints", "/Test/Fs/Datasets"]


@pytest.mark.parametrize(
    ("fs_policy", "association_policy"),
    [
        (cdk.RemovalPolicy.DESTROY, None),  # inherits DESTROY from the file system
        (cdk.RemovalPolicy.RETAIN, cdk.RemovalPolicy.DESTROY),
    ],
)
def test_an_association_that_is_not_retained_has_no_note(
    fs_policy: cdk.RemovalPolicy, association_policy: cdk.RemovalPolicy | None
) -> None:
    scene = new_scene()
    _fs(scene, removal_policy=fs_policy).add_data_repository(
        "Datasets", bucket=_bucket(scene), file_system_path="/datasets", removal_policy=association_policy
    )
    assert Annotations.from_stack(scene.stack).find_info("*", _DRA_NOTE) == []


def test_a_retained_fixed_name_log_group_warns() -> None:
    scene = new_scene()
    group = logs.LogGroup(scene.stack, "FsxLogs", log_group_name="/aws/fsx/lustre/training")  # RETAIN by default
    _fs(scene, log_group=group)
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Fs",
        Match.string_like_regexp(
            r".*/aws/fsx/lustre/training \(Test/FsxLogs\) is retained.*removal_policy=RemovalPolicy.DESTROY.*"
            + _LOG_WARNING
            + ".*"
        ),
    )


@pytest.mark.parametrize("kind", ["destroy", "imported", "none"])
def test_no_log_group_warning_when_a_redeploy_cannot_collide(kind: str) -> None:
    scene = new_scene()
    group: logs.ILogGroup | None = None
    if kind == "destroy":
        group = logs.LogGroup(
            scene.stack, "FsxLogs", log_group_name="/aws/fsx/lustre/training", removal_policy=cdk.RemovalPolicy.DESTROY
        )
    elif kind == "imported":
        group = logs.LogGroup.from_log_group_name(scene.stack, "FsxLogs", "/aws/fsx/lustre/training")
    _fs(scene, log_group=group)
    assert Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(f".*{_LOG_WARNING}.*")) == []
