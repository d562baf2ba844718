"""EFA interface layout per instance type and per consumer policy."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import (
    BUILTIN_INSTANCE_TYPES,
    EfaCardSelection,
    FmValidationError,
    InterfacePolicy,
    InterfaceType,
    get_instance_spec,
    plan_network_interfaces,
)
from fmconstructs.catalog import NetworkCardGroup, NetworkCardSpec

ENA, EFA, EFA_ONLY = InterfaceType.ENA, InterfaceType.EFA, InterfaceType.EFA_ONLY
GB200 = "p6e-gb200.36xlarge"
# EC2 User Guide efa-acc-inst-types#efa-for-p6e: "Each underlying GPU on the host can send traffic directly over the
# following pairs of NCIs: [1 and 3] [5 and 7] [9 and 11] [13 and 15]".
GB200_GPU_CARDS = [(1, 3), (5, 7), (9, 11), (13, 15)]

# type -> (EFA interfaces, cards carrying EFA) for the default SELF_MANAGED layout
EXPECTED = {
    "p5.48xlarge": (32, list(range(32))),
    "p5e.48xlarge": (32, list(range(32))),
    "p5en.48xlarge": (16, list(range(16))),
    "p6-b200.48xlarge": (8, list(range(8))),
    "p6-b300.48xlarge": (16, list(range(1, 17))),
    "p6e-gb200.36xlarge": (4, [1, 5, 9, 13]),
}


def triples(layout):
    return [(i.network_card_index, i.device_index, i.interface_type) for i in layout.interfaces]


@pytest.mark.parametrize("instance_type", BUILTIN_INSTANCE_TYPES)
def test_self_managed_layout(instance_type):
    layout = plan_network_interfaces(get_instance_spec(instance_type))
    count, cards = EXPECTED[instance_type]
    assert layout.efa_interface_count == count
    assert sorted(i.network_card_index for i in layout.interfaces if i.is_efa) == cards
    # ENA primary on card 0 / device 0, every EFA is efa-only.
    assert triples(layout)[0] == (0, 0, ENA)
    assert all(i.interface_type is EFA_ONLY for i in layout.interfaces[1:])
    pairs = [(c, d) for c, d, _ in triples(layout)]
    assert len(pairs) == len(set(pairs))
    assert layout.efa_interface_count <= get_instance_spec(instance_type).maximum_efa_interfaces


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_card0_efa_goes_on_device_1(instance_type):
    layout = plan_network_interfaces(get_instance_spec(instance_type))
    assert triples(layout)[:3] == [(0, 0, ENA), (0, 1, EFA_ONLY), (1, 0, EFA_ONLY)]


@pytest.mark.parametrize("instance_type", ["p6-b300.48xlarge", "p6e-gb200.36xlarge"])
def test_card0_is_ena_only_where_it_takes_no_efa(instance_type):
    for policy in InterfacePolicy:
        layout = plan_network_interfaces(get_instance_spec(instance_type), policy=policy)
        assert [t for t in triples(layout) if t[0] == 0] == [(0, 0, ENA)]


def test_p6_b300_uses_cards_1_to_16_on_device_0():
    layout = plan_network_interfaces(get_instance_spec("p6-b300.48xlarge"))
    assert triples(layout) == [(0, 0, ENA)] + [(c, 0, EFA_ONLY) for c in range(1, 17)]
    assert layout.efa_bandwidth_gbps == 6400


def test_gb200_uses_the_documented_cards():
    layout = plan_network_interfaces(get_instance_spec("p6e-gb200.36xlarge"))
    assert triples(layout) == [
        (0, 0, ENA),
        (1, 0, EFA_ONLY),
        (5, 0, EFA_ONLY),
        (9, 0, EFA_ONLY),
        (13, 0, EFA_ONLY),
    ]
    assert layout.efa_bandwidth_gbps == 1600


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_pcs_policy_puts_efa_on_the_primary(instance_type):
    spec = get_instance_spec(instance_type)
    layout = plan_network_interfaces(spec, policy=InterfacePolicy.PCS)
    assert triples(layout)[0] == (0, 0, EFA)
    assert [t for t in triples(layout) if t[0] == 0] == [(0, 0, EFA)]
    assert layout.efa_interface_count == spec.maximum_efa_interfaces


def test_eks_policy_matches_self_managed_layout_but_refuses_subnets():
    spec = get_instance_spec("p5en.48xlarge")
    eks = plan_network_interfaces(spec, policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP)
    assert triples(eks) == triples(plan_network_interfaces(spec))
    rendered = eks.to_cfn(efa_security_group_id="sg-efa", security_group_ids=["sg-node"])
    assert all(n.subnet_id is None for n in rendered)
    with pytest.raises(FmValidationError, match=r"subnet must be None for the eks-managed-node-group policy"):
        eks.to_cfn(efa_security_group_id="sg-efa", subnet_id="subnet-1")


def test_rendered_groups_and_subnets():
    layout = plan_network_interfaces(get_instance_spec("p6-b200.48xlarge"))
    nics = layout.to_cfn(efa_security_group_id="sg-efa", security_group_ids=["sg-a", "sg-b"], subnet_id="subnet-1")
    assert nics[0].groups == ["sg-a", "sg-b", "sg-efa"]
    assert nics[0].associate_public_ip_address is False
    assert all(n.groups == ["sg-efa"] for n in nics[1:])
    assert all(n.subnet_id == "subnet-1" and n.delete_on_termination for n in nics)
    assert all(n.associate_public_ip_address is None for n in nics[1:])


def test_extra_ena_interfaces_on_device_1():
    layout = plan_network_interfaces(get_instance_spec("p5en.48xlarge"), extra_ena_interfaces=True)
    assert (1, 1, ENA) in triples(layout) and (15, 1, ENA) in triples(layout)
    assert layout.efa_interface_count == 16
    assert len(layout.interfaces) == 1 + 16 + 15


@pytest.mark.parametrize("bad", [-1, 33, 100])
def test_efa_interface_count_bounds(bad):
    with pytest.raises(
        FmValidationError, match=rf"efa_interface_count must be between 0 and 32 for p5.48xlarge, got {bad}"
    ):
        plan_network_interfaces(get_instance_spec("p5.48xlarge"), efa_interface_count=bad)


def test_efa_interface_count_zero_leaves_only_the_primary():
    layout = plan_network_interfaces(
        get_instance_spec("p5.48xlarge"), efa_interface_count=0, policy=InterfacePolicy.PCS
    )
    assert triples(layout) == [(0, 0, ENA)]
    assert layout.efa_bandwidth_gbps == 0


def _gpu_groups_needing_efa(spec, selection):
    full = plan_network_interfaces(spec, efa_cards=selection)
    return [g.cards for g in spec.gpu_card_groups if set(g.cards) & set(full.efa_network_cards)]


@settings(max_examples=300, deadline=None)
@given(
    instance_type=st.sampled_from(BUILTIN_INSTANCE_TYPES),
    policy=st.sampled_from(list(InterfacePolicy)),
    extra_ena=st.booleans(),
    cards=st.sampled_from(list(EfaCardSelection)),
    data=st.data(),
)
def test_layout_invariants_hold_for_every_selection_and_count(instance_type, policy, extra_ena, cards, data):
    spec = get_instance_spec(instance_type)
    full = plan_network_interfaces(spec, policy=policy, efa_cards=cards)
    requested = data.draw(st.integers(min_value=0, max_value=full.efa_interface_count), label="requested")
    gpus = _gpu_groups_needing_efa(spec, cards)
    if 0 < requested < len(gpus):
        # A count that cannot give every GPU an EFA is refused, never silently truncated.
        with pytest.raises(FmValidationError, match=rf"each of its {len(gpus)} GPUs needs an EFA .* got {requested}"):
            plan_network_interfaces(spec, policy=policy, efa_interface_count=requested, efa_cards=cards)
        return
    layout = plan_network_interfaces(
        spec, policy=policy, efa_interface_count=requested, extra_ena_interfaces=extra_ena, efa_cards=cards
    )
    pairs = [(i.network_card_index, i.device_index) for i in layout.interfaces]
    assert len(pairs) == len(set(pairs))
    assert layout.efa_interface_count == requested <= spec.maximum_efa_interfaces
    assert layout.interfaces[0].is_primary and layout.interfaces[0].interface_type is not EFA_ONLY
    efa_cards = layout.efa_network_cards
    assert len(efa_cards) == len(set(efa_cards))
    assert set(efa_cards) <= set(full.efa_network_cards)
    for planned in layout.interfaces:
        assert planned.interface_type in spec.card(planned.network_card_index).interface_types
    # Every GPU keeps an EFA on a card it reaches, whenever there is any EFA at all.
    if requested:
        assert all(set(g) & set(efa_cards) for g in gpus)
    assert 0 <= layout.efa_bandwidth_gbps <= spec.efa_bandwidth_gbps
    # Monotonic: one more EFA interface (where allowed) never lowers the bandwidth.
    if requested < full.efa_interface_count:
        next_allowed = max(requested + 1, len(gpus))
        more = plan_network_interfaces(spec, policy=policy, efa_interface_count=next_allowed, efa_cards=cards)
        assert more.efa_bandwidth_gbps >= layout.efa_bandwidth_gbps
        assert set(efa_cards) <= set(more.efa_network_cards)


@pytest.mark.parametrize("instance_type", BUILTIN_INSTANCE_TYPES)
@pytest.mark.parametrize("cards", list(EfaCardSelection))
def test_bandwidth_is_monotonic_over_every_allowed_count(instance_type, cards):
    spec = get_instance_spec(instance_type)
    full = plan_network_interfaces(spec, efa_cards=cards)
    floor = len(_gpu_groups_needing_efa(spec, cards))
    counts = [0, *range(max(floor, 1), full.efa_interface_count + 1)]
    bandwidths = [
        plan_network_interfaces(spec, efa_interface_count=n, efa_cards=cards).efa_bandwidth_gbps for n in counts
    ]
    assert bandwidths == sorted(bandwidths)
    assert bandwidths[0] == 0
    assert bandwidths[-1] == full.efa_bandwidth_gbps == spec.efa_bandwidth_gbps


def test_asking_for_more_efa_than_the_recommended_cards_is_refused():
    spec = get_instance_spec(GB200)
    with pytest.raises(
        FmValidationError, match=r"efa_interface_count must be at most 4 for p6e-gb200.36xlarge .*\[1, 5, 9, 13\]"
    ):
        plan_network_interfaces(spec, efa_interface_count=8)
    assert plan_network_interfaces(spec, efa_interface_count=4).efa_interface_count == 4


def test_gb200_all_efa_cards_matches_parallelcluster():
    """aws-parallelcluster queues_stack.add_network_interfaces puts efa-only on every card after card 0 of
    p6e-gb200 (cards 1-16); EfaCardSelection.ALL does the same. Not a layout of the EC2 guide."""
    layout = plan_network_interfaces(get_instance_spec(GB200), efa_cards=EfaCardSelection.ALL)
    assert triples(layout) == [(0, 0, ENA)] + [(c, 0, EFA_ONLY) for c in range(1, 17)]
    assert layout.efa_bandwidth_gbps == 1600  # the documented maximum, whatever the number of interfaces


@pytest.mark.parametrize("instance_type", [t for t in BUILTIN_INSTANCE_TYPES if t != GB200])
@pytest.mark.parametrize("cards", [EfaCardSelection.ALL, EfaCardSelection.EVERY_GPU_CARD])
def test_card_selection_changes_nothing_where_the_docs_name_no_cards(instance_type, cards):
    spec = get_instance_spec(instance_type)
    assert triples(plan_network_interfaces(spec, efa_cards=cards)) == triples(plan_network_interfaces(spec))


def test_gb200_eight_by_200_layout_on_every_odd_card():
    """efa-acc-inst-types#efa-for-p6e: "Add an EFA-only network interface to each NCI in each group to achieve 200
    Gbps per network interface (8 EFA network interfaces x 200 Gbps)"."""
    layout = plan_network_interfaces(get_instance_spec(GB200), efa_cards=EfaCardSelection.EVERY_GPU_CARD)
    assert triples(layout) == [(0, 0, ENA)] + [(c, 0, EFA_ONLY) for c in range(1, 16, 2)]
    assert layout.efa_interface_count == 8
    assert layout.efa_bandwidth_gbps == 1600


