"""Lambda handler of :class:`fmconstructs.remediation.NodeRemediation` (standard library + boto3 only).

Input: Alertmanager notifications from the alert topic (SNS) and AWS Health EC2 scheduled-change events
(EventBridge); :mod:`faults` turns them into (instance, trigger) faults. For each fault, while the invocation's
deadline allows (:class:`runtime.Deadline`), the handler:

1. checks that the instance belongs to the cluster (EC2 tags, Auto Scaling membership or the Kubernetes node); an
   EKS alert names the node, not the instance (the EKS scrape jobs label series with ``node``): the instance is the
   one in that node's ``spec.providerID``;
2. takes a lease on (instance, trigger) in the ledger (:meth:`runtime.Ledger.lease`): a fault handled within the
   hour is a ``duplicate``, one another invocation is handling now ``in-progress`` (both logged and skipped);
3. in dry run, notifies what it would do;
4. otherwise acts as the policy says for the backend (``TARGET``): a replacement first takes a token of the cluster's
   hourly limit (``max_replacements_per_hour``); without one the node is only drained (``rate-limited``; on
   ParallelCluster held in a Slurm reservation instead, as clustermgtd would replace a drained node at once);
5. records the fault as handled only *after* the action succeeded; a failure, a deferral or the deadline releases the
   lease, so that a redelivery acts again (every action is idempotent: draining a drained node, terminating a
   terminating instance, cordoning a node remediation cordoned);
6. notifies the alert topic of what it did or why it did not.

Faults the deadline leaves unreached are notified in one notice (``not-reached``) and left unclaimed; the Lambda entry
point then fails the invocation, so that Lambda's own retry delivers them again (then the dead-letter queue).

Replacement on the Slurm backends (PCS, ParallelCluster): the node is drained; when Slurm shows no job on it
(``squeue``, reported by the script), it is set DOWN and replaced now (PCS: the instance is terminated; ParallelCluster:
clustermgtd replaces a DOWN node). While jobs run and ``job_kill`` is ``never``: PCS defers (``replace-deferred``, not
recorded: the next delivery of the alert, Alertmanager's ``repeat_interval``, retries once the node is idle);
ParallelCluster keeps it DRAIN, which clustermgtd replaces once its jobs end (``replace-requested``). A node that
failed a check in a prolog is idle (Slurm requeued the job), so it is replaced at once. A node an operator drained
(a Slurm drain reason that is not fmconstructs' nor one Slurm sets itself) is left alone (``operator-drained``); on
EKS a node cordoned without remediation's annotation likewise (``operator-cordoned``).

HyperPod (Slurm): membership, replacement and reboot through the SageMaker API (ListClusterNodes,
BatchReplaceClusterNodes, BatchRebootClusterNodes; :func:`act_hyperpod`); SSM Run Command does not reach HyperPod
nodes, so the handler sets no Slurm state there: a drain only notifies, a rate-limited replacement leaves the node as
it is, and an operator's drain cannot be seen (the node-side checks never touch it).

Jobs are ended only when the policy's ``job_kill`` is ``fatal`` and the trigger is one of its ``fatal_triggers``.

Outcomes (``outcome`` in each record, the log line and the notice's subject): ``not-in-cluster``, ``instance-gone``,
``duplicate``, ``in-progress`` (logged only); ``dry-run``, ``notified``, ``drained``, ``reboot-scheduled``,
``rebooted``, ``replaced``, ``replace-requested``, ``rate-limited``, ``operator-drained``, ``operator-cordoned``
(recorded); ``replace-deferred``, ``reboot-deferred``, ``access-denied``, ``throttled``, ``failed``, ``not-finished``,
``not-reached`` (not recorded: retried). Every ``rate-limited`` is one log line
``{"event": "remediation", "outcome": "rate-limited", "cluster": ...}``, which the construct's metric filter counts.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

try:  # package import (tests, fmconstructs)
    from . import backends as kb
    from . import faults as fl
    from . import kube as kc
    from . import runtime as rt
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, index a top-level module
    kb = importlib.import_module("backends")
    fl = importlib.import_module("faults")
    kc = importlib.import_module("kube")
    rt = importlib.import_module("runtime")

# Bounded AWS calls: botocore's standard retry mode, and connect/read timeouts far below botocore's 60 s defaults
# (botocore config reference: connect_timeout and read_timeout "default ... 60 seconds").
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=5, read_timeout=20)
SOURCE = "remediation"
#: Every Slurm reason and Kubernetes annotation reason remediation sets starts with this.
REASON_PREFIX = kb.REMEDIATION_REASON_PREFIX
#: A fault is not started with less time than this left (a lease, an SSM command and its result).
FAULT_MIN_S = 15.0
#: Outcomes that leave the fault unrecorded, so that the next delivery acts again.
RETRIED_OUTCOMES = frozenset({"replace-deferred", "reboot-deferred"})
#: Outcomes counted as unfinished: the Lambda entry point fails the invocation so that Lambda retries it.
UNFINISHED_OUTCOMES = frozenset({"not-reached", "not-finished"})
_GONE_STATES = frozenset({"shutting-down", "terminated"})


class Unfinished(Exception):
    """Raised by :func:`handler` when faults were not reached or not finished: Lambda retries the event."""


@dataclass
class Context:
    """What one invocation works with: clients, the decoded policy and target, the ledger, the notifier, the
    deadline."""

    clients: dict[str, Any]
    policy: dict[str, Any]
    target: dict[str, Any]
    ledger: rt.Ledger
    notifier: rt.Notifier
    deadline: rt.Deadline
    kube_factory: Callable[[rt.Deadline], Any] | None = None
    sleep: Callable[[float], None] = time.sleep
    _kube: Any = field(default=None, init=False)
    taken: bool = field(default=False, init=False)

    def kube(self) -> Any:
        if self._kube is None:
            if self.kube_factory is not None:
                self._kube = self.kube_factory(self.deadline)
            else:
                eks, sts = self.clients["eks"], self.clients["sts"]
                self._kube = kc.kube_for_cluster(eks, sts, self.target["cluster"], self.deadline)
        return self._kube

    def take(self) -> bool:
        """Take a replacement token of the cluster's hourly limit (remembered, to give it back on failure)."""
        self.taken = self.ledger.take(self.target["cluster"], int(self.policy["max_replacements_per_hour"]))
        return self.taken

    def give_back(self) -> None:
        if self.taken:
            self.ledger.give_back(self.target["cluster"])
            self.taken = False


