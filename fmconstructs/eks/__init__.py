"""Amazon EKS for GPU training: the cluster, EFA GPU node groups, pinned GPU add-ons and FSx for Lustre volumes.

``versions`` (Kubernetes version, kubectl layer) -> ``cluster`` (:class:`GpuEksCluster`) -> ``node_group``
(:class:`GpuNodeGroup`) -> ``addons`` (chart pins and values) and ``manifests`` (PV/PVC, ComputeDomain).
"""

from .addons import (
    DCGM_EXPORTER,
    EFA_DEVICE_PLUGIN,
    FSX_CSI_ADDON_NAME,
    HYPERPOD_NODE_HEALTH_TOLERATION,
    INSTANCE_TYPE_LABEL,
    NVIDIA_DEVICE_PLUGIN,
    NVIDIA_DRA_DRIVER,
    ChartSource,
    HelmChartPin,
    check_hyperpod_instance_types,
    dcgm_exporter_values,
    efa_device_plugin_values,
    nvidia_device_plugin_values,
    nvidia_dra_driver_values,
)
from .cluster import ALL_CONTROL_PLANE_LOGS, EksWarning, GpuAddons, GpuEksCluster, SystemNodeGroupOptions
from .manifests import compute_domain_manifest, lustre_static_volume_manifests
from .node_group import GpuNodeGroup, GpuNodeGroupOptions, LustreClient, eks_ami_type, eks_capacity_type
from .scheduling import KueueScheduling, render_sample_training_job
from .versions import DEFAULT_KUBERNETES_VERSION, MIN_ULTRASERVER_VERSION, kubectl_layer_for

__all__ = [
    "ALL_CONTROL_PLANE_LOGS",
    "DCGM_EXPORTER",
    "DEFAULT_KUBERNETES_VERSION",
    "EFA_DEVICE_PLUGIN",
    "FSX_CSI_ADDON_NAME",
    "HYPERPOD_NODE_HEALTH_TOLERATION",
    "INSTANCE_TYPE_LABEL",
    "MIN_ULTRASERVER_VERSION",
    "NVIDIA_DEVICE_PLUGIN",
    "NVIDIA_DRA_DRIVER",
    "ChartSource",
    "EksWarning",
    "GpuAddons",
    "GpuEksCluster",
    "GpuNodeGroup",
    "GpuNodeGroupOptions",
    "HelmChartPin",
    "KueueScheduling",
    "LustreClient",
    "SystemNodeGroupOptions",
    "check_hyperpod_instance_types",
    "compute_domain_manifest",
    "dcgm_exporter_values",
    "efa_device_plugin_values",
    "eks_ami_type",
    "eks_capacity_type",
    "kubectl_layer_for",
    "lustre_static_volume_manifests",
    "nvidia_device_plugin_values",
    "nvidia_dra_driver_values",
    "render_sample_training_job",
]
