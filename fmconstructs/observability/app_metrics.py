"""A training job's own metrics on Slurm: the job declares its ports, the node's Prometheus agent finds them (issue 22,
section 3).

How a job declares its ports: a ``fm_metrics_ports=<ports>`` word in its ``--comment`` (or ``--extra``), e.g.
``sbatch --comment="fm_metrics_ports=9300-9307" train.sbatch`` for one port per local rank on an 8-GPU node. The Slurm
Prolog and Epilog Guide (https://slurm.schedmd.com/prolog_epilog.html, SchedMD/slurm doc/html/prolog_epilog.shtml,
"Last modified 6 February 2023") lists ``SLURM_JOB_COMMENT`` ("Comment added to the job. Available in Prolog,
PrologSlurmctld, Epilog and EpilogSlurmctld") and ``SLURM_JOB_EXTRA`` ("Extra field added to the job. Available in
Prolog, PrologSlurmctld, Epilog, EpilogSlurmctld, ..."); the job's own environment variables are not in the guide's
list for the Prolog, and the guide says Prolog and Epilog "should not call Slurm commands (e.g. squeue, scontrol, ...)",
so these two variables are the documented path.
``<ports>`` is a comma-separated list of ports or ranges (``9300``, ``9300-9307``, ``9300,9310``); the word is
separated from other comment text by whitespace or ``;``. Ports below 1024, the node's own collectors (9090 agent,
9100 node_exporter, 9400 dcgm-exporter) and more than :attr:`AppMetricsSpec.max_ports_per_job` distinct ports make
the declaration invalid: it is ignored as a whole (logged to syslog), never half-applied.

The prolog (slurmd ``Prolog``, run as root on each node of the job) writes ``<sd_dir>/<job id>.json`` in Prometheus's
file service discovery format (Prometheus configuration docs, ``<file_sd_config>``,
https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config: a JSON list of
``{"targets": ["<host>", ...], "labels": {"<labelname>": "<labelvalue>", ...}}``; "Changes to all defined files are
detected via disk watches and applied immediately"). The file is written to a temporary name that does not end in
``.json`` and renamed with ``mv``, so the agent never reads half a file. The epilog (slurmd ``Epilog``) removes it.
Both scripts set PATH (Slurm runs them without a search path, same guide) and always exit 0: a failing Prolog or
Epilog drains the node (same guide, "Failure Handling").

The node agent's ``fm-app`` scrape job (:func:`app_metrics_scrape_config`, added to
:func:`~fmconstructs.observability.collection.agent_config` on GPU nodes) reads ``<sd_dir>/*.json``. Prometheus
watches the parent directory ("to handle atomic renaming efficiently and to detect new files", same docs;
prometheus/prometheus discovery/file/file.go ``watchFiles`` only logs "Error adding file watch" when it is missing and
then falls back to the refresh interval), so the agent's systemd unit creates the directory before the agent starts
and the scripts never remove it.

Bounded cardinality: the only label a target carries from the job is ``hpc_job`` (the numeric Slurm job id, the label
dcgm-exporter puts on GPU series); the agent adds the node labels it puts on every job (cluster, queue, node_group,
instance_type, instance_id) and sets ``instance`` to ``<instance id>:<port>`` so two ranks of one node stay distinct.
No user, job name or free text from the comment becomes a label. A node has at most ``max_ports_per_job`` targets per
running job, every target is limited to :data:`APP_METRICS_SAMPLE_LIMIT` samples per scrape (``sample_limit``: the
scrape fails beyond it), and a finished job's targets disappear when the epilog removes its file.

This module has no ``aws_cdk`` import: the backends install :func:`app_metrics_slurm_files` next to the job-mapping
prolog/epilog; that wiring is not done here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from fmconstructs._validate import check_count, check_enum, check_sequence, check_str
from fmconstructs.compute.slurm_scripts import NODE_DIR, NODE_DIR_TEXT, slurm_piece_header, slurm_piece_script
from fmconstructs.errors import FmValidationError, is_token
from fmconstructs.observability.job_mapping import HPC_JOB_LABEL
from fmconstructs.observability.option_rules import epilog_dir_is_not_the_prolog_dir

#: The shared contract of issue 22 (the coordinator fixed the job name and the directory).
APP_METRICS_JOB_NAME = "fm-app"
DEFAULT_APP_METRICS_SD_DIR = "/var/run/fmconstructs/app-metrics-sd"
#: The word a job puts in its comment: ``fm_metrics_ports=9300-9307`` (a library choice).
DEFAULT_DECLARATION_KEY = "fm_metrics_ports"
#: The label every target carries: dcgm-exporter's HPC job label, so application and GPU series join on it.
APP_METRICS_JOB_LABEL = HPC_JOB_LABEL
#: Samples accepted per scrape of one target; more fails the scrape (Prometheus configuration docs, ``<scrape_config>``
#: ``sample_limit``: "If more than this number of samples are present after metric relabeling the entire scrape will
#: be treated as failed"). A library choice: a training job's step time, throughput, loss and checkpoint series (a few
#: histograms) need a few hundred.
APP_METRICS_SAMPLE_LIMIT = 2000
#: How often the agent re-reads the files besides the disk watch (Prometheus default 5m, same docs); a library choice.
APP_METRICS_REFRESH_INTERVAL = "1m"
#: Ports a job may not declare: the node's own collectors (collection.py: the agent's --web.listen-address
#: 127.0.0.1:9090, NODE_EXPORTER_PORT 9100, DCGM_EXPORTER_PORT 9400; tests check they agree).
RESERVED_PORTS = (9090, 9100, 9400)
#: Unprivileged ports only (a library choice: a training job runs as its user, who cannot bind below 1024).
MIN_APP_PORT = 1024
MAX_APP_PORT = 65535
#: The file name the scripts get in a prolog.d / epilog.d directory (after 10-node-checks, before 91-nvidia-imex).
SCRIPT_NAME = "30-fm-app-metrics.sh"

_DIR, _DIR_TEXT = NODE_DIR, NODE_DIR_TEXT
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_KEY_TEXT = "1-64 letters, digits or '_', not starting with a digit"


class DeclarationVariable(str, Enum):
    """Where the prolog and epilog read the job's declaration (Slurm Prolog and Epilog Guide, environment variables
    available in Prolog and Epilog)."""

    SLURM_JOB_COMMENT = "SLURM_JOB_COMMENT"  # sbatch/salloc/srun --comment
    SLURM_JOB_EXTRA = "SLURM_JOB_EXTRA"  # sbatch/salloc/srun --extra


def _check_variable(parameter: str, value: object) -> DeclarationVariable:
    return check_enum(parameter, value, DeclarationVariable)


def _check_synth_str(parameter: str, value: object, pattern: re.Pattern[str], allowed: str) -> str:
    checked: str = check_str(parameter, value, pattern=pattern, allowed=allowed, max_length=200)
    if is_token(checked):
        raise FmValidationError(parameter, checked, f"{allowed}, known at synth time")
    return checked


@dataclass(frozen=True, kw_only=True)
class AppMetricsSpec:
    """Where the discovery files live and how a job declares its metrics ports.

    ``sd_dir``: the directory the agent's ``fm-app`` job reads (default ``/var/run/fmconstructs/app-metrics-sd``;
    the agent configuration only reads the default). ``declaration_variables``: tried in order, the first one holding
    the declaration word wins (default comment, then extra). ``declaration_key``: the word's name (default
    ``fm_metrics_ports``). ``max_ports_per_job``: the most distinct ports one job may declare per node (default 8, one
    per GPU of a P5; 1-64).
    """

    sd_dir: str = DEFAULT_APP_METRICS_SD_DIR
    declaration_variables: tuple[DeclarationVariable, ...] = field(
        default=(DeclarationVariable.SLURM_JOB_COMMENT, DeclarationVariable.SLURM_JOB_EXTRA)
    )
    declaration_key: str = DEFAULT_DECLARATION_KEY
    max_ports_per_job: int = 8

    def __post_init__(self) -> None:
        _check_synth_str("sd_dir", self.sd_dir, _DIR, _DIR_TEXT)
        variables = check_sequence("declaration_variables", self.declaration_variables, _check_variable)
        if not variables or len(set(variables)) != len(variables):
            raise FmValidationError(
                "declaration_variables", self.declaration_variables, "a non-empty list without repeats"
            )
        object.__setattr__(self, "declaration_variables", variables)
        _check_synth_str("declaration_key", self.declaration_key, _KEY, _KEY_TEXT)
        check_count("max_ports_per_job", self.max_ports_per_job, minimum=1, maximum=64)
        if is_token(self.max_ports_per_job):
            raise FmValidationError("max_ports_per_job", self.max_ports_per_job, "a number known at synth time")


def _check_spec(spec: object) -> AppMetricsSpec:
    if not isinstance(spec, AppMetricsSpec):
        raise FmValidationError("spec", spec, "an AppMetricsSpec")
    return spec


def _header(spec: AppMetricsSpec, role: str) -> list[str]:
    return slurm_piece_header(
        what="training-job metrics discovery",
        module="fmconstructs.observability.app_metrics",
        role=role,
        tag="fm-app-metrics",
        variables=[f"sd_dir={shlex.quote(spec.sd_dir)}"],
    )


def _declaration_lines(spec: AppMetricsSpec) -> list[str]:
    """Set ``declared`` to the value of the first ``<key>=...`` word found in the declaration variables."""
    lines = [
        f"re='(^|[[:space:];]){spec.declaration_key}=([^[:space:];]*)'",
        "declared=''",
        "found=0",
    ]
    for variable in spec.declaration_variables:
        lines.append(
            f'if [ "$found" = 0 ] && [[ "${{{variable.value}:-}}" =~ $re ]]; then declared="${{BASH_REMATCH[2]}}"; '
            "found=1; fi"
        )
    return lines


def _parse_ports_function(spec: AppMetricsSpec) -> list[str]:
    """``parse_ports LIST``: fill ``ports`` with the distinct ports of LIST; status 1 (and ``why``) if LIST is bad."""
    limit = spec.max_ports_per_job
    reserved = " ".join(str(port) for port in RESERVED_PORTS)
    return [
        "parse_ports() {",
        "  local item lo hi p",
        f'  local reserved=" {reserved} "',
        "  local -a items",
        "  local -A seen=()",
        "  ports=()",
        "  IFS=',' read -r -a items <<<\"$1\"",
        '  [ "${#items[@]}" -gt 0 ] || { why="no port"; return 1; }',
        '  for item in "${items[@]}"; do',
        '    [[ "$item" =~ ^([0-9]{1,5})(-([0-9]{1,5}))?$ ]] || { why="\'$item\' is not a port or range"; return 1; }',
        "    lo=$((10#${BASH_REMATCH[1]}))",
        "    hi=$((10#${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}))",
        f'    if [ "$lo" -lt {MIN_APP_PORT} ] || [ "$hi" -gt {MAX_APP_PORT} ] || [ "$lo" -gt "$hi" ]; then',
        f"      why=\"'$item' is outside {MIN_APP_PORT}-{MAX_APP_PORT} or reversed\"",
        "      return 1",
        "    fi",
        f'    [ $((hi - lo)) -lt {limit} ] || {{ why="more than {limit} ports"; return 1; }}',
        "    for ((p = lo; p <= hi; p++)); do",
        '      case "$reserved" in *" $p "*) why="port $p is reserved for the node\'s collectors"; return 1 ;; esac',
        '      [ -z "${seen[$p]:-}" ] || continue',
        "      seen[$p]=1",
        '      ports+=("$p")',
        "    done",
        f'    [ "${{#ports[@]}}" -le {limit} ] || {{ why="more than {limit} ports"; return 1; }}',
        "  done",
        "}",
    ]


def render_app_metrics_prolog(spec: AppMetricsSpec) -> str:
    """Bash for slurmd's Prolog: write ``<sd_dir>/<SLURM_JOB_ID>.json`` when the job declares metrics ports."""
    _check_spec(spec)
    main = [
        *(f"  {line}" for line in _declaration_lines(spec)),
        '  [ "$found" = 1 ] || return 0',
        "  local -a ports",
        '  local why="" targets="" p file tmp',
        '  parse_ports "$declared" || { log "job $job_id: $why in \'$declared\'; metrics ports ignored"; return 0; }',
        '  for p in "${ports[@]}"; do targets="$targets${targets:+, }\\"127.0.0.1:$p\\""; done',
        '  mkdir -p -- "$sd_dir" || { log "cannot create $sd_dir"; return 0; }',
        '  file="$sd_dir/$job_id.json"',
        "  # Not *.json until complete: the agent reads every *.json in the directory.",
        '  tmp="$sd_dir/.$job_id.json.tmp.$$"',
        f'  if printf \'[{{"targets": [%s], "labels": {{"{APP_METRICS_JOB_LABEL}": "%s"}}}}]\\n\' '
        '"$targets" "$job_id" >"$tmp" && chmod 0644 "$tmp" && mv -f -- "$tmp" "$file"; then',
        "    :",
        "  else",
        '    rm -f -- "$tmp"',
        '    log "cannot write $file"',
        "  fi",
    ]
    prelude = [*_header(spec, "Prolog"), *_parse_ports_function(spec)]
    return slurm_piece_script(prelude, main, nothing="nothing discovered")


