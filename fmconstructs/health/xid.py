"""One Xid policy for the node checks, the alerts and remediation: :class:`XidPolicy`, from NVIDIA's Xid catalog.

Each Xid the policy lists is in one :class:`XidClass`, and the class says what every side does:

==============  ==============================  ==========================  =================================
class           node checks (gate, prolog)      alert on DCGM's Xid gauge   remediation (default action)
==============  ==============================  ==========================  =================================
APPLICATION     pass                            ``GpuXidError`` (warning)   none (no trigger)
CONTAINED       pass                            ``GpuContainedXid``         ``contained-xid``: NOTIFY
                                                (warning)
RESET           fail ``gpu-xid``                ``GpuCriticalXid``          ``reset-xid``: REBOOT
                                                ``xid_class="reset"``
FATAL           fail ``gpu-xid``                ``GpuCriticalXid``          ``fatal-xid``: REPLACE
                                                ``xid_class="fatal"``
(not listed)    pass                            ``GpuXidError`` (warning)   none
==============  ==============================  ==========================  =================================

The classes follow the "Resolution Bucket (Immediate Action)" column of NVIDIA's catalog (docs.nvidia.com/deploy/
xid-errors/analyzing-xid-catalog.html, "Analyzing Xid Errors with the Xid Catalog", read for issue 29 through a stored
copy of the page; each Xid's bucket and the words relied on are in :data:`XID_SOURCES`):

- RESTART_APP or IGNORE with the application named as the cause: APPLICATION. The application restarts; the node is
  fine. Catalog buckets IGNORE that are not application faults (63 row remapping recorded, 92 high single-bit ECC
  rate) are in no class: the generic warning names them and nothing acts.
- 94 (contained ECC error, RESTART_APP): CONTAINED. The catalog: "these errors are contained to one application ...
  All other applications running at the time of the Xid are unaffected. It is recommended to reset the GPU when
  convenient. Applications can continue to be run until the reset can be performed"; NVIDIA "GPU Memory Error
  Management", "Response to Uncorrectable Contained ECC Errors": "additional workloads can be launched on this GPU
  without requiring a GPU reset". The job that hit it ends; the node keeps taking work; nothing replaces it.
- RESET_GPU, RESTART_VM, and the workflows of 48 and 74 whose text says "A GPU reset or node reboot is needed to clear
  this error": RESET. This library has no GPU-reset action; a node reboot resets every GPU of the node (and the gate's
  ``gpu-xid`` check reads the kernel log since boot, so it passes again after the reboot).
- RESTART_BM (79, "GPU has fallen off the bus": restart the bare-metal host) and CHECK_MECHANICALS (54, auxiliary
  power not connected): FATAL. An EC2 instance reboot does not restart the physical host (UNCONFIRMED: no AWS text
  read says what a reboot does to a passed-through GPU), and the mechanical fault is the host's: a new instance moves
  the work to other hardware.

NVLink5 Xids 144-150 are in no class: their bucket depends on the sub-code (the catalog's per-IntrInfo table mixes
IGNORE and RESET_GPU), which neither the kernel-log check nor DCGM's gauge reads. Xid 154 only summarizes the recovery
action of another Xid and is in no class either.

Tuning: move Xids with :meth:`XidPolicy.moved` (``XidPolicy().moved([94], to=XidClass.RESET)``) or give the classes
outright; an Xid is in at most one class (:class:`~fmconstructs.errors.FmValidationError` otherwise). One value changes
the three sides together: ``NodeHealthOptions(xid_policy=...)`` (the checks; through ``TrainingPlatform`` also the
alerts of the workspace it creates) and ``AlertThresholds(xid_policy=...)`` (the alerts); remediation acts on the
``fmconstructs_trigger`` label each alert carries, and its :class:`~fmconstructs.remediation.RemediationPolicy` says
what each class's trigger does.

Standard library and the library's errors only (no aws_cdk): the health checks, the observability rules and the
remediation policy all import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from enum import Enum

from .._validate import check_count, check_sequence
from ..errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "DEFAULT_XID_POLICY",
    "TRIGGER_CONTAINED_XID",
    "TRIGGER_FATAL_XID",
    "TRIGGER_RESET_XID",
    "XID_CLASS_LABEL",
    "XID_SOURCES",
    "XidClass",
    "XidPolicy",
    "XidSource",
    "node_check_reason_regex",
]

#: The alert label naming the Xid class (an :class:`XidClass` value) on the Xid alerts.
XID_CLASS_LABEL = "xid_class"
#: ``Trigger.CONTAINED_XID.value`` (:mod:`fmconstructs.remediation.policy`).
TRIGGER_CONTAINED_XID = "contained-xid"
#: ``Trigger.RESET_XID.value``.
TRIGGER_RESET_XID = "reset-xid"
#: ``Trigger.FATAL_XID.value``.
TRIGGER_FATAL_XID = "fatal-xid"

#: Xid numbers the policy takes: Xids are positive and the catalog's highest is 172; three digits leave room.
_MAX_XID = 999


class XidClass(str, Enum):
    """What an Xid needs (see the module docstring for the sources and what each side does)."""

    #: The application's fault (NVIDIA: restart the application): nothing on the node.
    APPLICATION = "application"
    #: A contained error (94): the job that hit it ends, the GPU keeps taking work; notify, reset when convenient.
    CONTAINED = "contained"
    #: The GPU needs a reset before it is trusted again: the node fails its checks and is rebooted.
    RESET = "reset"
    #: The node needs other hardware: it fails its checks and is replaced.
    FATAL = "fatal"

    @property
    def fails_node_checks(self) -> bool:
        """Whether an Xid of this class fails the ``gpu-xid`` check (the boot gate and the prolog)."""
        return self in (XidClass.RESET, XidClass.FATAL)

    @property
    def trigger(self) -> str | None:
        """The remediation trigger value its alerts carry (label ``fmconstructs_trigger``); None: no remediation."""
        return _TRIGGERS.get(self)


_TRIGGERS = {
    XidClass.CONTAINED: TRIGGER_CONTAINED_XID,
    XidClass.RESET: TRIGGER_RESET_XID,
    XidClass.FATAL: TRIGGER_FATAL_XID,
}


@dataclass(frozen=True)
class XidSource:
    """One catalog row the default policy relies on: the Xid, NVIDIA's mnemonic and immediate-action bucket, the class
    chosen and the catalog words it rests on."""

    xid: int
    mnemonic: str
    nvidia_action: str
    xid_class: XidClass
    because: str


_A, _C, _R, _F = XidClass.APPLICATION, XidClass.CONTAINED, XidClass.RESET, XidClass.FATAL
_RESET_TEXT = "RESET_GPU (immediate action)"
#: The catalog rows behind :data:`DEFAULT_XID_POLICY` (NVIDIA "Analyzing Xid Errors with the Xid Catalog", columns
#: Mnemonic and "Resolution Bucket (Immediate Action)"; quoted words are the row's description or trigger conditions).
XID_SOURCES: tuple[XidSource, ...] = (
    XidSource(11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "RESTART_APP", _A, "investigatory CHECK_APP/CUDA"),
    XidSource(13, "ROBUST_CHANNEL_GR_EXCEPTION", "RESTART_APP", _A, "'logged for general user application faults'"),
    XidSource(25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "RESTART_APP", _A, "investigatory CHECK_APP/CUDA"),
    XidSource(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "RESTART_APP", _A, "'application-level bugs'"),
    XidSource(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "IGNORE", _A, "'The GPU remains in a healthy state'"),
    XidSource(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "WORKFLOW_XID_45", _A, "'the user application aborts'"),
    XidSource(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "RESTART_APP", _A, "investigatory CHECK_APP/CUDA"),
    XidSource(80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "RESTART_APP", _A, "investigatory CHECK_APP/CUDA"),
    XidSource(137, "NVLINK_PRIV_ERR", "IGNORE", _A, "'Typically these are application-level bugs'"),
    XidSource(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", _C, "'reset the GPU when convenient'"),
    XidSource(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", _R, "'A GPU reset or node reboot is needed'"),
    XidSource(62, "PMU_HALT_ERROR", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(74, "NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", _R, "'A GPU reset or node reboot is needed'"),
    XidSource(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", _R, "'the affected GPU must be reset'"),
    XidSource(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(110, "SEC_FAULT_ERROR", "RESET_GPU", _R, "'cold reset the system'"),
    XidSource(119, "GSP_RPC_TIMEOUT", "RESET_GPU", _R, "'A GPU reset or node power cycle may be needed'"),
    XidSource(120, "GSP_ERROR", "RESET_GPU", _R, "'A GPU reset or node power cycle may be needed'"),
    XidSource(136, "ALI_TRAINING_FAIL", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "RESET_GPU", _R, "'Reset the GPU'"),
    XidSource(143, "GPU_INIT_ERROR", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "RESTART_VM", _R, "a reboot restarts the instance"),
    XidSource(155, "NVLINK_SW_DEFINED_ERROR", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(156, "RESOURCE_RETIREMENT_EVENT", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(158, "GPU_FATAL_TIMEOUT", "RESET_GPU", _R, _RESET_TEXT),
    XidSource(54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS", _F, "'Auxiliary power is not connected'"),
    XidSource(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", _F, "'the GPU is not accessible'"),
)


def _check_xids(parameter: str, value: object) -> tuple[int, ...]:
    """Xid numbers 1-999 known at synth time (they are written into scripts and rules), without repeats, sorted."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise FmTypeError(parameter, value, "a list of Xid numbers (got one number: wrap it in a list)")
    xids = check_sequence(parameter, value, lambda n, v: check_count(n, v, minimum=1, maximum=_MAX_XID))
    for index, xid in enumerate(xids):
        if is_token(xid):
            raise FmValidationError(f"{parameter}[{index}]", xid, "an Xid number known at synth time")
    numbers = tuple(int(x) for x in xids)
    if len(set(numbers)) != len(numbers):
        raise FmValidationError(parameter, list(numbers), "Xid numbers without repeats")
    return tuple(sorted(numbers))


