"""Loops (g) NCCL and (j) job mapping on real Slurm 24.11, node_exporter and Prometheus, per Slurm backend (issue 29).

GIVEN a TrainingPlatform synthesized on the backend and an :class:`~tests.support.twin.observed.ObservedCluster`
built from it (GPU nodes with their rendered prolog/epilog pieces, the login node of PCS or the head node of
ParallelCluster with its rendered ``nccl-check`` step and publish timer, Prometheus with the workspace's rules):

(g) WHEN the platform's NCCL check runs (the login node's timer service on PCS, root's scrontab entry on
ParallelCluster) on real Slurm against the nodes' fake ``all_reduce_perf``, THEN its report, published on the login
node and scraped by node_exporter, drives the library's NCCL rules: a degraded first run is below the floor (the
catalog's 2x p5.48xlarge figure x 0.8) and never the baseline; the baseline is the median of the last 7 admitted runs;
15 % under it alerts, 5 % does not; ``NcclCheckStale`` follows the schedule: quiet while the check waits behind a
long job or runs, firing when the check stopped.

(j) WHEN a GPU job runs, THEN its GPU series carry ``hpc_job=<its id>`` in Prometheus while it runs and not after.

The platform's check is the default 2-node check with only its schedule shortened (every 5 minutes, 5-minute time
limit, 5-minute grace: 5 s each in twin time), so that staleness is seen within a test;
``test_g_the_check_is_the_platform_default_but_its_schedule`` pins that.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from fmconstructs.health import NcclAlertOptions, NcclCheckSpec
from fmconstructs.health import metric_names as names
from fmconstructs.platform import Backend, PlatformHealth
from fmconstructs.platform.health import platform_nccl_spec

from tests.conftest import require_tool
from tests.support.twin.fixtures import require_twin, wait_job, wait_until
from tests.support.twin.monitoring import BINARIES, PrometheusServer
from tests.support.twin.nccl import NcclTwin, nccl_file_transform
from tests.support.twin.nodes import HEALTHY
from tests.support.twin.observed import ObservedCluster
from tests.support.twin.rendered import build_platform
from tests.support.twin.timescale import twin_seconds

#: This file runs the loops on PCS; test_twin_nccl_and_job_mapping_parallelcluster.py runs the same tests on
#: ParallelCluster (one file per backend, so that `pytest -n 2 --dist loadfile` runs them side by side).
BACKENDS = [Backend.PCS]
#: The only changes to the platform's default check (module notes).
SCHEDULE = {"schedule": "*/5 * * * *", "on_calendar": "*:0/5", "time_limit_minutes": 5}
STALE_GRACE = "5m"
#: 0.8 x 487.09 GB/s, the catalog's 2x p5.48xlarge figure at 16 GiB.
FLOOR = 389.672
DROP = names.ALERT_NCCL_BELOW_BASELINE
STALE = names.ALERT_NCCL_CHECK_STALE
GPU_FIELD = "DCGM_FI_DEV_GPU_UTIL"
TIMEOUT_S = 45.0


@dataclasses.dataclass
class Twin:
    observed: ObservedCluster
    nccl: NcclTwin
    #: the healthy runs that entered the baseline window, in order
    admitted: list[float] = dataclasses.field(default_factory=list)
    #: jobs one test leaves for the next (the tests of one backend run in order on one cluster)
    long_job: str = ""
    pending_check: str = ""
    mapped_job: str = ""

    @property
    def prometheus(self) -> PrometheusServer:
        return self.observed.monitoring.prometheus


class MappedTwin(Protocol):
    """What the (j) tests need of a twin (:class:`Twin`, or a backend's without the NCCL check: HyperPod)."""

    observed: ObservedCluster
    mapped_job: str

    @property
    def prometheus(self) -> PrometheusServer: ...


def _health() -> PlatformHealth:
    spec = NcclCheckSpec(nodes=2, gpus_per_node=8, state_dir="/fsx/fmconstructs/nccl", **SCHEDULE)  # type: ignore[arg-type]
    return PlatformHealth(nccl=spec, nccl_alerts=NcclAlertOptions(stale_grace=STALE_GRACE), remediation=None)


@pytest.fixture(scope="module", params=BACKENDS, ids=lambda b: b.value)
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    yield from backend_twin(request.param, tmp_path_factory)


def backend_twin(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    """The observed cluster of ``backend`` with the NCCL twin installed (both backends' files use it)."""
    require_twin()
    for binary, package in BINARIES:
        require_tool(binary, package)
    rendered = build_platform(backend, nodes=4, health=_health())
    home: Path = tmp_path_factory.mktemp(f"nccl-{backend.value}")
    with ObservedCluster(rendered, home, file_transform=nccl_file_transform) as observed:
        observed.start()
        assert rendered.platform.nccl_check is not None
        nccl = NcclTwin(observed, rendered.platform.nccl_check)
        nccl.install()
        yield Twin(observed, nccl)


def _busbw(twin: Twin, value: float, *, seconds: float = 0.0) -> None:
    for name in twin.observed.cluster.node_names:
        twin.observed.cluster.set_scenario(name, HEALTHY.but(nccl_busbw_gbytes_per_s=value, nccl_seconds=seconds))


def _last_run(twin: Twin) -> float:
    result = twin.prometheus.query(names.NCCL_LAST_RUN)
    return float(result[0]["value"][1]) if result else 0.0


def _run(twin: Twin, busbw: float) -> dict[str, float]:
    """One scheduled run at ``busbw`` on every node; returns the published gauges once Prometheus has them."""
    _busbw(twin, busbw)
    before = _last_run(twin)
    job = twin.nccl.trigger()
    assert job, twin.nccl.queue()
    gauges = twin.nccl.wait_done(job, before)
    stamp = gauges[names.NCCL_LAST_RUN]
    twin.prometheus.wait_for_query(names.NCCL_LAST_RUN, lambda r: bool(r) and float(r[0]["value"][1]) == stamp)
    if gauges[names.NCCL_LAST_IN_BASELINE] == 1:
        twin.admitted.append(busbw)
    return gauges


def _never(twin: Twin, alert: str, seconds: float) -> None:
    """``alert`` is neither pending nor firing at any evaluation for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert twin.prometheus.alerts(alert) == [], twin.prometheus.alerts(alert)
        time.sleep(0.25)


def _baseline_file(twin: Twin) -> Path:
    directory = twin.observed.cluster.shared_dir("/fsx") / "fmconstructs" / "nccl"
    return directory / "baseline-2x8-16G.json"


# --- (g) NCCL ----------------------------------------------------------------------------------------------------
def test_g_the_check_is_the_platform_default_but_its_schedule(twin: Twin) -> None:
    default = platform_nccl_spec(
        PlatformHealth(),
        backend=twin.observed.backend.value,
        nodes=4,
        gpus_per_node=8,
        mount_point="/fsx",
        queue="gpu",
        login_nodes=1,
        instance_type="p5.48xlarge",
    )
    assert default is not None and twin.nccl.spec == dataclasses.replace(default, **SCHEDULE)  # type: ignore[arg-type]
    assert twin.nccl.spec.floor_busbw() == FLOOR
    loaded = {r["name"] for g in twin.prometheus.rules() for r in g["rules"]}
    assert {DROP, STALE, names.ALERT_NCCL_CHECK_FAILED} <= loaded


def test_g_a_degraded_first_run_is_below_the_floor_alerts_and_is_not_the_baseline(twin: Twin) -> None:
    gauges = _run(twin, 300.0)
    assert gauges[names.NCCL_LAST_SUCCESS] == 1 and gauges[names.NCCL_MAX_SIZE_BUSBW] == 300
    assert gauges[names.NCCL_LAST_IN_BASELINE] == 0 and gauges[names.NCCL_WINDOW_RUNS] == 0
    assert gauges[names.NCCL_FLOOR_BUSBW] == FLOOR and gauges[names.NCCL_BASELINE_BUSBW] == FLOOR
    assert not _baseline_file(twin).exists()
    alert = twin.prometheus.wait_for_alert(DROP, timeout_s=TIMEOUT_S)
    assert float(alert["value"]) == 300


def test_g_healthy_runs_make_the_baseline_and_clear_the_alert(twin: Twin) -> None:
    for _ in range(3):
        gauges = _run(twin, 480.0)
    assert gauges[names.NCCL_WINDOW_RUNS] == 3 and gauges[names.NCCL_BASELINE_BUSBW] == 480
    wait_until("the drop alert to clear", lambda: not twin.prometheus.alerts(DROP), TIMEOUT_S)


def test_g_5_percent_under_the_baseline_does_not_alert(twin: Twin) -> None:
    gauges = _run(twin, 456.0)  # 0.95 x 480
    assert gauges[names.NCCL_LAST_IN_BASELINE] == 1
    _never(twin, DROP, 5 * twin_seconds("1m"))  # five evaluations: a true expression would be pending at once


def test_g_15_percent_under_the_baseline_alerts_and_stays_out_of_the_window(twin: Twin) -> None:
    gauges = _run(twin, 408.0)  # 0.85 x 480, above the floor
    assert gauges[names.NCCL_LAST_IN_BASELINE] == 0 and gauges[names.NCCL_WINDOW_RUNS] == 4
    pending = twin.prometheus.wait_for_alert(DROP, state="pending", timeout_s=TIMEOUT_S)
    assert float(pending["value"]) == 408
    twin.prometheus.wait_for_alert(DROP, timeout_s=twin_seconds("15m") + TIMEOUT_S)


def test_g_the_baseline_is_the_median_of_the_last_7_runs(twin: Twin) -> None:
    for busbw in (470.0, 460.0, 450.0, 440.0):
        gauges = _run(twin, busbw)
    window = twin.admitted[-7:]
    assert len(twin.admitted) == 8 and window == [480.0, 480.0, 456.0, 470.0, 460.0, 450.0, 440.0]
    assert gauges[names.NCCL_WINDOW_RUNS] == 7 and gauges[names.NCCL_BASELINE_BUSBW] == statistics.median(window)
    runs = json.loads(_baseline_file(twin).read_text())["runs"]
    assert [r["busbw"] for r in runs] == window
    (baseline,) = twin.prometheus.query(names.NCCL_BASELINE_BUSBW)
    assert float(baseline["value"][1]) == 460


def _hold_every_node(twin: Twin) -> str:
    slurm = twin.observed.slurm
    job = slurm.sbatch("-p", "gpu", f"-N{twin.observed.nodes}", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 600")
    wait_job(twin.observed.cluster, job, "RUNNING")
    return job


def _overdue(twin: Twin) -> bool:
    return bool(twin.prometheus.query(f"time() > {names.NCCL_NEXT_RUN_DUE}"))


def test_g_nccl_check_stale_is_quiet_while_the_check_waits_behind_a_long_job(twin: Twin) -> None:
    _run(twin, 480.0)  # due in 10 s of twin time (5m interval + 5m limit)
    long_job = _hold_every_node(twin)
    twin.long_job = long_job
    check = twin.nccl.trigger()
    twin.pending_check = check
    wait_until(
        "the check pending for Resources", lambda: twin.observed.slurm.job_info(check).get("Reason") == "Resources"
    )
    twin.prometheus.wait_for_query(f"{names.NCCL_CHECK_DEFERRED} == 1", bool, TIMEOUT_S)
    wait_until("the check overdue by its schedule", lambda: _overdue(twin), TIMEOUT_S)
    _never(twin, STALE, twin_seconds(STALE_GRACE) + 3)
    assert _overdue(twin) and twin.observed.slurm.job_info(check).get("JobState") == "PENDING"


def test_g_a_dead_queue_probe_no_longer_holds_the_alert_back(twin: Twin) -> None:
    twin.observed.login.stop()  # the publish timer (and its probe) stops; its last "deferred 1" stays on disk
    try:
        assert twin.prometheus.query(f"{names.NCCL_CHECK_DEFERRED} == 1")
        # the probe's look must have moved within 15m (15 s here), then the grace (5 s)
        twin.prometheus.wait_for_alert(STALE, timeout_s=twin_seconds("15m") + twin_seconds(STALE_GRACE) + TIMEOUT_S)
        assert twin.prometheus.query(f"{names.NCCL_CHECK_DEFERRED} == 1")
    finally:
        twin.observed.login.run_timer("fm-nccl-publish.timer")
    wait_until("the alert to clear with the probe back", lambda: not twin.prometheus.alerts(STALE), TIMEOUT_S)


def test_g_nccl_check_stale_is_quiet_while_a_late_check_runs(twin: Twin) -> None:
    check: str = twin.pending_check
    _busbw(twin, 480.0, seconds=3 * twin_seconds(STALE_GRACE))
    before = _last_run(twin)
    twin.observed.slurm.run(["scancel", twin.long_job])
    wait_job(twin.observed.cluster, check, "RUNNING")
    assert _overdue(twin)
    deadline = time.monotonic() + 2 * twin_seconds(STALE_GRACE) + 2
    while time.monotonic() < deadline and twin.observed.slurm.job_info(check).get("JobState") == "RUNNING":
        assert twin.prometheus.alerts(STALE) == [], (twin.prometheus.alerts(STALE), twin.observed.slurm.job_info(check))
        time.sleep(0.25)
    twin.nccl.wait_done(check, before)
    _busbw(twin, 480.0)


def test_g_nccl_check_stale_fires_when_the_check_stopped(twin: Twin) -> None:
    # No further run: the report's due time (10 s) plus the grace (5 s) pass.
    alert = twin.prometheus.wait_for_alert(STALE, timeout_s=4 * twin_seconds("5m") + TIMEOUT_S)
    assert alert["labels"]["instance_id"] == twin.observed.login.node.instance_id


# --- (j) job mapping ---------------------------------------------------------------------------------------------
def _job_series(twin: MappedTwin, job: str) -> list[dict[str, Any]]:
    return twin.prometheus.query(f'{GPU_FIELD}{{Hostname="gpu-3",hpc_job="{job}"}}')


def test_j_a_running_job_s_gpu_series_carry_its_id(twin: MappedTwin) -> None:
    slurm = twin.observed.slurm
    job = slurm.sbatch("-p", "gpu", "-N1", "-w", "gpu-3", "--gres=gpu:8", "-o", "/dev/null", "--wrap", "sleep 8")
    twin.mapped_job = job
    wait_job(twin.observed.cluster, job, "RUNNING")
    mapping = twin.observed.job_mapping_dir("gpu-3")
    wait_until("the prolog's mapping", lambda: len(list(mapping.glob("[0-9]*"))) == 8, TIMEOUT_S)
    assert all(p.read_text().split() == [job] for p in mapping.glob("[0-9]*"))
    series = twin.prometheus.wait_for_query(
        f'{GPU_FIELD}{{Hostname="gpu-3",hpc_job="{job}"}}', lambda r: len(r) == 8, TIMEOUT_S
    )
    assert {s["metric"]["gpu"] for s in series} == {str(i) for i in range(8)}
    assert slurm.job_info(job).get("JobState") == "RUNNING"


def test_j_after_the_job_ends_its_gpu_series_no_longer_carry_its_id(twin: MappedTwin) -> None:
    job: str = twin.mapped_job
    wait_job(twin.observed.cluster, job, "COMPLETED", timeout_s=TIMEOUT_S)
    mapping = twin.observed.job_mapping_dir("gpu-3")
    wait_until("the epilog's unmapping", lambda: not list(mapping.glob("[0-9]*")), TIMEOUT_S)
    unmapped = time.monotonic()
    wait_until("the job's series to go", lambda: not _job_series(twin, job), TIMEOUT_S)
    # Gone by a staleness marker at the next scrape, not by the lookback delta running out (5m: 5 s here).
    assert time.monotonic() - unmapped < twin_seconds("5m"), time.monotonic() - unmapped
    window = f"{int(twin_seconds('1m') * 60)}s"
    assert twin.prometheus.query(f'count_over_time({GPU_FIELD}{{hpc_job="{job}"}}[{window}])')
    untagged = twin.prometheus.query(f'{GPU_FIELD}{{Hostname="gpu-3",hpc_job=""}}')
    assert len(untagged) == 8
