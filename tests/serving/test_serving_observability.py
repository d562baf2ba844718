"""Serving observability: the ``fm-serving`` scrape job, the ``fm_serving:*`` recording rules and their alerts (run by
promtool on a healthy server, a latency breach, a growing queue and a restarting pod), ``AmpEksScraper(serving=True)``
and the Serving dashboard.

promtool 2.42: range selectors include both ends, so ``rate(x[5m])`` at 20m reads the six samples 15m..20m."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError
from fmconstructs.observability.dashboards import load_dashboards
from fmconstructs.observability.eks import AmpEksScraper, eks_scrape_config
from fmconstructs.observability.eks_attribution import kube_state_metrics_values
from fmconstructs.observability.metrics import DCGM_METRICS
from fmconstructs.observability.rules import AlertRule, RecordingRule, rules_yaml
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.serving.observability import (
    ALERT_NAMES,
    KSM_RESTARTS,
    SERVING_JOB,
    SERVING_RECORD_NAMES,
    VLLM_METRICS,
    VLLM_RENAMED,
    ServingAlertThresholds,
    serving_alert_rule_group,
    serving_rule_group,
    serving_rule_groups,
    serving_scrape_job,
)

from tests.conftest import ENV, new_scene, require_tool
from tests.support.eks_job_attribution import _relabel

CLUSTER = "eks-a"


# --- 1. metric names ------------------------------------------------------------------------------------------------
def test_vllm_metric_names_are_the_033_names():
    # vllm/v1/metrics/loggers.py at 0.33.0: counters exposed with _total, the renamed series are not read
    assert {
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:kv_cache_usage_perc",
    } <= set(VLLM_METRICS)
    assert all(name.startswith("vllm:") for name in VLLM_METRICS)
    text = rules_yaml(serving_rule_groups())
    for old in VLLM_RENAMED:
        assert old not in text


def test_every_rule_reads_only_collected_metrics_and_uses_what_it_declares():
    collected = set(VLLM_METRICS) | DCGM_METRICS | {"up", "kube_pod_labels", KSM_RESTARTS}
    for group in serving_rule_groups():
        for rule in group.rules:
            assert set(rule.metrics) <= collected, rule.name
            assert all(m in rule.expr for m in rule.metrics), rule.name


def test_records_are_keyed_by_cluster_namespace_and_model_server():
    for rule in serving_rule_group().rules:
        assert rule.name.startswith("fm_serving:")
        if rule.name != "fm_serving:pod:info":
            assert "by (cluster, namespace, model_server" in rule.expr, rule.name
    assert ALERT_NAMES == (
        "FmServingTtftSloBreach",
        "FmServingInterTokenLatencySloBreach",
        "FmServingQueueGrowing",
        "FmServingPodRestarting",
    )


def test_cluster_scoped_rules_read_only_that_cluster():
    for group in serving_rule_groups(cluster_label=CLUSTER):
        for rule in group.rules:
            if rule.metrics or isinstance(rule, AlertRule):
                assert f'cluster="{CLUSTER}"' in rule.expr, rule.name
    assert 'cluster="' not in rules_yaml(serving_rule_groups())


# --- 2. the scrape job ----------------------------------------------------------------------------------------------
SERVER_POD = {
    "__address__": "10.0.4.9:8000",
    "__metrics_path__": "/metrics",
    "__meta_kubernetes_namespace": "fm-serving",
    "__meta_kubernetes_pod_name": "llama-0",
    "__meta_kubernetes_pod_ip": "10.0.4.9",
    "__meta_kubernetes_pod_node_name": "ip-10-0-4-9.ec2.internal",
    "__meta_kubernetes_pod_phase": "Running",
    "__meta_kubernetes_pod_label_fmconstructs_io_model_server": "llama",
    "__meta_kubernetes_pod_container_port_name": "http",
}


def test_fm_serving_scrapes_the_http_port_with_namespace_pod_and_model_server():
    job = serving_scrape_job(CLUSTER)
    assert job["job_name"] == SERVING_JOB == "fm-serving"
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
    assert job["metrics_path"] == "/metrics" and job["honor_labels"] is False
    labels = _relabel(job["relabel_configs"], SERVER_POD)
    assert labels == {
        "__address__": "10.0.4.9:8000",
        "__metrics_path__": "/metrics",
        "namespace": "fm-serving",
        "pod": "llama-0",
        "model_server": "llama",
        "node": "ip-10-0-4-9.ec2.internal",
        "cluster": CLUSTER,
    }


@pytest.mark.parametrize(
    "changes",
    [
        {"__meta_kubernetes_pod_label_fmconstructs_io_model_server": ""},  # not a model server
        {"__meta_kubernetes_pod_container_port_name": "nccl"},  # a worker's other port
        {"__meta_kubernetes_pod_container_port_name": ""},  # a container without named ports
        {"__meta_kubernetes_pod_phase": "Succeeded"},
        {"__meta_kubernetes_pod_phase": "Failed"},
    ],
)
def test_fm_serving_ignores_other_pods_and_ports(changes):
    assert _relabel(serving_scrape_job(CLUSTER)["relabel_configs"], {**SERVER_POD, **changes}) is None


@pytest.mark.parametrize("label", [None, "", "a b", cdk.Token.as_string(cdk.Aws.STACK_NAME)])
def test_scrape_job_refuses_bad_cluster_labels(label):
    with pytest.raises(FmValidationError, match=r"^cluster_label"):
        serving_scrape_job(label)


def test_scrape_config_has_fm_serving_only_when_asked():
    def names(config: dict[str, Any]) -> list[str]:
        return [j["job_name"] for j in config["scrape_configs"]]

    assert "fm-serving" not in names(eks_scrape_config(cluster_label=CLUSTER))
    with_serving = eks_scrape_config(cluster_label=CLUSTER, serving=True)
    assert names(with_serving)[-1] == "fm-serving"
    assert names(with_serving)[:-1] == names(eks_scrape_config(cluster_label=CLUSTER))


def test_scrape_config_with_serving_passes_promtool(tmp_path):
    """promtool (Debian, built without Kubernetes discovery) checks the jobs with a static target in place of
    kubernetes_sd_configs."""
    promtool = require_tool("promtool", "prometheus")
    config = eks_scrape_config(cluster_label=CLUSTER, serving=True)
    for job in config["scrape_configs"]:
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["localhost:8000"]}]
    path = tmp_path / "scrape.yml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_kube_state_metrics_copies_the_model_server_pod_label():
    (pods,) = [a for a in kube_state_metrics_values()["metricLabelsAllowlist"] if a.startswith("pods=")]
    assert "fmconstructs.io/model-server" in pods
    assert "pods" in kube_state_metrics_values()["collectors"]  # kube_pod_container_status_restarts_total


# --- 3. the scraper option --------------------------------------------------------------------------------------------
def _scraper(**options: Any) -> tuple[AmpEksScraper, Template]:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    scraper = AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "P"),
        cluster_label=CLUSTER,
        **options,
    )
    return scraper, Template.from_stack(scene.stack)


def _blob_jobs(template: Template) -> list[str]:
    (scraper,) = template.find_resources("AWS::APS::Scraper").values()
    blob = scraper["Properties"]["ScrapeConfiguration"]["ConfigurationBlob"]
    return [j["job_name"] for j in yaml.safe_load(base64.b64decode(blob))["scrape_configs"]]


def test_scraper_with_serving_collects_vllm_and_adds_the_clusters_rules():
    scraper, template = _scraper(serving=True, serving_thresholds=ServingAlertThresholds(ttft_p95_seconds=1.5))
    assert "fm-serving" in _blob_jobs(template)
    template.resource_count_is("AWS::APS::RuleGroupsNamespace", 1)
    template.has_resource_properties(
        "AWS::APS::RuleGroupsNamespace", {"Name": "fmconstructs-serving-eks-a", "Workspace": Match.any_value()}
    )
    (namespace,) = template.find_resources("AWS::APS::RuleGroupsNamespace").values()
    data = yaml.safe_load(namespace["Properties"]["Data"])
    assert [g["name"] for g in data["groups"]] == ["fmconstructs-serving", "fmconstructs-serving-alerts"]
    ttft = next(r for r in data["groups"][1]["rules"] if r["alert"] == "FmServingTtftSloBreach")
    assert ttft["expr"] == 'fm_serving:ttft_seconds:p95{cluster="eks-a"} > 1.5'
    assert scraper.serving_rules is not None


def test_scraper_without_serving_adds_nothing():
    scraper, template = _scraper()
    assert "fm-serving" not in _blob_jobs(template)
    template.resource_count_is("AWS::APS::RuleGroupsNamespace", 0)
    assert scraper.serving_rules is None


def test_scraper_takes_a_rule_namespace_name():
    _, template = _scraper(serving=True, serving_rule_namespace="serving-a")
    template.has_resource_properties("AWS::APS::RuleGroupsNamespace", {"Name": "serving-a"})


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"serving": "yes"}, "serving"),
        ({"serving": True, "serving_thresholds": {"ttft_p95_seconds": 1}}, "thresholds"),
        ({"serving": True, "serving_rule_namespace": "x" * 65}, "rule_namespace"),
        ({"serving": True, "serving_rule_namespace": ""}, "rule_namespace"),
    ],
)
def test_scraper_refuses_bad_serving_options(overrides, parameter):
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{parameter}"):
        _scraper(**overrides)


def test_a_long_cluster_label_needs_an_explicit_rule_namespace():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"^rule_namespace"):
        AmpEksScraper(
            scene.stack,
            "Scraper",
            cluster=cluster,
            workspace="arn:aws:aps:us-east-1:111122223333:workspace/ws-12345678-abcd-1234-abcd-123456789012",
            cluster_label="c" * 60,
            serving=True,
        )


# --- 4. thresholds ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ttft_p95_seconds", 0),
        ("ttft_p95_seconds", -1.0),
        ("ttft_p95_seconds", float("nan")),
        ("ttft_p95_seconds", "2s"),
        ("ttft_p95_seconds", True),
        ("inter_token_latency_p95_seconds", 0),
        ("queue_waiting_requests", 0),
        ("queue_waiting_requests", 2.5),
        ("pod_restarts", 0),
        ("ttft_for", "10 minutes"),
        ("queue_for", "-5m"),
        ("restart_window", "0"),
        ("inter_token_latency_for", 600),
    ],
)
def test_thresholds_refuse_bad_values(field, value):
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{field}"):
        ServingAlertThresholds(**{field: value})


def test_thresholds_take_cdk_durations_and_whole_floats():
    t = ServingAlertThresholds(ttft_for=cdk.Duration.minutes(15), queue_waiting_requests=20.0)
    assert t.ttft_for == "15m" and t.queue_waiting_requests == 20
    (ttft, *_), queue = serving_alert_rule_group(t).rules, serving_alert_rule_group(t).rules[2]
    assert isinstance(ttft, AlertRule) and ttft.for_ == "15m"
    assert isinstance(queue, AlertRule) and queue.expr == "fm_serving:requests_waiting:sum > 20"


@pytest.mark.parametrize("label", ["", "a b", 'x"y', cdk.Token.as_string(cdk.Aws.STACK_NAME)])
def test_rule_scope_refuses_bad_cluster_labels(label):
    with pytest.raises(FmValidationError, match=r"^cluster_label"):
        serving_rule_group(cluster_label=label)


def test_alert_group_refuses_a_dict_of_thresholds():
    with pytest.raises(FmTypeError, match=r"^thresholds"):
        serving_alert_rule_group({"ttft_p95_seconds": 1})  # type: ignore[arg-type]


# --- 5. promtool: records and alerts on four model servers --------------------------------------------------------------
VLLM = {"job": "fm-serving", "cluster": CLUSTER, "namespace": "fm-serving", "model_name": "m"}
KSM = {"job": "kube-state-metrics", "cluster": CLUSTER, "instance": "ksm:8080"}
DCGM = {"job": "dcgm", "cluster": CLUSTER, "container": "c"}
SAMPLES = "x45"  # 0..45 minutes


def _s(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _srv(server: str, pod: str, engine: str = "0") -> dict[str, str]:
    return {**VLLM, "pod": pod, "model_server": server, "instance": f"{pod}:8000", "engine": engine}


def _histogram(name: str, labels: dict[str, str], buckets: dict[str, int]) -> list[dict[str, str]]:
    """Cumulative bucket counters growing by ``per_minute`` observations each minute."""
    return [
        {"series": _s(f"{name}_bucket", {**labels, "le": le}), "values": f"0+{n}{SAMPLES}"} for le, n in buckets.items()
    ]


def _vllm_inputs() -> list[dict[str, str]]:
    ttft, itl = "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds"
    healthy, slow, busy = _srv("healthy", "healthy-0"), _srv("slow", "slow-0"), _srv("busy", "busy-0")
    inputs = [
        # healthy: two engines (data parallel), every first token within 1 s, every gap within 50 ms
        {"series": _s("vllm:num_requests_running", healthy), "values": f"3{SAMPLES}"},
        {"series": _s("vllm:num_requests_running", _srv("healthy", "healthy-0", "1")), "values": f"1{SAMPLES}"},
        {"series": _s("vllm:num_requests_waiting", healthy), "values": f"0{SAMPLES}"},
        {"series": _s("vllm:kv_cache_usage_perc", healthy), "values": f"0.25{SAMPLES}"},
        {"series": _s("vllm:kv_cache_usage_perc", _srv("healthy", "healthy-0", "1")), "values": f"0.75{SAMPLES}"},
        {"series": _s("vllm:generation_tokens_total", healthy), "values": f"0+600{SAMPLES}"},
        {"series": _s("vllm:prompt_tokens_total", healthy), "values": f"0+1200{SAMPLES}"},
        *_histogram(ttft, healthy, {"1": 60, "2.5": 60, "5": 60, "+Inf": 60}),
        *_histogram(itl, healthy, {"0.05": 600, "0.2": 600, "0.5": 600, "+Inf": 600}),
        *_histogram("vllm:e2e_request_latency_seconds", healthy, {"5": 60, "+Inf": 60}),
        # slow: first tokens between 2.5 and 5 s, gaps between 0.2 and 0.5 s (both SLOs breached)
        {"series": _s("vllm:num_requests_waiting", slow), "values": f"2{SAMPLES}"},
        *_histogram(ttft, slow, {"1": 0, "2.5": 0, "5": 60, "+Inf": 60}),
        *_histogram(itl, slow, {"0.05": 0, "0.2": 0, "0.5": 600, "+Inf": 600}),
        # busy: the queue grows by 2 a minute (above 10 from minute 6) up to 30 at minute 15 and stays there (the
        # alert group may read the record of the previous minute: groups run in no fixed order)
        {"series": _s("vllm:num_requests_waiting", busy), "values": "0+2x15 30x30"},
    ]
    up = [("healthy", "healthy-0", 1), ("slow", "slow-0", 1), ("busy", "busy-0", 1), ("crashy", "crashy-0", 0)]
    for server, pod, value in up:
        labels = {k: v for k, v in _srv(server, pod).items() if k not in ("model_name", "engine")}
        inputs.append({"series": _s("up", labels), "values": f"{value}{SAMPLES}"})
    return inputs


def _cluster_inputs() -> list[dict[str, str]]:
    pods = [
        ("fm-serving", "healthy-0", "healthy"),
        ("fm-serving", "healthy-0-1", "healthy"),  # multi-node worker: no /metrics, known through kube_pod_labels
        ("fm-serving", "crashy-0", "crashy"),
        ("training", "train-0", ""),  # not a model server
    ]
    inputs = []
    for namespace, pod, server in pods:
        labels = {**KSM, "namespace": namespace, "pod": pod, "uid": pod}
        if server:
            labels["label_fmconstructs_io_model_server"] = server
        inputs.append({"series": _s("kube_pod_labels", labels), "values": f"1{SAMPLES}"})
    gpus = [
        ("fm-serving", "healthy-0", 90, 1000),
        ("fm-serving", "healthy-0-1", 50, 3000),
        ("training", "train-0", 100, 7),
    ]
    gpus.append(("fm-serving", "slow-0", 40, 500))
    for i, (namespace, pod, util, fb) in enumerate(gpus):
        labels = {**DCGM, "instance": f"node-{i}", "gpu": "0", "namespace": namespace, "pod": pod}
        inputs.append({"series": _s("DCGM_FI_DEV_GPU_UTIL", labels), "values": f"{util}{SAMPLES}"})
        inputs.append({"series": _s("DCGM_FI_DEV_FB_USED", labels), "values": f"{fb}{SAMPLES}"})
    restarts = [
        ("fm-serving", "crashy-0", "0x9 1 1 2x33"),  # restarts at minutes 10 and 12
        ("fm-serving", "healthy-0", f"0{SAMPLES}"),
        ("kube-system", "coredns-1", f"0+1{SAMPLES}"),  # restarting, but not a model server
    ]
    for namespace, pod, values in restarts:
        labels = {**KSM, "namespace": namespace, "pod": pod, "container": "main", "uid": pod}
        inputs.append({"series": _s(KSM_RESTARTS, labels), "values": values})
    return inputs


def _key(server: str, namespace: str = "fm-serving") -> dict[str, str]:
    return {"cluster": CLUSTER, "namespace": namespace, "model_server": server}


def _expr_tests() -> list[dict[str, Any]]:
    h = _key("healthy")
    expected: dict[str, list[tuple[dict[str, str], float]]] = {
        "fm_serving:requests_running:sum": [(h, 4)],
        "fm_serving:requests_waiting:sum": [(h, 0), (_key("slow"), 2), (_key("busy"), 30)],
        "fm_serving:kv_cache_usage:avg": [(h, 0.5)],
        "fm_serving:kv_cache_usage:max": [(h, 0.75)],
        "fm_serving:generation_tokens:rate5m": [(h, 10)],
        "fm_serving:prompt_tokens:rate5m": [(h, 20)],
        "fm_serving:ttft_seconds:p50": [(h, 0.5), (_key("slow"), 3.75)],
        "fm_serving:inter_token_latency_seconds:p50": [(h, 0.025), (_key("slow"), 0.35)],
        "fm_serving:e2e_latency_seconds:p95": [(h, 4.75)],
        "fm_serving:gpus:count": [(h, 2), (_key("slow"), 1)],
        "fm_serving:gpu_utilization:avg": [(h, 70), (_key("slow"), 40)],
        "fm_serving:gpu_memory_used_mib:sum": [(h, 4000), (_key("slow"), 500)],
    }
    tests = [
        {
            "expr": record,
            "eval_time": "20m",
            "exp_samples": [{"labels": _s(record, lbl), "value": v} for lbl, v in rows],
        }
        for record, rows in expected.items()
    ]
    info = [("healthy", "healthy-0"), ("healthy", "healthy-0-1"), ("slow", "slow-0"), ("busy", "busy-0")]
    info.append(("crashy", "crashy-0"))
    tests.append(
        {
            "expr": "fm_serving:pod:info",
            "eval_time": "20m",
            "exp_samples": [
                {"labels": _s("fm_serving:pod:info", {**_key(s), "pod": p}), "value": 1} for s, p in sorted(info)
            ],
        }
    )
    for q, healthy, slow in (("p95", 0.95, 4.875), ("p99", 0.99, 4.975)):
        record = f"fm_serving:ttft_seconds:{q}"
        tests.append(
            {
                "expr": f"round({record}, 0.001)",
                "eval_time": "20m",
                "exp_samples": [
                    {"labels": _s("", {**_key(s)}), "value": v} for s, v in (("healthy", healthy), ("slow", slow))
                ],
            }
        )
    return tests


def _go(value: float) -> str:
    """A float as Go's %v prints it (promtool renders {{ $value }} with it)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _alerts(name: str, values: dict[str, float], extra: dict[str, str] | None = None) -> list[dict[str, Any]]:
    (rule,) = [r for r in serving_alert_rule_group().rules if r.name == name]
    assert isinstance(rule, AlertRule)
    out = []
    for server, value in values.items():
        labels = {**_key(server), **(extra or {})}
        summary = rule.summary.replace("{{ $value }}", _go(value))
        for key, label in labels.items():
            summary = summary.replace("{{ $labels." + key + " }}", label)
        out.append(
            {
                "exp_labels": {**labels, "severity": rule.severity.value},
                "exp_annotations": {"summary": summary, "description": rule.description},
            }
        )
    return out


