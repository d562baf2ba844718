"""Alert rules of the scheduled NCCL check: the fabric against the cluster's own baseline.

No absolute busbw threshold per instance type: published figures differ with node count, NCCL and EFA versions and
tuning (487 GB/s on 2x p5.48xlarge in awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/README.md, 377 GB/s
on 4x p6-b200 untuned in its PCS tests), and fixed gates misfire (NVIDIA/aicr#1256). The rules compare the last run
with the cluster's first healthy run (:mod:`.nccl_report` writes both gauges into the same file, so the series carry
the same labels).

The NCCL metrics are published by the login node, so their ``instance`` is the login node: the cluster-wide
rules carry no remediation trigger (a drop names no faulty node). Only ``FmNcclOutlier`` does
(``fmconstructs_trigger="nccl-outlier"``, remediation's NCCL_OUTLIER): it reads ``fm_nccl_suspect_node`` of the
pairwise run (``NcclCheckSpec(pairwise=True)``) and rewrites ``instance`` and ``instance_id`` to the suspect's own
instance id (label ``suspect_instance_id``, read from each node's IMDS by the job), so the handler acts on that node;
a suspect without a known instance id raises nothing (its metric still shows it).

Not part of :func:`fmconstructs.observability.rules.default_rule_groups`: add :func:`nccl_rule_group` to the groups
of a workspace that runs the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validate import check_number
from ..errors import FmValidationError, is_token
from ..observability._checks import PrometheusDuration, check_prometheus_duration
from ..observability.rules import AlertRule, RuleGroup, Severity
from . import metric_names as names
from .metric_names import NCCL_AVG_BUSBW as AVG_BUSBW
from .metric_names import NCCL_BASELINE_BUSBW as BASELINE_BUSBW
from .metric_names import NCCL_LAST_RUN as LAST_RUN
from .metric_names import NCCL_LAST_SUCCESS as LAST_SUCCESS


@dataclass(frozen=True)
class NcclAlertOptions:
    """:param drop_percent: alert when the average bus bandwidth is more than this percentage below the baseline.
    :param for_: how long the drop must hold (the gauges only change when the check runs).
    :param stale_after_hours: warn when no check ran for this long (at least the schedule's interval).
    """

    drop_percent: float = 10.0
    for_: PrometheusDuration = "15m"
    stale_after_hours: float = 26.0

    def __post_init__(self) -> None:
        for name, maximum in (("drop_percent", 100), ("stale_after_hours", 24 * 366)):
            value = check_number(name, getattr(self, name), minimum=0, exclusive_minimum=True, maximum=maximum)
            if is_token(value):
                raise FmValidationError(name, value, "a number known at synth time (it is written into the rules)")
        if self.drop_percent >= 100:
            raise FmValidationError("drop_percent", self.drop_percent, "a percentage below 100")
        object.__setattr__(self, "for_", check_prometheus_duration("for_", self.for_))


def _outlier_expr() -> str:
    suspect = f'{names.NCCL_SUSPECT_NODE}{{suspect_instance_id=~"i-.+"}} == 1'
    for target in ("instance_id", "instance"):
        suspect = f'label_replace({suspect}, "{target}", "$1", "suspect_instance_id", "(.+)")'
    return suspect


def _outlier_rule() -> AlertRule:
    return AlertRule(
        names.ALERT_NCCL_OUTLIER,
        _outlier_expr(),
        "0m",
        Severity.WARNING,
        "{{ $labels.node }} was in the slowest NCCL pair too many runs in a row",
        "The pairwise NCCL check put this node in the slowest two-node pair, well below the other pairs, in "
        "several runs in a row with different partners: its GPUs, NVLink or EFA are suspect. The remediation "
        "handler drains it per its policy (trigger nccl-outlier).",
        (names.NCCL_SUSPECT_NODE,),
        labels={names.TRIGGER_LABEL: names.TRIGGER_NCCL_OUTLIER},
    )


def nccl_rule_group(options: NcclAlertOptions | None = None) -> RuleGroup:
    """``fmconstructs-nccl``: busbw below the baseline, a node in the slowest pair too often, a failed check, no
    recent check."""
    o = options if options is not None else NcclAlertOptions()
    if not isinstance(o, NcclAlertOptions):
        raise FmValidationError("options", o, "an NcclAlertOptions or None")
    ratio = 1 - o.drop_percent / 100
    stale_seconds = o.stale_after_hours * 3600
    return RuleGroup(
        "fmconstructs-nccl",
        (
            AlertRule(
                names.ALERT_NCCL_BELOW_BASELINE,
                f"{AVG_BUSBW} < {ratio:g} * {BASELINE_BUSBW}",
                o.for_,
                Severity.WARNING,
                "NCCL all-reduce bus bandwidth is {{ $value }} GB/s, more than "
                f"{o.drop_percent:g}% below the cluster's baseline",
                "The scheduled nccl-tests all_reduce_perf check measured an average bus bandwidth more than "
                f"{o.drop_percent:g}% below the cluster's first healthy run: check EFA counters, drained or replaced "
                "nodes and NCCL/EFA versions. Delete the baseline file after a planned change to record a new one.",
                (AVG_BUSBW, BASELINE_BUSBW),
            ),
            _outlier_rule(),
            AlertRule(
                names.ALERT_NCCL_CHECK_FAILED,
                f"{LAST_SUCCESS} == 0",
                "0m",
                Severity.WARNING,
                "The scheduled NCCL all-reduce check failed",
                "all_reduce_perf printed no results, wrong values or out-of-bounds values: read the job's log in "
                "the check's state directory.",
                (LAST_SUCCESS,),
            ),
            AlertRule(
                names.ALERT_NCCL_CHECK_STALE,
                f"time() - {LAST_RUN} > {stale_seconds:g}",
                "0m",
                Severity.WARNING,
                f"No NCCL all-reduce check in the last {o.stale_after_hours:g} hours",
                "The scheduled check did not run (scrontab or timer disabled, the job pending or failing before "
                "the report).",
                (LAST_RUN,),
            ),
        ),
    )
