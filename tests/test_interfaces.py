"""EFA interface layout per instance type and per consumer policy."""

from __future__ import annotations

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

ENA, EFA, EFA_ONLY = InterfaceType.ENA, InterfaceType.EFA, InterfaceType.EFA_ONLY

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
    with pytest.raises(FmValidationError, match=r"subnet must be omitted for the eks-managed-node-group policy"):
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


@settings(max_examples=60, deadline=None)
@given(
    instance_type=st.sampled_from(BUILTIN_INSTANCE_TYPES),
    policy=st.sampled_from(list(InterfacePolicy)),
    extra_ena=st.booleans(),
    fraction=st.floats(min_value=0, max_value=1),
    cards=st.sampled_from(list(EfaCardSelection)),
)
def test_layout_invariants_hold_for_any_option(instance_type, policy, extra_ena, fraction, cards):
    spec = get_instance_spec(instance_type)
    requested = round(fraction * plan_network_interfaces(spec, policy=policy, efa_cards=cards).efa_interface_count)
    layout = plan_network_interfaces(
        spec, policy=policy, efa_interface_count=requested, extra_ena_interfaces=extra_ena, efa_cards=cards
    )
    pairs = [(i.network_card_index, i.device_index) for i in layout.interfaces]
    assert len(pairs) == len(set(pairs))
    assert layout.efa_interface_count == requested <= spec.maximum_efa_interfaces
    assert layout.interfaces[0].is_primary and layout.interfaces[0].interface_type is not EFA_ONLY
    efa_cards = [i.network_card_index for i in layout.interfaces if i.is_efa]
    assert len(efa_cards) == len(set(efa_cards))
    for planned in layout.interfaces:
        assert planned.interface_type in spec.card(planned.network_card_index).interface_types
    assert 0 <= layout.efa_bandwidth_gbps <= spec.efa_bandwidth_gbps


def test_asking_for_more_efa_than_the_recommended_cards_is_refused():
    spec = get_instance_spec("p6e-gb200.36xlarge")
    with pytest.raises(
        FmValidationError, match=r"efa_interface_count must be at most 4 for p6e-gb200.36xlarge .*\[1, 5, 9, 13\]"
    ):
        plan_network_interfaces(spec, efa_interface_count=8)
    assert plan_network_interfaces(spec, efa_interface_count=2).efa_interface_count == 2


def test_gb200_all_efa_cards_matches_parallelcluster():
    """ParallelCluster 3.16+ puts efa-only on every card 1-16 of p6e-gb200; EfaCardSelection.ALL does the same."""
    layout = plan_network_interfaces(get_instance_spec("p6e-gb200.36xlarge"), efa_cards=EfaCardSelection.ALL)
    assert triples(layout) == [(0, 0, ENA)] + [(c, 0, EFA_ONLY) for c in range(1, 17)]
    assert layout.efa_bandwidth_gbps == 1600  # the documented maximum, whatever the number of interfaces


@pytest.mark.parametrize("instance_type", [t for t in BUILTIN_INSTANCE_TYPES if t != "p6e-gb200.36xlarge"])
def test_all_efa_cards_changes_nothing_where_the_docs_name_no_cards(instance_type):
    spec = get_instance_spec(instance_type)
    assert triples(plan_network_interfaces(spec, efa_cards=EfaCardSelection.ALL)) == triples(
        plan_network_interfaces(spec)
    )
