"""Observability for model servers: the ``fm-serving`` scrape job, ``fm_serving:*`` recording rules and their alerts.

**Metrics** (vLLM 0.30.0 and 0.33.0, :data:`VLLM_METRICS_VERSIONS`: ``vllm/v1/metrics/loggers.py`` of the PyPI
sdists, class ``PrometheusStatLogger``; line numbers in :data:`VLLM_METRICS`). Every name has the ``vllm:``
prefix and the labels ``model_name`` and ``engine`` (``labelnames = ["model_name", "engine"]``, 0.33.0 line 499);
``prometheus_client`` appends ``_total`` to counters and ``_bucket``/``_sum``/``_count`` to histograms. Renames
between versions (the deprecation comments of the stored 0.9/0.10-era ``loggers.py``; vLLM PRs #24110 and #32661):
``vllm:gpu_cache_usage_perc`` became ``vllm:kv_cache_usage_perc`` (deprecated in 0.9),
``vllm:time_per_output_token_seconds`` became ``vllm:inter_token_latency_seconds`` (deprecated in 0.11, then
removed); neither old name is in the 0.30.0 or 0.33.0 file. ``vllm:request_time_per_output_token_seconds`` is the
per-request TPOT, a different histogram. Rules here name only the current series.

**Scrape job** ``fm-serving`` (:func:`serving_scrape_job`, registered by ``AmpEksScraper(serving=True)``): pods
labelled ``fmconstructs.io/model-server`` are found through Kubernetes pod discovery, and only their container port
named ``http`` (the vLLM API and ``/metrics``, port 8000) is scraped at ``/metrics``. Each series carries
``namespace``, ``pod``, ``model_server`` (the pod label's value), ``node`` and ``cluster``.

**Recording rules** (:func:`serving_rule_group`, group ``fmconstructs-serving``, every minute), keyed by ``cluster,
namespace, model_server``: requests waiting and running, TTFT p50/p95/p99, inter-token latency p50/p95, end-to-end
latency p95, generation and prompt tokens per second, KV-cache usage (mean and max over pods and engines), and the
GPUs of the server's pods (count, mean utilization, memory used). GPU series (dcgm-exporter with pod attribution,
:mod:`fmconstructs.observability.eks_attribution`) are joined on ``(cluster, namespace, pod)`` to
``fm_serving:pod:info``: the pods scraped by ``fm-serving`` and, through kube-state-metrics' ``kube_pod_labels``
(``label_fmconstructs_io_model_server``, allowlisted), every pod of the server, including multi-node workers that
serve no ``/metrics``.

**Alerts** (:func:`serving_alert_rule_group`, thresholds in :class:`ServingAlertThresholds`): TTFT and inter-token
latency p95 SLO breaches, a waiting queue above a size for a duration, and restarting server pods
(kube-state-metrics ``kube_pod_container_status_restarts_total``, pods collector).

Latency quantiles interpolate linearly inside vLLM's histogram buckets (``vllm/v1/metrics/buckets.py``: TTFT
buckets ... 1.0, 2.5, 5.0 ... s; inter-token latency ... 0.1, 0.15, 0.2, 0.3 ... s): a threshold between two bucket
bounds (TTFT 2.0 s) is compared with an interpolated estimate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_aps as aps
from constructs import Construct

from .._validate import check_instance, check_number
from ..errors import FmValidationError, is_token
from ..observability._checks import PrometheusDuration, check_prometheus_duration
from ..observability.collection import check_cluster_label
from ..observability.rules import AlertRule, RecordingRule, RuleGroup, Severity, rules_yaml
from ..observability.workspace import _check_group_name_lengths, _check_namespace

#: The vLLM releases whose ``vllm/v1/metrics/loggers.py`` (PyPI sdists ``vllm-0.30.0.tar.gz`` and
#: ``vllm-0.33.0.tar.gz``) define every name of :data:`VLLM_METRICS` unchanged: 0.30.0 is the image
#: :mod:`fmconstructs.serving.vllm` pins, 0.33.0 the newest release on PyPI when written (``pip index versions
#: vllm``). The ``fetch`` snapshot of github:vllm-project/vllm was too large to bring here, so "its newest tag" could
#: not be read.
VLLM_METRICS_VERSIONS: tuple[str, ...] = ("0.30.0", "0.33.0")

#: vLLM metric (as exposed) -> (type, ``vllm/v1/metrics/loggers.py`` lines of its ``name=`` at 0.30.0 / 0.33.0).
VLLM_METRICS: Mapping[str, tuple[str, str]] = {
    "vllm:num_requests_running": ("gauge", "loggers.py:499 / 528"),
    "vllm:num_requests_waiting": ("gauge", "loggers.py:509 / 538"),
    "vllm:kv_cache_usage_perc": ("gauge", "loggers.py:567 / 620 (1 means 100 percent)"),
    "vllm:prompt_tokens_total": ("counter", "loggers.py:676 / 748 (vllm:prompt_tokens)"),
    "vllm:generation_tokens_total": ("counter", "loggers.py:710 / 799 (vllm:generation_tokens)"),
    "vllm:time_to_first_token_seconds": ("histogram", "loggers.py:812 / 931"),
    "vllm:inter_token_latency_seconds": ("histogram", "loggers.py:822 / 941"),
    "vllm:request_time_per_output_token_seconds": ("histogram", "loggers.py:832 / 951"),
    "vllm:e2e_request_latency_seconds": ("histogram", "loggers.py:842 / 961"),
}
#: Pre-0.11 names of the same signals (not read by the rules; for users of older images).
VLLM_RENAMED: Mapping[str, str] = {
    "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc",
    "vllm:time_per_output_token_seconds": "vllm:inter_token_latency_seconds",
}
#: kube-state-metrics (pods collector): ``kube_pod_container_status_restarts_total{namespace,pod,container}``,
#: STABLE (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md).
KSM_RESTARTS = "kube_pod_container_status_restarts_total"

SERVING_JOB = "fm-serving"
MODEL_SERVER_LABEL = "fmconstructs.io/model-server"
METRICS_PORT_NAME = "http"
METRICS_PATH = "/metrics"
#: ``kube_pod_labels`` label of :data:`MODEL_SERVER_LABEL` (kube-state-metrics sanitizes keys to ``label_<key>``).
KSM_MODEL_SERVER_LABEL = "label_fmconstructs_io_model_server"
RULE_GROUP = "fmconstructs-serving"
ALERT_GROUP = "fmconstructs-serving-alerts"
_BY = "cluster, namespace, model_server"
_POD_INFO = "fm_serving:pod:info"
_ON_POD = "on(cluster, namespace, pod)"
_RATE = "5m"
_JOB_MATCHER = f'job="{SERVING_JOB}"'


def _meta_label(label: str) -> str:
    """Prometheus' meta label of a pod label: ``__meta_kubernetes_pod_label_<labelname>``, unsupported characters
    becoming '_' (Prometheus docs, configuration "kubernetes_sd_config", role pod)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^A-Za-z0-9_]", "_", label)


