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
- Custom Slurm setting names per level, as the PCS User Guide lists them (:data:`CLUSTER_SETTINGS`,
  :data:`NODE_GROUP_SETTINGS`, :data:`QUEUE_SETTINGS`: pages "Custom Slurm settings for AWS PCS clusters", "... compute
  node groups", "... queues"). A name on a level's list is passed through as given (its value one line); the names
  the library uses or checks have an enum member (:class:`ClusterSetting`, :class:`NodeGroupSetting`,
  :class:`QueueSetting`) and typed value checks. A name not on the list is refused, naming the list. PCS accepts more
  names over time; one missing here can still be set with an escape hatch (``node.default_child.add_property_override``)
  until it is added.

This module imports no aws_cdk (``fmc`` reads the controller-size table without Node.js).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

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
#: PCS instance health checks need Slurm 26.05 or later (botocore 1.44.8 PCS model,
#: ``CreateComputeNodeGroupRequest.instanceHealthChecks``: "Instance health checks require Slurm version 26.05 or
#: later").
MIN_SLURM_VERSION_FOR_INSTANCE_HEALTH_CHECKS = SlurmVersion.V26_05
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
    """The cluster-level ``SlurmCustomSettings`` names the library sets or checks (all of them on
    :data:`CLUSTER_SETTINGS`; any other name of that list may be given as a plain string)."""

    PROLOG = "Prolog"
    EPILOG = "Epilog"
    SELECT_TYPE_PARAMETERS = "SelectTypeParameters"
    ACCOUNTING_STORAGE_ENFORCE = "AccountingStorageEnforce"
    """Needs accounting mode STANDARD; PCS supports a subset of the Slurm options (PCS "Slurm accounting")."""
    PROLOG_FLAGS = "PrologFlags"
    """Comma-separated :data:`PROLOG_FLAG_NAMES` (slurm.conf(5)); listed by the PCS User Guide
    slurm-custom-settings-cluster. ``enable_imex`` adds ``Alloc,NoHold`` (PCS User Guide
    capacity-blocks-nvidia-imex)."""
    SCHEDULER_PARAMETERS = "SchedulerParameters"
    """Comma-separated slurm.conf(5) options. A cluster whose ``Prolog`` the library sets gets
    :data:`NOHOLD_ON_PROLOG_FAIL` added (your options kept)."""
    HEALTH_CHECK_PROGRAM = "HealthCheckProgram"
    """An absolute path; with ``node_health`` idle checks the library's between-jobs check."""
    HEALTH_CHECK_INTERVAL = "HealthCheckInterval"
    """Seconds between runs of ``HealthCheckProgram`` (slurm.conf(5); 0 disables it)."""
    HEALTH_CHECK_NODE_STATE = "HealthCheckNodeState"
    """Comma-separated :data:`HEALTH_CHECK_NODE_STATES`."""


class NodeGroupSetting(str, Enum):
    """The compute-node-group ``SlurmCustomSettings`` names the library checks (all of them on
    :data:`NODE_GROUP_SETTINGS`; any other name of that list may be given as a plain string)."""

    WEIGHT = "Weight"
    REAL_MEMORY = "RealMemory"
    """MiB of memory Slurm may schedule per node; at most the instance's memory (checked against the catalog)."""


class QueueSetting(str, Enum):
    """The queue-level (Slurm partition) ``SlurmCustomSettings`` names the library sets or checks (all of them on
    :data:`QUEUE_SETTINGS`; any other name of that list may be given as a plain string)."""

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


@dataclass(frozen=True)
class SettingList:
    """The custom Slurm setting names PCS accepts at one level: ``names`` (canonical spelling) and ``typed``, the enum
    of those the library sets or checks."""

    level: str
    typed: type[ClusterSetting] | type[NodeGroupSetting] | type[QueueSetting]
    names: tuple[str, ...]
    source: str

    def canonical(self, name: str) -> str | None:
        """The list's spelling of ``name`` (slurm.conf(5): names are case-insensitive), or None when not on it."""
        return next((known for known in self.names if known.lower() == name.lower()), None)


#: Cluster-level names (``AWS::PCS::Cluster`` ``SlurmConfiguration.SlurmCustomSettings``). Sources: PCS API reference
#: ``SlurmCustomSetting`` (Prolog, Epilog, SelectTypeParameters, AccountingStorageEnforce); PCS User Guide "Custom
#: Slurm settings for AWS PCS clusters" (slurm-custom-settings-cluster): PrologFlags, and as the 2026-12-02 review read
#: the page (../shared/reference/aws-facts.md section 12) HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState,
#: SchedulerParameters, JobRequeue, RequeueExit, UnkillableStepTimeout, TaskProlog, TaskEpilog, MinJobAge (not
#: TopologyPlugin); PCS User Guide "Release notes for Slurm versions in AWS PCS", 25.11: CommunicationParameters
#: ("set CommunicationParameters=enable_http"). The page lists about 50 names; the stored copies searched for this
#: list show its items without their names, so the others are UNCONFIRMED and refused until added here.
CLUSTER_SETTINGS = SettingList(
    level="cluster",
    typed=ClusterSetting,
    names=(
        "AccountingStorageEnforce",
        "CommunicationParameters",
        "Epilog",
        "HealthCheckInterval",
        "HealthCheckNodeState",
        "HealthCheckProgram",
        "JobRequeue",
        "MinJobAge",
        "Prolog",
        "PrologFlags",
        "RequeueExit",
        "SchedulerParameters",
        "SelectTypeParameters",
        "TaskEpilog",
        "TaskProlog",
        "UnkillableStepTimeout",
    ),
    source="PCS User Guide slurm-custom-settings-cluster",
)
#: Compute-node-group names (``AWS::PCS::ComputeNodeGroup``). Sources: PCS API reference ``SlurmCustomSetting``
#: (Weight, RealMemory); PCS User Guide "Custom Slurm settings for AWS PCS compute node groups" as the 2026-12-02 review
#: read it (aws-facts.md section 12: Features, CpuSpecList, Gres, MemSpecLimit, Parameters, Sockets); the "Gres custom
#: Slurm setting" is also in the PCS release notes ("Configuring custom GRES settings in AWS PCS"). Others UNCONFIRMED.
NODE_GROUP_SETTINGS = SettingList(
    level="compute node group",
    typed=NodeGroupSetting,
    names=("CpuSpecList", "Features", "Gres", "MemSpecLimit", "Parameters", "RealMemory", "Sockets", "Weight"),
    source="PCS User Guide slurm-custom-settings-cng",
)
#: Queue (Slurm partition) names (``AWS::PCS::Queue``): PCS User Guide "Custom Slurm settings for AWS PCS queues"
#: (slurm-custom-settings-queue; the zh_tw page: AllowAccounts, AllowQoS, Default, DefaultTime, DenyAccounts, DenyQoS,
#: ExclusiveUser, GraceTime, MaxTime, OverSubscribe, OverTimeLimit, PreemptMode, PriorityJobFactor, PriorityTier, QOS,
#: TRESBillingWeights; the id_id page adds Exclusive; the 2026-12-02 review adds PowerDownOnIdle). The page: QOS values
#: named by AllowQos, DenyQos or QOS must exist in the accounting database.
QUEUE_SETTINGS = SettingList(
    level="queue",
    typed=QueueSetting,
    names=(
        "AllowAccounts",
        "AllowQos",
        "Default",
        "DefaultTime",
        "DenyAccounts",
        "DenyQos",
        "Exclusive",
        "ExclusiveUser",
        "GraceTime",
        "MaxTime",
        "OverSubscribe",
        "OverTimeLimit",
        "PowerDownOnIdle",
        "PreemptMode",
        "PriorityJobFactor",
        "PriorityTier",
        "QOS",
        "TRESBillingWeights",
    ),
    source="PCS User Guide slurm-custom-settings-queue",
)

#: slurm.conf(5) ``PrologFlags`` values (canonical spelling; Slurm compares them case-insensitively).
PROLOG_FLAG_NAMES = ("Alloc", "Contain", "DeferBatch", "ForceRequeueOnFail", "NoHold", "RunInJob", "Serial", "X11")
#: slurm.conf(5): ``NoHold`` "cannot be combined with the Contain or X11 flags"; ``RunInJob`` implies ``Contain``.
_FLAGS_EXCLUDED_BY_NOHOLD = ("Contain", "RunInJob", "X11")
#: The ``SchedulerParameters`` option that keeps a job whose prolog failed requeued but not held: "the job will be
#: placed in a held state unless nohold_on_prolog_fail is configured in SchedulerParameters" (Slurm "Prolog and Epilog
#: Guide", Failure Handling; slurm.conf(5) ``Prolog``). ParallelCluster sets it (ParallelCluster User Guide "Slurm
#: prolog and epilog"); slurmd matches it case-insensitively (slurmd/req.c ``_launch_job_fail``: ``xstrcasestr``).
NOHOLD_ON_PROLOG_FAIL = "nohold_on_prolog_fail"
#: slurm.conf(5) ``HealthCheckNodeState`` values (START_ONLY from Slurm 25.11: PCS release notes, 25.11).
HEALTH_CHECK_NODE_STATES = ("ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE", "START_ONLY")
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
_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._/-]+")
_UNSIGNED = re.compile(r"\d+")
_OPTIONS = re.compile(r"[^,\s]+(,[^,\s]+)*")
_YES_NO = ("YES", "NO")
_MAX_SLURM_WEIGHT = 4_294_967_280  # slurm.conf "Weight": 0 .. 2^32 - 16 (values above are reserved)


