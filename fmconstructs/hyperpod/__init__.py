"""SageMaker HyperPod backend: :class:`HyperPodCluster` (``AWS::SageMaker::Cluster``) with Slurm or EKS
orchestration, deep health checks and automatic node recovery by default, and :func:`describe_cluster_health`.

Slurm is configured by HyperPod itself (API-driven: ``Orchestrator.Slurm`` and each group's ``SlurmConfig``; the
default) or by HyperPod's published lifecycle scripts (a ``base_config_dir``; ``provisioning_parameters.json``).

Floor: a backend beside ``pcs`` and ``eks``; uses catalog, networking, storage, bootstrap, observability (never
``pcs``). The EKS
orchestrator takes an fmconstructs ``GpuEksCluster`` by duck type (its ``cluster_arn``).
"""

from .cluster import (
    HYPERPOD_EKS_AUTHENTICATION_MODES,
    HYPERPOD_KUBERNETES_VERSIONS,
    INSTANCE_ROLE_MANAGED_POLICY,
    KUBERNETES_VERSION_WARNING,
    LIFECYCLE_PREFIX,
    HyperPodCluster,
    HyperPodOrchestrator,
    OrchestratorKind,
)
from .health import ClusterHealth, GroupHealth, NodeHealth, describe_cluster_health
from .instance_group_options import (
    BatchSizeType,
    CapacityType,
    HyperPodKubernetesConfig,
    HyperPodScheduledUpdate,
    KubernetesTaint,
    TaintEffect,
    UpdateBatchSize,
)
from .lifecycle import (
    ON_CREATE,
    ON_CREATE_SCRIPT,
    ON_INIT_COMPLETE,
    ON_INIT_COMPLETE_SCRIPT,
    PROVISIONING_PARAMETERS,
    SETUP_SCRIPT,
    slurm_provisioning_parameters,
)
from .provisioning import AutoScalerType, HyperPodAutoScaling, NodeProvisioningMode, TieredCheckpointing
from .storage_rules import LUSTRE_MOUNT_POINT
from .types import (
    DEFAULT_DEEP_HEALTH_CHECKS,
    DEFAULT_SLURM_CONFIG_STRATEGY,
    HYPERPOD_INSTANCE_TYPES,
    DeepHealthCheck,
    HyperPodCapacity,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    NodeRecovery,
    SlurmConfigStrategy,
    SlurmConfiguration,
    SlurmNodeType,
    is_accelerated,
    is_gpu,
)

__all__ = [
    "DEFAULT_DEEP_HEALTH_CHECKS",
    "DEFAULT_SLURM_CONFIG_STRATEGY",
    "HYPERPOD_EKS_AUTHENTICATION_MODES",
    "HYPERPOD_INSTANCE_TYPES",
    "HYPERPOD_KUBERNETES_VERSIONS",
    "INSTANCE_ROLE_MANAGED_POLICY",
    "KUBERNETES_VERSION_WARNING",
    "LIFECYCLE_PREFIX",
    "LUSTRE_MOUNT_POINT",
    "ON_CREATE",
    "ON_CREATE_SCRIPT",
    "ON_INIT_COMPLETE",
    "ON_INIT_COMPLETE_SCRIPT",
    "PROVISIONING_PARAMETERS",
    "SETUP_SCRIPT",
    "AutoScalerType",
    "BatchSizeType",
    "CapacityType",
    "ClusterHealth",
    "DeepHealthCheck",
    "GroupHealth",
    "HyperPodAutoScaling",
    "HyperPodCapacity",
    "HyperPodCluster",
    "HyperPodInstanceGroup",
    "HyperPodKubernetesConfig",
    "HyperPodLustreMount",
    "HyperPodOrchestrator",
    "HyperPodScheduledUpdate",
    "KubernetesTaint",
    "NodeHealth",
    "NodeProvisioningMode",
    "NodeRecovery",
    "OrchestratorKind",
    "SlurmConfigStrategy",
    "SlurmConfiguration",
    "SlurmNodeType",
    "TaintEffect",
    "TieredCheckpointing",
    "UpdateBatchSize",
    "describe_cluster_health",
    "is_accelerated",
    "is_gpu",
    "slurm_provisioning_parameters",
]
