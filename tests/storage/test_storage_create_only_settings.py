"""FSx for Lustre: the library emits create-only settings the same way whatever the mutable settings are.

An edit that only touches mutable settings (backups on or off, maintenance window, logging, metadata IOPS, data
compression, a capacity increase) must leave every create-only property of the file system exactly as it was, present
or absent: a create-only property that appears, changes or disappears makes CloudFormation replace the file system
(a new, empty /fsx). The create-only list and its sources: fmconstructs/storage/create_only.py.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_fsx as fsx

from fmconstructs import EfaSecurityGroup, FmValidationError
from fmconstructs.storage import (
    LustreDataCompression,
    LustreDeploymentType,
    LustreFileSystem,
    LustreLogLevel,
    LustreMetadataConfiguration,
)
from fmconstructs.storage.create_only import (
    CREATE_ONLY_PROPERTIES,
    DATA_REPOSITORY_ASSOCIATION,
    FILE_SYSTEM,
    create_only_values,
)

from tests.conftest import new_scene


def _properties(*, efa: bool = False, **options: Any) -> dict[str, Any]:
    """The Properties of one file system built in a fresh stack (same construct ids: same logical ids)."""
    scene = new_scene()
    settings: dict[str, Any] = {"storage_capacity_gib": 1200}
    if efa:
        settings = {
            "storage_capacity_gib": 4800,
            "throughput_mbps_per_tib": 1000,
            "efa_enabled": True,
            "metadata_configuration": LustreMetadataConfiguration.automatic(),
            "efa_security_group": EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
        }
    settings.update(options)
    LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, **settings)
    resources_ = scene.template().find_resources(FILE_SYSTEM)
    assert len(resources_) == 1
    properties: dict[str, Any] = next(iter(resources_.values()))["Properties"]
    return properties


MUTABLE_EDITS: dict[str, dict[str, Any]] = {
    "backups off": {"automatic_backup_retention": cdk.Duration.days(0)},
    "backups 30 days": {"automatic_backup_retention": cdk.Duration.days(30)},
    "backup start time": {"daily_automatic_backup_start_time": fsx.DailyAutomaticBackupStartTime(hour=5, minute=30)},
    "maintenance window": {
        "weekly_maintenance_start_time": fsx.LustreMaintenanceTime(day=fsx.Weekday.MONDAY, hour=4, minute=0)
    },
    "logging off": {"log_level": LustreLogLevel.DISABLED},
    "metadata iops": {"metadata_configuration": LustreMetadataConfiguration.user_provisioned(12000)},
    "no compression": {"data_compression": LustreDataCompression.NONE},
    "capacity increase": {"storage_capacity_gib": 2400},
}


@pytest.mark.parametrize("edit", list(MUTABLE_EDITS), ids=list(MUTABLE_EDITS))
def test_a_mutable_edit_leaves_every_create_only_property_as_it_was(edit: str) -> None:
    # GIVEN a PERSISTENT_2 file system with the defaults, WHEN only a mutable setting changes
    before = create_only_values(FILE_SYSTEM, _properties())
    after = create_only_values(FILE_SYSTEM, _properties(**MUTABLE_EDITS[edit]))
    # THEN the create-only properties are identical, present or absent
    assert after == before


@pytest.mark.parametrize("edit", ["backups off", "backups 30 days", "capacity increase"])
def test_a_mutable_edit_of_an_efa_file_system_leaves_its_create_only_properties(edit: str) -> None:
    options = dict(MUTABLE_EDITS[edit])
    if edit == "capacity increase":
        options["storage_capacity_gib"] = 9600  # the next EFA step at 1,000 MB/s/TiB
    assert create_only_values(FILE_SYSTEM, _properties(efa=True, **options)) == create_only_values(
        FILE_SYSTEM, _properties(efa=True)
    )


def test_a_deploy_time_backup_retention_emits_the_same_create_only_properties() -> None:
    scene = new_scene()
    days = cdk.CfnParameter(scene.stack, "BackupDays", type="Number", default=7).value_as_number
    LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=1200,
        automatic_backup_retention=cdk.Duration.days(days),
    )
    properties = next(iter(scene.template().find_resources(FILE_SYSTEM).values()))["Properties"]
    assert create_only_values(FILE_SYSTEM, properties) == create_only_values(FILE_SYSTEM, _properties())


@pytest.mark.parametrize("retention_days", [0, 7, 90])
@pytest.mark.parametrize("copy_tags", [True, False])
def test_copy_tags_to_backups_is_emitted_whether_backups_are_on_or_off(retention_days: int, copy_tags: bool) -> None:
    properties = _properties(
        automatic_backup_retention=cdk.Duration.days(retention_days), copy_tags_to_backups=copy_tags
    )
    assert properties["LustreConfiguration"]["CopyTagsToBackups"] is copy_tags


@pytest.mark.parametrize("retention_days", [0, 7])
def test_copy_tags_to_backups_none_is_never_emitted(retention_days: int) -> None:
    # For a file system that 0.2.x created with backups off (its template had no CopyTagsToBackups).
    properties = _properties(automatic_backup_retention=cdk.Duration.days(retention_days), copy_tags_to_backups=None)
    assert "CopyTagsToBackups" not in properties["LustreConfiguration"]


@pytest.mark.parametrize("copy_tags", [True, False, None])
def test_scratch_file_systems_never_emit_copy_tags_to_backups(copy_tags: bool | None) -> None:
    properties = _properties(deployment_type=LustreDeploymentType.SCRATCH_2, copy_tags_to_backups=copy_tags)
    assert "CopyTagsToBackups" not in properties["LustreConfiguration"]


@pytest.mark.parametrize("value", ["yes", 1, 0, 1.0, "True", []])
def test_copy_tags_to_backups_refuses_non_bools(value: object) -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"copy_tags_to_backups must be True, False or None"):
        LustreFileSystem(
            scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200,
            copy_tags_to_backups=value,  # type: ignore[arg-type]
        )  # fmt: skip
    assert scene.stack.node.try_find_child("Fs") is None


# --- the create-only table itself ------------------------------------------------------------------------------


def _cfn_lint_create_only(resource_type: str) -> set[str]:
    """``createOnlyProperties`` of the resource type in the installed cfn-lint's us-east-1 schema."""
    schemas = resources.files("cfnlint") / "data" / "schemas"
    provider = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    schema = json.loads((schemas / "resources" / f"{provider[resource_type]}.json").read_text())
    return {path.removeprefix("/properties/") for path in schema.get("createOnlyProperties", [])}


@pytest.mark.parametrize("resource_type", [FILE_SYSTEM, DATA_REPOSITORY_ASSOCIATION])
def test_the_table_holds_every_create_only_property_of_the_cfn_lint_schema(resource_type: str) -> None:
    # A cfn-lint update that marks one more property create-only fails here until the table lists it.
    assert _cfn_lint_create_only(resource_type) <= set(CREATE_ONLY_PROPERTIES[resource_type])


def test_create_only_values_reads_nested_paths_and_leaves_absent_ones_out() -> None:
    properties = {"SubnetIds": ["subnet-1"], "LustreConfiguration": {"DeploymentType": "PERSISTENT_2"}}
    assert create_only_values(FILE_SYSTEM, properties) == {
        "SubnetIds": ["subnet-1"],
        "LustreConfiguration/DeploymentType": "PERSISTENT_2",
    }
    assert create_only_values(FILE_SYSTEM, {"LustreConfiguration": "not a mapping"}) == {}
    assert create_only_values("AWS::S3::Bucket", {"BucketName": "b"}) == {}