@pytest.mark.parametrize(
    ("cards", "count", "kept"),
    [
        # One card per GPU first (1, 5, 9, 13), never the first N cards (1, 2, 3, 4 would leave GPUs bare).
        (EfaCardSelection.ALL, 4, (1, 5, 9, 13)),
        (EfaCardSelection.ALL, 8, (1, 3, 5, 7, 9, 11, 13, 15)),
        (EfaCardSelection.ALL, 10, (1, 2, 3, 4, 5, 7, 9, 11, 13, 15)),
        (EfaCardSelection.EVERY_GPU_CARD, 4, (1, 5, 9, 13)),
        (EfaCardSelection.EVERY_GPU_CARD, 6, (1, 3, 5, 7, 9, 13)),
        (EfaCardSelection.RECOMMENDED, 4, (1, 5, 9, 13)),
    ],
)
def test_gb200_truncation_spreads_over_the_gpus(cards, count, kept):
    layout = plan_network_interfaces(get_instance_spec(GB200), efa_cards=cards, efa_interface_count=count)
    assert layout.efa_network_cards == kept
    assert all(set(pair) & set(kept) for pair in GB200_GPU_CARDS)


@pytest.mark.parametrize("cards", list(EfaCardSelection))
@pytest.mark.parametrize("count", [1, 2, 3])
def test_gb200_count_that_leaves_a_gpu_without_efa_is_refused(cards, count):
    with pytest.raises(
        FmValidationError,
        match=rf"efa_interface_count must be 0 \(no EFA\) or (4|between 4 and \d+) for p6e-gb200.36xlarge .*"
        rf"each of its 4 GPUs needs an EFA on one of the cards it reaches \(\[1, 3\], \[5, 7\], \[9, 11\], "
        rf"\[13, 15\]; EC2 User Guide efa-acc-inst-types\), got {count}",
    ):
        plan_network_interfaces(get_instance_spec(GB200), efa_cards=cards, efa_interface_count=count)


