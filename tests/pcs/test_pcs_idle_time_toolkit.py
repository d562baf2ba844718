"""PCS scale-down idle times are checked by the toolkit's one duration check (``_validate.check_duration_seconds``)."""

from __future__ import annotations

import pytest
from aws_cdk import Duration

from fmconstructs import _validate
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import PcsCluster
from fmconstructs.pcs._checks import MAX_IDLE_SECONDS, idle_seconds

from tests.conftest import new_scene


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (Duration.millis(1500), FmValidationError, "a whole number of seconds"),
        (Duration.seconds(0), FmValidationError, r"at least 1 second\(s\)"),
        (Duration.seconds(MAX_IDLE_SECONDS + 1), FmValidationError, f"at most {MAX_IDLE_SECONDS} seconds"),
        (600, FmTypeError, r"an aws_cdk\.Duration such as Duration\.minutes\(5\)"),
    ],
    ids=["fraction", "zero", "over-maximum", "not-a-duration"],
)
def test_idle_seconds_refuses_like_the_toolkit(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        idle_seconds("scale_down_idle_time", value)
    with pytest.raises(error) as toolkit:
        _validate.check_duration_seconds(
            "scale_down_idle_time", value, minimum_seconds=1, maximum_seconds=MAX_IDLE_SECONDS
        )
    assert str(raised.value) == str(toolkit.value)


def test_the_cluster_refuses_a_fractional_idle_time() -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match="scale_down_idle_time must be a whole number of seconds"):
        PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, scale_down_idle_time=Duration.millis(1500))
