"""The documentation site's pages (docs/, built by `make docs`), read by the tests that keep them true."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: The next front page, until the coordinator swaps it in as README.md; the front-page tests read it while it exists.
PROPOSED_README = DOCS / "_proposed_README.md"
FRONT_PAGE = PROPOSED_README if PROPOSED_README.exists() else README
#: A Python sample a test runs: ``<!-- run -->`` (a whole program) or ``<!-- run: stack -->`` (a stack's body).
MARKED = re.compile(r"<!-- run(?:: (\w+))? -->\n```python\n(.*?)```", re.S)


def page(name: str) -> str:
    """The Markdown of ``docs/<name>`` (e.g. ``"concepts/storage.md"``)."""
    return (DOCS / name).read_text()


def section(text: str, title: str, level: int = 2) -> str:
    """The body of the heading ``title`` at ``level`` (``##``), up to the next heading of that level or higher."""
    marker = f"\n{'#' * level} {title}\n"
    assert marker in text, f"no heading {marker.strip()!r}"
    body = text.split(marker, 1)[1]
    end = re.search(rf"^#{{1,{level}}} ", body, re.M)
    return body[: end.start()] if end else body


def pages() -> list[Path]:
    """Every page of the site (docs/_proposed_README.md is the next README, not a page)."""
    return sorted(p for p in DOCS.rglob("*.md") if not p.name.startswith("_"))


def run_program(code: str, name: str, outdir: Path) -> dict[str, Any]:
    """Execute a sample that builds its own ``cdk.App`` (and calls ``app.synth()``) into ``outdir``, with
    CloudFormation validation off as unit tests run; return its globals."""
    real_app = cdk.App

    def app(**props: Any) -> cdk.App:
        return real_app(outdir=str(outdir), builtin_cloud_formation_validation=False, **props)

    scope: dict[str, Any] = {"__name__": "docs_sample"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cdk, "App", app)
        exec(compile(code, name, "exec"), scope)  # the sample is ours, in this repository
    return scope


def needs_credentials(outdir: Path) -> list[str]:
    """What the cloud assembly in ``outdir`` would need AWS credentials for: context lookups left missing (an
    account's zones, ``manifest.json`` ``missing``) and CDK's placeholders for them in a template (``dummy1a``)."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    found = [f"lookup {m['key']}" for m in manifest.get("missing", [])]
    return found + [
        f"placeholder in {t.name}" for t in sorted(outdir.glob("*.template.json")) if "dummy" in t.read_text()
    ]