@dataclass
class Outcome:
    outcome: str
    lines: list[str]


def reason_of(fault: fl.Fault) -> str:
    """``fmconstructs: remediation <trigger> (<source>)``: an ``fmconstructs:`` reason, which the boot gate resumes."""
    return f"{REASON_PREFIX} {fault.trigger} ({fault.source})"


def detail_of(fault: fl.Fault) -> str:
    """The check's failure when the alert says it (labels ``check`` and ``reason``, without the ``fmconstructs:``
    prefix), else ''."""
    reason = fault.details.get("reason", "")
    if reason.startswith(fl.NODE_CHECK_REASON_PREFIX):
        reason = reason[len(fl.NODE_CHECK_REASON_PREFIX) :].strip()
    check = fault.details.get("check", "")
    if check and not reason.startswith(check):
        return f"{check}: {reason}" if reason else check
    return reason


def _slurm(ctx: Context, fault: fl.Fault, instance: dict[str, Any], mode: str) -> kb.SlurmResult:
    host = kb.slurm_host(ctx.clients["ec2"], ctx.target)
    if host is None:
        raise RuntimeError("no running login/head node to run Slurm commands on")
    script = kb.slurm_script(kb.addresses_of(instance), mode, reason_of(fault), detail_of(fault))
    comment = f"{mode} {fault.instance_id} ({fault.trigger})"
    return kb.run_slurm(ctx.clients["ssm"], host, script, comment, deadline=ctx.deadline, sleep=ctx.sleep)


def _jobs(done: kb.SlurmResult) -> str:
    return f"; {done.jobs} job(s) on it" if done.jobs >= 0 else ""


def _operator_drained(done: kb.SlurmResult) -> Outcome:
    previous = done.fields.get("previous_reason", "")
    return Outcome(
        "operator-drained",
        [f"Left alone: drained by an operator ({done.describe()}, reason {previous!r}); state and reason unchanged."],
    )


