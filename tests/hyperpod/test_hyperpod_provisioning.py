"""HyperPod on the current CreateCluster API (issue 24 section 3): continuous provisioning, managed autoscaling and
its ClusterRole, tiered checkpointing, and per group MinInstanceCount, Spot, Kubernetes labels and taints, scheduled
rolling AMI updates with alarm rollback, and ImageId; each rendered into AWS::SageMaker::Cluster, and bad input
refused with the parameter named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from constructs import Construct

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import (
    HyperPodAutoScaling,
    HyperPodCapacity,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodKubernetesConfig,
    HyperPodOrchestrator,
    HyperPodScheduledUpdate,
    KubernetesTaint,
    NodeProvisioningMode,
    NodeRecovery,
    TaintEffect,
    TieredCheckpointing,
    UpdateBatchSize,
)
from fmconstructs.hyperpod.instance_group_options import CapacityType

from tests.conftest import ENV, new_scene

CLUSTER = "AWS::SageMaker::Cluster"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/my-plan-abcdef"
WEEKLY = "cron(0 3 ? * SUN *)"


class FakeEks(Construct):
    """An EKS cluster as HyperPodOrchestrator.eks takes it (anything with ``cluster_arn``)."""

    cluster_arn = "arn:aws:eks:us-east-1:123456789012:cluster/training"


def _cluster(groups: list[HyperPodInstanceGroup], *, eks: bool = True, **kwargs: Any) -> tuple[HyperPodCluster, Any]:
    scene = new_scene()
    orchestrator = (
        HyperPodOrchestrator.eks(FakeEks(scene.stack, "Eks"))
        if eks
        else HyperPodOrchestrator.slurm(controller_group="controller")
    )
    if not eks:
        groups = [HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1), *groups]
    cluster = HyperPodCluster(
        scene.stack, "HyperPod", vpc=scene.vpc, instance_groups=groups, orchestrator=orchestrator, **kwargs
    )
    return cluster, scene


def _props(scene: Any) -> dict[str, Any]:
    resources = Template.from_stack(scene.stack).find_resources(CLUSTER)
    (resource,) = resources.values()
    return dict(resource["Properties"])


def _group(props: dict[str, Any], name: str = "gpu") -> dict[str, Any]:
    return next(g for g in props["InstanceGroups"] if g["InstanceGroupName"] == name)


def gpu(**kwargs: Any) -> HyperPodInstanceGroup:
    return HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=4, **kwargs)


ELASTIC = {
    "node_provisioning_mode": NodeProvisioningMode.CONTINUOUS,
    "auto_scaling": HyperPodAutoScaling.karpenter(),
}


# --- the Done-means stack: EKS, continuous provisioning, autoscaling, rolling updates; synthesized and linted ------


@pytest.fixture(scope="module")
def elastic_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fmconstructs.eks import GpuEksCluster

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "FmHyperPodElastic", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    eks_cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    alarm = cloudwatch.Alarm(
        stack,
        "NodeFailures",
        metric=cloudwatch.Metric(namespace="Training", metric_name="FailedNodes"),
        threshold=1,
        evaluation_periods=1,
    )
    HyperPodCluster(
        stack,
        "HyperPod",
        vpc=vpc,
        subnets=[vpc.private_subnets[0]],
        orchestrator=HyperPodOrchestrator.eks(eks_cluster),
        instance_groups=[
            HyperPodInstanceGroup(
                name="gpu",
                instance_type="p5en.48xlarge",
                nodes=4,
                min_nodes=2,
                kubernetes=HyperPodKubernetesConfig(
                    labels={"fmconstructs.io/pool": "training"},
                    taints=[KubernetesTaint("nvidia.com/gpu", TaintEffect.NO_SCHEDULE, "present")],
                ),
                scheduled_update=HyperPodScheduledUpdate(
                    WEEKLY,
                    batch_size=UpdateBatchSize.percent(25),
                    rollback_batch_size=UpdateBatchSize.instances(1),
                    wait_interval_seconds=600,
                    rollback_alarms=[alarm],
                ),
            ),
            HyperPodInstanceGroup(name="spot", instance_type="g6e.12xlarge", nodes=2, capacity=HyperPodCapacity.spot()),
        ],
        node_provisioning_mode=NodeProvisioningMode.CONTINUOUS,
        auto_scaling=HyperPodAutoScaling.karpenter(),
        tiered_checkpointing=TieredCheckpointing(instance_memory_percent=20),
    )
    app.synth()
    return outdir


def test_elastic_eks_cluster_passes_cfn_lint(elastic_assembly):
    from cfnlint.api import lint_file

    template_file = elastic_assembly / "FmHyperPodElastic.template.json"
    errors = [m for m in lint_file(template_file) if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []
    resources = json.loads(template_file.read_text())["Resources"]
    (props,) = [r["Properties"] for r in resources.values() if r["Type"] == CLUSTER]
    assert props["NodeProvisioningMode"] == "Continuous"
    assert props["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    rollback = _group(props)["ScheduledUpdateConfig"]["DeploymentConfig"]["AutoRollbackConfiguration"]
    # The alarm is wired by name: CloudFormation names it, so the name is a Ref to the alarm.
    (alarm_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert rollback == [{"AlarmName": {"Ref": alarm_id}}]


def test_elastic_eks_cluster_passes_cdk_nag(elastic_assembly, tmp_path):
    """The autoscaling role's cluster/* resource is acknowledged with its reason."""
    from cdk_nag import AwsSolutionsChecks

    from fmconstructs.eks import GpuEksCluster

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "Nag", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    HyperPodCluster(
        stack,
        "HyperPod",
        vpc=vpc,
        orchestrator=HyperPodOrchestrator.eks(GpuEksCluster(stack, "Cluster", vpc=vpc)),
        instance_groups=[gpu()],
        **ELASTIC,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # This bare stack's VPC flow log and bucket access logs are findings the examples answer: synthesis fails, and the
    # report is read for the autoscaling role alone.
    with pytest.raises(RuntimeError, match="AwsSolutions"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    violations = [v for r in report["pluginReports"] for v in r.get("violations", ())]
    assert violations, "cdk-nag ran"
    assert [v for v in violations if "AutoScalingRole" in json.dumps(v)] == []


# --- cluster-level rendering -----------------------------------------------------------------------------------------


def test_continuous_provisioning_alone():
    _, scene = _cluster([gpu()], node_provisioning_mode=NodeProvisioningMode.CONTINUOUS)
    props = _props(scene)
    assert props["NodeProvisioningMode"] == "Continuous"
    assert "AutoScaling" not in props and "ClusterRole" not in props


def test_continuous_provisioning_accepted_with_slurm():
    # AWS's MinCount announcement (2026-05-27) is for Slurm clusters with continuous provisioning.
    _, scene = _cluster([gpu(min_nodes=2)], eks=False, node_provisioning_mode=NodeProvisioningMode.CONTINUOUS)
    props = _props(scene)
    assert props["NodeProvisioningMode"] == "Continuous"
    assert _group(props)["MinInstanceCount"] == 2


def test_autoscaling_creates_a_cluster_role_hyperpod_assumes():
    cluster, scene = _cluster([gpu()], **ELASTIC)
    props = _props(scene)
    assert props["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    template = Template.from_stack(scene.stack)
    role_id = scene.stack.get_logical_id(cluster.autoscaling_role.node.default_child)
    assert props["ClusterRole"] == {"Fn::GetAtt": [role_id, "Arn"]}
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {"Statement": [Match.object_like({"Principal": {"Service": "hyperpod.sagemaker.amazonaws.com"}})]}
            )
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": role_id}],
            "PolicyDocument": Match.object_like(
                {
                    "Statement": [
                        Match.object_like(
                            {
                                "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
                                "Resource": {
                                    "Fn::Join": [
                                        "",
                                        [
                                            "arn:",
                                            {"Ref": "AWS::Partition"},
                                            ":sagemaker:us-east-1:123456789012:cluster/*",
                                        ],
                                    ]
                                },
                            }
                        )
                    ]
                }
            ),
        },
    )


