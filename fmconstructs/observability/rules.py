"""Prometheus alert rules as code: GPU hardware, EFA, nodes, storage and Slurm.

Every rule names only metrics that fmconstructs' collectors produce (:mod:`.metrics`); thresholds and ``for``
durations are :class:`AlertThresholds` props. ``tests/observability/test_observability_rules.py`` runs ``promtool check
rules`` and
``promtool test rules`` with input series that fire every alert (and healthy series that fire none).

DCGM's XID gauge holds the *last* XID and never resets (dcgm-exporter#500), so XID alerts fire when the gauge
*changes* within ``xid_window`` to a listed code; a repeat of the same XID on the same GPU does not change the gauge
and is not seen again until the exporter restarts (nor is an Xid the gauge held for less than a scrape: Xid 45
often follows 48 or 94 at once; the node checks read the kernel log and see both). Which code raises which alert
comes from one :class:`~fmconstructs.health.xid.XidPolicy` (``AlertThresholds.xid_policy``, NVIDIA's Xid catalog by
default), the policy the node checks fail on: ``GpuCriticalXid`` for the FATAL and the RESET class (one rule each,
labels ``xid_class`` and ``fmconstructs_trigger`` = ``fatal-xid`` / ``reset-xid``: remediation replaces or reboots),
``GpuContainedXid`` (warning, ``contained-xid``: notify only) and ``GpuXidError`` for every other code. A ``gpu-xid``
node-check failure raises ``FmNodeCheckFailed`` with the same two labels for the class the node names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import yaml

from .._validate import check_enum, check_instance, check_number, check_sequence, check_str
from ..errors import FmTypeError, FmValidationError, is_token
from ..health import metric_names as names
from ..health.xid import (
    DEFAULT_XID_POLICY,
    XID_CLASS_LABEL,
    XidClass,
    XidPolicy,
    check_xid_policy,
    node_check_reason_regex,
)
from ._checks import PrometheusDuration, check_prometheus_duration
from .metrics import ALL_METRICS, efa_metric

#: Deprecated (with ``AlertThresholds.critical_xids``): the Xids that raise ``GpuCriticalXid`` by default, the RESET
#: and FATAL classes of :data:`~fmconstructs.health.xid.DEFAULT_XID_POLICY` (the Xids that fail the node checks).
CRITICAL_XIDS: tuple[int, ...] = DEFAULT_XID_POLICY.node_check_xids


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"


_DURATION_FIELDS = (
    "xid_window",
    "temperature_for",
    "throttle_for",
    "nvlink_errors_for",
    "idle_for",
    "efa_for",
    "exporter_down_for",
    "node_missing_window",
    "node_stopped_for",
    "filesystem_for",
    "slurm_for",
    "node_check_for",
)
#: Used as range selectors (``[window]``): PromQL refuses a zero range ("parse error: duration must be greater than
#: 0", promtool check rules 2.42 on ``changes(up[0s])``).
_WINDOW_FIELDS = ("xid_window", "node_missing_window")
_RATIO_FIELDS = ("throttle_ratio", "efa_retransmit_ratio", "filesystem_free_ratio")


def _synth_number(parameter: str, value: object, **bounds: Any) -> Any:
    """A finite number known at synth time (it is written into a PromQL expression)."""
    checked = check_number(parameter, value, **bounds)
    if is_token(checked):  # a number token: its value is unknown until deployment
        raise FmValidationError(parameter, value, "a number known at synth time (it is written into the rules)")
    return checked


@dataclass(frozen=True)
class AlertThresholds:
    """Thresholds and ``for`` durations of the alert rules (defaults in brackets in each comment).

    Durations are Prometheus durations (``'5m'``, ``'1h30m'``, ``'1w'``, ``'500ms'``, ``'0'``) or ``aws_cdk.Duration``
    values (stored as the equivalent Prometheus string). Numbers are finite ints or floats (not bools).

    ``xid_policy`` says which Xid raises which alert (:mod:`fmconstructs.health.xid`; the node checks' policy).
    ``critical_xids`` is deprecated: exactly these Xids page (``XidPolicy.with_node_check_xids`` applied to
    ``xid_policy``; it is then None).
    """

    critical_xids: tuple[int, ...] | None = None
    xid_window: PrometheusDuration = "15m"
    gpu_temperature_celsius: float = 87.0  # H100/H200 slowdown starts around 90 C
    memory_temperature_celsius: float = 95.0  # HBM3 throttles near 95 C
    temperature_for: PrometheusDuration = "5m"
    throttle_ratio: float = 0.2  # share of wall time spent power- or thermal-throttled
    throttle_for: PrometheusDuration = "10m"
    pcie_replays_per_second: float = 1.0
    nvlink_errors_for: PrometheusDuration = "0m"
    idle_gpu_util_percent: float = 5.0
    idle_gpu_min_memory_mib: float = 1024.0  # a process holds GPU memory: the GPU is allocated
    idle_for: PrometheusDuration = "30m"
    efa_retransmit_ratio: float = 0.01
    efa_for: PrometheusDuration = "5m"
    exporter_down_for: PrometheusDuration = "5m"
    node_missing_window: PrometheusDuration = "1h"
    node_stopped_for: PrometheusDuration = "2m"  # a node exporter failing scrapes this long counts as stopped
    filesystem_free_ratio: float = 0.10
    filesystem_for: PrometheusDuration = "15m"
    slurm_for: PrometheusDuration = "10m"
    node_check_for: PrometheusDuration = "2m"  # a node-join check failing this long pages (and remediates)
    xid_policy: XidPolicy = DEFAULT_XID_POLICY

    def __post_init__(self) -> None:
        for name in _DURATION_FIELDS:
            text = check_prometheus_duration(name, getattr(self, name), positive=name in _WINDOW_FIELDS)
            object.__setattr__(self, name, text)
        for name in ("gpu_temperature_celsius", "memory_temperature_celsius"):
            _synth_number(name, getattr(self, name))
        _synth_number("idle_gpu_util_percent", self.idle_gpu_util_percent, minimum=0, maximum=100)
        _synth_number("idle_gpu_min_memory_mib", self.idle_gpu_min_memory_mib, minimum=0)
        _synth_number("pcie_replays_per_second", self.pcie_replays_per_second, minimum=0)
        for name in _RATIO_FIELDS:
            value = _synth_number(name, getattr(self, name))
            if not 0 < value < 1:
                raise FmValidationError(name, value, "a ratio between 0 and 1 (exclusive)")
        policy = check_xid_policy("xid_policy", self.xid_policy)
        if self.critical_xids is not None:
            xids = check_sequence(
                "critical_xids", self.critical_xids, lambda n, v: _synth_number(n, v, minimum=1, integer=True)
            )
            if not xids:
                raise FmValidationError("critical_xids", list(xids), "a non-empty tuple of positive XID codes")
            policy = policy.with_node_check_xids(int(x) for x in xids)
        object.__setattr__(self, "xid_policy", policy)
        object.__setattr__(self, "critical_xids", None)


def _check_label_map(parameter: str, value: object, *, annotations: bool = False) -> dict[str, str]:
    """Rule labels or annotations: str -> str. Names are Prometheus 3 label names (UTF-8; ``__name__`` is not a rule
    label: prometheus/prometheus model/rulefmt/rulefmt.go ``Rule.Validate``)."""
    if not isinstance(value, Mapping):
        raise FmTypeError(parameter, value, f"a dict of str to str (got a {type(value).__name__})")
    out: dict[str, str] = {}
    for key, item in value.items():
        check_str(f"{parameter} key", key, min_length=1, allowed="a non-empty label name")
        if not annotations and key == "__name__":
            raise FmValidationError(f"{parameter} key", key, "a label name other than __name__")
        out[key] = check_str(f"{parameter}[{key!r}]", item)
    return out


@dataclass(frozen=True)
class AlertRule:
    """One alerting rule, with the metrics its expression reads (checked against the collectors).

    ``for_`` is a Prometheus duration (or an ``aws_cdk.Duration``); ``labels`` may not set ``severity`` (it comes
    from ``severity``).
    """

    name: str
    expr: str
    for_: PrometheusDuration
    severity: Severity
    summary: str
    description: str
    metrics: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # prometheus/prometheus model/rulefmt/rulefmt.go: 'alert' and 'expr' must be set (non-empty).
        check_str("name", self.name, min_length=1, allowed="a non-empty alert name")
        check_str("expr", self.expr, min_length=1, allowed="a non-empty PromQL expression")
        object.__setattr__(self, "for_", check_prometheus_duration("for_", self.for_))
        check_enum("severity", self.severity, Severity)
        check_str("summary", self.summary)
        check_str("description", self.description)
        object.__setattr__(self, "metrics", check_sequence("metrics", self.metrics, check_str))
        labels = _check_label_map("labels", self.labels)
        if "severity" in labels:
            raise FmValidationError("labels", labels, "labels without 'severity' (set it with severity=)")
        object.__setattr__(self, "labels", labels)

    def to_dict(self) -> dict[str, object]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity.value, **self.labels},
            "annotations": {"summary": self.summary, "description": self.description},
        }


_RECORD_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")  # prometheus/prometheus model/rulefmt: a valid metric name


@dataclass(frozen=True)
class RecordingRule:
    """A Prometheus recording rule: ``expr`` evaluated every group interval and stored as the series ``record``."""

    record: str
    expr: str
    metrics: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_str("record", self.record, pattern=_RECORD_NAME, allowed="a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        check_str("expr", self.expr, min_length=1, allowed="a non-empty PromQL expression")
        object.__setattr__(self, "metrics", check_sequence("metrics", self.metrics, check_str))
        object.__setattr__(self, "labels", _check_label_map("labels", self.labels))

    @property
    def name(self) -> str:
        return self.record

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


def _check_rule(parameter: str, value: object) -> AlertRule | RecordingRule:
    if not isinstance(value, AlertRule | RecordingRule):
        raise FmTypeError(parameter, value, "an AlertRule or a RecordingRule")
    return value


@dataclass(frozen=True)
class RuleGroup:
    """A named group of alert rules evaluated every ``interval`` (a Prometheus duration; ``'0'`` means the
    evaluator's default)."""

    name: str
    rules: tuple[AlertRule | RecordingRule, ...]
    interval: PrometheusDuration = "1m"

    def __post_init__(self) -> None:
        # prometheus/prometheus model/rulefmt/rulefmt.go: "Groupname must not be empty".
        check_str("name", self.name, min_length=1, allowed="a non-empty rule group name")
        rules = check_sequence("rules", self.rules, _check_rule)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "interval", check_prometheus_duration("interval", self.interval))

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "interval": self.interval, "rules": [r.to_dict() for r in self.rules]}


