"""``fmc usage --by user|account|team``: GPU-hours grouped by a label that is NOT on the GPU series, joined at query
time from the scheduler's per-job info series, on raw series (no recording rule needed).

The GPU-hours formula is :mod:`fmconstructs.cli.usage_queries`'s (``count_over_time`` of a subquery evaluated every
``step`` over the period, x ``step`` / 3600). Here the subquery's inner expression is a join, so the owner is looked
up AT EACH STEP: an info series exists only while its job runs, and a finished job's GPU-hours still find the owner
it had while running.

Slurm (``--by user``, ``--by account``): each GPU series of a job carries ``hpc_job`` (dcgm-exporter's HPC job
mapping) and the node agent's ``cluster`` label; the login node writes one ``fm_slurm_job_info{hpc_job, user,
account, partition}`` per running job (value 1; :mod:`fmconstructs.observability.node.slurm_textfile`), also with
``cluster``. Job ids restart on every cluster, so the join is ``on(cluster, hpc_job)``::

    sum by (user, instance_type) (count_over_time((
        DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}
          * on(cluster, hpc_job) group_left(user) topk by (cluster, hpc_job) (1, fm_slurm_job_info)
      or ignoring(user)
        DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}
    )[<period>s:<step>s])) * <step> / 3600

EKS (``--by team``): dcgm-exporter's pod attribution puts ``namespace`` and ``pod`` on the GPU series;
kube-state-metrics (``--metric-labels-allowlist`` with ``team``) exports ``kube_pod_labels{namespace, pod,
label_team}`` and ``kube_namespace_labels{namespace, label_team}``. The POD's team wins: the first term joins the pod,
the second the namespace only for GPU series the first did not label (``or ignoring(label_team)``: a series of the
left side hides the right side's series with the same labels but ``label_team``), the third keeps the rest::

    sum by (label_team, instance_type) (count_over_time((
        DCGM_FI_DEV_GPU_UTIL{namespace!="", pod!=""}
          * on(namespace, pod) group_left(label_team) topk by (namespace, pod) (1, kube_pod_labels{label_team!=""})
      or ignoring(label_team)
        DCGM_FI_DEV_GPU_UTIL{namespace!=""}
          * on(namespace) group_left(label_team) topk by (namespace) (1, kube_namespace_labels{label_team!=""})
      or ignoring(label_team)
        DCGM_FI_DEV_GPU_UTIL{namespace!=""}
    )[<period>s:<step>s])) * <step> / 3600

Why each piece (Prometheus docs "Operators": vector matching, ``group_left``, ``or``; "Querying basics": subqueries):

- ``topk by (<keys>) (1, info)`` keeps ONE info series per key: two series for the same job or namespace (two login
  nodes, a scrape label that changed, a team label edited during the period and still within the 5-minute lookback)
  would otherwise make ``group_left`` fail the WHOLE query ("found duplicate series for the match group");
- ``* ... group_left(<label>)`` copies only the owner label; the GPU series' value is kept (info is 1) and its
  value does not matter to ``count_over_time``;
- the final ``or ignoring(<label>)`` term keeps GPU series with no info at that step (a job that started and ended
  between two collector runs, a login node without the collector, a namespace without a team label). They group
  under an empty label, shown as the row ``unknown`` with a note: the total still equals ``--by job``/``--by
  namespace``'s.

Bounded cardinality: the result has one series per user/account/team and instance type, whatever the number of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .usage_queries import GPU_SERIES, HPC_JOB_LABEL, INSTANCE_TYPE_LABEL, NAMESPACE_LABEL

#: The per-running-job info series the login node writes (issue 22 shared contract; value 1).
SLURM_JOB_INFO = "fm_slurm_job_info"
#: The node agent's cluster label (observability/collection.py NodeLabels): on the GPU series and on the info series.
CLUSTER_LABEL = "cluster"
#: dcgm-exporter's Kubernetes pod attribution label (NVIDIA/dcgm-exporter internal/pkg/transformation
#: ``podAttribute = "pod"``).
POD_LABEL = "pod"
#: kube-state-metrics' series of pod and namespace labels (``--metric-labels-allowlist`` turns the Kubernetes label
#: ``team`` into the Prometheus label ``label_team``: kube-state-metrics docs/developer/cli-arguments.md).
KUBE_POD_LABELS = "kube_pod_labels"
KUBE_NAMESPACE_LABELS = "kube_namespace_labels"
TEAM_LABEL = "label_team"
#: The row of GPU-hours whose owner could not be joined.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Join:
    """How one ``--by`` choice finds its owner label: the result label and why a series may lack it."""

    label: str
    missing: str


JOINS = {
    "user": Join(
        "user",
        f"GPUs of Slurm jobs without a {SLURM_JOB_INFO} series at the time (the login node's collector is not "
        "running, or the job ran between two of its runs)",
    ),
    "account": Join(
        "account",
        f"GPUs of Slurm jobs without a {SLURM_JOB_INFO} series at the time (the login node's collector is not "
        "running, or the job ran between two of its runs)",
    ),
    "team": Join(
        TEAM_LABEL,
        f"GPUs of pods whose pod and namespace have no Kubernetes label team ({KUBE_POD_LABELS}/"
        f"{KUBE_NAMESPACE_LABELS} {TEAM_LABEL}; --by namespace splits them)",
    ),
}


def _slurm(label: str) -> str:
    gpus = f'{GPU_SERIES}{{{HPC_JOB_LABEL}!=""}}'
    keys = f"{CLUSTER_LABEL}, {HPC_JOB_LABEL}"
    info = f"topk by ({keys}) (1, {SLURM_JOB_INFO})"
    return f"({gpus} * on({keys}) group_left({label}) {info}) or ignoring({label}) {gpus}"


def _team() -> str:
    pods = f'{GPU_SERIES}{{{NAMESPACE_LABEL}!="", {POD_LABEL}!=""}}'
    gpus = f'{GPU_SERIES}{{{NAMESPACE_LABEL}!=""}}'
    by_pod = f"{NAMESPACE_LABEL}, {POD_LABEL}"
    pod_team = f'topk by ({by_pod}) (1, {KUBE_POD_LABELS}{{{TEAM_LABEL}!=""}})'
    namespace_team = f'topk by ({NAMESPACE_LABEL}) (1, {KUBE_NAMESPACE_LABELS}{{{TEAM_LABEL}!=""}})'
    return (
        f"({pods} * on({by_pod}) group_left({TEAM_LABEL}) {pod_team})"
        f" or ignoring({TEAM_LABEL}) ({gpus} * on({NAMESPACE_LABEL}) group_left({TEAM_LABEL}) {namespace_team})"
        f" or ignoring({TEAM_LABEL}) {gpus}"
    )


def joined_gpu_hours_query(by: str, *, period_seconds: int, step_seconds: int) -> str:
    """PromQL for GPU-hours per ``by`` (``user``, ``account`` or ``team``) and instance type over the
    ``period_seconds`` before the query's evaluation time (the module docstring explains the join)."""
    join = JOINS[by]
    inner = _team() if by == "team" else _slurm(join.label)
    window = f"[{period_seconds}s:{step_seconds}s]"
    return f"sum by ({join.label}, {INSTANCE_TYPE_LABEL}) (count_over_time(({inner}){window})) * {step_seconds} / 3600"
