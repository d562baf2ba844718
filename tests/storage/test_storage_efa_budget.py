"""The 1,024 EFA connection budget of an EFA-enabled FSx for Lustre file system.

FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients), Step 4: "Each FSx for Lustre file system
has a maximum limit of 1024 EFA connections across all client instances", and "Each configured EFA interface on a
client instance counts as one connection". Node groups register (max nodes x EFA interfaces for LNet); synthesis fails
above 1,024 and warns when a node count is a token.
"""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from fmconstructs import EfaSecurityGroup, FmValidationError, WarningId
from fmconstructs.errors import FmTypeError
from fmconstructs.storage import (
    MAX_EFA_CONNECTIONS,
    LustreDeploymentType,
    LustreFileSystem,
    LustreMetadataConfiguration,
)

from tests.conftest import new_scene


def _efa_fs(scene, *, efa_enabled: bool = True) -> LustreFileSystem:
    if not efa_enabled:
        return LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
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


def _synth_error(scene) -> str:
    with pytest.raises(RuntimeError, match="Validation failed") as raised:
        scene.app.synth()
    return str(raised.value)


def test_the_limit_is_the_fsx_guides():
    assert MAX_EFA_CONNECTIONS == 1024


def test_over_budget_is_refused_at_construction_naming_each_group_and_what_to_lower():
    # Issue 18: every count is known, so the registration that exceeds the budget raises (it was a synthesis error).
    scene = new_scene()
    fs = _efa_fs(scene)
    fs.register_efa_clients(Construct(scene.stack, "P5Group"), max_nodes=100, efa_interfaces_per_node=8)
    with pytest.raises(FmValidationError) as raised:
        fs.register_efa_clients(Construct(scene.stack, "B300Group"), max_nodes=30, efa_interfaces_per_node=16)
    message = str(raised.value)
    assert message.startswith("EFA connections to Test/Fs must be at most 1,024")
    assert "Test/P5Group (100 nodes x 8 EFA interfaces = 800); " in message
    assert "Test/B300Group (30 nodes x 16 EFA interfaces = 480)" in message
    assert "Lower max_nodes or efa_interfaces_for_lustre" in message
    assert "Configuring EFA clients" in message
    assert message.endswith("got '1,280'")
    assert fs.max_efa_connections == 800  # the refused group is not recorded


def test_exactly_the_limit_synthesizes():
    scene = new_scene()
    fs = _efa_fs(scene)
    fs.register_efa_clients(Construct(scene.stack, "A"), max_nodes=64, efa_interfaces_per_node=8)
    fs.register_efa_clients(Construct(scene.stack, "B"), max_nodes=32, efa_interfaces_per_node=16)
    assert fs.max_efa_connections == 1024
    scene.app.synth()


def test_registering_a_group_again_replaces_it():
    scene = new_scene()
    fs = _efa_fs(scene)
    group = Construct(scene.stack, "Group")
    fs.register_efa_clients(group, max_nodes=100, efa_interfaces_per_node=8)
    # 800 + 800 would exceed the budget: the second registration replaces the first instead.
    fs.register_efa_clients(group, max_nodes=100, efa_interfaces_per_node=8)
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [("Test/Group", 800)]
    scene.app.synth()


@pytest.mark.parametrize("efa_enabled", [False, True])
def test_tcp_clients_use_no_efa_connections(efa_enabled):
    scene = new_scene()
    fs = _efa_fs(scene, efa_enabled=efa_enabled)
    # A file system that is not EFA-enabled, or 0 interfaces (efa_interfaces_for_lustre=0): LNet over TCP.
    fs.register_efa_clients(
        Construct(scene.stack, "Tcp"), max_nodes=5000, efa_interfaces_per_node=0 if efa_enabled else 8
    )
    assert fs.efa_client_groups == ()
    scene.app.synth()


def test_token_node_count_warns_instead():
    scene = new_scene()
    fs = _efa_fs(scene)
    max_nodes = cdk.CfnParameter(scene.stack, "MaxNodes", type="Number").value_as_number
    fs.register_efa_clients(Construct(scene.stack, "Elastic"), max_nodes=max_nodes, efa_interfaces_per_node=8)
    assert fs.max_efa_connections is None
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Fs",
        Match.string_like_regexp(
            re.escape(
                "Test/Elastic (? (a deploy-time value) nodes x 8 EFA interfaces = ?) mounts this file system over "
                "EFA, but its node count or EFA interfaces per node is a deploy-time value"
            )
        ),
    )
    warnings = Annotations.from_stack(scene.stack).find_warning("/Test/Fs", Match.any_value())
    assert any(WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN.qualified in str(w.entry.data) for w in warnings)


