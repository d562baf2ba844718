"""The README's instance table is the catalog's, and its Quick start has exactly the two commands."""

from __future__ import annotations

import re
from pathlib import Path

from fmconstructs.catalog import instance_table_markdown

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_instance_table_matches_catalog():
    block = re.search(r"<!-- catalog-table:start -->\n(.*?)\n<!-- catalog-table:end -->", README, re.S)
    assert block is not None
    assert block.group(1) == instance_table_markdown()


def test_quick_start_has_the_two_commands():
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"^make \w+", quick, re.M)
    assert commands == ["make synth", "make test"]


def test_alert_table_matches_rules():
    from fmconstructs.observability.rules import alerts_table_markdown

    block = re.search(r"<!-- alerts-table:start -->\n(.*?)\n<!-- alerts-table:end -->", README, re.S)
    assert block is not None
    assert block.group(1) == alerts_table_markdown()
