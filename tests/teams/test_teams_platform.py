"""TrainingPlatform(teams=[...]): a three-team platform synthesizes on EKS (Kueue queues over the topology-aware
flavors) and on HyperPod with EKS (the task governance add-on, the cluster policy and a quota per team); teams over
the platform's GPUs and backends that cannot apply teams yet are refused before anything is built."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock
from fmconstructs.errors import FmValidationError
from fmconstructs.platform import (
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    ParallelClusterOptions,
    TrainingPlatform,
)
from fmconstructs.teams import Preemption, Team

from tests.conftest import Scene, new_scene
from tests.support.eks_kueue import validate
from tests.support.hyperpod_platform_eks import CHART

TEAMS = [
    Team(
        name="research",
        namespaces=["ml"],
        guaranteed_gpus=8,
        borrowing_limit_gpus=4,
        priority=50,
        preemption=Preemption.LOWER_PRIORITY,
    ),
    Team(name="prod", namespaces=["prod", "default"], guaranteed_gpus=4, priority=90),
    Team(name="dev", namespaces=["dev"], priority=10, preemption=Preemption.NEVER),
]


def _platform(scene: Scene, orchestrator: Any, teams: Any = TEAMS, **props: Any) -> TrainingPlatform:
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=orchestrator,
        teams=teams,
        health=None,
        **props,
    )


def test_three_teams_on_eks_are_kueue_queues_in_one_cohort():
    scene = new_scene("TeamsEks")
    platform = _platform(
        scene,
        EksOptions(gpu_addons=False),
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
    )
    objects: list[dict[str, Any]] = []
    for resource in scene.template().find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, str) and "kueue.x-k8s.io/" in body:
            objects += json.loads(body)
    for manifest in objects:
        if manifest["apiVersion"].startswith("kueue.x-k8s.io/"):
            validate(manifest)
    queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    assert set(queues) == {"fm-gpu", "research", "prod", "dev"}
    assert {q["spec"]["cohortName"] for q in queues.values()} == {"fm-teams"}
    assert queues["fm-gpu"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16 - 12
    namespaces = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Namespace")
    assert namespaces == ["dev", "ml", "prod"]  # not "default"
    assert platform.teams == tuple(TEAMS) and platform.team_objects is not None


def test_three_teams_on_hyperpod_eks_are_task_governance_objects():
    scene = new_scene("TeamsHyperPod")
    platform = _platform(scene, HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART))
    template: Template = scene.template()
    template.resource_count_is("AWS::SageMaker::ClusterSchedulerConfig", 1)
    template.resource_count_is("AWS::SageMaker::ComputeQuota", 3)
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "amazon-sagemaker-hyperpod-taskgovernance"})
    quota = template.find_resources("AWS::SageMaker::ComputeQuota", {"Properties": {"Name": "research-quota"}})
    (resource,) = quota.values()
    assert resource["Properties"]["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}
    ]
    assert set(platform.team_objects.compute_quotas) == {"research", "prod", "dev"}


def test_three_teams_on_parallelcluster_with_accounting_run_sacctmgr_on_the_head_node():
    from aws_cdk import aws_secretsmanager as secretsmanager

    from fmconstructs.parallelcluster import SlurmDatabase
    from fmconstructs.parallelcluster.config import CustomActionEvent

    scene = new_scene("TeamsParallelClusterPlatform")
    secret = secretsmanager.Secret.from_secret_complete_arn(
        scene.stack, "DbSecret", "arn:aws:secretsmanager:us-east-1:123456789012:secret:slurm-db-AbCdEf"
    )
    database = SlurmDatabase(host="db.example.internal", user_name="clusteradmin", password_secret=secret)
    slurm_teams = [Team(name=t.name, guaranteed_gpus=t.guaranteed_gpus, priority=t.priority) for t in TEAMS]
    platform = _platform(scene, ParallelClusterOptions(cluster_name="train", slurm_accounting=database), slurm_teams)
    scene.template()
    assert platform.team_objects in platform.cluster.head_node_pieces(CustomActionEvent.ON_NODE_UPDATED)
    settings = platform.cluster.to_dict()["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    assert {"PreemptType": "preempt/qos"} in settings


@pytest.mark.parametrize(
    ("orchestrator", "teams", "message"),
    [
        (
            EksOptions(),
            [Team(name="a", namespaces=["x"], guaranteed_gpus=17)],
            r"^teams must be at most the cluster's 16",
        ),
        (EksOptions(scheduling=False), TEAMS, r"^teams must be empty with EksOptions\(scheduling=False\)"),
        (EksOptions(), [Team(name="a")], r"^teams\[0\]\.namespaces"),
        (EksOptions(), [Team(name="a", namespaces=["x"]), Team(name="a", namespaces=["y"])], r"^teams\[1\]\.name"),
        (HyperPodOptions(), TEAMS, r"^teams must be empty with HyperPod on Slurm"),
        (ParallelClusterOptions(cluster_name="t"), [Team(name="a")], r"^teams must be empty with ParallelClusterOpt"),
        (EksOptions(), "research", r"^teams must be a list of Team"),
    ],
)
def test_bad_teams_are_refused_before_anything_is_built(orchestrator: Any, teams: Any, message: str):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=message):
        _platform(scene, orchestrator, teams)
    assert scene.stack.node.try_find_child("Platform") is None