#: What ``slurm_settings`` takes at each level: the level's enum members, or names from its list as strings.
ClusterSettings = Mapping[ClusterSetting, str] | Mapping[str, str]
NodeGroupSettings = Mapping[NodeGroupSetting, str] | Mapping[str, str]
QueueSettings = Mapping[QueueSetting, str] | Mapping[str, str]


def check_settings(parameter: str, settings: Mapping[Any, str] | None, allowed: SettingList) -> dict[str, str]:
    """Check setting names against ``allowed`` and values for shape; return a copy (empty for None), keyed by the
    list's spelling (the enum member for a typed name, else the plain name).

    A name is a member of the level's enum or a string naming a setting on the level's list (any case); a name
    given twice (``Prolog`` and ``prolog``) is refused. Values must be one non-empty line; typed names get their
    slurm.conf(5) checks. Token values are passed through unchecked.
    """
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise FmTypeError(parameter, settings, f"a mapping of setting name to str (got a {type(settings).__name__})")
    out: dict[str, str] = {}
    for name, value in settings.items():
        key = _setting_name(parameter, name, allowed)
        label = f"{parameter}[{_plain(key)}]"
        if key in out:
            raise FmValidationError(f"{parameter} name", name, f"each setting once ({_plain(key)} is given twice)")
        if not isinstance(value, str):
            raise FmTypeError(label, value, f"a str (got a {type(value).__name__})")
        if not is_token(value) and not _VALUE.fullmatch(value):
            raise FmValidationError(label, value, "one non-empty line of at most 1024 characters")
        _check_value(label, key, value)
        out[key] = value
    return out