def serving_scrape_job(cluster_label: str) -> dict[str, Any]:
    """The ``fm-serving`` job: every model-server pod's ``http`` port, at ``/metrics``.

    Pod discovery gives one target per container port; only the port named ``http`` is kept, so worker pods of a
    multi-node server (no such port) are not targets. Completed pods are dropped. ``honor_labels: false``: vLLM's own
    labels cannot overwrite ``namespace``/``pod``/``model_server``. Meta labels of the pod role (one target per
    declared container port, ``__meta_kubernetes_pod_container_port_name``, ``__meta_kubernetes_pod_phase``): Prometheus
    docs, configuration "kubernetes_sd_config".

    :param cluster_label: the ``cluster`` label of every series (known at synth time).
    """
    label = _check_cluster_label(cluster_label)
    if label is None:
        raise FmValidationError("cluster_label", cluster_label, "a cluster label")
    return {
        "job_name": SERVING_JOB,
        "honor_labels": False,
        "metrics_path": METRICS_PATH,
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [
            {"source_labels": [_meta_label(MODEL_SERVER_LABEL)], "action": "keep", "regex": ".+"},
            {
                "source_labels": ["__meta_kubernetes_pod_container_port_name"],
                "action": "keep",
                "regex": METRICS_PORT_NAME,
            },
            {"source_labels": ["__meta_kubernetes_pod_phase"], "action": "drop", "regex": "Succeeded|Failed"},
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": [_meta_label(MODEL_SERVER_LABEL)], "target_label": "model_server"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
            {"target_label": "cluster", "replacement": label},
        ],
    }


