"""EKS Auto Mode GPU node pools on a :class:`~fmconstructs.eks.cluster.GpuEksCluster`: opt-in, for training pools that
grow and shrink with the jobs.

``GpuEksCluster(auto_mode=True)`` turns on EKS Auto Mode's compute (:func:`auto_mode_cluster_props`), without the
built-in ``system`` / ``general-purpose`` node pools: the cluster's managed node groups keep running the add-ons, and
:meth:`GpuEksCluster.add_auto_mode_gpu_node_pool` adds a ``NodeClass`` (``eks.amazonaws.com/v1``) and a ``NodePool``
(``karpenter.sh/v1``) for GPU types through :class:`AutoModeGpuNodePools`.

Sources (Amazon EKS User Guide, awsdocs/amazon-eks-user-guide; file and commit as read):

- Enabling: aws-cdk-lib 2.275 ``aws_eks_v2.Cluster(default_capacity_type=DefaultCapacityType.AUTOMODE,
  compute=ComputeConfig(node_pools=[]))`` renders ``ComputeConfig.Enabled``, ``StorageConfig.BlockStorage`` and
  ``KubernetesNetworkConfig.ElasticLoadBalancing`` enabled, attaches ``AmazonEKSComputePolicy``,
  ``AmazonEKSBlockStoragePolicy``, ``AmazonEKSLoadBalancingPolicy`` and ``AmazonEKSNetworkingPolicy`` to the cluster
  role with ``sts:TagSession`` in its trust, and omits ``NodeRoleArn`` when ``node_pools`` is empty (aws-eks-v2/lib/
  cluster.js ``isValidAutoModeConfig`` and the CfnCluster properties).
- Custom NodeClass: ``role``, ``subnetSelectorTerms``, ``securityGroupSelectorTerms`` (automode/create-node-class.adoc
  "Node Class Specification"); its node role needs an access entry of type ``EC2`` with the ``AmazonEKSAutoNodePolicy``
  access policy (create-node-class "Create node class access entry"). The node role here carries the policies
  aws-cdk-lib gives Auto Mode's own node role (cluster.js ``addNodePoolRole``: ``AmazonEKSWorkerNodePolicy``,
  ``AmazonEC2ContainerRegistryReadOnly``).
- NodePool: ``nodeClassRef {group: eks.amazonaws.com, kind: NodeClass}``; ``node.kubernetes.io/instance-type`` is a
  supported requirement key (automode/create-node-pool.adoc "EKS Auto Mode Supported" labels).
- Reservations: ``capacityReservationSelectorTerms`` on the NodeClass, a term by ``id`` or by ``tags`` with an optional
  ``owner`` account (automode/auto-odcr.adoc, commit 4f3d5005: note ``owner``, where Karpenter's EC2NodeClass says
  ``ownerID``); "Capacity Blocks for ML always require capacityReservationSelectorTerms" and a NodePool that allows
  ``karpenter.sh/capacity-type: reserved``; configuring the terms on any NodeClass stops open-ODCR matching for the
  whole cluster (auto-odcr "WARNING"). ml/ml-node-pools.adoc (commit 9785cb74): Auto Mode and Karpenter drain
  Capacity Block nodes 10 minutes before EC2 terminates them.
- EFA: ``advancedNetworking.networkInterfaces`` on the NodeClass, entries of ``networkCardIndex``, ``deviceIndex``,
  ``interfaceType`` (``interface`` | ``efa-only``), "regardless of whether Pods request vpc.amazonaws.com/efa"
  (ml/device-management-efa.adoc commit 43d79bdb "EKS Auto Mode"; EKS document history 2026-07-21 "EFA support for
  static capacity in EKS Auto Mode"). The layout rendered is the managed node groups' (
  :func:`~fmconstructs.networking.interfaces.plan_network_interfaces`), as for Karpenter, so a multi-EFA type is
  the only type of its pool. The page's further constraints ("Static Network Interface Configuration" in
  create-node-class) were not readable here: UNCONFIRMED beyond the example it shows (ENA primary + efa-only).
- Node lifetime: "21-day maximum node lifetime" (ml-node-pools "EKS Auto Mode vs Karpenter"): ``expireAfter`` is at
  most 504h here (default 504h).
- Device plugins: Auto Mode "includes the NVIDIA device plugin ... not visible as a daemon set" (automode/
  auto-accelerated.adoc) and ships "NVIDIA GPU, AWS Trainium, and EFA dependencies" (ml-node-pools). Auto Mode
  pools therefore do NOT carry ``nvidia.com/gpu.present`` / ``vpc.amazonaws.com/efa.present``, the labels the
  library's device-plugin and DCGM DaemonSets select, so those do not run there (no DCGM metrics from Auto Mode
  nodes). That Auto Mode advertises ``vpc.amazonaws.com/efa`` itself is UNCONFIRMED (the EFA page lists the EFA
  device plugin as usable "with Karpenter and EKS Auto Mode").

Refused (:class:`~fmconstructs.errors.FmValidationError`; use a managed node group): UltraServer types (p6e-gb200:
IMEX needs the NVIDIA DRA driver, and "DRA is not currently supported with EKS Auto Mode", device-management-efa),
several types in a pool with a multi-EFA type, ``instance_match_criteria`` terms (the Auto Mode pages show ``id`` and
``tags``/``owner`` only). The NodeClass CRD of Auto Mode is not published as a file: manifests are checked for the
structure above, not against a vendored schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .. import _nag
from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_str,
    check_str_sequence,
    located,
)
from .._validate_tags import check_karpenter_node_tags
from ..catalog import InstanceSpec
from ..errors import FmTypeError, FmValidationError
from . import _node_pools
from . import karpenter_manifests as _karpenter
from ._node_group_props import refuse_unknown_options
from ._node_pools import GpuNodePoolOptions
from .addons import EFA_PRESENT_LABEL, GPU_PRESENT_LABEL
from .karpenter_manifests import CapacityReservationTerm, NodePoolDisruption, NodePoolOptions
from .manifests import check_name

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

__all__ = [
    "AUTO_MODE_MAX_EXPIRE_AFTER_HOURS",
    "AutoModeGpuNodePools",
    "auto_mode_cluster_props",
    "auto_mode_node_class_manifest",
    "auto_mode_node_pool_manifest",
    "check_auto_mode_instance_types",
]

#: automode/create-node-class.adoc: ``apiVersion: eks.amazonaws.com/v1``, ``kind: NodeClass``.
NODE_CLASS_API_VERSION = "eks.amazonaws.com/v1"
NODE_CLASS_GROUP = "eks.amazonaws.com"
NODE_CLASS_KIND = "NodeClass"
#: create-node-class "Create node class access entry": type EC2 and this EKS access policy.
AUTO_NODE_ACCESS_POLICY = "AmazonEKSAutoNodePolicy"
#: aws-cdk-lib 2.275 aws-eks-v2/lib/cluster.js ``addNodePoolRole``: the managed policies of Auto Mode's node role.
AUTO_NODE_ROLE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly")
#: ml-node-pools.adoc: "21-day maximum node lifetime for security patching" (21 x 24 h).
AUTO_MODE_MAX_EXPIRE_AFTER_HOURS = 21 * 24
_HOURS = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0}
_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")
#: create-node-class: ``ephemeralStorage.size`` "Range: 1-59000Gi".
_MAX_EPHEMERAL_GIB = 59000

_USE_NODE_GROUP = "use a managed node group (GpuEksCluster.add_gpu_node_group)"


def auto_mode_cluster_props(auto_mode: bool) -> dict[str, Any]:
    """``aws_eks_v2.Cluster`` capacity props: managed node groups only (the library's default) or EKS Auto Mode's
    compute with no built-in node pools (``compute.node_pools=[]``; the library adds GPU pools itself)."""
    check_bool("auto_mode", auto_mode)
    if not auto_mode:
        return {"default_capacity_type": eks.DefaultCapacityType.NODEGROUP, "default_capacity": 0}
    return {
        "default_capacity_type": eks.DefaultCapacityType.AUTOMODE,
        "compute": eks.ComputeConfig(node_pools=[]),
    }


def _check_type(parameter: str, value: object) -> InstanceSpec:
    not_listed = "a GPU instance type of the fmconstructs catalog, known at synthesis (a requirement)"
    return _karpenter.check_pool_gpu_type(
        parameter,
        value,
        deploy_time=not_listed,
        unknown=not_listed,
        ultraserver="a type EKS Auto Mode can run: UltraServer types need IMEX through the NVIDIA DRA driver and DRA "
        f"is not supported with EKS Auto Mode (EKS User Guide device-management-efa); {_USE_NODE_GROUP}",
    )


def check_auto_mode_instance_types(parameter: str, value: object) -> tuple[InstanceSpec, ...]:
    """GPU catalog types for one Auto Mode pool, without repeats; a type with EFA on several network cards alone
    (its interface layout goes into the pool's NodeClass)."""
    names = check_str_sequence(parameter, value, min_items=1)
    specs = [_check_type(f"{parameter}[{i}]", name) for i, name in enumerate(names)]
    unique = tuple({spec.instance_type: spec for spec in specs}.values())
    multi = [spec.instance_type for spec in unique if spec.maximum_efa_interfaces > 1]
    if multi and len(unique) > 1:
        raise FmValidationError(
            parameter,
            list(names),
            f"one instance type when it has EFA on several network cards ({', '.join(multi)}): the NodeClass carries "
            f"that type's interface layout; add one pool per type, or {_USE_NODE_GROUP}",
        )
    return unique


def _reservation_term(parameter: str, term: object) -> dict[str, Any]:
    """A Karpenter-style term in Auto Mode's words (``owner``, not ``ownerID``; auto-odcr.adoc)."""
    if not isinstance(term, CapacityReservationTerm):
        raise FmTypeError(parameter, term, f"a CapacityReservationTerm (got a {type(term).__name__})")
    if term.instance_match_criteria is not None:
        raise FmValidationError(
            f"{parameter}.instance_match_criteria",
            term.instance_match_criteria,
            "None for EKS Auto Mode (its NodeClass pages select reservations by id, or by tags and owner)",
        )
    return term.to_manifest(owner_key="owner")


def auto_mode_node_class_manifest(
    *,
    name: str,
    role: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
    capacity_reservations: Sequence[CapacityReservationTerm] = (),
    efa_instance_type: str | None = None,
    ephemeral_storage_gib: int | None = None,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An Auto Mode ``NodeClass``: node role (name), subnets and security groups by id, reservations, and for a
    multi-EFA ``efa_instance_type`` its ``advancedNetworking.networkInterfaces`` layout.

    :param ephemeral_storage_gib: ``ephemeralStorage.size`` (1-59000). Default: Auto Mode's (80Gi).
    """
    check_name("name", name)
    spec: dict[str, Any] = {
        "role": check_str("role", role, min_length=1, allowed="the node role's name"),
        "subnetSelectorTerms": [{"id": s} for s in check_str_sequence("subnet_ids", subnet_ids, min_items=1)],
        "securityGroupSelectorTerms": [
            {"id": g} for g in check_str_sequence("security_group_ids", security_group_ids, min_items=1)
        ],
    }
    terms = [_reservation_term(f"capacity_reservations[{i}]", t) for i, t in enumerate(capacity_reservations)]
    if terms:
        spec["capacityReservationSelectorTerms"] = terms
    if efa_instance_type is not None:
        (efa_spec,) = check_auto_mode_instance_types("efa_instance_type", [efa_instance_type])
        interfaces = _karpenter.network_interfaces(efa_spec)
        if interfaces is not None:
            spec["advancedNetworking"] = {"networkInterfaces": interfaces}
    if ephemeral_storage_gib is not None:
        size = check_count("ephemeral_storage_gib", ephemeral_storage_gib, minimum=1, maximum=_MAX_EPHEMERAL_GIB)
        spec["ephemeralStorage"] = {"size": f"{size}Gi"}
    if tags is not None:
        # Auto Mode runs Karpenter: the EC2NodeClass restrictions (UNCONFIRMED that its NodeClass CRD lists the same).
        spec["tags"] = check_karpenter_node_tags("tags", tags)
    return {"apiVersion": NODE_CLASS_API_VERSION, "kind": NODE_CLASS_KIND, "metadata": {"name": name}, "spec": spec}


def _expire_after_hours(value: str) -> float | None:
    if value == "Never":
        return None
    return sum(int(n) * _HOURS[unit] for n, unit in _DURATION_PART.findall(value))


def auto_mode_node_pool_manifest(
    *, name: str, node_class_name: str, instance_types: Sequence[str], **options: Unpack[NodePoolOptions]
) -> dict[str, Any]:
    """A ``NodePool`` on an Auto Mode ``NodeClass``: the same requirements, limits, taint and disruption as
    :func:`~fmconstructs.eks.karpenter_manifests.node_pool_manifest` (:class:`NodePoolOptions`), without the
    device-plugin labels (Auto Mode runs its own plugins) and with ``expireAfter`` at most 504h (default 504h)."""
    refuse_unknown_options("auto_mode_node_pool_manifest", options, NodePoolOptions.__annotations__)
    check_auto_mode_instance_types("instance_types", instance_types)
    disruption = options.get("disruption")
    disruption = (
        NodePoolDisruption(expire_after=f"{AUTO_MODE_MAX_EXPIRE_AFTER_HOURS}h") if disruption is None else disruption
    )
    if not isinstance(disruption, NodePoolDisruption):
        raise FmTypeError("disruption", disruption, f"a NodePoolDisruption (got a {type(disruption).__name__})")
    hours = _expire_after_hours(disruption.expire_after)
    if hours is None or hours > AUTO_MODE_MAX_EXPIRE_AFTER_HOURS:
        raise FmValidationError(
            "disruption.expire_after",
            disruption.expire_after,
            f"at most {AUTO_MODE_MAX_EXPIRE_AFTER_HOURS}h (EKS Auto Mode's 21-day maximum node lifetime)",
        )
    pool_options = options.copy()
    pool_options["disruption"] = disruption
    pool = _karpenter.node_pool_manifest(
        name=name,
        node_class_name=node_class_name,
        instance_types=instance_types,
        **pool_options,
    )
    template = pool["spec"]["template"]
    template["spec"]["nodeClassRef"] = {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": node_class_name}
    node_labels = template["metadata"]["labels"]
    labels = options.get("labels")
    for key in (GPU_PRESENT_LABEL, EFA_PRESENT_LABEL):
        if labels is None or key not in labels:
            node_labels.pop(key, None)
    return pool


class AutoModeGpuNodePoolOptions(GpuNodePoolOptions, total=False):
    """The options of :meth:`AutoModeGpuNodePools.add_gpu_node_pool`:
    :class:`~fmconstructs.eks._node_pools.GpuNodePoolOptions` and the ``NodeClass``'s ephemeral storage.

    :var ephemeral_storage_gib: ``ephemeralStorage.size`` (1-59000). Default: Auto Mode's (80Gi).
    """

    ephemeral_storage_gib: int | None


class AutoModeGpuNodePools(Construct):
    """The node role and its ``EC2`` access entry for Auto Mode GPU pools, and the pools. Use
    :meth:`GpuEksCluster.add_auto_mode_gpu_node_pool` (the cluster needs ``auto_mode=True``)."""

    @located
    def __init__(
        self, scope: Construct, id: str, *, cluster: GpuEksCluster, node_role: iam.IRole | None = None
    ) -> None:
        super().__init__(scope, id)
        from .cluster import GpuEksCluster

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        if not cluster.auto_mode:
            raise FmValidationError("cluster", cluster.node.path, "a GpuEksCluster(auto_mode=True)")
        if node_role is not None:
            check_construct("node_role", node_role, attribute="role_arn", expected="an iam.IRole")
        self.cluster: GpuEksCluster = cluster
        self.node_role: iam.IRole = node_role or _node_pools.node_role(
            self,
            description="EKS Auto Mode GPU nodes of the fmconstructs cluster",
            managed_policies=AUTO_NODE_ROLE_POLICIES,
        )
        self.access_entry = _node_pools.node_access_entry(
            self,
            cluster,
            self.node_role,
            entry_type=eks.AccessEntryType.EC2,
            access_policy=AUTO_NODE_ACCESS_POLICY,
        )
        self.node_pools: dict[str, eks.KubernetesManifest] = {}
        if node_role is None:
            for policy in AUTO_NODE_ROLE_POLICIES:
                _nag.acknowledge(
                    self.node_role,
                    _nag.aws_managed_policy_finding(policy),
                    f"EKS Auto Mode nodes: {policy} is what aws-cdk-lib attaches to Auto Mode's own node role "
                    "(aws-eks-v2 addNodePoolRole); AWS maintains it with the node agents' needs",
                )

    def add_gpu_node_pool(self, name: str, **options: Unpack[AutoModeGpuNodePoolOptions]) -> eks.KubernetesManifest:
        """A ``NodeClass`` and a ``NodePool``, both named ``name``: see :class:`AutoModeGpuNodePoolOptions`
        (the options of :meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool` but Karpenter's own, and
        ``ephemeral_storage_gib``)."""
        pool = _node_pools.resolve_gpu_node_pool(
            "AutoModeGpuNodePools.add_gpu_node_pool",
            self.cluster,
            name,
            options,
            declared=AutoModeGpuNodePoolOptions.__annotations__,
            taken=self.node_pools,
            check_instance_types=check_auto_mode_instance_types,
        )
        node_class = auto_mode_node_class_manifest(
            name=name,
            role=self.node_role.role_name,
            subnet_ids=pool.placement.subnet_ids,
            security_group_ids=pool.placement.security_group_ids,
            capacity_reservations=pool.capacity_reservations,
            efa_instance_type=pool.efa_instance_type,
            ephemeral_storage_gib=options.get("ephemeral_storage_gib"),
            tags=options.get("tags"),
        )
        node_pool = auto_mode_node_pool_manifest(
            name=name,
            node_class_name=name,
            instance_types=[spec.instance_type for spec in pool.specs],
            **pool.node_pool_options,
        )
        manifest = self.cluster.cluster.add_manifest(f"AutoModePool-{name}", node_class, node_pool)
        manifest.node.add_dependency(self.access_entry)
        self.node_pools[name] = manifest
        return manifest


#: aws-cdk-lib 2.275 aws-eks-v2/lib/cluster.js: the managed policies an Auto Mode cluster role gets.
AUTO_MODE_CLUSTER_ROLE_POLICIES = (
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
)


def acknowledge_cluster_role(cluster: GpuEksCluster) -> None:
    """cdk-nag: the AWS managed policies ``aws_eks_v2.Cluster`` attaches to the cluster role for Auto Mode."""
    for policy in AUTO_MODE_CLUSTER_ROLE_POLICIES:
        _nag.acknowledge(
            cluster.cluster,
            _nag.aws_managed_policy_finding(policy),
            f"EKS Auto Mode: the cluster role needs {policy} (EKS User Guide auto-learn-iam); aws_eks_v2.Cluster "
            "attaches it when default_capacity_type is AUTOMODE",
        )
