"""Network interface layout for GPU instances: the one place that decides EFA interfaces per instance type.

The layout follows the EC2 User Guide "Maximize network bandwidth on Amazon EC2 instances with multiple network
cards" (efa-acc-inst-types):

- card 0 / device 0 is the primary interface, an ENA ``interface`` (EFA-only cannot be primary);
- where card 0 takes EFA, an ``efa-only`` interface goes on card 0 / device 1;
- every further EFA-capable card gets ``efa-only`` on device 0 (optionally an ENA ``interface`` on device 1 for
  more IP bandwidth);
- cards that take no EFA (card 0 of p6-b300 and p6e-gb200) get no EFA, and where the docs name the cards to use
  (p6e-gb200: cards 1, 5, 9, 13) only those are used;
- the EFA count never exceeds ``EfaInfo.MaximumEfaInterfaces`` (the eksctl#8692 bug counted network cards).

Consumers differ in what the launch template may hold, so the caller picks an :class:`InterfacePolicy`:

- ``SELF_MANAGED`` (EC2 fleets, Auto Scaling groups): the layout above; every interface names its security
  groups and, when given, the subnet.
- ``EKS_MANAGED_NODE_GROUP``: the layout above with no ``SubnetId`` in the launch template (EKS places nodes in the
  node group's subnets; EKS User Guide "device-management-efa").
- ``PCS``: AWS PCS documents the primary interface as ``efa`` (ENA + EFA) and security groups on each interface,
  since a launch template with network interfaces cannot use ``SecurityGroupIds`` (PCS User Guide
  "working-with_networking_efa_create-lt"). Card 0 therefore carries one ``efa`` primary instead of ``interface`` +
  ``efa-only``; cards that take no EFA keep an ENA primary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from aws_cdk import aws_ec2 as ec2

from ..catalog import InstanceSpec, InterfaceType, NetworkCardSpec
from ..errors import FmValidationError


class EfaCardSelection(Enum):
    """Which EFA-capable cards get an EFA."""

    RECOMMENDED = "recommended"
    """The cards the EFA documentation recommends (every EFA card, except p6e-gb200: cards 1, 5, 9, 13)."""
    ALL = "all"
    """Every EFA-capable card (p6e-gb200: cards 1-16, as ParallelCluster 3.16+ configures it)."""


class InterfacePolicy(Enum):
    """Which consumer the launch template is for; see the module docstring."""

    SELF_MANAGED = "self-managed"
    EKS_MANAGED_NODE_GROUP = "eks-managed-node-group"
    PCS = "pcs"

    @property
    def allows_subnet_in_launch_template(self) -> bool:
        return self is not InterfacePolicy.EKS_MANAGED_NODE_GROUP

    @property
    def efa_on_primary(self) -> bool:
        return self is InterfacePolicy.PCS


@dataclass(frozen=True)
class PlannedInterface:
    """One network interface of the layout."""

    network_card_index: int
    device_index: int
    interface_type: InterfaceType

    @property
    def is_primary(self) -> bool:
        return self.network_card_index == 0 and self.device_index == 0

    @property
    def is_efa(self) -> bool:
        return self.interface_type in (InterfaceType.EFA, InterfaceType.EFA_ONLY)


@dataclass(frozen=True)
class InterfaceLayout:
    """The planned interfaces for one instance type and policy."""

    spec: InstanceSpec
    policy: InterfacePolicy
    interfaces: tuple[PlannedInterface, ...]

    @property
    def efa_interface_count(self) -> int:
        return sum(1 for i in self.interfaces if i.is_efa)

    @property
    def efa_bandwidth_gbps(self) -> float:
        """EFA bandwidth per node: the documented maximum, scaled by the share of recommended EFA cards in use."""
        recommended = self.spec.efa_network_cards or tuple(c.index for c in self.spec.efa_capable_cards)
        used = {i.network_card_index for i in self.interfaces if i.is_efa} & set(recommended)
        return self.spec.efa_bandwidth_gbps * len(used) / len(recommended) if recommended else 0.0

    def to_cfn(
        self,
        *,
        efa_security_group_id: str,
        security_group_ids: Sequence[str] = (),
        subnet_id: str | None = None,
    ) -> list[ec2.CfnLaunchTemplate.NetworkInterfaceProperty]:
        """Render the layout as launch-template ``NetworkInterfaces``.

        The primary interface (and any extra ENA interface) gets ``security_group_ids`` plus the EFA group; EFA-only
        interfaces get the EFA group, which is all EFA traffic needs.
        """
        if subnet_id is not None and not self.policy.allows_subnet_in_launch_template:
            raise FmValidationError(
                "subnet",
                subnet_id,
                f"omitted for the {self.policy.value} policy (the node group supplies subnets)",
            )
        out: list[ec2.CfnLaunchTemplate.NetworkInterfaceProperty] = []
        for planned in self.interfaces:
            carries_ip = planned.interface_type is not InterfaceType.EFA_ONLY
            groups = [*security_group_ids, efa_security_group_id] if carries_ip else [efa_security_group_id]
            out.append(
                ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
                    network_card_index=planned.network_card_index,
                    device_index=planned.device_index,
                    interface_type=planned.interface_type.value,
                    groups=list(dict.fromkeys(groups)),
                    subnet_id=subnet_id,
                    delete_on_termination=True,
                    # No public IPs on compute; only the primary may carry the flag at all.
                    associate_public_ip_address=False if planned.is_primary else None,
                )
            )
        return out


def plan_network_interfaces(
    spec: InstanceSpec,
    *,
    policy: InterfacePolicy = InterfacePolicy.SELF_MANAGED,
    efa_interface_count: int | None = None,
    extra_ena_interfaces: bool = False,
    efa_cards: EfaCardSelection = EfaCardSelection.RECOMMENDED,
) -> InterfaceLayout:
    """Lay out the network interfaces of ``spec`` for ``policy``.

    :param efa_interface_count: use fewer EFA interfaces than the maximum (default: as many as the docs recommend,
        never more than ``MaximumEfaInterfaces``).
    :param extra_ena_interfaces: add an ENA ``interface`` on device 1 of every EFA card after card 0, trading IP
        addresses for more IP bandwidth.
    :param efa_cards: RECOMMENDED (default) or ALL EFA-capable cards; differs only where the docs name cards.
    """
    max_efa = spec.maximum_efa_interfaces
    if efa_interface_count is not None and not 0 <= efa_interface_count <= max_efa:
        raise FmValidationError(
            "efa_interface_count", efa_interface_count, f"between 0 and {max_efa} for {spec.instance_type}"
        )
    budget = max_efa if efa_interface_count is None else efa_interface_count

    card0 = spec.card(0)
    interfaces: list[PlannedInterface] = []
    if policy.efa_on_primary and InterfaceType.EFA in card0.interface_types and budget > 0:
        interfaces.append(PlannedInterface(0, 0, InterfaceType.EFA))
    else:
        interfaces.append(PlannedInterface(0, 0, InterfaceType.ENA))
        if _card_selected(spec, card0, efa_cards) and InterfaceType.EFA_ONLY in card0.interface_types and budget > 0:
            interfaces.append(PlannedInterface(0, 1, InterfaceType.EFA_ONLY))

    for card in spec.network_cards[1:]:
        if sum(1 for i in interfaces if i.is_efa) >= budget:
            break
        if not card.supports_efa or not _card_selected(spec, card, efa_cards):
            continue
        efa_type = InterfaceType.EFA_ONLY if InterfaceType.EFA_ONLY in card.interface_types else InterfaceType.EFA
        interfaces.append(PlannedInterface(card.index, 0, efa_type))
        if (
            extra_ena_interfaces
            and efa_type is InterfaceType.EFA_ONLY
            and card.supports_ena
            and card.max_interfaces > 1
        ):
            interfaces.append(PlannedInterface(card.index, 1, InterfaceType.ENA))

    layout = InterfaceLayout(spec=spec, policy=policy, interfaces=tuple(interfaces))
    _check_layout(layout)
    if efa_interface_count is not None and layout.efa_interface_count < efa_interface_count:
        cards = tuple(i.network_card_index for i in layout.interfaces if i.is_efa)
        raise FmValidationError(
            "efa_interface_count",
            efa_interface_count,
            f"at most {layout.efa_interface_count} for {spec.instance_type} with the {policy.value} policy and "
            f"{efa_cards.value} EFA cards (cards {list(cards)}; efa_cards=EfaCardSelection.ALL uses every EFA card)",
        )
    return layout


def _card_selected(spec: InstanceSpec, card: NetworkCardSpec, selection: EfaCardSelection) -> bool:
    if selection is EfaCardSelection.ALL or spec.efa_network_cards is None:
        return True
    return card.index in spec.efa_network_cards


def _check_layout(layout: InterfaceLayout) -> None:
    """Invariants every layout must keep; a failure here is a bug in the catalog or the planner."""
    spec = layout.spec
    pairs = [(i.network_card_index, i.device_index) for i in layout.interfaces]
    if len(pairs) != len(set(pairs)):
        raise AssertionError(f"duplicate (card, device) pair in {pairs}")
    if layout.efa_interface_count > spec.maximum_efa_interfaces:
        raise AssertionError(f"{layout.efa_interface_count} EFA interfaces exceed {spec.maximum_efa_interfaces}")
    if len(layout.interfaces) > spec.max_network_interfaces:
        raise AssertionError("more interfaces than MaximumNetworkInterfaces")
    for planned in layout.interfaces:
        card = spec.card(planned.network_card_index)
        if planned.interface_type not in card.interface_types:
            raise AssertionError(f"card {card.index} does not accept {planned.interface_type.value}")
        if planned.device_index >= card.max_interfaces:
            raise AssertionError(f"device index {planned.device_index} exceeds card {card.index}'s limit")
    efa_cards = [i.network_card_index for i in layout.interfaces if i.is_efa]
    if len(efa_cards) != len(set(efa_cards)):
        raise AssertionError("more than one EFA on a card")
    primary = layout.interfaces[0]
    if not primary.is_primary or primary.interface_type is InterfaceType.EFA_ONLY:
        raise AssertionError("the primary interface must be card 0 / device 0 and carry IP")
