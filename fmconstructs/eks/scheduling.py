"""Topology-aware, all-or-nothing scheduling on EKS: Kueue (Topology Aware Scheduling) and JobSet.

:class:`KueueScheduling` (``GpuEksCluster.add_topology_scheduling``) installs two pinned charts and the queues:

- Kueue (:data:`KUEUE`) with ``waitForPodsReady`` (all-or-nothing admission) in its configuration, and JobSet
  (:data:`JOBSET`), the training operator the sample job uses.
- A ``Topology`` per network depth whose levels are the EKS network-node labels (:func:`topology_levels`) and then
  ``kubernetes.io/hostname``; a ``ResourceFlavor`` per GPU instance type and capacity kind (the fmconstructs node
  labels of its node groups, the Topology of its depth, a toleration for the GPU taint); one ``ClusterQueue`` whose
  ``nvidia.com/gpu`` and ``vpc.amazonaws.com/efa`` quotas are each flavor's GPUs (EFA interfaces) per node x the
  node groups' ``max_nodes``; a ``LocalQueue`` in each namespace the caller names.

:func:`render_sample_training_job` renders a JobSet that runs through a LocalQueue and asks for one network node.

SageMaker HyperPod on EKS: HyperPod task governance installs its own Kueue (the ``amazon-sagemaker-hyperpod-
taskgovernance`` add-on, :mod:`fmconstructs.hyperpod.eks_addons`) and configures the topology itself; do not add a
second one. There, topology-aware scheduling is an annotation on the job's pod template (SageMaker Developer Guide
"Using topology-aware scheduling in Amazon SageMaker HyperPod task governance": task governance v1.2.2-eksbuild.1 or
later, ``kueue.x-k8s.io/podset-required-topology`` / ``podset-preferred-topology`` with a
``topology.k8s.aws/network-node-layer-N`` value, queue ``hyperpod-ns-<team>-localqueue``); see
:func:`hyperpod_local_queue_name`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import IStableAnyProducer, Lazy
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IValidation

from .._kueue import EFA_RESOURCE as EFA_RESOURCE
from .._kueue import GPU_RESOURCE as GPU_RESOURCE
from .._kueue import KUEUE_API_VERSION as KUEUE_API_VERSION
from .._kueue import FlavorQuota as FlavorQuota
from .._kueue import cluster_queue_manifest as cluster_queue_manifest
from .._validate import check_bool, check_count, check_str, check_str_sequence, located
from .._validate_refs import check_image_reference
from ..catalog import InstanceSpec, get_instance_spec
from ..errors import FmValidationError, WarningId, add_warning, is_token
from . import addons as _addons
from ._names import TEAM_LABEL, app_metrics_annotations, check_team
from .manifests import check_name

if TYPE_CHECKING:
    from .cluster import GpuEksCluster
    from .node_group import GpuNodeGroup

# --- pins ----------------------------------------------------------------------------------------------------------
#: Kueue 0.19.2 (kubernetes-sigs/kueue tag v0.19.2, commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb): charts/kueue/
#: Chart.yaml ``version: 0.19.2``; charts/kueue/README.md installs ``oci://registry.k8s.io/kueue/charts/kueue
#: --version="0.19.2" --namespace=kueue-system``. It is the Kueue that HyperPod task governance v1.6.0-eksbuild.1
#: packages (see :mod:`fmconstructs.hyperpod.eks_addons`). The kubectl handler pulls a non-ECR ``oci://`` chart with
#: ``helm pull <repository> --version <version> --untar`` and no login (aws-cdk-lib 2.275
#: custom-resource-handlers aws-eks-v2/kubectl-handler/helm ``get_oci_cmd``).
KUEUE = _addons.HelmChartPin(
    chart="kueue",
    repository="oci://registry.k8s.io/kueue/charts/kueue",
    version="0.19.2",  # kubernetes-sigs/kueue v0.19.2 charts/kueue/Chart.yaml
    namespace="kueue-system",
    release="kueue",
)
#: The controller image of the published chart: hack/helm-chart-package.sh (tag v0.19.2) rewrites
#: ``controllerManager.manager.image.repository`` to ``registry.k8s.io/kueue/kueue`` and the tag to the git tag for
#: released versions. Mirror it (``v0.19.2``) for clusters without an internet route and pass
#: ``kueue_source=ChartSource.oci(...).with_image("<registry>/kueue/kueue")``.
KUEUE_IMAGE_REPOSITORY = "registry.k8s.io/kueue/kueue"
#: JobSet 0.12.0 (kubernetes-sigs/jobset tag v0.12.0, commit f22e565ac3cc3265c7c45ef67ecffdc689af5d77):
#: charts/jobset/Chart.yaml ``version: 0.12.0``; charts/jobset/README.md installs
#: ``oci://registry.k8s.io/jobset/charts/jobset --version 0.12.0``.
JOBSET = _addons.HelmChartPin(
    chart="jobset",
    repository="oci://registry.k8s.io/jobset/charts/jobset",
    version="0.12.0",  # kubernetes-sigs/jobset v0.12.0 charts/jobset/Chart.yaml
    namespace="jobset-system",
    release="jobset",
)
#: hack/helm-chart-package.sh (jobset tag v0.12.0) sets ``image.repository`` to ``registry.k8s.io/jobset/jobset``.
JOBSET_IMAGE_REPOSITORY = "registry.k8s.io/jobset/jobset"

#: The served storage versions at the pins (config/components/crd/bases of each tag); Kueue's in fmconstructs._kueue.
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"

# --- labels and annotations ------------------------------------------------------------------------------------------
#: EKS User Guide "ml-workload-topology": ``topology.k8s.aws/network-node-layer-1`` is the top of the hierarchy,
#: ``-3`` the bottom for most types, ``-4`` present only on four-layer types.
NETWORK_NODE_LAYER_LABEL = "topology.k8s.aws/network-node-layer-{layer}"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Kueue docs (tag v0.19.2) site/content/en/docs/tasks/run/jobsets.md: the LocalQueue goes in ``metadata.labels``.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
#: Kueue docs (tag v0.19.2) concepts/topology_aware_scheduling.md "User-facing APIs" (PodTemplate annotations).
PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"

#: EC2 User Guide "ec2-instance-topology-prerequisites": DescribeInstanceTopology returns four network nodes for
#: p6-b200.48xlarge and p6-b300.48xlarge, three for the other supported types (p5/p5e/p5en, p6e-gb200, ...). The AWS
#: Containers blog on P6e-GB200 with DRA mentions layer-1 through layer-4 labels on P6e-GB200 nodes; the EC2 page
#: (which defines the API contract) is followed here.
FOUR_LAYER_INSTANCE_FAMILIES = ("p6-b200", "p6-b300")

_WAIT_TIMEOUT_MAX_MINUTES = 24 * 60


def network_layers(instance_type: str) -> int:
    """How many network-node layers EC2 reports for ``instance_type`` (3 or 4)."""
    family = instance_type.partition(".")[0]
    return 4 if family in FOUR_LAYER_INSTANCE_FAMILIES else 3


def topology_levels(layers: int) -> list[str]:
    """The node labels of a Topology, top first: network-node layers 1..``layers``, then the hostname (Kueue's
    sample-gpu-queues.yaml: "Taints on nodes are only respected if this label is the lowest topology level")."""
    if layers not in (3, 4):
        raise FmValidationError("layers", layers, "3 or 4 (EC2 instance topology)")
    return [NETWORK_NODE_LAYER_LABEL.format(layer=n) for n in range(1, layers + 1)] + [HOSTNAME_LABEL]


def topology_name(layers: int) -> str:
    return f"aws-network-{layers}-layers"


def topology_manifest(layers: int) -> dict[str, Any]:
    """A Kueue ``Topology`` of the EKS network-node labels (one per depth: a node must carry every level's label)."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": topology_name(layers)},
        "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(layers)]},
    }


