"""One per-job recording-rule layer for Slurm and Kubernetes: the same ``fm_job:*`` series on both schedulers.

Every per-job series carries ONE job label ``fm_job`` plus ``scheduler`` (``"slurm"`` or ``"kubernetes"``) and
``cluster`` (and ``namespace`` on Kubernetes, where job names are only unique per namespace), so one dashboard and one
alert serve PCS, ParallelCluster, HyperPod Slurm and EKS.

Where the job comes from:

- Slurm: dcgm-exporter's HPC job mapping labels every series of a GPU a job holds with ``hpc_job="<job id>"``
  (:mod:`.job_mapping`); the rules copy it into ``fm_job``. User, account and partition come from
  ``fm_slurm_job_info{hpc_job,user,account,partition}`` (one series per RUNNING job, written on the login/head node by
  :mod:`.node.slurm_textfile`); a Slurm job's ``team`` is its Slurm account.
- Kubernetes: dcgm-exporter's pod attribution labels GPU series with ``namespace``, ``pod`` and ``container``; they
  are joined on ``(cluster, namespace, pod)`` to kube-state-metrics' ``kube_pod_labels``. ``fm_job`` is the pod's
  label ``jobset.sigs.k8s.io/jobset-name``, else ``batch.kubernetes.io/job-name``, else the pod name. ``team`` is the
  pod's ``team`` label, else its namespace's (``kube_namespace_labels``).

EFA counters are per node, not per GPU: ``fm_job:efa_bytes:rate5m`` gives each job the EFA throughput (transmitted +
received bytes per second, :mod:`.node.efa_textfile`'s ``fm_efa_tx_bytes_total`` and ``fm_efa_rx_bytes_total``) of
every node it has GPUs on, summed over those nodes. Two jobs sharing a node both see the node's whole traffic.

XIDs: DCGM's XID gauge holds the last XID and never resets (see :mod:`.rules`), but a job's GPU series are new
series (they carry the job label), so ``changes()`` over them counts the XIDs raised while the job held the GPU.

Evaluation every minute (the group ``interval``): GPU-hours are ``sum_over_time(<GPUs gauge>[1h]) / 60``, as in
the layer; over any other range ``R`` a dashboard uses ``sum_over_time(<gauge>[R]) / 60``.

Bounded cardinality (no per-GPU, per-pod or per-step label survives aggregation): per-job series are keyed by
``(cluster, scheduler, namespace, fm_job)``, so they number (running jobs x record names) and end with the job (its
GPU series go stale when the epilog or pod deletion removes them; the ``_1h`` GPU-hours an hour later).
``fm_job:instance_gpus:count`` adds ``instance`` (at most the job's node count per job). ``fm_job:info`` adds
``user``, ``account``, ``partition`` and ``team``, each a function of the job (no extra series). The per-scope sums
are keyed by one of ``user``, ``account``, ``team`` or ``namespace``: as many series as there are of those.
``fm_job:pod:info`` is one series per pod that has GPU series (not per pod of the cluster). :data:`RECORD_NAMES`
lists every record name (30 rules, 21 names: eight names have a Slurm and a Kubernetes rule each, and
``fm_job:info`` too). Slurm job ids only grow, so every new job starts new series: the head block holds those of
the jobs run in its window, while the live set stays (running jobs x names).
"""

from __future__ import annotations

from .._validate import check_number
from ..errors import FmValidationError, is_token
from ._checks import PrometheusDuration, check_prometheus_duration
from .rules import AlertRule, RecordingRule, RuleGroup, Severity

JOB_LABEL = "fm_job"
SLURM, KUBERNETES = "slurm", "kubernetes"
_UTIL = "DCGM_FI_DEV_GPU_UTIL"
_XID = "DCGM_FI_DEV_XID_ERRORS"
_POD_INFO = "fm_job:pod:info"
_GAUGE = "fm_job:gpus_allocated:count"
_ON_POD = "on(cluster, namespace, pod)"
_ON_JOB = "on(cluster, scheduler, namespace, fm_job)"
_SLURM_GPU = '{hpc_job!=""}'  # a GPU series of a Slurm job
_POD_GPU = '{pod!=""}'  # a GPU series of a Kubernetes pod
_PER_HOUR = 60  # minutes per hour: the group runs every minute
_INTERVAL = "1m"