@pytest.mark.parametrize(
    ("cards", "count", "gbps"),
    [
        (EfaCardSelection.RECOMMENDED, None, 1600),  # 4 x 400
        (EfaCardSelection.EVERY_GPU_CARD, None, 1600),  # 8 x 200: each GPU's 400 Gbps split over two cards
        (EfaCardSelection.ALL, None, 1600),  # 16 cards: no bandwidth beyond the instance's 1,600 Gbps
        (EfaCardSelection.EVERY_GPU_CARD, 4, 1600),  # one odd card per GPU carries its whole 400 Gbps
        (EfaCardSelection.EVERY_GPU_CARD, 5, 1600),
        (EfaCardSelection.ALL, 4, 1600),  # the old planner kept cards 1-4 here: 400 Gbps and three bare GPUs
        (EfaCardSelection.ALL, 12, 1600),
        (EfaCardSelection.ALL, 0, 0),
    ],
)
def test_gb200_bandwidth_for_each_layout(cards, count, gbps):
    layout = plan_network_interfaces(get_instance_spec(GB200), efa_cards=cards, efa_interface_count=count)
    assert layout.efa_bandwidth_gbps == gbps


def _two_gpu_spec(**overrides):
    """A small made-up record: GPU A reaches cards 1 and 3, GPU B card 5; cards [1, 2] share a physical NIC."""
    cards = (
        NetworkCardSpec(0, frozenset({ENA}), 2, 100.0),
        NetworkCardSpec(1, frozenset({EFA_ONLY}), 2, 400.0, efa_bandwidth_gbps=400.0),
        NetworkCardSpec(2, frozenset(InterfaceType), 2, 200.0, efa_bandwidth_gbps=200.0),
        NetworkCardSpec(3, frozenset({EFA_ONLY}), 2, 400.0, efa_bandwidth_gbps=400.0),
        NetworkCardSpec(4, frozenset(InterfaceType), 2, 200.0, efa_bandwidth_gbps=200.0),
        NetworkCardSpec(5, frozenset({EFA_ONLY}), 2, 400.0, efa_bandwidth_gbps=400.0),
    )
    fields = {
        "instance_type": "x9-test.large",
        "gpu": dataclasses.replace(get_instance_spec(GB200).gpu, count=2),
        "network_cards": cards,
        "max_network_interfaces": 12,
        "maximum_efa_interfaces": 5,
        "efa_bandwidth_gbps": 1600,
        "efa_network_cards": (1, 5),
        "gpu_card_groups": (NetworkCardGroup((1, 3), 400.0), NetworkCardGroup((5,), 400.0)),
        "nic_card_groups": (NetworkCardGroup((1, 2), 400.0),),
        "fsx_lustre_efa_interfaces": None,
        "ultraserver_types": (),
    }
    fields.update(overrides)
    return dataclasses.replace(get_instance_spec(GB200), **fields)


