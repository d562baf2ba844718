"""cdk-nag acknowledgements of the HyperPod constructs (see :mod:`fmconstructs._nag`), each with its reason."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import _nag

if TYPE_CHECKING:
    from .cluster import HyperPodCluster
    from .eks_addons import HyperPodEksAddons
    from .eks_dependencies import HyperPodEksDependencies

_MANAGED_POLICY_REASON = (
    "AmazonSageMakerClusterInstanceRolePolicy is the policy SageMaker HyperPod documents for the cluster instance role "
    "(sagemaker-hyperpod-prerequisites-iam); a hand-copied policy would drift from what the HyperPod agents need"
)
_VPC_ACTIONS_REASON = (
    "HyperPod describes the VPC, subnets, security groups and network interfaces: EC2 Describe* actions take no "
    "resource scoping (sagemaker-hyperpod-prerequisites-iam)"
)
_LIFECYCLE_READ_REASON = (
    "read only (s3:GetObject), on the lifecycle/ prefix of this cluster's own lifecycle bucket: HyperPod downloads "
    "every object under LifeCycleConfig.SourceS3Uri, whose keys are the uploaded scripts"
)
_DEPLOYMENT_REASON = (
    "aws-cdk-lib BucketDeployment (the lifecycle scripts upload): its singleton Lambda handler uses "
    "AWSLambdaBasicExecutionRole, reads the CDK asset bucket and writes the destination bucket with aws-cdk-lib's "
    "fixed wildcard object actions; its runtime is chosen by aws-cdk-lib"
)
_TRAINING_OPERATOR_REASON = (
    "the SageMaker Developer Guide (sagemaker-eks-operator-install) asks for the AWS managed policy "
    "AmazonSageMakerHyperPodTrainingOperatorAccess on the training operator's Pod Identity role"
)
_OBSERVABILITY_LOGS_REASON = (
    "the HyperPod observability add-on writes log groups and streams under /aws/sagemaker/Clusters/ whose names "
    "HyperPod chooses per cluster (SageMaker Developer Guide hyperpod-observability-addon-troubleshooting role policy)"
)
# The default synthesizer's file asset bucket, "cdk-${Qualifier}-assets-${AWS::AccountId}-${AWS::Region}"
# (aws-cdk-lib DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME), as cdk-nag flattens its object ARN.
_ASSET_BUCKET_OBJECTS = re.compile(r"arn:<AWS::Partition>:s3:::cdk-[a-z0-9]+-assets-[^/]+/\*")
_LOG_GROUP_PREFIX = re.compile(r"arn:.*:log-group:/aws/sagemaker/Clusters/\*(:log-stream:\*)?")
_DEPLOYMENT_ACTIONS = ("GetObject", "GetBucket", "List", "DeleteObject", "Abort")
_ENI_REASON = (
    "HyperPod creates, detaches and deletes its nodes' network interfaces, whose ids are not known in advance, in this "
    "Region and account (creation limited to the cluster's subnets and security groups); on EKS the nodes' VPC CNI "
    "also assigns pod addresses and tags those interfaces with this role (AWS's HyperPod EKS IAM template, "
    "awsome-distributed-training sagemaker_iam_role/main.tf; fmconstructs.hyperpod.iam)"
)
_EKS_ECR_REASON = (
    "HyperPod nodes on EKS pull images from ECR registries of AWS accounts (HyperPod's and EKS's add-on images) and of "
    "yours: any repository, read-only pull actions, as AWS's HyperPod EKS IAM template grants "
    "(fmconstructs.hyperpod.iam)"
)
_AUTOSCALING_REASON = (
    "HyperPod's autoscaling ClusterRole adds and deletes nodes of this account's and Region's HyperPod clusters, as "
    "the SageMaker Developer Guide's autoscaling role policy grants (sagemaker-hyperpod-eks-autoscaling-iam: "
    "cluster/*); the cluster's own ARN cannot be named because the role is an input of the cluster"
)
_AUTOSCALING_CLUSTERS = re.compile(
    r"arn:<AWS::Partition>:sagemaker:(<AWS::Region>|[a-z0-9-]+):(<AWS::AccountId>|[0-9]{12}):cluster/\*"
)
_EKS_CNI_RESOURCES = re.compile(r"arn:<AWS::Partition>:ec2:.+:(instance|network-interface)/\*")
_ECR_REPOSITORIES = re.compile(r"arn:<AWS::Partition>:ecr:\*:\*:repository/\*")


def acknowledge_cluster(cluster: HyperPodCluster) -> None:
    """The execution role, and the lifecycle upload's aws-cdk-lib BucketDeployment handler."""
    role = cluster.execution_role
    _nag.acknowledge(
        role, _nag.aws_managed_policy_finding("AmazonSageMakerClusterInstanceRolePolicy"), _MANAGED_POLICY_REASON
    )
    _nag.acknowledge(role, f"{_nag.IAM5}[Resource::*]", _VPC_ACTIONS_REASON)
    from .cluster import LIFECYCLE_PREFIX

    lifecycle_objects = cluster.lifecycle_bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}*")
    _nag.acknowledge(role, _nag.iam5_resource(cluster, lifecycle_objects), _LIFECYCLE_READ_REASON)
    role_policy = role.node.try_find_child("DefaultPolicy")
    if (
        role_policy is not None
    ):  # the network-interface statements, and on EKS the ECR pulls (fmconstructs.hyperpod.iam)
        _nag.acknowledge_all(role, _nag.wildcard_resource_findings(role_policy, _EKS_CNI_RESOURCES), _ENI_REASON)
        _nag.acknowledge_all(role, _nag.wildcard_resource_findings(role_policy, _ECR_REPOSITORIES), _EKS_ECR_REASON)

    scaling_role = cluster.autoscaling_role
    scaling_policy = scaling_role.node.try_find_child("DefaultPolicy") if scaling_role is not None else None
    if scaling_role is not None and scaling_policy is not None and scaling_role.node.scope is cluster:
        findings = _nag.wildcard_resource_findings(scaling_policy, _AUTOSCALING_CLUSTERS)
        _nag.acknowledge_all(scaling_role, findings, _AUTOSCALING_REASON)

    handler_role = cluster.lifecycle_deployment.handler_role
    handler = handler_role.node.scope
    if handler is None:
        return
    findings = [
        _nag.aws_managed_policy_finding("service-role/AWSLambdaBasicExecutionRole"),
        _nag.L1,
        *(_nag.iam5_action(f"s3:{action}*") for action in _DEPLOYMENT_ACTIONS),
        _nag.iam5_resource(cluster, cluster.lifecycle_bucket.arn_for_objects("*")),
    ]
    policy = handler_role.node.try_find_child("DefaultPolicy")
    if policy is not None:
        findings += _nag.wildcard_resource_findings(policy, _ASSET_BUCKET_OBJECTS)
    _nag.acknowledge_all(handler, findings, _DEPLOYMENT_REASON)


def acknowledge_dependencies(dependencies: HyperPodEksDependencies) -> None:
    """The dependencies chart, when it is installed from a CDK asset."""
    if dependencies.chart_asset is not None:
        _nag.acknowledge_chart_asset(dependencies.cluster.cluster, dependencies.chart_asset)


def acknowledge_addons(addons: HyperPodEksAddons) -> None:
    """The add-ons' Pod Identity roles."""
    from .eks_addons import HyperPodEksAddon

    operator = addons.roles.get(HyperPodEksAddon.TRAINING_OPERATOR)
    if operator is not None:
        finding = _nag.aws_managed_policy_finding("AmazonSageMakerHyperPodTrainingOperatorAccess")
        _nag.acknowledge(operator, finding, _TRAINING_OPERATOR_REASON)
    observability = addons.roles.get(HyperPodEksAddon.OBSERVABILITY)
    policy = observability.node.try_find_child("DefaultPolicy") if observability is not None else None
    if observability is not None and policy is not None:
        findings = _nag.wildcard_resource_findings(policy, _LOG_GROUP_PREFIX)
        _nag.acknowledge_all(observability, findings, _OBSERVABILITY_LOGS_REASON)
