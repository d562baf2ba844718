"""GPU add-ons for EKS: pinned Helm charts, the values fmconstructs sets, and the FSx for Lustre CSI add-on.

Every chart is pinned (:class:`HelmChartPin`). Upgrade path: read the chart's release notes, change the ``version`` of
its pin below (or pass ``version=`` to the ``add_*`` method for one cluster), run the tests (they check the values we
set against the keys each chart documents), ``cdk diff`` and deploy; the kubectl handler runs ``helm upgrade``.
Values are built by pure functions so that tests can check them without synthesizing a cluster.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Token

from .._validate import check_bool, check_count, check_str, check_str_sequence
from ..errors import is_token
from ._names import check_label_value

#: A chart or add-on version as Helm and EKS take it: one word without whitespace ("0.17.1", "v0.5.30",
#: "v1.5.1-eksbuild.1"). Neither API documents a pattern; whitespace (a trailing newline) never names a version.
_VERSION = re.compile(r"\S+")


def check_version(parameter: str, version: object) -> Any:
    """None (the pinned default) or a version string without whitespace; tokens pass."""
    if version is None:
        return None
    return check_str(parameter, version, pattern=_VERSION, allowed="a version string without whitespace, e.g. '0.17.1'")


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
        check_version("version", version)
        if version is None:
            return self
        return HelmChartPin(self.chart, self.repository, version, self.namespace, self.release)


# Sources: each chart's repository (aws-facts.md section 7). Versions verified to exist in public use (EKS blueprints,
# terraform-aws-eks-blueprints patterns) at the time of writing; the EFA device plugin and DRA driver pins below name
# where each version was seen.
NVIDIA_DEVICE_PLUGIN = HelmChartPin(
    chart="nvidia-device-plugin",
    repository="https://nvidia.github.io/k8s-device-plugin",
    version="0.17.1",
    namespace="nvidia-device-plugin",
    release="nvidia-device-plugin",
)
#: The EFA device plugin. The EKS User Guide "ml-eks-nvidia-ultraserver" (P6e-GB200) requires chart 0.5.14 or later;
#: v0.5.7 shipped plugin image v0.5.4. v0.5.30 (appVersion/plugin image v0.5.20) is the newest entry of
#: ``aws-efa-k8s-device-plugin`` in the eks-charts index (https://aws.github.io/eks-charts/index.yaml, aws/eks-charts
#: gh-pages branch, index generated 2026-08-03) and the ``version`` of stable/aws-efa-k8s-device-plugin/Chart.yaml on
#: master (commit "Adding efa release 0.5.20" and later). Index versions carry a leading "v" (v0.5.14 ... v0.5.30).
EFA_DEVICE_PLUGIN = HelmChartPin(
    chart="aws-efa-k8s-device-plugin",
    repository="https://aws.github.io/eks-charts",
    version="v0.5.30",
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
#: NVIDIA's DRA driver: ComputeDomains (IMEX channels across an NVLink domain) for P6e-GB200 UltraServers. 25.8.0 is
#: the version the EKS User Guide "ml-eks-nvidia-ultraserver" installs (``helm install ... --version="25.8.0"``, from
#: https://helm.ngc.nvidia.com/nvidia; its components table asks for 25.8.0+); NVIDIA/k8s-dra-driver-gpu tag v25.8.0
#: has ``version: "25.8.0"`` in deployments/helm/nvidia-dra-driver-gpu/Chart.yaml.
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
    check_bool("efa_plugin", efa_plugin)
    check_bool("gpu_feature_discovery", gpu_feature_discovery)
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
    Each type is a value of the ``node.kubernetes.io/instance-type`` label, so it must be a Kubernetes label value; a
    bare ``str`` is refused (it would be read character by character).
    """
    types = check_str_sequence("instance_types", instance_types, item=check_label_value, min_items=1)
    return {
        "supportedInstanceLabels": {
            "keys": ["node.kubernetes.io/instance-type"],
            "values": sorted(set(types)),
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
    check_bool("service_monitor", service_monitor)
    port = check_count("port", port, minimum=1, maximum=65535)
    port_text = Token.as_string(port) if is_token(port) else str(port)
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": port_text, "prometheus.io/path": "/metrics"}
    return {
        "service": {"enable": True, "type": "ClusterIP", "port": port, "annotations": annotations},
        "podAnnotations": annotations,
        "serviceMonitor": {"enabled": service_monitor},
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
    }


#: Node affinity of the DRA kubelet plugin (EKS User Guide "ml-eks-nvidia-ultraserver" ``dra-values.yaml``): nodes
#: labelled ``nvidia.com/gpu.present=true``, which every GPU node group of :mod:`fmconstructs.eks.node_group` is.
DRA_KUBELET_PLUGIN_AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}]}
            ]
        }
    }
}


def nvidia_dra_driver_values() -> dict[str, Any]:
    """Values for ``nvidia-dra-driver-gpu``: ComputeDomains only, GPUs stay with the device plugin.

    These are the values of the EKS User Guide "ml-eks-nvidia-ultraserver" (``dra-values.yaml``,
    https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html):

    - ``resources.gpus.enabled: false`` (experimental GPU allocation off: whole GPUs come from the device plugin) and
      ``resources.computeDomains.enabled: true``.
    - ``controller: {nodeSelector: null, affinity: null, tolerations: []}``: the chart's controller (values.yaml of
      tag v25.8.0) requires a ``node-role.kubernetes.io/control-plane`` node and tolerates only that taint; EKS has
      no such node, so without these overrides the controller stays Pending and ComputeDomains never become ready.
      ``null`` removes the chart default in Helm; :meth:`GpuEksCluster._chart` keeps the nulls in the template
      (aws-cdk-lib drops ``None`` when it serializes values).
    - ``kubeletPlugin.affinity``: only nodes labelled ``nvidia.com/gpu.present=true`` (the chart default also accepts
      NFD PCI/CPU-vendor labels), and ``kubeletPlugin.tolerations`` for the GPU taint (plus ``CriticalAddonsOnly``).

    ``nvidiaDriverRoot: /`` (the chart default, set explicitly) because the EKS AL2023 NVIDIA AMIs install the driver
    on the host.
    """
    return {
        "nvidiaDriverRoot": "/",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "controller": {"nodeSelector": None, "affinity": None, "tolerations": []},
        "kubeletPlugin": {"affinity": copy.deepcopy(DRA_KUBELET_PLUGIN_AFFINITY), "tolerations": gpu_tolerations()},
    }


def contains_null(values: Any) -> bool:
    """True when a Helm values tree holds ``None`` anywhere (a key Helm must delete from the chart defaults)."""
    if values is None:
        return True
    if isinstance(values, Mapping):
        return any(contains_null(v) for v in values.values())
    if isinstance(values, (list, tuple)):
        return any(contains_null(v) for v in values)
    return False
