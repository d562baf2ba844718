"""FmEksP5en: a GPU EKS cluster with a p5en.48xlarge group on a Capacity Block and a p6-b300.48xlarge group on an ODCR.

- VPC (examples/network.py), :class:`~fmconstructs.eks.GpuEksCluster` (private endpoint, KMS secrets, all control-plane
  logs, system node group) and an admin role given cluster admin through an access entry.
- ``p5en.48xlarge`` x 2 on a Capacity Block: 16 EFA interfaces (ENA + efa-only on card 0, efa-only on cards 1-15),
  no placement group (block instances are already placed in an UltraCluster).
- ``p6-b300.48xlarge`` x 1 on a targeted ODCR: 16 EFA interfaces on cards 1-16, card 0 ENA only. No placement group:
  EKS node groups get one only when asked, and a new placement group would be unrelated to the reservation (EC2
  reserves capacity in a cluster placement group only for reservations created in it, EC2 User Guide "cr-cpg").
- The four GPU add-ons and a static PersistentVolume + claim for an FSx for Lustre file system from the storage
  construct.
- Topology-aware, all-or-nothing scheduling: Kueue with a Topology per network depth (EKS network-node labels),
  JobSet, one ClusterQueue (GPU and EFA quotas of both groups) and the LocalQueue ``fm-gpu`` in ``training``.
- With the shared workspace: :class:`~fmconstructs.capacity_events.CapacityBlockEvents` sends Capacity Block
  delivered / expiration-warning events to the workspace's alert topic and, on the warning (forty minutes before the
  block ends), cordons the block's nodes (``spec.unschedulable``, annotated ``fmconstructs.io/capacity-block-ends-at``)
  so that no new pod lands on them. The handler runs in the cluster's private subnets (the endpoint is private) with
  an access entry limited by RBAC to get/list/patch nodes.
- Outputs (:func:`add_eks_outputs`): cluster name, ARN and API endpoint, the ``aws eks update-kubeconfig`` command,
  the node group names, the file system id, DNS name and mount name.

Reservation ids are placeholders; override them with ``-c fmconstructs:capacity-block-id:p5en.48xlarge=cr-...`` and
``-c fmconstructs:odcr-id:p6-b300.48xlarge=cr-...`` (examples/reservations.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs import CapacityBlock, CapacityReservation
from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup
from fmconstructs.observability.eks import AmpEksScraper
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.remediation import NodeRemediation, RemediationPolicy, RemediationTarget
from fmconstructs.storage import LustreFileSystem

from .network import example_vpc
from .reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, PLACEHOLDER_ODCR_IDS, capacity_block_id, odcr_id

DEFAULT_CAPACITY_BLOCK_ID = PLACEHOLDER_CAPACITY_BLOCK_IDS["p5en.48xlarge"]
DEFAULT_ODCR_ID = PLACEHOLDER_ODCR_IDS["p6-b300.48xlarge"]


class EksStack(Stack):
    """The FmEksP5en example stack."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where the AMP managed scraper writes (FmObservability's); default: no scraper."""
        super().__init__(scope, id, **kwargs)
        block_id = capacity_block_id(self, "p5en.48xlarge")
        odcr = odcr_id(self, "p6-b300.48xlarge")

        self.vpc = example_vpc(self)
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Administrators of the FmEksP5en cluster (EKS access entry, AmazonEKSClusterAdminPolicy)",
        )
        self.cluster = GpuEksCluster(self, "Cluster", vpc=self.vpc, admin_roles=[self.admin_role])
        subnet = self.vpc.private_subnets[0]

        self.p5en: GpuNodeGroup = self.cluster.add_gpu_node_group(
            "P5en",
            instance_type="p5en.48xlarge",
            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
            max_nodes=2,
            subnets=[subnet],
        )
        self.p6_b300: GpuNodeGroup = self.cluster.add_gpu_node_group(
            "P6B300",
            instance_type="p6-b300.48xlarge",
            capacity=CapacityReservation(reservation_id=odcr, instance_count=1),
            max_nodes=1,
            subnets=[subnet],
        )
        self.addons = self.cluster.add_gpu_addons()
        self.scraper = (
            AmpEksScraper(self, "Scraper", cluster=self.cluster, workspace=workspace, cluster_label=id)
            if workspace is not None
            else None
        )
        # Capacity Block delivered / expiration warning -> the alert topic; the warning cordons the block's nodes.
        self.capacity_events = (
            CapacityBlockEvents(
                self, "CapacityBlockEvents", alert_topic=workspace.alert_topic, eks_cluster=self.cluster
            )
            if workspace is not None
            else None
        )
        # The GPU groups join tainted until their node checks pass (GpuNodeGroup(node_checks=True), the default) and
        # node auto repair acts on the node monitoring agent's conditions. Critical GPU/EFA alerts -> cordon, evict,
        # replace: a dry run that only notifies the alert topic.
        self.remediation = (
            NodeRemediation(
                self,
                "NodeRemediation",
                alert_topic=workspace.alert_topic,
                target=RemediationTarget.eks(cluster=self.cluster),
                policy=RemediationPolicy(dry_run=True),
            )
            if workspace is not None
            else None
        )

        self.file_system = LustreFileSystem(
            self,
            "Lustre",
            vpc=self.vpc,
            subnet=subnet,
            storage_capacity_gib=2400,
            throughput_mbps_per_tib=250,
        )
        self.volume = self.cluster.add_lustre_volume(
            "FsxVolume", self.file_system, name="fsx-training", namespace="training", create_namespace=True
        )
        # Kueue over the EKS network-node labels (3 layers for p5en, 4 for p6-b300), JobSet, LocalQueue fm-gpu.
        self.scheduling = self.cluster.add_topology_scheduling(namespaces=["training"])
        self.scheduling.queues.node.add_dependency(self.volume)  # the volume's manifest creates the namespace

        add_eks_outputs(self, self.cluster, node_groups={"P5en": self.p5en, "P6B300": self.p6_b300})
        add_lustre_outputs(self, self.file_system, volume_name="fsx-training", namespace="training")


