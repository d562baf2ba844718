"""The instance catalog: the single source of truth for GPU instance facts.

Every other module asks this catalog for GPU counts, network cards, EFA limits and instance storage; none hard-codes
them. Facts come from EC2 ``DescribeInstanceTypes`` (field names are given next to each record;
``tests/catalog/test_catalog.py`` checks every field against the data moto bundles from that API) and, for
``p6e-gb200.36xlarge`` (absent from moto), from the AWS documentation cited in comments.

Register another type with :func:`register_instance_type` (see its docstring).
"""

from __future__ import annotations

import difflib
import functools
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ._validate import check_bool, check_enum, check_number, check_str, check_str_sequence
from .errors import FmTypeError, FmValidationError, is_token

if TYPE_CHECKING:
    from ._gpu_performance import GpuPerformance
    from ._nccl_reference import NcclAllReduceReference


class InterfaceType(str, Enum):
    """EC2 network interface types (API enum ``InterfaceType``)."""

    ENA = "interface"
    EFA = "efa"
    """ENA + EFA on one interface: carries IP traffic and OS-bypass traffic."""
    EFA_ONLY = "efa-only"
    """OS-bypass only, no IP address; cannot be the primary interface."""


class CpuArchitecture(str, Enum):
    """``ProcessorInfo.SupportedArchitectures``."""

    X86_64 = "x86_64"
    ARM64 = "arm64"


class EksAmiType(str, Enum):
    """EKS managed node group AMI types for GPU nodes (``AWS::EKS::Nodegroup.AmiType``)."""

    AL2023_X86_64_NVIDIA = "AL2023_x86_64_NVIDIA"
    AL2023_ARM_64_NVIDIA = "AL2023_ARM_64_NVIDIA"


@dataclass(frozen=True)
class GpuSpec:
    """``GpuInfo.Gpus[0]``: accelerator model, count and memory per GPU."""

    model: str
    count: int
    memory_mib_per_gpu: int
    manufacturer: str = "NVIDIA"

    def __post_init__(self) -> None:
        _text("gpu.model", self.model)
        _fact("gpu.count", self.count, minimum=1)
        _fact("gpu.memory_mib_per_gpu", self.memory_mib_per_gpu, minimum=1)
        _text("gpu.manufacturer", self.manufacturer)

    @property
    def total_memory_mib(self) -> int:
        """``GpuInfo.TotalGpuMemoryInMiB``."""
        return self.count * self.memory_mib_per_gpu


@dataclass(frozen=True)
class NetworkCardSpec:
    """One entry of ``NetworkInfo.NetworkCards``."""

    index: int
    """``NetworkCardIndex``."""
    interface_types: frozenset[InterfaceType]
    """``InterfaceTypes``: which interface types the card accepts."""
    max_interfaces: int
    """``MaximumNetworkInterfaces`` on this card."""
    baseline_bandwidth_gbps: float
    """``BaselineBandwidthInGbps``."""
    efa_bandwidth_gbps: float | None = None
    """EFA bandwidth this card supports on its own, from the EC2 User Guide (efa-acc-inst-types); not in the API.
    None: the instance's EFA maximum split evenly over its recommended EFA cards (see
    :meth:`InstanceSpec.card_efa_bandwidth_gbps`)."""

    def __post_init__(self) -> None:
        _fact("network_cards[].index", self.index, minimum=0)
        name = f"network_cards[{self.index}]"
        types = self.interface_types
        if isinstance(types, str | bytes) or not isinstance(types, Iterable):
            raise FmTypeError(f"{name}.interface_types", types, "a frozenset of InterfaceType")
        kinds = frozenset(check_enum(f"{name}.interface_types", t, InterfaceType) for t in types)
        object.__setattr__(self, "interface_types", kinds)
        _fact(f"{name}.max_interfaces", self.max_interfaces, minimum=1)
        _fact(f"{name}.baseline_bandwidth_gbps", self.baseline_bandwidth_gbps, minimum=0, integer=False)
        if self.efa_bandwidth_gbps is not None:
            _fact(f"{name}.efa_bandwidth_gbps", self.efa_bandwidth_gbps, minimum=None, integer=False)

    @property
    def supports_efa(self) -> bool:
        """Whether an EFA (``efa`` or ``efa-only``) can be attached to this card."""
        return bool(self.interface_types & {InterfaceType.EFA, InterfaceType.EFA_ONLY})

    @property
    def supports_ena(self) -> bool:
        """Whether the card accepts an interface that carries IP traffic (``interface`` or ``efa``)."""
        return bool(self.interface_types & {InterfaceType.ENA, InterfaceType.EFA})


