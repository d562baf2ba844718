"""The cross-property rules of the PCS constructs (:class:`PcsCluster`, :class:`PcsGpuNodeGroup`, :class:`PcsQueue`).

Each rule relates two or more options, or an option and a catalog fact, and is a pure function of plain values (the
shape of :mod:`fmconstructs._rules`): a hard rule raises :class:`~fmconstructs.errors.FmValidationError`, a soft rule
returns an :class:`~fmconstructs._rules.Advice` (or None) that the construct attaches with
:func:`~fmconstructs._rules.warn`. Checks of one option alone stay with the constructors (:mod:`._checks`,
:mod:`._node_group_checks`). Rules shared with other backends live in the lower-level package and are called from
there: ``Capacity.validate_for`` (counts against the capacity), ``PcsAmi.check_architecture``,
:func:`~fmconstructs.pcs.purchase_option.purchase_option_for` (Spot against the capacity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Token

from .._rules import Advice
from .._validate import known
from ..capacity import CapacityKind
from ..catalog import InstanceSpec
from ..compute import rules as compute_rules
from ..errors import FmValidationError, WarningId
from .health import IDLE_CHECK_PATH, PROLOG_RUNNER_PATH
from .instance_health import PcsInstanceHealthChecks
from .slurm import (
    EXCLUSIVE_QUEUE_SETTINGS,
    MIN_SLURM_VERSION_FOR_IMEX,
    MIN_SLURM_VERSION_FOR_INSTANCE_HEALTH_CHECKS,
    MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME,
    SLURM_VERSION_DEPRECATING_EXCLUSIVE_USER,
    AccountingMode,
    ClusterSetting,
    NodeGroupSetting,
    QueueSetting,
    SlurmVersion,
)
from .user_data import IMEX_PROLOG_PATH

__all__ = [
    "a_vpc_without_private_subnets_needs_a_subnet",
    "accounting_storage_enforce_needs_standard_accounting",
    "exclusive_user_is_deprecated",
    "idle_checks_own_the_health_check",
    "imex_needs_a_slurm_that_runs_it",
    "imex_owns_the_prolog",
    "node_group_idle_time_needs_slurm_25_11",
    "prolog_checks_own_the_prolog",
    "purge_days_need_standard_accounting",
    "real_memory_fits_the_instance",
    "subnet_is_in_the_reservation_zone",
    "ultraserver_counts_have_power_of_two_ratios",
    "ultraserver_groups_need_imex",
    "ultraserver_queue_holds_only_ultraserver_groups",
    "ultraserver_queue_is_exclusive",
    "ultraserver_types_need_an_ultraserver_block",
]


# --- cluster ----------------------------------------------------------------------------------------------------------
def a_vpc_without_private_subnets_needs_a_subnet(*, subnet_given: bool, private_subnets: int) -> None:
    """The cluster's subnet defaults to the VPC's first private subnet: give one when there is none."""
    if not subnet_given and not private_subnets:
        raise FmValidationError("subnet", None, "given when the VPC has no private subnets")


def accounting_storage_enforce_needs_standard_accounting(
    settings: Mapping[str, str], accounting: AccountingMode
) -> None:
    """``AccountingStorageEnforce`` only with Slurm accounting on (``accounting=STANDARD``)."""
    if ClusterSetting.ACCOUNTING_STORAGE_ENFORCE in settings and accounting is not AccountingMode.STANDARD:
        raise FmValidationError(
            "slurm_settings[AccountingStorageEnforce]",
            settings[ClusterSetting.ACCOUNTING_STORAGE_ENFORCE],
            "unset unless accounting is STANDARD",
        )


def purge_days_need_standard_accounting(days: object, accounting: AccountingMode) -> None:
    """``accounting_purge_time_days`` only with ``accounting=STANDARD`` (``days`` already checked, or None)."""
    if days is not None and accounting is not AccountingMode.STANDARD:
        raise FmValidationError("accounting_purge_time_days", days, "None unless accounting is STANDARD")


def imex_needs_a_slurm_that_runs_it(*, imex_enabled: bool, slurm_version: SlurmVersion) -> None:
    """``enable_imex`` needs Slurm :data:`~fmconstructs.pcs.slurm.MIN_SLURM_VERSION_FOR_IMEX` or later."""
    if imex_enabled and not slurm_version.at_least(MIN_SLURM_VERSION_FOR_IMEX):
        raise FmValidationError(
            "slurm_version",
            slurm_version.value,
            f"{MIN_SLURM_VERSION_FOR_IMEX.value} or later when enable_imex is True (PCS IMEX requirement)",
        )


def imex_owns_the_prolog(*, imex_enabled: bool, settings: Mapping[str, str]) -> None:
    """With ``enable_imex`` the cluster's ``Prolog`` is the IMEX prolog: ``slurm_settings[Prolog]`` stays unset."""
    if imex_enabled and ClusterSetting.PROLOG in settings:
        raise FmValidationError(
            "slurm_settings[Prolog]",
            settings[ClusterSetting.PROLOG],
            f"unset when enable_imex is True (the cluster's Prolog is the IMEX prolog {IMEX_PROLOG_PATH}; "
            "run your own steps from a node group's user data instead)",
        )


