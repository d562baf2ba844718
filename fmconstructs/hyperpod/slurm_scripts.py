"""Prolog and epilog pieces on HyperPod Slurm with the API-driven configuration (``SlurmConfiguration.API``).

The dcgm-exporter HPC job mapping and the application-metrics discovery (:mod:`fmconstructs.observability.
slurm_job_mapping`) are the same pieces as on PCS and ParallelCluster; this module says only where HyperPod's slurmd
finds them and how ``PrologFlags`` get ``Alloc``. Sources (awslabs/awsome-distributed-training, commit 0edaf15):

- 1.architectures/5.sagemaker-hyperpod/Extensions/observability/README.md, "GPU-to-job-ID mapping (DCGM + Slurm
  Prolog/Epilog)": with the AMI-based configuration (``OnInitComplete``) "the Prolog/Epilog scripts and the mapping
  directory are set up automatically"; the HyperPod AMI provides them "at ``/opt/slurm/etc/prolog.d/
  700_dcgm_job_map_register.sh``" and "``/opt/slurm/etc/epilog.d/700_dcgm_job_map_cleanup.sh``". So slurmd runs the
  files of ``/opt/slurm/etc/prolog.d`` and ``epilog.d`` (:data:`HYPERPOD_SLURM_SCRIPT_DIRS`); the exact ``Prolog=``
  value of the AMI's ``slurm.conf`` (a glob or a runner) is UNCONFIRMED, so the controller step logs it. The pieces
  are copied there on every GPU compute node by its own ``OnInitComplete`` set-up (``/opt/slurm/etc`` is the node's
  own: compute nodes run slurmd with ``--conf-server <controller>``, base-config/start_slurm.sh, i.e. configless,
  which fetches ``slurm.conf`` but not the prolog files).
- Extensions/observability/setup_observability.sh lines 276-286 (the NCCL ``TaskProlog``): on the controller, append
  the setting to ``/opt/slurm/etc/slurm.conf`` (after a newline, so it starts a line), ``systemctl
  restart slurmctld``, ``sleep 2``, ``scontrol reconfigure`` "to push the config to all compute nodes". The controller
  step (:func:`prolog_flags_commands`) does the same for ``PrologFlags`` (merged, never replaced: base-config's
  utils/pam_adopt_cgroup_wheel.sh sets ``PrologFlags=Contain`` the same way), and only when a flag is missing.
  Whether a later ``UpdateCluster`` that rewrites ``slurm.conf`` (``SlurmConfigStrategy``) keeps it is UNCONFIRMED.

The AMI's own job mapping writes ``/run/slurm/dcgm-job-mapping`` for the AMI's exporter; fmconstructs' pieces write
their own directory for fmconstructs' exporter (:data:`~fmconstructs.observability.job_mapping.
DEFAULT_JOB_MAPPING_DIR`), so neither depends on the other's file format.

No aws_cdk import.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from .._validate import check_str
from ..compute.slurm_scripts import SlurmScriptDirs, SlurmScriptPiece, merge_flags, slurm_script_files
from ..observability.app_metrics import AppMetricsSpec
from ..observability.job_mapping import JobMappingSpec
from ..observability.slurm_job_mapping import app_metrics_pieces, job_mapping_pieces

__all__ = [
    "HYPERPOD_APP_METRICS_NAME",
    "HYPERPOD_JOB_MAPPING_NAME",
    "HYPERPOD_SLURM_CONF",
    "HYPERPOD_SLURM_SCRIPT_DIRS",
    "PROLOG_FLAGS_STEP",
    "SLURM_SCRIPTS_STEP",
    "hyperpod_slurm_pieces",
    "hyperpod_slurm_script_files",
    "prolog_flags_commands",
]

#: The HyperPod AMI's prolog and epilog directories (Extensions/observability/README.md, see the module notes).
HYPERPOD_SLURM_SCRIPT_DIRS = SlurmScriptDirs(prolog_dir="/opt/slurm/etc/prolog.d", epilog_dir="/opt/slurm/etc/epilog.d")
#: The controller's slurm.conf (Extensions/observability/setup_observability.sh; base-config/lifecycle_script.py
#: ``SLURM_CONF`` default).
HYPERPOD_SLURM_CONF = "/opt/slurm/etc/slurm.conf"
#: The pieces' names (the AMI's own pieces are ``700_...``; the names run independently of them).
HYPERPOD_JOB_MAPPING_NAME = "20_fmconstructs_dcgm_job_mapping.sh"
HYPERPOD_APP_METRICS_NAME = "30_fmconstructs_app_metrics.sh"
#: Bootstrap steps: the pieces on GPU compute groups, the PrologFlags merge on the controller group.
SLURM_SCRIPTS_STEP = "slurm-scripts"
PROLOG_FLAGS_STEP = "slurm-prolog-flags"


def hyperpod_slurm_pieces(
    job_mapping: JobMappingSpec | None, app_metrics: AppMetricsSpec | None
) -> tuple[SlurmScriptPiece, ...]:
    """The job mapping's pieces and, with them, the application metrics' (none without a job mapping)."""
    if job_mapping is None:
        return ()
    return (
        *job_mapping_pieces(job_mapping, name=HYPERPOD_JOB_MAPPING_NAME),
        *app_metrics_pieces(app_metrics, name=HYPERPOD_APP_METRICS_NAME),
    )


def hyperpod_slurm_script_files(pieces: Sequence[SlurmScriptPiece]) -> dict[str, tuple[str, int]]:
    """``{path: (text, mode)}`` of ``pieces`` in the AMI's prolog.d/epilog.d (a bootstrap step's ``files``)."""
    return slurm_script_files(pieces, HYPERPOD_SLURM_SCRIPT_DIRS)


def prolog_flags_commands(
    flags: Sequence[str], *, slurm_conf: str = HYPERPOD_SLURM_CONF, scheduler_parameters: Sequence[str] = ()
) -> list[str]:
    """Controller lines that add ``flags`` to ``PrologFlags`` (and ``scheduler_parameters`` to
    ``SchedulerParameters``) in ``slurm_conf`` (kept: values already there, any spelling), then restart slurmctld and
    push the configuration (see the module notes). Nothing changes when every value is there; a missing
    ``slurm.conf`` or a failure is logged and the node set-up goes on."""
    wanted: dict[str, list[str]] = {"PrologFlags": merge_flags(flags).split(",")} if flags else {}
    if scheduler_parameters:
        wanted["SchedulerParameters"] = [_parameter(p) for p in scheduler_parameters]
    conf = shlex.quote(slurm_conf)
    merges = [f"  fm_merge_setting {name} {' '.join(values)} || return 1" for name, values in wanted.items()]
    return [
        "# --- fmconstructs: slurm.conf settings for the Slurm pieces (HyperPod controller) ---",
        "fm_merge_setting() {",
        # Adds the values missing from setting $1 (a comma-separated list); sets fm_changed when it wrote.
        "local name=$1 current merged flag",
        "shift",
        'current=$(sed -n "s/^${name}=//p" "$fm_conf" | tail -n 1)',
        'merged="$current"',
        'for flag in "$@"; do',
        '  if ! tr \',\' \'\\n\' <<<"$merged" | grep -qix "$flag"; then merged="${merged:+$merged,}$flag"; fi',
        "done",
        '[[ "$merged" != "$current" ]] || return 0',
        '[[ -f "$fm_conf.fmconstructs.bak" && "$fm_changed" -eq 1 ]] || cp -p "$fm_conf" "$fm_conf.fmconstructs.bak" ||'
        " return 1",
        'if grep -q "^${name}=" "$fm_conf"; then',
        '  sed -i "s/^${name}=.*/${name}=$merged/" "$fm_conf" || return 1',
        "else",
        '  [[ -z "$(tail -c 1 "$fm_conf")" ]] || echo >>"$fm_conf"',
        '  echo "${name}=$merged" >>"$fm_conf" || return 1',
        "fi",
        "fm_changed=1",
        'echo "fmconstructs: ${name}=$merged"',
        "}",
        "fm_prolog_flags() {",
        # errexit does not apply inside a function run as ``... || echo``, so every step that matters returns.
        f"fm_conf={conf} fm_changed=0",
        '[[ -f "$fm_conf" ]] || { echo "fmconstructs: $fm_conf not found; settings left as they are" >&2; return 0; }',
        "echo \"fmconstructs: slurm.conf $(grep -E '^(Prolog|Epilog)=' \"$fm_conf\" | tr '\\n' ' ' || true)\"",
        *merges,
        '[[ "$fm_changed" -eq 1 ]] || return 0',
        "systemctl restart slurmctld || return 1",
        "sleep 2",
        'scontrol reconfigure || echo "fmconstructs: scontrol reconfigure failed; compute nodes get the settings'
        ' when their slurmd restarts" >&2',
        "}",
        f'(fm_prolog_flags) || echo "fmconstructs: {" and ".join(wanted)} not updated or slurmctld not restarted;'
        ' until it is, a job maps its GPUs at its first step, not at allocation" >&2',
    ]


# SchedulerParameters values: Slurm's option names (letters, digits, '_') with an optional ``=value``.
_PARAMETER = re.compile(r"[A-Za-z][A-Za-z0-9_]*(=[A-Za-z0-9_.:-]+)?")


def _parameter(value: str) -> str:
    checked: str = check_str(
        "scheduler_parameters[]", value, pattern=_PARAMETER, allowed="a SchedulerParameters option (name[=value])"
    )
    return checked