@dataclass(frozen=True)
class NetworkCardGroup:
    """Network cards that share one bandwidth limit (a GPU's direct path, or one physical NIC)."""

    cards: tuple[int, ...]
    """``NetworkCardIndex`` values of the group."""
    bandwidth_gbps: float
    """What the cards of the group can carry together."""

    def __post_init__(self) -> None:
        cards = _sequence("cards", self.cards)
        object.__setattr__(self, "cards", tuple(_fact(f"cards[{i}]", c, minimum=0) for i, c in enumerate(cards)))
        _fact("bandwidth_gbps", self.bandwidth_gbps, minimum=None, integer=False)


@dataclass(frozen=True)
class InstanceStoreSpec:
    """``InstanceStorageInfo``: local NVMe disks."""

    disk_count: int
    disk_size_gb: int

    def __post_init__(self) -> None:
        _fact("instance_store.disk_count", self.disk_count, minimum=1)
        _fact("instance_store.disk_size_gb", self.disk_size_gb, minimum=1)

    @property
    def total_gb(self) -> int:
        """``InstanceStorageInfo.TotalSizeInGB``."""
        return self.disk_count * self.disk_size_gb


@dataclass(frozen=True)
class InstanceSpec:
    """Everything fmconstructs needs to know about one GPU instance type."""

    instance_type: str
    gpu: GpuSpec
    vcpus: int
    """``VCpuInfo.DefaultVCpus``."""
    memory_mib: int
    """``MemoryInfo.SizeInMiB``."""
    architecture: CpuArchitecture
    network_cards: tuple[NetworkCardSpec, ...]
    max_network_interfaces: int
    """``NetworkInfo.MaximumNetworkInterfaces``."""
    maximum_efa_interfaces: int
    """``NetworkInfo.EfaInfo.MaximumEfaInterfaces``."""
    network_performance_gbps: int
    """``NetworkInfo.NetworkPerformance`` (aggregate, EFA + IP)."""
    efa_bandwidth_gbps: int
    """Maximum EFA bandwidth per instance, from the EC2 EFA documentation (not in the API)."""
    instance_store: InstanceStoreSpec | None
    eks_ami_type: EksAmiType
    efa_network_cards: tuple[int, ...] | None = None
    """Cards that the EFA documentation recommends for EFA on this type; None means every EFA-capable card."""
    ultraserver_types: tuple[str, ...] = ()
    """UltraServer groupings this type is sold in (see :data:`ULTRASERVERS`)."""
    fsx_lustre_efa_interfaces: int | None = None
    """How many EFA interfaces an FSx for Lustre client of this type uses for LNet by default (FSx for Lustre User
    Guide "Configuring EFA clients"); None: the FSx guide gives no default for this type (LNet over TCP unless the
    caller names a count)."""
    gpu_card_groups: tuple[NetworkCardGroup, ...] = ()
    """For each GPU, the cards it sends EFA traffic over directly and the EFA bandwidth that GPU supports (EC2 User
    Guide efa-acc-inst-types). Empty where the guide does not publish the GPU-to-card mapping: the layout then fills
    cards in index order, as the guide's generic rule ("the next unused network card index") does."""
    nic_card_groups: tuple[NetworkCardGroup, ...] = ()
    """Cards that share one physical NIC, and that NIC's bandwidth (EC2 User Guide efa-acc-inst-types). Empty where
    the guide publishes no sharing."""

    def __post_init__(self) -> None:
        _check_types(self)
        _check_spec(self)

    @property
    def family(self) -> str:
        """``p5``, ``p6-b200`` ...: the part before the dot."""
        return self.instance_type.split(".", 1)[0]

    @property
    def hyperpod_instance_type(self) -> str:
        """The SageMaker HyperPod name of this type (``ml.`` prefix)."""
        return f"ml.{self.instance_type}"

    @property
    def memory_gib(self) -> int:
        return self.memory_mib // 1024

    @property
    def network_card_count(self) -> int:
        """``NetworkInfo.MaximumNetworkCards``."""
        return len(self.network_cards)

    @property
    def efa_capable_cards(self) -> tuple[NetworkCardSpec, ...]:
        """The cards that take an EFA, in index order."""
        return tuple(card for card in self.network_cards if card.supports_efa)

    @property
    def recommended_efa_cards(self) -> tuple[int, ...]:
        """The cards the EFA documentation recommends for EFA: :attr:`efa_network_cards`, else every EFA card."""
        if self.efa_network_cards is not None:
            return tuple(sorted(self.efa_network_cards))
        return tuple(card.index for card in self.efa_capable_cards)

    @property
    def gpu_efa_cards(self) -> tuple[int, ...]:
        """Every card some GPU reaches directly (p6e-gb200: 1, 3, ..., 15); empty where the mapping is unpublished."""
        return tuple(sorted({i for group in self.gpu_card_groups for i in group.cards}))

    @property
    def gpu_performance(self) -> GpuPerformance | None:
        """Peak dense FLOPS per precision and HBM of this type's GPU model (:mod:`fmconstructs._gpu_performance`,
        each figure with its source); None for a registered type whose GPU model the library has no figures for."""
        from ._gpu_performance import GPU_PERFORMANCE

        return GPU_PERFORMANCE.get(self.gpu.model)

    @property
    def efa_generation(self) -> int | None:
        """The EFA generation of this type (2, 3, 4); None when the library has no sourced figure for it."""
        from ._gpu_performance import EFA_GENERATION

        return EFA_GENERATION.get(self.instance_type)

    def card_efa_bandwidth_gbps(self, index: int) -> float:
        """EFA bandwidth card ``index`` supports on its own: the card's documented figure; else the instance's EFA
        maximum over the number of recommended EFA cards; 0 for a card that takes no EFA."""
        card = self.card(index)
        if not card.supports_efa:
            return 0.0
        if card.efa_bandwidth_gbps is not None:
            return card.efa_bandwidth_gbps
        return self.efa_bandwidth_gbps / (len(self.recommended_efa_cards) or len(self.efa_capable_cards))

    def card(self, index: int) -> NetworkCardSpec:
        """The card with ``NetworkCardIndex == index``."""
        for card in self.network_cards:
            if card.index == index:
                return card
        raise FmValidationError(
            "network_card_index",
            index,
            f"a card index of {self.instance_type} (0-{self.network_card_count - 1})",
        )


