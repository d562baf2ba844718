"""What :class:`~fmconstructs.platform.TrainingPlatform` sets up around the jobs before capacity goes away, and Slurm
topology: :class:`PlatformCapacityEvents` (``capacity_block_events=``) and ``slurm_topology=``, with the rules that
say on which backend each can act.

**Before a Capacity Block ends** (:class:`~fmconstructs.capacity_events.CapacityBlockEvents`): the drain lead times
(:mod:`fmconstructs.capacity_events.lead_times`: 40 minutes acts on EC2's expiration warning; longer uses a one-time
schedule) and the job warning (:class:`~fmconstructs.capacity_events.JobWarning`: a signal to the Slurm jobs on the
block's nodes after the drain, an annotation and Event on the pods of the cordoned nodes). Per backend:

- PCS: drain and job warning through SSM Run Command on the login node group (``PcsOptions(login_nodes>=1)``; without
  one the job warning is refused, the drain skipped with the warning ``capacity-events-pcs-drain-no-login-nodes``).
- ParallelCluster: ``capacity_block_events=True`` (the default) notifies only, as before; a
  :class:`PlatformCapacityEvents` also drains the block's nodes and warns their jobs on the head node
  (``CapacityBlockEvents(parallelcluster_cluster_name=...)``).
- EKS: cordon (and scaling with ``CapacityBlockScaling.ON_BLOCK_EVENTS``) and the pod warning.
- HyperPod: its capacity is On-Demand or a training plan (``HyperPodOptions.capacity``), so there are no Capacity Block
  events to act on: a :class:`PlatformCapacityEvents` is refused.

The options need what makes the handler exist: a Capacity Block capacity (lead times; the job warning also on an
interruptible Capacity Reservation's reclaim warning) and observability (the alert topic); otherwise they are refused,
never ignored.

**Slurm topology** (``slurm_topology=True``): ParallelCluster only, on P5/P6 types EC2 describes
(:meth:`~fmconstructs.parallelcluster.ParallelCluster.enable_slurm_topology`: ``topology/tree`` refreshed from
DescribeInstanceTopology by a piece of the head node's OnNodeStart). PCS configures the topology plugin itself (per
queue, PCS User Guide "Network topology-aware scheduling in AWS PCS"; for UltraServer blocks) and accepts no
``TopologyPlugin`` setting, and how a queue turns it on is UNCONFIRMED; HyperPod applies its own topology
(UNCONFIRMED for P5/P6 on Slurm); EKS schedules by topology with Kueue (``EksOptions(scheduling=True)``), not
Slurm: each is refused with the reason (:mod:`fmconstructs.topology` has the sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._validate import check_instance
from ..capacity import Capacity, CapacityKind
from ..capacity_events import JobWarning
from ..capacity_events.lead_times import DEFAULT_LEAD_MINUTES, check_lead_minutes
from ..capacity_events.lead_times import CapacityKind as BlockKind
from ..errors import FmTypeError, FmValidationError

__all__ = [
    "PlatformCapacityEvents",
    "capacity_events_act_on_a_block",
    "check_capacity_block_events",
    "job_warning_needs_login_nodes",
]


@dataclass(frozen=True, kw_only=True)
class PlatformCapacityEvents:
    """The expiry actions of the platform's Capacity Block events (see the module docstring).

    :param drain_lead_minutes: minutes before an instance Capacity Block ends when the drain, cordon and job warning
        run: 40 (EC2's expiration warning) to 1440. Default 40.
    :param ultraserver_drain_lead_minutes: the same for an UltraServer Capacity Block: more than 60. Default 70.
    :param job_warning: the job-level warning (:class:`~fmconstructs.capacity_events.JobWarning`: default SIGUSR1
        to every job step), or None for none. Default None (an unhandled SIGUSR1 ends a process).
    """

    drain_lead_minutes: int = DEFAULT_LEAD_MINUTES[BlockKind.INSTANCES]
    ultraserver_drain_lead_minutes: int = DEFAULT_LEAD_MINUTES[BlockKind.ULTRASERVER]
    job_warning: JobWarning | None = None

    def __post_init__(self) -> None:
        check_lead_minutes("capacity_block_events.drain_lead_minutes", self.drain_lead_minutes, BlockKind.INSTANCES)
        check_lead_minutes(
            "capacity_block_events.ultraserver_drain_lead_minutes",
            self.ultraserver_drain_lead_minutes,
            BlockKind.ULTRASERVER,
        )
        if self.job_warning is not None:
            check_instance("capacity_block_events.job_warning", self.job_warning, JobWarning, "a JobWarning or None")

    @property
    def leads_are_default(self) -> bool:
        return (self.drain_lead_minutes, self.ultraserver_drain_lead_minutes) == (
            DEFAULT_LEAD_MINUTES[BlockKind.INSTANCES],
            DEFAULT_LEAD_MINUTES[BlockKind.ULTRASERVER],
        )

    def construct_props(self) -> dict[str, Any]:
        """The :class:`~fmconstructs.capacity_events.CapacityBlockEvents` keyword arguments these options set."""
        return {
            "drain_lead_minutes": self.drain_lead_minutes,
            "ultraserver_drain_lead_minutes": self.ultraserver_drain_lead_minutes,
            "job_warning": self.job_warning,
        }


def check_capacity_block_events(value: object) -> PlatformCapacityEvents | None:
    """``capacity_block_events``: True or False, or a :class:`PlatformCapacityEvents` (on, with these options);
    returns the options (None for a bool)."""
    if isinstance(value, bool):
        return None
    if not isinstance(value, PlatformCapacityEvents):
        raise FmTypeError("capacity_block_events", value, "True, False or a PlatformCapacityEvents")
    return value


def capacity_events_act_on_a_block(
    options: PlatformCapacityEvents, *, capacity: Capacity, has_observability: bool
) -> None:
    """Options need a handler: a Capacity Block (lead times) or an interruptible reservation (job warning only), and
    observability (the alert topic)."""
    interruptible = capacity.kind is CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION
    if not (capacity.is_capacity_block or (interruptible and options.leads_are_default)):
        raise FmValidationError(
            "capacity_block_events",
            "PlatformCapacityEvents",
            "True or False unless capacity is a CapacityBlock or UltraServerCapacityBlock (or an interruptible "
            "Capacity Reservation with the default lead times): no Capacity Block event would use these options",
        )
    if not has_observability:
        raise FmValidationError(
            "capacity_block_events",
            "PlatformCapacityEvents",
            "True or False without observability (the Capacity Block events handler needs the alert topic)",
        )


def job_warning_needs_login_nodes(*, job_warning: JobWarning | None, login_nodes: int) -> None:
    """PCS: the job warning is sent from a login node."""
    if job_warning is not None and login_nodes == 0:
        raise FmValidationError(
            "capacity_block_events.job_warning",
            "given",
            "None with PcsOptions(login_nodes=0) (the signal is sent by SSM Run Command on a login node)",
        )
