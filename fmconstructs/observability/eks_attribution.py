"""EKS: GPU series joined to the pod, namespace and team using them, and the training job's own metrics.

Three pieces, all scraped by the AMP managed scraper (:class:`~fmconstructs.observability.eks.AmpEksScraper`):

- **dcgm-exporter pod attribution** (:func:`~fmconstructs.eks.addons.dcgm_exporter_values`): the exporter asks the
  kubelet's pod-resources API which pod holds each GPU and adds ``namespace``, ``pod`` and ``container`` to that GPU's
  series (dcgm-exporter 4.4.1-4.6.0 ``internal/pkg/transformation/const.go`` and ``kubernetes.go``). The scraper's
  dcgm job keeps them (``honor_labels: true``, :func:`dcgm_job`): no target label may overwrite what the exporter
  reports about the pod that holds the GPU.
- **kube-state-metrics** (:func:`add_kube_state_metrics`), chart ``prometheus-community/kube-state-metrics`` 8.4.0,
  with ``--metric-labels-allowlist=namespaces=[team],pods=[team,batch.kubernetes.io/job-name,
  jobset.sigs.k8s.io/jobset-name,fmconstructs.io/model-server]``: ``kube_namespace_labels{namespace,label_team}``
  and ``kube_pod_labels{namespace,pod,label_team,label_batch_kubernetes_io_job_name,
  label_jobset_sigs_k8s_io_jobset_name,label_fmconstructs_io_model_server}`` join GPU series to a team, a job and a
  model server (:mod:`fmconstructs.serving.observability`).
- **Application metrics** (:func:`app_metrics_job`, Prometheus job ``fm-app``): pods annotated
  ``fmconstructs.io/scrape: "true"`` and ``fmconstructs.io/port: "<port>"`` (optionally ``fmconstructs.io/path``,
  default ``/metrics``) are scraped through pod discovery; their series carry ``namespace`` and ``pod``.

Cardinality stays bounded: kube-state-metrics runs only the ``pods``, ``namespaces``, ``nodes`` and ``jobs``
collectors (one series family per object of those kinds, no per-object label explosion) and copies only the four
allowlisted label keys (never ``*``); dcgm-exporter adds one label set per (GPU, container holding it), i.e. at most
one per GPU with whole-GPU allocation, and pod labels stay off (``kubernetes.enablePodLabels: false``); the
application job only scrapes pods that opt in, and its own labels cannot overwrite ``namespace``/``pod``
(``honor_labels: false``: a conflicting exposed label is kept as ``exported_<name>``).
"""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import aws_eks_v2 as eks

from .._validate import check_count, check_instance
from .._validate_k8s import check_label_value
from .._validate_refs import check_url_path
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, HelmChartPin, check_chart_source, check_version

#: The pod/namespace label key that names the owning team (issue 22 shared contract).
TEAM_LABEL = "team"
#: Pod annotations of the application-metrics contract (``fm-app``).
APP_SCRAPE_ANNOTATION = "fmconstructs.io/scrape"
APP_PORT_ANNOTATION = "fmconstructs.io/port"
APP_PATH_ANNOTATION = "fmconstructs.io/path"
APP_JOB = "fm-app"
APP_DEFAULT_PATH = "/metrics"
KUBE_STATE_METRICS_JOB = "kube-state-metrics"

