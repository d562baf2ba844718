"""An IAM role for one Kubernetes service account through EKS Pod Identity (the house pattern of
:mod:`fmconstructs.eks.vpc_cni`): a role trusted by ``pods.eks.amazonaws.com`` (``sts:AssumeRole``, ``sts:TagSession``;
EKS User Guide "pod-id-role"), restricted by the session tags Pod Identity adds (cluster ARN, namespace, service
account; EKS User Guide "pod-id-abac"), and the ``AWS::EKS::PodIdentityAssociation`` that binds it to the account.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IDependable

from ..eks import GpuEksCluster
from ..eks.vpc_cni import POD_IDENTITY_PRINCIPAL


def pod_identity_role(
    scope: Construct, id: str, *, cluster: GpuEksCluster, namespace: str, service_account: str, description: str
) -> tuple[iam.Role, eks.CfnPodIdentityAssociation, list[IDependable]]:
    """The role ``<id>Role`` and the association ``<id>PodIdentity`` of ``namespace/service_account``; returns them
    and what the workload must wait for (the association and the cluster's Pod Identity agent add-on)."""
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal(
            POD_IDENTITY_PRINCIPAL,
            conditions={
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-arn": cluster.cluster_arn,
                    "aws:RequestTag/kubernetes-namespace": namespace,
                    "aws:RequestTag/kubernetes-service-account": service_account,
                }
            },
        ).with_session_tags(),
        description=description,
    )
    association = eks.CfnPodIdentityAssociation(
        scope,
        f"{id}PodIdentity",
        cluster_name=cluster.cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.role_arn,
    )
    before: list[IDependable] = [association]
    agent = cluster.cluster.eks_pod_identity_agent
    if agent is not None:
        before.append(agent)
    return role, association, before
