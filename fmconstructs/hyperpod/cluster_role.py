"""A HyperPod cluster's execution role (the instance groups' role), split out of :mod:`fmconstructs.hyperpod.cluster`
(which re-exports :data:`INSTANCE_ROLE_MANAGED_POLICY`).

Sources: SageMaker Developer Guide "sagemaker-hyperpod-prerequisites-iam" (the managed policy) and
:mod:`fmconstructs.hyperpod.iam` (the VPC and EKS statements, with their sources).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aws_cdk import aws_iam as iam

from .cluster_lifecycle import LIFECYCLE_PREFIX
from .iam import eks_execution_role_statements, execution_role_principal, vpc_statements
from .orchestrator import OrchestratorKind

if TYPE_CHECKING:
    from .cluster import HyperPodCluster
    from .cluster_inputs import ClusterInputs

#: The managed policy HyperPod documents for the cluster instance (execution) role (SageMaker Developer Guide
#: "sagemaker-hyperpod-prerequisites-iam", IAM role for SageMaker HyperPod).
INSTANCE_ROLE_MANAGED_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"


def build_execution_role(cluster: HyperPodCluster, inputs: ClusterInputs, group_ids: Sequence[str]) -> iam.Role:
    """The execution role (least privilege: the documented managed policy, VPC ENI actions, lifecycle read; with EKS
    also the VPC CNI, ECR and Pod Identity grants of AWS's HyperPod EKS IAM templates)."""
    vpc, subnets, orchestrator = inputs.vpc, inputs.subnets, inputs.orchestrator
    role = iam.Role(
        cluster,
        "ExecutionRole",
        assumed_by=execution_role_principal(),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_MANAGED_POLICY)],
        description="SageMaker HyperPod instance groups",
    )
    # Interface changes only in the cluster's subnets and security groups (fmconstructs.hyperpod.iam).
    for statement in vpc_statements(
        cluster,
        vpc_id=vpc.vpc_id,
        subnet_ids=[s.subnet_id for s in subnets],
        security_group_ids=group_ids,
    ):
        role.add_to_policy(statement)
    if orchestrator.kind is OrchestratorKind.EKS:
        # The VPC CNI's pod addresses, ECR pulls and EKS Pod Identity, as AWS's HyperPod EKS IAM templates grant
        # (fmconstructs.hyperpod.iam, which cites them).
        for statement in eks_execution_role_statements(
            cluster,
            eks_cluster_arn=orchestrator.eks_cluster.cluster_arn,
            vpc_id=vpc.vpc_id,
            subnet_ids=[s.subnet_id for s in subnets],
            security_group_ids=group_ids,
        ):
            role.add_to_policy(statement)
    return role


def grant_execution_role(cluster: HyperPodCluster, inputs: ClusterInputs) -> None:
    """Remote write to the workspace, read on an S3 mirror of the collectors, and read on the lifecycle prefix."""
    role = cluster.execution_role
    if inputs.prometheus_workspace is not None:
        inputs.prometheus_workspace.grant_remote_write(role)
    if inputs.source is not None:
        inputs.source.grant_read(role)  # an S3 mirror: read on its prefix; the internet: nothing
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[cluster.lifecycle_bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}*")]
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[cluster.lifecycle_bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{LIFECYCLE_PREFIX}*"]}},
        )
    )