def _alert_tests() -> list[dict[str, Any]]:
    ttft, itl = "FmServingTtftSloBreach", "FmServingInterTokenLatencySloBreach"
    queue, restart = "FmServingQueueGrowing", "FmServingPodRestarting"
    return [
        # latency breach: p95 above the SLO from minute 1, firing after 10 minutes, only for "slow"
        {"eval_time": "8m", "alertname": ttft, "exp_alerts": []},
        {"eval_time": "20m", "alertname": ttft, "exp_alerts": _alerts(ttft, {"slow": 2.5 + 2.5 * 0.95})},
        {"eval_time": "20m", "alertname": itl, "exp_alerts": _alerts(itl, {"slow": 0.2 + 0.3 * 0.95})},
        # growing queue: above 10 from minute 6, firing 5 minutes later; "slow" waits 2 (quiet)
        {"eval_time": "9m", "alertname": queue, "exp_alerts": []},
        {"eval_time": "20m", "alertname": queue, "exp_alerts": _alerts(queue, {"busy": 30})},
        # restarting pod: quiet before the first restart, firing while restarts are in the window, quiet after;
        # coredns restarts too but serves no model
        {"eval_time": "9m", "alertname": restart, "exp_alerts": []},
        {"eval_time": "20m", "alertname": restart, "exp_alerts": _alerts(restart, {"crashy": 2}, {"pod": "crashy-0"})},
        {"eval_time": "40m", "alertname": restart, "exp_alerts": []},
    ]


