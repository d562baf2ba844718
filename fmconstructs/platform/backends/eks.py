"""The EKS backend of :class:`~fmconstructs.platform.TrainingPlatform`: a :class:`~fmconstructs.eks.GpuEksCluster`
with a GPU node group (or an elastic pool, :mod:`~fmconstructs.platform.elastic`), the file system as a
PersistentVolumeClaim, topology scheduling and an :class:`~fmconstructs.observability.eks.AmpEksScraper`. The EKS
helpers here also serve HyperPod on EKS."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import RemovalPolicy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from ...capacity import CapacityBlockScaling
from ...eks import GpuEksCluster
from ...errors import FmValidationError
from ...networking import EfaSecurityGroup
from ...observability.eks import AmpEksScraper
from .. import _health_wiring as _health
from .. import elastic as _elastic
from ..options import EksOptions, PlatformStorage
from ._base import Backend, BackendResult, Unsupported, slurm_topology_unsupported, storage_mount_point

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...storage import LustreFileSystem
    from ..platform import TrainingPlatform


class EksBackend:
    """:class:`~fmconstructs.platform.EksOptions` -> Amazon EKS."""

    backend = Backend.EKS
    unsupported: tuple[Unsupported, ...] = (
        slurm_topology_unsupported(
            "False with EksOptions (Slurm only): EKS places pods by topology with Kueue Topology Aware Scheduling "
            "(EksOptions(scheduling=True)) and the node labels topology.k8s.aws/network-node-layer-*"
        ),
    )
    services: tuple[str, ...] = ()

    def check(self, platform: TrainingPlatform, options: EksOptions, storage: PlatformStorage | None) -> None:
        """Capacity Block scaling's needs; the elastic pool's capacity rules."""
        _check_block_scaling(platform, options)
        if options.gpu_capacity.elastic:
            _elastic.check_elastic(options, instance_spec=platform.instance_spec, capacity=platform.capacity)

    def build(self, platform: TrainingPlatform, options: EksOptions) -> BackendResult:
        efa = EfaSecurityGroup(platform, "EfaSecurityGroup", vpc=platform.vpc)
        cluster = gpu_eks_cluster(
            platform,
            "Cluster",
            options.version,
            options.admin_roles,
            options.cluster_name,
            efa,
            options.removal_policy,
            auto_mode=options.gpu_capacity is _elastic.EksGpuCapacity.AUTO_MODE,
        )
        result = BackendResult(cluster=cluster, security_group=efa, eks_cluster=cluster)
        file_system = platform._file_system(efa)
        result.elastic_pool = (
            _elastic.add_elastic_pool(platform, cluster, options) if options.gpu_capacity.elastic else None
        )
        if result.elastic_pool is None:
            result.node_group = cluster.add_gpu_node_group(
                "Gpu",
                instance_type=platform.instance_spec.instance_type,
                capacity=platform.capacity,
                max_nodes=platform.nodes,
                subnets=[platform.subnet],
                capacity_block_scaling=options.capacity_block_scaling,
                # the same NodeHealthOptions as a Slurm backend's gate: the same BOOT checks (DCGM level included)
                node_checks=_health.eks_node_checks(platform),
            )
        if options.gpu_addons:
            cluster.add_gpu_addons()
        _storage_and_scheduling(platform, cluster, options, file_system, result)
        result.scraper = eks_scraper(platform, cluster)
        result.outputs.update(eks_outputs(cluster))
        return result


def _storage_and_scheduling(
    platform: TrainingPlatform,
    cluster: GpuEksCluster,
    options: EksOptions,
    file_system: LustreFileSystem | None,
    result: BackendResult,
) -> None:
    """The file system's volume and claim (with the NCCL MPIJob on it), then topology scheduling."""
    volume = None
    if file_system is not None:
        # Registers the GPU nodes as Lustre (EFA) clients and mounts on the hosts; pods use the claim.
        volume = cluster.add_lustre_volume(
            "FsxVolume",
            file_system,
            name=options.volume_name,
            namespace=options.namespace,
            create_namespace=options.create_namespace,
            host_mount_point=storage_mount_point(platform),
        )
        result.outputs["VolumeClaim"] = (
            f"{options.namespace}/{options.volume_name}",
            "PersistentVolumeClaim (namespace/name) that pods mount for the file system",
        )
        _health.eks_nccl(platform, cluster, volume, options)
    if options.scheduling:
        scheduling = cluster.add_topology_scheduling(
            namespaces=[options.namespace], create_namespaces=options.create_namespace and file_system is None
        )
        if volume is not None:
            scheduling.queues.node.add_dependency(volume)  # the volume's manifest may create the namespace
        if result.elastic_pool is not None:
            _elastic.add_elastic_flavor(
                scheduling, result.elastic_pool, instance_spec=platform.instance_spec, max_nodes=platform.nodes
            )


