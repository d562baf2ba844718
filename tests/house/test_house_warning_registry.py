"""House rule (issue 25): every warning id is a member of the one registry, ``fmconstructs.errors.WarningId``.

The scan reads every module of fmconstructs/ but errors.py (which defines the registry and ``add_warning``) and finds:

- ``add_warning_v2(...)`` calls: warnings go through ``errors.add_warning(scope, WarningId.X, message)``;
- a registry id written out as a string (``"fmconstructs:no-instance-store"``) instead of ``WarningId.X.qualified``;
- an f-string that builds an id from a value (``f"fmconstructs:{value}"``) and ``Enum`` classes with a ``qualified``
  member: a second registry of warning ids;
- an id named in the text (a double-backquoted ``fmconstructs:<id>`` in a docstring or comment) that is not a
  ``WarningId`` member, unless it is one of the CDK context or metadata keys that share the prefix (NOT_WARNING_IDS).

Modules owned by other work still holding such places are in ALLOWLIST with their count (it may only shrink; the test
fails when a listed module is clean, so the list stays current).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fmconstructs.errors import WarningId

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fmconstructs"
REGISTRY = "fmconstructs/errors.py"
PREFIX = "fmconstructs:"
QUALIFIED = frozenset(member.qualified for member in WarningId)

#: ``fmconstructs:`` names that are not warning ids: CDK context keys and cloud-assembly metadata keys.
NOT_WARNING_IDS = frozenset(
    {
        "fmconstructs:hyperpod-helm-chart",  # CDK context key (hyperpod/eks_dependencies.py CHART_CONTEXT)
        "fmconstructs:hyperpod-helm-chart-version",  # CDK context key (hyperpod/eks_dependencies.py)
        "fmconstructs:lustre-efa-interfaces",  # metadata key (_plan_metadata.py LUSTRE_EFA_METADATA_KEY)
        "fmconstructs:eks-cluster",  # tag key on EKS node groups' instances (eks/node_group.py)
        "fmconstructs:instance-type",  # tag key on what a launch template launches (compute/launch_template.py)
        "fmconstructs:template-budgets-check",  # CDK context key (budgets.py CONTEXT_KEY)
        "fmconstructs:node-groups-per-stack",  # CDK context key (budgets.py PER_STACK_CONTEXT_KEY)
    }
)
_NAMED_ID = re.compile(r"``(fmconstructs:[a-z0-9]+(?:-[a-z0-9]+)*)")

#: Modules outside the registry that still add warnings their own way -> number of places (may only shrink).
ALLOWLIST: dict[str, int] = {}


def _builds_an_id(node: ast.JoinedStr) -> bool:
    parts = node.values
    return (
        len(parts) == 2
        and isinstance(parts[0], ast.Constant)
        and parts[0].value == PREFIX
        and isinstance(parts[1], ast.FormattedValue)
    )


def _is_registry_enum(node: ast.ClassDef) -> bool:
    enum_base = any(ast.unparse(base).endswith("Enum") for base in node.bases)
    return enum_base and "qualified" in {getattr(item, "name", None) for item in node.body}


def scan_source(source: str, filename: str = "<source>") -> list[str]:
    """The places in ``source`` that bypass the registry, as ``line: what`` strings."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_warning_v2":
            found.append((node.lineno, "add_warning_v2 call (use errors.add_warning with a WarningId)"))
        elif isinstance(node, ast.Constant) and node.value in QUALIFIED:
            found.append((node.lineno, f"literal {node.value!r} (use WarningId.X.qualified)"))
        elif isinstance(node, ast.JoinedStr) and _builds_an_id(node):
            found.append((node.lineno, f"f-string building an '{PREFIX}<id>' (use WarningId.X.qualified)"))
        elif isinstance(node, ast.ClassDef) and _is_registry_enum(node):
            found.append((node.lineno, f"enum {node.name} with 'qualified': a second warning-id registry"))
    for number, line in enumerate(source.splitlines(), start=1):
        for named in _NAMED_ID.findall(line):
            if named not in QUALIFIED and named not in NOT_WARNING_IDS:
                found.append((number, f"names {named!r}, not a WarningId member"))
    return [f"{number}: {what}" for number, what in sorted(found)]


def offenders() -> dict[str, list[str]]:
    result = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == REGISTRY:
            continue
        found = scan_source(path.read_text(encoding="utf-8"), name)
        if found:
            result[name] = found
    return result


def test_warning_ids_come_from_the_registry() -> None:
    found = offenders()
    problems = []
    for name, places in sorted(found.items()):
        listed = ALLOWLIST.get(name)
        if listed is None or len(places) > listed:
            problems.append(f"{name}: " + "; ".join(places))
    for name, listed in sorted(ALLOWLIST.items()):
        if len(found.get(name, [])) < listed:
            problems.append(f"{name}: down to {len(found.get(name, []))} place(s), lower its ALLOWLIST entry")
    assert not problems, "warning ids outside fmconstructs.errors.WarningId:\n" + "\n".join(problems)


def test_not_warning_ids_are_not_registry_values() -> None:
    """A context or metadata key listed as 'not a warning id' must not also be a WarningId (then it is one)."""
    assert not NOT_WARNING_IDS & QUALIFIED


@pytest.mark.parametrize(
    "source",
    [
        'Annotations.of(self).add_warning_v2("fmconstructs:x", "message")\n',
        'Annotations.of(self).add_warning_v2(ID, "message")\n',
        'WARNING = "fmconstructs:placement-group-with-capacity-block"\n',
        'def f():\n    """Warns ``fmconstructs:some-new-warning`` (not in the registry)."""\n',
        "# warns ``fmconstructs:some-new-warning``\n",
        'def qualified(value):\n    return f"fmconstructs:{value}"\n',
        "from enum import Enum\n"
        "class MyWarning(str, Enum):\n"
        '    X = "x"\n'
        "    @property\n"
        "    def qualified(self):\n"
        "        return PREFIX + self.value\n",
    ],
    ids=[
        "add_warning_v2-literal",
        "add_warning_v2-name",
        "literal-registry-id",
        "docstring-unknown-id",
        "comment-unknown-id",
        "f-string",
        "enum",
    ],
)
def test_scan_finds_bypasses(source: str) -> None:
    assert scan_source(source)


@pytest.mark.parametrize(
    "source",
    [
        'add_warning(scope, WarningId.NO_INSTANCE_STORE, "message")\n',
        '"""Module docstring naming ``fmconstructs:no-instance-store``."""\n',
        'def f():\n    """Warns ``fmconstructs:no-instance-store``."""\n',
        'TAGS = {"fmconstructs:role": "pcs-login"}\n',
        'CONTEXT = "fmconstructs:hyperpod-helm-chart"\n',
        "ID = WarningId.NO_INSTANCE_STORE.qualified\n",
        'DESCRIPTION = f"fmconstructs: build instances of {name}"\n',
        'GROUP = f"fmconstructs:node-remediation:{suffix}"\n',
    ],
    ids=[
        "add_warning",
        "module-docstring",
        "function-docstring",
        "tag-key",
        "context-key",
        "qualified-member",
        "description",
        "group-name",
    ],
)
def test_scan_accepts_the_registry(source: str) -> None:
    assert scan_source(source) == []
