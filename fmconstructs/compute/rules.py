"""The cross-property rules of :class:`~fmconstructs.compute.GpuLaunchTemplate` and
:class:`~fmconstructs.compute.GpuAutoScalingGroup`, and the rules the backends on them share (PCS, EKS), as pure
functions (the shape of :mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the construct attaches with :func:`~fmconstructs._rules.warn`.

A rule two packages need lives here once: :mod:`fmconstructs.pcs.rules` and :mod:`fmconstructs.eks.rules` call
:func:`subnet_is_in_the_capacity_zone`, :func:`ultraserver_types_need_an_ultraserver_block`,
:func:`on_block_events_needs_a_capacity_block` and :func:`on_block_events_starts_empty` with their own parameter
names. Checks of one option on its own stay with the constructors (:mod:`._launch_template_inputs`); the counts
against the capacity are :meth:`Capacity.validate_for <fmconstructs.capacity.Capacity.validate_for>`, the interface
counts against the catalog :func:`~fmconstructs.networking.interfaces.plan_network_interfaces`. Values that are
deploy-time tokens are never compared.
"""

from __future__ import annotations

from typing import Any

from .._rules import Advice
from .._validate import known
from ..capacity import Capacity, CapacityBlockScaling, CapacityKind
from ..capacity import subnet_is_in_the_capacity_zone as subnet_is_in_the_capacity_zone
from ..catalog import InstanceSpec
from ..errors import FmValidationError, WarningId, is_token
from ..networking import InterfacePolicy
from ..networking.rules import subnet_is_for_the_policy as subnet_is_for_the_policy

__all__ = [
    "an_auto_scaling_group_needs_the_template_subnet",
    "an_auto_scaling_group_takes_a_self_managed_template",
    "desired_nodes_are_between_min_and_max",
    "on_block_events_needs_a_capacity_block",
    "on_block_events_starts_empty",
    "placement_group_is_not_for_a_capacity_block",
    "subnet_is_for_the_policy",
    "subnet_is_in_the_capacity_zone",
    "the_instance_store_is_there_to_mount",
    "ultraserver_types_need_an_ultraserver_block",
]

#: What ``ON_BLOCK_EVENTS`` asks of the sizes of an Auto Scaling group (:func:`on_block_events_starts_empty`).
STARTS_EMPTY = (
    "0 with CapacityBlockScaling.ON_BLOCK_EVENTS (the group starts empty and is scaled when the block starts)"
)


# --- shared by the backends -----------------------------------------------------------------------------------------
def ultraserver_types_need_an_ultraserver_block(
    *, spec: InstanceSpec, capacity_kind: CapacityKind, parameter: str = "capacity", list_the_types: bool = False
) -> None:
    """A type sold only as UltraServers (the catalog's ``ultraserver_types``: p6e-gb200) needs an UltraServer Capacity
    Block. ``list_the_types`` names the UltraServer types in the message (PCS's wording)."""
    if not spec.ultraserver_types or capacity_kind is CapacityKind.ULTRASERVER_CAPACITY_BLOCK:
        return
    if list_the_types:
        allowed = (
            f"an UltraServerCapacityBlock for {spec.instance_type} (sold only as UltraServer Capacity Blocks: "
            f"{', '.join(spec.ultraserver_types)})"
        )
    else:
        allowed = f"an UltraServerCapacityBlock: {spec.instance_type} is sold only as UltraServer Capacity Blocks"
    raise FmValidationError(parameter, capacity_kind.value, allowed)


def on_block_events_needs_a_capacity_block(*, scaling: CapacityBlockScaling, capacity: Capacity) -> None:
    """``ON_BLOCK_EVENTS`` scales on Capacity Block events: refused on other capacity."""
    if scaling is CapacityBlockScaling.ON_BLOCK_EVENTS and not capacity.is_capacity_block:
        raise FmValidationError(
            "capacity_block_scaling",
            scaling.name,
            f"CapacityBlockScaling.AT_DEPLOY on {capacity.kind.value} capacity (ON_BLOCK_EVENTS scales on "
            "Capacity Block events)",
        )


def on_block_events_starts_empty(
    *, scaling: CapacityBlockScaling, min_nodes: Any, desired_nodes: Any, allowed: str = STARTS_EMPTY
) -> None:
    """With ``ON_BLOCK_EVENTS`` the group is created empty: ``min_nodes`` and ``desired_nodes`` 0 (not tokens).
    ``allowed`` is the caller's wording of that."""
    if scaling is not CapacityBlockScaling.ON_BLOCK_EVENTS:
        return
    for parameter, value in (("min_nodes", min_nodes), ("desired_nodes", desired_nodes)):
        if is_token(value) or value != 0:
            raise FmValidationError(parameter, value, allowed)


# --- launch template ------------------------------------------------------------------------------------------------
def placement_group_is_not_for_a_capacity_block(*, has_placement_group: bool, is_capacity_block: bool) -> Advice | None:
    """Advice against a placement group on a Capacity Block (block instances are already placed together)."""
    if not (has_placement_group and is_capacity_block):
        return None
    return Advice(
        WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK,
        "A placement group on a Capacity Block risks insufficient-capacity errors: block instances are "
        "already placed together in an EC2 UltraCluster. Remove placement_group unless you need it.",
    )


def the_instance_store_is_there_to_mount(*, spec: InstanceSpec, mount_point: str | None) -> Advice | None:
    """Advice when an instance-store mount point is asked of a type without an NVMe instance store (the catalog's
    ``instance_store``): nothing is mounted."""
    if mount_point is None or spec.instance_store is not None:
        return None
    return Advice(
        WarningId.NO_INSTANCE_STORE,
        f"{spec.instance_type} has no NVMe instance store; nothing is mounted at {mount_point}",
    )


# --- Auto Scaling group ---------------------------------------------------------------------------------------------
def an_auto_scaling_group_takes_a_self_managed_template(policy: InterfacePolicy) -> None:
    """The group's launch template is built for self-managed fleets (``InterfacePolicy.SELF_MANAGED``)."""
    if policy is not InterfacePolicy.SELF_MANAGED:
        raise FmValidationError("launch_template.policy", policy.value, "'self-managed' for an Auto Scaling group")


def an_auto_scaling_group_needs_the_template_subnet(*, subnet_given: bool) -> None:
    """The group runs in its launch template's one subnet: the template has one."""
    if not subnet_given:
        raise FmValidationError("launch_template.subnet", None, "the one subnet of the fleet")


def desired_nodes_are_between_min_and_max(*, min_nodes: Any, max_nodes: Any, desired_nodes: Any) -> None:
    """``min_nodes <= desired_nodes <= max_nodes`` when all three are known at synthesis."""
    minimum, maximum, desired = min_nodes, max_nodes, desired_nodes
    if known(desired) and known(minimum) and known(maximum) and not minimum <= desired <= maximum:
        raise FmValidationError("desired_nodes", desired, f"between min_nodes ({minimum}) and max_nodes ({maximum})")
