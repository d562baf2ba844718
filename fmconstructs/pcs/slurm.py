"""Slurm facts for AWS PCS: versions, controller sizes, accounting, purchase options and custom settings.

Everything here is a closed set taken from a cited source, so that a typo fails at synth time rather than as a
CloudFormation rollback:

- Slurm versions PCS accepts for new clusters: 24.11, 25.05, 25.11, 26.05 (botocore 1.44.8 PCS model,
  ``SchedulerRequest.version``: "Valid Values: 24.11 | 25.05 | 25.11 | 26.05"; the CloudFormation schema of
  ``AWS::PCS::Cluster`` leaves ``Scheduler.Version`` a free string).
- Controller sizes SMALL | MEDIUM | LARGE and accounting modes STANDARD | NONE (CloudFormation registry schema of
  ``AWS::PCS::Cluster``, as bundled by cfn-lint), and what each size holds (:data:`CONTROLLER_SIZE_LIMITS`, PCS API
  reference ``CreateCluster.size``).
- Purchase options ONDEMAND | SPOT | CAPACITY_BLOCK | INTERRUPTIBLE_CAPACITY_RESERVATION (schema of
  ``AWS::PCS::ComputeNodeGroup`` as bundled by cfn-lint; botocore 1.44.8 PCS ``PurchaseOption``; the last for an
  :class:`~fmconstructs.capacity.InterruptibleCapacityReservation`, PCS User Guide capacity-reservations-iodcr).
- Custom Slurm setting names per level: PCS API reference ``SlurmCustomSetting`` (clusters: Prolog, Epilog,
  SelectTypeParameters, AccountingStorageEnforce; compute node groups: Weight, RealMemory), the PCS User Guide
  "Custom Slurm settings for AWS PCS clusters" (slurm-custom-settings-cluster: PrologFlags) and "... queues"
  (slurm-custom-settings-queue: AllowAccounts, AllowQos, Default, DefaultTime, DenyAccounts, DenyQos, Exclusive,
  ExclusiveUser, OverSubscribe). PCS accepts more names over time; a name missing here can still be set with an
  escape hatch (``node.default_child.add_property_override``) until it is added.

This module imports no aws_cdk (``fmc`` reads the controller-size table without Node.js).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from ..errors import FmTypeError, FmValidationError, is_token, one_of


class SlurmVersion(str, Enum):
    """Slurm versions an AWS PCS cluster can be created with (botocore PCS ``SchedulerRequest.version``)."""

    V24_11 = "24.11"
    V25_05 = "25.05"
    V25_11 = "25.11"
    V26_05 = "26.05"

    @property
    def as_tuple(self) -> tuple[int, int]:
        major, minor = self.value.split(".")
        return int(major), int(minor)

    def at_least(self, other: SlurmVersion) -> bool:
        """Whether this version is ``other`` or newer."""
        if not isinstance(other, SlurmVersion):
            raise FmTypeError("other", other, "a SlurmVersion")
        return self.as_tuple >= other.as_tuple


#: The default for new clusters: 25.11, a pinned choice rather than "the newest", because
#:
#: - the cluster's ``Scheduler.Version`` must match the Slurm major version baked into every node AMI (PCS User Guide
#:   "Using custom AMIs"; AMIs carry ``/opt/aws/pcs/scheduler/slurm-XX.YY``). A default that followed each new PCS
#:   version would, on a library upgrade, update every deployed cluster that left the prop unset in place while its
#:   AMIs still carry the old Slurm;
#: - 25.11 is the newest version for which this library's sources show PCS sample AMIs and installers
#:   (``aws-pcs-sample_ami-*-slurm-25.11``); 26.05 AMIs and installers were not seen (UNCONFIRMED);
#: - it passes every version gate here: IMEX on UltraServers needs 25.05+, per-node-group idle time 25.11+.
#:
#: Choose :attr:`SlurmVersion.V26_05` explicitly once the AMIs carry it.
DEFAULT_SLURM_VERSION = SlurmVersion.V25_11
#: NVIDIA IMEX on UltraServers needs Slurm 25.05 or later (PCS User Guide "Configure UltraServer instances").
MIN_SLURM_VERSION_FOR_IMEX = SlurmVersion.V25_05
#: A per-node-group ``ScaleDownIdleTimeInSeconds`` needs Slurm 25.11 or later (PCS API
#: ``ComputeNodeGroupSlurmConfiguration``).
MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME = SlurmVersion.V25_11
#: Slurm 26.05 deprecates the partition setting ``ExclusiveUser`` in favour of ``Exclusive``; PCS still accepts it
#: (PCS User Guide slurm-custom-settings-queue).
SLURM_VERSION_DEPRECATING_EXCLUSIVE_USER = SlurmVersion.V26_05


class ControllerSize(str, Enum):
    """``AWS::PCS::Cluster.Size``: how many nodes and jobs the managed Slurm controller is sized for
    (:data:`CONTROLLER_SIZE_LIMITS`). Changing it replaces the cluster (see :class:`~fmconstructs.pcs.PcsCluster`)."""

    SMALL = "SMALL"
    MEDIUM = "MEDIUM"
    LARGE = "LARGE"

    @property
    def max_nodes(self) -> int:
        """The most compute nodes (instances of all the cluster's node groups, login nodes included) it holds."""
        return CONTROLLER_SIZE_LIMITS[self].max_nodes

    @property
    def max_jobs(self) -> int:
        """The most jobs (active and queued) it holds."""
        return CONTROLLER_SIZE_LIMITS[self].max_jobs

    @classmethod
    def smallest_for(cls, nodes: int) -> ControllerSize | None:
        """The smallest size that holds ``nodes`` compute nodes, or None when even LARGE does not."""
        return next((size for size in cls if nodes <= size.max_nodes), None)


@dataclass(frozen=True)
class ControllerLimits:
    """What one controller size holds."""

    max_nodes: int
    max_jobs: int


#: What each controller size holds: PCS API reference ``CreateCluster.size`` ("the maximum number of compute nodes in
#: the cluster and the maximum number of jobs (active and queued)": SMALL 32 compute nodes and 256 jobs, MEDIUM 512
#: and 8192, LARGE 2048 and 16,384; the same text in botocore's PCS model and aws-cdk-lib ``CfnClusterProps.size``).
#: Login nodes count: PCS runs them as a compute node group (PCS User Guide getting-started_create-cng: "a compute
#: node group to provide login nodes"), so their instances are compute nodes of the cluster.
CONTROLLER_SIZE_LIMITS: Mapping[ControllerSize, ControllerLimits] = {
    ControllerSize.SMALL: ControllerLimits(max_nodes=32, max_jobs=256),
    ControllerSize.MEDIUM: ControllerLimits(max_nodes=512, max_jobs=8192),
    ControllerSize.LARGE: ControllerLimits(max_nodes=2048, max_jobs=16384),
}


class AccountingMode(str, Enum):
    """``SlurmConfiguration.Accounting.Mode``: STANDARD turns Slurm accounting (slurmdbd) on."""

    STANDARD = "STANDARD"
    NONE = "NONE"


class PurchaseOption(str, Enum):
    """``AWS::PCS::ComputeNodeGroup.PurchaseOption`` values that map to a :mod:`fmconstructs.capacity` choice."""

    ONDEMAND = "ONDEMAND"
    SPOT = "SPOT"
    CAPACITY_BLOCK = "CAPACITY_BLOCK"
    INTERRUPTIBLE_CAPACITY_RESERVATION = "INTERRUPTIBLE_CAPACITY_RESERVATION"


class ClusterSetting(str, Enum):
    """Cluster-level ``SlurmCustomSettings`` names PCS accepts (PCS API reference ``SlurmCustomSetting``)."""

    PROLOG = "Prolog"
    EPILOG = "Epilog"
    SELECT_TYPE_PARAMETERS = "SelectTypeParameters"
    ACCOUNTING_STORAGE_ENFORCE = "AccountingStorageEnforce"
    """Needs accounting mode STANDARD; PCS supports a subset of the Slurm options (PCS "Slurm accounting")."""
    PROLOG_FLAGS = "PrologFlags"
    """Comma-separated :data:`PROLOG_FLAG_NAMES` (slurm.conf(5)); listed by the PCS User Guide
    slurm-custom-settings-cluster. ``enable_imex`` adds ``Alloc,NoHold`` (PCS User Guide
    capacity-blocks-nvidia-imex)."""


class NodeGroupSetting(str, Enum):
    """Compute-node-group ``SlurmCustomSettings`` names PCS accepts (PCS API reference ``SlurmCustomSetting``)."""

    WEIGHT = "Weight"
    REAL_MEMORY = "RealMemory"
    """MiB of memory Slurm may schedule per node; at most the instance's memory (checked against the catalog)."""


class QueueSetting(str, Enum):
    """Queue-level (Slurm partition) ``SlurmCustomSettings`` names (PCS User Guide, queue custom settings)."""

    ALLOW_ACCOUNTS = "AllowAccounts"
    ALLOW_QOS = "AllowQos"
    DEFAULT = "Default"
    DEFAULT_TIME = "DefaultTime"
    DENY_ACCOUNTS = "DenyAccounts"
    DENY_QOS = "DenyQos"
    EXCLUSIVE = "Exclusive"
    """NO, NODE, USER or TOPO (Slurm 26.05 partition ``Exclusive``; PCS: it replaces ``ExclusiveUser`` and
    ``OverSubscribe=EXCLUSIVE``)."""
    EXCLUSIVE_USER = "ExclusiveUser"
    OVER_SUBSCRIBE = "OverSubscribe"
    """EXCLUSIVE, NO, YES[:count] or FORCE[:count] (slurm.conf(5) partition ``OverSubscribe``). UltraServer queues get
    ``EXCLUSIVE`` unless told otherwise (:class:`~fmconstructs.pcs.PcsQueue`)."""


_SettingName = TypeVar("_SettingName", ClusterSetting, NodeGroupSetting, QueueSetting)

#: slurm.conf(5) ``PrologFlags`` values (canonical spelling; Slurm compares them case-insensitively).
PROLOG_FLAG_NAMES = ("Alloc", "Contain", "DeferBatch", "ForceRequeueOnFail", "NoHold", "RunInJob", "Serial", "X11")
#: slurm.conf(5): ``NoHold`` "cannot be combined with the Contain or X11 flags"; ``RunInJob`` implies ``Contain``.
_FLAGS_EXCLUDED_BY_NOHOLD = ("Contain", "RunInJob", "X11")
#: Partition ``Exclusive`` values (Slurm 26.05: NO, NODE, USER or TOPO).
EXCLUSIVE_VALUES = ("NO", "NODE", "USER", "TOPO")
#: Queue settings that make every job of a partition own its nodes: what IMEX needs (a job's prolog restarts
#: nvidia-imex on its nodes, PCS User Guide capacity-blocks-nvidia-imex).
EXCLUSIVE_QUEUE_SETTINGS: dict[QueueSetting, tuple[str, ...]] = {
    QueueSetting.OVER_SUBSCRIBE: ("EXCLUSIVE",),
    QueueSetting.EXCLUSIVE: ("NODE", "TOPO"),
}
# Whole-string patterns (re.fullmatch): a trailing newline never passes.
_OVER_SUBSCRIBE = re.compile(r"EXCLUSIVE|NO|(YES|FORCE)(:\d+)?", re.IGNORECASE)

_VALUE = re.compile(r"[^\r\n]{1,1024}")
_ABSOLUTE_PATHS = re.compile(r"/[A-Za-z0-9._/*-]+(,/[A-Za-z0-9._/*-]+)*")
_UNSIGNED = re.compile(r"\d+")
_YES_NO = ("YES", "NO")
_MAX_SLURM_WEIGHT = 4_294_967_280  # slurm.conf "Weight": 0 .. 2^32 - 16 (values above are reserved)


def check_settings(
    parameter: str,
    settings: Mapping[_SettingName, str] | None,
    allowed: type[_SettingName],
) -> dict[_SettingName, str]:
    """Check setting names against ``allowed`` and values for shape; return a copy (empty for None).

    Names must be members of the level's enum (a plain string, even a correct one, is rejected so the level is
    explicit); values must be one non-empty line. Tokens are passed through unchecked.
    """
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise FmTypeError(
            parameter, settings, f"a mapping of {allowed.__name__} to str (got a {type(settings).__name__})"
        )
    out: dict[_SettingName, str] = {}
    for name, value in settings.items():
        if not isinstance(name, allowed):
            raise FmTypeError(f"{parameter} name", name, f"a {allowed.__name__} ({one_of(allowed)})")
        if not isinstance(value, str):
            raise FmTypeError(f"{parameter}[{name.value}]", value, f"a str (got a {type(value).__name__})")
        if not is_token(value) and not _VALUE.fullmatch(value):
            raise FmValidationError(
                f"{parameter}[{name.value}]", value, "one non-empty line of at most 1024 characters"
            )
        _check_value(parameter, name, value)
        out[name] = value
    return out


def _check_value(parameter: str, name: ClusterSetting | NodeGroupSetting | QueueSetting, value: str) -> None:
    """Value rules that are certain from slurm.conf(5)."""
    if is_token(value):
        return
    label = f"{parameter}[{name.value}]"
    if name in (ClusterSetting.PROLOG, ClusterSetting.EPILOG) and not _ABSOLUTE_PATHS.fullmatch(value):
        raise FmValidationError(label, value, "absolute paths of programs on the nodes, comma-separated")
    if name is NodeGroupSetting.WEIGHT and not (_UNSIGNED.fullmatch(value) and int(value) <= _MAX_SLURM_WEIGHT):
        raise FmValidationError(label, value, f"an integer from 0 to {_MAX_SLURM_WEIGHT}")
    if name is NodeGroupSetting.REAL_MEMORY and not (_UNSIGNED.fullmatch(value) and int(value) >= 1):
        raise FmValidationError(label, value, "a positive integer number of MiB")
    if name in (QueueSetting.DEFAULT, QueueSetting.EXCLUSIVE_USER) and value.upper() not in _YES_NO:
        raise FmValidationError(label, value, "YES or NO")
    if name is QueueSetting.EXCLUSIVE and value.upper() not in EXCLUSIVE_VALUES:
        raise FmValidationError(label, value, one_of(EXCLUSIVE_VALUES))
    if name is QueueSetting.OVER_SUBSCRIBE and not _OVER_SUBSCRIBE.fullmatch(value):
        raise FmValidationError(label, value, "EXCLUSIVE, NO, YES[:count] or FORCE[:count]")
    if name is ClusterSetting.PROLOG_FLAGS:
        parse_prolog_flags(value, parameter=label)


def parse_prolog_flags(value: str, *, parameter: str = "PrologFlags") -> list[str]:
    """``PrologFlags`` as canonical flag names, in the given order; unknown, repeated or incompatible flags raise."""
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"a str of comma-separated PrologFlags (got a {type(value).__name__})")
    canonical = {flag.lower(): flag for flag in PROLOG_FLAG_NAMES}
    flags: list[str] = []
    for raw in value.split(","):
        flag = canonical.get(raw.strip().lower())
        if flag is None:
            raise FmValidationError(parameter, value, f"comma-separated PrologFlags, each {one_of(PROLOG_FLAG_NAMES)}")
        if flag in flags:
            raise FmValidationError(parameter, value, f"PrologFlags without repeats ({flag} twice)")
        flags.append(flag)
    if "NoHold" in flags:
        clash = [flag for flag in flags if flag in _FLAGS_EXCLUDED_BY_NOHOLD]
        if clash:
            raise FmValidationError(
                parameter, value, f"PrologFlags without {', '.join(clash)} when NoHold is set (slurm.conf(5))"
            )
    return flags


