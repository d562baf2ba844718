"""House rule (issue 25): a VPC, subnet, security group or KMS key is checked with the toolkit's one check.

``fmconstructs._validate`` has ``check_vpc``, ``check_subnet``, ``check_security_group`` and ``check_kms_key``: a raw
``check_construct(..., attribute="vpc_id", expected="an ec2.IVpc")`` elsewhere writes the type's name and message
again. Modules owned by other work that still do are in ALLOWLIST with their count (it may only shrink; the test
fails when a listed module is down, so the list stays current).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fmconstructs"
TOOLKIT = "fmconstructs/_validate.py"

#: The attribute a raw ``check_construct`` looks for -> the toolkit check to use instead.
TOOLKIT_CHECKS = {
    "vpc_id": "check_vpc",
    "subnet_id": "check_subnet",
    "security_group_id": "check_security_group",
    "key_arn": "check_kms_key",
}

#: Modules outside this change still calling check_construct for one of TOOLKIT_CHECKS -> count (may only shrink).
ALLOWLIST: dict[str, int] = {
    # Security groups checked as "an EfaSecurityGroup or ec2.ISecurityGroup" (a wider type than check_security_group).
    "fmconstructs/storage/lustre_network.py": 1,
    "fmconstructs/storage/lustre_rules.py": 1,
}


def scan_source(source: str) -> list[str]:
    """``line: use check_x`` for each raw ``check_construct`` call for a type the toolkit checks."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("check_construct")):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "attribute" and isinstance(value, ast.Constant) and value.value in TOOLKIT_CHECKS:
                found.append(f"{node.lineno}: use {TOOLKIT_CHECKS[value.value]}")
    return found


def offenders() -> dict[str, list[str]]:
    result = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        found = [] if name == TOOLKIT else scan_source(path.read_text(encoding="utf-8"))
        if found:
            result[name] = found
    return result


def test_vpcs_subnets_security_groups_and_keys_use_the_toolkit_checks() -> None:
    found = offenders()
    problems = [
        f"{name}: " + "; ".join(places)
        for name, places in sorted(found.items())
        if len(places) > ALLOWLIST.get(name, 0)
    ]
    problems += [
        f"{name}: down to {len(found.get(name, []))} place(s), lower its ALLOWLIST entry"
        for name, listed in sorted(ALLOWLIST.items())
        if len(found.get(name, [])) < listed
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("attribute", sorted(TOOLKIT_CHECKS))
def test_scan_finds_a_raw_check(attribute: str) -> None:
    source = f'check_construct("p", value, attribute="{attribute}", expected="x")\n'
    assert scan_source(source) == [f"1: use {TOOLKIT_CHECKS[attribute]}"]


@pytest.mark.parametrize(
    "source",
    [
        'check_construct("bucket", value, attribute="bucket_name", expected="an s3.IBucket")\n',
        'check_vpc("vpc", value)\n',
        "check_sequence('security_groups', groups, check_security_group)\n",
    ],
    ids=["other-attribute", "toolkit-check", "toolkit-check-as-argument"],
)
def test_scan_accepts_the_toolkit(source: str) -> None:
    assert scan_source(source) == []
