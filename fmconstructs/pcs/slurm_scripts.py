"""Prolog and epilog pieces on AWS PCS (:meth:`PcsCluster.add_slurm_scripts`).

PCS takes one cluster-level ``Prolog`` and one ``Epilog`` (custom settings, PCS API ``SlurmCustomSetting``). Once a
prolog piece is registered, the cluster's ``Prolog`` is :data:`~fmconstructs.pcs.health.PROLOG_RUNNER_PATH`, the
runner of :data:`~fmconstructs.pcs.health.PROLOG_DIR` that node health already uses (pieces run in name order:
``10-node-checks.sh``, e.g. ``20-dcgm-job-mapping.sh``, then ``91-nvidia-imex.sh``); once an epilog piece is,
the cluster's ``Epilog`` is :data:`EPILOG_RUNNER_PATH`, the runner of :data:`EPILOG_DIR`
(:func:`fmconstructs.health.install.render_epilog_runner`: every piece runs, the first failure is the status).

The settings are rendered lazily (the cluster's ``SlurmCustomSettings`` is resolved at synthesis), so a piece
registered after the node groups were created still sets them; the files reach every GPU node group of the cluster
through an Aspect (bootstrap step ``slurm-scripts``, added at synthesis before the bootstraps are packaged).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jsii
from aws_cdk import Aspects, IAspect, Stack
from constructs import IConstruct

from ..compute.slurm_scripts import SlurmHook, SlurmScriptDirs, SlurmScriptPiece, slurm_script_files
from ..health.install import render_epilog_runner, render_prolog_runner
from .health import IMEX_PROLOG_LINK, PROLOG_DIR, PROLOG_RUNNER_PATH
from .user_data import IMEX_PROLOG_PATH

if TYPE_CHECKING:
    from .cluster import PcsCluster

__all__ = ["EPILOG_DIR", "EPILOG_RUNNER_PATH", "PCS_SLURM_SCRIPT_DIRS", "SLURM_SCRIPTS_STEP"]

#: The cluster's ``Epilog`` once an epilog piece is registered, and the directory it runs.
EPILOG_RUNNER_PATH = "/opt/fmconstructs/slurm/epilog.sh"
EPILOG_DIR = "/opt/fmconstructs/slurm/epilog.d"
#: Where PCS nodes keep the pieces.
PCS_SLURM_SCRIPT_DIRS = SlurmScriptDirs(prolog_dir=PROLOG_DIR, epilog_dir=EPILOG_DIR)
#: The bootstrap step that installs them on every GPU node group.
SLURM_SCRIPTS_STEP = "slurm-scripts"
#: Names the cluster's own pieces take (node health, IMEX): refused for registered pieces.
RESERVED_PROLOG_NAMES = ("10-node-checks.sh", IMEX_PROLOG_LINK.rsplit("/", 1)[1])


def node_group_files(
    cluster: PcsCluster, pieces: tuple[SlurmScriptPiece, ...]
) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """What a GPU node group installs for ``pieces``: the runners (the prolog runner and the IMEX link only when node
    health does not install them already), then the pieces."""
    files: dict[str, tuple[str, int]] = {}
    commands: list[str] = []
    hooks = {piece.hook for piece in pieces}
    if SlurmHook.PROLOG in hooks and not cluster.runs_prolog_checks:
        files[PROLOG_RUNNER_PATH] = (render_prolog_runner(PROLOG_DIR), 0o755)
        if cluster.imex_enabled:
            commands += [f"mkdir -p {PROLOG_DIR}", f"ln -sfn {IMEX_PROLOG_PATH} {IMEX_PROLOG_LINK}"]
    if SlurmHook.EPILOG in hooks:
        files[EPILOG_RUNNER_PATH] = (render_epilog_runner(EPILOG_DIR), 0o755)
    files.update(slurm_script_files(pieces, PCS_SLURM_SCRIPT_DIRS))
    return files, commands


@jsii.implements(IAspect)
class InstallSlurmScripts:
    """At synthesis: the ``slurm-scripts`` step on every GPU node group of the cluster (present or added later)."""

    def __init__(self, cluster: PcsCluster) -> None:
        self._cluster = cluster
        self._done: set[str] = set()

    @classmethod
    def register(cls, cluster: PcsCluster) -> None:
        # Default priority (500): below the bootstraps' packaging (FINALIZE_PRIORITY, 900).
        Aspects.of(Stack.of(cluster)).add(cls(cluster))

    def visit(self, node: IConstruct) -> None:
        from .node_group import PcsGpuNodeGroup

        if not isinstance(node, PcsGpuNodeGroup) or node.cluster is not self._cluster:
            return
        if node.node.path in self._done:
            return
        self._done.add(node.node.path)
        files, commands = node_group_files(self._cluster, self._cluster.slurm_script_pieces)
        node.bootstrap.add_step(SLURM_SCRIPTS_STEP, commands, files=files)
