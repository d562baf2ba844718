"""The tests mirror the package (issue 25): ``tests/<module>/test_<module>_<behaviour>.py``.

GIVEN the tests/ tree, THEN no test file sits flat in tests/; every folder is named after an fmconstructs subpackage
or module (``fmconstructs/<name>/`` or ``fmconstructs/<name>.py``/``_<name>.py``) or is ``house`` (the repository:
docs, README samples, limits, release, examples, validation tier), besides ``data`` (vendored inputs) and ``support``
(helpers shared by test modules); each folder is a package, so a module's name is its path; basenames are unique; a
test module never imports another (shared helpers live in tests/support/ or a folder's conftest.py), nor the bare
``conftest``; and no file is named after an issue or a fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "fmconstructs"
#: Folders of tests/ that are not test folders, and hold no test file.
NOT_TEST_FOLDERS = {"data", "support"}
HOUSE = "house"
#: Test tiers that prove several modules together rather than one: ``twin`` (the cluster twin, issue 29: real Slurm,
#: Prometheus and Alertmanager fed with what the library renders; its harness is tests/support/twin/) and ``upgrade``
#: (each released version's example app against today's: tests/upgrade/, baselines from tools/record_upgrade_baseline.py).
TIERS = {"twin", "upgrade"}
#: A name after a fix or an issue rather than a behaviour.
FIX_NAME = re.compile(r"(^|_)(issue\d*|fix(es)?|regression|bug\d*|section\d+)(_|$)")
IMPORTS_A_TEST = re.compile(r"^\s*(from|import) (tests\.(\w+\.)*)?test_\w+", re.M)
BARE_CONFTEST = re.compile(r"^\s*(from|import) conftest\b", re.M)


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__" and not p.name.startswith("."))


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _mirrors_the_package(name: str) -> bool:
    return (
        (PACKAGE / name / "__init__.py").is_file()
        or (PACKAGE / f"{name}.py").is_file()
        or (PACKAGE / f"_{name}.py").is_file()
    )


def _offenders(paths: list[Path], bad: re.Pattern[str]) -> list[str]:
    return [str(p.relative_to(TESTS)) for p in paths if bad.search(p.read_text())]


def test_no_test_file_sits_flat_in_tests():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_folder_mirrors_an_fmconstructs_module_or_is_house():
    odd = [
        p.name
        for p in _folders()
        if p.name not in NOT_TEST_FOLDERS | TIERS and p.name != HOUSE and not _mirrors_the_package(p.name)
    ]
    assert odd == [], "test folders must be named after an fmconstructs subpackage or module, or be house"


def test_test_files_sit_one_folder_deep_in_a_test_folder():
    misplaced = [
        str(p.relative_to(TESTS))
        for p in _test_files()
        if len(p.relative_to(TESTS).parts) != 2 or p.parent.name in NOT_TEST_FOLDERS
    ]
    assert misplaced == []


def test_every_folder_with_python_is_a_package():
    missing = [p.name for p in _folders() if p.name != "data" and not (p / "__init__.py").is_file()]
    assert (TESTS / "__init__.py").is_file()
    assert missing == [], "add an empty __init__.py (modules import as tests.<folder>.<name>)"


def test_test_file_basenames_are_unique():
    seen: dict[str, list[str]] = {}
    for path in _test_files():
        seen.setdefault(path.name, []).append(str(path.relative_to(TESTS)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_no_test_module_imports_another_or_the_bare_conftest():
    python = sorted(TESTS.rglob("*.py"))
    assert _offenders(python, IMPORTS_A_TEST) == [], "move shared helpers to tests/support/ or a folder's conftest.py"
    assert _offenders(python, BARE_CONFTEST) == [], "import shared helpers as `from tests.conftest import ...`"


def test_no_test_file_is_named_after_an_issue_or_a_fix():
    assert [p.name for p in _test_files() if FIX_NAME.search(p.stem)] == []


@pytest.mark.parametrize(
    ("name", "is_fix_name"),
    [
        ("test_issue12_subnets", True),
        ("test_pcs_fix_names", True),
        ("test_storage_regression", True),
        ("test_fmc_gate_section1", True),
        ("test_pcs_unusual_values", False),
        ("test_platform_fixed_names", False),
        ("test_storage_prefix_names", False),
        ("test_observability_rules_rendering", False),
    ],
)
def test_fix_names_are_recognized(name: str, is_fix_name: bool):
    assert bool(FIX_NAME.search(name)) is is_fix_name


@pytest.mark.parametrize(
    ("source", "offends"),
    [
        ("from tests.pcs.test_pcs_queue import make_queue\n", True),
        ("    from tests.test_platform import _built\n", True),
        ("from test_fmc_preflight import (\n", True),
        ("from tests.support.platform import _built\n", False),
        ("from tests.conftest import new_scene\n", False),
    ],
)
def test_cross_test_imports_are_recognized(source: str, offends: bool):
    assert bool(IMPORTS_A_TEST.search(source)) is offends


@pytest.mark.parametrize(
    ("name", "mirrors"), [("pcs", True), ("catalog", True), ("validate", True), ("blueprints", False)]
)
def test_folder_names_are_checked_against_the_package(name: str, mirrors: bool):
    assert _mirrors_the_package(name) is mirrors
