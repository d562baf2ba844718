"""`fmc preflight --training-window-hours`: a Capacity Block that ends inside the window is named with the
`fmc capacity extend` command that covers the shortfall (an extended block keeps its reservation id, so the app does
not change); an ODCR, or a block that can no longer be extended, gets no such hint."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmconstructs.cli.preflight import extension_hint
from fmconstructs.preflight import ReservationInfo

from tests.support.fmc_preflight import (
    RID,
    _checks,
    _reservation,
    _run_stubbed,
    _stub_capacity,
    _stub_region_offering,
    _template,
)

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def _info(**overrides: Any) -> ReservationInfo:
    props: dict[str, Any] = {
        "reservation_id": RID,
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "total_instance_count": 2,
        "available_instance_count": 2,
        "state": "active",
        "reservation_type": "capacity-block",
        "start_date": NOW - dt.timedelta(days=1),
        "end_date": NOW + dt.timedelta(hours=10),
    }
    props.update(overrides)
    return ReservationInfo(**props)


@pytest.mark.parametrize(
    ("window_hours", "overrides", "days"),
    [
        (24, {}, 1),  # 14 h short
        (24 * 15, {}, 21),  # past 14 days: the 7-day steps
        (
            24 * 5,
            {"state": "scheduled", "start_date": NOW + dt.timedelta(days=2), "end_date": NOW + dt.timedelta(days=4)},
            3,
        ),
        (24 * 400, {}, 182),
    ],
)
def test_hint_names_the_days_that_cover_the_shortfall(
    window_hours: float, overrides: dict[str, Any], days: int
) -> None:
    hint = extension_hint(_info(**overrides), window_hours, NOW)
    assert hint.endswith(f"fmc capacity extend --reservation {RID} --days {days}")


@pytest.mark.parametrize(
    "overrides",
    [{"reservation_type": "default"}, {"state": "expired"}, {"state": "payment-pending"}, {"end_date": None}],
)
def test_no_hint_for_what_cannot_be_extended(overrides: dict[str, Any]) -> None:
    assert extension_hint(_info(**overrides), 24, NOW) == ""


def test_preflight_warning_names_the_extend_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        _stub_capacity(stub, _reservation())
        _stub_region_offering(stub)
        result = _run_stubbed(
            tmp_path, monkeypatch, _template(reservation=RID, block=True), ec2, "--training-window-hours", "24"
        )
        stub.assert_no_pending_responses()
    [end] = _checks(result)["capacity end"]
    assert end["status"] == "WARN"
    assert f"fmc capacity extend --reservation {RID} --days 1" in end["detail"]
