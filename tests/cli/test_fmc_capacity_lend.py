"""`fmc capacity lend`: a team's unused ODCR capacity as an interruptible Capacity Reservation, against botocore's
Stubber (EC2 CreateInterruptibleCapacityReservationAllocation / UpdateInterruptibleCapacityReservationAllocation,
botocore 1.44.8). Every test checks the exact EC2 requests and records the operations sent, so "nothing changes
without --yes" and "no AWS call for bad input" are asserted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner
from rich.console import Console

from fmconstructs.cli import capacity as capacity_cli
from fmconstructs.cli.capacity_lend import Source, problems
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli

REGION = "us-east-2"
SOURCE = "cr-0123456789abcdef0"
IODCR = "cr-0fedcba9876543210"
CREATE = "CreateInterruptibleCapacityReservationAllocation"
UPDATE = "UpdateInterruptibleCapacityReservationAllocation"
_LENT_8 = {
    "InstanceCount": 8,
    "TargetInstanceCount": 8,
    "Status": "active",
    "InterruptibleCapacityReservationId": IODCR,
}


def _reservation(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "CapacityReservationId": SOURCE,
        "ReservationType": "default",
        "InstanceType": "p5.48xlarge",
        "TotalInstanceCount": 32,
        "AvailableInstanceCount": 20,
        "AvailabilityZone": "us-east-2a",
        "State": "active",
        "Interruptible": False,
    }
    item.update(overrides)
    return item


class Ec2:
    """A stubbed EC2 client and the names of the operations it was asked for."""

    def __init__(self) -> None:
        self.client = boto3.client("ec2", region_name=REGION, aws_access_key_id="k", aws_secret_access_key="s")
        self.stub = Stubber(self.client)
        self.sent: list[str] = []
        self.client.meta.events.register("before-parameter-build.ec2", lambda model, **_: self.sent.append(model.name))

    def reservation(self, item: dict[str, Any] | None = None) -> None:
        self.stub.add_response(
            "describe_capacity_reservations",
            {"CapacityReservations": [item or _reservation()]},
            {"CapacityReservationIds": [SOURCE]},
        )


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Ec2]:
    fake = Ec2()
    monkeypatch.setattr(capacity_cli, "ec2_client", lambda *args: fake.client)
    monkeypatch.setattr(capacity_cli, "_console", lambda: Console(width=400))
    with fake.stub:
        yield fake
        fake.stub.assert_no_pending_responses()


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["capacity", "lend", *args])


@pytest.mark.parametrize("as_json", [False, True])
def test_lend_refused_without_yes_shows_what_would_be_lent(ec2: Ec2, as_json: bool) -> None:
    ec2.reservation()
    result = _run("--reservation", SOURCE, "--count", "16", *(["--json"] if as_json else []))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert CREATE not in ec2.sent and UPDATE not in ec2.sent
    if as_json:
        data = json.loads(result.output)
        assert data["lent"] is False and "--yes" in data["error"]["message"]
        assert data["source"]["available_instance_count"] == 20
    else:
        assert "add --yes to lend p5.48xlarge of cr-0123456789abcdef0 (us-east-2a)" in result.output
        assert "0 lent now -> 16 lent, 20 of 32 unused" in result.output
        assert "aws ram create-resource-share" in result.output


def test_lend_with_yes_creates_the_allocation(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.stub.add_response(
        "create_interruptible_capacity_reservation_allocation",
        {"SourceCapacityReservationId": SOURCE, "TargetInstanceCount": 16, "Status": "pending"},
        {
            "CapacityReservationId": SOURCE,
            "InstanceCount": 16,
            "DryRun": False,
            "ClientToken": f"fmc-lend-{SOURCE}-16",
        },
    )
    result = _run("--reservation", SOURCE, "--count", "16", "--yes", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["lent"] is True and data["allocation"]["Status"] == "pending"
    assert ec2.sent == ["DescribeCapacityReservations", CREATE]


def test_lend_more_raises_the_existing_allocation(ec2: Ec2) -> None:
    ec2.reservation(_reservation(InterruptibleCapacityAllocation=_LENT_8))
    ec2.stub.add_response(
        "update_interruptible_capacity_reservation_allocation",
        {"InterruptibleCapacityReservationId": IODCR, "TargetInstanceCount": 12, "Status": "updating"},
        {"CapacityReservationId": SOURCE, "TargetInstanceCount": 12, "DryRun": False},
    )
    result = _run("--reservation", SOURCE, "--count", "12", "--yes")
    assert result.exit_code == 0, result.output
    assert "8 lent now -> 12 lent" in result.output and "status updating" in result.output
    assert ec2.sent == ["DescribeCapacityReservations", UPDATE]


def test_same_count_again_changes_nothing(ec2: Ec2) -> None:
    ec2.reservation(_reservation(InterruptibleCapacityAllocation=_LENT_8))
    result = _run("--reservation", SOURCE, "--count", "8", "--yes")
    assert result.exit_code == 0, result.output
    assert "already lent" in result.output
    assert ec2.sent == ["DescribeCapacityReservations"]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_smaller_count_would_reclaim_and_is_refused(ec2: Ec2, as_json: bool) -> None:
    ec2.reservation(_reservation(InterruptibleCapacityAllocation=_LENT_8))
    result = _run("--reservation", SOURCE, "--count", "2", "--yes", *(["--json"] if as_json else []))
    assert result.exit_code == ExitCode.USAGE, result.output
    message = json.loads(result.output)["error"]["message"] if as_json else result.output
    assert "would reclaim 6" in message and "--target-instance-count 2" in message
    assert ec2.sent == ["DescribeCapacityReservations"]


def test_dry_run_asks_ec2_and_changes_nothing(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.stub.add_client_error(
        "create_interruptible_capacity_reservation_allocation",
        service_error_code="DryRunOperation",
        service_message="Request would have succeeded, but DryRun flag is set.",
        http_status_code=412,
        expected_params={
            "CapacityReservationId": SOURCE,
            "InstanceCount": 2,
            "DryRun": True,
            "ClientToken": f"fmc-lend-{SOURCE}-2",
        },
    )
    result = _run("--reservation", SOURCE, "--count", "2", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "nothing changed" in result.output


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"AvailableInstanceCount": 3}, "4 more instances asked, 3 unused"),
        ({"State": "pending"}, "state pending"),
        ({"EndDate": "2027-01-01T00:00:00Z"}, "no end date"),
        ({"Interruptible": True}, "itself an interruptible reservation"),
        ({"ReservationType": "capacity-block"}, "only On-Demand Capacity Reservations lend"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_prerequisites_fail_with_exit_1_and_no_change(
    ec2: Ec2, overrides: dict[str, Any], expected: str, as_json: bool
) -> None:
    ec2.reservation(_reservation(**overrides))
    result = _run("--reservation", SOURCE, "--count", "4", "--yes", *(["--json"] if as_json else []))
    assert result.exit_code == ExitCode.CHECKS_FAILED, result.output
    assert "Traceback" not in result.output
    assert CREATE not in ec2.sent and UPDATE not in ec2.sent
    message = json.loads(result.output)["error"]["message"] if as_json else result.output
    assert expected in message


def test_ec2_error_on_lend_is_one_line(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.stub.add_client_error(
        "create_interruptible_capacity_reservation_allocation",
        service_error_code="UnauthorizedOperation",
        service_message="You are not authorized",
        http_status_code=403,
    )
    result = _run("--reservation", SOURCE, "--count", "1", "--yes")
    assert result.exit_code == ExitCode.CHECKS_FAILED
    [line] = result.output.strip().splitlines()
    assert f"missing permission ec2:{CREATE}" in line


def test_unknown_reservation_exit_1(ec2: Ec2) -> None:
    ec2.stub.add_response(
        "describe_capacity_reservations", {"CapacityReservations": []}, {"CapacityReservationIds": [SOURCE]}
    )
    result = _run("--reservation", SOURCE, "--count", "1")
    assert result.exit_code == ExitCode.CHECKS_FAILED
    assert "not found in this region" in result.output


@pytest.mark.usefixtures("no_credentials")
def test_no_credentials_exit_4() -> None:
    result = CliRunner().invoke(cli, ["capacity", "lend", "--reservation", SOURCE, "--count", "1", "--region", REGION])
    assert result.exit_code == ExitCode.NO_CREDENTIALS
    assert "no AWS credentials" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--reservation", "cr-01234", "--count", "1"],
        ["--reservation", "", "--count", "1"],
        ["--reservation", SOURCE],
        ["--reservation", SOURCE, "--count", "0"],
        ["--reservation", SOURCE, "--count", "-1"],
        ["--reservation", SOURCE, "--count", "two"],
        ["--reservation", SOURCE, "--count", "1", "--yes", "--dry-run"],
        ["--count", "1"],
    ],
)
def test_bad_input_exit_2_without_aws_call(ec2: Ec2, args: list[str]) -> None:
    result = _run(*args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "No such command" not in result.output
    assert ec2.sent == []


def test_problems_empty_for_a_lendable_source() -> None:
    assert problems(Source.from_api(_reservation()), 20) == []


def test_at_most_1000_instances_move_at_once() -> None:
    source = Source.from_api(_reservation(TotalInstanceCount=2000, AvailableInstanceCount=2000))
    assert problems(source, 1000) == []
    assert problems(source, 1001) == ["1001 more instances asked: at most 1000 move at once"]