def _setting_name(parameter: str, name: object, allowed: SettingList) -> str:
    """``name`` as the list spells it: the level's enum member for a typed name, else the list's string."""
    label = f"{parameter} name"
    expected = f"a {allowed.typed.__name__} or a name on the PCS {allowed.level} list"
    if isinstance(name, allowed.typed):
        return name
    if isinstance(name, Enum) or not isinstance(name, str):
        raise FmTypeError(label, name, f"{expected} ({allowed.source}: {', '.join(allowed.names)})")
    if is_token(name):
        raise FmValidationError(label, name, f"a literal name ({expected})")
    canonical = allowed.canonical(name)
    if canonical is None:
        raise FmValidationError(label, name, f"{expected} ({allowed.source}: {', '.join(allowed.names)})")
    typed = {member.value: member for member in allowed.typed}
    return typed.get(canonical, canonical)


def _check_value(label: str, name: str, value: str) -> None:
    """Value rules that are certain from slurm.conf(5), for the typed names."""
    if is_token(value):
        return
    if name in (ClusterSetting.PROLOG, ClusterSetting.EPILOG) and not _ABSOLUTE_PATHS.fullmatch(value):
        raise FmValidationError(label, value, "absolute paths of programs on the nodes, comma-separated")
    if name is ClusterSetting.HEALTH_CHECK_PROGRAM and not _ABSOLUTE_PATH.fullmatch(value):
        raise FmValidationError(label, value, "the absolute path of a program on the nodes")
    if name is ClusterSetting.HEALTH_CHECK_INTERVAL and not _UNSIGNED.fullmatch(value):
        raise FmValidationError(label, value, "a whole number of seconds (0 turns the check off)")
    if name is ClusterSetting.HEALTH_CHECK_NODE_STATE:
        _check_options(label, value, HEALTH_CHECK_NODE_STATES)
    if name is ClusterSetting.SCHEDULER_PARAMETERS and not _OPTIONS.fullmatch(value):
        raise FmValidationError(label, value, "comma-separated options without spaces or empty items")
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