def test_autoscaling_with_a_given_role_creates_none():
    scene = new_scene()
    role = iam.Role.from_role_arn(scene.stack, "Given", "arn:aws:iam::123456789012:role/hyperpod-autoscaling")
    cluster = HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=[gpu()],
        orchestrator=HyperPodOrchestrator.eks(FakeEks(scene.stack, "Eks")),
        node_provisioning_mode=NodeProvisioningMode.CONTINUOUS,
        auto_scaling=HyperPodAutoScaling.karpenter(cluster_role=role),
    )
    assert cluster.autoscaling_role is role
    assert _props(scene)["ClusterRole"] == "arn:aws:iam::123456789012:role/hyperpod-autoscaling"
    assert cluster.node.try_find_child("AutoScalingRole") is None


def test_autoscaling_disabled_renders_disable_without_role():
    cluster, scene = _cluster([gpu()], auto_scaling=HyperPodAutoScaling.disabled())
    props = _props(scene)
    assert props["AutoScaling"] == {"Mode": "Disable", "AutoScalerType": "Karpenter"}
    assert "ClusterRole" not in props and cluster.autoscaling_role is None


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (TieredCheckpointing(), {"Mode": "Enable"}),
        (TieredCheckpointing(instance_memory_percent=20), {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}),
        (TieredCheckpointing(enabled=False), {"Mode": "Disable"}),
    ],
)
def test_tiered_checkpointing(option, expected):
    _, scene = _cluster([gpu()], tiered_checkpointing=option)
    assert _props(scene)["TieredStorageConfig"] == expected


