"""The cross-property rules of the networking constructs and planners as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in (enums, counts, catalog entries), no construct or scope; a hard rule
raises :class:`~fmconstructs.errors.FmValidationError`. No aws_cdk import here: :mod:`.interfaces` (which uses these
rules) is imported by the Node-free ``fmc`` CLI.

Checks of one option on its own (ranges, types, one subnet per zone) stay with the constructs and planners.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import FmValidationError

if TYPE_CHECKING:
    from ..catalog import InstanceSpec
    from .interfaces import EfaCardSelection, InterfacePolicy
    from .placement_group import PlacementStrategy

__all__ = [
    "efa_count_fits_the_cards",
    "efa_count_fits_the_catalog",
    "every_gpu_reaches_an_efa",
    "partition_count_needs_the_partition_strategy",
    "peers_or_a_security_group",
    "subnet_is_for_the_policy",
]


def partition_count_needs_the_partition_strategy(*, partition_count: object, strategy: PlacementStrategy) -> None:
    """``partition_count`` is for a PARTITION placement group only."""
    if partition_count is not None and strategy.value != "partition":  # PlacementStrategy.PARTITION
        raise FmValidationError("partition_count", partition_count, "None unless strategy is PARTITION")


def peers_or_a_security_group(*, peers_given: bool, security_group_given: bool) -> None:
    """An endpoint's ``peers`` open its own security group: not given with your ``security_group``."""
    if peers_given and security_group_given:
        raise FmValidationError("peers", "given", "None when security_group is given (its rules are yours)")


def subnet_is_for_the_policy(*, policy: InterfacePolicy, subnet: str | None) -> None:
    """A subnet in the launch template (or its interface layout) only for consumers that take it from there (not EKS
    managed node groups, whose node group supplies the subnets). ``subnet`` names the given subnet in the message,
    None when none. The one rule for the launch template and :meth:`NetworkInterfacePlan.to_cfn`."""
    if subnet is not None and not policy.allows_subnet_in_launch_template:
        raise FmValidationError(
            "subnet", subnet, f"None for the {policy.value} policy (the node group supplies the subnets)"
        )


def efa_count_fits_the_catalog(*, efa_interface_count: int | None, maximum_efa: int, instance_type: str) -> None:
    """An explicit EFA interface count is between 0 and the type's maximum EFA interfaces (catalog)."""
    if efa_interface_count is not None and not 0 <= efa_interface_count <= maximum_efa:
        raise FmValidationError(
            "efa_interface_count", efa_interface_count, f"between 0 and {maximum_efa} for {instance_type}"
        )


def efa_count_fits_the_cards(
    *,
    efa_interface_count: int | None,
    candidates: Sequence[int],
    instance_type: str,
    policy: InterfacePolicy,
    efa_cards: EfaCardSelection,
) -> None:
    """An explicit EFA interface count fits the network cards ``efa_cards`` selects (``candidates``)."""
    if efa_interface_count is not None and efa_interface_count > len(candidates):
        raise FmValidationError(
            "efa_interface_count",
            efa_interface_count,
            f"at most {len(candidates)} for {instance_type} with the {policy.value} policy and "
            f"{efa_cards.value} EFA cards (cards {sorted(candidates)}; efa_cards=EfaCardSelection.EVERY_GPU_CARD "
            "or ALL use more cards where the type has them)",
        )


def every_gpu_reaches_an_efa(
    *, spec: InstanceSpec, selection: EfaCardSelection, candidates: Sequence[int], budget: int
) -> None:
    """Refuse a count that leaves some GPU with none of its cards (0, no EFA at all, is allowed)."""
    gpus = [g for g in spec.gpu_card_groups if set(g.cards) & set(candidates)]
    if 0 < budget < len(gpus):
        groups = ", ".join(str(list(g.cards)) for g in gpus)
        counts = f"{len(gpus)}" if len(gpus) == len(candidates) else f"between {len(gpus)} and {len(candidates)}"
        raise FmValidationError(
            "efa_interface_count",
            budget,
            f"0 (no EFA) or {counts} for {spec.instance_type} with {selection.value} EFA cards: each of its "
            f"{len(gpus)} GPUs needs an EFA on one of the cards it reaches ({groups}; EC2 User Guide "
            "efa-acc-inst-types)",
        )