def _synth_number(parameter: str, value: object, **bounds: Any) -> Any:
    checked = check_number(parameter, value, **bounds)
    if is_token(checked):
        raise FmValidationError(parameter, value, "a number known at synth time (it is written into the rules)")
    return checked


@dataclass(frozen=True)
class ServingAlertThresholds:
    """SLOs and limits of the serving alerts (defaults are starting points, not vLLM guidance: set your SLO).

    Durations are Prometheus durations or ``aws_cdk.Duration`` values; windows must be positive.
    """

    ttft_p95_seconds: float = 2.0  # time to first token, p95 over 5 minutes, per model server
    ttft_for: PrometheusDuration = "10m"
    inter_token_latency_p95_seconds: float = 0.2  # time between two outputs of a stream, p95
    inter_token_latency_for: PrometheusDuration = "10m"
    queue_waiting_requests: int = 10  # requests waiting (summed over the server's pods)
    queue_for: PrometheusDuration = "5m"
    pod_restarts: int = 1  # container restarts of one server pod within restart_window
    restart_window: PrometheusDuration = "15m"

    def __post_init__(self) -> None:
        for name in ("ttft_p95_seconds", "inter_token_latency_p95_seconds"):
            _synth_number(name, getattr(self, name), minimum=0, exclusive_minimum=True, unit="seconds")
        for name in ("queue_waiting_requests", "pod_restarts"):
            object.__setattr__(self, name, _synth_number(name, getattr(self, name), minimum=1, integer=True))
        for name in ("ttft_for", "inter_token_latency_for", "queue_for", "restart_window"):
            text = check_prometheus_duration(name, getattr(self, name), positive=name == "restart_window")
            object.__setattr__(self, name, text)


def _selector(cluster_label: str | None, *matchers: str) -> str:
    parts = [*matchers, *([f'cluster="{cluster_label}"'] if cluster_label is not None else [])]
    return "{" + ", ".join(parts) + "}" if parts else ""


def _check_cluster_label(cluster_label: object) -> str | None:
    if cluster_label is None:
        return None
    label = check_cluster_label(cluster_label)
    if is_token(label):
        raise FmValidationError("cluster_label", cluster_label, "a label known at synth time (written into the rules)")
    return label


def _pod_info(cluster_label: str | None) -> RecordingRule:
    up = "up" + _selector(cluster_label, _JOB_MATCHER)
    ksm = "kube_pod_labels" + _selector(cluster_label, KSM_MODEL_SERVER_LABEL + '!=""')
    by = "group by (cluster, namespace, pod, model_server)"
    relabelled = f'label_replace({ksm}, "model_server", "$1", "{KSM_MODEL_SERVER_LABEL}", "(.+)")'
    return RecordingRule(_POD_INFO, f"{by} ({up}) or {by} ({relabelled})", ("up", "kube_pod_labels"))


