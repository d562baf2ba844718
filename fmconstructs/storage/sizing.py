"""FSx for Lustre sizing: the capacity and throughput rules, and a helper that sizes a file system for a goal.

Pure Python (no CDK), so the rules are shared by :class:`~fmconstructs.storage.LustreFileSystem` validation, its
saturation alarms and planning code.

Units (one vocabulary, issue 10): ``_mbps`` = megabytes per second (FSx's MB/s, 10^6 bytes/s), ``_gbytes_per_s`` =
gigabytes per second (10^9 bytes/s); ``_gbps`` would be gigabits and is not used here. Capacities are GiB (2^30 bytes)
and ``throughput_mbps_per_tib`` is FSx's ``PerUnitStorageThroughput`` in MB/s per TiB (2^40 bytes).

The math
--------
FSx for Lustre SSD file systems deliver an *aggregate* baseline disk throughput proportional to their storage
capacity::

    aggregate_throughput_mbps = storage_capacity_gib / 1024 * throughput_mbps_per_tib

The capacity in TiB is ``GiB / 1024`` (1 TiB = 1,024 GiB): 4,800 GiB at 1,000 MB/s/TiB is 4,687.5 MB/s, and 1,200 GiB
at 125 MB/s/TiB is 146.5 MB/s (FSx for Lustre User Guide, managing-throughput-capacity and increase-storage-capacity;
FSx API ``LustreFileSystemConfiguration.PerUnitStorageThroughput``: "MB/s/TiB"; aws-facts section 10).
:func:`aggregate_throughput_mbps` is the one implementation (the saturation alarms use it too).

Sizing for a throughput target ``T`` GB/s at a per-unit throughput ``u`` MB/s/TiB needs at least
``T * 1000 * 1024 / u`` GiB; the helper rounds that (and any ``min_capacity_gib`` for the data itself) up to the next
capacity the deployment type accepts (1200, 2400, then multiples of 2400; SCRATCH_1: multiples of 3600 after 2400;
EFA-enabled file systems: multiples of 38,400 / 19,200 / 9,600 / 4,800 GiB at 125 / 250 / 500 / 1000 MB/s/TiB).

Sizing for a checkpoint objective (``checkpoint_bytes`` written by the whole job within ``seconds``) is the same with
``T = checkpoint_bytes / seconds / 10^9``. This assumes all ranks write in parallel and the file system's baseline disk
throughput is the bottleneck; it ignores burst credits, client network limits and LZ4 compression gains (all of which
make real writes equal or faster), so the result is conservative.

Scratch file systems have a fixed baseline of 200 MB/s/TiB (bursts are not counted).

Never shrink a deployed file system
-----------------------------------
FSx for Lustre can increase a file system's storage capacity but never decrease it (FSx for Lustre User Guide,
managing-storage-capacity: "You can only increase the amount of storage capacity"): a lower ``StorageCapacity`` in
the template fails the update (or, with a create-only change beside it, replaces the file system by an empty one).
A lower objective (a smaller target, a longer checkpoint window, a higher per-unit tier) or a rule change in a new
fmconstructs release can give a smaller size for a file system that is already deployed. Pin it: pass
``min_capacity_gib=<the deployed capacity>`` (the ``StorageCapacity`` FSx reports), so the result is never below it;
raise it when you grow the file system. The sizing rules changed once: fmconstructs 0.2.0 counts a TiB as 1,024 GiB
(0.1 releases: 1,000), so the same target can need one more step (4.8 GB/s at 1,000 MB/s/TiB: 4,800 GiB in 0.1,
9,600 GiB from 0.2.0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .._plan_metadata import LUSTRE_EFA_METADATA_KEY as LUSTRE_EFA_METADATA_KEY  # defined below storage (floor 0)
from .._validate import NOT_GIVEN, RemovedAttribute, check_bool, check_enum, check_number, removed_keywords
from ..errors import FmValidationError, is_token, one_of


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

#: FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients), Step 4 "EFA interfaces": "Each FSx for
#: Lustre file system has a maximum limit of 1024 EFA connections across all client instances", and "Each configured
#: EFA interface on a client instance counts as one connection". Here (pure Python) so that the ``fmc`` command reads it
#: without aws_cdk; :mod:`fmconstructs.storage.lustre` re-exports it.
MAX_EFA_CONNECTIONS = 1024

#: Storage capacity steps (GiB): the first valid sizes, then multiples of the increment.
_FIRST_CAPACITIES_GIB = (1200, 2400)
_CAPACITY_INCREMENT_GIB: dict[LustreDeploymentType, int] = {
    LustreDeploymentType.SCRATCH_1: 3600,
    LustreDeploymentType.SCRATCH_2: 2400,
    LustreDeploymentType.PERSISTENT_1: 2400,
    LustreDeploymentType.PERSISTENT_2: 2400,
}


#: GiB in a TiB: FSx's per-unit throughput is per TiB (2^40 bytes) and capacities are GiB (2^30 bytes).
GIB_PER_TIB = 1024

#: The largest ``StorageCapacity`` the FSx API accepts (botocore fsx 2018-03-01 service-2.json, shape StorageCapacity:
#: an integer, max 2147483647 GiB; CreateFileSystem's documentation gives no lower Lustre maximum, only the steps). A
#: sizing objective that needs more cannot be met by one file system.
MAX_STORAGE_CAPACITY_GIB = 2_147_483_647

#: Default Service Quotas for FSx for Lustre storage capacity, GiB per account and Region across file systems of the
#: type, adjustable: "Lustre Persistent_2 storage capacity" (L-8F1B9C74) and "Lustre Scratch storage capacity"
#: (L-AD2FC696), 100,800 each. Seen in a Service Quotas listing (not the FSx User Guide's quotas page: UNCONFIRMED
#: there); the SageMaker API's FSxLustreConfig.SizeInGiB maximum is the same 100,800. PERSISTENT_1: not seen, unchecked.
DEFAULT_STORAGE_CAPACITY_QUOTA_GIB: dict[LustreDeploymentType, int] = {
    LustreDeploymentType.PERSISTENT_2: 100_800,
    LustreDeploymentType.SCRATCH_1: 100_800,
    LustreDeploymentType.SCRATCH_2: 100_800,
}


def quota_note(storage_capacity_gib: int, deployment_type: LustreDeploymentType) -> str | None:
    """A sentence when ``storage_capacity_gib`` is above the default storage quota of the type (None otherwise)."""
    quota = DEFAULT_STORAGE_CAPACITY_QUOTA_GIB.get(deployment_type)
    if quota is None or is_token(storage_capacity_gib) or storage_capacity_gib <= quota:
        return None
    return (
        f"{storage_capacity_gib:,} GiB is above the default {deployment_type.value} storage capacity quota of "
        f"{quota:,} GiB per account and Region (Service Quotas, Amazon FSx, 'Lustre "
        f"{'Persistent_2' if deployment_type is LustreDeploymentType.PERSISTENT_2 else 'Scratch'} storage capacity'): "
        "request an increase before deploying, or the file system creation fails"
    )


def _check_known_number(parameter: str, value: object, **bounds: Any) -> Any:
    """A finite number known at synthesis (sizing is synthesis-time arithmetic: a deploy-time value cannot be sized)."""
    checked = check_number(parameter, value, **bounds)
    if is_token(checked):
        raise FmValidationError(
            parameter, value, "a number known at synthesis (sizing runs at synthesis; pass a literal number)"
        )
    return checked


def _check_unit(throughput_mbps_per_tib: object) -> Any:
    return _check_known_number(
        "throughput_mbps_per_tib", throughput_mbps_per_tib, minimum=0, exclusive_minimum=True, unit="MB/s/TiB"
    )


def per_unit_throughput_mbps_per_tib(
    deployment_type: LustreDeploymentType, throughput_mbps_per_tib: int | None
) -> int | None:
    """The effective per-unit throughput: the given value for persistent types, the scratch baseline otherwise."""
    deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
    if deployment_type.is_persistent:
        return throughput_mbps_per_tib
    return SCRATCH_BASELINE_MBPS_PER_TIB


def aggregate_throughput_mbps(storage_capacity_gib: float, throughput_mbps_per_tib: float) -> float:
    """Aggregate baseline disk throughput in MB/s: capacity in TiB (GiB / 1024) x per-unit throughput (MB/s/TiB).

    4,800 GiB at 1,000 MB/s/TiB = 4,687.5 MB/s (see the module docstring for the sources).
    """
    capacity = _check_known_number("storage_capacity_gib", storage_capacity_gib, minimum=0, unit="GiB")
    unit = _check_unit(throughput_mbps_per_tib)
    return float(capacity) / GIB_PER_TIB * float(unit)


def capacity_rule(
    deployment_type: LustreDeploymentType,
    throughput_mbps_per_tib: int | None = None,
    *,
    efa_enabled: bool = False,
    near: float | None = None,
) -> str:
    """The allowed storage capacities, as the text of an error message; with ``near`` (the refused capacity), also
    the nearest valid capacities below and above it."""
    deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
    firsts: tuple[int, ...] = ()
    if efa_enabled and throughput_mbps_per_tib in EFA_CAPACITY_MULTIPLE_GIB:
        step = EFA_CAPACITY_MULTIPLE_GIB[throughput_mbps_per_tib]
        text = (
            f"a multiple of {step} for an EFA-enabled {deployment_type.value} file system at "
            f"{throughput_mbps_per_tib} MB/s/TiB"
        )
    else:
        firsts, step = _FIRST_CAPACITIES_GIB, _CAPACITY_INCREMENT_GIB[deployment_type]
        text = f"{firsts[0]}, {firsts[1]} or a multiple of {step} for {deployment_type.value}"
    if near is None or not math.isfinite(near) or near <= 0:
        return text
    above = next_valid_capacity_gib(near, deployment_type, throughput_mbps_per_tib, efa_enabled=efa_enabled)
    below = [c for c in (*firsts, (math.ceil(near) - 1) // step * step) if 0 < c < near]
    nearest = [*([max(below)] if below else []), above]
    return f"{text} (nearest: {' or '.join(f'{c:,}' for c in nearest)} GiB)"


def is_valid_capacity(
    storage_capacity_gib: int,
    deployment_type: LustreDeploymentType,
    throughput_mbps_per_tib: int | None = None,
    *,
    efa_enabled: bool = False,
) -> bool:
    """Whether FSx accepts ``storage_capacity_gib`` for this deployment type (and EFA multiple, when EFA-enabled)."""
    capacity: float = _check_known_number("storage_capacity_gib", storage_capacity_gib, unit="GiB")
    deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
    efa_enabled = check_bool("efa_enabled", efa_enabled)
    if capacity <= 0 or (isinstance(capacity, float) and not capacity.is_integer()):
        return False
    if efa_enabled and throughput_mbps_per_tib in EFA_CAPACITY_MULTIPLE_GIB:
        return capacity % EFA_CAPACITY_MULTIPLE_GIB[throughput_mbps_per_tib] == 0
    if capacity in _FIRST_CAPACITIES_GIB:
        return True
    return capacity % _CAPACITY_INCREMENT_GIB[deployment_type] == 0


def next_valid_capacity_gib(
    min_capacity_gib: float,
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
    throughput_mbps_per_tib: int | None = None,
    *,
    efa_enabled: bool = False,
) -> int:
    """The smallest valid capacity that is at least ``min_capacity_gib``."""
    wanted: float = max(_check_known_number("min_capacity_gib", min_capacity_gib, unit="GiB"), 1)
    deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
    if check_bool("efa_enabled", efa_enabled):
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

    def __post_init__(self) -> None:
        check_enum("deployment_type", self.deployment_type, LustreDeploymentType)
        _check_known_number("storage_capacity_gib", self.storage_capacity_gib, minimum=1, integer=True, unit="GiB")
        _check_known_number(
            "throughput_mbps_per_tib",
            self.throughput_mbps_per_tib,
            minimum=0,
            exclusive_minimum=True,
            integer=True,
            unit="MB/s/TiB",
        )
        check_bool("efa_enabled", self.efa_enabled)

    @property
    def aggregate_throughput_mbps(self) -> float:
        """Aggregate baseline throughput (MB/s): :func:`aggregate_throughput_mbps`."""
        return aggregate_throughput_mbps(self.storage_capacity_gib, self.throughput_mbps_per_tib)

    @property
    def aggregate_throughput_gbytes_per_s(self) -> float:
        """Aggregate baseline throughput (GB/s, 10^9 bytes per second)."""
        return self.aggregate_throughput_mbps / 1000

    aggregate_throughput_gbps = RemovedAttribute("aggregate_throughput_gbytes_per_s (the value was in GB/s)")

    def seconds_to_write(self, num_bytes: float) -> float:
        """Seconds to write ``num_bytes`` at the aggregate baseline throughput."""
        size = _check_known_number("num_bytes", num_bytes, minimum=0, unit="bytes")
        return float(size) / (self.aggregate_throughput_mbps * 1e6)


@removed_keywords("size_for_throughput", target_gbps="target_gbytes_per_s")
def size_for_throughput(
    target_gbytes_per_s: float = NOT_GIVEN,
    *,
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
    throughput_mbps_per_tib: int | None = None,
    efa_enabled: bool = False,
    min_capacity_gib: int = 0,
) -> LustreSizing:
    """The smallest file system whose aggregate baseline throughput is at least ``target_gbytes_per_s`` GB/s.

    ``throughput_mbps_per_tib`` (default: the highest tier of the deployment type, i.e. 1000 for PERSISTENT_2, which
    gives the smallest file system; scratch types use their 200 MB/s/TiB baseline) pins the per-unit tier.
    ``min_capacity_gib`` (default 0) is the room the data needs; the result holds at least that much. For a file
    system that is already deployed, pass its deployed capacity (or more): FSx cannot shrink a file system, so a
    lower objective must never give a smaller size (see "Never shrink a deployed file system" above).
    ``target_gbps`` was its name until 0.3.0 (it was GB/s, not gigabits).
    """
    if target_gbytes_per_s is NOT_GIVEN or target_gbytes_per_s is None:
        raise FmValidationError("target_gbytes_per_s", None, "given (a positive number of GB/s)")
    target = _check_known_number(
        "target_gbytes_per_s", target_gbytes_per_s, minimum=0, exclusive_minimum=True, unit="GB/s"
    )
    return _size_for_target(
        float(target),
        ("target_gbytes_per_s", target),
        deployment_type=deployment_type,
        throughput_mbps_per_tib=throughput_mbps_per_tib,
        efa_enabled=efa_enabled,
        min_capacity_gib=min_capacity_gib,
    )


def _size_for_target(
    target: float,
    objective: tuple[str, object],
    *,
    deployment_type: LustreDeploymentType,
    throughput_mbps_per_tib: int | None,
    efa_enabled: bool,
    min_capacity_gib: int,
) -> LustreSizing:
    """:func:`size_for_throughput` for ``target`` GB/s; ``objective`` (parameter, value) names what the caller gave."""
    deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
    efa_enabled = check_bool("efa_enabled", efa_enabled)
    min_capacity = _check_known_number("min_capacity_gib", min_capacity_gib, minimum=0, unit="GiB")
    if deployment_type.is_persistent:
        tiers = THROUGHPUT_MBPS_PER_TIB[deployment_type]
        unit = tiers[-1] if throughput_mbps_per_tib is None else _check_unit(throughput_mbps_per_tib)
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
    # capacity_gib / 1024 * unit >= target * 1000  <=>  capacity_gib >= target * 1000 * 1024 / unit.
    # Rounded to a micro-GiB so that float noise (x.0000000001 GiB) does not add a whole step.
    needed_gib = max(round(target * 1000 * GIB_PER_TIB / unit, 6), float(min_capacity))
    capacity = next_valid_capacity_gib(needed_gib, deployment_type, unit, efa_enabled=efa_enabled)
    if capacity > MAX_STORAGE_CAPACITY_GIB:
        parameter, value = objective if needed_gib > min_capacity else ("min_capacity_gib", min_capacity)
        raise FmValidationError(
            parameter,
            value,
            f"an objective one file system can meet: it needs {capacity:,} GiB at {unit} MB/s/TiB, above the "
            f"{MAX_STORAGE_CAPACITY_GIB:,} GiB the FSx API accepts (CreateFileSystem StorageCapacity); split the "
            "data over several file systems",
        )
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
    arguments are those of :func:`size_for_throughput`: pass ``min_capacity_gib=<the deployed capacity>`` once the
    file system is deployed, so that a smaller checkpoint or a longer window never shrinks it.
    """
    size = _check_known_number("checkpoint_bytes", checkpoint_bytes, minimum=0, exclusive_minimum=True, unit="bytes")
    duration = _check_known_number("seconds", seconds, minimum=0, exclusive_minimum=True, unit="seconds")
    return _size_for_target(
        float(size) / float(duration) / 1e9,
        ("checkpoint_bytes/seconds", f"{size:,} bytes in {duration:,} s"),
        deployment_type=deployment_type,
        throughput_mbps_per_tib=throughput_mbps_per_tib,
        efa_enabled=efa_enabled,
        min_capacity_gib=min_capacity_gib,
    )
