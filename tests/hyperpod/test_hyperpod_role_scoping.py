"""The HyperPod execution role: network-interface changes only in the cluster's subnets and security groups (AWS's
least-privilege HyperPod EKS Terraform module), Describe on ``*``, and confused-deputy conditions on the SageMaker
trust (SageMaker Developer Guide "Cross-service confused deputy prevention")."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.iam import VPC_DESCRIBE_ACTIONS, VPC_ENI_ACTIONS

from tests.conftest import Scene, new_scene


def _groups() -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2),
    ]


@pytest.fixture(scope="module", params=["slurm", "eks"])
def built(request: pytest.FixtureRequest) -> tuple[Scene, Template, HyperPodCluster]:
    scene = new_scene(f"Scoping{request.param}")
    if request.param == "slurm":
        orchestrator = HyperPodOrchestrator.slurm(controller_group="controller")
        groups = _groups()
    else:
        orchestrator = HyperPodOrchestrator.eks(GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc))
        groups = _groups()[1:]
    cluster = HyperPodCluster(
        scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=groups, orchestrator=orchestrator
    )
    return scene, scene.template(), cluster


def _role(built: Any) -> dict[str, Any]:
    scene, template, cluster = built
    role_id = scene.stack.resolve(cluster.execution_role.node.default_child.logical_id)
    return dict(template.find_resources("AWS::IAM::Role")[role_id])


def _statements(built: Any) -> list[dict[str, Any]]:
    scene, template, cluster = built
    role_id = scene.stack.resolve(cluster.execution_role.node.default_child.logical_id)
    statements: list[dict[str, Any]] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def _arn(resource: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":ec2:us-east-1:123456789012:{resource}"]]}


def test_no_network_interface_action_on_star(built):
    for statement in _statements(built):
        if statement["Resource"] == "*":
            assert not set(_actions(statement)) & set(VPC_ENI_ACTIONS), statement


def test_interface_changes_scoped_to_the_clusters_subnets_and_security_groups(built):
    scene, _, cluster = built
    scoped = next(s for s in _statements(built) if s.get("Sid") == "HyperPodNetworkInterfaces")
    assert sorted(_actions(scoped)) == sorted(VPC_ENI_ACTIONS)
    resources = scoped["Resource"]
    assert _arn("subnet/subnet-0aaaaaaaaaaaaaaa1") in resources
    assert _arn("subnet/subnet-0bbbbbbbbbbbbbbb2") not in resources
    assert _arn("vpc/vpc-0123456789abcdef0") in resources
    assert _arn("network-interface/*") in resources
    group = scene.stack.resolve(cluster.efa_security_group.security_group_id)
    assert {
        "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ec2:us-east-1:123456789012:security-group/", group]]
    } in resources


def test_describe_actions_stay_on_star(built):
    describe = next(s for s in _statements(built) if s.get("Sid") == "HyperPodDescribeNetwork")
    assert sorted(_actions(describe)) == sorted(VPC_DESCRIBE_ACTIONS)
    assert describe["Resource"] == "*"


def test_trust_policy_has_confused_deputy_conditions(built):
    statements = _role(built)["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert len(statements) == 1
    trust = statements[0]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Condition"]["StringEqualsIfExists"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = trust["Condition"]["ArnLikeIfExists"]["aws:SourceArn"]
    assert source_arn == {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:", {"Ref": "AWS::Region"},
                                            ":", {"Ref": "AWS::AccountId"}, ":cluster/*"]]}  # fmt: skip
