"""CapacityBlockEvents: EventBridge rule on EC2 Capacity Block events, SNS notification, PCS drain (handler stubbed)."""

from __future__ import annotations

import json
import math
import subprocess

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import DETAIL_TYPES, CapacityBlockEvents
from fmconstructs.capacity_events.handler import index
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import NODE_GROUP_ID_TAG

from tests.conftest import ENV, new_app, require_tool

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
LOGIN_GROUP = "pcs_abcdef1234"


def _stack(stack_id: str = "Cb") -> tuple[cdk.Stack, sns.Topic]:
    stack = cdk.Stack(new_app(), stack_id, env=ENV)
    return stack, sns.Topic(stack, "Alerts")


@pytest.fixture(scope="module")
def pcs_template() -> Template:
    stack, topic = _stack()
    CapacityBlockEvents(stack, "Blocks", alert_topic=topic, pcs_login_node_group_id=LOGIN_GROUP)
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def notify_template() -> Template:
    stack, topic = _stack()
    CapacityBlockEvents(stack, "Blocks", alert_topic=topic, capacity_reservation_ids=[BLOCK])
    return Template.from_stack(stack)


# --- the construct --------------------------------------------------------------------------------------------------


def test_handler_constant_matches_pcs_tag():
    assert index.NODE_GROUP_ID_TAG == NODE_GROUP_ID_TAG


def test_rule_matches_capacity_block_events(pcs_template):
    pcs_template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.ec2"],
                "detail-type": [
                    "Capacity Block Delivered",
                    "Capacity Block Reservation Delivered",
                    "Capacity Block Expiration Warning",
                    "Capacity Block Reservation Expiration Warning",
                ],
            },
            "Targets": [Match.object_like({"RetryPolicy": {"MaximumRetryAttempts": 2}})],
        },
    )


def test_rule_limited_to_given_blocks(notify_template):
    notify_template.has_resource_properties(
        "AWS::Events::Rule", {"EventPattern": Match.object_like({"detail": {"capacity-reservation-id": [BLOCK]}})}
    )


def test_function_runtime_and_environment(pcs_template):
    pcs_template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Runtime": "python3.14",
            "Handler": "index.handler",
            "Environment": {"Variables": {"TOPIC_ARN": Match.any_value(), "PCS_LOGIN_NODE_GROUP_ID": LOGIN_GROUP}},
        },
    )


@pytest.mark.parametrize(
    "statement",
    [
        {
            "Sid": "RunShellScriptDocument",
            "Action": "ssm:SendCommand",
            "Resource": {"Fn::Join": ["", Match.array_with([":ssm:us-east-1::document/AWS-RunShellScript"])]},
        },
        {
            "Sid": "LoginNodesOnly",
            "Action": "ssm:SendCommand",
            "Resource": {"Fn::Join": ["", Match.array_with([":ec2:us-east-1:123456789012:instance/*"])]},
            "Condition": {"StringEquals": {f"ssm:resourceTag/{NODE_GROUP_ID_TAG}": LOGIN_GROUP}},
        },
        {"Action": "ec2:DescribeInstances", "Resource": "*"},
        {"Action": "sns:Publish", "Resource": {"Ref": Match.string_like_regexp("Alerts")}},
    ],
    ids=["document", "login-nodes", "describe", "publish"],
)
def test_handler_permissions(pcs_template, statement):
    pcs_template.has_resource_properties(
        "AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([Match.object_like(statement)])}}
    )


def test_notify_only_grants_no_ssm_or_ec2(notify_template):
    text = json.dumps(notify_template.find_resources("AWS::IAM::Policy"))
    assert "ssm:SendCommand" not in text
    assert "ec2:DescribeInstances" not in text
    assert "sns:Publish" in text


def test_log_group_has_retention(pcs_template):
    pcs_template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


def test_everything_a_token_synthesizes():
    stack, _ = _stack()
    topic = sns.Topic.from_topic_arn(stack, "Imported", cdk.Fn.import_value("AlertTopicArn"))
    group = cdk.CfnParameter(stack, "LoginGroup").value_as_string
    block = cdk.CfnParameter(stack, "Block").value_as_string
    CapacityBlockEvents(
        stack, "Blocks", alert_topic=topic, pcs_login_node_group_id=group, capacity_reservation_ids=[block]
    )
    Template.from_stack(stack).resource_count_is("AWS::Events::Rule", 1)


