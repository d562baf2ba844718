"""The orchestrator of a HyperPod cluster: :class:`HyperPodOrchestrator` (Slurm or EKS) and its checks, split out of
:mod:`fmconstructs.hyperpod.cluster` (which re-exports these names).

Sources: the SageMaker Developer Guide "sagemaker-hyperpod-eks-prerequisites" (authentication modes) and the botocore
``sagemaker`` model of ``CreateCluster`` (``Orchestrator``); see :mod:`fmconstructs.hyperpod.cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from .._validate import check_construct, check_enum, check_str
from ..errors import FmValidationError, is_token
from .types import NAME_ALLOWED, NAME_PATTERN, SlurmConfigStrategy, SlurmConfiguration, SlurmNodeType

#: EKS authentication modes HyperPod supports (same page): API and API_AND_CONFIG_MAP. API mode is what HyperPod needs
#: for its access entries, which it creates itself: the execution role's and its service-linked role's (SageMaker API
#: reference, ClusterMetadata: ``EksRoleAccessEntries`` and ``SlrAccessEntry`` are "created by HyperPod on your
#: behalf" for EKS-orchestrated clusters), so this construct adds none.
HYPERPOD_EKS_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")


class OrchestratorKind(str, Enum):
    SLURM = "slurm"
    EKS = "eks"


@dataclass(frozen=True)
class HyperPodOrchestrator:
    """Slurm (:meth:`slurm`: HyperPod's API-driven configuration, or the published lifecycle scripts) or EKS
    (``Orchestrator.Eks.ClusterArn``)."""

    kind: OrchestratorKind
    controller_group: str | None = None
    login_group: str | None = None
    eks_cluster: Any = None
    slurm_configuration: SlurmConfiguration | None = None
    slurm_config_strategy: SlurmConfigStrategy | None = None

    @classmethod
    def slurm(
        cls,
        *,
        controller_group: str,
        login_group: str | None = None,
        configuration: SlurmConfiguration | None = None,
        strategy: SlurmConfigStrategy | None = None,
    ) -> HyperPodOrchestrator:
        """Slurm. ``controller_group`` and ``login_group`` name instance groups (``SlurmConfig.NodeType`` Controller
        and Login; every other group is Compute, in the partition of its ``partition_name``).

        :param configuration: :class:`SlurmConfiguration`. Default (None): ``LIFECYCLE_SCRIPTS`` when the cluster
            gets a ``base_config_dir``, else ``API`` (HyperPod configures and starts Slurm).
        :param strategy: ``Orchestrator.Slurm.SlurmConfigStrategy`` (``API`` only). Default:
            :data:`~fmconstructs.hyperpod.types.DEFAULT_SLURM_CONFIG_STRATEGY` (``Managed``).
        """
        _check_slurm_fields(controller_group, login_group, configuration, strategy, "configuration", "strategy")
        return cls(OrchestratorKind.SLURM, controller_group, login_group, None, configuration, strategy)

    def __post_init__(self) -> None:
        """The direct constructor refuses what :meth:`slurm` and :meth:`eks` refuse (issue 18 section 5), and the
        fields of the other orchestrator."""
        kind = check_enum("kind", self.kind, OrchestratorKind)
        if kind is OrchestratorKind.SLURM:
            if self.eks_cluster is not None:
                raise FmValidationError("eks_cluster", self.eks_cluster, "None for OrchestratorKind.SLURM")
            _check_slurm_fields(
                self.controller_group,
                self.login_group,
                self.slurm_configuration,
                self.slurm_config_strategy,
                "slurm_configuration",
                "slurm_config_strategy",
            )
            return
        for name in ("controller_group", "login_group", "slurm_configuration", "slurm_config_strategy"):
            if getattr(self, name) is not None:
                raise FmValidationError(name, getattr(self, name), "None for OrchestratorKind.EKS (Slurm only)")
        _check_eks_cluster("eks_cluster", self.eks_cluster)

    def slurm_node_type(self, group_name: str) -> SlurmNodeType:
        """``SlurmConfig.NodeType`` of an instance group of this Slurm orchestrator."""
        if group_name == self.controller_group:
            return SlurmNodeType.CONTROLLER
        if group_name == self.login_group:
            return SlurmNodeType.LOGIN
        return SlurmNodeType.COMPUTE

    @classmethod
    def eks(cls, cluster: Any) -> HyperPodOrchestrator:
        """EKS: an fmconstructs ``GpuEksCluster`` (anything with ``cluster_arn``)."""
        _check_eks_cluster("cluster", cluster)
        return cls(OrchestratorKind.EKS, eks_cluster=cluster)


def _check_slurm_fields(
    controller_group: object,
    login_group: object,
    configuration: object,
    strategy: object,
    configuration_name: str,
    strategy_name: str,
) -> None:
    """What :meth:`HyperPodOrchestrator.slurm` and its direct constructor refuse (parameter names differ)."""
    check_str("controller_group", controller_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
    if login_group is not None:
        check_str("login_group", login_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
    if configuration is not None:
        check_enum(configuration_name, configuration, SlurmConfiguration)
    if strategy is not None:
        checked = check_enum(strategy_name, strategy, SlurmConfigStrategy)
        if configuration is SlurmConfiguration.LIFECYCLE_SCRIPTS:
            raise FmValidationError(
                strategy_name,
                checked.value,
                "None with SlurmConfiguration.LIFECYCLE_SCRIPTS (SlurmConfigStrategy is part of the API-driven "
                "Slurm configuration, Orchestrator.Slurm)",
            )


def _check_eks_cluster(parameter: str, cluster: object) -> None:
    """An EKS cluster HyperPod can orchestrate: anything with ``cluster_arn``, in an authentication mode HyperPod
    supports when known at synthesis."""
    check_construct(parameter, cluster, attribute="cluster_arn", expected="an fmconstructs.eks.GpuEksCluster")
    mode = _authentication_mode(cluster)
    if mode is not None and mode not in HYPERPOD_EKS_AUTHENTICATION_MODES:
        raise FmValidationError(
            parameter,
            f"an EKS cluster with authentication mode {mode}",
            "an EKS cluster whose authentication mode is API or API_AND_CONFIG_MAP "
            "(SageMaker Developer Guide, sagemaker-hyperpod-eks-prerequisites)",
        )


def _authentication_mode(cluster: Any) -> str | None:
    """``AccessConfig.AuthenticationMode`` of the EKS cluster when known at synthesis (its L1), else None."""
    inner = getattr(cluster, "cluster", None)
    resource = getattr(getattr(inner, "node", None), "default_child", None)
    access = getattr(resource, "access_config", None)
    mode = getattr(access, "authentication_mode", None) if access is not None else None
    if mode is None and isinstance(access, dict):
        mode = access.get("authenticationMode")
    return mode if isinstance(mode, str) and not is_token(mode) else None
