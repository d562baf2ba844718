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

The prolog is rendered by the renderer the PCS backend shares (:mod:`fmconstructs.compute.imex`: the page's steps,
and where both renderings differ from their guides, none of it changing what the prolog configures on a node). What
this page has of its own (:func:`imex_prolog_spec`):

- ``p6e-gb200`` instances only (the page's ``ALLOWED_INSTANCE_TYPES="^(p6e-gb200)"``).
- ``PATH`` starts with ``/opt/slurm/bin`` (the page's ``SCONTROL_CMD="/opt/slurm/bin/scontrol"``): Slurm runs prologs
  with a minimal environment; the page relies on bash's built-in default search path.
- The log file is ``/var/log/parallelcluster/nvidia-imex-prolog.log`` (the page's ``LOG_FILE_PATH``); the prolog is
  installed as :data:`IMEX_PROLOG_PATH`.
- the channel is created with ``mknod`` as on the page (no explicit mode: 0666 minus the umask of slurmd).
  Whether jobs of users other than root can open it with that mode is UNCONFIRMED here (the page calls its channel
  set-up suitable for single-user environments).
"""

from __future__ import annotations

from ..compute.imex import (
    IMEX_CHANNEL_PATH,
    IMEX_NODES_CONFIG_PATH,
    IMEX_PROLOG_FLAGS,
    IMEX_PROLOG_MODE,
    ImexPrologSpec,
    render_imex_prolog,
)

__all__ = [
    "IMEX_CHANNEL_PATH",
    "IMEX_CUSTOM_SLURM_SETTINGS",
    "IMEX_NODES_CONFIG_PATH",
    "IMEX_PROLOG_MODE",
    "IMEX_PROLOG_PATH",
    "IMEX_PROLOG_SPEC",
    "imex_prolog_files",
    "imex_prolog_script",
    "imex_prolog_spec",
]

#: Where the head node installs the prolog: ParallelCluster's Slurm prolog directory, shared with the compute nodes
#: (User Guide "support-nvidia-imex-p6e-gb200-instance": ``PROLOG_NVIDIA_IMEX=/opt/slurm/etc/scripts/prolog.d/
#: 91_nvidia_imex_prolog.sh``; User Guide "slurm-prolog-epilog-v3": ``Prolog=/opt/slurm/etc/scripts/prolog.d/*``).
IMEX_PROLOG_PATH = "/opt/slurm/etc/scripts/prolog.d/91_nvidia_imex_prolog.sh"
#: ``Scheduling.SlurmSettings.CustomSlurmSettings`` of the page's cluster configuration.
IMEX_CUSTOM_SLURM_SETTINGS: tuple[dict[str, str | int], ...] = (
    {"PrologFlags": ",".join(IMEX_PROLOG_FLAGS)},
    {"MessageTimeout": 240},
)

#: What the page's prolog has of its own (see the module notes). The quoted values are the page script's, as this
#: module ported them before the renderer was shared (not re-read for that change).
IMEX_PROLOG_SPEC = ImexPrologSpec(
    guide='ParallelCluster User Guide "Support NVIDIA-Imex with p6e-gb200 instance"',
    differences_in="fmconstructs/parallelcluster/imex.py",
    prolog_path=IMEX_PROLOG_PATH,
    # ParallelCluster's Slurm (the page: SCONTROL_CMD="/opt/slurm/bin/scontrol").
    slurm_bin_dir="/opt/slurm/bin",
    # The page: LOG_FILE_PATH="/var/log/parallelcluster/nvidia-imex-prolog.log".
    log_file_path="/var/log/parallelcluster/nvidia-imex-prolog.log",
    # The page: ALLOWED_INSTANCE_TYPES="^(p6e-gb200)".
    instance_families=("p6e-gb200",),
    # The page's mknod gives no mode.
    channel_mode=None,
)


def imex_prolog_spec() -> ImexPrologSpec:
    """What the page's IMEX prolog has of its own (:data:`IMEX_PROLOG_SPEC`)."""
    return IMEX_PROLOG_SPEC


def imex_prolog_script() -> str:
    """The IMEX prolog (ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance", see the module notes)."""
    return render_imex_prolog(IMEX_PROLOG_SPEC)


def imex_prolog_files() -> dict[str, tuple[str, int]]:
    """The prolog as a :meth:`fmconstructs.bootstrap.NodeBootstrap.add_step` ``files`` entry
    (``{IMEX_PROLOG_PATH: (script, 0o755)}``): the bootstrap's runner installs it with that mode."""
    return {IMEX_PROLOG_PATH: (imex_prolog_script(), IMEX_PROLOG_MODE)}