def test_defaults_render_none_of_the_new_properties():
    _, scene = _cluster([gpu()])
    props = _props(scene)
    for key in ("NodeProvisioningMode", "AutoScaling", "ClusterRole", "TieredStorageConfig"):
        assert key not in props
    group = _group(props)
    for key in ("MinInstanceCount", "CapacityRequirements", "KubernetesConfig", "ScheduledUpdateConfig", "ImageId"):
        assert key not in group


# --- per-group rendering ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        (HyperPodCapacity.spot(), {"Spot": {}}),
        (HyperPodCapacity(capacity_type=CapacityType.ON_DEMAND), {"OnDemand": {}}),
        (
            HyperPodCapacity(training_plan_arn=PLAN, capacity_type=CapacityType.ON_DEMAND),
            {"OnDemand": {}},
        ),
    ],
)
def test_capacity_requirements(capacity, expected):
    _, scene = _cluster([gpu(capacity=capacity)])
    assert _group(_props(scene))["CapacityRequirements"] == expected


def test_min_instance_count():
    _, scene = _cluster([gpu(min_nodes=3)])
    assert _group(_props(scene))["MinInstanceCount"] == 3


def test_kubernetes_labels_and_taints():
    config = HyperPodKubernetesConfig(
        labels={"team": "research", "fmconstructs.io/pool": "a"},
        taints=[
            KubernetesTaint("nvidia.com/gpu", TaintEffect.NO_SCHEDULE, "present"),
            KubernetesTaint("dedicated", TaintEffect.NO_EXECUTE),
        ],
    )
    _, scene = _cluster([gpu(kubernetes=config)])
    assert _group(_props(scene))["KubernetesConfig"] == {
        "Labels": {"team": "research", "fmconstructs.io/pool": "a"},
        "Taints": [
            {"Key": "nvidia.com/gpu", "Value": "present", "Effect": "NoSchedule"},
            {"Key": "dedicated", "Effect": "NoExecute"},
        ],
    }


def test_scheduled_update_schedule_only():
    _, scene = _cluster([gpu(scheduled_update=HyperPodScheduledUpdate(WEEKLY))])
    assert _group(_props(scene))["ScheduledUpdateConfig"] == {"ScheduleExpression": WEEKLY}


def test_scheduled_rolling_update_with_rollback_alarms_by_name():
    scene = new_scene()
    alarm = cloudwatch.Alarm.from_alarm_name(scene.stack, "Imported", "fsx-target-full")
    update = HyperPodScheduledUpdate(
        "cron(30 2 1 * ? *)",
        batch_size=UpdateBatchSize.instances(2),
        rollback_batch_size=UpdateBatchSize.percent(50),
        wait_interval_seconds=0,
        rollback_alarms=[alarm, "gpu-xid-errors"],
    )
    HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=[gpu(scheduled_update=update)],
        orchestrator=HyperPodOrchestrator.eks(FakeEks(scene.stack, "Eks")),
    )
    assert _group(_props(scene))["ScheduledUpdateConfig"] == {
        "ScheduleExpression": "cron(30 2 1 * ? *)",
        "DeploymentConfig": {
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
                "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 50},
            },
            "WaitIntervalInSeconds": 0,
            "AutoRollbackConfiguration": [{"AlarmName": "fsx-target-full"}, {"AlarmName": "gpu-xid-errors"}],
        },
    }


