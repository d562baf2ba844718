"""CapacityBlockEvents and extended Capacity Blocks (same reservation id, later end date).

GIVEN an expiration warning for a block, WHEN the block now ends later than the warning said (an extension was paid),
THEN the handler neither drains, cordons nor scales down and the notice says so; WHEN an extension is payment-pending,
THEN it acts as before and the notice says how to undo it; WHEN the check fails, THEN it acts as before. The rule's
pattern (reservation ids only) and the role's read permissions are checked on the template.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events.handler import extension, index

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
ASG = "fm-gpu-fleet"
WARNED_END = dt.datetime(2026, 12, 1, 11, 30, tzinfo=dt.UTC)


def _client(service: str) -> Any:
    return boto3.Session(
        region_name="us-east-1", aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake-secret"
    ).client(service)  # type: ignore[call-overload]


TARGETS = [{"kind": "auto-scaling-group", "name": ASG, "reservation": BLOCK, "size": 2, "path": "P/Fleet"}]
PENDING_FILTER = [{"Name": "capacity-block-extension-status", "Values": ["payment-pending"]}]


def _warning(end_date: str = "2026-12-01T11:30:00Z") -> dict[str, Any]:
    return {
        "id": "evt-1",
        "source": "aws.ec2",
        "detail-type": "Capacity Block Expiration Warning",
        "detail": {"capacity-reservation-id": BLOCK, "end-date": end_date},
    }


class Clients:
    def __init__(self) -> None:
        self.ec2, self.ssm, self.sns = _client("ec2"), _client("ssm"), _client("sns")
        self.eks, self.autoscaling = _client("eks"), _client("autoscaling")
        self.stubs = {name: Stubber(getattr(self, name)) for name in ("ec2", "ssm", "sns", "eks", "autoscaling")}

    def expect_end(self, end: dt.datetime) -> None:
        self.stubs["ec2"].add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [{"CapacityReservationId": BLOCK, "EndDate": end}]},
            {"CapacityReservationIds": [BLOCK]},
        )

    def expect_pending(self, extensions: list[dict[str, Any]]) -> None:
        self.stubs["ec2"].add_response(
            "describe_capacity_block_extension_history",
            {"CapacityBlockExtensions": extensions},
            {"CapacityReservationIds": [BLOCK], "Filters": PENDING_FILTER},
        )

    def expect_publish(self) -> None:
        self.stubs["sns"].add_response(
            "publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY}
        )

    def run(self, event: dict[str, Any], *, login: str = "") -> dict[str, Any]:
        return index.process(
            event,
            ec2=self.ec2,
            ssm=self.ssm,
            sns=self.sns,
            topic_arn=TOPIC,
            login_node_group_id=login,
            eks=self.eks,
            scaling_targets=[dict(t) for t in TARGETS],
            autoscaling=self.autoscaling,
            sleep=lambda _: None,
        )


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    for stub in made.stubs.values():
        stub.activate()
    yield made
    for stub in made.stubs.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


@pytest.mark.parametrize("login", ["", "pcs_login12345"])
def test_extended_block_is_not_drained_or_scaled_down(clients: Clients, login: str) -> None:
    clients.expect_end(WARNED_END + dt.timedelta(days=7))
    clients.expect_publish()
    result = clients.run(_warning(), login=login)
    assert result["extension"] == extension.EXTENDED
    assert not {"scaled", "scaling_failures", "drain_error", "drain_status", "command_id"} & set(result)
    assert "The block was extended: it now ends 2026-12-08T11:30:00+00:00" in result["message"]


def test_block_still_ending_is_scaled_down(clients: Clients) -> None:
    clients.expect_end(WARNED_END)
    clients.expect_pending([])
    clients.stubs["autoscaling"].add_response(
        "update_auto_scaling_group", {}, {"AutoScalingGroupName": ASG, "MinSize": 0, "DesiredCapacity": 0}
    )
    clients.expect_publish()
    result = clients.run(_warning())
    assert result["extension"] == extension.ENDING
    assert result["scaled"]
    assert "extended" not in result["message"]


def test_pending_extension_scales_down_and_says_how_to_undo(clients: Clients) -> None:
    clients.expect_end(WARNED_END)
    clients.expect_pending([{"CapacityReservationId": BLOCK, "CapacityBlockExtensionEndDate": WARNED_END}])
    clients.stubs["autoscaling"].add_response(
        "update_auto_scaling_group", {}, {"AutoScalingGroupName": ASG, "MinSize": 0, "DesiredCapacity": 0}
    )
    clients.expect_publish()
    result = clients.run(_warning())
    assert result["extension"] == extension.PENDING
    assert result["scaled"]
    assert "payment-pending" in result["message"]
    assert "scontrol update nodename=... state=RESUME" in result["message"]


def test_failed_check_acts_on_the_warning(clients: Clients) -> None:
    clients.stubs["ec2"].add_client_error(
        "describe_capacity_reservations", service_error_code="UnauthorizedOperation", http_status_code=403
    )
    clients.stubs["autoscaling"].add_response(
        "update_auto_scaling_group", {}, {"AutoScalingGroupName": ASG, "MinSize": 0, "DesiredCapacity": 0}
    )
    clients.expect_publish()
    result = clients.run(_warning())
    assert result["extension"] == extension.ENDING
    assert result["scaled"]
    assert "Could not check for an extension" in result["message"]


def test_delivered_event_is_not_checked(clients: Clients) -> None:
    event = {**_warning(), "detail-type": "Capacity Block Delivered"}
    clients.stubs["autoscaling"].add_response(
        "update_auto_scaling_group", {}, {"AutoScalingGroupName": ASG, "MinSize": 2, "DesiredCapacity": 2}
    )
    clients.expect_publish()
    result = clients.run(event)
    assert "extension" not in result


@pytest.mark.parametrize(
    ("end_date", "current", "expected"),
    [
        ("2026-12-01T11:30:00Z", WARNED_END + dt.timedelta(days=1), extension.EXTENDED),
        ("2026-12-01T11:30:00.000Z", WARNED_END + dt.timedelta(minutes=30), extension.ENDING),
        ("2026-12-01T11:30:00", WARNED_END + dt.timedelta(days=1), extension.EXTENDED),
        ("[ODCR End Date]", WARNED_END + dt.timedelta(days=1), extension.EXTENDED),
        ("[ODCR End Date]", WARNED_END, extension.ENDING),
        (None, WARNED_END + dt.timedelta(minutes=50), extension.ENDING),
        (None, WARNED_END + dt.timedelta(minutes=90), extension.EXTENDED),
    ],
)
def test_block_extension_compares_with_the_warned_end(end_date: Any, current: dt.datetime, expected: str) -> None:
    """An unreadable end-date counts as now + forty minutes (the warning's documented lead time)."""
    ec2 = _client("ec2")
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [{"EndDate": current}]},
            {"CapacityReservationIds": [BLOCK]},
        )
        if expected != extension.EXTENDED:
            stub.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": []}, None)
        state, _ = extension.block_extension(ec2, BLOCK, end_date, now=WARNED_END - dt.timedelta(minutes=40))
    assert state == expected


