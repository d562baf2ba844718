"""FmPcsP5 and FmPcsGb200: Slurm on AWS PCS with GPU node groups on Capacity Blocks.

- **FmPcsP5**: a VPC (or the one named by context ``fmconstructs:vpc``), a PCS cluster (Slurm 25.11), a login node
  group, a ``gpu`` queue of 2 p5.48xlarge on a Capacity Block with all 32 EFA interfaces, and an EFA-enabled FSx for
  Lustre PERSISTENT_2 file system from the storage construct, mounted at ``/fsx`` on every node, linked to S3
  (``/datasets`` and ``/checkpoints``).
- **FmPcsGb200**: a PCS cluster with IMEX enabled (``Prolog`` = the IMEX prolog and ``PrologFlags=Alloc,NoHold``,
  PCS User Guide capacity-blocks-nvidia-imex), a login node group and a ``gb200`` queue (exclusive:
  ``OverSubscribe=EXCLUSIVE``) of one u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge, 72 GPUs in one NVLink
  domain) on an UltraServer Capacity Block, targeted by its reservation id (``CapacityReservationId``, PCS User Guide
  capacity-blocks-configure-cng).

Both GPU launch templates put the node group's ``SubnetId`` on every network interface (PCS User Guide
working-with_networking_efa_create-lt).

Node set-up (NVMe RAID, Lustre mounts, the IMEX prolog, collectors, your commands) reaches the nodes as a
content-addressed S3 asset fetched by a small loader in the user data (:mod:`fmconstructs.bootstrap`; FmPcsP5's GPU user
data is under 2 KiB); each boot's log is on the node in ``/var/log/fmconstructs/`` and in the stack's bootstrap log
group. ``cdk deploy`` publishes the asset to the CDK bootstrap bucket (``cdk bootstrap`` once per account and Region).

Outputs (with descriptions): ``ClusterId``, ``ClusterArn``, ``SlurmControllerEndpointCommand`` (prints the Slurm
controller's address and port), ``LoginCommand`` (a Session Manager shell on a login node), the GPU node group id and
``GpuNodesCommand`` (its running instances), the queue id, ``NodeBootstrapLogGroup`` (the nodes' boot logs), and on
FmPcsP5 ``FileSystemId``.

Placeholders (no AWS lookups at synth time), overridden with ``cdk synth -c KEY=VALUE``:
``fmconstructs:capacity-block-id:p5.48xlarge``, ``fmconstructs:ultraserver-reservation-id`` (what PCS targets),
``fmconstructs:ultraserver-resource-group-arn``, ``fmconstructs:pcs-ami-x86``
(an AMI id with the PCS agent, Slurm 25.11, EFA and the NVIDIA driver; see :mod:`fmconstructs.pcs.ami` for the
sample AMIs), ``fmconstructs:pcs-ami-gb200-parameter`` (an SSM parameter holding the arm64 GB200 AMI id), and
``fmconstructs:vpc`` (``{"vpcId": ..., "availabilityZones": [...], "privateSubnetIds": [...]}``).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmconstructs import CapacityBlock, CpuArchitecture, UltraServerCapacityBlock
from fmconstructs.bootstrap import NodeBootstrapLogs
from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.health import NodeHealthOptions
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import (
    AccountingMode,
    PcsAmi,
    PcsCluster,
    PcsGpuNodeGroup,
    PcsQueue,
    QueueSetting,
    SlurmVersion,
)
from fmconstructs.remediation import NodeRemediation, RemediationPolicy, RemediationTarget
from fmconstructs.storage import (
    DataRepositoryBucket,
    LustreFileSystem,
    LustreMetadataConfiguration,
    LustreMount,
    size_for_throughput,
)

from .images_stack import GB200_AMI_PARAMETER
from .network import access_logs_bucket, example_vpc
from .reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, capacity_block_id

DEFAULT_CAPACITY_BLOCK_ID = PLACEHOLDER_CAPACITY_BLOCK_IDS["p5.48xlarge"]
DEFAULT_ULTRASERVER_GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/example-gb200-ultraserver-block"
#: The UltraServer block's reservation id: what PCS targets (PCS User Guide capacity-blocks-configure-cng).
DEFAULT_ULTRASERVER_RESERVATION_ID = "cr-0a1b2c3d4e5f60718"
DEFAULT_X86_AMI_ID = "ami-0123456789abcdef0"
# FmImages writes the AMI ids of its pipelines here (Image Builder may only write parameters under /imagebuilder/).
DEFAULT_GB200_AMI_PARAMETER = GB200_AMI_PARAMETER
#: The Lustre file system's target aggregate throughput (GB/s, bytes): 4,800 GiB (4.6875 TiB) at 1,000 MB/s/TiB =
#: 4,687.5 MB/s, the smallest EFA-enabled PERSISTENT_2 step at that tier (FSx UG increase-storage-capacity; 4.8 GB/s
#: would need 9,600 GiB).
TARGET_THROUGHPUT_GBYTES_PER_S = 4.6875
#: The capacity fmconstructs 0.2.0 deployed for this file system (4.8 GB/s then: 9,600 GiB). FSx cannot shrink a file
#: system, so the sizing keeps it as a floor (``min_capacity_gib``): a lower target never shrinks a deployed example.
DEPLOYED_CAPACITY_GIB = 9_600


def _vpc(scope: Stack) -> ec2.IVpc:
    """The VPC from context ``fmconstructs:vpc`` (no lookup: ids are given), else a new example VPC."""
    given = scope.node.try_get_context("fmconstructs:vpc")
    if not given:
        return example_vpc(scope)
    return ec2.Vpc.from_vpc_attributes(
        scope,
        "Vpc",
        vpc_id=given["vpcId"],
        availability_zones=list(given["availabilityZones"]),
        private_subnet_ids=list(given["privateSubnetIds"]),
    )


def add_cluster_outputs(
    stack: Stack,
    cluster: PcsCluster,
    gpu: PcsGpuNodeGroup,
    queue: PcsQueue,
    *,
    gpu_output: str = "GpuNodeGroupId",
    queue_output: str = "GpuQueueId",
    submit_hint: str = "sbatch -p gpu job.sh",
) -> None:
    """What an operator needs from a PCS stack, as outputs with descriptions (aws cloudformation describe-stacks)."""
    outputs = {
        "ClusterId": (cluster.cluster_id, "AWS PCS cluster id (aws pcs get-cluster --cluster-identifier <id>)"),
        "ClusterArn": (cluster.cluster_arn, "AWS PCS cluster ARN (IAM policies, tags)"),
        "SlurmControllerEndpointCommand": (
            cluster.slurm_controller_endpoint_command,
            "Prints the Slurm controller's private address and port (GetAtt Endpoints is a list of objects, which "
            "an output cannot hold)",
        ),
        gpu_output: (
            gpu.node_group_id,
            "GPU compute node group id (its instances carry aws:pcs:compute-node-group-id)",
        ),
        "GpuNodesCommand": (gpu.find_instances_command, "Lists the GPU node group's running instances"),
        queue_output: (
            queue.queue_id,
            f"Queue (Slurm partition {queue.queue_name}) of the GPU node group" if queue.queue_name else "GPU queue",
        ),
    }
    if cluster.login_command is not None:
        outputs["LoginCommand"] = (
            cluster.login_command,
            f"Opens a shell on a login node with Session Manager (AWS CLI Session Manager plugin); then {submit_hint}",
        )
    logs = stack.node.try_find_child(NodeBootstrapLogs.ID)
    if isinstance(logs, NodeBootstrapLogs):
        outputs["NodeBootstrapLogGroup"] = (
            logs.log_group_name,
            "CloudWatch Logs group of the nodes' boot runs (stream <node group>/<instance id>; on a node: "
            "/var/log/fmconstructs/)",
        )
    for output_id, (value, description) in outputs.items():
        CfnOutput(stack, output_id, value=value, description=description)


class PcsP5Stack(Stack):
    """A PCS cluster with a login node group and 2 p5.48xlarge on a Capacity Block, /fsx on FSx for Lustre."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where node metrics go (FmObservability's); default: no node-side collection."""
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        # Server access logs through a bucket policy rather than ACLs (same flag as the storage example).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        block_id = capacity_block_id(self, "p5.48xlarge")
        ami = PcsAmi.from_image_id(ctx("fmconstructs:pcs-ami-x86") or DEFAULT_X86_AMI_ID)

        self.vpc = _vpc(self)
        self.cluster = PcsCluster(
            self,
            "Cluster",
            vpc=self.vpc,
            slurm_version=SlurmVersion.V25_11,
            accounting=AccountingMode.NONE,
            scale_down_idle_time=cdk.Duration.minutes(10),
            # Node-join checks (issue 20): a boot gate drains a GPU node until its checks pass, the cluster Prolog
            # runs the lightweight checks before every job (fmconstructs.pcs.health).
            node_health=NodeHealthOptions(),
        )

        # Storage: EFA-enabled PERSISTENT_2 sharing the cluster's EFA group, linked to a secure bucket.
        self.access_logs_bucket = access_logs_bucket(self)
        self.data_bucket = DataRepositoryBucket(
            self, "DataBucket", server_access_logs_bucket=self.access_logs_bucket, server_access_logs_prefix="data/"
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
            subnet=self.cluster.subnet,
            storage_capacity_gib=sizing.storage_capacity_gib,
            throughput_mbps_per_tib=sizing.throughput_mbps_per_tib,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_enabled=True,
            efa_security_group=self.cluster.efa_security_group,
        )
        self.data_repositories = self.file_system.add_data_repositories(self.data_bucket.bucket)
        fsx = LustreMount(self.file_system, "/fsx")

        self.login = self.cluster.add_login_node_group("Login", ami=ami, mounts=[fsx])
        self.gpu: PcsGpuNodeGroup = self.cluster.add_gpu_node_group(
            "P5",
            instance_type="p5.48xlarge",
            ami=_x86_gpu_ami(ctx("fmconstructs:pcs-ami-x86-parameter"), ami.image_id or DEFAULT_X86_AMI_ID),
            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
            max_nodes=2,
            mounts=[fsx],
        )
        self.gpu.add_user_data("# Your own node set-up goes here (runs before slurmd starts).")
        self.queue = self.gpu.add_queue("GpuQueue", queue_name="gpu", slurm_settings={QueueSetting.DEFAULT: "YES"})
        # Nodes may also stream datasets straight from S3 (read-only, datasets/ only).
        self.cluster.instance_profile.grant_read_bucket(self.data_bucket.bucket, prefix="datasets/")

        if workspace is not None:
            monitor_pcs_cluster(self.cluster, workspace, cluster_label=id)
            # Capacity Block delivered / expiration warning -> the alert topic; the warning drains the block's Slurm
            # nodes through SSM Run Command on the login node.
            self.capacity_events = CapacityBlockEvents(
                self,
                "CapacityBlockEvents",
                alert_topic=workspace.alert_topic,
                pcs_login_node_group_id=self.login.node_group_id,
            )
            # Critical GPU/EFA alerts and failed node checks -> drain, reboot or replace the node. A dry run: the
            # handler only notifies the alert topic of what it would do (RemediationPolicy(dry_run=False) acts).
            self.remediation = NodeRemediation(
                self,
                "NodeRemediation",
                alert_topic=workspace.alert_topic,
                target=RemediationTarget.pcs(
                    cluster_id=self.cluster.cluster_id,
                    login_node_group_id=self.login.node_group_id,
                    compute_node_group_ids=[self.gpu.node_group_id],
                ),
                policy=RemediationPolicy(dry_run=True),
            )
        # FSx throughput and capacity saturation (CloudWatch metrics), to the shared alert topic when there is one.
        self.file_system.add_saturation_alarms(topic=workspace.alert_topic if workspace is not None else None)

        add_cluster_outputs(self, self.cluster, self.gpu, self.queue)
        CfnOutput(
            self,
            "FileSystemId",
            value=self.file_system.file_system_id,
            description="FSx for Lustre file system mounted at /fsx on every node (aws fsx describe-file-systems)",
        )


