"""Capacity choices: what they put in a launch template and the rules they enforce."""

from __future__ import annotations

import pytest

from fmconstructs import (
    CapacityBlock,
    CapacityKind,
    CapacityReservation,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
    get_instance_spec,
    pinned_availability_zone,
)
from fmconstructs.capacity import ReservationTargetForm

GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/my-block"
P5 = get_instance_spec("p5.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")


def test_on_demand_sets_nothing():
    cap = OnDemand()
    assert cap.kind is CapacityKind.ON_DEMAND
    assert cap.market_options() is None and cap.reservation_specification() is None
    assert pinned_availability_zone(cap) is None and cap.max_instances is None
    cap.validate_for(P5, min_count=0, max_count=1000)


def test_targeted_odcr_by_id():
    cap = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")
    assert cap.market_options() is None
    spec = cap.reservation_specification()
    assert spec is not None
    assert spec.capacity_reservation_target.capacity_reservation_id == "cr-0123456789abcdef0"
    assert (cap.max_instances, pinned_availability_zone(cap), cap.requires_fixed_size) == (
        4,
        "us-east-1a",
        False,
    )
    cap.validate_for(P5, min_count=0, max_count=4)


def test_targeted_odcr_by_resource_group():
    cap = CapacityReservation(resource_group_arn=GROUP_ARN)
    target = cap.reservation_target()
    assert target.capacity_reservation_resource_group_arn == GROUP_ARN
    assert target.capacity_reservation_id is None


def test_capacity_block_sets_market_type_and_target():
    cap = CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2)
    assert cap.kind is CapacityKind.CAPACITY_BLOCK and cap.is_capacity_block and cap.requires_fixed_size
    market = cap.market_options()
    assert market is not None and market.market_type == "capacity-block"
    spec = cap.reservation_specification()
    assert spec is not None and spec.capacity_reservation_target.capacity_reservation_id == "cr-0fedcba9876543210"


def test_ultraserver_block():
    cap = UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, ultraserver_type="u-p6e-gb200x36", ultraserver_count=2)
    assert cap.max_instances == 18 and cap.is_capacity_block
    assert cap.reservation_target().capacity_reservation_resource_group_arn == GROUP_ARN
    cap.validate_for(GB200, min_count=18, max_count=18)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: CapacityBlock(),
            r"reservation_id/resource_group_arn must be exactly one of the two for a capacity-block",
        ),
        (
            lambda: CapacityReservation(reservation_id="cr-0123456789abcdef0", resource_group_arn=GROUP_ARN),
            r"exactly one of the two for a capacity-reservation",
        ),
        (lambda: CapacityBlock(reservation_id="r-123"), r"reservation_id must be a capacity reservation id"),
        (
            lambda: CapacityReservation(reservation_id="cr-XYZ"),
            r"reservation_id must be a capacity reservation id",
        ),
        (
            lambda: CapacityReservation(resource_group_arn="arn:aws:s3:::bucket"),
            r"resource_group_arn must be a resource group ARN",
        ),
        (
            lambda: CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=0),
            r"instance_count must be a positive",
        ),
        (
            lambda: CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="useast1"),
            r"availability_zone must be an availability zone name",
        ),
        (
            lambda: UltraServerCapacityBlock(),
            r"reservation_id/resource_group_arn must be at least one of the two for an UltraServer Capacity Block",
        ),
        (
            lambda: UltraServerCapacityBlock(reservation_id="cr-gb200"),
            r"reservation_id must be a capacity reservation id like 'cr-0123456789abcdef0', got 'cr-gb200'",
        ),
        (
            lambda: UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, ultraserver_type="u-p6e-gb200x8"),
            r"ultraserver_type must be one of u-p6e-gb200x36, u-p6e-gb200x72, got 'u-p6e-gb200x8'",
        ),
        (
            lambda: UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, ultraserver_count=0),
            r"ultraserver_count must be a positive",
        ),
    ],
)
def test_invalid_capacity_choices(make, message):
    with pytest.raises(FmValidationError, match=message):
        make()


