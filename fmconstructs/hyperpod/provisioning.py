"""Cluster-level capacity options of HyperPod's current ``CreateCluster`` API: continuous provisioning, managed
(Karpenter-based) autoscaling and its cluster role, and managed tiered checkpointing.

Fields are those CloudFormation ``AWS::SageMaker::Cluster`` takes (the schema cfn-lint 1.58 bundles; aws-cdk-lib
2.275 ``CfnCluster``: ``node_provisioning_mode``, ``auto_scaling``, ``cluster_role``, ``tiered_storage_config``),
checked against the botocore 1.44.8 ``sagemaker`` model (``CreateClusterRequest``):

- ``NodeProvisioningMode``: ``Continuous`` only (botocore ``ClusterNodeProvisioningMode``; the schema: "If the
  parameter is omitted, uses the standard scaling approach"). botocore's text says "This mode is only supported for
  EKS orchestrated clusters", but AWS announced MinCount "for clusters using Slurm orchestration with continuous
  provisioning" (What's New, 2026-05-27, amazon-sagemaker-hyperpod-mincount) and the schema's Slurm
  ``AccountingDatabase`` is "Supported only with Continuous node provisioning": both orchestrators are accepted.
- ``AutoScaling``: ``Mode`` Enable | Disable (required), ``AutoScalerType`` Karpenter (the only value).
  ``ClusterRole``: "the IAM role that HyperPod assumes to perform cluster autoscaling operations. This role must have
  permissions for sagemaker:BatchAddClusterNodes and sagemaker:BatchDeleteClusterNodes. This is only required when
  autoscaling is enabled" (botocore ``CreateClusterRequest.ClusterRole``).
- ``TieredStorageConfig``: ``Mode`` Enable | Disable (required), ``InstanceMemoryAllocationPercentage`` 0-100
  (botocore ``ClusterTieredStorageConfig``: "managed tier checkpointing"; SageMaker API Reference
  API_ClusterTieredStorageConfig). No orchestrator restriction is stated there (whether it needs EKS is UNCONFIRMED).

Cross-field rules for autoscaling (SageMaker Developer Guide "Autoscaling on SageMaker HyperPod EKS",
sagemaker-hyperpod-eks-autoscaling): a managed Karpenter solution "for clusters created with EKS orchestration",
"built on HyperPod's continuous provisioning capabilities"; its prerequisites list continuous provisioning enabled
and ``NodeRecovery`` set to Automatic (read in the page's translated copy on docs.amazonaws.cn; the English page's
prerequisite list was not readable here). The same prerequisites ask for the HyperPod health monitoring agent
1.0.742.0_1.0.241.0 or newer and Karpenter v1 NodePool/NodeClaim CRDs when Karpenter already runs: not checked at
synthesis.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .._validate import check_bool, check_count, check_enum
from ..errors import FmTypeError
from . import rules
from .types import NodeRecovery


class NodeProvisioningMode(str, Enum):
    """``CreateCluster.NodeProvisioningMode`` (botocore ``ClusterNodeProvisioningMode``): instance groups stay
    InService while HyperPod keeps launching (and retrying) instances towards each group's count."""

    CONTINUOUS = "Continuous"


class AutoScalerType(str, Enum):
    """``AutoScaling.AutoScalerType`` (botocore ``ClusterAutoScalerType``)."""

    KARPENTER = "Karpenter"


#: The service principal HyperPod's autoscaling role trusts (SageMaker Developer Guide
#: "sagemaker-hyperpod-eks-autoscaling-iam", trust policy).
AUTOSCALING_PRINCIPAL = "hyperpod.sagemaker.amazonaws.com"
#: The actions of that role (same page; botocore ``CreateClusterRequest.ClusterRole``).
AUTOSCALING_ACTIONS = ("sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes")


@dataclass(frozen=True)
class HyperPodAutoScaling:
    """``AutoScaling`` (and ``ClusterRole``): HyperPod's managed Karpenter autoscaling on EKS.

    :param enabled: ``Mode`` Enable (True) or Disable.
    :param auto_scaler_type: ``AutoScalerType``. Default: Karpenter (the only one).
    :param cluster_role: the ``ClusterRole`` HyperPod assumes to add and delete nodes. Default (None, enabled): the
        cluster creates one (trusts ``hyperpod.sagemaker.amazonaws.com``; ``sagemaker:BatchAddClusterNodes`` and
        ``BatchDeleteClusterNodes`` on this account's and Region's clusters). Refused when disabled.
    """

    enabled: bool = True
    auto_scaler_type: AutoScalerType = AutoScalerType.KARPENTER
    cluster_role: iam.IRole | None = None

    @classmethod
    def karpenter(cls, *, cluster_role: iam.IRole | None = None) -> HyperPodAutoScaling:
        """Enabled, with Karpenter."""
        return cls(True, AutoScalerType.KARPENTER, cluster_role)

    @classmethod
    def disabled(cls) -> HyperPodAutoScaling:
        """``Mode: Disable`` (turns autoscaling off on a cluster that had it)."""
        return cls(False)

    def __post_init__(self) -> None:
        check_bool("enabled", self.enabled)
        check_enum("auto_scaler_type", self.auto_scaler_type, AutoScalerType)
        if self.cluster_role is not None:
            if not hasattr(self.cluster_role, "role_arn"):
                raise FmTypeError("cluster_role", self.cluster_role, "an iam.IRole")
            rules.cluster_role_needs_autoscaling(True, self.enabled)


