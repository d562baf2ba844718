"""What an operator needs from GpuEksCluster: name, ARN, API endpoint and the ``aws eks update-kubeconfig`` command,
as CloudFormation values (no account, region or partition literal)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs.eks import GpuEksCluster

from tests.conftest import new_app


@pytest.fixture(scope="module")
def cluster_and_stack():
    stack = cdk.Stack(new_app(), "EksOutputs")  # environment-agnostic
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    return cluster, stack


def _logical_id(cluster: GpuEksCluster) -> str:
    resource = cluster.cluster.node.default_child
    assert isinstance(resource, cdk.CfnElement)
    return str(cdk.Stack.of(cluster).resolve(resource.logical_id))


def test_update_kubeconfig_command_joins_the_cluster_name_and_the_region(cluster_and_stack):
    cluster, stack = cluster_and_stack
    assert stack.resolve(cluster.update_kubeconfig_command) == {
        "Fn::Join": [
            "",
            ["aws eks update-kubeconfig --name ", {"Ref": _logical_id(cluster)}, " --region ", {"Ref": "AWS::Region"}],
        ]
    }


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("cluster_name", lambda lid: {"Ref": lid}),
        ("cluster_arn", lambda lid: {"Fn::GetAtt": [lid, "Arn"]}),
        ("cluster_endpoint", lambda lid: {"Fn::GetAtt": [lid, "Endpoint"]}),
    ],
)
def test_cluster_identity_and_endpoint(cluster_and_stack, attribute, expected):
    cluster, stack = cluster_and_stack
    assert stack.resolve(getattr(cluster, attribute)) == expected(_logical_id(cluster))
