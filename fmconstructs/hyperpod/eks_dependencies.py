"""HyperPodEksDependencies: SageMaker HyperPod's dependencies Helm chart on an fmconstructs ``GpuEksCluster``.

SageMaker Developer Guide "sagemaker-hyperpod-eks-install-packages-using-helm-chart": before a HyperPod cluster is
created with the APIs (CloudFormation ``AWS::SageMaker::Cluster`` is one) on an EKS cluster, the chart
``helm_chart/HyperPodHelmChart`` of the git repository aws/sagemaker-hyperpod-cli must be installed with
``helm dependencies update HyperPodHelmChart`` then ``helm install hyperpod-dependencies HyperPodHelmChart --namespace
kube-system``; without it the HyperPod cluster may not work or its creation may fail; the ``aws-hyperpod`` namespace
(created by the chart) cannot be changed. This construct is that ``helm install``, run by the cluster's kubectl
handler (aws-cdk-lib ``aws_eks_v2.HelmChart``), and :meth:`HyperPodEksDependencies.add_dependent` makes the HyperPod
cluster wait for it.

Where the chart comes from (:class:`HyperPodDependenciesChart`). The chart is published only in that git repository:
no Helm or OCI repository and no EKS add-on of it was found (the Developer Guide page and the repository's
``helm_chart/readme.md`` only describe ``git clone``; the HyperPod EKS add-ons ``amazon-sagemaker-hyperpod-training-
operator``, ``amazon-sagemaker-hyperpod-observability``, ``amazon-sagemaker-hyperpod-taskgovernance`` and
``amazon-sagemaker-hyperpod-inference`` are optional features, not this chart). So, pinned by you:

- :meth:`HyperPodDependenciesChart.from_directory`: a local checkout at a commit you choose, uploaded as a CDK asset
  (the kubectl handler downloads the zip and runs ``helm upgrade --install`` on it; it does not run ``helm dependency
  update``, so run it before ``cdk synth``)::

      git clone https://github.com/aws/sagemaker-hyperpod-cli.git
      git -C sagemaker-hyperpod-cli checkout 011ca927123e02b35a399935bbb3ab1905fe33c7   # the commit fmconstructs read
      helm dependencies update sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart
      cdk synth -c fmconstructs:hyperpod-helm-chart=sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart

- :meth:`HyperPodDependenciesChart.from_oci`: the same directory packaged and pushed to your registry (``helm package
  HyperPodHelmChart`` -> ``hyperpod-helm-chart-0.1.0.tgz``; ``helm push hyperpod-helm-chart-0.1.0.tgz
  oci://<account>.dkr.ecr.<region>.amazonaws.com/helm-charts``), for pipelines without a checkout. The chart's own
  ``version`` has stayed ``0.1.0`` across commits, so name the pushed version after the commit if you push more than
  one (edit ``version`` in Chart.yaml before ``helm package``).

Components (the repository's ``helm_chart/readme.md`` "Package structure" table and ``HyperPodHelmChart/Chart.yaml``,
``values.yaml`` at commit 011ca92, 2026-06-22): required for HyperPod resiliency and on by default: health-monitoring-
agent (a DaemonSet on the ``ml.`` GPU/Trainium instance types, image from a HyperPod ECR registry of the Region),
deep-health-check (the ``aws-hyperpod`` namespace and RBAC), job-auto-restart (RBAC for the
``hyperpod-service-linked-role`` user), hyperpod-patching, mpi-operator (resiliency with MPIJobs); also on: the Kubeflow
training operator, the NVIDIA device plugin (0.16.1, https://nvidia.github.io/k8s-device-plugin), the EFA device
plugin (0.5.20, https://aws.github.io/eks-charts/) and the Neuron device plugin; off: cert-manager (v1.18.2,
oci://quay.io/jetstack/charts), MLflow, storage, task-governance RBAC, the inference operator and the GPU operator.

Device plugins: one copy per node, fmconstructs' wins. The chart's NVIDIA and EFA device plugins select HyperPod
nodes by their ``ml.`` instance type; GpuEksCluster's select fmconstructs node groups and, after
:meth:`GpuEksCluster.add_hyperpod_instance_types`, the same HyperPod types. Two NVIDIA plugins on a node would register
``nvidia.com/gpu`` twice, so this construct turns the chart's off (``nvidia-device-plugin.devicePlugin.enabled`` and
``aws-efa-k8s-device-plugin.devicePlugin.enabled`` false, the conditions in Chart.yaml) and keeps GpuEksCluster's:
their versions are newer and pinned in one place (NVIDIA 0.17.1, EFA v0.5.30; the EKS GB200 guide asks for EFA
>= 0.5.14), they come from the same :class:`~fmconstructs.eks.addons.ChartSource` (private registries), they carry
fmconstructs' values (MOFED off with EFA, GPU feature discovery) and, for HyperPod types, the node-health toleration
and instance-type affinity that the readme asks of "plugins you install on your own". The Neuron plugin stays on
(GpuEksCluster installs none). The DCGM exporter (not in the chart), the FSx CSI driver and the EKS scraper then cover
HyperPod nodes as they cover node groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import jsii
import yaml
from aws_cdk import Duration, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IValidation

from .._validate import check_construct, check_duration_seconds, check_enum, check_scope_id, check_str, located
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, HelmChartPin, check_hyperpod_instance_types, check_version, merge_values
from ..errors import FmTypeError, FmValidationError, WarningId, is_token
from . import _nag

#: Where HyperPod publishes the chart (SageMaker Developer Guide "sagemaker-hyperpod-eks-install-packages-using-helm-
#: chart": ``git clone https://github.com/aws/sagemaker-hyperpod-cli.git``, directory ``helm_chart/HyperPodHelmChart``).
HYPERPOD_CLI_REPOSITORY = "https://github.com/aws/sagemaker-hyperpod-cli.git"
HYPERPOD_CHART_PATH = "helm_chart/HyperPodHelmChart"
#: The commit of aws/sagemaker-hyperpod-cli whose chart fmconstructs read (main, 2026-06-22, "Add space getting-started
#: reference (#432)"; after release v3.9.0). Check out a commit of your choice; this one is what the docs above cite.
HYPERPOD_CLI_COMMIT_SEEN = "011ca927123e02b35a399935bbb3ab1905fe33c7"
#: ``name`` and ``version`` of HyperPodHelmChart/Chart.yaml at that commit.
CHART_NAME = "hyperpod-helm-chart"
CHART_VERSION_SEEN = "0.1.0"
#: Release name and namespace of the documented ``helm install hyperpod-dependencies HyperPodHelmChart --namespace
#: kube-system``.
RELEASE_NAME = "hyperpod-dependencies"
RELEASE_NAMESPACE = "kube-system"
#: The namespace the chart creates for its agents; "cannot be modified" (same Developer Guide page).
HYPERPOD_NAMESPACE = "aws-hyperpod"
#: Sub-charts the repository's helm_chart/readme.md marks "HyperPod Resiliency" (values.yaml keys, on by default).
RESILIENCY_COMPONENTS = ("health-monitoring-agent", "deep-health-check", "job-auto-restart", "hyperpod-patching")
#: The chart's device plugins that GpuEksCluster replaces (Chart.yaml dependency conditions).
REPLACED_DEVICE_PLUGINS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin")
#: aws-cdk-lib ``aws_eks_v2.HelmChart``: "Helm chart timeout cannot be higher than 15 minutes".
MAX_TIMEOUT_MINUTES = 15
#: CDK context keys :meth:`HyperPodDependenciesChart.from_context` reads (as examples/hyperpod_eks_stack.py does): a
#: chart directory or an ``oci://`` reference, and for OCI its version (default :data:`CHART_VERSION_SEEN`).
CHART_CONTEXT = "fmconstructs:hyperpod-helm-chart"
CHART_VERSION_CONTEXT = "fmconstructs:hyperpod-helm-chart-version"


class HyperPodEksWarning:
    """Deprecated: the warning ids about HyperPod on EKS are :class:`~fmconstructs.errors.WarningId` members; this
    name keeps ``HyperPodEksWarning.DEPENDENCIES_NOT_INSTALLED`` working (it *is* the ``WarningId`` member)."""

    DEPENDENCIES_NOT_INSTALLED = WarningId.HYPERPOD_DEPENDENCIES_NOT_INSTALLED


class ChartLocation(str, Enum):
    DIRECTORY = "directory"
    OCI = "oci"
    HELM_REPOSITORY = "helm-repository"


def _check_chart_directory(parameter: str, path: object) -> Path:
    """A checked-out HyperPodHelmChart directory after ``helm dependencies update``."""
    text = check_str(parameter, path, min_length=1, allowed="a local HyperPodHelmChart directory")
    if is_token(text):
        raise FmValidationError(parameter, text, "a local directory known at synthesis")
    directory = Path(text)
    chart_file = directory / "Chart.yaml"
    if not directory.is_dir() or not chart_file.is_file():
        raise FmValidationError(
            parameter, text, f"a directory holding Chart.yaml ({HYPERPOD_CHART_PATH} of {HYPERPOD_CLI_REPOSITORY})"
        )
    try:
        chart = yaml.safe_load(chart_file.read_text())
    except yaml.YAMLError as error:
        raise FmValidationError(parameter, text, f"a directory whose Chart.yaml parses ({error})") from None
    if not isinstance(chart, dict) or chart.get("name") != CHART_NAME:
        name = chart.get("name") if isinstance(chart, dict) else None
        raise FmValidationError(
            parameter, text, f"the {CHART_NAME!r} chart ({HYPERPOD_CHART_PATH}); its Chart.yaml names {name!r}"
        )
    missing = []
    for dependency in chart.get("dependencies") or []:
        name, repository = str(dependency.get("name")), str(dependency.get("repository", ""))
        if repository.startswith("file://"):
            if not (directory / repository.removeprefix("file://")).is_dir():
                missing.append(f"{repository} ({name})")
        elif not any((directory / "charts").glob(f"{name}-*.tgz")):
            missing.append(f"charts/{name}-<version>.tgz")
    if missing:
        raise FmValidationError(
            parameter,
            text,
            "a chart directory after `helm dependencies update` (the kubectl handler installs the directory as it "
            f"is and does not fetch dependencies); missing: {', '.join(missing)}",
        )
    return directory


@dataclass(frozen=True)
class HyperPodDependenciesChart:
    """Where the HyperPod dependencies chart comes from: a local checkout (:meth:`from_directory`), your OCI registry
    (:meth:`from_oci`) or a Helm repository you host (:meth:`from_helm_repository`). See the module docstring for the
    git commands."""

    location: ChartLocation
    directory: str | None = None
    repository: str | None = None
    version: str | None = None
    chart: str = CHART_NAME

    def __post_init__(self) -> None:
        check_enum("location", self.location, ChartLocation)
        if self.location is ChartLocation.DIRECTORY:
            _check_chart_directory("directory", self.directory)
            if self.repository is not None or self.version is not None:
                raise FmValidationError(
                    "repository", self.repository, "None for a directory chart (the directory is the chart)"
                )
            return
        check_str("chart", self.chart, min_length=1, allowed="a chart name")
        _required_version(self.version)
        if self.location is ChartLocation.OCI:
            source = ChartSource.oci(self.repository)  # type: ignore[arg-type]  # checked there
            source.pin(HelmChartPin(self.chart, "", "", RELEASE_NAMESPACE, RELEASE_NAME))  # last segment = chart
        else:
            ChartSource.helm_repository(self.repository)  # type: ignore[arg-type]  # checked there
        if self.directory is not None:
            raise FmValidationError("directory", self.directory, f"None for a chart from {self.location.value}")

    @classmethod
    def from_directory(cls, path: str) -> HyperPodDependenciesChart:
        """A checkout's ``helm_chart/HyperPodHelmChart`` after ``helm dependencies update`` (Chart.yaml names
        ``hyperpod-helm-chart``; every non-``file://`` dependency has its archive in ``charts/``)."""
        directory = _check_chart_directory("path", path)
        return cls(ChartLocation.DIRECTORY, directory=str(directory))

    @classmethod
    def from_oci(cls, reference: str, *, version: str) -> HyperPodDependenciesChart:
        """``oci://<registry>/<path>/hyperpod-helm-chart`` at ``version`` (what you pushed with ``helm push``)."""
        return cls(ChartLocation.OCI, repository=reference, version=version)

    @classmethod
    def from_ecr(cls, repository: ecr.IRepository, *, version: str) -> HyperPodDependenciesChart:
        """The chart pushed to this ECR repository at ``version`` (``oci://`` + the repository URI, as
        :meth:`~fmconstructs.eks.addons.ChartSource.ecr`; name the repository ``<path>/hyperpod-helm-chart``, which is
        where ``helm push hyperpod-helm-chart-<version>.tgz oci://<registry>/<path>`` puts it). The kubectl handler
        logs in to ECR with its role's ``AmazonEC2ContainerRegistryReadOnly`` (aws-cdk-lib aws-eks-v2
        ``KubectlProvider``)."""
        check_construct("repository", repository, attribute="repository_uri", expected="an ecr.IRepository")
        return cls.from_oci(f"oci://{repository.repository_uri}", version=version)

    @classmethod
    def from_context(cls, scope: Construct) -> HyperPodDependenciesChart | None:
        """The chart named by CDK context :data:`CHART_CONTEXT` (``-c fmconstructs:hyperpod-helm-chart=<directory or
        oci:// reference>``; for OCI the version in :data:`CHART_VERSION_CONTEXT`, default
        :data:`CHART_VERSION_SEEN`), or None when the context is not set."""
        location = scope.node.try_get_context(CHART_CONTEXT)
        if not location:
            return None
        if str(location).startswith("oci://"):
            version = scope.node.try_get_context(CHART_VERSION_CONTEXT) or CHART_VERSION_SEEN
            return cls.from_oci(str(location), version=str(version))
        return cls.from_directory(str(location))

    @classmethod
    def from_helm_repository(cls, url: str, *, version: str, chart: str = CHART_NAME) -> HyperPodDependenciesChart:
        """``chart`` at ``version`` from a Helm repository you host (``helm repo index`` over the packaged chart)."""
        return cls(ChartLocation.HELM_REPOSITORY, repository=url, version=version, chart=chart)


