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
from dataclasses import dataclass, field
from typing import Any, ClassVar

from aws_cdk import Token
from aws_cdk import aws_ecr as ecr

from .._validate import check_bool, check_construct, check_count, check_str, check_str_sequence
from .._validate_k8s import check_label_value
from ..catalog import supports_efa
from ..errors import FmTypeError, FmValidationError, is_token

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

#: The taint GPU nodes join with while their node checks run (``fmconstructs.io/node-checks=pending:NoSchedule``,
#: :mod:`fmconstructs.eks.health`); the GPU add-ons tolerate it, so device plugins and exporters run before it lifts.
NODE_CHECKS_TAINT_KEY = "fmconstructs.io/node-checks"

#: Node labels set on GPU node groups (see :mod:`fmconstructs.eks.node_group`).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"

#: The metrics port of the DCGM exporter (chart default, dcgm-exporter deployment/values.yaml).
DCGM_EXPORTER_PORT = 9400

#: The well-known node label whose value is the instance type. On SageMaker HyperPod nodes that joined the cluster it
#: holds the HyperPod (``ml.``) name, e.g. ``ml.p5en.48xlarge``: HyperPod's dependencies chart selects its device
#: plugins and health-monitoring agent with ``node.kubernetes.io/instance-type In [ml.g5.xlarge, ...,
#: ml.p5en.48xlarge, ...]`` (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/values.yaml`` and
#: ``charts/health-monitoring-agent/templates/health-monitoring-agent.yaml`` at commit 011ca92, 2026-06-22).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

#: The taint/label key HyperPod sets while a node runs deep health checks or awaits reboot/replacement (SageMaker
#: Developer Guide "sagemaker-hyperpod-eks-resiliency-node-labels": ``sagemaker.amazonaws.com/node-health-status``
#: ``Schedulable``/``Unschedulable``/``UnschedulablePendingReplacement``/``UnschedulablePendingReboot``).
HYPERPOD_NODE_HEALTH_KEY = "sagemaker.amazonaws.com/node-health-status"

#: The toleration every device plugin needs on HyperPod nodes: aws/sagemaker-hyperpod-cli ``helm_chart/readme.md``
#: ("If you install these plugins on your own ... Tolerations (across all plugins)", commit 011ca92) and the
#: chart's own ``nvidia-device-plugin``/``aws-efa-k8s-device-plugin`` tolerations in its values.yaml.
HYPERPOD_NODE_HEALTH_TOLERATION: dict[str, str] = {
    "key": HYPERPOD_NODE_HEALTH_KEY,
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}