@dataclass(frozen=True)
class UltraServerSpec:
    """An EC2 UltraServer: instances sold together on one Capacity Block, sharing one NVLink domain."""

    name: str
    instance_type: str
    instance_count: int

    def __post_init__(self) -> None:
        _text("name", self.name)
        _text("instance_type", self.instance_type, _INSTANCE_TYPE, _INSTANCE_TYPE_TEXT)
        _fact("instance_count", self.instance_count, minimum=1)

    @property
    def gpu_count(self) -> int:
        return get_instance_spec(self.instance_type).gpu.count * self.instance_count


# EC2 instance type names: family, a dot, size (EC2 API InstanceType values such as "p5.48xlarge",
# "p6e-gb200.36xlarge", "u-6tb1.metal"); checked as a whole string.
_INSTANCE_TYPE = re.compile(r"[a-z0-9][a-z0-9-]*\.[a-z0-9-]+")
_INSTANCE_TYPE_TEXT = "an EC2 instance type name such as 'p5.48xlarge'"


def _fact(parameter: str, value: object, *, minimum: int | None = 0, integer: bool = True) -> Any:
    """A catalog number: finite, of the right type, known at synth time (never a token). ``minimum=None`` checks the
    type only (the consistency rules in :func:`_check_spec` check the value)."""
    checked = check_number(parameter, value, minimum=minimum, integer=integer)
    if is_token(checked):
        raise FmValidationError(parameter, value, "a number known at synth time (catalog facts cannot be tokens)")
    return checked


def _text(parameter: str, value: object, pattern: re.Pattern[str] | None = None, allowed: str = "a string") -> str:
    checked = check_str(parameter, value, pattern=pattern, allowed=allowed, min_length=1)
    if is_token(checked):
        raise FmValidationError(parameter, value, f"{allowed} known at synth time (catalog facts cannot be tokens)")
    return str(checked)


def _sequence(parameter: str, value: object) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        raise FmTypeError(parameter, value, f"a tuple (got a {type(value).__name__})")
    return tuple(value)


