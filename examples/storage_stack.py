"""FmStorage: an EFA-enabled PERSISTENT_2 Lustre file system linked to a new secure S3 bucket.

- Sized with :func:`fmconstructs.storage.size_for_throughput` for 4.5 GB/s at 1000 MB/s/TiB: 4,800 GiB, the smallest
  EFA-enabled size at that tier, which delivers 4.6875 GB/s (4.6875 TiB x 1,000 MB/s/TiB); Lustre 2.15, LZ4,
  automatic metadata configuration, Retain.
- Two data repository associations (the default layout): ``/datasets`` imports NEW/CHANGED/DELETED from
  ``s3://<bucket>/datasets/``; ``/checkpoints`` imports and exports NEW/CHANGED/DELETED to ``s3://<bucket>/checkpoints/``.
- Clients: the GPU nodes' EFA security group (shared with the file system) and a node security group.
- Outputs (with descriptions): file system id, DNS name, mount name, the mount command line, the data bucket and the
  aggregate baseline throughput.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmconstructs import EfaSecurityGroup
from fmconstructs.storage import (
    DataRepositoryBucket,
    LustreFileSystem,
    LustreMetadataConfiguration,
    size_for_throughput,
)

from .network import access_logs_bucket, example_vpc

#: Aggregate throughput the example file system is sized for (GB/s): 4,800 GiB at 1,000 MB/s/TiB delivers 4.6875 GB/s.
TARGET_THROUGHPUT_GBYTES_PER_S = 4.5


class StorageStack(Stack):
    """FSx for Lustre for GPU training: datasets in, checkpoints out, over EFA."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        # Server access logs through a bucket policy, not the LogDeliveryWrite ACL (ACLs stay disabled on every
        # bucket); the app has no cdk.json feature flags, so the stack sets this one for its own buckets.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.vpc = example_vpc(self)
        self.efa_security_group = EfaSecurityGroup(self, "Efa", vpc=self.vpc)
        self.node_security_group = ec2.SecurityGroup(
            self, "NodeSecurityGroup", vpc=self.vpc, description="GPU nodes: outbound only", allow_all_outbound=True
        )

        # The data bucket's server access log target (cdk-nag AwsSolutions-S1 exempts log target buckets).
        self.access_logs_bucket = access_logs_bucket(self)
        self.data_bucket = DataRepositoryBucket(
            self,
            "DataBucket",
            server_access_logs_bucket=self.access_logs_bucket,
            server_access_logs_prefix="data-bucket/",
        )

        self.sizing = size_for_throughput(
            target_gbytes_per_s=TARGET_THROUGHPUT_GBYTES_PER_S, throughput_mbps_per_tib=1000, efa_enabled=True
        )
        self.file_system = LustreFileSystem(
            self,
            "Lustre",
            vpc=self.vpc,
            subnet=self.vpc.private_subnets[0],
            storage_capacity_gib=self.sizing.storage_capacity_gib,
            throughput_mbps_per_tib=self.sizing.throughput_mbps_per_tib,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_enabled=True,
            efa_security_group=self.efa_security_group,
        )
        self.file_system.allow_clients_from(self.node_security_group)
        self.data_repositories = self.file_system.add_data_repositories(self.data_bucket.bucket)

        fs = self.file_system
        CfnOutput(self, "FileSystemId", value=fs.file_system_id, description="FSx for Lustre file system id")
        CfnOutput(
            self,
            "DnsName",
            value=fs.dns_name,
            description="FSx for Lustre DNS name (the <dns_name> of <dns_name>@tcp:/<mount_name>)",
        )
        CfnOutput(
            self,
            "MountName",
            value=fs.mount_name,
            description="FSx for Lustre mount name (the <mount_name> of <dns_name>@tcp:/<mount_name>)",
        )
        CfnOutput(
            self,
            "MountCommand",
            value=fs.mount_command,
            description=(
                "Mount the file system at /fsx on a client with the Lustre client installed (FSx for Lustre User "
                "Guide, Mounting from an Amazon EC2 instance); GPU nodes mount it through fs.mount_commands()"
            ),
        )
        CfnOutput(
            self,
            "DataBucketName",
            value=self.data_bucket.bucket_name,
            description="S3 bucket linked to /datasets (import) and /checkpoints (import and export)",
        )
        CfnOutput(
            self,
            "AggregateThroughputMBps",
            value=f"{fs.aggregate_throughput_mbps:.1f}",
            description="Aggregate baseline throughput of the file system (MB/s): storage in TiB x 1,000 MB/s/TiB",
        )
