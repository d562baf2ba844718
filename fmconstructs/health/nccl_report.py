#!/usr/bin/env python3
"""nccl-tests ``all_reduce_perf`` output as Prometheus metrics, against the cluster's own rolling baseline.

Shipped with the scheduled NCCL check (:mod:`fmconstructs.health.nccl`) and run after ``all_reduce_perf``:
``nccl_report.py --log LOG --baseline BASELINE.json --output fm_nccl.prom [--floor-gbytes-per-second F]
[--drop-percent 10] [--window-runs 7] [--window-percentile 50] [--schedule-interval-seconds S]
[--time-limit-seconds L]``. Standard library only (it runs with the node's system Python or the container's
``python3``). ``nccl_report.py --probe-queue --squeue SQUEUE --job-name NAME [--partition P] --output
fm_nccl_queue.prom`` is the Slurm queue probe (below).

The output format is nccl-tests' (NVIDIA/nccl-tests src/util.cu, tag v2.19.6: ``writeResultHeader`` and one row per
size: ``size count type redop root`` then ``time algbw busbw #wrong`` out-of-place and again in-place, busbw in GB/s;
``writeResultFooter``: ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth    : X``). Rows may carry a
launcher prefix (``0: `` from ``srun --label``, ``[1,0]<stdout>:`` from ``mpirun --tag-output``: the sample outputs of
awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/README.md).

Baseline. The measure is the out-of-place busbw of the largest message size (nccl-tests PERFORMANCE.md: "on large
sizes, it makes more sense to look at the bandwidth"; the published figures of
:func:`fmconstructs.catalog.nccl_allreduce_reference` are that row). The baseline file keeps a window of the last
``--window-runs`` runs that entered it; the baseline is the window's ``--window-percentile`` (linear interpolation,
50: the median), never below the floor ``--floor-gbytes-per-second`` (the floor alone while the window is empty; no
floor: no baseline until the first run). A run enters the window when it is healthy (parsed, a positive average, no
wrong or out-of-bounds values), at or above the floor, and at most ``--drop-percent`` below the baseline: a degraded
run, the first one included, never becomes the standard, and a lasting drop keeps alerting instead of becoming the
new normal (delete the file after a planned change, e.g. of NCCL version, to start a new window). The file is JSON
``{"version": 2, "runs": [{"busbw": GB/s, "timestamp": s}, ...]}``; anything else (the first-run average an earlier
version wrote) is read as an empty window. The alert (:mod:`fmconstructs.health.nccl_rules`) compares the run with
the baseline and the floor, with the tolerance this script writes, so both use one number.

Schedule. With ``--schedule-interval-seconds`` (the longest gap between two scheduled runs) the report writes when
the next report is due at the latest: now + the interval + ``--time-limit-seconds`` (the job's own limit).
``NcclCheckStale`` fires when that time has passed (plus the rule's grace) and the queue probe does not say the check
is deferred.

Queue probe (Slurm, run every minute on the login or head node): ``squeue -h -o '%j|%T|%r'`` (squeue(1): ``%j`` job
name, ``%T`` extended state, ``%r`` reason), in the check's partition when given. The check is *deferred* when a job
named ``--job-name`` is PENDING for ``Resources`` or ``Priority`` (Slurm "Job Reason Codes": "The resources requested
by the job are not available (e.g., already used by other jobs)", "One or more higher priority jobs exist for the
partition") while another job runs there: a long job holds the nodes, the check waits its turn. It is also deferred
while the check itself runs (RUNNING, CONFIGURING, COMPLETING): a run that started after its due time, because it
waited, reports within its own time limit. A check pending for
anything else (BeginTime of scrontab between runs, a bad partition, limits) is not deferred.

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
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "fm_nccl_"
BUSBW = f"{PREFIX}allreduce_busbw_gbytes_per_second"
AVG_BUSBW = f"{PREFIX}allreduce_avg_busbw_gbytes_per_second"
MAX_SIZE_BUSBW = f"{PREFIX}allreduce_max_size_busbw_gbytes_per_second"
MAX_SIZE_BYTES = f"{PREFIX}allreduce_max_size_bytes"
BASELINE_BUSBW = f"{PREFIX}allreduce_baseline_busbw_gbytes_per_second"
FLOOR_BUSBW = f"{PREFIX}allreduce_floor_busbw_gbytes_per_second"
WINDOW_BUSBW = f"{PREFIX}allreduce_window_busbw_gbytes_per_second"
DROP_TOLERANCE = f"{PREFIX}allreduce_drop_tolerance_ratio"
WINDOW_RUNS = f"{PREFIX}baseline_window_runs"
WINDOW_MAX_RUNS = f"{PREFIX}baseline_window_max_runs"
LAST_IN_BASELINE = f"{PREFIX}last_run_in_baseline"
LAST_RUN = f"{PREFIX}last_run_timestamp_seconds"
LAST_SUCCESS = f"{PREFIX}last_run_success"
BASELINE_TIME = f"{PREFIX}baseline_timestamp_seconds"
SCHEDULE_INTERVAL = f"{PREFIX}schedule_interval_seconds"
NEXT_RUN_DUE = f"{PREFIX}next_run_due_timestamp_seconds"
CHECK_DEFERRED = f"{PREFIX}check_deferred"
QUEUE_PROBE_TIME = f"{PREFIX}queue_probe_timestamp_seconds"
QUEUE_PROBE_SUCCESS = f"{PREFIX}queue_probe_success"
PAIR_BUSBW = f"{PREFIX}pair_avg_busbw_gbytes_per_second"
SUSPECT_NODE = f"{PREFIX}suspect_node"
SLOWEST_STREAK = f"{PREFIX}slowest_pair_streak"
#: Every metric the report writes (the rules read only these and :data:`QUEUE_METRICS`).
METRICS = frozenset(
    {
        BUSBW,
        AVG_BUSBW,
        MAX_SIZE_BUSBW,
        MAX_SIZE_BYTES,
        BASELINE_BUSBW,
        FLOOR_BUSBW,
        WINDOW_BUSBW,
        DROP_TOLERANCE,
        WINDOW_RUNS,
        WINDOW_MAX_RUNS,
        LAST_IN_BASELINE,
        LAST_RUN,
        LAST_SUCCESS,
        BASELINE_TIME,
        SCHEDULE_INTERVAL,
        NEXT_RUN_DUE,
        PAIR_BUSBW,
        SUSPECT_NODE,
        SLOWEST_STREAK,
    }
)
#: What the queue probe writes (Slurm: this script; EKS: the metrics server).
QUEUE_METRICS = frozenset({CHECK_DEFERRED, QUEUE_PROBE_TIME, QUEUE_PROBE_SUCCESS})
BASELINE_VERSION = 2
#: squeue reasons of a check that waits for nodes other jobs hold (Slurm "Job Reason Codes").
DEFERRING_REASONS = frozenset({"Resources", "Priority"})
#: States of a job that holds its nodes (squeue(1) JOB STATE CODES).
HOLDING_STATES = frozenset({"RUNNING", "CONFIGURING", "COMPLETING"})

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


def max_size_busbw(result: NcclResult) -> float | None:
    """Out-of-place busbw of the largest message size (the baseline's measure); None without rows."""
    return result.sizes[-1].out_of_place_busbw if result.sizes else None


@dataclass(frozen=True)
class BaselinePolicy:
    """How runs make the baseline: the ``percentile`` of the last ``window_runs`` admitted runs, never below
    ``floor`` (GB/s, None: no floor); a run more than ``drop_percent`` below the baseline is not admitted."""

    window_runs: int = 7
    percentile: float = 50.0
    drop_percent: float = 10.0
    floor: float | None = None


@dataclass(frozen=True)
class WindowRun:
    """One run in the window: its max-size busbw (GB/s) and when it was recorded (Unix seconds)."""

    busbw: float
    timestamp: float


def percentile(values: list[float], rank: float) -> float:
    """The ``rank`` percentile (0-100) of ``values`` by linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * rank / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Baseline:
    """The window after this run, the policy, and whether this run entered the window."""

    runs: tuple[WindowRun, ...]
    policy: BaselinePolicy
    admitted: bool = False

    @property
    def window_busbw(self) -> float | None:
        """The window's percentile (before the floor); None while the window is empty."""
        if not self.runs:
            return None
        return percentile([r.busbw for r in self.runs], self.policy.percentile)

    @property
    def value(self) -> float | None:
        """The baseline: the window's percentile, never below the floor; the floor alone while the window is empty."""
        candidates = [v for v in (self.window_busbw, self.policy.floor) if v is not None]
        return max(candidates) if candidates else None

    def admits(self, busbw: float) -> bool:
        """Whether a healthy run of ``busbw`` enters the window: at or above the floor and within the tolerance."""
        floor, value = self.policy.floor, self.value
        if floor is not None and busbw < floor:
            return False
        return value is None or busbw >= value * (1 - self.policy.drop_percent / 100)


def read_window(path: Path, window_runs: int) -> tuple[WindowRun, ...]:
    """The last ``window_runs`` runs of a version-2 baseline file; empty when the file is missing, unreadable or of
    another format (an earlier version's first-run average is not this measure)."""
    try:
        data = json.loads(path.read_text())
        if data.get("version") != BASELINE_VERSION:
            return ()
        runs = tuple(WindowRun(float(r["busbw"]), float(r["timestamp"])) for r in data["runs"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ()
    valid = tuple(r for r in runs if math.isfinite(r.busbw) and r.busbw > 0)
    return valid[-window_runs:]


def update_baseline(path: Path, result: NcclResult, now: float, policy: BaselinePolicy) -> Baseline:
    """Admit this run to the window when :meth:`Baseline.admits` says so (the file is written atomically)."""
    before = Baseline(read_window(path, policy.window_runs), policy)
    busbw = max_size_busbw(result)
    if not result.healthy or busbw is None or not before.admits(busbw):
        return before
    runs = (*before.runs, WindowRun(busbw, now))[-policy.window_runs :]
    data = {"version": BASELINE_VERSION, "runs": [{"busbw": r.busbw, "timestamp": r.timestamp} for r in runs]}
    write_atomically(json.dumps(data, sort_keys=True) + "\n", path)
    return Baseline(runs, policy, admitted=True)


@dataclass(frozen=True)
class Schedule:
    """The longest gap between two scheduled runs and the job's time limit (seconds)."""

    interval_seconds: float
    time_limit_seconds: float = 0.0

    def next_due(self, now: float) -> float:
        """The latest time the next report should exist: the next run starts within the interval, ends in the limit."""
        return now + self.interval_seconds + self.time_limit_seconds


def _gauge(lines: list[str], name: str, help_text: str, value: float | None, fmt: str = ".10g") -> None:
    if value is not None:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value:{fmt}}"]


def _run_lines(result: NcclResult, now: float) -> list[str]:
    lines: list[str] = []
    _gauge(lines, LAST_RUN, "Unix time of the last scheduled NCCL all-reduce check.", now, ".0f")
    _gauge(
        lines,
        LAST_SUCCESS,
        "1 if the last NCCL check parsed, had no wrong values and a positive average.",
        1 if result.healthy else 0,
    )
    if result.sizes:
        lines += [
            f"# HELP {BUSBW} nccl-tests all_reduce_perf bus bandwidth per message size (GB/s).",
            f"# TYPE {BUSBW} gauge",
        ]
        for row in result.sizes:
            for placement, value in (("out_of_place", row.out_of_place_busbw), ("in_place", row.in_place_busbw)):
                lines.append(f'{BUSBW}{{placement="{placement}",size_bytes="{row.size_bytes}"}} {value:g}')
    _gauge(lines, AVG_BUSBW, "nccl-tests 'Avg bus bandwidth' of the last run (GB/s).", result.avg_busbw)
    if result.healthy:
        _gauge(
            lines,
            MAX_SIZE_BUSBW,
            "Out-of-place bus bandwidth at the largest message size of the last run (GB/s).",
            max_size_busbw(result),
        )
        _gauge(
            lines, MAX_SIZE_BYTES, "The largest message size of the last run (bytes).", result.sizes[-1].size_bytes, "d"
        )
    return lines


def _baseline_lines(baseline: Baseline) -> list[str]:
    policy, lines = baseline.policy, list[str]()
    _gauge(
        lines,
        BASELINE_BUSBW,
        "The NCCL baseline: the window's percentile, never below the floor (GB/s).",
        baseline.value,
    )
    _gauge(lines, FLOOR_BUSBW, "The floor of the NCCL baseline (GB/s).", policy.floor)
    _gauge(lines, WINDOW_BUSBW, "The percentile of the runs in the NCCL baseline window (GB/s).", baseline.window_busbw)
    _gauge(
        lines,
        DROP_TOLERANCE,
        "The drop below the NCCL baseline the check tolerates (ratio).",
        policy.drop_percent / 100,
    )
    _gauge(lines, WINDOW_RUNS, "Runs in the NCCL baseline window.", len(baseline.runs))
    _gauge(lines, WINDOW_MAX_RUNS, "Runs the NCCL baseline window keeps.", policy.window_runs)
    _gauge(lines, LAST_IN_BASELINE, "1 if the last NCCL check entered the baseline window.", int(baseline.admitted))
    if baseline.runs:
        _gauge(
            lines,
            BASELINE_TIME,
            "Unix time of the newest run in the NCCL baseline window.",
            baseline.runs[-1].timestamp,
            ".0f",
        )
    return lines


def render_metrics(result: NcclResult, baseline: Baseline, now: float, schedule: Schedule | None = None) -> str:
    """Prometheus text exposition of a run, the baseline and, with a schedule, when the next report is due."""
    lines = _run_lines(result, now) + _baseline_lines(baseline)
    if schedule is not None:
        _gauge(
            lines,
            SCHEDULE_INTERVAL,
            "Longest time between two scheduled NCCL checks (seconds).",
            schedule.interval_seconds,
        )
        _gauge(
            lines, NEXT_RUN_DUE, "Unix time by which the next NCCL check report is due.", schedule.next_due(now), ".0f"
        )
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


def report(
    log: Path,
    baseline_path: Path,
    output: Path,
    *,
    policy: BaselinePolicy | None = None,
    schedule: Schedule | None = None,
    now: float | None = None,
    extra: str = "",
) -> tuple[NcclResult, Baseline]:
    """Parse ``log``, admit the run to the baseline window when it qualifies, write the metrics (and ``extra``)."""
    when = time.time() if now is None else now
    try:
        text = log.read_text(errors="replace")
    except OSError as error:
        text = ""
        print(f"fmconstructs nccl: cannot read {log}: {error}", file=sys.stderr)
    result = parse_output(text)
    baseline = update_baseline(baseline_path, result, when, policy if policy is not None else BaselinePolicy())
    write_atomically(render_metrics(result, baseline, when, schedule) + extra, output)
    return result, baseline


# --- the Slurm queue probe -------------------------------------------------------------------------------------------
def queue_deferred(lines: list[str], job_name: str) -> bool:
    """Whether ``squeue -h -o '%j|%T|%r'`` lines show the check pending for nodes that other running jobs hold, or
    the check itself in progress (a run that waited past its due time reports within its own time limit, after
    which Slurm ends it)."""
    waiting = holding = running = False
    for line in lines:
        parts = line.rsplit("|", 2)
        if len(parts) != 3:
            continue
        name, state, reason = (p.strip() for p in parts)
        if name == job_name:
            waiting = waiting or (state == "PENDING" and reason in DEFERRING_REASONS)
            running = running or state in HOLDING_STATES
        elif state in HOLDING_STATES:
            holding = True
    return (waiting and holding) or running


def probe_queue(squeue: str, job_name: str, partition: str | None, timeout: float = 30.0) -> bool | None:
    """:func:`queue_deferred` of the check's partition; None when squeue cannot be asked."""
    command = [squeue, "-h", "-o", "%j|%T|%r", *(["-p", partition] if partition else [])]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"fmconstructs nccl: {squeue}: {error}", file=sys.stderr)
        return None
    if proc.returncode != 0:
        print(f"fmconstructs nccl: {squeue} exited with {proc.returncode}: {proc.stderr.strip()}", file=sys.stderr)
        return None
    return queue_deferred(proc.stdout.splitlines(), job_name)


def render_probe(deferred: bool | None, now: float) -> str:
    """The queue probe's metrics (the EKS metrics server writes the same three)."""
    lines: list[str] = []
    _gauge(lines, CHECK_DEFERRED, "1 while the NCCL check waits for nodes that other jobs hold.", int(bool(deferred)))
    _gauge(lines, QUEUE_PROBE_TIME, "Unix time the NCCL queue probe last looked.", now, ".0f")
    _gauge(lines, QUEUE_PROBE_SUCCESS, "1 if the NCCL queue probe could read the queue.", int(deferred is not None))
    return "\n".join(lines) + "\n"


# --- command line ----------------------------------------------------------------------------------------------------
def _positive(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"a positive number, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add = parser.add_argument
    add("--log", type=Path, help="all_reduce_perf output")
    add("--baseline", type=Path, help="JSON file on the shared file system: the baseline window")
    add("--output", type=Path, help="a .prom file for the textfile collector")
    add("--floor-gbytes-per-second", type=_positive, help="the baseline's floor (GB/s); default: none")
    add("--drop-percent", type=_positive, default=10.0, help="tolerated drop below the baseline (default 10)")
    add("--window-runs", type=int, default=7, help="runs the baseline window keeps (default 7)")
    add("--window-percentile", type=float, default=50.0, help="the window's percentile (default 50: the median)")
    add("--schedule-interval-seconds", type=_positive, help="longest gap between two scheduled runs")
    add("--time-limit-seconds", type=float, default=0.0, help="the job's time limit (for the due time)")
    add("--probe-queue", action="store_true", help="write the Slurm queue probe's metrics to --output")
    add("--squeue", default="squeue", help="squeue for --probe-queue")
    add("--job-name", default="fm-nccl-allreduce", help="the check's Slurm job name for --probe-queue")
    add("--partition", help="the check's partition for --probe-queue; default: every partition")
    add("--plan-pairs", type=Path, help="print this run's pairs of the host names in this file")
    add("--pairs", type=Path, help="manifest of the two-node tests ('node_a node_b log' lines)")
    add("--pair-state", type=Path, help="JSON file: the pairing round and the streaks")
    add("--instance-ids", type=Path, help="'node instance-id' lines")
    add("--suspect-after", type=int, default=3, help="runs in a row in the slowest pair")
    add("--outlier-percent", type=float, default=10.0, help="below the median of the pairs")
    return parser


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.probe_queue:
        if args.output is None:
            parser.error("--output is required with --probe-queue")
        return args
    if args.plan_pairs is None and None in (args.log, args.baseline, args.output):
        parser.error("--log, --baseline and --output are required (or --plan-pairs, or --probe-queue)")
    if (args.plan_pairs is not None or args.pairs is not None) and args.pair_state is None:
        parser.error("--pair-state is required with --plan-pairs and --pairs")
    if not 1 <= args.window_runs <= 1000:
        parser.error(f"--window-runs must be from 1 to 1000, got {args.window_runs}")
    if not (math.isfinite(args.window_percentile) and 0 <= args.window_percentile <= 100):
        parser.error(f"--window-percentile must be from 0 to 100, got {args.window_percentile}")
    if not args.drop_percent < 100:
        parser.error(f"--drop-percent must be below 100, got {args.drop_percent}")
    if not (math.isfinite(args.time_limit_seconds) and args.time_limit_seconds >= 0):
        parser.error(f"--time-limit-seconds must be 0 or more, got {args.time_limit_seconds}")
    return args


def _report_pairs(args: argparse.Namespace) -> str:
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
    return extra


def _summary(result: NcclResult, baseline: Baseline) -> str:
    health = "healthy" if result.healthy else "NOT healthy: " + ", ".join(result.errors or ("wrong values",))
    where = "entered the baseline window" if baseline.admitted else "not in the baseline window"
    return (
        f"fmconstructs nccl: max-size busbw {max_size_busbw(result)} GB/s (avg {result.avg_busbw}) over "
        f"{len(result.sizes)} sizes, {health}; {where}, baseline {baseline.value} GB/s, floor {baseline.policy.floor}"
    )


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.probe_queue:
        deferred = probe_queue(args.squeue, args.job_name, args.partition)
        write_atomically(render_probe(deferred, time.time()), args.output)
        return 0 if deferred is not None else 1
    if args.plan_pairs is not None:
        round_, _ = read_state(args.pair_state)
        for node_a, node_b in plan_pairs(args.plan_pairs.read_text().split(), round_):
            print(node_a, node_b)
        return 0
    extra = _report_pairs(args) if args.pairs is not None else ""
    policy = BaselinePolicy(
        window_runs=args.window_runs,
        percentile=args.window_percentile,
        drop_percent=args.drop_percent,
        floor=args.floor_gbytes_per_second,
    )
    interval = args.schedule_interval_seconds
    schedule = None if interval is None else Schedule(interval, args.time_limit_seconds)
    result, baseline = report(args.log, args.baseline, args.output, policy=policy, schedule=schedule, extra=extra)
    print(_summary(result, baseline))
    return 0 if result.healthy else 1


if __name__ == "__main__":
    sys.exit(main())