def _check_types(spec: InstanceSpec) -> None:
    """Every field's type, before the consistency rules (a wrong type never surfaces as an AttributeError)."""
    _text("instance_type", spec.instance_type, _INSTANCE_TYPE, _INSTANCE_TYPE_TEXT)
    if not isinstance(spec.gpu, GpuSpec):
        raise FmTypeError("gpu", spec.gpu, "a GpuSpec")
    _fact("vcpus", spec.vcpus, minimum=1)
    _fact("memory_mib", spec.memory_mib, minimum=1)
    check_enum("architecture", spec.architecture, CpuArchitecture)
    cards = _sequence("network_cards", spec.network_cards)
    for index, card in enumerate(cards):
        if not isinstance(card, NetworkCardSpec):
            raise FmTypeError(f"network_cards[{index}]", card, "a NetworkCardSpec")
    object.__setattr__(spec, "network_cards", cards)
    _fact("max_network_interfaces", spec.max_network_interfaces, minimum=1)
    _fact("maximum_efa_interfaces", spec.maximum_efa_interfaces, minimum=0)
    _fact("network_performance_gbps", spec.network_performance_gbps, minimum=0)
    _fact("efa_bandwidth_gbps", spec.efa_bandwidth_gbps, minimum=0)
    if spec.instance_store is not None and not isinstance(spec.instance_store, InstanceStoreSpec):
        raise FmTypeError("instance_store", spec.instance_store, "an InstanceStoreSpec or None")
    check_enum("eks_ami_type", spec.eks_ami_type, EksAmiType)
    if spec.efa_network_cards is not None:
        chosen = _sequence("efa_network_cards", spec.efa_network_cards)
        object.__setattr__(
            spec,
            "efa_network_cards",
            tuple(_fact(f"efa_network_cards[{i}]", c, minimum=0) for i, c in enumerate(chosen)),
        )
    ultraservers = check_str_sequence("ultraserver_types", spec.ultraserver_types)
    object.__setattr__(spec, "ultraserver_types", ultraservers)
    if spec.fsx_lustre_efa_interfaces is not None:
        _fact("fsx_lustre_efa_interfaces", spec.fsx_lustre_efa_interfaces, minimum=0)
    for name in ("gpu_card_groups", "nic_card_groups"):
        groups = _sequence(name, getattr(spec, name))
        for index, group in enumerate(groups):
            if not isinstance(group, NetworkCardGroup):
                raise FmTypeError(f"{name}[{index}]", group, "a NetworkCardGroup")
        object.__setattr__(spec, name, groups)


def _check_spec(spec: InstanceSpec) -> None:
    """Reject an internally inconsistent record (used for built-ins and user registrations alike)."""
    indices = [card.index for card in spec.network_cards]
    if not indices or sorted(indices) != list(range(len(indices))):
        raise FmValidationError("network_cards", indices, "indices 0..N-1, each once")
    if spec.maximum_efa_interfaces > len(spec.efa_capable_cards):
        raise FmValidationError(
            "maximum_efa_interfaces",
            spec.maximum_efa_interfaces,
            f"at most the number of EFA-capable cards ({len(spec.efa_capable_cards)})",
        )
    if spec.efa_network_cards is not None:
        capable = {card.index for card in spec.efa_capable_cards}
        bad = [i for i in spec.efa_network_cards if i not in capable]
        if bad:
            raise FmValidationError("efa_network_cards", bad, f"EFA-capable card indices {sorted(capable)}")
    if spec.gpu.count < 1 or spec.vcpus < 1 or spec.memory_mib < 1:
        raise FmValidationError("gpu.count/vcpus/memory_mib", spec, "positive numbers")
    _check_card_groups(spec)


def _check_card_groups(spec: InstanceSpec) -> None:
    capable = {card.index for card in spec.efa_capable_cards}
    if spec.gpu_card_groups and len(spec.gpu_card_groups) != spec.gpu.count:
        raise FmValidationError(
            "gpu_card_groups", len(spec.gpu_card_groups), f"one group per GPU ({spec.gpu.count}), or empty"
        )
    for name, groups in (("gpu_card_groups", spec.gpu_card_groups), ("nic_card_groups", spec.nic_card_groups)):
        seen: list[int] = [i for group in groups for i in group.cards]
        if len(seen) != len(set(seen)) or any(not group.cards for group in groups):
            raise FmValidationError(name, seen, "non-empty groups, each card in at most one group")
        if any(group.bandwidth_gbps <= 0 for group in groups):
            raise FmValidationError(name, [g.bandwidth_gbps for g in groups], "positive bandwidths")
        bad = sorted(i for i in seen if i not in capable)
        if bad:
            raise FmValidationError(name, bad, f"EFA-capable card indices {sorted(capable)}")
    recommended = set(spec.recommended_efa_cards)
    uncovered = [list(g.cards) for g in spec.gpu_card_groups if not recommended & set(g.cards)]
    if uncovered:
        raise FmValidationError(
            "efa_network_cards",
            spec.efa_network_cards,
            f"at least one card of every GPU's group (none of {uncovered})",
        )
    for card in spec.network_cards:
        if card.efa_bandwidth_gbps is not None and card.efa_bandwidth_gbps <= 0:
            raise FmValidationError(
                f"network_cards[{card.index}].efa_bandwidth_gbps", card.efa_bandwidth_gbps, "positive, or None"
            )


