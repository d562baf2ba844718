"""Helpers of tests/parallelcluster/test_parallelcluster.py that other test modules use too."""

from __future__ import annotations

from typing import Any

from fmconstructs import CapacityBlock
from fmconstructs.parallelcluster import (
    ComputeResource,
    HeadNode,
    ParallelCluster,
    SlurmQueue,
    head_node_instance_type_for,
)

from tests.conftest import Scene

BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")


def head_type_for(queues: Any) -> str:
    """The default head node type for the first catalog compute type's architecture (c7g.2xlarge on GB200)."""
    for queue in queues if isinstance(queues, list | tuple) else ():
        for resource in getattr(queue, "compute_resources", ()):
            if getattr(resource, "spec", None) is not None:
                return head_node_instance_type_for(resource.spec.architecture)
    return "c7i.2xlarge"


def make_cluster(scene: Scene, **overrides: Any) -> ParallelCluster:
    props: dict[str, Any] = {
        "cluster_name": "train",
        "queues": [
            SlurmQueue(
                name="gpu",
                subnets=[scene.subnet_a],
                compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
            )
        ],
    }
    props.update(overrides)
    props.setdefault("head_node", HeadNode(instance_type=head_type_for(props["queues"]), subnet=scene.subnet_a))
    return ParallelCluster(scene.stack, "Cluster", **props)
