"""The storage-side planner for Lustre on a group of nodes (fmconstructs.storage.lustre_clients.plan_lustre_client):
plain values in, a frozen plan out; no construct, no stack, no synthesis."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fmconstructs import get_instance_spec
from fmconstructs._rules import Advice
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.storage.client import MOUNT_NAME_MAX_BYTES, lustre_lnet_commands, lustre_mount_commands
from fmconstructs.storage.lustre_clients import LustreClientPlan, LustreClientSteps, plan_lustre_client

DNS = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"
MOUNT_NAME = "abcdefgh"
P5 = get_instance_spec("p5.48xlarge")  # 32 EFA interfaces, FSx UG default 8 for LNet
ADVICE = Advice(WarningId.HYPERPOD_LUSTRE_OVER_TCP, "group g mounts over TCP")


def plan(**overrides: Any) -> LustreClientPlan:
    given: dict[str, Any] = {
        "efa_enabled": True,
        "dns_name": DNS,
        "mount_name": MOUNT_NAME,
        "instance_spec": P5,
        "max_nodes": 16,
        "node_efa_interfaces": 32,
    }
    given.update(overrides)
    return plan_lustre_client(**given)


def script_args(result: LustreClientPlan) -> str:
    """The arguments the last command passes to the mount script."""
    return result.commands[-1].split("fmconstructs-lustre-mount", 1)[1]


@pytest.mark.parametrize(
    ("overrides", "count", "efa_arg", "gds"),
    [
        ({}, 8, " 8 1 p5", True),  # the FSx UG default for p5
        ({"node_efa_interfaces": 4}, 4, " 4 1 p5", True),  # capped by the node's interfaces
        ({"efa_interfaces": 2}, 2, " 2 1 p5", True),  # an explicit count
        ({"efa_interfaces": 0}, 0, " 0 0 p5", False),  # TCP on request
        ({"node_efa_interfaces": 0}, 0, " 0 0 p5", False),  # nodes without EFA (login nodes)
        ({"efa_enabled": False}, 0, " off 0 p5", False),  # a file system without EFA
        ({"instance_spec": None, "node_efa_interfaces": None}, None, " auto 0 -", False),  # decided on the node
    ],
)
def test_mount_plan_count_commands_and_registration(
    overrides: dict[str, Any], count: int | None, efa_arg: str, gds: bool
) -> None:
    result = plan(**overrides)
    assert result.efa_interfaces == count
    assert script_args(result).endswith(efa_arg)
    assert result.bound_mount_name is True
    assert result.max_nodes == 16
    assert result.registers_efa_clients is bool(count)
    assert result.advice == ()


def test_mount_plan_is_what_the_backends_ran_before() -> None:
    """PCS and EKS ran lustre_mount_commands with GPUDirect Storage only where EFA carries Lustre."""
    result = plan(mount_point="/fsx/data", node_efa_interfaces=16)
    assert list(result.commands) == lustre_mount_commands(
        dns_name=DNS,
        mount_name=MOUNT_NAME,
        mount_point="/fsx/data",
        efa_enabled=True,
        gpudirect_storage=None,
        instance_spec=P5,
        node_efa_interfaces=16,
    )
    assert "'/fsx/data'" in script_args(result)


@pytest.mark.parametrize(
    ("overrides", "count"),
    [({}, 8), ({"efa_interfaces": 1}, 1), ({"instance_spec": get_instance_spec("p6-b300.48xlarge")}, 16)],
)
def test_lnet_only_plan_configures_lnet_and_registers(overrides: dict[str, Any], count: int) -> None:
    result = plan(
        steps=LustreClientSteps.LNET_ONLY, node_efa_interfaces=None, dns_name=None, mount_name=None, **overrides
    )
    assert result.efa_interfaces == count
    spec = overrides.get("instance_spec", P5)
    assert list(result.commands) == lustre_lnet_commands(
        instance_spec=spec, efa_interfaces_for_lustre=overrides.get("efa_interfaces")
    )
    assert "--lnet-only" in result.commands[-1]
    assert result.bound_mount_name is False
    assert result.registers_efa_clients
    assert result.advice == ()


@pytest.mark.parametrize(
    "overrides",
    [{"efa_interfaces": 0}, {"efa_enabled": False}, {"node_efa_interfaces": 0}],
)
def test_lnet_only_plan_over_tcp_runs_nothing(overrides: dict[str, Any]) -> None:
    result = plan(steps=LustreClientSteps.LNET_ONLY, unknown_layout=ADVICE, **overrides)
    assert result == LustreClientPlan(0, (), bound_mount_name=False, max_nodes=16)
    assert not result.registers_efa_clients


@pytest.mark.parametrize("advice", [ADVICE, None])
def test_lnet_only_plan_with_an_unknown_layout_stays_on_tcp_and_advises(advice: Advice | None) -> None:
    result = plan(
        steps=LustreClientSteps.LNET_ONLY, instance_spec=None, node_efa_interfaces=None, unknown_layout=advice
    )
    assert result.efa_interfaces == 0
    assert result.commands == ()
    assert not result.registers_efa_clients
    assert result.advice == (() if advice is None else (advice,))


def test_a_deploy_time_node_count_is_planned_as_given() -> None:
    result = plan(max_nodes=float("inf"))
    assert result.max_nodes == float("inf")
    assert result.registers_efa_clients


def test_the_plan_is_frozen() -> None:
    result = plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.efa_interfaces = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"efa_interfaces": 33}, "efa_interfaces_for_lustre"),  # above p5's 32 EFA interfaces
        ({"efa_interfaces": 5, "node_efa_interfaces": 4}, "efa_interfaces_for_lustre"),  # above the node's
        ({"efa_interfaces": -1}, "efa_interfaces_for_lustre"),
        ({"efa_interfaces": "${Token[TOKEN.1]}"}, "efa_interfaces_for_lustre"),
        ({"node_efa_interfaces": -2}, "node_efa_interfaces"),
        ({"dns_name": None}, "dns_name"),
        ({"mount_name": None}, "mount_name"),
        ({"dns_name": "fs-1.example.com"}, "dns_name"),
        ({"mount_name": "a" * (MOUNT_NAME_MAX_BYTES + 1) + "!"}, "mount_name"),
        ({"mount_point": "relative/path"}, "mount_point"),
        ({"steps": LustreClientSteps.LNET_ONLY, "efa_interfaces": 33}, "efa_interfaces_for_lustre"),
    ],
)
def test_bad_input_is_refused(overrides: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError) as error:
        plan(**overrides)
    assert str(error.value).startswith(parameter)


def test_an_instance_spec_must_be_a_spec() -> None:
    with pytest.raises(Exception, match="instance_spec"):
        plan(instance_spec="p5.48xlarge")
