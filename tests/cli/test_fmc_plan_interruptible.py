"""`fmc plan` names a node group on an interruptible Capacity Reservation (issue 24 section 2): the launch template's
market type ``interruptible-capacity-reservation`` / PCS purchase option ``INTERRUPTIBLE_CAPACITY_RESERVATION`` (PCS
User Guide capacity-reservations-iodcr), not a plain ODCR."""

from __future__ import annotations

import pytest

from fmconstructs.cli.assembly import LaunchTemplate, NodeGroup
from fmconstructs.cli.plan import _capacity

IODCR = "cr-0fedcba9876543210"


def _group(market: str | None, purchase_option: str | None) -> NodeGroup:
    template = LaunchTemplate("Lt", "p5.48xlarge", None, None, reservation_id=IODCR, market_type=market)
    return NodeGroup("Stack", "Group", "pcs", "p5.48xlarge", 0, 16, template, purchase_option=purchase_option)


@pytest.mark.parametrize(
    ("market", "purchase_option"),
    [
        ("interruptible-capacity-reservation", "INTERRUPTIBLE_CAPACITY_RESERVATION"),
        ("interruptible-capacity-reservation", None),
        (None, "INTERRUPTIBLE_CAPACITY_RESERVATION"),
    ],
)
def test_interruptible_reservation_is_named(market: str | None, purchase_option: str | None) -> None:
    assert _capacity(_group(market, purchase_option), None) == ("interruptible ODCR", IODCR)


def test_a_targeted_odcr_stays_an_odcr() -> None:
    assert _capacity(_group(None, "ONDEMAND"), None) == ("ODCR", IODCR)
