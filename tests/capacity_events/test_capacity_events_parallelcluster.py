"""CapacityBlockEvents on ParallelCluster: the block's Slurm nodes are drained (and jobs warned) on the cluster's head
node through SSM Run Command, found by ParallelCluster's tags; the handler is stubbed (botocore Stubber)."""

from __future__ import annotations

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import CapacityBlockEvents, JobWarning
from fmconstructs.capacity_events.handler import index
from fmconstructs.errors import FmValidationError
from fmconstructs.remediation.handler import backends as remediation_backends

from tests.conftest import ENV, new_app

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
CLUSTER = "train"


def _stack() -> tuple[cdk.Stack, sns.Topic]:
    stack = cdk.Stack(new_app(), "Cb", env=ENV)
    return stack, sns.Topic(stack, "Alerts")


@pytest.fixture(scope="module")
def template() -> Template:
    stack, topic = _stack()
    CapacityBlockEvents(
        stack, "Blocks", alert_topic=topic, parallelcluster_cluster_name=CLUSTER, job_warning=JobWarning()
    )
    return Template.from_stack(stack)


def test_the_tags_are_remediations() -> None:
    assert (index.PC_CLUSTER_TAG, index.PC_NODE_TYPE_TAG, index.PC_HEAD_NODE) == (
        remediation_backends.PC_CLUSTER_TAG,
        remediation_backends.PC_NODE_TYPE_TAG,
        remediation_backends.PC_HEAD_NODE,
    )


def test_the_handler_knows_the_cluster_and_the_signal(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": Match.object_like(
                    {"PARALLELCLUSTER_CLUSTER_NAME": CLUSTER, "JOB_WARNING": Match.string_like_regexp("USR1")}
                )
            }
        },
    )


def test_send_command_only_on_the_head_node(template: Template) -> None:
    condition = {
        "StringEquals": {
            "ssm:resourceTag/parallelcluster:cluster-name": CLUSTER,
            "ssm:resourceTag/parallelcluster:node-type": "HeadNode",
        }
    }
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Sid": "HeadNodeOnly", "Action": "ssm:SendCommand", "Condition": condition})]
                )
            }
        },
    )


def test_not_with_a_pcs_login_node_group() -> None:
    stack, topic = _stack()
    with pytest.raises(FmValidationError, match="parallelcluster_cluster_name must be None with pcs_login_node_group"):
        CapacityBlockEvents(
            stack, "Blocks", alert_topic=topic, parallelcluster_cluster_name=CLUSTER, pcs_login_node_group_id="pcs_a"
        )


@pytest.mark.parametrize("name", ["1train", "train_1", "x" * 61])
def test_a_bad_cluster_name_is_refused(name: str) -> None:
    stack, topic = _stack()
    with pytest.raises(FmValidationError, match="parallelcluster_cluster_name must be a ParallelCluster cluster name"):
        CapacityBlockEvents(stack, "Blocks", alert_topic=topic, parallelcluster_cluster_name=name)


def _clients():
    kwargs = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client("ec2", **kwargs), boto3.client("ssm", **kwargs), boto3.client("sns", **kwargs)


def _instances(*items: tuple[str, str, str]) -> dict[str, object]:
    return {
        "Reservations": [
            {"Instances": [{"InstanceId": i, "PrivateIpAddress": ip, "PrivateDnsName": dns} for i, ip, dns in items]}
        ]
    }


RUNNING = {"Name": "instance-state-name", "Values": ["pending", "running"]}
HEAD_FILTERS = [
    {"Name": "tag:parallelcluster:cluster-name", "Values": [CLUSTER]},
    {"Name": "tag:parallelcluster:node-type", "Values": ["HeadNode"]},
    RUNNING,
]


def test_expiry_drains_and_signals_on_the_head_node() -> None:
    ec2, ssm, sns_client = _clients()
    after = index.jw.slurm_signal_lines("USR1", "steps")
    with Stubber(ec2) as ec2_stub, Stubber(ssm) as ssm_stub, Stubber(sns_client) as sns_stub:
        ec2_stub.add_response(
            "describe_instances",
            _instances(("i-0aaaaaaaaaaaaaaa1", "10.0.1.10", "ip-10-0-1-10.ec2.internal")),
            {"Filters": [{"Name": "capacity-reservation-id", "Values": [BLOCK]}, RUNNING]},
        )
        ec2_stub.add_response(
            "describe_instances", _instances(("i-0head000000000001", "10.0.0.4", "")), {"Filters": HEAD_FILTERS}
        )
        ssm_stub.add_response(
            "send_command",
            {"Command": {"CommandId": "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f"}},
            {
                "InstanceIds": ["i-0head000000000001"],
                "DocumentName": "AWS-RunShellScript",
                "Comment": f"drain {BLOCK} (capacity block ends)",
                "Parameters": {"commands": [index.drain_script(["10.0.1.10", "ip-10-0-1-10"], after)]},
            },
        )
        ssm_stub.add_response(
            "get_command_invocation",
            {"Status": "Success", "StandardOutputContent": "drained: gpu-st-p5-1", "ResponseCode": 0},
            {"CommandId": "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f", "InstanceId": "i-0head000000000001"},
        )
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            {
                "source": "aws.ec2",
                "detail-type": "Capacity Block Expiration Warning",
                "detail": {"capacity-reservation-id": BLOCK, "end-date": "2026-12-01T11:30:00Z"},
            },
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id="",
            parallelcluster_cluster_name=CLUSTER,
            job_warning={"slurm_signal": "USR1", "slurm_scope": "steps"},
        )
        ssm_stub.assert_no_pending_responses()
    assert "Drained the block's Slurm nodes" in result["message"] and "gpu-st-p5-1" in result["message"]


def test_no_running_head_node_is_reported() -> None:
    ec2, ssm, _ = _clients()
    with Stubber(ec2) as ec2_stub:
        ec2_stub.add_response("describe_instances", _instances(("i-0aaaaaaaaaaaaaaa1", "10.0.1.10", "")), None)
        ec2_stub.add_response("describe_instances", {"Reservations": []}, {"Filters": HEAD_FILTERS})
        lines = index._drain_lines(
            ec2,
            ssm,
            reservation_id=BLOCK,
            login_node_group_id="",
            parallelcluster_cluster_name=CLUSTER,
            result={},
            budget=index.Budget(60),
        )
    assert lines == [f"No running ParallelCluster cluster {CLUSTER}'s head node: nodes NOT drained."]


def test_the_drain_script_finds_parallelcluster_s_slurm() -> None:
    assert "/opt/slurm/bin" in index.drain_script(["10.0.0.1"])