def render_app_metrics_epilog(spec: AppMetricsSpec) -> str:
    """Bash for slurmd's Epilog: remove the job's discovery file (and a temporary file a killed prolog left)."""
    _check_spec(spec)
    main = [
        '  [ -d "$sd_dir" ] || return 0',
        '  rm -f -- "$sd_dir/$job_id.json" "$sd_dir/.$job_id.json.tmp."* || log "cannot remove $sd_dir/$job_id.json"',
    ]
    return slurm_piece_script(_header(spec, "Epilog"), main, nothing="nothing removed")


def app_metrics_slurm_files(spec: AppMetricsSpec, *, prolog_dir: str, epilog_dir: str) -> dict[str, tuple[str, int]]:
    """The two scripts for a backend's prolog.d / epilog.d directories: ``{path: (text, mode)}``.

    E.g. PCS ``/opt/fmconstructs/slurm/prolog.d`` or ParallelCluster ``/opt/slurm/etc/scripts/prolog.d``; both are
    named :data:`SCRIPT_NAME`.
    """
    _check_spec(spec)
    prolog = _check_synth_str("prolog_dir", prolog_dir, _DIR, _DIR_TEXT)
    epilog = _check_synth_str("epilog_dir", epilog_dir, _DIR, _DIR_TEXT)
    epilog_dir_is_not_the_prolog_dir(prolog_dir=prolog, epilog_dir=epilog)
    return {
        f"{prolog}/{SCRIPT_NAME}": (render_app_metrics_prolog(spec), 0o755),
        f"{epilog}/{SCRIPT_NAME}": (render_app_metrics_epilog(spec), 0o755),
    }


def app_metrics_scrape_config(target_labels: Mapping[str, str], *, instance_id: str) -> dict[str, object]:
    """The agent's ``fm-app`` scrape job: file discovery over the default directory, the node labels set by
    relabelling (file-discovered targets carry only ``hpc_job``), ``instance`` = ``<instance_id>:<port>``."""
    relabel: list[dict[str, object]] = [
        {"target_label": name, "replacement": value} for name, value in target_labels.items() if name != "instance"
    ]
    relabel.append(
        {
            "source_labels": ["__address__"],
            "regex": r".*:([0-9]+)",
            "target_label": "instance",
            "replacement": f"{instance_id}:$1",
        }
    )
    return {
        "job_name": APP_METRICS_JOB_NAME,
        "sample_limit": APP_METRICS_SAMPLE_LIMIT,
        "file_sd_configs": [
            {"files": [f"{DEFAULT_APP_METRICS_SD_DIR}/*.json"], "refresh_interval": APP_METRICS_REFRESH_INTERVAL}
        ],
        "relabel_configs": relabel,
    }
