"""Each instance group's node set-up with HyperPod's API-driven Slurm configuration (``OnInitComplete``): the Lustre
mount, fmconstructs' collectors, the dcgm-exporter job mapping's Slurm pieces and the node checks
(:mod:`fmconstructs.hyperpod.node_health`), then ``setup_commands``; split out of :mod:`fmconstructs.hyperpod.cluster`.

Sources: :mod:`fmconstructs.hyperpod.slurm_scripts` (the job mapping's pieces and ``PrologFlags``),
:func:`~fmconstructs.observability.collection.node_collection_commands` (the collectors) and
:mod:`fmconstructs.hyperpod.storage_rules` (the mount point and EFA interfaces for Lustre).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2

from ..bootstrap import BootstrapDelivery, NodeBootstrap
from ..errors import WarningId, add_warning
from ..observability.collection import NodeLabels, node_collection_commands
from ..observability.job_mapping import JobMappingSpec
from ..observability.slurm_job_mapping import JOB_MAPPING_PROLOG_FLAGS
from ..observability.sources import ExporterSource
from ..storage import LustreFileSystemBase
from ..storage.lustre_clients import apply_lustre_client_plan, plan_lustre_client
from .node_health import NODE_HEALTH_STEP, NOHOLD_ON_PROLOG_FAIL, node_health_step
from .slurm_scripts import (
    PROLOG_FLAGS_STEP,
    SLURM_SCRIPTS_STEP,
    hyperpod_slurm_pieces,
    hyperpod_slurm_script_files,
    prolog_flags_commands,
)
from .storage_rules import LUSTRE_MOUNT_POINT, api_lustre_efa_interfaces
from .types import HyperPodInstanceGroup, HyperPodLustreMount, SlurmNodeType

if TYPE_CHECKING:
    from .cluster import HyperPodCluster


def api_group_bootstrap(
    cluster: HyperPodCluster,
    group: HyperPodInstanceGroup,
    file_system: LustreFileSystemBase | None,
    mount: HyperPodLustreMount | None,
    workspace: Any,
    source: ExporterSource | None,
    commands: Sequence[str],
    subnets: Sequence[ec2.ISubnet],
) -> NodeBootstrap:
    """One group's set-up with the API-driven configuration: Lustre mount, collectors, then ``setup_commands``."""
    bootstrap = NodeBootstrap(cluster, f"Bootstrap-{group.name}", delivery=BootstrapDelivery.INLINE)
    if file_system is not None and mount is HyperPodLustreMount.NODE_BOOTSTRAP:
        _add_lustre_client(cluster, bootstrap, group, file_system, subnets)
    node_type = cluster.orchestrator.slurm_node_type(group.name)
    slurm_states = node_type is SlurmNodeType.LOGIN or (
        node_type is SlurmNodeType.CONTROLLER and cluster.orchestrator.login_group is None
    )
    if workspace is not None and source is not None and (group.gpu or slurm_states):
        labels = NodeLabels(
            cluster=cluster.cluster_name_given or cluster.node.id,
            queue=(group.partition_name or group.name) if node_type is SlurmNodeType.COMPUTE else "login",
            node_group=group.name,
            instance_type=group.instance_type,
        )
        bootstrap.add_step(
            "observability",
            node_collection_commands(
                remote_write_url=workspace.remote_write_url,
                region=Stack.of(cluster).region,
                labels=labels,
                login_node=slurm_states,
                exporter_source=source,
                job_mapping=cluster.job_mapping if node_type is SlurmNodeType.COMPUTE and group.gpu else None,
            ),
        )
    job_mapping = cluster.job_mapping if workspace is not None and source is not None else None
    _add_slurm_scripts(cluster, bootstrap, group, node_type, job_mapping)
    if cluster.node_health is not None and node_type is SlurmNodeType.COMPUTE and group.gpu:
        health_commands, files = node_health_step(cluster.node_health, group, lustre_mount_point=cluster.mount_point)
        bootstrap.add_step(NODE_HEALTH_STEP, health_commands, files=files)
    if commands:
        bootstrap.add_commands(*commands)
    return bootstrap


