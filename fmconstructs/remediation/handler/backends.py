"""Backend actions of the remediation handler: Slurm through SSM Run Command, Auto Scaling, EC2 (Kubernetes is
:mod:`kube`).

Each function does one AWS call sequence and raises on failure; the caller (index.py) logs, notifies and counts.
Standard library + boto3 only.

The Slurm script (:func:`slurm_script`) and what the handler reads back (the contract a harness's SSM double keeps):

- ``ssm.send_command(InstanceIds=[host], DocumentName="AWS-RunShellScript", Comment=..., Parameters={"commands":
  [script]})``; the handler reads ``response["Command"]["CommandId"]``.
- ``ssm.get_command_invocation(CommandId=..., InstanceId=host)``, polled until ``Status`` is terminal (Success,
  Cancelled, TimedOut, Failed) or the deadline comes (``InvocationDoesNotExist`` and Pending/InProgress/Delayed are
  polled again); the handler reads ``Status``, ``ResponseCode``, ``StatusDetails``, ``StandardOutputContent`` and
  ``StandardErrorContent``.
- In ``StandardOutputContent``, lines ``FMC_REMEDIATION <key>=<value>``: ``node`` (the Slurm node), ``state`` (its
  state before), ``jobs`` (jobs RUNNING, COMPLETING, CONFIGURING or SUSPENDED on it), ``previous_reason`` and
  ``result``: ``drained``, ``reboot-scheduled``, ``down``, ``busy`` (mode ``replace``: drained, jobs still run, not
  set DOWN) or ``operator-drained`` (nothing changed). Exit code 0 with a ``result``; 3 no Slurm node matches; 4
  several match; 5 a Slurm command failed. Mode ``hold`` also reports ``held`` (in a reservation, line
  ``reservation``) or ``drained`` (no reservation could be made).

A double that runs the script with bash (Slurm's commands on its PATH) and answers ``Status`` "Success"/"Failed",
``ResponseCode`` and the output is all a harness needs.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

try:  # package import (tests, fmconstructs)
    from . import runtime as rt
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, runtime a top-level module
    rt = importlib.import_module("runtime")

RUN_SHELL_DOCUMENT = "AWS-RunShellScript"
# PCS tags every instance it launches with its node group id (PCS User Guide, working-with_cng_find-instances; the
# same constant as fmconstructs.pcs.NODE_GROUP_ID_TAG, which this module cannot import inside Lambda).
PCS_NODE_GROUP_TAG = "aws:pcs:compute-node-group-id"
# ParallelCluster tags its instances with the cluster name and node type (aws-parallelcluster 3.16.1
# pcluster/constants.py PCLUSTER_CLUSTER_NAME_TAG "parallelcluster:cluster-name", PCLUSTER_NODE_TYPE_TAG
# "parallelcluster:node-type"; pcluster/models/cluster.py NodeType HEAD_NODE "HeadNode", COMPUTE "Compute", and
# _get_instance_filters filters instances by these tags).
PC_CLUSTER_TAG = "parallelcluster:cluster-name"
PC_NODE_TYPE_TAG = "parallelcluster:node-type"
PC_HEAD_NODE = "HeadNode"
PC_COMPUTE = "Compute"
# What may reach the shell script: IPv4 addresses, EC2 private DNS host labels; reasons lose what is not printable.
_ADDRESS = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_HOST = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_UNSAFE = re.compile(r"[^ -~]|['\"\\`@]")
#: The longest Slurm reason the script sets (the boot gate's bound, fmconstructs/health/slurm_gate.py).
REASON_MAX_CHARS = 200
# Copy of fmconstructs.health.metric_names.NODE_CHECK_REASON_PREFIX (faults.py holds the compared copy).
OUR_REASON_PREFIX = "fmconstructs:"
#: Every reason remediation sets starts with this (an ``fmconstructs:`` reason: the boot gate resumes it).
REMEDIATION_REASON_PREFIX = f"{OUR_REASON_PREFIX} remediation"
#: What earlier releases of this handler drained with: still ours.
LEGACY_REASON_PREFIX = "fmconstructs-remediation:"
# Drain reasons Slurm (or the service) sets itself, not an operator: "Prolog error" and "Job env setup error"
# (slurmctld node_mgr.c validate_node_specs: a failed prolog drains the node with that reason; seen with Slurm
# 24.11, shared/reference twin.md), "Node unexpectedly rebooted" (same file), "Not responding"; "Epilog error" and
# "Kill task failed" (slurm_errno.c ESLURMD_KILL_TASK_FAILED) UNCONFIRMED as drain reasons from Slurm's source. The
# script replaces these with its own reason; any other drain reason is an operator's and is left alone.
# ParallelCluster's clustermgtd sets an unhealthy static node DOWN with "Static node maintenance: unhealthy node is
# being replaced" while it replaces the instance (aws-parallelcluster-node src/slurm_plugin/clustermgtd.py
# ``_handle_unhealthy_static_nodes``): the service's reason, not an operator's (the cluster twin's loop c met it when
# clustermgtd replaced a node before the alert reached the handler, which then reported ``operator-drained``).
SLURM_OWN_REASONS = (
    "Prolog error",
    "Job env setup error",
    "Epilog error",
    "Kill task failed",
    "Not responding",
    "Node unexpectedly rebooted",
    "Static node maintenance: unhealthy node is being replaced",
)
#: The mark of the script's result lines on stdout.
RESULT_MARK = "FMC_REMEDIATION"

# Slurm modes: DRAIN lets running jobs finish and schedules no new ones; DOWN takes the node away now, ending what
# runs there; reboot ASAP drains the node and reboots it once its jobs are done, then resumes it (Slurm scontrol man
# page, "update NodeName ... State" and "reboot [ASAP] [nextstate={RESUME|DOWN}] [reason=<reason>]"; UNCONFIRMED: the
# man page was not re-read for this module, nor whether PCS configures the RebootProgram a reboot needs). ``replace``
# drains, then sets the node DOWN only when no job runs on it (``squeue -h -w <node> -t ...``).
SLURM_DRAIN, SLURM_DOWN, SLURM_REBOOT, SLURM_REPLACE = "drain", "down", "reboot", "replace"
# ``hold`` (ParallelCluster, a replacement held back by the hourly limit): keep the node out of work without DRAIN
# or DOWN, which clustermgtd replaces at once whatever the reason (aws-parallelcluster-node
# src/slurm_plugin/slurm_resources.py ``StaticNode.is_state_healthy``: a DRAINED -- DRAIN with IDLE or DOWN -- or
# DOWN node is unhealthy; clustermgtd.py ``_handle_unhealthy_static_nodes`` sets it DOWN and replaces its instance;
# found by the cluster twin's loop f). A Slurm reservation of its own holds it, as the ParallelCluster boot gate holds
# a failing node (fmconstructs/health/slurm_gate.py GateHold): ``Users=root``, ``Flags=IGNORE_JOBS,OVERLAP`` (jobs
# running there go on), the reason in the node's ``Comment``; if the reservation cannot be made, the node is drained.
# The reservation's name is the gate's (``<prefix><node>``), so the replacement's passing gate deletes it.
SLURM_HOLD = "hold"
SLURM_MODES = (SLURM_DRAIN, SLURM_DOWN, SLURM_REBOOT, SLURM_REPLACE, SLURM_HOLD)
#: Copy of the boot gate's reservation prefix (fmconstructs.health.slurm_gate.GateHold.reservation_prefix, the one
#: fmconstructs.parallelcluster.health.GATE_HOLD uses); tests/remediation keeps them equal.
HOLD_RESERVATION_PREFIX = "fmconstructs-node-checks-"
#: ParallelCluster's static nodes (``<queue>-st-<compute resource>-<n>``, aws-parallelcluster-node slurm_resources.py
#: ``parse_nodename``) are held until a passing gate releases them; other nodes for HOLD_MINUTES (a dynamic node's
#: name returns to the pool once Slurm powers its instance down), as fmconstructs.parallelcluster.health.gate_hold.
HOLD_UNLIMITED_NODES = "*-st-*"
HOLD_MINUTES = 30
# The job states that occupy a node (squeue --states: RUNNING, COMPLETING, CONFIGURING, SUSPENDED).
_BUSY_STATES = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED"

_SCRIPT = r"""#!/bin/bash
# fmconstructs node remediation (fmconstructs/remediation/handler/backends.py): mode @MODE@
set -uo pipefail
for d in /opt/aws/pcs/scheduler/slurm-*/bin /opt/slurm/bin; do [ -d "$d" ] && PATH="$d:$PATH"; done
export PATH
MODE='@MODE@'
WANTED=' @WANTED@ '
REASON='@REASON@'
DETAIL='@DETAIL@'
OURS='@OURS@'
LEGACY='@LEGACY@'
REMEDIATION='@REMEDIATION@'
SLURM_OWN=(@SLURM_OWN@)

