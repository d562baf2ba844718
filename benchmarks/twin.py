"""The cluster twin tier's run time (issue 29: "the whole tier within about 5 minutes on a 2-core machine").

``make bench-twin`` runs ``pytest -n 2 --dist loadfile tests/twin`` (as ``make test`` runs it: both cores, one test
file per worker at a time) N times (default 1: one run starts real Slurm, Prometheus and Alertmanager clusters for
minutes) in a fresh process each, the Debian root already cached, and prints the wall time of each run and each test
file's share (the sum of its tests' durations, from pytest's JUnit XML; the files of one worker run one after the
other, so the wall time is about the larger worker's sum). Speed is measured here, never asserted in a test.
Figures are from one shared, noisy machine: compare ratios between runs of the same machine, not absolute times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUDGET_S = 300.0


def _file_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test file (classname ``tests.twin.test_x`` -> ``tests/twin/test_x.py``)."""
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split("[")[0]
        parts = module.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()  # a test class name
        name = "/".join(parts) + ".py" if parts else module
        totals[name] += float(case.get("time", "0"))
    return dict(totals)


def run_once() -> tuple[float, int, dict[str, float]]:
    """One run of the tier: wall seconds, pytest's exit code, seconds per file."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "twin.xml"
        argv = [sys.executable, "-m", "pytest", "tests/twin", "-q", "-n", "2", "--dist", "loadfile"]
        argv += ["-p", "no:cacheprovider", f"--junitxml={junit}"]
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        wall = time.perf_counter() - start
        return wall, done.returncode, _file_seconds(junit) if junit.exists() else {}


def main(runs: int = 1) -> int:
    from tests.support.twin.root import twin_root

    twin_root()  # build the cached root outside the timed runs
    walls: list[float] = []
    worst = 0
    for index in range(runs):
        wall, code, files = run_once()
        walls.append(wall)
        worst = max(worst, code)
        print(f"\nrun {index + 1}: {wall:.0f} s wall (pytest exit {code}); budget about {BUDGET_S:.0f} s")
        for name, seconds in sorted(files.items(), key=lambda item: -item[1]):
            print(f"  {seconds:7.1f} s  {name}")
    if runs > 1:
        print(f"\nmin {min(walls):.0f} s, max {max(walls):.0f} s over {runs} runs")
    return worst


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
