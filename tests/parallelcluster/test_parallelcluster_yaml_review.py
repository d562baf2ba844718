"""The ``.pcluster.yaml`` in cdk.out is labelled a review artifact and lists its CloudFormation references (issue 18:
the file held Ref/Fn::GetAtt values without saying so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import yaml
from aws_cdk import aws_ec2 as ec2

from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmQueue
from fmconstructs.parallelcluster.review import REVIEW_HEADER_TITLE, cloudformation_references


def _synth(tmp_path: Path, *, created_subnet: bool) -> tuple[ParallelCluster, str]:
    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Review", env=cdk.Environment(account="123456789012", region="us-east-1"))
    if created_subnet:
        vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0)
        subnet = vpc.public_subnets[0]
    else:
        subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    cluster = ParallelCluster(
        stack,
        "Cluster",
        cluster_name="review",
        head_node=HeadNode(instance_type="c7i.large", subnet=subnet),
        queues=[
            SlurmQueue(
                name="q", subnets=[subnet], compute_resources=[ComputeResource(name="c", instance_type="c7i.large")]
            )
        ],
    )
    app.synth()
    return cluster, (tmp_path / cluster.yaml_file_name).read_text()


def test_the_file_opens_with_the_review_label(tmp_path: Path) -> None:
    _, text = _synth(tmp_path, created_subnet=True)
    assert text.startswith(REVIEW_HEADER_TITLE + "\n")
    assert "Review/Cluster" in text.splitlines()[1]


def test_the_header_lists_each_reference_by_its_override_path(tmp_path: Path) -> None:
    _, text = _synth(tmp_path, created_subnet=True)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert "#   HeadNode.Networking.SubnetId: Ref" in header
    assert "#   Scheduling.SlurmQueues.0.Networking.SubnetIds.0: Ref" in header
    assert any("value(s) below are CloudFormation references" in line for line in header)


def test_the_yaml_still_loads_to_the_deployed_configuration(tmp_path: Path) -> None:
    cluster, text = _synth(tmp_path, created_subnet=True)
    assert yaml.safe_load(text) == cluster.to_dict()


def test_a_configuration_without_references_says_so(tmp_path: Path) -> None:
    _, text = _synth(tmp_path, created_subnet=False)
    assert text.startswith(REVIEW_HEADER_TITLE)
    assert "It holds no CloudFormation reference" in text
    assert "value(s) below" not in text


def test_write_yaml_writes_the_same_header(tmp_path: Path) -> None:
    cluster, _ = _synth(tmp_path / "out", created_subnet=True)
    written = cluster.write_yaml(tmp_path / "copy.yaml").read_text()
    assert written.startswith(REVIEW_HEADER_TITLE)


def test_references_are_found_anywhere_and_plain_values_are_not() -> None:
    config: dict[str, Any] = {
        "A": {"Ref": "X"},
        "B": [{"C": {"Fn::GetAtt": ["Y", "Id"]}}, "plain"],
        "D": {"Enabled": True},
        "E": {"Fn::Join": ["", ["s3://", {"Ref": "Bucket"}]]},
    }
    assert cloudformation_references(config) == [("A", "Ref"), ("B.0.C", "Fn::GetAtt"), ("E", "Fn::Join")]