say() { printf '@MARK@ %s=%s\n' "$1" "$2"; }
sctl() { timeout 30 scontrol "$@"; }
fail() { say result failed; echo "$1" >&2; exit 5; }
ours() { [[ "$1" == "$OURS"* || "$1" == "$LEGACY"* ]]; }
slurms() { local r; for r in "${SLURM_OWN[@]}"; do [ "$1" == "$r" ] && return 0; done; return 1; }
only() { local -a n; read -r -a n <<<"$1"; [ "${#n[@]}" -eq 1 ] && echo "${n[0]}"; }

by_name="" by_addr=""
listing=$(timeout 30 sinfo -h -N -o '%N %o %n' | sort -u) || fail "sinfo failed"
while read -r name addr host; do
  [ -n "$name" ] || continue
  case "$WANTED" in *" $name "*) by_name="$by_name $name" ;; esac
  case "$WANTED" in *" $addr "* | *" $host "*) by_addr="$by_addr $name" ;; esac
done <<<"$listing"
node=$(only "$by_name")
[ -n "$node" ] || node=$(only "$by_addr")
if [ -z "$node" ]; then
  if [ -z "${by_name}${by_addr}" ]; then say result no-node; echo "no Slurm node matches${WANTED}" >&2; exit 3; fi
  say result ambiguous; echo "several Slurm nodes match:${by_name}${by_addr}" >&2; exit 4
