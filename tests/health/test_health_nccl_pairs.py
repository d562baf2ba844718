"""Per-node NCCL attribution: the pairwise run's schedule, the slowest-pair streaks, the job end to end with fake
scontrol/srun/mpirun, the metrics (promtool check metrics) and their validation."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.health import NcclCheckSpec, metric_names, nccl_report, render_mpijob_manifests, render_sbatch
from fmconstructs.health.nccl_report import PairRun, attribute_pairs, plan_pairs

from tests.conftest import require_tool
from tests.support.health_nccl import P5_SRUN, _degraded

HOSTS = ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
IDS = {h: f"i-0{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}{i}" for i, h in enumerate(HOSTS, start=1)}


def test_pairs_are_disjoint_and_every_node_meets_every_other_once_per_cycle() -> None:
    met = []
    for round_ in range(len(HOSTS) - 1):
        pairs = plan_pairs(HOSTS, round_)
        nodes = [n for p in pairs for n in p]
        assert sorted(nodes) == HOSTS  # disjoint, everyone plays
        met += pairs
    assert sorted(met) == sorted(itertools.combinations(HOSTS, 2))


def test_odd_node_count_leaves_one_out_and_tiny_lists_give_no_pairs() -> None:
    pairs = plan_pairs(["a", "b", "c", "d", "e"], 0)
    assert len(pairs) == 2 and len({n for p in pairs for n in p}) == 4
    assert plan_pairs(["a"], 0) == [] and plan_pairs([], 3) == []


def _run(pairs: list[tuple[str, str]], bad: str | None, busbw: float = 190.0) -> list[PairRun]:
    return [PairRun(a, b, 100.0 if bad in (a, b) else busbw) for a, b in pairs]


def test_a_node_in_the_slowest_pair_n_runs_in_a_row_is_suspect_and_its_partners_are_not() -> None:
    streaks: dict[str, int] = {}
    for round_ in range(3):
        result = attribute_pairs(_run(plan_pairs(HOSTS, round_), "gpu-3"), streaks, suspect_after=3, outlier_percent=10)
        streaks = result.streaks
    assert result.suspects == {"gpu-3"}
    assert streaks["gpu-3"] == 3 and max(v for k, v in streaks.items() if k != "gpu-3") == 1


def test_pairs_within_noise_implicate_nobody() -> None:
    pairs = [PairRun("a", "b", 190.0), PairRun("c", "d", 185.0)]
    result = attribute_pairs(pairs, {"a": 2, "c": 2}, suspect_after=3, outlier_percent=10)
    assert result.slowest is None and result.suspects == frozenset()
    assert result.streaks == {"a": 0, "b": 0, "c": 0, "d": 0}


def test_a_pair_without_result_is_the_slowest() -> None:
    pairs = [PairRun("a", "b", None), PairRun("c", "d", 185.0), PairRun("e", "f", 190.0)]
    result = attribute_pairs(pairs, {"a": 1}, suspect_after=2, outlier_percent=10)
    assert result.slowest == pairs[0] and result.suspects == {"a"}


def test_nodes_gone_from_the_run_are_forgotten() -> None:
    result = attribute_pairs(_run([("a", "b"), ("c", "d")], None), {"old": 5}, suspect_after=3, outlier_percent=10)
    assert "old" not in result.streaks


# --- the job end to end ---------------------------------------------------------------------------------------------


def _fakes(tmp_path: Path, bad: str) -> Path:
    """scontrol (the job's hosts), srun (each node's instance id) and mpirun (slow when the bad node takes part)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "good.txt").write_text(P5_SRUN)
    (tmp_path / "bad.txt").write_text(_degraded(P5_SRUN, "90.5"))
    ids = "\\n".join(f"{h} {i}" for h, i in IDS.items())
    fakes = {
        "scontrol": f'#!/bin/bash\nprintf "%s\\n" {" ".join(HOSTS)}\n',
        "srun": f'#!/bin/bash\nprintf "{ids}\\n"\n',
        "mpirun": f"""#!/bin/bash
case "$*" in
  *"--host "*{bad}:*) cat "{tmp_path}/bad.txt" ;;
  *) cat "{tmp_path}/good.txt" ;;
esac
""",
    }
    for name, body in fakes.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _job(tmp_path: Path, spec: NcclCheckSpec, job_id: str, bin_dir: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.sbatch"
    script.write_text(render_sbatch(spec))
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_NUM_NODES": "4",
        "SLURM_JOB_ID": job_id,
        "SLURM_JOB_NODELIST": "gpu-[1-4]",
        "HOME": str(tmp_path),
    }
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=60, check=False)


