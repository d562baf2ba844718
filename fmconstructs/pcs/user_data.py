"""Node-side steps for PCS: MIME multi-part user data and the NVIDIA IMEX prolog for UltraServers.

**MIME.** PCS merges launch-template user data with its own, so it must be a MIME multi-part archive; blocks of type
``text/x-shellscript`` run after the node registers with PCS and before ``slurmd`` starts (PCS User Guide "Working
with Amazon EC2 user data"). :func:`pcs_mime_user_data` wraps one shell script in that format, with the blank lines
the guide requires around each boundary.

**IMEX.** GPU-to-GPU traffic over NVLink across the instances of an UltraServer needs the NVIDIA IMEX service
configured with the addresses of the job's nodes. The PCS User Guide "Configure UltraServer instances"
(capacity-blocks-nvidia-imex) does this in a Slurm ``Prolog`` set on the cluster together with
``PrologFlags=Alloc,NoHold``, with the script present on every compute node (Slurm 25.05 or later; an AMI with the
NVIDIA driver and ``nvidia-imex`` enabled). :func:`imex_prolog_script` mirrors the guide's
``91_nvidia_imex_prolog.sh`` step by step:

1. only exclusive jobs (``SLURM_JOB_OVERSUBSCRIBE`` is ``NO`` or ``TOPO``): restarting IMEX would break other jobs
   on the same nodes, so UltraServer queues are exclusive (:class:`~fmconstructs.pcs.PcsQueue` sets
   ``OverSubscribe=EXCLUSIVE`` on them) and jobs are submitted with ``--exclusive``;
2. only ``p6e-gb200`` / ``p6e-gb300`` instances (instance type from IMDSv2);
3. only when ``nvidia-imex`` is enabled;
4. creates the default IMEX channel ``/dev/nvidia-caps-imex-channels/channel0`` (major number from
   ``/proc/devices``; NVIDIA IMEX guide "IMEX Channels": channels are not created by default and do not survive a
   reboot);
5. writes the private addresses of the job's nodes (``scontrol show node``, ``NodeAddr``) to
   ``/etc/nvidia-imex/nodes_config.cfg``;
6. restarts ``nvidia-imex`` (stop with a 15 s timeout, kill leftovers, start with a 60 s timeout).

Where it differs from the guide, and why:

- ``PATH`` is set explicitly, with the cluster's Slurm first (``/opt/aws/pcs/scheduler/slurm-<version>/bin``: "The
  Slurm installer provided by AWS PCS stores Slurm in /opt/aws/pcs/scheduler/slurm-version", PCS User Guide
  spank_install): Slurm runs prologs without a search path (Slurm "Prolog and Epilog Guide").
- IMEX is stopped *before* ``nodes_config.cfg`` is rewritten: the guide's own "Limitations" say the file cannot be
  modified while the service runs.
- ``channel0`` is created with mode 0666, as NVIDIA's IMEX guide lists it (``crw-rw-rw-``), so non-root jobs can
  open it; no ``sudo`` (slurmd runs the prolog as root).
- On Slurm 26.05+, where the job's exclusivity is reported in ``SLURM_JOB_EXCLUSIVE`` (``NODE``/``TOPO``), that
  variable is honoured too (UNCONFIRMED that slurmd passes it to prologs; without it the guide's check applies).
- It always exits 0 (as the guide's script does): a prolog that fails drains the node.

The script runs on every node of the cluster (the ``Prolog`` is cluster-wide) and exits 0 at once on nodes that are
not UltraServer instances (p5 node groups of the same cluster).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._validate import check_sequence, check_str
from ..compute.launch_template import MIME_BOUNDARY, render_mime_multipart
from ..errors import FmTypeError, FmValidationError
from ._checks import ABSOLUTE_PATH
from .slurm import DEFAULT_SLURM_VERSION

#: Where node groups of an IMEX-enabled cluster install the prolog (the cluster's ``Prolog`` setting).
IMEX_PROLOG_PATH = "/opt/fmconstructs/slurm/imex-prolog.sh"
#: ``PrologFlags`` the PCS User Guide sets with the IMEX prolog (capacity-blocks-nvidia-imex): ``Alloc`` runs the
#: prolog on every node when the job is allocated, ``NoHold`` keeps the job from waiting on it.
IMEX_PROLOG_FLAGS = ("Alloc", "NoHold")
#: The default IMEX channel the prolog creates (PCS User Guide capacity-blocks-nvidia-imex; NVIDIA IMEX guide).
IMEX_CHANNEL_PATH = "/dev/nvidia-caps-imex-channels/channel0"

_IMEX_PROLOG_TEMPLATE = r"""#!/bin/bash
# fmconstructs: Slurm prolog for NVIDIA IMEX on EC2 UltraServers. Mirrors 91_nvidia_imex_prolog.sh of the
# AWS PCS User Guide "Configure UltraServer instances" (capacity-blocks-nvidia-imex); differences are listed in
# fmconstructs/pcs/user_data.py. Set as the cluster's Prolog with PrologFlags=Alloc,NoHold.
set -u
PATH="/opt/aws/pcs/scheduler/slurm-@SLURM_VERSION@/bin:${PATH:-}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH
LOG_FILE_PATH="${FMCONSTRUCTS_IMEX_LOG:-/var/log/nvidia-imex-prolog.log}"
PROC_DEVICES="${FMCONSTRUCTS_PROC_DEVICES:-/proc/devices}"
IMEX_CHANNELS_DIR="${FMCONSTRUCTS_IMEX_CHANNELS_DIR:-/dev/nvidia-caps-imex-channels}"
IMEX_NODES_CONFIG="${FMCONSTRUCTS_IMEX_NODES_CONFIG:-/etc/nvidia-imex/nodes_config.cfg}"
IMEX_SERVICE="nvidia-imex"
IMEX_START_TIMEOUT=60
IMEX_STOP_TIMEOUT=15
ALLOWED_INSTANCE_TYPES="^(p6e-gb200|p6e-gb300)"
JOB_NODES="${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}"