def resource_flavor_manifest(flavor: FlavorQuota) -> dict[str, Any]:
    """A ``ResourceFlavor`` for TAS: its nodes' labels, the Topology of their depth and the tolerations TAS needs
    (Kueue sample-gpu-queues.yaml: TAS is not aware of webhooks that add tolerations, so the flavor lists them).
    ``flavor.topology=False`` renders a flavor without ``topologyName`` (quota and node labels only)."""
    spec: dict[str, Any] = {"nodeLabels": dict(flavor.node_labels)}
    if flavor.topology:
        spec["topologyName"] = topology_name(flavor.layers)
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    return {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor.name}, "spec": spec}


def local_queue_manifest(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    check_name("name", name)
    check_name("namespace", namespace, label=True)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def kueue_configuration(*, pods_ready_timeout_minutes: int = 30) -> dict[str, Any]:
    """The Kueue ``Configuration`` (config.kueue.x-k8s.io/v1beta2): the chart's default (charts/kueue/values.yaml
    ``managerConfig.controllerManagerConfigYaml`` at v0.19.2) plus

    - ``waitForPodsReady`` (Kueue docs "Setup All-or-nothing with ready Pods"): a workload whose pods are not all
      ready within the timeout is evicted and requeued. apis/config/v1beta2/defaults.go (v0.19.2) already defaults it
      on with 30 minutes; it is written out so the setting is explicit.
    - ``resources.quotaCheckStrategy: IgnoreUndeclared`` (feature gate QuotaCheckStrategy, beta and on by default
      since 0.19, pkg/features/kube_features.go): only the GPU and EFA quotas of the ClusterQueue are checked.
    """
    timeout = check_count(
        "pods_ready_timeout_minutes", pods_ready_timeout_minutes, minimum=1, maximum=_WAIT_TIMEOUT_MAX_MINUTES
    )
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # enableClusterQueueResources: report kueue_cluster_queue_resource_usage and _nominal_quota (the Queue
        # dashboard's quota panel; apis/config/v1beta2/configuration_types.go ControllerMetrics at v0.19.2; one
        # series per ClusterQueue, flavor and resource).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "waitForPodsReady": {
            "timeout": f"{timeout}m",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction"},
        },
        "resources": {"quotaCheckStrategy": "IgnoreUndeclared"},
        "integrations": {
            "frameworks": [
                "batch/job",
                "kubeflow.org/mpijob",
                "ray.io/rayjob",
                "ray.io/rayservice",
                "ray.io/raycluster",
                "jobset.x-k8s.io/jobset",
                "workload.codeflare.dev/appwrapper",
                "trainer.kubeflow.org/trainjob",
                "pod",
                "deployment",
                "statefulset",
                "leaderworkerset.x-k8s.io/leaderworkerset",
            ]
        },
    }


