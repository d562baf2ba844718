"""SageMaker HyperPod backend: :class:`HyperPodCluster` (``AWS::SageMaker::Cluster``) with Slurm or EKS
orchestration, deep health checks and automatic node recovery by default, and :func:`describe_cluster_health`.

Floor: a backend beside ``pcs`` and ``eks``; uses catalog, networking, storage, bootstrap (never ``pcs``). The EKS
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
from .lifecycle import ON_CREATE, ON_CREATE_SCRIPT, PROVISIONING_PARAMETERS, slurm_provisioning_parameters
from .types import (
    DEFAULT_DEEP_HEALTH_CHECKS,
    HYPERPOD_INSTANCE_TYPES,
    DeepHealthCheck,
    HyperPodCapacity,
    HyperPodInstanceGroup,
    NodeRecovery,
    is_accelerated,
)

__all__ = [
    "DEFAULT_DEEP_HEALTH_CHECKS",
    "HYPERPOD_EKS_AUTHENTICATION_MODES",
    "HYPERPOD_INSTANCE_TYPES",
    "HYPERPOD_KUBERNETES_VERSIONS",
    "INSTANCE_ROLE_MANAGED_POLICY",
    "KUBERNETES_VERSION_WARNING",
    "LIFECYCLE_PREFIX",
    "ON_CREATE",
    "ON_CREATE_SCRIPT",
    "PROVISIONING_PARAMETERS",
    "ClusterHealth",
    "DeepHealthCheck",
    "GroupHealth",
    "HyperPodCapacity",
    "HyperPodCluster",
    "HyperPodInstanceGroup",
    "HyperPodOrchestrator",
    "NodeHealth",
    "NodeRecovery",
    "OrchestratorKind",
    "describe_cluster_health",
    "is_accelerated",
    "slurm_provisioning_parameters",
]
