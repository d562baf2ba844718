"""What Karpenter's and EKS Auto Mode's GPU node pools share: the node role and its access entry, and where a pool's
nodes go (subnets, security groups, capacity types).

The two products differ only in data, passed by the callers (:mod:`fmconstructs.eks.karpenter`,
:mod:`fmconstructs.eks.auto_mode`): the node role's description and managed policies, the access entry's type and
access policy. (Reservation terms: :meth:`~fmconstructs.eks.karpenter_manifests.CapacityReservationTerm.to_manifest`
with the product's owner key.) Sources are cited at those callers.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Required, TypedDict, cast

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .._validate import check_sequence, check_subnet
from ..catalog import InstanceSpec
from ..errors import FmTypeError, FmValidationError
from ._node_group_props import refuse_unknown_options
from .karpenter_manifests import (
    CapacityReservationTerm,
    KarpenterCapacityType,
    NodePoolDisruption,
    NodePoolOptions,
    ReservationType,
)

if TYPE_CHECKING:
    from .cluster import GpuEksCluster


class GpuNodePoolOptions(TypedDict, total=False):
    """The options of a GPU node pool, Karpenter's (:meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool`,
    which adds :class:`~fmconstructs.eks.karpenter.KarpenterGpuNodePoolOptions`) and EKS Auto Mode's
    (:meth:`~fmconstructs.eks.auto_mode.AutoModeGpuNodePools.add_gpu_node_pool`, which adds
    :class:`~fmconstructs.eks.auto_mode.AutoModeGpuNodePoolOptions`): their one declaration.

    :var instance_types: GPU catalog types (required; a type with EFA on several cards alone, with its EFA layout;
        UltraServer types refused, see :mod:`fmconstructs.eks.karpenter_manifests`).
    :var max_gpus: the pool's GPU limit (``limits["nvidia.com/gpu"]``); with ``max_nodes``, at least one of the
        two, each >= 1.
    :var max_nodes: the pool's node limit (``limits.nodes``).
    :var capacity_reservations: ODCRs / Capacity Blocks to launch into (``capacityReservationSelectorTerms``;
        :meth:`CapacityReservationTerm.for_capacity` turns a ``CapacityBlock`` into one).
    :var capacity_types: default ``[RESERVED]`` with reservations, else ``[ON_DEMAND]``; add ``ON_DEMAND``
        after ``RESERVED`` to fall back to On-Demand when the reservations are full.
    :var reservation_type: only Capacity Blocks or only ODCRs (with ``capacity_types=[RESERVED]``).
    :var subnets: where nodes go (by id). Default: the cluster's subnets. EFA traffic stays in one Availability
        Zone: give the subnet of the reservation's zone for EFA pools.
    :var labels: extra node labels (Kubernetes label keys and values).
    :var gpu_taint: taint nodes ``nvidia.com/gpu=true:NoSchedule``. Default: True, as GPU node groups.
    :var disruption: consolidation, expiry and budget (:class:`NodePoolDisruption`). Default: its defaults
        (Auto Mode: ``expire_after`` 504h, its maximum).
    :var tags: tags on the instances the pool launches (the node class's ``spec.tags``). Default: none.

    Security groups: the cluster security group, plus the cluster's EFA security group for EFA types.
    """

    instance_types: Required[Sequence[str]]
    max_gpus: int | None
    max_nodes: int | None
    capacity_reservations: Sequence[CapacityReservationTerm]
    capacity_types: Sequence[KarpenterCapacityType] | None
    reservation_type: ReservationType | None
    subnets: Sequence[ec2.ISubnet] | None
    labels: Mapping[str, str] | None
    gpu_taint: bool
    disruption: NodePoolDisruption | None
    tags: Mapping[str, str] | None


#: The GPU pool options that go to the ``NodePool`` unchanged (``capacity_types`` is resolved first).
_NODE_POOL_KEYS = frozenset(NodePoolOptions.__annotations__) & frozenset(GpuNodePoolOptions.__annotations__) - {
    "capacity_types"
}


def node_role(scope: Construct, *, description: str, managed_policies: Sequence[str]) -> iam.Role:
    """The ``NodeRole`` of a product's GPU nodes: EC2 principal and the product's AWS managed policies."""
    return iam.Role(
        scope,
        "NodeRole",
        assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
        description=description,
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in managed_policies],
    )


def node_access_entry(
    scope: Construct,
    cluster: GpuEksCluster,
    role: iam.IRole,
    *,
    entry_type: eks.AccessEntryType,
    access_policy: str | None = None,
) -> eks.AccessEntry:
    """The ``NodeAccessEntry`` of ``role`` on ``cluster``: ``entry_type``, with ``access_policy`` (cluster scope) when
    the product needs one."""
    policies = (
        []
        if access_policy is None
        else [eks.AccessPolicy.from_access_policy_name(access_policy, access_scope_type=eks.AccessScopeType.CLUSTER)]
    )
    return eks.AccessEntry(
        scope,
        "NodeAccessEntry",
        cluster=cluster.icluster,
        principal=role.role_arn,
        access_entry_type=entry_type,
        access_policies=policies,
    )


class PoolPlacement(NamedTuple):
    """Where a pool's nodes go and what capacity they take."""

    subnet_ids: list[str]
    security_group_ids: list[str]
    capacity_types: Sequence[KarpenterCapacityType]


def pool_placement(
    cluster: GpuEksCluster,
    specs: Sequence[InstanceSpec],
    *,
    subnets: Sequence[ec2.ISubnet] | None,
    capacity_reservations: Sequence[CapacityReservationTerm],
    capacity_types: Sequence[KarpenterCapacityType] | None,
) -> PoolPlacement:
    """Subnets (default: the cluster's), security groups (the cluster's, plus its EFA group for EFA types) and capacity
    types (default ``[RESERVED]`` with reservations, else ``[ON_DEMAND]``) of a GPU pool."""
    chosen = check_sequence(
        "subnets",
        cluster.subnets if subnets is None else subnets,
        check_subnet,
    )
    groups = [cluster.cluster_security_group.security_group_id]
    if any(spec.maximum_efa_interfaces > 0 for spec in specs):
        groups.append(cluster.efa_security_group.security_group_id)
    if capacity_types is None:
        capacity_types = (
            (KarpenterCapacityType.RESERVED,) if capacity_reservations else (KarpenterCapacityType.ON_DEMAND,)
        )
    return PoolPlacement([subnet.subnet_id for subnet in chosen], groups, capacity_types)


class GpuNodePool(NamedTuple):
    """A GPU pool's options, checked as far as both products share them: what the node class and the pool need."""

    specs: tuple[InstanceSpec, ...]
    placement: PoolPlacement
    #: The one instance type whose EFA layout the node class carries (None for several types).
    efa_instance_type: str | None
    capacity_reservations: Sequence[CapacityReservationTerm]
    #: The ``NodePool`` options (:class:`NodePoolOptions`), capacity types resolved.
    node_pool_options: NodePoolOptions


def resolve_gpu_node_pool(
    owner: str,
    cluster: GpuEksCluster,
    name: str,
    options: Mapping[str, Any],
    *,
    declared: Iterable[str],
    taken: Container[str],
    check_instance_types: Callable[[str, object], tuple[InstanceSpec, ...]],
) -> GpuNodePool:
    """``options`` of ``owner`` (keys ``declared``: :class:`GpuNodePoolOptions` and the product's own) for the pool
    ``name`` (not in ``taken``): unknown keys refused as Python refuses a keyword, the instance types checked by the
    product's rule, then where the nodes go (:func:`pool_placement`)."""
    refuse_unknown_options(owner, options, declared)
    if name in taken:
        raise FmValidationError("name", name, "a NodePool name not added yet")
    if "instance_types" not in options:
        raise FmTypeError("instance_types", None, "GPU catalog instance types (required)")
    specs = check_instance_types("instance_types", options["instance_types"])
    reservations: Sequence[CapacityReservationTerm] = options.get("capacity_reservations", ())
    placement = pool_placement(
        cluster,
        specs,
        subnets=options.get("subnets"),
        capacity_reservations=reservations,
        capacity_types=options.get("capacity_types"),
    )
    pool_options = cast(NodePoolOptions, {key: options[key] for key in _NODE_POOL_KEYS if key in options})
    pool_options["capacity_types"] = placement.capacity_types
    pool_options["reserved"] = bool(reservations)
    efa_instance_type = specs[0].instance_type if len(specs) == 1 else None
    return GpuNodePool(specs, placement, efa_instance_type, reservations, pool_options)
