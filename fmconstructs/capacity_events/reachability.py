"""Whether the Capacity Block events handler can reach what it calls: the EKS API server endpoint and the regional AWS
APIs (interface VPC endpoints), judged at synthesis (see :mod:`fmconstructs.capacity_events`)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from ..errors import FmTypeError, is_token
from ..networking.endpoints import ClusterBackend, EndpointService, GpuClusterEndpoints, services_for
from .scaling import AUTO_SCALING_GROUP, EKS_NODEGROUP, BlockScalingTarget

# Kubernetes API server port of the EKS endpoint (EKS User Guide sec-group-reqs: the control plane is reached on 443).


_CORDON_FAILS = "the Capacity Block cordon {verb} fail at run time (the notice still goes out)"

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


def _no_api_route_problem(
    *, needed: Sequence[str], covered: Sequence[str], isolated_subnet_ids: Sequence[str]
) -> str | None:
    """Why a handler in isolated subnets may not reach the AWS APIs it calls, or None.

    A Lambda function connected to a VPC reaches the internet and AWS APIs only through that VPC (Lambda API
    CreateFunction VpcConfig: "When you connect a function to a VPC, it can access resources and the internet only
    through that VPC"; Lambda Developer Guide configuration-vpc: "When you attach your function to a VPC, it can only
    access resources available within that VPC"): a NAT route or interface VPC endpoints (AWS ParallelCluster User
    Guide lambda-vpc-v3: Lambda functions connected to a private VPC "need to access AWS services", through the
    internet with NAT or through VPC endpoints; Lambda Developer Guide configuration-vpc-endpoints: with AWS
    PrivateLink "without an internet gateway, NAT device, VPN connection, or AWS Direct Connect connection").
    Isolated subnets have no NAT route. A call without a route fails only after the handler's connect timeout and
    retries (handler CLIENT_CONFIG), and the SNS notice, sent last, cannot get out either: the event ends in the
    failed-events queue.
    """
    missing = [service for service in needed if service not in covered]
    if not isolated_subnet_ids or not missing:
        return None
    eks_set = {service.value for service in services_for([ClusterBackend.EKS])}
    enum_names = {service.value: service.name for service in EndpointService}
    default = [service for service in missing if service in eks_set]
    extra = [service for service in missing if service in enum_names and service not in eks_set]
    other = [service for service in missing if service not in enum_names]
    fixes: list[str] = []
    if default:
        fixes.append(f"GpuClusterEndpoints(backends=[ClusterBackend.EKS]) creates {', '.join(default)}")
    if extra:
        listed = ", ".join(f"EndpointService.{enum_names[service]}" for service in extra)
        fixes.append(f"GpuClusterEndpoints(extra_services=[{listed}]) adds {', '.join(extra)}")
    if other:
        listed = ", ".join(
            f"InterfaceVpcEndpointAwsService.{service.upper()}"
            if hasattr(ec2.InterfaceVpcEndpointAwsService, service.upper())
            else f'InterfaceVpcEndpointService("com.amazonaws.<Region>.{service}")'
            for service in other
        )
        fixes.append(f"ec2.InterfaceVpcEndpoint(vpc=..., service={listed}) creates {', '.join(other)}")
    return (
        f"The Capacity Block events handler runs in the EKS cluster's subnets, {len(isolated_subnet_ids)} of them "
        f"isolated (no NAT route), and calls the AWS APIs {', '.join(needed)}; no interface endpoint with private DNS "
        f"in this VPC was passed for {', '.join(missing)} (endpoints=): a Lambda function in a VPC reaches AWS APIs "
        "only through a NAT route or interface VPC endpoints, so those calls cannot connect; each waits out boto3's "
        "60-second connect timeout, so the 1-minute handler can time out before the notice is sent. "
        f"Create interface endpoints for {', '.join(missing)} in the VPC ({'; '.join(fixes)}) and pass them as "
        "endpoints=[...], or give the cluster subnets with a NAT route."
    )


def _outside_vpc_endpoint_problem(
    *, endpoint_public: bool, endpoint_private: bool, public_access_cidrs: Sequence[str] | None
) -> str | None:
    """Why a handler outside any VPC (``eks_in_vpc=False``) may not reach the API server endpoint, or None.

    A private-only endpoint admits only the cluster's VPC and connected networks (EKS User Guide cluster-endpoint: the
    public endpoint can be limited to CIDRs or disabled). A public endpoint admits the handler only if its CIDRs cover
    every IPv4 address: a function outside a VPC has no outbound IPv6 (Lambda Developer Guide configuration-vpc,
    "IPv6 support": no outbound IPv6 "for functions that are not connected to a VPC") and no fixed IPv4 egress address
    to list (UNCONFIRMED as an AWS statement: no AWS page seen that publishes or fixes it; a fixed address is the
    Elastic IP of a NAT gateway, i.e. a function in a VPC). ``public_access_cidrs`` None means the EKS default,
    ``0.0.0.0/0``. Any deploy-time CIDR skips the check.
    """
    if not endpoint_public:
        return (
            "eks_in_vpc=False runs the handler outside the VPC, but the EKS cluster's API server endpoint is private "
            f"only (GpuEksCluster public_endpoint_cidrs=None): {_CORDON_FAILS.format(verb='would')}. Keep "
            "eks_in_vpc=True (the handler then runs in the cluster's subnets and reaches the private endpoint)."
        )
    if public_access_cidrs is None or any(is_token(cidr) for cidr in public_access_cidrs):
        return None
    ipv4 = [
        network
        for network in (ipaddress.ip_network(cidr, strict=False) for cidr in public_access_cidrs)
        if isinstance(network, ipaddress.IPv4Network)
    ]
    if list(ipaddress.collapse_addresses(ipv4)) == [ipaddress.IPv4Network("0.0.0.0/0")]:
        return None
    remedy = (
        "Keep eks_in_vpc=True (the handler then reaches the private endpoint)"
        if endpoint_private
        else "Run the handler in a VPC whose NAT gateway's Elastic IP the public endpoint admits"
    )
    return (
        "eks_in_vpc=False runs the handler outside the VPC, and the EKS cluster's public endpoint admits only "
        f"{', '.join(public_access_cidrs)}: a Lambda function outside a VPC has no fixed egress IP address (its "
        "traffic leaves from AWS-owned IPv4 addresses that can change, and it has no outbound IPv6), so these CIDRs "
        f"cannot be known to admit it and {_CORDON_FAILS.format(verb='may')}. {remedy}."
    )


def _in_vpc_endpoint_problem(
    *, endpoint_public: bool, endpoint_private: bool, isolated_subnet_ids: Sequence[str]
) -> str | None:
    """Why a handler in the cluster's subnets (``eks_in_vpc=True``) may not reach the API server endpoint, or None.

    With the private endpoint on, the handler reaches it inside the VPC (its security group is admitted on 443). A
    public-only endpoint is reached through the internet, which a function in a VPC has only through a NAT gateway
    route of its subnets (Lambda Developer Guide configuration-vpc, "Internet access when attached to a VPC": "When
    you attach your function to a VPC, it can only access resources available within that VPC"); isolated subnets
    have none. ``isolated_subnet_ids``: the handler's subnets known at synthesis to be isolated (the VPC's
    ``isolated_subnets``); subnets of unknown kind are not judged. Public subnets never get here: aws-cdk-lib's
    Lambda Function refuses them without ``allow_public_subnet`` (aws-cdk-lib 2.275.0 aws-lambda/lib/function.js:
    "Lambda Functions in a public subnet can NOT access the internet"; Lambda Developer Guide configuration-vpc:
    "Connecting a function to a public subnet doesn't give it internet access or a public IP address").
    """
    if endpoint_private or not endpoint_public or not isolated_subnet_ids:
        return None
    return (
        "The EKS cluster's API server endpoint is public only and the Capacity Block events handler runs in the "
        f"cluster's subnets, {len(isolated_subnet_ids)} of them isolated (no route to a NAT gateway): a Lambda "
        f"function in a VPC reaches the internet only through a NAT gateway, so {_CORDON_FAILS.format(verb='would')}. "
        "Give the cluster subnets with a NAT route, or turn its private endpoint on."
    )