fi
say node "$node"

shown=$(sctl show node "$node") || fail "scontrol show node $node failed"
state=$(sed -n 's/^ *State=\([^ ]*\).*/\1/p' <<<"$shown" | head -n 1)
previous=$(sed -n 's/^ *Reason=\(.*\)$/\1/p' <<<"$shown" | head -n 1 | sed 's/ \[[^]]*\]$//')
say state "$state"
say previous_reason "$previous"
if [[ "$state" == *DRAIN* ]] && [ -n "$previous" ] && ! ours "$previous" && ! slurms "$previous"; then
  say result operator-drained
  exit 0
fi
if [ -z "$DETAIL" ] && [[ "$previous" == "$OURS"* ]] && [[ "$previous" != "$REMEDIATION"* ]]; then
  DETAIL="${previous#"$OURS"}"
  DETAIL="${DETAIL# }"
fi
new="$REASON"
[ -z "$DETAIL" ] || new="$REASON: $DETAIL"
new=$(printf '%s' "$new" | tr -d '"\r\n' | cut -c 1-@REASON_MAX@)

busy() {
  local out
  out=$(timeout 30 squeue -h -w "$node" -t @BUSY@ -o '%i') || return 1
  printf '%s\n' "$out" | sort -u | grep -c . || true
}
drain() { sctl update nodename="$node" state=DRAIN reason="$new" || fail "scontrol drain of $node failed"; }
down() { sctl update nodename="$node" state=DOWN reason="$new" || fail "scontrol down of $node failed"; }
case "$MODE" in
  drain) drain; say jobs "$(busy)"; say result drained ;;
  down) say jobs "$(busy)"; down; say result down ;;
  hold)
    hold_name="@HOLD_PREFIX@${node}"
    case "$node" in @HOLD_UNLIMITED@) hold_for=UNLIMITED ;; *) hold_for=@HOLD_MINUTES@ ;; esac
    if sctl show reservation "$hold_name" >/dev/null 2>&1 ||
      sctl create reservation ReservationName="$hold_name" Nodes="$node" Users=root StartTime=now \
        Duration="$hold_for" Flags=IGNORE_JOBS,OVERLAP >/dev/null; then
      sctl update nodename="$node" comment="$new" || fail "scontrol comment of $node failed"
      say jobs "$(busy)"; say reservation "$hold_name"; say result held
    else
      drain; say jobs "$(busy)"; say result drained
    fi ;;
  reboot)
    sctl reboot ASAP nextstate=RESUME reason="$new" "$node" || fail "scontrol reboot of $node failed"
    say jobs "$(busy)"; say result reboot-scheduled ;;
  replace)
    drain
    jobs=$(busy) || fail "squeue on $node failed"
    say jobs "$jobs"
    if [ "$jobs" -eq 0 ]; then down; say result down; else say result busy; fi ;;
