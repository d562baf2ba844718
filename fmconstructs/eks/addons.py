"""GPU add-ons for EKS: pinned Helm charts, the values fmconstructs sets, and the FSx for Lustre CSI add-on.

Every chart is pinned (:class:`HelmChartPin`). Upgrade path: read the chart's release notes, change the ``version`` of
its pin below (or pass ``version=`` to the ``add_*`` method for one cluster), run the tests (they check the values we
set against the keys each chart documents), ``cdk diff`` and deploy; the kubectl handler runs ``helm upgrade``.
Values are built by pure functions so that tests can check them without synthesizing a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The taint GPU node groups carry by default; every GPU add-on tolerates it.
GPU_TAINT_KEY = "nvidia.com/gpu"

#: Node labels set on GPU node groups (see :mod:`fmconstructs.eks.node_group`).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"

#: The metrics port of the DCGM exporter (chart default, dcgm-exporter deployment/values.yaml).
DCGM_EXPORTER_PORT = 9400


@dataclass(frozen=True)
class HelmChartPin:
    """A chart at a pinned version: where it comes from and where it is installed."""

    chart: str
    repository: str
    version: str
    namespace: str
    release: str

    def with_version(self, version: str | None) -> HelmChartPin:
        """This pin at another version (None keeps it)."""
        if version is None:
            return self
        return HelmChartPin(self.chart, self.repository, version, self.namespace, self.release)


# Sources: each chart's repository (aws-facts.md section 7). Versions verified to exist in public use (EKS blueprints,
# terraform-aws-eks-blueprints patterns) at the time of writing.
NVIDIA_DEVICE_PLUGIN = HelmChartPin(
    chart="nvidia-device-plugin",
    repository="https://nvidia.github.io/k8s-device-plugin",
    version="0.17.1",
    namespace="nvidia-device-plugin",
    release="nvidia-device-plugin",
)
EFA_DEVICE_PLUGIN = HelmChartPin(
    chart="aws-efa-k8s-device-plugin",
    repository="https://aws.github.io/eks-charts",
    version="v0.5.7",  # eks-charts versions carry a leading "v"
    namespace="kube-system",
    release="aws-efa-k8s-device-plugin",
)
DCGM_EXPORTER = HelmChartPin(
    chart="dcgm-exporter",
    repository="https://nvidia.github.io/dcgm-exporter/helm-charts",
    version="4.6.0",
    namespace="dcgm-exporter",
    release="dcgm-exporter",
)
#: NVIDIA's DRA driver: ComputeDomains (IMEX channels across an NVLink domain) for P6e-GB200 UltraServers.
NVIDIA_DRA_DRIVER = HelmChartPin(
    chart="nvidia-dra-driver-gpu",
    repository="https://helm.ngc.nvidia.com/nvidia",
    version="25.8.0",
    namespace="nvidia-dra-driver-gpu",
    release="nvidia-dra-driver-gpu",
)

#: The EKS managed add-on name of the FSx for Lustre CSI driver. Its version defaults to the EKS default for the
#: cluster's Kubernetes version (list them with ``aws eks describe-addon-versions --addon-name aws-fsx-csi-driver``)
#: because add-on builds are tied to Kubernetes versions; pin one with ``add_fsx_csi_driver(addon_version=...)``.
FSX_CSI_ADDON_NAME = "aws-fsx-csi-driver"


def gpu_tolerations(extra: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Tolerations for pods that must run on tainted GPU nodes."""
    return [
        {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        *(dict(t) for t in extra),
    ]


def nvidia_device_plugin_values(*, efa_plugin: bool = True, gpu_feature_discovery: bool = True) -> dict[str, Any]:
    """Values for ``nvidia-device-plugin`` (keys from k8s-device-plugin deployments/helm/.../values.yaml).

    - ``mofedEnabled: false`` when the EFA device plugin runs: the nodes have EFA, not Mellanox OFED, and the plugin
      must not look for MOFED devices (aws-facts section 7).
    - ``gfd.enabled``: GPU feature discovery labels (``nvidia.com/gpu.product``, ``nvidia.com/gpu.clique`` that the
      DRA driver's ComputeDomains need on P6e-GB200).
    - Runs only on GPU nodes (``nvidia.com/gpu.present=true``, set by the node groups) and tolerates the GPU taint.
    """
    values: dict[str, Any] = {
        "failOnInitError": True,
        "deviceListStrategy": "envvar",
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
        "gfd": {"enabled": gpu_feature_discovery},
    }
    if efa_plugin:
        values["mofedEnabled"] = False
    return values


def efa_device_plugin_values(instance_types: Sequence[str]) -> dict[str, Any]:
    """Values for ``aws-efa-k8s-device-plugin`` (keys from eks-charts stable/aws-efa-k8s-device-plugin/values.yaml).

    The chart's own instance list lags EC2 launches (p6-b200/p6-b300 are missing from older versions), so the list is
    set to the cluster's EFA instance types; the plugin also runs only where ``vpc.amazonaws.com/efa.present=true``.
    """
    if not instance_types:
        raise ValueError("efa_device_plugin_values needs at least one instance type")
    return {
        "supportedInstanceLabels": {
            "keys": ["node.kubernetes.io/instance-type"],
            "values": sorted(set(instance_types)),
        },
        "nodeSelector": {EFA_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
    }


def dcgm_exporter_values(*, service_monitor: bool = False, port: int = DCGM_EXPORTER_PORT) -> dict[str, Any]:
    """Values for ``dcgm-exporter`` (keys from dcgm-exporter deployment/values.yaml).

    The metrics endpoint is ready for scraping: a ClusterIP Service on ``port`` with ``prometheus.io/*`` annotations
    on the Service and the pods (for annotation-based scrapers such as the Amazon Managed Service for Prometheus
    collector). ``serviceMonitor`` stays off unless asked for, because it needs the Prometheus Operator CRDs.
    """
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": "/metrics"}
    return {
        "service": {"enable": True, "type": "ClusterIP", "port": port, "annotations": annotations},
        "podAnnotations": annotations,
        "serviceMonitor": {"enabled": service_monitor},
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
    }


def nvidia_dra_driver_values() -> dict[str, Any]:
    """Values for ``nvidia-dra-driver-gpu``: ComputeDomains only, GPUs stay with the device plugin.

    ``nvidiaDriverRoot: /`` because the EKS AL2023 NVIDIA AMIs install the driver on the host;
    ``resources.gpus.enabled: false`` so that whole GPUs are advertised by the device plugin alone.
    """
    return {
        "nvidiaDriverRoot": "/",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {"tolerations": gpu_tolerations()},
    }
