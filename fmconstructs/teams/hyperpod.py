"""Teams on SageMaker HyperPod: task governance through CloudFormation, on HyperPod clusters orchestrated by EKS only
(the CloudFormation schema of ``AWS::SageMaker::ComputeQuota``, cfn-lint's copy: "Slurm-orchestrated clusters are
rejected by the service"; task governance runs on the ``amazon-sagemaker-hyperpod-taskgovernance`` EKS add-on,
:mod:`fmconstructs.hyperpod.eks_addons`).

- ``AWS::SageMaker::ClusterSchedulerConfig`` (one per cluster): ``SchedulerConfig.PriorityClasses`` one per team
  (``Name`` the team, ``Weight`` its priority, 0..100), ``FairShare: Enabled`` (idle compute lent by
  ``FairShareWeight``).
- ``AWS::SageMaker::ComputeQuota`` per team (aws-cdk-lib has no L1 for it: a ``CfnResource`` whose properties follow
  the cfn-lint schema, every field checked by cfn-lint in the tests):
  ``ComputeQuotaTarget`` (``TeamName``; ``FairShareWeight`` = priority), ``ComputeQuotaResources``
  (``Accelerators`` = guaranteed GPUs of the cluster's GPU instance type), ``ResourceSharingConfig``
  (borrowing limit 0 -> ``Strategy: Lend``; N -> ``LendAndBorrow`` with ``AbsoluteBorrowLimits`` of N accelerators;
  None -> ``LendAndBorrow`` with ``BorrowLimit: 500``, the largest percentage the SageMaker API documents, "1 - 500
  percent": HyperPod has no unlimited borrowing), ``PreemptTeamTasks`` (LOWER_PRIORITY -> ``LowerPriority``, else
  ``Never``: it is about the team's own tasks; reclaiming lent compute is HyperPod's own behaviour).

Jobs run in the namespace task governance makes for the team, ``hyperpod-ns-<team>`` (its LocalQueue
``hyperpod-ns-<team>-localqueue``), so :attr:`Team.namespaces` is not used here; ``max_job_gpus`` and
``max_job_time_minutes`` have no task governance field: not rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .rules import check_teams, guarantees_fit_the_cluster, hyperpod_team_names
from .team import Preemption, Team

__all__ = [
    "COMPUTE_QUOTA_TYPE",
    "UNLIMITED_BORROW_PERCENT",
    "compute_quota_properties",
    "scheduler_config",
    "team_namespace",
]

#: The CloudFormation type (no aws-cdk-lib L1 at the pinned aws-cdk-lib).
COMPUTE_QUOTA_TYPE = "AWS::SageMaker::ComputeQuota"
#: botocore sagemaker ResourceSharingConfig.BorrowLimit: "The values can be 1 - 500 percent of idle compute".
UNLIMITED_BORROW_PERCENT = 500


def team_namespace(team: Team) -> str:
    """The namespace task governance makes for a team (the ComputeQuota schema: "Materialized as Kubernetes
    namespace 'hyperpod-ns-<TeamName>'")."""
    return f"hyperpod-ns-{team.name}"


def scheduler_config(teams: Sequence[Team]) -> dict[str, Any]:
    """``SchedulerConfig`` of the cluster policy: a priority class per team, fair share on."""
    checked = check_teams(teams)
    hyperpod_team_names(checked)
    return {
        "PriorityClasses": [{"Name": team.name, "Weight": team.priority} for team in checked],
        "FairShare": "Enabled",
    }


def _sharing(team: Team, instance_type: str) -> dict[str, Any]:
    if team.borrowing_limit_gpus == 0:
        return {"Strategy": "Lend"}
    if team.borrowing_limit_gpus is None:
        return {"Strategy": "LendAndBorrow", "BorrowLimit": UNLIMITED_BORROW_PERCENT}
    return {
        "Strategy": "LendAndBorrow",
        "AbsoluteBorrowLimits": [{"InstanceType": instance_type, "Accelerators": team.borrowing_limit_gpus}],
    }


def compute_quota_properties(
    team: Team, *, cluster_arn: str, instance_type: str, name: str | None = None
) -> dict[str, Any]:
    """The ``AWS::SageMaker::ComputeQuota`` properties of ``team`` on a cluster of ``instance_type`` (``ml.`` name).

    :param name: the compute allocation's name; default ``<team>-quota``.
    """
    hyperpod_team_names([team])
    return {
        "Name": name or f"{team.name}-quota",
        "Description": f"fmconstructs team {team.name}",
        "ClusterArn": cluster_arn,
        "ActivationState": "Enabled",
        "ComputeQuotaTarget": {"TeamName": team.name, "FairShareWeight": team.priority},
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [{"InstanceType": instance_type, "Accelerators": team.guaranteed_gpus}],
            "ResourceSharingConfig": _sharing(team, instance_type),
            "PreemptTeamTasks": "LowerPriority" if team.preemption is Preemption.LOWER_PRIORITY else "Never",
        },
    }


def check_hyperpod_teams(teams: Sequence[Team], *, cluster_gpus: Any) -> tuple[Team, ...]:
    """Every HyperPod rule: distinct names and namespaces, HyperPod names, at most 10, guarantees within the GPUs."""
    checked = check_teams(teams)
    hyperpod_team_names(checked)
    guarantees_fit_the_cluster(checked, cluster_gpus)
    return checked
