"""Slurm GPU-to-job mapping for dcgm-exporter: every GPU series carries the Slurm job id (issue 22, section 1).

dcgm-exporter (pinned tag 4.2.3-4.1.1, :data:`~fmconstructs.observability.collection.DCGM_EXPORTER_IMAGE`) labels
GPU metrics with HPC jobs when it runs with ``--hpc-job-mapping-dir <dir>`` (or env ``DCGM_HPC_JOB_MAPPING_DIR``;
NVIDIA/dcgm-exporter@4.2.3-4.1.1 pkg/cmd/app.go:90,256-261, README.md:95-108). The directory holds one file per GPU,
named by the GPU id (a whole number; other names are skipped, internal/pkg/transformation/hpc.go:158-161), one job id
per line (hpc.go:120-127). Each series of a listed GPU is copied once per job with the label ``hpc_job="<job id>"``
(hpc.go:80-97, const.go:26). Two consequences the scripts here respect:

- an EMPTY file drops every series of that GPU (the GPU is in the map with zero jobs, hpc.go:72-97), so the epilog
  deletes a file when it removes the last job instead of leaving it empty;
- the exporter reads the files on every scrape, so a file is replaced by ``mv`` of a fully written temporary file
  whose name is not a number (never read half-written), all under one ``flock`` so jobs sharing a node never lose
  each other's lines.

The prolog (slurmd ``Prolog``, run as root on the compute node) appends ``SLURM_JOB_ID`` to the file of every GPU the
job got; the epilog (slurmd ``Epilog``) removes that id from every file, so it needs no GPU list. Both always exit 0:
a non-zero Prolog/Epilog drains the node (Slurm Prolog and Epilog Guide, "Failure Handling",
https://slurm.schedmd.com/prolog_epilog.html). Slurm runs them with no search path (same guide), so they set PATH.

GPU ids come from the first non-empty variable of :attr:`JobMappingSpec.gpu_id_variables`. The Prolog and Epilog
Guide lists ``SLURM_JOB_GPUS`` ("The GPU IDs of GPUs in the job allocation (if any). Available in the Prolog and
Epilog") and ``CUDA_VISIBLE_DEVICES`` (in the Prolog and Epilog it is the device number: "/dev/nvidia1" gives "1",
unlike the job's own value under cgroup device constraints). ``SLURM_STEP_GPUS`` is NOT in that list (it is a
step/task variable), so it is not offered.

Bounded cardinality: the only label added is ``hpc_job`` (the numeric job id); no user, account or job name label
is put on GPU series. A GPU carries one value per job running on it, so a node's GPU series count is at most
(GPUs x concurrent jobs per GPU) at any time, and finished jobs' series go stale when the epilog removes them. User,
account and partition are joined at query time from the scheduler's per-job metrics in recording rules.

This module has no ``aws_cdk`` import: the backends (PCS, ParallelCluster, HyperPod Slurm) install the scripts and
pass :func:`dcgm_exporter_job_mapping_args` to the exporter container; that wiring is not done here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from fmconstructs._validate import check_count, check_enum, check_sequence, check_str
from fmconstructs.compute.slurm_scripts import NODE_DIR, NODE_DIR_TEXT, slurm_piece_header, slurm_piece_script
from fmconstructs.errors import FmValidationError, is_token

#: No default in dcgm-exporter 4.2.3-4.1.1 (the flag's Value is "", pkg/cmd/app.go:258): this is the library's choice.
#: Under /var/run (tmpfs on systemd hosts), so mappings of jobs that died with the node vanish on reboot.
DEFAULT_JOB_MAPPING_DIR = "/var/run/fmconstructs/dcgm-job-mapping"
#: dcgm-exporter's flag and environment variable (NVIDIA/dcgm-exporter@4.2.3-4.1.1 pkg/cmd/app.go:90,256-261).
HPC_JOB_MAPPING_FLAG = "--hpc-job-mapping-dir"
HPC_JOB_MAPPING_ENV = "DCGM_HPC_JOB_MAPPING_DIR"
#: The label dcgm-exporter adds (internal/pkg/transformation/const.go:26).
HPC_JOB_LABEL = "hpc_job"

_DIR, _DIR_TEXT = NODE_DIR, NODE_DIR_TEXT


class GpuIdVariable(str, Enum):
    """Where the prolog reads the job's GPU ids (Slurm Prolog and Epilog Guide, environment variables)."""

    SLURM_JOB_GPUS = "SLURM_JOB_GPUS"
    CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def _check_variable(parameter: str, value: object) -> GpuIdVariable:
    return check_enum(parameter, value, GpuIdVariable)