def add_eks_outputs(scope: Construct, cluster: GpuEksCluster, *, node_groups: Mapping[str, GpuNodeGroup]) -> None:
    """What an operator needs to reach the cluster, as stack outputs with descriptions."""
    CfnOutput(scope, "ClusterName", value=cluster.cluster_name, description="EKS cluster name")
    CfnOutput(scope, "ClusterArn", value=cluster.cluster_arn, description="EKS cluster ARN")
    CfnOutput(
        scope,
        "ClusterEndpoint",
        value=cluster.cluster_endpoint,
        description="Kubernetes API server endpoint (private: reachable from the VPC)",
    )
    CfnOutput(
        scope,
        "UpdateKubeconfigCommand",
        value=cluster.update_kubeconfig_command,
        description="Writes a kubeconfig entry for the cluster (run as ClusterAdminRole, from a host that reaches "
        "the private endpoint)",
    )
    for name, group in node_groups.items():
        CfnOutput(
            scope,
            f"{name}Nodegroup",
            value=group.node_group_name,
            description=f"EKS managed node group of {group.instance_spec.instance_type} nodes",
        )


def add_lustre_outputs(scope: Construct, file_system: LustreFileSystem, *, volume_name: str, namespace: str) -> None:
    """The FSx for Lustre file system behind the cluster's static volume, as stack outputs with descriptions."""
    CfnOutput(scope, "FileSystemId", value=file_system.file_system_id, description="FSx for Lustre file system id")
    CfnOutput(
        scope,
        "FileSystemDnsName",
        value=file_system.dns_name,
        description="FSx for Lustre DNS name (mount: <dns name>@tcp:/<mount name>)",
    )
    CfnOutput(scope, "FileSystemMountName", value=file_system.mount_name, description="FSx for Lustre mount name")
    CfnOutput(
        scope,
        "VolumeClaim",
        value=f"{namespace}/{volume_name}",
        description="PersistentVolumeClaim (namespace/name) that pods mount for the file system",
    )
