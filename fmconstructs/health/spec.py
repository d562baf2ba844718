"""What a node must have to take jobs: :class:`NodeCheckSpec`, built from the instance catalog and the launch layout.

The checks themselves (shell) are rendered by :mod:`fmconstructs.health.checks`; this module holds only the data and
its validation, so that backends can build and inspect a spec without rendering anything. No aws_cdk import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from types import MappingProxyType
from typing import Any

from .._validate import check_bool, check_count, check_str
from ..catalog import CATALOG, CpuArchitecture, get_instance_spec
from ..errors import FmTypeError, FmValidationError, is_token, one_of
from . import rules
from .metric_names import NODE_EXPORTER_TEXTFILE_DIR
from .xid import DEFAULT_XID_POLICY, XidClass, XidPolicy, check_xid_policy

__all__ = [
    "DCGM_LEVEL_NOMINAL_SECONDS",
    "DEFAULT_BUDGET_SECONDS",
    "DEFAULT_FATAL_XIDS",
    "DEFAULT_LOG_FILE_PATH",
    "DEFAULT_TEXTFILE_DIR",
    "IDLE_BUDGET_CAP_SECONDS",
    "PROLOG_CHECKS",
    "CheckMode",
    "CheckName",
    "NodeCheckSpec",
]


class CheckName(str, Enum):
    """The node checks, in the order they run; the value is the name in ``PASS <name>`` / ``FAIL <name>: ...``."""

    GPU_COUNT = "gpu-count"
    """``nvidia-smi`` answers and sees the catalog's GPU count; the driver version is logged."""
    GPU_MEMORY = "gpu-memory"
    """No pending row remapping, no row-remapping failure, no pending page retirement."""
    GPU_XID = "gpu-xid"
    """No Xid of the RESET or FATAL class (:class:`~fmconstructs.health.xid.XidPolicy`) in the kernel log since
    boot; the failure names the Xid and its class (``Xid 119 (reset) on PCI:...``)."""
    FABRIC_MANAGER = "fabric-manager"
    """``nvidia-fabricmanager`` is active (x86_64 multi-GPU NVSwitch types)."""
    IMEX = "imex"
    """``nvidia-imex`` is enabled (UltraServer types)."""
    EFA_DEVICES = "efa-devices"
    """``fi_info -p efa -t FI_EP_RDM`` lists as many EFA devices as the launch layout attaches."""
    LUSTRE_MOUNT = "lustre-mount"
    """The FSx for Lustre file system is mounted at its mount point."""
    DCGM_DIAG = "dcgm-diag"
    """``dcgmi diag -r <level>`` passes (boot only)."""


class CheckMode(str, Enum):
    """Where the checks run: BOOT (every applicable check), PROLOG (lightweight checks, small budgets) or IDLE
    (between jobs: the PROLOG checks within Slurm's ``HealthCheckProgram`` limit, :data:`IDLE_BUDGET_CAP_SECONDS`)."""

    BOOT = "boot"
    PROLOG = "prolog"
    IDLE = "idle"


#: Checks a prolog runs: everything but DCGM diagnostics. A prolog must finish on every node of a job before the job
#: starts; long diagnostics there hang jobs ("Prolog hung on node", aws/aws-parallelcluster#6777: ParallelCluster's
#: GPU health check runs DCGM in the prolog and takes too long on p4d/p5).
PROLOG_CHECKS: tuple[CheckName, ...] = tuple(c for c in CheckName if c is not CheckName.DCGM_DIAG)

#: The most any check may take between jobs (IDLE, seconds). slurmd kills the ``HealthCheckProgram`` after 60 s
#: (slurm.conf(5) ``HealthCheckProgram``: "killed if it does not terminate normally within 60 seconds"; Slurm's
#: slurmd.c ``run_script_health_check``: ``max_wait = 60 * 1000``): seven commands at 6 s (``gpu-memory`` runs two) are
#: 42 s, which leaves room for the three ``scontrol`` calls of the between-jobs check
#: (:func:`fmconstructs.health.render_slurm_idle_check`, 5 s each).
IDLE_BUDGET_CAP_SECONDS = 6

