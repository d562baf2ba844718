"""ParallelCluster's prolog.d/epilog.d: Slurm runs a glob's files in reverse alphabetical order (Slurm "Prolog and
Epilog Guide"), so the names the library installs must sort so that the intended order (PROLOG_ORDER, EPILOG_ORDER,
first first) is the order slurmd runs them; reserved and retired names are refused for registered pieces."""

from __future__ import annotations

import pytest

from fmconstructs.compute.slurm_scripts import SlurmHook, SlurmRunOrder, SlurmScriptPiece, run_order
from fmconstructs.errors import FmValidationError
from fmconstructs.observability.slurm_job_mapping import (
    PARALLELCLUSTER_APP_METRICS_NAME,
    PARALLELCLUSTER_JOB_MAPPING_NAME,
)
from fmconstructs.parallelcluster.health import PROLOG_DISPATCH_PATH
from fmconstructs.parallelcluster.imex import IMEX_PROLOG_PATH
from fmconstructs.parallelcluster.slurm_scripts import (
    EPILOG_ORDER,
    NODE_CHECKS_PROLOG_NAME,
    PARALLELCLUSTER_SLURM_SCRIPT_DIRS,
    PCLUSTER_HEALTH_CHECK_MANAGER,
    PROLOG_ORDER,
    RETIRED_NAMES,
    retire_commands,
)

from tests.conftest import new_scene
from tests.support.parallelcluster import make_cluster


def _name(path: str) -> str:
    directory, _, name = path.rpartition("/")
    assert directory in (PARALLELCLUSTER_SLURM_SCRIPT_DIRS.prolog_dir, PARALLELCLUSTER_SLURM_SCRIPT_DIRS.epilog_dir)
    return name


def test_slurm_runs_the_installed_prologs_in_the_intended_order() -> None:
    installed = {
        _name(PROLOG_DISPATCH_PATH),  # node health
        _name(IMEX_PROLOG_PATH),  # IMEX
        PCLUSTER_HEALTH_CHECK_MANAGER,  # ParallelCluster's own
        PARALLELCLUSTER_APP_METRICS_NAME,
        PARALLELCLUSTER_JOB_MAPPING_NAME,
    }
    assert set(PROLOG_ORDER) == installed
    assert run_order(installed, SlurmRunOrder.SLURM_GLOB) == list(PROLOG_ORDER)
    assert PROLOG_ORDER[0] == NODE_CHECKS_PROLOG_NAME  # before ParallelCluster's 90_ and IMEX's 91_


def test_slurm_runs_the_installed_epilogs_in_the_intended_order() -> None:
    assert run_order(set(EPILOG_ORDER), SlurmRunOrder.SLURM_GLOB) == list(EPILOG_ORDER)


@pytest.mark.parametrize("order", [PROLOG_ORDER, EPILOG_ORDER])
def test_names_differ_in_their_leading_digits_so_no_locale_reorders_them(order: tuple[str, ...]) -> None:
    assert len({name[:2] for name in order}) == len(order)


def test_run_order_of_a_glob_is_reverse_alphabetical() -> None:
    # The guide's own example: "z-a -> Z-A -> 9-0".
    assert run_order(["9x", "Zx", "ax", "zx", "0x", "Ax"], SlurmRunOrder.SLURM_GLOB) == [
        "zx",
        "ax",
        "Zx",
        "Ax",
        "9x",
        "0x",
    ]
    assert run_order(["20-b", "10-a"], SlurmRunOrder.NAME) == ["10-a", "20-b"]


def test_the_earlier_node_checks_name_is_retired() -> None:
    assert RETIRED_NAMES[SlurmHook.PROLOG] == ("85_fmconstructs_node_checks.sh",)
    assert retire_commands(SlurmHook.PROLOG) == ["rm -f /opt/slurm/etc/scripts/prolog.d/85_fmconstructs_node_checks.sh"]
    assert retire_commands(SlurmHook.EPILOG) == []


def _piece(hook: SlurmHook, name: str) -> SlurmScriptPiece:
    return SlurmScriptPiece(hook=hook, name=name, text="#!/bin/bash\nexit 0\n")


@pytest.mark.parametrize(
    ("hook", "name"),
    [
        (SlurmHook.PROLOG, "95_fmconstructs_node_checks.sh"),
        (SlurmHook.PROLOG, "91_nvidia_imex_prolog.sh"),
        (SlurmHook.PROLOG, "90_pcluster_health_check_manager"),
        (SlurmHook.PROLOG, "85_fmconstructs_node_checks.sh"),
        (SlurmHook.EPILOG, "90_pcluster_noop"),
    ],
)
def test_add_slurm_scripts_refuses_reserved_and_retired_names(hook: SlurmHook, name: str) -> None:
    cluster = make_cluster(new_scene())
    with pytest.raises(FmValidationError, match=rf"pieces\[0\]\.name must be a name other than .*, got '{name}'"):
        cluster.add_slurm_scripts(_piece(hook, name))