_WHERE = "{{ $labels.instance }}"
_GPU = "GPU {{ $labels.gpu }} on {{ $labels.instance }}"
_EFA = "EFA {{ $labels.device }} on {{ $labels.instance }}"


def _increase(metric: str, window: str = "5m") -> str:
    return f"increase({metric}[{window}]) > 0"


_XID = "DCGM_FI_DEV_XID_ERRORS"
#: The Xid classes with their own alert: (class, alert, severity, summary word, description).
_XID_CLASS_ALERTS = (
    (
        XidClass.FATAL,
        "GpuCriticalXid",
        Severity.CRITICAL,
        "Critical",
        "An Xid of the fatal class (default 54, 79 fell off the bus: the node needs other hardware) was reported. "
        "The node checks fail on it; remediation replaces the node (fmconstructs_trigger fatal-xid).",
    ),
    (
        XidClass.RESET,
        "GpuCriticalXid",
        Severity.CRITICAL,
        "Critical",
        "An Xid of the reset class (NVIDIA: the GPU needs a reset; e.g. 48 double-bit ECC, 74 NVLink, 95 uncontained "
        "error, 119/120 GSP) was reported. The node checks fail on it until a reboot; remediation reboots the node "
        "(fmconstructs_trigger reset-xid).",
    ),
    (
        XidClass.CONTAINED,
        "GpuContainedXid",
        Severity.WARNING,
        "Contained",
        "A contained memory error (Xid 94): the application that hit it ended; other work and new jobs run on this "
        "GPU without a reset (NVIDIA). Reset the GPU when convenient; nothing is drained or replaced "
        "(fmconstructs_trigger contained-xid: notify).",
    ),
)


