"""House rule (issue 25) for fmconstructs/eks/ and fmconstructs/storage/: one validation toolkit.

A VPC, subnet, security group or KMS key parameter is checked with ``_validate.check_vpc`` / ``check_subnet`` /
``check_security_group`` / ``check_kms_key`` (the same messages everywhere), never with a raw ``check_construct(...,
attribute="vpc_id" | "subnet_id" | "security_group_id" | "key_arn", ...)`` naming the plain type, nor with a
module-local ``_check_subnet``; the scope/id check is ``_validate.check_scope_id`` under its own name.
(A check that names a wider type, ``"an EfaSecurityGroup or ec2.ISecurityGroup"``, keeps ``check_construct``.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fmconstructs._validate import check_kms_key, check_security_group, check_subnet, check_vpc
from fmconstructs.errors import FmTypeError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fmconstructs/eks", "fmconstructs/storage")
#: The toolkit's own wording for each attribute: a raw check_construct with exactly this pair is a copy of the toolkit.
TOOLKIT = {
    "vpc_id": "an ec2.IVpc",
    "subnet_id": "an ec2.ISubnet",
    "security_group_id": "an ec2.ISecurityGroup",
    "key_arn": "a kms.IKey",
}


def _keyword(node: ast.Call, name: str) -> object:
    for keyword in node.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def scan_source(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == (
            "check_construct"
        ):
            attribute = _keyword(node, "attribute")
            if attribute in TOOLKIT and _keyword(node, "expected") == TOOLKIT[attribute]:
                found.append(f"{node.lineno}: check_construct(attribute={attribute!r}) (use the _validate helper)")
        elif isinstance(node, ast.FunctionDef) and node.name in {"_check_subnet", "_check_vpc", "_check_kms_key"}:
            found.append(f"{node.lineno}: local {node.name} (use _validate's)")
        elif isinstance(node, ast.alias) and node.asname == "check_scope_and_id":
            found.append(f"{node.lineno}: check_scope_id imported as check_scope_and_id")
    return found


def test_eks_and_storage_use_the_toolkit_checks():
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found = scan_source(path.read_text(encoding="utf-8"))
            if found:
                offenders[path.relative_to(ROOT).as_posix()] = found
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        'check_construct("vpc", vpc, attribute="vpc_id", expected="an ec2.IVpc")\n',
        '_validate.check_construct("k", k, attribute="key_arn", expected="a kms.IKey")\n',
        "def _check_subnet(parameter, value):\n    return value\n",
        "from .._validate import check_scope_id as check_scope_and_id\n",
    ],
)
def test_scan_finds_copies_of_the_toolkit(source):
    assert scan_source(source)


@pytest.mark.parametrize(
    "source",
    [
        'check_vpc("vpc", vpc)\n',
        'check_construct("g", g, attribute="security_group_id", expected="an EfaSecurityGroup or ec2.ISecurityGroup")\n',
        'check_construct("role", role, attribute="role_arn", expected="an iam.IRole")\n',
    ],
)
def test_scan_accepts_the_toolkit(source):
    assert scan_source(source) == []


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (check_vpc, "an ec2.IVpc"),
        (check_subnet, "an ec2.ISubnet"),
        (check_security_group, "an ec2.ISecurityGroup"),
        (check_kms_key, "a kms.IKey"),
    ],
)
def test_the_toolkit_words_are_the_ones_the_scan_looks_for(check, expected):
    with pytest.raises(FmTypeError, match=f"^p must be {expected}"):
        check("p", object())
