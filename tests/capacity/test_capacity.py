"""Capacity choices: what they put in a launch template and the rules they enforce."""

from __future__ import annotations

import math
import warnings

import aws_cdk as cdk
import pytest

from fmconstructs import (
    CapacityBlock,
    CapacityKind,
    CapacityReservation,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
    get_instance_spec,
)
from fmconstructs.capacity import ReservationTargetForm, pinned_zone
from fmconstructs.errors import FmTypeError

from tests.conftest import new_app

GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/my-block"
P5 = get_instance_spec("p5.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")


def test_on_demand_sets_nothing():
    cap = OnDemand()
    assert cap.kind is CapacityKind.ON_DEMAND
    assert cap.market_options() is None and cap.reservation_specification() is None
    assert pinned_zone(cap) is None and cap.max_instances is None
    cap.validate_for(P5, min_nodes=0, max_nodes=1000)


def test_targeted_odcr_by_id():
    cap = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")
    assert cap.market_options() is None
    spec = cap.reservation_specification()
    assert spec is not None
    assert spec.capacity_reservation_target.capacity_reservation_id == "cr-0123456789abcdef0"
    assert (cap.max_instances, pinned_zone(cap), cap.requires_fixed_size) == (
        4,
        "us-east-1a",
        False,
    )
    cap.validate_for(P5, min_nodes=0, max_nodes=4)


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
    cap.validate_for(GB200, min_nodes=18, max_nodes=18)


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
            r"instance_count must be at least 1, got 0",
        ),
        (
            lambda: CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="useast1"),
            r"zone must be a zone name \('us-east-1a', Local Zone 'us-east-1-dfw-2a'\) or zone id",
        ),
        (
            lambda: UltraServerCapacityBlock(),
            r"reservation_id/resource_group_arn must be at least one of the two for an UltraServer Capacity Block",
        ),
        (
            lambda: UltraServerCapacityBlock(reservation_id="cr-gb200"),
            r"reservation_id must be a capacity reservation id \('cr-' then 8 or 17 lower-case hex digits\).*, got 'cr-gb200'",
        ),
        (
            lambda: UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, ultraserver_type="u-p6e-gb200x8"),
            r"ultraserver_type must be one of u-p6e-gb200x36, u-p6e-gb200x72, got 'u-p6e-gb200x8'",
        ),
        (
            lambda: UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, ultraserver_count=0),
            r"ultraserver_count must be at least 1, got 0",
        ),
    ],
)
def test_invalid_capacity_choices(make, message):
    with pytest.raises(FmValidationError, match=message):
        make()


@pytest.mark.parametrize(
    ("cap", "spec", "min_nodes", "max_nodes", "message"),
    [
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0"),
            P5,
            1,
            2,
            r"min_nodes must be equal to max_nodes \(2\) on a Capacity Block \(a fixed-size fleet\), got 1",
        ),
        (
            CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
            P5,
            4,
            4,
            r"max_nodes must be at most the reservation's 2 instances, got 4",
        ),
        (
            CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=8),
            P5,
            0,
            9,
            r"max_nodes must be at most the reservation's 8 instances, got 9",
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
            r"max_nodes must be at most the reservation's 18 instances, got 19",
        ),
        (OnDemand(), P5, 3, 2, r"min_nodes must be at most max_nodes \(2\), got 3"),
        (OnDemand(), P5, -1, 2, r"min_nodes must be at least 0, got -1"),
        (OnDemand(), P5, 0, 0, r"max_nodes must be at least 1, got 0"),
    ],
)
def test_node_count_rules(cap, spec, min_nodes, max_nodes, message):
    with pytest.raises(FmValidationError, match=message):
        cap.validate_for(spec, min_nodes=min_nodes, max_nodes=max_nodes)


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


# --- issue 10: deploy-time values, zones, vocabulary, types ------------------------------------------------------------


