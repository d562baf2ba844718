"""The front page (README.md) and the documentation pages that carry generated tables stay true.

The instance table lives on docs/concepts/catalog.md and the alerts table on docs/concepts/observability.md (each
between its markers); the front page has the two commands and an example that runs as written. Until the coordinator
swaps it in, the next front page is docs/_proposed_README.md: the front-page tests read it while it exists, README.md
after."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fmconstructs.catalog import instance_table_markdown

from tests.house.docs_pages import FRONT_PAGE, MARKED, README, needs_credentials, page, run_program

FRONT = FRONT_PAGE
FRONT_PAGES = sorted({README, FRONT})
ROOT = README.parent


def _table(text: str, name: str) -> str:
    block = re.search(rf"<!-- {name}:start -->\n(.*?)\n<!-- {name}:end -->", text, re.S)
    assert block is not None, f"no {name} markers"
    return block.group(1)


def test_instance_table_matches_catalog():
    assert _table(page("concepts/catalog.md"), "catalog-table") == instance_table_markdown()


def test_alert_table_matches_rules():
    from fmconstructs.observability.rules import alerts_table_markdown

    assert _table(page("concepts/observability.md"), "alerts-table") == alerts_table_markdown()


@pytest.mark.parametrize("path", FRONT_PAGES, ids=lambda p: p.name)
def test_quick_start_has_the_two_commands(path: Path):
    quick = path.read_text().split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"^make \w+", quick, re.M)
    assert commands == ["make synth", "make test"]


def test_front_page_is_short_and_links_into_the_docs():
    text = FRONT.read_text()
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def test_front_page_example_runs(tmp_path):
    (code,) = [m.group(2) for m in MARKED.finditer(FRONT.read_text())]
    assert len(code.strip().splitlines()) <= 15
    scope = run_program(code, FRONT.name, tmp_path)
    assert (tmp_path / "manifest.json").exists()
    assert needs_credentials(tmp_path) == []  # `npx cdk synth` runs it with no AWS account or credentials
    assert scope["stack"].node.find_child("Platform").node.find_child("FileSystem") is not None
