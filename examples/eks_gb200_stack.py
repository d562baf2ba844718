"""FmEksGb200: a GPU EKS cluster with one u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge, 72 GPUs in one NVLink
domain) on an UltraServer Capacity Block, the GPU add-ons with the NVIDIA DRA driver, a ComputeDomain and an
EFA-enabled FSx for Lustre volume.

Follows the EKS User Guide "ml-eks-nvidia-ultraserver" (Use P6e-GB200 UltraServers with Amazon EKS):

- Kubernetes 1.35 (the guide needs 1.33 or later, for Dynamic Resource Allocation); an EKS managed node group with a
  custom launch template on the Capacity Block, AL2023 ARM NVIDIA AMI, NVMe instance stores in RAID0 (nodeadm).
- EFA: one ``efa-only`` interface on cards 1, 5, 9 and 13 (4 x 400 Gbps), the layout for which the guide expects
  4 allocatable ``vpc.amazonaws.com/efa`` devices per node.
- Add-ons: NVIDIA device plugin with GPU feature discovery (``nvidia.com/gpu.clique``), the EFA device plugin
  (chart >= 0.5.14), the DCGM exporter, the FSx CSI driver, and the NVIDIA DRA driver 25.8.0 with the guide's values
  (ComputeDomains on, GPU allocation off, controller schedulable on EKS).
- An elastic ComputeDomain (``numNodes: 0``) whose channel claim template pods reference for IMEX channels.
- Topology-aware, all-or-nothing scheduling: Kueue with a Topology of the EKS network-node labels, JobSet, a
  ClusterQueue of the group's 72 GPUs and the LocalQueue ``fm-gpu`` in ``training``.
- FSx for Lustre PERSISTENT_2, EFA-enabled, 9,600 GiB at 1,000 MB/s/TiB (the size 0.2.0 deployed, kept: FSx cannot
  shrink), automatic metadata configuration, in the node group's subnet and sharing the cluster's EFA security
  group; a static PersistentVolume + claim ``fsx-training`` in namespace ``training``. Each GB200 node installs the
  Lustre client, configures LNet over its 4 EFA interfaces (the FSx default of 8 for p6e-gb200, capped by the 4 it
  attaches) and mounts the file system at ``/fsx/fsx-training`` before kubelet starts (pre-bootstrap user data, as
  in the EKS User Guide "fsx-csi-tuning-efa").

The node group starts at its full size (18) like FmEksP5en's; before the block is active, deploy with
``min_nodes=0, desired_nodes=0`` and scale to 18 once it is (EKS "capacity-blocks-mng").

Outputs: cluster name, ARN and endpoint, the ``aws eks update-kubeconfig`` command, the node group, the file system
(id, DNS name, mount name), the volume claim and the ComputeDomain's channel claim template.

The resource-group ARN is a placeholder; override it with ``-c fmconstructs:ultraserver-resource-group-arn=arn:...``
(the key FmPcsGb200 reads).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs import UltraServerCapacityBlock
from fmconstructs.catalog import get_ultraserver
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup
from fmconstructs.observability.eks import AmpEksScraper
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration, size_for_throughput

from .eks_stack import add_eks_outputs, add_lustre_outputs
from .network import example_vpc

DEFAULT_ULTRASERVER_GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/example-gb200-ultraserver-block"
ULTRASERVER_TYPE = "u-p6e-gb200x72"
INSTANCE_TYPE = "p6e-gb200.36xlarge"
#: Aggregate throughput the file system is sized for (GB/s): 4,800 GiB (4.6875 TiB) at 1,000 MB/s/TiB = 4,687.5 MB/s,
#: the smallest EFA-enabled size at that tier (FSx UG: EFA file systems grow in 4,800 GiB steps at 1,000 MB/s/TiB).
TARGET_THROUGHPUT_GBYTES_PER_S = 4.6875
#: The capacity fmconstructs 0.2.0 deployed for this file system (4.8 GB/s then: 9,600 GiB). FSx cannot shrink a file
#: system, so the sizing keeps it as a floor (``min_capacity_gib``): a lower target never shrinks a deployed example.
DEPLOYED_CAPACITY_GIB = 9_600
#: Where the volume claim and the ComputeDomain live.
NAMESPACE = "training"


class EksGb200Stack(Stack):
    """The FmEksGb200 example stack: EKS on one u-p6e-gb200x72 UltraServer with DRA ComputeDomains and FSx over EFA."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where an AMP managed scraper writes (FmObservability's); default: no scraper."""
        super().__init__(scope, id, **kwargs)
        group_arn = self.node.try_get_context("fmconstructs:ultraserver-resource-group-arn")

        self.vpc = example_vpc(self)
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Administrators of the FmEksGb200 cluster (EKS access entry, AmazonEKSClusterAdminPolicy)",
        )
        self.cluster = GpuEksCluster(self, "Cluster", vpc=self.vpc, admin_roles=[self.admin_role])
        subnet = self.vpc.private_subnets[0]

        self.capacity = UltraServerCapacityBlock(
            resource_group_arn=group_arn or DEFAULT_ULTRASERVER_GROUP_ARN, ultraserver_type=ULTRASERVER_TYPE
        )
        # Installs the NVIDIA DRA driver too (every UltraServer group needs it for ComputeDomains).
        self.gb200: GpuNodeGroup = self.cluster.add_gpu_node_group(
            "Gb200",
            instance_type=INSTANCE_TYPE,
            capacity=self.capacity,
            max_nodes=get_ultraserver(ULTRASERVER_TYPE).instance_count,  # one UltraServer: 18 nodes
            subnets=[subnet],
        )
        self.addons = self.cluster.add_gpu_addons()
        self.scraper = (
            AmpEksScraper(self, "Scraper", cluster=self.cluster, workspace=workspace, cluster_label=id)
            if workspace is not None
            else None
        )

        sizing = size_for_throughput(
            target_gbytes_per_s=TARGET_THROUGHPUT_GBYTES_PER_S,
            throughput_mbps_per_tib=1000,
            efa_enabled=True,
            min_capacity_gib=DEPLOYED_CAPACITY_GIB,
        )
        self.file_system = LustreFileSystem(
            self,
            "Lustre",
            vpc=self.vpc,
            subnet=subnet,
            storage_capacity_gib=sizing.storage_capacity_gib,
            throughput_mbps_per_tib=sizing.throughput_mbps_per_tib,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_enabled=True,
            efa_security_group=self.cluster.efa_security_group,
        )
        self.volume = self.cluster.add_lustre_volume(
            "FsxVolume", self.file_system, name="fsx-training", namespace=NAMESPACE, create_namespace=True
        )
        self.compute_domain = self.cluster.add_compute_domain("ComputeDomain", name="gb200-imex", namespace=NAMESPACE)
        self.compute_domain.node.add_dependency(self.volume)  # the volume's manifest creates the namespace
        # Kueue over the EKS network-node labels (3 layers for p6e-gb200), JobSet, LocalQueue fm-gpu.
        self.scheduling = self.cluster.add_topology_scheduling(namespaces=[NAMESPACE])
        self.scheduling.queues.node.add_dependency(self.volume)

        add_eks_outputs(self, self.cluster, node_groups={"Gb200": self.gb200})
        add_lustre_outputs(self, self.file_system, volume_name="fsx-training", namespace=NAMESPACE)
        CfnOutput(
            self,
            "ComputeDomainChannelTemplate",
            value="gb200-imex-channel",
            description="ResourceClaimTemplate that pods in namespace training reference for an IMEX channel",
        )
