"""Interruptible Capacity Reservations (issue 24 section 2): the capacity kind on AWS PCS and its refusal elsewhere.

Sources: PCS User Guide "Using I-ODCRs with AWS PCS" (capacity-reservations-iodcr): a launch template with
``CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId`` and ``InstanceMarketOptions.
MarketType: interruptible-capacity-reservation``, purchase option ``INTERRUPTIBLE_CAPACITY_RESERVATION``, min 0; EC2
User Guide interruptible-capacity-reservations: no Capacity Reservation groups.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from fmconstructs import (
    CapacityKind,
    FmValidationError,
    InterruptibleCapacityReservation,
    OnDemand,
)
from fmconstructs.capacity import check_backend_capacity
from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.compute.fleet import GpuAutoScalingGroup
from fmconstructs.compute.launch_template import GpuLaunchTemplate
from fmconstructs.eks.node_group import eks_capacity_type
from fmconstructs.networking import InterfacePolicy
from fmconstructs.parallelcluster.config import ComputeResource
from fmconstructs.pcs import PcsAmi, PcsCluster, PurchaseOption, purchase_option_for

from tests.conftest import new_scene

CNG = "AWS::PCS::ComputeNodeGroup"
LT = "AWS::EC2::LaunchTemplate"
IODCR = "cr-0fedcba9876543210"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


@pytest.fixture(scope="module")
def pcs_on_iodcr() -> tuple[Any, Template]:
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "Borrowed",
        instance_type="p5.48xlarge",
        ami=AMI,
        capacity=InterruptibleCapacityReservation(reservation_id=IODCR, instance_count=16, zone="us-east-1a"),
        max_nodes=16,
    )
    login = cluster.add_login_node_group("Login", ami=AMI, nodes=1)
    CapacityBlockEvents(
        scene.stack,
        "Reclaim",
        alert_topic=sns.Topic(scene.stack, "Alerts"),
        pcs_login_node_group_id=login.node_group_id,
        interruptible_reservation_ids=[IODCR],
    )
    return group, Template.from_stack(scene.stack)


def test_pcs_node_group_on_an_interruptible_reservation_uses_its_purchase_option(pcs_on_iodcr):
    group, template = pcs_on_iodcr
    assert group.purchase_option is PurchaseOption.INTERRUPTIBLE_CAPACITY_RESERVATION
    template.has_resource_properties(
        CNG,
        {
            "PurchaseOption": "INTERRUPTIBLE_CAPACITY_RESERVATION",
            "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 16},
        },
    )


def test_pcs_launch_template_targets_the_reservation_with_the_interruptible_market(pcs_on_iodcr):
    _, template = pcs_on_iodcr
    template.has_resource_properties(
        LT,
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "InstanceMarketOptions": {"MarketType": "interruptible-capacity-reservation"},
                    "CapacityReservationSpecification": {"CapacityReservationTarget": {"CapacityReservationId": IODCR}},
                }
            )
        },
    )


def test_pcs_on_an_interruptible_reservation_synthesizes_with_its_reclaim_drain(pcs_on_iodcr):
    _, template = pcs_on_iodcr
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.ec2"],
                "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
            },
            "Targets": [
                Match.object_like({"Arn": {"Fn::GetAtt": [Match.string_like_regexp("^ReclaimHandler"), "Arn"]}})
            ],
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "INTERRUPTIBLE_RESERVATION_IDS": f'["{IODCR}"]',
                        "PCS_LOGIN_NODE_GROUP_ID": Match.any_value(),
                    }
                )
            }
        },
    )


def test_capacity_kind_and_default_min_nodes():
    capacity = InterruptibleCapacityReservation(reservation_id=IODCR)
    assert capacity.kind is CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION
    assert not capacity.is_capacity_block and not capacity.requires_fixed_size
    assert purchase_option_for(capacity) is PurchaseOption.INTERRUPTIBLE_CAPACITY_RESERVATION


def test_tokens_are_accepted():
    stack = cdk.Stack(cdk.App(), "Tokens")
    capacity = InterruptibleCapacityReservation(
        reservation_id=cdk.CfnParameter(stack, "Id").value_as_string,
        instance_count=cdk.CfnParameter(stack, "Count", type="Number").value_as_number,
    )
    assert capacity.reservation_target() is not None


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({}, "reservation_id"),
        ({"reservation_id": "cr-123"}, "reservation_id"),
        ({"reservation_id": 5}, "reservation_id"),
        ({"reservation_id": IODCR, "instance_count": 0}, "instance_count"),
        ({"reservation_id": IODCR, "zone": "moon-1a"}, "zone"),
        (
            {"reservation_id": IODCR, "resource_group_arn": "arn:aws:resource-groups:us-east-1:123456789012:group/g"},
            "resource_group_arn",
        ),
        ({"resource_group_arn": "arn:aws:resource-groups:us-east-1:123456789012:group/g"}, "resource_group_arn"),
    ],
)
def test_rejects_bad_input(kwargs: dict[str, Any], parameter: str):
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        InterruptibleCapacityReservation(**kwargs)


def test_spot_is_refused_on_an_interruptible_reservation():
    with pytest.raises(FmValidationError, match=r"^spot"):
        purchase_option_for(InterruptibleCapacityReservation(reservation_id=IODCR), spot=True)


def test_max_nodes_above_the_reservation_is_refused():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"^max_nodes .*reservation's 4 instances"):
        cluster.add_gpu_node_group(
            "Borrowed",
            instance_type="p5.48xlarge",
            ami=AMI,
            capacity=InterruptibleCapacityReservation(reservation_id=IODCR, instance_count=4),
            max_nodes=8,
        )


@pytest.mark.parametrize(
    "backend", ["EKS managed node groups", "ParallelCluster", "self-managed Auto Scaling groups", "HyperPod"]
)
def test_backend_check_names_parameter_backend_and_allowed(backend: str):
    with pytest.raises(FmValidationError) as raised:
        check_backend_capacity(InterruptibleCapacityReservation(reservation_id=IODCR), backend=backend)
    text = str(raised.value)
    assert text.startswith("capacity must be OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock")
    assert f"on {backend}" in text and "AWS PCS only" in text and IODCR in text


def test_backend_check_passes_other_kinds():
    capacity = OnDemand()
    assert check_backend_capacity(capacity, backend="ParallelCluster") is capacity


def test_eks_refuses_an_interruptible_reservation():
    with pytest.raises(FmValidationError, match=r"^capacity .*EKS managed node groups"):
        eks_capacity_type(InterruptibleCapacityReservation(reservation_id=IODCR))


def test_parallelcluster_refuses_an_interruptible_reservation():
    with pytest.raises(FmValidationError, match=r"^capacity .*ParallelCluster"):
        ComputeResource(
            name="borrowed",
            instance_type="p5.48xlarge",
            capacity=InterruptibleCapacityReservation(reservation_id=IODCR),
        )


def test_self_managed_fleet_refuses_an_interruptible_reservation():
    scene = new_scene()
    template = GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        policy=InterfacePolicy.SELF_MANAGED,
        subnet=scene.subnet_a,
        capacity=InterruptibleCapacityReservation(reservation_id=IODCR),
    )
    with pytest.raises(FmValidationError, match=r"^capacity .*self-managed Auto Scaling groups"):
        GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=template, min_nodes=0, max_nodes=1)


def test_pcs_platform_on_an_interruptible_reservation_wires_the_reclaim_drain():
    from fmconstructs.observability.workspace import PrometheusWorkspace
    from fmconstructs.platform import PcsOptions, PlatformObservability, PlatformStorage, TrainingPlatform

    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
        capacity=InterruptibleCapacityReservation(reservation_id=IODCR, instance_count=2),
        observability=PlatformObservability.existing(prometheus_workspace=workspace),
        health=None,
    )
    events = platform.capacity_events
    assert events is not None and events.interruptible_reservation_ids == (IODCR,)
    assert events.pcs_login_node_group_id is not None
    template = scene.template()
    template.has_resource_properties(
        CNG, {"PurchaseOption": "INTERRUPTIBLE_CAPACITY_RESERVATION", "ScalingConfiguration": Match.any_value()}
    )
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.ec2"],
                "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
            }
        },
    )
    # the block rule names only this reservation (which sends no block event): no other block's notices
    template.has_resource_properties(
        "AWS::Events::Rule", {"EventPattern": Match.object_like({"detail": {"capacity-reservation-id": [IODCR]}})}
    )


def test_pcs_on_an_interruptible_reservation_passes_cfn_lint(pcs_on_iodcr, tmp_path):
    import json

    from cfnlint.api import lint_file

    _, template = pcs_on_iodcr
    path = tmp_path / "iodcr.template.json"
    path.write_text(json.dumps(template.to_json()))
    errors = [f"{m.rule.id} {m.message[:200]}" for m in lint_file(path) if m.rule.severity == "error"]
    assert errors == []