def _check_block_scaling(platform: TrainingPlatform, options: EksOptions) -> None:
    """ON_BLOCK_EVENTS needs the events construct: a block by reservation id, observability and the events on."""
    if options.capacity_block_scaling is not CapacityBlockScaling.ON_BLOCK_EVENTS:
        return
    capacity = platform.capacity
    problem = None
    if not capacity.is_capacity_block:
        problem = f"a Capacity Block (capacity is {capacity.kind.value})"
    elif getattr(capacity, "reservation_id", None) is None:
        problem = "a Capacity Block given by reservation_id (its events name the block by it)"
    elif platform._observability_choice is None:
        problem = "observability= (the Capacity Block events construct notifies its alert topic)"
    elif not platform._events_on:
        problem = "capacity_block_events=True (it scales the group)"
    if problem is not None:
        raise FmValidationError(
            "orchestrator.capacity_block_scaling",
            options.capacity_block_scaling.name,
            f"CapacityBlockScaling.AT_DEPLOY, or ON_BLOCK_EVENTS with {problem}",
        )


# --- EKS helpers (EKS and HyperPod on EKS) ----------------------------------------------------------------------------
def gpu_eks_cluster(
    platform: TrainingPlatform,
    id: str,
    version: eks.KubernetesVersion | None,
    admin_roles: Sequence[iam.IRole],
    cluster_name: str | None,
    efa: EfaSecurityGroup | None,
    removal_policy: RemovalPolicy | None = None,
    auto_mode: bool = False,
) -> GpuEksCluster:
    """The platform's :class:`~fmconstructs.eks.GpuEksCluster` (only the options given are passed on)."""
    extra: dict[str, object] = {} if version is None else {"version": version}
    if auto_mode:
        extra["auto_mode"] = True
    if removal_policy is not None:
        extra["removal_policy"] = removal_policy
    return GpuEksCluster(
        platform,
        id,
        vpc=platform.vpc,
        cluster_name=cluster_name,
        admin_roles=list(admin_roles),
        efa_security_group=efa,
        **extra,  # type: ignore[arg-type]
    )


def eks_scraper(platform: TrainingPlatform, cluster: GpuEksCluster) -> AmpEksScraper | None:
    """The workspace's managed scraper of the cluster (None without observability)."""
    if platform.prometheus_workspace is None:
        return None
    return AmpEksScraper(
        platform,
        "Scraper",
        cluster=cluster,
        workspace=platform.prometheus_workspace,
        cluster_label=platform.cluster_label,
    )


def eks_outputs(cluster: GpuEksCluster) -> dict[str, tuple[str, str]]:
    return {
        "EksClusterName": (cluster.cluster_name, "EKS cluster name"),
        "UpdateKubeconfigCommand": (
            cluster.update_kubeconfig_command,
            "Writes a kubeconfig entry for the cluster (as an admin role, from a host that reaches the private "
            "endpoint)",
        ),
    }
