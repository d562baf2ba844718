"""Cluster health (issue 20) below the backends: written once, plugged in by each backend.

- Node-join checks: :class:`NodeCheckSpec` (``NodeCheckSpec.for_instance_type``: catalog GPU count, the launch
  layout's EFA interfaces, Fabric Manager or IMEX, a Lustre mount point, DCGM level, per-check budgets),
  :func:`render_node_checks` (BOOT: every check; PROLOG: lightweight checks only) and :func:`render_slurm_boot_gate`
  (drain, check, resume, or keep drained with the failing check as the reason); see :mod:`.slurm_gate` for what PCS
  and ParallelCluster allow.
- The scheduled NCCL fabric check (:mod:`.nccl`, :mod:`.nccl_eks`, the job's stdlib-only :mod:`.nccl_report`) and its
  alert rules (:mod:`.nccl_rules`).

Backends choose where the scripts plug in (prolog, boot unit, lifecycle script, DaemonSet). Exports resolve lazily
(PEP 562, :mod:`fmconstructs._lazy`); every module but ``nccl_rules`` imports no aws_cdk, so the Node-free ``fmc``
can read them.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .checks import SYSLOG_TAG, render_node_checks
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
    from .nccl_report import NcclResult, SizeResult, parse_output
    from .nccl_rules import NcclAlertOptions, nccl_rule_group
    from .slurm_gate import (
        CHECKING_REASON,
        PARALLELCLUSTER_SLURM_BIN_DIR,
        REASON_PREFIX,
        pcs_slurm_bin_dir,
        render_slurm_boot_gate,
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

__all__ = [
    "CHECKING_REASON",
    "DCGM_LEVEL_NOMINAL_SECONDS",
    "DEFAULT_BUDGET_SECONDS",
    "DEFAULT_FATAL_XIDS",
    "DEFAULT_LOG_FILE_PATH",
    "NCCL_TESTS_COMMIT",
    "NCCL_TESTS_VERSION",
    "PARALLELCLUSTER_SLURM_BIN_DIR",
    "PROLOG_CHECKS",
    "REASON_PREFIX",
    "SCRONTAB_SLURM_SETTINGS",
    "SYSLOG_TAG",
    "CheckMode",
    "CheckName",
    "NcclAlertOptions",
    "NcclCheckSpec",
    "NcclResult",
    "NodeCheckSpec",
    "SizeResult",
    "nccl_rule_group",
    "parse_output",
    "pcs_slurm_bin_dir",
    "render_mpijob_manifests",
    "render_node_checks",
    "render_publish_units",
    "render_sbatch",
    "render_scrontab",
    "render_slurm_boot_gate",
    "render_timer_units",
    "report_script",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".checks": ("SYSLOG_TAG", "render_node_checks"),
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
    ".nccl_report": ("NcclResult", "SizeResult", "parse_output"),
    ".nccl_rules": ("NcclAlertOptions", "nccl_rule_group"),
    ".slurm_gate": (
        "CHECKING_REASON",
        "PARALLELCLUSTER_SLURM_BIN_DIR",
        "REASON_PREFIX",
        "pcs_slurm_bin_dir",
        "render_slurm_boot_gate",
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
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
