"""FmParallelClusterP5en and FmParallelClusterGb200: Slurm clusters of AWS ParallelCluster 3, deployed through
ParallelCluster's CloudFormation custom resource (:class:`fmconstructs.parallelcluster.ParallelCluster`).

- **FmParallelClusterP5en**: a head node, one login node, a ``gpu`` queue of 2 p5en.48xlarge on a Capacity Block
  (``CapacityType: CAPACITY_BLOCK``, ``MinCount == MaxCount``, ``CapacityReservationTarget.CapacityReservationId``,
  EFA with GPUDirect RDMA from the catalog, no placement group) and an FSx for Lustre file system from
  :mod:`fmconstructs.storage` at ``/fsx``, sharing one :class:`fmconstructs.EfaSecurityGroup` with the nodes. Logs
  and the dashboard go to CloudWatch (ParallelCluster's ``Monitoring``); the file system's saturation alarms go to
  FmObservability's alert topic when a workspace is given. The compute nodes run fmconstructs' node bootstrap as
  their ``OnNodeConfigured`` custom action (:meth:`ParallelCluster.add_node_bootstrap`): the NVMe RAID0 scratch
  volume at ``/scratch`` and, when a workspace is given, the observability collectors sending to it (the nodes'
  role gets ``aps:RemoteWrite`` on that workspace through the bootstrap's managed policy). With a workspace the head
  node runs the collectors too (node exporter, EFA textfile collector and the Prometheus agent; no GPU, so no DCGM
  exporter), as its ``OnNodeConfigured`` custom action (:meth:`ParallelCluster.add_head_node_bootstrap`), which
  also installs the dcgm-exporter job mapping prolog and epilog in ``/opt/slurm/etc/scripts/prolog.d``/``epilog.d``
  (GPU series labelled ``hpc_job``; ``PrologFlags=Alloc``). The head
  node's ``OnNodeStart`` installs the Slurm topology refresher (:meth:`ParallelCluster.enable_slurm_topology`:
  ``topology/tree`` from EC2 DescribeInstanceTopology, ``scontrol reconfigure`` when nodes join or leave).
  Lustre goes over EFA on the ``gpu`` queue: its ``OnNodeStart`` configures LNet over EFA (8 interfaces on p5en)
  before ParallelCluster mounts ``/fsx``, and the queue's 2 nodes x 8 count against the file system's 1,024 EFA
  connections (see :class:`~fmconstructs.parallelcluster.SharedLustre`); the head and login nodes mount over TCP.
- **FmParallelClusterGb200**: one u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge) on an UltraServer Capacity
  Block targeted by its reservation id. IMEX as the ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance"
  documents it (:meth:`ParallelCluster.enable_imex`): ParallelCluster 3.14.0 and later install, configure and start
  ``nvidia-imex`` on p6e-gb200 and make the UltraServer a Slurm topology block; fmconstructs adds the page's
  ``91_nvidia_imex_prolog.sh`` (installed in ``/opt/slurm/etc/scripts/prolog.d/`` by the head node's ``OnNodeStart``
  custom action, an fmconstructs node bootstrap) and ``PrologFlags: "Alloc,NoHold"``, ``MessageTimeout: 240``. The
  queue allocates nodes exclusively (``JobExclusiveAllocation``: the prolog acts on exclusive jobs only) and, as on
  that page, turns simultaneous multithreading off.

Placeholders (no AWS lookups at synth time), overridden with ``cdk synth -c KEY=VALUE``:
``fmconstructs:capacity-block-id:p5en.48xlarge``, ``fmconstructs:ultraserver-reservation-id``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs import CapacityBlock, EfaSecurityGroup, UltraServerCapacityBlock, get_instance_spec
from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.compute.user_data import nvme_raid_commands
from fmconstructs.health import NodeHealthOptions
from fmconstructs.observability.collection import NodeLabels, node_collection_commands
from fmconstructs.observability.job_mapping import JobMappingSpec
from fmconstructs.observability.slurm_job_mapping import enable_parallelcluster_job_mapping
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.parallelcluster import (
    ComputeResource,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
    head_node_instance_type_for,
)
from fmconstructs.remediation import NodeRemediation, RemediationPolicy, RemediationTarget
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration, size_for_throughput

from .network import example_vpc
from .reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, capacity_block_id

DEFAULT_CAPACITY_BLOCK_ID = PLACEHOLDER_CAPACITY_BLOCK_IDS["p5en.48xlarge"]
DEFAULT_ULTRASERVER_RESERVATION_ID = "cr-0a1b2c3d4e5f60718"
#: 4,800 GiB at 1,000 MB/s/TiB: the smallest EFA-enabled PERSISTENT_2 step (FSx UG increase-storage-capacity).
TARGET_THROUGHPUT_GBYTES_PER_S = 4.6875
GB200_TYPE = "p6e-gb200.36xlarge"
# The head node's architecture must be the compute nodes' (ParallelCluster InstanceArchitectureCompatibilityValidator):
# c7i.2xlarge beside x86_64 P5en, Graviton c7g.2xlarge beside arm64 (Grace) P6e-GB200.
HEAD_NODE_TYPE = head_node_instance_type_for(get_instance_spec("p5en.48xlarge").architecture)
GB200_HEAD_NODE_TYPE = head_node_instance_type_for(get_instance_spec(GB200_TYPE).architecture)
LOGIN_NODE_TYPE = "c7i.xlarge"


def add_cluster_outputs(stack: Stack, cluster: ParallelCluster) -> None:
    """What an operator needs from a ParallelCluster stack, as outputs with descriptions."""
    outputs = {
        "ClusterName": (cluster.cluster_name, "ParallelCluster cluster name (pcluster describe-cluster -n <name>)"),
        "HeadNodePrivateIp": (cluster.head_node_private_ip, "Private IP address of the Slurm head node"),
        "ValidationMessages": (
            cluster.validation_messages,
            "ParallelCluster's configuration validation messages (JSON list) from the last create or update",
        ),
        "ClusterLogGroupName": (
            cluster.log_group_name,
            "Log group of the custom resource's cluster operations (kept after the cluster is deleted)",
        ),
        "ProviderLogGroupArn": (
            cluster.provider_log_group_arn,
            "Log group of ParallelCluster's custom resource provider (why a create or update failed)",
        ),
    }
    for output_id, (value, description) in outputs.items():
        CfnOutput(stack, output_id, value=value, description=description)


class ParallelClusterP5enStack(Stack):
    """ParallelCluster with 2 p5en.48xlarge on a Capacity Block and FSx for Lustre at /fsx."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: FmObservability's workspace: the file system's alarms go to its alert topic and the
        compute nodes' collectors send to it."""
        super().__init__(scope, id, **kwargs)
        block_id = capacity_block_id(self, "p5en.48xlarge")
        self.vpc = example_vpc(self)
        subnet = self.vpc.private_subnets[0]
        # One EFA group for the GPU nodes and the file system's EFA interfaces (EC2 UG efa-start).
        self.efa_group = EfaSecurityGroup(self, "Efa", vpc=self.vpc)
        sizing = size_for_throughput(
            target_gbytes_per_s=TARGET_THROUGHPUT_GBYTES_PER_S, throughput_mbps_per_tib=1000, efa_enabled=True
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
            efa_security_group=self.efa_group,
        )
        cluster_name = f"{id.lower()}-cluster"
        self.cluster = ParallelCluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            os=OperatingSystem.ALINUX2023,
            head_node=HeadNode(instance_type=HEAD_NODE_TYPE, subnet=subnet),
            login_nodes=[LoginNodePool(name="login", instance_type=LOGIN_NODE_TYPE, subnet=subnet, nodes=1)],
            queues=[
                SlurmQueue(
                    name="gpu",
                    subnets=[subnet],
                    compute_resources=[
                        ComputeResource(
                            name="p5en",
                            instance_type="p5en.48xlarge",
                            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
                        )
                    ],
                )
            ],
            shared_storage=[SharedLustre(file_system=self.file_system, mount_point="/fsx")],
            node_security_group=self.efa_group,
            monitoring=Monitoring(log_retention_days=30),
            tags={"fmconstructs:example": id},
        )
        # The gpu queue's node-side set-up: one fmconstructs bootstrap, run as the OnNodeConfigured custom action.
        self.gpu_bootstrap = NodeBootstrap(self, "GpuBootstrap", name="parallelcluster-gpu")
        # GPU-to-job labels (issue 22) wherever the collectors run: None turns them off.
        self.job_mapping: JobMappingSpec | None = JobMappingSpec() if workspace is not None else None
        self.gpu_bootstrap.add_step("nvme-scratch", nvme_raid_commands("/scratch"))
        statements: list[iam.PolicyStatement] = []
        if workspace is not None:
            labels = NodeLabels(cluster=cluster_name, queue="gpu", instance_type="p5en.48xlarge")
            # dcgm-exporter reads the Slurm job mapping kept by the prolog/epilog below: GPU series carry hpc_job.
            self.gpu_bootstrap.add_step(
                "observability",
                node_collection_commands(
                    remote_write_url=workspace.remote_write_url,
                    region=self.region,
                    labels=labels,
                    job_mapping=self.job_mapping,
                ),
            )
            statements.append(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.workspace_arn]))
        # The head node's OnNodeConfigured custom action: its collectors (node exporter, EFA textfile, Prometheus
        # agent; the DCGM exporter starts only where nvidia-smi exists) with a workspace, and the prolog dispatch of
        # the node-join checks.
        self.head_bootstrap = NodeBootstrap(self, "HeadBootstrap", name="parallelcluster-head")
        head_statements: list[iam.PolicyStatement] = []
        if workspace is not None:
            head_labels = NodeLabels(cluster=cluster_name, node_group="head-node", instance_type=HEAD_NODE_TYPE)
            self.head_bootstrap.add_step(
                "observability",
                # login_node=True: the head node is the Slurm client that runs the Slurm exporter and writes the
                # per-job info (fm_slurm_job_info) the GPU series join on.
                node_collection_commands(
                    remote_write_url=workspace.remote_write_url, region=self.region, labels=head_labels, login_node=True
                ),
            )
            head_statements.append(
                iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.workspace_arn])
            )
        # Node-join checks (issue 20): the boot gate runs last in the gpu queue's OnNodeConfigured bootstrap (a
        # failing node is held out of work in a reservation until remediation replaces it), the lightweight checks in
        # the prolog before every job.
        self.cluster.enable_node_health(
            NodeHealthOptions(), queues=["gpu"], head_bootstrap=self.head_bootstrap, node_bootstrap=self.gpu_bootstrap
        )
        if self.job_mapping is not None:
            # The job mapping's prolog and epilog in the shared prolog.d/epilog.d, PrologFlags=Alloc.
            enable_parallelcluster_job_mapping(self.cluster, self.job_mapping, bootstrap=self.head_bootstrap)
        self.gpu_bootstrap_policy = self.cluster.add_node_bootstrap(
            self.gpu_bootstrap, queues=["gpu"], statements=statements
        )
        self.cluster.add_head_node_bootstrap(self.head_bootstrap, statements=head_statements)
        # Slurm topology/tree from EC2 DescribeInstanceTopology, refreshed on the head node (issue 21).
        self.topology_bootstrap = self.cluster.enable_slurm_topology()
        # Critical alerts and failed node checks -> drain or replace through Slurm on the head node; a dry run.
        self.remediation = (
            NodeRemediation(
                self,
                "NodeRemediation",
                alert_topic=workspace.alert_topic,
                target=RemediationTarget.parallelcluster(cluster_name=cluster_name),
                policy=RemediationPolicy(dry_run=True),
            )
            if workspace is not None
            else None
        )
        self.file_system.add_saturation_alarms(topic=workspace.alert_topic if workspace is not None else None)
        add_cluster_outputs(self, self.cluster)
        CfnOutput(
            self,
            "FileSystemId",
            value=self.file_system.file_system_id,
            description="FSx for Lustre file system mounted at /fsx on every node (aws fsx describe-file-systems)",
        )