def _xid_is(codes: Iterable[int]) -> str:
    return " or ".join(f"{_XID} == {code}" for code in codes)


def _gpu_xid_rules(t: AlertThresholds) -> tuple[AlertRule, ...]:
    """XID errors, one alert per class of ``t.xid_policy`` that has Xids, then the other codes."""
    changed = f"changes({_XID}[{t.xid_window}]) > 0"
    out: list[AlertRule] = []
    for xid_class, name, severity, word, description in _XID_CLASS_ALERTS:
        codes = t.xid_policy.xids(xid_class)
        if not codes:
            continue
        labels = {XID_CLASS_LABEL: xid_class.value, names.TRIGGER_LABEL: str(xid_class.trigger)}
        summary = f"{word} XID {{{{ $value }}}} on {_GPU}"
        expr = f"({_xid_is(codes)}) and {changed}"
        out.append(AlertRule(name, expr, "0m", severity, summary, description, (_XID,), labels=labels))
    classified = sorted(x for c, *_ in _XID_CLASS_ALERTS for x in t.xid_policy.xids(c))
    other = f"{_XID} > 0 and {changed}" + (f" unless ({_xid_is(classified)})" if classified else "")
    description = (
        "A new Xid outside the contained, reset and fatal classes: an application fault (e.g. 13, 31, 43) or an "
        "event NVIDIA's catalog says to ignore (e.g. 63, 92). Nothing acts on the node."
    )
    out.append(
        AlertRule("GpuXidError", other, "0m", Severity.WARNING, f"XID {{{{ $value }}}} on {_GPU}", description, (_XID,))
    )
    return tuple(out)