def kueue_values(*, pods_ready_timeout_minutes: int = 30, source: _addons.ChartSource | None = None) -> dict[str, Any]:
    """Helm values for the Kueue chart: ``managerConfig.controllerManagerConfigYaml`` (a YAML string; JSON is YAML)
    and, for a mirrored image, ``controllerManager.manager.image`` (the chart's image key, values.yaml v0.19.2)."""
    values: dict[str, Any] = {
        "managerConfig": {
            "controllerManagerConfigYaml": json.dumps(
                kueue_configuration(pods_ready_timeout_minutes=pods_ready_timeout_minutes), indent=2
            )
        }
    }
    if source is not None and source.image_repository is not None:
        image: dict[str, Any] = {"repository": source.image_repository, "pullPolicy": "IfNotPresent"}
        if source.image_tag is not None:
            image["tag"] = source.image_tag
        values["controllerManager"] = {"manager": {"image": image}}
    return values


def hyperpod_local_queue_name(team: str) -> str:
    """The LocalQueue HyperPod task governance creates for a team (SageMaker Developer Guide "Using topology-aware
    scheduling in Amazon SageMaker HyperPod task governance": ``hyperpod-ns-<team-name>-localqueue``)."""
    check_str("team", team, min_length=1, allowed="a HyperPod task governance team name")
    return f"hyperpod-ns-{team}-localqueue"


# --- the sample job --------------------------------------------------------------------------------------------------
def _sample_attribution(
    team: str | None, metrics_port: int | None, metrics_path: str
) -> tuple[dict[str, str], dict[str, str], list[dict[str, Any]]]:
    """The sample's ``team`` label, ``fm-app`` scrape annotations and metrics container port (each empty if unset)."""
    labels = {} if team is None else {TEAM_LABEL: check_team("team", team)}
    if metrics_port is None:
        return labels, {}, []
    annotations = app_metrics_annotations(port=metrics_port, path=metrics_path)
    return labels, annotations, [{"name": "metrics", "containerPort": metrics_port}]


