"""Alert rules of the scheduled NCCL check: the fabric against the cluster's own rolling baseline and its floor, and
staleness against the check's schedule.

``NcclBusBandwidthBelowBaseline``: the run's max-size busbw is more than the tolerance below the baseline, or below
the floor. The baseline is the rolling window of :mod:`.nccl_report` (never below the floor; the floor alone before
the first admitted run, so a degraded first run alerts and never becomes the standard). The floor is a fraction of the
catalog's published figure for the type and node count (:func:`fmconstructs.catalog.nccl_allreduce_reference`: 487
GB/s on 2x p5.48xlarge, 377 on 4x p6-b200, 654 on 2x p6-b300, at 16 GiB), a reference and not a gate: fixed per-SKU
gates misfire (NVIDIA/aicr#1256). The tolerance is the one the report used to admit runs
(``fm_nccl_allreduce_drop_tolerance_ratio``, from ``NcclCheckSpec.drop_percent``) unless
``NcclAlertOptions(drop_percent=...)`` overrides it here. :mod:`.nccl_report` writes every gauge into the same file,
so the series carry the same labels.

``NcclCheckStale``: the next report was due (``fm_nccl_next_run_due_timestamp_seconds``: the last run + the schedule's
longest interval + the job's time limit) and has not come for ``stale_grace``, unless the queue probe says the check is
deferred: pending for nodes that other running jobs hold (Slurm: the check pending for Resources/Priority while other
jobs run, or the check itself running; EKS: a worker pod unschedulable for lack of GPUs), by a probe whose timestamp
moved within the last :data:`PROBE_FRESH`. A long job therefore delays the check without an alert; a check that
stopped for any other reason (timer or scrontab off, the job failing before its report, a dead probe) alerts.

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

import warnings
from dataclasses import dataclass

from .._validate import check_number
from ..errors import FmValidationError, is_token
from ..observability._checks import PrometheusDuration, check_prometheus_duration
from ..observability.rules import AlertRule, RuleGroup, Severity
from . import metric_names as names

#: How recent the queue probe's look must be for its "deferred" to hold an alert back (it runs every minute): a
#: range, so that the probe's timestamp must have moved within it (a dead probe's textfile stays, frozen). A PromQL
#: duration, not a number of seconds compared with ``time()``, so that it scales with the rule's other durations.
PROBE_FRESH: str = "15m"
#: Deprecated alias (seconds) of :data:`PROBE_FRESH`; removed in fmconstructs 0.4.0.
PROBE_FRESH_SECONDS = 900


@dataclass(frozen=True)
class NcclAlertOptions:
    """:param drop_percent: alert when the max-size busbw is more than this percentage below the baseline. Default
        None: the check's own tolerance (``NcclCheckSpec.drop_percent``, 10), which the report writes and also uses to
        admit runs to the baseline window; a number here overrides it in the rule only.
    :param for_: how long the drop must hold (the gauges only change when the check runs).
    :param stale_grace: how long past the due time of the next report ``NcclCheckStale`` waits (its ``for``).
    :param stale_after_hours: deprecated (ignored, with a ``DeprecationWarning``; removed in fmconstructs 0.4.0):
        staleness follows the check's schedule (``NcclCheckSpec.schedule``) plus ``stale_grace``.
    """

    drop_percent: float | None = None
    for_: PrometheusDuration = "15m"
    stale_grace: PrometheusDuration = "1h"
    stale_after_hours: float | None = None

    def __post_init__(self) -> None:
        for name, maximum in (("drop_percent", 100), ("stale_after_hours", 24 * 366)):
            if getattr(self, name) is None:
                continue
            value = check_number(name, getattr(self, name), minimum=0, exclusive_minimum=True, maximum=maximum)
            if is_token(value):
                raise FmValidationError(name, value, "a number known at synth time (it is written into the rules)")
        if self.drop_percent is not None and self.drop_percent >= 100:
            raise FmValidationError("drop_percent", self.drop_percent, "a percentage below 100")
        object.__setattr__(self, "for_", check_prometheus_duration("for_", self.for_))
        object.__setattr__(self, "stale_grace", check_prometheus_duration("stale_grace", self.stale_grace))
        if self.stale_after_hours is not None:
            warnings.warn(
                "NcclAlertOptions.stale_after_hours is deprecated and ignored (removed in fmconstructs 0.4.0): "
                "NcclCheckStale follows the check's schedule plus stale_grace",
                DeprecationWarning,
                stacklevel=3,
            )


def below_baseline_expr(drop_percent: float | None = None) -> str:
    """The max-size busbw below the baseline by more than the tolerance (the report's, or ``drop_percent``), or below
    the floor."""
    measured = names.NCCL_MAX_SIZE_BUSBW
    if drop_percent is None:
        threshold = f"(1 - {names.NCCL_DROP_TOLERANCE}) * {names.NCCL_BASELINE_BUSBW}"
    else:
        threshold = f"{1 - drop_percent / 100:g} * {names.NCCL_BASELINE_BUSBW}"
    return f"{measured} < {threshold} or {measured} < {names.NCCL_FLOOR_BUSBW}"


def stale_expr() -> str:
    """The next report is overdue and the check is not deferred (by a fresh probe)."""
    deferred = f"{names.NCCL_CHECK_DEFERRED} == 1 and changes({names.NCCL_QUEUE_PROBE_TIME}[{PROBE_FRESH}]) > 0"
    return f"time() > {names.NCCL_NEXT_RUN_DUE} unless ({deferred})"


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


def _below_baseline_rule(o: NcclAlertOptions) -> AlertRule:
    by = "the check's tolerance" if o.drop_percent is None else f"{o.drop_percent:g}%"
    return AlertRule(
        names.ALERT_NCCL_BELOW_BASELINE,
        below_baseline_expr(o.drop_percent),
        o.for_,
        Severity.WARNING,
        f"NCCL all-reduce bus bandwidth is {{{{ $value }}}} GB/s, more than {by} below the cluster's baseline or "
        "below its floor",
        "The scheduled nccl-tests all_reduce_perf check measured a bus bandwidth at its largest message size more "
        f"than {by} below the cluster's rolling baseline, or below the floor taken from the published figure for "
        "the instance type: check EFA counters, drained or replaced nodes and NCCL/EFA versions. Such a run does "
        "not enter the baseline window; after a planned change, delete the baseline file to start a new window.",
        (names.NCCL_MAX_SIZE_BUSBW, names.NCCL_BASELINE_BUSBW, names.NCCL_FLOOR_BUSBW)
        + ((names.NCCL_DROP_TOLERANCE,) if o.drop_percent is None else ()),
    )


def _stale_rule(o: NcclAlertOptions) -> AlertRule:
    return AlertRule(
        names.ALERT_NCCL_CHECK_STALE,
        stale_expr(),
        o.stale_grace,
        Severity.WARNING,
        "The scheduled NCCL all-reduce check is overdue",
        "No NCCL check report came by its due time (the last run, the schedule's longest interval and the job's "
        "time limit) and the check is not waiting behind a running job: the timer or scrontab is off, the job "
        "fails before its report, or the queue probe stopped.",
        (names.NCCL_NEXT_RUN_DUE, names.NCCL_CHECK_DEFERRED, names.NCCL_QUEUE_PROBE_TIME),
    )


def nccl_rule_group(options: NcclAlertOptions | None = None) -> RuleGroup:
    """``fmconstructs-nccl``: busbw below the baseline or the floor, a node in the slowest pair too often, a failed
    check, an overdue check."""
    o = options if options is not None else NcclAlertOptions()
    if not isinstance(o, NcclAlertOptions):
        raise FmValidationError("options", o, "an NcclAlertOptions or None")
    return RuleGroup(
        "fmconstructs-nccl",
        (
            _below_baseline_rule(o),
            _outlier_rule(),
            AlertRule(
                names.ALERT_NCCL_CHECK_FAILED,
                f"{names.NCCL_LAST_SUCCESS} == 0",
                "0m",
                Severity.WARNING,
                "The scheduled NCCL all-reduce check failed",
                "all_reduce_perf printed no results, wrong values or out-of-bounds values: read the job's log in "
                "the check's state directory.",
                (names.NCCL_LAST_SUCCESS,),
            ),
            _stale_rule(o),
        ),
    )
