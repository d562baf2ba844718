"""Run-time preflight helpers, tested with botocore's Stubber (moto has no capacity reservations)."""

from __future__ import annotations

import datetime as dt
import math

import boto3
import pytest
from botocore.stub import Stubber

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError, UltraServerCapacityBlock
from fmconstructs.errors import FmTypeError
from fmconstructs.preflight import (
    ReservationInfo,
    capacity_from_reservation,
    check_capacity,
    describe_capacity_block,
    describe_reservation,
)

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
    assert (info.zone, info.total_instance_count, info.is_capacity_block) == ("us-east-1a", 2, True)
    assert info.end_date == START + dt.timedelta(days=7)
    cap = capacity_from_reservation(info)
    assert isinstance(cap, CapacityBlock)
    assert (cap.zone, cap.max_instances) == ("us-east-1a", 2)
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
    assert check_capacity(capacity_from_reservation(info), "p5.48xlarge", max_nodes=2, info=info) == []


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
    problems = check_capacity(capacity, instance_type, max_nodes=nodes, info=info)
    assert any(problem in p for p in problems), problems


# --- issue 10: UltraServer blocks, zone ids, vocabulary, types ----------------------------------------------------------

BLOCK_ID = "cb-0123456789abcdef0"


def ultraserver_reservation(**overrides):
    item = reservation(
        InstanceType="p6e-gb200.36xlarge",
        AvailabilityZone="us-east-1-dfw-2a",
        AvailabilityZoneId="use1-dfw2-az1",
        TotalInstanceCount=18,
        AvailableInstanceCount=18,
        CapacityBlockId=BLOCK_ID,
    )
    item.update(overrides)
    return item


def block(**overrides):
    item = {
        "CapacityBlockId": BLOCK_ID,
        "UltraserverType": "u-p6e-gb200x72",
        "AvailabilityZone": "us-east-1-dfw-2a",
        "AvailabilityZoneId": "use1-dfw2-az1",
        "CapacityReservationIds": ["cr-0123456789abcdef0"],
        "State": "scheduled",
        "StartDate": START,
        "EndDate": START + dt.timedelta(days=7),
    }
    item.update(overrides)
    return item


def stub_block(stubber, *items):
    stubber.add_response("describe_capacity_blocks", {"CapacityBlocks": list(items)}, {"CapacityBlockIds": [BLOCK_ID]})


def test_describe_an_ultraserver_block_reservation(ec2):
    client, stubber = ec2
    stub(stubber, ultraserver_reservation())
    stub_block(stubber, block())
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    assert (info.zone, info.zone_id, info.capacity_block_id) == ("us-east-1-dfw-2a", "use1-dfw2-az1", BLOCK_ID)
    assert (info.ultraserver_type, info.ultraserver_count, info.is_ultraserver_block) == ("u-p6e-gb200x72", 1, True)
    cap = capacity_from_reservation(info)
    assert isinstance(cap, UltraServerCapacityBlock)
    assert (cap.reservation_id, cap.ultraserver_type, cap.ultraserver_count, cap.zone, cap.max_instances) == (
        "cr-0123456789abcdef0",
        "u-p6e-gb200x72",
        1,
        "us-east-1-dfw-2a",
        18,
    )
    assert check_capacity(cap, "p6e-gb200.36xlarge", max_nodes=18, info=info) == []
    stubber.assert_no_pending_responses()


def test_an_instance_block_has_no_ultraserver_type(ec2):
    client, stubber = ec2
    stub(stubber, reservation(CapacityBlockId=BLOCK_ID, AvailabilityZoneId="use1-az4"))
    stub_block(stubber, {k: v for k, v in block().items() if k != "UltraserverType"})
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    assert info.ultraserver_type is None and info.zone_id == "use1-az4"
    assert isinstance(capacity_from_reservation(info), CapacityBlock)


def test_describe_capacity_block(ec2):
    client, stubber = ec2
    stub_block(stubber, block(UltraserverType="u-p6e-gb200x36"))
    info = describe_capacity_block(BLOCK_ID, ec2_client=client)
    assert (info.ultraserver_type, info.zone, info.zone_id, info.reservation_ids, info.state) == (
        "u-p6e-gb200x36",
        "us-east-1-dfw-2a",
        "use1-dfw2-az1",
        ("cr-0123456789abcdef0",),
        "scheduled",
    )


def test_unknown_capacity_block(ec2):
    client, stubber = ec2
    stub_block(stubber)
    with pytest.raises(FmValidationError, match=r"^capacity_block_id must be an existing Capacity Block"):
        describe_capacity_block(BLOCK_ID, ec2_client=client)


