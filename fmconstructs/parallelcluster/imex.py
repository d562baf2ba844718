"""NVIDIA IMEX on P6e-GB200 UltraServers, as the ParallelCluster User Guide documents it.

Source: ParallelCluster User Guide "Support NVIDIA-Imex with p6e-gb200 instance"
(https://docs.aws.amazon.com/parallelcluster/latest/ug/support-nvidia-imex-p6e-gb200-instance.html).

What ParallelCluster 3.14.0 and later do themselves (that page): install the NVIDIA stack (driver, CUDA, EFA,
``nvidia-imex``), write the ``nvidia-imex`` configuration, enable and start ``nvidia-imex`` on P6e-GB200 compute
nodes and make each UltraServer (one Capacity Block) a Slurm block of the topology/block plugin. What they do not
do: write ``nodes_config.cfg`` (the IP addresses of the nodes of an IMEX domain). The page adds, and
:meth:`fmconstructs.parallelcluster.ParallelCluster.enable_imex` generates:

1. the Slurm prolog ``91_nvidia_imex_prolog.sh`` (:func:`imex_prolog_script`), which on every node of an exclusive
   job on p6e-gb200 creates the default IMEX channel ``/dev/nvidia-caps-imex-channels/channel0``, writes the private
   addresses of the job's nodes (``scontrol -ao show node``, ``NodeAddr``) to ``/etc/nvidia-imex/nodes_config.cfg``
   and restarts ``nvidia-imex`` (stop with a 15 s timeout, kill leftovers, start with a 60 s timeout);
2. installed by a head node custom action (the page: ``OnNodeStart``) in ``/opt/slurm/etc/scripts/prolog.d/``, the
   prolog directory ParallelCluster shares with the compute nodes (:data:`IMEX_PROLOG_PATH`); here that action is
   an fmconstructs :class:`~fmconstructs.bootstrap.NodeBootstrap` whose step installs the file;
3. ``Scheduling.SlurmSettings.CustomSlurmSettings`` ``PrologFlags: "Alloc,NoHold"`` and ``MessageTimeout: 240``
   (:data:`IMEX_CUSTOM_SLURM_SETTINGS`);
4. jobs submitted with ``--exclusive`` (the prolog skips other jobs: an IMEX restart would disrupt jobs running on
   the same nodes). The example's queue also allocates nodes exclusively (``JobExclusiveAllocation``, a partition
   with ``OverSubscribe=EXCLUSIVE``); that Slurm then reports such a job's ``SLURM_JOB_OVERSUBSCRIBE`` as ``NO`` to
   the prolog without ``--exclusive`` on the command line is UNCONFIRMED here (not run on a cluster): submit with
   ``--exclusive`` as the page says.

The page's script, step by step, with these differences (none changes what it does on a node):

- ``PATH`` is set (``/opt/slurm/bin`` first, then the system directories): Slurm runs prologs with a minimal
  environment; the page relies on bash's built-in default search path.
- shellcheck-clean (the library's tests run shellcheck on every node-side script): ``local`` and command
  substitution split, quoted expansions, ``awk`` instead of ``cat | grep | cut``.
- no ``sudo``: slurmd runs prologs as root (the page's ``sudo`` is a no-op there).
- ``FMCONSTRUCTS_ROOT`` (tests only, unset on nodes) prefixes every path and puts stub commands first on ``PATH``,
  so the tests run the prolog in a sandbox.
- the channel is created with ``mknod`` as on the page (no explicit mode: 0666 minus the umask of slurmd).
  Whether jobs of users other than root can open it with that mode is UNCONFIRMED here (the page calls its channel
  set-up suitable for single-user environments).

The same procedure is in :mod:`fmconstructs.pcs.user_data` (the PCS User Guide's version of this prolog); the two
backends may not import each other, so one shared renderer a floor below would serve both (not done here: the
pcs module is not this package's to change).
"""

