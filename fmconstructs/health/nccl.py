"""The scheduled NCCL fabric check (issue 20 section 2): nccl-tests ``all_reduce_perf`` across a configurable number of
nodes, its output turned into metrics, compared with the cluster's own baseline.

Written once, parameterized by :class:`NcclCheckSpec`; backends choose where it plugs in:

- Slurm (PCS, ParallelCluster): :func:`render_sbatch` (one self-contained batch script: mpirun, then the embedded
  :mod:`~fmconstructs.health.nccl_report`), scheduled by :func:`render_scrontab` where ``scrontab`` is enabled
  (``ScronParameters=enable`` in slurm.conf: Slurm scrontab(1) and slurm.conf(5)) or by :func:`render_timer_units`
  (a systemd timer on the login node that runs ``sbatch``): AWS PCS custom Slurm settings accept a fixed list that
  has no ``ScronParameters`` (PCS User Guide slurm-custom-settings-cluster / API ``SlurmCustomSetting``, as
  :class:`fmconstructs.pcs.slurm.ClusterSetting` records), so PCS uses the timer; ParallelCluster accepts
  :data:`SCRONTAB_SLURM_SETTINGS` in ``Scheduling/SlurmSettings/CustomSlurmSettings`` (not in its deny list).
  :func:`render_publish_units` copies the metrics from the shared state directory into node exporter's textfile
  directory on the login node, a node that outlives the compute nodes the job ran on.
- EKS: :func:`render_mpijob_manifests`, a Kubeflow MPI operator ``MPIJob`` (``kubeflow.org/v2beta1``) as
  aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml runs it.

Launch flags and environment follow aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/
nccl-tests-ami.sbatch: ``mpirun -n $((G * SLURM_JOB_NUM_NODES)) -N G -x FI_PROVIDER=efa -x FI_EFA_FORK_SAFE=1
-x NCCL_SOCKET_IFNAME=^docker,lo,veth --mca pml ^ucx --mca btl tcp,self --mca btl_tcp_if_exclude
lo,docker0,veth_def_agent --bind-to none all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1 -n 100``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._validate import check_bool, check_count, check_number, check_str
from .._validate_schedule import check_on_calendar
from ..catalog import check_instance_type, nccl_allreduce_reference
from ..errors import FmTypeError, FmValidationError, is_token
from . import rules
from .cron import cron_max_gap_seconds
from .metric_names import NCCL_QUEUE_TEXTFILE, NODE_EXPORTER_TEXTFILE_DIR

if TYPE_CHECKING:
    from .._nccl_reference import NcclAllReduceReference

#: nccl-tests, pinned by tag and commit: the newest tag of NVIDIA/nccl-tests in the stored snapshot (tag v2.19.6,
#: commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432, 2026-07-09; src/common.h NCCL_TESTS_VERSION "2.19.6").
#: awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/README.md pins a newer v2.20.0 that the snapshot did not
#: hold (UNCONFIRMED here: pass ``version``/``commit`` to use it).
NCCL_TESTS_VERSION = "v2.19.6"  # NVIDIA/nccl-tests tag (src/common.h "2.19.6")
NCCL_TESTS_COMMIT = "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432"
NCCL_TESTS_REPOSITORY = "https://github.com/NVIDIA/nccl-tests.git"
#: Where the FmImages component installs the binaries (``make`` writes ``build/<test>_perf``: nccl-tests README).
ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"
#: The Open MPI of the EFA installer (awsome-distributed-ai nccl-tests.Dockerfile: ``MPI_HOME=/opt/amazon/openmpi``).
MPIRUN = "/opt/amazon/openmpi/bin/mpirun"
#: Environment of every run (awsome-distributed-training nccl-tests-ami.sbatch; NCCL_DEBUG=WARN is ours: INFO
#: prints every rank's setup, the parser skips it either way).
DEFAULT_ENV: Mapping[str, str] = {
    "FI_PROVIDER": "efa",
    "FI_EFA_FORK_SAFE": "1",
    "NCCL_SOCKET_IFNAME": "^docker,lo,veth",
    "NCCL_DEBUG": "WARN",
}
#: Library path of the EFA installer's libfabric, Open MPI and aws-ofi-nccl plugin (nccl-tests-ami.sbatch).
LD_LIBRARY_PATH = "/opt/amazon/efa/lib:/opt/amazon/openmpi/lib:/opt/amazon/ofi-nccl/lib:/usr/local/lib:/usr/lib"
#: The textfile directory of fmconstructs' node exporter (:data:`fmconstructs.observability.collection.TEXTFILE_DIR`).
TEXTFILE_DIR = NODE_EXPORTER_TEXTFILE_DIR
#: The slurm.conf setting that turns scrontab on (scrontab(1): "ScronParameters=enable"). Allowed by ParallelCluster
#: CustomSlurmSettings: aws-parallelcluster 3.16.1 pcluster/validators/slurm_settings_validator.py
#: SLURM_SETTINGS_DENY_LIST does not list it. Not accepted by AWS PCS (see the module docstring).
SCRONTAB_SLURM_SETTINGS: Mapping[str, str] = {"ScronParameters": "enable"}
JOB_NAME = "fm-nccl-allreduce"
SCRIPT_NAME = f"{JOB_NAME}.sbatch"
METRICS_FILE = "fm_nccl.prom"
#: Where the platform installs the report script on the login/head node for the queue probe
#: (:func:`render_publish_units` with ``squeue``).
REPORT_PATH = "/opt/fmconstructs/nccl/nccl_report.py"
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}  # nccl-tests src/common.cu parsesize: powers of 1024

_SIZE = re.compile(r"[1-9][0-9]*[KMG]?")
_ABS_PATH = re.compile(r"/[A-Za-z0-9._/-]*")
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_SLURM_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def report_script() -> str:
    """The source of :mod:`fmconstructs.health.nccl_report`, as the job runs it."""
    return (Path(__file__).parent / "nccl_report.py").read_text()


def _synth(parameter: str, value: object) -> None:
    if is_token(value):
        raise FmValidationError(parameter, value, "a value known at synth time (it is written into the job script)")


@dataclass(frozen=True)
class NcclCheckSpec:
    """What the scheduled NCCL check runs, where it keeps its state and when.

    :param nodes: nodes in the all-reduce (at least 2: the check is about the fabric between nodes).
    :param gpus_per_node: ranks per node, one GPU each (``-g 1``).
    :param max_bytes: ``-e`` of all_reduce_perf (``16G`` as awsome-distributed-training runs it on P5).
    :param iterations: ``-n`` (awsome-distributed-training uses 100).
    :param state_dir: a directory on the shared file system: logs, the baseline JSON and the metrics file.
    :param schedule: a five-field cron expression for scrontab.
    :param on_calendar: the same schedule as a systemd ``OnCalendar`` (login-node timer, where scrontab is off).
    :param partition: the Slurm partition (PCS queue); None: the default partition.
    :param time_limit_minutes: the job's ``--time``.
    :param all_reduce_perf: the binary on the nodes (the FmImages component's by default).
    :param mpirun: Open MPI's mpirun on the nodes.
    :param python: the interpreter that runs the report.
    :param extra_env: more variables for every rank (``NCCL_*``, ``FI_*``); they override :data:`DEFAULT_ENV`.
    :param pairwise: after the all-node test, run a two-node test on each pair of a rotating schedule, one pair after
        the other, and attribute the slowest pair to its nodes (:mod:`.nccl_report`): a node in the slowest pair
        ``suspect_after_runs`` runs in a row gets ``fm_nccl_suspect_node 1`` and alert ``FmNcclOutlier``. Needs at
        least 4 nodes; ``time_limit_minutes`` must cover ``nodes // 2`` more tests. Slurm only. default: False.
    :param suspect_after_runs: runs in a row in the slowest pair that make a node suspect. default: 3.
    :param outlier_percent: the slowest pair counts only when its average is more than this far below the median of
        the run's pairs (pairs within noise of each other implicate nobody). default: 10.
    :param instance_type: the nodes' EC2 type, for the catalog's published all-reduce figure at ``nodes`` nodes and
        ``max_bytes`` (:func:`fmconstructs.catalog.nccl_allreduce_reference`), of which ``floor_fraction`` is the
        baseline's floor. None: no catalog floor (the EKS renderer fills it from its ``instance_type``). default: None.
    :param floor_fraction: the floor as a fraction of the published figure: a reference, not a gate (fixed per-SKU
        gates misfire on healthy clusters, NVIDIA/aicr#1256), low enough for other NCCL/EFA versions and tuning, high
        enough that a broken fabric (TCP instead of EFA, missing interfaces) never becomes the baseline. default: 0.8.
    :param floor_busbw_gbytes_per_s: an explicit floor (GB/s, max-size busbw) instead of the catalog's, e.g. for a
        type or node count without a published figure. default: None.
    :param baseline_runs: runs the rolling baseline window keeps (default 7: a week of the daily default schedule).
    :param baseline_percentile: the window's percentile that is the baseline (default 50: the median).
    :param drop_percent: a run more than this far below the baseline alerts (``NcclBusBandwidthBelowBaseline``) and
        does not enter the window; within it, it does (default 10: a 15 % drop alerts, a 5 % drop does not).
    :param schedule_interval_hours: the longest time between two scheduled runs, against which ``NcclCheckStale``
        judges the check. Default: computed from ``schedule``; give it when the timer's ``on_calendar`` (PCS) is not
        the same schedule.
    """

    nodes: int = 2
    gpus_per_node: int = 8
    max_bytes: str = "16G"
    iterations: int = 100
    state_dir: str = "/fsx/fmconstructs/nccl"
    schedule: str = "0 3 * * *"
    on_calendar: str = "*-*-* 03:00:00"
    partition: str | None = None
    time_limit_minutes: int = 30
    all_reduce_perf: str = ALL_REDUCE_PERF
    mpirun: str = MPIRUN
    python: str = "/usr/bin/python3"
    extra_env: Mapping[str, str] = field(default_factory=dict)
    pairwise: bool = False
    suspect_after_runs: int = 3
    outlier_percent: float = 10.0
    instance_type: str | None = None
    floor_fraction: float = 0.8
    floor_busbw_gbytes_per_s: float | None = None
    baseline_runs: int = 7
    baseline_percentile: float = 50.0
    drop_percent: float = 10.0
    schedule_interval_hours: float | None = None

    def __post_init__(self) -> None:
        for name, minimum, maximum in (
            ("nodes", 2, 4096),
            ("gpus_per_node", 1, 64),
            ("iterations", 1, 100000),
            ("time_limit_minutes", 1, 10080),
        ):
            _synth(name, getattr(self, name))
            check_count(name, getattr(self, name), minimum=minimum, maximum=maximum)
        for name, pattern, allowed in (
            ("max_bytes", _SIZE, "a size like '16G', '512M' or '8192'"),
            ("state_dir", _ABS_PATH, "an absolute path on the shared file system"),
            ("all_reduce_perf", _ABS_PATH, "an absolute path"),
            ("mpirun", _ABS_PATH, "an absolute path"),
            ("python", _ABS_PATH, "an absolute path"),
        ):
            _synth(name, getattr(self, name))
            check_str(name, getattr(self, name), pattern=pattern, allowed=allowed)
        check_on_calendar("on_calendar", self.on_calendar)  # systemd.time(7), fields in range
        if self.partition is not None:
            _synth("partition", self.partition)
            check_str("partition", self.partition, pattern=_SLURM_NAME, allowed="a Slurm partition name")
        if not isinstance(self.extra_env, Mapping):
            raise FmTypeError("extra_env", self.extra_env, "a dict of str to str")
        for key, value in self.extra_env.items():
            check_str("extra_env key", key, pattern=_ENV_NAME, allowed="an environment variable name")
            _synth(f"extra_env[{key!r}]", value)
            check_str(f"extra_env[{key!r}]", value, pattern=re.compile(r"[^\n'\x00]*"), allowed="one line")
        object.__setattr__(self, "extra_env", dict(self.extra_env))
        self._validate_pairwise()
        self._validate_baseline()
        cron_max_gap_seconds(self.schedule)  # check_crontab (Slurm scrontab and Kubernetes alike); runs at all

    def _validate_pairwise(self) -> None:
        check_bool("pairwise", self.pairwise)
        _synth("suspect_after_runs", self.suspect_after_runs)
        check_count("suspect_after_runs", self.suspect_after_runs, minimum=1, maximum=100)
        _synth("outlier_percent", self.outlier_percent)
        check_number("outlier_percent", self.outlier_percent, minimum=0, maximum=99)
        rules.pairwise_needs_four_nodes(pairwise=self.pairwise, nodes=self.nodes)

    def _validate_baseline(self) -> None:
        if self.instance_type is not None:
            _synth("instance_type", self.instance_type)
            check_instance_type("instance_type", self.instance_type)
        _synth("baseline_runs", self.baseline_runs)
        check_count("baseline_runs", self.baseline_runs, minimum=1, maximum=1000)
        for name, minimum, maximum, exclusive in (
            ("floor_fraction", 0, 1, True),
            ("baseline_percentile", 0, 100, False),
            ("drop_percent", 0, 99, True),
        ):
            _synth(name, getattr(self, name))
            check_number(name, getattr(self, name), minimum=minimum, maximum=maximum, exclusive_minimum=exclusive)
        for name, maximum in (("floor_busbw_gbytes_per_s", 100000), ("schedule_interval_hours", 24 * 366 * 8)):
            if getattr(self, name) is not None:
                _synth(name, getattr(self, name))
                check_number(name, getattr(self, name), minimum=0, exclusive_minimum=True, maximum=maximum)

    @property
    def max_size_bytes(self) -> int:
        """``max_bytes`` in bytes (nccl-tests reads K, M and G as powers of 1024)."""
        unit = self.max_bytes[-1] if self.max_bytes[-1] in "KMG" else ""
        return int(self.max_bytes[: len(self.max_bytes) - len(unit)]) * _SIZE_UNITS[unit]

    @property
    def schedule_interval_seconds(self) -> int:
        """The longest time between two scheduled runs: ``schedule_interval_hours``, else from ``schedule``."""
        if self.schedule_interval_hours is not None:
            return round(self.schedule_interval_hours * 3600)
        return cron_max_gap_seconds(self.schedule)

    def reference(self, instance_type: str | None = None) -> NcclAllReduceReference | None:
        """The catalog's published figure for ``nodes`` x the instance type at ``max_bytes`` (None: none)."""
        itype = self.instance_type if self.instance_type is not None else instance_type
        if itype is None:
            return None
        return nccl_allreduce_reference(itype, nodes=self.nodes, message_bytes=self.max_size_bytes)

    def floor_busbw(self, instance_type: str | None = None) -> float | None:
        """The baseline's floor (GB/s): ``floor_busbw_gbytes_per_s``, else ``floor_fraction`` of the catalog's
        published figure for this type, node count and size, else None (no floor)."""
        if self.floor_busbw_gbytes_per_s is not None:
            return float(self.floor_busbw_gbytes_per_s)
        reference = self.reference(instance_type)
        return None if reference is None else round(reference.busbw_gbytes_per_s * self.floor_fraction, 3)

    def report_arguments(self, instance_type: str | None = None) -> list[str]:
        """The report's baseline and schedule options (the same for every backend)."""
        arguments = [
            "--drop-percent",
            f"{self.drop_percent:g}",
            "--window-runs",
            str(self.baseline_runs),
            "--window-percentile",
            f"{self.baseline_percentile:g}",
            "--schedule-interval-seconds",
            str(self.schedule_interval_seconds),
            "--time-limit-seconds",
            str(self.time_limit_minutes * 60),
        ]
        floor = self.floor_busbw(instance_type)
        return arguments if floor is None else [*arguments, "--floor-gbytes-per-second", f"{floor:g}"]

    @property
    def environment(self) -> dict[str, str]:
        return {**DEFAULT_ENV, **self.extra_env}

    @property
    def script_path(self) -> str:
        return f"{self.state_dir}/{SCRIPT_NAME}"

    @property
    def metrics_path(self) -> str:
        return f"{self.state_dir}/{METRICS_FILE}"

    def slurm_options(self) -> list[str]:
        """The sbatch options of the job (``#SBATCH`` lines of the script, ``#SCRON`` line of the crontab)."""
        options = [
            f"--job-name={JOB_NAME}",
            f"--nodes={self.nodes}",
            f"--ntasks-per-node={self.gpus_per_node}",
            "--exclusive",
            f"--time={self.time_limit_minutes}",
            f"--output={self.state_dir}/slurm-%j.out",
        ]
        if self.partition is not None:
            options.append(f"--partition={self.partition}")
        return options

    def test_arguments(self) -> list[str]:
        """all_reduce_perf's arguments: 8 bytes to ``max_bytes``, doubling, one GPU per rank, with a data check."""
        return ["-b", "8", "-e", self.max_bytes, "-f", "2", "-g", "1", "-c", "1", "-n", str(self.iterations)]


def _mpirun_command(spec: NcclCheckSpec, ranks: str) -> list[str]:
    """mpirun as awsome-distributed-training nccl-tests-ami.sbatch runs it (``ranks`` may be a shell expression)."""
    command = [spec.mpirun, "-n", ranks, "-N", str(spec.gpus_per_node)]
    for name, value in spec.environment.items():
        command += ["-x", f"{name}={value}"]
    command += ["-x", "LD_LIBRARY_PATH", "--mca", "pml", "^ucx", "--mca", "btl", "tcp,self"]
    command += ["--mca", "btl_tcp_if_exclude", "lo,docker0,veth_def_agent", "--bind-to", "none"]
    return [*command, spec.all_reduce_perf, *spec.test_arguments()]


# Each node's EC2 instance id (IMDSv2, as fmconstructs.observability.collection reads it for the instance label), so
# that FmNcclOutlier names the instance the remediation handler acts on.
_INSTANCE_IDS = (
    "# shellcheck disable=SC2016 # expanded on each node\n"
    'srun --nodes="$nodes" --ntasks-per-node=1 bash -c \''
    "t=$(curl -fsS -m 5 -X PUT http://169.254.169.254/latest/api/token "
    '-H "X-aws-ec2-metadata-token-ttl-seconds: 60") && echo "$SLURMD_NODENAME $(curl -fsS -m 5 '
    '-H "X-aws-ec2-metadata-token: $t" http://169.254.169.254/latest/meta-data/instance-id)"\' '
    '>"$pairs_dir/instance-ids" 2>/dev/null\n'
)


def _pairwise_section(spec: NcclCheckSpec) -> str:
    """Two-node tests over this run's pairs (``scontrol show hostnames`` expands the job's node list; the report
    plans the pairs), one after the other, each logged; a manifest lists ``node_a node_b log``.

    ``--host a:G,b:G``: Open MPI's slot syntax (its "not enough slots" help text: "The --host command line parameter,
    via a ":N" suffix on the hostname"); within a Slurm allocation it selects those nodes of the job. Each node names
    itself with ``SLURMD_NODENAME`` (set by slurmd in every task's environment: seen in job environment dumps, the
    srun(1) list itself not re-read). Not run on a real cluster here: UNCONFIRMED end to end on PCS/ParallelCluster.
    """
    pair = _mpirun_command(spec, "PAIR_RANKS")
    pair[5:5] = ["--host", "PAIR_HOSTS"]  # after "-n RANKS -N G"
    mpirun = " ".join(shlex.quote(w) for w in pair)
    mpirun = mpirun.replace(" PAIR_RANKS ", " $((2 * gpus_per_node)) ").replace(
        " PAIR_HOSTS ", ' "${node_a}:${gpus_per_node},${node_b}:${gpus_per_node}" '
    )
    return (
        r"""pairs_dir="$state_dir/logs/pairs-${SLURM_JOB_ID:-0}"
pair_state="$state_dir/pairs-state.json"
mkdir -p "$pairs_dir"
: >"$pairs_dir/manifest"
scontrol show hostnames "${SLURM_JOB_NODELIST:-}" >"$pairs_dir/hosts"
"""
        + _INSTANCE_IDS
        + r""""$python" -I "$report" --plan-pairs "$pairs_dir/hosts" --pair-state "$pair_state" >"$pairs_dir/plan"
while read -r node_a node_b; do
  pair_log="$pairs_dir/${node_a}_${node_b}.log"
"""
        + "  "
        + mpirun
        + r""" </dev/null >"$pair_log" 2>&1
  echo "$node_a $node_b $pair_log" >>"$pairs_dir/manifest"
done <"$pairs_dir/plan"
"""
    )


def render_sbatch(spec: NcclCheckSpec) -> str:
    """The batch script: all_reduce_perf over ``spec.nodes`` nodes, then the report (embedded), which writes the
    metrics and keeps the rolling baseline (:meth:`NcclCheckSpec.report_arguments`). Exits non-zero when the test or
    the report fails."""
    header = "".join(f"#SBATCH {option}\n" for option in spec.slurm_options())
    mpirun = " ".join(shlex.quote(w) for w in _mpirun_command(spec, "RANKS"))
    mpirun = mpirun.replace(" RANKS ", ' "$ranks" ')
    report = report_script()
    pairs = ""
    pair_args = ""
    if spec.pairwise:
        pairs = _pairwise_section(spec)
        pair_args = (
            ' --pairs "$pairs_dir/manifest" --pair-state "$pair_state" --instance-ids "$pairs_dir/instance-ids"'
            f" --suspect-after {spec.suspect_after_runs} --outlier-percent {spec.outlier_percent:g}"
        )
    if "FM_NCCL_REPORT" in report:
        raise AssertionError("the report script contains the heredoc delimiter")
    return (
        "#!/bin/bash\n"
        "# fmconstructs scheduled NCCL all-reduce check (fmconstructs.health.nccl).\n"
        + header
        + "set -uo pipefail\n"
        # Open MPI's mpirun refuses root unless both variables are 1 (open-mpi/ompi PR 6911, orterun.c: getenv
        # OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM); the login-node timer and root's scrontab submit
        # as root.
        + "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
        + f"state_dir={shlex.quote(spec.state_dir)}\n"
        + f"python={shlex.quote(spec.python)}\n"
        + f"gpus_per_node={spec.gpus_per_node}\n"
        + f"shape={spec.max_bytes}\n"
        + f'export LD_LIBRARY_PATH={shlex.quote(LD_LIBRARY_PATH)}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
        + r"""nodes=${SLURM_JOB_NUM_NODES:?run this script with sbatch (or scrontab)}
ranks=$((gpus_per_node * nodes))
mkdir -p "$state_dir/logs"
log="$state_dir/logs/allreduce-${SLURM_JOB_ID:-0}.log"
# One baseline per test shape: a different node count or size range is a different cluster figure.
baseline="$state_dir/baseline-${nodes}x${gpus_per_node}-${shape}.json"
report=$(mktemp)
trap 'rm -f "$report"' EXIT
cat >"$report" <<'FM_NCCL_REPORT'
"""
        + report
        + "FM_NCCL_REPORT\n"
        + mpirun
        + ' 2>&1 | tee "$log"\n'
        + "test_status=${PIPESTATUS[0]}\n"
        + pairs
        + '"$python" -I "$report" --log "$log" --baseline "$baseline" --output "$state_dir/fm_nccl.prom" '
        + " ".join(shlex.quote(a) for a in spec.report_arguments())
        + pair_args
        + r"""
report_status=$?
if [ "$test_status" -ne 0 ]; then
  echo "fmconstructs nccl: all_reduce_perf exited with $test_status" >&2
  exit "$test_status"
fi
exit "$report_status"
"""
    )


def render_scrontab(spec: NcclCheckSpec) -> str:
    """A scrontab entry that runs :func:`render_sbatch`'s script (installed at ``spec.script_path``): ``#SCRON``
    carries the sbatch options (scrontab(1): "Lines starting with #SCRON allow options to be defined for the single
    following crontab entry"). Needs ``ScronParameters=enable`` (slurm.conf(5)); install with ``scrontab FILE``."""
    return (
        "# fmconstructs scheduled NCCL all-reduce check\n"
        f"#SCRON {' '.join(spec.slurm_options())}\n"
        f"{spec.schedule} {spec.script_path}\n"
    )


def render_timer_units(spec: NcclCheckSpec, *, user: str = "root", sbatch: str = "/usr/bin/sbatch") -> dict[str, str]:
    """systemd units for the login node that submit the job with ``sbatch`` on ``spec.on_calendar`` (for clusters
    without scrontab, such as AWS PCS). ``user`` submits it (Slurm runs root's jobs unless DisableRootJobs=YES:
    slurm.conf(5)); ``sbatch`` is the command's path (PCS: :func:`~fmconstructs.health.pcs_slurm_bin_dir`)."""
    check_str("user", user, pattern=re.compile(r"[a-z_][a-z0-9_-]{0,31}"), allowed="a Linux user name")
    check_str("sbatch", sbatch, pattern=_ABS_PATH, allowed="an absolute path")
    script = shlex.quote(spec.script_path)
    return {
        "fm-nccl-check.service": "[Unit]\nDescription=fmconstructs: submit the NCCL all-reduce check\n\n"
        f"[Service]\nType=oneshot\nUser={user}\nExecStart={sbatch} {script}\n",
        "fm-nccl-check.timer": "[Unit]\nDescription=fmconstructs: NCCL all-reduce check on a schedule\n\n"
        f"[Timer]\nOnCalendar={spec.on_calendar}\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n",
    }


def probe_command(spec: NcclCheckSpec, *, squeue: str, output: str, report_path: str = REPORT_PATH) -> list[str]:
    """The Slurm queue probe (:func:`~fmconstructs.health.nccl_report.probe_queue`): is the check pending for nodes
    that other running jobs hold? Writes ``fm_nccl_check_deferred`` to ``output``."""
    command = [spec.python, "-I", report_path, "--probe-queue", "--squeue", squeue, "--job-name", JOB_NAME]
    if spec.partition is not None:
        command += ["--partition", spec.partition]
    return [*command, "--output", output]


def render_publish_units(
    spec: NcclCheckSpec, *, textfile_dir: str = TEXTFILE_DIR, squeue: str | None = None, report_path: str = REPORT_PATH
) -> dict[str, str]:
    """systemd units for the login node that copy the job's metrics file from the shared state directory into node
    exporter's textfile directory every minute (atomically: node exporter never reads a partial file). With
    ``squeue`` (the cluster's Slurm command), the same service runs the queue probe, which writes
    ``fm_nccl_queue.prom`` there (``NcclCheckStale`` stays quiet while the check is deferred); the report script
    must then be installed at ``report_path``."""
    check_str("textfile_dir", textfile_dir, pattern=_ABS_PATH, allowed="an absolute path")
    source = shlex.quote(spec.metrics_path)
    tmp = shlex.quote(f"{textfile_dir}/.{METRICS_FILE}.tmp")
    dest = shlex.quote(f"{textfile_dir}/{METRICS_FILE}")
    command = f"test ! -f {source} || (install -m 0644 {source} {tmp} && mv -f {tmp} {dest})"
    service = (
        "[Unit]\nDescription=fmconstructs: publish the NCCL check metrics\n\n"
        f"[Service]\nType=oneshot\nExecStart=/bin/sh -c {shlex.quote(command)}\n"
    )
    if squeue is not None:
        check_str("squeue", squeue, pattern=_ABS_PATH, allowed="an absolute path")
        check_str("report_path", report_path, pattern=_ABS_PATH, allowed="an absolute path")
        probe = probe_command(
            spec, squeue=squeue, output=f"{textfile_dir}/{NCCL_QUEUE_TEXTFILE}", report_path=report_path
        )
        # "-": a failed probe (slurmctld not answering yet) does not fail the unit; it writes probe_success 0.
        service += f"ExecStart=-{' '.join(probe)}\n"
    return {
        "fm-nccl-publish.service": service,
        "fm-nccl-publish.timer": "[Unit]\nDescription=fmconstructs: publish the NCCL check metrics every minute\n\n"
        "[Timer]\nOnBootSec=1min\nOnUnitActiveSec=1min\n\n[Install]\nWantedBy=timers.target\n",
    }