def render_sample_training_job(
    *,
    instance_type: str,
    nodes: int,
    image: str,
    queue_name: str = "fm-gpu",
    name: str = "fm-train",
    namespace: str = "default",
    command: Sequence[str] | None = None,
    topology_level: str | None = None,
    required: bool = True,
    team: str | None = None,
    metrics_port: int | None = None,
    metrics_path: str = "/metrics",
) -> dict[str, Any]:
    """A JobSet of ``nodes`` pods (one per node, every GPU and EFA interface of ``instance_type`` from the catalog)
    submitted to the LocalQueue ``queue_name`` and placed under one network node.

    :param topology_level: the Topology level all pods must share (``kueue.x-k8s.io/podset-required-topology``, or
        ``podset-preferred-topology`` with ``required=False``). Default: the bottom network-node layer of the type
        (``topology.k8s.aws/network-node-layer-3``; ``-4`` on p6-b200/p6-b300).
    :param command: the container command; default the image's entrypoint.
    :param team: the ``team`` label on the JobSet and its pods (kube-state-metrics joins GPU series to it); default
        none.
    :param metrics_port: the port where the trainer serves Prometheus metrics: the pods get the ``fm-app`` scrape
        annotations (:mod:`fmconstructs.observability.eks_attribution`); default none. ``metrics_path``: its path.
    """
    from .node_group import INSTANCE_TYPE_LABEL

    spec = get_instance_spec(instance_type)
    count = check_count("nodes", nodes, minimum=1)
    check_image_reference("image", image)
    check_name("queue_name", queue_name)
    check_name("name", name, label=True)
    check_name("namespace", namespace, label=True)
    check_bool("required", required)
    labels, scrape, ports = _sample_attribution(team, metrics_port, metrics_path)
    level = _sample_topology_level(spec.instance_type, topology_level)
    container = _sample_trainer_container(spec, image, command, ports)
    annotation = PODSET_REQUIRED_TOPOLOGY if required else PODSET_PREFERRED_TOPOLOGY
    pod_labels = {"labels": dict(labels)} if labels else {}
    pod_spec = {
        "restartPolicy": "Never",
        "nodeSelector": {INSTANCE_TYPE_LABEL: spec.instance_type},
        "tolerations": [{"key": _addons.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container],
    }
    return {
        "apiVersion": JOBSET_API_VERSION,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_NAME_LABEL: queue_name, **labels}},
        "spec": {
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": count,
                            "completions": count,
                            "completionMode": "Indexed",
                            "backoffLimit": 0,
                            "template": {
                                "metadata": {"annotations": {annotation: level, **scrape}, **pod_labels},
                                "spec": pod_spec,
                            },
                        }
                    },
                }
            ],
        },
    }


def _sample_topology_level(instance_type: str, topology_level: str | None) -> str:
    """The Topology level the sample's pods share: ``topology_level``, default the type's bottom network-node layer."""
    layers = network_layers(instance_type)
    level = NETWORK_NODE_LAYER_LABEL.format(layer=layers) if topology_level is None else topology_level
    if level not in topology_levels(layers):
        raise FmValidationError("topology_level", topology_level, f"one of {topology_levels(layers)}")
    return level


def _sample_trainer_container(
    spec: InstanceSpec, image: str, command: Sequence[str] | None, ports: list[dict[str, Any]]
) -> dict[str, Any]:
    """The sample's one container: every GPU and EFA interface of the node (limits == requests)."""
    from ..networking.interfaces import plan_network_interfaces

    efa = plan_network_interfaces(spec).efa_interface_count
    resources: dict[str, Any] = {GPU_RESOURCE: spec.gpu.count}
    if efa:
        resources[EFA_RESOURCE] = efa
    container: dict[str, Any] = {
        "name": "trainer",
        "image": image,
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }
    if command is not None:
        container["command"] = list(check_str_sequence("command", command, min_items=1))
    if ports:
        container["ports"] = ports
    return container


# --- the construct ---------------------------------------------------------------------------------------------------
#: eks.TaintEffect values (the EKS API spelling) -> Kubernetes taint effects.
_TAINT_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


@jsii.implements(IStableAnyProducer)
class _LazyValue:
    """A ``Lazy.any`` producer from a Python callable (resolved at synthesis)."""

    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