@pytest.fixture(scope="module")
def tokens() -> dict[str, object]:
    stack = cdk.Stack(new_app(), "CapacityTokens")
    return {
        "count": cdk.CfnParameter(stack, "Count", type="Number").value_as_number,
        "other_count": cdk.CfnParameter(stack, "OtherCount", type="Number").value_as_number,
        "id": cdk.CfnParameter(stack, "ReservationId").value_as_string,
        "arn": cdk.Fn.import_value("GroupArn"),
        "zone": cdk.CfnParameter(stack, "Zone", type="AWS::EC2::AvailabilityZone::Name").value_as_string,
    }


@pytest.mark.parametrize("cls", [CapacityReservation, CapacityBlock])
def test_reservations_accept_tokens_for_every_value(tokens, cls):
    cap = cls(reservation_id=tokens["id"], instance_count=tokens["count"], zone=tokens["zone"])
    assert cap.max_instances is tokens["count"] and cap.zone is tokens["zone"]
    # Counts compared with a deploy-time size are skipped (the old code compared -1.9e289 as a number).
    cap.validate_for(P5, min_nodes=2, max_nodes=2)
    cap.validate_for(P5, min_nodes=tokens["count"], max_nodes=tokens["count"])
    cls(resource_group_arn=tokens["arn"], instance_count=tokens["count"])


def test_capacity_block_fixed_size_rule_is_skipped_for_two_different_tokens(tokens):
    cap = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2)
    cap.validate_for(P5, min_nodes=tokens["count"], max_nodes=tokens["other_count"])
    cap.validate_for(P5, min_nodes=2, max_nodes=tokens["count"])


def test_ultraserver_block_accepts_token_count_and_ids(tokens):
    cap = UltraServerCapacityBlock(
        reservation_id=tokens["id"], resource_group_arn=tokens["arn"], ultraserver_count=tokens["count"]
    )
    assert cap.max_instances is None  # never 18 x -1.9e289
    cap.validate_for(GB200, min_nodes=36, max_nodes=36)


def test_ultraserver_type_must_be_known(tokens):
    with pytest.raises(FmValidationError, match=r"ultraserver_type must be known at synth time") as raised:
        UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", ultraserver_type=tokens["id"])
    assert "Token[" not in str(raised.value)


@pytest.mark.parametrize("zone", ["us-east-1a", "us-east-1-dfw-2a", "use1-az4", "use1-dfw2-az1", "us-gov-west-1a"])
def test_zone_names_local_zones_and_zone_ids_are_accepted(zone):
    assert CapacityBlock(reservation_id="cr-0123456789abcdef0", zone=zone).zone == zone
    assert UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone=zone).zone == zone
    assert pinned_zone(CapacityReservation(reservation_id="cr-0123456789abcdef0", zone=zone)) == zone


@pytest.mark.parametrize("zone", ["us-east-1", "us-east-1a\n", "US-EAST-1A", "use1-az", "", "us east 1a"])
def test_bad_zones_are_refused(zone):
    with pytest.raises(FmValidationError, match=r"^zone must be"):
        CapacityBlock(reservation_id="cr-0123456789abcdef0", zone=zone)


def test_validate_for_names_the_callers_parameters():
    cap = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2)
    with pytest.raises(FmValidationError, match=r"^max_size must be at most the reservation's 2 instances, got 3"):
        cap.validate_for(P5, min_nodes=0, max_nodes=3, parameters=("min_size", "max_size"))


def test_validate_for_new_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2).validate_for(
            P5, min_nodes=2, max_nodes=2
        )


