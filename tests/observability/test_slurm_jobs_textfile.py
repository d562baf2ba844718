"""Slurm jobs in the login node's textfile: one info series and one GPU count per RUNNING job (labels hpc_job, user,
account, partition), pending jobs per partition and bounded reason, label values escaped; squeue is faked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs.observability.metrics import SLURM_METRICS
from fmconstructs.observability.node import slurm_textfile

from tests.conftest import require_tool
from tests.support.slurm_jobs_textfile import FAKE_SQUEUE, RUNNING

PKG = Path(slurm_textfile.__file__).parent


def promtool_check(text: str) -> None:
    promtool = require_tool("promtool", "prometheus")
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture
def fake_squeue(tmp_path: Path) -> Path:
    path = tmp_path / "squeue"
    path.write_text(FAKE_SQUEUE)
    path.chmod(0o755)
    return path


def test_running_jobs_carry_user_account_partition_and_gpus(fake_squeue):
    jobs = slurm_textfile.run_squeue(str(fake_squeue))
    text = slurm_textfile.render({"idle": 1}, jobs)
    assert 'fm_slurm_job_info{hpc_job="1001",user="alice",account="ml-team",partition="gpu"} 1' in text
    assert 'fm_slurm_job_gpus{hpc_job="1001"} 8' in text  # the untyped total, not counted twice with the typed one
    assert 'fm_slurm_job_gpus{hpc_job="1002"} 0' in text
    assert 'fm_slurm_job_gpus{hpc_job="1003"} 6' in text  # typed only: summed
    assert "garbage" not in text and "notanid" not in text
    assert "fm_slurm_jobs_collector_success 1" in text
    promtool_check(text)


def test_label_values_are_escaped():
    parsed = slurm_textfile.parse_running(RUNNING)
    text = slurm_textfile.render(None, (parsed, {}))
    assert 'account="a\\"b\\\\c"' in text
    assert slurm_textfile.escape('x"y\\z\nw') == 'x\\"y\\\\z\\nw'
    promtool_check(text)


def test_pending_jobs_per_partition_and_bounded_reason(fake_squeue):
    jobs = slurm_textfile.run_squeue(str(fake_squeue))
    text = slurm_textfile.render({"idle": 1}, jobs)
    assert 'fm_slurm_jobs_pending{partition="gpu",reason="Priority"} 2' in text
    assert 'fm_slurm_jobs_pending{partition="gpu",reason="Resources"} 1' in text
    assert 'fm_slurm_jobs_pending{partition="cpu",reason="other"} 1' in text  # not in the fixed list
    assert 'fm_slurm_jobs_pending{partition="gpu,cpu",reason="ReqNodeNotAvail"} 1' in text
    promtool_check(text)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("Priority", "Priority"), ("ReqNodeNotAvail, UnavailableNodes:a", "ReqNodeNotAvail"), ("", "other"),
     ("QOSMaxGRESPerUser", "other"), ("Made\"Up\\Reason", "other"), ("priority", "other")],
)  # fmt: skip
def test_reason_label_takes_only_listed_codes(reason, expected):
    assert slurm_textfile.pending_reason(reason) == expected


def test_squeue_is_asked_for_running_and_pending_jobs_only(fake_squeue):
    slurm_textfile.run_squeue(str(fake_squeue))
    calls = (fake_squeue.parent / "squeue.log").read_text().splitlines()
    assert calls == [
        f"--noheader --all --array --states=RUNNING --Format={slurm_textfile.RUNNING_FORMAT}",
        f"--noheader --all --array --states=PENDING --format={slurm_textfile.PENDING_FORMAT}",
    ]


def test_squeue_failure_is_reported(tmp_path):
    fake = tmp_path / "squeue"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert slurm_textfile.run_squeue(str(fake)) is None
    assert slurm_textfile.run_squeue(str(tmp_path / "absent")) is None
    text = slurm_textfile.render({"idle": 1}, None)
    assert "fm_slurm_jobs_collector_success 0" in text and "fm_slurm_job_info{" not in text
    assert text.rstrip().endswith("fm_slurm_collector_success 1")  # sinfo's own status is unchanged
    promtool_check(text)


def test_script_writes_jobs_standalone(tmp_path, fake_squeue):
    sinfo = tmp_path / "sinfo"
    sinfo.write_text("#!/bin/sh\nprintf 'idle 2\\n'\n")
    sinfo.chmod(0o755)
    out = tmp_path / "fm_slurm.prom"
    script = str(PKG / "slurm_textfile.py")
    subprocess.run([sys.executable, "-I", script, str(out), "--sinfo", str(sinfo), "--squeue", str(fake_squeue)],
                   check=True)  # fmt: skip
    text = out.read_text()
    assert 'fm_slurm_job_info{hpc_job="1001",user="alice",account="ml-team",partition="gpu"} 1' in text
    assert 'fm_slurm_nodes{state="idle"} 2' in text


def test_metric_names_are_registered():
    assert {"fm_slurm_job_info", "fm_slurm_job_gpus", "fm_slurm_jobs_pending"} <= SLURM_METRICS
