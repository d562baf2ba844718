"""The docs' whole-program samples (``<!-- run -->`` blocks that build an app and call ``app.synth()``, on the pages
and the front page) synthesize under the real CDK CLI as a reader runs them: ``app.py`` beside a ``cdk.json`` whose
app is ``python app.py``, with no AWS credentials (``AWS_*`` unset, ``HOME`` empty, no instance metadata) and no
``cdk.context.json``. A context lookup (the zones of an account-specific stack) needs credentials and fails there; run
with ``python app.py`` it gives ``dummy1a`` zones, which no template may contain.

The samples run in parallel (one CLI each, as many at a time as there are CPUs), once per module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.house.docs_pages import FRONT_PAGE, MARKED, README, ROOT, needs_credentials, pages

pytestmark = pytest.mark.cli

CLI = ROOT / "node_modules" / ".bin" / "cdk"
#: A zone name as EC2 spells it (``us-east-1a``; Local Zones ``us-east-1-dfw-2a``).
ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+[a-z]?(-[a-z]+-\d+)?[a-z]$")


def _programs() -> dict[str, str]:
    """``<page>#<index>`` -> code of every whole CDK program marked ``<!-- run -->``."""
    found: dict[str, str] = {}
    for path in sorted({*pages(), README, FRONT_PAGE}):
        for i, m in enumerate(MARKED.finditer(path.read_text())):
            if m.group(1) is None and "app.synth()" in m.group(2):
                found[f"{path.relative_to(ROOT)}#{i}"] = m.group(2)
    return found


PROGRAMS = _programs()


@dataclass(frozen=True)
class Synth:
    returncode: int
    stderr: str
    seconds: float
    out: Path
    app_dir: Path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_CLI_TELEMETRY="true",
        AWS_EC2_METADATA_DISABLED="true",
        HOME=str(home),  # no ~/.aws config or credentials, no ~/.cdk.json
        PYTHONPATH=str(ROOT),  # this checkout's fmconstructs
    )
    return env


def _synth(code: str, base: Path) -> Synth:
    app_dir, home = base / "app", base / "home"
    app_dir.mkdir(parents=True)
    home.mkdir()
    (app_dir / "app.py").write_text(code)
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py"}))
    started = time.monotonic()
    proc = subprocess.run(
        [str(CLI), "synth", "--quiet", "--no-notices", "--output", "cdk.out"],
        cwd=app_dir,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return Synth(proc.returncode, proc.stderr, time.monotonic() - started, app_dir / "cdk.out", app_dir)


@pytest.fixture(scope="module")
def synths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    assert CLI.exists(), "the pinned CDK CLI is missing: run `make test` (it runs npm ci)"
    base = tmp_path_factory.mktemp("docs-cli")
    names = list(PROGRAMS)
    with ThreadPoolExecutor(max_workers=max(1, min(len(names), os.cpu_count() or 1))) as pool:
        done = pool.map(lambda i: _synth(PROGRAMS[names[i]], base / str(i)), range(len(names)))
        return dict(zip(names, done, strict=True))


def _subnet_zones(out: Path) -> list[object]:
    return [
        resource["Properties"].get("AvailabilityZone")
        for template in out.glob("*.template.json")
        for resource in json.loads(template.read_text())["Resources"].values()
        if resource["Type"] == "AWS::EC2::Subnet"
    ]


def test_the_pages_and_front_page_have_programs_to_run():
    assert {"README.md", "docs/getting-started.md"} | {
        f"docs/backends/{b}.md" for b in ("pcs", "parallelcluster", "eks", "hyperpod")
    } <= {name.split("#")[0] for name in PROGRAMS}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_sample_synthesizes_under_the_cli_without_credentials(name, synths):
    synth = synths[name]
    print(f"{name}: npx cdk synth in {synth.seconds:.1f} s")
    assert synth.returncode == 0, synth.stderr[-4000:]
    assert needs_credentials(synth.out) == []  # no context lookup left, no dummy1a placeholder
    context = synth.app_dir / "cdk.context.json"
    assert not context.exists() or json.loads(context.read_text()) == {}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_sample_subnets_have_real_zones(name, synths):
    synth = synths[name]
    assert synth.returncode == 0, synth.stderr[-4000:]
    zones = _subnet_zones(synth.out)
    assert zones and [z for z in zones if not (isinstance(z, str) and ZONE.match(z))] == []