def _bad(**overrides: object) -> None:
    stack, topic = _stack()
    kwargs: dict[str, object] = {"alert_topic": topic}
    kwargs.update(overrides)
    CapacityBlockEvents(stack, "Blocks", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("alert_topic", TOPIC),
        ("alert_topic", None),
        ("alert_topic", 1),
        ("pcs_login_node_group_id", 5),
        ("pcs_login_node_group_id", True),
        ("pcs_login_node_group_id", math.nan),
        ("pcs_login_node_group_id", ""),
        ("pcs_login_node_group_id", "pcs_abc\n"),
        ("pcs_login_node_group_id", "a b"),
        ("capacity_reservation_ids", BLOCK),
        ("capacity_reservation_ids", []),
        ("capacity_reservation_ids", [BLOCK, BLOCK]),
        ("capacity_reservation_ids", ["cr-123"]),
        ("capacity_reservation_ids", [BLOCK + "\n"]),
        ("capacity_reservation_ids", [math.inf]),
        ("capacity_reservation_ids", [True]),
        ("capacity_reservation_ids", 3),
        ("log_retention", 30),
        ("log_retention", "ONE_MONTH"),
        ("log_retention", math.nan),
    ],
)
def test_rejects_bad_input(parameter, value):
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        _bad(**{parameter: value})


@pytest.mark.parametrize(
    ("parameter", "value"), [("alert_topic", TOPIC), ("log_retention", 30), ("pcs_login_node_group_id", 5)]
)
def test_wrong_types_are_type_errors(parameter, value):
    with pytest.raises(FmTypeError):
        _bad(**{parameter: value})


def test_rejects_bad_scope_and_id():
    _, topic = _stack()
    with pytest.raises(FmTypeError, match=r"^scope"):
        CapacityBlockEvents("not a scope", "Blocks", alert_topic=topic)  # type: ignore[arg-type]


def test_detail_types_are_exported():
    assert set(DETAIL_TYPES) == set(index.DELIVERED_DETAIL_TYPES) | set(index.EXPIRY_DETAIL_TYPES)


def test_log_retention_accepts_enum():
    stack, topic = _stack()
    CapacityBlockEvents(stack, "Blocks", alert_topic=topic, log_retention=logs.RetentionDays.ONE_WEEK)
    Template.from_stack(stack).has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 7})


# --- the handler (botocore Stubber, no AWS call) ---------------------------------------------------------------------


def _event(detail_type: str, reservation: str = BLOCK) -> dict[str, object]:
    return {
        "source": "aws.ec2",
        "detail-type": detail_type,
        "detail": {"capacity-reservation-id": reservation, "end-date": "2026-12-01T11:30:00Z"},
    }


def _clients():
    kwargs = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client("ec2", **kwargs), boto3.client("ssm", **kwargs), boto3.client("sns", **kwargs)


def _instances(*items: tuple[str, str, str]) -> dict[str, object]:
    return {
        "Reservations": [
            {"Instances": [{"InstanceId": i, "PrivateIpAddress": ip, "PrivateDnsName": dns} for i, ip, dns in items]}
        ]
    }


def _state_filter() -> dict[str, object]:
    return {"Name": "instance-state-name", "Values": ["pending", "running"]}