def _gpu_memory_rules(t: AlertThresholds) -> tuple[AlertRule, ...]:
    """GPU memory errors: row remapping and uncorrectable (double-bit) ECC."""
    return (
        AlertRule(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "0m",
            Severity.CRITICAL,
            f"Row remapping failed on {_GPU}",
            "The GPU ran out of spare memory rows: replace the instance (stop/start moves it to new hardware).",
            ("DCGM_FI_DEV_ROW_REMAP_FAILURE",),
        ),
        AlertRule(
            "GpuUncorrectableRemappedRows",
            _increase("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "15m"),
            "0m",
            Severity.WARNING,
            f"Rows remapped for uncorrectable errors on {_GPU}",
            "A reset is needed for the remap to take effect; jobs on this GPU may have hit memory errors.",
            ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",),
        ),
        # An uncorrectable error counts here whether the GPU contained it (Xid 94: new work runs without a reset) or
        # not (Xid 95): the Xid alerts say which and act; this one only informs (issue 29: 94 is not fatal).
        AlertRule(
            "GpuDoubleBitEccErrors",
            _increase("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "15m"),
            "0m",
            Severity.WARNING,
            f"Uncorrectable (double-bit) ECC errors on {_GPU}",
            "Uncorrectable memory errors were counted. The Xid alerts say what they need: contained (94) nothing "
            "but a reset when convenient, uncontained (95) or 48 a reboot. This alert does not remediate.",
            ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",),
        ),
    )


def _gpu_temperature_rules(t: AlertThresholds) -> tuple[AlertRule, ...]:
    """GPU and HBM temperatures."""
    return (
        AlertRule(
            "GpuTemperatureHigh",
            f"DCGM_FI_DEV_GPU_TEMP > {t.gpu_temperature_celsius:g}",
            t.temperature_for,
            Severity.WARNING,
            f"{_GPU} is above {t.gpu_temperature_celsius:g} C",
            "Sustained high GPU temperature leads to thermal throttling.",
            ("DCGM_FI_DEV_GPU_TEMP",),
        ),
        AlertRule(
            "GpuMemoryTemperatureHigh",
            f"DCGM_FI_DEV_MEMORY_TEMP > {t.memory_temperature_celsius:g}",
            t.temperature_for,
            Severity.WARNING,
            f"HBM of {_GPU} is above {t.memory_temperature_celsius:g} C",
            "Sustained high memory temperature leads to throttling and memory errors.",
            ("DCGM_FI_DEV_MEMORY_TEMP",),
        ),
    )


def _gpu_throttling_rules(t: AlertThresholds) -> tuple[AlertRule, ...]:
    """Power and thermal throttling."""
    return (
        AlertRule(
            "GpuPowerThrottling",
            f"rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) / 1e6 > {t.throttle_ratio:g}",
            t.throttle_for,
            Severity.WARNING,
            f"{_GPU} is power-throttled",
            f"More than {t.throttle_ratio:.0%} of the time throttled by power limits.",
            ("DCGM_FI_DEV_POWER_VIOLATION",),
        ),
        AlertRule(
            "GpuThermalThrottling",
            f"rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / 1e6 > {t.throttle_ratio:g}",
            t.throttle_for,
            Severity.WARNING,
            f"{_GPU} is thermally throttled",
            f"More than {t.throttle_ratio:.0%} of the time throttled by temperature.",
            ("DCGM_FI_DEV_THERMAL_VIOLATION",),
        ),
    )


def _gpu_interconnect_rules(t: AlertThresholds) -> tuple[AlertRule, ...]:
    """NVLink errors and PCIe replays."""
    nvlink = [
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    ]
    nvlink_expr = " or ".join(f"increase({m}[5m]) > 0" for m in nvlink)
    return (
        AlertRule(
            "GpuNvlinkErrors",
            nvlink_expr,
            t.nvlink_errors_for,
            Severity.WARNING,
            f"NVLink errors on {_GPU}",
            "NVLink CRC, replay or recovery errors slow collectives; persistent errors need a new instance.",
            tuple(nvlink),
        ),
        AlertRule(
            "GpuPcieReplays",
            f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m]) > {t.pcie_replays_per_second:g}",
            "5m",
            Severity.WARNING,
            f"PCIe replays on {_GPU}",
            "A high PCIe replay rate indicates a degraded link between the GPU and the host.",
            ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",),
        ),
    )