@dataclass(frozen=True, kw_only=True)
class JobMappingSpec:
    """Where the GPU-to-job files live and how the prolog finds a job's GPUs.

    ``mapping_dir``: the directory dcgm-exporter watches (created by the prolog if missing). ``gpu_id_variables``:
    tried in order, the first non-empty one gives the comma-separated GPU ids (ids that are not whole numbers are
    skipped). ``lock_timeout_seconds``: how long a script waits for the node-wide lock before giving up (exit 0).
    """

    mapping_dir: str = DEFAULT_JOB_MAPPING_DIR
    gpu_id_variables: tuple[GpuIdVariable, ...] = field(
        default=(GpuIdVariable.SLURM_JOB_GPUS, GpuIdVariable.CUDA_VISIBLE_DEVICES)
    )
    lock_timeout_seconds: int = 30

    def __post_init__(self) -> None:
        check_str("mapping_dir", self.mapping_dir, pattern=_DIR, allowed=_DIR_TEXT, max_length=200)
        if is_token(self.mapping_dir):
            raise FmValidationError("mapping_dir", self.mapping_dir, f"{_DIR_TEXT}, known at synth time")
        variables = check_sequence("gpu_id_variables", self.gpu_id_variables, _check_variable)
        if not variables or len(set(variables)) != len(variables):
            raise FmValidationError("gpu_id_variables", self.gpu_id_variables, "a non-empty list without repeats")
        object.__setattr__(self, "gpu_id_variables", variables)
        check_count("lock_timeout_seconds", self.lock_timeout_seconds, minimum=1, maximum=600)
        if is_token(self.lock_timeout_seconds):
            raise FmValidationError("lock_timeout_seconds", self.lock_timeout_seconds, "a number known at synth time")

    @property
    def lock_file(self) -> str:
        """The node-wide lock, beside (not in) the mapping directory so the exporter never sees it."""
        return f"{self.mapping_dir}.lock"


@dataclass(frozen=True)
class DcgmExporterJobMappingArgs:
    """What the dcgm-exporter container needs: a bind mount, the flag (or the equivalent environment variable)."""

    docker_run_options: str
    exporter_arguments: str
    environment: Mapping[str, str]


def dcgm_exporter_job_mapping_args(spec: JobMappingSpec) -> DcgmExporterJobMappingArgs:
    """The exporter's options for ``spec``: the host directory mounted read-only at the same path in the container.

    The directory (not its files) is mounted, so files the prolog replaces by rename are seen; the scripts never
    remove the directory itself, which would detach the mount.
    """
    _check_spec(spec)
    quoted = shlex.quote(spec.mapping_dir)
    return DcgmExporterJobMappingArgs(
        docker_run_options=f"-v {quoted}:{quoted}:ro",
        exporter_arguments=f"{HPC_JOB_MAPPING_FLAG} {quoted}",
        environment=MappingProxyType({HPC_JOB_MAPPING_ENV: spec.mapping_dir}),
    )


def _check_spec(spec: object) -> JobMappingSpec:
    if not isinstance(spec, JobMappingSpec):
        raise FmValidationError("spec", spec, "a JobMappingSpec")
    return spec