@pytest.mark.parametrize(
    ("cards", "count", "kept", "gbps"),
    [
        (EfaCardSelection.RECOMMENDED, None, (1, 5), 800),
        (EfaCardSelection.EVERY_GPU_CARD, None, (1, 3, 5), 800),  # GPU A's 400 Gbps caps cards 1 + 3
        (EfaCardSelection.ALL, 2, (1, 5), 800),
        # Card 2 (no GPU path) adds 200, routed around the shared NIC: card 3 carries GPU A's traffic.
        (EfaCardSelection.ALL, 4, (1, 2, 3, 5), 1000),
        (EfaCardSelection.ALL, 5, (1, 2, 3, 4, 5), 1200),
    ],
)
def test_bandwidth_model_applies_gpu_and_nic_limits(cards, count, kept, gbps):
    layout = plan_network_interfaces(_two_gpu_spec(), efa_cards=cards, efa_interface_count=count)
    assert (layout.efa_network_cards, layout.efa_bandwidth_gbps) == (kept, gbps)


def test_shared_nic_caps_cards_that_share_it():
    # GPU A reaches card 1 only; cards 1 and 2 share one 400 Gbps NIC: 400, not 400 + 200.
    spec = _two_gpu_spec(
        gpu_card_groups=(NetworkCardGroup((1,), 400.0), NetworkCardGroup((5,), 400.0)), efa_network_cards=(1, 5)
    )
    layout = plan_network_interfaces(spec, efa_cards=EfaCardSelection.ALL, efa_interface_count=3)
    assert layout.efa_network_cards == (1, 2, 5)
    assert layout.efa_bandwidth_gbps == 800  # NIC [1, 2] 400 + card 5 400; cards 3 and 4 unused
    assert plan_network_interfaces(spec, efa_cards=EfaCardSelection.ALL).efa_bandwidth_gbps == 1400