#: The EFA taint toleration HyperPod's dependencies chart gives its EFA device plugin (``aws-efa-k8s-device-plugin.
#: tolerations`` in HyperPodHelmChart/values.yaml at commit 011ca92); kept for HyperPod nodes.
EFA_TAINT_TOLERATION: dict[str, str] = {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"}

#: A SageMaker HyperPod instance type (``ml.<family>.<size>``), as the instance-type label of HyperPod nodes holds it.
_HYPERPOD_TYPE = re.compile(r"ml\.[a-z0-9][a-z0-9-]*\.[a-z0-9]+")
_HYPERPOD_TYPE_TEXT = "a SageMaker HyperPod instance type such as 'ml.p5en.48xlarge'"


def _check_hyperpod_type(parameter: str, value: object) -> Any:
    text = check_str(parameter, value, allowed=_HYPERPOD_TYPE_TEXT)
    if is_token(text):
        raise FmValidationError(parameter, value, f"{_HYPERPOD_TYPE_TEXT}, known at synthesis (a node label value)")
    if not _HYPERPOD_TYPE.fullmatch(text):
        raise FmValidationError(parameter, value, _HYPERPOD_TYPE_TEXT)
    return check_label_value(parameter, text, allow_empty=False)


def check_hyperpod_instance_types(parameter: str, value: object) -> tuple[str, ...]:
    """A list of HyperPod ``ml.`` instance types (a bare ``str`` is refused), without repeats, in the given order."""
    types = check_str_sequence(parameter, value, item=_check_hyperpod_type)
    return tuple(dict.fromkeys(types))


def hyperpod_has_efa(hyperpod_type: str) -> bool:
    """Whether the EFA device plugin should select this HyperPod type: its EC2 type has EFA in the catalog, or the
    catalog does not hold it (the plugin then finds no EFA device and advertises none: UNCONFIRMED on HyperPod)."""
    ec2_type = hyperpod_type.removeprefix("ml.")
    return supports_efa(ec2_type) is not False  # catalog, else EC2 DescribeInstanceTypes data; unknown: True


def _node_affinity(*terms: tuple[str, Sequence[str]]) -> dict[str, Any]:
    """A required node affinity: a node matches when any term (``key In values``) does."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
                    for key, values in terms
                ]
            }
        }
    }


def _cover_hyperpod(values: dict[str, Any], hyperpod_instance_types: Sequence[str]) -> dict[str, Any]:
    """``values`` of a GPU DaemonSet chart, widened to HyperPod nodes of these types.

    fmconstructs node groups are selected by ``nvidia.com/gpu.present=true`` (a label the node groups set); HyperPod
    nodes are selected by their ``ml.`` instance-type label. Helm's ``nodeSelector`` can only AND labels, so the
    ``nodeSelector`` is replaced by a required node affinity with one term for each (terms are ORed), and the pods
    tolerate HyperPod's node-health taint.
    """
    types = check_hyperpod_instance_types("hyperpod_instance_types", hyperpod_instance_types)
    if not types:
        return values
    widened = copy.deepcopy(values)
    selector = widened.pop("nodeSelector", {})
    widened["affinity"] = _node_affinity(
        *((key, [value]) for key, value in selector.items()), (INSTANCE_TYPE_LABEL, sorted(types))
    )
    if HYPERPOD_NODE_HEALTH_TOLERATION not in widened["tolerations"]:
        widened["tolerations"] = [*widened["tolerations"], dict(HYPERPOD_NODE_HEALTH_TOLERATION)]
    return widened


@dataclass(frozen=True)
class HelmChartPin:
    """A chart at a pinned version: where it comes from and where it is installed."""

    chart: str
    repository: str
    version: str
    namespace: str
    release: str

    def __post_init__(self) -> None:
        for name in ("chart", "namespace", "release"):
            check_str(name, getattr(self, name), min_length=1, allowed="a non-empty str")
        check_str("repository", self.repository, allowed="a chart repository URL or '' (set by a ChartSource)")
        check_str("version", self.version, allowed="a chart version such as '0.17.1'")

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

# --- where charts and their images come from ---------------------------------------------------------------------
# An OCI chart reference as the aws_eks_v2 kubectl handler takes it (aws-cdk-lib 2.275
# custom-resource-handlers/aws-eks-v2/kubectl-handler/helm: a ``Repository`` starting with ``oci://`` is fetched with
# ``helm pull <repository> --version <version> --untar`` after ``aws ecr get-login-password | helm registry login``
# for ``oci://<account>.dkr.ecr.<region>.<domain>/...``, and the chart is read from the directory named by the last
# path segment). Host: DNS labels and an optional port; path: lowercase OCI repository name components
# (distribution-spec ``[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*``, simplified to ``[a-z0-9._-]``).
_OCI = re.compile(r"oci://[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)+")
_OCI_TEXT = "an OCI chart reference 'oci://<registry>/<path>/<chart>' (lowercase path)"
# A Helm chart repository URL (what ``helm repo add`` / ``--repo`` takes): http(s), no whitespace.
_HELM_REPOSITORY = re.compile(r"https?://[^\s'\"]+")
_HELM_REPOSITORY_TEXT = "an https:// Helm chart repository URL"
# A container image repository written into Helm values (distribution reference grammar: registry host, then
# lowercase path components) and a tag (``[\w][\w.-]{0,127}``).
_IMAGE_REPOSITORY = re.compile(r"[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)+")
_IMAGE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class ChartSource:
    """Where a chart (and optionally its image) comes from: the pin's public repository (``ChartSource.PUBLIC``), a
    private OCI registry (:meth:`oci`, :meth:`ecr`) or another Helm repository (:meth:`helm_repository`).

    For clusters without an internet route, push each chart to ECR (``helm pull <chart> --repo <public repo>
    --version <pin>``, then ``helm push <chart>-<version>.tgz oci://<account>.dkr.ecr.<region>.amazonaws.com/<path>``)
    and copy its images to ECR, then point the chart at both::

        ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/helm-charts/aws-efa-k8s-device-plugin")
            .with_image("111122223333.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin")

    The kubectl handler logs in to ECR itself (its role has ``AmazonEC2ContainerRegistryReadOnly``, aws-cdk-lib
    aws-eks-v2 ``KubectlProvider``); nodes pull images with the node role's ``AmazonEC2ContainerRegistryPullOnly``.
    Images in the charts' values (Helm values keys, from each chart's values.yaml):

    - nvidia-device-plugin: ``image.repository``/``image.tag`` (default ``nvcr.io/nvidia/k8s-device-plugin``; GPU
      feature discovery runs the same image); with GPU feature discovery on, the node-feature-discovery subchart's
      ``nfd.image.repository``/``nfd.image.tag`` too (:meth:`with_values`).
    - aws-efa-k8s-device-plugin: ``image.repository``/``image.tag`` (default in the us-west-2 EKS registry
      ``602401143452.dkr.ecr.us-west-2.amazonaws.com``: ECR endpoints serve their own Region only, so mirror it).
    - dcgm-exporter: ``image.repository``/``image.tag`` (default ``nvcr.io/nvidia/k8s/dcgm-exporter``).
    - nvidia-dra-driver-gpu: ``image.repository``/``image.tag`` (default ``nvcr.io/nvidia/k8s-dra-driver-gpu``).
    """

    repository: str | None = None
    image_repository: str | None = None
    image_tag: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)

    PUBLIC: ClassVar[ChartSource]

    def __post_init__(self) -> None:
        if self.repository is not None:
            check_str("repository", self.repository, allowed=f"{_OCI_TEXT} or {_HELM_REPOSITORY_TEXT}")
            if not is_token(self.repository) and not (
                _OCI.fullmatch(self.repository) or _HELM_REPOSITORY.fullmatch(self.repository)
            ):
                raise FmValidationError("repository", self.repository, f"{_OCI_TEXT} or {_HELM_REPOSITORY_TEXT}")
        if self.image_repository is not None:
            check_str(
                "image_repository",
                self.image_repository,
                pattern=_IMAGE_REPOSITORY,
                allowed="an image repository '<registry>/<path>' without a tag",
            )
        if self.image_tag is not None:
            check_str("image_tag", self.image_tag, pattern=_IMAGE_TAG, allowed="an image tag such as 'v0.5.20'")
            if self.image_repository is None:
                raise FmValidationError("image_tag", self.image_tag, "None unless image_repository is given")
        if not isinstance(self.values, Mapping):
            raise FmTypeError("values", self.values, f"a dict of Helm values (got a {type(self.values).__name__})")

    @classmethod
    def oci(cls, reference: str) -> ChartSource:
        """A chart in an OCI registry: ``oci://<registry>/<path>/<chart>``; the last segment must be the chart's
        name (the kubectl handler reads the chart from that directory after ``helm pull --untar``)."""
        check_str("reference", reference, allowed=_OCI_TEXT)
        if not is_token(reference) and not _OCI.fullmatch(reference):
            raise FmValidationError("reference", reference, _OCI_TEXT)
        return cls(repository=reference)

    @classmethod
    def ecr(cls, repository: ecr.IRepository) -> ChartSource:
        """A chart pushed to this ECR repository (``oci://`` + its URI; name the repository ``<path>/<chart>``)."""
        check_construct("repository", repository, attribute="repository_uri", expected="an ecr.IRepository")
        return cls(repository=f"oci://{repository.repository_uri}")

    @classmethod
    def helm_repository(cls, url: str) -> ChartSource:
        """A chart in another Helm repository (an internal mirror reachable from the VPC)."""
        check_str("url", url, allowed=_HELM_REPOSITORY_TEXT)
        if not is_token(url) and not _HELM_REPOSITORY.fullmatch(url):
            raise FmValidationError("url", url, _HELM_REPOSITORY_TEXT)
        return cls(repository=url)

    def with_image(self, repository: str, *, tag: str | None = None) -> ChartSource:
        """This source, with the chart's main image (``image.repository``, ``image.tag``) from ``repository``.

        :param tag: default: the chart's (its appVersion)."""
        return ChartSource(self.repository, repository, tag, self.values)

    def with_values(self, values: Mapping[str, Any]) -> ChartSource:
        """This source, with more Helm values merged over fmconstructs' (e.g. ``{"nfd": {"image": {"repository":
        ...}}}`` for the device plugin's node-feature-discovery subchart)."""
        if not isinstance(values, Mapping):
            raise FmTypeError("values", values, f"a dict of Helm values (got a {type(values).__name__})")
        return ChartSource(self.repository, self.image_repository, self.image_tag, merge_values(self.values, values))

    @property
    def is_oci(self) -> bool:
        return self.repository is not None and self.repository.startswith("oci://")

    def pin(self, pin: HelmChartPin) -> HelmChartPin:
        """``pin`` fetched from this source (the chart's own repository when none is set)."""
        if self.repository is None:
            return pin
        if self.is_oci and known_text(self.repository):
            last = self.repository.rstrip("/").rpartition("/")[2]
            if last != pin.chart:
                raise FmValidationError(
                    "source",
                    self.repository,
                    f"an OCI reference ending in the chart name {pin.chart!r}",
                )
        return HelmChartPin(pin.chart, self.repository, pin.version, pin.namespace, pin.release)

    def apply(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` with this source's image and extra values merged over them."""
        overrides: dict[str, Any] = {}
        if self.image_repository is not None:
            image: dict[str, Any] = {"repository": self.image_repository}
            if self.image_tag is not None:
                image["tag"] = self.image_tag
            overrides["image"] = image
        return merge_values(merge_values(values, overrides), self.values)


ChartSource.PUBLIC = ChartSource()


def known_text(value: str) -> bool:
    """A string with no deploy-time part (``oci://`` + an ECR repository URI token is not)."""
    return "${Token[" not in value and not is_token(value)


def merge_values(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep merge of Helm values: mappings merge key by key, anything else in ``overrides`` replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def check_chart_source(parameter: str, value: object) -> ChartSource | None:
    """None (the chart's public repository) or a :class:`ChartSource`."""
    if value is not None and not isinstance(value, ChartSource):
        raise FmTypeError(
            parameter, value, f"a ChartSource (ChartSource.oci(...), .ecr(...)) or None (got a {type(value).__name__})"
        )
    return value


#: The EKS managed add-on name of the FSx for Lustre CSI driver. Its version defaults to the EKS default for the
#: cluster's Kubernetes version (list them with ``aws eks describe-addon-versions --addon-name aws-fsx-csi-driver``)
#: because add-on builds are tied to Kubernetes versions; pin one with ``add_fsx_csi_driver(addon_version=...)``.
FSX_CSI_ADDON_NAME = "aws-fsx-csi-driver"


def gpu_tolerations(extra: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Tolerations for pods that must run on tainted GPU nodes (the GPU taint, and the node-checks taint while the
    node's checks run)."""
    return [
        {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": NODE_CHECKS_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        *(dict(t) for t in extra),
    ]


def nvidia_device_plugin_values(
    *, efa_plugin: bool = True, gpu_feature_discovery: bool = True, hyperpod_instance_types: Sequence[str] = ()
) -> dict[str, Any]:
    """Values for ``nvidia-device-plugin`` (keys from k8s-device-plugin deployments/helm/.../values.yaml).

    - ``mofedEnabled: false`` when the EFA device plugin runs: the nodes have EFA, not Mellanox OFED, and the plugin
      must not look for MOFED devices (aws-facts section 7).
    - ``gfd.enabled``: GPU feature discovery labels (``nvidia.com/gpu.product``, ``nvidia.com/gpu.clique`` that the
      DRA driver's ComputeDomains need on P6e-GB200).
    - Runs only on GPU nodes (``nvidia.com/gpu.present=true``, set by the node groups) and tolerates the GPU taint.
    - ``hyperpod_instance_types`` (``ml.`` names): also on SageMaker HyperPod nodes of these types (a node affinity
      on ``nvidia.com/gpu.present`` OR ``node.kubernetes.io/instance-type``, and HyperPod's node-health toleration),
      as aws/sagemaker-hyperpod-cli ``helm_chart/readme.md`` asks of a device plugin installed outside its chart.
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
    return _cover_hyperpod(values, hyperpod_instance_types)


def _instance_type_label(parameter: str, value: object) -> Any:
    """An instance type as a node label value (not empty)."""
    return check_label_value(parameter, value, allow_empty=False)


def efa_device_plugin_values(
    instance_types: Sequence[str], *, hyperpod_instance_types: Sequence[str] = ()
) -> dict[str, Any]:
    """Values for ``aws-efa-k8s-device-plugin`` (keys from eks-charts stable/aws-efa-k8s-device-plugin/values.yaml).

    The chart's own instance list lags EC2 launches (p6-b200/p6-b300 are missing from older versions), so the list is
    set to the cluster's EFA instance types; the plugin also runs only where ``vpc.amazonaws.com/efa.present=true``.
    Each type is a value of the ``node.kubernetes.io/instance-type`` label, so it must be a Kubernetes label value; a
    bare ``str`` is refused (it would be read character by character).

    ``hyperpod_instance_types`` (``ml.`` names): also on SageMaker HyperPod nodes of those types that have EFA
    (:func:`hyperpod_has_efa`). The chart builds its node affinity from ``supportedInstanceLabels`` (one ``In`` term
    per key, eks-charts templates/daemonset.yaml) and ANDs ``nodeSelector`` with it; HyperPod nodes do not carry
    ``vpc.amazonaws.com/efa.present`` (a label fmconstructs node groups set), so with HyperPod types the
    ``nodeSelector`` is dropped and the instance-type list alone selects nodes (on a node of an EFA type without EFA
    interfaces the plugin then finds no device: UNCONFIRMED behaviour), plus HyperPod's node-health toleration
    (aws/sagemaker-hyperpod-cli ``helm_chart/readme.md``: "Supported Instance Labels (for efa plugin)") and the
    ``aws.amazon.com/efa`` toleration the chart's own EFA plugin carries.
    """
    types = check_str_sequence("instance_types", instance_types, item=_instance_type_label, min_items=1)
    hyperpod = check_hyperpod_instance_types("hyperpod_instance_types", hyperpod_instance_types)
    values: dict[str, Any] = {
        "supportedInstanceLabels": {
            "keys": [INSTANCE_TYPE_LABEL],
            "values": sorted(set(types)),
        },
        "nodeSelector": {EFA_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
    }
    efa_hyperpod = [t for t in hyperpod if hyperpod_has_efa(t)]
    if efa_hyperpod:
        values["supportedInstanceLabels"]["values"] = sorted({*types, *efa_hyperpod})
        del values["nodeSelector"]
        values["tolerations"] = [
            *values["tolerations"],
            dict(HYPERPOD_NODE_HEALTH_TOLERATION),
            dict(EFA_TAINT_TOLERATION),
        ]
    return values


def dcgm_exporter_values(
    *, service_monitor: bool = False, port: int = DCGM_EXPORTER_PORT, hyperpod_instance_types: Sequence[str] = ()
) -> dict[str, Any]:
    """Values for ``dcgm-exporter`` (keys from dcgm-exporter deployment/values.yaml).

    The metrics endpoint is ready for scraping: a ClusterIP Service on ``port`` with ``prometheus.io/*`` annotations
    on the Service and the pods (for annotation-based scrapers such as the Amazon Managed Service for Prometheus
    collector). ``serviceMonitor`` stays off unless asked for, because it needs the Prometheus Operator CRDs. GPU
    series carry the pod holding the GPU (:func:`dcgm_exporter_pod_attribution_values`).
    ``hyperpod_instance_types``: also on SageMaker HyperPod nodes of these types (see
    :func:`nvidia_device_plugin_values`); HyperPod's dependencies chart installs no DCGM exporter.
    """
    check_bool("service_monitor", service_monitor)
    port = check_count("port", port, minimum=1, maximum=65535)
    port_text = Token.as_string(port) if is_token(port) else str(port)
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": port_text, "prometheus.io/path": "/metrics"}
    values: dict[str, Any] = {
        "service": {"enable": True, "type": "ClusterIP", "port": port, "annotations": annotations},
        "podAnnotations": annotations,
        "serviceMonitor": {"enabled": service_monitor},
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": gpu_tolerations(),
        **dcgm_exporter_pod_attribution_values(),
    }
    return _cover_hyperpod(values, hyperpod_instance_types)


#: The kubelet's pod-resources directory on the node (its socket ``kubelet.sock`` answers which pod holds which
#: device): the kubelet default root directory ``/var/lib/kubelet`` (Kubernetes docs "Local Files And Paths Used By
#: The Kubelet"); that the EKS AL2023 AMIs keep the default root directory is UNCONFIRMED.
KUBELET_POD_RESOURCES_PATH = "/var/lib/kubelet/pod-resources"
#: dcgm-exporter's default counters file (the chart's ``arguments`` default, deployment/values.yaml at 4.4.1-4.6.0).
DCGM_EXPORTER_COUNTERS_ARGS: tuple[str, ...] = ("-f", "/etc/dcgm-exporter/default-counters.csv")


def dcgm_exporter_pod_attribution_values() -> dict[str, Any]:
    """The values that make every GPU series carry ``namespace``, ``pod`` and ``container`` of the pod holding the GPU.

    From dcgm-exporter tag 4.4.1-4.6.0 (chart 4.6.0, the pin :data:`DCGM_EXPORTER`):

    - ``pkg/cmd/app.go``: ``--kubernetes`` (env ``DCGM_EXPORTER_KUBERNETES``, default false) maps GPUs to pods
      through the kubelet pod-resources socket (``--pod-resources-kubelet-socket``, default
      ``/var/lib/kubelet/pod-resources/kubelet.sock``); ``--kubernetes-gpu-id-type`` (default ``uid``, the other
      value ``device-name``) says how the device plugin names GPUs. The NVIDIA device plugin chart leaves
      ``deviceIDStrategy: null`` (its values.yaml), so the plugin's own ``--device-id-strategy`` default ``uuid``
      applies (k8s-device-plugin cmd/nvidia-device-plugin/main.go, seen in the code index, not at tag v0.17.1:
      UNCONFIRMED for that exact version), which matches ``uid``.
    - ``internal/pkg/transformation/const.go`` / ``kubernetes.go``: the labels are ``pod``, ``namespace``,
      ``container`` (``pod_name``/``pod_namespace``/``container_name`` only with ``--use-old-namespace``).
    - ``deployment/templates/daemonset.yaml``: the chart always sets ``DCGM_EXPORTER_KUBERNETES=true`` and mounts
      ``kubeletPath`` (hostPath, read-only) at ``/var/lib/kubelet/pod-resources`` in the exporter container.

    Set explicitly here (even where they equal the defaults): ``--kubernetes=true`` and
    ``--kubernetes-gpu-id-type=uid`` in ``arguments`` (after the chart's default counters file) and ``kubeletPath``.
    ``kubernetes.enablePodLabels``/``enablePodUID`` stay off: they would copy every pod label (or the UID) onto GPU
    series and need a ClusterRole; team and job labels come from kube-state-metrics instead (bounded cardinality).
    """
    return {
        "arguments": [*DCGM_EXPORTER_COUNTERS_ARGS, "--kubernetes=true", "--kubernetes-gpu-id-type=uid"],
        "kubeletPath": KUBELET_POD_RESOURCES_PATH,
        "kubernetes": {"enablePodLabels": False, "enablePodUID": False},
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
