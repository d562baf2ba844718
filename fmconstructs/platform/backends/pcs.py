"""The PCS backend of :class:`~fmconstructs.platform.TrainingPlatform`: a :class:`~fmconstructs.pcs.PcsCluster` with a
login node group, the GPU node group and its queue, collectors through
:func:`~fmconstructs.observability.pcs.monitor_pcs_cluster`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...capacity import UltraServerCapacityBlock
from ...observability.pcs import monitor_pcs_cluster
from ...pcs import FileSystemMount, PcsCluster, PcsLoginNodeGroup
from .. import _health_wiring as _health
from ..options import PcsOptions, PlatformStorage
from ..scheduling import job_warning_needs_login_nodes
from ._base import (
    Backend,
    BackendResult,
    Unsupported,
    nccl_image_unsupported,
    slurm_teams_unsupported,
    slurm_topology_unsupported,
    storage_mount_point,
)

if TYPE_CHECKING:
    from ..platform import TrainingPlatform


class PcsBackend:
    """:class:`~fmconstructs.platform.PcsOptions` -> AWS PCS."""

    backend = Backend.PCS
    unsupported: tuple[Unsupported, ...] = (
        nccl_image_unsupported("PCS"),
        slurm_teams_unsupported("PCS (PcsOptions)"),
        slurm_topology_unsupported(
            "False with PcsOptions: PCS configures the topology plugin itself (topology/tree on a queue: PCS User "
            "Guide 'Network topology-aware scheduling in AWS PCS'; topology/block for UltraServer Capacity Blocks: "
            "'Configure UltraServer instances') and accepts no TopologyPlugin custom setting; fmconstructs does not "
            "yet turn PCS's own topology on (how a queue enables it is UNCONFIRMED)"
        ),
    )
    services: tuple[str, ...] = ("the PCS controller's network interface",)

    def check(self, platform: TrainingPlatform, options: PcsOptions, storage: PlatformStorage | None) -> None:
        """The job warning needs a login node (the Local Zone controller rule is placement's)."""
        events = platform.capacity_event_options
        job_warning_needs_login_nodes(
            job_warning=events.job_warning if events is not None else None, login_nodes=options.login_nodes
        )

    def build(self, platform: TrainingPlatform, options: PcsOptions) -> BackendResult:
        cluster = PcsCluster(
            platform,
            "Cluster",
            vpc=platform.vpc,
            subnet=platform.services_subnet,  # the controller's; login nodes default to it, GPU nodes get subnet below
            slurm_version=options.slurm_version,
            # PCS UltraServer node groups need the IMEX prolog (PcsCluster enable_imex).
            enable_imex=isinstance(platform.capacity, UltraServerCapacityBlock),
            scale_down_idle_time=options.scale_down_idle_time,
            size=options.size,
            accounting=options.accounting,
            accounting_purge_time_days=options.accounting_purge_time_days,
            removal_policy=options.removal_policy,
            node_health=_health.pcs_node_health(platform),
        )
        # PCS GPU node groups always use the cluster's EFA group: the file system joins it.
        result = BackendResult(cluster=cluster, security_group=cluster.efa_security_group)
        file_system = platform._file_system(cluster.efa_security_group)
        mounts = [FileSystemMount(file_system, storage_mount_point(platform))] if file_system is not None else []
        login: PcsLoginNodeGroup | None = None
        if options.login_nodes:
            login = cluster.add_login_node_group(
                "Login",
                ami=options.login_ami or options.ami,
                instance_type=options.login_instance_type,
                nodes=options.login_nodes,
                mounts=mounts,
            )
        result.login_node_group = login
        gpu = cluster.add_gpu_node_group(
            "Gpu",
            instance_type=platform.instance_spec.instance_type,
            ami=options.ami,
            capacity=platform.capacity,
            max_nodes=platform.nodes,
            subnet=platform.subnet,
            mounts=mounts,
            instance_health_checks=options.instance_health_checks,
            node_lifecycle_actions=options.node_lifecycle_actions,
        )
        result.node_group = gpu
        result.queue = gpu.add_queue("Queue", queue_name=options.queue_name)
        _health.pcs_nccl(platform, options, login)
        if platform.prometheus_workspace is not None:
            monitor_pcs_cluster(
                cluster,
                platform.prometheus_workspace,
                cluster_label=platform.cluster_label,
                exporter_source=options.exporter_source,
            )
        result.outputs.update(_outputs(cluster, gpu.find_instances_command, options))
        return result


def _outputs(cluster: PcsCluster, gpu_nodes_command: str, options: PcsOptions) -> dict[str, tuple[str, str]]:
    outputs = {
        "ClusterId": (cluster.cluster_id, "AWS PCS cluster id (aws pcs get-cluster --cluster-identifier <id>)"),
        "SlurmControllerEndpointCommand": (
            cluster.slurm_controller_endpoint_command,
            "Prints the Slurm controller's private address and port",
        ),
        "GpuNodesCommand": (gpu_nodes_command, "Lists the GPU node group's running instances"),
    }
    if cluster.login_command is not None:
        outputs["LoginCommand"] = (
            cluster.login_command,
            f"Opens a shell on a login node with Session Manager; then sbatch -p {options.queue_name} job.sh",
        )
    return outputs
