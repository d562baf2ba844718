"""A security group for EFA traffic."""

from __future__ import annotations

import re

import jsii
from aws_cdk import Aspects, IAspect, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IConstruct

from .._validate import check_str, check_vpc, located

# EC2 API CreateSecurityGroup ``Description``: "Up to 255 characters in length. Valid characters: a-z, A-Z, 0-9,
# spaces, and ._-:/()#,@[]+=&;{}!$*" (botocore ec2 CreateSecurityGroupRequest.Description).
_DESCRIPTION = re.compile(r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]*")

# CDK's own "no traffic" placeholder rule (aws-ec2 SecurityGroup, allowAllOutbound: false).
_NO_TRAFFIC_EGRESS = {
    "CidrIp": "255.255.255.255/32",
    "Description": "Disallow all traffic",
    "IpProtocol": "icmp",
    "FromPort": 252,
    "ToPort": 86,
}


@jsii.implements(IAspect)
class _CloseEgress:
    """At synthesis, after every rule is in: restore the placeholder if the group has no inline egress."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, ec2.CfnSecurityGroup):
            return
        rules = Stack.of(node).resolve(node.security_group_egress) if node.security_group_egress else None
        if not rules:
            node.add_property_override("SecurityGroupEgress", [_NO_TRAFFIC_EGRESS])


def close_default_egress(security_group: ec2.SecurityGroup) -> None:
    """Keep a group created with ``allow_all_outbound=False`` closed when all its egress rules are separate
    resources.

    CDK removes its "no traffic" placeholder as soon as any egress rule is added, even when that rule is emitted as
    a separate ``AWS::EC2::SecurityGroupEgress`` (always the case for security-group peers). The group then has no
    inline egress and EC2 gives it the default allow-all egress rule. This puts the placeholder back whenever the
    group would otherwise have no inline egress.
    """
    cfn = security_group.node.default_child
    assert isinstance(cfn, ec2.CfnSecurityGroup)
    Aspects.of(cfn).add(_CloseEgress())


@jsii.implements(ec2.IConnectable)
class EfaSecurityGroup(Construct):
    """A security group that allows all traffic in and out to and from itself, and nothing else.

    EFA requires exactly this (EC2 User Guide "efa-start": inbound and outbound rules for all traffic whose source
    and destination is the group itself). Other constructs open what they need through :attr:`connections`, e.g.
    ``file_system.connections.allow_default_port_from(efa_group)``.
    """

    @located
    def __init__(self, scope: Construct, id: str, *, vpc: ec2.IVpc, description: str | None = None) -> None:
        """
        :param vpc: the VPC of the group; may be imported by id (``Vpc.from_vpc_attributes``, a ``CfnParameter``).
        :param description: EC2 ``GroupDescription``: up to 255 characters of a-z, A-Z, 0-9, spaces and
            ``._-:/()#,@[]+=&;{}!$*``. Default: a description of the EFA rules.
        """
        check_vpc("vpc", vpc)
        if description is not None:
            check_str(
                "description",
                description,
                pattern=_DESCRIPTION,
                max_length=255,
                allowed="up to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$* "
                "(EC2 GroupDescription)",
            )
        super().__init__(scope, id)
        self.security_group = ec2.SecurityGroup(
            self,
            "Resource",
            vpc=vpc,
            description=description or "EFA: all traffic to and from members of this group only",
            allow_all_outbound=False,
            allow_all_ipv6_outbound=False,
        )
        # Passing the group itself as the peer makes CDK emit separate rule resources (an inline self-reference
        # would be a circular dependency).
        sg = self.security_group
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "EFA: all traffic from the group")
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), "EFA: all traffic to the group")
        close_default_egress(sg)

    @property
    def security_group_id(self) -> str:
        return self.security_group.security_group_id

    @property
    def connections(self) -> ec2.Connections:
        """Network rules for this group (IConnectable)."""
        return self.security_group.connections
