"""Cluster health (issue 20) below the backends: written once, plugged in by each backend.

- Node-join checks: :class:`NodeCheckSpec` (``NodeCheckSpec.for_instance_type``: catalog GPU count, the launch
  layout's EFA interfaces, Fabric Manager or IMEX, a Lustre mount point, DCGM level, per-check budgets),
  :func:`render_node_checks` (BOOT: every check; PROLOG: lightweight checks only), :func:`render_slurm_boot_gate`
  (drain, check, resume, or keep drained with the failing check as the reason) and :func:`render_slurm_idle_check`
  (Slurm's ``HealthCheckProgram`` between jobs: drain a failing node, never resume); see :mod:`.slurm_gate` for
  what PCS and ParallelCluster allow.
- The scheduled NCCL fabric check (:mod:`.nccl`, :mod:`.nccl_eks`, the job's stdlib-only :mod:`.nccl_report`) and its
  alert rules (:mod:`.nccl_rules`).

The names the loop speaks (metrics, alerts, the remediation trigger label) are defined once in
:mod:`.metric_names` (stdlib only); which Xid needs what (application, contained, reset, fatal), for the node checks,
the alerts and remediation alike, in :mod:`.xid` (:class:`XidPolicy`, from NVIDIA's Xid catalog).

Backends choose where the scripts plug in (prolog, boot unit, lifecycle script, DaemonSet). Exports resolve lazily
(PEP 562, :mod:`fmconstructs._lazy`); every module but ``nccl_rules`` imports no aws_cdk, so the Node-free ``fmc``
can read them.

One option object for every backend, :class:`NodeHealthOptions` (``enabled``, ``dcgm_level``, ``prolog_checks``,
``budget_seconds``, ``prolog_budget_seconds``, ``xid_policy``, ``idle_check_interval_seconds``,
``idle_check_node_states``), and how each backend maps it:

============================  ==========================================  ==========================================
NodeHealthOptions             PCS (``PcsCluster(node_health=...)``,        ParallelCluster
                              ``PcsGpuNodeGroup(node_health=...)``)        (``ParallelCluster.enable_node_health``)
============================  ==========================================  ==========================================
boot gate (BOOT checks)       systemd unit from the user data, waits for   the queue's ``OnNodeConfigured`` action;
                              ``slurmd``; drains while checking, resumes   never drains while checking (clustermgtd
                              on pass (:mod:`fmconstructs.pcs.health`)     replaces DRAIN nodes); a failing node is
                                                                           held in a reservation, the bootstrap goes on
``prolog_checks``             the cluster ``Prolog`` is a runner of        ``prolog.d/95_fmconstructs_node_checks.sh``
                              ``/opt/fmconstructs/slurm/prolog.d`` (the    on the head node dispatches to the node's
                              checks, then IMEX)                           own checks; total budget <= 90 s
``idle_check_interval_``      the cluster's ``HealthCheckProgram`` (the    not wired
``seconds`` (default 300)     IDLE checks; drains a failing node, never
                              resumes), ``HealthCheckInterval``,
                              ``HealthCheckNodeState`` (IDLE,CYCLE)
``dcgm_level``                at boot; None where PCS deep health checks   at boot; None with ``HealthChecks/Gpu``
                              run DCGM (QUICK/MEDIUM/LONG = 1/2/3)         (``gpu_health_checks=True``: DCGM L2 in
                                                                           every prolog)
============================  ==========================================  ==========================================

HyperPod Slurm (``HyperPodCluster(node_health=...)``, :mod:`fmconstructs.hyperpod.node_health`): the boot gate from
the GPU groups' ``OnInitComplete`` set-up (it drains, it never fails the set-up) and the prolog checks in the AMI's
``prolog.d``; ``dcgm_level`` only where HyperPod's ``InstanceStress`` deep health check does not run DCGM; no
between-jobs check. HyperPod's own checks (read-only mapping): ``DeepHealthCheck`` (``OnStartDeepHealthChecks``:
``InstanceStress``, ``InstanceConnectivity``; default both on accelerated groups) is the counterpart of the boot gate
plus ``dcgm_level`` (HyperPod's stress check exercises the GPUs, its connectivity check the EFA fabric between nodes,
which this package leaves to the scheduled NCCL check). ``NodeRecovery.AUTOMATIC`` (``CreateCluster.NodeRecovery``) is
the counterpart of "a failing node is drained and replaced" (ParallelCluster's clustermgtd; on PCS, the remediation
room). Progress shows as node status ``DeepHealthCheckInProgress`` and replacements as ``ShuttingDown`` / ``Failure``
(:func:`fmconstructs.hyperpod.health.describe_cluster_health`), the counterpart of a drain reason starting with
:data:`REASON_PREFIX`.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .checks import SYSLOG_TAG, render_node_checks
    from .install import BOOT_GATE_UNIT_NAME, render_boot_gate_unit, render_prolog_runner
    from .nccl import (
        NCCL_TESTS_COMMIT,
        NCCL_TESTS_VERSION,
        SCRONTAB_SLURM_SETTINGS,
        NcclCheckSpec,
        render_publish_units,
        render_sbatch,
        render_scrontab,
        render_timer_units,
        report_script,
    )
    from .nccl_eks import render_mpijob_manifests
    from .nccl_eks_schedule import render_scheduled_nccl_manifests
    from .nccl_report import NcclResult, SizeResult, parse_output
    from .nccl_rules import NcclAlertOptions, nccl_rule_group
    from .options import HealthCheckNodeState, NodeHealthOptions
    from .slurm_gate import (
        CHECKING_REASON,
        PARALLELCLUSTER_SLURM_BIN_DIR,
        REASON_PREFIX,
        pcs_slurm_bin_dir,
        render_slurm_boot_gate,
        render_slurm_idle_check,
    )
    from .spec import (
        DCGM_LEVEL_NOMINAL_SECONDS,
        DEFAULT_BUDGET_SECONDS,
        DEFAULT_FATAL_XIDS,
        DEFAULT_LOG_FILE_PATH,
        PROLOG_CHECKS,
        CheckMode,
        CheckName,
        NodeCheckSpec,
    )
    from .xid import DEFAULT_XID_POLICY, XidClass, XidPolicy

__all__ = [
    "BOOT_GATE_UNIT_NAME",
    "CHECKING_REASON",
    "DCGM_LEVEL_NOMINAL_SECONDS",
    "DEFAULT_BUDGET_SECONDS",
    "DEFAULT_FATAL_XIDS",
    "DEFAULT_LOG_FILE_PATH",
    "DEFAULT_XID_POLICY",
    "NCCL_TESTS_COMMIT",
    "NCCL_TESTS_VERSION",
    "PARALLELCLUSTER_SLURM_BIN_DIR",
    "PROLOG_CHECKS",
    "REASON_PREFIX",
    "SCRONTAB_SLURM_SETTINGS",
    "SYSLOG_TAG",
    "CheckMode",
    "CheckName",
    "HealthCheckNodeState",
    "NcclAlertOptions",
    "NcclCheckSpec",
    "NcclResult",
    "NodeCheckSpec",
    "NodeHealthOptions",
    "SizeResult",
    "XidClass",
    "XidPolicy",
    "nccl_rule_group",
    "parse_output",
    "pcs_slurm_bin_dir",
    "render_boot_gate_unit",
    "render_mpijob_manifests",
    "render_node_checks",
    "render_prolog_runner",
    "render_publish_units",
    "render_sbatch",
    "render_scheduled_nccl_manifests",
    "render_scrontab",
    "render_slurm_boot_gate",
    "render_slurm_idle_check",
    "render_timer_units",
    "report_script",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".checks": ("SYSLOG_TAG", "render_node_checks"),
    ".install": ("BOOT_GATE_UNIT_NAME", "render_boot_gate_unit", "render_prolog_runner"),
    ".options": ("HealthCheckNodeState", "NodeHealthOptions"),
    ".nccl": (
        "NCCL_TESTS_COMMIT",
        "NCCL_TESTS_VERSION",
        "SCRONTAB_SLURM_SETTINGS",
        "NcclCheckSpec",
        "render_publish_units",
        "render_sbatch",
        "render_scrontab",
        "render_timer_units",
        "report_script",
    ),
    ".nccl_eks": ("render_mpijob_manifests",),
    ".nccl_eks_schedule": ("render_scheduled_nccl_manifests",),
    ".nccl_report": ("NcclResult", "SizeResult", "parse_output"),
    ".nccl_rules": ("NcclAlertOptions", "nccl_rule_group"),
    ".slurm_gate": (
        "CHECKING_REASON",
        "PARALLELCLUSTER_SLURM_BIN_DIR",
        "REASON_PREFIX",
        "pcs_slurm_bin_dir",
        "render_slurm_boot_gate",
        "render_slurm_idle_check",
    ),
    ".spec": (
        "DCGM_LEVEL_NOMINAL_SECONDS",
        "DEFAULT_BUDGET_SECONDS",
        "DEFAULT_FATAL_XIDS",
        "DEFAULT_LOG_FILE_PATH",
        "PROLOG_CHECKS",
        "CheckMode",
        "CheckName",
        "NodeCheckSpec",
    ),
    ".xid": ("DEFAULT_XID_POLICY", "XidClass", "XidPolicy"),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
