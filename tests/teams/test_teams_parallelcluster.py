"""Teams on ParallelCluster with Slurm accounting: ``ParallelCluster.add_teams`` runs the sacctmgr script on the head
node (OnNodeConfigured at creation, OnNodeUpdated on ``pcluster update-cluster``) and puts the slurm.conf lines in
CustomSlurmSettings; without accounting, or with guarantees over the queues' GPUs, it is refused."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import aws_secretsmanager as secretsmanager

from fmconstructs.errors import FmValidationError
from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmDatabase, SlurmQueue
from fmconstructs.parallelcluster.config import CustomActionEvent
from fmconstructs.teams import Preemption, Team
from fmconstructs.teams.slurm import SLURM_CONF_SETTINGS

from tests.conftest import Scene, new_scene

TEAMS = [
    Team(name="research", users=["alice"], guaranteed_gpus=8, priority=50, preemption=Preemption.LOWER_PRIORITY),
    Team(name="prod", users=["bob"], guaranteed_gpus=4, priority=90),
    Team(name="dev", users=["carol"], priority=10, preemption=Preemption.NEVER),
]
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:slurm-db-AbCdEf"


def _pc(scene: Scene, accounting: bool = True) -> ParallelCluster:
    props: dict[str, Any] = {}
    if accounting:
        secret = secretsmanager.Secret.from_secret_complete_arn(scene.stack, "DbSecret", SECRET)
        props["slurm_accounting"] = SlurmDatabase(
            host="slurm-db.cluster-abc.us-east-1.rds.amazonaws.com", user_name="clusteradmin", password_secret=secret
        )
    queue = SlurmQueue(
        name="gpu",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2)],
    )
    head = HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a)
    return ParallelCluster(scene.stack, "Cluster", cluster_name="train", head_node=head, queues=[queue], **props)


def test_three_teams_run_on_the_head_node_at_creation_and_on_update():
    scene = new_scene("TeamsParallelCluster")
    cluster = _pc(scene)
    bootstrap = cluster.add_teams(TEAMS)
    config = cluster.to_dict()
    settings = config["Scheduling"]["SlurmSettings"]["CustomSlurmSettings"]
    for key, value in SLURM_CONF_SETTINGS.items():
        assert {key: value} in settings
    assert bootstrap in cluster.head_node_pieces(CustomActionEvent.ON_NODE_CONFIGURED)
    assert bootstrap in cluster.head_node_pieces(CustomActionEvent.ON_NODE_UPDATED)
    scene.template()  # synthesizes


@pytest.mark.parametrize(
    ("accounting", "teams", "message"),
    [
        (False, TEAMS, r"^teams must be empty on a ParallelCluster without slurm_accounting"),
        (True, [Team(name="a", guaranteed_gpus=17)], r"^teams must be at most the cluster's 16 GPUs"),
        (True, [Team(name="Research")], r"^teams\[0\]\.name"),
    ],
)
def test_add_teams_refuses_what_slurm_cannot_hold(accounting: bool, teams: list[Team], message: str):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=message):
        _pc(scene, accounting).add_teams(teams)
