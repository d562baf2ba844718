"""The HyperPod execution role with EKS orchestration grants what AWS's HyperPod EKS IAM templates grant beyond
AmazonSageMakerClusterInstanceRolePolicy: the VPC CNI's pod addresses, ECR pulls and EKS Pod Identity (scoped as the
least-privilege Terraform module does); Slurm clusters get none of it."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.iam import (
    CNI_DESCRIBE_ACTIONS,
    CNI_ENI_ACTIONS,
    DESCRIBE_ALARMS_ACTION,
    ECR_PULL_ACTIONS,
    ECR_TOKEN_ACTION,
    POD_IDENTITY_ACTION,
)

from tests.conftest import Scene, new_scene


def _statements(template: Template, role_id: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _by_sid(statements: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in statements if "Sid" in s}


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


@pytest.fixture(scope="module")
def eks_role() -> tuple[Scene, Template, GpuEksCluster, HyperPodCluster]:
    scene = new_scene("HyperPodIam")
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2)
    cluster = HyperPodCluster(
        scene.stack,
        "H",
        vpc=scene.vpc,
        subnets=[scene.subnet_a],
        instance_groups=[gpu],
        orchestrator=HyperPodOrchestrator.eks(eks_cluster),
    )
    return scene, scene.template(), eks_cluster, cluster


def _role_statements(eks_role: Any) -> dict[str, dict[str, Any]]:
    scene, template, _, cluster = eks_role
    role_id = scene.stack.resolve(cluster.execution_role.node.default_child.logical_id)
    return _by_sid(_statements(template, role_id))


def test_vpc_cni_eni_actions_scoped_to_instances_interfaces_and_the_clusters_network(eks_role):
    scene = eks_role[0]
    statement = _role_statements(eks_role)["VpcCniPodAddresses"]
    assert sorted(_actions(statement)) == sorted(CNI_ENI_ACTIONS)
    assert {"ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"} <= set(CNI_ENI_ACTIONS)
    resources = [scene.stack.resolve(r) for r in statement["Resource"]]
    rendered = str(resources)
    assert "instance/*" in rendered and "network-interface/*" in rendered
    assert "vpc/vpc-0123456789abcdef0" in rendered and "subnet/subnet-0aaaaaaaaaaaaaaa1" in rendered
    assert "subnet/subnet-0bbbbbbbbbbbbbbb2" not in rendered  # only the cluster's subnets
    assert "security-group/" in rendered
    assert "*" not in resources


def test_vpc_cni_describe_and_tagging(eks_role):
    statements = _role_statements(eks_role)
    assert sorted(_actions(statements["VpcCniDescribe"])) == sorted(CNI_DESCRIBE_ACTIONS)
    tag = statements["VpcCniTagInterfaces"]
    assert _actions(tag) == ["ec2:CreateTags"] and "network-interface/*" in str(tag["Resource"])


def test_ecr_pulls(eks_role):
    statements = _role_statements(eks_role)
    assert sorted(_actions(statements["EcrPull"])) == sorted(ECR_PULL_ACTIONS)
    assert "repository/*" in str(statements["EcrPull"]["Resource"])
    assert _actions(statements["EcrToken"]) == [ECR_TOKEN_ACTION] and statements["EcrToken"]["Resource"] == "*"


def test_pod_identity_on_the_eks_cluster_only(eks_role):
    scene, _, eks_cluster, _ = eks_role
    statement = _role_statements(eks_role)["EksPodIdentity"]
    assert _actions(statement) == [POD_IDENTITY_ACTION] == ["eks-auth:AssumeRoleForPodIdentity"]
    assert scene.stack.resolve(statement["Resource"]) == scene.stack.resolve(eks_cluster.cluster_arn)


def test_describe_alarms_as_the_templates_grant(eks_role):
    assert _actions(_role_statements(eks_role)["DescribeAlarms"]) == [DESCRIBE_ALARMS_ACTION]


def test_instance_role_policy_kept(eks_role):
    _, template, _, _ = eks_role
    roles = template.find_resources(
        "AWS::IAM::Role", {"Properties": {"Description": "SageMaker HyperPod instance groups"}}
    )
    (role,) = roles.values()
    assert "AmazonSageMakerClusterInstanceRolePolicy" in str(role["Properties"]["ManagedPolicyArns"])


def test_slurm_role_gets_none_of_the_eks_grants():
    scene = new_scene("HyperPodIamSlurm")
    groups = [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
    ]
    cluster = HyperPodCluster(
        scene.stack,
        "H",
        vpc=scene.vpc,
        instance_groups=groups,
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
    )
    role_id = scene.stack.resolve(cluster.execution_role.node.default_child.logical_id)
    actions = {a for s in _statements(scene.template(), role_id) for a in _actions(s)}
    assert POD_IDENTITY_ACTION not in actions and ECR_TOKEN_ACTION not in actions
    assert not set(CNI_ENI_ACTIONS) & actions
