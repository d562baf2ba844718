"""Release 0.3.1: one version everywhere (pyproject, ``fmconstructs.__version__``, ``fmc --version``, the newest
CHANGELOG release), the CHANGELOG's migration lists name every removed (0.3.0) and deprecated (0.3.1) name, and the sdist and wheel that
``python -m build`` makes hold every file of the package (dashboards, serving data, Lambda handlers, node scripts,
``py.typed``) and pass ``twine check --strict`` (under ``make test`` these are the files ``make dist-check`` built).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import fmconstructs
from fmconstructs.cli.main import cli

from tests.support.removed_names import REMOVED_ATTRIBUTES, REMOVED_KEYWORDS

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.3.1"
#: The release that removed the names deprecated in 0.2.0.
REMOVED_RELEASE = "0.3.0"


def _changelog_release(version: str) -> str:
    text = (ROOT / "CHANGELOG.md").read_text()
    start = text.index(f"## [{version}]")
    end = text.find("\n## [", start + 1)
    return text[start : end if end != -1 else None]


def test_one_version_everywhere():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == fmconstructs.__version__ == VERSION
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"fmc, version {VERSION}", result.output
    releases = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert releases[0] == VERSION, releases[:3]  # no [Unreleased] above it


def test_the_changelog_migration_list_names_every_removed_name():
    release = _changelog_release(REMOVED_RELEASE)
    removed = release[release.index("### Removed") :].split("\n### ", 1)[0]
    names = {old for _, _, old, _ in REMOVED_KEYWORDS} | {old for _, old, _ in REMOVED_ATTRIBUTES}
    names |= {"pinned_availability_zone", "slurm_version"}
    missing = sorted(name for name in names if not re.search(rf"\b{name}\b", removed))
    assert not missing, missing
    # The list is the first section of the release, so an upgrading user reads it first.
    assert release.split("\n### ", 1)[1].startswith("Removed")


def _deprecated_names() -> set[str]:
    """Every old name the package still accepts: ``renamed_keywords(owner, old="new")`` keywords and
    ``old = RenamedAttribute("new")`` attributes, read from the source."""
    names: set[str] = set()
    for path in (ROOT / "fmconstructs").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "renamed_keywords":
                names |= {keyword.arg for keyword in node.keywords if keyword.arg}
            renamed_attribute = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if renamed_attribute and getattr(node.value.func, "id", None) == "RenamedAttribute":
                names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def test_the_changelog_names_every_deprecated_name():
    names = _deprecated_names()
    assert {"kms_key", "nodegroup_name", "additional_security_groups", "efa_interfaces_for_lustre"} <= names
    release = _changelog_release(VERSION)
    deprecated = release[release.index("### Deprecated") :].split("\n### ", 1)[0]
    missing = sorted(name for name in names if not re.search(rf"\b{name}\b", deprecated))
    assert not missing, missing
    # The rename list is the first section of the release, so an upgrading user reads it first.
    assert release.split("\n### ", 1)[1].startswith("Deprecated")


def _package_files() -> set[str]:
    """Every file git tracks under fmconstructs/ (the package as written, without caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "fmconstructs"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=60
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return set(listed.stdout.split())


@pytest.fixture(scope="module")
def dist(release_dist: Path) -> Path:
    """The sdist and the wheel built from it (tests/conftest.py: `make dist-check`'s under `make test`, else built
    once per run)."""
    return release_dist


@pytest.mark.cli
def test_the_wheel_holds_every_package_file(dist: Path):
    (wheel,) = dist.glob(f"fmconstructs-{VERSION}-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = _package_files()
    assert expected - names == set()
    data = {name for name in names if name.startswith("fmconstructs/") and not name.endswith(".py")}
    assert "fmconstructs/py.typed" in data
    assert len({n for n in data if re.fullmatch(r"fmconstructs/observability/dashboards/[\w-]+\.json", n)}) >= 8
    assert any(re.fullmatch(r"fmconstructs/serving/data/\w+\.json", n) for n in data)
    for handler in ("capacity_events/handler", "remediation/handler", "observability/grafana/handler"):
        assert f"fmconstructs/{handler}/index.py" in names
    for backend in ("pcs", "parallelcluster", "hyperpod", "compute"):
        assert f"fmconstructs/{backend}/slurm_scripts.py" in names  # the node-side scripts


@pytest.mark.cli
def test_the_sdist_holds_every_package_file(dist: Path):
    (sdist,) = dist.glob(f"fmconstructs-{VERSION}.tar.gz")
    prefix = f"fmconstructs-{VERSION}/"
    with tarfile.open(sdist) as archive:
        names = {member.name.removeprefix(prefix) for member in archive.getmembers()}
    assert _package_files() - names == set()
    assert {"pyproject.toml", "README.md"} <= names


@pytest.mark.cli
def test_twine_check_passes(dist: Path):
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *sorted(str(p) for p in dist.iterdir())],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