def _promtool(tmp_path: Path, groups: tuple[Any, ...], tests: list[dict[str, Any]]) -> subprocess.CompletedProcess:
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(groups))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {sum(len(g.rules) for g in groups)} rules found" in check.stdout
    spec = tmp_path / "tests.yml"
    spec.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}))
    return subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True, text=True)


@pytest.mark.parametrize("cluster_label", [None, CLUSTER])
def test_records_and_alerts_on_four_model_servers(tmp_path, cluster_label):
    # GIVEN a healthy multi-node server, one breaching its latency SLOs, one whose queue grows and one restarting
    groups = serving_rule_groups(cluster_label=cluster_label)
    inputs = _vllm_inputs() + _cluster_inputs()
    tests = [{"interval": "1m", "input_series": inputs, "promql_expr_test": _expr_tests()}]
    # WHEN promtool evaluates the records THEN every record has exactly the expected series
    proc = _promtool(tmp_path, groups, tests)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-8000:]


def test_alerts_fire_for_the_broken_servers_only(tmp_path):
    # GIVEN the same four servers WHEN promtool evaluates the alerts THEN each fires for its broken server only,
    # after its duration, and stays quiet for the healthy one and before/after the breach
    tests = [{"interval": "1m", "input_series": _vllm_inputs() + _cluster_inputs(), "alert_rule_test": _alert_tests()}]
    proc = _promtool(tmp_path, serving_rule_groups(), tests)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-8000:]