def prolog_checks_own_the_prolog(*, runs_prolog_checks: bool, settings: Mapping[str, str]) -> None:
    """With node-health prolog checks the cluster's ``Prolog`` is their runner: ``slurm_settings[Prolog]`` unset."""
    if runs_prolog_checks and ClusterSetting.PROLOG in settings:
        raise FmValidationError(
            "slurm_settings[Prolog]",
            settings[ClusterSetting.PROLOG],
            f"unset when node_health runs prolog checks (the cluster's Prolog is {PROLOG_RUNNER_PATH})",
        )


#: The settings the between-jobs check sets (:func:`fmconstructs.pcs.health.idle_check_settings`).
_IDLE_CHECK_SETTINGS = (
    ClusterSetting.HEALTH_CHECK_PROGRAM,
    ClusterSetting.HEALTH_CHECK_INTERVAL,
    ClusterSetting.HEALTH_CHECK_NODE_STATE,
)


def idle_checks_own_the_health_check(*, runs_idle_checks: bool, settings: Mapping[str, str]) -> None:
    """With node-health idle checks the cluster's ``HealthCheck*`` settings are theirs: unset in ``slurm_settings``
    (the interval and node states are ``NodeHealthOptions`` options)."""
    given = [name for name in _IDLE_CHECK_SETTINGS if name in settings]
    if runs_idle_checks and given:
        raise FmValidationError(
            f"slurm_settings[{given[0].value}]",
            settings[given[0]],
            f"unset when node_health runs idle checks (the cluster's HealthCheckProgram is {IDLE_CHECK_PATH}; set "
            "NodeHealthOptions(idle_check_interval_seconds=..., idle_check_node_states=...), or "
            "idle_check_interval_seconds=None to set these yourself)",
        )


# --- GPU node groups -----------------------------------------------------------------------------------------------
def subnet_is_in_the_reservation_zone(
    *, subnet_zone: str | None, capacity_zone: str | None, subnet: str, capacity_kind: CapacityKind
) -> None:
    """The group's subnet is in the reservation's zone, when both zones are known at synthesis (``subnet`` names the
    subnet in the message: its id, or its construct path when the id is a deploy-time value); the shared
    :func:`fmconstructs.compute.rules.subnet_is_in_the_capacity_zone`."""
    compute_rules.subnet_is_in_the_capacity_zone(
        subnet=f"{subnet} in {subnet_zone}",
        subnet_zone=subnet_zone,
        capacity_zone=capacity_zone,
        capacity_kind=capacity_kind,
    )


def ultraserver_types_need_an_ultraserver_block(spec: InstanceSpec, capacity_kind: CapacityKind) -> None:
    """UltraServer instance types (p6e-gb200) are sold only as UltraServer Capacity Blocks (the shared
    :func:`fmconstructs.compute.rules.ultraserver_types_need_an_ultraserver_block`, naming the UltraServer types)."""
    compute_rules.ultraserver_types_need_an_ultraserver_block(
        spec=spec, capacity_kind=capacity_kind, list_the_types=True
    )


def ultraserver_groups_need_imex(
    *, capacity_kind: CapacityKind, slurm_version: SlurmVersion, imex_enabled: bool
) -> None:
    """A group on an UltraServer Capacity Block needs a cluster that runs NVIDIA IMEX (a recent Slurm, and
    ``enable_imex``): PCS runs IMEX from a Slurm prolog."""
    if capacity_kind is not CapacityKind.ULTRASERVER_CAPACITY_BLOCK:
        return
    if not slurm_version.at_least(MIN_SLURM_VERSION_FOR_IMEX):
        raise FmValidationError(
            "cluster.slurm_version",
            slurm_version.value,
            f"{MIN_SLURM_VERSION_FOR_IMEX.value} or later for UltraServer node groups (NVIDIA IMEX on PCS)",
        )
    if not imex_enabled:
        raise FmValidationError(
            "cluster.enable_imex", False, "True for UltraServer node groups (PCS runs IMEX from a Slurm prolog)"
        )


def real_memory_fits_the_instance(settings: Mapping[str, str], spec: InstanceSpec) -> None:
    """``slurm_settings[RealMemory]`` is at most the instance's memory (when known at synthesis)."""
    real_memory = settings.get(NodeGroupSetting.REAL_MEMORY)
    if real_memory is not None and known(real_memory) and int(real_memory) > spec.memory_mib:
        raise FmValidationError(
            "slurm_settings[RealMemory]",
            real_memory,
            f"at most {spec.memory_mib} MiB, the memory of {spec.instance_type}",
        )