log() {
  local line
  line="$(date "+%Y-%m-%dT%H:%M:%S") [$1] [JOB:${SLURM_JOB_ID:-}] $2"
  echo "$line" >> "$LOG_FILE_PATH" 2>/dev/null
  logger -t 91_nvidia_imex_prolog "$line" 2>/dev/null || true
}

prolog_end() {
  log INFO "PROLOG End JobId=${SLURM_JOB_ID:-}"
  exit 0
}

job_is_exclusive() {
  if [ -n "${SLURM_JOB_EXCLUSIVE:-}" ]; then
    [[ "${SLURM_JOB_EXCLUSIVE}" =~ ^(NODE|TOPO)$ ]]
  else
    [[ "${SLURM_JOB_OVERSUBSCRIBE:-}" =~ ^(NO|TOPO)$ ]]
  fi
}

instance_type() {
  local token
  local imds="http://169.254.169.254/latest"
  token=$(curl -sf --max-time 2 -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 21600" "${imds}/api/token") || return 0
  curl -sf --max-time 2 -H "X-aws-ec2-metadata-token: ${token}" "${imds}/meta-data/instance-type" || true
}

create_default_imex_channel() {
  local major
  major=$(awk '$2 == "nvidia-caps-imex-channels" {print $1}' "$PROC_DEVICES" 2>/dev/null)
  if [ -z "$major" ]; then
    log WARN "nvidia-caps-imex-channels is not in ${PROC_DEVICES}; no IMEX channel created"
    return 0
  fi
  mkdir -p "$IMEX_CHANNELS_DIR"
  if [ -e "${IMEX_CHANNELS_DIR}/channel0" ]; then
    log INFO "IMEX default channel already exists"
  elif mknod -m 666 "${IMEX_CHANNELS_DIR}/channel0" c "$major" 0; then
    log INFO "IMEX default channel created (major ${major})"
  else
    log ERROR "could not create ${IMEX_CHANNELS_DIR}/channel0"
  fi
}

log INFO "PROLOG Start JobId=${SLURM_JOB_ID:-}"
if ! job_is_exclusive; then
  log INFO "Skipping IMEX configuration because the job is not exclusive"
  prolog_end
fi
itype=$(instance_type)
if [[ ! "$itype" =~ $ALLOWED_INSTANCE_TYPES ]]; then
  log INFO "Skipping IMEX configuration because instance type '${itype}' does not support it"
  prolog_end
fi
if ! systemctl is-enabled "$IMEX_SERVICE" >/dev/null 2>&1; then
  log WARN "Skipping IMEX configuration because system service ${IMEX_SERVICE} is not enabled"
  prolog_end
fi
create_default_imex_channel
if [ -z "$JOB_NODES" ]; then
  log WARN "SLURM_JOB_NODELIST is empty; leaving IMEX as it is"
  prolog_end
fi
ips=$(scontrol -ao show node "$JOB_NODES" | sed 's/^.* NodeAddr=\([^ ]*\).*/\1/')
if [ -z "$ips" ]; then
  log WARN "no node addresses found for ${JOB_NODES}; leaving IMEX as it is"
  prolog_end
fi
log INFO "Node Names: ${JOB_NODES}; Node IPs: $(echo "$ips" | tr '\n' ' ')"
log INFO "Stopping IMEX"
timeout "$IMEX_STOP_TIMEOUT" systemctl stop "$IMEX_SERVICE"
pkill -9 -x "$IMEX_SERVICE"
mkdir -p "$(dirname "$IMEX_NODES_CONFIG")"
echo "$ips" > "$IMEX_NODES_CONFIG"
log INFO "Updated IMEX nodes config ${IMEX_NODES_CONFIG}; restarting IMEX"
timeout "$IMEX_START_TIMEOUT" systemctl start "$IMEX_SERVICE" || log ERROR "${IMEX_SERVICE} did not start"
prolog_end
"""


#: A Slurm major version as PCS names it (``SlurmVersion`` values: ``25.11``). Matched whole.
_SLURM_VERSION = re.compile(r"\d{2}\.\d{2}")
#: A MIME content type on one line (``text/cloud-config``, ``text/x-shellscript; charset="us-ascii"``).
_CONTENT_TYPE = re.compile(r"[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(;[ -~]*)?")


def _check_slurm_version(value: object) -> str:
    version: str = check_str(
        "slurm_version", value, pattern=_SLURM_VERSION, allowed="a Slurm version as PCS names it, such as '25.11'"
    )
    return version


def _check_path(value: object) -> str:
    path: str = check_str(
        "path", value, pattern=ABSOLUTE_PATH, allowed="an absolute path (letters, digits, '.', '_', '-', '/')"
    )
    return path


def imex_prolog_script(slurm_version: str = DEFAULT_SLURM_VERSION.value) -> str:
    """The IMEX prolog for a cluster running ``slurm_version`` (its Slurm commands come first on ``PATH``)."""
    return _IMEX_PROLOG_TEMPLATE.replace("@SLURM_VERSION@", _check_slurm_version(slurm_version))


#: The prolog for the default Slurm version (shellcheck and behaviour tests read it).
IMEX_PROLOG_SCRIPT = imex_prolog_script()


def imex_prolog_install_commands(
    path: str = IMEX_PROLOG_PATH, *, slurm_version: str = DEFAULT_SLURM_VERSION.value
) -> list[str]:
    """Shell commands that install :func:`imex_prolog_script` at ``path`` (mode 0755, owned by root)."""
    path = _check_path(path)
    return [
        f"mkdir -p {path.rsplit('/', 1)[0]}",
        f"cat > {path} <<'FMCONSTRUCTS_EOF'",
        *imex_prolog_script(slurm_version).rstrip("\n").splitlines(),
        "FMCONSTRUCTS_EOF",
        f"chmod 0755 {path}",
    ]


def pcs_mime_user_data(script: str, *, extra_parts: Sequence[tuple[str, str]] = ()) -> str:
    """Wrap ``script`` (a ``#!/bin/bash`` script, may contain tokens) as the MIME multi-part archive PCS requires.

    ``extra_parts`` are further ``(content_type, body)`` blocks, e.g. ``("text/cloud-config", "...")`` to run
    before the node registers with PCS.
    """
    check_str("script", script)
    parts = check_sequence("extra_parts", extra_parts, _check_part)
    return render_mime_multipart([*parts, ('text/x-shellscript; charset="us-ascii"', script)])


def _check_part(parameter: str, value: object) -> tuple[str, str]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise FmTypeError(parameter, value, f"a (content_type, body) pair of str (got a {type(value).__name__})")
    content_type, body = value
    check_str(f"{parameter} content_type", content_type, pattern=_CONTENT_TYPE, allowed="a one-line MIME content type")
    check_str(f"{parameter} body", body)
    if MIME_BOUNDARY in body:
        raise FmValidationError(f"{parameter} body", "...", f"a body without the MIME boundary {MIME_BOUNDARY!r}")
    return content_type, body