def _default(xid_class: XidClass) -> tuple[int, ...]:
    return tuple(sorted(source.xid for source in XID_SOURCES if source.xid_class is xid_class))


@dataclass(frozen=True, kw_only=True)
class XidPolicy:
    """Which Xids are in which :class:`XidClass` (defaults: :data:`XID_SOURCES`). An Xid in no class passes the
    checks and only raises the generic warning ``GpuXidError``.

    :param application: the application's faults (default 11 13 25 31 43 45 69 80 137).
    :param contained: contained errors (default 94).
    :param reset: Xids that need a GPU reset: fail the checks, reboot (default 46 48 62 64 74 95 109 110 119 120 136
        140 143 151 155 156 158).
    :param fatal: Xids that need other hardware: fail the checks, replace (default 54 79).

    Each is a list of Xid numbers (1-999) without repeats; an Xid in two classes is refused.
    """

    application: tuple[int, ...] = _default(XidClass.APPLICATION)
    contained: tuple[int, ...] = _default(XidClass.CONTAINED)
    reset: tuple[int, ...] = _default(XidClass.RESET)
    fatal: tuple[int, ...] = _default(XidClass.FATAL)

    def __post_init__(self) -> None:
        seen: dict[int, XidClass] = {}
        for xid_class in XidClass:
            parameter = xid_class.value
            xids = _check_xids(parameter, getattr(self, parameter))
            twice = sorted(x for x in xids if x in seen)
            if twice:
                other = seen[twice[0]].value
                raise FmValidationError(
                    parameter, twice, f"Xids in no other class ({twice[0]} is in {other} too; use XidPolicy.moved)"
                )
            seen.update(dict.fromkeys(xids, xid_class))
            object.__setattr__(self, parameter, xids)

    def xids(self, xid_class: XidClass) -> tuple[int, ...]:
        """The Xids of ``xid_class``, ascending."""
        checked = _check_class("xid_class", xid_class, optional=False)
        assert checked is not None
        xids: tuple[int, ...] = getattr(self, checked.value)
        return xids

    def class_of(self, xid: int) -> XidClass | None:
        """The class of ``xid``; None when the policy does not list it."""
        return next((c for c in XidClass if xid in self.xids(c)), None)

    def items(self) -> Iterator[tuple[int, XidClass]]:
        """Every listed Xid with its class, by Xid."""
        return iter(sorted((x, c) for c in XidClass for x in self.xids(c)))

    @property
    def node_check_xids(self) -> tuple[int, ...]:
        """The Xids that fail the ``gpu-xid`` check and page (RESET and FATAL), ascending."""
        return tuple(sorted(x for c in XidClass if c.fails_node_checks for x in self.xids(c)))

    def moved(self, xids: Iterable[int], *, to: XidClass | None) -> XidPolicy:
        """This policy with ``xids`` in class ``to`` (None: in no class), out of the class they were in."""
        target = _check_class("to", to, optional=True)
        moving = set(_check_xids("xids", xids))
        classes = {c.value: tuple(x for x in self.xids(c) if x not in moving) for c in XidClass}
        if target is not None:
            classes[target.value] = (*classes[target.value], *moving)
        return replace(self, **{name: tuple(sorted(v)) for name, v in classes.items()})

    def with_node_check_xids(self, xids: Iterable[int]) -> XidPolicy:
        """This policy where exactly ``xids`` fail the checks and page: what the deprecated ``fatal_xids`` and
        ``critical_xids`` meant. A listed Xid not yet in RESET or FATAL moves to FATAL; an Xid of RESET or FATAL not
        listed leaves its class (it then passes the checks and only raises the generic warning)."""
        wanted = set(_check_xids("xids", xids))
        acting = set(self.node_check_xids)
        return self.moved(sorted(acting - wanted), to=None).moved(sorted(wanted - acting), to=XidClass.FATAL)

    def describe(self) -> str:
        """One line per class, for logs and docs: ``reset: 46 48 ...``."""
        return "; ".join(f"{f.name}: {' '.join(map(str, getattr(self, f.name))) or '-'}" for f in fields(self))