def act_slurm(ctx: Context, fault: fl.Fault, instance: dict[str, Any], action: str, kill: bool) -> Outcome:
    """PCS and ParallelCluster: Slurm state through SSM Run Command; PCS replacement by terminating the instance.

    ParallelCluster replaces a static node whose Slurm state is DRAIN or DOWN (User Guide slurm-workload-manager-v3:
    static nodes are not terminated "unless ... the failure of Slurm or Amazon EC2 health checks and the change of the
    Slurm node status to DRAIN or DOWN"); clustermgtd waits for a DRAIN node's jobs (UNCONFIRMED: seen in the
    aws-parallelcluster-node CHANGELOG, not in the User Guide). PCS: terminating the instance lets the node group
    launch another to keep its minimum count (UNCONFIRMED: no PCS page seen that says so; PCS health monitoring with
    repairAction REPLACE "Replaces the instance after running jobs finish", PCS API reference HealthMonitoring, is the
    documented way PCS replaces nodes itself)."""
    if action in ("drain", "reboot"):
        done = _slurm(ctx, fault, instance, kb.SLURM_DRAIN if action == "drain" else kb.SLURM_REBOOT)
        if done.result == "operator-drained":
            return _operator_drained(done)
        if action == "drain":
            return Outcome("drained", [f"Slurm DRAIN ({done.describe()}){_jobs(done)}."])
        return Outcome("reboot-scheduled", [f"Slurm reboot ASAP ({done.describe()}): after its jobs{_jobs(done)}."])
    return _replace_slurm(ctx, fault, instance, kill)


def _replace_slurm(ctx: Context, fault: fl.Fault, instance: dict[str, Any], kill: bool) -> Outcome:
    pcs = ctx.target["backend"] == "pcs"
    if not ctx.take():
        # ParallelCluster: a drained node would be replaced by clustermgtd at once, past the limit; hold it instead.
        done = _slurm(ctx, fault, instance, kb.SLURM_DRAIN if pcs else kb.SLURM_HOLD)
        if done.result == "operator-drained":
            return _operator_drained(done)
        limit = ctx.policy["max_replacements_per_hour"]
        kept = (
            f"held out of work by reservation {done.fields.get('reservation', '?')}"
            if done.result == "held"
            else "drained only"
        )
        return Outcome(
            "rate-limited",
            [f"Replacement held back: {limit} replacement(s) per hour reached; {kept} ({done.describe()})."],
        )
    done = _slurm(ctx, fault, instance, kb.SLURM_DOWN if kill else kb.SLURM_REPLACE)
    if done.result == "operator-drained":
        ctx.give_back()
        return _operator_drained(done)
    if done.result == "busy":
        if not pcs:
            return Outcome(
                "replace-requested",
                [f"Slurm DRAIN ({done.describe()}){_jobs(done)}: clustermgtd replaces the node after its jobs."],
            )
        ctx.give_back()
        return Outcome(
            "replace-deferred",
            [
                f"Drained ({done.describe()}){_jobs(done)}: not replaced while jobs run (job_kill never). Not "
                "recorded: the next delivery of the alert (Alertmanager repeat) replaces the node once it is idle."
            ],
        )
    ending = " (its jobs end)" if done.jobs > 0 else " (idle)"
    if pcs:
        ctx.clients["ec2"].terminate_instances(InstanceIds=[fault.instance_id])
        return Outcome("replaced", [f"Slurm DOWN{ending} ({done.describe()}), instance terminated."])
    return Outcome("replace-requested", [f"Slurm DOWN{ending} ({done.describe()}): clustermgtd replaces the node now."])


