"""Elastic GPU capacity for the TrainingPlatform's EKS backend: ``EksOptions(gpu_capacity=...)``.

- :attr:`EksGpuCapacity.MANAGED_NODE_GROUP` (default): one fixed GPU managed node group with the type's full EFA
  layout, node checks, Capacity Block scaling and Kueue topology-aware scheduling (unchanged).
- :attr:`EksGpuCapacity.KARPENTER`: Karpenter (:meth:`GpuEksCluster.add_karpenter`) and one GPU NodePool
  (:meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool`) that grows to the platform's ``nodes`` when jobs
  are pending and gives nodes back when they are empty.
- :attr:`EksGpuCapacity.AUTO_MODE`: the same with EKS Auto Mode (``GpuEksCluster(auto_mode=True)``,
  :mod:`fmconstructs.eks.auto_mode`): AWS runs the provisioner and the GPU drivers and device plugins.

Both elastic kinds take the platform's instance type alone in the pool (multi-EFA types get the managed node group
EFA layout in the node class), its subnet (EFA traffic stays in one Availability Zone), and its reservation: a
Capacity Block or ODCR given by ``reservation_id`` becomes the pool's ``capacityReservationSelectorTerms`` with
``karpenter.sh/capacity-type: reserved`` only (Karpenter tasks/odcrs.md; EKS User Guide auto-odcr). Refused
(:class:`~fmconstructs.errors.FmValidationError`): UltraServer types and UltraServer Capacity Blocks (p6e-gb200:
IMEX through DRA, see the two modules), reservations given by resource group (the selector terms name ids or
tags), and ``capacity_block_scaling=ON_BLOCK_EVENTS`` (an elastic pool has no size to scale; Karpenter and Auto Mode
drain Capacity Block nodes 10 minutes before EC2 terminates them, EKS User Guide ml-node-pools).

Kueue: the pool gets its own ``ResourceFlavor`` whose ``nodeLabels`` are labels the NodePool puts on its nodes
(:data:`ELASTIC_POOL_LABEL`, the fmconstructs instance-type and capacity labels) and whose quota is the pool's
``nodes`` x GPUs (EFA interfaces) per node. Topology-aware scheduling is OFF for that flavor (no ``topologyName``):
Kueue TAS computes each topology domain's free capacity from the allocatable of existing, Ready nodes and reaches
autoscaled nodes only through the Cluster Autoscaler's ProvisioningRequest admission check (Kueue v0.19.2
site/content/en/docs/concepts/topology_aware_scheduling.md "Capacity calculation", "ClusterAutoscaler support");
Karpenter and Auto Mode provision from pending pods, so a TAS flavor over an empty pool would never admit a job and
the pool would never grow. Jobs on the elastic flavor are admitted by quota (all-or-nothing still holds through
``waitForPodsReady``); for network-locality placement use the managed node group. EC2 network-node labels on
Karpenter / Auto Mode nodes were not checked (UNCONFIRMED).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from .._rules import warn
from ..capacity import CapacityKind
from ..catalog import InstanceSpec
from ..eks.addons import GPU_TAINT_KEY
from ..eks.karpenter_manifests import CapacityReservationTerm, KarpenterCapacityType, ReservationType
from ..eks.node_group import CAPACITY_LABEL, INSTANCE_TYPE_LABEL
from ..eks.scheduling import FlavorQuota, KueueScheduling, network_layers
from ..errors import WarningId, add_warning, is_token
from . import rules

if TYPE_CHECKING:
    from aws_cdk import aws_eks_v2 as eks

    from ..capacity import Capacity
    from ..eks import GpuEksCluster
    from .options import EksOptions
    from .platform import TrainingPlatform

__all__ = ["ELASTIC_POOL_LABEL", "ELASTIC_POOL_NAME", "EksGpuCapacity", "ElasticPool", "check_elastic"]

#: The NodePool (and node class) name of the platform's elastic pool.
ELASTIC_POOL_NAME = "fm-gpu"
#: A node label of the elastic pool's nodes; the Kueue flavor selects by it, so managed node group nodes of the same
#: type and capacity never count for it.
ELASTIC_POOL_LABEL = "fmconstructs.io/elastic-pool"


class EksGpuCapacity(str, Enum):
    """How the EKS backend gets its GPU nodes (see :mod:`fmconstructs.platform.elastic`)."""

    MANAGED_NODE_GROUP = "managed-node-group"
    KARPENTER = "karpenter"
    AUTO_MODE = "auto-mode"

    @property
    def elastic(self) -> bool:
        return self is not EksGpuCapacity.MANAGED_NODE_GROUP


@dataclass(frozen=True)
class ElasticPool:
    """What :func:`add_elastic_pool` made: the pool's manifest (NodeClass + NodePool), name, node labels and kind."""

    manifest: eks.KubernetesManifest
    name: str
    labels: Mapping[str, str]
    kind: EksGpuCapacity


