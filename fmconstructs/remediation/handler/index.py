"""Lambda handler of :class:`fmconstructs.remediation.NodeRemediation` (standard library + boto3 only).

Input: Alertmanager notifications from the alert topic (SNS) and AWS Health EC2 scheduled-change events
(EventBridge); :mod:`faults` turns them into (instance, trigger) faults. For each fault the handler:

1. checks that the instance belongs to the cluster (EC2 tags, Auto Scaling membership or the Kubernetes node);
2. claims (instance, trigger) for the current hour in the ledger: a duplicate is logged and skipped;
3. in dry run, notifies what it would do and stops;
4. otherwise acts as the policy says for the backend (``TARGET``): a replacement first takes a token of the cluster's
   hourly limit (``max_replacements_per_hour``); without one the node is only drained;
5. notifies the alert topic of what it did or why it did not (``access-denied``, ``throttled``, ``failed``, deferred).

Jobs are ended only when the policy's ``job_kill`` is ``fatal`` and the trigger is one of its ``fatal_triggers``.
"""

from __future__ import annotations

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
    from . import runtime as rt
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, index a top-level module
    kb = importlib.import_module("backends")
    fl = importlib.import_module("faults")
    rt = importlib.import_module("runtime")

CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 4})
SOURCE = "remediation"
REASON_PREFIX = "fmconstructs-remediation"


@dataclass
class Context:
    """What one invocation works with: clients, the decoded policy and target, the ledger and the notifier."""

    clients: dict[str, Any]
    policy: dict[str, Any]
    target: dict[str, Any]
    ledger: rt.Ledger
    notifier: rt.Notifier
    kube_factory: Callable[[], Any] | None = None
    _kube: Any = field(default=None, init=False)
    taken: bool = field(default=False, init=False)

    def kube(self) -> Any:
        if self._kube is None:
            factory = self.kube_factory or (
                lambda: kb.kube_for_cluster(self.clients["eks"], self.clients["sts"], self.target["cluster"])
            )
            self._kube = factory()
        return self._kube

    def take(self) -> bool:
        """Take a replacement token of the cluster's hourly limit (remembered, to give it back on failure)."""
        self.taken = self.ledger.take(self.target["cluster"], int(self.policy["max_replacements_per_hour"]))
        return self.taken


@dataclass
class Outcome:
    outcome: str
    lines: list[str]


def _reason(fault: fl.Fault) -> str:
    return f"{REASON_PREFIX}: {fault.trigger} ({fault.source})"


def _slurm(ctx: Context, fault: fl.Fault, instance: dict[str, Any], mode: str) -> str:
    ec2 = ctx.clients["ec2"]
    host = kb.slurm_host(ec2, ctx.target)
    if host is None:
        raise RuntimeError("no running login/head node to run Slurm commands on")
    script = kb.slurm_script(kb.addresses_of(instance), mode, _reason(fault))
    return kb.run_slurm(ctx.clients["ssm"], host, script, f"{mode} {fault.instance_id} ({fault.trigger})")