#: Per-check time budgets (seconds) at boot. Each command of a check runs under ``timeout <budget>``; a command that
#: runs out of budget fails its check. Chosen here (no AWS figure), except ``dcgm-diag``: see
#: :data:`DCGM_LEVEL_NOMINAL_SECONDS`.
DEFAULT_BUDGET_SECONDS: Mapping[CheckName, int] = MappingProxyType(
    {
        CheckName.GPU_COUNT: 60,
        CheckName.GPU_MEMORY: 30,
        CheckName.GPU_XID: 10,
        CheckName.FABRIC_MANAGER: 10,
        CheckName.IMEX: 10,
        CheckName.EFA_DEVICES: 30,
        CheckName.LUSTRE_MOUNT: 10,
        CheckName.DCGM_DIAG: 600,
    }
)

#: How long NVIDIA says each ``dcgmi diag -r`` level normally runs (NVIDIA DCGM documentation, "dcgmi diag"
#: command-line reference: 1 "Quick deployment checks, normally lasting seconds", 2 "Medium validation, normally
#: lasting approximately two minutes", 3 "Long hardware diagnostics, normally lasting approximately 15 minutes",
#: 4 "Extended, longer-running"). None: no figure given. A DCGM budget below the figure is refused.
DCGM_LEVEL_NOMINAL_SECONDS: Mapping[int, int | None] = MappingProxyType({1: None, 2: 120, 3: 900, 4: None})

#: Xids that fail ``gpu-xid`` by default: the RESET and FATAL classes of
#: :data:`~fmconstructs.health.xid.DEFAULT_XID_POLICY` (NVIDIA's Xid catalog; sources in
#: :data:`~fmconstructs.health.xid.XID_SOURCES`). Not 94 (contained: new work runs on that GPU without a reset) nor
#: the application's Xids (13, 31, 43 ...): a user's job causes them, and the prolog must not drain a node for them.
#: Deprecated with ``fatal_xids``: read ``XidPolicy.node_check_xids``.
DEFAULT_FATAL_XIDS: tuple[int, ...] = DEFAULT_XID_POLICY.node_check_xids

#: Where the checks log (each line also goes to syslog with the tag ``fmconstructs-node-checks``).
DEFAULT_LOG_FILE_PATH = "/var/log/fmconstructs/node-checks.log"

#: Where the checks write their metrics: node exporter's textfile directory on fmconstructs nodes
#: (:data:`fmconstructs.health.metric_names.NODE_EXPORTER_TEXTFILE_DIR`, the directory
#: :mod:`fmconstructs.observability.collection` configures).
DEFAULT_TEXTFILE_DIR = NODE_EXPORTER_TEXTFILE_DIR

#: Per-check cap in the prolog (seconds). Seven checks x 10 s = 70 s at worst, inside ParallelCluster's
#: ``BatchStartTimeout=180`` (ParallelCluster User Guide "Slurm prolog and epilog": "The default is 3 minutes").
_DEFAULT_PROLOG_BUDGET_SECONDS = 10

_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*|/")
_INSTANCE_TYPE = re.compile(r"[a-z0-9][a-z0-9-]*\.[a-z0-9-]+")
_LITERAL = "a literal value (the checks are rendered at synth time)"


