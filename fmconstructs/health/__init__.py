"""Node health below the backends: the node-join checks and the Slurm boot gate, rendered once for every backend.

- :class:`NodeCheckSpec` (``NodeCheckSpec.for_instance_type``): what a node must have (catalog GPU count, the launch
  layout's EFA interfaces, Fabric Manager or IMEX, a Lustre mount point, DCGM level, per-check budgets);
- :func:`render_node_checks`: the checks as one bash script, BOOT (every check) or PROLOG (lightweight checks only);
- :func:`render_slurm_boot_gate`: drain, check, resume (or keep drained with the failing check as the reason).

Backends choose where the scripts plug in (prolog, boot unit, lifecycle script); see :mod:`.slurm_gate` for what PCS
and ParallelCluster allow. No aws_cdk import (the ``fmc`` CLI may render or inspect these without Node.js).
"""

from .checks import SYSLOG_TAG, render_node_checks
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
    "pcs_slurm_bin_dir",
    "render_node_checks",
    "render_slurm_boot_gate",
]