# --- the construct ---------------------------------------------------------------------------------------------------
def _template(**props: Any) -> Any:
    import aws_cdk as cdk
    from aws_cdk import aws_sns as sns
    from aws_cdk.assertions import Template

    from fmconstructs.capacity_events import CapacityBlockEvents

    from tests.conftest import ENV, new_app

    stack = cdk.Stack(new_app(), "Cb", env=ENV)
    CapacityBlockEvents(stack, "Blocks", alert_topic=sns.Topic(stack, "Alerts"), **props)
    return Template.from_stack(stack)


def test_role_reads_the_block_end_date_when_it_acts() -> None:
    from aws_cdk.assertions import Match

    statement = {
        "Sid": "ReadBlockEndDate",
        "Action": ["ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlockExtensionHistory"],
        "Resource": "*",
    }
    _template(pcs_login_node_group_id="pcs_abcdef1234").has_resource_properties(
        "AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([Match.object_like(statement)])}}
    )
    notify_only = json.dumps(_template(capacity_reservation_ids=[BLOCK]).find_resources("AWS::IAM::Policy"))
    # notify-only: no extension check (the expiry schedule's own reads of the block are tested with lead times)
    assert "ReadBlockEndDate" not in notify_only and "DescribeCapacityBlockExtensionHistory" not in notify_only
