#!/usr/bin/env python3
"""nccl-tests ``all_reduce_perf`` output as Prometheus metrics, against the cluster's own baseline.

Shipped with the scheduled NCCL check (:mod:`fmconstructs.health.nccl`) and run after ``all_reduce_perf``:
``nccl_report.py --log LOG --baseline BASELINE.json --output fm_nccl.prom``. Standard library only (it runs with the
node's system Python or the container's ``python3``).

The output format is nccl-tests' (NVIDIA/nccl-tests src/util.cu, tag v2.19.6: ``writeResultHeader`` and one row per
size: ``size count type redop root`` then ``time algbw busbw #wrong`` out-of-place and again in-place, busbw in GB/s;
``writeResultFooter``: ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth    : X``). Rows may carry a
launcher prefix (``0: `` from ``srun --label``, ``[1,0]<stdout>:`` from ``mpirun --tag-output``: the sample outputs of
awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/README.md).

The first *healthy* run (parsed, a positive average, no wrong values, no out-of-bounds values) is written to the
baseline file; later runs never overwrite it (delete the file to record a new baseline, e.g. after a planned change
of instance type, node count or NCCL version). No absolute threshold is applied here: the alert compares with the
baseline (:mod:`fmconstructs.health.nccl_rules`).

Per-node attribution (``NcclCheckSpec(pairwise=True)``): after the all-node run, the job runs a two-node test on
each pair of a round-robin schedule (:func:`plan_pairs`, the "circle method": node 0 fixed, the others rotate one
place per run, so a node meets a different partner each run) one pair after the other, and lists ``node_a node_b
log`` in a manifest. :func:`attribute_pairs` takes the slowest pair of the run, when its average bus bandwidth is
more than ``outlier_percent`` below the median of the run's pairs (a pair whose test printed no average counts as
0 GB/s), and adds one to the streak of both its nodes; every other node's streak goes back to 0 and nodes not in the
run are forgotten. A node whose streak reaches ``suspect_after`` runs is suspect: ``fm_nccl_suspect_node{node=...}``
is 1. A bad node is in the slowest pair with every partner; a good node that met it once is not in the slowest pair
the run after, so its streak ends. The round counter and the streaks live in a JSON state file next to the baseline.

The metric names are copies of :mod:`fmconstructs.health.metric_names` (this script is shipped alone);
``tests/health/test_health_metrics.py`` keeps them equal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "fm_nccl_"
BUSBW = f"{PREFIX}allreduce_busbw_gbytes_per_second"
AVG_BUSBW = f"{PREFIX}allreduce_avg_busbw_gbytes_per_second"
BASELINE_BUSBW = f"{PREFIX}allreduce_baseline_busbw_gbytes_per_second"
LAST_RUN = f"{PREFIX}last_run_timestamp_seconds"
LAST_SUCCESS = f"{PREFIX}last_run_success"
BASELINE_TIME = f"{PREFIX}baseline_timestamp_seconds"
PAIR_BUSBW = f"{PREFIX}pair_avg_busbw_gbytes_per_second"
SUSPECT_NODE = f"{PREFIX}suspect_node"
SLOWEST_STREAK = f"{PREFIX}slowest_pair_streak"
#: Every metric this script writes (the rules read only these).
METRICS = frozenset(
    {BUSBW, AVG_BUSBW, BASELINE_BUSBW, LAST_RUN, LAST_SUCCESS, BASELINE_TIME, PAIR_BUSBW, SUSPECT_NODE, SLOWEST_STREAK}
)

# "0: ", "12: " (srun --label) or "[1,0]<stdout>:" (Open MPI --tag-output) before the text.
_LAUNCHER_PREFIX = re.compile(r"^\s*(?:\d+:\s?|\[\d+,\d+\]<std(?:out|err)>:)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")


@dataclass(frozen=True)
class SizeResult:
    """One row of the table: message size (bytes) and bus bandwidth (GB/s) out-of-place and in-place."""

    size_bytes: int
    out_of_place_busbw: float
    in_place_busbw: float
    wrong: int = 0


@dataclass(frozen=True)
class NcclResult:
    """A parsed run: rows, the ``Avg bus bandwidth`` line and the out-of-bounds count (None when absent)."""

    sizes: tuple[SizeResult, ...] = ()
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    errors: tuple[str, ...] = field(default=())

    @property
    def healthy(self) -> bool:
        """A complete run with a positive average and no wrong or out-of-bounds values."""
        return (
            bool(self.sizes)
            and self.avg_busbw is not None
            and self.avg_busbw > 0
            and self.out_of_bounds == 0
            and all(s.wrong == 0 for s in self.sizes)
        )


def _wrong(token: str) -> int:
    # "#wrong" is "N/A" when the check is off (-c 0); a number otherwise.
    try:
        return int(float(token))
    except ValueError:
        return 0


def _row(tokens: list[str]) -> SizeResult | None:
    """``size count type redop root time algbw busbw #wrong time algbw busbw #wrong [...]``."""
    if len(tokens) < 13 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    try:
        return SizeResult(
            size_bytes=int(tokens[0]),
            out_of_place_busbw=float(tokens[7]),
            in_place_busbw=float(tokens[11]),
            wrong=_wrong(tokens[8]) + _wrong(tokens[12]),
        )
    except ValueError:
        return None


