"""One default minimum fleet size for every backend (capacity.default_min_nodes).

GIVEN ``nodes=16`` On-Demand through TrainingPlatform, THEN PCS, ParallelCluster and EKS all default to a minimum of
0 (an idle fleet costs nothing); a Capacity Block deployed AT_DEPLOY stays a fixed fleet everywhere.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs import (
    CapacityBlock,
    CapacityBlockScaling,
    CapacityReservation,
    OnDemand,
    UltraServerCapacityBlock,
)
from fmconstructs.capacity import default_min_nodes
from fmconstructs.platform import Backend, TrainingPlatform

from tests.conftest import new_scene
from tests.support.platform import _orchestrator, _platform

BLOCK = "cr-0fedcba9876543210"
ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200"


@pytest.mark.parametrize(
    ("capacity", "scaling", "expected"),
    [
        (OnDemand(), CapacityBlockScaling.AT_DEPLOY, 0),
        (CapacityReservation(reservation_id=BLOCK), CapacityBlockScaling.AT_DEPLOY, 0),
        (CapacityBlock(reservation_id=BLOCK), CapacityBlockScaling.AT_DEPLOY, 16),
        (CapacityBlock(reservation_id=BLOCK), CapacityBlockScaling.ON_BLOCK_EVENTS, 0),
        (UltraServerCapacityBlock(resource_group_arn=ARN), CapacityBlockScaling.AT_DEPLOY, 16),
    ],
)
def test_default_min_nodes(capacity, scaling, expected):
    assert default_min_nodes(capacity, 16, scaling=scaling) == expected


def test_default_min_nodes_passes_a_token_through():
    token = cdk.Token.as_number(cdk.Fn.ref("Nodes"))
    assert default_min_nodes(CapacityBlock(reservation_id=BLOCK), token) is token
    assert default_min_nodes(OnDemand(), token) == 0


def _min_nodes(platform: TrainingPlatform) -> Any:
    if platform.backend is Backend.PARALLELCLUSTER:
        return platform.node_group.compute_resources[0].resolved_min_nodes
    return platform.node_group.min_nodes


@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.EKS])
def test_every_backend_defaults_to_min_zero_on_demand(backend):
    scene = new_scene()
    platform = _platform(scene, nodes=16, orchestrator=_orchestrator(backend), capacity=OnDemand(), storage=None)
    assert _min_nodes(platform) == 0


def test_eks_on_demand_group_synthesizes_min_zero():
    scene = new_scene()
    _platform(scene, nodes=16, orchestrator=_orchestrator(Backend.EKS), capacity=OnDemand(), storage=None)
    groups = [
        r["Properties"]["ScalingConfig"]
        for r in Template.from_stack(scene.stack).find_resources("AWS::EKS::Nodegroup").values()
        if r["Properties"].get("CapacityType") == "ON_DEMAND" and r["Properties"]["ScalingConfig"]["MaxSize"] == 16
    ]
    # desired stays max_nodes: the fleet is up after deployment and can be scaled to 0 without a redeploy
    assert groups == [{"MinSize": 0, "MaxSize": 16, "DesiredSize": 16}]


@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.EKS])
def test_every_backend_keeps_a_block_fixed(backend):
    scene = new_scene()
    block = CapacityBlock(reservation_id=BLOCK, instance_count=2, zone="us-east-1a")
    platform = _platform(scene, nodes=2, orchestrator=_orchestrator(backend), capacity=block, storage=None)
    assert _min_nodes(platform) == 2
