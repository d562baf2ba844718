"""Teams (:class:`~fmconstructs.teams.Team`) on a ParallelCluster with Slurm accounting
(:meth:`ParallelCluster.add_teams`).

The sacctmgr script (:func:`fmconstructs.teams.slurm.render_sacctmgr_script`) runs on the head node as its own
bootstrap, a piece of ``OnNodeConfigured`` (at creation, after ParallelCluster has configured Slurm and slurmdbd:
User Guide "custom-bootstrap-actions-v3") and of ``OnNodeUpdated`` (``pcluster update-cluster``: the head node's
OnNodeStart/OnNodeConfigured are refused on an update, HeadNodeCustomActionsSchema, so a change of the teams is applied
by OnNodeUpdated). The slurm.conf lines go in ``CustomSlurmSettings``; none is in ParallelCluster's accounting deny
list (:data:`~fmconstructs.parallelcluster.accounting.ACCOUNTING_SLURM_SETTINGS_DENY_LIST`). That ParallelCluster
leaves ``AccountingStorageEnforce`` and ``AccountingStorageTRES`` to CustomSlurmSettings with a database is
UNCONFIRMED; that root (custom actions run as root) may run sacctmgr as a Slurm administrator is UNCONFIRMED for
ParallelCluster (Slurm treats root and SlurmUser as administrators).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..bootstrap import NodeBootstrap
from ..errors import FmValidationError
from ..teams import Team
from ..teams.rules import check_teams, guarantees_fit_the_cluster, slurm_team_names
from ..teams.slurm import SLURM_CONF_SETTINGS, render_sacctmgr_script
from .config import CustomActionEvent

if TYPE_CHECKING:
    from .cluster import ParallelCluster

__all__ = ["TEAMS_SCRIPT", "TEAMS_STEP", "add_teams"]

TEAMS_STEP = "slurm-teams"
#: Where the head node keeps the script (run again by hand: ``sudo bash /opt/fmconstructs/teams/sacctmgr.sh``).
TEAMS_SCRIPT = "/opt/fmconstructs/teams/sacctmgr.sh"
#: ParallelCluster installs Slurm under /opt/slurm (User Guide "Slurm cluster" paths: /opt/slurm/etc/slurm.conf).
_SLURM_BIN = "/opt/slurm/bin"


def _cluster_gpus(cluster: ParallelCluster) -> int | None:
    """GPUs of every queue at its maximum size (None when a size or a type's GPUs are not known at synthesis)."""
    from .._validate import known
    from ..catalog import CATALOG

    total = 0
    for queue in cluster.queues:
        for resource in queue.compute_resources:
            if resource.instance_type not in CATALOG.instance_types or not known(resource.max_nodes):
                return None
            if resource.max_nodes is None:
                return None
            total += CATALOG.get(resource.instance_type).gpu.count * int(resource.max_nodes)
    return total


def add_teams(cluster: ParallelCluster, teams: Sequence[Team]) -> NodeBootstrap:
    """See :meth:`ParallelCluster.add_teams`."""
    checked = check_teams(teams)
    if not checked:
        raise FmValidationError("teams", [], "at least one Team")
    slurm_team_names(checked)
    guarantees_fit_the_cluster(checked, _cluster_gpus(cluster))
    if cluster.slurm_accounting is None:
        raise FmValidationError(
            "teams",
            [t.name for t in checked],
            "empty on a ParallelCluster without slurm_accounting (accounts and QoS live in slurmdbd: give a "
            "SlurmDatabase or ExternalSlurmdbd)",
        )
    bootstrap = NodeBootstrap(cluster, "SlurmTeams", name="slurm-teams")
    bootstrap.add_step(
        TEAMS_STEP,
        [f"SACCTMGR={_SLURM_BIN}/sacctmgr SQUEUE={_SLURM_BIN}/squeue bash {TEAMS_SCRIPT}"],
        files={TEAMS_SCRIPT: (render_sacctmgr_script(checked), 0o700)},
    )
    cluster.add_custom_slurm_settings(SLURM_CONF_SETTINGS)
    cluster.add_head_node_bootstrap(bootstrap, event=CustomActionEvent.ON_NODE_CONFIGURED)
    cluster.add_head_node_bootstrap(bootstrap, event=CustomActionEvent.ON_NODE_UPDATED)
    return bootstrap
