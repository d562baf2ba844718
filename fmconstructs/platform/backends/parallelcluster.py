"""The ParallelCluster backend of :class:`~fmconstructs.platform.TrainingPlatform`: a
:class:`~fmconstructs.parallelcluster.ParallelCluster` with one GPU queue, the platform's EFA group on every node, and
the GPU queue's node set-up (NVMe scratch, collectors, node checks) as its OnNodeConfigured action."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from ...bootstrap import NodeBootstrap
from ...compute.user_data import nvme_raid_commands
from ...errors import FmValidationError
from ...networking import EfaSecurityGroup
from ...observability.collection import NodeLabels, node_collection_commands
from ...observability.job_mapping import JobMappingSpec
from ...observability.slurm_job_mapping import enable_parallelcluster_job_mapping
from ...parallelcluster import (
    ComputeResource,
    CustomActionEvent,
    HeadNode,
    LoginNodePool,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
    head_node_instance_type_for,
    login_node_instance_type_for,
)
from ...parallelcluster.topology import TOPOLOGY_INSTANCE_TYPES
from .. import _health_wiring as _health
from ..options import ParallelClusterOptions, PlatformStorage
from ._base import (
    Backend,
    BackendResult,
    Unsupported,
    nccl_image_unsupported,
    storage_mount_point,
)

if TYPE_CHECKING:
    from ...storage import LustreFileSystem
    from ..platform import TrainingPlatform


class ParallelClusterBackend:
    """:class:`~fmconstructs.platform.ParallelClusterOptions` -> AWS ParallelCluster."""

    backend = Backend.PARALLELCLUSTER
    unsupported: tuple[Unsupported, ...] = (nccl_image_unsupported("ParallelCluster"),)
    services: tuple[str, ...] = ("the ParallelCluster head node",)

    def check(
        self, platform: TrainingPlatform, options: ParallelClusterOptions, storage: PlatformStorage | None
    ) -> None:
        """``slurm_topology`` needs a type EC2 describes the topology of (and not p6e-gb200: ParallelCluster's own)."""
        if platform.slurm_topology:
            slurm_topology_needs_a_topology_type(platform.instance_spec.instance_type)

    def build(self, platform: TrainingPlatform, options: ParallelClusterOptions) -> BackendResult:
        efa = EfaSecurityGroup(platform, "EfaSecurityGroup", vpc=platform.vpc)
        file_system = platform._file_system(efa)
        queue, cluster = _cluster(platform, options, efa, file_system)
        result = BackendResult(cluster=cluster, security_group=efa, node_group=queue, queue=queue)
        result.node_bootstrap, result.head_bootstrap = _bootstraps(platform, cluster, options)
        result.outputs.update(
            {
                "ClusterName": (cluster.cluster_name, "ParallelCluster cluster name (pcluster describe-cluster -n)"),
                "HeadNodePrivateIp": (cluster.head_node_private_ip, "Private IP address of the Slurm head node"),
                "ValidationMessages": (
                    cluster.validation_messages,
                    "ParallelCluster's configuration validation messages from the last create or update",
                ),
            }
        )
        return result


def _cluster(
    platform: TrainingPlatform,
    options: ParallelClusterOptions,
    efa: EfaSecurityGroup,
    file_system: LustreFileSystem | None,
) -> tuple[SlurmQueue, ParallelCluster]:
    spec = platform.instance_spec
    resource = ComputeResource(
        # ParallelCluster names: lowercase letters, digits and '-' (NameValidator); "p5en", "p6-b200" ...
        name=spec.instance_type.split(".")[0],
        instance_type=spec.instance_type,
        capacity=platform.capacity,
        max_nodes=platform.nodes,
    )
    queue = SlurmQueue(name=options.queue_name, subnets=[platform.subnet], compute_resources=[resource])
    cluster = ParallelCluster(
        platform,
        "Cluster",
        cluster_name=options.cluster_name,
        os=options.os,
        custom_ami=options.custom_ami,
        version=options.version,
        monitoring=options.monitoring,
        removal_policy=options.removal_policy,
        queue_update_strategy=options.queue_update_strategy,
        slurm_accounting=options.slurm_accounting,
        head_node=HeadNode(
            instance_type=options.head_node_instance_type or head_node_instance_type_for(spec.architecture),
            subnet=platform.services_subnet,
        ),
        login_nodes=(
            [
                LoginNodePool(
                    name="login",
                    instance_type=options.login_instance_type or login_node_instance_type_for(spec.architecture),
                    subnet=platform.services_subnet,
                    nodes=options.login_nodes,
                )
            ]
            if options.login_nodes
            else []
        ),
        queues=[queue],
        shared_storage=(
            [SharedLustre(file_system=file_system, mount_point=storage_mount_point(platform))]
            if file_system is not None
            else []
        ),
        # Every node joins the platform's EFA group, which is the file system's (one EFA group).
        node_security_group=efa,
    )
    return queue, cluster


def _bootstraps(
    platform: TrainingPlatform, cluster: ParallelCluster, options: ParallelClusterOptions
) -> tuple[NodeBootstrap, NodeBootstrap | None]:
    """The GPU queue's node-side set-up (NVMe RAID0 scratch, collectors) as its OnNodeConfigured action, and the head
    node's OnNodeConfigured bootstrap (prolog checks, NCCL check, collectors; None when empty)."""
    bootstrap = NodeBootstrap(platform, "GpuBootstrap", name=f"{_bootstrap_name(platform)}-gpu")
    bootstrap.add_step("nvme-scratch", nvme_raid_commands("/scratch"))
    statements: list[iam.PolicyStatement] = []
    workspace = platform.prometheus_workspace
    if workspace is not None:
        labels = NodeLabels(
            cluster=cluster.cluster_name, queue=options.queue_name, instance_type=platform.instance_spec.instance_type
        )
        bootstrap.add_step(
            "observability",
            node_collection_commands(
                remote_write_url=workspace.remote_write_url,
                region=Stack.of(platform).region,
                labels=labels,
                job_mapping=JobMappingSpec(),
            ),
        )
        statements.append(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.workspace_arn]))
    head = _health.parallelcluster(platform, cluster, bootstrap, options)
    if workspace is not None:
        # GPU series labelled hpc_job: the job mapping's prolog/epilog from the head node's OnNodeStart.
        enable_parallelcluster_job_mapping(cluster, JobMappingSpec(), event=CustomActionEvent.ON_NODE_START)
    if platform.slurm_topology:
        # Its own piece of the head node's OnNodeStart, after the job mapping's (before slurmctld starts).
        cluster.enable_slurm_topology()
    cluster.add_node_bootstrap(bootstrap, queues=[options.queue_name], statements=statements)
    return bootstrap, head


def slurm_topology_needs_a_topology_type(instance_type: str) -> None:
    """``slurm_topology=True``: a P5/P6 type DescribeInstanceTopology describes (:mod:`...parallelcluster.topology`);
    p6e-gb200 gets ParallelCluster's own topology/block without it."""
    if instance_type not in TOPOLOGY_INSTANCE_TYPES:
        raise FmValidationError(
            "slurm_topology",
            True,
            f"False with instance_type {instance_type}: fmconstructs writes topology/tree for "
            f"{', '.join(sorted(TOPOLOGY_INSTANCE_TYPES))} (p6e-gb200 clusters get ParallelCluster's own "
            "topology/block)",
        )


def _bootstrap_name(platform: TrainingPlatform) -> str:
    """A node bootstrap name (1-64 letters, digits, '.', '_' or '-') from the construct id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", platform.node.id)[:56] or "platform"