def _reservation(capacity: Capacity) -> tuple[tuple[CapacityReservationTerm, ...], ReservationType | None]:
    rules.elastic_pool_reserves_by_id(
        capacity_kind=capacity.kind, reservation_id=getattr(capacity, "reservation_id", None)
    )
    if capacity.kind is CapacityKind.ON_DEMAND:
        return (), None
    kind = ReservationType.CAPACITY_BLOCK if capacity.is_capacity_block else ReservationType.DEFAULT
    return (CapacityReservationTerm.for_capacity(capacity),), kind


def check_elastic(
    options: EksOptions, *, instance_spec: InstanceSpec, capacity: Capacity
) -> tuple[tuple[CapacityReservationTerm, ...], ReservationType | None]:
    """The cross-choice rules of an elastic pool; returns its reservation terms and reservation type."""
    from ..eks.auto_mode import check_auto_mode_instance_types
    from ..eks.karpenter_manifests import check_karpenter_instance_types

    kind = options.gpu_capacity
    rules.elastic_pool_is_not_for_an_ultraserver_block(gpu_capacity=kind, capacity_kind=capacity.kind)
    rules.elastic_pool_scales_at_deploy(gpu_capacity=kind, capacity_block_scaling=options.capacity_block_scaling)
    check = check_auto_mode_instance_types if kind is EksGpuCapacity.AUTO_MODE else check_karpenter_instance_types
    check("instance_type", [instance_spec.instance_type])
    return _reservation(capacity)


def add_elastic_pool(platform: TrainingPlatform, cluster: GpuEksCluster, options: EksOptions) -> ElasticPool:
    """The platform's elastic GPU pool (Karpenter or Auto Mode) of at most ``platform.nodes`` nodes."""
    terms, reservation_type = check_elastic(options, instance_spec=platform.instance_spec, capacity=platform.capacity)
    spec = platform.instance_spec
    labels = {
        ELASTIC_POOL_LABEL: ELASTIC_POOL_NAME,
        INSTANCE_TYPE_LABEL: spec.instance_type,
        CAPACITY_LABEL: platform.capacity.kind.value,
    }
    common: dict[str, Any] = {
        "instance_types": [spec.instance_type],
        "max_nodes": platform.nodes,
        "capacity_reservations": terms,
        "capacity_types": (KarpenterCapacityType.RESERVED,) if terms else (KarpenterCapacityType.ON_DEMAND,),
        "reservation_type": reservation_type,
        "subnets": [platform.subnet],
        "labels": labels,
    }
    if options.gpu_capacity is EksGpuCapacity.AUTO_MODE:
        manifest = cluster.add_auto_mode_gpu_node_pool(ELASTIC_POOL_NAME, **common)
    else:
        karpenter = cluster.karpenter or cluster.add_karpenter()
        manifest = karpenter.add_gpu_node_pool(ELASTIC_POOL_NAME, **common)
    _warn_limits(platform, options)
    return ElasticPool(manifest=manifest, name=ELASTIC_POOL_NAME, labels=labels, kind=options.gpu_capacity)


def _warn_limits(platform: TrainingPlatform, options: EksOptions) -> None:
    """What the managed node group does that the elastic pool's nodes do not (one warning, acknowledgeable)."""
    warn(
        platform,
        rules.elastic_pool_limits(
            gpu_capacity=options.gpu_capacity,
            node_checks_on=platform.health is not None and platform.health.node_checks_on,
            has_file_system=platform.file_system is not None,
        ),
    )


def elastic_flavor(pool: ElasticPool, *, instance_spec: InstanceSpec, max_nodes: int) -> FlavorQuota:
    """The Kueue flavor of an elastic pool: its node labels, quota ``max_nodes`` x GPUs / EFA interfaces, the GPU
    taint's toleration, no topology (see the module docstring)."""
    capacity = pool.labels[CAPACITY_LABEL]
    return FlavorQuota(
        name=f"{instance_spec.instance_type.replace('.', '-')}-{capacity}-elastic".lower(),
        node_labels=dict(pool.labels),
        layers=network_layers(instance_spec.instance_type),
        gpus=instance_spec.gpu.count * max_nodes,
        efa_interfaces=instance_spec.maximum_efa_interfaces * max_nodes,
        tolerations=({"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},),
        topology=False,
    )


def add_elastic_flavor(
    scheduling: KueueScheduling, pool: ElasticPool, *, instance_spec: InstanceSpec, max_nodes: Any
) -> FlavorQuota | None:
    """Add the pool's flavor to the ClusterQueue. A deploy-time ``max_nodes`` warns and adds none (the quota needs a
    number at synthesis), as for node groups."""
    if is_token(max_nodes):
        add_warning(
            scheduling,
            WarningId.EKS_SCHEDULING_QUOTA,
            f"the elastic pool {pool.name!r} has a deploy-time size, so its GPUs are not in the Kueue ClusterQueue "
            f"{scheduling.cluster_queue_name!r}; give nodes as a number to schedule it through Kueue",
        )
        return None
    flavor = elastic_flavor(pool, instance_spec=instance_spec, max_nodes=int(max_nodes))
    return scheduling.add_flavor((instance_spec.instance_type, f"elastic:{pool.name}"), flavor)