def act_eks(ctx: Context, fault: fl.Fault, node: str, action: str, kill: bool) -> Outcome:
    """EKS: cordon (marked ``fmconstructs.io/cordoned-by: remediation``) and evict through the Eviction API
    (PodDisruptionBudgets respected), then reboot or terminate. Before a reboot the node-checks taint goes back on a
    node with a gate, so the EKS node-check gate checks it at boot and uncordons it (the mark) once its checks pass; a
    node cordoned without the mark is an operator's and is left alone."""
    detail = detail_of(fault)
    reason = reason_of(fault) + (f": {detail}" if detail else "")
    drained = kc.drain_node(ctx.kube(), node, reason[: kb.REASON_MAX_CHARS])
    if drained.operator:
        return Outcome(
            "operator-cordoned",
            [f"Left alone: node {node} was cordoned without {kc.CORDONED_BY_ANNOTATION} (an operator's cordon)."],
        )
    lines = [f"Node {node} cordoned ({kc.CORDONED_BY_ANNOTATION}); evicted {len(drained.evicted)} pod(s)."]
    if drained.blocked:
        lines.append(f"Eviction refused by a PodDisruptionBudget for: {', '.join(drained.blocked)}.")
    if action == "drain":
        return Outcome("drained", lines)
    if drained.blocked and not kill:
        return Outcome(f"{action}-deferred", [*lines, "Not rebooted or replaced while pods remain (job_kill)."])
    ec2 = ctx.clients["ec2"]
    if action == "reboot":
        gated = kc.pend_node_checks(ctx.kube(), node)
        ec2.reboot_instances(InstanceIds=[fault.instance_id])
        if gated:
            return Outcome(
                "rebooted",
                [
                    *lines,
                    f"{kc.NODE_CHECKS_TAINT_KEY} taint put back and instance rebooted: the node-check gate checks it "
                    "at boot and uncordons it when the checks pass (a failed check keeps it cordoned).",
                ],
            )
        return Outcome(
            "rebooted",
            [
                *lines,
                "Instance rebooted. The node has no node-check gate: uncordon it (kubectl uncordon) when healthy.",
            ],
        )
    if not ctx.take():
        return Outcome("rate-limited", [*lines, "Replacement held back: the hourly limit is reached; cordoned only."])
    ec2.terminate_instances(InstanceIds=[fault.instance_id])
    return Outcome("replaced", [*lines, "Instance terminated: its node group launches a replacement."])


def act_asg(ctx: Context, fault: fl.Fault, action: str, kill: bool) -> Outcome:
    """Self-managed Auto Scaling group: no scheduler to drain; reboot or replace only when jobs may end."""
    if action == "drain":
        return Outcome("notified", ["An Auto Scaling group has no scheduler to drain: notified only."])
    if not kill:
        return Outcome(f"{action}-deferred", [f"Not {action}ed: it would end running work (job_kill)."])
    if action == "reboot":
        ctx.clients["ec2"].reboot_instances(InstanceIds=[fault.instance_id])
        return Outcome("rebooted", ["Instance rebooted."])
    if not ctx.take():
        return Outcome("rate-limited", ["Replacement held back: the hourly limit is reached; not replaced."])
    kb.set_unhealthy(ctx.clients["autoscaling"], fault.instance_id)
    return Outcome("replaced", ["Auto Scaling health set to Unhealthy: the group replaces the instance."])


def act_hyperpod(ctx: Context, fault: fl.Fault, action: str, kill: bool) -> Outcome:
    """SageMaker HyperPod (Slurm): BatchReplaceClusterNodes / BatchRebootClusterNodes, no Slurm commands (SSM Run
    Command does not reach HyperPod nodes: handler/backends.py). So the handler neither drains nor sees the node's
    jobs there: a drain only notifies, and a reboot or a replacement acts at once when jobs may end (``kill``) or the
    trigger is a failed node check (Slurm took that node out of work already: a failed prolog drains it and requeues
    its job; the boot gate drains it), else it is deferred. HyperPod then reboots or replaces the instance itself
    (API reference BatchReplaceClusterNodes: "terminates the specified instances and provisions new replacement
    instances with the same configuration"; BatchRebootClusterNodes calls EC2 RebootInstances)."""
    if action == "drain":
        return Outcome(
            "notified",
            [
                "HyperPod: the handler cannot drain (SSM Run Command does not reach HyperPod nodes): notified only; "
                "the node's own checks drain it when they fail."
            ],
        )
    if not kill and fault.trigger != fl.NODE_CHECK_FAILED_TRIGGER:
        return Outcome(
            f"{action}-deferred",
            [
                f"Not {action}ed: HyperPod's {action} ends what runs on the node and the handler cannot see its jobs "
                "there (job_kill). Not recorded: the next delivery of the alert tries again."
            ],
        )
    sagemaker, cluster = ctx.clients["sagemaker"], ctx.target["cluster"]
    if action == "reboot":
        kb.hyperpod_act(sagemaker, kb.HYPERPOD_REBOOT, cluster, fault.instance_id)
        return Outcome("rebooted", ["BatchRebootClusterNodes: HyperPod reboots the instance."])
    if not ctx.take():
        limit = ctx.policy["max_replacements_per_hour"]
        return Outcome(
            "rate-limited",
            [
                f"Replacement held back: {limit} replacement(s) per hour reached; not replaced and not drained (the "
                "handler sets no Slurm state on HyperPod; the node's own checks keep failing jobs off it)."
            ],
        )
    kb.hyperpod_act(sagemaker, kb.HYPERPOD_REPLACE, cluster, fault.instance_id)
    return Outcome("replaced", ["BatchReplaceClusterNodes: HyperPod replaces the instance with a new one."])