def test_known_groups_over_budget_still_fail_beside_a_token_group():
    scene = new_scene()
    fs = _efa_fs(scene)
    max_nodes = cdk.CfnParameter(scene.stack, "MaxNodes", type="Number").value_as_number
    fs.register_efa_clients(Construct(scene.stack, "Elastic"), max_nodes=max_nodes, efa_interfaces_per_node=8)
    fs.register_efa_clients(Construct(scene.stack, "Big"), max_nodes=129, efa_interfaces_per_node=8)
    message = _synth_error(scene)
    assert (
        "got 1032 from: Test/Big (129 nodes x 8 EFA interfaces = 1,032); Test/Elastic (? (a deploy-time value) nodes"
        in message
    )


def test_imported_efa_file_system_has_the_same_budget():
    scene = new_scene()
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=ec2.SecurityGroup.from_security_group_id(scene.stack, "FsGroup", "sg-0123456789abcdef0"),
        deployment_type=LustreDeploymentType.PERSISTENT_2,
        efa_enabled=True,
    )
    with pytest.raises(FmValidationError, match=r"^EFA connections to Test/Imported must be at most 1,024"):
        fs.register_efa_clients(Construct(scene.stack, "Group"), max_nodes=65, efa_interfaces_per_node=16)


def test_budget_spans_stacks():
    """Node groups in another stack count against the same file system."""
    scene = new_scene()
    fs = _efa_fs(scene)
    other = cdk.Stack(scene.app, "Compute")
    fs.register_efa_clients(Construct(other, "A"), max_nodes=100, efa_interfaces_per_node=8)
    with pytest.raises(FmValidationError, match=re.escape("Compute/A (100 nodes x 8 EFA interfaces = 800)")):
        fs.register_efa_clients(Construct(other, "B"), max_nodes=100, efa_interfaces_per_node=8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_nodes": -1, "efa_interfaces_per_node": 8}, r"max_nodes must be at least 0, got -1"),
        ({"max_nodes": 2.5, "efa_interfaces_per_node": 8}, r"max_nodes .* got 2.5"),
        ({"max_nodes": True, "efa_interfaces_per_node": 8}, r"max_nodes .* got True"),
        ({"max_nodes": float("nan"), "efa_interfaces_per_node": 8}, r"max_nodes must be a finite number, got nan"),
        ({"max_nodes": float("inf"), "efa_interfaces_per_node": 8}, r"max_nodes must be a finite number, got inf"),
        ({"max_nodes": "4", "efa_interfaces_per_node": 8}, r"max_nodes must be an integer"),
        ({"max_nodes": 4, "efa_interfaces_per_node": -8}, r"efa_interfaces_per_node must be at least 0, got -8"),
        ({"max_nodes": 4, "efa_interfaces_per_node": "8"}, r"efa_interfaces_per_node .* got '8'"),
        ({"max_nodes": 4, "efa_interfaces_per_node": False}, r"efa_interfaces_per_node .* got False"),
        (
            {"max_nodes": 4, "efa_interfaces_per_node": 8, "efa_security_group": "sg-0123456789abcdef0"},
            r"efa_security_group must be an ec2.ISecurityGroup or EfaSecurityGroup",
        ),
        ({"max_nodes": 4, "efa_interfaces_per_node": 8, "subnets": "subnet-1"}, r"subnets must be a list"),
        (
            {"max_nodes": 4, "efa_interfaces_per_node": 8, "subnets": ["subnet-1"]},
            r"subnets\[0\] must be an ec2.ISubnet",
        ),
    ],
)
def test_rejects_invalid_registrations(kwargs, match):
    scene = new_scene()
    fs = _efa_fs(scene)
    with pytest.raises(FmValidationError, match=match):
        fs.register_efa_clients(Construct(scene.stack, "Group"), **kwargs)


@pytest.mark.parametrize("consumer", ["Group", None, 3])
def test_rejects_a_consumer_that_is_not_a_construct(consumer):
    scene = new_scene()
    fs = _efa_fs(scene)
    with pytest.raises(FmTypeError, match=r"consumer must be a construct"):
        fs.register_efa_clients(consumer, max_nodes=4, efa_interfaces_per_node=8)


def test_token_interfaces_per_node_is_skipped_and_warns():
    scene = new_scene()
    fs = _efa_fs(scene)
    interfaces = cdk.CfnParameter(scene.stack, "Interfaces", type="Number").value_as_number
    fs.register_efa_clients(Construct(scene.stack, "Group"), max_nodes=4, efa_interfaces_per_node=interfaces)
    assert fs.max_efa_connections is None
    scene.app.synth()