def node_group_idle_time_needs_slurm_25_11(idle: int | float | None, slurm_version: SlurmVersion) -> None:
    """A per-group ``scale_down_idle_time`` needs Slurm
    :data:`~fmconstructs.pcs.slurm.MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME` or later."""
    if idle is not None and not slurm_version.at_least(MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME):
        raise FmValidationError(
            "scale_down_idle_time",
            idle,
            f"None on Slurm {slurm_version.value} (per-node-group idle time needs "
            f"{MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME.value} or later)",
        )


def instance_health_checks_need_slurm_26_05(
    checks: PcsInstanceHealthChecks | None, slurm_version: SlurmVersion
) -> None:
    """``instance_health_checks`` need Slurm
    :data:`~fmconstructs.pcs.slurm.MIN_SLURM_VERSION_FOR_INSTANCE_HEALTH_CHECKS` or later."""
    if checks is not None and not slurm_version.at_least(MIN_SLURM_VERSION_FOR_INSTANCE_HEALTH_CHECKS):
        raise FmValidationError(
            "instance_health_checks",
            checks,
            f"None on Slurm {slurm_version.value} (PCS instance health checks need "
            f"{MIN_SLURM_VERSION_FOR_INSTANCE_HEALTH_CHECKS.value} or later)",
        )


def deep_health_checks_need_nvidia_gpus(checks: PcsInstanceHealthChecks | None, spec: InstanceSpec) -> None:
    """A deep health check profile other than NONE "requires instance types with NVIDIA GPUs" (botocore PCS
    ``DeepHealthCheckOnStart.profile``)."""
    if checks is not None and checks.deep_check_on and spec.gpu.manufacturer != "NVIDIA":
        raise FmValidationError(
            "instance_health_checks.deep_health_check_on_start",
            checks.deep_health_check_on_start,
            f"None on {spec.instance_type} ({spec.gpu.manufacturer} GPUs; PCS's deep health check needs NVIDIA)",
        )


# --- queues ----------------------------------------------------------------------------------------------------------
def exclusive_user_is_deprecated(settings: Mapping[str, str], slurm_version: SlurmVersion) -> Advice | None:
    """``ExclusiveUser`` is deprecated from Slurm 26.05: advise ``Exclusive=USER``."""
    if QueueSetting.EXCLUSIVE_USER not in settings or not slurm_version.at_least(
        SLURM_VERSION_DEPRECATING_EXCLUSIVE_USER
    ):
        return None
    return Advice(
        WarningId.PCS_DEPRECATED_SLURM_SETTING,
        f"ExclusiveUser is deprecated from Slurm {SLURM_VERSION_DEPRECATING_EXCLUSIVE_USER.value} (cluster: "
        f"{slurm_version.value}); PCS still accepts it but recommends Exclusive=USER (PCS User Guide "
        "slurm-custom-settings-queue)",
    )


def ultraserver_queue_holds_only_ultraserver_groups(on_ultraserver: Mapping[str, bool]) -> None:
    """A queue with an UltraServer node group holds no other kind (PCS User Guide capacity-blocks-nvidia-imex,
    "Limitations": dedicated queues). ``on_ultraserver`` maps each group's path to whether it is on one."""
    if not any(on_ultraserver.values()):
        return
    others: Sequence[str] = [path for path, ultra in on_ultraserver.items() if not ultra]
    if others:
        raise FmValidationError(
            "node_groups",
            others,
            "UltraServer node groups only, or none (PCS puts UltraServer node groups in dedicated queues)",
        )


def ultraserver_counts_have_power_of_two_ratios(counts: Mapping[str, int]) -> None:
    """The instance counts of one queue's UltraServer node groups have power-of-2 ratios (9 and 18, 2 and 8; PCS User
    Guide capacity-blocks-nvidia-imex, "Limitations"). ``counts`` maps each group's path to its known count."""
    smallest = min(counts.values(), default=0)
    for path, count in counts.items():
        ratio, remainder = divmod(count, smallest)
        if remainder or ratio & (ratio - 1):
            raise FmValidationError(
                "node_groups",
                dict(counts),
                "UltraServer node groups whose instance counts have power-of-2 ratios (such as 9 and 18, or 2 "
                f"and 8; {path} has {count}, the smallest has {smallest})",
            )


def ultraserver_queue_is_exclusive(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` of an UltraServer queue, made exclusive: given exclusive values are kept, others rejected (the IMEX
    prolog restarts nvidia-imex on the job's nodes); none given adds ``OverSubscribe=EXCLUSIVE``."""
    exclusive = False
    for name, allowed in EXCLUSIVE_QUEUE_SETTINGS.items():
        value = settings.get(name)
        if value is None or Token.is_unresolved(value):
            continue
        if value.upper() not in allowed:
            raise FmValidationError(
                f"slurm_settings[{name.value}]",
                value,
                f"{' or '.join(allowed)} on a queue of UltraServer node groups (its jobs must be exclusive: the IMEX "
                "prolog restarts nvidia-imex on their nodes, PCS User Guide capacity-blocks-nvidia-imex)",
            )
        exclusive = True
    if not exclusive:
        settings = {**settings, QueueSetting.OVER_SUBSCRIBE: "EXCLUSIVE"}
    return settings