def _hyperpod_membership(ctx: Context, fault: fl.Fault) -> tuple[str, Any]:
    node = kb.hyperpod_node(ctx.clients["sagemaker"], ctx.target["cluster"], instance_id=fault.instance_id)
    if not node:
        return "not-in-cluster", node
    status = str((node.get("InstanceStatus") or {}).get("Status") or "")
    return ("instance-gone" if status in kb.HYPERPOD_GONE_STATUSES else "member"), node


def membership(ctx: Context, fault: fl.Fault) -> tuple[str, Any]:
    """``member``, ``not-in-cluster`` or ``instance-gone`` (shutting down or terminated: nothing left to do), and what
    the action needs (the instance or the node name)."""
    backend = ctx.target["backend"]
    if backend == "eks":
        node = ctx.kube().node_for_instance(fault.instance_id)
        return ("member" if node else "not-in-cluster"), node
    if backend == "hyperpod":
        return _hyperpod_membership(ctx, fault)
    if backend == "auto-scaling":
        member = kb.in_auto_scaling_group(ctx.clients["autoscaling"], fault.instance_id, ctx.target["cluster"])
        return ("member" if member else "not-in-cluster"), None
    instance = kb.describe(ctx.clients["ec2"], fault.instance_id)
    tags = instance.get("Tags") or {}
    if backend == "pcs":
        member = tags.get(kb.PCS_NODE_GROUP_TAG) in ctx.target["compute_node_group_ids"]
    else:
        member = tags.get(kb.PC_CLUSTER_TAG) == ctx.target["cluster"] and tags.get(kb.PC_NODE_TYPE_TAG) == kb.PC_COMPUTE
    if member and str((instance.get("State") or {}).get("Name") or "") in _GONE_STATES:
        return "instance-gone", instance
    return ("member" if member else "not-in-cluster"), instance


def _act(ctx: Context, fault: fl.Fault, subject: Any, action: str, kill: bool) -> Outcome:
    if action == "notify":
        return Outcome("notified", ["The policy only notifies for this trigger."])
    backend = ctx.target["backend"]
    if backend == "eks":
        return act_eks(ctx, fault, subject, action, kill)
    if backend == "auto-scaling":
        return act_asg(ctx, fault, action, kill)
    if backend == "hyperpod":
        return act_hyperpod(ctx, fault, action, kill)
    return act_slurm(ctx, fault, subject, action, kill)


def _header(ctx: Context, fault: fl.Fault, action: str) -> list[str]:
    lines = [
        f"Cluster {ctx.target['cluster']} ({ctx.target['backend']}): {fault.instance_id}",
        f"Trigger: {fault.trigger} from {fault.source}; policy action: {action}.",
    ]
    if fault.starts_at:
        lines.append(f"Scheduled start: {fault.starts_at} (acted on ahead of it).")
    lines += [f"{key}: {value}" for key, value in sorted(fault.details.items()) if value]
    return lines


def _record_quietly(step: Callable[[], None], record: dict[str, Any]) -> None:
    """Complete or release a lease; a failure is logged, not raised (the action happened; the lease expires)."""
    try:
        step()
    except Exception as error:
        rt.log("ledger-failed", **record, error=str(error)[:500])