esac
say reason "$new"
"""


def safe_reason(text: str) -> str:
    """Printable ASCII without quotes or backslashes, at most :data:`REASON_MAX_CHARS` characters."""
    return _UNSAFE.sub("_", text)[:REASON_MAX_CHARS]


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "") + "'"


def slurm_script(addresses: list[str], mode: str, reason: str, detail: str = "") -> str:
    """The shell script run on the login node (PCS) or head node (ParallelCluster): find the one Slurm node named
    or addressed by ``addresses`` (``sinfo -N -o '%N %o %n'``: a NodeName equal to one of them wins over a NodeAddr or
    NodeHostName), leave it alone when an operator drained it, else apply ``mode`` with the reason
    ``<reason>: <detail>`` (``detail``: the check's failure when known, else the node's own ``fmconstructs:`` reason
    without its prefix). See the module docstring for its output. Slurm lives in
    /opt/aws/pcs/scheduler/slurm-<version>/bin on PCS (PCS User Guide, as in pcs/user_data.py) and /opt/slurm/bin on
    ParallelCluster (User Guide slurm-prolog-epilog-v3 paths)."""
    if mode not in SLURM_MODES:
        raise ValueError(f"mode must be one of {', '.join(SLURM_MODES)}, got {mode!r}")
    wanted = " ".join(sorted({a for a in addresses if _ADDRESS.fullmatch(a) or _HOST.fullmatch(a)}))
    values = {
        "@MODE@": mode,
        "@WANTED@": wanted,
        "@REASON@": safe_reason(reason),
        "@DETAIL@": safe_reason(detail),
        "@OURS@": OUR_REASON_PREFIX,
        "@LEGACY@": LEGACY_REASON_PREFIX,
        "@REMEDIATION@": REMEDIATION_REASON_PREFIX,
        "@SLURM_OWN@": " ".join(_quoted(r) for r in SLURM_OWN_REASONS),
        "@MARK@": RESULT_MARK,
        "@REASON_MAX@": str(REASON_MAX_CHARS),
        "@BUSY@": _BUSY_STATES,
        "@HOLD_PREFIX@": HOLD_RESERVATION_PREFIX,
        "@HOLD_UNLIMITED@": HOLD_UNLIMITED_NODES,
        "@HOLD_MINUTES@": str(HOLD_MINUTES),
    }
    return re.sub(r"@[A-Z_]+@", lambda m: values[m.group(0)], _SCRIPT)


def describe(ec2: Any, instance_id: str) -> dict[str, Any]:
    """The instance (ec2:DescribeInstances by id), with ``Tags`` as a dict; {} when it does not exist."""
    pages = ec2.describe_instances(InstanceIds=[instance_id]).get("Reservations", [])
    for reservation in pages:
        for instance in reservation.get("Instances", []):
            out = dict(instance)
            out["Tags"] = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            return out
    return {}


def addresses_of(instance: dict[str, Any]) -> list[str]:
    out = [str(instance.get("PrivateIpAddress") or "")]
    dns = str(instance.get("PrivateDnsName") or "")
    out.append(dns.split(".", 1)[0])
    return [a for a in out if a]


def slurm_host(ec2: Any, target: dict[str, Any]) -> str | None:
    """A running login node (PCS, by node group tag) or head node (ParallelCluster, by cluster name and node type)."""
    if target["backend"] == "pcs":
        filters = [{"Name": f"tag:{PCS_NODE_GROUP_TAG}", "Values": [target["login_node_group_id"]]}]
    else:
        filters = [
            {"Name": f"tag:{PC_CLUSTER_TAG}", "Values": [target["cluster"]]},
            {"Name": f"tag:{PC_NODE_TYPE_TAG}", "Values": [PC_HEAD_NODE]},
        ]
    filters.append({"Name": "instance-state-name", "Values": ["running"]})
    ids = sorted(
        i["InstanceId"]
        for r in ec2.describe_instances(Filters=filters).get("Reservations", [])
        for i in r.get("Instances", [])
    )
    return ids[0] if ids else None


# GetCommandInvocation Status values (botocore ssm model, CommandInvocationStatus: Pending, InProgress, Delayed,
# Success, Cancelled, TimedOut, Failed, Cancelling); the terminal ones, as the SSM API reference's StatusDetails says
# of Success, Delivery/Execution Timed Out, Failed, Canceled ("This is a terminal state"), as CapacityBlockEvents reads
# them; the others are polled again.
SSM_TERMINAL_STATUSES = frozenset({"Success", "Cancelled", "TimedOut", "Failed"})
SSM_POLL_INTERVAL_S = 1.0
# GetCommandInvocation answers InvocationDoesNotExist while the invocation is not yet visible right after SendCommand
# (UNCONFIRMED as documented eventual consistency); it is polled again like Pending.
_NOT_YET = "InvocationDoesNotExist"


@dataclass
class SlurmResult:
    """What the script reported: ``fields`` are its ``FMC_REMEDIATION key=value`` lines (``result``, ``node``,
    ``state``, ``jobs``, ``previous_reason``, ``reason``)."""

    command_id: str
    host: str
    status: str
    code: int
    fields: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""

    @property
    def result(self) -> str:
        return self.fields.get("result", "")

    @property
    def jobs(self) -> int:
        value = self.fields.get("jobs", "")
        return int(value) if value.isdigit() else -1

    def describe(self) -> str:
        where = f"SSM command {self.command_id} on {self.host}"
        node = self.fields.get("node")
        return f"{where}, Slurm node {node}" if node else where


def script_fields(stdout: str) -> dict[str, str]:
    """The ``FMC_REMEDIATION key=value`` lines of the script's output (the last value of a key wins)."""
    out: dict[str, str] = {}
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARK + " "):
            key, _, value = line[len(RESULT_MARK) + 1 :].partition("=")
            out[key.strip()] = value.strip()
    return out


