"""Reclaim warnings of interruptible Capacity Reservations (standard library + boto3 only; used by ``index``).

EC2 sends "EC2 Capacity Reservation Instance Interruption Warning" (source ``aws.ec2``) to the account running an
instance in an interruptible reservation 2 minutes before the instance is terminated; ``detail`` carries
``instance-id``, ``instance-action`` (``terminate``), ``instance-termination-time`` and ``azId``, and no reservation id
(EC2 User Guide "Monitor interruptible Capacity Reservations with EventBridge and CloudTrail", monitor-interruptible-cr,
"Instance interruption warning"). So the instance is read (ec2:DescribeInstances by id) and its
``CapacityReservationId`` (botocore 1.44.8 ec2 ``Instance`` shape) tells whether it is one of the configured
reservations. The drain and the cordon are ``index``'s, on that one instance.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The reclaim warning's detail-type (EC2 User Guide monitor-interruptible-cr).
RECLAIM_DETAIL_TYPES: tuple[str, ...] = ("EC2 Capacity Reservation Instance Interruption Warning",)
#: The Slurm drain reason on a reclaim warning (a constant: it is written into the drain script).
RECLAIM_DRAIN_REASON = "capacity reservation reclaimed"
#: EC2 instance ids: i- and 8 or 17 hex digits (EC2 User Guide "resource-ids"; UNCONFIRMED as a documented pattern).
_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8}(?:[0-9a-f]{9})?")


@dataclass
class Reclaim:
    """What a reclaim warning is about: the instance, its reservation, and whether this handler acts on it."""

    instance_id: str
    termination_time: str
    reservation_id: str = ""
    instance: dict[str, Any] | None = None
    listed: bool = True
    """False for an instance of a reservation not in the configured list: the handler then sends no notice."""
    ours: bool = False
    lines: list[str] = field(default_factory=list)


def reservation_ids_setting(value: str | None) -> list[str]:
    """The INTERRUPTIBLE_RESERVATION_IDS environment value (a JSON list; empty: every reservation)."""
    ids = json.loads(value or "[]")
    return [str(i) for i in ids] if isinstance(ids, list) else []


def read_reclaim(event: dict[str, Any], ec2: Any, reservation_ids: list[str]) -> Reclaim:
    """The warning's instance, read with ec2:DescribeInstances; ``ours`` when it runs in one of ``reservation_ids``
    (any reservation when the list is empty) and is still pending or running."""
    detail = event.get("detail") or {}
    instance_id = str(detail.get("instance-id") or "")
    reclaim = Reclaim(instance_id=instance_id, termination_time=str(detail.get("instance-termination-time") or ""))
    if not _INSTANCE_ID.fullmatch(instance_id):
        reclaim.lines.append(f"Unrecognized instance id {instance_id!r}: nothing drained or cordoned.")
        return reclaim
    try:
        pages = ec2.describe_instances(InstanceIds=[instance_id]).get("Reservations", [])
    except Exception as error:  # the notice goes out whatever failed (a failed read is reported, never raised)
        traceback.print_exc()
        reclaim.lines.append(f"Reading instance {instance_id} FAILED: {error}; nothing drained or cordoned."[:1000])
        return reclaim
    found = [i for page in pages for i in page.get("Instances", []) if i.get("InstanceId") == instance_id]
    if not found:
        reclaim.lines.append(f"Instance {instance_id} not found: nothing drained or cordoned.")
        return reclaim
    reclaim.instance = found[0]
    reclaim.reservation_id = str(found[0].get("CapacityReservationId") or "")
    state = str((found[0].get("State") or {}).get("Name") or "")
    reclaim.listed = not reservation_ids or reclaim.reservation_id in reservation_ids
    reclaim.ours = reclaim.listed and state in ("pending", "running")
    if not reclaim.listed:
        reclaim.lines.append(
            f"Instance {instance_id} runs in {reclaim.reservation_id or 'no capacity reservation'}, not in "
            f"{', '.join(reservation_ids)}: left to whoever watches that reservation."
        )
    elif not reclaim.ours:
        reclaim.lines.append(f"Instance {instance_id} is {state or 'in an unknown state'}: nothing to drain.")
    return reclaim


def process_reclaim(
    event: dict[str, Any],
    detail_type: str,
    ops: Any,
    ec2: Any,
    backend: dict[str, Any],
    kube_factory: Callable[[], Any] | None,
    budget: Any,
    sleep: Callable[[float], None],
    warning: dict[str, Any],
    reservation_ids: list[str],
) -> tuple[list[str] | None, dict[str, Any]]:
    """Drain (PCS) and cordon (EKS) the instance of a reclaim warning with ``ops`` (the ``index`` module: its
    ``_drain_lines`` and ``_eks_lines``, the ones Capacity Block warnings use); (notice lines, result). No lines (no
    notice) for an instance of another reservation of the account: not this platform's to report."""
    reclaim = read_reclaim(event, ec2, reservation_ids)
    if not reclaim.listed:
        print(json.dumps({"ignored": reclaim.lines}))
        return None, {"detail_type": detail_type, "ignored": True, "instance_id": reclaim.instance_id}
    cr = reclaim.reservation_id
    result: dict[str, Any] = {"instance_id": reclaim.instance_id, "capacity_reservation_id": cr}
    ends = f"instance {reclaim.instance_id} of {cr or '(unknown reservation)'} ends {reclaim.termination_time}."
    lines = [f"{detail_type}: {ends}", *reclaim.lines]
    if not reclaim.ours:
        return lines, {**result, "detail_type": detail_type}
    instances = [reclaim.instance]
    if backend["login"] or backend.get("pc"):
        try:
            signal = warning.get("slurm_signal")
            lines += ops._drain_lines(
                ec2,
                backend["ssm"],
                reservation_id=cr,
                login_node_group_id=backend["login"],
                parallelcluster_cluster_name=backend.get("pc", ""),
                result=result,
                budget=budget,
                sleep=sleep,
                after_drain=ops.jw.slurm_signal_lines(signal, warning.get("slurm_scope", "steps")) if signal else None,
                instances=instances,
                reason=RECLAIM_DRAIN_REASON,
            )
        except Exception as error:  # the notice goes out whatever failed
            traceback.print_exc()
            result["drain_error"] = str(error)
            lines.append(f"Drain of the reclaimed Slurm node FAILED: {error}"[:1000])
    if backend["cluster"]:
        lines += ops._eks_lines(
            ec2,
            reservation_id=cr,
            end_date=reclaim.termination_time,
            cluster_name=backend["cluster"],
            kube_factory=kube_factory
            or (lambda: ops.kube_for_cluster(backend["eks"], backend["sts"], backend["cluster"], budget)),
            result=result,
            budget=budget,
            pod_warning=warning if warning.get("pod_annotation") else None,
            instances=instances,
        )
    result["detail_type"] = detail_type
    return lines, result