def _check_class(parameter: str, value: object, *, optional: bool) -> XidClass | None:
    if value is None and optional:
        return None
    if not isinstance(value, XidClass):
        members = ", ".join(f"XidClass.{c.name}" for c in XidClass)
        raise FmTypeError(parameter, value, f"an XidClass ({members}{', or None' if optional else ''})")
    return value


#: The policy from NVIDIA's catalog (:data:`XID_SOURCES`).
DEFAULT_XID_POLICY = XidPolicy()


def node_check_reason_regex(xid_class: XidClass) -> str:
    """The ``reason`` of a ``gpu-xid`` failure caused by an Xid of ``xid_class``, as a PromQL (RE2, anchored) regex:
    the check writes ``Xid <n> (<class>) on <pci> in the kernel log since boot`` (:mod:`fmconstructs.health.checks`),
    so the alert routes by the class the node found, whatever numbers its policy listed."""
    checked = _check_class("xid_class", xid_class, optional=False)
    assert checked is not None
    return rf"Xid [0-9]+ \({checked.value}\) on .*"


def check_xid_policy(parameter: str, value: object) -> XidPolicy:
    """An :class:`XidPolicy` (the library's type error otherwise)."""
    if not isinstance(value, XidPolicy):
        raise FmTypeError(parameter, value, f"an XidPolicy (got a {type(value).__name__})")
    return value
