"""NcclCheckSpec's baseline options: the floor from the catalog's published figure (or the user's), the window, the
tolerance and the schedule interval, rendered the same for Slurm and EKS; and the queue probe that keeps
``NcclCheckStale`` quiet while a long job holds the nodes (the publish unit runs it on the login or head node)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs import FmValidationError
from fmconstructs.health import NcclCheckSpec, render_mpijob_manifests, render_publish_units, render_sbatch
from fmconstructs.health.nccl import probe_command

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:cuda13.1.2-efa1.50.0-testsv2.20.0"


@pytest.mark.parametrize(
    ("instance_type", "nodes", "max_bytes", "floor"),
    [
        ("p5.48xlarge", 2, "16G", 389.672),  # 0.8 x 487.09 (awsome-distributed-ai nccl-tests README)
        ("p6-b300.48xlarge", 2, "16G", 523.2),  # 0.8 x 654 (awsome-distributed-ai aws-pcs compute-test)
        ("p6-b200.48xlarge", 4, "16G", 301.6),  # 0.8 x 377 (the same page, 4 nodes)
        ("p6-b200.48xlarge", 2, "16G", None),  # published for 4 nodes only: busbw is not count-linear
        ("p5.48xlarge", 4, "16G", None),
        ("p5.48xlarge", 2, "8G", None),  # another largest size: another figure
        ("p5en.48xlarge", 2, "16G", None),  # no published figure
        ("p4d.24xlarge", 2, "16G", None),  # not in the catalog at all
        (None, 2, "16G", None),  # type unknown to the spec
    ],
)
def test_the_floor_is_a_fraction_of_the_published_figure_for_the_type_and_node_count(
    instance_type: str | None, nodes: int, max_bytes: str, floor: float | None
) -> None:
    spec = NcclCheckSpec(nodes=nodes, max_bytes=max_bytes, instance_type=instance_type)
    assert spec.floor_busbw() == floor
    arguments = spec.report_arguments()
    assert ("--floor-gbytes-per-second" in arguments) is (floor is not None)


def test_an_explicit_floor_wins_and_the_fraction_is_an_option() -> None:
    assert NcclCheckSpec(instance_type="p5.48xlarge", floor_busbw_gbytes_per_s=300).floor_busbw() == 300.0
    assert NcclCheckSpec(instance_type="p5.48xlarge", floor_fraction=0.9).floor_busbw() == 438.381
    assert NcclCheckSpec(nodes=3, floor_busbw_gbytes_per_s=250.5).floor_busbw() == 250.5  # no figure, a user floor


def test_the_report_arguments_carry_every_baseline_option() -> None:
    spec = NcclCheckSpec(
        instance_type="p5.48xlarge",
        baseline_runs=14,
        baseline_percentile=75,
        drop_percent=12.5,
        schedule="0 */6 * * *",
        time_limit_minutes=20,
    )
    assert spec.report_arguments() == [
        "--drop-percent",
        "12.5",
        "--window-runs",
        "14",
        "--window-percentile",
        "75",
        "--schedule-interval-seconds",
        "21600",
        "--time-limit-seconds",
        "1200",
        "--floor-gbytes-per-second",
        "389.672",
    ]


def test_slurm_and_eks_run_the_report_with_the_same_arguments() -> None:
    spec = NcclCheckSpec(nodes=2, schedule="30 2 * * 0")
    eks = render_mpijob_manifests(spec, image=IMAGE, instance_type="p5.48xlarge", results_claim="fsx-claim")[1]
    launcher = eks["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"][2]
    expected = " ".join(spec.report_arguments("p5.48xlarge"))
    assert "--floor-gbytes-per-second 389.672" in expected and "--schedule-interval-seconds 604800" in expected
    assert expected in launcher  # EKS: the workers' instance type gives the floor
    slurm = render_sbatch(NcclCheckSpec(nodes=2, schedule="30 2 * * 0", instance_type="p5.48xlarge"))
    assert expected in slurm
    assert eks["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"  # a waiting check, not a failed one


def test_eks_refuses_a_spec_for_another_instance_type() -> None:
    spec = NcclCheckSpec(nodes=2, instance_type="p5e.48xlarge")
    with pytest.raises(FmValidationError, match=r"spec.instance_type must be None or the workers' instance_type"):
        render_mpijob_manifests(spec, image=IMAGE, instance_type="p5.48xlarge", results_claim="fsx-claim")


@pytest.mark.parametrize(
    ("schedule", "hours", "interval"),
    [("0 3 * * *", None, 86400), ("30 2 * * 0", None, 604800), ("0 */6 * * *", None, 21600), ("0 3 * * *", 12, 43200)],
)
def test_the_schedule_interval_comes_from_the_schedule_unless_given(
    schedule: str, hours: float | None, interval: int
) -> None:
    assert NcclCheckSpec(schedule=schedule, schedule_interval_hours=hours).schedule_interval_seconds == interval


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"floor_fraction": 0}, "floor_fraction must be greater than 0"),
        ({"floor_fraction": 1.5}, "floor_fraction must be at most 1"),
        ({"floor_busbw_gbytes_per_s": 0}, "floor_busbw_gbytes_per_s must be greater than 0"),
        ({"floor_busbw_gbytes_per_s": -10}, "floor_busbw_gbytes_per_s must be greater than 0"),
        ({"floor_busbw_gbytes_per_s": float("nan")}, "floor_busbw_gbytes_per_s must be a finite"),
        ({"baseline_runs": 0}, "baseline_runs must be at least 1"),
        ({"baseline_runs": 1001}, "baseline_runs must be at most 1000"),
        ({"baseline_percentile": -1}, "baseline_percentile must be at least 0"),
        ({"baseline_percentile": 101}, "baseline_percentile must be at most 100"),
        ({"drop_percent": 0}, "drop_percent must be greater than 0"),
        ({"drop_percent": 100}, "drop_percent must be at most 99"),
        ({"schedule_interval_hours": 0}, "schedule_interval_hours must be greater than 0"),
        ({"instance_type": "p5.48xlage"}, "instance_type must be an EC2 instance type spelled exactly"),
        ({"schedule": "0 0 31 2 *"}, "schedule must be a cron expression that runs"),
        ({"schedule": "61 * * * *"}, "schedule must be a five-field cron schedule .* minute field '61' is outside 0-59"),
    ],
)
def test_bad_baseline_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(FmValidationError, match=message):
        NcclCheckSpec(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["floor_fraction", "floor_busbw_gbytes_per_s", "baseline_runs", "drop_percent"])
def test_deploy_time_baseline_options_are_refused(name: str) -> None:
    from aws_cdk import Token

    with pytest.raises(FmValidationError, match=f"{name} must be a value known at synth time"):
        NcclCheckSpec(**{name: Token.as_number({"Ref": "X"})})  # type: ignore[arg-type]


# --- the Slurm queue probe -------------------------------------------------------------------------------------------


def _fake_squeue(tmp_path: Path, lines: list[str], status: int = 0) -> Path:
    squeue = tmp_path / "squeue"
    (tmp_path / "squeue.out").write_text("".join(line + "\n" for line in lines))
    squeue.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >"{tmp_path}/squeue.args"\ncat "{tmp_path}/squeue.out"\nexit {status}\n'
    )
    squeue.chmod(0o755)
    return squeue


def _probe(tmp_path: Path, lines: list[str], status: int = 0, partition: str | None = "gpu") -> tuple[int, str]:
    squeue = _fake_squeue(tmp_path, lines, status)
    report = tmp_path / "nccl_report.py"
    report.write_text(Path(__file__).parents[2].joinpath("fmconstructs/health/nccl_report.py").read_text())
    spec = NcclCheckSpec(partition=partition, python=sys.executable)
    output = tmp_path / "fm_nccl_queue.prom"
    command = probe_command(spec, squeue=str(squeue), output=str(output), report_path=str(report))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    return proc.returncode, output.read_text()


@pytest.mark.parametrize(
    ("lines", "deferred"),
    [
        # a long job runs, the check waits for its nodes: deferred
        (["train-llama|RUNNING|None", "fm-nccl-allreduce|PENDING|Resources"], True),
        (["train-llama|RUNNING|None", "other|PENDING|Priority", "fm-nccl-allreduce|PENDING|Priority"], True),
        # scrontab between runs: the check waits for its begin time, not for nodes
        (["train-llama|RUNNING|None", "fm-nccl-allreduce|PENDING|BeginTime"], False),
        # pending for Resources with nothing running: the nodes are down or drained, not held
        (["fm-nccl-allreduce|PENDING|Resources"], False),
        # the check itself runs (perhaps late, after waiting past its due time): in progress, its report comes within
        # its time limit (the twin saw NcclCheckStale fire during such a run before this counted)
        (["fm-nccl-allreduce|RUNNING|None", "train|PENDING|Resources"], True),
        (["fm-nccl-allreduce|COMPLETING|None"], True),
        ([], False),
    ],
)
def test_the_probe_says_deferred_only_while_other_jobs_hold_the_nodes(
    tmp_path: Path, lines: list[str], deferred: bool
) -> None:
    status, text = _probe(tmp_path, lines)
    assert status == 0
    assert f"fm_nccl_check_deferred {int(deferred)}\n" in text and "fm_nccl_queue_probe_success 1\n" in text
    assert (tmp_path / "squeue.args").read_text().split() == ["-h", "-o", "%j|%T|%r", "-p", "gpu"]


def test_a_failing_squeue_is_a_failed_probe_never_deferred(tmp_path: Path) -> None:
    status, text = _probe(tmp_path, ["train|RUNNING|None", "fm-nccl-allreduce|PENDING|Resources"], status=1)
    assert status == 1
    assert "fm_nccl_check_deferred 0\n" in text and "fm_nccl_queue_probe_success 0\n" in text


def test_without_a_partition_the_probe_asks_every_partition(tmp_path: Path) -> None:
    _probe(tmp_path, [], partition=None)
    assert (tmp_path / "squeue.args").read_text().split() == ["-h", "-o", "%j|%T|%r"]


def test_the_publish_unit_runs_the_probe_into_the_textfile_directory(tmp_path: Path) -> None:
    squeue = _fake_squeue(tmp_path, ["train|RUNNING|None", "fm-nccl-allreduce|PENDING|Resources"])
    report = tmp_path / "nccl_report.py"
    report.write_text(Path(__file__).parents[2].joinpath("fmconstructs/health/nccl_report.py").read_text())
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    spec = NcclCheckSpec(state_dir=str(tmp_path / "state"), python=sys.executable, partition="gpu")
    service = render_publish_units(spec, textfile_dir=str(textfile), squeue=str(squeue), report_path=str(report))[
        "fm-nccl-publish.service"
    ]
    commands = [line.split("=", 1)[1] for line in service.splitlines() if line.startswith("ExecStart=")]
    assert len(commands) == 2 and commands[1].startswith("-")  # a failed probe does not fail the unit
    assert subprocess.run(commands[1][1:].split(), capture_output=True, timeout=60).returncode == 0
    assert "fm_nccl_check_deferred 1\n" in (textfile / "fm_nccl_queue.prom").read_text()
    # without squeue: publishing only, as before
    assert "--probe-queue" not in render_publish_units(spec, textfile_dir=str(textfile))["fm-nccl-publish.service"]


@pytest.mark.parametrize(("kwargs", "message"), [({"squeue": "squeue"}, "squeue must be an absolute path")])
def test_the_publish_unit_refuses_a_relative_squeue(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(FmValidationError, match=message):
        render_publish_units(NcclCheckSpec(), **kwargs)
