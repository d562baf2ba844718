"""Deploying before a Capacity Block starts: CapacityBlockScaling.ON_BLOCK_EVENTS on EKS node groups, self-managed
Auto Scaling groups and TrainingPlatform(EksOptions), scaled by CapacityBlockEvents.

GIVEN a fleet on a Capacity Block built ON_BLOCK_EVENTS, THEN it synthesizes empty (min 0, desired 0, max = the block
size; an Auto Scaling group without DesiredCapacity), the events handler is told which group to scale and may scale
only that group (its ARN, never "*"); contradictory choices are refused.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from fmconstructs import (
    CapacityBlock,
    CapacityBlockScaling,
    CapacityReservation,
    FmTypeError,
    FmValidationError,
    GpuAutoScalingGroup,
    GpuLaunchTemplate,
    InterfacePolicy,
    OnDemand,
)
from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.eks import GpuEksCluster
from fmconstructs.observability import PrometheusWorkspace
from fmconstructs.platform import EksOptions, PlatformObservability, TrainingPlatform

from tests.conftest import ENV, new_app, new_scene
from tests.support.platform import new_scene_in

BLOCK = "cr-0fedcba9876543210"
ON_EVENTS = CapacityBlockScaling.ON_BLOCK_EVENTS


def _nodegroups(template: Template) -> list[dict[str, Any]]:
    """The GPU node groups (the platform's cluster also has a system node group)."""
    return [
        r["Properties"]
        for r in template.find_resources("AWS::EKS::Nodegroup").values()
        if r["Properties"].get("CapacityType") == "CAPACITY_BLOCK"
    ]


def _handler_statements(template: Template, prefix: str) -> list[dict[str, Any]]:
    return [
        statement
        for lid, r in template.find_resources("AWS::IAM::Policy").items()
        if lid.startswith(prefix)
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def _handler_environment(template: Template) -> dict[str, Any]:
    functions = [
        r["Properties"]["Environment"]["Variables"]
        for r in template.find_resources("AWS::Lambda::Function").values()
        if "TOPIC_ARN" in r["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert len(functions) == 1
    return functions[0]


# --- TrainingPlatform(EksOptions(capacity_block_scaling=...)) ----------------------------------------------------------
def _platform(scaling: CapacityBlockScaling, **overrides: Any) -> tuple[TrainingPlatform, Template]:
    app = new_app()
    shared = cdk.Stack(app, "Observability", env=ENV)
    workspace = PrometheusWorkspace(shared, "Prometheus")
    stack = cdk.Stack(app, "Platform", env=ENV)
    scene = new_scene_in(stack)
    props: dict[str, Any] = {
        "vpc": scene.vpc,
        "instance_type": "p5.48xlarge",
        "nodes": 2,
        "capacity": CapacityBlock(reservation_id=BLOCK, instance_count=2),
        "orchestrator": EksOptions(capacity_block_scaling=scaling, gpu_addons=False),
        "observability": PlatformObservability.existing(prometheus_workspace=workspace),
        "health": None,  # the node remediation handler also subscribes to the alert topic
    }
    props.update(overrides)
    platform = TrainingPlatform(stack, "Platform", **props)
    return platform, Template.from_stack(stack)


@pytest.fixture(scope="module")
def on_events_platform() -> tuple[TrainingPlatform, Template]:
    return _platform(ON_EVENTS)


def test_platform_on_block_events_synthesizes_an_empty_group(on_events_platform):
    _, template = on_events_platform
    (group,) = _nodegroups(template)
    assert group["CapacityType"] == "CAPACITY_BLOCK"
    assert group["ScalingConfig"] == {"MinSize": 0, "MaxSize": 2, "DesiredSize": 0}


def test_platform_hands_the_group_to_the_events_handler(on_events_platform):
    platform, template = on_events_platform
    assert platform.capacity_events is not None
    (target,) = platform.capacity_events.scaling_targets
    assert (target.kind, target.reservation_id, target.size) == ("eks-nodegroup", BLOCK, 2)
    variables = _handler_environment(template)
    assert "SCALING_TARGETS" in variables
    rendered = json.dumps(variables["SCALING_TARGETS"])
    assert BLOCK in rendered and "eks-nodegroup" in rendered


def test_platform_handler_may_scale_only_its_node_group(on_events_platform):
    platform, template = on_events_platform
    stack = cdk.Stack.of(platform)
    statements = _handler_statements(template, "PlatformCapacityBlockEventsHandlerRole")
    (scale,) = [s for s in statements if s.get("Sid") == "ScaleBlockNodegroups"]
    assert scale["Action"] == ["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"]
    nodegroup = platform.node_group.nodegroup
    assert scale["Resource"] == stack.resolve(nodegroup.nodegroup_arn)
    assert "*" not in json.dumps(scale["Resource"])


def test_platform_at_deploy_stays_a_fixed_group():
    platform, template = _platform(CapacityBlockScaling.AT_DEPLOY)
    (group,) = _nodegroups(template)
    assert group["ScalingConfig"] == {"MinSize": 2, "MaxSize": 2, "DesiredSize": 2}
    assert platform.capacity_events is not None and platform.capacity_events.scaling_targets == ()
    assert "SCALING_TARGETS" not in _handler_environment(template)


@pytest.mark.parametrize(
    ("overrides", "needs"),
    [
        ({"capacity": OnDemand()}, "a Capacity Block"),
        ({"capacity": CapacityReservation(reservation_id=BLOCK)}, "a Capacity Block"),
        ({"observability": None}, "observability="),
        ({"capacity_block_events": False}, "capacity_block_events=True"),
    ],
)
def test_platform_refuses_on_block_events_that_nothing_would_scale(overrides, needs):
    with pytest.raises(FmValidationError, match=rf"^orchestrator.capacity_block_scaling must be .*{needs}"):
        _platform(ON_EVENTS, **overrides)


def test_eks_options_refuse_a_string():
    with pytest.raises(FmTypeError, match=r"^capacity_block_scaling must be a CapacityBlockScaling"):
        EksOptions(capacity_block_scaling="on-block-events")  # type: ignore[arg-type]


# --- GpuNodeGroup -------------------------------------------------------------------------------------------------------
@pytest.fixture
def cluster_scene():
    scene = new_scene("BlockScaling")
    return scene, GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, system_node_group=None)


def _group(cluster_scene, **kwargs: Any) -> Any:
    scene, cluster = cluster_scene
    props: dict[str, Any] = {
        "instance_type": "p5.48xlarge",
        "capacity": CapacityBlock(reservation_id=BLOCK, instance_count=2),
        "max_nodes": 2,
        "subnets": [scene.subnet_a],
    }
    props.update(kwargs)
    return cluster.add_gpu_node_group("Gpu", **props)


def test_node_group_on_block_events_starts_empty(cluster_scene):
    group = _group(cluster_scene, capacity_block_scaling=ON_EVENTS)
    assert (group.min_nodes, group.max_nodes, group.desired_nodes) == (0, 2, 0)
    (props,) = _nodegroups(Template.from_stack(cluster_scene[0].stack))
    assert props["ScalingConfig"] == {"MinSize": 0, "MaxSize": 2, "DesiredSize": 0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": OnDemand()}, r"^capacity_block_scaling must be CapacityBlockScaling.AT_DEPLOY on on-demand"),
        (
            {"capacity": CapacityReservation(reservation_id=BLOCK)},
            r"^capacity_block_scaling must be CapacityBlockScaling.AT_DEPLOY on capacity-reservation",
        ),
        ({"min_nodes": 2}, r"^min_nodes must be 0 \(or omitted\) with CapacityBlockScaling.ON_BLOCK_EVENTS"),
        ({"desired_nodes": 2}, r"^desired_nodes must be 0 \(or omitted\) with CapacityBlockScaling.ON_BLOCK_EVENTS"),
    ],
)
def test_node_group_refuses_contradictions(cluster_scene, kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        _group(cluster_scene, capacity_block_scaling=ON_EVENTS, **kwargs)


@pytest.mark.parametrize("value", ["on-block-events", None, 1])
def test_node_group_refuses_a_non_enum(cluster_scene, value):
    with pytest.raises(FmTypeError, match=r"^capacity_block_scaling must be a CapacityBlockScaling"):
        _group(cluster_scene, capacity_block_scaling=value)


def test_node_group_on_block_events_with_a_token_min_is_refused(cluster_scene):
    scene, _ = cluster_scene
    minimum = cdk.CfnParameter(scene.stack, "Min", type="Number").value_as_number
    with pytest.raises(FmValidationError, match=r"^min_nodes must be 0"):
        _group(cluster_scene, capacity_block_scaling=ON_EVENTS, min_nodes=minimum)


# --- GpuAutoScalingGroup ----------------------------------------------------------------------------------------------
def _launch_template(scene: Any, capacity: Any) -> GpuLaunchTemplate:
    return GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        policy=InterfacePolicy.SELF_MANAGED,
        capacity=capacity,
    )


def test_auto_scaling_group_on_block_events_has_no_desired_capacity():
    scene = new_scene("AsgBlock")
    lt = _launch_template(scene, CapacityBlock(reservation_id=BLOCK, instance_count=2))
    fleet = GpuAutoScalingGroup(
        scene.stack, "Fleet", launch_template=lt, min_nodes=0, max_nodes=2, capacity_block_scaling=ON_EVENTS
    )
    (props,) = [r["Properties"] for r in scene.template().find_resources("AWS::AutoScaling::AutoScalingGroup").values()]
    assert (props["MinSize"], props["MaxSize"]) == ("0", "2")
    assert "DesiredCapacity" not in props
    assert fleet.capacity_block_scaling is ON_EVENTS


def test_auto_scaling_group_at_deploy_keeps_the_fixed_size_rule():
    scene = new_scene("AsgFixed")
    lt = _launch_template(scene, CapacityBlock(reservation_id=BLOCK, instance_count=2))
    with pytest.raises(FmValidationError, match=r"^min_nodes must be equal to max_nodes \(2\) on a Capacity Block"):
        GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, min_nodes=0, max_nodes=2)


@pytest.mark.parametrize(
    ("capacity", "kwargs", "message"),
    [
        (OnDemand(), {"min_nodes": 0}, r"^capacity_block_scaling must be CapacityBlockScaling.AT_DEPLOY on on-demand"),
        (CapacityBlock(reservation_id=BLOCK, instance_count=2), {"min_nodes": 2}, r"^min_nodes must be 0 with"),
        (
            CapacityBlock(reservation_id=BLOCK, instance_count=2),
            {"min_nodes": 0, "desired_nodes": 1},
            r"^desired_nodes must be 0 with",
        ),
        (CapacityBlock(reservation_id=BLOCK, instance_count=2), {"min_nodes": 0, "max_nodes": 3}, r"^max_nodes"),
    ],
)
def test_auto_scaling_group_refuses_contradictions(capacity, kwargs, message):
    scene = new_scene("AsgBad")
    lt = _launch_template(scene, capacity)
    props = {"max_nodes": 2, **kwargs}
    with pytest.raises(FmValidationError, match=message):
        GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, capacity_block_scaling=ON_EVENTS, **props)


