"""``TrainingPlatform(teams=[...])``: :class:`~fmconstructs.teams.Team` objects rendered by the platform's backend.

- EKS: Kueue (``EksOptions(scheduling=True)``, the default): a ClusterQueue per team in one cohort over the
  topology-aware flavors, LocalQueues in the teams' namespaces (created unless they are the platform's namespace or
  ``default``), WorkloadPriorityClasses (:meth:`~fmconstructs.eks.scheduling.KueueScheduling.add_teams`).
- HyperPod on EKS: the task governance add-on and its objects
  (:class:`~fmconstructs.hyperpod.task_governance.HyperPodTaskGovernance`).
- ParallelCluster with ``slurm_accounting``: the sacctmgr script on the head node and the slurm.conf lines
  (:meth:`~fmconstructs.parallelcluster.ParallelCluster.add_teams`); refused without accounting.
- PCS and HyperPod on Slurm: refused for now (the PCS backend's ``unsupported`` and :func:`check_platform_teams`):
  the ``sacctmgr`` script is rendered by :func:`fmconstructs.teams.slurm.render_sacctmgr_script` but the platform
  does not run it on those clusters yet.

Before anything is built: the cross-team rules, each backend's naming rules, and the sum of the guarantees against
the platform's GPUs (``nodes`` x GPUs per node; skipped when ``nodes`` is a deploy-time value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import FmValidationError, is_token
from ..teams import Team
from ..teams.rules import (
    guarantees_fit_the_cluster,
    hyperpod_team_names,
    kubernetes_team_names,
    slurm_team_names,
    teams_have_namespaces,
)
from .backends import Backend, BackendResult
from .options import EksOptions, HyperPodOptions, HyperPodOrchestration, ParallelClusterOptions

if TYPE_CHECKING:
    from .platform import TrainingPlatform

__all__ = ["build_platform_teams", "check_platform_teams"]


def check_platform_teams(platform: TrainingPlatform, orchestrator: object, teams: Sequence[Team]) -> None:
    """The teams' rules for this platform's backend (nothing is built yet)."""
    if not teams:
        return
    gpus: Any = platform.nodes if is_token(platform.nodes) else platform.nodes * platform.instance_spec.gpu.count
    guarantees_fit_the_cluster(teams, gpus)
    if isinstance(orchestrator, EksOptions):
        if not orchestrator.scheduling:
            raise FmValidationError(
                "teams", [t.name for t in teams], "empty with EksOptions(scheduling=False) (teams are Kueue queues)"
            )
        kubernetes_team_names(teams)
        teams_have_namespaces(teams)
    elif isinstance(orchestrator, ParallelClusterOptions):
        if orchestrator.slurm_accounting is None:
            raise FmValidationError(
                "teams",
                [t.name for t in teams],
                "empty with ParallelClusterOptions(slurm_accounting=None) (accounts and QoS live in slurmdbd: give a "
                "SlurmDatabase or ExternalSlurmdbd)",
            )
        slurm_team_names(teams)
    elif isinstance(orchestrator, HyperPodOptions):
        if orchestrator.orchestrator is HyperPodOrchestration.SLURM:
            raise FmValidationError(
                "teams",
                [t.name for t in teams],
                "empty with HyperPod on Slurm (task governance is EKS only; TrainingPlatform does not apply the "
                "sacctmgr script, fmconstructs.teams.slurm.render_sacctmgr_script, on HyperPod Slurm yet)",
            )
        hyperpod_team_names(teams)


def build_platform_teams(platform: TrainingPlatform, options: object, result: BackendResult) -> Any:
    """The backend's team objects (None without teams): the EKS ``KueueTeams`` manifest, the HyperPod
    :class:`~fmconstructs.hyperpod.task_governance.HyperPodTaskGovernance` or the ParallelCluster head node
    bootstrap."""
    teams = platform.teams
    if not teams:
        return None
    if platform.backend is Backend.EKS:
        assert isinstance(options, EksOptions) and result.eks_cluster is not None
        scheduling = result.eks_cluster.topology_scheduling
        assert scheduling is not None  # scheduling=True was checked
        return scheduling.add_teams(teams, create_namespaces=True, skip_namespaces=(options.namespace,))
    if platform.backend is Backend.HYPERPOD:
        return _hyperpod_governance(platform, result)
    if platform.backend is Backend.PARALLELCLUSTER:
        from ..parallelcluster import ParallelCluster

        assert isinstance(result.cluster, ParallelCluster)
        return result.cluster.add_teams(teams)
    raise FmValidationError("teams", [t.name for t in teams], f"empty on {platform.backend.value}")


def _hyperpod_governance(platform: TrainingPlatform, result: BackendResult) -> Any:
    from ..hyperpod import HyperPodCluster
    from ..hyperpod.eks_addons import HyperPodEksAddon, HyperPodEksAddons
    from ..hyperpod.task_governance import HyperPodTaskGovernance

    cluster = result.cluster
    assert isinstance(cluster, HyperPodCluster) and result.eks_cluster is not None
    addons = HyperPodEksAddons(
        platform,
        "TaskGovernanceAddon",
        cluster=result.eks_cluster,
        addons=[HyperPodEksAddon.TASK_GOVERNANCE],
        hyperpod_cluster=cluster,
        dependencies=result.hyperpod_dependencies,
        install_pod_identity_agent=False,
        install_cert_manager=False,
    )
    return HyperPodTaskGovernance(platform, "Teams", cluster=cluster, teams=platform.teams, addons=addons)