class PcsGb200Stack(Stack):
    """A PCS cluster with IMEX and one u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge) on a Capacity Block."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        group_arn = ctx("fmconstructs:ultraserver-resource-group-arn") or DEFAULT_ULTRASERVER_GROUP_ARN
        reservation_id = ctx("fmconstructs:ultraserver-reservation-id") or DEFAULT_ULTRASERVER_RESERVATION_ID
        login_ami = PcsAmi.from_image_id(ctx("fmconstructs:pcs-ami-x86") or DEFAULT_X86_AMI_ID)
        gb200_ami = PcsAmi.from_ssm_parameter(
            ctx("fmconstructs:pcs-ami-gb200-parameter") or DEFAULT_GB200_AMI_PARAMETER,
            architecture=CpuArchitecture.ARM64,
        )

        self.vpc = _vpc(self)
        self.cluster = PcsCluster(self, "Cluster", vpc=self.vpc, slurm_version=SlurmVersion.V25_11, enable_imex=True)
        self.login = self.cluster.add_login_node_group("Login", ami=login_ami)
        # PCS targets the block by its reservation id; the resource group is what EKS or a fleet would use.
        self.capacity = UltraServerCapacityBlock(
            reservation_id=reservation_id, resource_group_arn=group_arn, ultraserver_type="u-p6e-gb200x72"
        )
        self.gpu: PcsGpuNodeGroup = self.cluster.add_gpu_node_group(
            "Gb200",
            instance_type="p6e-gb200.36xlarge",
            ami=gb200_ami,
            capacity=self.capacity,
            max_nodes=self.capacity.ultraserver.instance_count * self.capacity.ultraserver_count,
        )
        # An exclusive partition (OverSubscribe=EXCLUSIVE): the IMEX prolog restarts nvidia-imex on a job's nodes.
        # Submit with `sbatch -p gb200 --exclusive -N 18 ...` (PCS User Guide capacity-blocks-nvidia-imex).
        self.queue = self.gpu.add_queue("Gb200Queue", queue_name="gb200")

        add_cluster_outputs(
            self,
            self.cluster,
            self.gpu,
            self.queue,
            gpu_output="UltraServerNodeGroupId",
            queue_output="Gb200QueueId",
            submit_hint="sbatch -p gb200 --exclusive -N 18 job.sh (jobs on UltraServer queues are exclusive)",
        )


def _x86_gpu_ami(parameter: str | None, image_id: str) -> PcsAmi:
    """The GPU nodes' AMI: FmImages' SSM parameter when ``-c fmconstructs:pcs-ami-x86-parameter=...`` names it (e.g.
    ``examples.images_stack.X86_AMI_PARAMETER``), else the image id (``fmconstructs:pcs-ami-x86``)."""
    if parameter:
        return PcsAmi.from_ssm_parameter(parameter, architecture=CpuArchitecture.X86_64)
    return PcsAmi.from_image_id(image_id, architecture=CpuArchitecture.X86_64)
