"""The cross-property rules of the EKS node groups (fmconstructs.eks.rules), each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError, OnDemand, UltraServerCapacityBlock
from fmconstructs._rules import Advice
from fmconstructs.capacity import CapacityBlockScaling, CapacityKind
from fmconstructs.catalog import get_instance_spec
from fmconstructs.eks import rules
from fmconstructs.eks.karpenter_manifests import KarpenterCapacityType, ReservationType
from fmconstructs.errors import WarningId

TOKEN = float("-1.8881545897087626e+289")  # what CfnParameter.value_as_number returns (a number token)
BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2)
ODCR = CapacityReservation(reservation_id="cr-0123456789abcdef1", zone="us-east-1b")
GB200_BLOCK = UltraServerCapacityBlock(
    resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gb200", ultraserver_type="u-p6e-gb200x72"
)
P5EN = get_instance_spec("p5en.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")
EVENTS = CapacityBlockScaling.ON_BLOCK_EVENTS
AT_DEPLOY = CapacityBlockScaling.AT_DEPLOY


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


# --- sizes ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("minimum", "maximum", "desired"), [(0, 4, 2), (4, 4, 4), (0, 4, 0), (TOKEN, 4, 2), (0, TOKEN, 9), (5, TOKEN, 7)]
)
def test_ordered_sizes_pass(minimum, maximum, desired):
    rules.sizes_are_ordered(min_nodes=minimum, max_nodes=maximum, desired_nodes=desired)


@pytest.mark.parametrize(
    ("minimum", "maximum", "desired", "parameter", "message"),
    [
        (5, 4, 4, "min_nodes", r"^min_nodes must be between 0 and max_nodes \(4\), got 5"),
        (2, 4, 1, "desired_nodes", r"^desired_nodes must be between min_nodes \(2\) and max_nodes \(4\), got 1"),
        (0, 4, 5, "desired_nodes", r"^desired_nodes must be between min_nodes \(0\) and max_nodes \(4\), got 5"),
    ],
)
def test_unordered_sizes_are_refused(minimum, maximum, desired, parameter, message):
    _refused(
        lambda: rules.sizes_are_ordered(min_nodes=minimum, max_nodes=maximum, desired_nodes=desired), parameter, message
    )


@pytest.mark.parametrize(("max_nodes", "limit"), [(2, 2), (1, 2), (8, None), (TOKEN, 2), (8, TOKEN)])
def test_max_nodes_within_the_reservation_pass(max_nodes, limit):
    rules.max_nodes_fit_the_reservation(max_nodes=max_nodes, reservation_instances=limit)


def test_max_nodes_above_the_reservation_are_refused():
    _refused(
        lambda: rules.max_nodes_fit_the_reservation(max_nodes=3, reservation_instances=2),
        "max_nodes",
        r"^max_nodes must be at most the reservation's 2 instances, got 3",
    )


@pytest.mark.parametrize(
    ("block", "minimum", "desired"), [(True, 0, 0), (True, 4, 4), (True, 0, 4), (True, TOKEN, TOKEN), (False, 1, 2)]
)
def test_capacity_block_sizes_zero_or_max_pass(block, minimum, desired):
    rules.capacity_block_sizes_are_zero_or_max(
        is_capacity_block=block, min_nodes=minimum, max_nodes=4, desired_nodes=desired
    )


@pytest.mark.parametrize(
    ("minimum", "desired", "parameter", "message"),
    [
        (
            1,
            4,
            "min_nodes",
            r"^min_nodes must be 0 or max_nodes \(4\) on a Capacity Block \(a fixed-size fleet\), got 1",
        ),
        (0, 2, "desired_nodes", r"^desired_nodes must be 0 \(before the block starts\) or max_nodes \(4\) on a"),
    ],
)
def test_partial_capacity_block_sizes_are_refused(minimum, desired, parameter, message):
    _refused(
        lambda: rules.capacity_block_sizes_are_zero_or_max(
            is_capacity_block=True, min_nodes=minimum, max_nodes=4, desired_nodes=desired
        ),
        parameter,
        message,
    )


# --- Capacity Block scaling -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scaling", "capacity"), [(EVENTS, BLOCK), (AT_DEPLOY, OnDemand()), (AT_DEPLOY, ODCR)])
def test_on_block_events_on_a_block_passes(scaling, capacity):
    rules.on_block_events_needs_a_capacity_block(scaling=scaling, capacity=capacity)


@pytest.mark.parametrize(("capacity", "kind"), [(OnDemand(), "On-Demand"), (ODCR, "Capacity Reservation")])
def test_on_block_events_off_a_block_is_refused(capacity, kind):
    _refused(
        lambda: rules.on_block_events_needs_a_capacity_block(scaling=EVENTS, capacity=capacity),
        "capacity_block_scaling",
        rf"^capacity_block_scaling must be CapacityBlockScaling.AT_DEPLOY on {capacity.kind.value} capacity",
    )


@pytest.mark.parametrize(("scaling", "minimum", "desired"), [(EVENTS, 0, 0), (AT_DEPLOY, 2, 2), (AT_DEPLOY, TOKEN, 1)])
def test_an_empty_start_passes(scaling, minimum, desired):
    rules.on_block_events_starts_empty(scaling=scaling, min_nodes=minimum, desired_nodes=desired)


@pytest.mark.parametrize(
    ("minimum", "desired", "parameter"), [(2, 0, "min_nodes"), (0, 2, "desired_nodes"), (TOKEN, 0, "min_nodes")]
)
def test_on_block_events_refuses_a_non_empty_start(minimum, desired, parameter):
    _refused(
        lambda: rules.on_block_events_starts_empty(scaling=EVENTS, min_nodes=minimum, desired_nodes=desired),
        parameter,
        rf"^{parameter} must be 0 \(or omitted\) with CapacityBlockScaling.ON_BLOCK_EVENTS",
    )


# --- UltraServers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "capacity"), [(GB200, GB200_BLOCK), (P5EN, BLOCK), (P5EN, OnDemand())])
def test_ultraserver_capacity_passes(spec, capacity):
    rules.ultraserver_types_need_an_ultraserver_block(spec=spec, capacity=capacity)


@pytest.mark.parametrize("capacity", [OnDemand(), BLOCK, ODCR])
def test_ultraserver_types_off_an_ultraserver_block_are_refused(capacity):
    _refused(
        lambda: rules.ultraserver_types_need_an_ultraserver_block(spec=GB200, capacity=capacity),
        "capacity",
        r"^capacity must be an UltraServerCapacityBlock: p6e-gb200.36xlarge is sold only as UltraServer",
    )


@pytest.mark.parametrize(("spec", "parts"), [(GB200, (1, 33)), (GB200, (1, 34)), (P5EN, (1, 29))])
def test_a_recent_enough_kubernetes_passes(spec, parts):
    rules.ultraserver_types_need_a_recent_kubernetes(spec=spec, version="v", version_parts=parts, minimum=(1, 33))


def test_an_old_kubernetes_is_refused_for_ultraservers():
    _refused(
        lambda: rules.ultraserver_types_need_a_recent_kubernetes(
            spec=GB200, version="1.32", version_parts=(1, 32), minimum=(1, 33)
        ),
        "cluster.version",
        r"^cluster.version must be 1.33 or later for p6e-gb200.36xlarge \(Dynamic Resource Allocation",
    )


# --- subnets and zones ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("efa", "count"), [(16, 1), (0, 1), (0, 3)])
def test_subnet_counts_pass(efa, count):
    rules.efa_groups_take_one_subnet(efa_interface_count=efa, subnet_count=count)


@pytest.mark.parametrize(
    ("efa", "count", "message"),
    [(16, 0, r"^subnets must be at least one subnet"), (16, 2, r"^subnets must be exactly one subnet for an EFA"),
     (0, 0, r"^subnets must be at least one subnet")],
)  # fmt: skip
def test_bad_subnet_counts_are_refused(efa, count, message):
    _refused(lambda: rules.efa_groups_take_one_subnet(efa_interface_count=efa, subnet_count=count), "subnets", message)


@pytest.mark.parametrize(
    ("zone", "subnets"),
    [("us-east-1b", [("us-east-1b", "subnet-b")]), (None, [("us-east-1a", "subnet-a")]),
     ("us-east-1b", [(None, "subnet-x")]), ("use1-az2", [("us-east-1a", "subnet-a")])],
)  # fmt: skip
def test_subnets_in_or_not_known_outside_the_zone_pass(zone, subnets):
    rules.subnets_are_in_the_capacity_zone(
        capacity_zone=zone, capacity_kind=CapacityKind.CAPACITY_RESERVATION, subnets=subnets
    )


def test_a_subnet_outside_the_capacity_zone_is_refused():
    _refused(
        lambda: rules.subnets_are_in_the_capacity_zone(
            capacity_zone="us-east-1b",
            capacity_kind=CapacityKind.CAPACITY_RESERVATION,
            subnets=[("us-east-1b", "subnet-b"), ("us-east-1a", "subnet-0abc in us-east-1a")],
        ),
        "subnets[1]",
        r"^subnets\[1\] must be a subnet in us-east-1b, the zone of the capacity-reservation, got .subnet-0abc in us-east-1a",
    )


# --- placement groups and reservations (soft) -----------------------------------------------------------------------

GROUP = "arn:aws:ec2:us-east-1:123456789012:placement-group/training"


@pytest.mark.parametrize(
    ("kind", "reservation_group", "created"),
    [(CapacityKind.CAPACITY_BLOCK, None, True), (CapacityKind.ON_DEMAND, None, False),
     (CapacityKind.CAPACITY_RESERVATION, GROUP, False)],
)  # fmt: skip
def test_no_advice_when_the_reservation_is_in_the_group_or_not_an_odcr(kind, reservation_group, created):
    assert (
        rules.placement_group_holds_the_reservation(
            capacity_kind=kind, reservation_group_arn=reservation_group, placement_group_arn=GROUP, created=created
        )
        is None
    )


@pytest.mark.parametrize(
    ("reservation_group", "created", "which"),
    [(None, False, "the given placement_group"), (GROUP + "-other", False, "the given placement_group"),
     (GROUP, True, "a new placement group")],
)  # fmt: skip
def test_advice_when_the_reservation_is_not_known_to_be_in_the_group(reservation_group, created, which):
    advice = rules.placement_group_holds_the_reservation(
        capacity_kind=CapacityKind.CAPACITY_RESERVATION,
        reservation_group_arn=reservation_group,
        placement_group_arn=GROUP,
        created=created,
    )
    assert isinstance(advice, Advice)
    assert advice.warning is WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION
    assert advice.message.startswith(f"Nodes on an On-Demand Capacity Reservation are launched into {which}")


# --- GPU node pools -------------------------------------------------------------------------------------------------

RESERVED, ON_DEMAND = KarpenterCapacityType.RESERVED, KarpenterCapacityType.ON_DEMAND


@pytest.mark.parametrize(
    ("types", "has_reservations"), [([RESERVED], True), ([RESERVED, ON_DEMAND], True), ([ON_DEMAND], False)]
)
def test_reserved_with_reservations_passes(types, has_reservations):
    rules.reserved_capacity_needs_reservations(capacity_types=types, has_reservations=has_reservations)


@pytest.mark.parametrize("types", [[RESERVED], [RESERVED, ON_DEMAND]])
def test_reserved_without_reservations_is_refused(types):
    _refused(
        lambda: rules.reserved_capacity_needs_reservations(capacity_types=types, has_reservations=False),
        "capacity_types",
        r"^capacity_types must be no 'reserved' without capacity_reservations \(Karpenter does not match open ODCRs",
    )


@pytest.mark.parametrize("kind", list(ReservationType))
def test_a_reservation_type_with_reserved_only_passes(kind):
    rules.reservation_type_needs_reserved_only(reservation_type=kind, capacity_types=[RESERVED])


@pytest.mark.parametrize("types", [[RESERVED, ON_DEMAND], [ON_DEMAND], [ON_DEMAND, RESERVED]])
def test_a_reservation_type_with_other_capacity_is_refused(types):
    _refused(
        lambda: rules.reservation_type_needs_reserved_only(
            reservation_type=ReservationType.CAPACITY_BLOCK, capacity_types=types
        ),
        "reservation_type",
        r"^reservation_type must be None unless capacity_types is \[RESERVED\]",
    )


@pytest.mark.parametrize(("max_gpus", "max_nodes"), [(8, None), (None, 1), (8, 1)])
def test_a_pool_with_a_limit_passes(max_gpus, max_nodes):
    rules.a_node_pool_has_a_limit(max_gpus=max_gpus, max_nodes=max_nodes)


def test_a_pool_without_limits_is_refused():
    _refused(
        lambda: rules.a_node_pool_has_a_limit(max_gpus=None, max_nodes=None),
        "max_gpus",
        r"^max_gpus must be a GPU limit and/or max_nodes \(a NodePool without limits grows to the account's quota\)",
    )
