"""Floors as a contract (issue 31): fmconstructs' import graph against the floors of tests/house/floors.py.

GIVEN every import inside fmconstructs (module level, in functions, under ``TYPE_CHECKING``), THEN each top-level
module or subpackage has a floor; no import runs up a floor or from one backend to another unless it is on the
allow-list (tests/house/import_floors_allowed.txt); every allow-list line still names a violating edge, so the list
only shrinks; and no import cycle appears among units beyond the one known today, whose members may only leave it.
``pytest -s`` prints the counts (``python -m tests.house.floors`` prints them too).
"""

from __future__ import annotations

import pytest

from tests.house import floors

#: The import cycles among units (all imports counted) when the contract was written down (2026-12-03). Only shrink:
#: a unit that leaves a cycle is removed here; a new cycle, or a unit joining one, fails.
KNOWN_CYCLES = (frozenset({"eks", "health", "images", "observability", "parallelcluster", "pcs", "serving"}),)


@pytest.fixture(scope="module")
def graph() -> list[floors.Edge]:
    return floors.edges()


def test_report_counts(graph, capsys):
    with capsys.disabled():
        print("\n" + floors.report(graph))
    assert graph, "no import found: the graph reader is broken"


def test_every_unit_has_a_floor(graph):
    units = {floors.unit(floors.short(name)) for name in floors.modules()}
    assert sorted(units - set(floors.FLOORS)) == [], "place each new top-level module or package in floors.FLOORS"
    assert sorted(set(floors.FLOORS) - units) == [], "remove units that no longer exist from floors.FLOORS"
    assert {u for u, f in floors.FLOORS.items() if f == 4} >= floors.BACKENDS


def test_no_unlisted_upward_or_backend_edge(graph):
    allowed = floors.read_allowed()
    new = {
        f"{a} -> {b} (line {', '.join(str(e.line) for e in stmts)}, {stmts[0].kind})"
        for (a, b), stmts in floors.violations(graph).items()
        if (a, b) not in allowed
    }
    assert sorted(new) == [], (
        "imports up a floor or between backends: move what the lower floor needs down instead "
        "(docs/development.md 'Floors and where a new thing goes')"
    )


def test_allow_list_only_shrinks(graph):
    stale = sorted(set(floors.read_allowed()) - set(floors.violations(graph)))
    assert stale == [], "these edges are gone or no longer break the floors: delete their lines from the allow-list"


def test_no_new_import_cycle(graph):
    cycles = [frozenset(c) for c in floors.strongly_connected(floors.unit_graph(graph))]
    grown = [sorted(c) for c in cycles if not any(c <= known for known in KNOWN_CYCLES)]
    assert grown == [], "a new import cycle among units, or a unit joined a known one"
    left = sorted(u for known in KNOWN_CYCLES for u in known if not any(u in c for c in cycles))
    assert left == [], "these units left their cycle: remove them from KNOWN_CYCLES"


def test_reader_resolves_each_form():
    # GIVEN a small package, THEN relative, absolute, function-level and TYPE_CHECKING imports are each one edge.
    from pathlib import Path
    from tempfile import TemporaryDirectory

    files = {
        "__init__.py": "",
        "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import sub\n",
        "high/__init__.py": "from ..low import x\n",
        "high/sub.py": "import fmconstructs.low\n\ndef f():\n    from .. import low\n    from . import sub\n",
    }
    with TemporaryDirectory() as tmp:
        root = Path(tmp) / "fmconstructs"
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        found = {(e.importer, e.imported, e.kind) for e in floors.edges(root)}
    assert found == {
        ("low", "high.sub", "type_checking"),
        ("high", "low", "module"),
        ("high.sub", "low", "module"),
        ("high.sub", "low", "function"),
        ("high.sub", "high.sub", "function"),
    }


def test_tarjan_finds_each_component():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert floors.strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]
