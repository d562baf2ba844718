"""What an operator needs from a PCS cluster (issue 10 section 3): ids, ARN, the Slurm controller endpoint and how to
log in, as construct properties and as the example stacks' outputs (with descriptions)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from examples.pcs_stacks import PcsGb200Stack, PcsP5Stack
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.pcs.node_group import NODE_GROUP_ID_TAG

from tests.conftest import ENV, new_app, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _text(stack: cdk.Stack, value: Any) -> str:
    """A resolved value as one string (Fn::Join parts joined, references shown as <Logical.Attr> / <Ref>)."""
    resolved = stack.resolve(value)
    if isinstance(resolved, str):
        return resolved
    parts = []
    for part in resolved["Fn::Join"][1]:
        if isinstance(part, str):
            parts.append(part)
        elif "Ref" in part:
            parts.append(f"<{part['Ref']}>")
        else:
            logical, attribute = part["Fn::GetAtt"]
            parts.append(f"<{logical.rstrip('0123456789ABCDEF')}.{attribute}>")
    return "".join(parts)


@pytest.fixture(scope="module")
def built() -> tuple[cdk.Stack, PcsCluster]:
    app = new_app()
    stack = cdk.Stack(app, "Ops", env=ENV)  # a region known at synthesis still renders as AWS::Region
    cluster = PcsCluster(stack, "Cluster", vpc=_vpc(stack))
    cluster.add_login_node_group("Login", ami=AMI)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)
    return stack, cluster


def _vpc(stack: cdk.Stack) -> Any:
    from aws_cdk import aws_ec2 as ec2

    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )


def test_cluster_id_and_arn(built):
    stack, cluster = built
    logical = stack.get_logical_id(cluster.resource)
    assert stack.resolve(cluster.cluster_id) == {"Fn::GetAtt": [logical, "Id"]}
    assert stack.resolve(cluster.cluster_arn) == {"Fn::GetAtt": [logical, "Arn"]}


def test_slurm_endpoints_are_what_pcs_getatt_offers(built):
    # aws-cdk-lib CfnCluster attributes: attr_arn, attr_endpoints, attr_error_info, attr_id, attr_status.
    stack, cluster = built
    assert stack.resolve(cluster.slurm_endpoints) == {
        "Fn::GetAtt": [stack.get_logical_id(cluster.resource), "Endpoints"]
    }


def test_slurm_controller_endpoint_command(built):
    stack, cluster = built
    text = _text(stack, cluster.slurm_controller_endpoint_command)
    assert text == (
        "aws pcs get-cluster --region <AWS::Region> --cluster-identifier <Cluster.Id> "
        "--query \"cluster.endpoints[?type=='SLURMCTLD'].[privateIpAddress,port]\" --output text"
    )


def test_login_command_opens_a_session_on_a_login_node(built):
    stack, cluster = built
    (login,) = cluster.login_node_groups
    text = _text(stack, cluster.login_command)
    assert text == _text(stack, login.session_command)
    assert text == (
        'aws ssm start-session --region <AWS::Region> --target "$(aws ec2 describe-instances --region <AWS::Region> '
        f"--filters Name=tag:{NODE_GROUP_ID_TAG},Values=<ClusterLogin.Id> Name=instance-state-name,Values=running "
        "--query 'Reservations[0].Instances[0].InstanceId' --output text)\""
    )
    assert NODE_GROUP_ID_TAG == "aws:pcs:compute-node-group-id"  # PCS User Guide working-with_cng_find-instances


def test_find_instances_command(built):
    stack, cluster = built
    group = cluster.node.find_child("Gpu")
    text = _text(stack, group.find_instances_command)
    assert text.startswith("aws ec2 describe-instances --region <AWS::Region> --filters ")
    assert f"Name=tag:{NODE_GROUP_ID_TAG},Values=<ClusterGpu.Id>" in text


def test_no_login_command_without_login_nodes():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    assert cluster.login_command is None and cluster.login_node_groups == ()


def test_commands_name_no_region_literal(built):
    stack, cluster = built
    text = json.dumps(stack.resolve([cluster.login_command, cluster.slurm_controller_endpoint_command]))
    assert "us-east-1" not in text


# --- example stacks ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example_outputs() -> dict[str, dict[str, Any]]:
    app = new_app()
    stacks = [PcsP5Stack(app, "FmPcsP5"), PcsGb200Stack(app, "FmPcsGb200")]
    return {stack.stack_name: Template.from_stack(stack).to_json()["Outputs"] for stack in stacks}


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            "FmPcsP5",
            {
                "ClusterId",
                "ClusterArn",
                "SlurmControllerEndpointCommand",
                "LoginCommand",
                "GpuNodeGroupId",
                "GpuNodesCommand",
                "GpuQueueId",
                "FileSystemId",
            },
        ),
        (
            "FmPcsGb200",
            {
                "ClusterId",
                "ClusterArn",
                "SlurmControllerEndpointCommand",
                "LoginCommand",
                "UltraServerNodeGroupId",
                "GpuNodesCommand",
                "Gb200QueueId",
            },
        ),
    ],
)
def test_example_stacks_emit_operator_outputs_with_descriptions(example_outputs, stack, expected):
    outputs = example_outputs[stack]
    assert expected <= set(outputs)
    for output_id, output in outputs.items():
        if output_id in expected:
            assert isinstance(output.get("Description"), str) and output["Description"], output_id
    assert "start-session" in json.dumps(outputs["LoginCommand"]["Value"])
    assert "SLURMCTLD" in json.dumps(outputs["SlurmControllerEndpointCommand"]["Value"])
