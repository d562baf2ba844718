"""The cross-property rules of the node checks (:class:`~fmconstructs.health.NodeCheckSpec`) and of the NCCL check
(:class:`~fmconstructs.health.NcclCheckSpec`, :func:`~fmconstructs.health.nccl_eks.render_nccl_mpijob`) as pure
functions (the shape of :mod:`fmconstructs._rules`): plain values in (counts, catalog facts), no construct or scope;
each raises :class:`~fmconstructs.errors.FmValidationError` (the health package has no soft rule).

Not to be confused with :mod:`.nccl_rules`, the Prometheus alert rules of the NCCL check. Checks of one option on its
own stay with the specs. Imports nothing of aws_cdk: the ``fmc`` CLI renders the checks without Node.js.
"""

from __future__ import annotations

from typing import Any

from .._validate import check_count
from ..errors import FmValidationError

__all__ = [
    "dcgm_budget_covers_the_level",
    "efa_interfaces_fit_the_instance_type",
    "gpus_per_node_match_the_instance_type",
    "pairwise_needs_four_nodes",
]


def efa_interfaces_fit_the_instance_type(*, efa_interfaces: Any, maximum_efa_interfaces: int) -> None:
    """At most the type's EFA interfaces (the catalog's ``maximum_efa_interfaces``) are checked for."""
    check_count("efa_interfaces", efa_interfaces, maximum=maximum_efa_interfaces)


def dcgm_budget_covers_the_level(*, level: int, seconds: int, nominal_seconds: int | None) -> None:
    """The dcgm-diag budget (``seconds``) is at least the level's nominal run time (``nominal_seconds``,
    :data:`~fmconstructs.health.spec.DCGM_LEVEL_NOMINAL_SECONDS`; None: no figure for that level)."""
    if nominal_seconds is not None and seconds < nominal_seconds:
        raise FmValidationError(
            "budget_seconds[dcgm-diag]",
            seconds,
            f"at least {nominal_seconds} s for dcgmi diag level {level} (NVIDIA: it normally runs about that long)",
        )


def pairwise_needs_four_nodes(*, pairwise: bool, nodes: int) -> None:
    """Pairwise runs name a suspect node only with at least 4 nodes."""
    if pairwise and nodes < 4:
        raise FmValidationError(
            "nodes", nodes, "at least 4 with pairwise=True (with fewer, the slowest pair blames no one node)"
        )


def gpus_per_node_match_the_instance_type(*, gpus_per_node: int, instance_type: str, gpu_count: int) -> None:
    """The NCCL spec's GPUs per node are the GPUs of the workers' instance type (the catalog's ``gpu.count``)."""
    if gpu_count != gpus_per_node:
        raise FmValidationError("spec.gpus_per_node", gpus_per_node, f"{gpu_count}, the GPUs of {instance_type}")
