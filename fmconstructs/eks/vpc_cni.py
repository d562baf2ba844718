"""The Amazon VPC CNI plugin with a role of its own (EKS Pod Identity) instead of the node role.

Why: the CNI needs ``AmazonEKS_CNI_Policy`` (create, attach, detach and delete network interfaces, assign addresses).
On the node role every pod that reaches the instance metadata service (IMDS) gets those credentials too. The EKS User
Guide "Configure Amazon VPC CNI plugin to use IRSA" (cni-iam-role): "You can attach the policy to the Amazon EKS node
IAM role, or to a separate IAM role ... We recommend that you assign it to a separate role"; the plugin "also supports
Amazon EKS Pod Identities" and runs as the Kubernetes service account ``aws-node``. The EKS User Guide "IAM roles for
Amazon EKS add-ons" (add-ons-iam): "The recommended way to grant AWS permissions to cluster workloads is using the
Amazon EKS feature Pod Identities", through the add-on's Pod Identity associations (``AWS::EKS::Addon``
``PodIdentityAssociations``: ``RoleArn``, ``ServiceAccount``; aws-cdk-lib 2.275 ``aws_eks.CfnAddon``).

What :func:`vpc_cni_with_own_role` builds:

- the ``eks-pod-identity-agent`` add-on (aws-cdk-lib ``aws_eks_v2.Cluster.eks_pod_identity_agent``: one per cluster,
  shared with anything else that needs it);
- a role trusted by ``pods.eks.amazonaws.com`` with ``sts:AssumeRole`` and ``sts:TagSession`` (EKS User Guide
  "Create IAM role with trust policy required by EKS Pod Identity", pod-id-role), restricted, as that page shows, by
  the session tags Pod Identity adds to the cluster, namespace ``kube-system`` and service account ``aws-node``
  (``aws:RequestTag/eks-cluster-arn``, ``kubernetes-namespace``, ``kubernetes-service-account``; EKS User Guide
  pod-id-abac, tag names UNCONFIRMED against that page: read from its summary), with ``AmazonEKS_CNI_Policy`` (the
  policy cni-iam-role names for IPv4 clusters; GpuEksCluster's are IPv4);
- the ``vpc-cni`` EKS add-on with that association. EKS installs the CNI as a self-managed DaemonSet when it creates
  the cluster; the add-on takes it over (``ResolveConflicts: OVERWRITE``, as the EKS User Guide's add-on migration
  does for fields EKS manages) at EKS's default version for the cluster's Kubernetes version.

Node groups wait for the add-on, so their nodes' ``aws-node`` pods start with the role. On a cluster deployed before
this change, ``aws-node`` pods already running keep the node role's credentials they fetched until they restart:
after the deployment run ``kubectl -n kube-system rollout restart daemonset aws-node`` (cni-iam-role, last step:
delete and re-create the ``aws-node`` pods).
"""

from __future__ import annotations

from aws_cdk import aws_eks as eks_l1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

#: The EKS add-on name of the Amazon VPC CNI plugin (EKS User Guide "add-ons-vpc-cni").
VPC_CNI_ADDON_NAME = "vpc-cni"
#: Its namespace and service account (cni-iam-role).
VPC_CNI_NAMESPACE = "kube-system"
VPC_CNI_SERVICE_ACCOUNT = "aws-node"
#: The AWS managed policy with the CNI's permissions on an IPv4 cluster (cni-iam-role).
VPC_CNI_MANAGED_POLICY = "AmazonEKS_CNI_Policy"
#: The EKS Pod Identity service principal (pod-id-role).
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
#: ``create-addon --resolve-conflicts OVERWRITE``: the add-on replaces the self-managed install's settings.
RESOLVE_CONFLICTS = "OVERWRITE"


def vpc_cni_with_own_role(scope: Construct, cluster: eks.Cluster) -> tuple[eks_l1.CfnAddon, iam.Role]:
    """The ``vpc-cni`` add-on whose ``aws-node`` service account has a role of its own (see the module docstring)."""
    agent = cluster.eks_pod_identity_agent
    role = iam.Role(
        scope,
        "VpcCniRole",
        assumed_by=iam.ServicePrincipal(
            POD_IDENTITY_PRINCIPAL,
            conditions={
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-arn": cluster.cluster_arn,
                    "aws:RequestTag/kubernetes-namespace": VPC_CNI_NAMESPACE,
                    "aws:RequestTag/kubernetes-service-account": VPC_CNI_SERVICE_ACCOUNT,
                }
            },
        ).with_session_tags(),
        description="Amazon VPC CNI (aws-node) through EKS Pod Identity",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(VPC_CNI_MANAGED_POLICY)],
    )
    addon = eks_l1.CfnAddon(
        scope,
        "VpcCni",
        addon_name=VPC_CNI_ADDON_NAME,
        cluster_name=cluster.cluster_name,
        pod_identity_associations=[
            eks_l1.CfnAddon.PodIdentityAssociationProperty(
                role_arn=role.role_arn, service_account=VPC_CNI_SERVICE_ACCOUNT
            )
        ],
        resolve_conflicts=RESOLVE_CONFLICTS,
        # Removing the add-on from the template must not remove pod networking from a running cluster.
        preserve_on_delete=True,
    )
    if agent is not None:
        addon.node.add_dependency(agent)
    return addon, role
