"""FmImages: GPU node images for the PCS examples, built by EC2 Image Builder (issue 11, section 1).

Two pipelines, one per architecture, on the AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Amazon Linux 2023):

- **X86**: P5, P5en and P6-B200 nodes (x86_64): PCS agent, Slurm 25.11, EFA, Fabric Manager, Lustre client, DCGM,
  the dcgm-exporter image, node_exporter, the Prometheus agent and the Slurm exporter; rebuilt on Monday mornings
  when a new DLAMI or component version is out; AMI id in ``/imagebuilder/fmconstructs/pcs/x86_64-slurm-25.11``.
- **Gb200**: P6e-GB200 UltraServer nodes (arm64), with IMEX instead of Fabric Manager; built on demand
  (``aws imagebuilder start-image-pipeline-execution``, the ``Gb200StartCommand`` output); AMI id in
  ``/imagebuilder/fmconstructs/pcs/gb200-arm64-slurm-25.11``.

Build instances run in the private subnets (NAT egress for the installers), with IMDSv2 only. Deploy this stack,
start each pipeline once, then deploy the PCS stacks with the parameters (context keys
``fmconstructs:pcs-ami-x86-parameter`` and ``fmconstructs:pcs-ami-gb200-parameter``).

Context: ``fmconstructs:vpc`` (``{"vpcId": ..., "availabilityZones": [...], "privateSubnetIds": [...]}``) uses an
existing VPC instead of a new one.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmconstructs.images import BuildSchedule, GpuNodeImage

from .network import access_logs_bucket, example_vpc

#: Where the pipelines publish the AMI ids (Image Builder may only write parameters under /imagebuilder/).
X86_AMI_PARAMETER = "/imagebuilder/fmconstructs/pcs/x86_64-slurm-25.11"
GB200_AMI_PARAMETER = "/imagebuilder/fmconstructs/pcs/gb200-arm64-slurm-25.11"


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


class ImagesStack(Stack):
    """Two Image Builder pipelines: x86_64 (P5/P5en/P6-B200) and arm64 (P6e-GB200) PCS node images."""

    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        # Server access logs through a bucket policy rather than ACLs (as the storage and PCS examples).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.vpc = _vpc(self)
        self.access_logs_bucket = access_logs_bucket(self)

        self.x86 = GpuNodeImage(
            self,
            "X86",
            instance_types=["p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"],
            vpc=self.vpc,
            ssm_parameter_name=X86_AMI_PARAMETER,
            schedule=BuildSchedule.weekly_when_parent_changes(),
            server_access_logs_bucket=self.access_logs_bucket,
        )
        self.gb200 = GpuNodeImage(
            self,
            "Gb200",
            instance_types=["p6e-gb200.36xlarge"],
            vpc=self.vpc,
            ssm_parameter_name=GB200_AMI_PARAMETER,
            schedule=BuildSchedule.manual(),
            server_access_logs_bucket=self.access_logs_bucket,
        )

        for name, image in (("X86", self.x86), ("Gb200", self.gb200)):
            CfnOutput(
                self,
                f"{name}PipelineArn",
                value=image.pipeline_arn,
                description=f"Image Builder pipeline of the {image.architecture.value} GPU node image",
            )
            CfnOutput(
                self,
                f"{name}AmiParameter",
                value=image.ssm_parameter_name,
                description="SSM parameter with the newest AMI id (exists after the first build); "
                "PcsAmi.from_ssm_parameter reads it",
            )
            CfnOutput(
                self,
                f"{name}StartCommand",
                value=image.start_pipeline_command,
                description="Starts a build (manual trigger)",
            )
            CfnOutput(
                self,
                f"{name}LogsBucket",
                value=image.logs_bucket.bucket_name,
                description=f"Build instance logs under {image.logs_prefix}",
            )
