"""FSx for Lustre sizing: the capacity and throughput rules, and a helper that sizes a file system for a goal.

Pure Python (no CDK), so the rules are shared by :class:`~fmconstructs.storage.LustreFileSystem` validation and by
planning code.

The math
--------
FSx for Lustre SSD file systems deliver an *aggregate* disk throughput proportional to their storage capacity::

    aggregate_throughput_mbps = storage_capacity_tib * throughput_mbps_per_tib

FSx counts capacity in steps of 1,200 GiB that it calls 1.2 TiB (the valid sizes are "1.2 TiB, 2.4 TiB, then
increments of 2.4 TiB" in the FSx documentation and 1200, 2400, 4800... GiB in the API), so the capacity in TiB used
by this formula is ``storage_capacity_gib / 1000``: 1,200 GiB at 125 MB/s/TiB is 150 MB/s, 4,800 GiB at 1000 MB/s/TiB
is 4.8 GB/s. Throughput is in decimal units: 1 GB/s = 1,000 MB/s = 10^9 bytes/s.

Sizing for a throughput target ``T`` GB/s at a per-unit throughput ``u`` MB/s/TiB needs at least
``T * 1000 / u * 1000`` GiB; the helper rounds that (and any ``min_capacity_gib`` for the data itself) up to the next
capacity the deployment type accepts (1200, 2400, then multiples of 2400; EFA-enabled file systems: multiples of
38,400 / 19,200 / 9,600 / 4,800 GiB at 125 / 250 / 500 / 1000 MB/s/TiB).

Sizing for a checkpoint objective (``checkpoint_bytes`` written by the whole job within ``seconds``) is the same with
``T = checkpoint_bytes / seconds / 10^9``. This assumes all ranks write in parallel and the file system's baseline disk
throughput is the bottleneck; it ignores burst credits, client network limits and LZ4 compression gains (all of which
make real writes equal or faster), so the result is conservative.

Scratch file systems have a fixed baseline of 200 MB/s/TiB (bursts are not counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ..errors import FmValidationError, one_of


class LustreDeploymentType(str, Enum):
    """FSx for Lustre deployment types (CloudFormation ``LustreConfiguration.DeploymentType``)."""

    SCRATCH_1 = "SCRATCH_1"
    SCRATCH_2 = "SCRATCH_2"
    PERSISTENT_1 = "PERSISTENT_1"
    PERSISTENT_2 = "PERSISTENT_2"

    @property
    def is_persistent(self) -> bool:
        return self in (LustreDeploymentType.PERSISTENT_1, LustreDeploymentType.PERSISTENT_2)


#: Per-unit storage throughput (MB/s/TiB) that each persistent SSD deployment type accepts.
THROUGHPUT_MBPS_PER_TIB: dict[LustreDeploymentType, tuple[int, ...]] = {
    LustreDeploymentType.PERSISTENT_1: (50, 100, 200),
    LustreDeploymentType.PERSISTENT_2: (125, 250, 500, 1000),
}

#: Baseline throughput of scratch file systems (MB/s/TiB); not settable.
SCRATCH_BASELINE_MBPS_PER_TIB = 200

#: EFA-enabled file systems: storage capacity must be a multiple of this many GiB for each per-unit throughput.
EFA_CAPACITY_MULTIPLE_GIB: dict[int, int] = {125: 38_400, 250: 19_200, 500: 9_600, 1000: 4_800}

#: Storage capacity steps (GiB): the first valid sizes, then multiples of the increment.
_FIRST_CAPACITIES_GIB = (1200, 2400)
_CAPACITY_INCREMENT_GIB: dict[LustreDeploymentType, int] = {
    LustreDeploymentType.SCRATCH_1: 3600,
    LustreDeploymentType.SCRATCH_2: 2400,
    LustreDeploymentType.PERSISTENT_1: 2400,
    LustreDeploymentType.PERSISTENT_2: 2400,
}


def per_unit_throughput_mbps_per_tib(
    deployment_type: LustreDeploymentType, throughput_mbps_per_tib: int | None
) -> int | None:
    """The effective per-unit throughput: the given value for persistent types, the scratch baseline otherwise."""
    if deployment_type.is_persistent:
        return throughput_mbps_per_tib
    return SCRATCH_BASELINE_MBPS_PER_TIB


def aggregate_throughput_mbps(storage_capacity_gib: int, throughput_mbps_per_tib: int) -> float:
    """Aggregate baseline disk throughput in MB/s (FSx counts 1,000 GiB as "1 TiB" here; see the module docstring)."""
    return storage_capacity_gib / 1000 * throughput_mbps_per_tib


def capacity_rule(
    deployment_type: LustreDeploymentType, throughput_mbps_per_tib: int | None = None, *, efa_enabled: bool = False
) -> str:
    """The allowed storage capacities, as the text of an error message."""
    if efa_enabled and throughput_mbps_per_tib in EFA_CAPACITY_MULTIPLE_GIB:
        multiple = EFA_CAPACITY_MULTIPLE_GIB[throughput_mbps_per_tib]
        return (
            f"a multiple of {multiple} for an EFA-enabled {deployment_type.value} file system at "
            f"{throughput_mbps_per_tib} MB/s/TiB"
        )
    first, second = _FIRST_CAPACITIES_GIB
    return f"{first}, {second} or a multiple of {_CAPACITY_INCREMENT_GIB[deployment_type]} for {deployment_type.value}"


def is_valid_capacity(
    storage_capacity_gib: int,
    deployment_type: LustreDeploymentType,
    throughput_mbps_per_tib: int | None = None,
    *,
    efa_enabled: bool = False,
) -> bool:
    """Whether FSx accepts ``storage_capacity_gib`` for this deployment type (and EFA multiple, when EFA-enabled)."""
    if storage_capacity_gib <= 0:
        return False
    if efa_enabled and throughput_mbps_per_tib in EFA_CAPACITY_MULTIPLE_GIB:
        return storage_capacity_gib % EFA_CAPACITY_MULTIPLE_GIB[throughput_mbps_per_tib] == 0
    if storage_capacity_gib in _FIRST_CAPACITIES_GIB:
        return True
    return storage_capacity_gib % _CAPACITY_INCREMENT_GIB[deployment_type] == 0


def next_valid_capacity_gib(
    min_capacity_gib: float,
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
    throughput_mbps_per_tib: int | None = None,
    *,
    efa_enabled: bool = False,
) -> int:
    """The smallest valid capacity that is at least ``min_capacity_gib``."""
    wanted = max(min_capacity_gib, 1)
    if efa_enabled:
        if throughput_mbps_per_tib not in EFA_CAPACITY_MULTIPLE_GIB:
            raise FmValidationError(
                "throughput_mbps_per_tib", throughput_mbps_per_tib, one_of(EFA_CAPACITY_MULTIPLE_GIB)
            )
        multiple = EFA_CAPACITY_MULTIPLE_GIB[throughput_mbps_per_tib]
        return math.ceil(wanted / multiple) * multiple
    for first in _FIRST_CAPACITIES_GIB:
        if wanted <= first:
            return first
    increment = _CAPACITY_INCREMENT_GIB[deployment_type]
    return math.ceil(wanted / increment) * increment


@dataclass(frozen=True)
class LustreSizing:
    """A sizing decision: what to pass to :class:`~fmconstructs.storage.LustreFileSystem` and what it delivers."""

    deployment_type: LustreDeploymentType
    storage_capacity_gib: int
    throughput_mbps_per_tib: int
    efa_enabled: bool = False

    @property
    def aggregate_throughput_mbps(self) -> float:
        """Aggregate baseline throughput (MB/s)."""
        return aggregate_throughput_mbps(self.storage_capacity_gib, self.throughput_mbps_per_tib)

    @property
    def aggregate_throughput_gbps(self) -> float:
        """Aggregate baseline throughput (GB/s)."""
        return self.aggregate_throughput_mbps / 1000

    def seconds_to_write(self, num_bytes: float) -> float:
        """Seconds to write ``num_bytes`` at the aggregate baseline throughput."""
        return num_bytes / (self.aggregate_throughput_mbps * 1e6)


def size_for_throughput(
    target_gbps: float,
    *,
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
    throughput_mbps_per_tib: int | None = None,
    efa_enabled: bool = False,
    min_capacity_gib: int = 0,
) -> LustreSizing:
    """The smallest file system whose aggregate throughput is at least ``target_gbps`` GB/s.

    ``throughput_mbps_per_tib`` (default: the highest tier of the deployment type, i.e. 1000 for PERSISTENT_2, which
    gives the smallest file system; scratch types use their 200 MB/s/TiB baseline) pins the per-unit tier.
    ``min_capacity_gib`` (default 0) is the room the data needs; the result holds at least that much.
    """
    if not isinstance(deployment_type, LustreDeploymentType):
        raise FmValidationError("deployment_type", deployment_type, one_of(LustreDeploymentType))
    if not target_gbps > 0 or math.isinf(target_gbps):
        raise FmValidationError("target_gbps", target_gbps, "a positive, finite number of GB/s")
    if min_capacity_gib < 0:
        raise FmValidationError("min_capacity_gib", min_capacity_gib, "0 or more")
    if deployment_type.is_persistent:
        tiers = THROUGHPUT_MBPS_PER_TIB[deployment_type]
        unit = tiers[-1] if throughput_mbps_per_tib is None else throughput_mbps_per_tib
        if unit not in tiers:
            raise FmValidationError("throughput_mbps_per_tib", unit, f"{one_of(tiers)} for {deployment_type.value}")
    else:
        if throughput_mbps_per_tib is not None:
            raise FmValidationError(
                "throughput_mbps_per_tib", throughput_mbps_per_tib, f"None for {deployment_type.value}"
            )
        unit = SCRATCH_BASELINE_MBPS_PER_TIB
    if efa_enabled and deployment_type is not LustreDeploymentType.PERSISTENT_2:
        raise FmValidationError("efa_enabled", efa_enabled, "False unless deployment_type is PERSISTENT_2")
    # capacity_gib / 1000 * unit >= target_gbps * 1000  <=>  capacity_gib >= target_gbps * 10^6 / unit
    # Rounded to a micro-GiB so that float noise (2.4 GB/s -> 2400.0000000001 GiB) does not add a whole step.
    needed_gib = max(round(target_gbps * 1_000_000 / unit, 6), min_capacity_gib)
    capacity = next_valid_capacity_gib(needed_gib, deployment_type, unit, efa_enabled=efa_enabled)
    return LustreSizing(deployment_type, capacity, unit, efa_enabled)


def size_for_checkpoint(
    checkpoint_bytes: float,
    seconds: float,
    *,
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
    throughput_mbps_per_tib: int | None = None,
    efa_enabled: bool = False,
    min_capacity_gib: int = 0,
) -> LustreSizing:
    """The smallest file system that absorbs a ``checkpoint_bytes`` checkpoint within ``seconds``.

    The target is ``checkpoint_bytes / seconds`` bytes/s (see the module docstring for the assumptions); the other
    arguments are those of :func:`size_for_throughput`.
    """
    if not checkpoint_bytes > 0 or math.isinf(checkpoint_bytes):
        raise FmValidationError("checkpoint_bytes", checkpoint_bytes, "a positive, finite number of bytes")
    if not seconds > 0 or math.isinf(seconds):
        raise FmValidationError("seconds", seconds, "a positive, finite number of seconds")
    return size_for_throughput(
        checkpoint_bytes / seconds / 1e9,
        deployment_type=deployment_type,
        throughput_mbps_per_tib=throughput_mbps_per_tib,
        efa_enabled=efa_enabled,
        min_capacity_gib=min_capacity_gib,
    )
