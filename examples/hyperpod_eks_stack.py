"""FmHyperPodEks: SageMaker HyperPod on the EKS orchestrator (see examples/hyperpod_stacks.py for both stacks)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs.eks import GpuEksCluster
from fmconstructs.hyperpod import (
    KUBERNETES_VERSION_WARNING,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
)

from .eks_stack import acknowledge_eks_findings
from .hyperpod_common import acknowledge_cluster, outputs
from .network import access_logs_bucket, example_vpc


class HyperPodEksStack(Stack):
    """The FmHyperPodEks example stack."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.vpc = example_vpc(self)
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Administrators of the FmHyperPodEks cluster (EKS access entry)",
        )
        self.eks = GpuEksCluster(self, "Cluster", vpc=self.vpc, admin_roles=[self.admin_role])
        acknowledge_eks_findings(self.eks)
        self.cluster = HyperPodCluster(
            self,
            "HyperPod",
            vpc=self.vpc,
            orchestrator=HyperPodOrchestrator.eks(self.eks),
            instance_groups=[HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=2)],
            access_logs_bucket=access_logs_bucket(self),
        )
        # GpuEksCluster's default Kubernetes version (the one whose kubectl layer is installed) may be newer than the
        # versions the HyperPod EKS prerequisites page lists; the warning stays visible in `cdk synth` output.
        Annotations.of(self.cluster).acknowledge_warning(
            KUBERNETES_VERSION_WARNING,
            "the example uses GpuEksCluster's default version; check sagemaker-hyperpod-eks-prerequisites first",
        )
        acknowledge_cluster(self, self.cluster)
        outputs(self, self.cluster)
