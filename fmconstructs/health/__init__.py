"""Node health below the backends: the node-join checks and the Slurm boot gate, rendered once for every backend.

- :class:`NodeCheckSpec` (``NodeCheckSpec.for_instance_type``): what a node must have (catalog GPU count, the launch
  layout's EFA interfaces, Fabric Manager or IMEX, a Lustre mount point, DCGM level, per-check budgets);
- :func:`render_node_checks`: the checks as one bash script, BOOT (every check) or PROLOG (lightweight checks only);
- :func:`render_slurm_boot_gate`: drain, check, resume (or keep drained with the failing check as the reason).

Backends choose where the scripts plug in (prolog, boot unit, lifecycle script); see :mod:`.slurm_gate` for what PCS
and ParallelCluster allow. No aws_cdk import (the ``fmc`` CLI may render or inspect these without Node.js).

One option object for every backend, :class:`NodeHealthOptions` (``enabled``, ``dcgm_level``, ``prolog_checks``,
``budget_seconds``, ``prolog_budget_seconds``, ``fatal_xids``), and how each backend maps it:

============================  ==========================================  ==========================================
NodeHealthOptions             PCS (``PcsCluster(node_health=...)``,        ParallelCluster
                              ``PcsGpuNodeGroup(node_health=...)``)        (``ParallelCluster.enable_node_health``)
============================  ==========================================  ==========================================
boot gate (BOOT checks)       systemd unit from the user data, waits for   the queue's ``OnNodeConfigured`` action;
                              ``slurmd``; drains while checking, resumes   never drains while checking (clustermgtd
                              on pass (:mod:`fmconstructs.pcs.health`)     replaces DRAIN nodes); a failure drains
                                                                           and fails the bootstrap
``prolog_checks``             the cluster ``Prolog`` is a runner of        ``prolog.d/85_fmconstructs_node_checks.sh``
                              ``/opt/fmconstructs/slurm/prolog.d`` (the    on the head node dispatches to the node's
                              checks, then IMEX)                           own checks; total budget <= 90 s
``dcgm_level``                at boot; None where PCS deep health checks   at boot; None with ``HealthChecks/Gpu``
                              run DCGM (QUICK/MEDIUM/LONG = 1/2/3)         (``gpu_health_checks=True``: DCGM L2 in
                                                                           every prolog)
============================  ==========================================  ==========================================

HyperPod (read-only mapping; :mod:`fmconstructs.hyperpod` is configured by its own props): HyperPod runs its own
checks, so there is no gate or prolog to render there. ``DeepHealthCheck`` (``OnStartDeepHealthChecks``:
``InstanceStress``, ``InstanceConnectivity``; default both on accelerated groups) is the counterpart of the boot gate
plus ``dcgm_level`` (HyperPod's stress check exercises the GPUs, its connectivity check the EFA fabric between nodes,
which this package leaves to the scheduled NCCL check). ``NodeRecovery.AUTOMATIC`` (``CreateCluster.NodeRecovery``) is
the counterpart of "a failing node is drained and replaced" (ParallelCluster's clustermgtd; on PCS, the remediation
room). Progress shows as node status ``DeepHealthCheckInProgress`` and replacements as ``ShuttingDown`` / ``Failure``
(:func:`fmconstructs.hyperpod.health.describe_cluster_health`), the counterpart of a drain reason starting with
:data:`REASON_PREFIX`. The prolog checks have no HyperPod counterpart in fmconstructs.
"""

from .checks import SYSLOG_TAG, render_node_checks
from .install import BOOT_GATE_UNIT_NAME, render_boot_gate_unit, render_prolog_runner
from .options import NodeHealthOptions
from .slurm_gate import (
    CHECKING_REASON,
    PARALLELCLUSTER_SLURM_BIN_DIR,
    REASON_PREFIX,
    pcs_slurm_bin_dir,
    render_slurm_boot_gate,
)
from .spec import (
    DCGM_LEVEL_NOMINAL_SECONDS,
    DEFAULT_BUDGET_SECONDS,
    DEFAULT_FATAL_XIDS,
    DEFAULT_LOG_FILE_PATH,
    PROLOG_CHECKS,
    CheckMode,
    CheckName,
    NodeCheckSpec,
)

__all__ = [
    "BOOT_GATE_UNIT_NAME",
    "CHECKING_REASON",
    "DCGM_LEVEL_NOMINAL_SECONDS",
    "DEFAULT_BUDGET_SECONDS",
    "DEFAULT_FATAL_XIDS",
    "DEFAULT_LOG_FILE_PATH",
    "PARALLELCLUSTER_SLURM_BIN_DIR",
    "PROLOG_CHECKS",
    "REASON_PREFIX",
    "SYSLOG_TAG",
    "CheckMode",
    "CheckName",
    "NodeCheckSpec",
    "NodeHealthOptions",
    "pcs_slurm_bin_dir",
    "render_boot_gate_unit",
    "render_node_checks",
    "render_prolog_runner",
    "render_slurm_boot_gate",
]
