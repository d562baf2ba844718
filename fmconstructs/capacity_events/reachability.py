"""Whether the Capacity Block events handler can reach what it calls: the EKS API server endpoint and the regional AWS
APIs (interface VPC endpoints), judged at synthesis (see :mod:`fmconstructs.capacity_events`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from ..errors import FmTypeError
from ..networking.endpoints import GpuClusterEndpoints
from .rules import _in_vpc_endpoint_problem as _in_vpc_endpoint_problem
from .rules import _no_api_route_problem as _no_api_route_problem
from .rules import _outside_vpc_endpoint_problem as _outside_vpc_endpoint_problem
from .scaling import AUTO_SCALING_GROUP, EKS_NODEGROUP, BlockScalingTarget

# Kubernetes API server port of the EKS endpoint (EKS User Guide sec-group-reqs: the control plane is reached on 443).


# The regional AWS APIs the handler calls (handler/index.py: sns.publish always; ec2.describe_instances for the drain
# and the cordon; eks.describe_cluster for the cordon; ssm.send_command and get_command_invocation for the drain), as
# interface endpoint service short names (com.amazonaws.<Region>.<name>; aws-cdk-lib
# InterfaceVpcEndpointAwsService.SNS/EC2/EKS/SSM). sts is absent: eks_token() only presigns GetCallerIdentity
# (botocore generate_presigned_url signs locally, sends nothing).
# No kms for a KMS-encrypted alert topic: SNS itself calls KMS for server-side encryption (UNCONFIRMED: no AWS page
# seen that says a publisher never needs a route to KMS).
_SNS, _EC2, _EKS, _SSM = "sns", "ec2", "eks", "ssm"
# The expiry schedule: ec2 (DescribeCapacityReservations, DescribeCapacityBlocks) and EventBridge Scheduler
# (CreateSchedule; interface endpoint com.amazonaws.<Region>.scheduler, UNCONFIRMED: not in aws-cdk-lib 2.275's
# InterfaceVpcEndpointAwsService).
_SCHEDULER = "scheduler"
# Scaling targets: eks (DescribeNodegroup, UpdateNodegroupConfig) and autoscaling (UpdateAutoScalingGroup); interface
# endpoint short names as aws-cdk-lib InterfaceVpcEndpointAwsService.EKS / AUTOSCALING.
_AUTOSCALING = "autoscaling"
# An AWS service's interface endpoint service name: com.amazonaws.<Region>.<service> (aws-cdk-lib
# InterfaceVpcEndpointAwsService; the Region is a literal in a stack with an environment). Region: letters, dashes,
# a number (us-east-1, us-gov-west-1), so that endpoint services ("com.amazonaws.vpce.<Region>.vpce-svc-...") differ.
_AWS_SERVICE_NAME = re.compile(r"com\.amazonaws\.[a-z]{2}(?:-[a-z]+)+-[0-9]+\.([a-z0-9.-]+)")


def _api_services(
    *, pcs: bool, eks: bool, scaling: Sequence[BlockScalingTarget] = (), schedule: bool = False, reclaim: bool = False
) -> tuple[str, ...]:
    """The interface endpoint services of the AWS APIs the handler calls (see ``_SNS`` above)."""
    services = [_SNS]
    if pcs or eks or scaling or schedule or reclaim:  # ec2: DescribeInstances (pcs, eks); DescribeCapacityReservations
        services.append(_EC2)
    if eks or any(target.kind == EKS_NODEGROUP for target in scaling):
        services.append(_EKS)
    if pcs:
        services.append(_SSM)
    if any(target.kind == AUTO_SCALING_GROUP for target in scaling):
        services.append(_AUTOSCALING)
    if schedule:
        services.append(_SCHEDULER)
    return tuple(services)


def _vpc_endpoints(parameter: str, value: object) -> tuple[ec2.CfnVPCEndpoint, ...]:
    """The CfnVPCEndpoint resources of ``endpoints=``: GpuClusterEndpoints, InterfaceVpcEndpoint, CfnVPCEndpoint."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise FmTypeError(parameter, value, f"a list of VPC endpoints (got a {type(value).__name__})")
    found: list[ec2.CfnVPCEndpoint] = []
    for index, item in enumerate(value):
        if isinstance(item, GpuClusterEndpoints):
            found += item.interface_endpoints.values()
        elif isinstance(item, ec2.CfnVPCEndpoint):
            found.append(item)
        elif isinstance(item, ec2.InterfaceVpcEndpoint) and isinstance(item.node.default_child, ec2.CfnVPCEndpoint):
            found.append(item.node.default_child)
        else:
            raise FmTypeError(
                f"{parameter}[{index}]",
                item,
                f"a GpuClusterEndpoints, ec2.InterfaceVpcEndpoint or ec2.CfnVPCEndpoint (got a {type(item).__name__})",
            )
    return tuple(found)


def _endpoint_service(endpoint: ec2.CfnVPCEndpoint, vpc_id: str) -> str | None:
    """The service short name an interface endpoint with private DNS in VPC ``vpc_id`` serves, or None.

    Private DNS is what sends the SDK's default regional name (``sns.<Region>.amazonaws.com``) to the endpoint (EC2 API
    CreateVpcEndpoint PrivateDnsEnabled: the private hosted zone "contains a record set for the default public DNS
    name for the service for the Region ... which resolves to the private IP addresses of the endpoint network
    interfaces in the VPC"); CloudFormation's default for AWS::EC2::VPCEndpoint PrivateDnsEnabled is false
    (UNCONFIRMED: the AWS::EC2::VPCEndpoint page was not opened; aws-cdk-lib's InterfaceVpcEndpoint writes it
    explicitly). A deploy-time PrivateDnsEnabled is taken as on. The VPC is compared by its id string (the same token
    for the same ec2.IVpc), so an endpoint of another import of the same VPC does not count.
    """
    if endpoint.vpc_id != vpc_id or endpoint.vpc_endpoint_type != "Interface":
        return None
    dns = endpoint.private_dns_enabled
    if dns is not True and not cdk.Token.is_unresolved(dns):
        return None
    # InterfaceVpcEndpointAwsService names are tokens ("${Token[..]}.${Token[..]}.sns${Token[..]}"): resolve them;
    # an environment-agnostic stack gives {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".sns"]]}.
    name = cdk.Stack.of(endpoint).resolve(endpoint.service_name)
    if isinstance(name, str):
        match = _AWS_SERVICE_NAME.fullmatch(name)
        return match.group(1) if match else None
    join = name.get("Fn::Join") if isinstance(name, dict) else None
    if isinstance(join, list) and len(join) == 2 and join[0] == "" and isinstance(join[1], list):
        parts = join[1]
        if len(parts) == 3 and parts[0] == "com.amazonaws." and isinstance(parts[2], str) and parts[2][:1] == ".":
            return str(parts[2][1:]) or None
    return None
