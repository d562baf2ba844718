"""The NCCL report's rolling baseline, its floor and the schedule it records, driven as the job runs it: the shipped
script (``report_script()``) run with ``python3 -I`` on nccl-tests outputs, its textfile and baseline file read back.

A 15% drop does not enter the window (and alerts: ``test_health_nccl_rules.py``), a 5% drop does; a degraded first run
(below the floor) never becomes the baseline; the window rolls; a lasting drop never becomes the new normal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs.health import report_script
from fmconstructs.health.nccl_report import Baseline, BaselinePolicy, WindowRun, percentile

from tests.support.health_nccl import EKS_TAGGED, P5_SRUN, scaled

P5_FLOOR = "389.672"  # 0.8 x 487.09 GB/s, the catalog's figure for 2 x p5.48xlarge at 16 GiB


class Report:
    """The report script in a state directory, run once per scheduled check."""

    def __init__(self, root: Path, *options: str) -> None:
        self.root = root
        self.script = root / "nccl_report.py"
        self.script.write_text(report_script())
        self.baseline = root / "baseline-2x8-16G.json"
        self.output = root / "fm_nccl.prom"
        self.options = list(options)
        self.runs = 0

    def run(self, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
        self.runs += 1
        log = self.root / f"allreduce-{self.runs}.log"
        log.write_text(text)
        command = [sys.executable, "-I", str(self.script), "--log", str(log), "--baseline", str(self.baseline)]
        command += ["--output", str(self.output), *self.options, *extra]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    def metric(self, name: str) -> float | None:
        for line in self.output.read_text().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    @property
    def window(self) -> list[float]:
        return [r["busbw"] for r in json.loads(self.baseline.read_text())["runs"]] if self.baseline.exists() else []


BASELINE = "fm_nccl_allreduce_baseline_busbw_gbytes_per_second"
MEASURED = "fm_nccl_allreduce_max_size_busbw_gbytes_per_second"
ADMITTED = "fm_nccl_last_run_in_baseline"


def test_a_5_percent_drop_enters_the_window_and_a_15_percent_drop_does_not(tmp_path: Path) -> None:
    report = Report(tmp_path, "--floor-gbytes-per-second", P5_FLOOR)
    # GIVEN a healthy first run at the published figure
    assert report.run(P5_SRUN).returncode == 0
    assert report.window == [487.09] and report.metric(BASELINE) == 487.09 and report.metric(ADMITTED) == 1
    # WHEN the fabric is 5% slower THEN the run is within the tolerance: admitted, the median moves a little
    assert report.run(scaled(P5_SRUN, 0.95)).returncode == 0
    assert report.window == [487.09, 462.74] and report.metric(ADMITTED) == 1
    assert report.metric(BASELINE) == pytest.approx((487.09 + 462.74) / 2)
    # WHEN it is 15% slower THEN the run is kept out (the alert compares it with the baseline)
    assert report.run(scaled(P5_SRUN, 0.85)).returncode == 0  # a slow run is still a healthy run
    assert report.window == [487.09, 462.74] and report.metric(ADMITTED) == 0
    assert report.metric(MEASURED) == 414.03 and report.metric(BASELINE) == pytest.approx(474.915)


def test_a_degraded_first_run_never_becomes_the_baseline(tmp_path: Path) -> None:
    report = Report(tmp_path, "--floor-gbytes-per-second", P5_FLOOR)
    # GIVEN a first run 30% under the published figure (below the floor)
    assert report.run(scaled(P5_SRUN, 0.7)).returncode == 0
    # THEN it is not the baseline: the floor is, and the run is measured against it
    assert report.window == [] and report.metric(ADMITTED) == 0
    assert (
        report.metric(BASELINE) == float(P5_FLOOR) == report.metric("fm_nccl_allreduce_floor_busbw_gbytes_per_second")
    )
    assert report.metric(MEASURED) == 340.96
    assert report.metric("fm_nccl_baseline_window_runs") == 0
    # WHEN the fabric is repaired THEN the healthy run becomes the baseline, and a repeat of the degraded run is out
    report.run(P5_SRUN)
    report.run(scaled(P5_SRUN, 0.7))
    assert report.window == [487.09] and report.metric(BASELINE) == 487.09 and report.metric(ADMITTED) == 0


def test_without_a_floor_the_first_healthy_run_starts_the_window_and_better_runs_lift_it(tmp_path: Path) -> None:
    report = Report(tmp_path, "--window-runs", "3")
    report.run(scaled(P5_SRUN, 0.7))  # nothing to compare with: a type without a published figure
    assert report.window == [340.96] and report.metric("fm_nccl_allreduce_floor_busbw_gbytes_per_second") is None
    for _ in range(3):
        report.run(P5_SRUN)  # better runs always enter
    assert report.window == [487.09, 487.09, 487.09] and report.metric(BASELINE) == 487.09


def test_the_window_rolls_and_follows_a_gradual_change(tmp_path: Path) -> None:
    report = Report(tmp_path, "--floor-gbytes-per-second", P5_FLOOR, "--window-runs", "3")
    for factor in (1.0, 0.97, 0.94, 0.91):  # each run within 10% of the median before it
        report.run(scaled(P5_SRUN, factor))
        assert report.metric(ADMITTED) == 1
    assert report.window == [472.48, 457.86, 443.25]  # the oldest left the window
    assert report.metric(BASELINE) == 457.86  # the median
    assert report.metric("fm_nccl_baseline_window_runs") == 3
    assert report.metric("fm_nccl_baseline_window_max_runs") == 3


def test_a_lasting_drop_never_becomes_the_new_normal(tmp_path: Path) -> None:
    report = Report(tmp_path, "--floor-gbytes-per-second", P5_FLOOR, "--window-runs", "3")
    report.run(P5_SRUN)
    for _ in range(5):
        report.run(scaled(P5_SRUN, 0.85))
        assert report.metric(ADMITTED) == 0
    assert report.window == [487.09] and report.metric(BASELINE) == 487.09


def test_the_baseline_never_drifts_below_the_floor(tmp_path: Path) -> None:
    # each run 9% below the last: within the tolerance, but the walk stops at the floor
    report = Report(tmp_path, "--floor-gbytes-per-second", "440", "--window-runs", "1")
    for factor in (1.0, 0.91):
        report.run(scaled(P5_SRUN, factor))
        assert report.metric(ADMITTED) == 1
    assert report.window == [443.25]
    report.run(scaled(P5_SRUN, 0.91 * 0.91))  # 403 GB/s: within 10% of 443, below the floor of 440
    assert report.window == [443.25] and report.metric(ADMITTED) == 0 and report.metric(BASELINE) == 443.25


def test_the_tolerance_and_the_percentile_are_options(tmp_path: Path) -> None:
    report = Report(tmp_path, "--drop-percent", "3", "--window-percentile", "90")
    report.run(P5_SRUN)
    report.run(scaled(P5_SRUN, 0.95))  # 5% below: beyond a 3% tolerance
    assert report.window == [487.09] and report.metric("fm_nccl_allreduce_drop_tolerance_ratio") == 0.03
    report.run(scaled(P5_SRUN, 0.98))
    assert report.window == [487.09, 477.35]
    assert report.metric(BASELINE) == pytest.approx(477.35 + 0.9 * (487.09 - 477.35))


def test_an_unhealthy_run_never_enters_the_window(tmp_path: Path) -> None:
    report = Report(tmp_path)
    wrong = P5_SRUN.replace("487.09      0", "487.09      3")
    assert report.run(wrong).returncode == 1
    assert report.window == [] and report.metric("fm_nccl_last_run_success") == 0 and report.metric(MEASURED) is None


def test_an_earlier_versions_first_run_average_is_an_empty_window(tmp_path: Path) -> None:
    report = Report(tmp_path)
    report.baseline.write_text(json.dumps({"avg_busbw": 193.452, "timestamp": 200}))  # the first-run average
    report.run(scaled(P5_SRUN, 0.9))
    assert json.loads(report.baseline.read_text())["version"] == 2 and report.window == [438.38]


def test_the_mpirun_tagged_output_of_eks_is_read_the_same_way(tmp_path: Path) -> None:
    report = Report(tmp_path, "--floor-gbytes-per-second", "400")
    report.run(EKS_TAGGED)  # the 2 GiB row: 437.79 GB/s
    assert report.window == [437.79]


def test_the_report_records_when_the_next_run_is_due(tmp_path: Path) -> None:
    report = Report(tmp_path, "--schedule-interval-seconds", "86400", "--time-limit-seconds", "1800")
    report.run(P5_SRUN)
    last = report.metric("fm_nccl_last_run_timestamp_seconds")
    assert last is not None
    assert report.metric("fm_nccl_schedule_interval_seconds") == 86400
    assert report.metric("fm_nccl_next_run_due_timestamp_seconds") == last + 86400 + 1800


def test_the_window_keeps_at_most_window_runs_when_the_option_shrinks(tmp_path: Path) -> None:
    report = Report(tmp_path)
    for _ in range(4):
        report.run(P5_SRUN)
    assert len(report.window) == 4
    report.run(P5_SRUN, "--window-runs", "2")
    assert len(report.window) == 2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--window-runs", "0", "--window-runs must be from 1 to 1000"),
        ("--window-runs", "1001", "--window-runs must be from 1 to 1000"),
        ("--window-percentile", "101", "--window-percentile must be from 0 to 100"),
        ("--window-percentile", "nan", "--window-percentile must be from 0 to 100"),
        ("--drop-percent", "100", "--drop-percent must be below 100"),
        ("--drop-percent", "0", "a positive number"),
        ("--floor-gbytes-per-second", "-1", "a positive number"),
        ("--floor-gbytes-per-second", "inf", "a positive number"),
        ("--schedule-interval-seconds", "0", "a positive number"),
        ("--time-limit-seconds", "-5", "--time-limit-seconds must be 0 or more"),
    ],
)
def test_bad_options_are_refused(tmp_path: Path, option: str, value: str, message: str) -> None:
    proc = Report(tmp_path).run(P5_SRUN, option, value)
    assert proc.returncode == 2 and message in proc.stderr


# --- the pieces ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "rank", "expected"),
    [([1.0], 50, 1.0), ([1.0, 3.0], 50, 2.0), ([3.0, 1.0, 2.0], 50, 2.0), ([1.0, 2.0, 3.0, 4.0], 90, 3.7)],
)
def test_percentile_interpolates_between_the_closest_ranks(values: list[float], rank: float, expected: float) -> None:
    assert percentile(values, rank) == pytest.approx(expected)


def test_the_floor_alone_is_the_baseline_before_any_run_and_admits_at_the_floor() -> None:
    empty = Baseline((), BaselinePolicy(floor=400.0))
    assert empty.value == 400.0 and empty.window_busbw is None
    assert empty.admits(400.0) and not empty.admits(399.9)
    low = Baseline((WindowRun(380.0, 1.0),), BaselinePolicy(floor=400.0))
    assert low.value == 400.0  # a window below a raised floor: the floor wins
