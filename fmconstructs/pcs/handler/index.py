"""Custom resource handler: a PCS compute node group's instance health checks (``Custom::FmPcsInstanceHealthChecks``).

Runs in the AWS Lambda Python runtime (standard library + boto3 only) behind ``aws_cdk.custom_resources.Provider``
with ``on_event`` and ``is_complete``. Properties: ``ClusterId``, ``ComputeNodeGroupId`` and ``InstanceHealthChecks``
(``UpdateInstanceHealthChecksRequest``, botocore PCS model).

- **Create / Update** (``on_event``): ``GetComputeNodeGroup``; when the group's settings already equal the wanted ones
  (compared after :func:`normalize`: an absent object or a NONE mode/profile is "off", an unsent repair action is
  AUTO, PCS's default) nothing is called; else, while the group is ACTIVE, one ``UpdateComputeNodeGroup`` with
  ``instanceHealthChecks`` only. A group still CREATING / UPDATING / RESUMING is updated by ``is_complete`` once it
  is ACTIVE (``UpdateComputeNodeGroup`` refuses with ConflictException meanwhile: taken as "not yet").
  An ACTIVE group whose settings still differ gets the same request again (it sets the same values; whether PCS
  drains and replaces again on an identical request is UNCONFIRMED).
- **Waiting** (``is_complete``): complete when the group is ACTIVE with the wanted settings; a failed, deleted or
  suspended group fails the resource with PCS's ``errorInfo``; the provider's total timeout bounds the wait.
- **Delete**: no call. The node group's checks are left as they are, because the handler cannot tell a removal of
  the option from a stack deletion or a replacement of the node group, and a reset changes the settings, which
  "drains and replaces the instances" of a group CloudFormation may delete right after. To turn the checks off,
  deploy ``PcsInstanceHealthChecks.off()`` first.
- Throttling and transient errors: botocore ``standard`` retries (exponential backoff, throttling codes included);
  any other error fails the resource with the service's message (the provider framework reports it to
  CloudFormation).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

LOG = logging.getLogger()
LOG.setLevel(logging.INFO)

# botocore "standard" retry mode: retries throttling (ThrottlingException among its codes) and transient errors with
# exponential backoff, up to max_attempts (botocore docs "Retries"); timeouts far below the 60 s defaults.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=20)

#: ``ComputeNodeGroupStatus`` values (botocore PCS model) the handler waits through, and those that end the wait.
WAIT_STATUSES = frozenset({"CREATING", "UPDATING", "RESUMING"})
FAILED_STATUSES = frozenset(
    {"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "DELETING", "DELETED", "SUSPENDING", "SUSPENDED"}
)
ACTIVE = "ACTIVE"
#: ``HealthMonitoring`` / ``DeepHealthCheckOnStart``: "If you don't specify this value and mode isn't NONE, PCS uses
#: AUTO".
DEFAULT_REPAIR_ACTION = "AUTO"
OFF = "NONE"


class HealthChecksError(Exception):
    """A failure reported to CloudFormation as the resource's reason."""


def client() -> Any:
    return boto3.client("pcs", config=CLIENT_CONFIG)


def normalize(checks: Mapping[str, Any] | None) -> tuple[str, str | None, str, str | None]:
    """``(monitoring mode, its repair action, deep profile, its repair action)`` with PCS's equivalences: a missing
    object or NONE is off (no repair action), an unsent repair action of a check that is on is AUTO."""
    checks = checks or {}
    monitoring = checks.get("healthMonitoring") or {}
    mode = monitoring.get("mode") or OFF
    mode_action = None if mode == OFF else monitoring.get("repairAction") or DEFAULT_REPAIR_ACTION
    on_start = (checks.get("deepHealthChecks") or {}).get("onStart") or {}
    profile = on_start.get("profile") or OFF
    profile_action = None if profile == OFF else on_start.get("repairAction") or DEFAULT_REPAIR_ACTION
    return mode, mode_action, profile, profile_action


