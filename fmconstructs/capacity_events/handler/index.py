"""Lambda handler for :class:`fmconstructs.capacity_events.CapacityBlockEvents` (standard library + boto3 only).

On every Capacity Block event it publishes a message to the alert topic. On an expiration warning, when a PCS login
node group (or a ParallelCluster cluster: its head node) is configured, it drains the block's Slurm nodes through SSM
Run Command on a login node (the head node); when an EKS
cluster is configured, it cordons the block's Kubernetes nodes through the Kubernetes API (:func:`cordon_block`).
With scaling targets (``SCALING_TARGETS``), it scales the block's EKS managed node groups and Auto Scaling groups to
their size when the block is delivered and to 0 on the expiration warning (:func:`scale_targets`).
The notice always goes out: a failed drain, cordon or scaling is logged and reported in the notice, never raised.

Events (EC2 User Guide, "Monitor Capacity Blocks using EventBridge", capacity-blocks-monitor): EC2 emits one when
the block starts and another forty minutes before it ends ("any instances running in the reservation will begin to
terminate in 10 minutes"); ``detail`` carries ``capacity-reservation-id`` and ``end-date``.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import boto3
from botocore.exceptions import ClientError

try:  # package import (tests, fmconstructs)
    from . import block_scaling as bs
    from . import budget as bg
    from . import extension as ext
    from . import job_warning as jw
    from . import kube as kb
    from . import lead as ld
    from . import reclaim as rc
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, index a top-level module
    bs = importlib.import_module("block_scaling")
    bg = importlib.import_module("budget")
    ext = importlib.import_module("extension")
    jw = importlib.import_module("job_warning")
    kb = importlib.import_module("kube")
    ld = importlib.import_module("lead")
    rc = importlib.import_module("reclaim")

# Scaling on block events moved to block_scaling.py; its names stay readable here (index.<name>).
CLIENT_CONFIG, THROTTLING_CODES, with_backoff = bs.CLIENT_CONFIG, bs.THROTTLING_CODES, bs.with_backoff
SCALING_ATTEMPTS, SCALING_BASE_DELAY_S = bs.SCALING_ATTEMPTS, bs.SCALING_BASE_DELAY_S
SCALING_MAX_DELAY_S, _scaling_lines = bs.SCALING_MAX_DELAY_S, bs._scaling_lines
EKS_NODEGROUP, AUTO_SCALING_GROUP = bs.EKS_NODEGROUP, bs.AUTO_SCALING_GROUP
request_token, scale_nodegroup = bs.request_token, bs.scale_nodegroup
scale_auto_scaling_group, scale_targets = bs.scale_auto_scaling_group, bs.scale_targets
# The time budget (budget.py) and the Kubernetes API client (kube.py) moved too; readable here (index.<name>).
NOTICE_RESERVE_S, DEFAULT_BUDGET_S, Budget = bg.NOTICE_RESERVE_S, bg.DEFAULT_BUDGET_S, bg.Budget
TOKEN_PREFIX, CLUSTER_ID_HEADER, TOKEN_URL_EXPIRES_S = kb.TOKEN_PREFIX, kb.CLUSTER_ID_HEADER, kb.TOKEN_URL_EXPIRES_S
ENDS_AT_ANNOTATION, RESERVATION_ANNOTATION = kb.ENDS_AT_ANNOTATION, kb.RESERVATION_ANNOTATION
PATCH_CONTENT_TYPE, KUBE_TIMEOUT_S, _NODE_LIST_PAGE = kb.PATCH_CONTENT_TYPE, kb.KUBE_TIMEOUT_S, kb._NODE_LIST_PAGE
KUBE_RETRY_STATUSES, KUBE_ATTEMPTS = kb.KUBE_RETRY_STATUSES, kb.KUBE_ATTEMPTS
KUBE_BASE_DELAY_S, KUBE_MAX_DELAY_S = kb.KUBE_BASE_DELAY_S, kb.KUBE_MAX_DELAY_S
eks_token, KubeError, KubeApi, kube_for_cluster = kb.eks_token, kb.KubeError, kb.KubeApi, kb.kube_for_cluster
provider_instance_id, match_nodes = kb.provider_instance_id, kb.match_nodes

# The page shows both spellings in different versions (docs.aws.amazon.com: "Capacity Block Delivered" /
# "Capacity Block Expiration Warning"; docs.amazonaws.cn and older copies: "Capacity Block Reservation Delivered" /
# "Capacity Block Reservation Expiration Warning"). The rule matches all four.
DELIVERED_DETAIL_TYPES: tuple[str, ...] = ("Capacity Block Delivered", "Capacity Block Reservation Delivered")
EXPIRY_DETAIL_TYPES: tuple[str, ...] = (
    "Capacity Block Expiration Warning",
    "Capacity Block Reservation Expiration Warning",
)
DETAIL_TYPES: tuple[str, ...] = DELIVERED_DETAIL_TYPES + EXPIRY_DETAIL_TYPES

# PCS tags every instance it launches with this key (PCS User Guide, working-with_cng_find-instances); the same
# constant as fmconstructs.pcs.NODE_GROUP_ID_TAG (this module cannot import fmconstructs inside Lambda).
NODE_GROUP_ID_TAG = "aws:pcs:compute-node-group-id"
# ParallelCluster tags its instances with the cluster name and node type (aws-parallelcluster 3.16.1
# pcluster/constants.py PCLUSTER_CLUSTER_NAME_TAG, PCLUSTER_NODE_TYPE_TAG; pcluster/models/cluster.py NodeType
# HEAD_NODE "HeadNode"), as remediation's handler reads them.
PC_CLUSTER_TAG = "parallelcluster:cluster-name"
PC_NODE_TYPE_TAG = "parallelcluster:node-type"
PC_HEAD_NODE = "HeadNode"
DRAIN_REASON = "capacity block ends"
RUN_SHELL_DOCUMENT = "AWS-RunShellScript"

# Capacity reservation ids: "cr-" and 17 hex digits, or 8 for older ids (UNCONFIRMED: the usual EC2 id form, not
# seen as a documented pattern).
_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{8}(?:[0-9a-f]{9})?")
# What may reach the shell script: IPv4 addresses and EC2 private DNS host labels.
_ADDRESS = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_HOST = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def drain_script(addresses: list[str], after_drain: list[str] | None = None, reason: str = DRAIN_REASON) -> str:
    """The shell script run on the login node: drain the Slurm nodes whose address or host name is in ``addresses``,
    then run ``after_drain`` (lines that may use ``$nodes``, e.g. :func:`job_warning.slurm_signal_lines`).

    Slurm node names of PCS nodes are not documented as derivable from the instance (UNCONFIRMED), so the script
    matches each node's ``NodeAddr`` (``%o``) and ``NodeHostName`` (``%n``) from ``sinfo`` against the instances'
    private IPs and host names instead.

    A node someone else already drained (``sinfo`` state ``%T`` drained/draining, reason ``%E`` neither empty nor one
    of fmconstructs' own: the capacity reasons or the node gate's ``fmconstructs:``) keeps its state and reason: it
    takes no new jobs already, and its reason (an operator's ticket) is what tells why it must not simply be resumed,
    e.g. after an extension. It stays in ``$nodes``, so its jobs still get the job warning. A node drained by the
    gate gets the capacity reason, so the gate does not resume it (it resumes only its own drains).
    """
    safe = sorted({a for a in addresses if _ADDRESS.fullmatch(a) or _HOST.fullmatch(a)})
    wanted = " ".join(safe)
    if reason not in (DRAIN_REASON, rc.RECLAIM_DRAIN_REASON):  # written into the script: constants only
        raise ValueError(f"unknown drain reason {reason!r}")
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            # PCS installs Slurm in /opt/aws/pcs/scheduler/slurm-<version> (PCS User Guide, see pcs/user_data.py);
            # ParallelCluster in /opt/slurm (User Guide "Slurm prolog and epilog" paths).
            'for d in /opt/aws/pcs/scheduler/slurm-*/bin /opt/slurm/bin; do [ -d "$d" ] && PATH="$d:$PATH"; done',
            "export PATH",
            f'wanted=" {wanted} "',
            'nodes=""',
            'todrain=""',
            'kept=""',
            # An assignment from a command substitution takes the command's exit status, so `set -e` stops here when
            # sinfo fails (bash manual, "Simple Command Expansion"); `done < <(sinfo ...)` would hide it (the exit
            # status of a process substitution is not the loop's). %T: the state (drained, draining, ...), %E: the
            # reason ("none" without one), last so that `read` gives it its spaces (sinfo(1) output format).
            "listing=\"$(sinfo -h -N -o '%N %o %n %T %E')\"",
            "while read -r name addr host state why; do",
            '  [ -n "$name" ] || continue',
            '  case "$wanted" in *" $addr "*|*" $host "*) ;; *) continue ;; esac',
            '  case ",$nodes," in *",$name,"*) continue ;; esac',
            '  nodes="${nodes:+$nodes,}$name"',
            '  case "$state" in',
            "    *drain*|*DRAIN*)",
            '      case "$why" in',
            f'        ""|none|"{DRAIN_REASON}"*|"{rc.RECLAIM_DRAIN_REASON}"*|fmconstructs:*) ;;',
            '        *) kept="${kept:+$kept,}$name"; continue ;;',
            "      esac ;;",
            "  esac",
            '  todrain="${todrain:+$todrain,}$name"',
            'done <<< "$listing"',
            'if [ -z "$nodes" ]; then',
            '  echo "no Slurm node matches the capacity block instances"',
            "  exit 0",
            "fi",
            'if [ -n "$todrain" ]; then',
            f'  scontrol update nodename="$todrain" state=DRAIN reason="{reason}"',
            "fi",
            'echo "drained: ${todrain:-none}"',
            'if [ -n "$kept" ]; then echo "already drained by someone else, reason kept: $kept"; fi',
            *(after_drain or []),
            "",
        ]
    )


def _running(ec2: Any, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    filters = [*filters, {"Name": "instance-state-name", "Values": ["pending", "running"]}]
    instances: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"Filters": filters}
        if token:
            kwargs["NextToken"] = token
        page = ec2.describe_instances(**kwargs)
        for reservation in page.get("Reservations", []):
            instances.extend(reservation.get("Instances", []))
        token = page.get("NextToken")
        if not token:
            return instances


def block_addresses(ec2: Any, reservation_id: str) -> list[str]:
    """Private IPs and host names of the block's instances.

    ec2:DescribeInstances filter ``capacity-reservation-id``: "The ID of the Capacity Reservation into which the
    instance was launched" (EC2 API reference, DescribeInstances Filter.N, as in botocore's ec2 service model)."""
    return instance_addresses(block_instances(ec2, reservation_id))


def instance_addresses(instances: list[dict[str, Any]]) -> list[str]:
    """Private IPs and host names of ``instances`` (DescribeInstances ``Instances``)."""
    out: list[str] = []
    for instance in instances:
        ip = instance.get("PrivateIpAddress")
        if ip:
            out.append(ip)
        dns = instance.get("PrivateDnsName") or ""
        if dns:
            out.append(dns.split(".", 1)[0])
    return out


def block_instances(ec2: Any, reservation_id: str) -> list[dict[str, Any]]:
    """The block's pending or running instances (ec2:DescribeInstances, filter ``capacity-reservation-id``)."""
    return _running(ec2, [{"Name": "capacity-reservation-id", "Values": [reservation_id]}])


def login_instance(ec2: Any, login_node_group_id: str) -> str | None:
    """One running login node of the PCS login node group (by the PCS node group tag), or None."""
    instances = _running(ec2, [{"Name": f"tag:{NODE_GROUP_ID_TAG}", "Values": [login_node_group_id]}])
    ids = sorted(i["InstanceId"] for i in instances if i.get("InstanceId"))
    return ids[0] if ids else None


def head_node_instance(ec2: Any, cluster_name: str) -> str | None:
    """The running head node of the ParallelCluster cluster (by its cluster-name and node-type tags), or None."""
    filters = [
        {"Name": f"tag:{PC_CLUSTER_TAG}", "Values": [cluster_name]},
        {"Name": f"tag:{PC_NODE_TYPE_TAG}", "Values": [PC_HEAD_NODE]},
    ]
    ids = sorted(i["InstanceId"] for i in _running(ec2, filters) if i.get("InstanceId"))
    return ids[0] if ids else None


def slurm_host(ec2: Any, login_node_group_id: str, parallelcluster_cluster_name: str) -> tuple[str | None, str]:
    """Where the Slurm commands run, and how the notice names it when none runs: the PCS login node group's node, or
    the ParallelCluster head node."""
    if parallelcluster_cluster_name:
        where = f"ParallelCluster cluster {parallelcluster_cluster_name}'s head node"
        return head_node_instance(ec2, parallelcluster_cluster_name), where
    return login_instance(ec2, login_node_group_id), f"login node in PCS node group {login_node_group_id}"


# --- EKS: cordon the block's Kubernetes nodes --------------------------------------------------------------------

# Nodes cordoned at once (one HTTPS connection each): enough for a block's nodes in a few rounds.
CORDON_WORKERS = 8


class CordonReport:
    """What the cordon did: ``done`` (cordoned now), ``already`` (unschedulable before: a duplicate delivery or an
    earlier cordon, left alone), ``failed`` ("node: error"), ``not_reached`` (not finished within the budget)."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.already: list[str] = []
        self.failed: list[str] = []
        self.not_reached: list[str] = []
        self.matched: list[str] = []


def cordon_block(
    instances: list[dict[str, Any]],
    kube: kb.KubeApi,
    *,
    reservation_id: str,
    end_date: str,
    budget: bg.Budget | None = None,
) -> CordonReport:
    """Cordon the nodes of ``instances`` in parallel (:data:`CORDON_WORKERS`) within ``budget`` (default: the
    client's). A node that is already unschedulable is not patched again: re-running the cordon is harmless."""
    budget = budget or kube.budget
    nodes = kube.nodes()
    matched = match_nodes(nodes, instances)
    unschedulable = {
        str((n.get("metadata") or {}).get("name")) for n in nodes if (n.get("spec") or {}).get("unschedulable")
    }
    annotations = {ENDS_AT_ANNOTATION: end_date, RESERVATION_ANNOTATION: reservation_id}
    report = CordonReport()
    report.matched = sorted(matched)
    report.already = sorted(name for name in matched if name in unschedulable)
    todo = sorted(name for name in matched if name not in unschedulable)
    if not todo:
        return report
    pool = ThreadPoolExecutor(max_workers=min(CORDON_WORKERS, len(todo)), thread_name_prefix="cordon")
    try:
        futures = {name: pool.submit(kube.cordon, name, annotations) for name in todo}
        wait(list(futures.values()), timeout=budget.left())
        for name, future in futures.items():
            if not future.done():
                future.cancel()
                report.not_reached.append(name)
            elif future.exception() is not None:  # one node's failure must not stop the others or the notice
                report.failed.append(f"{name}: {future.exception()}")
            else:
                report.done.append(name)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return report


def _eks_lines(
    ec2: Any,
    *,
    reservation_id: str,
    end_date: str,
    cluster_name: str,
    kube_factory: Callable[[], kb.KubeApi],
    result: dict[str, Any],
    budget: bg.Budget,
    pod_warning: dict[str, Any] | None = None,
    instances: list[dict[str, Any]] | None = None,
) -> list[str]:
    try:
        if instances is None:
            instances = block_instances(ec2, reservation_id)
        if not instances:
            return [f"No running instance in the block: no EKS node of {cluster_name} to cordon."]
        kube = kube_factory()
        report = cordon_block(instances, kube, reservation_id=reservation_id, end_date=end_date, budget=budget)
    except Exception as error:  # the notice goes out whatever failed
        traceback.print_exc()
        result["cordon_error"] = str(error)
        return [f"Cordon of the block's nodes in EKS cluster {cluster_name} FAILED: {error}"[:1000]]
    result["cordoned"] = report.done
    lines: list[str] = []
    if pod_warning and report.matched:
        annotation = str(pod_warning.get("pod_annotation") or jw.DEFAULT_POD_ANNOTATION)
        warned = jw.warn_pods(
            kube,
            report.matched,
            annotation=annotation,
            ends_at=jw.rfc3339(end_date),
            reservation_id=reservation_id,
            event=bool(pod_warning.get("pod_event", True)),
        )
        result["pods_warned"], result["pod_warning_failures"] = warned.warned, warned.failed
        lines += jw.report_lines(warned, annotation)
    if report.done:
        lines.append(f"Cordoned in EKS cluster {cluster_name}: {', '.join(report.done)}.")
    if report.already:
        result["already_cordoned"] = report.already
        lines.append(f"Already unschedulable (left as they are): {', '.join(report.already)}."[:1000])
    if report.failed:
        result["cordon_failures"] = report.failed
        print(json.dumps({"cordon_failures": report.failed}))
        lines.append("Cordon FAILED for: " + "; ".join(report.failed)[:1000])
    if report.not_reached:
        result["cordon_not_reached"] = report.not_reached
        lines.append(
            "Cordon NOT FINISHED in time (the handler's time budget ran out) for: " + ", ".join(report.not_reached)
        )
    if not (report.done or report.already or report.failed or report.not_reached):
        lines.append(f"No node of EKS cluster {cluster_name} belongs to the block's {len(instances)} instance(s).")
    return lines


def process(
    event: dict[str, Any],
    *,
    ec2: Any,
    ssm: Any,
    sns: Any,
    topic_arn: str,
    login_node_group_id: str,
    eks: Any = None,
    sts: Any = None,
    eks_cluster_name: str = "",
    parallelcluster_cluster_name: str = "",
    kube_factory: Callable[[], kb.KubeApi] | None = None,
    scaling_targets: list[dict[str, Any]] | None = None,
    autoscaling: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    budget: bg.Budget | None = None,
    lead: ld.LeadSettings | None = None,
    scheduler: Any = None,
    job_warning: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
    interruptible_reservation_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Handle one EventBridge event; returns what was done (for logs and tests).

    A reclaim warning of an interruptible Capacity Reservation drains and cordons the one instance it names, when it
    runs in ``interruptible_reservation_ids`` (empty: any reservation): :func:`reclaim.process_reclaim`.

    ``lead``: per-kind lead times (LEAD_MINUTES); with it, :func:`lead.expiry_timing` decides when the expiry actions
    run (a schedule for leads past EC2's 40-minute warning). ``job_warning``: the JOB_WARNING settings (Slurm signal
    before the drain's end, pod annotation and Event after the cordon; :mod:`job_warning`).

    ``parallelcluster_cluster_name``: drain on that ParallelCluster cluster's head node instead of a PCS login node.
    ``kube_factory`` (no arguments, returns a :class:`KubeApi`) defaults to :func:`kube_for_cluster`.
    ``scaling_targets``: the SCALING_TARGETS list (kind, name, cluster, reservation, size).
    ``budget``: the time the drain and the cordon may take (default :data:`DEFAULT_BUDGET_S`); the notice is sent
    after them whatever happened. Only a notice that cannot be published raises, so that Lambda retries the event
    and, after its retries, sends it to the on-failure destination (see the construct)."""
    budget = budget or Budget(DEFAULT_BUDGET_S)
    warning = job_warning or {}
    detail_type = str(event.get("detail-type") or event.get("detail_type") or "")
    if detail_type in rc.RECLAIM_DETAIL_TYPES:
        backend = {"ssm": ssm, "login": login_node_group_id, "pc": parallelcluster_cluster_name, "ec2": ec2}
        backend.update({"eks": eks, "sts": sts, "cluster": eks_cluster_name, "sns": sns, "topic": topic_arn})
        return _reclaim(
            event, detail_type, backend, (kube_factory, budget, sleep, warning, interruptible_reservation_ids)
        )
    block = _BlockEvent(event, detail_type)
    expiring = _expiry_step(block, ec2=ec2, scheduler=scheduler, lead=lead, now=now)
    slurm = login_node_group_id or parallelcluster_cluster_name
    if expiring and (slurm or eks_cluster_name or scaling_targets):
        expiring = _extension_step(block, ec2)
    if expiring and slurm and block.valid_id:
        _drain_step(block, ec2, ssm, (login_node_group_id, parallelcluster_cluster_name), budget, sleep, warning)
    if expiring and eks_cluster_name and block.valid_id:
        _cordon_step(block, ec2, eks, sts, eks_cluster_name, kube_factory, budget=budget, warning=warning)
    starting = detail_type in DELIVERED_DETAIL_TYPES
    if scaling_targets and block.valid_id and (starting or expiring):
        block.lines += _scaling_lines(
            event,
            scaling_targets,
            reservation_id=block.reservation_id,
            starting=starting,
            eks=eks,
            autoscaling=autoscaling,
            result=block.result,
            sleep=sleep,
        )
    if (expiring or starting) and block.reservation_id and not block.valid_id:
        block.lines.append("Unrecognized capacity reservation id: nodes NOT drained or cordoned, groups NOT scaled.")
    return _notify(sns, topic_arn, detail_type, block.lines, block.result, sleep)


def _reclaim(
    event: dict[str, Any], detail_type: str, backend: dict[str, Any], run: tuple[Any, bg.Budget, Any, Any, Any]
) -> dict[str, Any]:
    """A reclaim warning of an interruptible Capacity Reservation (:func:`reclaim.process_reclaim`), then the notice;
    ``run``: the kube factory, budget, sleep, job warning and interruptible reservation ids."""
    kube_factory, budget, sleep, warning, reservation_ids = run
    ops, ec2, sns = sys.modules[__name__], backend["ec2"], backend["sns"]  # ops: this module's drain and cordon
    notice, done = rc.process_reclaim(
        event, detail_type, ops, ec2, backend, kube_factory, budget, sleep, warning, reservation_ids or []
    )
    return done if notice is None else _notify(sns, backend["topic"], detail_type, notice, done, sleep)


class _BlockEvent:
    """A Capacity Block event as :func:`process` reads it, with the notice lines and the result it builds up."""

    def __init__(self, event: dict[str, Any], detail_type: str) -> None:
        detail: dict[str, Any] = event.get("detail") or {}
        self.event, self.detail_type, self.detail = event, detail_type, detail
        self.reservation_id = str(detail.get("capacity-reservation-id") or "")
        self.end_date = str(detail.get("end-date") or "unknown")
        self.valid_id = bool(_RESERVATION_ID.fullmatch(self.reservation_id))
        self.result: dict[str, Any] = {"detail_type": detail_type, "capacity_reservation_id": self.reservation_id}
        self.lines = [
            f"{detail_type}: capacity reservation {self.reservation_id or '(missing)'}, ends {self.end_date}."
        ]


def _expiry_step(
    block: _BlockEvent, *, ec2: Any, scheduler: Any, lead: ld.LeadSettings | None, now: dt.datetime | None
) -> bool:
    """Whether the expiry actions run now: an expiration warning, or what the lead times decide (``lead``)."""
    expiring = block.detail_type in EXPIRY_DETAIL_TYPES
    if lead is None or not block.valid_id:
        return expiring
    delivered = block.detail_type in DELIVERED_DETAIL_TYPES
    timing = ld.expiry_timing(
        block.event, ec2=ec2, scheduler=scheduler, settings=lead, delivered=delivered, warning=expiring, now=now
    )
    block.result.update(timing.result)
    block.lines += timing.lines
    return timing.expiring


def _extension_step(block: _BlockEvent, ec2: Any) -> bool:
    """EC2's warning for a block extended since (same reservation id, later end): leave it (extension.py). Whether
    the expiry actions still run; only an expiration warning with a valid id is checked."""
    if not (block.detail_type in EXPIRY_DETAIL_TYPES and block.valid_id):
        return True
    state, line = ext.block_extension(ec2, block.reservation_id, block.detail.get("end-date"))
    block.result["extension"] = state
    block.lines += [line] if line else []
    return state != ext.EXTENDED


def _drain_step(
    block: _BlockEvent,
    ec2: Any,
    ssm: Any,
    hosts: tuple[str, str],
    budget: bg.Budget,
    sleep: Callable[[float], None],
    warning: dict[str, Any],
) -> None:
    """Drain the block's Slurm nodes on ``hosts`` (the PCS login node group id, or the ParallelCluster cluster name);
    a failure is reported in the notice, never raised."""
    login_node_group_id, parallelcluster_cluster_name = hosts
    try:
        block.lines += _drain_lines(
            ec2,
            ssm,
            reservation_id=block.reservation_id,
            login_node_group_id=login_node_group_id,
            parallelcluster_cluster_name=parallelcluster_cluster_name,
            result=block.result,
            budget=budget,
            sleep=sleep,
            after_drain=jw.slurm_signal_lines(warning["slurm_signal"], warning.get("slurm_scope", "steps"))
            if warning.get("slurm_signal")
            else None,
        )
    except Exception as error:  # the notice goes out whatever failed
        traceback.print_exc()
        block.result["drain_error"] = str(error)
        block.lines.append(f"Drain of the block's Slurm nodes FAILED: {error}"[:1000])


def _cordon_step(
    block: _BlockEvent,
    ec2: Any,
    eks: Any,
    sts: Any,
    cluster_name: str,
    kube_factory: Callable[[], kb.KubeApi] | None,
    *,
    budget: bg.Budget,
    warning: dict[str, Any],
) -> None:
    """Cordon the block's nodes in the EKS cluster (and warn their pods with ``warning``'s pod annotation)."""
    factory = kube_factory or (lambda: kube_for_cluster(eks, sts, cluster_name, budget))
    block.lines += _eks_lines(
        ec2,
        reservation_id=block.reservation_id,
        end_date=block.end_date,
        cluster_name=cluster_name,
        kube_factory=factory,
        result=block.result,
        budget=budget,
        pod_warning=warning if warning.get("pod_annotation") else None,
    )


def _notify(
    sns: Any, topic_arn: str, detail_type: str, lines: list[str], result: dict[str, Any], sleep: Callable[[float], None]
) -> dict[str, Any]:
    """Publish the notice (``lines``) to the alert topic; ``result`` with the message."""
    message = "\n".join(lines)
    subject = f"{detail_type or 'Capacity Block event'}"[:100]
    # Throttling is retried (botocore standard mode, then with_backoff); any other failure raises: the event is then
    # retried by Lambda and ends in the on-failure destination, and the log holds the message.
    result["message"] = message
    print(json.dumps({"notice": message}))
    with_backoff(lambda: sns.publish(TopicArn=topic_arn, Subject=subject, Message=message), sleep=sleep)
    return result


# GetCommandInvocation Status values (botocore ssm model, CommandInvocationStatus: Pending, InProgress, Delayed,
# Success, Cancelled, TimedOut, Failed, Cancelling). Terminal ones, as the SSM API reference's StatusDetails says of
# Success, Delivery/Execution Timed Out, Failed, Canceled ("This is a terminal state"); the others are polled again.
SSM_TERMINAL_STATUSES = frozenset({"Success", "Cancelled", "TimedOut", "Failed"})
SSM_POLL_INTERVAL_S = 2.0
# GetCommandInvocation answers InvocationDoesNotExist while the invocation is not yet visible right after SendCommand
# (UNCONFIRMED as documented eventual consistency: the API reference names the error "didn't match any invocations");
# it is polled again like Pending.
_NOT_YET = "InvocationDoesNotExist"


def wait_for_command(
    ssm: Any, command_id: str, instance_id: str, *, budget: bg.Budget, sleep: Callable[[float], None] = time.sleep
) -> dict[str, Any]:
    """Poll ssm:GetCommandInvocation until a terminal status or the budget runs out; the last answer (``Status``
    "NotFinished" when the budget ran out first). Throttling is retried by the client and by :func:`with_backoff`."""
    last: dict[str, Any] = {"Status": "NotFinished", "StatusDetails": "not seen"}
    while True:
        try:
            answer = with_backoff(
                lambda: ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id), sleep=sleep
            )
            last = {**answer, "Status": answer.get("Status", "")}
            if last["Status"] in SSM_TERMINAL_STATUSES:
                return last
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code", "")) != _NOT_YET:
                raise
        if budget.left() <= SSM_POLL_INTERVAL_S:
            return {**last, "Status": "NotFinished", "StatusDetails": last.get("StatusDetails") or last["Status"]}
        sleep(SSM_POLL_INTERVAL_S)


def _drain_lines(
    ec2: Any,
    ssm: Any,
    *,
    reservation_id: str,
    login_node_group_id: str,
    result: dict[str, Any],
    budget: bg.Budget,
    sleep: Callable[[float], None] = time.sleep,
    after_drain: list[str] | None = None,
    instances: list[dict[str, Any]] | None = None,
    reason: str = DRAIN_REASON,
    parallelcluster_cluster_name: str = "",
) -> list[str]:
    addresses = block_addresses(ec2, reservation_id) if instances is None else instance_addresses(instances)
    login, where_none = slurm_host(ec2, login_node_group_id, parallelcluster_cluster_name)
    if not addresses:
        return ["No running instance in the block: nothing to drain."]
    if login is None:
        return [f"No running {where_none}: nodes NOT drained."]
    response = with_backoff(
        lambda: ssm.send_command(
            InstanceIds=[login],
            DocumentName=RUN_SHELL_DOCUMENT,
            Comment=f"drain {reservation_id} ({reason})"[:100],
            Parameters={"commands": [drain_script(addresses, after_drain, reason)]},
        ),
        sleep=sleep,
    )
    command_id = response["Command"]["CommandId"]
    result["command_id"] = command_id
    answer = wait_for_command(ssm, command_id, login, budget=budget, sleep=sleep)
    status = str(answer.get("Status"))
    result["drain_status"] = status
    where = f"SSM command {command_id} on {login}"
    out = str(answer.get("StandardOutputContent") or "").strip()[-500:]
    err = str(answer.get("StandardErrorContent") or "").strip()[-500:]
    if status == "Success":
        return [f"Drained the block's Slurm nodes ({where}): {out or 'no output'}."]
    if status == "NotFinished":
        result["drain_error"] = f"not finished: {answer.get('StatusDetails')}"
        return [
            f"Drain NOT CONFIRMED: {where} was still {answer.get('StatusDetails')} when the handler's time budget "
            "ran out; check it with `aws ssm get-command-invocation`."
        ]
    result["drain_error"] = f"{status} (exit code {answer.get('ResponseCode')})"
    return [
        f"Drain of the block's Slurm nodes FAILED ({where}): {answer.get('StatusDetails') or status}, exit code "
        f"{answer.get('ResponseCode')}; stderr: {err or '(empty)'}; stdout: {out or '(empty)'}"[:1500]
    ]


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:  # pragma: no cover - Lambda entry point
    print(json.dumps({"event": event}))
    budget = Budget.from_context(context)
    result = process(
        event,
        ec2=boto3.client("ec2", config=CLIENT_CONFIG),
        ssm=boto3.client("ssm", config=CLIENT_CONFIG),
        sns=boto3.client("sns", config=CLIENT_CONFIG),
        topic_arn=os.environ["TOPIC_ARN"],
        login_node_group_id=os.environ.get("PCS_LOGIN_NODE_GROUP_ID", ""),
        parallelcluster_cluster_name=os.environ.get("PARALLELCLUSTER_CLUSTER_NAME", ""),
        eks=boto3.client("eks", config=CLIENT_CONFIG),
        sts=boto3.client("sts"),
        eks_cluster_name=os.environ.get("EKS_CLUSTER_NAME", ""),
        scaling_targets=json.loads(os.environ.get("SCALING_TARGETS") or "[]"),
        autoscaling=boto3.client("autoscaling", config=CLIENT_CONFIG),
        budget=budget,
        lead=ld.LeadSettings(
            lead_minutes={str(k): int(v) for k, v in json.loads(os.environ["LEAD_MINUTES"]).items()},
            group=os.environ.get("SCHEDULE_GROUP", ""),
            role_arn=os.environ.get("SCHEDULE_ROLE_ARN", ""),
            function_arn=str(getattr(context, "invoked_function_arn", "")),
        )
        if os.environ.get("LEAD_MINUTES")
        else None,
        scheduler=boto3.client("scheduler", config=CLIENT_CONFIG),
        job_warning=json.loads(os.environ.get("JOB_WARNING") or "{}"),
        interruptible_reservation_ids=rc.reservation_ids_setting(os.environ.get("INTERRUPTIBLE_RESERVATION_IDS")),
    )
    print(json.dumps(result))
    return result
