"""The HyperPod backend of :class:`~fmconstructs.platform.TrainingPlatform`: a
:class:`~fmconstructs.hyperpod.HyperPodCluster` on Slurm (controller, optional login and GPU groups) or on a
:class:`~fmconstructs.eks.GpuEksCluster` with HyperPod's dependencies chart and the file system's claim.

One EFA group for the nodes and the file system. Slurm: the platform's; EKS: the GpuEksCluster's, so no second group.
Either way it is passed to HyperPodCluster and to the file system (EFA-enabled unless the storage says otherwise);
HyperPodCluster opens the Lustre ports from it and, for EFA, registers each group that configures LNet over EFA as EFA
clients (Slurm: its node set-up mounts over EFA; EKS: its OnCreate lifecycle configures LNet over EFA and the FSx CSI
driver, add_lustre_volume below, mounts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from aws_cdk import Fn, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3 as s3

from ...capacity import CapacityKind, subnet_label
from ...eks import GpuEksCluster
from ...health import NcclCheckSpec
from ...hyperpod import LUSTRE_MOUNT_POINT, HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from ...hyperpod.cluster import HYPERPOD_DEFAULT_KUBERNETES_VERSION
from ...hyperpod.eks_dependencies import HyperPodEksDependencies
from ...hyperpod.types import hyperpod_type
from ...networking import EfaSecurityGroup
from .. import _health_wiring as _health
from .._hyperpod_rules import HYPERPOD_EKS_VOLUME, check_hyperpod_storage
from ..options import HyperPodOptions, HyperPodOrchestration, PlatformStorage
from ._base import Backend, BackendResult, Unsupported, nccl_image_unsupported, slurm_topology_unsupported
from .eks import eks_outputs, eks_scraper, gpu_eks_cluster

if TYPE_CHECKING:
    from ...storage import LustreFileSystem
    from ..platform import TrainingPlatform


class _Common(TypedDict):
    """What every HyperPodCluster of the platform takes."""

    vpc: ec2.IVpc
    subnets: list[ec2.ISubnet]
    file_system: LustreFileSystem | None
    access_logs_bucket: s3.IBucket | None
    efa_security_group: EfaSecurityGroup
    removal_policy: RemovalPolicy


class HyperPodBackend:
    """:class:`~fmconstructs.platform.HyperPodOptions` -> Amazon SageMaker HyperPod (Slurm or EKS)."""

    backend = Backend.HYPERPOD
    unsupported: tuple[Unsupported, ...] = (
        Unsupported(
            "capacity",
            lambda c: type(c.capacity).__name__ if c.capacity.kind is not CapacityKind.ON_DEMAND else None,
            "OnDemand with HyperPod (HyperPod takes no EC2 reservation; give a SageMaker training plan as "
            "HyperPodOptions(capacity=HyperPodCapacity.training_plan(...)))",
        ),
        Unsupported(
            "services_subnet",
            lambda c: subnet_label(c.services_subnet) if c.services_subnet is not None else None,
            "None with HyperPod (HyperPodCluster takes one VpcConfig for every instance group); PcsOptions, "
            "ParallelClusterOptions or EksOptions take it",
        ),
        nccl_image_unsupported("HyperPod"),
        slurm_topology_unsupported(
            "False with HyperPodOptions: HyperPod applies its own topology (SageMaker Developer Guide "
            "sagemaker-hyperpod-topology; fmconstructs writes none there)"
        ),
        Unsupported(
            "capacity_block_events",
            lambda c: "PlatformCapacityEvents" if c.capacity_events is not None else None,
            "True or False with HyperPodOptions: HyperPod's capacity is On-Demand or a training plan "
            "(HyperPodOptions.capacity), so there are no Capacity Block events to act on",
        ),
        Unsupported(
            "health.nccl",
            lambda c: c.health.nccl if c.health is not None and isinstance(c.health.nccl, NcclCheckSpec) else None,
            "None or False with HyperPod (its InstanceConnectivity deep health check tests the fabric)",
        ),
    )
    services: tuple[str, ...] = ()

    def check(self, platform: TrainingPlatform, options: HyperPodOptions, storage: PlatformStorage | None) -> None:
        """A type SageMaker HyperPod accepts; HyperPod's storage rules."""
        hyperpod_type("instance_type", platform.instance_spec.instance_type)
        check_hyperpod_storage(options, storage)

    def build(self, platform: TrainingPlatform, options: HyperPodOptions) -> BackendResult:
        eks_cluster: GpuEksCluster | None = None
        if options.orchestrator is HyperPodOrchestration.SLURM:
            efa = EfaSecurityGroup(
                platform,
                "EfaSecurityGroup",
                vpc=platform.vpc,
                description="HyperPod nodes: EFA within the group, HTTPS out",
            )
        else:
            version = options.eks_version or eks.KubernetesVersion.of(HYPERPOD_DEFAULT_KUBERNETES_VERSION)
            eks_cluster = gpu_eks_cluster(platform, "EksCluster", version, options.admin_roles, None, None)
            efa = eks_cluster.efa_security_group
        file_system = platform._file_system(efa)
        gpu = HyperPodInstanceGroup(
            name=options.gpu_group_name,
            instance_type=platform.instance_spec.instance_type,
            nodes=platform.nodes,
            capacity=options.capacity,
            extra_ebs_gib=options.extra_ebs_gib,
            efa_interfaces_for_lustre=options.efa_interfaces_for_lustre,
        )
        common: _Common = {
            "vpc": platform.vpc,
            "subnets": [platform.subnet],
            "file_system": file_system,
            "access_logs_bucket": platform.access_logs_target(),
            "efa_security_group": efa,
            "removal_policy": options.removal_policy,
        }
        if eks_cluster is None:
            result = _slurm(platform, options, gpu, common)
        else:
            result = _on_eks(platform, eks_cluster, gpu, common)
        cluster = result.cluster
        assert isinstance(cluster, HyperPodCluster)
        result.outputs.update(
            {
                "HyperPodClusterArn": (cluster.cluster_arn, "SageMaker HyperPod cluster ARN"),
                "HyperPodClusterName": (cluster.cluster_name, "aws sagemaker describe-cluster --cluster-name <name>"),
                "ClusterHealthCommand": (
                    Fn.join("", ["aws sagemaker list-cluster-nodes --cluster-name ", cluster.cluster_name]),
                    "Node status per instance group (or fmconstructs.hyperpod.describe_cluster_health)",
                ),
            }
        )
        return result