def send_script(ssm: Any, host: str, script: str, comment: str) -> str:
    """Send ``script`` to ``host`` with SSM Run Command (AWS-RunShellScript); returns the command id."""
    response = ssm.send_command(
        InstanceIds=[host],
        DocumentName=RUN_SHELL_DOCUMENT,
        Comment=comment[:100],
        Parameters={"commands": [script]},
    )
    return str(response["Command"]["CommandId"])


def wait_for_script(
    ssm: Any, command_id: str, host: str, *, deadline: rt.Deadline, sleep: Callable[[float], None] = time.sleep
) -> SlurmResult:
    """Poll ssm:GetCommandInvocation until a terminal status; :class:`~runtime.OutOfTime` when the deadline comes
    first (the command may still run: its effect is idempotent, a redelivery runs it again)."""
    last = "not seen"
    while True:
        try:
            answer = ssm.get_command_invocation(CommandId=command_id, InstanceId=host)
        except ClientError as error:
            if rt.error_code(error) != _NOT_YET:
                raise
        else:
            last = str(answer.get("Status") or "")
            if last in SSM_TERMINAL_STATUSES:
                stdout = str(answer.get("StandardOutputContent") or "")
                code = answer.get("ResponseCode")
                return SlurmResult(
                    command_id,
                    host,
                    last,
                    int(code) if isinstance(code, int) else -1,
                    script_fields(stdout),
                    stdout,
                    str(answer.get("StandardErrorContent") or ""),
                )
        if deadline.left() <= SSM_POLL_INTERVAL_S:
            raise rt.OutOfTime(f"SSM command {command_id} on {host} still {last} when the deadline came")
        sleep(SSM_POLL_INTERVAL_S)


