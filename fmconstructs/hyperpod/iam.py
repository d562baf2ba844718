"""What the HyperPod execution role needs with EKS orchestration, beyond the Slurm baseline.

HyperPod nodes run with the instance groups' execution role, and on an EKS cluster they also run the Amazon VPC CNI
plugin (pod IP addresses), pull images from Amazon ECR and serve EKS Pod Identity. AWS's HyperPod EKS IAM templates
grant these on top of ``AmazonSageMakerClusterInstanceRolePolicy``:

- awsome-distributed-training ``1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/
  sagemaker-iam-role-stack.yaml`` (commit 8bb4fb5, 2025-05-27): the managed policies
  ``AmazonSageMakerClusterInstanceRolePolicy`` and ``AmazonEKS_CNI_Policy``; ``ec2:AssignPrivateIpAddresses``,
  ``ec2:ModifyNetworkInterfaceAttribute``, ``ec2:UnassignPrivateIpAddresses`` beside the ENI actions every HyperPod
  role has; ``ecr:BatchCheckLayerAvailability``, ``ecr:BatchGetImage``, ``ecr:GetAuthorizationToken``,
  ``ecr:GetDownloadUrlForLayer``, ``eks-auth:AssumeRoleForPodIdentity`` and ``cloudwatch:DescribeAlarms`` on ``*``;
  ``ec2:CreateTags`` on ``arn:aws:ec2:*:*:network-interface/*``; S3 read of the lifecycle bucket.
- The same repository's least-privilege Terraform module ``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/
  hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf`` (commit 3ea4107, 2026-01-22), which replaces
  ``AmazonEKS_CNI_Policy`` with its CNI statements: ``ec2:AttachNetworkInterface`` on the Region's and account's
  ``instance/*`` and ``network-interface/*``; ``ec2:DescribeInstances``, ``DescribeTags``,
  ``DescribeNetworkInterfaces``, ``DescribeInstanceTypes``, ``DescribeSubnets`` on ``*``; ``ec2:CreateTags`` on
  ``network-interface/*``; the ENI actions (``AssignPrivateIpAddresses``, ``ModifyNetworkInterfaceAttribute``,
  ``UnassignPrivateIpAddresses``, ...) on ``instance/*``, ``network-interface/*`` and the cluster's VPC, subnets and
  security group; the four ECR actions and ``cloudwatch:DescribeAlarms`` on ``*``;
  ``eks-auth:AssumeRoleForPodIdentity`` on the EKS cluster's ARN.

This module follows the Terraform module (the same grants, scoped): the CNI statements instead of the managed
``AmazonEKS_CNI_Policy`` (which also grants IPv6 address actions, unused on an IPv4 cluster), the ENI actions the
CNI adds scoped to this Region's and account's instances and network interfaces and to the cluster's VPC, subnets and
security groups, ``eks-auth:AssumeRoleForPodIdentity`` on the one EKS cluster. ECR pulls stay on every repository
(the images come from AWS-owned registries such as HyperPod's and EKS's, in other accounts) and
``ecr:GetAuthorizationToken`` on ``*`` (it has no resource type). ``cloudwatch:DescribeAlarms`` is granted as both
templates do; neither says what on the node calls it (UNCONFIRMED purpose).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

#: The HyperPod VPC statements, every orchestrator (SageMaker Developer Guide "sagemaker-hyperpod-prerequisites-iam",
#: IAM role for SageMaker HyperPod, whose Amazon VPC statement grants these ten actions on ``*``, as AWS's own
#: templates do: awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/terraform-modules/hyperpod-slurm-tf/
#: modules/sagemaker_iam_role/main.tf, commit 877861d; the statement list UNCONFIRMED verbatim on the page itself,
#: whose IAM JSON was not readable here). fmconstructs scopes the actions that change network interfaces
#: (:data:`VPC_ENI_ACTIONS`) as AWS's least-privilege HyperPod EKS Terraform module does
#: (1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf,
#: commit 3ea4107, 2026-01-22: its ``sagemaker_execution_policy``, ``subnet_policy`` and ``sg_policy`` grant
#: ``ec2:CreateNetworkInterface``, ``CreateNetworkInterfacePermission``, ``DeleteNetworkInterface``,
#: ``DeleteNetworkInterfacePermission``, ``DetachNetworkInterface`` and the CNI's address actions on this Region's and
#: account's ``instance/*`` and ``network-interface/*``, the cluster's ``vpc/<id>``, each ``subnet/<id>`` and the
#: ``security-group/<id>``, with no conditions): an interface can then be created only in the cluster's subnets with
#: the cluster's security groups (EC2 authorizes ``CreateNetworkInterface`` on the interface, the subnet and each
#: security group). The Describe actions have no resource-level permissions and stay on ``*``.
VPC_ENI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
)
VPC_DESCRIBE_ACTIONS = (
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
#: The service that assumes the execution role.
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"

#: ENI actions the VPC CNI uses for pod IP addresses that the Slurm baseline (``cluster.VPC_ACTIONS``) lacks.
CNI_ENI_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:AttachNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
)
#: Describe actions of the CNI statements the Slurm baseline lacks (no resource-level permissions: ``*``).
CNI_DESCRIBE_ACTIONS = ("ec2:DescribeInstances", "ec2:DescribeInstanceTypes", "ec2:DescribeTags")
#: Image pulls from Amazon ECR.
ECR_PULL_ACTIONS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
ECR_TOKEN_ACTION = "ecr:GetAuthorizationToken"
#: EKS Pod Identity (the agent on the node exchanges the node's credentials for a pod's role).
POD_IDENTITY_ACTION = "eks-auth:AssumeRoleForPodIdentity"
#: Granted by both templates on ``*``; purpose not stated there.
DESCRIBE_ALARMS_ACTION = "cloudwatch:DescribeAlarms"


def network_resources(
    scope: Construct, *, vpc_id: str, subnet_ids: Sequence[str], security_group_ids: Sequence[str]
) -> list[str]:
    """This Region's and account's instances and network interfaces, the cluster's VPC, subnets and security groups
    (the resources of AWS's HyperPod EKS Terraform module, see :data:`VPC_ENI_ACTIONS`)."""
    stack = Stack.of(scope)

    def ec2_arn(resource: str, name: str) -> str:
        return stack.format_arn(
            service="ec2", resource=resource, resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
        )

    return [
        ec2_arn("instance", "*"),
        ec2_arn("network-interface", "*"),
        ec2_arn("vpc", vpc_id),
        *(ec2_arn("subnet", s) for s in subnet_ids),
        *(ec2_arn("security-group", g) for g in security_group_ids),
    ]


def vpc_statements(
    scope: Construct, *, vpc_id: str, subnet_ids: Sequence[str], security_group_ids: Sequence[str]
) -> list[iam.PolicyStatement]:
    """The execution role's VPC statements: interface changes scoped to the cluster's network, Describe on ``*``."""
    resources = network_resources(scope, vpc_id=vpc_id, subnet_ids=subnet_ids, security_group_ids=security_group_ids)
    return [
        iam.PolicyStatement(sid="HyperPodNetworkInterfaces", actions=list(VPC_ENI_ACTIONS), resources=resources),
        iam.PolicyStatement(sid="HyperPodDescribeNetwork", actions=list(VPC_DESCRIBE_ACTIONS), resources=["*"]),
    ]


def execution_role_principal() -> iam.ServicePrincipal:
    """``sagemaker.amazonaws.com`` with the confused-deputy conditions of the SageMaker Developer Guide
    "Cross-service confused deputy prevention" (security-confused-deputy-prevention: use ``aws:SourceArn`` and
    ``aws:SourceAccount``; the full ARN of the resource is most effective; when it is not known, a wildcard ARN).

    - ``aws:SourceAccount``: this stack's account.
    - ``aws:SourceArn``: ``arn:${Partition}:sagemaker:${Region}:${Account}:cluster/*``: the role exists before the
      cluster (the cluster names it), and a HyperPod cluster ARN ends in an id SageMaker generates
      (``cluster/[a-z0-9]{12}``, botocore sagemaker model ``ClusterArn``), not in its name, so the exact ARN cannot be
      written into the role; every HyperPod cluster of this account and Region matches.
    - Both as ``...IfExists`` operators: that page's per-feature examples (training, processing, inference, ...) do
      not list HyperPod, so whether SageMaker sends these keys when HyperPod nodes assume the execution role is
      UNCONFIRMED; a request that carries them must match, and a request without them is not locked out (a plain
      ``StringEquals`` on a missing key would deny every node its credentials).
    """
    return iam.ServicePrincipal(
        SAGEMAKER_PRINCIPAL,
        conditions={
            "StringEqualsIfExists": {"aws:SourceAccount": Aws.ACCOUNT_ID},
            "ArnLikeIfExists": {
                "aws:SourceArn": f"arn:{Aws.PARTITION}:sagemaker:{Aws.REGION}:{Aws.ACCOUNT_ID}:cluster/*"
            },
        },
    )


def eks_execution_role_statements(
    scope: Construct,
    *,
    eks_cluster_arn: str,
    vpc_id: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
) -> list[iam.PolicyStatement]:
    """The execution role's statements for EKS orchestration (see the module docstring for the sources)."""
    stack = Stack.of(scope)

    def ec2_arn(resource: str, name: str) -> str:
        return stack.format_arn(
            service="ec2", resource=resource, resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
        )

    eni_resources = network_resources(
        scope, vpc_id=vpc_id, subnet_ids=subnet_ids, security_group_ids=security_group_ids
    )
    return [
        iam.PolicyStatement(sid="VpcCniPodAddresses", actions=list(CNI_ENI_ACTIONS), resources=eni_resources),
        iam.PolicyStatement(sid="VpcCniDescribe", actions=list(CNI_DESCRIBE_ACTIONS), resources=["*"]),
        iam.PolicyStatement(
            sid="VpcCniTagInterfaces",
            actions=["ec2:CreateTags"],
            resources=[ec2_arn("network-interface", "*")],
        ),
        iam.PolicyStatement(
            sid="EcrPull",
            actions=list(ECR_PULL_ACTIONS),
            resources=[
                stack.format_arn(
                    service="ecr",
                    region="*",
                    account="*",
                    resource="repository",
                    resource_name="*",
                    arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                )
            ],
        ),
        iam.PolicyStatement(sid="EcrToken", actions=[ECR_TOKEN_ACTION], resources=["*"]),
        iam.PolicyStatement(sid="EksPodIdentity", actions=[POD_IDENTITY_ACTION], resources=[eks_cluster_arn]),
        iam.PolicyStatement(sid="DescribeAlarms", actions=[DESCRIBE_ALARMS_ACTION], resources=["*"]),
    ]