def parse_output(text: str) -> NcclResult:
    """Rows and summary of an ``all_reduce_perf`` output (other lines, e.g. NCCL_DEBUG=INFO, are skipped)."""
    sizes: dict[int, SizeResult] = {}
    avg: float | None = None
    oob: int | None = None
    for raw in text.splitlines():
        line = _LAUNCHER_PREFIX.sub("", raw, count=1).strip()
        if match := _AVG.match(line):
            try:
                avg = float(match.group(1))
            except ValueError:
                avg = None
            continue
        if match := _OOB.match(line):
            oob = int(match.group(1))
            continue
        if line.startswith("#"):
            continue
        row = _row(line.split())
        if row is not None:
            sizes.setdefault(row.size_bytes, row)  # one rank prints the table; keep the first copy
    errors = []
    if not sizes:
        errors.append("no result rows")
    if avg is None:
        errors.append("no 'Avg bus bandwidth' line")
    return NcclResult(tuple(sorted(sizes.values(), key=lambda s: s.size_bytes)), avg, oob, tuple(errors))


def read_baseline(path: Path) -> dict[str, float] | None:
    """``{"avg_busbw": ..., "timestamp": ...}`` or None when there is no (valid) baseline yet."""
    try:
        data = json.loads(path.read_text())
        return {"avg_busbw": float(data["avg_busbw"]), "timestamp": float(data["timestamp"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_baseline(path: Path, result: NcclResult, now: float) -> dict[str, float] | None:
    """The baseline: the existing one, else this run's if healthy (written atomically), else None."""
    existing = read_baseline(path)
    if existing is not None or not result.healthy or result.avg_busbw is None:
        return existing
    baseline = {"avg_busbw": result.avg_busbw, "timestamp": now}
    write_atomically(json.dumps(baseline, sort_keys=True) + "\n", path)
    return baseline


def render_metrics(result: NcclResult, baseline: dict[str, float] | None, now: float) -> str:
    """Prometheus text exposition of a run and the baseline."""
    lines = [
        f"# HELP {LAST_RUN} Unix time of the last scheduled NCCL all-reduce check.",
        f"# TYPE {LAST_RUN} gauge",
        f"{LAST_RUN} {now:.0f}",
        f"# HELP {LAST_SUCCESS} 1 if the last NCCL check parsed, had no wrong values and a positive average.",
        f"# TYPE {LAST_SUCCESS} gauge",
        f"{LAST_SUCCESS} {1 if result.healthy else 0}",
    ]
    if result.sizes:
        lines += [
            f"# HELP {BUSBW} nccl-tests all_reduce_perf bus bandwidth per message size (GB/s).",
            f"# TYPE {BUSBW} gauge",
        ]
        for row in result.sizes:
            for placement, value in (("out_of_place", row.out_of_place_busbw), ("in_place", row.in_place_busbw)):
                lines.append(f'{BUSBW}{{placement="{placement}",size_bytes="{row.size_bytes}"}} {value:g}')
    if result.avg_busbw is not None:
        lines += [
            f"# HELP {AVG_BUSBW} nccl-tests 'Avg bus bandwidth' of the last run (GB/s).",
            f"# TYPE {AVG_BUSBW} gauge",
            f"{AVG_BUSBW} {result.avg_busbw:g}",
        ]
    if baseline is not None:
        lines += [
            f"# HELP {BASELINE_BUSBW} 'Avg bus bandwidth' of the cluster's first healthy NCCL check (GB/s).",
            f"# TYPE {BASELINE_BUSBW} gauge",
            f"{BASELINE_BUSBW} {baseline['avg_busbw']:g}",
            f"# HELP {BASELINE_TIME} Unix time the baseline was recorded.",
            f"# TYPE {BASELINE_TIME} gauge",
            f"{BASELINE_TIME} {baseline['timestamp']:.0f}",
        ]
    return "\n".join(lines) + "\n"


def plan_pairs(hosts: list[str], round_: int) -> list[tuple[str, str]]:
    """Disjoint pairs of ``hosts`` for run ``round_`` (circle method; with an odd count one node sits out)."""
    ring: list[str | None] = [*sorted(set(hosts))]
    if len(ring) % 2:
        ring.append(None)
    if len(ring) < 2:
        return []
    rest = ring[1:]
    shift = round_ % len(rest)
    order = [ring[0], *rest[shift:], *rest[:shift]]
    half = len(order) // 2
    pairs = [(order[i], order[-1 - i]) for i in range(half)]
    return [(a, b) if a < b else (b, a) for a, b in pairs if a is not None and b is not None]


@dataclass(frozen=True)
class PairRun:
    """One two-node test: its nodes and the parsed average bus bandwidth (None: no average printed)."""

    node_a: str
    node_b: str
    avg_busbw: float | None


@dataclass(frozen=True)
class Attribution:
    """The pairwise result of one run: the pairs, the slowest pair if it is an outlier, every node's streak."""

    pairs: tuple[PairRun, ...]
    slowest: PairRun | None
    streaks: dict[str, int]
    suspects: frozenset[str]


def read_state(path: Path) -> tuple[int, dict[str, int]]:
    """The round and the streaks of ``{"round": int, "streaks": {node: int}}``; a fresh state when the file is
    missing or unreadable."""
    try:
        data = json.loads(path.read_text())
        return int(data["round"]), {str(k): int(v) for k, v in dict(data["streaks"]).items()}
    except (OSError, ValueError, KeyError, TypeError):
        return 0, {}


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def attribute_pairs(
    pairs: list[PairRun], streaks: dict[str, int], *, suspect_after: int, outlier_percent: float
) -> Attribution:
    """The slowest pair (when more than ``outlier_percent`` below the median) extends its nodes' streaks."""
    values = [p.avg_busbw or 0.0 for p in pairs]
    slowest: PairRun | None = None
    if len(pairs) >= 2:
        index = min(range(len(pairs)), key=lambda i: values[i])
        if values[index] < _median(values) * (1 - outlier_percent / 100):
            slowest = pairs[index]
    nodes = sorted({n for p in pairs for n in (p.node_a, p.node_b)})
    slow = {slowest.node_a, slowest.node_b} if slowest else set()
    new = {n: streaks.get(n, 0) + 1 if n in slow else 0 for n in nodes}
    suspects = frozenset(n for n, k in new.items() if k >= suspect_after)
    return Attribution(tuple(pairs), slowest, new, suspects)


def read_manifest(manifest: Path) -> list[PairRun]:
    """``node_a node_b log`` lines written by the job: one two-node test each."""
    pairs: list[PairRun] = []
    for line in manifest.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        try:
            text = Path(parts[2]).read_text(errors="replace")
        except OSError:
            text = ""
        result = parse_output(text)
        pairs.append(PairRun(parts[0], parts[1], result.avg_busbw if result.healthy else None))
    return pairs


def read_instance_ids(path: Path | None) -> dict[str, str]:
    """``node instance-id`` lines (the job asks each node's IMDS); unknown nodes have no id."""
    if path is None:
        return {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    ids = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"i-[0-9a-f]{8,17}", parts[1]):
            ids[parts[0]] = parts[1]
    return ids


def _label(value: str) -> str:
    """A label value escaped per the text exposition format (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_pair_metrics(attribution: Attribution, instance_ids: dict[str, str]) -> str:
    """Prometheus text of the pairwise run: per-pair busbw, per-node streak and suspect flag."""
    lines = [
        f"# HELP {PAIR_BUSBW} nccl-tests all_reduce_perf 'Avg bus bandwidth' of one two-node test (GB/s).",
        f"# TYPE {PAIR_BUSBW} gauge",
    ]
    for index, pair in enumerate(attribution.pairs):
        labels = f'node_a="{_label(pair.node_a)}",node_b="{_label(pair.node_b)}",pair="{index}"'
        lines.append(f"{PAIR_BUSBW}{{{labels}}} {pair.avg_busbw or 0:g}")
    for name, help_text in (
        (SLOWEST_STREAK, "Pairwise NCCL runs in a row in which the node was in the slowest (outlier) pair."),
        (SUSPECT_NODE, "1 when the node was in the slowest pairwise NCCL pair too many runs in a row."),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for node, streak in sorted(attribution.streaks.items()):
            labels = f'node="{_label(node)}"'
            if node in instance_ids:
                labels += f',suspect_instance_id="{instance_ids[node]}"'
            value = streak if name == SLOWEST_STREAK else int(node in attribution.suspects)
            lines.append(f"{name}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def report_pairs(
    manifest: Path, state_path: Path, *, suspect_after: int, outlier_percent: float, instance_ids: Path | None
) -> tuple[Attribution, str]:
    """Attribute the run's pairs, save the next round and the streaks, and return the metrics text."""
    round_, streaks = read_state(state_path)
    attribution = attribute_pairs(
        read_manifest(manifest), streaks, suspect_after=suspect_after, outlier_percent=outlier_percent
    )
    state = {"round": round_ + 1, "streaks": attribution.streaks}
    write_atomically(json.dumps(state, sort_keys=True) + "\n", state_path)
    return attribution, render_pair_metrics(attribution, read_instance_ids(instance_ids))


def write_atomically(text: str, output: Path) -> None:
    """Write via a temporary file and rename, so node exporter never reads a partial file."""
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=".fm_nccl.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)


def report(log: Path, baseline_path: Path, output: Path, now: float | None = None, extra: str = "") -> NcclResult:
    """Parse ``log``, record the baseline on the first healthy run, write the metrics (and ``extra``) to ``output``."""
    when = time.time() if now is None else now
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        text = ""
        print(f"fmconstructs nccl: cannot read {log}: {error}", file=sys.stderr)
    result = parse_output(text)
    baseline = record_baseline(baseline_path, result, when)
    write_atomically(render_metrics(result, baseline, when) + extra, output)
    return result


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--log", type=Path, help="all_reduce_perf output")
    parser.add_argument("--baseline", type=Path, help="JSON file on the shared file system")
    parser.add_argument("--output", type=Path, help="a .prom file for the textfile collector")
    parser.add_argument("--plan-pairs", type=Path, help="print this run's pairs of the host names in this file")
    parser.add_argument("--pairs", type=Path, help="manifest of the two-node tests ('node_a node_b log' lines)")
    parser.add_argument("--pair-state", type=Path, help="JSON file: the pairing round and the streaks")
    parser.add_argument("--instance-ids", type=Path, help="'node instance-id' lines")
    parser.add_argument("--suspect-after", type=int, default=3, help="runs in a row in the slowest pair")
    parser.add_argument("--outlier-percent", type=float, default=10.0, help="below the median of the pairs")
    args = parser.parse_args(argv)
    if args.plan_pairs is None and None in (args.log, args.baseline, args.output):
        parser.error("--log, --baseline and --output are required (or --plan-pairs)")
    if (args.plan_pairs is not None or args.pairs is not None) and args.pair_state is None:
        parser.error("--pair-state is required with --plan-pairs and --pairs")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.plan_pairs is not None:
        round_, _ = read_state(args.pair_state)
        for node_a, node_b in plan_pairs(args.plan_pairs.read_text().split(), round_):
            print(node_a, node_b)
        return 0
    extra = ""
    if args.pairs is not None:
        attribution, extra = report_pairs(
            args.pairs,
            args.pair_state,
            suspect_after=args.suspect_after,
            outlier_percent=args.outlier_percent,
            instance_ids=args.instance_ids,
        )
        slow = attribution.slowest
        where = f"{slow.node_a}+{slow.node_b} ({slow.avg_busbw} GB/s)" if slow else "none below the median"
        print(f"fmconstructs nccl: {len(attribution.pairs)} pairs, slowest outlier {where}", end="")
        print(f", suspect: {', '.join(sorted(attribution.suspects)) or 'none'}")
    result = report(args.log, args.baseline, args.output, extra=extra)
    summary = "healthy" if result.healthy else "NOT healthy: " + ", ".join(result.errors or ("wrong values",))
    print(f"fmconstructs nccl: avg busbw {result.avg_busbw} GB/s over {len(result.sizes)} sizes, {summary}")
    return 0 if result.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
