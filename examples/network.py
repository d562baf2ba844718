"""A VPC for the example stacks: private subnets with NAT egress and flow logs (cdk-nag AwsSolutions-VPC7)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
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
