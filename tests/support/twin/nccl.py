"""The scheduled NCCL check on the twin: the library's rendered job, submitted as the backend submits it, run by real
Slurm against each node's fake ``all_reduce_perf``, reported, published and scraped (issue 29, loop g).

What the twin stands in for, and nothing else:

- **the AMI's tools** at the paths the rendered job calls (:class:`~fmconstructs.health.NcclCheckSpec`
  ``mpirun``/``all_reduce_perf``): ``all_reduce_perf`` is a link to each node's own fake (:mod:`.nodes`: its bus
  bandwidth is the node's scenario), and ``mpirun`` is :data:`FAKE_MPIRUN`, which checks the rank arithmetic the job
  passes (``-n`` = ``-N`` x the job's nodes) and Open MPI's refusal to run as root without
  ``OMPI_ALLOW_RUN_AS_ROOT``/``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM`` (open-mpi/ompi PR 6911), then runs the program once
  per node of the allocation with real ``srun`` and prints the slowest node's output (rank 0 prints the table of
  the whole job, which runs at its slowest node's speed);
- **the schedule's trigger**: the test says when a scheduled run happens. PCS: the login node's
  ``fm-nccl-check.service`` (what its timer starts: ``submit.sh`` then ``sbatch``). ParallelCluster: root's
  scrontab as the head node's rendered step installed it (real ``scrontab``, ``ScronParameters=enable`` from the
  library's settings) must take the entry (a crontab job is queued); it is then removed again, because its cron
  time is wall-clock time, and a run is what cron submits at that time: ``sbatch`` with the entry's ``#SCRON``
  options and its script (Slurm refuses ``scontrol update`` of a crontab job: "Cannot modify scrontab jobs through
  scontrol", seen on 24.11.5);
- **time**: the job script's schedule numbers in twin time (:func:`~.timescale.scale_check_schedule`), the publish
  timer's minute as one twin second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fmconstructs.health import NcclCheckSpec
from fmconstructs.health.nccl import JOB_NAME
from fmconstructs.platform import Backend

from .observed import ObservedCluster
from .procs import TwinError
from .timescale import scale_check_schedule

__all__ = ["FAKE_MPIRUN", "NcclTwin", "nccl_file_transform"]

FAKE_MPIRUN = r'''#!/usr/bin/python3
"""The cluster twin's mpirun (tests/support/twin/nccl.py): one srun task per node, the slowest node's output."""
import os, re, subprocess, sys

args = sys.argv[1:]
ranks = per_node = None
i = 0
while i < len(args):
    a = args[i]
    if a in ("-n", "-N", "-x", "--bind-to", "--host"):
        if a == "-n":
            ranks = int(args[i + 1])
        if a == "-N":
            per_node = int(args[i + 1])
        i += 2
    elif a == "--mca":
        i += 3
    elif a.startswith("-"):
        sys.exit("fmtwin mpirun: option %s not understood" % a)
    else:
        break
program = args[i:]
if os.getuid() == 0 and not (os.environ.get("OMPI_ALLOW_RUN_AS_ROOT") == "1"
                             and os.environ.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1"):
    sys.exit("mpirun has detected an attempt to run as root.")
nodes = int(os.environ["SLURM_JOB_NUM_NODES"])
if ranks is None or per_node is None or ranks != per_node * nodes:
    sys.exit("fmtwin mpirun: -n %s is not -N %s x %d nodes" % (ranks, per_node, nodes))
done = subprocess.run(["srun", "--nodes=%d" % nodes, "--ntasks-per-node=1", "--label", *program],
                      capture_output=True, text=True)
outputs = {}
for line in done.stdout.splitlines():
    label, _, rest = line.partition(": ")
    outputs.setdefault(label.strip(), []).append(rest)


def avg(lines):
    found = [float(m.group(1)) for m in (re.match(r"#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", l) for l in lines) if m]
    return found[0] if found else 0.0


if outputs:
    print("\n".join(min(outputs.values(), key=avg)))
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
'''


def nccl_file_transform(path: str, text: str) -> str:
    """The time factor on the rendered NCCL job script (its schedule numbers); every other file unchanged."""
    return scale_check_schedule(text) if path.endswith(".sbatch") else text


@dataclass
class NcclTwin:
    """The platform's NCCL check on an :class:`~.observed.ObservedCluster` (module notes)."""

    observed: ObservedCluster
    spec: NcclCheckSpec
    cron_job: str | None = field(default=None, init=False)
    cron_job_info: dict[str, str] = field(default_factory=dict, init=False)
    scron: tuple[list[str], str] = field(default=([], ""), init=False)
    runs: list[str] = field(default_factory=list, init=False)

    @property
    def backend(self) -> Backend:
        return self.observed.backend

    def install(self) -> None:
        """The AMI's tools, the login/head node's rendered ``nccl-check`` step, its publish timer."""
        slurm = self.observed.slurm
        slurm.install(self.spec.mpirun, FAKE_MPIRUN, 0o755)
        link = self.observed.cluster.home / "opt" / self.spec.all_reduce_perf.removeprefix("/opt/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to("/usr/local/bin/all_reduce_perf")  # each node's own fake (its /usr/local/bin)
        self.observed.login.run_step("nccl-check", timeout_s=90)
        if self.backend is Backend.PARALLELCLUSTER:
            self.cron_job = self._find_cron_job()
            self.cron_job_info = self.observed.slurm.job_info(self.cron_job)
            self.scron = scron_entry(self._scrontab_file())
            self.observed.login.run(["/opt/slurm/bin/scrontab", "-r"])
        self.observed.login.run_timer("fm-nccl-publish.timer")

    def _queue(self) -> list[dict[str, str]]:
        out = self.observed.slurm.run(["squeue", "-h", "-n", JOB_NAME, "-o", "%i|%T|%r"], check=False).stdout
        rows = []
        for line in out.splitlines():
            job, state, reason = [*line.split("|"), "", ""][:3]
            rows.append({"job": job.strip(), "state": state.strip(), "reason": reason.strip()})
        return rows

    def _find_cron_job(self) -> str:
        rows = self._queue()
        if len(rows) != 1:
            raise TwinError(f"root's scrontab should have queued one {JOB_NAME} job, squeue shows {rows}")
        return rows[0]["job"]

    def _scrontab_file(self) -> str:
        path = next(p for p in self.observed.login.bootstrap.files() if p.endswith("/scrontab"))
        return self.observed.login.bootstrap.files()[path][0]

    def trigger(self) -> str:
        """A scheduled run now (module notes); returns its job id ("" when the submitter skipped it)."""
        before = {r["job"] for r in self._queue()}
        if self.backend is Backend.PCS:
            self.observed.login.start_unit("fm-nccl-check.service")
        else:
            options, script = self.scron
            done = self.observed.login.run(["/opt/slurm/bin/sbatch", *options, script])
            if done.returncode != 0:
                raise TwinError(f"sbatch of the scrontab entry exited {done.returncode}: {done.stderr}")
        new = [r["job"] for r in self._queue() if r["job"] not in before]
        job = new[0] if new else ""
        if job:
            self.runs.append(job)
        return job

    def wait_done(self, job: str, previous_run: float, timeout_s: float = 90) -> dict[str, Any]:
        """Wait until the run of ``job`` has written a report newer than ``previous_run`` and the login node
        published it (the textfile node exporter reads); returns the published gauges."""
        textfile = self.observed.login.node.textfile_dir / "fm_nccl.prom"
        deadline = time.monotonic() + timeout_s
        gauges: dict[str, Any] = {}
        while time.monotonic() < deadline:
            if textfile.exists():
                gauges = parse_gauges(textfile.read_text())
                if gauges.get("fm_nccl_last_run_timestamp_seconds", 0) > previous_run:
                    return gauges
            time.sleep(0.3)
        info = self.observed.slurm.job_info(job)
        raise TwinError(f"no new NCCL report after {timeout_s:.0f}s (job {job}: {info}); last: {gauges}")

    def cancel_pending(self) -> None:
        for row in self._queue():
            if row["state"] == "PENDING" and row["job"] != self.cron_job:
                self.observed.slurm.run(["scancel", row["job"]], check=False)

    def queue(self) -> list[dict[str, str]]:
        return self._queue()


def scron_entry(scrontab: str) -> tuple[list[str], str]:
    """The ``#SCRON`` options and the command of a one-entry scrontab file (scrontab(1))."""
    options: list[str] = []
    for line in scrontab.splitlines():
        if line.startswith("#SCRON"):
            options = line.split()[1:]
        elif line.strip() and not line.startswith("#"):
            return options, line.split()[5]
    raise TwinError(f"no crontab entry in {scrontab!r}")


def parse_gauges(text: str) -> dict[str, float]:
    """Unlabelled gauges of a textfile (``name value`` lines)."""
    gauges: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or "{" in line or " " not in line:
            continue
        name, _, value = line.partition(" ")
        try:
            gauges[name] = float(value)
        except ValueError:
            continue
    return gauges
