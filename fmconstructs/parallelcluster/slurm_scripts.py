"""Prolog and epilog pieces on ParallelCluster (:meth:`ParallelCluster.add_slurm_scripts`).

ParallelCluster's ``slurm.conf`` runs every file of two directories the head node shares with the compute nodes:
``Prolog=/opt/slurm/etc/scripts/prolog.d/*`` and ``Epilog=/opt/slurm/etc/scripts/epilog.d/*``
(aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm/templates/default/slurm/slurm.conf.erb lines
45-46; recipes/config/config_health_check.rb lines 18-38 create both, with ParallelCluster's own
``90_pcluster_health_check_manager`` and ``90_pcluster_noop`` in them). So a piece is a file copied there by a head
node bootstrap, the way :mod:`.imex` and :mod:`.health` install their prologs: every node runs it, nodes it does not
concern must pass at once.

``PrologFlags`` a piece needs are merged into one ``CustomSlurmSettings`` entry with those IMEX or you set
(:func:`merge_prolog_flag_settings`, applied when the configuration is rendered).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._validate import check_instance, check_str_sequence
from ..bootstrap import NodeBootstrap
from ..compute.slurm_scripts import SlurmScriptDirs, SlurmScriptPiece, check_pieces, merge_flags, slurm_script_files
from .config import CustomActionEvent

if TYPE_CHECKING:
    from .cluster import ParallelCluster

__all__ = [
    "PARALLELCLUSTER_SLURM_SCRIPT_DIRS",
    "SLURM_SCRIPTS_STEP",
    "add_slurm_scripts",
    "merge_prolog_flag_settings",
]

#: ParallelCluster's shared prolog and epilog directories (see the module notes).
PARALLELCLUSTER_SLURM_SCRIPT_DIRS = SlurmScriptDirs(
    prolog_dir="/opt/slurm/etc/scripts/prolog.d", epilog_dir="/opt/slurm/etc/scripts/epilog.d"
)
#: The head node bootstrap step that installs the pieces.
SLURM_SCRIPTS_STEP = "slurm-scripts"
_FLAGS = "PrologFlags"


def add_slurm_scripts(
    cluster: ParallelCluster,
    pieces: Sequence[SlurmScriptPiece],
    *,
    prolog_flags: Sequence[str],
    bootstrap: NodeBootstrap | None,
    event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED,
) -> NodeBootstrap:
    """See :meth:`ParallelCluster.add_slurm_scripts`."""
    checked = check_pieces("pieces", pieces)
    flags = check_str_sequence("prolog_flags", prolog_flags)
    if bootstrap is not None:
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
    own = bootstrap is None
    if bootstrap is None:
        index = sum(1 for child in cluster.node.children if child.node.id.startswith("SlurmScripts"))
        bootstrap = NodeBootstrap(cluster, f"SlurmScripts{index or ''}", name=f"slurm-scripts{index or ''}")
    if checked:
        bootstrap.add_step(SLURM_SCRIPTS_STEP, files=slurm_script_files(checked, PARALLELCLUSTER_SLURM_SCRIPT_DIRS))
    if flags:
        cluster.add_custom_slurm_settings({_FLAGS: merge_flags(flags)})
    if own:
        cluster.add_head_node_bootstrap(bootstrap, event=event)
    return bootstrap


def merge_prolog_flag_settings(settings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``CustomSlurmSettings`` with every ``PrologFlags`` entry merged into the first one (Slurm reads one)."""
    values = [s[_FLAGS] for s in settings if _FLAGS in s]
    if len(values) < 2:
        return [dict(s) for s in settings]
    merged: list[dict[str, Any]] = []
    for setting in settings:
        if _FLAGS not in setting:
            merged.append(dict(setting))
        elif not any(_FLAGS in s for s in merged):
            merged.append({**setting, _FLAGS: merge_flags(*values)})
    return merged