def _uniform_cards(
    count: int,
    *,
    max_interfaces: int,
    gbps: float,
    efa_gbps: float,
    types: Iterable[InterfaceType] = tuple(InterfaceType),
) -> tuple[NetworkCardSpec, ...]:
    kinds = frozenset(types)
    return tuple(NetworkCardSpec(i, kinds, max_interfaces, gbps, efa_bandwidth_gbps=efa_gbps) for i in range(count))


_ALL = frozenset(InterfaceType)
_P5_STORE = InstanceStoreSpec(disk_count=8, disk_size_gb=3800)  # InstanceStorageInfo.Disks: 8 x 3800 GB

# --- Records ---------------------------------------------------------------------------------------------------
# Sources: DescribeInstanceTypes (as bundled by moto 5.2.x, checked by tests/catalog/test_catalog.py) unless a comment
# says
# otherwise; EFA bandwidth from the EC2 User Guide "Maximize network bandwidth ... with multiple network cards"
# (efa-acc-inst-types).

_BUILTIN: tuple[InstanceSpec, ...] = (
    InstanceSpec(
        instance_type="p5.48xlarge",
        gpu=GpuSpec("H100", 8, 81920),
        vcpus=192,
        memory_mib=2097152,
        architecture=CpuArchitecture.X86_64,
        # efa-acc-inst-types: 32 cards, 3,200 Gbps in total; the guide gives no per-card EFA figure, so 100 Gbps per
        # card is 3,200 / 32 (= BaselineBandwidthInGbps). No GPU-to-card mapping is published for P5 (UNCONFIRMED).
        network_cards=_uniform_cards(32, max_interfaces=2, gbps=100.0, efa_gbps=100.0),
        max_network_interfaces=64,
        maximum_efa_interfaces=32,
        network_performance_gbps=3200,
        efa_bandwidth_gbps=3200,  # efa-acc-inst-types: 3200 Gbps EFA, of which up to 800 Gbps usable for IP
        instance_store=_P5_STORE,
        eks_ami_type=EksAmiType.AL2023_X86_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=8,
    ),
    InstanceSpec(
        instance_type="p5e.48xlarge",
        gpu=GpuSpec("H200", 8, 144384),
        vcpus=192,
        memory_mib=2097152,
        architecture=CpuArchitecture.X86_64,
        # As p5.48xlarge (efa-acc-inst-types names p5e.48xlarge beside p5.48xlarge): 3,200 / 32 = 100 Gbps per card.
        network_cards=_uniform_cards(32, max_interfaces=2, gbps=100.0, efa_gbps=100.0),
        max_network_interfaces=64,
        maximum_efa_interfaces=32,
        network_performance_gbps=3200,
        efa_bandwidth_gbps=3200,  # efa-acc-inst-types ("EFA configuration for P5 and P5e instances")
        instance_store=_P5_STORE,
        eks_ami_type=EksAmiType.AL2023_X86_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=8,
    ),
    InstanceSpec(
        instance_type="p5en.48xlarge",
        gpu=GpuSpec("H200", 8, 144384),
        vcpus=192,
        memory_mib=2097152,
        architecture=CpuArchitecture.X86_64,
        # efa-acc-inst-types has no p5en section: 200 Gbps EFA per card is NetworkPerformance 3200 / 16 cards
        # (= BaselineBandwidthInGbps), and no GPU-to-card mapping is published (UNCONFIRMED).
        network_cards=_uniform_cards(16, max_interfaces=4, gbps=200.0, efa_gbps=200.0),
        max_network_interfaces=64,
        maximum_efa_interfaces=16,
        network_performance_gbps=3200,
        # UNCONFIRMED in efa-acc-inst-types (it has no p5en section): NetworkPerformance "3200 Gigabit".
        efa_bandwidth_gbps=3200,
        instance_store=_P5_STORE,
        eks_ami_type=EksAmiType.AL2023_X86_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=8,
    ),
    InstanceSpec(
        instance_type="p6-b200.48xlarge",
        gpu=GpuSpec("B200", 8, 183359),
        vcpus=192,
        memory_mib=2097152,
        architecture=CpuArchitecture.X86_64,
        # efa-acc-inst-types (P6-B200): "8 GPUs and 8 network cards, where each network card supports up to 400 Gbps
        # EFA bandwidth and 200 Gbps ENA bandwidth"; which GPU uses which card is not published (UNCONFIRMED).
        network_cards=_uniform_cards(8, max_interfaces=4, gbps=200.0, efa_gbps=400.0),
        max_network_interfaces=32,
        maximum_efa_interfaces=8,
        network_performance_gbps=3200,
        efa_bandwidth_gbps=3200,  # efa-acc-inst-types: 8 cards x 400 Gbps EFA (ENA up to 1600 Gbps)
        instance_store=_P5_STORE,
        eks_ami_type=EksAmiType.AL2023_X86_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=8,
    ),
    InstanceSpec(
        instance_type="p6-b300.48xlarge",
        gpu=GpuSpec("B300", 8, 275040),
        vcpus=192,
        memory_mib=4194304,
        architecture=CpuArchitecture.X86_64,
        # Card 0 accepts only an ENA interface (InterfaceTypes ["interface"], 350 Gbps); cards 1-16 take EFA.
        # efa-acc-inst-types (P6-B300): "secondary network cards support up to 400 Gbps EFA"; the GPU-to-card
        # mapping is only drawn in an image there, not in the text (UNCONFIRMED, not modelled).
        network_cards=(
            NetworkCardSpec(0, frozenset({InterfaceType.ENA}), 4, 350.0),
            *(NetworkCardSpec(i, _ALL, 4, 400.0, efa_bandwidth_gbps=400.0) for i in range(1, 17)),
        ),
        max_network_interfaces=68,
        maximum_efa_interfaces=16,
        network_performance_gbps=6400,
        efa_bandwidth_gbps=6400,  # efa-acc-inst-types: 16 x 400 Gbps EFA on cards 1-16
        instance_store=_P5_STORE,
        eks_ami_type=EksAmiType.AL2023_X86_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=16,
    ),
    # p6e-gb200.36xlarge is absent from moto; every number below cites the AWS docs.
    InstanceSpec(
        instance_type="p6e-gb200.36xlarge",
        # EC2 P6e page: 4 Blackwell GPUs (two GB200 superchips, Grace arm64 CPUs), 740 GB GPU memory per instance.
        # AWS's "GB" there matches moto's MiB/1024 for p6-b200 (1432 GB = 8 x 183359 MiB): 185 GiB per GPU.
        gpu=GpuSpec("GB200", 4, 189440),
        vcpus=144,  # EC2 P6e page: 144 vCPUs
        memory_mib=983040,  # EC2 P6e page: 960 GiB
        architecture=CpuArchitecture.ARM64,
        # efa-acc-inst-types (P6e-GB200 section): up to 17 cards. Card 0 is ENA only (<= 100 Gbps). Odd cards
        # 1,3,...,15 are EFA-only (400 Gbps); even cards 2..16 take ENA or EFA up to 200 Gbps; cards [1,2], [3,4] ...
        # share one physical 400 Gbps NIC. ParallelCluster 3.16+ (queues_stack.add_network_interfaces) attaches
        # efa-only to every card 1-16, so even cards accept efa-only too. Per-card interface limits are not
        # published: 2 (UNCONFIRMED).
        network_cards=(
            NetworkCardSpec(0, frozenset({InterfaceType.ENA}), 2, 100.0),
            *(
                NetworkCardSpec(i, frozenset({InterfaceType.EFA_ONLY}), 2, 400.0, efa_bandwidth_gbps=400.0)
                if i % 2
                else NetworkCardSpec(i, _ALL, 2, 200.0, efa_bandwidth_gbps=200.0)
                for i in range(1, 17)
            ),
        ),
        max_network_interfaces=34,  # 17 cards x 2 (UNCONFIRMED, see above)
        # ParallelCluster (aws-parallelcluster#6930, and 3.16+ with efa-only on every card) attaches an EFA to each
        # of cards 1-16, so EC2 accepts 16 EFA interfaces (MaximumEfaInterfaces < MaximumNetworkCards there).
        maximum_efa_interfaces=16,
        network_performance_gbps=3200,  # karpenter-provider-aws zz_generated.bandwidth.go
        # efa-acc-inst-types (#efa-for-p6e): "to achieve maximum EFA performance, we recommend that you do one of
        # the following to achieve a total of 1,600 Gbps EFA bandwidth": an EFA-only interface on one NCI of each
        # GPU's group (its example: NCI 1, 5, 9 and 13, 4 x 400 Gbps; the default here), or on each NCI of each
        # group (cards 1, 3, ..., 15, 8 x 200 Gbps: EfaCardSelection.EVERY_GPU_CARD, from gpu_card_groups).
        efa_bandwidth_gbps=1600,
        efa_network_cards=(1, 5, 9, 13),
        # efa-acc-inst-types (#efa-for-p6e): "Each underlying GPU on the host can send traffic directly over the
        # following pairs of NCIs: [1 and 3] [5 and 7] [9 and 11] [13 and 15]. Each GPU supports up to 400 Gbps of
        # EFA bandwidth."
        gpu_card_groups=tuple(NetworkCardGroup((c, c + 2), 400.0) for c in (1, 5, 9, 13)),
        # efa-acc-inst-types (#efa-for-p6e): "The NCIs in the following groups share an underlying physical NIC on
        # the host: [1 and 2] ... [15 and 16]. Each physical NIC supports up 400 Gbps of bandwidth."
        nic_card_groups=tuple(NetworkCardGroup((c, c + 1), 400.0) for c in range(1, 17, 2)),
        instance_store=InstanceStoreSpec(disk_count=3, disk_size_gb=7500),  # EKS UltraServer guide: 3 x 7.5 TB
        eks_ami_type=EksAmiType.AL2023_ARM_64_NVIDIA,
        # FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients): default EFA interfaces for LNet.
        fsx_lustre_efa_interfaces=8,
        ultraserver_types=("u-p6e-gb200x36", "u-p6e-gb200x72"),
    ),
)

