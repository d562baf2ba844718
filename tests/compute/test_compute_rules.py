"""The cross-property rules of the launch template and the Auto Scaling group (fmconstructs.compute.rules), and the
rules PCS and EKS share through it, each with plain values: no stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError, OnDemand, UltraServerCapacityBlock
from fmconstructs.capacity import CapacityBlockScaling, CapacityKind
from fmconstructs.catalog import get_instance_spec
from fmconstructs.compute import rules
from fmconstructs.eks import rules as eks_rules
from fmconstructs.errors import WarningId
from fmconstructs.networking import InterfacePolicy
from fmconstructs.pcs import rules as pcs_rules

TOKEN = float("-1.8881545897087626e+289")  # what CfnParameter.value_as_number returns (a number token)
BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2)
ODCR = CapacityReservation(reservation_id="cr-0123456789abcdef1", zone="us-east-1b")
GB200_BLOCK = UltraServerCapacityBlock(
    resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gb200", ultraserver_type="u-p6e-gb200x72"
)
P5 = get_instance_spec("p5.48xlarge")
P5EN = get_instance_spec("p5en.48xlarge")
GB200 = get_instance_spec("p6e-gb200.36xlarge")
NO_STORE = dataclasses.replace(P5, instance_store=None)  # every catalog type has one: a spec without
EVENTS = CapacityBlockScaling.ON_BLOCK_EVENTS
AT_DEPLOY = CapacityBlockScaling.AT_DEPLOY


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


# --- shared: subnet in the capacity's zone --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("subnet_zone", "capacity_zone"),
    [
        ("us-east-1a", "us-east-1a"),
        (None, "us-east-1a"),  # a subnet imported without a zone
        ("us-east-1a", None),  # On-Demand, or no zone given to the reservation
        ("use1-az1", "us-east-1b"),  # a zone id is not compared with a zone name
        ("${Token[TOKEN.1]}", "us-east-1a"),  # a deploy-time zone
    ],
)
def test_subnet_in_or_not_comparable_with_the_capacity_zone_passes(subnet_zone, capacity_zone):
    rules.subnet_is_in_the_capacity_zone(
        subnet="subnet-0abc",
        subnet_zone=subnet_zone,
        capacity_zone=capacity_zone,
        capacity_kind=CapacityKind.CAPACITY_BLOCK,
    )


@pytest.mark.parametrize(
    ("keywords", "parameter", "message"),
    [
        ({}, "subnet", r"^subnet must be a subnet in us-east-1a, the zone of the capacity-block, got 'subnet-0abc in "),
        ({"parameter": "subnets[2]"}, "subnets[2]", r"^subnets\[2\] must be a subnet in us-east-1a, the zone of"),
        (
            {"zone_noun": "availability zone"},
            "subnet",
            r"^subnet must be a subnet in us-east-1a, the availability zone of the capacity-block",
        ),
    ],
)
def test_subnet_outside_the_capacity_zone_is_refused_in_the_callers_words(keywords, parameter, message):
    _refused(
        lambda: rules.subnet_is_in_the_capacity_zone(
            subnet="subnet-0abc in us-east-1b",
            subnet_zone="us-east-1b",
            capacity_zone="us-east-1a",
            capacity_kind=CapacityKind.CAPACITY_BLOCK,
            **keywords,
        ),
        parameter,
        message,
    )


# --- shared: UltraServer types on UltraServer blocks ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        (GB200, CapacityKind.ULTRASERVER_CAPACITY_BLOCK),
        (P5EN, CapacityKind.CAPACITY_BLOCK),
        (P5EN, CapacityKind.ON_DEMAND),
        (P5, CapacityKind.ULTRASERVER_CAPACITY_BLOCK),  # the block's own type rule is Capacity.validate_for
    ],
)
def test_ultraserver_rule_passes(spec, kind):
    rules.ultraserver_types_need_an_ultraserver_block(spec=spec, capacity_kind=kind)


@pytest.mark.parametrize(
    "kind", [CapacityKind.ON_DEMAND, CapacityKind.CAPACITY_BLOCK, CapacityKind.CAPACITY_RESERVATION]
)
@pytest.mark.parametrize(
    ("list_the_types", "message"),
    [
        (False, r"^capacity must be an UltraServerCapacityBlock: p6e-gb200.36xlarge is sold only as UltraServer"),
        (True, r"^capacity must be an UltraServerCapacityBlock for p6e-gb200.36xlarge \(sold only as .*u-p6e-gb200x72"),
    ],
)
def test_ultraserver_types_off_an_ultraserver_block_are_refused(kind, list_the_types, message):
    _refused(
        lambda: rules.ultraserver_types_need_an_ultraserver_block(
            spec=GB200, capacity_kind=kind, list_the_types=list_the_types
        ),
        "capacity",
        message,
    )


# --- shared: ON_BLOCK_EVENTS ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scaling", "capacity"), [(EVENTS, BLOCK), (EVENTS, GB200_BLOCK), (AT_DEPLOY, OnDemand())])
def test_on_block_events_on_a_block_passes(scaling, capacity):
    rules.on_block_events_needs_a_capacity_block(scaling=scaling, capacity=capacity)


@pytest.mark.parametrize("capacity", [OnDemand(), ODCR])
def test_on_block_events_off_a_block_is_refused(capacity):
    _refused(
        lambda: rules.on_block_events_needs_a_capacity_block(scaling=EVENTS, capacity=capacity),
        "capacity_block_scaling",
        rf"^capacity_block_scaling must be CapacityBlockScaling.AT_DEPLOY on {capacity.kind.value} capacity",
    )


@pytest.mark.parametrize(
    ("scaling", "minimum", "desired"), [(EVENTS, 0, 0), (AT_DEPLOY, 2, 2), (AT_DEPLOY, TOKEN, TOKEN)]
)
def test_on_block_events_starting_empty_passes(scaling, minimum, desired):
    rules.on_block_events_starts_empty(scaling=scaling, min_nodes=minimum, desired_nodes=desired)


@pytest.mark.parametrize(
    ("minimum", "desired", "parameter"),
    [(2, 0, "min_nodes"), (0, 2, "desired_nodes"), (TOKEN, 0, "min_nodes"), (0, TOKEN, "desired_nodes")],
)
def test_on_block_events_not_starting_empty_is_refused(minimum, desired, parameter):
    _refused(
        lambda: rules.on_block_events_starts_empty(scaling=EVENTS, min_nodes=minimum, desired_nodes=desired),
        parameter,
        r"must be 0 with CapacityBlockScaling.ON_BLOCK_EVENTS \(the group starts empty",
    )


def test_on_block_events_starts_empty_in_the_callers_words():
    _refused(
        lambda: rules.on_block_events_starts_empty(scaling=EVENTS, min_nodes=1, desired_nodes=0, allowed="zero"),
        "min_nodes",
        r"^min_nodes must be zero, got 1",
    )


# --- the shared rules are the ones PCS and EKS use --------------------------------------------------------------


def test_eks_re_exports_the_block_events_rule():
    assert eks_rules.on_block_events_needs_a_capacity_block is rules.on_block_events_needs_a_capacity_block


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: pcs_rules.subnet_is_in_the_reservation_zone(
                subnet_zone="us-east-1b",
                capacity_zone="us-east-1a",
                subnet="subnet-1",
                capacity_kind=CapacityKind.CAPACITY_BLOCK,
            ),
            "subnet must be a subnet in us-east-1a, the zone of the capacity-block, got 'subnet-1 in us-east-1b'",
        ),
        (
            lambda: eks_rules.subnets_are_in_the_capacity_zone(
                capacity_zone="us-east-1a",
                capacity_kind=CapacityKind.CAPACITY_RESERVATION,
                subnets=[("us-east-1a", "subnet-0a in us-east-1a"), ("us-east-1b", "subnet-0b in us-east-1b")],
            ),
            "subnets[1] must be a subnet in us-east-1a, the zone of the capacity-reservation, got "
            "'subnet-0b in us-east-1b'",
        ),
        (
            lambda: pcs_rules.ultraserver_types_need_an_ultraserver_block(GB200, CapacityKind.CAPACITY_BLOCK),
            "capacity must be an UltraServerCapacityBlock for p6e-gb200.36xlarge (sold only as UltraServer Capacity "
            "Blocks: u-p6e-gb200x36, u-p6e-gb200x72), got 'capacity-block'",
        ),
        (
            lambda: eks_rules.ultraserver_types_need_an_ultraserver_block(spec=GB200, capacity=OnDemand()),
            "capacity must be an UltraServerCapacityBlock: p6e-gb200.36xlarge is sold only as UltraServer Capacity "
            "Blocks, got 'on-demand'",
        ),
        (
            lambda: eks_rules.on_block_events_starts_empty(scaling=EVENTS, min_nodes=1, desired_nodes=0),
            "min_nodes must be 0 (or omitted) with CapacityBlockScaling.ON_BLOCK_EVENTS (the group is created empty "
            "and scaled when the block starts), got 1",
        ),
    ],
)
def test_the_backends_keep_their_messages(call, message):
    with pytest.raises(FmValidationError) as error:
        call()
    assert str(error.value) == message


# --- launch template ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "subnet"),
    [
        (InterfacePolicy.SELF_MANAGED, "subnet-0abc"),
        (InterfacePolicy.PCS, "subnet-0abc"),
        (InterfacePolicy.EKS_MANAGED_NODE_GROUP, None),
        (InterfacePolicy.SELF_MANAGED, None),
    ],
)
def test_subnet_for_the_policy_passes(policy, subnet):
    rules.subnet_is_for_the_policy(policy=policy, subnet=subnet)


def test_subnet_in_an_eks_managed_node_group_template_is_refused():
    _refused(
        lambda: rules.subnet_is_for_the_policy(policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP, subnet="subnet-0abc"),
        "subnet",
        r"^subnet must be None for the eks-managed-node-group policy \(the node group supplies the subnets\), got "
        "'subnet-0abc'",
    )


@pytest.mark.parametrize(
    ("has_placement_group", "is_capacity_block", "advised"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_placement_group_on_a_capacity_block_is_advised_against(has_placement_group, is_capacity_block, advised):
    advice = rules.placement_group_is_not_for_a_capacity_block(
        has_placement_group=has_placement_group, is_capacity_block=is_capacity_block
    )
    if not advised:
        assert advice is None
        return
    assert advice is not None
    assert advice.warning is WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK
    assert advice.message.startswith("A placement group on a Capacity Block risks insufficient-capacity errors")


@pytest.mark.parametrize(("spec", "mount_point"), [(P5, "/scratch"), (NO_STORE, None), (P5, None)])
def test_instance_store_there_to_mount_passes(spec, mount_point):
    assert rules.the_instance_store_is_there_to_mount(spec=spec, mount_point=mount_point) is None


@pytest.mark.parametrize("mount_point", ["/scratch", "/mnt/nvme"])
def test_mount_point_without_an_instance_store_is_advised_against(mount_point):
    advice = rules.the_instance_store_is_there_to_mount(spec=NO_STORE, mount_point=mount_point)
    assert advice is not None
    assert advice.warning is WarningId.NO_INSTANCE_STORE
    assert advice.message == f"p5.48xlarge has no NVMe instance store; nothing is mounted at {mount_point}"


# --- Auto Scaling group ---------------------------------------------------------------------------------------------


def test_self_managed_template_passes():
    rules.an_auto_scaling_group_takes_a_self_managed_template(InterfacePolicy.SELF_MANAGED)
    rules.an_auto_scaling_group_needs_the_template_subnet(subnet_given=True)


@pytest.mark.parametrize("policy", [InterfacePolicy.PCS, InterfacePolicy.EKS_MANAGED_NODE_GROUP])
def test_other_policies_are_refused(policy):
    _refused(
        lambda: rules.an_auto_scaling_group_takes_a_self_managed_template(policy),
        "launch_template.policy",
        rf"^launch_template.policy must be 'self-managed' for an Auto Scaling group, got '{policy.value}'",
    )


def test_a_template_without_a_subnet_is_refused():
    _refused(
        lambda: rules.an_auto_scaling_group_needs_the_template_subnet(subnet_given=False),
        "launch_template.subnet",
        r"^launch_template.subnet must be the one subnet of the fleet",
    )


@pytest.mark.parametrize(
    ("minimum", "maximum", "desired"),
    [(0, 4, 2), (4, 4, 4), (0, 4, 0), (0, 4, 4), (TOKEN, 4, 9), (0, TOKEN, 9), (5, 8, TOKEN)],
)
def test_desired_between_min_and_max_passes(minimum, maximum, desired):
    rules.desired_nodes_are_between_min_and_max(min_nodes=minimum, max_nodes=maximum, desired_nodes=desired)


@pytest.mark.parametrize(("minimum", "maximum", "desired"), [(2, 4, 1), (0, 4, 5), (4, 4, 0)])
def test_desired_outside_min_and_max_is_refused(minimum, maximum, desired):
    _refused(
        lambda: rules.desired_nodes_are_between_min_and_max(
            min_nodes=minimum, max_nodes=maximum, desired_nodes=desired
        ),
        "desired_nodes",
        rf"^desired_nodes must be between min_nodes \({minimum}\) and max_nodes \({maximum}\), got {desired}$",
    )
