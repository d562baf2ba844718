"""Network interface layout for GPU instances: the one place that decides EFA interfaces per instance type.

The layout follows the EC2 User Guide "Maximize network bandwidth on Amazon EC2 instances with multiple network
cards" (efa-acc-inst-types):

- card 0 / device 0 is the primary interface, an ENA ``interface`` (EFA-only cannot be primary);
- where card 0 takes EFA, an ``efa-only`` interface goes on card 0 / device 1;
- every further EFA-capable card gets ``efa-only`` on device 0 (optionally an ENA ``interface`` on device 1 for
  more IP bandwidth);
- cards that take no EFA (card 0 of p6-b300 and p6e-gb200) get no EFA, and where the docs name the cards to use
  (p6e-gb200: cards 1, 5, 9, 13) only those are used (:class:`EfaCardSelection` picks another documented layout);
- the EFA count never exceeds ``EfaInfo.MaximumEfaInterfaces`` (the eksctl#8692 bug counted network cards);
- fewer EFA interfaces than the layout holds (``efa_interface_count``) never leave a GPU without EFA where the
  catalog knows which cards each GPU reaches (``InstanceSpec.gpu_card_groups``; p6e-gb200: [1, 3], [5, 7], [9, 11],
  [13, 15]): the kept cards are spread one per GPU first, and a count below the number of GPUs is refused. Where the
  guide publishes no GPU-to-card mapping (p5, p5e, p5en, p6-b200, p6-b300) the kept cards are the lowest indices, as
  the guide's generic rule ("use the next unused network card index") has it.

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
from typing import TYPE_CHECKING

from .._validate import check_bool, check_enum, check_number
from ..catalog import InstanceSpec, InterfaceType, NetworkCardSpec
from ..errors import FmTypeError, FmValidationError, is_token
from . import rules

if TYPE_CHECKING:
    # aws_ec2 only in to_cfn: the ``fmc`` command plans layouts without Node.js (importing aws_cdk starts it).
    from aws_cdk import aws_ec2 as ec2


class EfaCardSelection(Enum):
    """Which EFA-capable cards get an EFA.

    On p6e-gb200 the EC2 User Guide (efa-acc-inst-types#efa-for-p6e) documents two layouts for its 1,600 Gbps EFA
    maximum: RECOMMENDED (4 x 400 Gbps) and EVERY_GPU_CARD (8 x 200 Gbps). ALL is not from the guide. On the other
    catalog types the three are the same layout (every EFA-capable card).
    """

    RECOMMENDED = "recommended"
    """The cards the EFA documentation recommends (``InstanceSpec.efa_network_cards``; every EFA card where it names
    none). p6e-gb200: one EFA-only interface per GPU, cards 1, 5, 9, 13 (4 x 400 Gbps), the guide's example."""
    EVERY_GPU_CARD = "every-gpu-card"
    """An EFA on every card a GPU reaches directly (``InstanceSpec.gpu_card_groups``). p6e-gb200: cards 1, 3, 5, ...,
    15, two per GPU sharing its 400 Gbps (8 x 200 Gbps), the guide's second layout. Same as RECOMMENDED where the
    catalog records no GPU-to-card mapping."""
    ALL = "all"
    """Every EFA-capable card. p6e-gb200: cards 1-16, as ParallelCluster configures it (aws-parallelcluster
    ``queues_stack.add_network_interfaces``: ``efa-only`` on every card after card 0). Not a layout of the EC2 guide;
    it adds no EFA bandwidth over the other two (the instance's 1,600 Gbps maximum)."""


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
    def efa_network_cards(self) -> tuple[int, ...]:
        """The cards that carry an EFA, in index order."""
        return tuple(sorted(i.network_card_index for i in self.interfaces if i.is_efa))

    @property
    def efa_bandwidth_gbps(self) -> float:
        """The most EFA bandwidth per node this layout can carry, under the limits the EC2 User Guide states.

        Model (efa-acc-inst-types): the EFA traffic of the cards carrying an EFA is the maximum flow through

        - each card: its own EFA bandwidth (``InstanceSpec.card_efa_bandwidth_gbps``; p6e-gb200: 400 Gbps on odd
          cards, 200 on even cards; p6-b200 and p6-b300: 400; p5/p5e: 100; p5en: 200);
        - each GPU: the bandwidth it supports over the cards it reaches (``gpu_card_groups``; p6e-gb200: 400 Gbps
          shared by cards [1, 3], [5, 7] ...: "if NCI 1 uses 200 Gbps of EFA bandwidth, NCI 3 can use up to 200");
        - each physical NIC: the bandwidth its cards share (``nic_card_groups``; p6e-gb200: 400 Gbps for [1, 2] ...);
        - the instance: its documented EFA maximum (``InstanceSpec.efa_bandwidth_gbps``; p6e-gb200: 1,600 Gbps).

        So on p6e-gb200, cards 1, 5, 9, 13 give 4 x 400 = 1,600; cards 1, 3, ..., 15 give 8 x 200 = 1,600 (each GPU's
        400 Gbps split over its two cards); all 16 cards give 1,600 (the instance maximum: no extra bandwidth); and
        any truncation that keeps one card per GPU gives 1,600 as well, since one odd card carries its GPU's whole
        400 Gbps. On types without GPU or NIC groups this is the sum of the per-card figures (p5: 100 Gbps per
        EFA), capped by the instance maximum. IP traffic on the same cards is not subtracted: this is an upper bound
        for EFA alone, as the guide's figures are.
        """
        return _max_efa_flow_gbps(self.spec, self.efa_network_cards)

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
        rules.subnet_is_for_the_policy(policy=self.policy, subnet=subnet_id)
        from aws_cdk import aws_ec2 as ec2

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

    :param efa_interface_count: use fewer EFA interfaces than the layout holds (default: every card of the
        selection, never more than ``MaximumEfaInterfaces``). Where the catalog knows which cards each GPU reaches
        the kept cards are spread one per GPU first, and a count that would leave a GPU without EFA (between 1 and
        the number of GPUs minus 1) is refused; 0 means no EFA at all.
    :param extra_ena_interfaces: add an ENA ``interface`` on device 1 of every EFA card after card 0, trading IP
        addresses for more IP bandwidth.
    :param efa_cards: RECOMMENDED (default), EVERY_GPU_CARD or ALL; see :class:`EfaCardSelection`.
    """
    if not isinstance(spec, InstanceSpec):
        raise FmTypeError("spec", spec, "an InstanceSpec (fmconstructs.get_instance_spec)")
    check_enum("policy", policy, InterfacePolicy)
    if efa_interface_count is not None:
        efa_interface_count = check_number("efa_interface_count", efa_interface_count, integer=True)
    if is_token(efa_interface_count):
        raise FmValidationError(
            "efa_interface_count",
            efa_interface_count,
            "known at synth time (it decides how many network interfaces the launch template has)",
        )
    check_bool("extra_ena_interfaces", extra_ena_interfaces)
    check_enum("efa_cards", efa_cards, EfaCardSelection)
    max_efa = spec.maximum_efa_interfaces
    rules.efa_count_fits_the_catalog(
        efa_interface_count=efa_interface_count, maximum_efa=max_efa, instance_type=spec.instance_type
    )
    candidates = _spread_order(spec, _selected_cards(spec, efa_cards))[:max_efa]
    rules.efa_count_fits_the_cards(
        efa_interface_count=efa_interface_count,
        candidates=candidates,
        instance_type=spec.instance_type,
        policy=policy,
        efa_cards=efa_cards,
    )
    budget = len(candidates) if efa_interface_count is None else efa_interface_count
    rules.every_gpu_reaches_an_efa(spec=spec, selection=efa_cards, candidates=candidates, budget=budget)
    chosen = set(candidates[:budget])

    card0 = spec.card(0)
    interfaces: list[PlannedInterface] = []
    if 0 in chosen and policy.efa_on_primary and InterfaceType.EFA in card0.interface_types:
        interfaces.append(PlannedInterface(0, 0, InterfaceType.EFA))
    else:
        interfaces.append(PlannedInterface(0, 0, InterfaceType.ENA))
        if 0 in chosen:
            interfaces.append(PlannedInterface(0, 1, _efa_type(card0)))

    for card in spec.network_cards[1:]:
        if card.index not in chosen:
            continue
        efa_type = _efa_type(card)
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
    return layout


def _efa_type(card: NetworkCardSpec) -> InterfaceType:
    """``efa-only`` where the card takes it (the guide's recommendation), else ``efa``."""
    return InterfaceType.EFA_ONLY if InterfaceType.EFA_ONLY in card.interface_types else InterfaceType.EFA


def _selected_cards(spec: InstanceSpec, selection: EfaCardSelection) -> tuple[int, ...]:
    """The EFA-capable cards of ``selection``, in index order (before truncation)."""
    if selection is EfaCardSelection.ALL:
        return tuple(card.index for card in spec.efa_capable_cards)
    if selection is EfaCardSelection.EVERY_GPU_CARD and spec.gpu_card_groups:
        return spec.gpu_efa_cards
    return spec.recommended_efa_cards


def _spread_order(spec: InstanceSpec, cards: Sequence[int]) -> tuple[int, ...]:
    """``cards`` in the order truncation keeps them: one card per GPU in turn (round-robin over the GPU groups, in
    the order of their lowest card), then the cards no GPU reaches directly, by index. Without GPU groups: by index.
    """
    selected = set(cards)
    per_gpu = [[i for i in sorted(group.cards) if i in selected] for group in spec.gpu_card_groups]
    per_gpu = sorted((g for g in per_gpu if g), key=lambda g: g[0])
    order: list[int] = []
    for rank in range(max((len(g) for g in per_gpu), default=0)):
        order.extend(g[rank] for g in per_gpu if rank < len(g))
    order.extend(i for i in sorted(selected) if i not in order)
    return tuple(order)


def _max_efa_flow_gbps(spec: InstanceSpec, efa_cards: Sequence[int]) -> float:
    """Maximum flow from the instance through GPU groups, cards and physical NICs (see ``efa_bandwidth_gbps``)."""
    if not efa_cards:
        return 0.0
    inf = float("inf")
    capacity: dict[str, dict[str, float]] = {}

    def edge(a: str, b: str, gbps: float) -> None:
        capacity.setdefault(a, {})[b] = capacity.get(a, {}).get(b, 0.0) + gbps
        capacity.setdefault(b, {}).setdefault(a, 0.0)

    gpu_of = {i: n for n, g in enumerate(spec.gpu_card_groups) for i in g.cards}
    nic_of = {i: n for n, g in enumerate(spec.nic_card_groups) for i in g.cards}
    edge("instance", "host", float(spec.efa_bandwidth_gbps))
    for n, group in enumerate(spec.gpu_card_groups):
        edge("host", f"gpu{n}", group.bandwidth_gbps)
    for n, group in enumerate(spec.nic_card_groups):
        edge(f"nic{n}", "fabric", group.bandwidth_gbps)
    for i in efa_cards:
        edge(f"gpu{gpu_of[i]}" if i in gpu_of else "host", f"card{i}", spec.card_efa_bandwidth_gbps(i))
        edge(f"card{i}", f"nic{nic_of[i]}" if i in nic_of else "fabric", inf)

    total = 0.0
    while True:  # Edmonds-Karp: shortest augmenting paths; the graph has a few dozen nodes
        parent: dict[str, str] = {"instance": ""}
        queue = ["instance"]
        while queue and "fabric" not in parent:
            node = queue.pop(0)
            for nxt, cap in capacity[node].items():
                if cap > 0 and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        if "fabric" not in parent:
            return total
        path: list[tuple[str, str]] = []
        node = "fabric"
        while node != "instance":
            path.append((parent[node], node))
            node = parent[node]
        push = min(capacity[a][b] for a, b in path)
        for a, b in path:
            capacity[a][b] -= push
            capacity[b][a] += push
        total += push


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
    if efa_cards:
        bare = [list(g.cards) for g in spec.gpu_card_groups if not set(g.cards) & set(efa_cards)]
        if bare:
            raise AssertionError(f"GPUs reaching cards {bare} have no EFA")
