"""The deployed side of ``fmc changes``: read-only CloudFormation calls.

- ``GetTemplate`` (``TemplateStage=Original``) of each stack, compared with :func:`.changes.compare_templates`;
- optionally ``CreateChangeSet`` (``ChangeSetType=UPDATE``, never executed), ``DescribeChangeSet`` (its
  ``Changes[].ResourceChange``: ``Action``, ``Replacement`` ``True | False | Conditional``, ``Details[].Target``
  ``Name`` / ``RequiresRecreation`` ``Never | Conditionally | Always``; CloudFormation API Reference) and always
  ``DeleteChangeSet``. The change set is CloudFormation's own answer to "is this replaced?".

``CreateChangeSet`` takes a ``TemplateBody`` of at most 51,200 bytes (CloudFormation API Reference, CreateChangeSet);
a larger template needs an S3 ``TemplateURL``, which fmc does not upload: that stack keeps the template comparison.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .changes import MAY_REPLACE, REPLACE, STATEFUL_TYPES, Finding, Report, resource_path

#: CreateChangeSet ``TemplateBody`` maximum length (CloudFormation API Reference, CreateChangeSet).
TEMPLATE_BODY_MAX_BYTES = 51_200

#: What CloudFormation says when a change set would change nothing (``StatusReason`` of a FAILED change set).
_NO_CHANGES = ("didn't contain changes", "No updates are to be performed")


class GateInputError(Exception):
    """Input fmc cannot read (a template that is not JSON, an unknown stack name...)."""


class GateAwsError(Exception):
    """A CloudFormation call failed (credentials, permissions, throttling, a failed change set)."""


def _client_error_code(error: Exception) -> str:
    response = getattr(error, "response", None)
    return str(((response or {}).get("Error") or {}).get("Code", "")) if isinstance(response, dict) else ""


def _aws_error(stack: str, action: str, error: Exception) -> GateAwsError:
    return GateAwsError(f"{action} for stack {stack} failed: {error}")


def deployed_template(client: Any, stack: str) -> dict[str, Any] | None:
    """The template the stack was last deployed with; None when the stack does not exist."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.get_template(StackName=stack, TemplateStage="Original")
    except ClientError as error:
        if _client_error_code(error) == "ValidationError" and "does not exist" in str(error):
            return None
        raise _aws_error(stack, "GetTemplate", error) from None
    except BotoCoreError as error:
        raise _aws_error(stack, "GetTemplate", error) from None
    body = response.get("TemplateBody")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            raise GateInputError(f"the deployed template of stack {stack} is not JSON (YAML is not read)") from None
    if not isinstance(body, dict):
        raise GateInputError(f"the deployed template of stack {stack} is not a JSON object")
    return body


def _parameters(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Keep the deployed value of every parameter without a default (CDK asset parameters); defaults apply else."""
    parameters = template.get("Parameters") or {}
    return [
        {"ParameterKey": name, "UsePreviousValue": True}
        for name, spec in parameters.items()
        if isinstance(spec, dict) and "Default" not in spec
    ]


def _describe_all(client: Any, change_set_id: str, sleep: Callable[[float], None], timeout_s: float) -> dict[str, Any]:
    """Poll DescribeChangeSet until the change set is created (or failed); gather every page of ``Changes``."""
    waited = 0.0
    while True:
        page = client.describe_change_set(ChangeSetName=change_set_id)
        if page.get("Status") not in ("CREATE_PENDING", "CREATE_IN_PROGRESS"):
            break
        if waited >= timeout_s:
            raise GateAwsError(f"change set {change_set_id} still {page.get('Status')} after {timeout_s:.0f} s")
        sleep(2.0)
        waited += 2.0
    changes = list(page.get("Changes") or [])
    token = page.get("NextToken")
    while token:
        more = client.describe_change_set(ChangeSetName=change_set_id, NextToken=token)
        changes += more.get("Changes") or []
        token = more.get("NextToken")
    return {**page, "Changes": changes}


def _delete(client: Any, stack: str, change_set_id: str) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.delete_change_set(ChangeSetName=change_set_id)
    except (ClientError, BotoCoreError) as error:
        raise GateAwsError(
            f"DeleteChangeSet for stack {stack} failed ({error}): delete change set {change_set_id} yourself"
        ) from None


def change_set_changes(
    client: Any,
    stack: str,
    template: Mapping[str, Any],
    *,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = 300.0,
) -> list[dict[str, Any]] | None:
    """The ``ResourceChange`` entries of a change set for ``template`` (created, read, deleted; never executed).

    None when the template is too large for ``TemplateBody``."""
    from botocore.exceptions import BotoCoreError, ClientError

    body = json.dumps(template, separators=(",", ":"))
    if len(body.encode()) > TEMPLATE_BODY_MAX_BYTES:
        return None
    try:
        created = client.create_change_set(
            StackName=stack,
            ChangeSetName=f"fmc-changes-{int(time.time())}",
            ChangeSetType="UPDATE",
            TemplateBody=body,
            Parameters=_parameters(template),
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
            Description="fmc changes: a preview, never executed",
        )
    except (ClientError, BotoCoreError) as error:
        raise _aws_error(stack, "CreateChangeSet", error) from None
    change_set_id = str(created["Id"])
    try:
        described = _describe_all(client, change_set_id, sleep, timeout_s)
    except (ClientError, BotoCoreError) as error:
        raise _aws_error(stack, "DescribeChangeSet", error) from None
    finally:
        _delete(client, stack, change_set_id)
    if described.get("Status") == "FAILED":
        reason = str(described.get("StatusReason", ""))
        if any(text in reason for text in _NO_CHANGES):
            return []
        raise GateAwsError(f"the change set for stack {stack} failed: {reason}")
    return [c["ResourceChange"] for c in described["Changes"] if isinstance(c.get("ResourceChange"), dict)]


def change_set_findings(stack: str, template: Mapping[str, Any], changes: list[dict[str, Any]]) -> list[Finding]:
    """Replacements as CloudFormation reports them (``Replacement`` True -> replace, Conditional -> may-replace)."""
    resources = template.get("Resources") or {}
    findings: list[Finding] = []
    for change in changes:
        replacement = change.get("Replacement")
        if change.get("Action") != "Modify" or replacement not in ("True", "Conditional"):
            continue
        lid = str(change.get("LogicalResourceId"))
        rtype = str(change.get("ResourceType"))
        causes = [
            d
            for d in change.get("Details") or []
            if (d.get("Target") or {}).get("RequiresRecreation") in ("Always", "Conditionally")
        ]
        names = [str((d["Target"]).get("Name") or (d["Target"]).get("Attribute")) for d in causes]
        entities = sorted({str(d["CausingEntity"]) for d in causes if d.get("CausingEntity")})
        detail = "CloudFormation change set: Replacement " + str(replacement)
        if entities:
            detail += " (caused by " + ", ".join(entities) + ")"
        findings.append(
            Finding(
                stack,
                lid,
                rtype,
                resource_path(stack, lid, resources.get(lid) or {}),
                REPLACE if replacement == "True" else MAY_REPLACE,
                detail,
                ", ".join(dict.fromkeys(names)) or None,
                stateful=rtype in STATEFUL_TYPES,
                source="change-set",
            )
        )
    return findings


def with_change_set(report: Report, stack: str, findings: list[Finding]) -> Report:
    """``report`` with the stack's template-derived replacements swapped for the change set's answer."""
    kept = [
        f
        for f in report.findings
        if not (f.stack == stack and f.kind in (REPLACE, MAY_REPLACE) and f.source == "template")
    ]
    return replace(report, findings=kept + findings)
