"""Run-time preflight helpers, tested with botocore's Stubber (moto has no capacity reservations)."""

from __future__ import annotations

import datetime as dt

import boto3
import pytest
from botocore.stub import Stubber

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError
from fmconstructs.preflight import capacity_from_reservation, check_capacity, describe_reservation

START = dt.datetime(2026, 12, 1, 11, 30, tzinfo=dt.UTC)


def reservation(**overrides):
    item = {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "State": "scheduled",
        "ReservationType": "capacity-block",
        "StartDate": START,
        "EndDate": START + dt.timedelta(days=7),
    }
    item.update(overrides)
    return item


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber


def stub(stubber, *items):
    stubber.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": list(items)},
        {"CapacityReservationIds": ["cr-0123456789abcdef0"]},
    )


def test_describe_a_capacity_block(ec2):
    client, stubber = ec2
    stub(stubber, reservation())
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    assert (info.availability_zone, info.total_instance_count, info.is_capacity_block) == ("us-east-1a", 2, True)
    assert info.end_date == START + dt.timedelta(days=7)
    cap = capacity_from_reservation(info)
    assert isinstance(cap, CapacityBlock)
    assert (cap.availability_zone, cap.max_instances) == ("us-east-1a", 2)
    stubber.assert_no_pending_responses()


def test_describe_an_odcr(ec2):
    client, stubber = ec2
    stub(stubber, reservation(ReservationType="default", State="active", TotalInstanceCount=8))
    cap = capacity_from_reservation(describe_reservation("cr-0123456789abcdef0", ec2_client=client))
    assert isinstance(cap, CapacityReservation)
    assert cap.max_instances == 8


def test_unknown_reservation(ec2):
    client, stubber = ec2
    stub(stubber)
    with pytest.raises(FmValidationError, match=r"reservation_id must be an existing capacity reservation"):
        describe_reservation("cr-0123456789abcdef0", ec2_client=client)


def test_api_errors_propagate(ec2):
    client, stubber = ec2
    stubber.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound")
    with pytest.raises(client.exceptions.ClientError, match="NotFound"):
        describe_reservation("cr-0123456789abcdef0", ec2_client=client)


def test_a_matching_fleet_has_no_problems(ec2):
    client, stubber = ec2
    stub(stubber, reservation())
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    assert check_capacity(capacity_from_reservation(info), "p5.48xlarge", node_count=2, info=info) == []


@pytest.mark.parametrize(
    ("capacity", "instance_type", "nodes", "overrides", "problem"),
    [
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0"),
            "p5en.48xlarge",
            2,
            {},
            "reserves p5.48xlarge, not p5en",
        ),
        (CapacityBlock(reservation_id="cr-0123456789abcdef0"), "p5.48xlarge", 3, {}, "3 nodes exceed the 2 instances"),
        (CapacityBlock(reservation_id="cr-0123456789abcdef0"), "p5.48xlarge", 2, {"State": "expired"}, "is expired"),
        (
            CapacityReservation(reservation_id="cr-0123456789abcdef0"),
            "p5.48xlarge",
            2,
            {},
            "configured for an On-Demand Capacity Reservation but cr-0123456789abcdef0 is capacity-block",
        ),
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1b"),
            "p5.48xlarge",
            2,
            {},
            "pinned to us-east-1b but cr-0123456789abcdef0 is in us-east-1a",
        ),
    ],
)
def test_problems_are_reported(ec2, capacity, instance_type, nodes, overrides, problem):
    client, stubber = ec2
    stub(stubber, reservation(**overrides))
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    problems = check_capacity(capacity, instance_type, node_count=nodes, info=info)
    assert any(problem in p for p in problems), problems
