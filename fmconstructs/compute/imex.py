"""The NVIDIA IMEX Slurm prolog for EC2 UltraServers: one renderer for every backend that runs Slurm.

GPU-to-GPU traffic over NVLink across the instances of an UltraServer needs the NVIDIA IMEX service configured with
the addresses of the job's nodes. Two AWS guides do this with the same Slurm prolog, ``91_nvidia_imex_prolog.sh``,
run with ``PrologFlags=Alloc,NoHold``:

- AWS PCS User Guide "Configure UltraServer instances" (capacity-blocks-nvidia-imex), used by
  :mod:`fmconstructs.pcs.user_data`;
- ParallelCluster User Guide "Support NVIDIA-Imex with p6e-gb200 instance" (support-nvidia-imex-p6e-gb200-instance),
  used by :mod:`fmconstructs.parallelcluster.imex`.

:func:`render_imex_prolog` renders the procedure both guides share, in their order:

1. only exclusive jobs (``SLURM_JOB_OVERSUBSCRIBE`` is ``NO`` or ``TOPO``): restarting IMEX would break other jobs
   on the same nodes;
2. only the guide's instance types (instance type from IMDSv2);
3. only when ``nvidia-imex`` is enabled;
4. creates the default IMEX channel ``/dev/nvidia-caps-imex-channels/channel0`` (major number from
   ``/proc/devices``; NVIDIA IMEX guide "IMEX Channels": channels are not created by default and do not survive a
   reboot);
5. collects the private addresses of the job's nodes (``scontrol -ao show node``, ``NodeAddr``) and writes them to
   ``/etc/nvidia-imex/nodes_config.cfg``;
6. restarts ``nvidia-imex`` (stop with a 15 s timeout, kill leftovers, start with a 60 s timeout).

What differs between the two guides is a field of :class:`ImexPrologSpec`, set by each backend next to its source:
the guide named in the script, where the prolog is installed (the cluster's ``Prolog``), the directory of the
cluster's Slurm commands, the log file, the instance families the guide supports, and the channel's file mode.

Where the rendered script differs from both guides, and why (none changes what it configures on a node):

- ``PATH`` is set explicitly, with the cluster's Slurm first: Slurm runs prologs without a search path (Slurm
  "Prolog and Epilog Guide").
- IMEX is stopped *before* ``nodes_config.cfg`` is rewritten: the PCS guide's own "Limitations" say the file cannot
  be modified while the service runs (the ParallelCluster page writes the file first, then restarts; the final state
  is the same).
- Guards the guides do not have: no ``mknod`` without a major number in ``/proc/devices``, no ``scontrol`` call for
  an empty node list (``SLURM_JOB_NODELIST``, else ``SLURM_NODELIST``, which the ParallelCluster page reads) and no
  IMEX restart without node addresses; IMDSv2 calls time out after 2 s.
- On Slurm 26.05+, where the job's exclusivity is reported in ``SLURM_JOB_EXCLUSIVE`` (``NODE``/``TOPO``), that
  variable is honoured too (UNCONFIRMED that slurmd passes it to prologs; without it the guides' check applies).
- shellcheck-clean (the library's tests run shellcheck on every node-side script): ``local`` and command
  substitution split, quoted expansions, ``awk`` instead of ``cat | grep | cut``.
- no ``sudo``: slurmd runs prologs as root (the guides' ``sudo`` is a no-op there).
- Each line goes to the log file and to syslog (``logger -t 91_nvidia_imex_prolog``, both guides' tag); command
  errors go to the log file.
- It always exits 0 (as the guides' scripts do): a prolog that fails drains the node.
- Tests only (unset on nodes): ``FMCONSTRUCTS_ROOT`` prefixes every path and puts stub commands first on ``PATH``;
  ``FMCONSTRUCTS_IMEX_LOG``, ``FMCONSTRUCTS_PROC_DEVICES``, ``FMCONSTRUCTS_IMEX_CHANNELS_DIR`` and
  ``FMCONSTRUCTS_IMEX_NODES_CONFIG`` name one path each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._validate import check_count, check_str, check_str_sequence
from ..errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "IMEX_CHANNELS_DIR",
    "IMEX_CHANNEL_PATH",
    "IMEX_NODES_CONFIG_PATH",
    "IMEX_PROLOG_FLAGS",
    "IMEX_PROLOG_MODE",
    "ImexPrologSpec",
    "render_imex_prolog",
]

#: ``PrologFlags`` both guides set with the IMEX prolog (PCS User Guide capacity-blocks-nvidia-imex; ParallelCluster
#: User Guide support-nvidia-imex-p6e-gb200-instance, ``CustomSlurmSettings`` ``PrologFlags: "Alloc,NoHold"``):
#: ``Alloc`` runs the prolog on every node when the job is allocated, ``NoHold`` keeps the job from waiting on it.
IMEX_PROLOG_FLAGS = ("Alloc", "NoHold")
#: The prolog's file mode (ParallelCluster User Guide support-nvidia-imex-p6e-gb200-instance: ``chmod 0755``; the
#: PCS node groups have always installed it with the same mode).
IMEX_PROLOG_MODE = 0o755
#: The IMEX nodes file the prolog writes (ParallelCluster User Guide support-nvidia-imex-p6e-gb200-instance:
#: ``IMEX_NODES_CONFIG="/etc/nvidia-imex/nodes_config.cfg"``; PCS User Guide capacity-blocks-nvidia-imex; the
#: ParallelCluster cookbook's nvidia_imex resource points ``nvidia-imex`` at the same file:
#: aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-platform/resources/nvidia_imex/partial/
#: _nvidia_imex_common.rb ``nvidia_imex_nodes_conf_file``, seen at 02106c3).
IMEX_NODES_CONFIG_PATH = "/etc/nvidia-imex/nodes_config.cfg"
#: The default IMEX channel the prolog creates (both guides; NVIDIA IMEX guide "IMEX Channels").
IMEX_CHANNEL_PATH = "/dev/nvidia-caps-imex-channels/channel0"
IMEX_CHANNELS_DIR = IMEX_CHANNEL_PATH.rsplit("/", 1)[0]

# Whole-string patterns (fullmatch): a trailing newline never passes into the script.
_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_MODULE_PATH = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*\.py")
_ONE_LINE = re.compile(r"[ -?A-~]{1,200}")  # printable ASCII without '@' (the template's placeholder mark)
_INSTANCE_FAMILY = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


@dataclass(frozen=True)
class ImexPrologSpec:
    """What one guide's IMEX prolog has of its own; :func:`render_imex_prolog` renders the rest alike.

    Raises :class:`~fmconstructs.errors.FmValidationError` for a value that cannot go into the script.
    """

    #: The guide the prolog follows, named in the script's first lines (one line, no ``@``).
    guide: str
    #: The module of the backend that lists where its rendering differs from its guide (``fmconstructs/pcs/x.py``).
    differences_in: str
    #: Where the prolog is installed on the nodes: the cluster's Slurm ``Prolog``.
    prolog_path: str
    #: The directory of the cluster's Slurm commands, first on the prolog's ``PATH`` (``scontrol``).
    slurm_bin_dir: str
    #: The prolog's log file.
    log_file_path: str
    #: Instance families (``p6e-gb200``) whose instances the prolog configures; it exits at once on any other.
    instance_families: tuple[str, ...]
    #: The file mode ``mknod -m`` gives the channel; default: none (0666 minus the umask of slurmd).
    channel_mode: int | None = None

    def __post_init__(self) -> None:
        for name in ("guide", "differences_in", "prolog_path", "slurm_bin_dir", "log_file_path"):
            if is_token(getattr(self, name)):
                raise FmValidationError(
                    name, getattr(self, name), "a literal value (the script is rendered at synth time)"
                )
        check_str("guide", self.guide, pattern=_ONE_LINE, allowed="one line of printable ASCII without '@'")
        check_str(
            "differences_in",
            self.differences_in,
            pattern=_MODULE_PATH,
            allowed="a relative path to a Python module, such as 'fmconstructs/pcs/user_data.py'",
        )
        for name in ("prolog_path", "slurm_bin_dir", "log_file_path"):
            check_str(
                name,
                getattr(self, name),
                pattern=_ABSOLUTE_PATH,
                allowed="an absolute path without a trailing '/' (letters, digits, '.', '_', '-', '/')",
            )
        families = check_str_sequence(
            "instance_families",
            self.instance_families,
            item=_check_instance_family,
            min_items=1,
        )
        if len(set(families)) != len(families):
            raise FmValidationError("instance_families", list(families), "instance families without repeats")
        object.__setattr__(self, "instance_families", tuple(families))
        if self.channel_mode is not None:
            check_count("channel_mode", self.channel_mode, maximum=0o777)


def _check_instance_family(parameter: str, value: object) -> str:
    if is_token(value):
        raise FmValidationError(parameter, value, "a literal value (the script is rendered at synth time)")
    family: str = check_str(
        parameter, value, pattern=_INSTANCE_FAMILY, allowed="an instance family such as 'p6e-gb200'"
    )
    return family


_TEMPLATE = r"""#!/bin/bash
# fmconstructs: Slurm prolog for NVIDIA IMEX on EC2 UltraServers, the 91_nvidia_imex_prolog.sh of the
# @GUIDE@.
# Differences from it: @DIFFERENCES_IN@ and fmconstructs/compute/imex.py.
# Installed as @PROLOG_PATH@,
# the cluster's Prolog, with PrologFlags=Alloc,NoHold.
# For exclusive jobs on @FAMILY_LIST@ nodes whose nvidia-imex is enabled: creates the default IMEX channel, writes
# the job's node addresses to the IMEX nodes file, restarts nvidia-imex.
set -u
PATH="@SLURM_BIN@:${PATH:-}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
root="${FMCONSTRUCTS_ROOT:-}" # tests only: a sandbox prefix for every path, with stub commands in $root/bin
if [ -n "$root" ]; then
  PATH="${root}/bin:${root}@SLURM_BIN@:${PATH}"
