"""Issue 18: service limits in the storage module, checked when the values are known.

- Sizing objectives that need more than the FSx API's StorageCapacity maximum are refused, naming the objective and
  the capacity it would need; capacities above the default (adjustable) storage quota warn.
- FSx log destinations: a CloudWatch Logs log group whose name begins with ``/aws/fsx`` (FSx API
  LustreLogCreateConfiguration.Destination), in the file system's account and Region.
- EFA interfaces for Lustre on types the catalog does not hold are bounded by the type's EC2 MaximumEfaInterfaces.
- The 1,024 EFA-connection budget is an FmValidationError at construction when every count is known.
"""

from __future__ import annotations

import json
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from fmconstructs import EfaSecurityGroup
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.hyperpod import HyperPodInstanceGroup
from fmconstructs.storage import (
    LustreDeploymentType,
    LustreFileSystem,
    LustreMetadataConfiguration,
    lustre_efa_interfaces,
    size_for_checkpoint,
    size_for_throughput,
)
from fmconstructs.storage.efa_limits import EFA_MAXIMUM_INTERFACES, efa_maximum_interfaces
from fmconstructs.storage.sizing import DEFAULT_STORAGE_CAPACITY_QUOTA_GIB, MAX_STORAGE_CAPACITY_GIB

from tests.conftest import new_scene

QUOTA_WARNING = WarningId.LUSTRE_CAPACITY_ABOVE_DEFAULT_QUOTA.qualified


# --- sizing objectives against the FSx maximum ----------------------------------------------------------------------
def test_a_throughput_objective_too_large_for_one_file_system_names_the_objective_and_the_capacity():
    # 3,000,000 GB/s at 1,000 MB/s/TiB needs 3,072,000,000 GiB.
    with pytest.raises(FmValidationError) as raised:
        size_for_throughput(3_000_000)
    message = str(raised.value)
    assert message.startswith("target_gbytes_per_s must be an objective one file system can meet")
    assert "it needs 3,072,000,000 GiB at 1000 MB/s/TiB, above the 2,147,483,647 GiB" in message
    assert message.split(" (at ")[0].endswith("got 3000000")
    assert MAX_STORAGE_CAPACITY_GIB == 2**31 - 1  # botocore fsx StorageCapacity max
    assert size_for_throughput(2_000_000).storage_capacity_gib <= MAX_STORAGE_CAPACITY_GIB  # the largest that fits


def test_a_checkpoint_objective_too_large_names_the_checkpoint():
    with pytest.raises(FmValidationError, match=r"^checkpoint_bytes/seconds must be an objective .* got '3e\+18 bytes"):
        size_for_checkpoint(3e18, 1)


def test_a_min_capacity_above_the_maximum_names_min_capacity():
    with pytest.raises(FmValidationError, match=r"^min_capacity_gib must be an objective one file system can meet"):
        size_for_throughput(1, min_capacity_gib=MAX_STORAGE_CAPACITY_GIB + 1)


def test_lustre_file_system_refuses_a_capacity_above_the_api_maximum():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^storage_capacity_gib must be at most 2,147,483,647"):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=2_147_484_000)


def test_capacity_above_the_default_quota_warns():
    assert DEFAULT_STORAGE_CAPACITY_QUOTA_GIB[LustreDeploymentType.PERSISTENT_2] == 100_800
    for capacity, warns in ((100_800, False), (103_200, True)):
        scene = new_scene()
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=capacity)
        found = Annotations.from_stack(scene.stack).find_warning(
            "/Test/Fs", Match.string_like_regexp("storage capacity")
        )
        assert any(QUOTA_WARNING in str(w.entry.data) for w in found) is warns
    assert "103,200 GiB is above the default PERSISTENT_2 storage capacity quota of 100,800 GiB" in str(found)


# --- FSx log destinations -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["/training/fsx", "fsx-logs"])
def test_a_log_group_of_the_app_with_a_name_outside_aws_fsx_is_refused(name):
    # Its log_group_name is a Ref at synthesis; the name given to it is checked (it was skipped as a token before).
    for good in ("/aws/fsx/lustre", "/aws/fsx-training"):  # names FSx accepts: the log group is the destination
        ok = new_scene()
        group = logs.LogGroup(ok.stack, "Logs", log_group_name=good)
        LustreFileSystem(ok.stack, "Fs", vpc=ok.vpc, storage_capacity_gib=1200, log_group=group)
        (fs,) = ok.template().find_resources("AWS::FSx::FileSystem").values()
        destination = json.dumps(fs["Properties"]["LustreConfiguration"]["LogConfiguration"]["Destination"])
        logical_id = ok.stack.get_logical_id(group.node.default_child)
        assert destination.endswith(f'":logs:us-east-1:123456789012:log-group:", {{"Ref": "{logical_id}"}}]]}}')
    scene = new_scene()
    group = logs.LogGroup(scene.stack, "Logs", log_group_name=name)
    with pytest.raises(
        FmValidationError, match=rf"^log_group must be a log group whose name begins with '/aws/fsx'.* got '{name}'"
    ):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, log_group=group)


