"""cdk-nag acknowledgements of the EKS constructs (see :mod:`fmconstructs._nag`), each with its reason.

Most findings sit on aws-cdk-lib's own resources inside ``aws_eks_v2.Cluster`` (its cluster role and its kubectl
provider), which the L2 creates and does not let a caller configure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from constructs import IConstruct

from .. import _nag

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

_LAMBDA_MANAGED = "aws-cdk-lib's kubectl provider (aws_eks_v2) attaches the AWS managed Lambda execution policies"
_NODE_POLICIES = "EKS nodes need the AWS managed node policies (EKS User Guide create-node-role)"
_NODE_ROLE_REASONS = {
    "AmazonEKSWorkerNodePolicy": f"{_NODE_POLICIES}: kubelet registration and node describe calls",
    "AmazonEC2ContainerRegistryPullOnly": f"{_NODE_POLICIES}: image pulls from ECR (pull only, the narrowest one)",
}
_CNI_ROLE_REASON = (
    "the VPC CNI's own role (EKS Pod Identity for aws-node, not the node role): AmazonEKS_CNI_Policy is the policy the "
    "EKS User Guide names for it (cni-iam-role); it attaches network interfaces and IP addresses for pods"
)


def acknowledge_cluster(cluster: GpuEksCluster, *, own_node_role: bool) -> None:
    """The cluster role, the kubectl provider and (when this construct made it) the node role."""
    _nag.acknowledge(
        cluster.cluster,
        _nag.aws_managed_policy_finding("AmazonEKSClusterPolicy"),
        "the EKS cluster role needs AmazonEKSClusterPolicy (EKS User Guide cluster-iam-role); aws_eks_v2.Cluster "
        "creates that role and attaches it",
    )
    if own_node_role:
        for policy, reason in _NODE_ROLE_REASONS.items():
            _nag.acknowledge(cluster.node_role, _nag.aws_managed_policy_finding(policy), reason)
    _nag.acknowledge(cluster.vpc_cni_role, _nag.aws_managed_policy_finding("AmazonEKS_CNI_Policy"), _CNI_ROLE_REASON)
    kubectl = cluster.cluster.node.try_find_child("KubectlProvider")
    if kubectl is not None:
        _acknowledge_kubectl_provider(kubectl)


def _acknowledge_kubectl_provider(kubectl: IConstruct) -> None:
    handler = kubectl.node.find_child("Handler")
    function = handler.node.default_child
    has_ecr_public = handler.node.try_find_child("HasEcrPublic")
    findings = {
        _nag.aws_managed_policy_finding("service-role/AWSLambdaBasicExecutionRole"): (
            f"{_LAMBDA_MANAGED} (CloudWatch Logs only); the role is created inside the L2 and not configurable"
        ),
        _nag.aws_managed_policy_finding("service-role/AWSLambdaVPCAccessExecutionRole"): (
            f"{_LAMBDA_MANAGED}: the handler runs in the private subnets to reach the private API endpoint"
        ),
        _nag.aws_managed_policy_finding("AmazonEC2ContainerRegistryReadOnly"): (
            "aws-cdk-lib's kubectl handler pulls OCI Helm charts from ECR; read-only registry access is its fixed "
            "policy"
        ),
        _nag.L1: (
            "the kubectl handler's runtime is pinned by aws-cdk-lib to match its kubectl/helm layer; upgrading "
            "aws-cdk-lib moves it"
        ),
    }
    if isinstance(function, cdk.CfnElement):
        logical_id = cdk.Stack.of(kubectl).resolve(function.logical_id)
        findings[f"{_nag.IAM5}[Resource::<{logical_id}.Arn>:*]"] = (
            "the custom-resource provider framework invokes the kubectl handler and its versions (ARN:*); the "
            "resource is that one function, not a wildcard over functions"
        )
    if isinstance(has_ecr_public, cdk.CfnElement):
        condition = cdk.Stack.of(kubectl).resolve(has_ecr_public.logical_id)
        ecr_public = (
            f'{{"Fn::If":["{condition}",{{"Fn::Join":["",["arn:",{{"Ref":"AWS::Partition"}},'
            '":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}'
        )
        findings[f"{_nag.IAM4}[Policy::{ecr_public}]"] = (
            "aws-cdk-lib's kubectl handler: ECR Public read-only, only in partitions that have ECR Public"
        )
    for finding, reason in findings.items():
        _nag.acknowledge(kubectl, finding, reason)
