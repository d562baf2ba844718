"""Metric names produced by the collectors fmconstructs installs: the one list that rules, dashboards and scrape
configurations name, so a test can check every query against it.

Sources: DCGM field identifiers (NVIDIA DCGM "Field Identifiers"; dcgm-exporter exposes each field under its
``DCGM_FI_*`` name), EFA hardware counters under ``/sys/class/infiniband/<dev>/ports/<n>/hw_counters`` (EC2 EFA
driver; exported by :mod:`fmconstructs.observability.node.efa_textfile` as ``fm_efa_<counter>_total``), node exporter
(prometheus/node_exporter), :mod:`fmconstructs.observability.node.slurm_textfile` and
:data:`fmconstructs.observability.collection.NODE_LIFECYCLE_SCRIPT`.
"""

from __future__ import annotations

import re

from ..errors import FmTypeError, FmValidationError
from ..health import metric_names

# DCGM fields the node-side dcgm-exporter is configured to collect (see dcgm_counters_csv()).
# (field, Prometheus type, help)
DCGM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (%)"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (MiB)"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (MiB)"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C)"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "HBM temperature (C)"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W)"),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz)"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error (never resets)"),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling due to power constraints (us)"),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling due to thermal constraints (us)"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Row remapping failed (1) or not (0)"),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Volatile double-bit ECC errors"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "NVLink bandwidth, all lanes"),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "NVLink flow-control CRC errors"),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "NVLink data CRC errors"),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "NVLink replay errors"),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "NVLink recovery errors"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor pipe is active"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the memory interface is active"),
    # NVIDIA/dcgm-exporter etc/default-counters.csv: "The ratio of cycles an SM has at least 1 warp assigned".
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "Ratio of cycles an SM has at least one warp assigned"),
)
DCGM_METRICS = frozenset(name for name, _, _ in DCGM_FIELDS)

# EFA hardware counters exported by the textfile collector (EC2 EFA driver hw_counters; names vary by EFA
# generation, so the collector exports whatever files exist and these are the ones rules and dashboards use).
EFA_COUNTERS: tuple[str, ...] = (
    "tx_bytes",
    "rx_bytes",
    "tx_pkts",
    "rx_pkts",
    "rx_drops",
    "rdma_read_bytes",
    "rdma_write_bytes",
    "rdma_write_recv_bytes",
    "rdma_read_wr_err",
    "rdma_write_wr_err",
    "retrans_pkts",
    "retrans_bytes",
    "retrans_timeout_events",
    "impaired_remote_conn_events",
    "unresponsive_remote_events",
)
EFA_PREFIX = "fm_efa_"


_COUNTER = re.compile(r"[a-z0-9_]+")  # the names efa_textfile.py exports (sysfs hw_counters file names)


def efa_metric(counter: str) -> str:
    """Prometheus name of an EFA hardware counter: ``fm_efa_<counter>_total``."""
    if not isinstance(counter, str):
        raise FmTypeError("counter", counter, f"a str (got a {type(counter).__name__})")
    if not _COUNTER.fullmatch(counter):
        raise FmValidationError("counter", counter, "an EFA counter name of lowercase letters, digits and '_'")
    return f"{EFA_PREFIX}{counter}_total"


EFA_METRICS = frozenset(efa_metric(c) for c in EFA_COUNTERS) | {"fm_efa_collector_success"}

SLURM_METRICS = frozenset(
    {
        "fm_slurm_nodes",
        "fm_slurm_collector_success",
        "fm_slurm_job_info",
        "fm_slurm_job_gpus",
        "fm_slurm_jobs_pending",
        "fm_slurm_jobs_collector_success",
    }
)
"""From ``sinfo`` and ``squeue`` on the login node: ``fm_slurm_nodes{state=...}`` (node counts per Slurm state),
``fm_slurm_job_info{hpc_job,user,account,partition}`` (1 per RUNNING job), ``fm_slurm_job_gpus{hpc_job}`` (GPUs
allocated to a RUNNING job), ``fm_slurm_jobs_pending{partition,reason}`` (pending jobs; reason from a fixed list
or ``other``)."""

LIFECYCLE_METRICS = frozenset({"fm_node_shutting_down"})
"""``fm_node_shutting_down``: 1 once a clean shutdown began (written by
:data:`fmconstructs.observability.collection.NODE_LIFECYCLE_SCRIPT`)."""

BOOTSTRAP_METRICS = frozenset({"fm_bootstrap_download_failed"})
"""``fm_bootstrap_download_failed{component=...}``: 1 when a node could not install an exporter at boot, 0 when it did
(written by :mod:`fmconstructs.observability.sources`)."""

NODE_METRICS = frozenset(
    {
        "up",
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
        "node_cpu_seconds_total",
        "node_memory_MemAvailable_bytes",
        "node_memory_MemTotal_bytes",
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
        "node_load1",
    }
)

KUBE_STATE_METRICS = frozenset({"kube_pod_labels", "kube_namespace_labels"})
"""kube-state-metrics (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md, cluster/namespace-metrics.md)
with ``--metric-labels-allowlist`` for ``team`` and the Job/JobSet name labels: the EKS job and team joins."""

KUEUE_METRICS = frozenset(
    {
        "kueue_pending_workloads",
        "kueue_admitted_active_workloads",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_nominal_quota",
        "kueue_admission_wait_time_seconds_bucket",
    }
)
"""Kueue's own metrics read by the Queue dashboard (kubernetes-sigs/kueue v0.19.2 pkg/metrics/metrics.go, subsystem
``kueue``: ``pending_workloads{cluster_queue,status}``, ``admitted_active_workloads{cluster_queue}``,
``cluster_queue_resource_usage`` and ``cluster_queue_nominal_quota{cohort,cluster_queue,flavor,resource}``,
histogram ``admission_wait_time_seconds{cluster_queue}``). Not in :data:`ALL_METRICS`: the managed scraper's ``kueue``
job is opt-in (``AmpEksScraper(scrape_kueue=True)``, :mod:`fmconstructs.observability.kueue_metrics`); the dashboard's
Kueue panels fill once it runs."""

NODE_CHECK_METRICS = metric_names.NODE_CHECK_METRICS
"""``fm_node_check_status{check,mode}`` and companions: the node-join checks' results (written by
:mod:`fmconstructs.health.checks` into the textfile directory; names in :mod:`fmconstructs.health.metric_names`)."""

ALL_METRICS = (
    DCGM_METRICS
    | EFA_METRICS
    | SLURM_METRICS
    | LIFECYCLE_METRICS
    | BOOTSTRAP_METRICS
    | NODE_METRICS
    | NODE_CHECK_METRICS
    | KUBE_STATE_METRICS
)


def dcgm_counters_csv() -> str:
    """The dcgm-exporter collectors file (``-f``): exactly the fields above."""
    lines = ["# fmconstructs dcgm-exporter counters: DCGM field, Prometheus type, help"]
    lines += [f"{name}, {kind}, {help_text}." for name, kind, help_text in DCGM_FIELDS]
    return "\n".join(lines) + "\n"