@pytest.mark.parametrize("image_id", ["ami-0123456789abcdef0", "default"])
def test_image_id(image_id):
    _, scene = _cluster([gpu(image_id=image_id)])
    assert _group(_props(scene))["ImageId"] == image_id


def test_image_id_token_from_ssm():
    scene = new_scene()
    ami = cdk.aws_ssm.StringParameter.value_for_string_parameter(scene.stack, "/hyperpod/ami")
    HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=[gpu(image_id=ami)],
        orchestrator=HyperPodOrchestrator.eks(FakeEks(scene.stack, "Eks")),
    )
    assert _group(_props(scene))["ImageId"]["Ref"].startswith("SsmParameterValuehyperpodami")


def test_token_counts_are_accepted():
    scene = new_scene()
    count = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    group = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=count, min_nodes=count)
    HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        instance_groups=[group],
        orchestrator=HyperPodOrchestrator.eks(FakeEks(scene.stack, "Eks")),
    )
    assert _group(_props(scene))["MinInstanceCount"] == {"Ref": "Nodes"}


# --- bad input --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "parameter"),
    [
        (lambda: gpu(min_nodes=5), "min_nodes"),
        (lambda: gpu(min_nodes=-1), "min_nodes"),
        (lambda: gpu(min_nodes="2"), "min_nodes"),
        (lambda: gpu(kubernetes={"labels": {}}), "kubernetes"),
        (lambda: gpu(scheduled_update=WEEKLY), "scheduled_update"),
        (lambda: gpu(image_id="ami-123"), "image_id"),
        (lambda: gpu(image_id="ubuntu"), "image_id"),
        (lambda: gpu(image_id=42), "image_id"),
        (lambda: HyperPodCapacity(training_plan_arn=PLAN, capacity_type=CapacityType.SPOT), "capacity_type"),
        (lambda: HyperPodCapacity(capacity_type="Spot"), "capacity_type"),
        (lambda: HyperPodKubernetesConfig(labels={"-bad": "x"}), "labels key"),
        (lambda: HyperPodKubernetesConfig(labels={"team": "a b"}), "labels['team']"),
        (lambda: HyperPodKubernetesConfig(labels={"team": ""}), "labels['team']"),
        (lambda: HyperPodKubernetesConfig(labels={f"k{i}": "v" for i in range(51)}), "labels"),
        (lambda: HyperPodKubernetesConfig(labels=["team=a"]), "labels"),
        (lambda: HyperPodKubernetesConfig(taints="nvidia.com/gpu:NoSchedule"), "taints"),
        (lambda: HyperPodKubernetesConfig(taints=[("k", "NoSchedule")]), "taints[0]"),
        (
            lambda: HyperPodKubernetesConfig(
                taints=[KubernetesTaint("k", TaintEffect.NO_SCHEDULE), KubernetesTaint("k", TaintEffect.NO_SCHEDULE)]
            ),
            "taints",
        ),
        (lambda: KubernetesTaint("k", "NoSchedule"), "effect"),
        (lambda: KubernetesTaint("has space", TaintEffect.NO_SCHEDULE), "key"),
        (lambda: KubernetesTaint("k", TaintEffect.NO_SCHEDULE, "x" * 64), "value"),
        (lambda: UpdateBatchSize.instances(0), "value"),
        (lambda: UpdateBatchSize.percent(101), "value"),
        (lambda: UpdateBatchSize("INSTANCE_COUNT", 1), "type"),
        (lambda: HyperPodScheduledUpdate("rate(7 days)"), "schedule_expression"),
        (lambda: HyperPodScheduledUpdate("cron(0 3 * * *)"), "schedule_expression"),
        (lambda: HyperPodScheduledUpdate("cron(0 24 ? * SUN *)"), "schedule_expression"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, batch_size=2), "batch_size"),
        (
            lambda: HyperPodScheduledUpdate(WEEKLY, rollback_batch_size=UpdateBatchSize.instances(1)),
            "rollback_batch_size",
        ),
        (lambda: HyperPodScheduledUpdate(WEEKLY, wait_interval_seconds=3601), "wait_interval_seconds"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms="alarm"), "rollback_alarms"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms=[f"a{i}" for i in range(11)]), "rollback_alarms"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms=["a", "a"]), "rollback_alarms"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms=["   "]), "rollback_alarms[0]"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms=["x" * 256]), "rollback_alarms[0]"),
        (lambda: HyperPodScheduledUpdate(WEEKLY, rollback_alarms=[7]), "rollback_alarms[0]"),
        (lambda: HyperPodAutoScaling(enabled="yes"), "enabled"),
        (lambda: HyperPodAutoScaling(auto_scaler_type="Karpenter"), "auto_scaler_type"),
        (lambda: HyperPodAutoScaling(cluster_role="arn:aws:iam::123456789012:role/x"), "cluster_role"),
        (lambda: TieredCheckpointing(instance_memory_percent=101), "instance_memory_percent"),
        (lambda: TieredCheckpointing(enabled=False, instance_memory_percent=10), "instance_memory_percent"),
        (lambda: TieredCheckpointing(enabled=1), "enabled"),
    ],
)
def test_bad_options_refused(build, parameter):
    with pytest.raises(FmValidationError) as raised:
        build()
    assert raised.value.parameter == parameter


