"""The scheduled NCCL fabric check: nccl-tests output parsed into metrics, the first healthy run kept as the baseline,
the batch script shellchecked and run with a fake mpirun, the scrontab/timer/publish renderings, the EKS MPIJob and
the FmImages nccl-tests component."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.health import (
    NCCL_TESTS_COMMIT,
    NCCL_TESTS_VERSION,
    NcclCheckSpec,
    nccl_report,
    parse_output,
    render_mpijob_manifests,
    render_publish_units,
    render_sbatch,
    render_scrontab,
    render_timer_units,
)
from fmconstructs.images import nccl_tests_component

from tests.conftest import require_tool
from tests.support.health_nccl import EKS_TAGGED, P5_SRUN, _degraded, scaled

# --- parser -------------------------------------------------------------------------------------------------------------


def test_parser_reads_busbw_per_size_and_the_average_from_srun_labelled_output():
    result = parse_output(P5_SRUN)
    assert [s.size_bytes for s in result.sizes] == [8, 1048576, 1073741824, 8589934592, 17179869184]
    last = result.sizes[-1]
    assert (last.out_of_place_busbw, last.in_place_busbw) == (487.09, 487.26)
    assert result.avg_busbw == 193.452
    assert result.out_of_bounds == 0
    assert result.healthy and result.errors == ()


def test_parser_reads_mpirun_tagged_output():
    result = parse_output(EKS_TAGGED)
    assert [s.size_bytes for s in result.sizes] == [0, 1073741824, 2147483648]
    assert result.sizes[-1].in_place_busbw == 437.89
    assert result.avg_busbw == 52.9753 and result.healthy


def test_parser_keeps_one_copy_when_several_ranks_print_the_table():
    assert len(parse_output(P5_SRUN + P5_SRUN.replace("0: ", "1: ")).sizes) == 5


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no result rows"),
        ("srun: error: node1: task 3: Exited with exit code 1\n", "no result rows"),
        (P5_SRUN.replace("0: # Avg bus bandwidth    : 193.452\n", ""), "no 'Avg bus bandwidth' line"),
    ],
)
def test_incomplete_output_is_not_healthy(text, error):
    result = parse_output(text)
    assert not result.healthy
    assert error in result.errors


def test_wrong_values_and_out_of_bounds_values_are_not_healthy():
    wrong = P5_SRUN.replace("487.09      0", "487.09      3")
    assert parse_output(wrong).sizes[-1].wrong == 3
    assert not parse_output(wrong).healthy
    oob = P5_SRUN.replace("Out of bounds values : 0 OK", "Out of bounds values : 2 FAILED")
    assert not parse_output(oob).healthy
    assert not parse_output(_degraded(P5_SRUN, "0")).healthy


def test_unchecked_runs_print_na_in_the_wrong_column():
    result = parse_output(P5_SRUN.replace("      0    ", "    N/A    ").replace("      0\n", "    N/A\n"))
    assert result.healthy and len(result.sizes) == 5


# --- metrics and baseline -------------------------------------------------------------------------------------------------


def test_metrics_are_valid_exposition_with_the_documented_names():
    result = parse_output(P5_SRUN)
    policy = nccl_report.BaselinePolicy(floor=389.672)
    baseline = nccl_report.Baseline((nccl_report.WindowRun(480.0, 1700000000.0),), policy, admitted=True)
    schedule = nccl_report.Schedule(86400, 1800)
    text = nccl_report.render_metrics(result, baseline, 1800000000.0, schedule)
    assert 'fm_nccl_allreduce_busbw_gbytes_per_second{placement="in_place",size_bytes="17179869184"} 487.26' in text
    assert "fm_nccl_allreduce_avg_busbw_gbytes_per_second 193.452\n" in text
    assert "fm_nccl_allreduce_max_size_busbw_gbytes_per_second 487.09\n" in text
    assert "fm_nccl_allreduce_max_size_bytes 17179869184\n" in text
    assert "fm_nccl_allreduce_baseline_busbw_gbytes_per_second 480\n" in text
    assert "fm_nccl_allreduce_floor_busbw_gbytes_per_second 389.672\n" in text
    assert "fm_nccl_allreduce_drop_tolerance_ratio 0.1\n" in text
    assert "fm_nccl_baseline_window_runs 1\n" in text and "fm_nccl_baseline_window_max_runs 7\n" in text
    assert "fm_nccl_last_run_in_baseline 1\n" in text
    assert "fm_nccl_last_run_timestamp_seconds 1800000000\n" in text
    assert "fm_nccl_last_run_success 1\n" in text
    assert "fm_nccl_schedule_interval_seconds 86400\n" in text
    assert "fm_nccl_next_run_due_timestamp_seconds 1800088200\n" in text
    promtool = require_tool("promtool", "prometheus")
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_window_and_no_floor_no_baseline_series():
    empty = nccl_report.Baseline((), nccl_report.BaselinePolicy())
    text = nccl_report.render_metrics(parse_output(P5_SRUN), empty, 1.0)
    assert "fm_nccl_allreduce_baseline_busbw_gbytes_per_second" not in text
    assert "fm_nccl_allreduce_floor_busbw_gbytes_per_second" not in text
    assert "fm_nccl_next_run_due_timestamp_seconds" not in text  # no schedule given


def test_an_unhealthy_run_writes_no_max_size_busbw():
    text = nccl_report.render_metrics(
        parse_output(_degraded(P5_SRUN, "0")), nccl_report.Baseline((), nccl_report.BaselinePolicy()), 1.0
    )
    assert "fm_nccl_last_run_success 0" in text
    assert "fm_nccl_allreduce_max_size_busbw_gbytes_per_second" not in text


def test_a_corrupt_baseline_file_is_an_empty_window_replaced_by_the_next_healthy_run(tmp_path):
    (tmp_path / "b.json").write_text("{not json")
    (tmp_path / "run.log").write_text(P5_SRUN)
    nccl_report.report(tmp_path / "run.log", tmp_path / "b.json", tmp_path / "o.prom", now=5)
    assert json.loads((tmp_path / "b.json").read_text()) == {"runs": [{"busbw": 487.09, "timestamp": 5}], "version": 2}


# --- the batch script ---------------------------------------------------------------------------------------------------


def _spec(tmp_path: Path, **kwargs) -> NcclCheckSpec:
    return NcclCheckSpec(
        state_dir=str(tmp_path / "state"), mpirun=str(tmp_path / "bin" / "mpirun"), python=sys.executable, **kwargs
    )


def _fake_mpirun(tmp_path: Path, output: str, status: int = 0) -> None:
    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "sample.txt").write_text(output)
    fake = tmp_path / "bin" / "mpirun"
    fake.write_text(f'#!/bin/bash\nprintf "%s " "$@" >"{tmp_path}/args"\ncat "{tmp_path}/sample.txt"\nexit {status}\n')
    fake.chmod(0o755)


def _run_job(tmp_path: Path, spec: NcclCheckSpec, job_id: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.sbatch"
    script.write_text(render_sbatch(spec))
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": job_id, "HOME": str(tmp_path)}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=60)


def test_sbatch_passes_shellcheck(tmp_path):
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "job.sbatch"
    path.write_text(render_sbatch(NcclCheckSpec(partition="gpu", extra_env={"NCCL_BUFFSIZE": "8388608"})))
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_sbatch_header_and_launch_follow_the_spec():
    text = render_sbatch(NcclCheckSpec(nodes=4, partition="p5", max_bytes="8G", extra_env={"NCCL_DEBUG": "INFO"}))
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=8", "#SBATCH --exclusive", "#SBATCH --partition=p5"):
        assert line + "\n" in text
    assert "-x FI_PROVIDER=efa -x FI_EFA_FORK_SAFE=1" in text
    assert "-x NCCL_DEBUG=INFO" in text and "NCCL_DEBUG=WARN" not in text  # extra_env overrides the defaults
    assert "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -c 1 -n 100" in text


def test_the_job_publishes_metrics_and_keeps_the_baseline_window_then_compares_with_it(tmp_path):
    spec = _spec(tmp_path, instance_type="p5.48xlarge")
    Path(spec.state_dir).mkdir()
    _fake_mpirun(tmp_path, P5_SRUN)
    proc = _run_job(tmp_path, spec, "41")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "args").read_text().startswith("-n 16 -N 8 -x FI_PROVIDER=efa")
    baseline = Path(spec.state_dir) / "baseline-2x8-16G.json"
    assert [r["busbw"] for r in json.loads(baseline.read_text())["runs"]] == [487.09]
    assert (Path(spec.state_dir) / "logs" / "allreduce-41.log").read_text() == P5_SRUN
    _fake_mpirun(tmp_path, scaled(P5_SRUN, 0.85))
    proc = _run_job(tmp_path, spec, "42")
    assert proc.returncode == 0, proc.stderr
    metrics = Path(spec.metrics_path).read_text()
    assert "fm_nccl_allreduce_max_size_busbw_gbytes_per_second 414.03\n" in metrics
    assert "fm_nccl_allreduce_baseline_busbw_gbytes_per_second 487.09\n" in metrics
    # the floor: 0.8 of the catalog's 487.09 GB/s for 2 x p5.48xlarge at 16 GiB
    assert "fm_nccl_allreduce_floor_busbw_gbytes_per_second 389.672\n" in metrics
    assert "fm_nccl_last_run_in_baseline 0\n" in metrics  # 15% below: not admitted
    assert "fm_nccl_schedule_interval_seconds 86400\n" in metrics


def test_a_failed_test_fails_the_job_and_publishes_a_failed_run(tmp_path):
    spec = _spec(tmp_path)
    Path(spec.state_dir).mkdir()
    _fake_mpirun(tmp_path, "srun: error: task 3 exited\n", status=3)
    proc = _run_job(tmp_path, spec, "43")
    assert proc.returncode == 3
    assert "fm_nccl_last_run_success 0" in Path(spec.metrics_path).read_text()
    assert not list(Path(spec.state_dir).glob("baseline-*.json"))


def test_wrong_values_fail_the_job_even_when_mpirun_succeeds(tmp_path):
    spec = _spec(tmp_path)
    Path(spec.state_dir).mkdir()
    _fake_mpirun(tmp_path, P5_SRUN.replace("487.09      0", "487.09      7"))
    assert _run_job(tmp_path, spec, "44").returncode == 1


def test_scrontab_entry_carries_the_job_options_and_the_schedule():
    spec = NcclCheckSpec(schedule="30 2 * * 0", partition="gpu")
    lines = render_scrontab(spec).splitlines()
    assert lines[1] == "#SCRON " + " ".join(spec.slurm_options())
    assert "--nodes=2" in lines[1] and "--partition=gpu" in lines[1]
    assert lines[2] == "30 2 * * 0 /fsx/fmconstructs/nccl/fm-nccl-allreduce.sbatch"


def test_timer_units_submit_the_script_on_the_calendar():
    units = render_timer_units(NcclCheckSpec(on_calendar="Sun *-*-* 02:30:00"), user="slurmuser")
    assert "ExecStart=/usr/bin/sbatch /fsx/fmconstructs/nccl/fm-nccl-allreduce.sbatch" in units["fm-nccl-check.service"]
    assert "User=slurmuser" in units["fm-nccl-check.service"]
    assert "OnCalendar=Sun *-*-* 02:30:00" in units["fm-nccl-check.timer"]
    with pytest.raises(FmValidationError, match="user must be a Linux user name"):
        render_timer_units(NcclCheckSpec(), user="Root User")


def test_publish_unit_copies_the_metrics_into_the_textfile_directory(tmp_path):
    spec = NcclCheckSpec(state_dir=str(tmp_path / "state"))
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    service = render_publish_units(spec, textfile_dir=str(textfile))["fm-nccl-publish.service"]
    command = service.split("ExecStart=", 1)[1].strip()
    assert subprocess.run(["bash", "-c", command], capture_output=True).returncode == 0  # nothing to publish yet
    assert not (textfile / "fm_nccl.prom").exists()
    Path(spec.state_dir).mkdir()
    Path(spec.metrics_path).write_text("fm_nccl_last_run_success 1\n")
    assert subprocess.run(["bash", "-c", command], capture_output=True).returncode == 0
    assert (textfile / "fm_nccl.prom").read_text() == "fm_nccl_last_run_success 1\n"
    assert sorted(p.name for p in textfile.iterdir()) == ["fm_nccl.prom"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 1}, "nodes must be at least 2"),
        ({"nodes": 2.5}, "nodes must be a whole number"),
        ({"gpus_per_node": 0}, "gpus_per_node must be at least 1"),
        ({"max_bytes": "16GB"}, "max_bytes must be a size like"),
        ({"state_dir": "fsx/nccl"}, "state_dir must be an absolute path"),
        ({"state_dir": "/fsx/my dir"}, "state_dir must be an absolute path"),
        ({"schedule": "daily"}, "schedule must be a five-field cron schedule"),
        ({"schedule": "0 3 * *"}, "schedule must be a five-field cron schedule"),
        ({"partition": "gpu;rm"}, "partition must be a Slurm partition name"),
        ({"extra_env": {"nccl_debug": "INFO"}}, "extra_env key must be an environment variable name"),
        ({"extra_env": {"NCCL_X": "a'b"}}, "must be one line"),
        ({"time_limit_minutes": 0}, "time_limit_minutes must be at least 1"),
    ],
)
def test_spec_rejects_bad_input(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        NcclCheckSpec(**kwargs)


def test_spec_rejects_wrong_types():
    with pytest.raises(FmTypeError, match="nodes must be an integer"):
        NcclCheckSpec(nodes="2")  # type: ignore[arg-type]
    with pytest.raises(FmTypeError, match="extra_env must be a dict"):
        NcclCheckSpec(extra_env=["A=1"])  # type: ignore[arg-type]


def test_deploy_time_values_are_refused_because_they_are_written_into_the_script():
    from aws_cdk import Token

    with pytest.raises(FmValidationError, match="nodes must be a value known at synth time"):
        NcclCheckSpec(nodes=Token.as_number({"Ref": "Nodes"}))


# --- EKS ----------------------------------------------------------------------------------------------------------------

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:cuda13.1.2-efa1.50.0-testsv2.20.0"


def _manifests(**kwargs):
    args = {"image": IMAGE, "instance_type": "p5.48xlarge", "results_claim": "fsx-claim", **kwargs}
    return render_mpijob_manifests(NcclCheckSpec(nodes=kwargs.pop("nodes", 2)), **args)


def test_mpijob_asks_for_the_gpus_and_efa_interfaces_of_the_instance_type():
    config_map, job = _manifests()
    assert config_map["data"]["nccl_report.py"] == Path(nccl_report.__file__).read_text()
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    assert job["spec"]["slotsPerWorker"] == 8
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    resources = worker["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"] == resources["requests"]
    assert resources["limits"]["nvidia.com/gpu"] == 8
    assert resources["limits"]["vpc.amazonaws.com/efa"] == 32  # p5.48xlarge: 32 EFA interfaces
    assert worker["template"]["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    yaml.safe_dump(job)  # serializable as a manifest


def test_mpijob_launcher_runs_the_test_then_the_report_on_the_claim(tmp_path):
    job = _manifests()[1]
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    script = launcher["containers"][0]["command"][2]
    assert "mpirun --allow-run-as-root --tag-output -n 16 -N 8" in script
    assert "--baseline /results/baseline-2x8-16G.json --output /results/fm_nccl.prom" in script
    claims = [v["persistentVolumeClaim"]["claimName"] for v in launcher["volumes"] if "persistentVolumeClaim" in v]
    assert claims == ["fsx-claim"]
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "launcher.sh"
    path.write_text("#!/bin/bash\n" + script)
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image": "nccl-tests"}, "image must be a container image pinned"),
        ({"image": "public.ecr.aws/hpc-cloud/nccl-tests:latest"}, "other than 'latest'"),
        ({"results_claim": "FSx_Claim"}, "results_claim must be a Kubernetes DNS-1123 subdomain name"),
        ({"efa_per_node": 0}, "efa_per_node must be at least 1"),
        ({"instance_type": "p4d.24xlarge"}, "instance_type must be one of the catalog's types"),
    ],
)
def test_mpijob_rejects_bad_input(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        _manifests(**kwargs)


def test_mpijob_gpus_per_node_must_match_the_instance_type():
    with pytest.raises(FmValidationError, match=r"spec\.gpus_per_node must be 8, the GPUs of p5\.48xlarge"):
        render_mpijob_manifests(
            NcclCheckSpec(gpus_per_node=4), image=IMAGE, instance_type="p5.48xlarge", results_claim="c"
        )


# --- FmImages component -------------------------------------------------------------------------------------------------


def test_nccl_tests_are_pinned_by_tag_and_commit():
    component = nccl_tests_component()
    build = component.scripts()["build.Install"]
    assert f"tag={NCCL_TESTS_VERSION}\n" in build and f"commit={NCCL_TESTS_COMMIT}\n" in build
    assert 'git clone --quiet --depth 1 --branch "$tag" "$repository"' in build
    assert 'MPI=1 MPI_HOME="$mpi_home" CUDA_HOME="$cuda_home" NCCL_HOME="$nccl_home"' in build
    assert nccl_tests_component("v2.20.0", "0" * 40).version != component.version


def test_nccl_tests_check_passes_on_an_installed_build_and_fails_on_another_commit(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "cat", "grep"):
        (bin_dir / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    (bin_dir / "ldd").write_text("#!/bin/bash\necho 'libnccl.so.2 => /usr/local/cuda/lib/libnccl.so.2'\n")
    (bin_dir / "ldd").chmod(0o755)
    root = tmp_path / "root"
    binary = root / "opt/nccl-tests/build/all_reduce_perf"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    binary.chmod(0o755)
    (root / "opt/nccl-tests/FMCONSTRUCTS_COMMIT").write_text(NCCL_TESTS_COMMIT + "\n")
    env = {"PATH": str(bin_dir), "FMCONSTRUCTS_ROOT": str(root)}
    check = nccl_tests_component().scripts()["validate.Check"]
    proc = subprocess.run(["bash", "-c", check], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    (root / "opt/nccl-tests/FMCONSTRUCTS_COMMIT").write_text("0" * 40 + "\n")
    proc = subprocess.run(["bash", "-c", check], capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "nccl-tests is not v2.19.6" in proc.stderr
    (root / "opt/nccl-tests/FMCONSTRUCTS_COMMIT").write_text(NCCL_TESTS_COMMIT + "\n")
    (bin_dir / "ldd").write_text("#!/bin/bash\necho 'libnccl.so.2 => not found'\n")
    proc = subprocess.run(["bash", "-c", check], capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "cannot find its libraries" in proc.stderr


@pytest.mark.parametrize(
    ("args", "parameter"),
    [(("2.19.6", NCCL_TESTS_COMMIT), "nccl_tests_version"), (("v2.19.6", "a0b82b2"), "nccl_tests_commit")],
)
def test_nccl_tests_component_rejects_bad_pins(args, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        nccl_tests_component(*args)


def test_the_check_and_its_report_import_without_aws_cdk():
    code = (
        "import sys\n"
        "from fmconstructs.health import NcclCheckSpec, parse_output, render_mpijob_manifests, render_sbatch\n"
        "render_sbatch(NcclCheckSpec())\n"
        "assert 'aws_cdk' not in sys.modules, 'aws_cdk was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_scrontab_setting_is_allowed_by_parallelcluster_custom_slurm_settings():
    from fmconstructs.health import SCRONTAB_SLURM_SETTINGS
    from fmconstructs.pcs.slurm import ClusterSetting

    assert SCRONTAB_SLURM_SETTINGS == {"ScronParameters": "enable"}
    assert "ScronParameters" not in {s.value for s in ClusterSetting}  # PCS: use render_timer_units instead
    pcluster_python = Path(__file__).resolve().parents[2] / ".venv-pcluster" / "bin" / "python"
    if not pcluster_python.is_file():
        pytest.skip(".venv-pcluster (aws-parallelcluster) is missing; `make test` creates it")
    code = (
        "from pcluster.validators.slurm_settings_validator import SLURM_SETTINGS_DENY_LIST as d\n"
        "print(sorted(n for levels in d.values() for names in levels.values() for n in names))\n"
    )
    proc = subprocess.run([str(pcluster_python), "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "'prolog'" in proc.stdout  # the deny list was read
    assert "scronparameters" not in proc.stdout
