"""A PCS platform on a Capacity Block without login nodes: the expiry drain has nowhere to run, and says so.

GIVEN TrainingPlatform with PcsOptions(login_nodes=0) on a Capacity Block with observability, THEN the Capacity Block
events construct carries warning ``capacity-events-pcs-drain-no-login-nodes`` naming the consequence and the fix; with
the default login node, or without a Capacity Block, it does not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Annotations, Match

from fmconstructs.capacity import CapacityBlock, OnDemand
from fmconstructs.errors import WarningId
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import PcsOptions, PlatformObservability, PlatformStorage, TrainingPlatform

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK = "cr-0fedcba9876543210"
WARNING = WarningId.CAPACITY_EVENTS_PCS_DRAIN_NO_LOGIN_NODES


def _warnings(*, login_nodes: int, capacity: Any) -> list[Any]:
    scene = new_scene()
    TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=capacity,
        orchestrator=PcsOptions(ami=AMI, login_nodes=login_nodes),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
        observability=PlatformObservability.new(grafana=False),
    )
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(".*"))
    return [w for w in found if WARNING.qualified in json.dumps(w.entry.data)]


def test_no_login_nodes_on_a_capacity_block_warns_with_consequence_and_fix():
    (warning,) = _warnings(login_nodes=0, capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2))
    text = json.dumps(warning.entry.data)
    assert "/Platform/CapacityBlockEvents" in warning.id
    assert "NOT drained" in text and "login_nodes=1" in text and "scontrol update" in text


@pytest.mark.parametrize(
    ("login_nodes", "capacity"),
    [(1, CapacityBlock(reservation_id=BLOCK, instance_count=2)), (0, OnDemand())],
)
def test_no_warning_with_a_login_node_or_without_a_block(login_nodes, capacity):
    assert _warnings(login_nodes=login_nodes, capacity=capacity) == []