ULTRASERVERS: Mapping[str, UltraServerSpec] = {
    # capacity-blocks-launch / EC2 UltraServers: 36 GPUs = 9 instances, 72 GPUs (one NVLink domain) = 18 instances.
    "u-p6e-gb200x36": UltraServerSpec("u-p6e-gb200x36", "p6e-gb200.36xlarge", 9),
    "u-p6e-gb200x72": UltraServerSpec("u-p6e-gb200x72", "p6e-gb200.36xlarge", 18),
}


@dataclass
class InstanceCatalog:
    """A registry of :class:`InstanceSpec` records keyed by instance type."""

    _specs: dict[str, InstanceSpec] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def register(self, spec: InstanceSpec, *, replace: bool = False) -> InstanceSpec:
        """Add ``spec``; refuses to overwrite an existing type unless ``replace`` is true."""
        if not isinstance(spec, InstanceSpec):
            raise FmTypeError("spec", spec, "an InstanceSpec")
        check_bool("replace", replace)
        with self._lock:
            if spec.instance_type in self._specs and not replace:
                raise FmValidationError(
                    "instance_type",
                    spec.instance_type,
                    "a type not yet in the catalog (pass replace=True to override)",
                )
            self._specs[spec.instance_type] = spec
        return spec

    def unregister(self, instance_type: str) -> None:
        with self._lock:
            self._specs.pop(instance_type, None)

    def get(self, instance_type: str) -> InstanceSpec:
        """The record for ``instance_type``; an unknown type raises an error listing the supported ones."""
        check_str("instance_type", instance_type)
        try:
            return self._specs[instance_type]
        except KeyError:
            raise FmValidationError(
                "instance_type",
                instance_type,
                "one of the catalog's types (" + ", ".join(self.instance_types) + ") or a type added with "
                "fmconstructs.register_instance_type()",
            ) from None

    @property
    def instance_types(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def __iter__(self) -> Iterator[InstanceSpec]:
        return iter(tuple(self._specs.values()))

    def __contains__(self, instance_type: object) -> bool:
        return instance_type in self._specs

    def __len__(self) -> int:
        return len(self._specs)


CATALOG = InstanceCatalog()
for _spec in _BUILTIN:
    CATALOG.register(_spec)

BUILTIN_INSTANCE_TYPES: tuple[str, ...] = tuple(spec.instance_type for spec in _BUILTIN)


def get_instance_spec(instance_type: str) -> InstanceSpec:
    """Look up ``instance_type`` in the default catalog."""
    return CATALOG.get(instance_type)


def gpu_performance(instance_type: str) -> GpuPerformance:
    """Peak dense FLOPS per precision and HBM of one GPU of ``instance_type`` (a catalog type); refuses a type whose
    GPU model has no sourced figures."""
    spec = get_instance_spec(instance_type)
    performance = spec.gpu_performance
    if performance is None:
        raise FmValidationError(
            "instance_type",
            instance_type,
            "a type whose GPU model has sourced performance figures (H100, H200, B200, B300, GB200)",
        )
    return performance


def nccl_allreduce_reference(
    instance_type: str, *, nodes: int, message_bytes: int | None = None
) -> NcclAllReduceReference | None:
    """The published nccl-tests all-reduce bus bandwidth of ``nodes`` x ``instance_type`` at ``message_bytes``
    (default: the figure's own size, 16 GiB), each with its source (:mod:`fmconstructs._nccl_reference`); None where
    none is published. A reference for a floor, never a pass/fail gate (NVIDIA/aicr#1256)."""
    from ._nccl_reference import NCCL_ALLREDUCE_REFERENCES

    for reference in NCCL_ALLREDUCE_REFERENCES:
        if (reference.instance_type, reference.nodes) == (instance_type, nodes) and message_bytes in (
            None,
            reference.message_bytes,
        ):
            return reference
    return None


def register_instance_type(spec: InstanceSpec, *, replace: bool = False) -> InstanceSpec:
    """Teach fmconstructs another instance type (e.g. a newer GPU family) before it ships a record.

    Build the record from ``aws ec2 describe-instance-types --instance-types TYPE`` (field names are on each
    attribute of :class:`InstanceSpec`) and register it once, before constructing stacks::

        register_instance_type(InstanceSpec(instance_type="p5.4xlarge", ...))

    The record is checked for consistency (card indices, EFA limits) when it is created.
    """
    return CATALOG.register(spec, replace=replace)


def get_ultraserver(name: str) -> UltraServerSpec:
    """Look up an UltraServer grouping (``u-p6e-gb200x36`` or ``u-p6e-gb200x72``)."""
    check_str("ultraserver_type", name)
    try:
        return ULTRASERVERS[name]
    except KeyError:
        raise FmValidationError("ultraserver_type", name, "one of " + ", ".join(ULTRASERVERS)) from None


def instance_table_markdown(catalog: InstanceCatalog = CATALOG) -> str:
    """The README's supported-instance table, generated from the catalog (a test keeps the README in sync)."""
    rows = [
        "| Instance type | GPUs | vCPUs / memory | Arch | Network cards | Max EFA | EFA Gbps | NVMe | EKS AMI type |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for spec in catalog:
        store = spec.instance_store
        nvme = f"{store.disk_count} x {store.disk_size_gb:,} GB" if store else "none"
        gpu_gib = spec.gpu.memory_mib_per_gpu // 1024
        rows.append(
            f"| `{spec.instance_type}` | {spec.gpu.count}x {spec.gpu.model} {gpu_gib} GiB | {spec.vcpus} / "
            f"{spec.memory_gib:,} GiB | {spec.architecture.value} | {spec.network_card_count} | "
            f"{spec.maximum_efa_interfaces} | {spec.efa_bandwidth_gbps:,} | {nvme} | `{spec.eks_ami_type.value}` |"
        )
    return "\n".join(rows)


# --- EC2 instance types outside the catalog ------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type name botocore knows: the ``InstanceType`` enum of the EC2 service model that ships
    with botocore (read offline; ``botocore.session.get_session().get_service_model("ec2")``)."""
    import botocore.session

    shape = botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType")
    enum: list[str] = shape.enum  # type: ignore[attr-defined]  # a StringShape (botocore-stubs types it as Shape)
    return frozenset(enum)


def is_known_instance_type(instance_type: str) -> bool:
    """Whether ``instance_type`` is in the catalog or in botocore's EC2 ``InstanceType`` enum (exact spelling)."""
    return instance_type in CATALOG or instance_type in ec2_instance_types()


def check_instance_type(parameter: str, value: object) -> Any:
    """An EC2 instance type: a catalog type, a name in botocore's EC2 ``InstanceType`` enum (exact case, no
    whitespace: EC2 refuses ``P5.48xlarge``), or a string token (checked by EC2 at deploy time)."""
    text = check_str(parameter, value, allowed=_INSTANCE_TYPE_TEXT)
    if is_token(text) or is_known_instance_type(text):
        return text
    close = difflib.get_close_matches(text.strip().lower(), sorted(ec2_instance_types()), n=3, cutoff=0.8)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise FmValidationError(
        parameter,
        value,
        "an EC2 instance type spelled exactly as EC2 lists it (botocore's EC2 InstanceType values, e.g. "
        f"'m7i.xlarge'), or a type added with fmconstructs.register_instance_type(){hint}",
    )


def efa_max_interfaces(instance_type: object) -> int | None:
    """How many EFA interfaces ``instance_type`` takes: the catalog's ``maximum_efa_interfaces``, else EC2
    ``DescribeInstanceTypes`` data (:mod:`fmconstructs._efa_instance_types`); 0 for a type without EFA; None when
    unknown (a deploy-time value, or a type newer than the data)."""
    if not isinstance(instance_type, str) or is_token(instance_type):
        return None
    if instance_type in CATALOG:
        return CATALOG.get(instance_type).maximum_efa_interfaces
    from ._efa_instance_types import EFA_MAXIMUM_INTERFACES, WITHOUT_EFA

    if instance_type in EFA_MAXIMUM_INTERFACES:
        return EFA_MAXIMUM_INTERFACES[instance_type]
    return 0 if instance_type in WITHOUT_EFA else None


def supports_efa(instance_type: object) -> bool | None:
    """Whether ``instance_type`` takes an EFA (see :func:`efa_max_interfaces`); None when unknown."""
    maximum = efa_max_interfaces(instance_type)
    return None if maximum is None else maximum > 0