def _vllm_rules(cluster_label: str | None) -> list[RecordingRule]:
    sel = _selector(cluster_label, _JOB_MATCHER)
    rules = [
        RecordingRule(f"fm_serving:{record}", f"{agg} by ({_BY}) ({metric}{sel})", (metric,))
        for record, agg, metric in (
            ("requests_waiting:sum", "sum", "vllm:num_requests_waiting"),
            ("requests_running:sum", "sum", "vllm:num_requests_running"),
            ("kv_cache_usage:avg", "avg", "vllm:kv_cache_usage_perc"),
            ("kv_cache_usage:max", "max", "vllm:kv_cache_usage_perc"),
        )
    ]
    for record, metric in (
        ("generation_tokens:rate5m", "vllm:generation_tokens_total"),
        ("prompt_tokens:rate5m", "vllm:prompt_tokens_total"),
    ):
        rules.append(RecordingRule(f"fm_serving:{record}", f"sum by ({_BY}) (rate({metric}{sel}[{_RATE}]))", (metric,)))
    for record, histogram, quantiles in (
        ("ttft_seconds", "vllm:time_to_first_token_seconds", (50, 95, 99)),
        ("inter_token_latency_seconds", "vllm:inter_token_latency_seconds", (50, 95)),
        ("e2e_latency_seconds", "vllm:e2e_request_latency_seconds", (95,)),
    ):
        buckets = f"sum by ({_BY}, le) (rate({histogram}_bucket{sel}[{_RATE}]))"
        for q in quantiles:
            rules.append(
                RecordingRule(f"fm_serving:{record}:p{q}", f"histogram_quantile({q / 100:g}, {buckets})", (histogram,))
            )
    return rules


def _gpu_rules(cluster_label: str | None) -> list[RecordingRule]:
    rules = []
    for record, agg, metric in (
        ("gpus:count", "count", "DCGM_FI_DEV_GPU_UTIL"),
        ("gpu_utilization:avg", "avg", "DCGM_FI_DEV_GPU_UTIL"),
        ("gpu_memory_used_mib:sum", "sum", "DCGM_FI_DEV_FB_USED"),
    ):
        gpu = metric + _selector(cluster_label, 'pod!=""')
        info = _POD_INFO + _selector(cluster_label)
        expr = f"{agg} by ({_BY}) ({gpu} * {_ON_POD} group_left(model_server) {info})"
        rules.append(RecordingRule(f"fm_serving:{record}", expr, (metric,)))
    return rules


def serving_rule_group(*, cluster_label: str | None = None) -> RuleGroup:
    """The ``fm_serving:*`` recording rules (group ``fmconstructs-serving``, every minute).

    :param cluster_label: only series of this ``cluster`` (the scraper's rules, one namespace per cluster); default
        every cluster (for ``PrometheusWorkspace(extra_rule_groups=...)``, once per workspace).
    """
    label = _check_cluster_label(cluster_label)
    rules = [_pod_info(label), *_vllm_rules(label), *_gpu_rules(label)]
    return RuleGroup(RULE_GROUP, tuple(rules), interval="1m")


_SERVER = "{{ $labels.model_server }} ({{ $labels.namespace }}, {{ $labels.cluster }})"


def _latency_alerts(t: ServingAlertThresholds, scope: str) -> list[AlertRule]:
    return [
        AlertRule(
            "FmServingTtftSloBreach",
            f"fm_serving:ttft_seconds:p95{scope} > {t.ttft_p95_seconds:g}",
            t.ttft_for,
            Severity.CRITICAL,
            f"Model server {_SERVER}: time to first token p95 is {{{{ $value }}}} s",
            f"The 95th percentile of time to first token stayed above {t.ttft_p95_seconds:g} s for {t.ttft_for}: "
            "the queue is long (see fm_serving:requests_waiting:sum), prompts are long, or the server needs more "
            "replicas.",
            (),
        ),
        AlertRule(
            "FmServingInterTokenLatencySloBreach",
            f"fm_serving:inter_token_latency_seconds:p95{scope} > {t.inter_token_latency_p95_seconds:g}",
            t.inter_token_latency_for,
            Severity.WARNING,
            f"Model server {_SERVER}: inter-token latency p95 is {{{{ $value }}}} s",
            "The 95th percentile of the time between two outputs of a stream stayed above "
            f"{t.inter_token_latency_p95_seconds:g} s for {t.inter_token_latency_for}: batches are too large for "
            "the GPUs, or the KV cache is full and requests are preempted.",
            (),
        ),
    ]


