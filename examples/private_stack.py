"""FmPrivateP5: Slurm on AWS PCS with p5.48xlarge nodes in subnets with no internet route (issue 11 section 3).

- A VPC with isolated subnets only: no internet gateway, no NAT gateway, no route to 0.0.0.0/0. Everything the nodes
  call goes through VPC endpoints (:class:`~fmconstructs.networking.GpuClusterEndpoints`, backend PCS): the S3
  gateway, PCS (node registration), SSM/SSM Messages/EC2 Messages (Session Manager logins), CloudWatch Logs and
  monitoring, ECR, STS and Amazon Managed Service for Prometheus (remote write).
- A PCS cluster (Slurm 25.11), a login node group and a ``gpu`` queue of 2 p5.48xlarge on a Capacity Block with all 32
  EFA interfaces.
- Node AMIs from FmImages' x86_64 SSM parameter (``/imagebuilder/fmconstructs/pcs/x86_64-slurm-25.11``, override with
  ``-c fmconstructs:pcs-ami-x86-parameter=...``): the image carries the PCS agent, Slurm, EFA, the NVIDIA driver,
  node_exporter, the Prometheus agent, the dcgm-exporter image and the Slurm exporter (login node), so the nodes
  download nothing at boot (``ExporterSource.IMAGE``). A node whose image lacks an exporter logs
  ``FMCONSTRUCTS-DOWNLOAD-FAILED`` and raises the ``NodeBootstrapDownloadFailed`` alert instead of reaching for the
  internet.
- Node metrics go to an Amazon Managed Prometheus workspace (FmObservability's in the example app, a new one when the
  stack stands alone) through the ``aps-workspaces`` endpoint.

Deploy FmImages first and run its x86 pipeline once (the parameter must exist). Outputs: the PCS cluster outputs of
FmPcsP5 (``ClusterId``, ``LoginCommand``, ...), ``EndpointSecurityGroupId`` and ``PcsEndpointId``.

Placeholders (no AWS lookups at synth time): ``fmconstructs:capacity-block-id:p5.48xlarge`` (the block's reservation id;
examples/reservations.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from fmconstructs import CapacityBlock, CpuArchitecture
from fmconstructs.networking import ClusterBackend, EndpointService, GpuClusterEndpoints
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.sources import ExporterSource
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import (
    AccountingMode,
    PcsAmi,
    PcsCluster,
    PcsGpuNodeGroup,
    QueueSetting,
    SlurmVersion,
)

from .images_stack import X86_AMI_PARAMETER
from .pcs_stacks import add_cluster_outputs
from .reservations import capacity_block_id

#: Where node metrics come from: the image, never the internet.
EXPORTER_SOURCE = ExporterSource.IMAGE


def private_vpc(scope: Construct, id: str = "Vpc") -> ec2.Vpc:
    """Two AZs of isolated subnets (no internet gateway, no NAT gateway), flow logs to CloudWatch Logs."""
    vpc = ec2.Vpc(
        scope,
        id,
        max_azs=2,
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="nodes", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=18),
        ],
        restrict_default_security_group=False,
    )
    log_group = logs.LogGroup(
        scope, f"{id}FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.RETAIN
    )
    vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group))
    return vpc


class PrivatePcsP5Stack(Stack):
    """A PCS cluster with p5.48xlarge nodes in a VPC without any internet route, reached through VPC endpoints."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where node metrics go; default: a new workspace in this stack."""
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        block_id = capacity_block_id(self, "p5.48xlarge")
        ami = PcsAmi.from_ssm_parameter(
            ctx("fmconstructs:pcs-ami-x86-parameter") or X86_AMI_PARAMETER, architecture=CpuArchitecture.X86_64
        )

        self.vpc = private_vpc(self)
        self.endpoints = GpuClusterEndpoints(self, "Endpoints", vpc=self.vpc, backends=[ClusterBackend.PCS])
        subnet = self.vpc.isolated_subnets[0]
        self.cluster = PcsCluster(
            self,
            "Cluster",
            vpc=self.vpc,
            subnet=subnet,
            slurm_version=SlurmVersion.V25_11,
            accounting=AccountingMode.NONE,
        )
        # PCS registers nodes through the pcs endpoint; the cluster's own ENI needs nothing else.
        self.cluster.node.add_dependency(self.endpoints)

        self.login = self.cluster.add_login_node_group("Login", ami=ami)
        self.gpu: PcsGpuNodeGroup = self.cluster.add_gpu_node_group(
            "P5",
            instance_type="p5.48xlarge",
            ami=ami,
            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
            max_nodes=2,
        )
        self.queue = self.gpu.add_queue("GpuQueue", queue_name="gpu", slurm_settings={QueueSetting.DEFAULT: "YES"})
        # Nodes must reach every endpoint before they boot (registration, SSM, metrics).
        for group in (self.login, self.gpu):
            group.node.add_dependency(self.endpoints)

        self.workspace = workspace or PrometheusWorkspace(self, "Prometheus", alias=f"fmconstructs-{id}")
        monitor_pcs_cluster(self.cluster, self.workspace, cluster_label=id, exporter_source=EXPORTER_SOURCE)

        add_cluster_outputs(self, self.cluster, self.gpu, self.queue)
        CfnOutput(
            self,
            "EndpointSecurityGroupId",
            value=self.endpoints.security_group.security_group_id,
            description="Security group of the VPC interface endpoints (HTTPS from the VPC only)",
        )
        CfnOutput(
            self,
            "PcsEndpointId",
            value=self.endpoints.endpoint_ids[EndpointService.PCS],
            description="Interface endpoint the nodes register with PCS through (aws ec2 describe-vpc-endpoints)",
        )