def _props(event: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    props = event.get("ResourceProperties") or {}
    try:
        cluster, group = str(props["ClusterId"]), str(props["ComputeNodeGroupId"])
        wanted = props["InstanceHealthChecks"]
    except KeyError as missing:
        raise HealthChecksError(f"missing property {missing}") from None
    if isinstance(wanted, str):
        wanted = json.loads(wanted)
    return cluster, group, dict(wanted)


def _get(pcs: Any, cluster: str, group: str) -> dict[str, Any]:
    response = pcs.get_compute_node_group(clusterIdentifier=cluster, computeNodeGroupIdentifier=group)
    node_group: dict[str, Any] = response["computeNodeGroup"]
    return node_group


def _error_info(node_group: Mapping[str, Any]) -> str:
    infos = node_group.get("errorInfo") or []
    text = "; ".join(f"{i.get('code', '?')}: {i.get('message', '')}" for i in infos)
    return text or "no errorInfo"


def _update(pcs: Any, cluster: str, group: str, wanted: dict[str, Any]) -> bool:
    """One UpdateComputeNodeGroup with ``instanceHealthChecks``; False when PCS answers ConflictException (the group
    is busy: try again later)."""
    try:
        pcs.update_compute_node_group(
            clusterIdentifier=cluster, computeNodeGroupIdentifier=group, instanceHealthChecks=wanted
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConflictException":
            LOG.info("node group %s busy (ConflictException): updating later", group)
            return False
        raise
    LOG.info("node group %s: instanceHealthChecks set to %s", group, json.dumps(wanted))
    return True


def _converge(pcs: Any, cluster: str, group: str, wanted: dict[str, Any]) -> tuple[bool, bool]:
    """``(settled, requested)``: whether the group is ACTIVE with the wanted settings, and whether an update was
    sent now."""
    node_group = _get(pcs, cluster, group)
    status = str(node_group.get("status"))
    if status in FAILED_STATUSES:
        raise HealthChecksError(f"compute node group {group} is {status}: {_error_info(node_group)}")
    equal = normalize(node_group.get("instanceHealthChecks")) == normalize(wanted)
    if status != ACTIVE:
        return False, False
    if equal:
        return True, False
    return False, _update(pcs, cluster, group, wanted)


def on_event(event: Mapping[str, Any], context: Any = None, *, pcs: Any = None) -> dict[str, Any]:
    """``custom_resources.Provider`` onEvent handler. ``pcs`` (a boto3 ``pcs`` client) is for tests."""
    request = event.get("RequestType")
    physical = str(event.get("PhysicalResourceId") or "")
    if request == "Delete":
        # Left as they are (module docstring); PhysicalResourceId unchanged.
        LOG.info("delete: leaving the instance health checks of %s as they are", physical)
        return {"PhysicalResourceId": physical}
    cluster, group, wanted = _props(event)
    pcs = pcs or client()
    try:
        settled, requested = _converge(pcs, cluster, group, wanted)
    except ClientError as error:
        raise HealthChecksError(_client_error_text(error, group)) from None
    return {
        "PhysicalResourceId": f"{cluster}/{group}",
        "Data": {"Changed": "false" if settled else "true", "Requested": "true" if requested else "false"},
    }


def is_complete(event: Mapping[str, Any], context: Any = None, *, pcs: Any = None) -> dict[str, Any]:
    """``custom_resources.Provider`` isComplete handler: the group ACTIVE with the wanted settings."""
    if event.get("RequestType") == "Delete":
        return {"IsComplete": True}
    cluster, group, wanted = _props(event)
    pcs = pcs or client()
    try:
        settled, _ = _converge(pcs, cluster, group, wanted)
    except ClientError as error:
        raise HealthChecksError(_client_error_text(error, group)) from None
    return {"IsComplete": settled}


def _client_error_text(error: ClientError, group: str) -> str:
    info = error.response.get("Error", {})
    operation = getattr(error, "operation_name", "PCS")
    return f"{operation} on compute node group {group} failed: {info.get('Code', '?')}: {info.get('Message', error)}"