def test_gpu_mapping_spreads_truncation_on_any_type():
    """Where a GPU-to-card mapping is recorded (here a made-up one on a p5 record: 4 cards per GPU), truncation
    keeps one card per GPU first instead of the lowest indices."""
    p5 = get_instance_spec("p5.48xlarge")
    spec = dataclasses.replace(
        p5, gpu_card_groups=tuple(NetworkCardGroup(tuple(range(c, c + 4)), 400.0) for c in range(0, 32, 4))
    )
    layout = plan_network_interfaces(spec, efa_interface_count=8)
    assert layout.efa_network_cards == (0, 4, 8, 12, 16, 20, 24, 28)
    assert layout.efa_bandwidth_gbps == 800
    with pytest.raises(FmValidationError, match=r"each of its 8 GPUs needs an EFA"):
        plan_network_interfaces(spec, efa_interface_count=7)


@pytest.mark.parametrize(
    ("instance_type", "count", "kept", "gbps"),
    [
        # No GPU-to-card mapping published: the guide's "next unused network card index", 100/200/400 Gbps a card.
        ("p5.48xlarge", 3, (0, 1, 2), 300),
        ("p5en.48xlarge", 3, (0, 1, 2), 600),
        ("p6-b200.48xlarge", 3, (0, 1, 2), 1200),
        ("p6-b300.48xlarge", 3, (1, 2, 3), 1200),
    ],
)
def test_types_without_a_gpu_mapping_keep_the_lowest_cards(instance_type, count, kept, gbps):
    layout = plan_network_interfaces(get_instance_spec(instance_type), efa_interface_count=count)
    assert (layout.efa_network_cards, layout.efa_bandwidth_gbps) == (kept, gbps)