@pytest.mark.parametrize(
    ("cap", "spec", "min_count", "max_count", "message"),
    [
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0"),
            P5,
            1,
            2,
            r"min_count must be equal to max_count \(2\) on a Capacity Block \(a fixed-size fleet\), got 1",
        ),
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
            P5,
            4,
            4,
            r"max_count must be at most the reservation's 2 instances, got 4",
        ),
        (
            CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=8),
            P5,
            0,
            9,
            r"max_count must be at most the reservation's 8 instances, got 9",
        ),
        (
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
            P5,
            18,
            18,
            r"instance_type must be p6e-gb200.36xlarge on a u-p6e-gb200x72 UltraServer Capacity Block, got 'p5.48xlarge'",
        ),
        (
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
            GB200,
            19,
            19,
            r"max_count must be at most the reservation's 18 instances, got 19",
        ),
        (OnDemand(), P5, 3, 2, r"min_count must be at most max_count \(2\), got 3"),
        (OnDemand(), P5, -1, 2, r"min_count must be zero or more, got -1"),
        (OnDemand(), P5, 0, 0, r"max_count must be a positive number of instances, got 0"),
    ],
)
def test_node_count_rules(cap, spec, min_count, max_count, message):
    with pytest.raises(FmValidationError, match=message):
        cap.validate_for(spec, min_count=min_count, max_count=max_count)


def test_subnet_zone_must_match_reservation_zone(scene):
    cap = CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a")
    cap.check_subnet(scene.subnet_a)
    with pytest.raises(
        FmValidationError,
        match=r"subnet must be a subnet in us-east-1a, the availability zone of the capacity-block, got 'subnet-0bbbbbbbbbbbbbbb2 in us-east-1b'",
    ):
        cap.check_subnet(scene.subnet_b)


def test_unknown_zone_is_not_checked(scene):
    CapacityBlock(reservation_id="cr-0123456789abcdef0").check_subnet(scene.subnet_b)


def test_tokens_are_not_validated(scene):
    from aws_cdk import CfnParameter

    param = CfnParameter(scene.stack, "ReservationId")
    cap = CapacityBlock(reservation_id=param.value_as_string)
    spec = cap.reservation_specification()
    assert spec is not None


# --- reservation target per consumer (EC2 UG capacity-blocks-launch / cb-group; PCS UG capacity-blocks-configure-cng) --

BLOCK_ID = "cr-0123456789abcdef0"


def _target(target: object) -> tuple[object, object]:
    return target.capacity_reservation_id, target.capacity_reservation_resource_group_arn  # type: ignore[attr-defined]


def test_ultraserver_block_by_reservation_id():
    # PCS User Guide capacity-blocks-configure-cng: the launch template names the block by CapacityReservationId.
    cap = UltraServerCapacityBlock(reservation_id=BLOCK_ID)
    assert cap.reservation_target_forms == (ReservationTargetForm.RESERVATION_ID,)
    assert _target(cap.reservation_target()) == (BLOCK_ID, None)
    assert _target(cap.reservation_target(ReservationTargetForm.RESERVATION_ID)) == (BLOCK_ID, None)


def test_ultraserver_block_with_both_forms_defaults_to_the_resource_group():
    # The default stays what every earlier caller rendered (EKS and self-managed fleets); PCS asks for the id.
    cap = UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID)
    assert _target(cap.reservation_target()) == (None, GROUP_ARN)
    assert _target(cap.reservation_target(ReservationTargetForm.RESOURCE_GROUP_ARN)) == (None, GROUP_ARN)
    assert _target(cap.reservation_target(ReservationTargetForm.RESERVATION_ID)) == (BLOCK_ID, None)
    spec = cap.reservation_specification(ReservationTargetForm.RESERVATION_ID)
    assert spec is not None and _target(spec.capacity_reservation_target) == (BLOCK_ID, None)


@pytest.mark.parametrize(
    ("cap", "form", "message"),
    [
        (
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
            ReservationTargetForm.RESERVATION_ID,
            r"reservation_id must be given for AWS PCS, which targets a ultraserver-capacity-block by "
            r"CapacityReservationId \(this UltraServerCapacityBlock has only resource_group_arn\), got None",
        ),
        (
            CapacityBlock(resource_group_arn=GROUP_ARN),
            ReservationTargetForm.RESERVATION_ID,
            r"reservation_id must be given for AWS PCS, which targets a capacity-block by CapacityReservationId",
        ),
        (
            UltraServerCapacityBlock(reservation_id=BLOCK_ID),
            ReservationTargetForm.RESOURCE_GROUP_ARN,
            r"resource_group_arn must be given for AWS PCS, .*has only reservation_id\), got None",
        ),
    ],
)
def test_a_form_the_capacity_was_not_given_is_refused(cap, form, message):
    with pytest.raises(FmValidationError, match=message):
        cap.reservation_specification(form, consumer="AWS PCS")


def test_on_demand_has_no_target_in_any_form():
    assert OnDemand().reservation_target(ReservationTargetForm.RESERVATION_ID) is None
    assert OnDemand().reservation_target_forms == ()