#: Per-GPU DCGM aggregations: (record, aggregation, expression over one selector ``{sel}``, metrics read).
_GPU_RECORDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (_GAUGE, "count", _UTIL + "{sel}", (_UTIL,)),
    ("fm_job:gpu_utilization:avg", "avg", _UTIL + "{sel}", (_UTIL,)),
    ("fm_job:sm_active:avg", "avg", "DCGM_FI_PROF_SM_ACTIVE{sel}", ("DCGM_FI_PROF_SM_ACTIVE",)),
    ("fm_job:fb_used_mib:sum", "sum", "DCGM_FI_DEV_FB_USED{sel}", ("DCGM_FI_DEV_FB_USED",)),
    ("fm_job:power_watts:sum", "sum", "DCGM_FI_DEV_POWER_USAGE{sel}", ("DCGM_FI_DEV_POWER_USAGE",)),
    (
        "fm_job:nvlink_bandwidth:rate5m",
        "sum",
        "rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{sel}[5m])",
        ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",),
    ),
    ("fm_job:xid_changes:sum15m", "sum", f"changes({_XID}{{sel}}[15m])", (_XID,)),
    ("fm_job:instance_gpus:count", "count", _UTIL + "{sel}", (_UTIL,)),
)
#: Job scopes GPU use is summed by: the label and where it comes from.
SCOPES: tuple[str, ...] = ("user", "account", "team", "namespace")


def _chain(source: str) -> str:
    """``source`` (kube_pod_labels) with ``fm_job``: the JobSet name, else the Job name, else the pod name
    (``label_replace`` leaves the label untouched when the source label is empty, so later steps win)."""
    expr = f'label_replace({source}, "fm_job", "$1", "pod", "(.+)")'
    expr = f'label_replace({expr}, "fm_job", "$1", "label_batch_kubernetes_io_job_name", "(.+)")'
    return f'label_replace({expr}, "fm_job", "$1", "label_jobset_sigs_k8s_io_jobset_name", "(.+)")'


def _per_scheduler(template: str, aggregation: str, extra_by: str = "") -> dict[str, str]:
    """The Slurm and the Kubernetes expression of one per-GPU aggregation."""
    slurm = f'label_replace({template.format(sel=_SLURM_GPU)}, "fm_job", "$1", "hpc_job", "(.+)")'
    eks = f"{template.format(sel=_POD_GPU)} * {_ON_POD} group_left(fm_job) {_POD_INFO}"
    return {
        SLURM: f"{aggregation} by (cluster, fm_job{extra_by}) ({slurm})",
        KUBERNETES: f"{aggregation} by (cluster, namespace, fm_job{extra_by}) ({eks})",
    }


def _pod_info() -> RecordingRule:
    expr = f"max by (cluster, namespace, pod, fm_job) ({_chain('kube_pod_labels')} and {_ON_POD} {_UTIL}{_POD_GPU})"
    return RecordingRule(_POD_INFO, expr, ("kube_pod_labels", _UTIL), labels={"scheduler": KUBERNETES})


def _gpu_rules() -> list[RecordingRule]:
    rules = []
    for record, aggregation, template, metrics in _GPU_RECORDS:
        extra = ", instance" if record == "fm_job:instance_gpus:count" else ""
        for scheduler, expr in _per_scheduler(template, aggregation, extra).items():
            rules.append(RecordingRule(record, expr, metrics, labels={"scheduler": scheduler}))
    return rules


def _node_rules() -> list[RecordingRule]:
    job_nodes = "group by (cluster, scheduler, namespace, fm_job, instance) (fm_job:instance_gpus:count)"
    tx, rx = "fm_efa_tx_bytes_total", "fm_efa_rx_bytes_total"
    node_efa = f"sum by (cluster, instance) (rate({tx}[5m]) + rate({rx}[5m]))"
    return [
        RecordingRule(
            "fm_job:nodes:count", "count by (cluster, scheduler, namespace, fm_job) (fm_job:instance_gpus:count)", ()
        ),
        RecordingRule(
            "fm_job:efa_bytes:rate5m",
            f"sum by (cluster, scheduler, namespace, fm_job) ({job_nodes} * on(cluster, instance) group_left() "
            f"{node_efa})",
            (tx, rx),
        ),
    ]


