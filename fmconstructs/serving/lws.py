"""LeaderWorkerSet (LWS): the controller that runs a multi-node model server as groups of pods (one leader, workers).

:data:`LWS_CHART_VERSION` (:func:`lws_chart_pin`) pins the controller's Helm chart; :func:`add_lws_controller`
installs it on a :class:`~fmconstructs.eks.GpuEksCluster` once (from its public OCI registry, or a mirror through
:class:`~fmconstructs.eks.addons.ChartSource`). :mod:`fmconstructs.serving.vllm` renders the ``LeaderWorkerSet``
objects; their schema is tested against the CRD of the pinned version (tests/data/lws_crds, see SOURCE.md there).

Upgrades: Helm installs the chart's CRDs (``crds/``) on the first install only and never updates them
(kubernetes-sigs/lws v0.10.0 site/content/en/docs/installation/_index.md "Upgrade by Helm": apply ``lws/crds`` with
``kubectl apply --server-side --force-conflicts`` before ``helm upgrade``). Changing :data:`LWS_CHART_VERSION`
therefore needs that step too; the CRD of a first install is the pinned one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_cdk import aws_eks_v2 as eks

    from ..eks import addons as _addons
    from ..eks.cluster import GpuEksCluster

# The constants and lws_values() import no aws_cdk (fmconstructs.serving.vllm renders LeaderWorkerSets with them
# without the jsii runtime); lws_chart_pin() and add_lws_controller() import fmconstructs.eks when called.

#: LWS v0.10.0 (kubernetes-sigs/lws tag v0.10.0, commit 2161f38ff333f9e24d3c44adef7cd5d9787cac00, the newest tag of
#: the repository snapshot read on 2026-12-01). site/content/en/docs/installation/_index.md "Install by Helm":
#: ``helm install lws oci://registry.k8s.io/lws/charts/lws --version=0.10.0 --namespace lws-system
#: --create-namespace --wait``; charts/lws/Chart.yaml ``appVersion: "v0.10.0"``.
LWS_CHART = "lws"
LWS_CHART_REPOSITORY = "oci://registry.k8s.io/lws/charts/lws"
LWS_CHART_VERSION = "0.10.0"  # kubernetes-sigs/lws v0.10.0 installation docs (CHART_VERSION=0.10.0)
LWS_NAMESPACE = "lws-system"
LWS_RELEASE = "lws"
#: hack/push-chart.sh (tag v0.10.0) sets ``image.manager.repository`` to ``registry.k8s.io/lws/lws`` and the tag to
#: the release tag (``v0.10.0``) in the published chart. Mirror it for clusters without an internet route and pass
#: ``source=ChartSource.oci(...).with_image("<registry>/lws/lws", tag="v0.10.0")``.
LWS_IMAGE_REPOSITORY = "registry.k8s.io/lws/lws"

#: The served version of the CRD (charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml, v0.10.0).
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"

#: Environment variables and labels the controller adds to every pod of a group (api/leaderworkerset/v1/
#: leaderworkerset_types.go, v0.10.0): the leader's address, the group size, the pod's index in its group (0: leader).
LEADER_ADDRESS_ENV = "LWS_LEADER_ADDRESS"
GROUP_SIZE_ENV = "LWS_GROUP_SIZE"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: The label the LWS controller sets to the LeaderWorkerSet's name (same file, ``SetNameLabelKey``); the vLLM LWS
#: example selects its leader Service with it (docs/examples/vllm/GPU/lws.yaml, v0.10.0).
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def lws_chart_pin() -> _addons.HelmChartPin:
    """The pinned chart (:data:`LWS_CHART_VERSION` from :data:`LWS_CHART_REPOSITORY`, release ``lws`` in
    ``lws-system``) as :class:`~fmconstructs.eks.addons.HelmChartPin`."""
    from ..eks.addons import HelmChartPin

    return HelmChartPin(
        chart=LWS_CHART,
        repository=LWS_CHART_REPOSITORY,
        version=LWS_CHART_VERSION,
        namespace=LWS_NAMESPACE,
        release=LWS_RELEASE,
    )


def lws_values(source: _addons.ChartSource | None = None) -> dict[str, Any]:
    """Helm values for the LWS chart: none by default; a mirrored controller image goes under ``image.manager``
    (the chart's key, charts/lws/values.yaml at v0.10.0), not the top-level ``image`` other charts use."""
    if source is None or source.image_repository is None:
        return {}
    image: dict[str, Any] = {"repository": source.image_repository, "pullPolicy": "IfNotPresent"}
    if source.image_tag is not None:
        image["tag"] = source.image_tag
    return {"image": {"manager": image}}


def add_lws_controller(cluster: GpuEksCluster, *, source: _addons.ChartSource | None = None) -> eks.HelmChart:
    """The LWS controller chart on ``cluster`` (once per cluster; a second call returns the first chart).

    ``wait``: the chart's webhooks (defaulting, validation, conversion) must serve before LeaderWorkerSets are
    applied, so Helm waits when the cluster has a system node group to run the controller.
    """
    from ..eks.addons import ChartSource, check_chart_source

    check_chart_source("lws_source", source)
    values = lws_values(source)
    # The image is set through the chart's own key (lws_values); the source keeps the chart location and values.
    chart_source = None if source is None else ChartSource(source.repository, values=source.values)
    wait = cluster.system_node_group is not None
    return cluster._chart("LeaderWorkerSet", lws_chart_pin(), values, chart_source, wait=wait)