def gpu_health_rules(t: AlertThresholds) -> RuleGroup:
    return RuleGroup(
        "fmconstructs-gpu-health",
        (
            *_gpu_xid_rules(t),
            *_gpu_memory_rules(t),
            *_gpu_temperature_rules(t),
            *_gpu_throttling_rules(t),
            *_gpu_interconnect_rules(t),
        ),
    )


def gpu_utilization_rules(t: AlertThresholds) -> RuleGroup:
    return RuleGroup(
        "fmconstructs-gpu-utilization",
        (
            AlertRule(
                "GpuIdleWhileAllocated",
                f"DCGM_FI_DEV_GPU_UTIL < {t.idle_gpu_util_percent:g} "
                f"and DCGM_FI_DEV_FB_USED > {t.idle_gpu_min_memory_mib:g}",
                t.idle_for,
                Severity.WARNING,
                f"{_GPU} holds memory but is idle",
                "A process holds GPU memory while the GPU does no work: a hung or stalled job wastes capacity.",
                ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"),
            ),
        ),
    )


def efa_rules(t: AlertThresholds) -> RuleGroup:
    wr_err = (efa_metric("rdma_read_wr_err"), efa_metric("rdma_write_wr_err"))
    retrans, tx = efa_metric("retrans_pkts"), efa_metric("tx_pkts")
    return RuleGroup(
        "fmconstructs-efa",
        (
            AlertRule(
                "EfaRdmaWorkRequestErrors",
                " or ".join(_increase(m) for m in wr_err),
                "0m",
                Severity.CRITICAL,
                f"RDMA work-request errors on {_EFA}",
                "RDMA read/write work requests failed: NCCL over EFA will error or hang.",
                wr_err,
            ),
            AlertRule(
                "EfaRetransmitRateHigh",
                f"rate({retrans}[5m]) / rate({tx}[5m]) > {t.efa_retransmit_ratio:g}",
                t.efa_for,
                Severity.WARNING,
                f"High retransmit rate on {_EFA}",
                f"More than {t.efa_retransmit_ratio:.0%} of packets retransmitted: congestion or a degraded link.",
                (retrans, tx),
            ),
            AlertRule(
                "EfaRetransmitTimeouts",
                _increase(efa_metric("retrans_timeout_events")),
                t.efa_for,
                Severity.WARNING,
                f"Retransmit timeouts on {_EFA}",
                "Packets were retransmitted until they timed out.",
                (efa_metric("retrans_timeout_events"),),
            ),
            AlertRule(
                "EfaUnresponsiveRemote",
                _increase(efa_metric("unresponsive_remote_events")),
                "0m",
                Severity.CRITICAL,
                f"Unresponsive remote peers seen by {_EFA}",
                "A peer stopped answering: a node of the job is probably down or its EFA is broken.",
                (efa_metric("unresponsive_remote_events"),),
            ),
            AlertRule(
                "EfaImpairedRemoteConnections",
                _increase(efa_metric("impaired_remote_conn_events")),
                t.efa_for,
                Severity.WARNING,
                f"Impaired remote connections on {_EFA}",
                "Connections to peers are impaired (EFA driver event counter).",
                (efa_metric("impaired_remote_conn_events"),),
            ),
            AlertRule(
                "EfaCollectorFailing",
                "fm_efa_collector_success == 0",
                t.efa_for,
                Severity.WARNING,
                f"The EFA counter collector fails on {_WHERE}",
                "No EFA device found under /sys/class/infiniband or the counters could not be read.",
                ("fm_efa_collector_success",),
            ),
        ),
    )


