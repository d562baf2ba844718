"""Team: a keyword-only, frozen value object checked at construction (GIVEN bad input, THEN FmValidationError naming
the field)."""

from __future__ import annotations

import dataclasses
from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.teams import Preemption, Team


def test_a_team_keeps_its_values_and_its_gpu_limit_is_guarantee_plus_borrowing():
    team = Team(name="research", users=["alice"], guaranteed_gpus=16, borrowing_limit_gpus=8, priority=50)
    assert team.users == ("alice",) and team.gpu_limit == 24
    assert Team(name="dev").gpu_limit is None
    assert Team(name="dev").preemption is Preemption.RECLAIM
    with pytest.raises(dataclasses.FrozenInstanceError):
        team.priority = 1  # type: ignore[misc]


def test_max_job_time_takes_minutes_or_a_duration():
    assert Team(name="a", max_job_time_minutes=90).max_job_time_minutes == 90
    assert Team(name="a", max_job_time_minutes=cdk.Duration.hours(2)).max_job_time_minutes == 120


def test_team_is_keyword_only():
    with pytest.raises(TypeError):
        Team("research")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"name": ""}, "name"),
        ({"name": 3}, "name"),
        ({"users": "alice"}, "users"),
        ({"users": ["-x"]}, r"users\[0\]"),
        ({"users": ["alice", "alice"]}, "users"),
        ({"unix_group": "a b"}, "unix_group"),
        ({"namespaces": "ml"}, "namespaces"),
        ({"namespaces": ["ml", "ml"]}, "namespaces"),
        ({"guaranteed_gpus": -1}, "guaranteed_gpus"),
        ({"guaranteed_gpus": 1.5}, "guaranteed_gpus"),
        ({"borrowing_limit_gpus": -2}, "borrowing_limit_gpus"),
        ({"priority": 101}, "priority"),
        ({"priority": True}, "priority"),
        ({"preemption": "never"}, "preemption"),
        ({"max_job_gpus": 0}, "max_job_gpus"),
        ({"max_job_time_minutes": 0}, "max_job_time_minutes"),
        ({"max_job_time_minutes": cdk.Duration.seconds(90)}, "max_job_time_minutes"),
    ],
)
def test_bad_team_input_names_the_field(overrides: dict[str, Any], parameter: str):
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{parameter} "):
        Team(**{"name": "research", **overrides})
