"""Lambda handler for :class:`fmconstructs.capacity_events.CapacityBlockEvents` (standard library + boto3 only).

On every Capacity Block event it publishes a message to the alert topic. On an expiration warning, when a PCS login
node group is configured, it drains the block's Slurm nodes through SSM Run Command on a login node.

Events (EC2 User Guide, "Monitor Capacity Blocks using EventBridge", capacity-blocks-monitor): EC2 emits one when
the block starts and another forty minutes before it ends ("any instances running in the reservation will begin to
terminate in 10 minutes"); ``detail`` carries ``capacity-reservation-id`` and ``end-date``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import boto3

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
DRAIN_REASON = "capacity block ends"
RUN_SHELL_DOCUMENT = "AWS-RunShellScript"

# Capacity reservation ids: "cr-" and 17 hex digits, or 8 for older ids (UNCONFIRMED: the usual EC2 id form, not
# seen as a documented pattern).
_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{8}(?:[0-9a-f]{9})?")
# What may reach the shell script: IPv4 addresses and EC2 private DNS host labels.
_ADDRESS = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_HOST = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def drain_script(addresses: list[str]) -> str:
    """The shell script run on the login node: drain the Slurm nodes whose address or host name is in ``addresses``.

    Slurm node names of PCS nodes are not documented as derivable from the instance (UNCONFIRMED), so the script
    matches each node's ``NodeAddr`` (``%o``) and ``NodeHostName`` (``%n``) from ``sinfo`` against the instances'
    private IPs and host names instead.
    """
    safe = sorted({a for a in addresses if _ADDRESS.fullmatch(a) or _HOST.fullmatch(a)})
    wanted = " ".join(safe)
    reason = DRAIN_REASON
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            # PCS installs Slurm in /opt/aws/pcs/scheduler/slurm-<version> (PCS User Guide, see pcs/user_data.py).
            'for d in /opt/aws/pcs/scheduler/slurm-*/bin; do [ -d "$d" ] && PATH="$d:$PATH"; done',
            "export PATH",
            f'wanted=" {wanted} "',
            'nodes=""',
            "while read -r name addr host; do",
            '  case "$wanted" in',
            '    *" $addr "*|*" $host "*)',
            '      case ",$nodes," in *",$name,"*) ;; *) nodes="${nodes:+$nodes,}$name" ;; esac ;;',
            "  esac",
            "done < <(sinfo -h -N -o '%N %o %n')",
            'if [ -z "$nodes" ]; then',
            '  echo "no Slurm node matches the capacity block instances"',
            "  exit 0",
            "fi",
            f'scontrol update nodename="$nodes" state=DRAIN reason="{reason}"',
            'echo "drained: $nodes"',
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

    ec2:DescribeInstances filter ``capacity-reservation-id`` (EC2 API reference, DescribeInstances Filter.N;
    UNCONFIRMED: the filter list was not seen while writing this)."""
    out: list[str] = []
    for instance in _running(ec2, [{"Name": "capacity-reservation-id", "Values": [reservation_id]}]):
        ip = instance.get("PrivateIpAddress")
        if ip:
            out.append(ip)
        dns = instance.get("PrivateDnsName") or ""
        if dns:
            out.append(dns.split(".", 1)[0])
    return out


def login_instance(ec2: Any, login_node_group_id: str) -> str | None:
    """One running login node of the PCS login node group (by the PCS node group tag), or None."""
    instances = _running(ec2, [{"Name": f"tag:{NODE_GROUP_ID_TAG}", "Values": [login_node_group_id]}])
    ids = sorted(i["InstanceId"] for i in instances if i.get("InstanceId"))
    return ids[0] if ids else None


def process(
    event: dict[str, Any], *, ec2: Any, ssm: Any, sns: Any, topic_arn: str, login_node_group_id: str
) -> dict[str, Any]:
    """Handle one EventBridge event; returns what was done (for logs and tests)."""
    detail_type = str(event.get("detail-type") or event.get("detail_type") or "")
    detail = event.get("detail") or {}
    reservation_id = str(detail.get("capacity-reservation-id") or "")
    end_date = str(detail.get("end-date") or "unknown")
    result: dict[str, Any] = {"detail_type": detail_type, "capacity_reservation_id": reservation_id}
    lines = [f"{detail_type}: capacity reservation {reservation_id or '(missing)'}, ends {end_date}."]

    expiring = detail_type in EXPIRY_DETAIL_TYPES
    if expiring and login_node_group_id and _RESERVATION_ID.fullmatch(reservation_id):
        addresses = block_addresses(ec2, reservation_id)
        login = login_instance(ec2, login_node_group_id)
        if not addresses:
            lines.append("No running instance in the block: nothing to drain.")
        elif login is None:
            lines.append(f"No running login node in PCS node group {login_node_group_id}: nodes NOT drained.")
        else:
            response = ssm.send_command(
                InstanceIds=[login],
                DocumentName=RUN_SHELL_DOCUMENT,
                Comment=f"drain {reservation_id} ({DRAIN_REASON})"[:100],
                Parameters={"commands": [drain_script(addresses)]},
            )
            command_id = response["Command"]["CommandId"]
            result["command_id"] = command_id
            lines.append(f"Draining the block's Slurm nodes via SSM command {command_id} on {login}.")
    elif expiring and reservation_id and not _RESERVATION_ID.fullmatch(reservation_id):
        lines.append("Unrecognized capacity reservation id: nodes NOT drained.")

    message = "\n".join(lines)
    sns.publish(TopicArn=topic_arn, Subject=f"{detail_type or 'Capacity Block event'}"[:100], Message=message)
    result["message"] = message
    return result


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:  # pragma: no cover - Lambda entry point
    print(json.dumps({"event": event}))
    result = process(
        event,
        ec2=boto3.client("ec2"),
        ssm=boto3.client("ssm"),
        sns=boto3.client("sns"),
        topic_arn=os.environ["TOPIC_ARN"],
        login_node_group_id=os.environ.get("PCS_LOGIN_NODE_GROUP_ID", ""),
    )
    print(json.dumps(result))
    return result
