"""Cluster health (issue 20): checks written once below the backends, plugged in by each backend.

This package holds the scheduled NCCL fabric check (:mod:`.nccl`, :mod:`.nccl_eks`, the job's stdlib-only
:mod:`.nccl_report`) and its alert rules (:mod:`.nccl_rules`). Exports resolve lazily (PEP 562,
:mod:`fmconstructs._lazy`): ``nccl`` and ``nccl_report`` import no aws_cdk, so a Node-free ``fmc`` can read them.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
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

__all__ = [
    "NCCL_TESTS_COMMIT",
    "NCCL_TESTS_VERSION",
    "SCRONTAB_SLURM_SETTINGS",
    "NcclAlertOptions",
    "NcclCheckSpec",
    "NcclResult",
    "SizeResult",
    "nccl_rule_group",
    "parse_output",
    "render_mpijob_manifests",
    "render_publish_units",
    "render_sbatch",
    "render_scrontab",
    "render_timer_units",
    "report_script",
]

_EXPORTS: dict[str, tuple[str, ...]] = {
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
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