def _add_lustre_client(
    cluster: HyperPodCluster,
    bootstrap: NodeBootstrap,
    group: HyperPodInstanceGroup,
    file_system: LustreFileSystemBase,
    subnets: Sequence[ec2.ISubnet],
) -> None:
    """The group's Lustre client from the one planner (:func:`~fmconstructs.storage.lustre_clients.plan_lustre_client`):
    the mount step ``lustre``, EFA rules and the registration against the 1,024 EFA connections. GPUDirect Storage
    follows the planner (a known, non-zero EFA count) and is off on groups without NVIDIA GPUs."""
    spec = group.instance_spec
    plan = plan_lustre_client(
        efa_enabled=file_system.efa_enabled,
        dns_name=file_system.dns_name,
        mount_name=file_system.mount_name,
        instance_spec=spec,
        max_nodes=group.nodes,
        efa_interfaces=api_lustre_efa_interfaces(group),
        mount_point=cluster.mount_point or LUSTRE_MOUNT_POINT,
        gpudirect_storage=None if group.gpu else False,
    )
    efa_interfaces = plan.efa_interfaces
    if file_system.efa_enabled and efa_interfaces != 0:
        cluster.lustre_efa_interfaces[group.name] = efa_interfaces
    if file_system.efa_enabled and group.gpu and spec is None and efa_interfaces is None:
        # The mount script decides on the node (2 EFA interfaces with several EFA devices, else 1:
        # storage.lustre_efa_interfaces): it may use EFA, but the count is not known here.
        add_warning(
            cluster,
            WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN,
            f"instance group {group.name!r} ({group.instance_type}) decides its EFA interfaces for Lustre on "
            "the node (the instance catalog does not hold its type): they are not counted against the file "
            "system's 1,024 EFA connections (set efa_interfaces_for_lustre, or register the type with "
            "fmconstructs.register_instance_type)",
        )
    # EFA rules both ways between the nodes' group and the file system's, then the registration (a known, non-zero
    # count); the bootstrap is the consumer, as for the groups whose commands HyperPod places (cluster_lustre).
    apply_lustre_client_plan(
        plan,
        file_system=file_system,
        consumer=bootstrap,
        bootstrap=bootstrap,
        step="lustre",
        efa_security_group=cluster.efa_security_group,
        open_efa_rules=True,
        subnets=subnets,
    )


def _add_slurm_scripts(
    cluster: HyperPodCluster,
    bootstrap: NodeBootstrap,
    group: HyperPodInstanceGroup,
    node_type: SlurmNodeType | None,
    job_mapping: JobMappingSpec | None,
) -> None:
    """The job mapping's pieces on a GPU compute group; on the controller group the ``PrologFlags`` merge (job
    mapping) and ``nohold_on_prolog_fail`` (prolog checks) in ``slurm.conf``
    (:mod:`fmconstructs.hyperpod.slurm_scripts`, :mod:`fmconstructs.hyperpod.node_health`)."""
    if node_type is SlurmNodeType.COMPUTE and group.gpu:
        pieces = hyperpod_slurm_pieces(job_mapping, cluster.app_metrics)
        if pieces:
            bootstrap.add_step(SLURM_SCRIPTS_STEP, files=hyperpod_slurm_script_files(pieces))
        return
    gpu_computes = any(
        g.gpu and cluster.orchestrator.slurm_node_type(g.name) is SlurmNodeType.COMPUTE for g in cluster.instance_groups
    )
    if node_type is not SlurmNodeType.CONTROLLER or not gpu_computes:
        return
    health = cluster.node_health
    nohold = [NOHOLD_ON_PROLOG_FAIL] if health is not None and health.prolog_checks else []
    flags = list(JOB_MAPPING_PROLOG_FLAGS) if job_mapping is not None else []
    if flags or nohold:
        bootstrap.add_step(PROLOG_FLAGS_STEP, prolog_flags_commands(flags, scheduler_parameters=nohold))
