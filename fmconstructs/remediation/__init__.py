"""Remediation of faulty nodes on every backend: drain, then reboot or replace, rate-limited (issue 20 section 3).

Sits above the backends, beside :mod:`fmconstructs.capacity_events`: :class:`NodeRemediation` takes the backend's
specifics as data (:class:`RemediationTarget`) and what to do as a :class:`RemediationPolicy`. The handler's shared
runtime (structured logs, idempotence by a lease, the rate limit, the deadline, dry run, notification) is
:mod:`fmconstructs.remediation.handler.runtime`.

What the handler does, in short (details: :mod:`fmconstructs.remediation.handler.index`):

- It acts, then records: a lease in the DynamoDB ledger guards a fault while it is handled; "handled" is written
  only after the action succeeded, so a Lambda timeout mid-action is acted on again by the retry. Every Kubernetes
  call has a timeout and is retried (429 with Retry-After, 5xx, connection errors) within the invocation's
  remaining time; faults the deadline leaves are notified and retried.
- Slurm reasons start with ``fmconstructs: remediation`` (an ``fmconstructs:`` reason, which the boot gate resumes
  after a healthy reboot) and keep the check's failure; a node an operator drained is never touched
  (``operator-drained``). On EKS a cordon carries ``fmconstructs.io/cordoned-by: remediation``; before a reboot the
  handler puts the ``fmconstructs.io/node-checks=pending:NoSchedule`` taint back on a node with a node-check gate, so
  the gate checks the node again at boot and, on pass, lifts the taint and the marked cordon (a failed check keeps
  both); a node an operator cordoned is left alone (``operator-cordoned``).
- With the default policy, a REPLACE drains the node and replaces it once no job runs on it (at once for a node whose
  prolog check failed, since Slurm requeued the job); see :attr:`JobKill.NEVER`. Beyond ``max_replacements_per_hour``
  the nodes are only drained (``rate-limited``), and the construct's CloudWatch alarm on those log lines notifies the
  alert topic that replacement is held back.
"""

from __future__ import annotations

from .construct import EVICTION_RULES, HELD_BACK_METRIC, HELD_BACK_NAMESPACE, NodeRemediation
from .policy import (
    DEFAULT_ACTIONS,
    DEFAULT_ALERT_TRIGGERS,
    XID_CLASS_ACTIONS,
    XID_CLASS_TRIGGERS,
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
    "XID_CLASS_ACTIONS",
    "XID_CLASS_TRIGGERS",
    "Action",
    "Backend",
    "JobKill",
    "NodeRemediation",
    "RemediationPolicy",
    "RemediationTarget",
    "Trigger",
]
