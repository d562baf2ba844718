"""dcgm-exporter HPC job mapping for Slurm: prolog/epilog scripts (shellchecked, run in a sandbox with the variables
slurmd sets) and the exporter's flag, environment variable and bind mount."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from fmconstructs import FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.observability import job_mapping
from fmconstructs.observability.job_mapping import (
    DEFAULT_JOB_MAPPING_DIR,
    GpuIdVariable,
    JobMappingSpec,
    dcgm_exporter_job_mapping_args,
    render_job_mapping_epilog,
    render_job_mapping_prolog,
)

from tests.conftest import require_tool

# --- sandbox ---------------------------------------------------------------------------------------------------------


def _run(script: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.sh"
    path.write_text(script)
    # Like slurmd: a minimal environment, the job's variables only (the script sets its own PATH).
    return subprocess.run(["/bin/bash", str(path)], env=env, capture_output=True, text=True, check=False, timeout=60)


def _files(directory: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted(directory.iterdir())}


@pytest.fixture
def spec(tmp_path: Path) -> JobMappingSpec:
    return JobMappingSpec(mapping_dir=str(tmp_path / "run" / "dcgm-job-mapping"))


def test_prolog_creates_missing_dir_and_writes_one_file_per_gpu(spec: JobMappingSpec, tmp_path: Path) -> None:
    result = _run(render_job_mapping_prolog(spec), tmp_path, {"SLURM_JOB_ID": "101", "SLURM_JOB_GPUS": "0,1,2,3"})
    assert result.returncode == 0, result.stderr
    assert _files(Path(spec.mapping_dir)) == {"0": ["101"], "1": ["101"], "2": ["101"], "3": ["101"]}
    assert Path(spec.lock_file).exists()


def test_two_jobs_share_a_gpu_and_epilog_removes_only_its_own_id(spec: JobMappingSpec, tmp_path: Path) -> None:
    prolog, epilog = render_job_mapping_prolog(spec), render_job_mapping_epilog(spec)
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "101", "SLURM_JOB_GPUS": "0,1"}).returncode == 0
    assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "202", "SLURM_JOB_GPUS": "1,2"}).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {"0": ["101"], "1": ["101", "202"], "2": ["202"]}
    # slurmd's Epilog environment: the job id (GPU variables are not needed by the epilog).
    result = _run(epilog, tmp_path, {"SLURM_JOB_ID": "101"})
    assert result.returncode == 0, result.stderr
    # GPU 0's file is deleted, not left empty (an empty file hides the GPU's series in dcgm-exporter).
    assert _files(Path(spec.mapping_dir)) == {"1": ["202"], "2": ["202"]}
    assert _run(epilog, tmp_path, {"SLURM_JOB_ID": "202"}).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {}
    assert Path(spec.mapping_dir).is_dir()  # never removed: the exporter's bind mount stays attached


def test_prolog_is_idempotent_for_a_requeued_or_repeated_job(spec: JobMappingSpec, tmp_path: Path) -> None:
    prolog = render_job_mapping_prolog(spec)
    for _ in range(2):
        assert _run(prolog, tmp_path, {"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "5"}).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {"5": ["7"]}


def test_epilog_does_not_match_a_job_id_that_is_a_prefix(spec: JobMappingSpec, tmp_path: Path) -> None:
    assert (
        _run(render_job_mapping_prolog(spec), tmp_path, {"SLURM_JOB_ID": "1000", "SLURM_JOB_GPUS": "0"}).returncode == 0
    )
    assert _run(render_job_mapping_epilog(spec), tmp_path, {"SLURM_JOB_ID": "100"}).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {"0": ["1000"]}


def test_job_with_no_gpus_writes_nothing(spec: JobMappingSpec, tmp_path: Path) -> None:
    result = _run(render_job_mapping_prolog(spec), tmp_path, {"SLURM_JOB_ID": "303"})
    assert result.returncode == 0
    assert not Path(spec.mapping_dir).exists()
    assert _run(render_job_mapping_epilog(spec), tmp_path, {"SLURM_JOB_ID": "303"}).returncode == 0


def test_cuda_visible_devices_is_the_fallback(spec: JobMappingSpec, tmp_path: Path) -> None:
    env = {"SLURM_JOB_ID": "9", "CUDA_VISIBLE_DEVICES": "6,7"}
    assert _run(render_job_mapping_prolog(spec), tmp_path, env).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {"6": ["9"], "7": ["9"]}


def test_variable_order_is_respected(tmp_path: Path) -> None:
    spec = JobMappingSpec(
        mapping_dir=str(tmp_path / "m"),
        gpu_id_variables=(GpuIdVariable.CUDA_VISIBLE_DEVICES, GpuIdVariable.SLURM_JOB_GPUS),
    )
    env = {"SLURM_JOB_ID": "9", "CUDA_VISIBLE_DEVICES": "1", "SLURM_JOB_GPUS": "4"}
    assert _run(render_job_mapping_prolog(spec), tmp_path, env).returncode == 0
    assert _files(Path(spec.mapping_dir)) == {"1": ["9"]}


@pytest.mark.parametrize(
    "env",
    [
        {"SLURM_JOB_GPUS": "0"},  # no job id
        {"SLURM_JOB_ID": "12; rm -rf /", "SLURM_JOB_GPUS": "0"},
        {"SLURM_JOB_ID": "12", "SLURM_JOB_GPUS": "GPU-8c1e,../x"},  # not indices: skipped
    ],
)
def test_bad_environment_maps_nothing_and_exits_zero(spec: JobMappingSpec, tmp_path: Path, env: dict[str, str]) -> None:
    result = _run(render_job_mapping_prolog(spec), tmp_path, env)
    assert result.returncode == 0
    directory = Path(spec.mapping_dir)
    assert not directory.exists() or _files(directory) == {}
    assert not (tmp_path / "run" / "x").exists()


def test_failures_never_exit_nonzero(tmp_path: Path) -> None:
    # The parent of the mapping directory is a file: mkdir fails, the prolog still exits 0 (no drained node).
    (tmp_path / "blocker").write_text("")
    spec = JobMappingSpec(mapping_dir=str(tmp_path / "blocker" / "map"))
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_GPUS": "0"}
    assert _run(render_job_mapping_prolog(spec), tmp_path, env).returncode == 0
    assert _run(render_job_mapping_epilog(spec), tmp_path, env).returncode == 0


def test_prolog_waits_for_the_node_lock_then_gives_up_with_exit_zero(tmp_path: Path) -> None:
    spec = JobMappingSpec(mapping_dir=str(tmp_path / "m"), lock_timeout_seconds=1)
    flock = require_tool("flock", "util-linux")
    holder = subprocess.Popen([flock, spec.lock_file, "sleep", "5"])  # another job's prolog holding the lock
    try:
        for _ in range(100):
            if Path(spec.lock_file).exists():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        result = _run(render_job_mapping_prolog(spec), tmp_path, {"SLURM_JOB_ID": "5", "SLURM_JOB_GPUS": "0"})
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0
    assert _files(Path(spec.mapping_dir)) == {}


def test_concurrent_prologs_lose_no_line(spec: JobMappingSpec, tmp_path: Path) -> None:
    path = tmp_path / "prolog.sh"
    path.write_text(render_job_mapping_prolog(spec))
    procs = [
        subprocess.Popen(["/bin/bash", str(path)], env={"SLURM_JOB_ID": str(job), "SLURM_JOB_GPUS": "0"})
        for job in range(1, 9)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    assert sorted(_files(Path(spec.mapping_dir))["0"], key=int) == [str(j) for j in range(1, 9)]


@pytest.mark.parametrize("render", [render_job_mapping_prolog, render_job_mapping_epilog])
def test_scripts_pass_shellcheck(render: object, tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "s.sh"
    assert callable(render)
    script.write_text(render(JobMappingSpec()))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


# --- exporter arguments ----------------------------------------------------------------------------------------------


def test_exporter_args_default_dir() -> None:
    args = dcgm_exporter_job_mapping_args(JobMappingSpec())
    assert DEFAULT_JOB_MAPPING_DIR == "/var/run/fmconstructs/dcgm-job-mapping"
    assert args.exporter_arguments == "--hpc-job-mapping-dir /var/run/fmconstructs/dcgm-job-mapping"
    assert dict(args.environment) == {"DCGM_HPC_JOB_MAPPING_DIR": "/var/run/fmconstructs/dcgm-job-mapping"}
    assert args.docker_run_options == (
        "-v /var/run/fmconstructs/dcgm-job-mapping:/var/run/fmconstructs/dcgm-job-mapping:ro"
    )


def test_exporter_args_custom_dir_and_scripts_use_it() -> None:
    spec = JobMappingSpec(mapping_dir="/run/slurm/gpu-jobs")
    assert dcgm_exporter_job_mapping_args(spec).exporter_arguments == "--hpc-job-mapping-dir /run/slurm/gpu-jobs"
    assert "map_dir=/run/slurm/gpu-jobs\n" in render_job_mapping_prolog(spec)
    assert "lock_file=/run/slurm/gpu-jobs.lock\n" in render_job_mapping_epilog(spec)


# --- validation ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mapping_dir",
    ["relative/dir", "/", "/var/run/", "/var/../etc", "/var/run/a b", "/var/run/$(id)", "/var/run/'x'", ""],
)
def test_bad_mapping_dir(mapping_dir: str) -> None:
    with pytest.raises(FmValidationError, match="mapping_dir must be an absolute directory path"):
        JobMappingSpec(mapping_dir=mapping_dir)


def test_token_mapping_dir_is_refused() -> None:
    with pytest.raises(FmValidationError, match="known at synth time"):
        JobMappingSpec(mapping_dir="${Token[TOKEN.123]}")


@pytest.mark.parametrize(
    ("variables", "error"),
    [
        ((), FmValidationError),
        ((GpuIdVariable.SLURM_JOB_GPUS, GpuIdVariable.SLURM_JOB_GPUS), FmValidationError),
        (("SLURM_STEP_GPUS",), FmTypeError),
        ("SLURM_JOB_GPUS", FmTypeError),
    ],
)
def test_bad_gpu_id_variables(variables: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="gpu_id_variables"):
        JobMappingSpec(gpu_id_variables=variables)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, 601, 1.5, "30"])
def test_bad_lock_timeout(timeout: object) -> None:
    with pytest.raises((FmValidationError, FmTypeError), match="lock_timeout_seconds"):
        JobMappingSpec(lock_timeout_seconds=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("func", [render_job_mapping_prolog, render_job_mapping_epilog, dcgm_exporter_job_mapping_args])
def test_functions_refuse_a_non_spec(func: object) -> None:
    assert callable(func)
    with pytest.raises(FmValidationError, match="spec must be a JobMappingSpec"):
        func("/var/run/x")


def test_module_does_not_import_aws_cdk() -> None:
    tree = ast.parse(Path(job_mapping.__file__).read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(name.startswith("aws_cdk") for name in imported)
    assert os.path.basename(job_mapping.__file__) == "job_mapping.py"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file")
def test_unreadable_file_is_left_alone(spec: JobMappingSpec, tmp_path: Path) -> None:
    env = {"SLURM_JOB_ID": "11", "SLURM_JOB_GPUS": "0"}
    assert _run(render_job_mapping_prolog(spec), tmp_path, env).returncode == 0
    mapped = Path(spec.mapping_dir) / "0"
    mapped.write_text("11\n22\n")
    mapped.chmod(0)
    try:
        assert _run(render_job_mapping_epilog(spec), tmp_path, env).returncode == 0
        assert (
            _run(render_job_mapping_prolog(spec), tmp_path, {"SLURM_JOB_ID": "33", "SLURM_JOB_GPUS": "0"}).returncode
            == 0
        )
        assert mapped.exists()
        assert [p.name for p in Path(spec.mapping_dir).iterdir()] == ["0"]  # no temporary file left behind
    finally:
        mapped.chmod(0o644)
    assert mapped.read_text() == "11\n22\n"