@dataclass(frozen=True)
class NodeCheckSpec:
    """The facts the node checks compare a node against; build it with :meth:`for_instance_type`.

    Raises :class:`~fmconstructs.errors.FmValidationError` for a value that cannot go into the script (every value is
    rendered at synth time: deploy-time tokens are refused).
    """

    #: The EC2 instance type, named in the log (``p5.48xlarge``).
    instance_type: str
    #: GPUs ``nvidia-smi`` must list (catalog ``GpuInfo.Gpus[0].Count``).
    gpu_count: int
    #: EFA devices ``fi_info`` must list: the interfaces the launch layout attaches (0: the check is skipped).
    efa_interfaces: int
    #: Whether ``nvidia-fabricmanager`` must be active (x86_64 NVSwitch types).
    fabric_manager: bool
    #: Whether ``nvidia-imex`` must be enabled (UltraServer types).
    imex: bool
    #: Where the FSx for Lustre file system is mounted; None: the node has none and the check is skipped.
    lustre_mount_point: str | None = None
    #: ``dcgmi diag -r`` level at boot (1-4); None: no DCGM diagnostics. Never run in the prolog.
    dcgm_level: int | None = 2
    #: Deprecated: the Xids that fail ``gpu-xid``, applied to ``xid_policy`` (``XidPolicy.with_node_check_xids``);
    #: None (the default, and always after construction): ``xid_policy`` decides.
    fatal_xids: tuple[int, ...] | None = None
    #: Per-check budgets (seconds); checks not named keep :data:`DEFAULT_BUDGET_SECONDS`.
    budget_seconds: Mapping[CheckName, int] = field(default_factory=dict)
    #: The most any check may take in the prolog (seconds); the boot budget applies when it is smaller.
    prolog_budget_seconds: int = _DEFAULT_PROLOG_BUDGET_SECONDS
    #: The checks' log file.
    log_file_path: str = DEFAULT_LOG_FILE_PATH
    #: node exporter's textfile directory: each run writes ``fm_node_checks_<mode>.prom`` there (status, duration,
    #: last run, failure reason; :mod:`.metric_names`). Skipped on a node without the directory; None: never.
    textfile_dir: str | None = DEFAULT_TEXTFILE_DIR
    #: Which Xids fail ``gpu-xid`` (RESET and FATAL classes) and how the failure names them; the alerts and
    #: remediation read the same policy (:mod:`fmconstructs.health.xid`).
    xid_policy: XidPolicy = DEFAULT_XID_POLICY

    def __post_init__(self) -> None:
        _refuse_tokens(self)
        check_str("instance_type", self.instance_type, pattern=_INSTANCE_TYPE, allowed="an EC2 instance type name")
        check_count("gpu_count", self.gpu_count, minimum=1)
        check_count("efa_interfaces", self.efa_interfaces, minimum=0)
        if self.instance_type in CATALOG:  # what for_instance_type refuses, for the direct constructor too
            maximum = CATALOG.get(self.instance_type).maximum_efa_interfaces
            rules.efa_interfaces_fit_the_instance_type(
                efa_interfaces=self.efa_interfaces, maximum_efa_interfaces=maximum
            )
        check_bool("fabric_manager", self.fabric_manager)
        check_bool("imex", self.imex)
        if self.lustre_mount_point is not None:
            _check_path("lustre_mount_point", self.lustre_mount_point)
        _check_path("log_file_path", self.log_file_path)
        if self.textfile_dir is not None:
            _check_path("textfile_dir", self.textfile_dir)
        check_count("prolog_budget_seconds", self.prolog_budget_seconds, minimum=1, maximum=60)
        policy = check_xid_policy("xid_policy", self.xid_policy)
        if self.fatal_xids is not None:
            policy = policy.with_node_check_xids(_check_xids(self.fatal_xids))
        object.__setattr__(self, "xid_policy", policy)
        object.__setattr__(self, "fatal_xids", None)
        object.__setattr__(self, "budget_seconds", _merge_budgets(self.budget_seconds))
        if self.dcgm_level is not None:
            check_count("dcgm_level", self.dcgm_level, minimum=1, maximum=4)
            _check_dcgm_budget(self.dcgm_level, self.budget_seconds[CheckName.DCGM_DIAG])

    @classmethod
    def for_instance_type(
        cls,
        instance_type: str,
        *,
        efa_interfaces: int | None = None,
        lustre_mount_point: str | None = None,
        dcgm_level: int | None = 2,
        budget_seconds: Mapping[CheckName, int] | None = None,
        fatal_xids: tuple[int, ...] | None = None,
        xid_policy: XidPolicy = DEFAULT_XID_POLICY,
        prolog_budget_seconds: int = _DEFAULT_PROLOG_BUDGET_SECONDS,
        log_file_path: str = DEFAULT_LOG_FILE_PATH,
        textfile_dir: str | None = DEFAULT_TEXTFILE_DIR,
    ) -> NodeCheckSpec:
        """The spec for ``instance_type`` from the catalog.

        :param efa_interfaces: EFA interfaces the node's launch template attaches; default: the layout
            :func:`~fmconstructs.networking.plan_network_interfaces` plans for the type (every recommended card).
            Pass ``layout.efa_interface_count`` when the launch template uses another layout.
        :param lustre_mount_point: where the node mounts FSx for Lustre; None: no Lustre check.
        :param textfile_dir: node exporter's textfile directory for the checks' metrics; default:
            :data:`DEFAULT_TEXTFILE_DIR`; None: no metrics.
        :param xid_policy: the Xid classes (:class:`~fmconstructs.health.xid.XidPolicy`); default NVIDIA's catalog.
        :param fatal_xids: deprecated: exactly these Xids fail ``gpu-xid`` (applied to ``xid_policy``).
        """
        given = _Given.of(locals())
        if is_token(instance_type):
            raise FmValidationError("instance_type", instance_type, _LITERAL)
        spec = get_instance_spec(instance_type)
        if efa_interfaces is None:
            # networking.interfaces imports aws_cdk only for type checking: safe without Node.js.
            from ..networking.interfaces import plan_network_interfaces

            efa_interfaces = plan_network_interfaces(spec).efa_interface_count
        elif not is_token(efa_interfaces):
            rules.efa_interfaces_fit_the_instance_type(
                efa_interfaces=efa_interfaces, maximum_efa_interfaces=spec.maximum_efa_interfaces
            )
        from_catalog = {
            "gpu_count": spec.gpu.count,
            "efa_interfaces": efa_interfaces,
            # Every x86_64 multi-GPU type in the catalog is an NVSwitch HGX system that needs Fabric Manager
            # (fmconstructs.images installs it there; ParallelCluster installs it on x86 only: "NVIDIA Fabric Manager
            # not present on ARM", aws-parallelcluster-cookbook fabric_manager resource). GB200 (arm64) uses IMEX.
            "fabric_manager": spec.architecture is CpuArchitecture.X86_64 and spec.gpu.count > 1,
            "imex": bool(spec.ultraserver_types),
            "budget_seconds": {} if budget_seconds is None else budget_seconds,
        }
        return cls(**{**given.as_keywords(), **from_catalog})

    def applies(self, check: CheckName) -> bool:
        """Whether ``check`` applies to this node at all (in some mode)."""
        return {
            CheckName.FABRIC_MANAGER: self.fabric_manager,
            CheckName.IMEX: self.imex,
            CheckName.EFA_DEVICES: self.efa_interfaces > 0,
            CheckName.LUSTRE_MOUNT: self.lustre_mount_point is not None,
            CheckName.DCGM_DIAG: self.dcgm_level is not None,
        }.get(check, True)

    def checks(self, mode: CheckMode) -> tuple[CheckName, ...]:
        """The checks ``mode`` runs for this node, in order."""
        check_enum_mode(mode)
        allowed = tuple(CheckName) if mode is CheckMode.BOOT else PROLOG_CHECKS
        return tuple(c for c in CheckName if c in allowed and self.applies(c))

    def budget(self, check: CheckName, mode: CheckMode) -> int:
        """The time budget (seconds) of ``check`` in ``mode``."""
        seconds = self.budget_seconds[check]
        if mode is CheckMode.IDLE:
            return min(seconds, self.prolog_budget_seconds, IDLE_BUDGET_CAP_SECONDS)
        return min(seconds, self.prolog_budget_seconds) if mode is CheckMode.PROLOG else seconds

    def xid_classes(self) -> dict[XidClass, tuple[int, ...]]:
        """The Xids that fail ``gpu-xid``, by class (RESET and FATAL)."""
        return {c: self.xid_policy.xids(c) for c in XidClass if c.fails_node_checks}

    def total_budget_seconds(self, mode: CheckMode) -> int:
        """The most the checks of ``mode`` can take (each command at its budget; ``gpu-memory`` runs two)."""
        return sum(self.budget(c, mode) * (2 if c is CheckName.GPU_MEMORY else 1) for c in self.checks(mode))


