"""Helpers of tests/hyperpod/test_hyperpod_efa_group.py that other test modules use too."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template


def efa_group_ids(template: Template, stack: cdk.Stack, *file_systems: Any) -> set[str]:
    """Logical ids of the security groups with EFA's self-referencing all-traffic ingress and egress rules, except
    the Lustre servers' own group of each EFA-enabled file system in ``file_systems`` (FSx needs those rules on it
    too; it is not a group the nodes join)."""
    resources = template.to_json()["Resources"]
    servers = {stack.resolve(fs.security_group.node.default_child.logical_id) for fs in file_systems}

    def self_referencing(rule_type: str, peer: str) -> set[str]:
        found = set()
        for resource in resources.values():
            props = resource.get("Properties", {})
            if resource["Type"] != rule_type or props.get("IpProtocol") != "-1":
                continue
            group, other = props.get("GroupId"), props.get(peer)
            if isinstance(group, dict) and group == other and "Fn::GetAtt" in group:
                found.add(group["Fn::GetAtt"][0])
        return found

    ingress = self_referencing("AWS::EC2::SecurityGroupIngress", "SourceSecurityGroupId")
    egress = self_referencing("AWS::EC2::SecurityGroupEgress", "DestinationSecurityGroupId")
    return (ingress & egress) - servers
