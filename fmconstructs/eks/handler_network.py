"""A Lambda handler that calls the Kubernetes API of a GpuEksCluster from inside its VPC.

Shared by the rooms above the backends (:mod:`fmconstructs.capacity_events`, :mod:`fmconstructs.remediation`): the
handler runs in the cluster's subnets with its own security group, admitted to the API server on 443 only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

#: AWSLambdaENIManagementAccess: the AWS managed policy with exactly the ENI permissions a function in a VPC needs
#: (ec2:Create/Describe/DeleteNetworkInterface, Assign/UnassignPrivateIpAddresses, Resource "*"; AWS Managed Policy
#: reference; Lambda Developer Guide configuration-vpc), without the log permissions of AWSLambdaVPCAccessExecutionRole.
ENI_POLICY = "service-role/AWSLambdaENIManagementAccess"
API_SERVER_PORT = 443


def in_cluster_network(
    scope: Construct, cluster: GpuEksCluster, role: iam.IRole, *, description: str
) -> tuple[ec2.SecurityGroup, dict[str, Any]]:
    """The handler's security group (``HandlerSecurityGroup`` in ``scope``) admitted to the cluster's API server on 443
    (``ApiServerFromHandler``), the ENI policy on ``role``, and the Function props that place it in the cluster's
    subnets. ``description`` names the handler in both descriptions (create-only strings: keep them stable)."""
    role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(ENI_POLICY))
    group = ec2.SecurityGroup(
        scope, "HandlerSecurityGroup", vpc=cluster.vpc, description=description, allow_all_outbound=True
    )
    # The EKS-created cluster security group is on the control plane's network interfaces (EKS User Guide
    # sec-group-reqs, "Default cluster security group"); admit the handler there on 443 only.
    ec2.CfnSecurityGroupIngress(
        scope,
        "ApiServerFromHandler",
        group_id=cluster.cluster_security_group.security_group_id,
        source_security_group_id=group.security_group_id,
        ip_protocol="tcp",
        from_port=API_SERVER_PORT,
        to_port=API_SERVER_PORT,
        description=f"{description.split(':')[0]} to the Kubernetes API server",
    )
    props = {
        "vpc": cluster.vpc,
        "vpc_subnets": ec2.SubnetSelection(subnets=list(cluster.subnets)),
        "security_groups": [group],
    }
    return group, props
