"""ParallelCluster updates: a typed ``QueueUpdateStrategy`` in the configuration (default DRAIN, so queue edits deploy
while nodes run) and a warning listing the settings ParallelCluster refuses to change on a running cluster.

Sources: aws-parallelcluster 3.16.1 ``pcluster/config/cluster_config.py`` ``QueueUpdateStrategy`` and
``pcluster/schemas/cluster_schema.py`` ``update_policy`` metadata; User Guide "Scheduling section" (SlurmSettings).
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.errors import WarningId
from fmconstructs.parallelcluster import (
    ComputeResource,
    HeadNode,
    LoginNodePool,
    ParallelCluster,
    QueueUpdateStrategy,
    SlurmQueue,
)
from fmconstructs.platform import ParallelClusterOptions, TrainingPlatform

from tests.conftest import Scene, new_scene

WARNING = WarningId.PARALLELCLUSTER_CREATE_TIME_SETTINGS.qualified
BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")


def _cluster(scene: Scene, *, capacity: Any = None, **props: Any) -> ParallelCluster:
    extra = {} if capacity is None else {"capacity": capacity}
    return ParallelCluster(
        scene.stack,
        "Cluster",
        cluster_name="train",
        head_node=HeadNode(instance_type="c7i.4xlarge", subnet=scene.subnet_a),
        queues=[
            SlurmQueue(
                name="gpu",
                subnets=[scene.subnet_a],
                compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", **extra)],
            )
        ],
        **props,
    )


def _warnings(scene: Scene) -> list[str]:
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp("."))
    return [str(w.entry.data) for w in found if WARNING in str(w.entry.data)]


def test_strategies_are_parallelclusters() -> None:
    # pcluster.config.cluster_config.QueueUpdateStrategy (3.16.1) and SlurmSettingsSchema.queue_update_strategy.
    assert [s.value for s in QueueUpdateStrategy] == ["DRAIN", "COMPUTE_FLEET_STOP", "TERMINATE"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [({}, "DRAIN"), *[({"queue_update_strategy": s}, s.value) for s in QueueUpdateStrategy]],
)
def test_configuration_sets_queue_update_strategy(given: dict[str, Any], expected: str) -> None:
    cluster = _cluster(new_scene(), **given)
    assert cluster.to_dict()["Scheduling"]["SlurmSettings"]["QueueUpdateStrategy"] == expected


@pytest.mark.parametrize("value", ["DRAIN", "drain", None, 1])
def test_queue_update_strategy_must_be_the_enum(value: Any) -> None:
    with pytest.raises(FmValidationError, match=r"^queue_update_strategy must be"):
        _cluster(new_scene(), queue_update_strategy=value)


def test_every_cluster_warns_its_create_time_settings() -> None:
    scene = new_scene()
    _cluster(scene)
    (message,) = _warnings(scene)
    # worded as create-time choices: the construct cannot see the deployed values
    assert "cannot tell whether an edit changes one" in message
    assert "head node's instance type ('c7i.4xlarge')" in message
    assert "OnNodeStart/OnNodeConfigured custom actions, adding one included" in message
    assert "a compute resource's instance type (COMPUTE_FLEET_STOP)" in message
    assert "apply by draining and replacing their nodes" in message
    assert "Lowering min_nodes/max_nodes" in message


def test_warning_follows_the_strategy() -> None:
    stop = new_scene()
    _cluster(stop, queue_update_strategy=QueueUpdateStrategy.COMPUTE_FLEET_STOP)
    (message,) = _warnings(stop)
    assert "every queue setting (subnets, custom actions" in message and "is refused while compute nodes run" in message
    terminate = new_scene()
    _cluster(terminate, queue_update_strategy=QueueUpdateStrategy.TERMINATE)
    (message,) = _warnings(terminate)
    assert "apply by terminating nodes" in message and "Lowering min_nodes" not in message


def test_warning_names_capacity_block_queues_and_login_pools() -> None:
    scene = new_scene()
    _cluster(
        scene,
        capacity=BLOCK,
        login_nodes=[LoginNodePool(name="login", instance_type="c7i.xlarge", subnet=scene.subnet_a)],
    )
    (message,) = _warnings(scene)
    assert "Capacity Block queues (gpu): MinCount = MaxCount" in message
    assert "Login pools:" in message


def test_plain_queue_has_no_capacity_block_text() -> None:
    scene = new_scene()
    _cluster(scene)
    (message,) = _warnings(scene)
    assert "Capacity Block" not in message and "Login pools" not in message


def test_platform_passes_the_strategy() -> None:
    scene = new_scene()
    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=ParallelClusterOptions(
            cluster_name="platform-pc", queue_update_strategy=QueueUpdateStrategy.TERMINATE
        ),
    )
    assert isinstance(platform.cluster, ParallelCluster)
    assert platform.cluster.to_dict()["Scheduling"]["SlurmSettings"]["QueueUpdateStrategy"] == "TERMINATE"


def test_platform_options_reject_a_string_strategy() -> None:
    with pytest.raises(FmValidationError, match=r"^queue_update_strategy must be"):
        ParallelClusterOptions(queue_update_strategy="DRAIN")  # type: ignore[arg-type]