from __future__ import annotations

#: Where the head node installs the prolog: ParallelCluster's Slurm prolog directory, shared with the compute nodes
#: (User Guide "support-nvidia-imex-p6e-gb200-instance": ``PROLOG_NVIDIA_IMEX=/opt/slurm/etc/scripts/prolog.d/
#: 91_nvidia_imex_prolog.sh``; User Guide "slurm-prolog-epilog-v3": ``Prolog=/opt/slurm/etc/scripts/prolog.d/*``).
IMEX_PROLOG_PATH = "/opt/slurm/etc/scripts/prolog.d/91_nvidia_imex_prolog.sh"
#: The prolog's file mode (the page: ``chmod 0755``).
IMEX_PROLOG_MODE = 0o755
#: ``Scheduling.SlurmSettings.CustomSlurmSettings`` of the page's cluster configuration.
IMEX_CUSTOM_SLURM_SETTINGS: tuple[dict[str, str | int], ...] = (
    {"PrologFlags": "Alloc,NoHold"},
    {"MessageTimeout": 240},
)
#: The IMEX nodes file the prolog writes (the page: ``IMEX_NODES_CONFIG="/etc/nvidia-imex/nodes_config.cfg"``; the
#: cookbook's nvidia_imex resource points ``nvidia-imex`` at the same file: aws/aws-parallelcluster-cookbook
#: cookbooks/aws-parallelcluster-platform/resources/nvidia_imex/partial/_nvidia_imex_common.rb
#: ``nvidia_imex_nodes_conf_file``).
IMEX_NODES_CONFIG_PATH = "/etc/nvidia-imex/nodes_config.cfg"
#: The default IMEX channel the prolog creates (the page; NVIDIA IMEX guide "IMEX Channels").
IMEX_CHANNEL_PATH = "/dev/nvidia-caps-imex-channels/channel0"