def run_slurm(
    ssm: Any,
    host: str,
    script: str,
    comment: str,
    *,
    deadline: rt.Deadline,
    sleep: Callable[[float], None] = time.sleep,
) -> SlurmResult:
    """Send the script and wait for its result; raises unless it succeeded with a ``result`` line."""
    command_id = send_script(ssm, host, script, comment)
    done = wait_for_script(ssm, command_id, host, deadline=deadline, sleep=sleep)
    if done.status != "Success" or not done.result or done.result in ("failed", "no-node", "ambiguous"):
        error = (done.stderr.strip() or done.stdout.strip())[-300:]
        raise RuntimeError(f"{done.describe()}: {done.status}, exit code {done.code}: {error or 'no output'}")
    return done


def in_auto_scaling_group(autoscaling: Any, instance_id: str, group: str) -> bool:
    found = autoscaling.describe_auto_scaling_instances(InstanceIds=[instance_id]).get("AutoScalingInstances", [])
    return any(i.get("AutoScalingGroupName") == group for i in found)


def set_unhealthy(autoscaling: Any, instance_id: str) -> None:
    """autoscaling:SetInstanceHealth Unhealthy: "Amazon EC2 Auto Scaling terminates and replaces the unhealthy
    instance" (Auto Scaling API reference, SetInstanceHealth HealthStatus). The grace period is not respected:
    the fault is known now (ShouldRespectGracePeriod False)."""
    autoscaling.set_instance_health(InstanceId=instance_id, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False)


# --- SageMaker HyperPod (Slurm): the SageMaker API, no Slurm commands ----------------------------------------------
# SSM Run Command does not reach HyperPod nodes: they take Session Manager sessions on targets
# ``sagemaker-cluster:<cluster id>_<group>-<instance id>`` only ("aws ssm send-command does NOT support
# sagemaker-cluster: targets -- only start-session works": awslabs/agent-plugins plugins/sagemaker-ai/skills/
# hyperpod-ssm/SKILL.md at 3f059bd), so on HyperPod the handler acts through the SageMaker API alone.
#: NodeIds per BatchReplaceClusterNodes / BatchRebootClusterNodes call: 1-25 (botocore sagemaker 2017-07-24
#: BatchReplaceClusterNodesRequestNodeIdsList / BatchRebootClusterNodesRequestNodeIdsList ``max`` 25).
HYPERPOD_BATCH_MAX = 25
HYPERPOD_REPLACE, HYPERPOD_REBOOT = "batch_replace_cluster_nodes", "batch_reboot_cluster_nodes"
#: ClusterInstanceStatus values of a node on its way out (botocore sagemaker model; the enum also has Running,
#: Failure, Pending, SystemUpdating, DeepHealthCheckInProgress, DetachInProgress, AttachInProgress).
HYPERPOD_GONE_STATUSES = frozenset({"ShuttingDown", "NotFound"})


