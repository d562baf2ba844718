"""TrainingPlatform on EKS with elastic GPU capacity (fmconstructs.platform.elastic): EksOptions(gpu_capacity=KARPENTER
or AUTO_MODE) renders one GPU NodePool of the platform's type, subnet and reservation instead of the fixed managed node
group, with its own Kueue ResourceFlavor (nodeLabels = the pool's node labels, quota = nodes x GPUs, no topology);
the choices that do not fit are refused."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.capacity import CapacityBlockScaling, CapacityReservation, UltraServerCapacityBlock
from fmconstructs.errors import WarningId
from fmconstructs.platform import EksGpuCapacity, EksOptions, PlatformStorage, TrainingPlatform
from fmconstructs.platform.elastic import ELASTIC_POOL_LABEL, ELASTIC_POOL_NAME

from tests.conftest import new_scene

BLOCK = "cr-0123456789abcdef0"
KARPENTER = EksGpuCapacity.KARPENTER
AUTO_MODE = EksGpuCapacity.AUTO_MODE


def _platform(gpu_capacity: EksGpuCapacity, **overrides: Any) -> tuple[TrainingPlatform, Template]:
    scene = new_scene()
    props: dict[str, Any] = {
        "vpc": scene.vpc,
        "instance_type": "p5.48xlarge",
        "nodes": 2,
        "capacity": CapacityBlock(reservation_id=BLOCK, instance_count=2),
        "orchestrator": EksOptions(gpu_capacity=gpu_capacity, gpu_addons=False),
        "health": None,
    }
    props.update(overrides)
    platform = TrainingPlatform(scene.stack, "Platform", **props)
    return platform, scene.template()


def _documents(template: Template) -> list[dict[str, Any]]:
    """Every Kubernetes document the stack applies (tokens as the text TOKEN)."""
    out: list[dict[str, Any]] = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, dict):
            body = "".join(p if isinstance(p, str) else "TOKEN" for p in body["Fn::Join"][1])
        out += json.loads(body)
    return out


def _kind(template: Template, kind: str) -> list[dict[str, Any]]:
    return [d for d in _documents(template) if d["kind"] == kind]


@pytest.fixture(scope="module", params=[KARPENTER, AUTO_MODE])
def elastic_block(request: pytest.FixtureRequest) -> tuple[EksGpuCapacity, TrainingPlatform, Template]:
    platform, template = _platform(request.param)
    return request.param, platform, template


def test_elastic_pool_replaces_the_gpu_node_group(elastic_block):
    _, platform, template = elastic_block
    assert platform.node_group is None and platform.elastic_pool is not None
    groups = template.find_resources("AWS::EKS::Nodegroup")
    assert [g["Properties"].get("CapacityType") for g in groups.values()] == [None]  # the system group only


def test_elastic_pool_launches_into_the_capacity_block(elastic_block):
    kind, _, template = elastic_block
    (pool,) = _kind(template, "NodePool")
    assert pool["metadata"]["name"] == ELASTIC_POOL_NAME
    requirements = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["node.kubernetes.io/instance-type"] == ["p5.48xlarge"]
    assert requirements["karpenter.sh/capacity-type"] == ["reserved"]
    assert requirements["karpenter.k8s.aws/capacity-reservation-type"] == ["capacity-block"]
    assert pool["spec"]["limits"] == {"nodes": "2"}
    node_class_kind = "NodeClass" if kind is AUTO_MODE else "EC2NodeClass"
    (node_class,) = _kind(template, node_class_kind)
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"id": BLOCK}]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == node_class_kind


def test_kueue_flavor_selects_the_pools_labels_without_topology(elastic_block):
    _, _, template = elastic_block
    (pool,) = _kind(template, "NodePool")
    (flavor,) = _kind(template, "ResourceFlavor")
    node_labels = flavor["spec"]["nodeLabels"]
    assert node_labels[ELASTIC_POOL_LABEL] == ELASTIC_POOL_NAME
    assert node_labels.items() <= pool["spec"]["template"]["metadata"]["labels"].items()
    assert "topologyName" not in flavor["spec"]
    assert flavor["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert _kind(template, "Topology") == []


def test_cluster_queue_quota_is_the_pools_gpus(elastic_block):
    _, _, template = elastic_block
    (queue,) = _kind(template, "ClusterQueue")
    (flavor,) = _kind(template, "ResourceFlavor")
    (group,) = queue["spec"]["resourceGroups"]
    (entry,) = group["flavors"]
    assert entry["name"] == flavor["metadata"]["name"]
    quotas = {r["name"]: r["nominalQuota"] for r in entry["resources"]}
    assert quotas == {"nvidia.com/gpu": 16, "vpc.amazonaws.com/efa": 64}


def test_auto_mode_platform_enables_auto_mode_compute():
    _, template = _platform(AUTO_MODE, capacity=None)
    template.has_resource_properties("AWS::EKS::Cluster", {"ComputeConfig": Match.object_like({"Enabled": True})})
    (pool,) = _kind(template, "NodePool")
    requirements = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand"]


def test_karpenter_platform_installs_karpenter():
    platform, _ = _platform(KARPENTER)
    assert platform.eks_cluster is not None and platform.eks_cluster.karpenter is not None
    assert platform.eks_cluster.auto_mode is False


def test_default_stays_a_managed_node_group():
    assert EksOptions().gpu_capacity is EksGpuCapacity.MANAGED_NODE_GROUP
    platform, template = _platform(EksGpuCapacity.MANAGED_NODE_GROUP)
    assert platform.elastic_pool is None and platform.node_group is not None
    assert _kind(template, "NodePool") == []
    (flavor,) = _kind(template, "ResourceFlavor")
    assert "topologyName" in flavor["spec"]


def test_file_system_on_an_elastic_pool_warns():
    platform, _ = _platform(KARPENTER, storage=PlatformStorage.of_capacity(storage_capacity_gib=4800))
    annotations = Annotations.from_stack(cdk.Stack.of(platform))
    annotations.has_warning("/Test/Platform", Match.string_like_regexp(WarningId.EKS_ELASTIC_POOL_LIMITS.qualified))


def test_deploy_time_node_count_renders_the_pool_and_warns_about_the_quota():
    scene = new_scene()
    stack = scene.stack
    vpc = scene.vpc
    nodes = cdk.CfnParameter(stack, "Nodes", type="Number").value_as_number
    TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=nodes,
        capacity=None,
        orchestrator=EksOptions(gpu_capacity=KARPENTER, gpu_addons=False),
        health=None,
    )
    template = Template.from_stack(stack)
    body = json.dumps(template.find_resources("Custom::AWSCDK-EKS-KubernetesResource"))
    assert '"Ref": "Nodes"' in body and "ResourceFlavor" not in body
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp(WarningId.EKS_SCHEDULING_QUOTA.qualified))


# --- refusals ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gpu_capacity", [KARPENTER, AUTO_MODE])
def test_gb200_ultraserver_block_is_refused(gpu_capacity):
    with pytest.raises(FmValidationError, match=r"orchestrator.gpu_capacity must be EksGpuCapacity.MANAGED_NODE_GROUP"):
        _platform(
            gpu_capacity,
            instance_type="p6e-gb200.36xlarge",
            nodes=18,
            capacity=UltraServerCapacityBlock(reservation_id=BLOCK, ultraserver_type="u-p6e-gb200x72"),
        )


@pytest.mark.parametrize("gpu_capacity", [KARPENTER, AUTO_MODE])
def test_gb200_on_demand_is_refused(gpu_capacity):
    with pytest.raises(FmValidationError, match=r"instance_type\[0\] must be .*(DRA|IMEX)"):
        _platform(gpu_capacity, instance_type="p6e-gb200.36xlarge", nodes=2, capacity=None)


@pytest.mark.parametrize("gpu_capacity", [KARPENTER, AUTO_MODE])
def test_on_block_events_scaling_is_refused(gpu_capacity):
    with pytest.raises(FmValidationError, match=r"orchestrator.capacity_block_scaling must be .*AT_DEPLOY"):
        _platform(
            gpu_capacity,
            orchestrator=EksOptions(
                gpu_capacity=gpu_capacity, capacity_block_scaling=CapacityBlockScaling.ON_BLOCK_EVENTS
            ),
        )


@pytest.mark.parametrize("gpu_capacity", [KARPENTER, AUTO_MODE])
def test_reservation_by_resource_group_is_refused(gpu_capacity):
    group = "arn:aws:resource-groups:us-east-1:123456789012:group/gpu-odcrs"
    with pytest.raises(
        FmValidationError, match=r"capacity must be On-Demand, or a reservation given by reservation_id"
    ):
        _platform(gpu_capacity, capacity=CapacityReservation(resource_group_arn=group, instance_count=2))


@pytest.mark.parametrize("value", ["karpenter", "auto-mode", None])
def test_gpu_capacity_must_be_the_enum(value):
    with pytest.raises(FmValidationError, match=r"gpu_capacity must be"):
        EksOptions(gpu_capacity=value)  # type: ignore[arg-type]


def test_odcr_by_id_is_a_default_reservation():
    _, template = _platform(KARPENTER, capacity=CapacityReservation(reservation_id=BLOCK, instance_count=2))
    (pool,) = _kind(template, "NodePool")
    requirements = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.k8s.aws/capacity-reservation-type"] == ["default"]


@pytest.mark.validation
@pytest.mark.parametrize("gpu_capacity", [KARPENTER, AUTO_MODE])
def test_elastic_platform_is_cdk_nag_and_cfn_lint_clean(tmp_path, gpu_capacity):
    from aws_cdk import aws_ec2 as ec2
    from cdk_nag import AwsSolutionsChecks
    from cfnlint.api import lint_file

    from tests.conftest import ENV

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=True)
    stack = cdk.Stack(app, "ElasticNag", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
        orchestrator=EksOptions(gpu_capacity=gpu_capacity),
        health=None,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(tmp_path / "ElasticNag.template.json") if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []
