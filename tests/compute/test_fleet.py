"""GpuAutoScalingGroup: a self-managed fleet and the Capacity Block rules."""

from __future__ import annotations

import json

import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from fmconstructs import (
    CapacityBlock,
    FmValidationError,
    GpuAutoScalingGroup,
    GpuLaunchTemplate,
    InterfacePolicy,
)


def make_lt(scene, **kwargs):
    props = {"instance_type": "p5.48xlarge", "vpc": scene.vpc, "subnet": scene.subnet_a, **kwargs}
    return GpuLaunchTemplate(scene.stack, "Lt", **props)


def test_fleet_pins_the_template_version_and_subnet(scene):
    lt = make_lt(scene, capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2))
    fleet = GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, min_nodes=2, max_nodes=2)
    scene.template().has_resource_properties(
        "AWS::AutoScaling::AutoScalingGroup",
        {
            "MinSize": "2",
            "MaxSize": "2",
            "DesiredCapacity": "2",
            "VPCZoneIdentifier": ["subnet-0aaaaaaaaaaaaaaa1"],
            "LaunchTemplate": {
                "LaunchTemplateId": scene.stack.resolve(lt.launch_template_id),
                "Version": scene.stack.resolve(lt.version_number),
            },
            "HealthCheckGracePeriod": 900,
        },
    )
    props = next(iter(scene.template().find_resources("AWS::AutoScaling::AutoScalingGroup").values()))["Properties"]
    assert "MixedInstancesPolicy" not in props
    assert fleet.total_gpus == 16
    scene.template().resource_count_is("AWS::AutoScaling::WarmPool", 0)


def test_notifications(scene):
    topic = sns.Topic(scene.stack, "Topic")
    GpuAutoScalingGroup(
        scene.stack,
        "Fleet",
        launch_template=make_lt(scene),
        min_nodes=0,
        max_nodes=4,
        notifications_topic=topic,
    )
    props = next(iter(scene.template().find_resources("AWS::AutoScaling::AutoScalingGroup").values()))["Properties"]
    assert props["NotificationConfigurations"][0]["TopicARN"] == scene.stack.resolve(topic.topic_arn)
    assert "autoscaling:EC2_INSTANCE_LAUNCH_ERROR" in props["NotificationConfigurations"][0]["NotificationTypes"]


AUTOSCALING_SLR = {
    "Fn::Join": [
        "",
        [
            "arn:",
            {"Ref": "AWS::Partition"},
            ":iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling",
        ],
    ]
}


def key_statements(template):
    key = next(iter(template.find_resources("AWS::KMS::Key").values()))
    return key["Properties"]["KeyPolicy"]["Statement"]


def test_encrypted_topic_key_policy_lets_auto_scaling_publish(scene):
    """Auto Scaling publishes as AWSServiceRoleForAutoScaling, whose policy covers AWS managed keys only (Auto Scaling
    UG "Required AWS KMS key policy for use with encrypted volumes"): the key policy names the role itself with the
    SNS publisher's kms:GenerateDataKey* and kms:Decrypt (SNS Developer Guide "Key management")."""
    key = kms.Key(scene.stack, "Key")
    topic = sns.Topic(scene.stack, "Topic", master_key=key)
    GpuAutoScalingGroup(
        scene.stack, "Fleet", launch_template=make_lt(scene), min_nodes=0, max_nodes=4, notifications_topic=topic
    )
    statement = next(s for s in key_statements(scene.template()) if s.get("Sid") == "AllowAutoScalingNotifications")
    assert statement["Principal"] == {"AWS": AUTOSCALING_SLR}  # the role itself, not the account root
    assert statement["Effect"] == "Allow"
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert "Condition" not in statement


def test_unencrypted_topic_changes_no_key(scene):
    kms.Key(scene.stack, "Key")  # an unrelated key keeps its default policy
    GpuAutoScalingGroup(
        scene.stack,
        "Fleet",
        launch_template=make_lt(scene),
        min_nodes=0,
        max_nodes=4,
        notifications_topic=sns.Topic(scene.stack, "Plain"),
    )
    assert all(s.get("Sid") != "AllowAutoScalingNotifications" for s in key_statements(scene.template()))


