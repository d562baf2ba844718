"""How :class:`~fmconstructs.platform.TrainingPlatform` wires :class:`~fmconstructs.platform.PlatformHealth` into each
backend (see :mod:`fmconstructs.platform.health`): one function per place the platform calls."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack

from ..bootstrap import NodeBootstrap
from ..bootstrap.node_bootstrap import synthesizer_publishes_file_assets
from ..errors import WarningId, add_warning
from ..health import NcclCheckSpec, NodeHealthOptions, nccl_rule_group
from ..hyperpod import HyperPodCluster
from ..observability.rules import AlertThresholds, RuleGroup
from ..parallelcluster import ParallelCluster
from ..remediation import NodeRemediation, RemediationTarget
from .health import (
    add_remediation,
    parallelcluster_head_collectors,
    parallelcluster_head_steps,
    pcs_target,
    platform_nccl_spec,
    warn_pcs_nccl_skipped,
    wire_eks_nccl,
    wire_pcs_nccl,
)
from .options import (
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    Orchestrator,
    ParallelClusterOptions,
    PcsOptions,
    PlatformStorage,
)

if TYPE_CHECKING:
    from ..pcs import PcsLoginNodeGroup
    from .health import PlatformHealth
    from .platform import TrainingPlatform


def rule_groups(platform: TrainingPlatform) -> list[RuleGroup]:
    """The NCCL rule group for a new workspace when the platform runs the check (Slurm backends; EKS with an image)."""
    health = platform.health
    if health is None or platform.nccl_check is None:
        return []
    backend = platform.backend.value
    if backend not in ("pcs", "parallelcluster") and not (backend == "eks" and health.nccl_image is not None):
        return []
    return [nccl_rule_group(health.nccl_alerts)]


def alert_thresholds(platform: TrainingPlatform) -> AlertThresholds | None:
    """The new workspace's alert thresholds: the node checks' Xid policy, so that one
    ``NodeHealthOptions(xid_policy=...)`` moves an Xid for the checks, the alerts and remediation (the alerts carry
    the class's trigger). None (the defaults) without node-check options. An existing workspace keeps its own."""
    health = platform.health
    if health is None or health.node_checks is None:
        return None
    return AlertThresholds(xid_policy=health.node_checks.xid_policy)


def eks_node_checks(platform: TrainingPlatform) -> NodeHealthOptions | bool:
    """The EKS GPU node group's ``node_checks``: the platform's ``NodeHealthOptions`` (the checks a Slurm gate runs
    with them), or False when health or the node checks are off."""
    health = platform.health
    if health is None or health.node_checks is None or not health.node_checks.enabled:
        return False
    return health.node_checks


def pcs_node_health(platform: TrainingPlatform) -> NodeHealthOptions | None:
    """The PCS cluster's ``node_health``: off, with a warning, in a stack that publishes no file assets (the node
    set-up is then inline user data, and the checks with the mounts and collectors pass EC2's 16 KB)."""
    health = platform.health
    if health is None or health.node_checks is None:
        return None
    if not synthesizer_publishes_file_assets(Stack.of(platform)):
        add_warning(
            platform,
            WarningId.PLATFORM_HEALTH_SKIPPED,
            "Node-join checks are off: this stack's synthesizer publishes no file assets (e.g. a StackSetStack's), "
            "so the GPU nodes' set-up is inline user data, and the checks' scripts with the mounts and collectors "
            "exceed EC2's 16 KB. Bake the checks into the AMI, or deploy from a bootstrapped stack.",
        )
        return None
    return health.node_checks


def pcs_nccl(platform: TrainingPlatform, options: PcsOptions, login: PcsLoginNodeGroup | None) -> None:
    """The NCCL check on the login node group, or the warning that it is skipped."""
    health = platform.health
    if platform.nccl_check is not None:
        wire_pcs_nccl(login, platform.nccl_check, slurm_version=options.slurm_version.value)
    elif health is not None and health.nccl not in (None, False) and login is None and platform.file_system is not None:
        warn_pcs_nccl_skipped(platform)


def parallelcluster(
    platform: TrainingPlatform, cluster: ParallelCluster, gpu_bootstrap: NodeBootstrap, options: ParallelClusterOptions
) -> NodeBootstrap | None:
    """Node checks in the GPU queue's bootstrap; the head node's bootstrap (prolog dispatch, NCCL check and the
    collectors that publish its metrics), attached as the head node's OnNodeConfigured. Returns that bootstrap."""
    health = platform.health
    if health is None:
        return None
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", platform.node.id)[:51] or "platform"
    head = NodeBootstrap(platform, "HeadBootstrap", name=f"{name}-head")
    statements: list[Any] = []
    spec = platform.nccl_check
    workspace = platform.prometheus_workspace
    if spec is not None:
        if workspace is not None:
            statements = parallelcluster_head_collectors(
                head, workspace, cluster_name=cluster.cluster_name, instance_type=cluster.head_node.instance_type
            )
        parallelcluster_head_steps(head, cluster, spec)
    if health.node_checks is not None:
        cluster.enable_node_health(
            health.node_checks, queues=[options.queue_name], head_bootstrap=head, node_bootstrap=gpu_bootstrap
        )
    if head.is_empty:
        return None
    cluster.add_head_node_bootstrap(head, statements=statements)
    return head


def eks_nccl(platform: TrainingPlatform, cluster: Any, volume: Any, options: EksOptions) -> None:
    """The NCCL MPIJob on the storage claim when an image is given."""
    health, spec = platform.health, platform.nccl_check
    if health is None or spec is None or health.nccl_image is None:
        return
    manifest = wire_eks_nccl(
        platform,
        cluster,
        spec,
        image=health.nccl_image,
        instance_type=platform.instance_spec.instance_type,
        claim=options.volume_name,
        namespace=options.namespace,
    )
    manifest.node.add_dependency(volume)


def remediation(platform: TrainingPlatform) -> NodeRemediation | None:
    """The remediation handler with the backend's target (HyperPod on EKS: none, HyperPod recovers nodes itself)."""
    health, workspace = platform.health, platform.prometheus_workspace
    if health is None or health.remediation is None or workspace is None:
        return None
    if not synthesizer_publishes_file_assets(Stack.of(platform)):
        add_warning(
            platform,
            WarningId.PLATFORM_HEALTH_SKIPPED,
            "Node remediation is off: its handler is a Lambda function whose code is a file asset, and this stack's "
            f"synthesizer ({type(Stack.of(platform).synthesizer).__name__}, e.g. a StackSetStack's) publishes none. "
            "Deploy NodeRemediation in a bootstrapped stack of the account, or pass PlatformHealth(remediation=None).",
        )
        return None
    target: RemediationTarget | None = None
    if isinstance(platform.orchestrator, PcsOptions):
        target = pcs_target(
            platform, cluster=platform.cluster, login=platform.login_node_group, gpu=platform.node_group
        )
    elif isinstance(platform.orchestrator, ParallelClusterOptions):
        assert isinstance(platform.cluster, ParallelCluster)
        target = RemediationTarget.parallelcluster(cluster_name=platform.cluster.cluster_name)
    elif isinstance(platform.orchestrator, EksOptions):
        target = RemediationTarget.eks(cluster=platform.eks_cluster)
    elif _hyperpod_slurm(platform.orchestrator):
        cluster = platform.cluster
        assert isinstance(cluster, HyperPodCluster)
        target = RemediationTarget.hyperpod(cluster_name=cluster.cluster_name, cluster_arn=cluster.cluster_arn)
    return add_remediation(platform, health, workspace=workspace, target=target)


def _hyperpod_slurm(options: Orchestrator) -> bool:
    return isinstance(options, HyperPodOptions) and options.orchestrator is HyperPodOrchestration.SLURM


def hyperpod_node_health(platform: TrainingPlatform) -> NodeHealthOptions | None:
    """The HyperPod Slurm cluster's ``node_health``: the platform's node checks (the cluster runs them without DCGM
    on groups whose ``InstanceStress`` deep health check runs it), or None when health or the checks are off, and
    with ``base_config_dir`` (the published lifecycle scripts configure Slurm there; the checks run from the
    API-driven configuration's ``OnInitComplete``)."""
    health, options = platform.health, platform.orchestrator
    if health is None or health.node_checks is None or not health.node_checks.enabled:
        return None
    if isinstance(options, HyperPodOptions) and options.base_config_dir is not None:
        return None
    return health.node_checks


def nccl_spec(
    platform: TrainingPlatform, options: Orchestrator, health: PlatformHealth | None, storage: PlatformStorage | None
) -> NcclCheckSpec | None:
    """The NCCL check this platform runs (:func:`~fmconstructs.platform.health.platform_nccl_spec`)."""
    queue = getattr(options, "queue_name", None)
    return platform_nccl_spec(
        health,
        backend=platform.backend.value,
        nodes=platform.nodes,
        gpus_per_node=platform.instance_spec.gpu.count,
        mount_point=storage.mount_point if storage is not None else None,
        queue=queue if isinstance(options, PcsOptions | ParallelClusterOptions) else None,
        login_nodes=getattr(options, "login_nodes", 0),
        instance_type=platform.instance_spec.instance_type,
    )