class HyperPodNodeError(ClientError):
    """A node a batch call listed under ``Failed`` (``ErrorCode``: InstanceIdNotFound, InvalidInstanceStatus,
    InstanceIdInUse or InternalServerError; botocore sagemaker model BatchReplaceClusterNodesErrorCode)."""

    def __init__(self, operation: str, node_id: str, code: str, message: str) -> None:
        super().__init__({"Error": {"Code": code, "Message": f"{node_id}: {message}"}}, operation)
        self.node_id = node_id


def hyperpod_nodes(sagemaker: Any, cluster: str) -> list[dict[str, Any]]:
    """Every ``ClusterNodeSummary`` of the cluster (ListClusterNodes, followed through ``NextToken``: botocore
    sagemaker paginators-1.json ListClusterNodes, input and output token NextToken)."""
    nodes: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ClusterName": cluster}
    while True:
        page = sagemaker.list_cluster_nodes(**kwargs)
        nodes += list(page.get("ClusterNodeSummaries") or [])
        token = page.get("NextToken")
        if not token:
            return nodes
        kwargs["NextToken"] = token


def hyperpod_node(sagemaker: Any, cluster: str, *, instance_id: str = "", hostname: str = "") -> dict[str, Any]:
    """The node with EC2 instance id ``instance_id``, or whose ``PrivateDnsHostname``'s first label is ``hostname``
    (HyperPod Slurm nodes are named after it, ``ip-10-1-2-3``: ClusterPrivateDnsHostname pattern ``ip-...``); {}
    when none."""
    for node in hyperpod_nodes(sagemaker, cluster):
        dns = str(node.get("PrivateDnsHostname") or "").split(".", 1)[0]
        if (instance_id and node.get("InstanceId") == instance_id) or (hostname and dns == hostname):
            return dict(node)
    return {}


def hyperpod_batch(
    sagemaker: Any, operation: str, cluster: str, node_ids: list[str]
) -> tuple[list[str], dict[str, HyperPodNodeError]]:
    """Replace or reboot ``node_ids`` (``operation``: :data:`HYPERPOD_REPLACE` or :data:`HYPERPOD_REBOOT`) in calls
    of at most :data:`HYPERPOD_BATCH_MAX`: the ids whose operation was initiated (``Successful``) and, per node the
    call listed under ``Failed``, that node's failure (a node's failure fails that node only)."""
    if operation not in (HYPERPOD_REPLACE, HYPERPOD_REBOOT):
        raise ValueError(f"operation must be {HYPERPOD_REPLACE} or {HYPERPOD_REBOOT}, got {operation!r}")
    done: list[str] = []
    failed: dict[str, HyperPodNodeError] = {}
    for start in range(0, len(node_ids), HYPERPOD_BATCH_MAX):
        chunk = node_ids[start : start + HYPERPOD_BATCH_MAX]
        response = getattr(sagemaker, operation)(ClusterName=cluster, NodeIds=chunk)
        done += [str(i) for i in response.get("Successful") or []]
        for error in response.get("Failed") or []:
            name = "".join(part.title() for part in operation.split("_"))
            node_id = str(error["NodeId"])
            failed[node_id] = HyperPodNodeError(name, node_id, str(error["ErrorCode"]), str(error.get("Message", "")))
    return done, failed


def hyperpod_act(sagemaker: Any, operation: str, cluster: str, node_id: str) -> None:
    """Replace or reboot one node; raises its :class:`HyperPodNodeError` when the call listed it as failed, or a
    RuntimeError when the answer names it nowhere."""
    done, failed = hyperpod_batch(sagemaker, operation, cluster, [node_id])
    if node_id in failed:
        raise failed[node_id]
    if node_id not in done:
        raise RuntimeError(f"{operation} on {cluster}: {node_id} neither Successful nor Failed in the answer")
