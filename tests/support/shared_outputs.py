"""Expensive outputs made once per test run and shared by every test and every pytest-xdist worker (issue 30 item 6).

The example app's cloud assembly (aws-cdk-lib's CloudFormation validation and cdk-nag AwsSolutions on, as
tests/house/test_validation_tier.py needs it) and cfn-lint's findings on each of its templates used to be made once
per module that needed them: the app synthesized about 8 times a run, the same templates linted several times.

Sharing: the first worker to ask makes the output under a file lock in the run's own temporary directory (the parent
of the workers' ``basetemp``; ``basetemp`` itself without xdist), the others wait for it and read it. The directory is
new for each run, so nothing is stale; it is read-only for the tests (copy it to change it). A failure is not cached:
the next worker to ask makes it again and reports the same error.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory this test run's workers share (xdist: ``<basetemp>/..``, one per run)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fmconstructs-shared"
    root.mkdir(exist_ok=True)
    return root


def shared(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """``<run dir>/<name>``, made once per run by ``make(directory)`` (under a lock; other workers wait)."""
    root = run_dir(tmp_path_factory)
    target = root / name
    done = root / f"{name}.complete"  # beside the output, which holds only what ``make`` wrote
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            make(target)
            done.touch()
    return target


def made_by_make(variable: str, *patterns: str) -> Path | None:
    """The directory ``make test`` names in ``variable`` (``make docs``/``make dist-check`` built it just before
    pytest), if it holds a file for each of ``patterns``; else None (pytest run directly: the test builds it)."""
    value = os.environ.get(variable)
    if not value:
        return None
    path = Path(value)
    return path if all(any(path.glob(p)) for p in patterns) else None


def build_dist(out: Path) -> None:
    """``python -m build``: the sdist, then the wheel from that sdist (build's default), as ``make dist-check`` does; a
    file missing from the sdist is missing from the wheel too. Build isolation installs setuptools from the package
    registry into a throw-away environment."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]


def synth_validated_example_app(outdir: Path) -> None:
    """The example app (examples/app.py build) with CloudFormation validation and cdk-nag AwsSolutions, to ``outdir``."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    from examples.app import build

    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True)
    build(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag error


def lint_findings(template: Path) -> list[dict[str, str]]:
    """cfn-lint's findings (every severity) on one template: rule id, severity, message (first 200 characters)."""
    from cfnlint.api import lint_file

    return [{"rule": m.rule.id, "severity": m.rule.severity, "message": m.message[:200]} for m in lint_file(template)]


def lint_assembly(assembly: Path, out: Path) -> None:
    """cfn-lint on every template of ``assembly``, written to ``out/findings.json`` by template file name."""
    findings = {p.name: lint_findings(p) for p in sorted(assembly.glob("*.template.json"))}
    (out / "findings.json").write_text(json.dumps(findings, indent=1))


def read_findings(directory: Path) -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads((directory / "findings.json").read_text())
    return data


def errors(findings: list[dict[str, Any]]) -> list[str]:
    """The error-severity findings as ``"<rule> <message>"`` (the form the tests assert on)."""
    return [f"{f['rule']} {f['message']}" for f in findings if f["severity"] == "error"]