def _node_stopped_expr(window: str) -> str:
    """A node whose node exporter reported within ``window`` and now is gone (Slurm nodes: the agent's series end;
    EKS: the target is dropped) or failing (EKS: a NotReady node stays a target with ``up == 0``), unless its last
    ``fm_node_shutting_down`` sample was 1: the clean-shutdown marker that
    :data:`~fmconstructs.observability.collection.NODE_LIFECYCLE_SCRIPT` writes (systemd ``ExecStop`` on Slurm
    nodes, the collector pod's ``preStop`` hook on EKS) and the agent or scraper collects before the node goes
    away. ``last_over_time``, not ``max_over_time``: a node that rebooted cleanly (1, then 0 again) and later
    crashes still pages."""
    node_up = 'up{job="node"}'
    return (
        f"max_over_time({node_up}[{window}]) "
        f"unless on(cluster, instance) {node_up} == 1 "
        f"unless on(cluster, instance) last_over_time(fm_node_shutting_down[{window}]) == 1"
    )


def node_rules(t: AlertThresholds) -> RuleGroup:
    return RuleGroup(
        "fmconstructs-nodes",
        (
            AlertRule(
                "ExporterDown",
                "up == 0",
                t.exporter_down_for,
                Severity.WARNING,
                "Exporter {{ $labels.job }} on {{ $labels.instance }} is down",
                "The agent cannot scrape this exporter: its metrics and alerts are blind.",
                ("up",),
            ),
            AlertRule(
                "NodeStoppedReporting",
                _node_stopped_expr(str(t.node_missing_window)),
                t.node_stopped_for,
                Severity.CRITICAL,
                "{{ $labels.instance }} stopped reporting",
                f"The node's exporter reported within the last {t.node_missing_window} but is gone or failing, and "
                "the node announced no clean shutdown: it crashed, is unreachable or its agent stopped. Nodes the "
                "scheduler stops on purpose (PCS idle scale-down, EKS scale-in) set fm_node_shutting_down to 1 as "
                "they stop and stay quiet.",
                ("up", "fm_node_shutting_down"),
            ),
            AlertRule(
                "NodeBootstrapDownloadFailed",
                "fm_bootstrap_download_failed == 1",
                "0m",
                Severity.WARNING,
                "{{ $labels.component }} is not installed on {{ $labels.instance }}",
                "The node could not install this exporter at boot: the image lacks it, the S3 mirror or registry was "
                "unreachable, or the checksum failed. Its metrics, and the alerts that read them, are missing. The "
                "node's boot log has a line starting FMCONSTRUCTS-DOWNLOAD-FAILED.",
                ("fm_bootstrap_download_failed",),
            ),
            AlertRule(
                "LustreFileSystemAlmostFull",
                'node_filesystem_avail_bytes{fstype="lustre"} / node_filesystem_size_bytes{fstype="lustre"} '
                f"< {t.filesystem_free_ratio:g}",
                t.filesystem_for,
                Severity.WARNING,
                "Lustre {{ $labels.mountpoint }} is almost full (seen from {{ $labels.instance }})",
                f"Less than {t.filesystem_free_ratio:.0%} free: checkpoints will fail when it fills up.",
                ("node_filesystem_avail_bytes", "node_filesystem_size_bytes"),
            ),
        ),
    )