_PROLOG = r"""#!/usr/bin/env bash
# fmconstructs: NVIDIA IMEX prolog for P6e-GB200 on AWS ParallelCluster. The 91_nvidia_imex_prolog.sh of the
# ParallelCluster User Guide "Support NVIDIA-Imex with p6e-gb200 instance"; differences are listed in
# fmconstructs/parallelcluster/imex.py. Runs for exclusive jobs on p6e-gb200 nodes whose nvidia-imex is enabled:
# creates the default IMEX channel, writes the job's node addresses to the IMEX nodes file, restarts nvidia-imex.
root="${FMCONSTRUCTS_ROOT:-}" # tests only: a sandbox prefix for every path, with stub commands in $root/bin
PATH="${root:+${root}/bin:}/opt/slurm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH

LOG_FILE_PATH="${root}/var/log/parallelcluster/nvidia-imex-prolog.log"
SCONTROL_CMD="${root}/opt/slurm/bin/scontrol"
PROC_DEVICES="${root}/proc/devices"
IMEX_START_TIMEOUT=60
IMEX_STOP_TIMEOUT=15
ALLOWED_INSTANCE_TYPES="^(p6e-gb200)"
IMEX_SERVICE="nvidia-imex"
IMEX_NODES_CONFIG="${root}@NODES_CONFIG@"
IMEX_CHANNELS_DIR="${root}@CHANNELS_DIR@"

function info() {
  echo "$(date "+%Y-%m-%dT%H:%M:%S.%3N") [INFO] [PID:$$] [JOB:${SLURM_JOB_ID:-}] $1"
}

function warn() {
  echo "$(date "+%Y-%m-%dT%H:%M:%S.%3N") [WARN] [PID:$$] [JOB:${SLURM_JOB_ID:-}] $1"
}

function prolog_end() {
  info "PROLOG End JobId=${SLURM_JOB_ID:-}: $0"
  info "----------------"
  exit 0
}

function get_instance_type() {
  local token
  token=$(curl -X PUT -s "http://169.254.169.254/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 21600")
  curl -s -H "X-aws-ec2-metadata-token: ${token}" http://169.254.169.254/latest/meta-data/instance-type
}

function return_if_unsupported_instance_type() {
  local instance_type
  instance_type=$(get_instance_type)
  if [[ ! ${instance_type} =~ ${ALLOWED_INSTANCE_TYPES} ]]; then
    info "Skipping IMEX configuration because instance type ${instance_type} does not support it"
    prolog_end
  fi
}

function return_if_imex_disabled() {
  if ! systemctl is-enabled "${IMEX_SERVICE}" &>/dev/null; then
    warn "Skipping IMEX configuration because system service ${IMEX_SERVICE} is not enabled"
    prolog_end
  fi
}

function return_if_job_is_not_exclusive() {
  if [[ "${SLURM_JOB_OVERSUBSCRIBE:-}" =~ ^(NO|TOPO)$ ]]; then
    info "Job is exclusive, proceeding with IMEX configuration"
  else
    info "Skipping IMEX configuration because the job is not exclusive"
    prolog_end
  fi
}

function get_ips_from_node_names() {
  "${SCONTROL_CMD}" -ao show node "$1" | sed 's/^.* NodeAddr=\([^ ]*\).*/\1/'
}

function reload_imex() {
  info "Stopping IMEX"
  timeout "${IMEX_STOP_TIMEOUT}" systemctl stop "${IMEX_SERVICE}"
  pkill -9 "${IMEX_SERVICE}"
  info "Restarting IMEX"
  timeout "${IMEX_START_TIMEOUT}" systemctl start "${IMEX_SERVICE}"
}

function create_default_imex_channel() {
  local major_number
  info "Creating IMEX default channel"
  major_number=$(awk '$2 == "nvidia-caps-imex-channels" {print $1}' "${PROC_DEVICES}")
  if [ ! -d "${IMEX_CHANNELS_DIR}" ]; then
    mkdir "${IMEX_CHANNELS_DIR}"
  fi
  if [ ! -e "${IMEX_CHANNELS_DIR}/channel0" ]; then
    mknod "${IMEX_CHANNELS_DIR}/channel0" c "${major_number}" 0
    info "IMEX default channel created"
  else
    info "IMEX default channel already exists"
  fi
}

{
  info "PROLOG Start JobId=${SLURM_JOB_ID:-}: $0"

  return_if_job_is_not_exclusive
  return_if_unsupported_instance_type
  return_if_imex_disabled

  create_default_imex_channel

  IPS_FROM_CR=$(get_ips_from_node_names "${SLURM_NODELIST:-}")

  info "Node Names: ${SLURM_NODELIST:-}"
  info "Node IPs: ${IPS_FROM_CR}"
  info "IMEX Nodes Config: ${IMEX_NODES_CONFIG}"

  info "Updating IMEX nodes config ${IMEX_NODES_CONFIG}"
  echo "${IPS_FROM_CR}" >"${IMEX_NODES_CONFIG}"
  reload_imex

  prolog_end
} 2>&1 | tee -a "${LOG_FILE_PATH}" | logger -t "91_nvidia_imex_prolog"
"""


def imex_prolog_script() -> str:
    """The IMEX prolog (ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance", see the module notes)."""
    return _PROLOG.replace("@NODES_CONFIG@", IMEX_NODES_CONFIG_PATH).replace(
        "@CHANNELS_DIR@", IMEX_CHANNEL_PATH.rsplit("/", 1)[0]
    )


def imex_prolog_files() -> dict[str, tuple[str, int]]:
    """The prolog as a :meth:`fmconstructs.bootstrap.NodeBootstrap.add_step` ``files`` entry
    (``{IMEX_PROLOG_PATH: (script, 0o755)}``): the bootstrap's runner installs it with that mode."""
    return {IMEX_PROLOG_PATH: (imex_prolog_script(), IMEX_PROLOG_MODE)}
