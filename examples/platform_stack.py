"""FmPlatform: a whole training platform from one construct (:class:`fmconstructs.platform.TrainingPlatform`).

- A VPC (examples/network.py), 2 p5.48xlarge on a Capacity Block (all 32 EFA interfaces) in a Slurm ``gpu`` queue of
  AWS PCS, one login node, and an FSx for Lustre PERSISTENT_2 file system sized for a checkpoint objective (1 TB in
  240 s: 4.17 GB/s, so 4,800 GiB at 1,000 MB/s/TiB, the smallest EFA-enabled step), EFA-enabled and in the same EFA
  security group as the GPU nodes (one group, not two), mounted at ``/fsx`` on every node and linked to a new secure
  S3 bucket (``/datasets`` import, ``/checkpoints`` import and export).
- With ``workspace`` (FmObservability's Prometheus workspace) the nodes' collectors send to it, the file system's
  saturation alarms go to its alert topic, and with ``grafana`` the Grafana URL is an output.

Outputs (with descriptions, from the construct): ``ClusterId``, ``SlurmControllerEndpointCommand``,
``GpuNodesCommand``, ``LoginCommand``, ``FileSystemId``, ``FileSystemDnsName``, ``FileSystemMountName``,
``DataBucketName``, and with a workspace ``PrometheusRemoteWriteUrl`` (and ``GrafanaUrl``).

Placeholders (no AWS lookups at synth time), overridden with ``cdk synth -c KEY=VALUE``:
``fmconstructs:capacity-block-id:p5.48xlarge`` and ``fmconstructs:pcs-ami-x86`` (as FmPcsP5).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from fmconstructs import CapacityBlock
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import PcsAmi, SlurmVersion
from fmconstructs.platform import PcsOptions, PlatformObservability, PlatformStorage, TrainingPlatform

from .network import access_logs_bucket, example_vpc
from .pcs_stacks import DEFAULT_X86_AMI_ID
from .reservations import capacity_block_id

#: The checkpoint objective: 1 TB written within 240 s (4.17 GB/s).
CHECKPOINT_BYTES = 10**12
CHECKPOINT_SECONDS = 240


class PlatformStack(Stack):
    """The FmPlatform example stack: :class:`TrainingPlatform` on AWS PCS."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        workspace: PrometheusWorkspace | None = None,
        grafana: GrafanaWorkspace | None = None,
        **kwargs: Any,
    ) -> None:
        """:param workspace: where node metrics go (FmObservability's); default: no collection.
        :param grafana: the Grafana workspace reading ``workspace`` (its URL becomes an output)."""
        super().__init__(scope, id, **kwargs)
        ctx = self.node.try_get_context
        # Server access logs through a bucket policy rather than ACLs (as FmPcsP5 and FmStorage).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        block_id = capacity_block_id(self, "p5.48xlarge")
        ami = PcsAmi.from_image_id(ctx("fmconstructs:pcs-ami-x86") or DEFAULT_X86_AMI_ID)

        self.vpc = example_vpc(self)
        self.access_logs_bucket = access_logs_bucket(self)
        self.platform = TrainingPlatform(
            self,
            "Platform",
            vpc=self.vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            capacity=CapacityBlock(reservation_id=block_id, instance_count=2),
            orchestrator=PcsOptions(ami=ami, slurm_version=SlurmVersion.V25_11, login_nodes=1),
            storage=PlatformStorage.for_checkpoint(
                checkpoint_bytes=CHECKPOINT_BYTES, checkpoint_seconds=CHECKPOINT_SECONDS
            ),
            observability=(
                PlatformObservability.existing(prometheus_workspace=workspace, grafana_workspace=grafana)
                if workspace is not None
                else None
            ),
            access_logs_bucket=self.access_logs_bucket,
        )
