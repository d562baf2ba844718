"""Shared parts of the HyperPod example stacks: outputs (the constructs acknowledge their own cdk-nag findings)."""

from __future__ import annotations

from aws_cdk import CfnOutput, Fn, Stack

from fmconstructs.hyperpod import HyperPodCluster


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