def _check_options(label: str, value: str, allowed: Sequence[str]) -> None:
    items = [item.strip().upper() for item in value.split(",")]
    if any(item not in allowed for item in items) or len(set(items)) != len(items):
        raise FmValidationError(label, value, f"comma-separated values without repeats, each {one_of(allowed)}")


def merge_scheduler_parameters(required: Sequence[str], given: str | None, *, parameter: str) -> str:
    """The given ``SchedulerParameters`` as written, then each of ``required`` it lacks (options compared by name,
    case-insensitively, as slurmctld reads them)."""
    if given is not None and is_token(given):
        raise FmValidationError(parameter, given, f"a literal value (fmconstructs adds {', '.join(required)} to it)")
    options = [] if given is None else given.split(",")
    names = {option.split("=", 1)[0].strip().lower() for option in options}
    options += [option for option in required if option.lower() not in names]
    return ",".join(options)


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


def without_prolog_holds(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` with :data:`NOHOLD_ON_PROLOG_FAIL` in ``SchedulerParameters`` (given options kept, none twice):
    for a cluster whose ``Prolog`` the library sets, so a job whose prolog failed is requeued, not held."""
    out = dict(settings)
    out[ClusterSetting.SCHEDULER_PARAMETERS] = merge_scheduler_parameters(
        (NOHOLD_ON_PROLOG_FAIL,),
        out.get(ClusterSetting.SCHEDULER_PARAMETERS),
        parameter="slurm_settings[SchedulerParameters]",
    )
    return out


def settings_in_order(settings: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``(name, value)`` pairs, sorted by name: the order the template lists them in (stable templates)."""
    return tuple(sorted(((_plain(name), value) for name, value in settings.items()), key=lambda item: item[0]))


def to_cfn_settings(settings: Mapping[str, str]) -> list[dict[str, str]]:
    """Render settings as CloudFormation ``SlurmCustomSettings`` items, sorted by name (stable templates)."""
    return [{"ParameterName": name, "ParameterValue": value} for name, value in settings_in_order(settings)]


def _plain(name: str) -> str:
    return name.value if isinstance(name, Enum) else name


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
