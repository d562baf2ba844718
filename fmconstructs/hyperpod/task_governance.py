"""HyperPodTaskGovernance: teams (:class:`~fmconstructs.teams.Team`) on a HyperPod cluster orchestrated by EKS, as
HyperPod task governance objects in CloudFormation (:mod:`fmconstructs.teams.hyperpod` renders them).

A cluster policy (``AWS::SageMaker::ClusterSchedulerConfig``, aws-cdk-lib ``CfnClusterSchedulerConfig``) and a
compute allocation per team (``AWS::SageMaker::ComputeQuota``, a ``CfnResource``: no L1 in aws-cdk-lib). Both need
the task governance EKS add-on (:class:`~fmconstructs.hyperpod.eks_addons.HyperPodEksAddons` with
``TASK_GOVERNANCE``): pass it as ``addons`` and they are created after it. Slurm-orchestrated clusters are refused
(the service rejects them, AWS::SageMaker::ComputeQuota schema ``ClusterArn``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnResource
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .._validate import check_scope_id, located
from ..catalog import get_instance_spec
from ..errors import FmTypeError, FmValidationError, is_token
from ..teams import Team
from ..teams import hyperpod as _render
from .cluster import HyperPodCluster
from .orchestrator import OrchestratorKind
from .types import hyperpod_type

__all__ = ["HyperPodTaskGovernance"]


def _gpu_groups(cluster: HyperPodCluster, instance_type: str | None) -> tuple[str, Any]:
    """The quota's instance type (``ml.`` name; default: the first GPU group's) and its GPUs (None if unknown)."""
    gpu_groups = []
    for group in cluster.instance_groups:
        ec2_type = group.instance_type.removeprefix("ml.")
        try:
            gpus = get_instance_spec(ec2_type).gpu.count
        except (KeyError, ValueError, FmValidationError):
            continue
        if gpus:
            gpu_groups.append((group, gpus))
    if instance_type is None:
        if not gpu_groups:
            raise FmValidationError("cluster", cluster.node.path, "a HyperPod cluster with a GPU instance group")
        instance_type = gpu_groups[0][0].instance_type
    name = hyperpod_type("instance_type", instance_type)
    total: Any = 0
    for group, gpus in gpu_groups:
        if group.instance_type == name:
            total = None if total is None or is_token(group.nodes) else total + group.nodes * gpus
    return name, total


def _scheduler_config_property(config: dict[str, Any]) -> sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty:
    """The rendered ``SchedulerConfig`` as the L1's struct."""
    prop = sagemaker.CfnClusterSchedulerConfig
    return prop.SchedulerConfigProperty(
        priority_classes=[
            prop.PriorityClassProperty(name=c["Name"], weight=c["Weight"]) for c in config["PriorityClasses"]
        ],
        fair_share=config["FairShare"],
    )


class HyperPodTaskGovernance(Construct):
    """Task governance for ``teams`` on ``cluster`` (EKS orchestration): :attr:`scheduler_config` and a
    :attr:`compute_quotas` entry per team (see the module docstring)."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: HyperPodCluster,
        teams: Sequence[Team],
        instance_type: str | None = None,
        addons: Construct | None = None,
        policy_name: str = "fm-teams",
    ) -> None:
        """
        :param instance_type: the instance type the teams' GPUs are counted in (default: the first GPU group's).
        :param addons: what must exist first (the :class:`HyperPodEksAddons` with task governance). Default None.
        :param policy_name: the cluster policy's ``Name``. Default ``fm-teams``.
        """
        check_scope_id(scope, id)
        if not isinstance(cluster, HyperPodCluster):
            raise FmTypeError("cluster", cluster, f"a HyperPodCluster (got a {type(cluster).__name__})")
        if cluster.orchestrator.kind is not OrchestratorKind.EKS:
            raise FmValidationError(
                "cluster",
                cluster.node.path,
                "a HyperPod cluster orchestrated by EKS (task governance is not offered on Slurm: render the teams "
                "with fmconstructs.teams.slurm.render_sacctmgr_script instead)",
            )
        quota_type, cluster_gpus = _gpu_groups(cluster, instance_type)
        checked = _render.check_hyperpod_teams(teams, cluster_gpus=cluster_gpus)
        if not checked:
            raise FmValidationError("teams", [], "at least one Team")
        super().__init__(scope, id)
        self.teams = checked
        self.scheduler_config = sagemaker.CfnClusterSchedulerConfig(
            self,
            "Resource",
            name=policy_name,
            cluster_arn=cluster.cluster_arn,
            scheduler_config=_scheduler_config_property(_render.scheduler_config(checked)),
            description="fmconstructs teams",
        )
        self.compute_quotas: dict[str, CfnResource] = {}
        for team in checked:
            quota = CfnResource(
                self,
                f"Quota{team.name}",
                type=_render.COMPUTE_QUOTA_TYPE,
                properties=_render.compute_quota_properties(
                    team, cluster_arn=cluster.cluster_arn, instance_type=quota_type
                ),
            )
            quota.node.add_dependency(self.scheduler_config)
            self.compute_quotas[team.name] = quota
        if addons is not None:
            self.node.add_dependency(addons)
