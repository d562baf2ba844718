"""What Karpenter's and EKS Auto Mode's GPU node pools share: the node role and its access entry, and where a pool's
nodes go (subnets, security groups, capacity types).

The two products differ only in data, passed by the callers (:mod:`fmconstructs.eks.karpenter`,
:mod:`fmconstructs.eks.auto_mode`): the node role's description and managed policies, the access entry's type and
access policy. (Reservation terms: :meth:`~fmconstructs.eks.karpenter_manifests.CapacityReservationTerm.to_manifest`
with the product's owner key.) Sources are cited at those callers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .._validate import check_construct, check_sequence
from ..catalog import InstanceSpec
from .karpenter_manifests import CapacityReservationTerm, KarpenterCapacityType

if TYPE_CHECKING:
    from .cluster import GpuEksCluster


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
        lambda p, v: check_construct(p, v, attribute="subnet_id", expected="an ec2.ISubnet"),
    )
    groups = [cluster.cluster_security_group.security_group_id]
    if any(spec.maximum_efa_interfaces > 0 for spec in specs):
        groups.append(cluster.efa_security_group.security_group_id)
    if capacity_types is None:
        capacity_types = (
            (KarpenterCapacityType.RESERVED,) if capacity_reservations else (KarpenterCapacityType.ON_DEMAND,)
        )
    return PoolPlacement([subnet.subnet_id for subnet in chosen], groups, capacity_types)
