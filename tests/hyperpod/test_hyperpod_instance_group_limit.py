"""A HyperPod cluster takes at most 100 instance groups (botocore sagemaker ClusterInstanceGroupSpecifications max):
more is refused naming ``instance_groups`` and the remedy (more than one cluster)."""

from __future__ import annotations

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.types import MAX_INSTANCE_GROUPS

from tests.conftest import new_scene


def _groups(gpu_groups: int) -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="ml.m5.2xlarge", nodes=1),
        *(HyperPodInstanceGroup(name=f"gpu{i}", instance_type="ml.p5.48xlarge", nodes=1) for i in range(gpu_groups)),
    ]


def test_the_limit_is_the_api_models() -> None:
    assert MAX_INSTANCE_GROUPS == 100


def test_more_than_100_instance_groups_are_refused() -> None:
    scene = new_scene("HyperPodLimit")
    with pytest.raises(FmValidationError, match=r"instance_groups .*at most 100 instance groups per cluster"):
        HyperPodCluster(
            scene.stack,
            "H",
            vpc=scene.vpc,
            instance_groups=_groups(MAX_INSTANCE_GROUPS),
            orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        )


def test_100_instance_groups_are_accepted() -> None:
    scene = new_scene("HyperPodAtLimit")
    cluster = HyperPodCluster(
        scene.stack,
        "H",
        vpc=scene.vpc,
        instance_groups=_groups(MAX_INSTANCE_GROUPS - 1),
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
    )
    assert len(cluster.instance_groups) == MAX_INSTANCE_GROUPS
