"""`fmc capacity blocks` / `fmc capacity extend`: Capacity Blocks and their extensions, against botocore's Stubber
(moto 5.2 models neither DescribeCapacityBlockExtensionOfferings nor PurchaseCapacityBlockExtension).

Every test checks the exact EC2 requests: the Stubber fails on a call it was not given, and each test records the
operations the client sent, so "no purchase without --yes" and "no AWS call for a malformed id" are asserted, not
assumed."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner
from rich.console import Console

from fmconstructs.cli import capacity as capacity_cli
from fmconstructs.cli.capacity_aws import Block, extension_notes
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli

REGION = "us-east-2"
RESERVATION = "cr-0123456789abcdef0"
OFFERING = "cbe-0123456789abcdef0"
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
END = NOW + dt.timedelta(days=2)
NEW_END = END + dt.timedelta(days=7)


def _reservation(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "CapacityReservationId": RESERVATION,
        "ReservationType": "capacity-block",
        "CapacityBlockId": "cb-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 1,
        "AvailabilityZone": "us-east-2a",
        "State": "active",
        "StartDate": NOW - dt.timedelta(days=1),
        "EndDate": END,
    }
    item.update(overrides)
    return item


def _offering(offering_id: str = OFFERING, hours: int = 168) -> dict[str, Any]:
    return {
        "CapacityBlockExtensionOfferingId": offering_id,
        "InstanceType": "p5.48xlarge",
        "InstanceCount": 4,
        "AvailabilityZone": "us-east-2a",
        "StartDate": NOW - dt.timedelta(days=1),
        "CapacityBlockExtensionStartDate": END,
        "CapacityBlockExtensionEndDate": END + dt.timedelta(hours=hours),
        "CapacityBlockExtensionDurationHours": hours,
        "UpfrontFee": "21504.00",
        "CurrencyCode": "USD",
    }


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
            {"CapacityReservationIds": [RESERVATION]},
        )

    def offerings(self, items: list[dict[str, Any]], days: int = 7) -> None:
        self.stub.add_response(
            "describe_capacity_block_extension_offerings",
            {"CapacityBlockExtensionOfferings": items},
            {"CapacityReservationId": RESERVATION, "CapacityBlockExtensionDurationHours": days * 24},
        )


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Ec2]:
    fake = Ec2()
    monkeypatch.setattr(capacity_cli, "ec2_client", lambda *args: fake.client)
    monkeypatch.setattr(capacity_cli, "_now", lambda: NOW)
    monkeypatch.setattr(capacity_cli, "_console", lambda: Console(width=400))
    with fake.stub:
        yield fake
        fake.stub.assert_no_pending_responses()


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["capacity", *args], catch_exceptions=False)


# --- listing -----------------------------------------------------------------------------------------------------------
def test_extend_lists_offerings_with_price_and_new_end(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--region", REGION)
    assert result.exit_code == 0, result.output
    assert OFFERING in result.output
    assert "21504.00 USD" in result.output
    assert NEW_END.strftime("%Y-%m-%d %H:%M UTC") in result.output
    assert ec2.sent == ["DescribeCapacityReservations", "DescribeCapacityBlockExtensionOfferings"]


def test_extend_lists_offerings_as_json(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True
    assert data["reservation"]["end_date"] == END.isoformat(timespec="seconds")
    assert data["reservation"]["extendable_now"] is True
    [offer] = data["offerings"]
    assert offer == {
        "offering_id": OFFERING,
        "instance_type": "p5.48xlarge",
        "instance_count": 4,
        "availability_zone": "us-east-2a",
        "current_end_date": END.isoformat(timespec="seconds"),
        "new_end_date": NEW_END.isoformat(timespec="seconds"),
        "duration_hours": 168,
        "upfront_fee": "21504.00",
        "currency_code": "USD",
    }


def test_extend_without_offerings_says_so(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([])
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["offerings"] == []
    assert any("no 7-day extension" in note for note in data["notes"])


def test_blocks_lists_only_capacity_blocks_by_end_date(ec2: Ec2) -> None:
    later = _reservation(CapacityReservationId="cr-0123456789abcdef1", EndDate=END + dt.timedelta(days=3))
    odcr = _reservation(CapacityReservationId="cr-0123456789abcdef2", ReservationType="default")
    expired = _reservation(CapacityReservationId="cr-0123456789abcdef3", State="expired")
    ec2.stub.add_response(
        "describe_capacity_reservations", {"CapacityReservations": [later, odcr, expired, _reservation()]}, {}
    )
    result = _run("blocks", "--json")
    assert result.exit_code == 0, result.output
    blocks = json.loads(result.output)["blocks"]
    assert [b["reservation_id"] for b in blocks] == [RESERVATION, "cr-0123456789abcdef1"]
    assert blocks[0]["end_date"] == END.isoformat(timespec="seconds")


def test_blocks_table_shows_end_and_whether_it_extends(ec2: Ec2) -> None:
    far = _reservation(CapacityReservationId="cr-0123456789abcdef1", EndDate=NOW + dt.timedelta(days=60))
    ec2.stub.add_response("describe_capacity_reservations", {"CapacityReservations": [_reservation(), far]}, {})
    result = _run("blocks")
    assert result.exit_code == 0, result.output
    assert END.strftime("%Y-%m-%d %H:%M UTC") in result.output
    assert "from 56 days before" in result.output


# --- purchase ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("as_json", [False, True])
def test_purchase_refused_without_yes(ec2: Ec2, as_json: bool) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    args = ["extend", "--reservation", RESERVATION, "--days", "7", "--offering", OFFERING]
    result = CliRunner().invoke(cli, ["capacity", *args, *(["--json"] if as_json else [])])
    assert result.exit_code == ExitCode.USAGE
    assert "PurchaseCapacityBlockExtension" not in ec2.sent
    if as_json:
        data = json.loads(result.output)
        assert data["purchased"] is False
        assert data["offering"]["upfront_fee"] == "21504.00"
        assert "--yes" in data["error"]["message"]
    else:
        assert "add --yes" in result.output
        assert "21504.00 USD" in result.output
        assert NEW_END.strftime("%Y-%m-%d %H:%M UTC") in result.output


def test_purchase_with_yes_sends_the_offering(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    ec2.stub.add_response(
        "purchase_capacity_block_extension",
        {
            "CapacityBlockExtensions": [
                {
                    "CapacityReservationId": RESERVATION,
                    "CapacityBlockExtensionOfferingId": OFFERING,
                    "CapacityBlockExtensionStatus": "payment-pending",
                    "CapacityBlockExtensionEndDate": NEW_END,
                    "CapacityBlockExtensionDurationHours": 168,
                    "UpfrontFee": "21504.00",
                    "CurrencyCode": "USD",
                }
            ]
        },
        {"CapacityBlockExtensionOfferingId": OFFERING, "CapacityReservationId": RESERVATION, "DryRun": False},
    )
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--offering", OFFERING, "--yes", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["purchased"] is True
    assert data["extensions"][0]["status"] == "payment-pending"
    assert data["extensions"][0]["new_end_date"] == NEW_END.isoformat(timespec="seconds")
    assert any("payment" in note for note in data["notes"])


def test_dry_run_asks_ec2_and_buys_nothing(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    ec2.stub.add_client_error(
        "purchase_capacity_block_extension",
        service_error_code="DryRunOperation",
        service_message="Request would have succeeded, but DryRun flag is set.",
        http_status_code=412,
        expected_params={
            "CapacityBlockExtensionOfferingId": OFFERING,
            "CapacityReservationId": RESERVATION,
            "DryRun": True,
        },
    )
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--offering", OFFERING, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "nothing was bought" in result.output


def test_unknown_offering_is_refused_before_purchase(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    result = _run("extend", "--reservation", RESERVATION, "--days", "7", "--offering", "cbe-0ffffffffffffffff", "--yes")
    assert result.exit_code == ExitCode.USAGE
    assert "not among the 7-day offerings" in result.output
    assert "PurchaseCapacityBlockExtension" not in ec2.sent


# --- AWS errors --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status", "expected", "exit_code"),
    [
        ("InvalidCapacityReservationId.NotFound", 400, "not found (InvalidCapacityReservationId.NotFound)", 1),
        ("UnauthorizedOperation", 403, "missing permission ec2:DescribeCapacityReservations", 1),
        ("RequestLimitExceeded", 503, "throttled (RequestLimitExceeded)", 1),
        ("AuthFailure", 401, "AWS refused the credentials", 4),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_aws_errors_end_in_one_line(
    ec2: Ec2, code: str, status: int, expected: str, exit_code: int, as_json: bool
) -> None:
    ec2.stub.add_client_error(
        "describe_capacity_reservations",
        service_error_code=code,
        service_message="refused",
        http_status_code=status,
        expected_params={"CapacityReservationIds": [RESERVATION]},
    )
    args = ["capacity", "extend", "--reservation", RESERVATION, *(["--json"] if as_json else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == exit_code
    assert "Traceback" not in result.output
    if as_json:
        assert expected in json.loads(result.output)["error"]["message"]
    else:
        [line] = result.output.strip().splitlines()
        assert expected in line


def test_purchase_error_is_one_line(ec2: Ec2) -> None:
    ec2.reservation()
    ec2.offerings([_offering()])
    ec2.stub.add_client_error(
        "purchase_capacity_block_extension",
        service_error_code="UnauthorizedOperation",
        service_message="You are not authorized",
        http_status_code=403,
    )
    args = ["capacity", "extend", "--reservation", RESERVATION, "--days", "7", "--offering", OFFERING, "--yes"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == ExitCode.CHECKS_FAILED
    assert "missing permission ec2:PurchaseCapacityBlockExtension" in result.output


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("command", [["blocks"], ["extend", "--reservation", RESERVATION]])
def test_no_credentials_exit_4(command: list[str]) -> None:
    result = CliRunner().invoke(cli, ["capacity", *command, "--region", REGION])
    assert result.exit_code == ExitCode.NO_CREDENTIALS
    assert "no AWS credentials" in result.output


# --- bad input: exit 2, no AWS call ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["--reservation", "cr-01234"],
        ["--reservation", "cr-0123456789ABCDEF0"],
        ["--reservation", "cb-0123456789abcdef0"],
        ["--reservation", ""],
        ["--reservation", RESERVATION, "--days", "0"],
        ["--reservation", RESERVATION, "--days", "15"],
        ["--reservation", RESERVATION, "--days", "22"],
        ["--reservation", RESERVATION, "--days", "189"],
        ["--reservation", RESERVATION, "--days", "-7"],
        ["--reservation", RESERVATION, "--days", "seven"],
        ["--reservation", RESERVATION, "--offering", "cbe 0123"],
        ["--reservation", RESERVATION, "--offering", "-cbe"],
        ["--reservation", RESERVATION, "--yes"],
        ["--reservation", RESERVATION, "--dry-run"],
        ["--reservation", RESERVATION, "--offering", OFFERING, "--yes", "--dry-run"],
        ["--days", "7"],
    ],
)
def test_bad_input_exit_2_without_aws_call(ec2: Ec2, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["capacity", "extend", *args])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "No such command" not in result.output
    assert ec2.sent == []


# --- the rules, offline ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "is_block", "expected"),
    [
        ({}, True, None),
        ({"State": "scheduled", "EndDate": NOW + dt.timedelta(days=30)}, True, None),
        ({"State": "expired"}, True, "active or scheduled"),
        ({"EndDate": NOW + dt.timedelta(minutes=59)}, True, "until 1 hour before"),
        ({"EndDate": NOW + dt.timedelta(days=57)}, True, "from 56 days before"),
        ({}, False, "not a Capacity Block"),
    ],
)
def test_extension_notes_follow_the_user_guide(overrides: dict[str, Any], is_block: bool, expected: str | None) -> None:
    notes = extension_notes(Block.from_api(_reservation(**overrides)), NOW, is_block=is_block)
    if expected is None:
        assert notes == []
    else:
        assert any(expected in note for note in notes), notes
