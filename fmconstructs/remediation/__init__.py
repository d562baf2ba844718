"""Remediation of faulty nodes on every backend: drain, then reboot or replace, rate-limited (issue 20 section 3).

Sits above the backends, beside :mod:`fmconstructs.capacity_events`: :class:`NodeRemediation` takes the backend's
specifics as data (:class:`RemediationTarget`) and what to do as a :class:`RemediationPolicy`. The handler's shared
runtime (structured logs, idempotence, the rate limit, dry run, notification) is
:mod:`fmconstructs.remediation.handler.runtime`.
"""

from __future__ import annotations

from .construct import EVICTION_RULES, HELD_BACK_METRIC, HELD_BACK_NAMESPACE, NodeRemediation
from .policy import (
    DEFAULT_ACTIONS,
    DEFAULT_ALERT_TRIGGERS,
    Action,
    Backend,
    JobKill,
    RemediationPolicy,
    RemediationTarget,
    Trigger,
)

__all__ = [
    "DEFAULT_ACTIONS",
    "DEFAULT_ALERT_TRIGGERS",
    "EVICTION_RULES",
    "HELD_BACK_METRIC",
    "HELD_BACK_NAMESPACE",
    "Action",
    "Backend",
    "JobKill",
    "NodeRemediation",
    "RemediationPolicy",
    "RemediationTarget",
    "Trigger",
]