class ParallelClusterGb200Stack(Stack):
    """ParallelCluster with one u-p6e-gb200x72 UltraServer (18 p6e-gb200.36xlarge) on a Capacity Block."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        reservation_id = ctx("fmconstructs:ultraserver-reservation-id") or DEFAULT_ULTRASERVER_RESERVATION_ID
        self.vpc = example_vpc(self)
        subnet = self.vpc.private_subnets[0]
        self.capacity = UltraServerCapacityBlock(reservation_id=reservation_id, ultraserver_type="u-p6e-gb200x72")
        self.cluster = ParallelCluster(
            self,
            "Cluster",
            cluster_name=f"{id.lower()}-cluster",
            os=OperatingSystem.ALINUX2023,
            head_node=HeadNode(instance_type=GB200_HEAD_NODE_TYPE, subnet=subnet),
            queues=[
                SlurmQueue(
                    name="gb200",
                    subnets=[subnet],
                    # The IMEX prolog restarts nvidia-imex on a job's nodes and acts on exclusive jobs only
                    # (User Guide support-nvidia-imex-p6e-gb200-instance): no two jobs share a node.
                    job_exclusive_allocation=True,
                    compute_resources=[
                        ComputeResource(
                            name="gb200",
                            instance_type=GB200_TYPE,
                            capacity=self.capacity,
                            # as the User Guide page's P6e-GB200 cluster configuration does
                            disable_simultaneous_multithreading=True,
                        )
                    ],
                )
            ],
        )
        # IMEX as the User Guide page documents it: the prolog through the head node's OnNodeStart, PrologFlags and
        # MessageTimeout in Scheduling.SlurmSettings.CustomSlurmSettings.
        self.imex_bootstrap = self.cluster.enable_imex()
        add_cluster_outputs(self, self.cluster)
