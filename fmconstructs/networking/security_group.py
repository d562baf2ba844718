"""A security group for EFA traffic."""

from __future__ import annotations

import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct


@jsii.implements(ec2.IConnectable)
class EfaSecurityGroup(Construct):
    """A security group that allows all traffic in and out to and from itself, and nothing else.

    EFA requires exactly this (EC2 User Guide "efa-start": inbound and outbound rules for all traffic whose source
    and destination is the group itself). Other constructs open what they need through :attr:`connections`, e.g.
    ``file_system.connections.allow_default_port_from(efa_group)``.
    """

    def __init__(self, scope: Construct, id: str, *, vpc: ec2.IVpc, description: str | None = None) -> None:
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

    @property
    def security_group_id(self) -> str:
        return self.security_group.security_group_id

    @property
    def connections(self) -> ec2.Connections:
        """Network rules for this group (IConnectable)."""
        return self.security_group.connections
