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
#: Every metric this script writes (the rules read only these).
METRICS = frozenset({BUSBW, AVG_BUSBW, BASELINE_BUSBW, LAST_RUN, LAST_SUCCESS, BASELINE_TIME})

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


def write_atomically(text: str, output: Path) -> None:
    """Write via a temporary file and rename, so node exporter never reads a partial file."""
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=".fm_nccl.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)


def report(log: Path, baseline_path: Path, output: Path, now: float | None = None) -> NcclResult:
    """Parse ``log``, record the baseline on the first healthy run, write the metrics to ``output``."""
    when = time.time() if now is None else now
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        text = ""
        print(f"fmconstructs nccl: cannot read {log}: {error}", file=sys.stderr)
    result = parse_output(text)
    baseline = record_baseline(baseline_path, result, when)
    write_atomically(render_metrics(result, baseline, when), output)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--log", type=Path, required=True, help="all_reduce_perf output")
    parser.add_argument("--baseline", type=Path, required=True, help="JSON file on the shared file system")
    parser.add_argument("--output", type=Path, required=True, help="a .prom file for the textfile collector")
    args = parser.parse_args(argv)
    result = report(args.log, args.baseline, args.output)
    summary = "healthy" if result.healthy else "NOT healthy: " + ", ".join(result.errors or ("wrong values",))
    print(f"fmconstructs nccl: avg busbw {result.avg_busbw} GB/s over {len(result.sizes)} sizes, {summary}")
    return 0 if result.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