BAD_CAPACITY_INPUTS = [
    # (factory kwargs, parameter named in the message)
    (CapacityReservation, {"reservation_id": 123}, "reservation_id", FmTypeError),
    (CapacityReservation, {"reservation_id": ["cr-0123456789abcdef0"]}, "reservation_id", FmTypeError),
    (CapacityReservation, {"reservation_id": "cr-0123456789abcdef0\n"}, "reservation_id", FmValidationError),
    (CapacityReservation, {"resource_group_arn": GROUP_ARN + "\n"}, "resource_group_arn", FmValidationError),
    (CapacityReservation, {"resource_group_arn": b"arn"}, "resource_group_arn", FmTypeError),
    (CapacityBlock, {"reservation_id": "cr-0123456789abcdef0", "instance_count": True}, "instance_count", FmTypeError),
    (CapacityBlock, {"reservation_id": "cr-0123456789abcdef0", "instance_count": "2"}, "instance_count", FmTypeError),
    (
        CapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "instance_count": math.nan},
        "instance_count",
        FmValidationError,
    ),
    (
        CapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "instance_count": math.inf},
        "instance_count",
        FmValidationError,
    ),
    (
        CapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "instance_count": 2.5},
        "instance_count",
        FmValidationError,
    ),
    (CapacityBlock, {"reservation_id": "cr-0123456789abcdef0", "zone": 1}, "zone", FmTypeError),
    (CapacityBlock, {"reservation_id": "cr-0123456789abcdef0", "zone": ["us-east-1a"]}, "zone", FmTypeError),
    (
        UltraServerCapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "ultraserver_count": False},
        "ultraserver_count",
        FmTypeError,
    ),
    (
        UltraServerCapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "ultraserver_count": -math.inf},
        "ultraserver_count",
        FmValidationError,
    ),
    (
        UltraServerCapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "ultraserver_type": None},
        "ultraserver_type",
        FmTypeError,
    ),
    (
        UltraServerCapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "ultraserver_type": "u-p6e-gb200x72\n"},
        "ultraserver_type",
        FmValidationError,
    ),
    (
        UltraServerCapacityBlock,
        {"reservation_id": "cr-0123456789abcdef0", "zone": "use1-az4\n"},
        "zone",
        FmValidationError,
    ),
]


@pytest.mark.parametrize(("cls", "kwargs", "parameter", "error"), BAD_CAPACITY_INPUTS)
def test_bad_capacity_inputs_name_the_parameter(cls, kwargs, parameter, error):
    with pytest.raises(error) as raised:
        cls(**kwargs)
    assert str(raised.value).startswith(f"{parameter} must be"), raised.value
    assert raised.value.parameter == parameter


@pytest.mark.parametrize(
    ("kwargs", "parameter", "error"),
    [
        ({"min_nodes": True, "max_nodes": 2}, "min_nodes", FmTypeError),
        ({"max_nodes": math.nan}, "max_nodes", FmValidationError),
        ({"max_nodes": math.inf}, "max_nodes", FmValidationError),
        ({"max_nodes": "2"}, "max_nodes", FmTypeError),
        ({"min_nodes": 1.5, "max_nodes": 2}, "min_nodes", FmValidationError),
    ],
)
def test_validate_for_types(kwargs, parameter, error):
    with pytest.raises(error, match=rf"^{parameter} must be"):
        OnDemand().validate_for(P5, **kwargs)


@pytest.mark.parametrize("spec", ["p5.48xlarge", None, 1])
def test_validate_for_needs_an_instance_spec(spec):
    with pytest.raises(FmTypeError, match=r"^spec must be an InstanceSpec"):
        OnDemand().validate_for(spec, max_nodes=1)


@pytest.mark.parametrize(("form", "consumer"), [("CapacityReservationId", None), (None, 3), (None, ["AWS PCS"])])
def test_reservation_target_types(form, consumer):
    with pytest.raises(FmTypeError, match=r"^(form|consumer) must be"):
        CapacityBlock(reservation_id="cr-0123456789abcdef0").reservation_target(form, consumer=consumer)


@pytest.mark.parametrize("value", ["us-east-1a", None, object()])
def test_pinned_zone_needs_a_capacity(value):
    with pytest.raises(FmTypeError, match=r"^capacity must be a Capacity"):
        pinned_zone(value)