def act_slurm(ctx: Context, fault: fl.Fault, instance: dict[str, Any], action: str, kill: bool) -> Outcome:
    """PCS and ParallelCluster: Slurm state through SSM Run Command; PCS replacement by terminating the instance.

    ParallelCluster replaces a static node whose Slurm state is DRAIN or DOWN (User Guide slurm-workload-manager-v3:
    static nodes are not terminated "unless ... the failure of Slurm or Amazon EC2 health checks and the change of the
    Slurm node status to DRAIN or DOWN"); clustermgtd waits for a DRAIN node's jobs (UNCONFIRMED: seen in the
    aws-parallelcluster-node CHANGELOG, not in the User Guide). PCS: terminating the instance lets the node group
    launch another to keep its minimum count (UNCONFIRMED: no PCS page seen that says so; PCS health monitoring with
    repairAction REPLACE "Replaces the instance after running jobs finish", PCS API reference HealthMonitoring, is the
    documented way PCS replaces nodes itself)."""
    pcs = ctx.target["backend"] == "pcs"
    if action == "drain":
        return Outcome("drained", [f"Slurm DRAIN sent (SSM command {_slurm(ctx, fault, instance, kb.SLURM_DRAIN)})."])
    if action == "reboot":
        command = _slurm(ctx, fault, instance, kb.SLURM_REBOOT)
        return Outcome("reboot-scheduled", [f"Slurm reboot ASAP sent (SSM command {command}): after its jobs."])
    if pcs and not kill:
        command = _slurm(ctx, fault, instance, kb.SLURM_DRAIN)
        return Outcome(
            "replace-deferred",
            [
                f"Drained (SSM command {command}); not terminated while jobs may run (job_kill). PCS health "
                "monitoring with repairAction REPLACE replaces an instance after its jobs finish."
            ],
        )
    if not ctx.take():
        command = _slurm(ctx, fault, instance, kb.SLURM_DRAIN)
        return Outcome("rate-limited", [f"Replacement limit reached: drained only (SSM command {command})."])
    command = _slurm(ctx, fault, instance, kb.SLURM_DOWN if kill else kb.SLURM_DRAIN)
    if pcs:
        ctx.clients["ec2"].terminate_instances(InstanceIds=[fault.instance_id])
        return Outcome("replaced", [f"Slurm DOWN (SSM command {command}), instance terminated."])
    state = "DOWN (jobs end now)" if kill else "DRAIN (after its jobs)"
    return Outcome("replace-requested", [f"Slurm {state} (SSM command {command}): clustermgtd replaces the node."])


def act_eks(ctx: Context, fault: fl.Fault, node: str, action: str, kill: bool) -> Outcome:
    """EKS: cordon and evict through the Eviction API (PodDisruptionBudgets respected), then reboot or terminate."""
    evicted, blocked = kb.drain_node(ctx.kube(), node, _reason(fault))
    lines = [f"Node {node} cordoned; evicted {len(evicted)} pod(s)."]
    if blocked:
        lines.append(f"Eviction refused by a PodDisruptionBudget for: {', '.join(blocked)}.")
    if action == "drain":
        return Outcome("drained", lines)
    if blocked and not kill:
        return Outcome(f"{action}-deferred", [*lines, "Not rebooted or replaced while pods remain (job_kill)."])
    ec2 = ctx.clients["ec2"]
    if action == "reboot":
        ec2.reboot_instances(InstanceIds=[fault.instance_id])
        return Outcome("rebooted", [*lines, "Instance rebooted."])
    if not ctx.take():
        return Outcome("rate-limited", [*lines, "Replacement limit reached: cordoned only."])
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
        return Outcome("rate-limited", ["Replacement limit reached: not replaced."])
    kb.set_unhealthy(ctx.clients["autoscaling"], fault.instance_id)
    return Outcome("replaced", ["Auto Scaling health set to Unhealthy: the group replaces the instance."])


def membership(ctx: Context, fault: fl.Fault) -> tuple[bool, Any]:
    """Whether the instance belongs to the target, and what the action needs (the instance or the node name)."""
    backend = ctx.target["backend"]
    if backend == "eks":
        node = ctx.kube().node_for_instance(fault.instance_id)
        return bool(node), node
    if backend == "auto-scaling":
        return kb.in_auto_scaling_group(ctx.clients["autoscaling"], fault.instance_id, ctx.target["cluster"]), None
    instance = kb.describe(ctx.clients["ec2"], fault.instance_id)
    tags = instance.get("Tags") or {}
    if backend == "pcs":
        return tags.get(kb.PCS_NODE_GROUP_TAG) in ctx.target["compute_node_group_ids"], instance
    member = tags.get(kb.PC_CLUSTER_TAG) == ctx.target["cluster"] and tags.get(kb.PC_NODE_TYPE_TAG) == kb.PC_COMPUTE
    return member, instance


def _act(ctx: Context, fault: fl.Fault, subject: Any, action: str, kill: bool) -> Outcome:
    if action == "notify":
        return Outcome("notified", ["The policy only notifies for this trigger."])
    backend = ctx.target["backend"]
    if backend == "eks":
        return act_eks(ctx, fault, subject, action, kill)
    if backend == "auto-scaling":
        return act_asg(ctx, fault, action, kill)
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