def _header(spec: JobMappingSpec, role: str) -> list[str]:
    return [
        *slurm_piece_header(
            what="dcgm-exporter HPC job mapping",
            module="fmconstructs.observability.job_mapping",
            role=role,
            tag="fm-dcgm-job-mapping",
            variables=[f"map_dir={shlex.quote(spec.mapping_dir)}", f"lock_file={shlex.quote(spec.lock_file)}"],
        ),
        "take_lock() {",
        '  exec 9>>"$lock_file" || return 1',
        f"  flock -w {spec.lock_timeout_seconds} 9",
        "}",
    ]


def _gpu_ids_expression(spec: JobMappingSpec) -> str:
    expression = ""
    for variable in reversed(spec.gpu_id_variables):
        expression = f"${{{variable.value}:-{expression}}}"
    return f'"{expression}"'


def render_job_mapping_prolog(spec: JobMappingSpec) -> str:
    """Bash for slurmd's Prolog: append ``SLURM_JOB_ID`` to ``<mapping_dir>/<gpu id>`` for each of the job's GPUs."""
    _check_spec(spec)
    main = [
        '  [ -n "$gpus" ] || return 0',
        '  mkdir -p -- "$map_dir" || { log "cannot create $map_dir"; return 0; }',
        '  take_lock || { log "lock $lock_file not taken; job $job_id not mapped"; return 0; }',
        "  local -a ids",
        "  local gpu file tmp rc",
        "  IFS=',' read -r -a ids <<<\"$gpus\"",
        '  for gpu in "${ids[@]}"; do',
        '    case "$gpu" in ""|*[!0-9]*) log "GPU id \'$gpu\' is not a number; skipped"; continue ;; esac',
        '    file="$map_dir/$gpu"',
        '    tmp="$map_dir/.$gpu.tmp.$$"',
        "    # grep exits 1 when it selects no line (fine) and 2 on a read error (keep the file as it is).",
        "    rc=0",
        '    if [ -f "$file" ]; then grep -vxF -- "$job_id" "$file" >"$tmp" || rc=$?; else : >"$tmp" || rc=2; fi',
        '    if [ "$rc" -le 1 ] && printf \'%s\\n\' "$job_id" >>"$tmp" && mv -f -- "$tmp" "$file"; then',
        "      :",
        "    else",
        '      rm -f -- "$tmp"',
        '      log "cannot map job $job_id to GPU $gpu"',
        "    fi",
        "  done",
    ]
    prelude = [*_header(spec, "Prolog"), f"gpus={_gpu_ids_expression(spec)}"]
    return slurm_piece_script(prelude, main, nothing="nothing mapped")


def render_job_mapping_epilog(spec: JobMappingSpec) -> str:
    """Bash for slurmd's Epilog: remove ``SLURM_JOB_ID`` from every GPU file; delete files left with no job."""
    _check_spec(spec)
    main = [
        '  [ -d "$map_dir" ] || return 0',
        '  take_lock || { log "lock $lock_file not taken; job $job_id not unmapped"; return 0; }',
        "  local file name tmp rc",
        '  for file in "$map_dir"/*; do',
        '    [ -f "$file" ] || continue',
        '    name="${file##*/}"',
        '    case "$name" in *[!0-9]*) continue ;; esac',
        '    grep -qxF -- "$job_id" "$file" || continue',
        '    tmp="$map_dir/.$name.tmp.$$"',
        "    rc=0",
        '    grep -vxF -- "$job_id" "$file" >"$tmp" || rc=$?',
        '    if [ "$rc" -gt 1 ] || [ ! -f "$tmp" ]; then',
        '      rm -f -- "$tmp"',
        '      log "cannot rewrite $file; job $job_id left in it"',
        "      continue",
        "    fi",
        "    # An empty file would hide the GPU's series (dcgm-exporter hpc.go): remove it instead.",
        '    if [ -s "$tmp" ]; then',
        '      mv -f -- "$tmp" "$file" || { rm -f -- "$tmp"; log "cannot unmap job $job_id from $name"; }',
        "    else",
        '      rm -f -- "$tmp" "$file" || log "cannot remove $file"',
        "    fi",
        "  done",
    ]
    return slurm_piece_script(_header(spec, "Epilog"), main, nothing="nothing unmapped")
