#!/usr/bin/env python3
"""Slurm node states and jobs as Prometheus metrics for node exporter's textfile collector (login node).

sinfo -h -o '%T %D' -> fm_slurm_nodes{state}; squeue -> fm_slurm_job_info{hpc_job,user,account,partition} 1 and
fm_slurm_job_gpus{hpc_job} per RUNNING job only, fm_slurm_jobs_pending{partition,reason} (reasons outside
PENDING_REASONS count as "other"). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# States reported even when zero, so that alerts can tell "none down" from "not collected".
KNOWN_STATES = ("allocated", "completing", "down", "drained", "draining", "fail", "failing", "idle", "mixed")
_FLAGS = re.compile(r"[*~#!%$@^+-]+$")
# squeue(1) --Format "type[:[.][size][suffix]]": size 0 prints the value whole, neither padded nor cut
# (src/squeue/print.c _print_str), "|" ends each field. JobID is unique per array element (the SLURM_JOB_ID).
RUNNING_FORMAT = "JobID:0|,UserName:0|,Account:0|,Partition:0|,tres-alloc:0|"
PENDING_FORMAT = "%P|%r"
# squeue(1) JOB REASON CODES reported by name; any other reason counts as "other" (bounded label).
PENDING_REASONS = frozenset(
    {
        "AssociationJobLimit",
        "AssociationResourceLimit",
        "AssociationTimeLimit",
        "BadConstraints",
        "BeginTime",
        "Cleaning",
        "Dependency",
        "InvalidAccount",
        "InvalidQOS",
        "JobHeldAdmin",
        "JobHeldUser",
        "Licenses",
        "NodeDown",
        "None",
        "PartitionDown",
        "PartitionInactive",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "Priority",
        "Prolog",
        "QOSJobLimit",
        "QOSResourceLimit",
        "QOSTimeLimit",
        "ReqNodeNotAvail",
        "Reservation",
        "Resources",
        "WaitingForScheduling",
    }
)
Job = tuple[str, str, str, str, int]  # job id, user, account, partition, GPUs
Jobs = tuple[list[Job], dict[tuple[str, str], int]]  # running jobs, (partition, reason) -> pending jobs


def parse_sinfo(output: str) -> dict[str, int]:
    """``state -> node count`` from ``sinfo -h -o '%T %D'`` output."""
    counts = dict.fromkeys(KNOWN_STATES, 0)
    for line in output.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        state = _FLAGS.sub("", parts[0].lower())
        counts[state] = counts.get(state, 0) + int(parts[1])
    return counts


def allocated_gpus(tres: str) -> int:
    """``gres/gpu=N`` of an allocated TRES string, else the sum of ``gres/gpu:<type>=N``."""
    counts = re.findall(r"(?:^|,)gres/gpu=(\d+)", tres) or re.findall(r"(?:^|,)gres/gpu:[^=,]+=(\d+)", tres)
    return sum(map(int, counts))


def parse_running(output: str) -> list[Job]:
    jobs = []
    for line in output.splitlines():
        f = [field.strip() for field in line.split("|")]
        if len(f) >= 5 and f[0].isdigit():
            jobs.append((f[0], f[1], f[2], f[3], allocated_gpus(f[4])))
    return jobs


def pending_reason(reason: str) -> str:
    code = re.split(r"[\s,(]", reason.strip(), maxsplit=1)[0]
    return code if code in PENDING_REASONS else "other"


def parse_pending(output: str) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for line in output.splitlines():
        partition, sep, reason = line.strip().partition("|")
        if sep and partition:
            key = (partition, pending_reason(reason))
            counts[key] = counts.get(key, 0) + 1
    return counts


def escape(value: str) -> str:
    """Label value escaping of the text exposition format: backslash, double quote, line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series(name: str, value: int, **labels: str) -> str:
    text = ",".join(f'{key}="{escape(v)}"' for key, v in labels.items())
    return f"{name}{{{text}}} {value}"


def _head(name: str, help_text: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]


def render_jobs(jobs: Jobs | None) -> list[str]:
    running = sorted(jobs[0] if jobs else [], key=lambda job: int(job[0]))
    lines = _head("fm_slurm_job_info", "1 per RUNNING Slurm job, with its user, account and partition.")
    lines += [_series("fm_slurm_job_info", 1, hpc_job=j, user=u, account=a, partition=p) for j, u, a, p, _ in running]
    lines += _head("fm_slurm_job_gpus", "GPUs allocated to a RUNNING Slurm job.")
    lines += [_series("fm_slurm_job_gpus", gpus, hpc_job=job[0]) for *job, gpus in running]
    lines += _head("fm_slurm_jobs_pending", "Pending Slurm jobs per partition and reason.")
    for (partition, reason), count in sorted((jobs[1] if jobs else {}).items()):
        lines.append(_series("fm_slurm_jobs_pending", count, partition=partition, reason=reason))
    lines += _head("fm_slurm_jobs_collector_success", "1 if squeue ran and parsed, else 0.")
    return [*lines, f"fm_slurm_jobs_collector_success {0 if jobs is None else 1}"]


def render(counts: dict[str, int] | None, jobs: Jobs | None = None) -> str:
    lines = [
        "# HELP fm_slurm_nodes Slurm nodes per state (sinfo %T).",
        "# TYPE fm_slurm_nodes gauge",
    ]
    for state, count in sorted((counts or {}).items()):
        lines.append(f'fm_slurm_nodes{{state="{state}"}} {count}')
    lines += render_jobs(jobs)
    lines += [
        "# HELP fm_slurm_collector_success 1 if sinfo ran and parsed, else 0.",
        "# TYPE fm_slurm_collector_success gauge",
        f"fm_slurm_collector_success {0 if counts is None else 1}",
    ]
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> str | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def run_sinfo(sinfo: str = "sinfo") -> dict[str, int] | None:
    output = _run([sinfo, "--noheader", "--format=%T %D"])
    return None if output is None else parse_sinfo(output)


def run_squeue(squeue: str = "squeue") -> Jobs | None:
    common = [squeue, "--noheader", "--all", "--array"]
    running = _run([*common, "--states=RUNNING", f"--Format={RUNNING_FORMAT}"])
    pending = _run([*common, "--states=PENDING", f"--format={PENDING_FORMAT}"])
    if running is None or pending is None:
        return None
    return parse_running(running), parse_pending(pending)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("output", type=Path)
    parser.add_argument("--sinfo", default="sinfo")
    parser.add_argument("--squeue", default="squeue")
    args = parser.parse_args(argv)
    text = render(run_sinfo(args.sinfo), run_squeue(args.squeue))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.output.parent, prefix=".fm_slurm.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
