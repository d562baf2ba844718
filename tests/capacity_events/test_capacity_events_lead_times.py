"""Per-kind lead times of the Capacity Block expiry actions: configuration, validation and the one-time schedule.

GIVEN CapacityBlockEvents, THEN the handler's LEAD_MINUTES carries one lead per kind (instance block 40 = EC2's
warning, UltraServer block 70 by default), and a lead past the 40-minute warning brings a Scheduler group, a role
Scheduler assumes to invoke only the handler, and CreateSchedule/PassRole limited to them. GIVEN the handler with
Stubbers, WHEN an UltraServer block is delivered, THEN a one-time ``at(end - lead)`` schedule that deletes itself is
created; WHEN it fires, the expiry actions run (here: scaling to 0), unless the block was extended, which moves the
schedule; an instance block with the default lead schedules nothing and acts on EC2's warning.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import CapacityBlockEvents, CapacityKind
from fmconstructs.capacity_events.handler import index, lead
from fmconstructs.capacity_events.lead_times import TERMINATION_LEAD_MINUTES, check_lead_minutes
from fmconstructs.errors import FmTypeError, FmValidationError

from tests.conftest import ENV, new_app

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
CAPACITY_BLOCK = "cb-0123456789abcdef0"
GROUP = "fm-expiry"
ROLE = "arn:aws:iam::123456789012:role/scheduler"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:handler"
END = dt.datetime(2026, 12, 8, 11, 30, tzinfo=dt.UTC)
NOW = dt.datetime(2026, 12, 1, 11, 30, tzinfo=dt.UTC)
KWARGS = {"region_name": "us-east-1", "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "fake-secret"}
ASG = {"kind": "auto-scaling-group", "name": "gpu-asg", "reservation": BLOCK, "size": 2}


# --- the construct ---------------------------------------------------------------------------------------------------


def _build(stack_id: str, **kwargs: Any) -> tuple[cdk.Stack, CapacityBlockEvents]:
    stack = cdk.Stack(new_app(), stack_id, env=ENV)
    blocks = CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), **kwargs)
    return stack, blocks


def _env(template: Template) -> dict[str, Any]:
    functions = template.find_resources("AWS::Lambda::Function")
    return dict(next(iter(functions.values()))["Properties"]["Environment"]["Variables"])


@pytest.fixture(scope="module")
def default_template() -> Template:
    stack, _ = _build("CbLeadDefault", pcs_login_node_group_id="pcs_abcdef1234")
    return Template.from_stack(stack)


def test_the_handler_gets_one_lead_per_kind(default_template: Template) -> None:
    assert json.loads(_env(default_template)["LEAD_MINUTES"]) == {"instances": 40, "ultraserver": 70}


def test_configured_leads_reach_the_handler() -> None:
    stack, blocks = _build("CbLeadCustom", drain_lead_minutes=55, ultraserver_drain_lead_minutes=90)
    assert json.loads(_env(Template.from_stack(stack))["LEAD_MINUTES"]) == {"instances": 55, "ultraserver": 90}
    assert blocks.lead_minutes == {CapacityKind.INSTANCES: 55, CapacityKind.ULTRASERVER: 90}


def test_a_schedule_group_and_a_scheduler_role_that_invokes_only_the_handler(default_template: Template) -> None:
    default_template.resource_count_is("AWS::Scheduler::ScheduleGroup", 1)
    env = _env(default_template)
    assert env["SCHEDULE_GROUP"]["Ref"].startswith("BlocksExpirySchedules")
    assert env["SCHEDULE_ROLE_ARN"]["Fn::GetAtt"][0].startswith("BlocksSchedulerRole")
    default_template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Service": "scheduler.amazonaws.com"},
                            "Condition": {"StringEquals": {"aws:SourceAccount": "123456789012"}},
                        }
                    )
                ]
            }
        },
    )
    policies = default_template.find_resources("AWS::IAM::Policy")
    statements = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    invoke = [s for s in statements if s["Action"] == "lambda:InvokeFunction"]
    assert len(invoke) == 1 and invoke[0]["Resource"]["Fn::GetAtt"][0].startswith("BlocksHandler")
    create = next(s for s in statements if s["Action"] == "scheduler:CreateSchedule")
    assert "schedule/" in json.dumps(create["Resource"]) and "BlocksExpirySchedules" in json.dumps(create["Resource"])
    passrole = next(s for s in statements if s["Action"] == "iam:PassRole")
    assert passrole["Resource"]["Fn::GetAtt"][0].startswith("BlocksSchedulerRole")
    reads = next(s for s in statements if s.get("Sid") == "ReadBlockEndAndKind")
    assert reads["Action"] == ["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlocks"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"drain_lead_minutes": 39}, FmValidationError, r"drain_lead_minutes must be at least 40 minutes, got 39"),
        ({"drain_lead_minutes": 1441}, FmValidationError, r"drain_lead_minutes must be at most 1440 minutes"),
        ({"drain_lead_minutes": 45.5}, FmValidationError, r"drain_lead_minutes must be a whole number"),
        ({"drain_lead_minutes": "45"}, FmTypeError, r"drain_lead_minutes"),
        ({"drain_lead_minutes": True}, FmTypeError, r"drain_lead_minutes"),
        (
            {"ultraserver_drain_lead_minutes": 60},
            FmValidationError,
            r"ultraserver_drain_lead_minutes must be more than 60 minutes: EC2 starts terminating",
        ),
        ({"ultraserver_drain_lead_minutes": 40}, FmValidationError, r"ultraserver_drain_lead_minutes must be more"),
    ],
)
def test_lead_times_refuse_what_cannot_drain_in_time(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        _build("CbLeadBad", **kwargs)


def test_the_termination_leads_per_kind() -> None:
    # instance blocks: EC2 terminates 30 minutes before the end (documented); UltraServer: 60 (UNCONFIRMED)
    assert TERMINATION_LEAD_MINUTES == {CapacityKind.INSTANCES: 30, CapacityKind.ULTRASERVER: 60}
    assert check_lead_minutes("x", 61, CapacityKind.ULTRASERVER) == 61
    assert check_lead_minutes("x", 40, CapacityKind.INSTANCES) == 40


def test_a_deploy_time_lead_passes_through() -> None:
    stack = cdk.Stack(new_app(), "CbLeadToken", env=ENV)
    token = cdk.CfnParameter(stack, "Lead", type="Number").value_as_number
    CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), ultraserver_drain_lead_minutes=token)  # type: ignore[arg-type]
    Template.from_stack(stack).resource_count_is("AWS::Scheduler::ScheduleGroup", 1)


# --- the handler -----------------------------------------------------------------------------------------------------


class Clients:
    def __init__(self) -> None:
        self.ec2 = boto3.client("ec2", **KWARGS)  # type: ignore[call-overload]
        self.sns = boto3.client("sns", **KWARGS)  # type: ignore[call-overload]
        self.scheduler = boto3.client("scheduler", **KWARGS)  # type: ignore[call-overload]
        self.autoscaling = boto3.client("autoscaling", **KWARGS)  # type: ignore[call-overload]
        self.stubs = {n: Stubber(getattr(self, n)) for n in ("ec2", "sns", "scheduler", "autoscaling")}

    def block(self, *, ultraserver: bool, end: dt.datetime = END) -> None:
        self.stubs["ec2"].add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    {"CapacityReservationId": BLOCK, "EndDate": end, "CapacityBlockId": CAPACITY_BLOCK}
                ]
            },
            {"CapacityReservationIds": [BLOCK]},
        )
        block: dict[str, Any] = {"CapacityBlockId": CAPACITY_BLOCK}
        if ultraserver:
            block["UltraserverType"] = "u-p6e-gb200x72"
        self.stubs["ec2"].add_response(
            "describe_capacity_blocks", {"CapacityBlocks": [block]}, {"CapacityBlockIds": [CAPACITY_BLOCK]}
        )

    def notice(self) -> None:
        self.stubs["sns"].add_response(
            "publish", {"MessageId": "m"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY}
        )

    def run(self, event: dict[str, Any], leads: dict[str, int] | None = None, **kwargs: Any) -> dict[str, Any]:
        settings = lead.LeadSettings(
            lead_minutes=leads or {"instances": 40, "ultraserver": 70},
            group=GROUP,
            role_arn=ROLE,
            function_arn=FUNCTION,
        )
        for stub in self.stubs.values():
            stub.activate()
        try:
            result = index.process(
                event,
                ec2=self.ec2,
                ssm=None,
                sns=self.sns,
                topic_arn=TOPIC,
                login_node_group_id="",
                scheduler=self.scheduler,
                autoscaling=self.autoscaling,
                lead=settings,
                now=NOW,
                sleep=lambda _: None,
                **kwargs,
            )
            for stub in self.stubs.values():
                stub.assert_no_pending_responses()
        finally:
            for stub in self.stubs.values():
                stub.deactivate()
        return result


def _ec2_event(detail_type: str) -> dict[str, Any]:
    return {
        "source": "aws.ec2",
        "detail-type": detail_type,
        "detail": {"capacity-reservation-id": BLOCK, "end-date": "2026-12-08T11:30:00Z"},
    }


def test_an_ultraserver_block_delivered_schedules_its_expiry_actions_70_minutes_before_the_end() -> None:
    clients = Clients()
    clients.block(ultraserver=True)
    at = END - dt.timedelta(minutes=70)
    clients.stubs["scheduler"].add_response(
        "create_schedule",
        {"ScheduleArn": f"arn:aws:scheduler:us-east-1:123456789012:schedule/{GROUP}/x"},
        {
            "Name": f"{BLOCK}-expiry-20261208T1020",
            "GroupName": GROUP,
            "ScheduleExpression": "at(2026-12-08T10:20:00)",
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "Description": ANY,
            "ClientToken": ANY,
            "Target": {
                "Arn": FUNCTION,
                "RoleArn": ROLE,
                "Input": json.dumps(lead.due_event(BLOCK, END, "ultraserver", 70)),
                "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 600},
            },
        },
    )
    clients.notice()
    result = clients.run(_ec2_event("Capacity Block Delivered"))
    assert (result["capacity_kind"], result["lead_minutes"]) == ("ultraserver", 70)
    assert (
        f"Expiry actions scheduled at {at:%Y-%m-%dT%H:%M}Z, 70 min before the end (ultraserver block"
        in result["message"]
    )


def test_an_instance_block_with_the_default_lead_schedules_nothing() -> None:
    clients = Clients()
    clients.block(ultraserver=False)
    clients.notice()
    result = clients.run(_ec2_event("Capacity Block Delivered"))
    assert (result["capacity_kind"], result["lead_minutes"]) == ("instances", 40)
    assert "scheduled" not in result["message"]


def test_a_longer_instance_lead_is_scheduled_too() -> None:
    clients = Clients()
    clients.block(ultraserver=False)
    clients.stubs["scheduler"].add_response("create_schedule", {"ScheduleArn": "arn"}, None)
    clients.notice()
    result = clients.run(_ec2_event("Capacity Block Delivered"), leads={"instances": 60, "ultraserver": 70})
    assert "Expiry actions scheduled at 2026-12-08T10:30Z, 60 min before the end (instances block" in result["message"]


def test_a_duplicate_delivery_finds_the_schedule_already_there() -> None:
    clients = Clients()
    clients.block(ultraserver=True)
    clients.stubs["scheduler"].add_client_error("create_schedule", service_error_code="ConflictException")
    clients.notice()
    result = clients.run(_ec2_event("Capacity Block Delivered"))
    assert "Expiry actions already scheduled at 2026-12-08T10:20Z" in result["message"]


def test_when_the_schedule_fires_the_expiry_actions_run() -> None:
    clients = Clients()
    clients.block(ultraserver=True)
    clients.stubs["autoscaling"].add_response(
        "update_auto_scaling_group", {}, {"AutoScalingGroupName": "gpu-asg", "MinSize": 0, "DesiredCapacity": 0}
    )
    clients.notice()
    result = clients.run(lead.due_event(BLOCK, END, "ultraserver", 70), scaling_targets=[ASG])
    assert result["scaled"] == ["Auto Scaling group gpu-asg: min and desired -> 0"]
    assert "Expiry actions at the ultraserver block's lead time (70 min before the end)." in result["message"]


def test_an_extended_block_moves_the_schedule_and_keeps_its_nodes() -> None:
    clients = Clients()
    extended = END + dt.timedelta(days=7)
    clients.block(ultraserver=True, end=extended)
    fields: tuple[str, ...] = ("GroupName", "ScheduleExpression", "ScheduleExpressionTimezone", "FlexibleTimeWindow")
    fields += ("ActionAfterCompletion", "Description", "ClientToken", "Target")
    expected = {"Name": f"{BLOCK}-expiry-20261215T1020", **dict.fromkeys(fields, ANY)}
    clients.stubs["scheduler"].add_response("create_schedule", {"ScheduleArn": "arn"}, expected)
    clients.notice()
    result = clients.run(lead.due_event(BLOCK, END, "ultraserver", 70), scaling_targets=[ASG])
    assert result["extended_to"] == "2026-12-15T11:30:00Z"
    assert "scaled" not in result  # no scaling to 0: the block goes on


def test_ec2_s_warning_still_acts_as_a_safety_net() -> None:
    clients = Clients()
    clients.block(ultraserver=True)
    clients.stubs["autoscaling"].add_response("update_auto_scaling_group", {}, None)
    clients.notice()
    result = clients.run(_ec2_event("Capacity Block Expiration Warning"), scaling_targets=[ASG])
    assert result["scaled"] == ["Auto Scaling group gpu-asg: min and desired -> 0"]
    assert "the ultraserver block's lead is 70 min, so a scheduled run should have acted already" in result["message"]


def test_with_every_lead_at_40_the_warning_acts_without_reading_the_block() -> None:
    clients = Clients()  # no describe_capacity_* stubbed: a call would fail the test
    clients.stubs["autoscaling"].add_response("update_auto_scaling_group", {}, None)
    clients.notice()
    result = clients.run(
        _ec2_event("Capacity Block Expiration Warning"),
        leads={"instances": 40, "ultraserver": 40},
        scaling_targets=[ASG],
    )
    assert result["scaled"] == ["Auto Scaling group gpu-asg: min and desired -> 0"]


def test_a_schedule_that_would_be_due_now_is_not_created() -> None:
    settings = lead.LeadSettings(lead_minutes={"ultraserver": 70}, group=GROUP, role_arn=ROLE, function_arn=FUNCTION)
    line = lead.schedule_expiry(
        None, settings, reservation_id=BLOCK, kind="ultraserver", end=NOW + dt.timedelta(minutes=71), now=NOW
    )
    assert line == "Expiry actions due now (ultraserver block, lead 70 min): not scheduled."


def test_schedule_names_fit_the_scheduler_limits() -> None:
    name = lead.schedule_name("cr-" + "f" * 17, END)
    assert len(name) <= 64 and name.replace("-", "").isalnum()