@pytest.mark.parametrize(
    ("lt_kwargs", "fleet_kwargs", "message"),
    [
        (
            {"capacity": CapacityBlock(reservation_id="cr-0123456789abcdef0")},
            {"min_nodes": 1, "max_nodes": 2},
            r"min_nodes must be equal to max_nodes \(2\) on a Capacity Block",
        ),
        (
            {"capacity": CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2)},
            {"min_nodes": 3, "max_nodes": 3},
            r"max_nodes must be at most the reservation's 2 instances, got 3",
        ),
        (
            {},
            {"min_nodes": 1, "max_nodes": 2, "desired_nodes": 3},
            r"desired_nodes must be between min_nodes \(1\) and max_nodes \(2\), got 3",
        ),
        (
            {"subnet": None},
            {"min_nodes": 1, "max_nodes": 1},
            r"launch_template.subnet must be the one subnet of the fleet, got None",
        ),
        (
            {"subnet": None, "policy": InterfacePolicy.PCS},
            {"min_nodes": 1, "max_nodes": 1},
            r"launch_template.policy must be 'self-managed' for an Auto Scaling group, got 'pcs'",
        ),
    ],
)
def test_invalid_fleets(scene, lt_kwargs, fleet_kwargs, message):
    lt = make_lt(scene, **lt_kwargs)
    with pytest.raises(FmValidationError, match=message):
        GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, **fleet_kwargs)


def test_operator_properties(scene):
    lt = make_lt(scene)
    fleet = GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, min_nodes=1, max_nodes=3, desired_nodes=2)
    resolve = scene.stack.resolve
    asg_id = next(iter(scene.template().find_resources("AWS::AutoScaling::AutoScalingGroup")))
    assert resolve(fleet.auto_scaling_group_name) == {"Ref": asg_id}
    assert resolve(fleet.launch_template_id) == resolve(lt.launch_template_id)
    assert resolve(fleet.launch_template_version) == resolve(lt.version_number)
    assert fleet.subnet_id == "subnet-0aaaaaaaaaaaaaaa1"
    assert fleet.connections is lt.connections
    assert "describe-auto-scaling-groups" in json.dumps(resolve(fleet.describe_command))
    assert (fleet.min_nodes, fleet.max_nodes, fleet.desired_nodes, fleet.total_gpus) == (1, 3, 2, 16)


def test_self_managed_fleet_can_take_its_set_up_from_an_s3_asset(scene):
    """Issue 11 §2: the self-managed backend uses the same node bootstrap; the group waits for the role's grants."""
    from aws_cdk import aws_iam as iam

    from fmconstructs.bootstrap import BootstrapDelivery

    role = iam.Role(scene.stack, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    profile = iam.InstanceProfile(scene.stack, "Profile", role=role)
    lt = make_lt(scene, instance_profile=profile, bootstrap_delivery=BootstrapDelivery.ASSET)
    assert lt.bootstrap.role is role  # default: the instance profile's role
    lt.add_user_data("echo set-up")
    GpuAutoScalingGroup(scene.stack, "Fleet", launch_template=lt, min_nodes=1, max_nodes=1)
    template = scene.template()
    (asg,) = template.find_resources("AWS::AutoScaling::AutoScalingGroup").values()
    assert any(dep.startswith("NodeRoleDefaultPolicy") for dep in asg["DependsOn"])
    (data,) = [
        r["Properties"]["LaunchTemplateData"] for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
    ]
    text = json.dumps(data["UserData"])
    assert "fmconstructs.bootstrap loader" in text and "echo set-up" not in text


def test_launch_templates_stay_inline_by_default(scene):
    lt = make_lt(scene)
    lt.add_user_data("echo set-up")
    (data,) = [
        r["Properties"]["LaunchTemplateData"]
        for r in scene.template().find_resources("AWS::EC2::LaunchTemplate").values()
    ]
    assert "echo set-up" in json.dumps(data["UserData"])