@dataclass(frozen=True)
class TieredCheckpointing:
    """``TieredStorageConfig``: managed tiered checkpointing (checkpoints in cluster CPU memory, persisted to
    durable storage such as S3; SageMaker API Reference ClusterTieredStorageConfig).

    :param enabled: ``Mode`` Enable (True) or Disable.
    :param instance_memory_percent: ``InstanceMemoryAllocationPercentage`` (0-100). Default: not set (HyperPod's).
        Refused when disabled.
    """

    enabled: bool = True
    instance_memory_percent: Any = None

    def __post_init__(self) -> None:
        check_bool("enabled", self.enabled)
        if self.instance_memory_percent is not None:
            check_count("instance_memory_percent", self.instance_memory_percent, minimum=0, maximum=100)
            rules.memory_percent_needs_tiered_checkpointing(self.instance_memory_percent, self.enabled)

    def _property(self) -> sagemaker.CfnCluster.TieredStorageConfigProperty:
        return sagemaker.CfnCluster.TieredStorageConfigProperty(
            mode="Enable" if self.enabled else "Disable",
            instance_memory_allocation_percentage=self.instance_memory_percent,
        )


def check_provisioning(
    *,
    node_provisioning_mode: object,
    auto_scaling: object,
    tiered_checkpointing: object,
    eks: bool,
    node_recovery: NodeRecovery,
) -> None:
    """The types and the documented cross-field rules of the cluster-level options."""
    if node_provisioning_mode is not None:
        check_enum("node_provisioning_mode", node_provisioning_mode, NodeProvisioningMode)
    if tiered_checkpointing is not None and not isinstance(tiered_checkpointing, TieredCheckpointing):
        raise FmTypeError("tiered_checkpointing", tiered_checkpointing, "a TieredCheckpointing")
    if auto_scaling is None:
        return
    if not isinstance(auto_scaling, HyperPodAutoScaling):
        raise FmTypeError("auto_scaling", auto_scaling, "a HyperPodAutoScaling (HyperPodAutoScaling.karpenter())")
    if not auto_scaling.enabled:
        return
    rules.autoscaling_needs_eks(eks)
    continuous = node_provisioning_mode is NodeProvisioningMode.CONTINUOUS
    rules.autoscaling_needs_continuous_provisioning(node_provisioning_mode, continuous)
    rules.autoscaling_needs_automatic_node_recovery(node_recovery.value, node_recovery is NodeRecovery.AUTOMATIC)


def autoscaling_role(scope: Construct) -> iam.Role:
    """The ``ClusterRole`` of "sagemaker-hyperpod-eks-autoscaling-iam": trusted by HyperPod, allowed to add and
    delete cluster nodes. The page's policy names ``arn:aws:sagemaker:*:*:cluster/*`` with an ``aws:ResourceAccount``
    condition; this one names this account's and Region's clusters (not the cluster's own ARN: the role is an input
    of the cluster). The page's KMS grant statement (for KMS-encrypted volumes) is left out: this construct sets no
    ``VolumeKmsKeyId``."""
    role = iam.Role(
        scope,
        "AutoScalingRole",
        assumed_by=iam.ServicePrincipal(AUTOSCALING_PRINCIPAL),
        description="SageMaker HyperPod autoscaling (ClusterRole): adds and deletes cluster nodes",
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=list(AUTOSCALING_ACTIONS),
            resources=[
                Stack.of(scope).format_arn(
                    service="sagemaker",
                    resource="cluster",
                    resource_name="*",
                    arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                )
            ],
        )
    )
    return role


def cluster_properties(
    scope: Construct,
    *,
    node_provisioning_mode: NodeProvisioningMode | None,
    auto_scaling: HyperPodAutoScaling | None,
    tiered_checkpointing: TieredCheckpointing | None,
) -> tuple[dict[str, Any], iam.IRole | None]:
    """The ``CfnCluster`` keyword arguments of the cluster-level options, and the autoscaling role in use (created
    under ``scope`` when autoscaling is enabled without one)."""
    role: iam.IRole | None = None
    scaling = None
    if auto_scaling is not None:
        if auto_scaling.enabled:
            role = auto_scaling.cluster_role or autoscaling_role(scope)
        scaling = sagemaker.CfnCluster.ClusterAutoScalingConfigProperty(
            mode="Enable" if auto_scaling.enabled else "Disable", auto_scaler_type=auto_scaling.auto_scaler_type.value
        )
    properties = {
        "node_provisioning_mode": node_provisioning_mode.value if node_provisioning_mode is not None else None,
        "auto_scaling": scaling,
        "cluster_role": role.role_arn if role is not None else None,
        "tiered_storage_config": tiered_checkpointing._property() if tiered_checkpointing is not None else None,
    }
    return properties, role


def check_group_orchestrator(groups: Any, *, eks: bool) -> None:
    """Kubernetes labels and taints (``KubernetesConfig``) only on an EKS-orchestrated cluster: Slurm nodes are not
    Kubernetes nodes."""
    for index, group in enumerate(groups):
        rules.kubernetes_config_needs_eks(index, group.kubernetes is not None, eks)
