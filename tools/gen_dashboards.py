#!/usr/bin/env python3
"""Generate the "Training job", "Queue", "Team usage" and "Serving" dashboards with grafana-foundation-sdk.

    python tools/gen_dashboards.py          # (re)write training-job.json, queue.json, team-usage.json, serving.json
    python tools/gen_dashboards.py --check  # exit 1 if a committed file differs from what the SDK builds

(files in fmconstructs/observability/dashboards/).

The SDK (PyPI ``grafana-foundation-sdk``, the ``dev`` extra; models for Grafana 10.1) is needed only here: the package
ships the generated JSON, which :func:`fmconstructs.observability.dashboards.load_dashboards` reads and the
provisioner uploads like the four hand-written dashboards. Every query names the per-job recording layer
(:mod:`fmconstructs.observability.job_rules`), a collector metric (:mod:`fmconstructs.observability.metrics`) or a
Kueue metric (kubernetes-sigs/kueue v0.19.2 pkg/metrics/metrics.go); ``tests/observability/test_job_dashboards.py``
checks them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DashboardLinkType,
    DataSourceRef,
    DataTransformerConfig,
    GridPos,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

OUT_DIR = Path(__file__).resolve().parent.parent / "fmconstructs" / "observability" / "dashboards"
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
JOB = 'cluster=~"$cluster", fm_job=~"$fm_job"'
CL = 'cluster=~"$cluster"'


@dataclass(frozen=True)
class P:
    """One panel: kind (timeseries, stat, table), title, description, unit, queries (expr, legend) and width."""

    kind: str
    title: str
    description: str
    unit: str
    queries: Sequence[tuple[str, str]]
    w: int = 12
    h: int = 8


def _query(ref: str, expr: str, legend: str, instant: bool) -> prometheus.Dataquery:
    q = prometheus.Dataquery().ref_id(ref).expr(expr).legend_format(legend).datasource(DS)
    return q.instant().format(PromQueryFormat.TABLE) if instant else q.range()


def _panel(p: P, pid: int, x: int, y: int) -> Any:
    builders: dict[str, Callable[[], Any]] = {"timeseries": timeseries.Panel, "stat": stat.Panel, "table": table.Panel}
    panel = builders[p.kind]().id(pid).title(p.title).description(p.description).datasource(DS).unit(p.unit)
    panel = panel.grid_pos(GridPos(h=p.h, w=p.w, x=x, y=y))
    for i, (expr, legend) in enumerate(p.queries):
        panel = panel.with_target(_query(chr(ord("A") + i), expr, legend, p.kind == "table"))
    if p.kind == "table":  # one row per series, the queries' values side by side
        panel = panel.show_header(True).with_transformation(DataTransformerConfig(id_val="merge", options={}))
    if p.kind == "stat":
        panel = panel.reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]))
    if p.kind == "timeseries":
        options = common_b.VizLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.TABLE)
        panel = panel.legend(options.placement(common.LegendPlacement.BOTTOM))
    return panel


def _variables(job_var: bool, instance_source: str) -> list[Any]:
    def query_var(name: str, label: str, query: str) -> Any:
        return (
            dash.QueryVariable(name)
            .label(label)
            .datasource(DS)
            .query({"query": query, "refId": name})
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .include_all(True)
            .all_value(".*")
            .multi(True)
        )

    out = [
        dash.DatasourceVariable("datasource").label("Data source").type("prometheus"),
        query_var("cluster", "Cluster", "label_values(up, cluster)"),
    ]
    if job_var:
        out.append(query_var("fm_job", "Job", f"label_values(fm_job:gpus_allocated:count{{{CL}}}, fm_job)"))
    out.append(query_var("instance", "Instance", f"label_values({instance_source}, instance)"))
    return out


def _build(
    uid: str,
    title: str,
    description: str,
    tags: list[str],
    rows: Sequence[tuple[str, Sequence[P]]],
    variables: list[Any],
    time_from: str,
) -> dict[str, Any]:
    board = (
        dash.Dashboard(f"fmconstructs / {title}")
        .uid(uid)
        .description(description)
        .tags(["fmconstructs", *tags])
        .version(1)
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .time(time_from, "now")
        .refresh("1m")
        .timezone("browser")
        .link(
            dash.DashboardLink("fmconstructs")
            .type(DashboardLinkType.DASHBOARDS)
            .tags(["fmconstructs"])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
    )
    for variable in variables:
        board = board.with_variable(variable)
    pid, y = 1, 0
    for row_title, panels in rows:
        board = board.with_row(dash.Row(row_title).id(pid).grid_pos(GridPos(h=1, w=24, x=0, y=y)))
        pid, y, x, row_h = pid + 1, y + 1, 0, 0
        for p in panels:
            if x + p.w > 24:
                x, y, row_h = 0, y + row_h, 0
            board = board.with_panel(_panel(p, pid, x, y))
            pid, x, row_h = pid + 1, x + p.w, max(row_h, p.h)
        y += row_h
    model: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True, indent=2).encode(board.build()))
    return model


def training_job() -> dict[str, Any]:
    s = JOB
    app = f'{{job="fm-app", {CL}}}'
    job_nodes = f"group by (cluster, instance) (fm_job:instance_gpus:count{{{s}}})"
    rows = [
        (
            "Job",
            [
                P(
                    "stat",
                    "GPUs allocated",
                    "fm_job:gpus_allocated:count: GPUs whose series carry the job.",
                    "short",
                    [(f"sum(fm_job:gpus_allocated:count{{{s}}})", "GPUs")],
                    w=6,
                    h=4,
                ),
                P(
                    "stat",
                    "Nodes",
                    "fm_job:nodes:count: nodes the job has GPUs on.",
                    "short",
                    [(f"sum(fm_job:nodes:count{{{s}}})", "nodes")],
                    w=6,
                    h=4,
                ),
                P(
                    "stat",
                    "Mean GPU utilisation",
                    "fm_job:gpu_utilization:avg over the job's GPUs.",
                    "percent",
                    [(f"avg(fm_job:gpu_utilization:avg{{{s}}})", "util")],
                    w=6,
                    h=4,
                ),
                P(
                    "stat",
                    "XIDs (15 min)",
                    "fm_job:xid_changes:sum15m: new XIDs on the job's GPUs in 15 minutes.",
                    "short",
                    [(f"sum(fm_job:xid_changes:sum15m{{{s}}})", "XIDs")],
                    w=6,
                    h=4,
                ),
                P(
                    "table",
                    "Job owner",
                    "fm_job:info: user, account and partition (Slurm), namespace and team (EKS).",
                    "short",
                    [(f"fm_job:info{{{s}}}", "")],
                    w=24,
                    h=4,
                ),
            ],
        ),
        (
            "GPU",
            [
                P(
                    "timeseries",
                    "GPU utilisation",
                    "fm_job:gpu_utilization:avg (DCGM_FI_DEV_GPU_UTIL averaged over the job's GPUs).",
                    "percent",
                    [(f"fm_job:gpu_utilization:avg{{{s}}}", "{{fm_job}}")],
                ),
                P(
                    "timeseries",
                    "SM activity",
                    "fm_job:sm_active:avg (DCGM_FI_PROF_SM_ACTIVE: share of cycles an SM has a warp assigned).",
                    "percentunit",
                    [(f"fm_job:sm_active:avg{{{s}}}", "{{fm_job}}")],
                ),
                P(
                    "timeseries",
                    "GPU memory used",
                    "fm_job:fb_used_mib:sum (DCGM_FI_DEV_FB_USED summed over the job's GPUs).",
                    "decmbytes",
                    [(f"fm_job:fb_used_mib:sum{{{s}}}", "{{fm_job}}")],
                ),
                P(
                    "timeseries",
                    "GPU power",
                    "fm_job:power_watts:sum (DCGM_FI_DEV_POWER_USAGE summed).",
                    "watt",
                    [(f"fm_job:power_watts:sum{{{s}}}", "{{fm_job}}")],
                ),
                P(
                    "timeseries",
                    "GPUs per node",
                    "fm_job:instance_gpus:count: the job's GPUs on each node.",
                    "short",
                    [(f'fm_job:instance_gpus:count{{{s}, instance=~"$instance"}}', "{{instance}}")],
                    w=24,
                ),
            ],
        ),
        (
            "Interconnect and storage",
            [
                P(
                    "timeseries",
                    "NVLink throughput",
                    "fm_job:nvlink_bandwidth:rate5m: per-second increase of "
                    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL summed over the job's GPUs (DCGM's counter unit).",
                    "short",
                    [(f"fm_job:nvlink_bandwidth:rate5m{{{s}}}", "{{fm_job}}")],
                    w=8,
                ),
                P(
                    "timeseries",
                    "EFA throughput (node-attributed)",
                    "fm_job:efa_bytes:rate5m: EFA tx + rx bytes/s of "
                    "every node the job runs on. EFA counters are per node: jobs sharing a node each see all of it.",
                    "Bps",
                    [(f"fm_job:efa_bytes:rate5m{{{s}}}", "{{fm_job}}")],
                    w=8,
                ),
                P(
                    "timeseries",
                    "Lustre free space on the job's nodes",
                    "node_filesystem_avail_bytes of Lustre "
                    "mounts (fstype lustre) on the job's nodes: checkpoints fail when it runs out. FSx write "
                    "throughput (CloudWatch AWS/FSx DataWriteBytes) needs a CloudWatch data source: not shown.",
                    "bytes",
                    [
                        (
                            f'min by (mountpoint) (node_filesystem_avail_bytes{{fstype="lustre", {CL}}} * on(cluster, '
                            f"instance) group_left() {job_nodes})",
                            "{{mountpoint}}",
                        )
                    ],
                    w=8,
                ),
            ],
        ),
        (
            "Application (Prometheus job fm-app)",
            [
                P(
                    "timeseries",
                    "Application targets up",
                    "up of the job's own metrics endpoints (Slurm: file "
                    "service discovery with hpc_job; EKS: annotated pods). Empty when the job publishes nothing.",
                    "short",
                    [
                        (f'up{{job="fm-app", {CL}, hpc_job!="", hpc_job=~"$fm_job"}}', "{{instance}}"),
                        (f'up{{job="fm-app", {CL}}} and on(cluster, namespace, pod) fm_job:pod:info{{{s}}}', "{{pod}}"),
                    ],
                ),
                P(
                    "timeseries",
                    "Application series",
                    "Every series the job publishes (step time, tokens/s, loss, checkpoint duration...), by name.",
                    "short",
                    [
                        (
                            f'{{__name__=~".+", job="fm-app", {CL}, hpc_job!="", hpc_job=~"$fm_job"}}',
                            "{{__name__}} {{instance}}",
                        ),
                        (f"{app} and on(cluster, namespace, pod) fm_job:pod:info{{{s}}}", "{{__name__}} {{pod}}"),
                    ],
                ),
            ],
        ),
    ]
    return _build(
        "fm-training-job",
        "Training job",
        "One training job on Slurm or EKS (variable fm_job): GPU and SM utilisation, memory, power, NVLink and "
        "node-attributed EFA throughput, Lustre free space and the job's own fm-app metrics, from the fm_job:* "
        "recording rules.",
        ["jobs"],
        rows,
        _variables(True, f"fm_job:instance_gpus:count{{{JOB}}}"),
        "now-6h",
    )


def queue() -> dict[str, Any]:
    rows = [
        (
            "Slurm",
            [
                P(
                    "timeseries",
                    "Pending jobs per partition and reason",
                    "fm_slurm_jobs_pending (squeue on the login/head node).",
                    "short",
                    [(f"sum by (partition, reason) (fm_slurm_jobs_pending{{{CL}}})", "{{partition}} {{reason}}")],
                ),
                P(
                    "timeseries",
                    "Running jobs per partition",
                    "fm_slurm_job_info: one series per running job.",
                    "short",
                    [(f"count by (partition) (fm_slurm_job_info{{{CL}}})", "{{partition}}")],
                ),
                P(
                    "timeseries",
                    "Nodes per state",
                    "fm_slurm_nodes (sinfo %T).",
                    "short",
                    [(f"sum by (state) (fm_slurm_nodes{{{CL}}})", "{{state}}")],
                ),
                P(
                    "timeseries",
                    "GPUs allocated per partition",
                    "fm_slurm_job_gpus joined to fm_slurm_job_info.",
                    "short",
                    [
                        (
                            f"sum by (partition) (fm_slurm_job_gpus{{{CL}}} * on(cluster, hpc_job) "
                            f"group_left(partition) fm_slurm_job_info{{{CL}}})",
                            "{{partition}}",
                        )
                    ],
                ),
            ],
        ),
        (
            "Kueue",
            [
                P(
                    "timeseries",
                    "Pending workloads per ClusterQueue",
                    "kueue_pending_workloads (status active: in "
                    "the admission queue; inadmissible: waiting for the cluster to change).",
                    "short",
                    [
                        (
                            f"sum by (cluster_queue, status) (kueue_pending_workloads{{{CL}}})",
                            "{{cluster_queue}} {{status}}",
                        )
                    ],
                ),
                P(
                    "timeseries",
                    "Admitted active workloads",
                    "kueue_admitted_active_workloads per ClusterQueue.",
                    "short",
                    [(f"sum by (cluster_queue) (kueue_admitted_active_workloads{{{CL}}})", "{{cluster_queue}}")],
                ),
                P(
                    "timeseries",
                    "Quota used per ClusterQueue and resource",
                    "kueue_cluster_queue_resource_usage against kueue_cluster_queue_nominal_quota.",
                    "short",
                    [
                        (
                            f"sum by (cluster_queue, resource) (kueue_cluster_queue_resource_usage{{{CL}}})",
                            "{{cluster_queue}} {{resource}} used",
                        ),
                        (
                            f"sum by (cluster_queue, resource) (kueue_cluster_queue_nominal_quota{{{CL}}})",
                            "{{cluster_queue}} {{resource}} quota",
                        ),
                    ],
                ),
                P(
                    "timeseries",
                    "Admission wait (p90)",
                    "kueue_admission_wait_time_seconds: time from creation to admission.",
                    "s",
                    [
                        (
                            f"histogram_quantile(0.9, sum by (cluster_queue, le) "
                            f"(rate(kueue_admission_wait_time_seconds_bucket{{{CL}}}[$__rate_interval])))",
                            "{{cluster_queue}}",
                        )
                    ],
                ),
            ],
        ),
    ]
    return _build(
        "fm-queue",
        "Queue",
        "Scheduler queues: Slurm pending jobs per partition and reason, running jobs, node states and GPUs "
        "allocated; Kueue pending and admitted workloads, quota use and admission wait.",
        ["slurm", "kueue"],
        rows,
        _variables(False, f"up{{{CL}}}"),
        "now-6h",
    )


def _by(scope: str) -> str:
    return f"sum by ({scope}) (sum_over_time(fm_job:gpus_allocated:sum_by_{scope}{{{CL}}}[$__range])) / 60"


def team_usage() -> dict[str, Any]:
    price = "$usd_per_gpu_hour"
    per_job = f"sum by (fm_job, scheduler) (sum_over_time(fm_job:gpus_allocated:count{{{CL}}}[$__range])) / 60"
    rows = [
        (
            "GPU-hours over the dashboard time range",
            [
                P(
                    "table",
                    f"GPU-hours and cost per {scope}",
                    f"GPU-hours of the time range from "
                    f"fm_job:gpus_allocated:sum_by_{scope} (one sample a minute, divided by 60), and their cost at "
                    f"the price variable (USD per GPU-hour).",
                    "short",
                    [(_by(scope), scope), (f"{_by(scope)} * {price}", f"{scope} USD")],
                    w=12,
                    h=8,
                )
                for scope in ("team", "user", "account", "namespace")
            ]
            + [
                P(
                    "table",
                    "GPU-hours per job",
                    "GPU-hours of each job in the time range (fm_job:gpus_allocated:count)."
                    " Cost: times the price variable.",
                    "short",
                    [(per_job, "{{fm_job}}"), (f"{per_job} * {price}", "{{fm_job}} USD")],
                    w=24,
                ),
            ],
        ),
        (
            "Over time",
            [
                P(
                    "timeseries",
                    "GPUs allocated per team",
                    "fm_job:gpus_allocated:sum_by_team (team: the Slurm "
                    "account, or the pod's or namespace's team label on EKS).",
                    "short",
                    [(f"sum by (team) (fm_job:gpus_allocated:sum_by_team{{{CL}}})", "{{team}}")],
                ),
                P(
                    "timeseries",
                    "GPU-hours per hour, per team",
                    "fm_job:gpu_hours:sum_by_team_1h: GPU-hours of the last hour.",
                    "short",
                    [(f"sum by (team) (fm_job:gpu_hours:sum_by_team_1h{{{CL}}})", "{{team}}")],
                ),
            ],
        ),
    ]
    variables = _variables(False, f"fm_job:instance_gpus:count{{{CL}}}")
    variables.append(
        dash.TextBoxVariable("usd_per_gpu_hour")
        .label("USD per GPU-hour")
        .default_value("0")
        .description("The price fmc plan --price-per-hour takes, per GPU (instance price / GPUs per instance).")
    )
    return _build(
        "fm-team-usage",
        "Team usage",
        "GPU-hours per team, user, Slurm account, namespace and job over the dashboard time range, and their cost "
        "at a USD per GPU-hour price you enter (fm_job:* recording rules, evaluated every minute).",
        ["jobs", "cost"],
        rows,
        variables,
        "now-7d",
    )


SRV = 'cluster=~"$cluster", model_server=~"$model_server"'


def _srv(record: str, legend: str = "{{model_server}}") -> tuple[str, str]:
    return (f"{record}{{{SRV}}}", legend)


def _serving_traffic() -> list[P]:
    return [
        P(
            "stat",
            "Requests running",
            "fm_serving:requests_running:sum (vllm:num_requests_running).",
            "short",
            [(f"sum(fm_serving:requests_running:sum{{{SRV}}})", "running")],
            w=6,
            h=4,
        ),
        P(
            "stat",
            "Requests waiting",
            "fm_serving:requests_waiting:sum (vllm:num_requests_waiting).",
            "short",
            [(f"sum(fm_serving:requests_waiting:sum{{{SRV}}})", "waiting")],
            w=6,
            h=4,
        ),
        P(
            "stat",
            "Generated tokens/s",
            "fm_serving:generation_tokens:rate5m (vllm:generation_tokens_total).",
            "short",
            [(f"sum(fm_serving:generation_tokens:rate5m{{{SRV}}})", "tokens/s")],
            w=6,
            h=4,
        ),
        P(
            "stat",
            "GPUs serving",
            "fm_serving:gpus:count: GPUs of the servers' pods (dcgm-exporter pod attribution).",
            "short",
            [(f"sum(fm_serving:gpus:count{{{SRV}}})", "GPUs")],
            w=6,
            h=4,
        ),
        P(
            "timeseries",
            "Queue",
            "Requests waiting (vllm:num_requests_waiting) and running (vllm:num_requests_running) per model server.",
            "short",
            [
                _srv("fm_serving:requests_waiting:sum", "{{model_server}} waiting"),
                _srv("fm_serving:requests_running:sum", "{{model_server}} running"),
            ],
        ),
        P(
            "timeseries",
            "Tokens per second",
            "Generated (vllm:generation_tokens_total) and prompt "
            "(vllm:prompt_tokens_total) tokens per second, 5-minute rate.",
            "short",
            [
                _srv("fm_serving:generation_tokens:rate5m", "{{model_server}} generated"),
                _srv("fm_serving:prompt_tokens:rate5m", "{{model_server}} prompt"),
            ],
        ),
    ]


def _serving_latency() -> list[P]:
    return [
        P(
            "timeseries",
            "Time to first token",
            "fm_serving:ttft_seconds:p50/p95/p99 "
            "(vllm:time_to_first_token_seconds, 5-minute window). FmServingTtftSloBreach fires on p95.",
            "s",
            [_srv(f"fm_serving:ttft_seconds:{q}", f"{{{{model_server}}}} {q}") for q in ("p50", "p95", "p99")],
            w=8,
        ),
        P(
            "timeseries",
            "Inter-token latency",
            "fm_serving:inter_token_latency_seconds:p50/p95 "
            "(vllm:inter_token_latency_seconds: time between two outputs of a stream).",
            "s",
            [_srv(f"fm_serving:inter_token_latency_seconds:{q}", f"{{{{model_server}}}} {q}") for q in ("p50", "p95")],
            w=8,
        ),
        P(
            "timeseries",
            "End-to-end latency (p95)",
            "fm_serving:e2e_latency_seconds:p95 (vllm:e2e_request_latency_seconds).",
            "s",
            [_srv("fm_serving:e2e_latency_seconds:p95")],
            w=8,
        ),
    ]


def _serving_capacity() -> list[P]:
    restarts = (
        f'sum by (model_server, pod) (increase(kube_pod_container_status_restarts_total{{cluster=~"$cluster"}}'
        f"[$__range]) * on(cluster, namespace, pod) group_left(model_server) fm_serving:pod:info{{{SRV}}})"
    )
    return [
        P(
            "timeseries",
            "KV-cache usage",
            "fm_serving:kv_cache_usage:avg and :max (vllm:kv_cache_usage_perc, 1 = "
            "full): a full cache queues and preempts requests.",
            "percentunit",
            [
                _srv("fm_serving:kv_cache_usage:avg", "{{model_server}} mean"),
                _srv("fm_serving:kv_cache_usage:max", "{{model_server}} max"),
            ],
        ),
        P(
            "timeseries",
            "GPU utilisation",
            "fm_serving:gpu_utilization:avg (DCGM_FI_DEV_GPU_UTIL of the servers' pods, workers included).",
            "percent",
            [_srv("fm_serving:gpu_utilization:avg")],
        ),
        P(
            "timeseries",
            "GPU memory used",
            "fm_serving:gpu_memory_used_mib:sum (DCGM_FI_DEV_FB_USED summed).",
            "decmbytes",
            [_srv("fm_serving:gpu_memory_used_mib:sum")],
        ),
        P(
            "table",
            "Pod restarts in the time range",
            "kube_pod_container_status_restarts_total increase per server "
            "pod (kube-state-metrics); FmServingPodRestarting fires on restarts.",
            "short",
            [(restarts, "{{pod}}")],
        ),
        P(
            "timeseries",
            "Scrape targets up",
            "up of the fm-serving job: 1 per server pod whose /metrics answers.",
            "short",
            [(f'up{{job="fm-serving", {SRV}, instance=~"$instance"}}', "{{pod}}")],
            w=24,
        ),
    ]


def serving() -> dict[str, Any]:
    rows = [
        ("Traffic", _serving_traffic()),
        ("Latency", _serving_latency()),
        ("KV cache, GPUs and pods", _serving_capacity()),
    ]
    variables = _variables(False, f'up{{job="fm-serving", {CL}}}')
    variables.append(
        dash.QueryVariable("model_server")
        .label("Model server")
        .datasource(DS)
        .query(
            {"query": f"label_values(fm_serving:requests_running:sum{{{CL}}}, model_server)", "refId": "model_server"}
        )
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .include_all(True)
        .all_value(".*")
        .multi(True)
    )
    return _build(
        "fm-serving",
        "Serving",
        "Model servers (vLLM, Prometheus job fm-serving): queue, tokens/s, time to first token, inter-token and "
        "end-to-end latency, KV-cache use, the GPUs of the servers' pods and pod restarts, from the fm_serving:* "
        "recording rules (fmconstructs.serving.observability).",
        ["serving"],
        rows,
        variables,
        "now-6h",
    )


DASHBOARDS: dict[str, Callable[[], dict[str, Any]]] = {
    "training-job.json": training_job,
    "queue.json": queue,
    "team-usage.json": team_usage,
    "serving.json": serving,
}


def render(builder: Callable[[], dict[str, Any]]) -> str:
    return json.dumps(builder(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    stale = []
    for name, builder in DASHBOARDS.items():
        text, path = render(builder), args.out / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)} (run python tools/gen_dashboards.py)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