def slurm_rules(t: AlertThresholds) -> RuleGroup:
    return RuleGroup(
        "fmconstructs-slurm",
        (
            AlertRule(
                "SlurmNodesDown",
                'fm_slurm_nodes{state=~"down|fail|failing"} > 0',
                t.slurm_for,
                Severity.CRITICAL,
                "{{ $value }} Slurm nodes are {{ $labels.state }} in {{ $labels.cluster }}",
                "Slurm marked nodes down or failed: jobs cannot use them.",
                ("fm_slurm_nodes",),
            ),
            AlertRule(
                "SlurmNodesDrained",
                'fm_slurm_nodes{state=~"drain|drained|draining"} > 0',
                t.slurm_for,
                Severity.WARNING,
                "{{ $value }} Slurm nodes are {{ $labels.state }} in {{ $labels.cluster }}",
                "Drained nodes take no jobs; check `sinfo -R` for the reason.",
                ("fm_slurm_nodes",),
            ),
            AlertRule(
                "SlurmCollectorFailing",
                "fm_slurm_collector_success == 0",
                t.slurm_for,
                Severity.WARNING,
                "The Slurm collector fails on {{ $labels.instance }}",
                "sinfo could not be run or parsed.",
                ("fm_slurm_collector_success",),
            ),
        ),
    )


_ON_CHECK = "on(cluster, job, instance, check, mode)"
#: The classes whose ``gpu-xid`` failures route to their own trigger (the classes that fail the checks).
_ROUTED_XID_CLASSES = tuple(c for c in XidClass if c.fails_node_checks)


def _xid_failure(xid_classes: Iterable[XidClass]) -> str:
    """``fm_node_check_failure_info`` of ``gpu-xid`` failures whose reason names an Xid of ``xid_classes`` (the
    class word the check writes: :func:`~fmconstructs.health.xid.node_check_reason_regex`; a raw string, no
    escapes)."""
    regex = "|".join(f"(?:{node_check_reason_regex(c)})" for c in xid_classes)
    return f'{names.NODE_CHECK_FAILURE_INFO}{{check="gpu-xid", reason=~`{regex}`}}'


def _node_check_failed_expr() -> str:
    """Each failing check of a node (``fm_node_check_status == 0``), with the failure's ``reason`` label from
    ``fm_node_check_failure_info`` when the node wrote one (the ``or`` keeps a failure without it), but a ``gpu-xid``
    failure of a RESET or FATAL Xid (its own rules, :func:`_node_check_xid_expr`). A node that is gone (scale-down,
    replacement) has no series, so nothing fires for it: no ``absent()``, no staleness alert."""
    status, info = names.NODE_CHECK_STATUS, names.NODE_CHECK_FAILURE_INFO
    each = f"({status} == 0) * {_ON_CHECK} group_left(reason) {info} or {_ON_CHECK} {status} == 0"
    return f"({each}) unless {_ON_CHECK} {_xid_failure(_ROUTED_XID_CLASSES)}"


def _node_check_xid_expr(xid_class: XidClass) -> str:
    """A ``gpu-xid`` failure naming an Xid of ``xid_class``, with its reason."""
    status = f'{names.NODE_CHECK_STATUS}{{check="gpu-xid"}}'
    return f"({status} == 0) * {_ON_CHECK} group_left(reason) {_xid_failure([xid_class])}"


def _node_check_xid_rule(t: AlertThresholds, xid_class: XidClass) -> AlertRule:
    """``FmNodeCheckFailed`` for a ``gpu-xid`` failure of ``xid_class``: the class's trigger, as the Xid alert."""
    action = "reboots" if xid_class is XidClass.RESET else "replaces"
    return AlertRule(
        names.ALERT_NODE_CHECK_FAILED,
        _node_check_xid_expr(xid_class),
        t.node_check_for,
        Severity.CRITICAL,
        "Node check {{ $labels.check }} ({{ $labels.mode }}) fails on {{ $labels.instance }}",
        f"The gpu-xid check found an Xid of the {xid_class.value} class: {{{{ $labels.reason }}}}. The Slurm gate or "
        f"prolog drained the node (EKS: it keeps its taint); the remediation handler {action} it per its policy "
        f"(fmconstructs_trigger {xid_class.trigger}, as the Xid alert).",
        (names.NODE_CHECK_STATUS, names.NODE_CHECK_FAILURE_INFO),
        labels={names.TRIGGER_LABEL: str(xid_class.trigger), XID_CLASS_LABEL: xid_class.value},
    )


