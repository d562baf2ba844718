"""The VPC CNI's credentials: the ``vpc-cni`` add-on's ``aws-node`` service account gets a role of its own through EKS
Pod Identity, the node role no longer carries ``AmazonEKS_CNI_Policy``, and GPU nodes set the IMDS hop limit to 1 so
pods off the host network cannot reach the node role (EKS User Guide cni-iam-role, add-ons-iam, pod-id-role,
best-practices-security)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.cluster import NODE_ROLE_MANAGED_POLICIES
from fmconstructs.eks.node_group import EKS_IMDS_HOP_LIMIT
from fmconstructs.eks.vpc_cni import VPC_CNI_ADDON_NAME, VPC_CNI_MANAGED_POLICY, VPC_CNI_SERVICE_ACCOUNT

from tests.conftest import Scene, new_scene

ADDON = "AWS::EKS::Addon"


@pytest.fixture(scope="module")
def built() -> tuple[Scene, Template, GpuEksCluster]:
    scene = new_scene("CniRole")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", max_nodes=2)
    return scene, scene.template(), cluster


def _logical_id(scene: Scene, construct: Any) -> str:
    while construct.node.default_child is not None and not hasattr(construct, "logical_id"):
        construct = construct.node.default_child
    return str(scene.stack.resolve(construct.logical_id))


def _addon(template: Template, name: str) -> tuple[str, dict[str, Any]]:
    (item,) = [(k, r) for k, r in template.find_resources(ADDON).items() if r["Properties"]["AddonName"] == name]
    return item


def test_node_role_has_no_cni_policy(built):
    scene, template, cluster = built
    role = template.find_resources("AWS::IAM::Role")[_logical_id(scene, cluster.node_role)]
    managed = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "AmazonEKS_CNI_Policy" not in managed
    for policy in NODE_ROLE_MANAGED_POLICIES:
        assert policy in managed
    assert "AmazonEKS_CNI_Policy" not in NODE_ROLE_MANAGED_POLICIES


def test_vpc_cni_addon_associates_aws_node_with_its_role(built):
    scene, template, cluster = built
    _, addon = _addon(template, VPC_CNI_ADDON_NAME)
    role_id = _logical_id(scene, cluster.vpc_cni_role)
    assert addon["Properties"]["PodIdentityAssociations"] == [
        {"RoleArn": {"Fn::GetAtt": [role_id, "Arn"]}, "ServiceAccount": VPC_CNI_SERVICE_ACCOUNT}
    ]
    assert addon["Properties"]["ResolveConflicts"] == "OVERWRITE"
    assert "ServiceAccountRoleArn" not in addon["Properties"]


def test_cni_role_trusts_pod_identity_for_aws_node_only(built):
    scene, template, cluster = built
    role = template.find_resources("AWS::IAM::Role")[_logical_id(scene, cluster.vpc_cni_role)]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    tags = statement["Condition"]["StringEquals"]
    assert tags["aws:RequestTag/kubernetes-namespace"] == "kube-system"
    assert tags["aws:RequestTag/kubernetes-service-account"] == "aws-node"
    assert tags["aws:RequestTag/eks-cluster-arn"] == {"Fn::GetAtt": [_logical_id(scene, cluster.cluster), "Arn"]}
    assert VPC_CNI_MANAGED_POLICY in json.dumps(role["Properties"]["ManagedPolicyArns"])


def test_pod_identity_agent_once_and_before_the_cni(built):
    _, template, _ = built
    agent_id, _ = _addon(template, "eks-pod-identity-agent")
    _, cni = _addon(template, VPC_CNI_ADDON_NAME)
    assert agent_id in cni["DependsOn"]


def test_node_groups_wait_for_the_cni_addon(built):
    _, template, _ = built
    cni_id, _ = _addon(template, VPC_CNI_ADDON_NAME)
    nodegroups = template.find_resources("AWS::EKS::Nodegroup")
    assert len(nodegroups) == 2  # system + GPU
    for nodegroup in nodegroups.values():
        assert cni_id in nodegroup["DependsOn"]


def test_gpu_launch_template_hop_limit_1(built):
    _, template, _ = built
    assert EKS_IMDS_HOP_LIMIT == 1
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {"LaunchTemplateData": Match.object_like({"MetadataOptions": {
            "HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 1}})},
    )  # fmt: skip


def test_a_given_node_role_is_used_as_it_is():
    scene = new_scene("CniGivenRole")
    role = iam.Role.from_role_arn(scene.stack, "Nodes", "arn:aws:iam::123456789012:role/nodes")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, node_role=role)
    assert cluster.node_role is role
    template = scene.template()
    descriptions = [r["Properties"].get("Description") for r in template.find_resources("AWS::IAM::Role").values()]
    assert "EKS nodes of the fmconstructs GPU cluster" not in descriptions
    _, addon = _addon(template, VPC_CNI_ADDON_NAME)
    assert addon["Properties"]["PodIdentityAssociations"][0]["ServiceAccount"] == "aws-node"


def test_hop_limit_2_on_request_for_pod_network_imds_readers():
    scene = new_scene("CniHop2")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", max_nodes=1, imds_hop_limit=2)
    scene.template().has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {"MetadataOptions": Match.object_like({"HttpPutResponseHopLimit": 2})}
            )
        },
    )


@pytest.mark.parametrize("bad", [0, 65, 1.5, "1"])
def test_hop_limit_outside_ec2s_1_64_is_refused(bad):
    from fmconstructs.errors import FmTypeError, FmValidationError

    scene = new_scene("CniHopBad")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises((FmTypeError, FmValidationError), match="imds_hop_limit"):
        cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", max_nodes=1, imds_hop_limit=bad)


@pytest.mark.parametrize("legal", [3, 64])
def test_hop_limit_ec2_allows_above_2_is_accepted(legal):
    """EC2 HttpPutResponseHopLimit: integers from 1 to 64 (botocore ec2 model), so 3-64 are legal."""
    scene = new_scene(f"CniHop{legal}")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", max_nodes=1, imds_hop_limit=legal)
    Template.from_stack(scene.stack).has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {"MetadataOptions": Match.object_like({"HttpPutResponseHopLimit": legal})}
            )
        },
    )