@dataclass(frozen=True)
class _Given:
    """The arguments of :meth:`NodeCheckSpec.for_instance_type` as given; the spec's fields of the same name."""

    instance_type: str
    efa_interfaces: int | None
    lustre_mount_point: str | None
    dcgm_level: int | None
    budget_seconds: Mapping[CheckName, int] | None
    fatal_xids: tuple[int, ...] | None
    xid_policy: XidPolicy
    prolog_budget_seconds: int
    log_file_path: str
    textfile_dir: str | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Given:
        """The arguments among ``for_instance_type``'s ``locals()``."""
        return cls(**{item.name: arguments[item.name] for item in fields(cls)})

    def as_keywords(self) -> dict[str, Any]:
        """The arguments by name (not copied, unlike ``dataclasses.asdict``)."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


def check_enum_mode(mode: object) -> CheckMode:
    if not isinstance(mode, CheckMode):
        raise FmTypeError("mode", mode, "a CheckMode (CheckMode.BOOT, CheckMode.PROLOG, CheckMode.IDLE)")
    return mode


def _refuse_tokens(spec: NodeCheckSpec) -> None:
    for name in ("instance_type", "gpu_count", "efa_interfaces", "lustre_mount_point", "log_file_path", "textfile_dir"):
        if is_token(getattr(spec, name)):
            raise FmValidationError(name, getattr(spec, name), _LITERAL)


def _check_path(parameter: str, value: object) -> str:
    path: str = check_str(
        parameter,
        value,
        pattern=_ABSOLUTE_PATH,
        allowed="an absolute path without a trailing '/' (letters, digits, '.', '_', '-', '/')",
    )
    return path


def _check_xids(value: object) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list | frozenset | set):
        raise FmTypeError("fatal_xids", value, "a tuple of Xid numbers")
    xids = tuple(check_count(f"fatal_xids[{i}]", x, minimum=1, maximum=999) for i, x in enumerate(value))
    if len(set(xids)) != len(xids):
        raise FmValidationError("fatal_xids", value, "Xid numbers without repeats")
    return tuple(sorted(xids))


def _merge_budgets(value: object) -> Mapping[CheckName, int]:
    if not isinstance(value, Mapping):
        raise FmTypeError("budget_seconds", value, "a dict of CheckName to seconds")
    merged = dict(DEFAULT_BUDGET_SECONDS)
    for check, seconds in value.items():
        if not isinstance(check, CheckName):
            raise FmTypeError("budget_seconds", check, f"CheckName keys ({one_of(CheckName)})")
        if is_token(seconds):
            raise FmValidationError(f"budget_seconds[{check.value}]", seconds, _LITERAL)
        merged[check] = check_count(f"budget_seconds[{check.value}]", seconds, minimum=1, maximum=7200)
    return MappingProxyType(merged)


def _check_dcgm_budget(level: int, seconds: int) -> None:
    rules.dcgm_budget_covers_the_level(level=level, seconds=seconds, nominal_seconds=DCGM_LEVEL_NOMINAL_SECONDS[level])