@pytest.mark.parametrize("detail_type", index.EXPIRY_DETAIL_TYPES)
def test_expiry_warning_drains_block_nodes_on_login_node(detail_type):
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm) as ssm_stub, Stubber(sns_client) as sns_stub:
        ec2_stub.add_response(
            "describe_instances",
            _instances(
                ("i-0aaaaaaaaaaaaaaa1", "10.0.1.10", "ip-10-0-1-10.ec2.internal"),
                ("i-0aaaaaaaaaaaaaaa2", "10.0.1.11", "ip-10-0-1-11.ec2.internal"),
            ),
            {"Filters": [{"Name": "capacity-reservation-id", "Values": [BLOCK]}, _state_filter()]},
        )
        ec2_stub.add_response(
            "describe_instances",
            _instances(("i-0bbbbbbbbbbbbbbb1", "10.0.0.5", "ip-10-0-0-5.ec2.internal")),
            {"Filters": [{"Name": f"tag:{NODE_GROUP_ID_TAG}", "Values": [LOGIN_GROUP]}, _state_filter()]},
        )
        ssm_stub.add_response(
            "send_command",
            {"Command": {"CommandId": "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f"}},
            {
                "InstanceIds": ["i-0bbbbbbbbbbbbbbb1"],
                "DocumentName": "AWS-RunShellScript",
                "Comment": f"drain {BLOCK} (capacity block ends)",
                "Parameters": {
                    "commands": [index.drain_script(["10.0.1.10", "ip-10-0-1-10", "10.0.1.11", "ip-10-0-1-11"])]
                },
            },
        )
        ssm_stub.add_response(
            "get_command_invocation",
            {"Status": "Success", "StandardOutputContent": "drained: gpu-1,gpu-2", "ResponseCode": 0},
            {"CommandId": "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f", "InstanceId": "i-0bbbbbbbbbbbbbbb1"},
        )
        sns_stub.add_response(
            "publish",
            {"MessageId": "m-1"},
            {"TopicArn": TOPIC, "Subject": detail_type, "Message": ANY},
        )
        result = index.process(
            _event(detail_type), ec2=ec2, ssm=ssm, sns=sns_client, topic_arn=TOPIC, login_node_group_id=LOGIN_GROUP
        )
        ec2_stub.assert_no_pending_responses()
        ssm_stub.assert_no_pending_responses()
        sns_stub.assert_no_pending_responses()
    assert result["command_id"] == "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f"
    assert "Drained the block's Slurm nodes" in result["message"] and "gpu-1,gpu-2" in result["message"]


@pytest.mark.parametrize("detail_type", index.DELIVERED_DETAIL_TYPES)
def test_delivered_only_notifies(detail_type):
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        sns_stub.add_response(
            "publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": detail_type, "Message": ANY}
        )
        result = index.process(
            _event(detail_type), ec2=ec2, ssm=ssm, sns=sns_client, topic_arn=TOPIC, login_node_group_id=LOGIN_GROUP
        )
        ec2_stub.assert_no_pending_responses()
        sns_stub.assert_no_pending_responses()
    assert "command_id" not in result
    assert BLOCK in result["message"]


def test_expiry_without_login_group_only_notifies():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2), Stubber(ssm), Stubber(sns_client) as sns_stub:
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _event("Capacity Block Expiration Warning"),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id="",
        )
        sns_stub.assert_no_pending_responses()
    assert "command_id" not in result


def test_expiry_without_running_login_node_reports_not_drained():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2) as ec2_stub, Stubber(ssm), Stubber(sns_client) as sns_stub:
        ec2_stub.add_response("describe_instances", _instances(("i-0aaaaaaaaaaaaaaa1", "10.0.1.10", "")), None)
        ec2_stub.add_response("describe_instances", {"Reservations": []}, None)
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _event("Capacity Block Expiration Warning"),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
        )
        ec2_stub.assert_no_pending_responses()
    assert "NOT drained" in result["message"]


def test_expiry_with_malformed_reservation_id_does_not_drain():
    ec2, ssm, sns_client = _clients()
    with Stubber(ec2), Stubber(ssm), Stubber(sns_client) as sns_stub:
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _event("Capacity Block Expiration Warning", reservation="cr-x; rm -rf /"),
            ec2=ec2,
            ssm=ssm,
            sns=sns_client,
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
        )
    assert "NOT drained" in result["message"]


def test_describe_instances_follows_pages():
    ec2, _, _ = _clients()
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_instances", {**_instances(("i-0aaaaaaaaaaaaaaa1", "10.0.1.10", "")), "NextToken": "t"}, None
        )
        stub.add_response("describe_instances", _instances(("i-0aaaaaaaaaaaaaaa2", "10.0.1.11", "")), None)
        assert index.block_addresses(ec2, BLOCK) == ["10.0.1.10", "10.0.1.11"]


