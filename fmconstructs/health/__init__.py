"""Cluster health (issue 20): checks written once below the backends, plugged in by each backend.

This package holds the scheduled NCCL fabric check (:mod:`.nccl`, :mod:`.nccl_eks`, :mod:`.nccl_report`) and its
alert rules (:mod:`.nccl_rules`).
"""

from .nccl import (
    NCCL_TESTS_COMMIT,
    NCCL_TESTS_VERSION,
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