@pytest.mark.parametrize(
    ("capacity", "problem"),
    [
        (
            UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", ultraserver_type="u-p6e-gb200x36"),
            "configured for u-p6e-gb200x36 UltraServers but cr-0123456789abcdef0 holds u-p6e-gb200x72",
        ),
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0"),
            "is in a u-p6e-gb200x72 UltraServer Capacity Block: use UltraServerCapacityBlock",
        ),
        (
            UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="use1-az4"),
            "pinned to use1-az4 but cr-0123456789abcdef0 is in us-east-1-dfw-2a (use1-dfw2-az1)",
        ),
        (
            UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
            "pinned to us-east-1a but cr-0123456789abcdef0 is in us-east-1-dfw-2a (use1-dfw2-az1)",
        ),
    ],
)
def test_ultraserver_problems(ec2, capacity, problem):
    client, stubber = ec2
    stub(stubber, ultraserver_reservation())
    stub_block(stubber, block())
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    problems = check_capacity(capacity, "p6e-gb200.36xlarge", max_nodes=18, info=info)
    assert any(problem in p for p in problems), problems


def test_an_ultraserver_capacity_on_an_odcr_is_a_problem(ec2):
    client, stubber = ec2
    stub(stubber, reservation(ReservationType="default", State="active", InstanceType="p6e-gb200.36xlarge"))
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    cap = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0")
    assert any("not in one" in p for p in check_capacity(cap, "p6e-gb200.36xlarge", max_nodes=18, info=info))


def test_zone_id_matches_the_reservation_zone_id(ec2):
    client, stubber = ec2
    stub(stubber, reservation(AvailabilityZoneId="use1-az4"))
    info = describe_reservation("cr-0123456789abcdef0", ec2_client=client)
    cap = CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="use1-az4")
    assert check_capacity(cap, "p5.48xlarge", max_nodes=2, info=info) == []


INFO = ReservationInfo(
    reservation_id="cr-0123456789abcdef0",
    instance_type="p5.48xlarge",
    zone="us-east-1a",
    total_instance_count=2,
    available_instance_count=2,
    state="active",
    reservation_type="default",
)
CAP = CapacityReservation(reservation_id="cr-0123456789abcdef0")


@pytest.mark.parametrize(
    ("call", "parameter", "error"),
    [
        (lambda c: describe_reservation(123, ec2_client=c), "reservation_id", FmTypeError),
        (lambda c: describe_reservation("cr-0123456789abcdef0\n", ec2_client=c), "reservation_id", FmValidationError),
        (lambda c: describe_reservation(["cr-0123456789abcdef0"], ec2_client=c), "reservation_id", FmTypeError),
        (lambda c: describe_reservation("cr-0123456789abcdef0", ec2_client="ec2"), "ec2_client", FmTypeError),
        (
            lambda c: describe_capacity_block("cb-0123456789abcdef0\n", ec2_client=c),
            "capacity_block_id",
            FmValidationError,
        ),
        (lambda c: describe_capacity_block(None, ec2_client=c), "capacity_block_id", FmTypeError),
        (lambda c: capacity_from_reservation({"CapacityReservationId": "cr-1"}), "info", FmTypeError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", max_nodes=True, info=INFO), "max_nodes", FmTypeError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", max_nodes=math.nan, info=INFO), "max_nodes", FmValidationError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", max_nodes=math.inf, info=INFO), "max_nodes", FmValidationError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", max_nodes="2", info=INFO), "max_nodes", FmTypeError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", info=INFO), "max_nodes", FmTypeError),
        (
            lambda c: check_capacity("cr-0123456789abcdef0", "p5.48xlarge", max_nodes=2, info=INFO),
            "capacity",
            FmTypeError,
        ),
        (lambda c: check_capacity(CAP, 5, max_nodes=2, info=INFO), "instance_type", FmTypeError),
        (lambda c: check_capacity(CAP, "p5.48xlarge", max_nodes=2, info={}), "info", FmTypeError),
        (
            lambda c: ReservationInfo("cr-1", "p5.48xlarge", "us-east-1a", 2.5, 2, "active", "default"),
            "total_instance_count",
            FmValidationError,
        ),
        (
            lambda c: ReservationInfo("cr-1", "p5.48xlarge", "us-east-1a", 2, 2, "active", "default", "2026"),
            "start_date",
            FmTypeError,
        ),
    ],
)
def test_bad_inputs_name_the_parameter(ec2, call, parameter, error):
    client, _ = ec2
    with pytest.raises(error) as raised:
        call(client)
    assert raised.value.parameter == parameter, raised.value
    assert str(raised.value).startswith(f"{parameter} must be")


def test_number_token_max_nodes_is_refused():
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "T")
    nodes = cdk.CfnParameter(stack, "N", type="Number").value_as_number
    with pytest.raises(FmValidationError, match=r"^max_nodes must be a number known when preflight runs"):
        check_capacity(CAP, "p5.48xlarge", max_nodes=nodes, info=INFO)
