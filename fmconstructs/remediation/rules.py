"""The cross-property rules of :class:`~fmconstructs.remediation.RemediationTarget` as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`.

Checks of one field on its own (id and name patterns, counts) stay with the policy and target; the Lambda handler's
runtime checks are not construct-side rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._rules import Advice
from ..errors import FmValidationError, WarningId

if TYPE_CHECKING:
    from .policy import Backend

__all__ = [
    "cluster_arn_only_for_hyperpod",
    "eks_cluster_only_for_eks",
    "hyperpod_acts_through_the_sagemaker_api_only",
    "login_group_is_not_a_compute_group",
    "node_groups_only_for_pcs",
    "pcs_needs_a_login_node_group",
]


def login_group_is_not_a_compute_group(
    *, login_node_group_id: str | None, compute_node_group_ids: Sequence[str]
) -> None:
    """PCS: the login node group is not among the compute node groups remediated."""
    if login_node_group_id in compute_node_group_ids:
        raise FmValidationError(
            "compute_node_group_ids", list(compute_node_group_ids), "node groups other than the login node group"
        )


def node_groups_only_for_pcs(
    *, backend: Backend, login_node_group_id: str | None, compute_node_group_ids: Sequence[str]
) -> None:
    """The PCS node group fields are empty for the other backends."""
    if backend.name == "PCS":
        return
    for name, value, empty in (
        ("login_node_group_id", login_node_group_id, None),
        ("compute_node_group_ids", compute_node_group_ids, ()),
    ):
        if value:
            raise FmValidationError(name, value, f"{empty} for Backend.{backend.name} (PCS only)")


def eks_cluster_only_for_eks(*, backend: Backend, eks_cluster: object | None) -> None:
    """``eks_cluster`` is for Backend.EKS only."""
    if backend.name != "EKS" and eks_cluster is not None:
        raise FmValidationError("eks_cluster", eks_cluster, f"None for Backend.{backend.name} (EKS only)")


def cluster_arn_only_for_hyperpod(*, backend: Backend, cluster_arn: str | None) -> None:
    """``cluster_arn`` is for Backend.HYPERPOD only."""
    if backend.name != "HYPERPOD" and cluster_arn is not None:
        raise FmValidationError("cluster_arn", cluster_arn, f"None for Backend.{backend.name} (HyperPod only)")


def pcs_needs_a_login_node_group(*, login_node_group_id: str | None) -> None:
    """Backend.PCS runs Slurm commands on a login node: a login node group id is required."""
    if login_node_group_id is None:
        raise FmValidationError("login_node_group_id", None, "a PCS compute node group id for Backend.PCS")


def hyperpod_acts_through_the_sagemaker_api_only(*, backend: Backend) -> Advice | None:
    """HyperPod Slurm: the handler reaches nodes through the SageMaker API alone. SSM Run Command does not reach
    HyperPod nodes (they take Session Manager sessions on ``sagemaker-cluster:`` targets: awslabs agent-plugins
    hyperpod-ssm SKILL.md), and ``BatchReplaceClusterNodes`` refuses Slurm controller nodes (botocore SageMaker model,
    ``BatchReplaceClusterNodesRequest.NodeIds``)."""
    if backend.name != "HYPERPOD":
        return None
    return Advice(
        WarningId.HYPERPOD_REMEDIATION_LIMITS,
        "NodeRemediation on HyperPod acts through the SageMaker API only (BatchRebootClusterNodes, "
        "BatchReplaceClusterNodes): SSM Run Command does not reach HyperPod nodes, so it sets no Slurm state. A "
        "drain only notifies, an operator's drain is not seen, nodes beyond the hourly replacement limit are left as "
        "they are (not drained), and a Slurm controller node is never replaced (the API refuses it). Drain by hand "
        "(scontrol) where that matters; the ReplacementsHeldBack alarm still reports held-back nodes.",
    )