def _required_version(version: object) -> str:
    if version is None:
        raise FmValidationError("version", version, "the chart version you pushed, e.g. '0.1.0'")
    checked: str = check_version("version", version)
    return checked


def _check_values(values: object) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise FmTypeError("values", values, f"a dict of Helm values (got a {type(values).__name__})")
    for plugin in REPLACED_DEVICE_PLUGINS:
        section = values.get(plugin)
        enabled = section.get("devicePlugin", {}).get("enabled") if isinstance(section, Mapping) else None
        if enabled is True:
            raise FmValidationError(
                f"values[{plugin!r}].devicePlugin.enabled",
                enabled,
                "False or unset: GpuEksCluster's device plugin serves HyperPod nodes (add_hyperpod_instance_types); "
                "two plugins would register the same devices",
            )
    namespace = values.get("namespace")
    name = namespace.get("name") if isinstance(namespace, Mapping) else None
    if name is not None and name != HYPERPOD_NAMESPACE:
        raise FmValidationError(
            "values['namespace'].name", name, f"{HYPERPOD_NAMESPACE!r} (HyperPod: the namespace cannot be modified)"
        )
    return dict(values)


def dependencies_values(*, region: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The chart's values: the chart's NVIDIA and EFA device plugins off (GpuEksCluster's serve HyperPod nodes),
    ``global.region`` (the health-monitoring agent picks its image registry by Region: explicit, then
    ``global.region``, then detection from the cluster, then us-west-2; charts/health-monitoring-agent/values.yaml),
    then ``values`` merged over them."""
    base: dict[str, Any] = {"global": {"region": region}}
    for plugin in REPLACED_DEVICE_PLUGINS:
        base[plugin] = {"devicePlugin": {"enabled": False}}
    return merge_values(base, _check_values(values) if values is not None else {})


@jsii.implements(IValidation)
class _DevicePluginsInstalled:
    """At synthesis: HyperPod types registered with the cluster need its NVIDIA and EFA device plugins."""

    def __init__(self, cluster: GpuEksCluster) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        if not self._cluster.hyperpod_instance_types:
            return []
        missing = [name for name in ("NvidiaDevicePlugin", "EfaDevicePlugin") if name not in self._cluster.charts]
        if not missing:
            return []
        return [
            f"HyperPod nodes ({', '.join(self._cluster.hyperpod_instance_types)}) have no {' or '.join(missing)}: "
            "the dependencies chart's device plugins are off in favour of GpuEksCluster's; call "
            "cluster.add_gpu_addons() (or add_nvidia_device_plugin() and add_efa_device_plugin())"
        ]


class HyperPodEksDependencies(Construct):
    """HyperPod's dependencies chart, installed as ``hyperpod-dependencies`` in ``kube-system`` of ``cluster``.

    :param cluster: the fmconstructs GpuEksCluster that orchestrates the HyperPod cluster.
    :param chart: :class:`HyperPodDependenciesChart` (a checkout, or your registry).
    :param instance_types: HyperPod (``ml.``) instance types whose nodes join the cluster; registered with
        :meth:`GpuEksCluster.add_hyperpod_instance_types` so the GPU add-ons cover them. Default: none here;
        :meth:`add_dependent` registers the accelerated groups of the HyperPod cluster.
    :param values: more Helm values merged over fmconstructs' (:func:`dependencies_values`), e.g.
        ``{"trainingOperators": {"enabled": False}}``. The chart's device plugins cannot be turned back on here.
    :param timeout: the handler's ``helm`` timeout. Default: 15 minutes (aws-cdk-lib's maximum).

    The chart is installed without ``--wait`` (its DaemonSets target HyperPod nodes that exist only after the
    HyperPod cluster is created), after the system node group when the cluster has one.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        chart: HyperPodDependenciesChart,
        instance_types: Sequence[str] = (),
        values: Mapping[str, Any] | None = None,
        timeout: Duration | None = None,
    ) -> None:
        check_scope_id(scope, id)
        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"an fmconstructs GpuEksCluster (got a {type(cluster).__name__})")
        if not isinstance(chart, HyperPodDependenciesChart):
            raise FmTypeError(
                "chart",
                chart,
                "a HyperPodDependenciesChart (.from_directory(path), .from_oci(reference, version=...), "
                f".from_helm_repository(url, version=...)) (got a {type(chart).__name__})",
            )
        types = check_hyperpod_instance_types("instance_types", instance_types)
        checked_values = _check_values(values) if values is not None else None
        timeout = timeout if timeout is not None else Duration.minutes(MAX_TIMEOUT_MINUTES)
        check_duration_seconds("timeout", timeout, minimum_seconds=1, maximum_seconds=MAX_TIMEOUT_MINUTES * 60)
        super().__init__(scope, id)
        self.cluster = cluster
        self.source = chart
        self.values = dependencies_values(region=Stack.of(self).region, values=checked_values)

        self.chart_asset: s3_assets.Asset | None = None
        location: dict[str, Any]
        if chart.location is ChartLocation.DIRECTORY and chart.directory is not None:
            self.chart_asset = s3_assets.Asset(self, "ChartAsset", path=chart.directory)
            location = {"chart_asset": self.chart_asset}
        else:
            location = {"chart": chart.chart, "repository": chart.repository, "version": chart.version}
        self.chart = eks.HelmChart(
            self,
            "Resource",
            cluster=cluster.icluster,
            release=RELEASE_NAME,
            namespace=RELEASE_NAMESPACE,
            create_namespace=False,
            values=self.values,
            wait=False,
            timeout=timeout,
            **location,
        )
        if cluster.system_node_group is not None:
            self.chart.node.add_dependency(cluster.system_node_group)
        if types:
            cluster.add_hyperpod_instance_types(types)
        self.node.add_validation(_DevicePluginsInstalled(cluster))
        _nag.acknowledge_dependencies(self)

    @property
    def release(self) -> str:
        return RELEASE_NAME

    @property
    def namespace(self) -> str:
        return RELEASE_NAMESPACE

    def add_dependent(self, hyperpod_cluster: Any) -> None:
        """Make ``hyperpod_cluster`` (a :class:`~fmconstructs.hyperpod.HyperPodCluster` on this EKS cluster) wait for
        the chart (HyperPod requires it before cluster creation), and register its accelerated instance groups'
        types with the GPU add-ons."""
        resource = getattr(hyperpod_cluster, "resource", None)
        groups = getattr(hyperpod_cluster, "instance_groups", None)
        if resource is None or groups is None or not hasattr(resource, "node"):
            raise FmTypeError(
                "hyperpod_cluster",
                hyperpod_cluster,
                f"an fmconstructs HyperPodCluster (got a {type(hyperpod_cluster).__name__})",
            )
        orchestrated_by = getattr(getattr(hyperpod_cluster, "orchestrator", None), "eks_cluster", None)
        if orchestrated_by is not self.cluster:
            raise FmValidationError(
                "hyperpod_cluster",
                hyperpod_cluster.node.path,
                f"a HyperPodCluster orchestrated by {self.cluster.node.path} (HyperPodOrchestrator.eks(cluster))",
            )
        resource.node.add_dependency(self.chart)
        accelerated = [g.instance_type for g in groups if getattr(g, "accelerated", False)]
        if accelerated:
            self.cluster.add_hyperpod_instance_types(accelerated)
