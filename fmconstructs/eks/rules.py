"""The cross-property rules of :class:`~fmconstructs.eks.node_group.GpuNodeGroup` and of the GPU node pools
(:mod:`fmconstructs.eks.karpenter_manifests`, used by Karpenter and EKS Auto Mode), as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the construct attaches with :func:`~fmconstructs._rules.warn`.

Checks of one option on its own (types, ranges, names) stay in :mod:`fmconstructs.eks._node_group_props`. Values
that are deploy-time tokens are never compared: a rule checks only what is known at synthesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._rules import Advice
from .._validate import known
from ..capacity import Capacity, CapacityBlockScaling, CapacityKind
from ..catalog import InstanceSpec
from ..compute import rules as compute_rules
from ..compute.rules import on_block_events_needs_a_capacity_block as on_block_events_needs_a_capacity_block
from ..errors import FmValidationError, WarningId
from .karpenter_manifests import KarpenterCapacityType, ReservationType

__all__ = [
    "a_node_pool_has_a_limit",
    "capacity_block_sizes_are_zero_or_max",
    "efa_groups_take_one_subnet",
    "max_nodes_fit_the_reservation",
    "on_block_events_needs_a_capacity_block",
    "on_block_events_starts_empty",
    "placement_group_holds_the_reservation",
    "reservation_type_needs_reserved_only",
    "reserved_capacity_needs_reservations",
    "sizes_are_ordered",
    "subnets_are_in_the_capacity_zone",
    "ultraserver_types_need_a_recent_kubernetes",
    "ultraserver_types_need_an_ultraserver_block",
]


def sizes_are_ordered(*, min_nodes: Any, max_nodes: Any, desired_nodes: Any) -> None:
    """``min_nodes <= desired_nodes <= max_nodes`` (number tokens are checked by EKS at deploy time)."""
    minimum, maximum, desired = min_nodes, max_nodes, desired_nodes
    if known(minimum) and known(maximum) and minimum > maximum:
        raise FmValidationError("min_nodes", minimum, f"between 0 and max_nodes ({maximum})")
    if known(desired) and known(minimum) and desired < minimum:
        raise FmValidationError("desired_nodes", desired, f"between min_nodes ({minimum}) and max_nodes ({maximum})")
    if known(desired) and known(maximum) and desired > maximum:
        raise FmValidationError("desired_nodes", desired, f"between min_nodes ({minimum}) and max_nodes ({maximum})")


def max_nodes_fit_the_reservation(*, max_nodes: Any, reservation_instances: Any) -> None:
    """At most the reservation's instances (``Capacity.max_instances``; None or a token: not checked)."""
    limit = reservation_instances
    if known(limit) and known(max_nodes) and max_nodes > limit:
        raise FmValidationError("max_nodes", max_nodes, f"at most the reservation's {limit} instances")


def capacity_block_sizes_are_zero_or_max(
    *, is_capacity_block: bool, min_nodes: Any, max_nodes: Any, desired_nodes: Any
) -> None:
    """On a Capacity Block, ``min_nodes`` and ``desired_nodes`` are 0 or ``max_nodes``: EKS "capacity-blocks-mng", a
    fixed fleet, size 0 while the block is not active (and during upgrades)."""
    if not (is_capacity_block and known(max_nodes)):
        return
    if known(min_nodes) and min_nodes not in (0, max_nodes):
        raise FmValidationError(
            "min_nodes", min_nodes, f"0 or max_nodes ({max_nodes}) on a Capacity Block (a fixed-size fleet)"
        )
    if known(desired_nodes) and desired_nodes not in (0, max_nodes):
        raise FmValidationError(
            "desired_nodes",
            desired_nodes,
            f"0 (before the block starts) or max_nodes ({max_nodes}) on a Capacity Block",
        )


def on_block_events_starts_empty(*, scaling: CapacityBlockScaling, min_nodes: Any, desired_nodes: Any) -> None:
    """With ``ON_BLOCK_EVENTS`` the group is created empty: ``min_nodes`` and ``desired_nodes`` 0 (not tokens); the
    shared :func:`fmconstructs.compute.rules.on_block_events_starts_empty` in the node group's words."""
    compute_rules.on_block_events_starts_empty(
        scaling=scaling,
        min_nodes=min_nodes,
        desired_nodes=desired_nodes,
        allowed="0 (or omitted) with CapacityBlockScaling.ON_BLOCK_EVENTS (the group is created empty and "
        "scaled when the block starts)",
    )


def ultraserver_types_need_an_ultraserver_block(*, spec: InstanceSpec, capacity: Capacity) -> None:
    """A type sold only as UltraServers (the catalog's ``ultraserver_types``) needs an UltraServer Capacity Block (the
    shared :func:`fmconstructs.compute.rules.ultraserver_types_need_an_ultraserver_block`)."""
    compute_rules.ultraserver_types_need_an_ultraserver_block(spec=spec, capacity_kind=capacity.kind)


