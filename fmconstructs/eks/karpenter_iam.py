"""The Karpenter controller's IAM policies, transcribed from upstream at the pinned version.

Source: aws/karpenter-provider-aws ``website/content/en/v1.14/getting-started/getting-started-with-karpenter/
cloudformation.yaml`` (commit 1d927085dd81a9df9301e613f371dac5b4d16bfe, "docs: update for patch release v1.14.1"; the
same file as ``website/content/en/docs/...`` at tag v1.14.1), the template Karpenter's "Getting Started" deploys and
its "CloudFormation" reference page (``reference/cloudformation.md``) explains. Its six ``AWS::IAM::ManagedPolicy``
resources (``KarpenterController<Name>-${ClusterName}``) are the dictionaries below, statement for statement; the only
change is that ``${KarpenterNodeRole.Arn}`` and ``${KarpenterInterruptionQueue.Arn}`` are named ``${NodeRoleArn}`` and
``${InterruptionQueueArn}`` (``Fn::Sub`` variables here: the node role and queue of this construct).

Least privilege as upstream scopes it: launch, tag and delete only resources tagged
``kubernetes.io/cluster/${ClusterName}: owned`` and ``karpenter.sh/nodepool``; instance profiles only with the
cluster, Region and ``karpenter.k8s.aws/ec2nodeclass`` tags; ``iam:PassRole`` only on the node role, only to EC2; the
SQS actions only on the interruption queue; Describe* calls only in the stack's Region. Upstream writes each document
as a JSON string under ``!Sub`` "because we use a StringEquals condition that uses an interpolated value in one of its
key parameters" (the cluster name is part of the condition key ``aws:ResourceTag/kubernetes.io/cluster/<name>``);
:func:`policy_document` does the same (``Fn::Sub`` of the JSON text), which also works when the cluster name is only
known at deploy time. tests/eks/test_eks_karpenter.py compares these dictionaries with the vendored upstream file
(tests/data/karpenter_crds/cloudformation.yaml).
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Fn

#: The ``Fn::Sub`` variables of :data:`CONTROLLER_POLICIES` besides the pseudo parameters (``AWS::Partition``,
#: ``AWS::Region``, ``AWS::AccountId``).
POLICY_VARIABLES = ("ClusterName", "NodeRoleArn", "InterruptionQueueArn")

#: What Karpenter launches: upstream lists these six resources, in this order, in both
#: ``AllowScopedEC2InstanceActionsWithTags`` and ``AllowScopedResourceCreationTagging``.
_LAUNCHED_RESOURCES = (
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:fleet/*",
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:volume/*",
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:network-interface/*",
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:spot-instances-request/*",
)

CONTROLLER_POLICIES: dict[str, dict[str, Any]] = {
    "NodeLifecyclePolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Effect": "Allow",
                "Resource": [
                    "arn:${AWS::Partition}:ec2:${AWS::Region}::image/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}::snapshot/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:security-group/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:subnet/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:capacity-reservation/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:placement-group/*",
                ],
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            },
            {
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Condition": {
                    "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Effect": "Allow",
                "Resource": list(_LAUNCHED_RESOURCES),
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                    },
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Effect": "Allow",
                "Resource": list(_LAUNCHED_RESOURCES),
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    },
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceTagging",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "${ClusterName}"},
                    "ForAllValues:StringEquals": {
                        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                    },
                },
            },
            {
                "Sid": "AllowScopedDeletion",
                "Effect": "Allow",
                "Resource": [
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
                ],
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Condition": {
                    "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
        ],
    },
    "IAMIntegrationPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowPassingInstanceRole",
                "Effect": "Allow",
                "Resource": "${NodeRoleArn}",
                "Action": "iam:PassRole",
                "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
            },
            {
                "Sid": "AllowScopedInstanceProfileCreationActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
                "Action": ["iam:CreateInstanceProfile"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                        "aws:RequestTag/topology.kubernetes.io/region": "${AWS::Region}",
                    },
                    "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileTagActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
                "Action": ["iam:TagInstanceProfile"],
                "Condition": {
                    "StringEquals": {
                        "aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:ResourceTag/topology.kubernetes.io/region": "${AWS::Region}",
                        "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                        "aws:RequestTag/topology.kubernetes.io/region": "${AWS::Region}",
                    },
                    "StringLike": {
                        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    },
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
                "Action": [
                    "iam:AddRoleToInstanceProfile",
                    "iam:RemoveRoleFromInstanceProfile",
                    "iam:DeleteInstanceProfile",
                ],
                "Condition": {
                    "StringEquals": {
                        "aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned",
                        "aws:ResourceTag/topology.kubernetes.io/region": "${AWS::Region}",
                    },
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
        ],
    },
    "EKSIntegrationPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}",
                "Action": "eks:DescribeCluster",
            }
        ],
    },
    "InterruptionPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowInterruptionQueueActions",
                "Effect": "Allow",
                "Resource": "${InterruptionQueueArn}",
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            }
        ],
    },
    "ZonalShiftPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowZonalShiftStatusReadOnly",
                "Effect": "Allow",
                "Resource": "*",
                "Action": ["arc-zonal-shift:GetManagedResource"],
                "Condition": {
                    "StringEquals": {
                        "arc-zonal-shift:ResourceIdentifier": (
                            "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}"
                        )
                    }
                },
            }
        ],
    },
    "ResourceDiscoveryPolicy": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowRegionalReadActions",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribePlacementGroups",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                "Condition": {"StringEquals": {"aws:RequestedRegion": "${AWS::Region}"}},
            },
            {
                "Sid": "AllowSSMReadActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/*",
                "Action": "ssm:GetParameter",
            },
            {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
            {
                "Sid": "AllowUnscopedInstanceProfileListAction",
                "Effect": "Allow",
                "Resource": "*",
                "Action": "iam:ListInstanceProfiles",
            },
            {
                "Sid": "AllowInstanceProfileReadActions",
                "Effect": "Allow",
                "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
                "Action": "iam:GetInstanceProfile",
            },
        ],
    },
}


def policy_document(name: str, *, cluster_name: str, node_role_arn: str, interruption_queue_arn: str) -> str:
    """``Fn::Sub`` of the JSON text of the upstream policy ``name`` (a key of :data:`CONTROLLER_POLICIES`), with this
    cluster's name, node role and queue; the value of an ``AWS::IAM::ManagedPolicy`` ``PolicyDocument`` (CloudFormation
    takes a JSON string there, as upstream's template does)."""
    text = json.dumps(CONTROLLER_POLICIES[name], separators=(",", ":"))
    variables = {
        "ClusterName": cluster_name,
        "NodeRoleArn": node_role_arn,
        "InterruptionQueueArn": interruption_queue_arn,
    }
    used = {key: value for key, value in variables.items() if "${" + key + "}" in text}
    return Fn.sub(text, used)
