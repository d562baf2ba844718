"""pytest glue of the twin tier: skip without prerequisites (fail under CI=true), one cluster per test module."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .cluster import TwinCluster
from .procs import TwinError
from .root import prerequisites_missing

__all__ = ["JOBS_LOG", "ran_on", "require_twin", "submit", "wait_job"]

#: Every twin job appends "<node> <job id>" here (a file in the shared /opt), so a test can tell where jobs ran.
JOBS_LOG = "/opt/twin-jobs.log"


def require_twin() -> None:
    """Skip the test with the reason when this machine cannot run the twin; under CI=true, fail instead."""
    missing = prerequisites_missing()
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"cluster twin: {missing}")
    pytest.skip(f"cluster twin: {missing}")


def submit(cluster: TwinCluster, *sbatch_args: str, seconds: float = 1.0) -> str:
    """A batch job that records where it ran (``JOBS_LOG``), sleeps ``seconds`` and ends."""
    assert cluster.slurm is not None
    script = f'echo "$(hostname -s) $SLURM_JOB_ID" >> {JOBS_LOG}; sleep {seconds}'
    return cluster.slurm.sbatch("-p", cluster.partition, *sbatch_args, "--wrap", script)


def ran_on(cluster: TwinCluster) -> dict[str, set[str]]:
    """Job id -> the nodes whose batch step ran it."""
    path = cluster.home / "opt" / Path(JOBS_LOG).name
    runs: dict[str, set[str]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            node, _, job = line.partition(" ")
            runs.setdefault(job, set()).add(node)
    return runs


def wait_job(cluster: TwinCluster, job: str, state: str, timeout_s: float = 60.0) -> dict[str, str]:
    """Wait until the job's JobState is ``state``; returns ``scontrol show job``."""
    assert cluster.slurm is not None
    deadline = time.monotonic() + timeout_s
    info: dict[str, str] = {}
    while time.monotonic() < deadline:
        info = cluster.slurm.job_info(job)
        if info.get("JobState") == state:
            return info
        time.sleep(0.3)
    raise TwinError(f"job {job} not {state} after {timeout_s:.0f}s: {info}")


def wait_until(what: str, condition: Callable[[], object], timeout_s: float = 60.0) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise TwinError(f"timed out after {timeout_s:.0f}s waiting for {what}")
