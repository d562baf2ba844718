"""Shared parts of the HyperPod example stacks: cdk-nag acknowledgements with reasons, and outputs."""

from __future__ import annotations

from aws_cdk import CfnOutput, Fn, Stack, Token

from fmconstructs.hyperpod import INSTANCE_ROLE_MANAGED_POLICY, HyperPodCluster, OrchestratorKind

from .lint import acknowledge_nag

_MANAGED_POLICY_REASON = (
    f"{INSTANCE_ROLE_MANAGED_POLICY} is the policy SageMaker HyperPod documents for the cluster instance role "
    "(sagemaker-hyperpod-prerequisites-iam); a hand-copied policy would drift from what the HyperPod agents need"
)
_VPC_ACTIONS_REASON = (
    "HyperPod describes the VPC, subnets, security groups and network interfaces: EC2 Describe* actions take no "
    "resource scoping (sagemaker-hyperpod-prerequisites-iam)"
)
_ENI_REASON = (
    "HyperPod creates, detaches and deletes its nodes' network interfaces, whose ids are not known in advance, in this "
    "Region and account; creation is limited to the cluster's subnets and security groups (fmconstructs.hyperpod.iam, "
    "as AWS's HyperPod EKS Terraform module scopes them)"
)
_LIFECYCLE_READ_REASON = (
    "Read only, on the lifecycle prefix of this cluster's own lifecycle bucket: HyperPod downloads every object under "
    "LifeCycleConfig.SourceS3Uri"
)
_EKS_CNI_REASON = (
    "HyperPod nodes on EKS run the VPC CNI with the execution role: it assigns pod addresses and tags the network "
    "interfaces of instances HyperPod launches, whose ids are not known in advance; scoped to this Region's and "
    "account's instances and network interfaces as AWS's HyperPod EKS IAM template does (awsome-distributed-training "
    "7.sagemaker-hyperpod-eks sagemaker_iam_role/main.tf; fmconstructs.hyperpod.iam)"
)
_EKS_ECR_REASON = (
    "HyperPod nodes on EKS pull images from ECR registries of AWS accounts (HyperPod's and EKS's add-on images) and of "
    "yours: any repository, read-only pull actions, as AWS's HyperPod EKS IAM template grants "
    "(fmconstructs.hyperpod.iam)"
)
_DEPLOYMENT_REASON = (
    "aws-cdk-lib BucketDeployment (the lifecycle scripts upload): its Lambda role uses AWSLambdaBasicExecutionRole and "
    "reads the CDK asset bucket / writes the lifecycle bucket with wildcard object actions; its runtime is chosen by "
    "aws-cdk-lib"
)


def acknowledge_cluster(stack: Stack, cluster: HyperPodCluster) -> None:
    acknowledge_nag(
        cluster.execution_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy]",
        _MANAGED_POLICY_REASON,
    )
    acknowledge_nag(cluster.execution_role, "AwsSolutions-IAM5[Resource::*]", _VPC_ACTIONS_REASON)
    bucket_id = stack.resolve(cluster.lifecycle_bucket.node.default_child.logical_id)  # type: ignore[union-attr]
    acknowledge_nag(
        cluster.execution_role, f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/lifecycle/*]", _LIFECYCLE_READ_REASON
    )
    account = stack.account if not Token.is_unresolved(stack.account) else "<AWS::AccountId>"
    region = stack.region if not Token.is_unresolved(stack.region) else "<AWS::Region>"
    eks = cluster.orchestrator.kind is OrchestratorKind.EKS
    for resource in ("instance/*", "network-interface/*"):
        acknowledge_nag(
            cluster.execution_role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:{region}:{account}:{resource}]",
            f"{_ENI_REASON}; {_EKS_CNI_REASON}" if eks else _ENI_REASON,
        )
    if eks:
        acknowledge_nag(
            cluster.execution_role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecr:*:*:repository/*]",
            _EKS_ECR_REASON,
        )
    findings = [
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        *(f"AwsSolutions-IAM5[Action::s3:{a}*]" for a in ("GetObject", "GetBucket", "List", "DeleteObject", "Abort")),
        f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
        f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-{account}-{region}/*]",
        "AwsSolutions-L1",
    ]
    for child in stack.node.children:
        if child.node.id.startswith("Custom::CDKBucketDeployment"):
            for finding in findings:
                acknowledge_nag(child, finding, _DEPLOYMENT_REASON)


def outputs(stack: Stack, cluster: HyperPodCluster) -> None:
    outputs = {
        "HyperPodClusterArn": (cluster.cluster_arn, "SageMaker HyperPod cluster ARN"),
        "HyperPodClusterName": (cluster.cluster_name, "aws sagemaker describe-cluster --cluster-name <name>"),
        "LifecycleS3Uri": (cluster.lifecycle_s3_uri, "Lifecycle scripts (API-driven Slurm: one prefix per group)"),
        "ExecutionRoleArn": (cluster.execution_role.role_arn, "The instance groups' execution role"),
        "ClusterHealthCommand": (
            Fn.join("", ["aws sagemaker list-cluster-nodes --cluster-name ", cluster.cluster_name]),
            "Node status per instance group (or fmconstructs.hyperpod.describe_cluster_health)",
        ),
    }
    for name, (value, description) in outputs.items():
        CfnOutput(stack, name, value=value, description=description)