def node_check_rules(t: AlertThresholds) -> RuleGroup:
    """``FmNodeCheckFailed``: remediation's NODE_CHECK_FAILED trigger (label ``fmconstructs_trigger``), and for a
    ``gpu-xid`` failure the trigger of the Xid's class (one rule per class that fails the checks)."""
    return RuleGroup(
        "fmconstructs-node-checks",
        (
            AlertRule(
                names.ALERT_NODE_CHECK_FAILED,
                _node_check_failed_expr(),
                t.node_check_for,
                Severity.CRITICAL,
                "Node check {{ $labels.check }} ({{ $labels.mode }}) fails on {{ $labels.instance }}",
                "A node-join check failed on this node: {{ $labels.reason }}. The Slurm gate or prolog drained it "
                "(EKS: the node keeps its taint); the remediation handler replaces it per its policy. The node's "
                "/var/log/fmconstructs/node-checks.log has every line.",
                (names.NODE_CHECK_STATUS, names.NODE_CHECK_FAILURE_INFO),
                labels={names.TRIGGER_LABEL: names.TRIGGER_NODE_CHECK_FAILED},
            ),
            *(_node_check_xid_rule(t, c) for c in _ROUTED_XID_CLASSES),
        ),
    )


def default_rule_groups(thresholds: AlertThresholds | None = None) -> tuple[RuleGroup, ...]:
    """All rule groups fmconstructs ships."""
    if thresholds is not None:
        check_instance("thresholds", thresholds, AlertThresholds, "an AlertThresholds or None")
    t = thresholds or AlertThresholds()
    from .job_rules import job_alert_rule_group, job_rule_group  # here: job_rules imports this module

    groups = (
        gpu_health_rules(t),
        gpu_utilization_rules(t),
        efa_rules(t),
        node_rules(t),
        slurm_rules(t),
        node_check_rules(t),
        job_rule_group(),
        job_alert_rule_group(),
    )
    _check_metrics(groups)
    return groups


def _check_metrics(groups: Iterable[RuleGroup]) -> None:
    for group in groups:
        for rule in group.rules:
            unknown = sorted(set(rule.metrics) - ALL_METRICS)
            if unknown:
                raise AssertionError(f"{rule.name} reads metrics no collector produces: {unknown}")
            missing = [m for m in rule.metrics if m not in rule.expr]
            if missing:
                raise AssertionError(f"{rule.name} declares metrics its expression does not use: {missing}")


def check_rule_groups(parameter: str, groups: object) -> tuple[RuleGroup, ...]:
    """A list of :class:`RuleGroup` with distinct names (prometheus/prometheus model/rulefmt/rulefmt.go: a group
    name may not repeat in one file)."""
    checked = check_sequence(parameter, groups, lambda n, v: check_instance(n, v, RuleGroup, "a RuleGroup"))
    names = [g.name for g in checked]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise FmValidationError(parameter, repeated, "rule groups with distinct names (one file, one name each)")
    return checked


def rules_yaml(groups: Iterable[RuleGroup]) -> str:
    """A Prometheus rule file (also the ``Data`` of an AMP rule groups namespace)."""
    checked = check_rule_groups("groups", groups)
    return str(yaml.safe_dump({"groups": [g.to_dict() for g in checked]}, sort_keys=False, width=200))


def alerts_table_markdown(groups: Iterable[RuleGroup] | None = None) -> str:
    """The README's alert list, generated from the rules (a test keeps the README in sync)."""
    rows = ["| Alert | Group | Severity | For | Meaning |", "|---|---|---|---|---|"]
    for group in check_rule_groups("groups", groups) if groups is not None else default_rule_groups():
        for rule in group.rules:
            if not isinstance(rule, AlertRule):
                continue  # recording rules page no one
            meaning = rule.description.replace("|", "\\|")
            rows.append(
                f"| `{rule.name}` | {group.name.removeprefix('fmconstructs-')} | {rule.severity.value} | "
                f"{rule.for_} | {meaning} |"
            )
    return "\n".join(rows)
