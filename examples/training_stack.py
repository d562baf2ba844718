"""The multi-account training workload shared by the StackSets app and the CDK Pipelines app.

:class:`TrainingCluster` builds one GPU training environment in a network the team brings: Slurm on AWS PCS (a login
node group and a GPU node group on a targeted On-Demand Capacity Reservation, with every EFA interface of the
instance type), an EFA-enabled FSx for Lustre PERSISTENT_2 file system mounted at ``/fsx`` and linked to the team's
S3 bucket (``/datasets`` and ``/checkpoints``), and an Amazon Managed Service for Prometheus workspace (alert rules,
Alertmanager to an encrypted SNS topic) that every node remote-writes to. None of it is backed by a Lambda function
and none of it needs a file asset, so its template can be replicated by CloudFormation StackSets into accounts that
were never CDK-bootstrapped.

:class:`TrainingGrafanaStack` is the Lambda-backed part (an Amazon Managed Grafana workspace whose data source and
dashboards a custom-resource Lambda provisions): it is never replicated by StackSets (see
:mod:`examples.stackset_app` for why) and is deployed by the CDK (``cdk deploy`` or a pipeline stage) into
bootstrapped accounts.

Every environment-specific value is a :class:`TrainingInputs` field. The StackSets app fills them with
``CfnParameter`` tokens (known only at deploy time, per stack instance); the pipeline app fills them with values known
at synth time (per stage, from CDK context), so the constructs check them when the app is synthesized.

What stays a synth-time choice in both apps: the GPU instance type (the launch template's EFA layout is derived from
the instance catalog: one template per instance type) and the file system's deployment type and throughput tier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fmconstructs import CapacityReservation, CpuArchitecture
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import AccountingMode, PcsAmi, PcsCluster, QueueSetting, SlurmVersion
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration, LustreMount

#: The GPU type of the examples (a synth-time choice: the launch template's EFA layout depends on it).
DEFAULT_INSTANCE_TYPE = "p5.48xlarge"
#: FSx for Lustre per-unit throughput of the example file system (MB/s/TiB). EFA-enabled PERSISTENT_2 storage at this
#: tier comes in multiples of 4,800 GiB (FSx User Guide "increase-storage-capacity"; aws-facts section 10).
THROUGHPUT_MBPS_PER_TIB = 1000
#: The EFA-enabled storage step at THROUGHPUT_MBPS_PER_TIB (GiB), same source.
EFA_CAPACITY_STEP_GIB = 4800


@dataclass(frozen=True)
class TrainingInputs:
    """The per-account, per-region values of the training environment (values, or CDK tokens for them).

    :param vpc_id: the team's VPC.
    :param subnet_id: one private subnet in the zone of the capacity reservation: the PCS controller, every node and
        the file system live there (EFA traffic does not cross zones).
    :param reservation_id: the targeted On-Demand Capacity Reservation (``cr-...``) of the GPU nodes.
    :param ami_id: an AMI with the PCS agent, Slurm 25.11, EFA and the NVIDIA driver (every node group uses it).
    :param gpu_nodes: the GPU node group's maximum size (its minimum is 0: Slurm starts nodes on demand).
    :param login_nodes: static login nodes.
    :param fsx_capacity_gib: the file system's storage capacity (GiB).
    :param data_bucket_name: an existing S3 bucket of the account, linked at ``/fsx/datasets`` and
        ``/fsx/checkpoints``.
    :param zone: the subnet's zone when it is known at synth time; None imports the subnet without one (a subnet id
        from a ``CfnParameter``).
    """

    vpc_id: str
    subnet_id: str
    reservation_id: str
    ami_id: str
    gpu_nodes: int | float
    login_nodes: int | float
    fsx_capacity_gib: int | float
    data_bucket_name: str
    zone: str | None = None


class TrainingCluster(Construct):
    """A PCS cluster, a GPU node group on an ODCR, FSx for Lustre and a Prometheus workspace, from
    :class:`TrainingInputs`; emits the operator's outputs (exported under ``export_prefix`` when given)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        inputs: TrainingInputs,
        instance_type: str = DEFAULT_INSTANCE_TYPE,
        export_prefix: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        # Bring-your-own network, imported by id (no lookup at synth time). A VPC spans the zones of its region, which
        # Fn::GetAZs states without naming one; the subnet carries a zone only when it is known at synth time.
        self.vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=inputs.vpc_id, availability_zones=Fn.get_azs())
        if inputs.zone is None:
            self.subnet = ec2.Subnet.from_subnet_id(self, "Subnet", inputs.subnet_id)
        else:
            self.subnet = ec2.Subnet.from_subnet_attributes(
                self, "Subnet", subnet_id=inputs.subnet_id, availability_zone=inputs.zone
            )
        ami = PcsAmi.from_image_id(inputs.ami_id, architecture=CpuArchitecture.X86_64)

        self.cluster = PcsCluster(
            self,
            "Cluster",
            vpc=self.vpc,
            subnet=self.subnet,
            slurm_version=SlurmVersion.V25_11,
            accounting=AccountingMode.NONE,
        )
        self.data_bucket = s3.Bucket.from_bucket_name(self, "DataBucket", inputs.data_bucket_name)
        self.file_system = LustreFileSystem(
            self,
            "Lustre",
            vpc=self.vpc,
            subnet=self.subnet,
            storage_capacity_gib=_as_int(inputs.fsx_capacity_gib),
            throughput_mbps_per_tib=THROUGHPUT_MBPS_PER_TIB,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_enabled=True,
            efa_security_group=self.cluster.efa_security_group,
        )
        self.data_repositories = self.file_system.add_data_repositories(self.data_bucket)
        fsx = LustreMount(self.file_system, "/fsx")
        self.login = self.cluster.add_login_node_group("Login", ami=ami, nodes=inputs.login_nodes, mounts=[fsx])
        self.gpu = self.cluster.add_gpu_node_group(
            "Gpu",
            instance_type=instance_type,
            ami=ami,
            capacity=CapacityReservation(reservation_id=inputs.reservation_id),
            max_nodes=inputs.gpu_nodes,
            min_nodes=0,  # Slurm starts nodes on demand
            mounts=[fsx],
        )
        self.queue = self.gpu.add_queue("GpuQueue", queue_name="gpu", slurm_settings={QueueSetting.DEFAULT: "YES"})
        self.workspace = PrometheusWorkspace(self, "Prometheus")
        monitor_pcs_cluster(self.cluster, self.workspace, cluster_label=id)

        def output(name: str, value: str, description: str) -> None:
            export = f"{export_prefix}-{name}" if export_prefix is not None else None
            CfnOutput(stack, name, value=value, description=description, export_name=export)

        output("ClusterId", self.cluster.cluster_id, "AWS PCS cluster id (aws pcs get-cluster --cluster-identifier)")
        output("GpuQueueId", self.queue.queue_id, "PCS queue id of the Slurm partition 'gpu'")
        output("FileSystemId", self.file_system.file_system_id, "FSx for Lustre file system id")
        output("FileSystemDnsName", self.file_system.dns_name, "FSx for Lustre DNS name (mount source)")
        output("FileSystemMountName", self.file_system.mount_name, "FSx for Lustre mount name (mount source)")
        output("PrometheusWorkspaceArn", self.workspace.workspace_arn, "Amazon Managed Prometheus workspace ARN")
        output("PrometheusEndpoint", self.workspace.prometheus_endpoint, "Amazon Managed Prometheus endpoint URL")
        output("AlertTopicArn", self.workspace.alert_topic.topic_arn, "SNS topic that receives the alerts")


class TrainingGrafanaStack(Stack):
    """An Amazon Managed Grafana workspace whose Prometheus data source and dashboards a custom resource (a Lambda
    function, a file asset) provisions, reading the training environment's Prometheus workspace."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        prometheus_workspace_arn: str,
        prometheus_endpoint: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.grafana = GrafanaWorkspace(self, "Grafana", prometheus_workspace_arns=[prometheus_workspace_arn])
        self.provisioner = self.grafana.provision(
            prometheus_workspace_arn=prometheus_workspace_arn, prometheus_endpoint=prometheus_endpoint
        )
        CfnOutput(self, "GrafanaUrl", value=self.grafana.url, description="Amazon Managed Grafana sign-in URL")


def _as_int(value: int | float) -> int:
    """Counts and sizes as the constructs type them: number tokens (floats) pass through unchanged."""
    return value  # type: ignore[return-value]