fi
export PATH
# FMCONSTRUCTS_* (tests only, unset on nodes) name one path each.
LOG_FILE_PATH="${FMCONSTRUCTS_IMEX_LOG:-${root}@LOG_FILE@}"
PROC_DEVICES="${FMCONSTRUCTS_PROC_DEVICES:-${root}/proc/devices}"
IMEX_CHANNELS_DIR="${FMCONSTRUCTS_IMEX_CHANNELS_DIR:-${root}@CHANNELS_DIR@}"
IMEX_NODES_CONFIG="${FMCONSTRUCTS_IMEX_NODES_CONFIG:-${root}@NODES_CONFIG@}"
IMEX_SERVICE="nvidia-imex"
IMEX_START_TIMEOUT=60
IMEX_STOP_TIMEOUT=15
ALLOWED_INSTANCE_TYPES="^(@FAMILIES@)"
JOB_NODES="${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}"
# Command errors go to the log file (they stay where they were if it cannot be opened).
exec 2>>"$LOG_FILE_PATH" || true

function log() {
  local line
  line="$(date "+%Y-%m-%dT%H:%M:%S.%3N") [$1] [PID:$$] [JOB:${SLURM_JOB_ID:-}] $2"
  echo "$line" >>"$LOG_FILE_PATH" 2>/dev/null
  logger -t 91_nvidia_imex_prolog "$line" </dev/null 2>/dev/null || true
}

