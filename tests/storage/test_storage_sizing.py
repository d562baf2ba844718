"""Sizing rules and helper: capacity steps, EFA multiples, throughput math (fmconstructs.storage.sizing)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fmconstructs.errors import FmValidationError
from fmconstructs.storage.sizing import (
    EFA_CAPACITY_MULTIPLE_GIB,
    LustreDeploymentType,
    LustreSizing,
    aggregate_throughput_mbps,
    capacity_rule,
    is_valid_capacity,
    next_valid_capacity_gib,
    size_for_checkpoint,
    size_for_throughput,
)

P2 = LustreDeploymentType.PERSISTENT_2
S1 = LustreDeploymentType.SCRATCH_1
S2 = LustreDeploymentType.SCRATCH_2


@pytest.mark.parametrize(
    ("capacity", "unit", "expected_mbps"),
    [
        (4800, 1000, 4687.5),  # aws-facts section 10: 4,800 GiB x 1,000 MB/s/TiB = 4,687.5 MB/s
        (1200, 125, 146.484375),
        (2400, 250, 585.9375),
        (38400, 125, 4687.5),
        (9600, 500, 4687.5),
        (1024, 1000, 1000.0),
    ],
)
def test_aggregate_throughput_is_capacity_in_tib_times_unit(capacity, unit, expected_mbps):
    # 1 TiB = 1,024 GiB (the old code divided by 1,000 and overstated throughput by 2.4%).
    assert aggregate_throughput_mbps(capacity, unit) == expected_mbps


@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 7200, 96000])
def test_persistent2_capacities_are_valid(capacity):
    assert is_valid_capacity(capacity, P2, 125)


@pytest.mark.parametrize("capacity", [0, -1200, 1000, 3000, 3600, 6000])
def test_persistent2_capacities_are_invalid(capacity):
    assert not is_valid_capacity(capacity, P2, 125)


def test_scratch1_steps_by_3600_after_2400():
    assert is_valid_capacity(3600, S1)
    assert is_valid_capacity(7200, S1)
    assert not is_valid_capacity(4800, S1)
    assert next_valid_capacity_gib(2500, S1) == 3600


@pytest.mark.parametrize(("unit", "multiple"), sorted(EFA_CAPACITY_MULTIPLE_GIB.items()))
def test_efa_capacity_must_be_the_tier_multiple(unit, multiple):
    assert is_valid_capacity(multiple, P2, unit, efa_enabled=True)
    assert is_valid_capacity(3 * multiple, P2, unit, efa_enabled=True)
    assert not is_valid_capacity(multiple + 2400, P2, unit, efa_enabled=True)
    assert next_valid_capacity_gib(1, P2, unit, efa_enabled=True) == multiple


def test_capacity_rule_names_the_deployment_type_and_efa_tier():
    assert capacity_rule(P2) == "1200, 2400 or a multiple of 2400 for PERSISTENT_2"
    assert capacity_rule(P2, 1000, efa_enabled=True) == (
        "a multiple of 4800 for an EFA-enabled PERSISTENT_2 file system at 1000 MB/s/TiB"
    )


@pytest.mark.parametrize(
    ("wanted", "expected"), [(0, 1200), (1200, 1200), (1201, 2400), (2400, 2400), (2401, 4800), (9601, 12000)]
)
def test_next_valid_capacity_rounds_up(wanted, expected):
    assert next_valid_capacity_gib(wanted, P2) == expected


def test_size_for_throughput_uses_the_highest_tier_by_default():
    sizing = size_for_throughput(4.5)
    assert sizing == LustreSizing(P2, 4800, 1000, False)
    assert sizing.aggregate_throughput_gbytes_per_s == pytest.approx(4.6875)


def test_4_8_gbytes_per_s_needs_more_than_4800_gib():
    # 4,800 GiB at 1,000 MB/s/TiB delivers 4.6875 GB/s, short of 4.8 GB/s: the old math (GiB / 1000) said 4.8.
    sizing = size_for_throughput(target_gbytes_per_s=4.8, throughput_mbps_per_tib=1000, efa_enabled=True)
    assert sizing.storage_capacity_gib == 9600
    assert size_for_throughput(4.8).storage_capacity_gib == 7200


def test_size_for_throughput_with_a_pinned_tier():
    # 1 GB/s at 125 MB/s/TiB needs 8,192 GiB -> 9,600 GiB (multiples of 2,400) = 1.171875 GB/s.
    sizing = size_for_throughput(1.0, throughput_mbps_per_tib=125)
    assert (sizing.storage_capacity_gib, sizing.aggregate_throughput_mbps) == (9600, 1171.875)


@pytest.mark.parametrize(
    ("target", "unit", "efa", "expected"),
    [
        (4.6875, 1000, True, 4800),  # exactly 4,800 GiB: no extra step for an exact hit
        (4.6876, 1000, True, 9600),
        (2.34375, 1000, False, 2400),  # exactly 2,400 GiB
        (2.35, 1000, False, 4800),
        (1.171875, 125, False, 9600),
        (1.171876, 125, False, 12000),
    ],
)
def test_size_for_throughput_rounds_up_at_the_boundaries(target, unit, efa, expected):
    sizing = size_for_throughput(target, throughput_mbps_per_tib=unit, efa_enabled=efa)
    assert sizing.storage_capacity_gib == expected
    assert sizing.aggregate_throughput_gbytes_per_s >= target - 1e-12


def test_size_for_throughput_efa_rounds_to_the_efa_multiple():
    sizing = size_for_throughput(1.0, throughput_mbps_per_tib=250, efa_enabled=True)
    assert sizing.storage_capacity_gib == 19200
    assert sizing.efa_enabled


def test_size_for_throughput_honours_the_data_size():
    assert size_for_throughput(0.1, min_capacity_gib=50_000).storage_capacity_gib == 50_400


def test_size_for_throughput_scratch_uses_the_baseline():
    sizing = size_for_throughput(1.0, deployment_type=S2)
    assert (sizing.storage_capacity_gib, sizing.throughput_mbps_per_tib) == (7200, 200)


def test_size_for_checkpoint():
    # A 2 TB checkpoint in 5 minutes: 6.67 GB/s -> 7,200 GiB at 1000 MB/s/TiB (7.2 GB/s, 278 s).
    sizing = size_for_checkpoint(2e12, 300)
    assert sizing.storage_capacity_gib == 7200
    assert sizing.seconds_to_write(2e12) <= 300


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, r"target_gbytes_per_s must be given"),
        ({"target_gbytes_per_s": 0}, r"target_gbytes_per_s must be greater than 0 GB/s, got 0"),
        ({"target_gbytes_per_s": -1}, r"target_gbytes_per_s .* got -1"),
        ({"target_gbytes_per_s": math.inf}, r"target_gbytes_per_s must be a finite number, got inf"),
        ({"target_gbytes_per_s": math.nan}, r"target_gbytes_per_s must be a finite number, got nan"),
        ({"target_gbytes_per_s": -math.inf}, r"target_gbytes_per_s must be a finite number, got -inf"),
        ({"target_gbytes_per_s": True}, r"target_gbytes_per_s must be a number .*got a bool"),
        ({"target_gbytes_per_s": "4.8"}, r"target_gbytes_per_s must be a number .*got a str"),
        ({"target_gbytes_per_s": 1, "throughput_mbps_per_tib": 300}, r"throughput_mbps_per_tib must be one of 125"),
        ({"target_gbytes_per_s": 1, "throughput_mbps_per_tib": math.nan}, r"throughput_mbps_per_tib must be a finite"),
        ({"target_gbytes_per_s": 1, "throughput_mbps_per_tib": "1000"}, r"throughput_mbps_per_tib must be a number"),
        (
            {"target_gbytes_per_s": 1, "deployment_type": S2, "throughput_mbps_per_tib": 200},
            r"None for SCRATCH_2, got 200",
        ),
        ({"target_gbytes_per_s": 1, "deployment_type": S2, "efa_enabled": True}, r"efa_enabled must be False unless"),
        ({"target_gbytes_per_s": 1, "efa_enabled": 1}, r"efa_enabled must be a bool"),
        ({"target_gbytes_per_s": 1, "min_capacity_gib": -1}, r"min_capacity_gib must be at least 0 GiB, got -1"),
        ({"target_gbytes_per_s": 1, "min_capacity_gib": math.nan}, r"min_capacity_gib must be a finite number"),
        (
            {"target_gbytes_per_s": 1, "deployment_type": "PERSISTENT_2"},
            r"deployment_type must be a LustreDeploymentType",
        ),
    ],
)
def test_size_for_throughput_rejects(kwargs, match):
    with pytest.raises(FmValidationError, match=match):
        size_for_throughput(**kwargs)


def test_a_deploy_time_target_cannot_be_sized():
    import aws_cdk as cdk

    stack = cdk.Stack(cdk.App(), "S")
    target = cdk.CfnParameter(stack, "Target", type="Number").value_as_number
    with pytest.raises(FmValidationError, match=r"target_gbytes_per_s must be a number known at synthesis"):
        size_for_throughput(target)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 10), r"checkpoint_bytes .* got 0"),
        ((1e9, 0), r"seconds must be .* got 0"),
        ((1e9, -5), r"got -5"),
        ((math.nan, 10), r"checkpoint_bytes must be a finite number, got nan"),
        ((1e9, math.inf), r"seconds must be a finite number, got inf"),
        (("1e9", 10), r"checkpoint_bytes must be a number"),
        ((1e9, False), r"seconds must be a number"),
    ],
)
def test_size_for_checkpoint_rejects(args, match):
    with pytest.raises(FmValidationError, match=match):
        size_for_checkpoint(*args)


@given(
    target=st.floats(min_value=0.01, max_value=2000, allow_nan=False),
    unit=st.sampled_from([125, 250, 500, 1000]),
    efa=st.booleans(),
)
def test_sizing_is_valid_sufficient_and_minimal(target, unit, efa):
    sizing = size_for_throughput(target, throughput_mbps_per_tib=unit, efa_enabled=efa)
    capacity = sizing.storage_capacity_gib
    assert is_valid_capacity(capacity, P2, unit, efa_enabled=efa)
    assert sizing.aggregate_throughput_gbytes_per_s >= target - 1e-9
    # Minimal: the next smaller valid capacity falls short of the target.
    smaller = [c for c in range(1200, capacity, 1200) if is_valid_capacity(c, P2, unit, efa_enabled=efa)]
    if smaller:
        assert aggregate_throughput_mbps(max(smaller), unit) / 1000 < target


@given(
    checkpoint_gb=st.floats(min_value=1, max_value=50_000, allow_nan=False),
    seconds=st.floats(min_value=1, max_value=3600, allow_nan=False),
)
def test_checkpoint_sizing_meets_the_deadline(checkpoint_gb, seconds):
    sizing = size_for_checkpoint(checkpoint_gb * 1e9, seconds)
    assert sizing.seconds_to_write(checkpoint_gb * 1e9) <= seconds * (1 + 1e-9)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: aggregate_throughput_mbps(math.nan, 1000), r"storage_capacity_gib must be a finite number"),
        (lambda: aggregate_throughput_mbps(4800, 0), r"throughput_mbps_per_tib must be greater than 0"),
        (lambda: aggregate_throughput_mbps("4800", 1000), r"storage_capacity_gib must be a number"),
        (lambda: is_valid_capacity(math.inf, P2), r"storage_capacity_gib must be a finite number"),
        (lambda: is_valid_capacity(4800, "PERSISTENT_2"), r"deployment_type must be a LustreDeploymentType"),
        (lambda: next_valid_capacity_gib(math.nan), r"min_capacity_gib must be a finite number"),
        (lambda: LustreSizing(P2, math.nan, 1000), r"storage_capacity_gib must be a finite number"),
        (lambda: LustreSizing(P2, True, 1000), r"storage_capacity_gib must be an integer"),
        (lambda: LustreSizing("PERSISTENT_2", 4800, 1000), r"deployment_type must be a LustreDeploymentType"),
        (lambda: LustreSizing(P2, 4800, 1000).seconds_to_write(math.nan), r"num_bytes must be a finite number"),
    ],
)
def test_sizing_functions_refuse_wrong_types_and_non_finite_numbers(call, match):
    with pytest.raises(FmValidationError, match=match):
        call()