def remediate(ctx: Context, fault: fl.Fault) -> dict[str, Any]:
    """Steps 1-5 of the module docstring for one fault; returns what happened (also logged)."""
    policy = ctx.policy
    action = str(policy["actions"].get(fault.trigger, "notify"))
    kill = policy["job_kill"] == "fatal" and fault.trigger in policy["fatal_triggers"]
    record: dict[str, Any] = {"instance": fault.instance_id, "trigger": fault.trigger, "action": action}
    member, subject = membership(ctx, fault)
    if not member:
        record["outcome"] = "not-in-cluster"
        rt.log("skipped", **record)
        return record
    key = f"{fault.instance_id}#{fault.trigger}"
    if not ctx.ledger.claim(key):
        record["outcome"] = "duplicate"
        rt.log("skipped", **record)
        return record
    header = _header(ctx, fault, action)
    if policy["dry_run"]:
        record["outcome"] = "dry-run"
        ctx.notifier.notify(
            f"[DRY RUN] would {action} {fault.instance_id} ({fault.trigger})",
            [*header, f"Dry run: nothing done. Would {action}{' (jobs may end)' if kill else ''}."],
        )
        rt.log("remediation", **record)
        return record
    ctx.taken = False
    try:
        result = _act(ctx, fault, subject, action, kill)
    except Exception as error:  # every failure is notified; a redelivery may retry it
        ctx.ledger.release(key)
        if ctx.taken:  # the replacement it paid for did not happen
            ctx.ledger.give_back(ctx.target["cluster"])
        result = Outcome(rt.outcome_of(error), [f"{action} FAILED: {error}"[:1000]])
        record["error"] = str(error)[:500]
    record["outcome"] = result.outcome
    ctx.notifier.notify(f"[{result.outcome}] {action} {fault.instance_id} ({fault.trigger})", [*header, *result.lines])
    rt.log("remediation", **record)
    return record


def process(
    event: dict[str, Any],
    *,
    clients: dict[str, Any],
    policy: dict[str, Any],
    target: dict[str, Any],
    topic_arn: str,
    table: str,
    clock: Callable[[], float] = time.time,
    kube_factory: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Handle one invocation; returns the per-fault records (for logs and tests)."""
    ctx = Context(
        clients=clients,
        policy=policy,
        target=target,
        ledger=rt.Ledger(clients["dynamodb"], table, clock),
        notifier=rt.Notifier(clients["sns"], topic_arn, SOURCE),
        kube_factory=kube_factory,
    )
    faults, skipped = fl.faults_of(event, dict(policy["alert_triggers"]), rt.NOTICE_ATTRIBUTE)
    records = []
    for fault in faults:
        try:
            records.append(remediate(ctx, fault))
        except Exception as error:  # the ledger or a membership lookup failed: notify and go on
            outcome = rt.outcome_of(error)
            rt.log(
                "remediation-error",
                instance=fault.instance_id,
                trigger=fault.trigger,
                outcome=outcome,
                error=str(error),
            )
            ctx.notifier.notify(
                f"[{outcome}] remediation of {fault.instance_id} ({fault.trigger})",
                [*_header(ctx, fault, "?"), f"Not remediated: {error}"[:1000]],
            )
            records.append({"instance": fault.instance_id, "trigger": fault.trigger, "outcome": outcome})
    result = {"faults": len(faults), "skipped": skipped, "records": records}
    rt.log("invocation", faults=len(faults), skipped=skipped)
    return result


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:  # pragma: no cover - Lambda entry point
    names = ("ec2", "ssm", "sns", "dynamodb", "autoscaling", "eks")
    clients: dict[str, Any] = {name: boto3.client(name, config=CLIENT_CONFIG) for name in names}  # type: ignore[call-overload]
    clients["sts"] = boto3.client("sts")
    return process(
        event,
        clients=clients,
        policy=json.loads(os.environ["POLICY"]),
        target=json.loads(os.environ["TARGET"]),
        topic_arn=os.environ["TOPIC_ARN"],
        table=os.environ["TABLE_NAME"],
    )