#: kube-state-metrics from prometheus-community/helm-charts: chart 8.4.0, appVersion 2.20.0 (image
#: ``registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.20.0``), tag ``kube-state-metrics-8.4.0`` (commit
#: 1982f1c, 2026-08-18) ``charts/kube-state-metrics/Chart.yaml``; the Helm repository URL is the chart README's
#: ("Helm Repository: https://prometheus-community.github.io/helm-charts with chart kube-state-metrics"). Its Service
#: is named after the release (``kube-state-metrics.fullname`` in templates/_helpers.tpl: the release name when it
#: contains the chart name) and annotated ``prometheus.io/scrape: 'true'`` (``prometheusScrape: true``,
#: templates/service.yaml).
KUBE_STATE_METRICS = HelmChartPin(
    chart="kube-state-metrics",
    repository="https://prometheus-community.github.io/helm-charts",
    version="8.4.0",
    namespace="kube-state-metrics",
    release="kube-state-metrics",
)
KUBE_STATE_METRICS_SERVICE = KUBE_STATE_METRICS.release
#: Only these collectors (values.yaml ``collectors``, rendered as ``--resources=...`` by templates/deployment.yaml;
#: the chart's ClusterRole covers only the listed resources).
KUBE_STATE_METRICS_COLLECTORS: tuple[str, ...] = ("pods", "namespaces", "nodes", "jobs")
#: values.yaml ``metricLabelsAllowlist`` (a list the deployment template joins with ',' into
#: ``--metric-labels-allowlist``).
KUBE_STATE_METRICS_LABELS_ALLOWLIST: tuple[str, ...] = (
    f"namespaces=[{TEAM_LABEL}]",
    # fmconstructs.io/model-server: every pod of a model server (multi-node workers too) joins its GPU series to the
    # server (fmconstructs.serving.observability, fm_serving:pod:info)
    f"pods=[{TEAM_LABEL},batch.kubernetes.io/job-name,jobset.sigs.k8s.io/jobset-name,fmconstructs.io/model-server]",
)
#: The image tag the chart uses when ``image.tag`` is empty: ``v`` + appVersion (templates/_helpers.tpl
#: ``kube-state-metrics.image``).
KUBE_STATE_METRICS_IMAGE_TAG = "v2.20.0"


def kube_state_metrics_values(*, image_repository: str | None = None, image_tag: str | None = None) -> dict[str, Any]:
    """Values for ``kube-state-metrics`` (keys from the chart's values.yaml at 8.4.0).

    The chart takes its image as ``image.registry`` + ``image.repository`` (not one repository string as the GPU
    charts do), so a mirror ``<registry>/<path>`` (:meth:`ChartSource.with_image`) is split at the first '/'.
    """
    values: dict[str, Any] = {
        "collectors": list(KUBE_STATE_METRICS_COLLECTORS),
        "metricLabelsAllowlist": list(KUBE_STATE_METRICS_LABELS_ALLOWLIST),
        "prometheusScrape": True,
    }
    if image_repository is not None:
        registry, _, path = image_repository.partition("/")
        values["image"] = {"registry": registry, "repository": path, "tag": image_tag or KUBE_STATE_METRICS_IMAGE_TAG}
    return values


def add_kube_state_metrics(
    cluster: GpuEksCluster, *, version: str | None = None, source: ChartSource | None = None
) -> eks.HelmChart:
    """kube-state-metrics on ``cluster`` (installed once, like the GPU add-on charts; id ``KubeStateMetrics``).

    :param version: the chart version; default :data:`KUBE_STATE_METRICS` (8.4.0).
    :param source: where the chart and its image come from (private clusters: ``ChartSource.oci(...)
        .with_image("<account>.dkr.ecr.<region>.amazonaws.com/kube-state-metrics/kube-state-metrics")`` after copying
        ``registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.20.0`` there). Default: the public repository.
    """
    check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
    check_version("version", version)
    chosen = check_chart_source("source", source) or ChartSource.PUBLIC
    values = kube_state_metrics_values(image_repository=chosen.image_repository, image_tag=chosen.image_tag)
    # the image goes in as registry + repository above; the rest of the source (chart location, values) as is
    chart_source = ChartSource(repository=chosen.repository, values=chosen.values)
    return cluster._chart("KubeStateMetrics", KUBE_STATE_METRICS.with_version(version), values, chart_source)


def _common_labels(cluster_label: str) -> list[dict[str, Any]]:
    return [{"target_label": "cluster", "replacement": cluster_label}]


