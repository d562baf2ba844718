"""The dcgm-exporter HPC job mapping (:mod:`.job_mapping`) as Slurm prolog and epilog pieces, for every Slurm backend.

One renderer, two pieces (:func:`job_mapping_pieces`); a backend chooses only the file name and directory:

- AWS PCS: ``/opt/fmconstructs/slurm/prolog.d/20-dcgm-job-mapping.sh`` and ``epilog.d/20-dcgm-job-mapping.sh``, run by
  the cluster's ``Prolog``/``Epilog`` runners after the node checks (``10-``) and before IMEX (``91-``)
  (:meth:`fmconstructs.pcs.PcsCluster.add_slurm_scripts`; ``monitor_pcs_cluster`` registers them by default).
- ParallelCluster: ``/opt/slurm/etc/scripts/prolog.d/20_fmconstructs_dcgm_job_mapping.sh`` and the same name in
  ``epilog.d`` (:func:`enable_parallelcluster_job_mapping`).

**PrologFlags=Alloc** (:data:`JOB_MAPPING_PROLOG_FLAGS`): by default slurmd runs the ``Prolog`` at the "First job or
job step initiation on that node"; "PrologFlags=Alloc will force the script to be executed at job allocation" (Slurm
"Prolog and Epilog Guide", https://slurm.schedmd.com/prolog_epilog.html, first table). Without it, a node of an
allocation where no step has started yet (``salloc`` before ``srun``, the other nodes of a batch job before its
first ``srun``) has no mapping, so its allocated but idle GPUs carry no ``hpc_job`` and the waste they are goes
unattributed. ``SLURM_JOB_GPUS`` itself is listed for both Prolog and Epilog by the same guide (no flag needed).

**Application metrics** ride along (:func:`app_metrics_pieces`, :mod:`.app_metrics`): a job that declares its metrics
ports (``--comment="fm_metrics_ports=9300-9307"``) gets a file-discovery entry the GPU node's agent scrapes as job
``fm-app`` (``30-fm-app-metrics.sh`` on PCS, ``30_fmconstructs_app_metrics.sh`` on ParallelCluster), installed with
the job mapping's pieces by the same call.

Bounded cardinality: only ``hpc_job`` (the numeric job id) is added to GPU series, one value per job running on a GPU,
and the epilog removes it when the job ends (see :mod:`.job_mapping`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compute.slurm_scripts import SlurmHook, SlurmScriptPiece
from ..errors import FmTypeError
from .app_metrics import AppMetricsSpec, render_app_metrics_epilog, render_app_metrics_prolog
from .job_mapping import JobMappingSpec, render_job_mapping_epilog, render_job_mapping_prolog

if TYPE_CHECKING:
    from ..bootstrap import NodeBootstrap
    from ..parallelcluster import CustomActionEvent, ParallelCluster

__all__ = [
    "JOB_MAPPING_PROLOG_FLAGS",
    "PARALLELCLUSTER_APP_METRICS_NAME",
    "PARALLELCLUSTER_JOB_MAPPING_NAME",
    "PCS_APP_METRICS_NAME",
    "PCS_JOB_MAPPING_NAME",
    "app_metrics_pieces",
    "check_app_metrics",
    "check_job_mapping",
    "enable_parallelcluster_job_mapping",
    "job_mapping_pieces",
]

#: The pieces' file names (a number after the node checks' and before IMEX's in each backend's directory).
PCS_JOB_MAPPING_NAME = "20-dcgm-job-mapping.sh"
PARALLELCLUSTER_JOB_MAPPING_NAME = "20_fmconstructs_dcgm_job_mapping.sh"
PCS_APP_METRICS_NAME = "30-fm-app-metrics.sh"
PARALLELCLUSTER_APP_METRICS_NAME = "30_fmconstructs_app_metrics.sh"
#: See the module notes (Slurm "Prolog and Epilog Guide").
JOB_MAPPING_PROLOG_FLAGS = ("Alloc",)


def check_job_mapping(parameter: str, value: object) -> JobMappingSpec | None:
    """``True`` -> the default :class:`JobMappingSpec`, ``False``/``None`` -> off, or a :class:`JobMappingSpec`."""
    if value is True:
        return JobMappingSpec()
    if value is False or value is None:
        return None
    if not isinstance(value, JobMappingSpec):
        raise FmTypeError(parameter, value, f"True, False, None or a JobMappingSpec (got a {type(value).__name__})")
    return value


def check_app_metrics(parameter: str, value: object) -> AppMetricsSpec | None:
    """``True`` -> the default :class:`AppMetricsSpec`, ``False``/``None`` -> off, or an :class:`AppMetricsSpec`."""
    if value is True:
        return AppMetricsSpec()
    if value is False or value is None:
        return None
    if not isinstance(value, AppMetricsSpec):
        raise FmTypeError(parameter, value, f"True, False, None or an AppMetricsSpec (got a {type(value).__name__})")
    return value


def app_metrics_pieces(spec: AppMetricsSpec | None, *, name: str) -> tuple[SlurmScriptPiece, ...]:
    """The application metrics' prolog and epilog piece, both called ``name`` (none when ``spec`` is None)."""
    if spec is None:
        return ()
    return (
        SlurmScriptPiece(hook=SlurmHook.PROLOG, name=name, text=render_app_metrics_prolog(spec)),
        SlurmScriptPiece(hook=SlurmHook.EPILOG, name=name, text=render_app_metrics_epilog(spec)),
    )