def _slurm(
    platform: TrainingPlatform, options: HyperPodOptions, gpu: HyperPodInstanceGroup, common: _Common
) -> BackendResult:
    groups = [HyperPodInstanceGroup(name="controller", instance_type=options.controller_instance_type, nodes=1)]
    login: HyperPodInstanceGroup | None = None
    if options.login_instance_type is not None:
        login = HyperPodInstanceGroup(name="login", instance_type=options.login_instance_type, nodes=1)
        groups.append(login)
    cluster = HyperPodCluster(
        platform,
        "Cluster",
        orchestrator=HyperPodOrchestrator.slurm(
            controller_group="controller",
            login_group="login" if options.login_instance_type is not None else None,
        ),
        instance_groups=[*groups, gpu],
        base_config_dir=options.base_config_dir,
        prometheus_workspace=platform.prometheus_workspace,
        mount_point=platform.mount_point or LUSTRE_MOUNT_POINT,
        node_health=_health.hyperpod_node_health(platform),
        **common,
    )
    result = BackendResult(
        cluster=cluster, security_group=common["efa_security_group"], node_group=gpu, login_node_group=login
    )
    if cluster.login_command is not None:
        node = "login" if options.login_instance_type is not None else "controller"
        result.outputs["LoginCommand"] = (
            cluster.login_command,
            f"Opens a shell on the {node} node with Session Manager (as root: sudo su - ubuntu); then "
            f"sbatch -p {options.gpu_group_name} job.sh",
        )
    return result


def _on_eks(
    platform: TrainingPlatform, eks_cluster: GpuEksCluster, gpu: HyperPodInstanceGroup, common: _Common
) -> BackendResult:
    cluster = HyperPodCluster(
        platform, "Cluster", orchestrator=HyperPodOrchestrator.eks(eks_cluster), instance_groups=[gpu], **common
    )
    result = BackendResult(
        cluster=cluster, security_group=common["efa_security_group"], node_group=gpu, eks_cluster=eks_cluster
    )
    # The NVIDIA and EFA device plugins once: GpuEksCluster's (the dependencies chart's own are off,
    # eks_dependencies.dependencies_values), with the DCGM exporter and the FSx CSI driver; add_dependent below
    # registers the ml. types with them.
    eks_cluster.add_gpu_addons()
    assert platform._hyperpod_chart is not None  # resolved (or refused) before the platform was built
    dependencies = HyperPodEksDependencies(
        platform, "HyperPodDependencies", cluster=eks_cluster, chart=platform._hyperpod_chart
    )
    dependencies.add_dependent(cluster)
    result.hyperpod_dependencies = dependencies
    if common["file_system"] is not None:
        eks_cluster.add_lustre_volume("FsxVolume", common["file_system"], name=HYPERPOD_EKS_VOLUME)
        result.outputs["VolumeClaim"] = (
            f"default/{HYPERPOD_EKS_VOLUME}",
            "PersistentVolumeClaim (namespace/name) that pods mount for the file system",
        )
    result.scraper = eks_scraper(platform, eks_cluster)
    result.outputs.update(eks_outputs(eks_cluster))
    return result