function prolog_end() {
  log INFO "PROLOG End JobId=${SLURM_JOB_ID:-}: $0"
  log INFO "----------------"
  exit 0
}

function job_is_exclusive() {
  if [ -n "${SLURM_JOB_EXCLUSIVE:-}" ]; then
    [[ "${SLURM_JOB_EXCLUSIVE}" =~ ^(NODE|TOPO)$ ]]
  else
    [[ "${SLURM_JOB_OVERSUBSCRIBE:-}" =~ ^(NO|TOPO)$ ]]
  fi
}

function get_instance_type() {
  local token
  local imds="http://169.254.169.254/latest"
  token=$(curl -sf --max-time 2 -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 21600" "${imds}/api/token") || return 0
  curl -sf --max-time 2 -H "X-aws-ec2-metadata-token: ${token}" "${imds}/meta-data/instance-type" || true
}

function get_ips_from_node_names() {
  scontrol -ao show node "$1" | sed 's/^.* NodeAddr=\([^ ]*\).*/\1/'
}

function create_default_imex_channel() {
  local major
  major=$(awk '$2 == "nvidia-caps-imex-channels" {print $1}' "$PROC_DEVICES" 2>/dev/null)
  if [ -z "$major" ]; then
    log WARN "nvidia-caps-imex-channels is not in ${PROC_DEVICES}; no IMEX channel created"
    return 0
  fi
  mkdir -p "$IMEX_CHANNELS_DIR"
  if [ -e "${IMEX_CHANNELS_DIR}/channel0" ]; then
    log INFO "IMEX default channel already exists"
  elif mknod@MKNOD_MODE@ "${IMEX_CHANNELS_DIR}/channel0" c "$major" 0; then
    log INFO "IMEX default channel created (major ${major})"
  else
    log ERROR "could not create ${IMEX_CHANNELS_DIR}/channel0"
  fi
}

log INFO "PROLOG Start JobId=${SLURM_JOB_ID:-}: $0"
if job_is_exclusive; then
  log INFO "Job is exclusive, proceeding with IMEX configuration"
else
  log INFO "Skipping IMEX configuration because the job is not exclusive"
  prolog_end
fi
instance_type=$(get_instance_type)
if [[ ! "$instance_type" =~ $ALLOWED_INSTANCE_TYPES ]]; then
  log INFO "Skipping IMEX configuration because instance type '${instance_type}' does not support it"
  prolog_end
fi
if ! systemctl is-enabled "${IMEX_SERVICE}" >/dev/null 2>&1; then
  log WARN "Skipping IMEX configuration because system service ${IMEX_SERVICE} is not enabled"
  prolog_end
fi
create_default_imex_channel
if [ -z "$JOB_NODES" ]; then
  log WARN "SLURM_JOB_NODELIST is empty; leaving IMEX as it is"
  prolog_end
fi
IPS_FROM_CR=$(get_ips_from_node_names "$JOB_NODES")
if [ -z "$IPS_FROM_CR" ]; then
  log WARN "no node addresses found for ${JOB_NODES}; leaving IMEX as it is"
  prolog_end
fi
log INFO "Node Names: ${JOB_NODES}; Node IPs: $(echo "$IPS_FROM_CR" | tr '\n' ' ')"
log INFO "Stopping IMEX"
timeout "${IMEX_STOP_TIMEOUT}" systemctl stop "${IMEX_SERVICE}"
pkill -9 -x "${IMEX_SERVICE}"
mkdir -p "$(dirname "${IMEX_NODES_CONFIG}")"
echo "${IPS_FROM_CR}" >"${IMEX_NODES_CONFIG}"
log INFO "Updated IMEX nodes config ${IMEX_NODES_CONFIG}; restarting IMEX"
timeout "${IMEX_START_TIMEOUT}" systemctl start "${IMEX_SERVICE}" || log ERROR "${IMEX_SERVICE} did not start"
prolog_end
"""


def render_imex_prolog(spec: ImexPrologSpec) -> str:
    """The IMEX prolog (``#!/bin/bash``) for the guide ``spec`` describes; see the module notes."""
    if not isinstance(spec, ImexPrologSpec):
        raise FmTypeError("spec", spec, f"an ImexPrologSpec (got a {type(spec).__name__})")
    mode = "" if spec.channel_mode is None else f" -m {spec.channel_mode:o}"
    replacements = {
        "@GUIDE@": spec.guide,
        "@DIFFERENCES_IN@": spec.differences_in,
        "@PROLOG_PATH@": spec.prolog_path,
        "@SLURM_BIN@": spec.slurm_bin_dir,
        "@LOG_FILE@": spec.log_file_path,
        "@CHANNELS_DIR@": IMEX_CHANNELS_DIR,
        "@NODES_CONFIG@": IMEX_NODES_CONFIG_PATH,
        "@FAMILIES@": "|".join(spec.instance_families),
        "@FAMILY_LIST@": ", ".join(spec.instance_families),
        "@MKNOD_MODE@": mode,
    }
    script = _TEMPLATE
    for placeholder, value in replacements.items():
        script = script.replace(placeholder, value)
    return script
