"""House rule (issue 25): no parameter list written twice.

A constructor that passes every keyword argument again to a check or props function (``check(vpc=vpc,
instance_type=instance_type, ...)``) writes its parameter list twice, and the two copies drift. The house form builds
a frozen record from the signature once: ``props = _Props.of(locals())`` (``fmconstructs/compute/launch_template.py``),
with a test that the record's fields are the constructor's keyword parameters.

The scan finds calls in fmconstructs/ with ``MIN_PASS_THROUGH`` or more keyword arguments of the form ``name=name``
(a pass-through list). Functions owned by other work that still make one are in ALLOWLIST with their number of such
calls: it may only shrink, and the test fails when a listed function is clean or gone, so the list stays current.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fmconstructs"
MIN_PASS_THROUGH = 8

#: ``"module::Qualified.function"`` -> pass-through calls it still makes (may only shrink; entries must exist).
ALLOWLIST: dict[str, int] = {}


def pass_through_count(call: ast.Call) -> int:
    """How many of ``call``'s keyword arguments are ``name=name``."""
    return sum(
        1
        for keyword in call.keywords
        if keyword.arg is not None and isinstance(keyword.value, ast.Name) and keyword.value.id == keyword.arg
    )


def scan_source(source: str, module: str = "<source>") -> dict[str, list[int]]:
    """``"module::Qualified.function"`` -> the lines of its calls that pass 8 or more ``name=name`` keywords."""
    found: dict[str, list[int]] = {}

    def visit(node: ast.AST, prefix: str, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{prefix}{child.name}.", f"{module}::{prefix}{child.name}")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", owner)
            else:
                if isinstance(child, ast.Call) and pass_through_count(child) >= MIN_PASS_THROUGH:
                    found.setdefault(owner, []).append(child.lineno)
                visit(child, prefix, owner)

    visit(ast.parse(source, filename=module), "", f"{module}::<module>")
    return found


def offenders() -> dict[str, list[int]]:
    result: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        result.update(scan_source(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()))
    return result


def test_no_parameter_list_is_passed_through() -> None:
    found = offenders()
    problems = [
        f"{name}: pass-through call(s) at line(s) {lines} (build a frozen record: props = _Props.of(locals()))"
        for name, lines in sorted(found.items())
        if len(lines) > ALLOWLIST.get(name, 0)
    ]
    problems += [
        f"{name}: down to {len(found.get(name, []))} pass-through call(s), lower or remove its ALLOWLIST entry"
        for name, listed in sorted(ALLOWLIST.items())
        if len(found.get(name, [])) < listed
    ]
    assert not problems, "\n".join(problems)


def _call(keywords: list[str]) -> str:
    return "check(" + ", ".join(keywords) + ")\n"


NAMES = [f"p{i}" for i in range(MIN_PASS_THROUGH)]


@pytest.mark.parametrize(
    ("source", "owner"),
    [
        ("def f(" + ", ".join(NAMES) + "):\n    " + _call([f"{n}={n}" for n in NAMES]), "m::f"),
        ("class C:\n    def __init__(self):\n        x = " + _call([f"{n}={n}" for n in NAMES]), "m::C.__init__"),
        ("def f():\n    def g():\n        return " + _call([f"{n}={n}" for n in NAMES]), "m::f.g"),
        ("X = " + _call([f"{n}={n}" for n in NAMES]), "m::<module>"),
        ("def f():\n    return g(" + _call([f"{n}={n}" for n in NAMES]).strip() + ")\n", "m::f"),
    ],
    ids=["function", "method", "nested", "module-level", "argument-of-a-call"],
)
def test_scan_finds_a_pass_through_list(source: str, owner: str) -> None:
    assert list(scan_source(source, "m")) == [owner]


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    " + _call([f"{n}={n}" for n in NAMES[:-1]]),
        "def f():\n    " + _call([f"{n}=props.{n}" for n in NAMES]),
        "def f():\n    " + _call([f"{n}={n}" for n in NAMES[:-1]] + ["last=other"]),
        "def f():\n    " + _call([f"{n}=other_{n}" for n in NAMES]),
        "def f():\n    props = _Props.of(locals())\n",
    ],
    ids=["seven", "from-a-record", "seven-and-another", "renamed", "record-of-locals"],
)
def test_scan_accepts_what_is_not_a_pass_through_list(source: str) -> None:
    assert scan_source(source, "m") == {}


def test_allowlist_names_functions_that_exist() -> None:
    """Every entry names a module that exists; a function gone or fixed fails the main test (lower the entry)."""
    for name in ALLOWLIST:
        module = name.split("::")[0]
        assert (ROOT / module).is_file(), f"{name}: no module {module}"


if __name__ == "__main__":  # pragma: no cover - prints the current offenders
    for name, lines in sorted(offenders().items()):
        print(f"{name}: {lines}")