def ultraserver_types_need_a_recent_kubernetes(
    *, spec: InstanceSpec, version: str, version_parts: tuple[int, ...], minimum: tuple[int, ...]
) -> None:
    """UltraServer types need Kubernetes ``minimum`` or later (Dynamic Resource Allocation for IMEX ComputeDomains;
    :data:`~fmconstructs.eks.versions.MIN_ULTRASERVER_VERSION`). ``version`` is the cluster's version text,
    ``version_parts`` its numbers."""
    if spec.ultraserver_types and version_parts < minimum:
        needed = ".".join(map(str, minimum))
        raise FmValidationError(
            "cluster.version",
            version,
            f"{needed} or later for {spec.instance_type} (Dynamic Resource Allocation for IMEX ComputeDomains)",
        )


def efa_groups_take_one_subnet(*, efa_interface_count: int, subnet_count: int) -> None:
    """At least one subnet; exactly one with EFA (EFA traffic cannot cross availability zones)."""
    if subnet_count == 0:
        raise FmValidationError("subnets", [], "at least one subnet")
    if efa_interface_count > 0 and subnet_count != 1:
        raise FmValidationError(
            "subnets",
            f"{subnet_count} subnets",
            "exactly one subnet for an EFA node group (EFA traffic cannot cross availability zones)",
        )


def subnets_are_in_the_capacity_zone(
    *, capacity_zone: str | None, capacity_kind: CapacityKind, subnets: Sequence[tuple[str | None, str]]
) -> None:
    """Each subnet (its zone, or None when unknown, and its description for the message) in the zone the capacity
    pins the group to, when both zones are known at synthesis (the shared
    :func:`fmconstructs.compute.rules.subnet_is_in_the_capacity_zone`)."""
    for index, (zone, description) in enumerate(subnets):
        compute_rules.subnet_is_in_the_capacity_zone(
            subnet=description,
            subnet_zone=zone,
            capacity_zone=capacity_zone,
            capacity_kind=capacity_kind,
            parameter=f"subnets[{index}]",
        )


def placement_group_holds_the_reservation(
    *, capacity_kind: CapacityKind, reservation_group_arn: str | None, placement_group_arn: str, created: bool
) -> Advice | None:
    """Advice when nodes on an On-Demand Capacity Reservation go into a placement group the reservation is not known
    to be in.

    EC2 User Guide "cr-cpg" (Capacity Reservations in cluster placement groups): a reservation reserves capacity in a
    cluster placement group only when it is created in that group (an existing reservation cannot be moved into one),
    and "limitations-placement-groups" recommends reserving capacity explicitly in the cluster placement group you
    launch into. A group created for the node group (``created``) cannot hold an existing reservation, and a given
    group is only known to hold it when the capacity names the group (``reservation_group_arn``). Capacity Blocks
    have their own warning (the launch template's ``placement-group-with-capacity-block``).
    """
    if capacity_kind is not CapacityKind.CAPACITY_RESERVATION:
        return None
    if not created and reservation_group_arn is not None and reservation_group_arn == placement_group_arn:
        return None
    which = "a new placement group (use_placement_group=True)" if created else "the given placement_group"
    return Advice(
        WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION,
        f"Nodes on an On-Demand Capacity Reservation are launched into {which}, and the reservation is not known "
        "to be in it: EC2 reserves capacity in a cluster placement group only for reservations created in that "
        'group (EC2 User Guide "Capacity Reservations in cluster placement groups"), so launches may fall outside '
        "the reservation or fail for insufficient capacity. Leave use_placement_group False and placement_group "
        "unset, or create the reservation in that placement group; acknowledge this warning when it is.",
    )


# --- GPU node pools (Karpenter and EKS Auto Mode NodePools) ---------------------------------------------------------


def reserved_capacity_needs_reservations(
    *, capacity_types: Sequence[KarpenterCapacityType], has_reservations: bool
) -> None:
    """``RESERVED`` only with reservations selected in the node class: Karpenter does not match open ODCRs, every
    reservation to use is selected in the EC2NodeClass (Karpenter docs tasks/odcrs.md)."""
    if KarpenterCapacityType.RESERVED in capacity_types and not has_reservations:
        raise FmValidationError(
            "capacity_types",
            [t.value for t in capacity_types],
            "no 'reserved' without capacity_reservations (Karpenter does not match open ODCRs: every reservation "
            "to use is selected in the EC2NodeClass, tasks/odcrs.md)",
        )


def reservation_type_needs_reserved_only(
    *, reservation_type: ReservationType, capacity_types: Sequence[KarpenterCapacityType]
) -> None:
    """A reservation type selects on a label that exists on reserved nodes only: ``capacity_types`` is
    ``[RESERVED]``."""
    if list(capacity_types) != [KarpenterCapacityType.RESERVED]:
        raise FmValidationError(
            "reservation_type",
            reservation_type.value,
            "None unless capacity_types is [RESERVED] (the label exists on reserved nodes only)",
        )


def a_node_pool_has_a_limit(*, max_gpus: int | None, max_nodes: int | None) -> None:
    """A GPU limit and/or a node limit: a NodePool without limits grows to the account's quota."""
    if max_gpus is None and max_nodes is None:
        raise FmValidationError(
            "max_gpus", None, "a GPU limit and/or max_nodes (a NodePool without limits grows to the account's quota)"
        )