def merge_prolog_flags(required: Sequence[str], given: str | None, *, parameter: str) -> str:
    """``required`` flags first, then the given ones not already there (canonical spelling, comma-separated)."""
    flags = list(required)
    if given is not None and is_token(given):
        raise FmValidationError(parameter, given, "a literal value (fmconstructs adds flags to it)")
    if given is not None:
        flags += [flag for flag in parse_prolog_flags(given, parameter=parameter) if flag not in flags]
    return ",".join(parse_prolog_flags(",".join(flags), parameter=parameter))


def to_cfn_settings(settings: Mapping[_SettingName, str]) -> list[dict[str, str]]:
    """Render settings as CloudFormation ``SlurmCustomSettings`` items, sorted by name (stable templates)."""
    return [
        {"ParameterName": name.value, "ParameterValue": value}
        for name, value in sorted(settings.items(), key=lambda item: item[0].value)
    ]


def coerce_slurm_version(version: object, *, parameter: str = "slurm_version") -> SlurmVersion:
    """A :class:`SlurmVersion`; anything else raises :class:`~fmconstructs.errors.FmTypeError` listing the members.
    Its value as a plain string (``"25.11"``) was deprecated in 0.2.0 and is refused from 0.3.0 (the error names the
    member to pass)."""
    if isinstance(version, SlurmVersion):
        return version
    members = ", ".join(f"SlurmVersion.{m.name}" for m in SlurmVersion)
    if isinstance(version, str) and not is_token(version) and version in {m.value for m in SlurmVersion}:
        member = SlurmVersion(version)
        raise FmTypeError(
            parameter,
            version,
            f"SlurmVersion.{member.name}, not the plain string (refused since fmconstructs 0.3.0)",
        )
    raise FmTypeError(parameter, version, f"a SlurmVersion ({members}: the versions PCS accepts)")
