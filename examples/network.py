"""A VPC for the example stacks: private subnets with NAT egress and flow logs (cdk-nag AwsSolutions-VPC7)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct


def example_vpc(scope: Construct, id: str = "Vpc") -> ec2.Vpc:
    """Two AZs, one NAT gateway, private subnets for GPU nodes, flow logs to CloudWatch Logs."""
    vpc = ec2.Vpc(
        scope,
        id,
        max_azs=2,
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
            ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=18),
        ],
        gateway_endpoints={"S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)},
        restrict_default_security_group=False,
    )
    log_group = logs.LogGroup(
        scope, f"{id}FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.RETAIN
    )
    vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group))
    return vpc


def access_logs_bucket(scope: Construct, id: str = "AccessLogs") -> s3.Bucket:
    """A server access log target: S3-managed encryption, TLS only, versioned, no ACLs, RETAIN (cdk-nag
    AwsSolutions-S1 exempts log target buckets)."""
    return s3.Bucket(
        scope,
        id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
    )