def test_another_clusters_series_are_not_recorded_by_a_scoped_group(tmp_path):
    groups = serving_rule_groups(cluster_label="other")
    inputs = _vllm_inputs() + _cluster_inputs()
    tests = [
        {
            "interval": "1m",
            "input_series": inputs,
            "promql_expr_test": [
                {"expr": name, "eval_time": "20m", "exp_samples": []} for name in SERVING_RECORD_NAMES
            ],
            "alert_rule_test": [{"eval_time": "20m", "alertname": a, "exp_alerts": []} for a in ALERT_NAMES],
        }
    ]
    proc = _promtool(tmp_path, groups, tests)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-8000:]


# --- 6. the Serving dashboard ---------------------------------------------------------------------------------------
def test_serving_dashboard_reads_the_serving_layer_for_every_signal():
    (board,) = [d for d in load_dashboards() if d.uid == "fm-serving"]
    assert board.title == "fmconstructs / Serving"
    text = " ".join(t["expr"] for p in board.model["panels"] if p["type"] != "row" for t in p["targets"])
    for record in (
        "fm_serving:ttft_seconds:p95",
        "fm_serving:inter_token_latency_seconds:p95",
        "fm_serving:generation_tokens:rate5m",
        "fm_serving:prompt_tokens:rate5m",
        "fm_serving:requests_waiting:sum",
        "fm_serving:requests_running:sum",
        "fm_serving:kv_cache_usage:max",
        "fm_serving:gpu_utilization:avg",
    ):
        assert record in text
    named = {w.split("{")[0] for w in text.replace("(", " ").split() if w.startswith("fm_serving:")}
    assert named <= set(SERVING_RECORD_NAMES)
    variables = [v["name"] for v in board.model["templating"]["list"]]
    assert "model_server" in variables


def test_recording_rules_are_recording_rules():
    assert all(isinstance(r, RecordingRule) for r in serving_rule_group().rules)
    assert all(isinstance(r, AlertRule) for r in serving_alert_rule_group().rules)