class KueueScheduling(Construct):
    """Kueue with Topology Aware Scheduling and all-or-nothing admission, JobSet, and queues for the GPU node groups
    of ``cluster`` (groups added later join). Use :meth:`GpuEksCluster.add_topology_scheduling`."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        namespaces: Sequence[str] = ("default",),
        cluster_queue_name: str = "fm-gpu",
        local_queue_name: str = "fm-gpu",
        create_namespaces: bool = False,
        pods_ready_timeout_minutes: int = 30,
        jobset: bool = True,
        kueue_source: _addons.ChartSource | None = None,
        jobset_source: _addons.ChartSource | None = None,
    ) -> None:
        """
        :param namespaces: a LocalQueue ``local_queue_name`` in each (DNS-1123 labels, at least one).
        :param create_namespaces: create the namespaces (default False: they exist, or another manifest creates them;
            add a dependency on it to :attr:`queues`).
        :param pods_ready_timeout_minutes: ``waitForPodsReady.timeout``: an admitted job whose pods are not all ready by
            then is evicted and requeued. Default 30 (Kueue's default).
        :param jobset: install the JobSet chart (:data:`JOBSET`). Default True.
        :param kueue_source: where the Kueue chart and image come from (default :data:`KUEUE`, registry.k8s.io);
            ``with_image`` sets ``controllerManager.manager.image``.
        """
        super().__init__(scope, id)
        self._namespaces = check_str_sequence("namespaces", namespaces, min_items=1)
        for index, namespace in enumerate(self._namespaces):
            check_name(f"namespaces[{index}]", namespace, label=True)
        if len(set(self._namespaces)) != len(self._namespaces):
            raise FmValidationError("namespaces", list(self._namespaces), "distinct namespaces")
        check_name("cluster_queue_name", cluster_queue_name)
        check_name("local_queue_name", local_queue_name)
        check_bool("create_namespaces", create_namespaces)
        check_bool("jobset", jobset)
        _addons.check_chart_source("kueue_source", kueue_source)
        _addons.check_chart_source("jobset_source", jobset_source)
        values = kueue_values(pods_ready_timeout_minutes=pods_ready_timeout_minutes, source=kueue_source)
        self.cluster = cluster
        self.cluster_queue_name = cluster_queue_name
        self.local_queue_name = local_queue_name
        self._flavors: dict[tuple[str, str], FlavorQuota] = {}
        self._teams: tuple[Any, ...] = ()
        self._cohort = "fm-teams"
        self._topologies: set[int] = set()
        self._install_charts(values, kueue_source, jobset_source if jobset else None, jobset)
        self.queues = self._add_queues(create_namespaces)
        for group in cluster.gpu_node_groups:
            self.add_node_group(group)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(self._namespaces)

    @property
    def flavors(self) -> tuple[FlavorQuota, ...]:
        """The ResourceFlavors and their quotas so far."""
        return tuple(self._flavors.values())

    def _install_charts(
        self,
        values: dict[str, Any],
        kueue_source: _addons.ChartSource | None,
        jobset_source: _addons.ChartSource | None,
        jobset: bool,
    ) -> None:
        # The image is set through the chart's own key (kueue_values); the source keeps the chart location and values.
        chart_source = (
            None if kueue_source is None else _addons.ChartSource(kueue_source.repository, values=kueue_source.values)
        )
        # wait: the webhooks must serve before the queues are applied (they validate Kueue objects); only with nodes
        # for the controller (the system node group).
        wait = self.cluster.system_node_group is not None
        self.jobset_chart: eks.HelmChart | None = None
        if jobset:
            self.jobset_chart = self.cluster._chart("JobSet", JOBSET, {}, jobset_source, wait=wait)
        self.kueue_chart: eks.HelmChart = self.cluster._chart("Kueue", KUEUE, values, chart_source, wait=wait)
        if self.jobset_chart is not None:
            # Kueue sets up its JobSet integration when the JobSet API exists.
            self.kueue_chart.node.add_dependency(self.jobset_chart)

    def _add_queues(self, create_namespaces: bool) -> eks.KubernetesManifest:
        manifests: list[dict[str, Any]] = []
        if create_namespaces:
            manifests += [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                for namespace in self._namespaces
            ]
        queue = cluster_queue_manifest(self.cluster_queue_name, [FlavorQuota("placeholder", {}, 3, 0, 0)])
        queue["spec"] = Lazy.any(_LazyValue(self._queue_spec))
        manifests.append(queue)
        manifests += [
            local_queue_manifest(self.local_queue_name, ns, self.cluster_queue_name) for ns in self._namespaces
        ]
        manifest = self.cluster.cluster.add_manifest("KueueQueues", *manifests)
        manifest.node.add_dependency(self.kueue_chart)
        return manifest

    def _resource_groups(self) -> list[dict[str, Any]]:
        flavors = list(self._flavors.values())
        if not flavors:
            return []
        return list(cluster_queue_manifest(self.cluster_queue_name, flavors)["spec"]["resourceGroups"])

    def _queue_spec(self) -> dict[str, Any]:
        """The platform ClusterQueue's spec; with teams, the GPUs no team is guaranteed, in the teams' cohort."""
        if self._teams and self._flavors and self._teams_fit() == []:
            from ..teams.kueue import shared_queue_spec

            return shared_queue_spec(
                self.cluster_queue_name, list(self._flavors.values()), self._teams, cohort=self._cohort
            )
        return {"namespaceSelector": {}, "resourceGroups": self._resource_groups()}

    def add_teams(
        self,
        teams: Sequence[Any],
        *,
        create_namespaces: bool = False,
        skip_namespaces: Sequence[str] = (),
        cohort: str | None = None,
    ) -> eks.KubernetesManifest:
        """Teams (:class:`~fmconstructs.teams.Team`) on this Kueue: a cohort, a ClusterQueue per team, a LocalQueue
        named after the team in each of its namespaces, a WorkloadPriorityClass per team
        (:mod:`fmconstructs.teams.kueue`); the platform ClusterQueue keeps the GPUs no team is guaranteed. Once.

        :param create_namespaces: create the teams' namespaces (default False: they exist), except ``default``,
            this scheduling's own namespaces and ``skip_namespaces`` (made elsewhere). A created namespace goes with
            the stack (its manifest is deleted with it).
        :param cohort: the cohort's name (default ``fm-teams``).
        """
        from ..teams import kueue as _teams
        from ..teams.rules import check_teams, kubernetes_team_names, teams_have_namespaces

        if self._teams:
            raise FmValidationError("add_teams", "a second call", "one call per cluster")
        checked = check_teams(teams)
        if not checked:
            raise FmValidationError("teams", [], "at least one Team")
        kubernetes_team_names(checked)
        teams_have_namespaces(checked)
        check_bool("create_namespaces", create_namespaces)
        self._cohort = _teams.DEFAULT_COHORT if cohort is None else cohort
        check_name("cohort", self._cohort)
        for index, team in enumerate(checked):
            if team.name == self.cluster_queue_name:
                raise FmValidationError(
                    f"teams[{index}].name", team.name, f"another name than the platform ClusterQueue's ({team.name!r})"
                )
        self._teams = checked
        self.node.add_validation(_TeamsFit(self))
        skip = {"default", *self._namespaces, *check_str_sequence("skip_namespaces", skip_namespaces)}
        return self._add_team_objects(create_namespaces, skip)

    def _add_team_objects(self, create_namespaces: bool, skip: set[str]) -> eks.KubernetesManifest:
        from ..teams import kueue as _teams

        manifests: list[dict[str, Any]] = []
        if create_namespaces:
            manifests += [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                for team in self._teams
                for namespace in team.namespaces
                if namespace not in skip
            ]
        manifests.append(_teams.cohort_manifest(self._cohort))
        for team in self._teams:
            manifests.append(_teams.team_priority_class(team))
            queue = _teams.team_cluster_queue(team, [], {}, cohort=self._cohort)
            queue["spec"]["resourceGroups"] = Lazy.any(_LazyValue(functools.partial(self._team_resource_groups, team)))
            manifests.append(queue)
            manifests += _teams.team_local_queues(team)
        manifest = self.cluster.cluster.add_manifest("KueueTeams", *manifests)
        manifest.node.add_dependency(self.queues)  # after the flavors (the queues wait for each of them)
        return manifest

    def _team_resource_groups(self, team: Any) -> list[dict[str, Any]]:
        from ..teams import kueue as _teams

        flavors = list(self._flavors.values())
        if not flavors or self._teams_fit():
            return [{"coveredResources": [GPU_RESOURCE], "flavors": []}]
        allocation = _teams.allocate_guarantees(self._teams, flavors)
        queue = _teams.team_cluster_queue(team, flavors, allocation[team.name], cohort=self._cohort)
        return list(queue["spec"]["resourceGroups"])

    def _teams_fit(self) -> list[str]:
        """Errors when the teams' guarantees are more than the flavors' GPUs (or there is no flavor)."""
        from ..teams import kueue as _teams

        flavors = list(self._flavors.values())
        if not flavors:
            return ["teams need a GPU node group in the Kueue ClusterQueue (a flavor with a known size)"]
        try:
            _teams.allocate_guarantees(self._teams, flavors)
        except FmValidationError as error:
            return [str(error)]
        return []

    def add_node_group(self, group: GpuNodeGroup) -> FlavorQuota | None:
        """Add ``group``'s nodes to the flavor of its instance type and capacity kind (created on first use) and its
        GPUs and EFA interfaces x ``max_nodes`` to the ClusterQueue. A deploy-time ``max_nodes`` warns and is left out
        (the quota needs a number at synthesis)."""
        from .node_group import CAPACITY_LABEL, INSTANCE_TYPE_LABEL

        if is_token(group.max_nodes):
            add_warning(
                group,
                WarningId.EKS_SCHEDULING_QUOTA,
                f"{group.node.path}: max_nodes is a deploy-time value, so its GPUs are not in the Kueue ClusterQueue "
                f"{self.cluster_queue_name!r}; give a number to schedule it through Kueue",
            )
            return None
        instance_type = group.instance_spec.instance_type
        capacity = group.labels[CAPACITY_LABEL]
        key = (instance_type, capacity)
        nodes = int(group.max_nodes)
        gpus = group.gpus_per_node * nodes
        efa = group.efa_interface_count * nodes
        known = self._flavors.get(key)
        if known is not None:
            flavor = FlavorQuota(
                known.name,
                known.node_labels,
                known.layers,
                known.gpus + gpus,
                known.efa_interfaces + efa,
                known.tolerations,
            )
            self._flavors[key] = flavor
            return flavor
        layers = network_layers(instance_type)
        flavor = FlavorQuota(
            name=f"{instance_type.replace('.', '-')}-{capacity}".lower(),
            node_labels={INSTANCE_TYPE_LABEL: instance_type, CAPACITY_LABEL: capacity},
            layers=layers,
            gpus=gpus,
            efa_interfaces=efa,
            tolerations=_tolerations(group),
        )
        return self.add_flavor(key, flavor)

    def add_flavor(self, key: tuple[str, str], flavor: FlavorQuota) -> FlavorQuota:
        """Apply ``flavor`` (and its Topology when ``flavor.topology``, once per depth) and add its quota to the
        ClusterQueue under ``key`` (a new key: :meth:`add_node_group` sums node groups of one key itself)."""
        if key in self._flavors:
            raise FmValidationError("key", key, "a flavor key not added yet")
        self._flavors[key] = flavor
        manifests = [resource_flavor_manifest(flavor)]
        if flavor.topology and flavor.layers not in self._topologies:
            self._topologies.add(flavor.layers)
            manifests.insert(0, topology_manifest(flavor.layers))
        manifest = self.cluster.cluster.add_manifest(f"KueueFlavor{len(self._flavors)}", *manifests)
        manifest.node.add_dependency(self.kueue_chart)
        self.queues.node.add_dependency(manifest)
        return flavor


@jsii.implements(IValidation)
class _TeamsFit:
    """``add_teams``: the teams' guarantees fit the flavors' GPUs known at synthesis."""

    def __init__(self, scheduling: KueueScheduling) -> None:
        self._scheduling = scheduling

    def validate(self) -> list[str]:
        return self._scheduling._teams_fit()


def _tolerations(group: GpuNodeGroup) -> tuple[Mapping[str, str], ...]:
    """Tolerations for the group's taints, except the node-checks gate (pods must wait for it)."""
    out: list[Mapping[str, str]] = []
    for taint in group.taints:
        key = taint.key
        if key is None or key == _addons.NODE_CHECKS_TAINT_KEY or is_token(key):
            continue
        effect = _TAINT_EFFECTS.get(str(getattr(taint.effect, "value", taint.effect)), "NoSchedule")
        out.append({"key": key, "operator": "Exists", "effect": effect})
    return tuple(out)
