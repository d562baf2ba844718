"""A CloudFormation stack policy that forbids replacing or deleting a stack's stateful resources.

Stack policy syntax (CloudFormation User Guide, "Prevent updates to stack resources", protect-stack-resources.html):
a ``Statement`` list of ``{"Effect": "Allow" | "Deny", "Action": "Update:Modify" | "Update:Replace" |
"Update:Delete" | "Update:*", "Principal": "*", "Resource": "LogicalResourceId/<id>" | "*"}``; once a stack has a
policy every resource is protected unless a statement allows it, and an explicit ``Deny`` overrides an ``Allow``.

The document allows every update, then denies ``Update:Replace`` and ``Update:Delete`` on the stateful resources
(:data:`.changes.STATEFUL_TYPES`) by logical id. A policy applies during stack updates only; resources inside nested
stacks need a policy on the nested stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .changes import STATEFUL_TYPES, resource_path

ALLOW_ALL: dict[str, Any] = {
    "Statement": [{"Effect": "Allow", "Action": "Update:*", "Principal": "*", "Resource": "*"}]
}
"""The policy that lifts every protection (to pass as ``--stack-policy-during-update-body`` or to set temporarily)."""

#: SetStackPolicy ``StackPolicyBody`` maximum length (CloudFormation API Reference, SetStackPolicy; botocore
#: cloudformation 2010-05-15 shape ``StackPolicyBody``: min 1, max 16384).
STACK_POLICY_MAX_BYTES = 16_384


def protected_resources(
    stack: str, template: Mapping[str, Any], *, allow: Iterable[str] = ()
) -> list[tuple[str, str, str]]:
    """``(logical id, type, construct path)`` of the stateful resources, minus those under an ``allow`` path."""
    allowed = [a.rstrip("/") for a in allow if a.strip("/")]
    resources = template.get("Resources") or {}
    found: list[tuple[str, str, str]] = []
    for lid, resource in resources.items() if isinstance(resources, dict) else ():
        if not isinstance(resource, dict) or resource.get("Type") not in STATEFUL_TYPES:
            continue
        path = resource_path(stack, lid, resource)
        keys = (path, f"{stack}/{lid}")
        if any(k == a or k.startswith(a + "/") for a in allowed for k in keys):
            continue
        found.append((str(lid), str(resource["Type"]), path))
    return sorted(found)


def stack_policy(stack: str, template: Mapping[str, Any], *, allow: Iterable[str] = ()) -> dict[str, Any]:
    """The stack policy document: allow ``Update:*`` on everything, deny replace/delete on the stateful resources."""
    protected = protected_resources(stack, template, allow=allow)
    statements: list[dict[str, Any]] = [dict(ALLOW_ALL["Statement"][0])]
    if protected:
        statements.append(
            {
                "Effect": "Deny",
                "Action": ["Update:Replace", "Update:Delete"],
                "Principal": "*",
                "Resource": [f"LogicalResourceId/{lid}" for lid, _, _ in protected],
            }
        )
    return {"Statement": statements}
