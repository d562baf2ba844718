"""The cross-property rules of the networking constructs and planners (fmconstructs.networking.rules), each with plain
values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import FmValidationError
from fmconstructs.catalog import get_instance_spec
from fmconstructs.networking import EfaCardSelection, InterfacePolicy, PlacementStrategy, rules


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


@pytest.mark.parametrize(
    ("count", "strategy"),
    [(None, PlacementStrategy.CLUSTER), (None, PlacementStrategy.SPREAD), (3, PlacementStrategy.PARTITION)],
)
def test_partition_count_with_the_partition_strategy_or_none_passes(count, strategy):
    rules.partition_count_needs_the_partition_strategy(partition_count=count, strategy=strategy)


@pytest.mark.parametrize("strategy", [PlacementStrategy.CLUSTER, PlacementStrategy.SPREAD])
def test_partition_count_with_another_strategy_is_refused(strategy):
    _refused(
        lambda: rules.partition_count_needs_the_partition_strategy(partition_count=2, strategy=strategy),
        "partition_count",
        "None unless strategy is PARTITION",
    )


@pytest.mark.parametrize(("peers", "group"), [(False, False), (True, False), (False, True)])
def test_peers_or_a_security_group_passes(peers, group):
    rules.peers_or_a_security_group(peers_given=peers, security_group_given=group)


def test_peers_with_a_security_group_are_refused():
    _refused(
        lambda: rules.peers_or_a_security_group(peers_given=True, security_group_given=True),
        "peers",
        r"None when security_group is given \(its rules are yours\)",
    )


@pytest.mark.parametrize(
    ("policy", "subnet"),
    [(InterfacePolicy.SELF_MANAGED, "subnet-1"), (InterfacePolicy.EKS_MANAGED_NODE_GROUP, None)],
)
def test_a_subnet_where_the_policy_takes_one_passes(policy, subnet):
    rules.subnet_is_for_the_policy(policy=policy, subnet=subnet)


def test_a_subnet_for_a_managed_node_group_is_refused():
    _refused(
        lambda: rules.subnet_is_for_the_policy(policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP, subnet="subnet-1"),
        "subnet",
        r"None for the eks-managed-node-group policy \(the node group supplies the subnets\)",
    )


@pytest.mark.parametrize("count", [None, 0, 16, 32])
def test_an_efa_count_within_the_catalog_passes(count):
    rules.efa_count_fits_the_catalog(efa_interface_count=count, maximum_efa=32, instance_type="p5.48xlarge")


@pytest.mark.parametrize("count", [-1, 33])
def test_an_efa_count_outside_the_catalog_is_refused(count):
    _refused(
        lambda: rules.efa_count_fits_the_catalog(
            efa_interface_count=count, maximum_efa=32, instance_type="p5.48xlarge"
        ),
        "efa_interface_count",
        "between 0 and 32 for p5.48xlarge",
    )


CARDS = {"instance_type": "p5en.48xlarge", "policy": InterfacePolicy.PCS, "efa_cards": EfaCardSelection.RECOMMENDED}


@pytest.mark.parametrize("count", [None, 0, 8])
def test_an_efa_count_within_the_cards_passes(count):
    rules.efa_count_fits_the_cards(efa_interface_count=count, candidates=tuple(range(8)), **CARDS)


def test_an_efa_count_beyond_the_cards_is_refused():
    _refused(
        lambda: rules.efa_count_fits_the_cards(efa_interface_count=9, candidates=tuple(range(8)), **CARDS),
        "efa_interface_count",
        r"at most 8 for p5en.48xlarge with the pcs policy and recommended EFA cards \(cards \[0, 1",
    )


GB200 = get_instance_spec("p6e-gb200.36xlarge")  # 4 GPUs, reaching cards [1, 3], [5, 7], [9, 11], [13, 15]
GB200_CARDS = (1, 3, 5, 7, 9, 11, 13, 15)


@pytest.mark.parametrize("budget", [0, 4, 8])
def test_no_efa_or_an_efa_for_every_gpu_passes(budget):
    rules.every_gpu_reaches_an_efa(spec=GB200, selection=EfaCardSelection.ALL, candidates=GB200_CARDS, budget=budget)


@pytest.mark.parametrize("budget", [1, 3])
def test_a_gpu_without_an_efa_is_refused(budget):
    _refused(
        lambda: rules.every_gpu_reaches_an_efa(
            spec=GB200, selection=EfaCardSelection.ALL, candidates=GB200_CARDS, budget=budget
        ),
        "efa_interface_count",
        r"0 \(no EFA\) or between 4 and 8 for p6e-gb200.36xlarge with all EFA cards: each of its 4 GPUs needs an "
        r"EFA on one of the cards it reaches \(\[1, 3\], \[5, 7\]",
    )