def test_drain_script_refuses_unsafe_addresses():
    script = index.drain_script(["10.0.0.1", "$(reboot)", "ip-10-0-0-1", "a b"])
    assert 'wanted=" 10.0.0.1 ip-10-0-0-1 "' in script
    assert "reboot" not in script
    assert 'scontrol update nodename="$todrain" state=DRAIN reason="capacity block ends"' in script


def test_drain_script_passes_shellcheck(tmp_path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "drain.sh"
    path.write_text(index.drain_script(["10.0.1.10", "ip-10-0-1-10"]))
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_drain_script_drains_matching_nodes_only(tmp_path):
    # GIVEN fake sinfo/scontrol on PATH, WHEN the script runs, THEN only the block's nodes are drained, once each.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sinfo").write_text(
        "#!/bin/bash\nprintf '%s\\n' 'gpu-1 10.0.1.10 ip-10-0-1-10' 'gpu-1 10.0.1.10 ip-10-0-1-10' "
        "'gpu-2 10.0.1.99 ip-10-0-1-99' 'gpu-3 10.0.1.11 ip-10-0-1-11'\n"
    )
    (bindir / "scontrol").write_text('#!/bin/bash\necho "$@" > "$(dirname "$0")/called"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    script = tmp_path / "drain.sh"
    script.write_text(index.drain_script(["10.0.1.10", "ip-10-0-1-11"]))
    env = {"PATH": f"{bindir}:/usr/bin:/bin"}
    proc = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (
        bindir / "called"
    ).read_text().strip() == "update nodename=gpu-1,gpu-3 state=DRAIN reason=capacity block ends"


def _run_drain(tmp_path, listing, addresses, after_drain=None):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    lines = " ".join(f"'{line}'" for line in listing)
    (bindir / "sinfo").write_text(f"#!/bin/bash\nprintf '%s\\n' {lines}\n")
    (bindir / "scontrol").write_text('#!/bin/bash\necho "$@" >> "$(dirname "$0")/called"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    script = tmp_path / "drain.sh"
    script.write_text(index.drain_script(addresses, after_drain))
    env = {"PATH": f"{bindir}:/usr/bin:/bin"}
    proc = subprocess.run(["/bin/bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    called = bindir / "called"
    return proc.stdout, called.read_text().splitlines() if called.exists() else []


def test_drain_script_keeps_a_drain_someone_else_made(tmp_path):
    # GIVEN a block node an operator drained, one the node gate drained, one already drained for the block and an
    # idle one (found by the twin loop (h), issue 29: the block's drain overwrote "ops: DIMM swap ticket 4711"),
    # WHEN the drain runs, THEN the operator's node keeps its reason and is still in $nodes (its jobs are warned).
    listing = [
        "gpu-1 10.0.1.1 ip-10-0-1-1 idle none",
        "gpu-2 10.0.1.2 ip-10-0-1-2 draining ops: DIMM swap ticket 4711",
        "gpu-3 10.0.1.3 ip-10-0-1-3 drained fmconstructs: gpu-count: 7 GPUs visible, expected 8",
        "gpu-4 10.0.1.4 ip-10-0-1-4 drained capacity block ends",
        "gpu-5 10.0.1.5 ip-10-0-1-5 drained ops: elsewhere",
    ]
    addresses = ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4"]
    out, called = _run_drain(tmp_path, listing, addresses, ['echo "warned: $nodes"'])
    assert called == ["update nodename=gpu-1,gpu-3,gpu-4 state=DRAIN reason=capacity block ends"]
    assert "drained: gpu-1,gpu-3,gpu-4" in out
    assert "already drained by someone else, reason kept: gpu-2" in out
    assert "warned: gpu-1,gpu-2,gpu-3,gpu-4" in out


def test_drain_script_with_only_operator_drains_calls_no_update(tmp_path):
    out, called = _run_drain(tmp_path, ["gpu-1 10.0.1.1 ip-10-0-1-1 drained ops: rack move"], ["10.0.1.1"])
    assert called == []
    assert "drained: none" in out and "reason kept: gpu-1" in out