def serving_alert_rule_group(
    thresholds: ServingAlertThresholds | None = None, *, cluster_label: str | None = None
) -> RuleGroup:
    """Alerts on the serving layer (group ``fmconstructs-serving-alerts``; needs :func:`serving_rule_group`)."""
    if thresholds is not None:
        check_instance("thresholds", thresholds, ServingAlertThresholds, "a ServingAlertThresholds or None")
    t = thresholds or ServingAlertThresholds()
    label = _check_cluster_label(cluster_label)
    scope = _selector(label)
    restarts = f"increase({KSM_RESTARTS}{scope}[{t.restart_window}])"
    info = f"{_POD_INFO}{scope}"
    per_pod = f"sum by ({_BY}, pod) ({restarts} * {_ON_POD} group_left(model_server) {info}) >= {t.pod_restarts}"
    return RuleGroup(
        ALERT_GROUP,
        (
            *_latency_alerts(t, scope),
            AlertRule(
                "FmServingQueueGrowing",
                f"fm_serving:requests_waiting:sum{scope} > {t.queue_waiting_requests}",
                t.queue_for,
                Severity.WARNING,
                f"Model server {_SERVER}: {{{{ $value }}}} requests waiting",
                f"More than {t.queue_waiting_requests} requests waited for {t.queue_for}: the server is saturated "
                "(KV cache or batch full). Add replicas (autoscaling on this queue) or capacity.",
                (),
            ),
            AlertRule(
                "FmServingPodRestarting",
                per_pod,
                "0m",
                Severity.WARNING,
                f"Model server {_SERVER}: pod {{{{ $labels.pod }}}} restarted {{{{ $value }}}} times",
                f"A pod of this model server restarted at least {t.pod_restarts} time(s) in {t.restart_window} "
                "(kube-state-metrics): out of GPU memory, weights not readable, or a failing health probe. "
                "kubectl describe pod and the previous container's log say why.",
                (KSM_RESTARTS,),
            ),
        ),
    )


def serving_rule_groups(
    thresholds: ServingAlertThresholds | None = None, *, cluster_label: str | None = None
) -> tuple[RuleGroup, RuleGroup]:
    """The recording rules and the alerts, e.g. ``PrometheusWorkspace(extra_rule_groups=serving_rule_groups())``."""
    return serving_rule_group(cluster_label=cluster_label), serving_alert_rule_group(
        thresholds, cluster_label=cluster_label
    )


def serving_rule_namespace(cluster_label: str) -> str:
    """The default rule-groups namespace of one cluster's serving rules."""
    return f"{RULE_GROUP}-{cluster_label}"


def add_serving_rules(
    scope: Construct,
    id: str,
    *,
    workspace_arn: str,
    cluster_label: str,
    thresholds: ServingAlertThresholds | None = None,
    rule_namespace: str | None = None,
) -> aps.CfnRuleGroupsNamespace:
    """One cluster's serving rules and alerts as an ``AWS::APS::RuleGroupsNamespace`` in the workspace.

    The rules read only that cluster's series, so two clusters writing to one workspace each get their own namespace
    and no rule records the same series twice.

    :param rule_namespace: the namespace name (1-64 characters); default ``fmconstructs-serving-<cluster_label>``.
    """
    label = _check_cluster_label(cluster_label)
    assert label is not None
    name = serving_rule_namespace(label) if rule_namespace is None else rule_namespace
    _check_namespace(name, suffix="")
    groups = serving_rule_groups(thresholds, cluster_label=label)
    _check_group_name_lengths(name, groups)
    return aps.CfnRuleGroupsNamespace(scope, id, name=name, workspace=workspace_arn, data=rules_yaml(groups))


def _record_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.name for r in serving_rule_group().rules))


SERVING_RECORD_NAMES: tuple[str, ...] = _record_names()
"""Every series the serving layer records (the Serving dashboard reads these)."""
ALERT_NAMES: tuple[str, ...] = tuple(r.name for r in serving_alert_rule_group().rules)
__all__ = [
    "ALERT_NAMES",
    "SERVING_JOB",
    "SERVING_RECORD_NAMES",
    "VLLM_METRICS",
    "VLLM_METRICS_VERSIONS",
    "ServingAlertThresholds",
    "add_serving_rules",
    "serving_alert_rule_group",
    "serving_rule_group",
    "serving_rule_groups",
    "serving_scrape_job",
]