def job_mapping_pieces(spec: JobMappingSpec, *, name: str) -> tuple[SlurmScriptPiece, SlurmScriptPiece]:
    """The prolog and the epilog piece of ``spec``, both called ``name``."""
    return (
        SlurmScriptPiece(hook=SlurmHook.PROLOG, name=name, text=render_job_mapping_prolog(spec)),
        SlurmScriptPiece(hook=SlurmHook.EPILOG, name=name, text=render_job_mapping_epilog(spec)),
    )


def enable_parallelcluster_job_mapping(
    cluster: ParallelCluster,
    spec: JobMappingSpec | None = None,
    *,
    bootstrap: NodeBootstrap | None = None,
    event: CustomActionEvent | None = None,
    app_metrics: AppMetricsSpec | bool | None = True,
) -> NodeBootstrap:
    """Install the job mapping's prolog and epilog in ParallelCluster's shared ``prolog.d``/``epilog.d`` (a head node
    bootstrap: ``bootstrap``, or a new one run as the head node's ``event``, default OnNodeConfigured; OnNodeStart
    when that event has another bootstrap, as the IMEX prolog does: ParallelCluster User Guide
    "support-nvidia-imex-p6e-gb200-instance") and merge ``PrologFlags=Alloc``.
    Give the same ``spec`` to the GPU queues' ``node_collection_commands(job_mapping=...)``. ``app_metrics``: also
    install the application metrics' pieces (default True; see the module notes). Returns the bootstrap."""
    from ..parallelcluster import CustomActionEvent, ParallelCluster

    if not isinstance(cluster, ParallelCluster):
        raise FmTypeError("cluster", cluster, f"a ParallelCluster (got a {type(cluster).__name__})")
    checked = check_job_mapping("spec", JobMappingSpec() if spec is None else spec)
    assert checked is not None
    app = check_app_metrics("app_metrics", app_metrics)
    return cluster.add_slurm_scripts(
        *job_mapping_pieces(checked, name=PARALLELCLUSTER_JOB_MAPPING_NAME),
        *app_metrics_pieces(app, name=PARALLELCLUSTER_APP_METRICS_NAME),
        prolog_flags=JOB_MAPPING_PROLOG_FLAGS,
        bootstrap=bootstrap,
        event=event or CustomActionEvent.ON_NODE_CONFIGURED,
    )
