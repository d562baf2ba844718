"""When the expiry actions of :class:`~fmconstructs.capacity_events.CapacityBlockEvents` run, per Capacity Block kind.

The expiry actions (job warning, Slurm drain, EKS cordon, scaling to 0) must finish before EC2 starts terminating the
block's instances. How early that is depends on the kind of block:

- an instance Capacity Block: EC2 "begin[s] to terminate any instances that are still running" thirty minutes before
  the reservation expires (EC2 User Guide, "Work with Capacity Blocks", capacity-blocks-using; EC2 Auto Scaling User
  Guide launch-template-capacity-blocks: "Amazon EC2 will terminate any instances that are still running 30 minutes
  before the end time of the Capacity Block");
- an UltraServer Capacity Block: 60 minutes before the end. UNCONFIRMED: no AWS page seen says so (searched the EC2
  User Guide Capacity Blocks pages and the CapacityBlock API reference); a third-party comparison
  (dev.classmethod.jp, "Instance CB と UltraServer CB の違い", 2026-02) reports it for P6e-GB200 UltraServer blocks.

EC2 sends its "Capacity Block Expiration Warning" event forty minutes before the end (EC2 User Guide, "Monitor
Capacity Blocks using EventBridge", capacity-blocks-monitor). A lead time of exactly 40 minutes acts on that event; a
longer one cannot (the event comes too late), so the handler creates an EventBridge Scheduler one-time schedule at
``end - lead`` when the block is delivered (:mod:`fmconstructs.capacity_events.handler.lead`). Pure values, no aws_cdk.
"""

from __future__ import annotations

from enum import Enum

from .._validate import check_number
from ..errors import is_token
from . import rules as _rules


class CapacityKind(str, Enum):
    """The kind of a Capacity Block, told apart at run time by DescribeCapacityBlocks ``UltraserverType``."""

    #: A Capacity Block of instances.
    INSTANCES = "instances"
    #: A Capacity Block of UltraServers (CapacityBlock ``ultraserverType`` set, EC2 API reference CapacityBlock).
    ULTRASERVER = "ultraserver"


#: Minutes before a block's end when EC2 starts terminating its instances, per kind (see the module docstring; the
#: UltraServer value is UNCONFIRMED).
TERMINATION_LEAD_MINUTES: dict[CapacityKind, int] = {CapacityKind.INSTANCES: 30, CapacityKind.ULTRASERVER: 60}
#: Minutes before the end when EC2 sends the Capacity Block Expiration Warning (capacity-blocks-monitor: "Forty
#: minutes before your Capacity Block reservation ends").
EXPIRY_WARNING_MINUTES = 40
#: Default lead times: the EC2 warning itself for instance blocks (10 minutes before termination starts, EC2's own
#: margin); for UltraServer blocks the same 10-minute margin before the (UNCONFIRMED) 60-minute termination start.
DEFAULT_LEAD_MINUTES: dict[CapacityKind, int] = {CapacityKind.INSTANCES: 40, CapacityKind.ULTRASERVER: 70}
#: The longest lead time accepted: one day, the shortest Capacity Block (EC2 User Guide capacity-blocks-purchase:
#: durations "in 1-day increments up to 14 days"); a longer lead would act before the block starts.
MAX_LEAD_MINUTES = 24 * 60


def check_lead_minutes(parameter: str, value: object, kind: CapacityKind) -> object:
    """A lead time in whole minutes for blocks of ``kind``: at least the 40 minutes of EC2's warning (the earliest
    moment an event tells the handler; a later start would only shorten the drain), more than the minutes before the
    end when termination starts for that kind, at most :data:`MAX_LEAD_MINUTES`. Deploy-time values pass."""
    checked = check_number(parameter, value, integer=True, minimum=EXPIRY_WARNING_MINUTES, unit="minutes")
    checked = check_number(parameter, checked, maximum=MAX_LEAD_MINUTES, unit="minutes")
    if is_token(checked):
        return checked
    _rules.the_drain_starts_before_termination(parameter=parameter, lead_minutes=int(checked), given=value, kind=kind)
    return int(checked)


def needs_schedule(lead_minutes: object) -> bool:
    """True when a lead time cannot be met by EC2's warning event (longer than 40 minutes, or a deploy-time value)."""
    return is_token(lead_minutes) or int(str(lead_minutes)) > EXPIRY_WARNING_MINUTES


def lead_minutes_json(leads: dict[CapacityKind, object]) -> dict[str, object]:
    """The ``LEAD_MINUTES`` handler setting: ``{"instances": 40, "ultraserver": 70}`` (values may be tokens)."""
    return {kind.value: leads[kind] for kind in CapacityKind}


__all__ = [
    "DEFAULT_LEAD_MINUTES",
    "EXPIRY_WARNING_MINUTES",
    "MAX_LEAD_MINUTES",
    "TERMINATION_LEAD_MINUTES",
    "CapacityKind",
    "check_lead_minutes",
    "lead_minutes_json",
    "needs_schedule",
]
