"""Teams on HyperPod: task governance in CloudFormation on a HyperPod cluster orchestrated by EKS (the cluster
policy and a ComputeQuota per team, whose properties follow cfn-lint's schema: cfn-lint finds no error on the
synthesized template); Slurm orchestration is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.task_governance import HyperPodTaskGovernance
from fmconstructs.teams import Preemption, Team
from fmconstructs.teams.hyperpod import compute_quota_properties, scheduler_config

from tests.conftest import new_scene

TEAMS = [
    Team(name="research", guaranteed_gpus=8, borrowing_limit_gpus=8, priority=50, preemption=Preemption.LOWER_PRIORITY),
    Team(name="prod", guaranteed_gpus=8, priority=90),
    Team(name="dev", borrowing_limit_gpus=0, priority=10, preemption=Preemption.NEVER),
]
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef123456"


def test_compute_quota_maps_guarantee_borrowing_priority_and_preemption():
    research, prod, dev = (compute_quota_properties(t, cluster_arn=ARN, instance_type="ml.p5.48xlarge") for t in TEAMS)
    assert research["ComputeQuotaTarget"] == {"TeamName": "research", "FairShareWeight": 50}
    assert research["ComputeQuotaConfig"] == {
        "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}],
        "ResourceSharingConfig": {
            "Strategy": "LendAndBorrow",
            "AbsoluteBorrowLimits": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}],
        },
        "PreemptTeamTasks": "LowerPriority",
    }
    assert prod["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "LendAndBorrow", "BorrowLimit": 500}
    assert prod["ComputeQuotaConfig"]["PreemptTeamTasks"] == "Never"
    assert dev["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "Lend"}
    assert scheduler_config(TEAMS)["PriorityClasses"] == [
        {"Name": "research", "Weight": 50},
        {"Name": "prod", "Weight": 90},
        {"Name": "dev", "Weight": 10},
    ]


def _cluster(scene, orchestrator=None) -> HyperPodCluster:
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2)
    if orchestrator is None:
        orchestrator = HyperPodOrchestrator.eks(GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc))
    groups = (
        [gpu]
        if orchestrator.kind.value == "eks"
        else [HyperPodInstanceGroup(name="controller", instance_type="ml.m5.xlarge", nodes=1), gpu]
    )
    return HyperPodCluster(scene.stack, "H", vpc=scene.vpc, instance_groups=groups, orchestrator=orchestrator)


@pytest.fixture(scope="module")
def governed():
    scene = new_scene("HyperPodTeams")
    cluster = _cluster(scene)
    governance = HyperPodTaskGovernance(scene.stack, "Teams", cluster=cluster, teams=TEAMS)
    return scene, governance, scene.template()


def test_the_cluster_policy_and_a_quota_per_team_are_in_the_template(governed):
    _, governance, template = governed
    template.resource_count_is("AWS::SageMaker::ClusterSchedulerConfig", 1)
    template.resource_count_is("AWS::SageMaker::ComputeQuota", 3)
    template.has_resource_properties(
        "AWS::SageMaker::ClusterSchedulerConfig",
        {
            "Name": "fm-teams",
            "SchedulerConfig": {"FairShare": "Enabled", "PriorityClasses": scheduler_config(TEAMS)["PriorityClasses"]},
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::ComputeQuota",
        {"Name": "prod-quota", "ComputeQuotaTarget": {"TeamName": "prod", "FairShareWeight": 90}},
    )
    assert sorted(governance.compute_quotas) == ["dev", "prod", "research"]


def test_cfn_lint_finds_no_error_in_the_synthesized_template(governed, tmp_path: Path):
    from cfnlint.api import lint_file

    _, _, template = governed
    path = tmp_path / "HyperPodTeams.template.json"
    path.write_text(json.dumps(template.to_json()))
    errors = [f"{m.rule.id} {m.message[:200]}" for m in lint_file(path) if m.rule.severity == "error"]
    assert errors == []


def test_task_governance_refuses_slurm_clusters_and_teams_over_the_gpus():
    scene = new_scene("HyperPodSlurmTeams")
    slurm = _cluster(scene, HyperPodOrchestrator.slurm(controller_group="controller"))
    with pytest.raises(FmValidationError, match=r"^cluster .*orchestrated by EKS"):
        HyperPodTaskGovernance(scene.stack, "Teams", cluster=slurm, teams=TEAMS)
    scene = new_scene("HyperPodTooMany")
    cluster = _cluster(scene)
    with pytest.raises(FmValidationError, match=r"^teams must be at most the cluster's 16 GPUs"):
        HyperPodTaskGovernance(scene.stack, "Teams", cluster=cluster, teams=[Team(name="a", guaranteed_gpus=17)])
    with pytest.raises(FmValidationError, match=r"^teams\[0\]\.name"):
        HyperPodTaskGovernance(scene.stack, "Teams2", cluster=cluster, teams=[Team(name="ml_team")])