def _run_action(ctx: Context, fault: fl.Fault, lease: rt.Lease, subject: Any, record: dict[str, Any]) -> Outcome:
    """Act, then record: complete the lease after success, release it after a failure or a deferral."""
    action, kill = record["action"], record["job_kill"]
    ctx.taken = False
    try:
        result = _act(ctx, fault, subject, action, kill)
    except Exception as error:  # every failure is notified; a redelivery may retry it
        _record_quietly(lambda: ctx.ledger.release(lease), record)
        _record_quietly(ctx.give_back, record)  # the replacement it paid for did not happen
        record["error"] = str(error)[:500]
        return Outcome(rt.outcome_of(error), [f"{action} FAILED: {error}"[:1000]])
    if result.outcome in RETRIED_OUTCOMES:
        _record_quietly(lambda: ctx.ledger.release(lease), record)
    else:
        _record_quietly(lambda: ctx.ledger.complete(lease), record)
    return result


def with_instance(ctx: Context, fault: fl.Fault) -> fl.Fault:
    """An EKS alert names the node (label ``node``), not the instance: the instance of that node
    (``spec.providerID``); on HyperPod a node named after its private DNS host name (``ip-10-1-2-3``, how HyperPod
    names Slurm nodes) is the instance ListClusterNodes gives that ``PrivateDnsHostname``; ``instance_id`` stays ''
    for a node that is gone or on another backend."""
    if fault.instance_id or not fault.node:
        return fault
    if ctx.target["backend"] == "hyperpod":
        node = kb.hyperpod_node(ctx.clients["sagemaker"], ctx.target["cluster"], hostname=fault.node)
        return dataclasses.replace(fault, instance_id=str(node.get("InstanceId") or ""))
    if ctx.target["backend"] != "eks":
        return fault
    return dataclasses.replace(fault, instance_id=ctx.kube().instance_of_node(fault.node))


def remediate(ctx: Context, fault: fl.Fault) -> dict[str, Any]:
    """Steps 1-6 of the module docstring for one fault; returns what happened (also logged)."""
    fault = with_instance(ctx, fault)
    policy = ctx.policy
    action = str(policy["actions"].get(fault.trigger, "notify"))
    kill = policy["job_kill"] == "fatal" and fault.trigger in policy["fatal_triggers"]
    record: dict[str, Any] = {
        "cluster": ctx.target["cluster"],
        "instance": fault.instance_id,
        "trigger": fault.trigger,
        "action": action,
    }
    if not fault.instance_id:  # an alert naming a node that is not (or no longer) in the cluster
        record.update(instance=fault.node, outcome="not-in-cluster")
        rt.log("skipped", **record)
        return record
    status, subject = membership(ctx, fault)
    if status != "member":
        record["outcome"] = status
        rt.log("skipped", **record)
        return record
    lease = ctx.ledger.lease(f"{fault.instance_id}#{fault.trigger}", ctx.deadline.remaining() + rt.LEASE_MARGIN_S)
    if not lease.taken:
        record["outcome"] = "duplicate" if lease.state == "done" else "in-progress"
        rt.log("skipped", **record)
        return record
    header = _header(ctx, fault, action)
    if policy["dry_run"]:
        record["outcome"] = "dry-run"
        ctx.notifier.notify(
            f"[DRY RUN] would {action} {fault.instance_id} ({fault.trigger})",
            [*header, f"Dry run: nothing done. Would {action}{' (jobs may end)' if kill else ''}."],
        )
        _record_quietly(lambda: ctx.ledger.complete(lease), record)
        rt.log("remediation", **record)
        return record
    result = _run_action(ctx, fault, lease, subject, {**record, "job_kill": kill})
    record["outcome"] = result.outcome
    ctx.notifier.notify(f"[{result.outcome}] {action} {fault.instance_id} ({fault.trigger})", [*header, *result.lines])
    rt.log("remediation", **record)
    return record


def _failed_record(ctx: Context, fault: fl.Fault, error: Exception) -> dict[str, Any]:
    """The ledger or a membership lookup failed before any action: notify and go on."""
    outcome = rt.outcome_of(error)
    rt.log("remediation-error", instance=fault.instance_id, trigger=fault.trigger, outcome=outcome, error=str(error))
    ctx.notifier.notify(
        f"[{outcome}] remediation of {fault.instance_id} ({fault.trigger})",
        [*_header(ctx, fault, "?"), f"Not remediated: {error}"[:1000]],
    )
    return {"instance": fault.instance_id, "trigger": fault.trigger, "outcome": outcome}