# --- CapacityBlockEvents(scaling_targets=...) -------------------------------------------------------------------------
def test_events_scale_an_auto_scaling_group_by_its_arn():
    scene = new_scene("AsgEvents")
    lt = _launch_template(scene, CapacityBlock(reservation_id=BLOCK, instance_count=2))
    fleet = GpuAutoScalingGroup(
        scene.stack, "Fleet", launch_template=lt, min_nodes=0, max_nodes=2, capacity_block_scaling=ON_EVENTS
    )
    events = CapacityBlockEvents(
        scene.stack, "Blocks", alert_topic=sns.Topic(scene.stack, "Alerts"), scaling_targets=[fleet]
    )
    template = scene.template()
    (scale,) = [
        s for s in _handler_statements(template, "BlocksHandlerRole") if s.get("Sid") == "ScaleBlockAutoScalingGroups"
    ]
    assert scale["Action"] == "autoscaling:UpdateAutoScalingGroup"
    logical_id = scene.stack.get_logical_id(fleet.resource)
    rendered = json.dumps(scale["Resource"])
    assert ":autoScalingGroup:*:autoScalingGroupName/" in rendered and logical_id in rendered
    assert "autoscaling" in events.api_services


def test_events_refuse_a_fixed_group(cluster_scene):
    group = _group(cluster_scene)  # AT_DEPLOY
    stack = cluster_scene[0].stack
    with pytest.raises(FmValidationError, match=r"^scaling_targets\[0\].capacity_block_scaling must be"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), scaling_targets=[group])


def test_events_refuse_a_group_of_an_unlisted_block(cluster_scene):
    group = _group(cluster_scene, capacity_block_scaling=ON_EVENTS)
    stack = cluster_scene[0].stack
    with pytest.raises(FmValidationError, match=r"^scaling_targets\[0\] must be a group on one of capacity_reserv"):
        CapacityBlockEvents(
            stack,
            "Blocks",
            alert_topic=sns.Topic(stack, "Alerts"),
            capacity_reservation_ids=["cr-0123456789abcdef0"],
            scaling_targets=[group],
        )


@pytest.mark.parametrize("value", ["nodegroup-name", 3, [None]])
def test_events_refuse_other_targets(scene, value):
    with pytest.raises(FmTypeError, match=r"^scaling_targets"):
        CapacityBlockEvents(scene.stack, "Blocks", alert_topic=sns.Topic(scene.stack, "Alerts"), scaling_targets=value)
