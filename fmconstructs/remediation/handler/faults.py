"""Faults out of the handler's two inputs: Alertmanager notifications through SNS, and AWS Health events.

Alertmanager -> SNS -> Lambda: Lambda receives ``{"Records": [{"EventSource": "aws:sns", "Sns": {"Message": ...,
"Subject": ..., "MessageAttributes": ...}}]}`` (Lambda Developer Guide, "Using Lambda with Amazon SNS", example event).
The message body is Alertmanager's ``sns.default.message`` template:

- JSON when the workspace defines the template AMP documents (AMP User Guide, "Configure alert manager to send messages
  to Amazon SNS as JSON", AMP-alertmanager-receiver-JSON: ``{"receiver", "status", "alerts": [{"status", "labels",
  "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}], "groupLabels", ...}``);
- otherwise the default plain-text list (AMP User Guide AMP-alertmanager-receiver-JSON: "By default, Amazon Managed
  Service for Prometheus alert manager outputs messages in a plain text list format"; the default template, as the AWS
  Observability Best Practices guide prints it, is the common annotations, then "Alerts Firing:" and "Alerts
  Resolved:" each followed by Alertmanager's ``__text_alert_list``). That list is ``Labels:`` then one
  `` - name = value`` line per label, per alert (UNCONFIRMED: Alertmanager's template/default.tmpl was not opened;
  the parser reads only the "Alerts Firing:" part and ``Labels:`` blocks in it, and ignores anything else).

AWS Health -> EventBridge: ``source`` ``aws.health``, ``detail-type`` ``AWS Health Event``, ``detail`` with
``service``, ``eventTypeCode``, ``eventTypeCategory`` (``scheduledChange``), ``startTime``, ``statusCode`` and
``affectedEntities`` (``entityValue`` = the instance id) (AWS Health User Guide, aws-health-events-eventbridge-schema);
``resources`` lists the affected resources too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: EC2 instance ids (8 or 17 hex digits after "i-"; the form EC2 API responses use).
INSTANCE_ID = re.compile(r"i-[0-9a-f]{8}(?:[0-9a-f]{9})?")
# Copies of fmconstructs.health.metric_names (this directory is the Lambda asset: it cannot import the package);
# tests/health/test_health_metrics.py keeps them equal.
#: The prefix node-join checks drain a node with (the Slurm reason; also an alert label ``reason``).
NODE_CHECK_REASON_PREFIX = "fmconstructs:"
#: The alert label naming the trigger (``Trigger`` value); it wins over the alert-name mapping.
TRIGGER_LABEL = "fmconstructs_trigger"
#: ``Trigger.NODE_CHECK_FAILED.value``.
NODE_CHECK_FAILED_TRIGGER = "node-check-failed"
HEALTH_SOURCE = "aws.health"
HEALTH_DETAIL_TYPE = "AWS Health Event"
SCHEDULED_CHANGE = "scheduledChange"
# AWS Health statusCode: upcoming | open | closed (Health API EventStatusCode); a closed event needs nothing.
_CLOSED = "closed"
_LABEL_LINE = re.compile(r"^\s*-\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class Fault:
    """One node to act on and why."""

    instance_id: str
    trigger: str
    source: str
    cluster: str = ""
    starts_at: str = ""
    details: dict[str, str] = field(default_factory=dict)
    #: The Kubernetes node an EKS alert names (label ``node``) when it names no instance; the handler finds the
    #: instance from the node's ``spec.providerID`` (``instance_id`` is '' until then).
    node: str = ""


def instance_of(labels: dict[str, str]) -> str:
    """The instance id of an alert: label ``instance_id``, else ``instance`` when it is an instance id (the
    fmconstructs collectors set both to the instance id: observability/collection.py NodeLabels)."""
    for key in ("instance_id", "instance"):
        value = str(labels.get(key) or "")
        if INSTANCE_ID.fullmatch(value):
            return value
    return ""


def node_of(labels: dict[str, str]) -> str:
    """The Kubernetes node an alert names: label ``node`` (the EKS scrape jobs set ``node`` and ``instance`` to the
    pod's node name: observability/eks_attribution.py ``service_job``), or ''."""
    return str(labels.get("node") or "")


def trigger_of(labels: dict[str, str], alert_triggers: dict[str, str]) -> str:
    """The trigger (a Trigger value) of an alert, or '' when the alert is not one the policy acts on."""
    explicit = str(labels.get(TRIGGER_LABEL) or "")
    if explicit:
        return explicit
    if str(labels.get("reason") or "").startswith(NODE_CHECK_REASON_PREFIX):
        return NODE_CHECK_FAILED_TRIGGER
    return alert_triggers.get(str(labels.get("alertname") or ""), "")


def _json_alerts(message: str) -> list[dict[str, Any]] | None:
    try:
        body = json.loads(message)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("alerts"), list):
        return None
    return [alert for alert in body["alerts"] if isinstance(alert, dict)]


