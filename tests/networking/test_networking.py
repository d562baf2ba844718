"""EFA security group and placement group constructs."""

from __future__ import annotations

import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs import ClusterPlacementGroup, EfaSecurityGroup, FmValidationError, PlacementStrategy


def test_efa_group_allows_all_traffic_to_and_from_itself_only(scene):
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    t = scene.template()
    sg_id = scene.stack.resolve(efa.security_group_id)
    t.resource_count_is("AWS::EC2::SecurityGroup", 1)
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "-1", "SourceSecurityGroupId": sg_id, "GroupId": sg_id},
    )
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"IpProtocol": "-1", "DestinationSecurityGroupId": sg_id, "GroupId": sg_id},
    )
    t.resource_count_is("AWS::EC2::SecurityGroupIngress", 1)
    t.resource_count_is("AWS::EC2::SecurityGroupEgress", 1)
    # Nothing open to CIDRs; the inline egress keeps CDK's no-traffic placeholder so that EC2 does not add its
    # default allow-all egress rule.
    props = next(iter(t.find_resources("AWS::EC2::SecurityGroup").values()))["Properties"]
    assert "SecurityGroupIngress" not in props
    assert props["SecurityGroupEgress"] == [
        {
            "CidrIp": "255.255.255.255/32",
            "Description": "Disallow all traffic",
            "IpProtocol": "icmp",
            "FromPort": 252,
            "ToPort": 86,
        }
    ]


def test_inline_cidr_egress_added_later_is_kept(scene):
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    efa.security_group.add_egress_rule(ec2.Peer.ipv4("10.0.0.0/16"), ec2.Port.tcp(443), "HTTPS in the VPC")
    props = next(iter(scene.template().find_resources("AWS::EC2::SecurityGroup").values()))["Properties"]
    assert [r["CidrIp"] for r in props["SecurityGroupEgress"]] == ["10.0.0.0/16"]


def test_other_constructs_add_rules_through_connections(scene):
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    other = ec2.SecurityGroup(scene.stack, "Fs", vpc=scene.vpc)
    other.connections.allow_from(efa, ec2.Port.tcp(988), "Lustre")
    scene.template().has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"FromPort": 988, "ToPort": 988, "SourceSecurityGroupId": scene.stack.resolve(efa.security_group_id)},
    )


def test_cluster_placement_group_and_arn(scene):
    pg = ClusterPlacementGroup(scene.stack, "Pg")
    scene.template().has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "cluster"})
    arn = scene.stack.resolve(pg.placement_group_arn)
    assert "placement-group/" in str(arn)
    assert pg.placement_group.placement_group_name is not None


def test_partition_placement_group(scene):
    ClusterPlacementGroup(scene.stack, "Pg", strategy=PlacementStrategy.PARTITION, partition_count=3)
    scene.template().has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "partition", "PartitionCount": 3})


@pytest.mark.parametrize(
    ("strategy", "count", "message"),
    [
        (PlacementStrategy.CLUSTER, 2, r"partition_count must be None unless strategy is PARTITION, got 2"),
        (PlacementStrategy.PARTITION, 8, r"partition_count must be between 1 and 7, got 8"),
        (PlacementStrategy.PARTITION, 0, r"partition_count must be between 1 and 7, got 0"),
    ],
)
def test_invalid_placement_groups(scene, strategy, count, message):
    with pytest.raises(FmValidationError, match=message):
        ClusterPlacementGroup(scene.stack, "Pg", strategy=strategy, partition_count=count)


def test_no_placement_group_by_default(scene):
    from fmconstructs import GpuLaunchTemplate

    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc)
    scene.template().resource_count_is("AWS::EC2::PlacementGroup", 0)
    data = next(iter(scene.template().find_resources("AWS::EC2::LaunchTemplate").values()))["Properties"]
    assert "Placement" not in data["LaunchTemplateData"]
