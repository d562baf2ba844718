"""Prolog and epilog pieces on ParallelCluster (:meth:`ParallelCluster.add_slurm_scripts`).

ParallelCluster's ``slurm.conf`` runs every file of two directories the head node shares with the compute nodes:
``Prolog=/opt/slurm/etc/scripts/prolog.d/*`` and ``Epilog=/opt/slurm/etc/scripts/epilog.d/*``
(aws/aws-parallelcluster-cookbook cookbooks/aws-parallelcluster-slurm/templates/default/slurm/slurm.conf.erb lines
45-46, with ``SchedulerParameters=nohold_on_prolog_fail`` and ``BatchStartTimeout=180``, and no ``PrologFlags``;
recipes/config/config_health_check.rb lines 18-38 create both, lines 97-119 link ParallelCluster's own
``90_pcluster_health_check_manager`` into ``prolog.d`` and ``90_pcluster_noop`` into ``epilog.d``; cookbook at
f75d84c). So a piece is a file copied there by a head node bootstrap, the way :mod:`.imex` and :mod:`.health` install
their prologs: every node runs it, nodes it does not concern must pass at once.

**Order.** Slurm runs a glob's files in reverse alphabetical order and stops at the first that fails
(:mod:`fmconstructs.compute.slurm_scripts`), so the piece meant to run first sorts last. :data:`PROLOG_ORDER` and
:data:`EPILOG_ORDER` are the intended orders, first first: the node checks (``95_``) before everything, so a bad node
fails the prolog before IMEX restarts services or ParallelCluster's GPU health check runs DCGM; then IMEX (``91_``,
the name of the User Guide's IMEX page) before ParallelCluster's ``90_pcluster_health_check_manager``; the job mapping
pieces (``30_``, ``20_``) last. Earlier releases installed the node checks as ``85_fmconstructs_node_checks.sh``, which
ran after ``90_``/``91_``: :data:`RETIRED_NAMES`, removed by the install step (:func:`retire_commands`).

``PrologFlags`` a piece needs are merged into one ``CustomSlurmSettings`` entry with those IMEX or you set
(:func:`merge_prolog_flag_settings`, applied when the configuration is rendered).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._validate import check_instance, check_str_sequence
from ..bootstrap import NodeBootstrap
from ..compute.slurm_scripts import (
    SlurmHook,
    SlurmScriptDirs,
    SlurmScriptPiece,
    check_pieces,
    merge_flags,
    slurm_script_files,
)
from ..errors import FmValidationError
from ..observability.slurm_job_mapping import PARALLELCLUSTER_APP_METRICS_NAME, PARALLELCLUSTER_JOB_MAPPING_NAME
from .config import CustomActionEvent
from .imex import IMEX_PROLOG_PATH

if TYPE_CHECKING:
    from .cluster import ParallelCluster

__all__ = [
    "EPILOG_ORDER",
    "NODE_CHECKS_PROLOG_NAME",
    "PARALLELCLUSTER_SLURM_SCRIPT_DIRS",
    "PCLUSTER_EPILOG_NOOP",
    "PCLUSTER_HEALTH_CHECK_MANAGER",
    "PROLOG_ORDER",
    "RETIRED_NAMES",
    "SLURM_SCRIPTS_STEP",
    "add_slurm_scripts",
    "merge_prolog_flag_settings",
    "retire_commands",
]

#: ParallelCluster's shared prolog and epilog directories (see the module notes).
PARALLELCLUSTER_SLURM_SCRIPT_DIRS = SlurmScriptDirs(
    prolog_dir="/opt/slurm/etc/scripts/prolog.d", epilog_dir="/opt/slurm/etc/scripts/epilog.d"
)
#: The head node bootstrap step that installs the pieces.
SLURM_SCRIPTS_STEP = "slurm-scripts"
_FLAGS = "PrologFlags"

#: ParallelCluster's own pieces (cookbook recipes/config/config_health_check.rb, see the module notes).
PCLUSTER_HEALTH_CHECK_MANAGER = "90_pcluster_health_check_manager"
PCLUSTER_EPILOG_NOOP = "90_pcluster_noop"
#: The node checks' prolog (:mod:`.health`): it must run first, so it sorts after every other name.
NODE_CHECKS_PROLOG_NAME = "95_fmconstructs_node_checks.sh"
_IMEX_PROLOG_NAME = IMEX_PROLOG_PATH.rsplit("/", 1)[1]
#: The intended run order of every piece in ParallelCluster's ``prolog.d`` (first runs first), fmconstructs' and
#: ParallelCluster's own; under Slurm's reverse alphabetical glob each name must sort below the one before it.
PROLOG_ORDER: tuple[str, ...] = (
    NODE_CHECKS_PROLOG_NAME,
    _IMEX_PROLOG_NAME,
    PCLUSTER_HEALTH_CHECK_MANAGER,
    PARALLELCLUSTER_APP_METRICS_NAME,
    PARALLELCLUSTER_JOB_MAPPING_NAME,
)
#: The same for ``epilog.d``.
EPILOG_ORDER: tuple[str, ...] = (
    PCLUSTER_EPILOG_NOOP,
    PARALLELCLUSTER_APP_METRICS_NAME,
    PARALLELCLUSTER_JOB_MAPPING_NAME,
)
#: Names earlier releases installed and this one no longer does: removed where the pieces are installed.
RETIRED_NAMES: dict[SlurmHook, tuple[str, ...]] = {SlurmHook.PROLOG: ("85_fmconstructs_node_checks.sh",)}
#: Names that belong to fmconstructs' own prologs or to ParallelCluster: refused for pieces you register.
_RESERVED: dict[SlurmHook, frozenset[str]] = {
    SlurmHook.PROLOG: frozenset({NODE_CHECKS_PROLOG_NAME, _IMEX_PROLOG_NAME, PCLUSTER_HEALTH_CHECK_MANAGER}),
    SlurmHook.EPILOG: frozenset({PCLUSTER_EPILOG_NOOP}),
}


def retire_commands(hook: SlurmHook) -> list[str]:
    """Shell lines that remove the :data:`RETIRED_NAMES` of ``hook`` from ParallelCluster's directory."""
    directory = PARALLELCLUSTER_SLURM_SCRIPT_DIRS.directory(hook)
    return [f"rm -f {directory}/{name}" for name in RETIRED_NAMES.get(hook, ())]


def _check_reserved(pieces: Sequence[SlurmScriptPiece]) -> None:
    for index, piece in enumerate(pieces):
        if piece.name in _RESERVED[piece.hook] or piece.name in RETIRED_NAMES.get(piece.hook, ()):
            raise FmValidationError(
                f"pieces[{index}].name",
                piece.name,
                f"a name other than {', '.join(sorted(_RESERVED[piece.hook]))} (fmconstructs' and ParallelCluster's "
                f"own {piece.hook.value}s)",
            )


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
    _check_reserved(checked)
    flags = check_str_sequence("prolog_flags", prolog_flags)
    if bootstrap is not None:
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        cluster._check_unattached("bootstrap", bootstrap)
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