def test_the_pairwise_job_flags_the_node_in_the_slowest_pair_three_runs_in_a_row(tmp_path: Path) -> None:
    bin_dir = _fakes(tmp_path, bad="gpu-2")
    spec = NcclCheckSpec(
        nodes=4,
        pairwise=True,
        state_dir=str(tmp_path / "state"),
        mpirun=str(bin_dir / "mpirun"),
        python=sys.executable,
    )
    for run in range(3):
        proc = _job(tmp_path, spec, str(50 + run), bin_dir)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        metrics = Path(spec.metrics_path).read_text()
        suspect = f'{metric_names.NCCL_SUSPECT_NODE}{{node="gpu-2",suspect_instance_id="{IDS["gpu-2"]}"}}'
        assert f"{suspect} {1 if run == 2 else 0}\n" in metrics, metrics
    assert "suspect: gpu-2" in proc.stdout
    assert f'{metric_names.NCCL_SLOWEST_STREAK}{{node="gpu-2",suspect_instance_id="{IDS["gpu-2"]}"}} 3\n' in metrics
    assert f'{metric_names.NCCL_SUSPECT_NODE}{{node="gpu-1",suspect_instance_id="{IDS["gpu-1"]}"}} 0\n' in metrics
    pair_lines = [x for x in metrics.splitlines() if x.startswith(metric_names.NCCL_PAIR_BUSBW + "{")]
    assert len(pair_lines) == 2 and any(x.endswith(" 90.5") for x in pair_lines)
    # the all-node figure and its baseline are unchanged by the pairwise part
    assert f"{metric_names.NCCL_AVG_BUSBW} 193.452\n" in metrics
    promtool = require_tool("promtool", "prometheus")
    check = subprocess.run([promtool, "check", "metrics"], input=metrics, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_pairwise_sbatch_passes_shellcheck_and_runs_each_pair_on_its_two_hosts(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    text = render_sbatch(NcclCheckSpec(nodes=6, pairwise=True, suspect_after_runs=2, outlier_percent=15))
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert '-n $((2 * gpus_per_node)) -N 8 --host "${node_a}:${gpus_per_node},${node_b}:${gpus_per_node}"' in text
    assert "--suspect-after 2 --outlier-percent 15" in text
    assert '--pairs "$pairs_dir/manifest"' not in render_sbatch(NcclCheckSpec(nodes=6))  # off by default


def test_report_script_is_still_standalone_and_in_the_job() -> None:
    text = render_sbatch(NcclCheckSpec(nodes=4, pairwise=True))
    assert Path(nccl_report.__file__).read_text() in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 2, "pairwise": True}, r"nodes must be at least 4 with pairwise=True"),
        ({"nodes": 3, "pairwise": True}, r"nodes must be at least 4 with pairwise=True"),
        ({"suspect_after_runs": 0}, r"suspect_after_runs must be"),
        ({"suspect_after_runs": 2.5}, r"suspect_after_runs must be"),
        ({"outlier_percent": 100}, r"outlier_percent must be"),
        ({"outlier_percent": -1}, r"outlier_percent must be"),
        ({"pairwise": "yes"}, r"pairwise must be"),
    ],
)
def test_bad_pairwise_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(FmValidationError, match=message):
        NcclCheckSpec(**kwargs)  # type: ignore[arg-type]


def test_pairwise_is_refused_on_eks() -> None:
    with pytest.raises(FmValidationError, match=r"spec.pairwise must be False on EKS"):
        render_mpijob_manifests(
            NcclCheckSpec(nodes=4, pairwise=True),
            image="example.com/nccl-tests:v2.19.6",
            instance_type="p5.48xlarge",
            results_claim="fsx-claim",
        )