def test_disabled_autoscaling_with_role_refused():
    scene = new_scene()
    role = iam.Role.from_role_arn(scene.stack, "R", "arn:aws:iam::123456789012:role/x")
    with pytest.raises(FmValidationError, match=r"cluster_role must be None when autoscaling is disabled"):
        HyperPodAutoScaling(enabled=False, cluster_role=role)


def test_gpu_node_image_refused_as_image_id():
    class GpuNodeImageLike:
        ssm_parameter_name = "/imagebuilder/fmconstructs/x"

    with pytest.raises(FmTypeError, match=r"image_id must be .*unencrypted"):
        gpu(image_id=GpuNodeImageLike())


@pytest.mark.parametrize(
    ("kwargs", "eks", "parameter", "message"),
    [
        (ELASTIC, False, "auto_scaling", r"for EKS clusters"),
        ({"auto_scaling": HyperPodAutoScaling.karpenter()}, True, "node_provisioning_mode", r"CONTINUOUS"),
        ({**ELASTIC, "node_recovery": NodeRecovery.NONE}, True, "node_recovery", r"AUTOMATIC"),
        ({"node_provisioning_mode": "Continuous"}, True, "node_provisioning_mode", r"NodeProvisioningMode"),
        ({"auto_scaling": "Karpenter"}, True, "auto_scaling", r"HyperPodAutoScaling"),
        ({"tiered_checkpointing": True}, True, "tiered_checkpointing", r"TieredCheckpointing"),
    ],
)
def test_cluster_cross_field_rules(kwargs, eks, parameter, message):
    with pytest.raises(FmValidationError, match=message) as raised:
        _cluster([gpu()], eks=eks, **kwargs)
    assert raised.value.parameter == parameter


def test_kubernetes_config_refused_with_slurm():
    config = HyperPodKubernetesConfig(labels={"team": "a"})
    with pytest.raises(FmValidationError, match=r"None with Slurm") as raised:
        _cluster([gpu(kubernetes=config)], eks=False)
    assert raised.value.parameter == "instance_groups[1].kubernetes"


def test_disabled_autoscaling_needs_no_continuous_provisioning():
    _, scene = _cluster([gpu()], eks=False, auto_scaling=HyperPodAutoScaling.disabled())
    assert _props(scene)["AutoScaling"]["Mode"] == "Disable"


# --- the FmHyperPodEks example --------------------------------------------------------------------------------------


def test_eks_example_uses_continuous_provisioning_and_autoscaling():
    from examples.hyperpod_eks_stack import HyperPodEksStack

    from tests.conftest import new_app

    stack = HyperPodEksStack(new_app(), "FmHyperPodEks", env=ENV)
    props = next(iter(Template.from_stack(stack).find_resources(CLUSTER).values()))["Properties"]
    assert props["NodeProvisioningMode"] == "Continuous"
    assert props["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    role_id = stack.get_logical_id(stack.cluster.autoscaling_role.node.default_child)
    assert props["ClusterRole"] == {"Fn::GetAtt": [role_id, "Arn"]}
