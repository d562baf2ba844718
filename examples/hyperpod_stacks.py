"""FmHyperPodSlurm and FmHyperPodEks: SageMaker HyperPod clusters (``AWS::SageMaker::Cluster``).

- **FmHyperPodSlurm**: a VPC (examples/network.py), an FSx for Lustre PERSISTENT_2 file system from the storage
  construct, and a HyperPod cluster orchestrated by Slurm: ``controller`` (1 x ml.m5.2xlarge), ``login``
  (1 x ml.m5.4xlarge) and ``gpu`` (2 x ml.p5.48xlarge, 500 GiB extra EBS, deep health checks InstanceStress and
  InstanceConnectivity, automatic node recovery). Lifecycle scripts and ``provisioning_parameters.json`` (controller,
  login and worker groups, the file system's DNS and mount names) are uploaded to the cluster's lifecycle bucket.
  Copy HyperPod's published Slurm lifecycle scripts (awsome-distributed-training
  ``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config``) and pass the directory with
  ``-c fmconstructs:hyperpod-base-config=<dir>``: fmconstructs' OnCreate then runs their ``lifecycle_script.py``
  (which configures Slurm and mounts the file system). With ``workspace`` (FmObservability's Prometheus workspace), the
  base-config's exporters and OpenTelemetry collector are turned on and write to it (``aps:RemoteWrite``).
- **FmHyperPodEks**: a VPC, an fmconstructs :class:`~fmconstructs.eks.GpuEksCluster` and a HyperPod cluster on the EKS
  orchestrator (``Orchestrator.Eks.ClusterArn``) with ``gpu`` = 2 x ml.p5en.48xlarge (deep health checks, automatic
  recovery). HyperPod's dependencies Helm chart (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart``) is NOT
  installed by this stack: install it with Helm before creating the HyperPod cluster (SageMaker Developer Guide
  "sagemaker-hyperpod-eks-install-packages-using-helm-chart").

Outputs (with descriptions): ``HyperPodClusterArn``, ``HyperPodClusterName``, ``LifecycleS3Uri``,
``ExecutionRoleArn``, ``ClusterHealthCommand`` and, on FmHyperPodSlurm, ``FileSystemId``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, CfnOutput, Fn, Stack, Token
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs.eks import GpuEksCluster
from fmconstructs.hyperpod import (
    INSTANCE_ROLE_MANAGED_POLICY,
    KUBERNETES_VERSION_WARNING,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
)
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.storage import LustreFileSystem

from .eks_stack import acknowledge_eks_findings
from .lint import acknowledge_nag
from .network import access_logs_bucket, example_vpc

_MANAGED_POLICY_REASON = (
    f"{INSTANCE_ROLE_MANAGED_POLICY} is the policy SageMaker HyperPod documents for the cluster instance role "
    "(sagemaker-hyperpod-prerequisites-iam); a hand-copied policy would drift from what the HyperPod agents need"
)
_VPC_ACTIONS_REASON = (
    "HyperPod creates and describes the nodes' network interfaces in the VpcConfig subnets; EC2 Describe* actions "
    "and CreateNetworkInterface take no resource scoping (sagemaker-hyperpod-prerequisites-iam)"
)
_LIFECYCLE_READ_REASON = (
    "Read only, on the lifecycle prefix of this cluster's own lifecycle bucket: HyperPod downloads every object under "
    "LifeCycleConfig.SourceS3Uri"
)
_DEPLOYMENT_REASON = (
    "aws-cdk-lib BucketDeployment (the lifecycle scripts upload): its Lambda role uses AWSLambdaBasicExecutionRole and "
    "reads the CDK asset bucket / writes the lifecycle bucket with wildcard object actions; its runtime is chosen by "
    "aws-cdk-lib"
)


def _acknowledge_cluster(stack: Stack, cluster: HyperPodCluster) -> None:
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


def _outputs(stack: Stack, cluster: HyperPodCluster) -> None:
    outputs = {
        "HyperPodClusterArn": (cluster.cluster_arn, "SageMaker HyperPod cluster ARN"),
        "HyperPodClusterName": (cluster.cluster_name, "aws sagemaker describe-cluster --cluster-name <name>"),
        "LifecycleS3Uri": (cluster.lifecycle_s3_uri, "Where the lifecycle scripts and provisioning parameters are"),
        "ExecutionRoleArn": (cluster.execution_role.role_arn, "The instance groups' execution role"),
        "ClusterHealthCommand": (
            Fn.join("", ["aws sagemaker list-cluster-nodes --cluster-name ", cluster.cluster_name]),
            "Node status per instance group (or fmconstructs.hyperpod.describe_cluster_health)",
        ),
    }
    for name, (value, description) in outputs.items():
        CfnOutput(stack, name, value=value, description=description)


class HyperPodSlurmStack(Stack):
    """The FmHyperPodSlurm example stack."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where the base-config's collectors write (FmObservability's); default: none."""
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
        _acknowledge_cluster(self, self.cluster)
        _outputs(self, self.cluster)
        CfnOutput(self, "FileSystemId", value=self.file_system.file_system_id, description="FSx for Lustre id")


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
        _acknowledge_cluster(self, self.cluster)
        _outputs(self, self.cluster)


def build(
    app: Construct, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
) -> tuple[HyperPodSlurmStack, HyperPodEksStack]:
    """Both stacks (``env`` etc. in ``kwargs``); ``workspace``: FmObservability's, for FmHyperPodSlurm's collectors."""
    return (
        HyperPodSlurmStack(app, "FmHyperPodSlurm", workspace=workspace, **kwargs),
        HyperPodEksStack(app, "FmHyperPodEks", **kwargs),
    )