def _notify_unreached(ctx: Context, unreached: list[fl.Fault]) -> None:
    names = ", ".join(f"{f.instance_id} ({f.trigger})" for f in unreached)
    ctx.notifier.notify(
        f"[not-reached] {len(unreached)} fault(s) left for redelivery ({ctx.target['cluster']})",
        [
            f"Cluster {ctx.target['cluster']} ({ctx.target['backend']}): the invocation's deadline came first.",
            f"Not reached, nothing done, not recorded (Lambda retries the event): {names}"[:5000],
        ],
    )


def process(
    event: dict[str, Any],
    *,
    clients: dict[str, Any],
    policy: dict[str, Any],
    target: dict[str, Any],
    topic_arn: str,
    table: str,
    clock: Callable[[], float] = time.time,
    kube_factory: Callable[[rt.Deadline], Any] | None = None,
    remaining_s: Callable[[], float] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Handle one invocation; returns the per-fault records (for logs, tests and a harness).

    ``clients``: boto3 clients (or doubles) ``ec2``, ``ssm``, ``sns``, ``dynamodb`` and per backend ``autoscaling``,
    ``eks``/``sts`` or ``sagemaker`` (HyperPod); ``clock``: wall time (epoch seconds) for leases and the hourly limit;
    ``remaining_s``: the seconds left in the invocation (default: :data:`runtime.DEFAULT_BUDGET_S` from now);
    ``kube_factory``: builds the Kubernetes client from the :class:`runtime.Deadline` (default: from
    eks:DescribeCluster); ``sleep``: between SSM polls and Kubernetes retries."""
    deadline = rt.Deadline(remaining_s)
    ctx = Context(
        clients=clients,
        policy=policy,
        target=target,
        ledger=rt.Ledger(clients["dynamodb"], table, clock),
        notifier=rt.Notifier(clients["sns"], topic_arn, SOURCE),
        deadline=deadline,
        kube_factory=kube_factory,
        sleep=sleep,
    )
    faults, skipped = fl.faults_of(event, dict(policy["alert_triggers"]), rt.NOTICE_ATTRIBUTE)
    records: list[dict[str, Any]] = []
    unreached: list[fl.Fault] = []
    for fault in faults:
        if deadline.left() < FAULT_MIN_S:
            unreached.append(fault)
            records.append({"instance": fault.instance_id, "trigger": fault.trigger, "outcome": "not-reached"})
            rt.log("skipped", cluster=target["cluster"], instance=fault.instance_id, outcome="not-reached")
            continue
        try:
            records.append(remediate(ctx, fault))
        except Exception as error:
            records.append(_failed_record(ctx, fault, error))
    if unreached:
        _notify_unreached(ctx, unreached)
    unfinished = sum(r["outcome"] in UNFINISHED_OUTCOMES for r in records)
    rt.log("invocation", faults=len(faults), skipped=skipped, unfinished=unfinished)
    return {"faults": len(faults), "skipped": skipped, "records": records, "unfinished": unfinished}


def finish(result: dict[str, Any]) -> dict[str, Any]:
    """The Lambda answer: ``result``, or :class:`Unfinished` raised so that Lambda retries the event (asynchronous
    invocations are retried twice on a function error; Lambda Developer Guide, invocation-async-error-handling)."""
    if result.get("unfinished"):
        raise Unfinished(f"{result['unfinished']} fault(s) not reached or not finished before the deadline")
    return result


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover - Lambda entry point
    names = ("ec2", "ssm", "sns", "dynamodb", "autoscaling", "eks", "sagemaker")
    clients: dict[str, Any] = {name: boto3.client(name, config=CLIENT_CONFIG) for name in names}  # type: ignore[call-overload]
    clients["sts"] = boto3.client("sts")
    result = process(
        event,
        clients=clients,
        policy=json.loads(os.environ["POLICY"]),
        target=json.loads(os.environ["TARGET"]),
        topic_arn=os.environ["TOPIC_ARN"],
        table=os.environ["TABLE_NAME"],
        remaining_s=lambda: context.get_remaining_time_in_millis() / 1000.0,
    )
    return finish(result)