def service_job(name: str, service: str, cluster_label: str, *, honor_labels: bool = False) -> dict[str, Any]:
    """A job that scrapes the endpoints of the Kubernetes Service ``service`` (those annotated
    ``prometheus.io/scrape: "true"``), ``instance`` and ``node`` set to the pod's node, ``cluster`` to
    ``cluster_label``."""
    job: dict[str, Any] = {"job_name": name}
    if honor_labels:
        job["honor_labels"] = True
    job["kubernetes_sd_configs"] = [{"role": "endpoints"}]
    job["relabel_configs"] = [
        {"source_labels": ["__meta_kubernetes_service_name"], "action": "keep", "regex": service},
        {
            "source_labels": ["__meta_kubernetes_service_annotation_prometheus_io_scrape"],
            "action": "keep",
            "regex": "true",
        },
        {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "instance"},
        {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
        *_common_labels(cluster_label),
    ]
    return job


def dcgm_job(service: str, cluster_label: str) -> dict[str, Any]:
    """The dcgm-exporter job: ``honor_labels: true`` keeps the exporter's ``namespace``/``pod``/``container`` (the
    pod holding the GPU) whatever target labels are added, and it adds none of those names itself."""
    return service_job("dcgm", service, cluster_label, honor_labels=True)


def kube_state_metrics_job(cluster_label: str) -> dict[str, Any]:
    """kube-state-metrics: its series describe other objects (``namespace``, ``pod``, ``node`` of the object), so the
    job keeps them (``honor_labels: true``) and adds no ``node``/``instance`` of the exporter pod."""
    return {
        "job_name": KUBE_STATE_METRICS_JOB,
        "honor_labels": True,
        "kubernetes_sd_configs": [{"role": "endpoints"}],
        "relabel_configs": [
            {
                "source_labels": ["__meta_kubernetes_service_name"],
                "action": "keep",
                "regex": KUBE_STATE_METRICS_SERVICE,
            },
            {
                "source_labels": ["__meta_kubernetes_service_annotation_prometheus_io_scrape"],
                "action": "keep",
                "regex": "true",
            },
            *_common_labels(cluster_label),
        ],
    }


def _meta_annotation(annotation: str) -> str:
    """Prometheus' meta label of a pod annotation (unsupported characters become '_')."""
    return "__meta_kubernetes_pod_annotation_" + re.sub(r"[^A-Za-z0-9_]", "_", annotation)


def app_metrics_job(cluster_label: str) -> dict[str, Any]:
    """``fm-app``: pods that opt in through annotations, each target labelled with its ``namespace`` and ``pod``.

    Completed pods (``Succeeded``/``Failed``) are dropped; the address becomes ``<pod IP>:<fmconstructs.io/port>``
    (targets of a pod's several container ports collapse to one, as Prometheus merges identical targets).
    ``honor_labels: false``: a series exposing its own ``namespace`` or ``pod`` keeps it as ``exported_*``."""
    return {
        "job_name": APP_JOB,
        "honor_labels": False,
        "metrics_path": APP_DEFAULT_PATH,
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [
            {"source_labels": [_meta_annotation(APP_SCRAPE_ANNOTATION)], "action": "keep", "regex": "true"},
            {"source_labels": [_meta_annotation(APP_PORT_ANNOTATION)], "action": "keep", "regex": "[0-9]+"},
            {"source_labels": ["__meta_kubernetes_pod_phase"], "action": "drop", "regex": "Succeeded|Failed"},
            {
                "source_labels": ["__meta_kubernetes_pod_ip", _meta_annotation(APP_PORT_ANNOTATION)],
                "separator": ";",
                "regex": "(.+);([0-9]+)",
                "replacement": "$1:$2",
                "target_label": "__address__",
            },
            {
                "source_labels": [_meta_annotation(APP_PATH_ANNOTATION)],
                "regex": "(/.*)",
                "target_label": "__metrics_path__",
            },
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
            *_common_labels(cluster_label),
        ],
    }


def app_metrics_annotations(*, port: int, path: str = APP_DEFAULT_PATH) -> dict[str, str]:
    """The pod annotations that make the managed scraper collect a pod's own metrics (job ``fm-app``).

    :param port: the container port serving Prometheus metrics (1-65535).
    :param path: the metrics path, default ``/metrics``.
    """
    port = check_count("metrics_port", port, minimum=1, maximum=65535)
    check_url_path("metrics_path", path, max_length=1024, example="/metrics")
    annotations = {APP_SCRAPE_ANNOTATION: "true", APP_PORT_ANNOTATION: str(port)}
    if path != APP_DEFAULT_PATH:
        annotations[APP_PATH_ANNOTATION] = path
    return annotations


def check_team(parameter: str, value: object) -> Any:
    """A team name: the value of the ``team`` label (a Kubernetes label value)."""
    return check_label_value(parameter, value, allow_empty=False)
