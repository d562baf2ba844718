"""Platform: :class:`TrainingPlatform`, one construct that composes capacity, FSx for Lustre linked to S3, one
orchestrator (AWS PCS, AWS ParallelCluster, Amazon EKS or SageMaker HyperPod) and observability, sharing one EFA
security group between the GPU nodes and the file system. It sits above the backends (style: "Growing the house")."""

from .elastic import EksGpuCapacity
from .health import PlatformHealth
from .options import (
    DEFAULT_THROUGHPUT_MBPS_PER_TIB,
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    Orchestrator,
    ParallelClusterOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    StorageObjective,
)
from .platform import Backend, TrainingPlatform
from .scheduling import PlatformCapacityEvents

__all__ = [
    "DEFAULT_THROUGHPUT_MBPS_PER_TIB",
    "Backend",
    "EksGpuCapacity",
    "EksOptions",
    "HyperPodOptions",
    "HyperPodOrchestration",
    "Orchestrator",
    "ParallelClusterOptions",
    "PcsOptions",
    "PlatformCapacityEvents",
    "PlatformHealth",
    "PlatformObservability",
    "PlatformStorage",
    "StorageObjective",
    "TrainingPlatform",
]
