"""FmHyperPodEks: SageMaker HyperPod on the EKS orchestrator (see examples/hyperpod_stacks.py for both stacks).

- A VPC (examples/network.py), an fmconstructs :class:`~fmconstructs.eks.GpuEksCluster` (API authentication, an admin
  role through an access entry) and a HyperPod cluster on it (``Orchestrator.Eks.ClusterArn``): ``gpu`` = 2 x
  ml.p5en.48xlarge in the VPC's first private subnet (deep health checks, automatic node recovery), with continuous
  provisioning and HyperPod's managed Karpenter autoscaling (``NodeProvisioningMode``, ``AutoScaling``,
  ``ClusterRole``).
- HyperPod's dependencies Helm chart (:class:`~fmconstructs.hyperpod.eks_dependencies.HyperPodEksDependencies`,
  release ``hyperpod-dependencies`` in ``kube-system``), which HyperPod requires before the cluster is created: the
  HyperPod cluster depends on it. Its NVIDIA and EFA device plugins are off; GpuEksCluster's GPU add-ons (NVIDIA and
  EFA device plugins, DCGM exporter) also select the ``ml.p5en.48xlarge`` nodes.
- An FSx for Lustre file system (1,200 GiB, PERSISTENT_2, first private subnet) as a static PersistentVolume + claim
  ``training/fsx-training`` through the FSx CSI driver (whose node DaemonSet runs on the HyperPod nodes too), given to
  the HyperPod cluster as ``file_system`` so that the HyperPod nodes' security group may reach it. It mounts over TCP:
  the smallest EFA-enabled file system is 4,800 GiB at 1,000 MB/s/TiB (FSx for Lustre User Guide
  increase-storage-capacity), four times this one. For Lustre over EFA, create it with ``efa_enabled=True``, a
  metadata configuration and ``efa_security_group=self.eks.efa_security_group`` and pass the same group as the
  HyperPod cluster's ``efa_security_group``: the ``gpu`` group's OnCreate lifecycle then configures LNet over EFA
  (2 nodes x 8 EFA interfaces against the file system's 1,024 EFA connections), as ``TrainingPlatform`` does.
- With ``workspace`` (FmObservability's Prometheus workspace): the AMP managed scraper of
  :mod:`fmconstructs.observability.eks` (DCGM exporter and node exporter on every node, HyperPod's included).

The chart is published only in git (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart``), so the stack takes
it from context ``fmconstructs:hyperpod-helm-chart``:

- a local directory, checked out at a commit you pin and with its dependencies fetched::

      git clone https://github.com/aws/sagemaker-hyperpod-cli.git
      git -C sagemaker-hyperpod-cli checkout 011ca927123e02b35a399935bbb3ab1905fe33c7
      helm dependencies update sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart
      cdk synth FmHyperPodEks \
        -c fmconstructs:hyperpod-helm-chart=$PWD/sagemaker-hyperpod-cli/helm_chart/HyperPodHelmChart

- or ``oci://<registry>/<path>/hyperpod-helm-chart`` where you pushed the packaged chart, with its version in
  ``fmconstructs:hyperpod-helm-chart-version`` (default ``0.1.0``).

Without the context (CI has no checkout) the stack still synthesizes, without the chart, and warns
(``fmconstructs:hyperpod-dependencies-not-installed``): deploy it only with the chart, or install the chart with Helm
first (SageMaker Developer Guide "sagemaker-hyperpod-eks-install-packages-using-helm-chart").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import WarningId, add_warning
from fmconstructs.hyperpod import (
    HyperPodAutoScaling,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
    NodeProvisioningMode,
)
from fmconstructs.hyperpod.eks_addons import HyperPodEksAddon, HyperPodEksAddons
from fmconstructs.hyperpod.eks_dependencies import HyperPodDependenciesChart, HyperPodEksDependencies
from fmconstructs.observability.eks import AmpEksScraper
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.storage import LustreFileSystem

from .eks_stack import add_eks_outputs, add_lustre_outputs
from .hyperpod_common import outputs
from .network import access_logs_bucket, example_vpc

#: Context keys: the chart (a directory or an ``oci://`` reference) and, for OCI, its version.
CHART_CONTEXT = "fmconstructs:hyperpod-helm-chart"
CHART_VERSION_CONTEXT = "fmconstructs:hyperpod-helm-chart-version"
DEFAULT_OCI_CHART_VERSION = "0.1.0"
VOLUME_NAME = "fsx-training"
VOLUME_NAMESPACE = "training"


def dependencies_chart(scope: Construct) -> HyperPodDependenciesChart | None:
    """The chart named by the context, or None when the context is not set."""
    location = scope.node.try_get_context(CHART_CONTEXT)
    if not location:
        return None
    if str(location).startswith("oci://"):
        version = scope.node.try_get_context(CHART_VERSION_CONTEXT) or DEFAULT_OCI_CHART_VERSION
        return HyperPodDependenciesChart.from_oci(str(location), version=str(version))
    return HyperPodDependenciesChart.from_directory(str(location))


#: FmHyperPodEks's optional HyperPod add-ons: task governance and the training operator.
DEFAULT_HYPERPOD_ADDONS = (HyperPodEksAddon.TASK_GOVERNANCE, HyperPodEksAddon.TRAINING_OPERATOR)


class HyperPodEksStack(Stack):
    """The FmHyperPodEks example stack."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        workspace: PrometheusWorkspace | None = None,
        hyperpod_addons: Sequence[HyperPodEksAddon] = DEFAULT_HYPERPOD_ADDONS,
        **kwargs: Any,
    ) -> None:
        """:param workspace: where the AMP managed scraper writes (FmObservability's); default: no scraper.
        :param hyperpod_addons: HyperPod's optional EKS add-ons to install (empty: none)."""
        super().__init__(scope, id, **kwargs)
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.vpc = example_vpc(self)
        subnet = self.vpc.private_subnets[0]
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Administrators of the FmHyperPodEks cluster (EKS access entry)",
        )
        # Kubernetes 1.34, one of the versions the HyperPod EKS prerequisites page lists (sagemaker-hyperpod-eks-
        # prerequisites, 2026: 1.30-1.35; TrainingPlatform defaults to 1.35). Its kubectl layer comes from
        # aws-cdk.lambda-layer-kubectl-v34 (the `hyperpod` extra).
        self.eks = GpuEksCluster(
            self, "Cluster", vpc=self.vpc, admin_roles=[self.admin_role], version=eks.KubernetesVersion.V1_34
        )
        groups = [HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=2)]
        # The GPU add-ons also select the HyperPod nodes (their node.kubernetes.io/instance-type is the ml. name).
        self.addons = self.eks.add_gpu_addons(
            hyperpod_instance_types=[g.instance_type for g in groups if g.accelerated]
        )
        self.file_system = LustreFileSystem(self, "Lustre", vpc=self.vpc, subnet=subnet, storage_capacity_gib=1200)
        self.volume = self.eks.add_lustre_volume(
            "FsxVolume", self.file_system, name=VOLUME_NAME, namespace=VOLUME_NAMESPACE, create_namespace=True
        )
        self.scraper = (
            AmpEksScraper(self, "Scraper", cluster=self.eks, workspace=workspace, cluster_label=id)
            if workspace is not None
            else None
        )

        self.cluster = HyperPodCluster(
            self,
            "HyperPod",
            vpc=self.vpc,
            subnets=[subnet],
            orchestrator=HyperPodOrchestrator.eks(self.eks),
            instance_groups=groups,
            access_logs_bucket=access_logs_bucket(self),
            # The HyperPod nodes' own security group reaches the file system (the EKS cluster security group already
            # does, through add_lustre_volume, when HyperPod's VpcConfig carries it). A TCP file system: no lifecycle
            # step; the FSx CSI driver mounts it.
            file_system=self.file_system,
            # Continuous provisioning (groups stay InService while HyperPod launches and retries instances) and
            # HyperPod's managed Karpenter autoscaling, which builds on it (SageMaker Developer Guide
            # sagemaker-hyperpod-eks-autoscaling); the cluster creates the autoscaling ClusterRole. Karpenter
            # provisions only for the HyperpodNodeClass and NodePool resources you apply (same guide).
            node_provisioning_mode=NodeProvisioningMode.CONTINUOUS,
            auto_scaling=HyperPodAutoScaling.karpenter(),
        )

        chart = dependencies_chart(self)
        self.hyperpod_dependencies: HyperPodEksDependencies | None = None
        if chart is not None:
            self.hyperpod_dependencies = HyperPodEksDependencies(
                self, "HyperPodDependencies", cluster=self.eks, chart=chart
            )
            self.hyperpod_dependencies.add_dependent(self.cluster)
        else:
            add_warning(
                self,
                WarningId.HYPERPOD_DEPENDENCIES_NOT_INSTALLED,
                f"HyperPod's dependencies chart is not installed (no -c {CHART_CONTEXT}=<HyperPodHelmChart directory "
                "or oci:// reference>): creating the HyperPod cluster may fail (SageMaker Developer Guide "
                "sagemaker-hyperpod-eks-install-packages-using-helm-chart); see examples/hyperpod_eks_stack.py",
            )

        # HyperPod's optional EKS add-ons: task governance and the training operator (with cert-manager, the Pod
        # Identity agent and a Pod Identity role), after the HyperPod cluster and the dependencies chart. The
        # observability add-on is left out here: its configuration values are not documented (UNCONFIRMED).
        self.hyperpod_addons: HyperPodEksAddons | None = None
        if hyperpod_addons:
            self.hyperpod_addons = HyperPodEksAddons(
                self,
                "HyperPodAddons",
                cluster=self.eks,
                addons=list(hyperpod_addons),
                hyperpod_cluster=self.cluster,
                dependencies=self.hyperpod_dependencies,
            )
        outputs(self, self.cluster)
        add_eks_outputs(self, self.eks, node_groups={})
        add_lustre_outputs(self, self.file_system, volume_name=VOLUME_NAME, namespace=VOLUME_NAMESPACE)
