"""GPU-hours recording rules and the allocated-but-idle GPU ("waste") alert.

dcgm-exporter's HPC job mapping (``--hpc-job-mapping-dir``: one file per GPU index holding the ids of the jobs using
it, written by the scheduler's prolog and removed by its epilog) adds the label ``hpc_job`` to that GPU's series
(NVIDIA/dcgm-exporter internal/pkg/transformation: ``hpcJobAttribute = "hpc_job"``); on Kubernetes its pod mapping
adds ``namespace``, ``pod`` and ``container`` (same file: ``podAttribute``, ``namespaceAttribute``). A GPU with no job
has series without these labels, so "allocated" means "carries a job label".

GPU-hours are integrated from a per-minute gauge of GPUs: the group is evaluated every minute, so
``sum_over_time(gauge[1h]) / 60`` is the GPU-hours of the last hour (a finished job's series end with its epilog and
its last hour decays to zero). Bounded cardinality: the recorded series are per node (``instance``), per job
(``hpc_job``: only jobs running in the last hour exist) and per namespace; GPU index and node are aggregated away in
the per-job series.

Not part of :func:`fmconstructs.observability.rules.default_rule_groups`: add :func:`gpu_hours_rule_group` to the
groups of a workspace whose GPU nodes map jobs (its recording rules are cheap; its alert needs the job label).

The same GPU-hours per job, user, account, team and namespace on Slurm and Kubernetes, keyed by one ``fm_job`` label,
are in the default per-job layer :mod:`fmconstructs.observability.job_rules` (``fm_job:gpu_hours:*``).
"""

from __future__ import annotations

from .._validate import check_number, check_str
from ..errors import FmValidationError, is_token
from ._checks import PrometheusDuration, check_prometheus_duration
from .rules import AlertRule, RecordingRule, RuleGroup, Severity

#: dcgm-exporter's HPC job label (NVIDIA/dcgm-exporter internal/pkg/transformation ``hpcJobAttribute``).
HPC_JOB_LABEL = "hpc_job"
#: dcgm-exporter's Kubernetes namespace label (same file, ``namespaceAttribute``).
NAMESPACE_LABEL = "namespace"
_UTIL = "DCGM_FI_DEV_GPU_UTIL"
#: The group's evaluation interval; the GPU-hours divisor (minutes per hour) depends on it.
_INTERVAL = "1m"
_PER_HOUR = 60


def _gpus(by: str, selector: str = "") -> str:
    return f"count by ({by}) ({_UTIL}{selector})"


def _recording_rules(job_label: str) -> tuple[RecordingRule, ...]:
    gauges = (
        ("fm:gpus:instance", _gpus("instance"), (_UTIL,)),
        ("fm:gpus_allocated:job", _gpus(job_label, f'{{{job_label}!=""}}'), (_UTIL,)),
        ("fm:gpus_allocated:namespace", _gpus(NAMESPACE_LABEL, f'{{{NAMESPACE_LABEL}!=""}}'), (_UTIL,)),
    )
    rules = [RecordingRule(record, expr, metrics) for record, expr, metrics in gauges]
    for scope in ("instance", "job", "namespace"):
        gauge = "fm:gpus:instance" if scope == "instance" else f"fm:gpus_allocated:{scope}"
        rules.append(RecordingRule(f"fm:gpu_hours:{scope}_1h", f"sum_over_time({gauge}[1h]) / {_PER_HOUR}", ()))
    return tuple(rules)


def gpu_hours_rule_group(
    *,
    idle_util_percent: float = 5.0,
    idle_for: PrometheusDuration = "30m",
    job_label: str = HPC_JOB_LABEL,
) -> RuleGroup:
    """Recording rules ``fm:gpus:instance``, ``fm:gpus_allocated:{job,namespace}`` (GPUs now) and
    ``fm:gpu_hours:{instance,job,namespace}_1h`` (GPU-hours of the last hour), and the warning
    ``FmGpuAllocatedIdle``: a GPU allocated to a job below ``idle_util_percent`` utilization for ``idle_for``.

    :param job_label: the label carrying the job id on DCGM series (``hpc_job`` with dcgm-exporter's job mapping).
    """
    checked = check_number("idle_util_percent", idle_util_percent)
    if is_token(checked) or not 0 < checked <= 100:
        raise FmValidationError("idle_util_percent", idle_util_percent, "a percentage in (0, 100] known at synthesis")
    idle_for = check_prometheus_duration("idle_for", idle_for, positive=True)
    check_str("job_label", job_label, allowed="a Prometheus label name")
    if is_token(job_label) or not job_label.isidentifier() or job_label.startswith("__"):
        raise FmValidationError("job_label", job_label, "a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, no '__')")
    waste = AlertRule(
        "FmGpuAllocatedIdle",
        f'{_UTIL}{{{job_label}!=""}} < {checked:g}',
        idle_for,
        Severity.WARNING,
        f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.instance }}}} is allocated to job {{{{ $labels.{job_label} }}}} "
        "but idle",
        f"A GPU allocated to a job stayed below {checked:g}% utilization for {idle_for}: the allocation is wasted "
        "(a stuck job, a job waiting on I/O or a misconfigured job that uses fewer GPUs than it asked for).",
        (_UTIL,),
    )
    return RuleGroup("fmconstructs-gpu-hours", (*_recording_rules(job_label), waste), interval=_INTERVAL)
