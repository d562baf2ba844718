"""HyperPodEksAddons (HyperPod's optional EKS add-ons): synthesized add-ons, Pod Identity roles and associations,
ordering after the HyperPod cluster and the dependencies chart, invalid inputs, and cdk-nag + cfn-lint on the
FmHyperPodEks example stack with the add-ons added."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.eks_addons import (
    OBSERVABILITY_SERVICE_ACCOUNT,
    TRAINING_OPERATOR_NAMESPACE,
    TRAINING_OPERATOR_SERVICE_ACCOUNT,
    HyperPodAddonsWarning,
    HyperPodEksAddon,
    HyperPodEksAddons,
)
from fmconstructs.hyperpod.eks_dependencies import HyperPodDependenciesChart, HyperPodEksDependencies

from tests.conftest import ENV, Scene, new_scene
from tests.support.hyperpod_eks_dependencies import write_chart

ADDON = "AWS::EKS::Addon"
WORKSPACE = "arn:aws:aps:us-east-1:123456789012:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
ALL = [HyperPodEksAddon.TRAINING_OPERATOR, HyperPodEksAddon.TASK_GOVERNANCE, HyperPodEksAddon.OBSERVABILITY]


def hyperpod(scene: Scene, eks_cluster: GpuEksCluster, id: str = "HyperPod") -> HyperPodCluster:
    return HyperPodCluster(
        scene.stack,
        id,
        vpc=scene.vpc,
        subnets=[scene.subnet_a],
        orchestrator=HyperPodOrchestrator.eks(eks_cluster),
        instance_groups=[HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=2)],
    )


class World:
    def __init__(self, chart_dir: Path) -> None:
        self.scene = new_scene("HyperPodAddons")
        self.eks = GpuEksCluster(self.scene.stack, "Cluster", vpc=self.scene.vpc)
        self.eks.add_gpu_addons()
        self.hyperpod = hyperpod(self.scene, self.eks)
        self.deps = HyperPodEksDependencies(
            self.scene.stack, "Deps", cluster=self.eks, chart=HyperPodDependenciesChart.from_directory(str(chart_dir))
        )
        self.deps.add_dependent(self.hyperpod)
        self.addons = HyperPodEksAddons(
            self.scene.stack,
            "Addons",
            cluster=self.eks,
            addons=ALL,
            versions={HyperPodEksAddon.TASK_GOVERNANCE: "v1.6.0-eksbuild.1"},
            hyperpod_cluster=self.hyperpod,
            dependencies=self.deps,
            prometheus_workspace_arn=WORKSPACE,
            observability_configuration={"ampWorkspace": {"arn": WORKSPACE}},
        )
        self.template = Template.from_stack(self.scene.stack)
        self.resources: dict[str, Any] = self.template.to_json()["Resources"]

    def logical_id(self, construct: Any) -> str:
        while not isinstance(construct, cdk.CfnElement):
            construct = construct.node.default_child
        return str(self.scene.stack.get_logical_id(construct))

    def addon(self, name: str) -> tuple[str, dict[str, Any]]:
        (item,) = [
            (k, r) for k, r in self.resources.items() if r["Type"] == ADDON and r["Properties"]["AddonName"] == name
        ]
        return item


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(write_chart(tmp_path_factory.mktemp("hyperpod-cli")))


# --- synthesized add-ons ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
        "eks-pod-identity-agent",
        "cert-manager",
    ],
)
def test_each_addon_on_the_eks_cluster(world, name):
    _, addon = world.addon(name)
    assert addon["Properties"]["ClusterName"] == {"Ref": world.logical_id(world.eks.cluster)}


def test_hyperpod_addons_overwrite_conflicts_and_pin_only_given_versions(world):
    for addon in ALL:
        _, resource = world.addon(addon.value)
        assert resource["Properties"]["ResolveConflicts"] == "OVERWRITE"
    assert world.addon("amazon-sagemaker-hyperpod-taskgovernance")[1]["Properties"]["AddonVersion"] == (
        "v1.6.0-eksbuild.1"
    )
    assert "AddonVersion" not in world.addon("amazon-sagemaker-hyperpod-training-operator")[1]["Properties"]


def test_training_operator_pod_identity_association(world):
    world.template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {
            "ClusterName": {"Ref": world.logical_id(world.eks.cluster)},
            "Namespace": TRAINING_OPERATOR_NAMESPACE,
            "ServiceAccount": TRAINING_OPERATOR_SERVICE_ACCOUNT,
            "RoleArn": {
                "Fn::GetAtt": [world.logical_id(world.addons.roles[HyperPodEksAddon.TRAINING_OPERATOR]), "Arn"]
            },
        },
    )
    world.template.resource_count_is("AWS::EKS::PodIdentityAssociation", 1)


def test_observability_pod_identity_association_on_the_addon(world):
    _, addon = world.addon("amazon-sagemaker-hyperpod-observability")
    role_id = world.logical_id(world.addons.roles[HyperPodEksAddon.OBSERVABILITY])
    assert addon["Properties"]["PodIdentityAssociations"] == [
        {"RoleArn": {"Fn::GetAtt": [role_id, "Arn"]}, "ServiceAccount": OBSERVABILITY_SERVICE_ACCOUNT}
    ]
    assert json.loads(addon["Properties"]["ConfigurationValues"]) == {"ampWorkspace": {"arn": WORKSPACE}}


def test_task_governance_has_no_role(world):
    _, addon = world.addon("amazon-sagemaker-hyperpod-taskgovernance")
    assert "PodIdentityAssociations" not in addon["Properties"]
    assert "ServiceAccountRoleArn" not in addon["Properties"]
    assert world.addons.role(HyperPodEksAddon.TASK_GOVERNANCE) is None


# --- IAM scoping -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("addon", [HyperPodEksAddon.TRAINING_OPERATOR, HyperPodEksAddon.OBSERVABILITY])
def test_pod_identity_trust_is_scoped_to_the_cluster(world, addon):
    role = world.resources[world.logical_id(world.addons.roles[addon])]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:SourceArn": {"Fn::GetAtt": [world.logical_id(world.eks.cluster), "Arn"]},
            "aws:SourceAccount": "123456789012",
        }
    }


def test_training_operator_role_has_only_the_managed_policy(world):
    role = world.resources[world.logical_id(world.addons.roles[HyperPodEksAddon.TRAINING_OPERATOR])]
    arns = role["Properties"]["ManagedPolicyArns"]
    assert len(arns) == 1
    assert arns[0]["Fn::Join"][1][-1] == ":iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"
    role_id = world.logical_id(world.addons.roles[HyperPodEksAddon.TRAINING_OPERATOR])
    attached = [
        r
        for r in world.resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    assert attached == []


def test_observability_policy_writes_one_workspace_and_hyperpod_log_groups(world):
    role_id = world.logical_id(world.addons.roles[HyperPodEksAddon.OBSERVABILITY])
    (policy,) = [
        r
        for r in world.resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["PrometheusAccess"]["Action"] == "aps:RemoteWrite"
    assert statements["PrometheusAccess"]["Resource"] == WORKSPACE
    logs = statements["CloudwatchLogsAccess"]
    assert all(a.startswith("logs:") for a in logs["Action"])
    suffixes = [r["Fn::Join"][1][-1] for r in logs["Resource"]]
    assert suffixes == [
        ":logs:us-east-1:123456789012:log-group:/aws/sagemaker/Clusters/*",
        ":logs:us-east-1:123456789012:log-group:/aws/sagemaker/Clusters/*:log-stream:*",
    ]


# --- ordering --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("addon", ALL)
def test_addons_wait_for_hyperpod_cluster_chart_and_system_nodes(world, addon):
    _, resource = world.addon(addon.value)
    depends_on = set(resource["DependsOn"])
    assert world.logical_id(world.hyperpod.resource) in depends_on
    assert world.logical_id(world.deps.chart) in depends_on
    assert world.logical_id(world.eks.system_node_group) in depends_on


def test_training_operator_waits_for_its_prerequisites(world):
    _, resource = world.addon("amazon-sagemaker-hyperpod-training-operator")
    depends_on = set(resource["DependsOn"])
    for name in ("cert-manager", "eks-pod-identity-agent", "amazon-sagemaker-hyperpod-taskgovernance"):
        assert world.addon(name)[0] in depends_on
    association = world.addons.pod_identity_associations[HyperPodEksAddon.TRAINING_OPERATOR]
    assert world.logical_id(association) in depends_on


def test_observability_waits_for_the_agent_and_its_role_policy(world):
    _, resource = world.addon("amazon-sagemaker-hyperpod-observability")
    depends_on = set(resource["DependsOn"])
    assert world.addon("eks-pod-identity-agent")[0] in depends_on
    policy = world.addons.roles[HyperPodEksAddon.OBSERVABILITY].node.find_child("DefaultPolicy")
    assert world.logical_id(policy) in depends_on


def test_no_warning_with_a_hyperpod_cluster(world):
    Annotations.from_stack(world.scene.stack).has_no_warning(
        "*", Match.string_like_regexp(HyperPodAddonsWarning.WITHOUT_HYPERPOD_CLUSTER.value)
    )


# --- smaller selections ----------------------------------------------------------------------------------------------
def small(addons: list[HyperPodEksAddon], **kwargs: Any) -> tuple[Scene, HyperPodEksAddons]:
    scene = new_scene("Small")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    return scene, HyperPodEksAddons(scene.stack, "Addons", cluster=cluster, addons=addons, **kwargs)


def _names(scene: Scene) -> list[str]:
    """The add-ons besides the two every GpuEksCluster has (vpc-cni and the Pod Identity agent it uses)."""
    names = [r["Properties"]["AddonName"] for r in Template.from_stack(scene.stack).find_resources(ADDON).values()]
    return [n for n in names if n not in ("vpc-cni", "eks-pod-identity-agent")]


def test_task_governance_alone_creates_no_prerequisites():
    scene, _ = small([HyperPodEksAddon.TASK_GOVERNANCE])
    template = Template.from_stack(scene.stack)
    assert _names(scene) == ["amazon-sagemaker-hyperpod-taskgovernance"]
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 0)
    Annotations.from_stack(scene.stack).has_no_warning(
        "*", Match.string_like_regexp(HyperPodAddonsWarning.WITHOUT_HYPERPOD_CLUSTER.value)
    )


def test_prerequisite_addons_can_be_left_to_the_cluster():
    scene, addons = small(
        [HyperPodEksAddon.TRAINING_OPERATOR], install_pod_identity_agent=False, install_cert_manager=False
    )
    assert _names(scene) == ["amazon-sagemaker-hyperpod-training-operator"]
    assert addons.pod_identity_agent is None


def test_the_clusters_pod_identity_agent_is_reused_not_duplicated():
    scene, addons = small([HyperPodEksAddon.TRAINING_OPERATOR])
    names = [r["Properties"]["AddonName"] for r in Template.from_stack(scene.stack).find_resources(ADDON).values()]
    assert names.count("eks-pod-identity-agent") == 1
    agent = addons.cluster.cluster.eks_pod_identity_agent.node.default_child
    assert addons.pod_identity_agent is not None and addons.pod_identity_agent.node.path == agent.node.path


def test_training_operator_without_hyperpod_cluster_warns():
    scene, _ = small([HyperPodEksAddon.TRAINING_OPERATOR])
    Annotations.from_stack(scene.stack).has_warning(
        "/Small/Addons", Match.string_like_regexp("needs an existing HyperPod cluster")
    )


def test_workspace_token_accepted():
    scene, _ = small(
        [HyperPodEksAddon.OBSERVABILITY], prometheus_workspace_arn=cdk.Token.as_string(cdk.Fn.ref("Workspace"))
    )
    Template.from_stack(scene.stack).has_resource_properties(
        "AWS::IAM::Policy",
        {"PolicyDocument": {"Statement": Match.array_with([Match.object_like({"Resource": {"Ref": "Workspace"}})])}},
    )


# --- invalid inputs --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"addons": []}, FmValidationError, r"addons .* at least one"),
        ({"addons": "amazon-sagemaker-hyperpod-taskgovernance"}, FmTypeError, r"addons"),
        ({"addons": ["amazon-sagemaker-hyperpod-taskgovernance"]}, FmTypeError, r"addons\[0\]"),
        ({"addons": ["amazon-sagemaker-hyperpod-inference"]}, FmTypeError, r"addons\[0\]"),
        (
            {"addons": [HyperPodEksAddon.TASK_GOVERNANCE, HyperPodEksAddon.TASK_GOVERNANCE]},
            FmValidationError,
            r"each add-on once .*TASK_GOVERNANCE",
        ),
        ({"versions": {HyperPodEksAddon.TASK_GOVERNANCE: "1.6.0"}}, FmValidationError, r"v1\.6\.0-eksbuild\.1"),
        ({"versions": {HyperPodEksAddon.TASK_GOVERNANCE: " v1.6.0-eksbuild.1"}}, FmValidationError, r"versions"),
        ({"versions": {HyperPodEksAddon.OBSERVABILITY: "v1.0.4-eksbuild.1"}}, FmValidationError, r"add-on in addons"),
        ({"versions": {"amazon-sagemaker-hyperpod-taskgovernance": "v1.6.0-eksbuild.1"}}, FmTypeError, r"versions"),
        ({"versions": [("a", "b")]}, FmTypeError, r"versions"),
        (
            {
                "addons": [HyperPodEksAddon.TRAINING_OPERATOR, HyperPodEksAddon.TASK_GOVERNANCE],
                "versions": {HyperPodEksAddon.TASK_GOVERNANCE: "v1.2.9-eksbuild.1"},
            },
            FmValidationError,
            r"v1\.3\.0-eksbuild\.1 or later",
        ),
        ({"addons": [HyperPodEksAddon.OBSERVABILITY]}, FmValidationError, r"prometheus_workspace_arn"),
        (
            {"addons": [HyperPodEksAddon.OBSERVABILITY], "prometheus_workspace_arn": "ws-0123"},
            FmValidationError,
            r"prometheus_workspace_arn",
        ),
        ({"prometheus_workspace_arn": WORKSPACE}, FmValidationError, r"None without"),
        ({"observability_configuration": {"a": 1}}, FmValidationError, r"None without"),
        (
            {
                "addons": [HyperPodEksAddon.OBSERVABILITY],
                "prometheus_workspace_arn": WORKSPACE,
                "observability_configuration": "{}",
            },
            FmTypeError,
            r"observability_configuration",
        ),
        ({"install_cert_manager": "yes"}, FmTypeError, r"install_cert_manager"),
        ({"cluster": "my-cluster"}, FmTypeError, r"GpuEksCluster"),
        ({"hyperpod_cluster": "hp"}, FmTypeError, r"HyperPodCluster"),
        ({"dependencies": "chart"}, FmTypeError, r"HyperPodEksDependencies"),
    ],
)
def test_rejects_invalid_inputs(kwargs, error, message):
    scene = new_scene("Bad")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    props: dict[str, Any] = {"cluster": cluster, "addons": [HyperPodEksAddon.TASK_GOVERNANCE], **kwargs}
    with pytest.raises(error, match=message):
        HyperPodEksAddons(scene.stack, "Addons", **props)


def test_rejects_a_hyperpod_cluster_of_another_eks_cluster():
    scene = new_scene("Other")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    other = GpuEksCluster(scene.stack, "Other", vpc=scene.vpc, system_node_group=None)
    with pytest.raises(FmValidationError, match=r"hyperpod_cluster .* orchestrated by"):
        HyperPodEksAddons(
            scene.stack,
            "Addons",
            cluster=cluster,
            addons=[HyperPodEksAddon.TASK_GOVERNANCE],
            hyperpod_cluster=hyperpod(scene, other),
        )


# --- cdk-nag AwsSolutions and cfn-lint on the FmHyperPodEks example stack with every add-on -------------------------
# The add-ons acknowledge their own findings (training operator managed policy, observability log prefix).


@pytest.fixture(scope="module")
def nag_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cdk_nag import AwsSolutionsChecks

    from examples.hyperpod_eks_stack import HyperPodEksStack

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    stack = HyperPodEksStack(app, "FmHyperPodEksAddons", env=ENV, hyperpod_addons=())
    HyperPodEksAddons(
        stack,
        "HyperPodAddons",
        cluster=stack.eks,
        addons=ALL,
        hyperpod_cluster=stack.cluster,
        dependencies=stack.hyperpod_dependencies,
        prometheus_workspace_arn=WORKSPACE,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    return outdir


def test_example_with_addons_is_cdk_nag_and_cfn_lint_clean(nag_example):
    from cfnlint.api import lint_file

    report = json.loads((nag_example / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    template_file = nag_example / "FmHyperPodEksAddons.template.json"
    resources = json.loads(template_file.read_text())["Resources"]
    names = sorted(r["Properties"]["AddonName"] for r in resources.values() if r["Type"] == ADDON)
    assert {a.value for a in ALL} <= set(names)
    errors = [m for m in lint_file(template_file) if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []
