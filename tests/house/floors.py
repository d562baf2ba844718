"""The floors of fmconstructs and its import graph, read with ``ast`` (issue 31): the one place the floors are written.

A *unit* is a top-level module (``catalog``, ``_validate``) or subpackage (``eks``) of fmconstructs; the root package
``fmconstructs/__init__.py`` is the unit ``fmconstructs``. Each unit sits on one floor (:data:`FLOORS`). A unit may
import any unit on its own floor or below, except that a backend (:data:`BACKENDS`) never imports another backend.
An edge from a lower floor to a higher one, or from one backend to another, is a *violation*: it must be listed in
``tests/house/import_floors_allowed.txt`` (``tests/house/test_import_floors.py`` checks the list; it only shrinks).

What counts as an import (every one is an edge; :class:`Edge` keeps how it was written):

- ``import fmconstructs.x.y``, ``from fmconstructs.x import y``, ``from . import y``, ``from ..x import y`` and
  ``from .x import y``, wherever they stand: at module level (``module``), inside a function or method
  (``function``), or under ``if TYPE_CHECKING:`` (``type_checking``). A function-level import still couples the two
  floors (it only defers the cost or dodges a cycle at import time), and a ``TYPE_CHECKING`` import is the static face
  of a lazy package's exports (:mod:`fmconstructs._lazy`) and names another floor's type in a signature, so both are
  part of the contract; they are counted separately in :func:`report`.
- The imported module is the submodule when ``from p import y`` names one (``from ..eks import addons`` ->
  ``eks.addons``), else the package or module itself (``from ..eks import EksCluster`` -> ``eks``).
- Strings (``lazy_exports`` tables, ``importlib.import_module``) are not read: the lazy tables name only their own
  package's submodules, mirrored by the ``TYPE_CHECKING`` block; the Lambda handlers' ``import_module`` calls load
  their sibling files by plain name.

``python -m tests.house.floors`` prints the counts, the cycles and today's violations as allow-list lines.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fmconstructs"
ALLOWED = Path(__file__).resolve().parent / "import_floors_allowed.txt"
ROOT_UNIT = "fmconstructs"

#: Floor -> what lives there (the names of the floors, for messages and docs/development.md).
FLOOR_NAMES: Mapping[int, str] = {
    0: "foundation: facts, the validation toolkit, the exception, shared contracts and small helpers",
    1: "networking, capacity, node bootstrap",
    2: "compute, and pure generators the backends plug in (topology)",
    3: "storage, node images",
    4: "the backends, side by side",
    5: "day-2 rooms that compose a running cluster",
    6: "platform and the package namespace",
    7: "the fmc command",
}

#: Unit -> floor. A new top-level module or subpackage must be placed here (the test fails until it is).
FLOORS: Mapping[str, int] = {
    # 0: no construct of its own; what every floor may use.
    "errors": 0,
    "_validate": 0,
    "_validate_ids": 0,
    "_validate_refs": 0,
    "_validate_schedule": 0,
    "_validate_k8s": 0,
    "_kueue": 0,
    "_validate_tags": 0,
    "_rules": 0,
    "_lazy": 0,
    "_renames": 0,
    "_replacement": 0,
    "_nag": 0,
    "_log_groups": 0,
    "_plan_metadata": 0,
    "budgets": 0,
    "catalog": 0,
    "_efa_instance_types": 0,
    "_gpu_performance": 0,
    "_nccl_reference": 0,
    # 1: where nodes sit and how they start.
    "networking": 1,
    "capacity": 1,
    "preflight": 1,  # run-time reads of capacity (boto3), beside capacity; imports floors 0-1 only
    "bootstrap": 1,
    # 2: what a node is; topology is a pure function (API responses in, Slurm text out) the backends plug in.
    "compute": 2,
    "topology": 2,
    # 3: what a node mounts and boots from; images bake pieces the backends then consume (ParallelCluster's AMI).
    "storage": 3,
    "teams": 3,
    "images": 3,
    # 4: the backends.
    "pcs": 4,
    "eks": 4,
    "parallelcluster": 4,
    "hyperpod": 4,
    # 5: what watches, heals, serves or scales a running cluster, taking each backend's specifics as data.
    "observability": 5,
    "health": 5,
    "remediation": 5,
    "serving": 5,
    "capacity_events": 5,
    # 6: what composes everything.
    "platform": 6,
    ROOT_UNIT: 6,  # the package's own namespace re-exports floors 0-4
    # 7: reads a cloud assembly and the catalog.
    "cli": 7,
}

#: Units on the backend floor that must not import one another.
BACKENDS = frozenset({"pcs", "eks", "parallelcluster", "hyperpod"})


@dataclass(frozen=True)
class Edge:
    """One import statement's target: ``importer`` imports ``imported`` (module names relative to fmconstructs)."""

    importer: str
    imported: str
    kind: str  # "module", "function" or "type_checking"
    line: int


def short(module: str) -> str:
    """``fmconstructs.eks.addons`` -> ``eks.addons``; the root package stays ``fmconstructs``."""
    return module.removeprefix(f"{ROOT_UNIT}.") if module != ROOT_UNIT else ROOT_UNIT


def unit(module: str) -> str:
    """The top-level module or subpackage a (short) module name belongs to."""
    return module.split(".", 1)[0]


def modules(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: full dotted name -> (path, is a package ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it stands: ``module``, ``function`` or ``type_checking``."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, "function" if kind == "module" else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "type_checking")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, "module")


def _targets(stmt: ast.Import | ast.ImportFrom, package: str, known: Mapping[str, object]) -> Iterator[str]:
    """The fmconstructs modules one statement imports (full dotted names)."""
    if isinstance(stmt, ast.Import):
        yield from (alias.name for alias in stmt.names if unit(alias.name) == ROOT_UNIT)
        return
    if stmt.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (stmt.level - 1)] + ([stmt.module] if stmt.module else []))
    else:
        base = stmt.module or ""
    if unit(base) != ROOT_UNIT:
        return
    for alias in stmt.names:
        sub = f"{base}.{alias.name}"
        yield sub if sub in known else base


def edges(package: Path = PACKAGE) -> list[Edge]:
    """Every import of one fmconstructs module by another, one per statement and target."""
    known = modules(package)
    found: list[Edge] = []
    for name, (path, is_package) in known.items():
        here = name if is_package else name.rpartition(".")[0]
        for stmt, kind in _statements(ast.parse(path.read_text(), filename=str(path))):
            for target in dict.fromkeys(_targets(stmt, here, known)):
                found.append(Edge(short(name), short(target), kind, stmt.lineno))
    return found


def is_violation(importer: str, imported: str) -> bool:
    """Whether ``importer -> imported`` goes up a floor or from one backend to another (names short)."""
    a, b = unit(importer), unit(imported)
    if a == b:
        return False
    return FLOORS[a] < FLOORS[b] or (a in BACKENDS and b in BACKENDS)


def violations(found: Iterable[Edge]) -> dict[tuple[str, str], list[Edge]]:
    """Module pairs ``(importer, imported)`` that break the floors -> the statements that make them."""
    pairs: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    for edge in found:
        if is_violation(edge.importer, edge.imported):
            pairs[(edge.importer, edge.imported)].append(edge)
    return dict(pairs)


def unit_graph(found: Iterable[Edge], kinds: frozenset[str] | None = None) -> dict[str, set[str]]:
    """Unit -> the other units it imports (only statements of ``kinds``, all when None)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in found:
        a, b = unit(edge.importer), unit(edge.imported)
        if a != b and (kinds is None or edge.kind in kinds):
            graph[a].add(b)
            graph.setdefault(b, set())
    return dict(graph)


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted, largest first (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found, key=lambda c: (-len(c), c))


def read_allowed(path: Path = ALLOWED) -> dict[tuple[str, str], str]:
    """The allow-list: ``importer -> imported: reason`` lines (``#`` comments and blank lines skipped)."""
    allowed: dict[tuple[str, str], str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pair, sep, reason = line.partition(":")
        importer, arrow, imported = pair.partition(" -> ")
        if not (sep and arrow and reason.strip() and importer.strip() and imported.strip()):
            raise ValueError(f"{path.name}:{number}: want 'importer -> imported: reason', got {raw!r}")
        key = (importer.strip(), imported.strip())
        if key in allowed:
            raise ValueError(f"{path.name}:{number}: {key[0]} -> {key[1]} listed twice")
        allowed[key] = reason.strip()
    return allowed


def report(found: list[Edge]) -> str:
    """The counts: statements, module pairs across units and floors, violations by kind, and the cycles."""
    pairs = {(e.importer, e.imported) for e in found if unit(e.importer) != unit(e.imported)}
    cross_floor = {p for p in pairs if FLOORS[unit(p[0])] != FLOORS[unit(p[1])]}
    bad = violations(found)
    by_kind: dict[str, int] = defaultdict(int)
    for edge in (e for stmts in bad.values() for e in stmts):
        by_kind[edge.kind] += 1
    backend_pairs = [p for p in bad if unit(p[0]) in BACKENDS and unit(p[1]) in BACKENDS]
    lines = [
        f"import statements inside fmconstructs: {len(found)}",
        f"module pairs across units: {len(pairs)}; across floors: {len(cross_floor)}",
        f"violating module pairs: {len(bad)} (upward {len(bad) - len(backend_pairs)}, "
        f"backend -> backend {len(backend_pairs)}); statements by kind: {dict(sorted(by_kind.items()))}",
        f"violating unit pairs: {len({(unit(a), unit(b)) for a, b in bad})}",
    ]
    for label, kinds in (("all imports", None), ("module-level imports only", frozenset({"module"}))):
        cycles = strongly_connected(unit_graph(found, kinds))
        lines.append(f"cycles ({label}): " + ("; ".join(", ".join(c) for c in cycles) or "none"))
    return "\n".join(lines)


def draft(found: list[Edge]) -> str:
    """Today's violations as allow-list lines (the reason to be written by hand)."""
    out = []
    for (a, b), stmts in sorted(violations(found).items()):
        kinds = ", ".join(sorted({e.kind for e in stmts}))
        out.append(f"{a} -> {b}: TODO ({kinds}; lines {', '.join(str(e.line) for e in stmts)})")
    return "\n".join(out)


if __name__ == "__main__":
    graph_edges = edges()
    print(report(graph_edges))
    if "--draft" in sys.argv:
        print(draft(graph_edges))