@pytest.mark.parametrize("name", ["/training/fsx", "aws/fsx/lustre", "/aws/fs", "/AWS/FSX/lustre"])
def test_log_groups_outside_aws_fsx_are_refused(name):
    scene = new_scene()
    group = logs.LogGroup.from_log_group_name(scene.stack, "Logs", name)
    with pytest.raises(FmValidationError) as raised:
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, log_group=group)
    message = str(raised.value)
    assert message.startswith("log_group must be a log group whose name begins with '/aws/fsx'")
    assert "LustreLogCreateConfiguration.Destination" in message
    assert message.split(" (at ")[0].endswith(f"got {name!r}")
    assert scene.stack.node.try_find_child("Fs") is None


def test_an_unnamed_log_group_of_the_app_is_refused():
    # CloudFormation would name it <stack>-<id>-<hash>: never /aws/fsx..., so FSx would refuse it at deploy time.
    scene = new_scene()
    name = cdk.CfnParameter(scene.stack, "LogGroupName").value_as_string  # a deploy-time name is passed on
    imported = logs.LogGroup.from_log_group_name(scene.stack, "Imported", name)
    LustreFileSystem(scene.stack, "Other", vpc=scene.vpc, storage_capacity_gib=1200, log_group=imported)
    group = logs.LogGroup(scene.stack, "Logs")
    with pytest.raises(
        FmValidationError, match=r"^log_group must be .* got 'Test/Logs \(a name CloudFormation generates\)'"
    ):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, log_group=group)


@pytest.mark.parametrize(
    ("arn", "what"),
    [
        ("arn:aws:logs:us-west-2:123456789012:log-group:/aws/fsx/lustre:*", "Region us-west-2"),
        ("arn:aws:logs:us-east-1:210987654321:log-group:/aws/fsx/lustre:*", "account 210987654321"),
    ],
)
def test_a_log_group_in_another_account_or_region_is_refused(arn, what):
    scene = new_scene()
    group = logs.LogGroup.from_log_group_arn(scene.stack, "Logs", arn)
    with pytest.raises(
        FmValidationError, match=rf"^log_group must be a log group in the file system's .* got 'Test/Logs \({what}\)'"
    ):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, log_group=group)


# --- EFA interfaces for Lustre on types outside the catalog ---------------------------------------------------------
@pytest.mark.parametrize(
    ("instance_type", "maximum"), [("g5.48xlarge", 1), ("ml.g6e.48xlarge", 4), ("trn1.32xlarge", 8)]
)
def test_explicit_counts_on_non_catalog_types_are_bounded_by_the_types_efa_maximum(instance_type, maximum):
    # The table agrees with the catalog where both know a type.
    assert efa_maximum_interfaces("p5.48xlarge") == 32 and efa_maximum_interfaces("ml.p5en.48xlarge") == 16
    assert EFA_MAXIMUM_INTERFACES["trn1n.32xlarge"] == 16
    assert (
        lustre_efa_interfaces(efa_enabled=True, instance_type=instance_type, efa_interfaces_for_lustre=maximum)
        == maximum
    )
    with pytest.raises(FmValidationError) as raised:
        lustre_efa_interfaces(efa_enabled=True, instance_type=instance_type, efa_interfaces_for_lustre=maximum + 1)
    assert str(raised.value) == (
        f"efa_interfaces_for_lustre must be at most {maximum}, the EFA interfaces of {instance_type} "
        f"(EC2 MaximumEfaInterfaces), got {maximum + 1}"
    )


def test_a_type_the_table_does_not_know_is_not_bounded():
    assert lustre_efa_interfaces(efa_enabled=True, instance_type="x9z.96xlarge", efa_interfaces_for_lustre=4) == 4


@pytest.mark.parametrize(("instance_type", "count"), [("ml.g5.48xlarge", 2), ("ml.g6e.48xlarge", 8)])
def test_hyperpod_groups_of_non_catalog_types_are_bounded(instance_type, count):
    with pytest.raises(
        FmValidationError, match=rf"^efa_interfaces_for_lustre must be at most .* {re.escape(instance_type)}"
    ):
        HyperPodInstanceGroup(name="gpu", instance_type=instance_type, nodes=2, efa_interfaces_for_lustre=count)


# --- the 1,024 EFA connections at construction ---------------------------------------------------------------------
def _efa_fs(scene) -> LustreFileSystem:
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
    )


def test_known_counts_over_the_budget_raise_at_registration():
    scene = new_scene()
    fs = _efa_fs(scene)
    fs.register_efa_clients(Construct(scene.stack, "A"), max_nodes=64, efa_interfaces_per_node=8)
    with pytest.raises(FmValidationError, match=r"^EFA connections to Test/Fs must be at most 1,024 .* got '1,032'$"):
        fs.register_efa_clients(Construct(scene.stack, "B"), max_nodes=1, efa_interfaces_per_node=520)
    assert [g.consumer_path for g in fs.efa_client_groups] == ["Test/A"]
    # With a deploy-time count, the check is left to synthesis (known groups only).
    scene = new_scene()
    fs = _efa_fs(scene)
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    fs.register_efa_clients(Construct(scene.stack, "Elastic"), max_nodes=nodes, efa_interfaces_per_node=8)
    fs.register_efa_clients(Construct(scene.stack, "Big"), max_nodes=129, efa_interfaces_per_node=8)  # no raise
    with pytest.raises(RuntimeError, match="EFA connections to Test/Fs must be at most 1,024"):
        scene.app.synth()