def _text_alerts(message: str) -> list[dict[str, Any]]:
    """The firing alerts' labels of the default plain-text message (see the module docstring)."""
    alerts: list[dict[str, Any]] = []
    section = ""
    current: dict[str, str] | None = None
    in_labels = False
    for line in message.splitlines():
        stripped = line.strip()
        if stripped.startswith("Alerts Firing:"):
            section, current, in_labels = "firing", None, False
            continue
        if stripped.startswith("Alerts Resolved:"):
            section, current, in_labels = "resolved", None, False
            continue
        if stripped == "Labels:":
            current = {}
            in_labels = True
            if section == "firing":
                alerts.append({"status": "firing", "labels": current})
            continue
        match = _LABEL_LINE.match(line)
        if in_labels and current is not None and match:
            current[match.group(1)] = match.group(2)
        elif stripped:
            in_labels = False
    return alerts


def alert_faults(message: str, alert_triggers: dict[str, str]) -> tuple[list[Fault], int]:
    """The faults of one Alertmanager notification (firing alerts that name an instance and map to a trigger), and
    how many alerts were skipped."""
    alerts = _json_alerts(message)
    if alerts is None:
        alerts = _text_alerts(message)
    faults: list[Fault] = []
    skipped = 0
    for alert in alerts:
        labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
        instance = instance_of(labels)
        node = "" if instance else node_of(labels)
        trigger = trigger_of(labels, alert_triggers)
        if str(alert.get("status") or "firing") != "firing" or not (instance or node) or not trigger:
            skipped += 1
            continue
        details = {"alertname": labels.get("alertname", ""), "source_alert": labels.get("alertname", "")}
        for key in ("gpu", "device", "check", "reason", "Hostname", "node"):
            if labels.get(key):
                details[key] = labels[key]
        faults.append(
            Fault(
                instance_id=instance,
                trigger=trigger,
                source=f"alert {labels.get('alertname', '?')}",
                cluster=labels.get("cluster", ""),
                details=details,
                node=node,
            )
        )
    return faults, skipped


def health_faults(event: dict[str, Any]) -> list[Fault]:
    """One fault per affected instance of an EC2 scheduled-change AWS Health event (none for a closed event)."""
    detail = event.get("detail") or {}
    if (
        event.get("source") != HEALTH_SOURCE
        or detail.get("service") != "EC2"
        or detail.get("eventTypeCategory") != SCHEDULED_CHANGE
        or str(detail.get("statusCode") or "") == _CLOSED
    ):
        return []
    ids = [str(e.get("entityValue") or "") for e in detail.get("affectedEntities") or [] if isinstance(e, dict)]
    ids += [str(r).rsplit("/", 1)[-1] for r in event.get("resources") or []]
    code = str(detail.get("eventTypeCode") or "")
    starts = str(detail.get("startTime") or "")
    seen: list[str] = []
    for instance in ids:
        if INSTANCE_ID.fullmatch(instance) and instance not in seen:
            seen.append(instance)
    return [
        Fault(
            instance_id=instance,
            trigger="scheduled-event",
            source=f"AWS Health {code}",
            starts_at=starts,
            details={"eventTypeCode": code, "eventArn": str(detail.get("eventArn") or "")},
        )
        for instance in seen
    ]


def faults_of(event: dict[str, Any], alert_triggers: dict[str, str], notice_attribute: str) -> tuple[list[Fault], int]:
    """Faults of an SNS (Alertmanager) or EventBridge (AWS Health) invocation, and the count of skipped alerts.
    Records carrying ``notice_attribute`` (the handler's own notices) are skipped."""
    if "Records" not in event:
        return health_faults(event), 0
    faults: list[Fault] = []
    skipped = 0
    for record in event.get("Records") or []:
        sns = (record or {}).get("Sns") or {}
        if notice_attribute in (sns.get("MessageAttributes") or {}):
            skipped += 1
            continue
        found, missed = alert_faults(str(sns.get("Message") or ""), alert_triggers)
        faults += found
        skipped += missed
    return faults, skipped
