"""The network side of a Lustre file system: its ports, its Connections, its security groups and its subnet."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_ec2 as ec2

from .._validate import (
    check_construct,
    check_subnet,
    known,
)
from ..errors import FmTypeError, FmValidationError
from ..networking.security_group import EfaSecurityGroup

LUSTRE_TCP_PORT = 988
LUSTRE_TCP_PORT_RANGE = (1018, 1023)


def lustre_ports() -> tuple[ec2.Port, ec2.Port]:
    """The Lustre ports: TCP 988 and TCP 1018-1023."""
    return ec2.Port.tcp(LUSTRE_TCP_PORT), ec2.Port.tcp_range(*LUSTRE_TCP_PORT_RANGE)


def _as_connectable(other: Any) -> ec2.IConnectable:
    """Accept anything with ``connections`` (e.g. :class:`EfaSecurityGroup`) by passing its Connections object."""
    connections = getattr(other, "connections", None)
    return connections if isinstance(connections, ec2.Connections) else other


class LustreConnections(ec2.Connections):
    """Connections whose "default port" is both Lustre port ranges, opened both ways.

    ``allow_default_port_from(clients)`` opens TCP 988 and 1018-1023 from the clients to the file system and from the
    file system to the clients (``ec2.Port`` holds one range, so :attr:`default_port` is 988 alone; rules made by
    these overrides cover both ranges).
    """

    def allow_default_port_from(self, other: ec2.IConnectable, description: str | None = None) -> None:
        peer = _as_connectable(other)
        for port in lustre_ports():
            self.allow_from(peer, port, description or "Lustre clients")
            self.allow_to(peer, port, description or "Lustre clients")

    def allow_default_port_to(self, other: ec2.IConnectable, description: str | None = None) -> None:
        peer = _as_connectable(other)
        for port in lustre_ports():
            self.allow_to(peer, port, description)

    def allow_default_port_internally(self, description: str | None = None) -> None:
        for port in lustre_ports():
            self.allow_internally(port, description or "Lustre servers")

    def allow_default_port_from_any_ipv4(self, description: str | None = None) -> None:
        raise FmValidationError(
            "peer", "0.0.0.0/0", "a client security group (fs.allow_clients_from(...)), not any IPv4 address"
        )


def _select_subnet(vpc: ec2.IVpc, subnet: object, vpc_subnets: object) -> ec2.ISubnet:
    """The one subnet of the file system (FSx for Lustre takes exactly one SubnetId).

    ``subnet``, else the first subnet of ``vpc_subnets``, else the VPC's first private subnet, else its first isolated
    subnet; a VPC with neither (public subnets only, or imported without subnet ids) needs ``subnet``.
    """
    if subnet is not None and vpc_subnets is not None:
        raise FmValidationError("vpc_subnets", "given", "None when subnet is given (pass one of them)")
    if subnet is not None:
        checked: ec2.ISubnet = check_subnet("subnet", subnet)
        return checked
    if vpc_subnets is not None:
        if not isinstance(vpc_subnets, ec2.SubnetSelection):
            raise FmTypeError(
                "vpc_subnets", vpc_subnets, f"an ec2.SubnetSelection (got a {type(vpc_subnets).__name__})"
            )
        try:
            selected = vpc.select_subnets(
                availability_zones=vpc_subnets.availability_zones,
                one_per_az=vpc_subnets.one_per_az,
                subnet_filters=vpc_subnets.subnet_filters,
                subnet_group_name=vpc_subnets.subnet_group_name,
                subnets=vpc_subnets.subnets,
                subnet_type=vpc_subnets.subnet_type,
            ).subnets
        except RuntimeError as error:  # jsii: aws-cdk-lib's own selection errors
            raise FmValidationError(
                "vpc_subnets",
                "the given ec2.SubnetSelection",
                f"a selection that matches subnets of the VPC ({str(error).splitlines()[0]})",
            ) from None
        if not selected:
            raise FmValidationError("vpc_subnets", "the given ec2.SubnetSelection", "a selection that matches a subnet")
        return selected[0]
    for candidates in (vpc.private_subnets, vpc.isolated_subnets):
        if candidates:
            return candidates[0]
    raise FmValidationError(
        "subnet",
        None,
        "given (subnet=ec2.Subnet.from_subnet_attributes(...), or vpc_subnets=ec2.SubnetSelection(...)) because the "
        "VPC has no private or isolated subnet to default to; FSx for Lustre takes one subnet, best in the zone of "
        "its clients",
    )


def _describe_subnet(subnet: ec2.ISubnet) -> str:
    subnet_id = subnet.subnet_id
    return f"subnet {subnet_id}" if known(subnet_id) else f"subnet {subnet.node.path}"


def _optional_security_group(
    parameter: str, value: ec2.ISecurityGroup | EfaSecurityGroup | None
) -> ec2.ISecurityGroup | None:
    """An ``ec2.ISecurityGroup`` (an :class:`EfaSecurityGroup` gives its group), or None."""
    if value is None:
        return None
    if isinstance(value, EfaSecurityGroup):
        return value.security_group
    group: ec2.ISecurityGroup = check_construct(
        parameter, value, attribute="security_group_id", expected="an ec2.ISecurityGroup or EfaSecurityGroup"
    )
    return group


def _is_created_here(group: ec2.ISecurityGroup) -> bool:
    """Whether the group is an ``AWS::EC2::SecurityGroup`` of this app (not imported by id)."""
    return isinstance(group.node.default_child, ec2.CfnSecurityGroup)


def _same_security_group(a: ec2.ISecurityGroup, b: ec2.ISecurityGroup) -> bool | None:
    """Whether two groups are the same, or None when that is only known at deploy time."""
    if a is b or a.node.path == b.node.path:
        return True
    a_id, b_id = a.security_group_id, b.security_group_id
    if a_id == b_id:
        return True
    if known(a_id) and known(b_id):
        return False  # two literal ids
    if _is_created_here(a) and _is_created_here(b):
        return False  # two AWS::EC2::SecurityGroup resources of this app
    return None  # at least one is imported by a deploy-time id


def _describe_group(group: ec2.ISecurityGroup) -> str:
    group_id = group.security_group_id
    return group_id if known(group_id) else group.node.path


def _allow_all_traffic_to_itself(group: ec2.ISecurityGroup) -> None:
    """EFA: all traffic in from and out to members of ``group`` (rules by security group id)."""
    # The group itself as the peer: CDK then writes separate rule resources (an inline self-reference is a cycle).
    group.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic from the group")
    group.add_egress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic to the group")