def _info_rules() -> list[RecordingRule]:
    slurm_info = 'label_replace(fm_slurm_job_info, "fm_job", "$1", "hpc_job", "(.+)")'
    slurm = (
        "max by (cluster, fm_job, user, account, partition, team) "
        f'(label_replace({slurm_info}, "team", "$1", "account", "(.+)"))'
    )
    team = 'label_replace({metric}{{label_team!=""}}, "team", "$1", "label_team", "(.+)")'
    by = "max by (cluster, namespace, fm_job, team)"
    pod_team = f"{by} ({team.format(metric='kube_pod_labels')} * {_ON_POD} group_left(fm_job) {_POD_INFO})"
    ns_team = (
        f"{by} ({_POD_INFO} * on(cluster, namespace) group_left(team) "
        f"max by (cluster, namespace, team) ({team.format(metric='kube_namespace_labels')}))"
    )
    no_team = f"max by (cluster, namespace, fm_job) ({_POD_INFO})"
    on = "or on(cluster, namespace, fm_job)"
    return [
        RecordingRule("fm_job:info", slurm, ("fm_slurm_job_info",), labels={"scheduler": SLURM}),
        RecordingRule(
            "fm_job:info",
            f"{pod_team} {on} {ns_team} {on} {no_team}",
            ("kube_pod_labels", "kube_namespace_labels"),
            labels={"scheduler": KUBERNETES},
        ),
    ]


def _usage_rules() -> list[RecordingRule]:
    rules = [RecordingRule("fm_job:gpu_hours:1h", f"sum_over_time({_GAUGE}[1h]) / {_PER_HOUR}", ())]
    for scope in SCOPES:
        gauge = f"fm_job:gpus_allocated:sum_by_{scope}"
        if scope == "namespace":
            expr = f'sum by (cluster, scheduler, namespace) ({_GAUGE}{{namespace!=""}})'
        else:
            # topk(1) per job: pods of one job labelled with two teams must not fail the whole rule (many-to-many)
            info = f'topk by (cluster, scheduler, namespace, fm_job) (1, fm_job:info{{{scope}!=""}})'
            expr = f"sum by (cluster, scheduler, {scope}) ({_GAUGE} * {_ON_JOB} group_left({scope}) {info})"
        rules.append(RecordingRule(gauge, expr, ()))
        rules.append(
            RecordingRule(f"fm_job:gpu_hours:sum_by_{scope}_1h", f"sum_over_time({gauge}[1h]) / {_PER_HOUR}", ())
        )
    return rules


def job_rule_group() -> RuleGroup:
    """The ``fmconstructs-job`` recording rules (part of :func:`~.rules.default_rule_groups`): no series appear until
    GPU series carry ``hpc_job`` (Slurm) or ``pod`` (Kubernetes)."""
    rules = [_pod_info(), *_gpu_rules(), *_node_rules(), *_info_rules(), *_usage_rules()]
    return RuleGroup("fmconstructs-job", tuple(rules), interval=_INTERVAL)


def job_alert_rule_group(*, idle_util_percent: float = 5.0, idle_for: PrometheusDuration = "30m") -> RuleGroup:
    """Alerts on the per-job layer, a default group (:func:`~.rules.default_rule_groups`): ``FmJobGpusIdle`` (a
    job's GPUs average below ``idle_util_percent`` for ``idle_for``: allocated but wasted) and ``FmJobGpuXid`` (a GPU
    of the job raised an XID in the last 15 minutes). Needs :func:`job_rule_group` in the same workspace."""
    checked = check_number("idle_util_percent", idle_util_percent)
    if is_token(checked) or not 0 < checked <= 100:
        raise FmValidationError("idle_util_percent", idle_util_percent, "a percentage in (0, 100] known at synthesis")
    idle_for = check_prometheus_duration("idle_for", idle_for, positive=True)
    job = "{{ $labels.fm_job }} ({{ $labels.scheduler }}, {{ $labels.cluster }})"
    return RuleGroup(
        "fmconstructs-job-alerts",
        (
            AlertRule(
                "FmJobGpusIdle",
                f"fm_job:gpu_utilization:avg < {checked:g}",
                idle_for,
                Severity.WARNING,
                f"Job {job} holds GPUs at {{{{ $value }}}}% utilization",
                f"The GPUs allocated to this job averaged below {checked:g}% utilization for {idle_for}: the "
                "allocation is wasted (a hung job, a job waiting on data, or one using fewer GPUs than it asked for).",
                (),
            ),
            AlertRule(
                "FmJobGpuXid",
                "fm_job:xid_changes:sum15m > 0",
                "0m",
                Severity.WARNING,
                f"A GPU of job {job} raised an XID",
                "A GPU held by this job reported a new XID in the last 15 minutes; GpuCriticalXid, GpuContainedXid "
                "or GpuXidError name the GPU and the code. The job may have crashed or be computing on a faulty GPU.",
                (),
            ),
        ),
    )


def _record_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.name for r in job_rule_group().rules))


RECORD_NAMES: tuple[str, ...] = _record_names()
"""Every series name the layer records (dashboards may name these)."""
RECORDING_RULE_COUNT = len(job_rule_group().rules)
