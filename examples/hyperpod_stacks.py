"""FmHyperPodSlurm and FmHyperPodEks: SageMaker HyperPod clusters (``AWS::SageMaker::Cluster``).

- **FmHyperPodSlurm**: a VPC (examples/network.py), an FSx for Lustre PERSISTENT_2 file system from the storage
  construct, and a HyperPod cluster orchestrated by Slurm: ``controller`` (1 x ml.m5.2xlarge), ``login``
  (1 x ml.m5.4xlarge) and ``gpu`` (2 x ml.p5.48xlarge in partition ``gpu``, 500 GiB extra EBS, deep health checks
  InstanceStress and InstanceConnectivity, automatic node recovery). HyperPod configures and starts Slurm itself
  (API-driven configuration: ``Orchestrator.Slurm`` with ``SlurmConfigStrategy: Managed`` and each group's
  ``SlurmConfig``); fmconstructs' ``OnInitComplete`` script, uploaded per group to the cluster's lifecycle bucket,
  mounts the file system at ``/fsx`` on every node (the storage module's mount steps) and, with ``workspace``
  (FmObservability's Prometheus workspace), installs fmconstructs' node collectors on the GPU nodes (and the Slurm
  node-state collector on the login node), remote-writing to it (``aps:RemoteWrite``). Nothing else is needed.
  To use HyperPod's published Slurm lifecycle scripts instead, copy awsome-distributed-training
  ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config`` and pass the directory with
  ``-c fmconstructs:hyperpod-base-config=<dir>``: the cluster then uses ``OnCreate`` and
  ``provisioning_parameters.json`` (controller, login and worker groups, the file system's DNS and mount names), and
  the base-config configures Slurm, mounts the file system and runs its own collectors.
- **FmHyperPodEks**: a VPC, an fmconstructs :class:`~fmconstructs.eks.GpuEksCluster` and a HyperPod cluster on the EKS
  orchestrator (``Orchestrator.Eks.ClusterArn``) with ``gpu`` = 2 x ml.p5en.48xlarge (deep health checks, automatic
  recovery), Kubernetes 1.34. HyperPod's dependencies Helm chart is installed before the HyperPod cluster from
  ``-c fmconstructs:hyperpod-helm-chart=<checkout's helm_chart/HyperPodHelmChart or oci:// reference>`` (without it:
  a warning and no chart); the GPU add-ons cover the ml.p5en.48xlarge nodes, with a 1,200 GiB Lustre volume and,
  with ``workspace``, the EKS scraper (examples/hyperpod_eks_stack.py).

Outputs (with descriptions): ``HyperPodClusterArn``, ``HyperPodClusterName``, ``LifecycleS3Uri``,
``ExecutionRoleArn``, ``ClusterHealthCommand`` and, on FmHyperPodSlurm, ``FileSystemId``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.storage import LustreFileSystem

from .hyperpod_common import outputs
from .hyperpod_eks_stack import HyperPodEksStack
from .network import access_logs_bucket, example_vpc

__all__ = ["HyperPodEksStack", "HyperPodSlurmStack", "build"]


class HyperPodSlurmStack(Stack):
    """The FmHyperPodSlurm example stack."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where the node collectors write (FmObservability's); default: none."""
        super().__init__(scope, id, **kwargs)
        # Server access logs through a bucket policy, not the LogDeliveryWrite ACL (no cdk.json feature flags here).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        base_config = self.node.try_get_context("fmconstructs:hyperpod-base-config")
        self.vpc = example_vpc(self)
        self.file_system = LustreFileSystem(
            self, "FileSystem", vpc=self.vpc, subnet=self.vpc.private_subnets[0], storage_capacity_gib=1200
        )
        self.cluster = HyperPodCluster(
            self,
            "HyperPod",
            vpc=self.vpc,
            subnets=[self.vpc.private_subnets[0]],
            orchestrator=HyperPodOrchestrator.slurm(controller_group="controller", login_group="login"),
            instance_groups=[
                HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
                HyperPodInstanceGroup(name="login", instance_type="m5.4xlarge", nodes=1),
                HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, extra_ebs_gib=500),
            ],
            file_system=self.file_system,
            base_config_dir=base_config,
            access_logs_bucket=access_logs_bucket(self),
            prometheus_workspace=workspace,
        )
        outputs(self, self.cluster)
        CfnOutput(self, "FileSystemId", value=self.file_system.file_system_id, description="FSx for Lustre id")


def build(
    app: Construct, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
) -> tuple[HyperPodSlurmStack, HyperPodEksStack]:
    """Both stacks (``env`` etc. in ``kwargs``); ``workspace``: FmObservability's, for FmHyperPodSlurm's collectors and
    FmHyperPodEks's scraper."""
    return (
        HyperPodSlurmStack(app, "FmHyperPodSlurm", workspace=workspace, **kwargs),
        HyperPodEksStack(app, "FmHyperPodEks", workspace=workspace, **kwargs),
    )
