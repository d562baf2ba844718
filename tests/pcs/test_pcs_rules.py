"""The PCS cross-property rules (:mod:`fmconstructs.pcs.rules`), each called with plain values: no stack, no app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fmconstructs._rules import Advice
from fmconstructs.capacity import CapacityKind
from fmconstructs.catalog import get_instance_spec
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.pcs import rules
from fmconstructs.pcs.slurm import AccountingMode, ClusterSetting, NodeGroupSetting, QueueSetting, SlurmVersion

P5 = get_instance_spec("p5.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")
UB = CapacityKind.ULTRASERVER_CAPACITY_BLOCK
V = SlurmVersion
PROLOG = {ClusterSetting.PROLOG: "/opt/mine.sh"}
ENFORCE = {ClusterSetting.ACCOUNTING_STORAGE_ENFORCE: "associations"}
STD, NONE = AccountingMode.STANDARD, AccountingMode.NONE

#: (rule, keyword arguments) that pass
GOOD: list[tuple[Callable[..., Any], dict[str, Any]]] = [
    (rules.a_vpc_without_private_subnets_needs_a_subnet, {"subnet_given": True, "private_subnets": 0}),
    (rules.a_vpc_without_private_subnets_needs_a_subnet, {"subnet_given": False, "private_subnets": 2}),
    (rules.accounting_storage_enforce_needs_standard_accounting, {"settings": ENFORCE, "accounting": STD}),
    (rules.accounting_storage_enforce_needs_standard_accounting, {"settings": {}, "accounting": NONE}),
    (rules.purge_days_need_standard_accounting, {"days": 30, "accounting": STD}),
    (rules.purge_days_need_standard_accounting, {"days": None, "accounting": NONE}),
    (rules.imex_needs_a_slurm_that_runs_it, {"imex_enabled": True, "slurm_version": V.V25_05}),
    (rules.imex_needs_a_slurm_that_runs_it, {"imex_enabled": False, "slurm_version": V.V24_11}),
    (rules.imex_owns_the_prolog, {"imex_enabled": True, "settings": {}}),
    (rules.imex_owns_the_prolog, {"imex_enabled": False, "settings": PROLOG}),
    (rules.prolog_checks_own_the_prolog, {"runs_prolog_checks": True, "settings": {}}),
    (rules.prolog_checks_own_the_prolog, {"runs_prolog_checks": False, "settings": PROLOG}),
    *[
        (
            rules.subnet_is_in_the_reservation_zone,
            {"subnet_zone": s, "capacity_zone": c, "subnet": "subnet-1", "capacity_kind": CapacityKind.CAPACITY_BLOCK},
        )
        for s, c in [("us-east-1a", "us-east-1a"), (None, "us-east-1a"), ("us-east-1a", None), (None, None)]
    ],
    (rules.ultraserver_types_need_an_ultraserver_block, {"spec": GB200, "capacity_kind": UB}),
    (rules.ultraserver_types_need_an_ultraserver_block, {"spec": P5, "capacity_kind": CapacityKind.ON_DEMAND}),
    (rules.ultraserver_groups_need_imex, {"capacity_kind": UB, "slurm_version": V.V25_05, "imex_enabled": True}),
    (
        rules.ultraserver_groups_need_imex,
        {"capacity_kind": CapacityKind.CAPACITY_BLOCK, "slurm_version": V.V24_11, "imex_enabled": False},
    ),
    (rules.real_memory_fits_the_instance, {"settings": {NodeGroupSetting.REAL_MEMORY: "1000"}, "spec": P5}),
    (rules.real_memory_fits_the_instance, {"settings": {}, "spec": P5}),
    (rules.node_group_idle_time_needs_slurm_25_11, {"idle": 600, "slurm_version": V.V25_11}),
    (rules.node_group_idle_time_needs_slurm_25_11, {"idle": None, "slurm_version": V.V24_11}),
    (rules.ultraserver_queue_holds_only_ultraserver_groups, {"on_ultraserver": {"a": True, "b": True}}),
    (rules.ultraserver_queue_holds_only_ultraserver_groups, {"on_ultraserver": {"a": False, "b": False}}),
    (rules.ultraserver_counts_have_power_of_two_ratios, {"counts": {"a": 9, "b": 18}}),
    (rules.ultraserver_counts_have_power_of_two_ratios, {"counts": {"a": 2, "b": 8, "c": 2}}),
    (rules.ultraserver_counts_have_power_of_two_ratios, {"counts": {}}),
]

#: (rule, keyword arguments, the parameter the error names, a piece of its message)
BAD: list[tuple[Callable[..., Any], dict[str, Any], str, str]] = [
    (
        rules.a_vpc_without_private_subnets_needs_a_subnet,
        {"subnet_given": False, "private_subnets": 0},
        "subnet",
        "given when the VPC has no private subnets",
    ),
    (
        rules.accounting_storage_enforce_needs_standard_accounting,
        {"settings": ENFORCE, "accounting": NONE},
        "slurm_settings[AccountingStorageEnforce]",
        "unset unless accounting is STANDARD",
    ),
    (
        rules.purge_days_need_standard_accounting,
        {"days": 30, "accounting": NONE},
        "accounting_purge_time_days",
        "None unless accounting is STANDARD",
    ),
    (
        rules.imex_needs_a_slurm_that_runs_it,
        {"imex_enabled": True, "slurm_version": V.V24_11},
        "slurm_version",
        "25.05 or later when enable_imex is True",
    ),
    (
        rules.imex_owns_the_prolog,
        {"imex_enabled": True, "settings": PROLOG},
        "slurm_settings[Prolog]",
        "unset when enable_imex is True",
    ),
    (
        rules.prolog_checks_own_the_prolog,
        {"runs_prolog_checks": True, "settings": PROLOG},
        "slurm_settings[Prolog]",
        "unset when node_health runs prolog checks",
    ),
    (
        rules.subnet_is_in_the_reservation_zone,
        {
            "subnet_zone": "us-east-1b",
            "capacity_zone": "us-east-1a",
            "subnet": "subnet-1",
            "capacity_kind": CapacityKind.CAPACITY_BLOCK,
        },
        "subnet",
        "a subnet in us-east-1a, the zone of the capacity-block, got 'subnet-1 in us-east-1b'",
    ),
    (
        rules.ultraserver_types_need_an_ultraserver_block,
        {"spec": GB200, "capacity_kind": CapacityKind.CAPACITY_BLOCK},
        "capacity",
        "an UltraServerCapacityBlock for p6e-gb200.36xlarge",
    ),
    (
        rules.ultraserver_groups_need_imex,
        {"capacity_kind": UB, "slurm_version": V.V24_11, "imex_enabled": True},
        "cluster.slurm_version",
        "25.05 or later for UltraServer node groups",
    ),
    (
        rules.ultraserver_groups_need_imex,
        {"capacity_kind": UB, "slurm_version": V.V25_05, "imex_enabled": False},
        "cluster.enable_imex",
        "True for UltraServer node groups",
    ),
    (
        rules.real_memory_fits_the_instance,
        {"settings": {NodeGroupSetting.REAL_MEMORY: str(P5.memory_mib + 1)}, "spec": P5},
        "slurm_settings[RealMemory]",
        f"at most {P5.memory_mib} MiB, the memory of p5.48xlarge",
    ),
    (
        rules.node_group_idle_time_needs_slurm_25_11,
        {"idle": 600, "slurm_version": V.V25_05},
        "scale_down_idle_time",
        "None on Slurm 25.05 (per-node-group idle time needs 25.11 or later)",
    ),
    (
        rules.ultraserver_queue_holds_only_ultraserver_groups,
        {"on_ultraserver": {"S/Gb200": True, "S/P5": False}},
        "node_groups",
        "UltraServer node groups only, or none",
    ),
    (
        rules.ultraserver_counts_have_power_of_two_ratios,
        {"counts": {"S/A": 9, "S/B": 27}},
        "node_groups",
        "S/B has 27, the smallest has 9",
    ),
    (
        rules.ultraserver_counts_have_power_of_two_ratios,
        {"counts": {"S/A": 2, "S/B": 5}},
        "node_groups",
        "S/B has 5, the smallest has 2",
    ),
    (
        rules.ultraserver_queue_is_exclusive,
        {"settings": {QueueSetting.OVER_SUBSCRIBE: "NO"}},
        "slurm_settings[OverSubscribe]",
        "EXCLUSIVE on a queue of UltraServer node groups",
    ),
]


def _name(rule: Callable[..., Any]) -> str:
    return rule.__name__


@pytest.mark.parametrize(("rule", "kwargs"), GOOD, ids=[_name(r) for r, _ in GOOD])
def test_a_rule_passes_good_values(rule, kwargs):
    assert rule(**kwargs) is None


@pytest.mark.parametrize(("rule", "kwargs", "parameter", "text"), BAD, ids=[_name(r) for r, *_ in BAD])
def test_a_rule_refuses_bad_values_naming_the_parameter(rule, kwargs, parameter, text):
    with pytest.raises(FmValidationError) as caught:
        rule(**kwargs)
    assert caught.value.parameter == parameter
    assert str(caught.value).startswith(f"{parameter} must be ") and text in str(caught.value)


@pytest.mark.parametrize(
    ("settings", "version", "warned"),
    [
        ({QueueSetting.EXCLUSIVE_USER: "YES"}, V.V26_05, True),
        ({QueueSetting.EXCLUSIVE_USER: "YES"}, V.V25_11, False),
        ({}, V.V26_05, False),
    ],
)
def test_exclusive_user_is_advice_from_slurm_26_05(settings, version, warned):
    advice = rules.exclusive_user_is_deprecated(settings, version)
    if not warned:
        assert advice is None
        return
    assert isinstance(advice, Advice) and advice.warning is WarningId.PCS_DEPRECATED_SLURM_SETTING
    assert advice.message.startswith("ExclusiveUser is deprecated from Slurm 26.05 (cluster: 26.05)")


@pytest.mark.parametrize(
    ("given", "rendered"),
    [
        ({}, {QueueSetting.OVER_SUBSCRIBE: "EXCLUSIVE"}),
        ({QueueSetting.EXCLUSIVE: "NODE"}, {QueueSetting.EXCLUSIVE: "NODE"}),
        ({QueueSetting.OVER_SUBSCRIBE: "exclusive"}, {QueueSetting.OVER_SUBSCRIBE: "exclusive"}),
    ],
)
def test_an_ultraserver_queue_is_made_exclusive(given, rendered):
    assert rules.ultraserver_queue_is_exclusive(dict(given)) == rendered
