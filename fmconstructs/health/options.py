"""What a backend is told about node health: :class:`NodeHealthOptions`, one value object for PCS and ParallelCluster.

A backend takes ``node_health=NodeHealthOptions(...)`` and turns it into a :class:`~fmconstructs.health.NodeCheckSpec`
per instance type (:meth:`NodeHealthOptions.spec_for`) with the facts only it knows (the EFA interfaces its launch
layout attaches, the Lustre mount point). Where the service runs DCGM itself (PCS deep health checks, ParallelCluster
``HealthChecks/Gpu``), give ``dcgm_level=None`` so DCGM does not run twice. No aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType

from .._validate import check_bool, check_count
from ..errors import FmTypeError, FmValidationError, one_of
from .spec import CheckMode, CheckName, NodeCheckSpec
from .xid import DEFAULT_XID_POLICY, XidPolicy

__all__ = [
    "DEFAULT_IDLE_CHECK_INTERVAL_SECONDS",
    "DEFAULT_IDLE_CHECK_NODE_STATES",
    "DEFAULT_PROLOG_BUDGET_SECONDS",
    "HealthCheckNodeState",
    "NodeHealthOptions",
]

#: Per-check cap in the prolog (seconds), the :class:`NodeCheckSpec` default.
DEFAULT_PROLOG_BUDGET_SECONDS = 10


class HealthCheckNodeState(str, Enum):
    """Which nodes Slurm runs ``HealthCheckProgram`` on (slurm.conf(5) ``HealthCheckNodeState``, comma-separated;
    Slurm's default ANY). ``START_ONLY`` (Slurm 25.11+: "Run only at slurmd startup") is not offered: the boot gate
    checks every start already."""

    ALLOC = "ALLOC"
    """Nodes in the ALLOC state (all CPUs allocated)."""
    ANY = "ANY"
    """Nodes in any state."""
    CYCLE = "CYCLE"
    """Spread the runs over ``HealthCheckInterval`` instead of every node at once; combined with the states."""
    IDLE = "IDLE"
    """Nodes in the IDLE state (drained idle nodes too: the check resumes those drained for one of its own checks
    once it passes, and leaves the others alone)."""
    MIXED = "MIXED"
    """Nodes in the MIXED state (some CPUs allocated)."""
    NONDRAINED_IDLE = "NONDRAINED_IDLE"
    """Nodes in the IDLE state and not drained."""


#: How often a node is re-checked between jobs (seconds): every 5 minutes, the library's choice (no AWS or SchedMD
#: figure); each run takes seconds (:data:`~fmconstructs.health.spec.IDLE_BUDGET_CAP_SECONDS` per check at most).
DEFAULT_IDLE_CHECK_INTERVAL_SECONDS = 300
#: Idle nodes only (a running job is not disturbed), spread over the interval (slurmctld is not asked by every node
#: at once).
DEFAULT_IDLE_CHECK_NODE_STATES = (HealthCheckNodeState.IDLE, HealthCheckNodeState.CYCLE)
# slurmd kills the program after 60 s (slurm.conf(5) HealthCheckProgram): a shorter interval would overlap runs.
# 65535: the largest value Slurm's 16-bit health_check_interval holds (UNCONFIRMED: slurm.h not read here).
_IDLE_CHECK_INTERVAL_RANGE = (60, 65535)
# Any catalog GPU type: the options are checked by building a spec with them (one set of rules, one message form).
_REFERENCE_TYPE = "p5.48xlarge"


@dataclass(frozen=True, kw_only=True)
class NodeHealthOptions:
    """Node-join checks for a backend's GPU nodes: the boot gate and the prolog checks.

    :param enabled: run the checks at all. Default True (``NodeHealthOptions(enabled=False)`` turns them off for one
        node group whose cluster has them on).
    :param dcgm_level: ``dcgmi diag -r`` level at boot (1-4), None: no DCGM at boot. Default 2 (NVIDIA: about two
        minutes; what ParallelCluster's GPU health check and PCS's MEDIUM deep health check run). Never in the prolog.
    :param prolog_checks: also run the lightweight checks (every check but DCGM) in a Slurm prolog before each job.
        Default True.
    :param budget_seconds: per-check budgets at boot; checks not named keep
        :data:`~fmconstructs.health.DEFAULT_BUDGET_SECONDS`.
    :param prolog_budget_seconds: the most any check may take in the prolog (1-60). Default 10.
    :param xid_policy: which Xids fail ``gpu-xid`` (the RESET and FATAL classes of
        :class:`~fmconstructs.health.xid.XidPolicy`); ``TrainingPlatform`` gives the same policy to the alerts of the
        workspace it creates, so one value moves an Xid for the checks, the alerts and remediation. Default
        :data:`~fmconstructs.health.xid.DEFAULT_XID_POLICY` (NVIDIA's Xid catalog).
    :param fatal_xids: deprecated: exactly these Xids fail ``gpu-xid`` (``XidPolicy.with_node_check_xids`` applied
        to ``xid_policy``; it is then None). Default None.
    :param idle_check_interval_seconds: re-check nodes between jobs this often (60-65535 s): the IDLE checks as
        Slurm's ``HealthCheckProgram`` with this ``HealthCheckInterval``; a failing node is drained with the check's
        reason and resumed when that check passes again (:func:`~fmconstructs.health.render_slurm_idle_check`).
        None: no checks between jobs. Default 300.
        PCS: cluster-wide, from the cluster's ``node_health`` (a GPU node group's own options can only turn them off
        for its nodes). ParallelCluster: not wired.
    :param idle_check_node_states: Slurm's ``HealthCheckNodeState`` for those checks. Default ``(IDLE, CYCLE)``.
    """

    enabled: bool = True
    dcgm_level: int | None = 2
    prolog_checks: bool = True
    budget_seconds: Mapping[CheckName, int] = field(default_factory=dict)
    prolog_budget_seconds: int = DEFAULT_PROLOG_BUDGET_SECONDS
    xid_policy: XidPolicy = DEFAULT_XID_POLICY
    fatal_xids: tuple[int, ...] | None = None
    idle_check_interval_seconds: int | None = DEFAULT_IDLE_CHECK_INTERVAL_SECONDS
    idle_check_node_states: tuple[HealthCheckNodeState, ...] = DEFAULT_IDLE_CHECK_NODE_STATES

    def __post_init__(self) -> None:
        check_bool("enabled", self.enabled)
        check_bool("prolog_checks", self.prolog_checks)
        if self.idle_check_interval_seconds is not None:
            low, high = _IDLE_CHECK_INTERVAL_RANGE
            check_count("idle_check_interval_seconds", self.idle_check_interval_seconds, minimum=low, maximum=high)
        object.__setattr__(self, "idle_check_node_states", _check_node_states(self.idle_check_node_states))
        # NodeCheckSpec checks the rest (levels, budgets against DCGM's nominal time, Xids, tokens refused).
        reference = self.spec_for(_REFERENCE_TYPE, efa_interfaces=0)
        object.__setattr__(self, "budget_seconds", MappingProxyType(dict(reference.budget_seconds)))
        object.__setattr__(self, "xid_policy", reference.xid_policy)
        object.__setattr__(self, "fatal_xids", None)

    def spec_for(
        self,
        instance_type: str,
        *,
        efa_interfaces: int | None = None,
        lustre_mount_point: str | None = None,
    ) -> NodeCheckSpec:
        """The checks for ``instance_type`` (catalog facts) with these options; see
        :meth:`NodeCheckSpec.for_instance_type` for ``efa_interfaces`` and ``lustre_mount_point``."""
        return NodeCheckSpec.for_instance_type(
            instance_type,
            efa_interfaces=efa_interfaces,
            lustre_mount_point=lustre_mount_point,
            dcgm_level=self.dcgm_level,
            budget_seconds=self.budget_seconds,
            xid_policy=self.xid_policy,
            fatal_xids=self.fatal_xids,
            prolog_budget_seconds=self.prolog_budget_seconds,
        )

    @property
    def idle_checks(self) -> bool:
        """Whether nodes are re-checked between jobs (enabled, with an interval)."""
        return self.enabled and self.idle_check_interval_seconds is not None

    @property
    def health_check_node_state(self) -> str:
        """``idle_check_node_states`` as Slurm's comma-separated ``HealthCheckNodeState`` value."""
        return ",".join(state.value for state in self.idle_check_node_states)

    def without_dcgm(self) -> NodeHealthOptions:
        """These options with ``dcgm_level=None`` (the service runs DCGM itself)."""
        return replace(self, dcgm_level=None)

    def prolog_total_seconds(self, instance_type: str, *, efa_interfaces: int | None = None) -> int:
        """The most the prolog checks can take on ``instance_type`` (every command at its budget)."""
        return self.spec_for(instance_type, efa_interfaces=efa_interfaces).total_budget_seconds(CheckMode.PROLOG)


def _check_node_states(value: object) -> tuple[HealthCheckNodeState, ...]:
    """A non-empty tuple of distinct :class:`HealthCheckNodeState` (a list is taken too)."""
    parameter = "idle_check_node_states"
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise FmTypeError(parameter, value, f"a tuple of HealthCheckNodeState ({one_of(HealthCheckNodeState)})")
    for index, state in enumerate(value):
        if not isinstance(state, HealthCheckNodeState):
            raise FmTypeError(
                f"{parameter}[{index}]", state, f"a HealthCheckNodeState ({one_of(HealthCheckNodeState)})"
            )
    if not value or len(set(value)) != len(value):
        raise FmValidationError(parameter, value, "at least one HealthCheckNodeState, without repeats")
    if set(value) == {HealthCheckNodeState.CYCLE}:
        raise FmValidationError(parameter, value, "node states besides CYCLE (CYCLE only spreads the runs)")
    return tuple(value)
