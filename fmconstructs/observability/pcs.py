"""One call to monitor an AWS PCS cluster: every node group of the cluster (present or added later) installs the
exporters, the EFA collector and a Prometheus agent that remote-writes to the workspace; the login node also
collects Slurm node states and jobs and runs the Slurm exporter; the node role gets ``aps:RemoteWrite`` on that
workspace only. By default the GPU nodes' prolog and epilog keep dcgm-exporter's HPC job mapping, so every GPU
series carries ``hpc_job`` (``job_mapping``).

Implemented as an Aspect on the cluster's stack so that node groups created after the call are covered too.
"""

from __future__ import annotations

import jsii
from aws_cdk import Aspects, IAspect, Stack
from constructs import IConstruct

from .._rules import warn
from .._validate import check_instance
from ..bootstrap.node_bootstrap import synthesizer_publishes_file_assets
from ..errors import FmValidationError, WarningId, add_warning
from ..pcs import PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup, PcsQueue
from ._checks import PrometheusDuration, check_prometheus_duration
from .app_metrics import AppMetricsSpec
from .collection import NodeLabels, check_cluster_label, node_collection_commands
from .job_mapping import JobMappingSpec
from .option_rules import job_mapping_fits_the_user_data
from .slurm_job_mapping import (
    JOB_MAPPING_PROLOG_FLAGS,
    PCS_APP_METRICS_NAME,
    PCS_JOB_MAPPING_NAME,
    app_metrics_pieces,
    check_app_metrics,
    check_job_mapping,
    job_mapping_pieces,
)
from .sources import ExporterSource
from .workspace import PrometheusWorkspace


@jsii.implements(IAspect)
class _MonitorPcsNodeGroups:
    def __init__(
        self,
        cluster: PcsCluster,
        workspace: PrometheusWorkspace,
        cluster_label: str,
        scrape_interval: str,
        exporter_source: ExporterSource,
        job_mapping: JobMappingSpec | None,
        slurm_exporter: bool,
    ) -> None:
        self._cluster = cluster
        self._slurm_exporter = slurm_exporter
        self._job_mapping = job_mapping
        self._exporter_source = exporter_source
        self._workspace = workspace
        self._cluster_label = cluster_label
        self._scrape_interval = scrape_interval
        self._done: set[str] = set()

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, PcsGpuNodeGroup | PcsLoginNodeGroup) or node.cluster is not self._cluster:
            return
        if node.node.path in self._done:
            return
        self._done.add(node.node.path)
        login = isinstance(node, PcsLoginNodeGroup)
        instance_type = node.instance_type if isinstance(node, PcsLoginNodeGroup) else node.instance_spec.instance_type
        labels = NodeLabels(
            cluster=self._cluster_label,
            node_group=node.node.id,
            queue="login" if login else _queues_of(node),
            instance_type=instance_type,
        )
        # Its own bootstrap step (and marker): the collectors install once, whatever else the node runs.
        node.bootstrap.add_step(
            "observability",
            node_collection_commands(
                remote_write_url=self._workspace.remote_write_url,
                region=Stack.of(node).region,
                labels=labels,
                login_node=login,
                scrape_interval=self._scrape_interval,
                exporter_source=self._exporter_source,
                job_mapping=None if login else self._job_mapping,
                slurm_exporter=self._slurm_exporter,
            ),
        )
        self._workspace.grant_remote_write(node.instance_profile.role)
        self._exporter_source.grant_read(node.instance_profile.role)


def _queues_of(node_group: PcsGpuNodeGroup | PcsLoginNodeGroup) -> str | None:
    """The Slurm partitions a node group serves, joined with '+' (queue name, or construct id when unnamed)."""
    names = sorted(
        queue.queue_name or queue.node.id
        for queue in Stack.of(node_group).node.find_all()
        if isinstance(queue, PcsQueue) and any(group is node_group for group in queue.node_groups)
    )
    return "+".join(names) or None


def monitor_pcs_cluster(
    cluster: PcsCluster,
    workspace: PrometheusWorkspace,
    *,
    cluster_label: str,
    scrape_interval: PrometheusDuration = "30s",
    exporter_source: ExporterSource | None = None,
    job_mapping: JobMappingSpec | bool | None = True,
    app_metrics: AppMetricsSpec | bool | None = True,
) -> None:
    """Send metrics from every node group of ``cluster`` to ``workspace``, labelled ``cluster=<cluster_label>``.

    :param cluster_label: 1-128 letters, digits or ``_.:/+-`` (a deploy-time value is fine: user data resolves it).
    :param scrape_interval: how often the node agents scrape: a positive Prometheus duration (``'30s'``, ``'1m30s'``,
        ``'500ms'``) or ``Duration``. Default ``'30s'``.
    :param exporter_source: where nodes get node_exporter, the Prometheus agent and dcgm-exporter:
        ``ExporterSource.IMAGE`` (installed by ``GpuNodeImage``; nothing is downloaded), ``ExporterSource.s3_mirror``
        (read on that prefix only) or ``ExporterSource.INTERNET`` (GitHub and nvcr.io at boot; the default). A failed
        install is logged and raises ``NodeBootstrapDownloadFailed``.
    :param job_mapping: label every GPU series with the Slurm job using the GPU (``hpc_job``, the numeric job id:
        bounded cardinality, no user or job name on GPU series): the cluster's ``Prolog``/``Epilog`` run the
        dcgm-exporter job mapping pieces on the GPU nodes, ``PrologFlags`` gets ``Alloc`` and the exporter reads the
        mapping (:mod:`~fmconstructs.observability.slurm_job_mapping`). ``True`` (default): the default
        :class:`~fmconstructs.observability.job_mapping.JobMappingSpec`; a spec to choose its directory; ``False`` or
        None: off. With the default, a cluster whose own ``slurm_settings`` set ``Prolog`` or ``Epilog`` is warned
        (``fmconstructs:job-mapping-skipped``) and left without the mapping (a spec given explicitly raises then),
        as is a stack whose synthesizer publishes no file assets (inline user data: no room within EC2's 16 KB).
    :param app_metrics: with the job mapping, also install the prolog/epilog that turn a job's declared metrics
        ports (``sbatch --comment="fm_metrics_ports=9300-9307"``) into targets the GPU nodes' agent scrapes as job
        ``fm-app`` (:mod:`~fmconstructs.observability.app_metrics`). ``True`` (default), an
        :class:`~fmconstructs.observability.app_metrics.AppMetricsSpec`, or ``False``/None: off.
    """
    check_instance("cluster", cluster, PcsCluster, "a PcsCluster")
    check_instance("workspace", workspace, PrometheusWorkspace, "a PrometheusWorkspace")
    check_cluster_label(cluster_label)
    interval = check_prometheus_duration("scrape_interval", scrape_interval, positive=True)
    source = ExporterSource.INTERNET if exporter_source is None else exporter_source
    check_instance("exporter_source", source, ExporterSource, "an ExporterSource")
    app = check_app_metrics("app_metrics", app_metrics)
    spec = _register_job_mapping(cluster, job_mapping, app)
    exporter = _slurm_exporter_fits(cluster)
    Aspects.of(Stack.of(cluster)).add(
        _MonitorPcsNodeGroups(cluster, workspace, cluster_label, interval, source, spec, exporter)
    )


def _slurm_exporter_fits(cluster: PcsCluster) -> bool:
    """Whether the login nodes run the Slurm exporter: not where the node set-up is inline user data (warned)."""
    if synthesizer_publishes_file_assets(Stack.of(cluster)):
        return True
    add_warning(
        cluster,
        WarningId.SLURM_EXPORTER_SKIPPED,
        "The login nodes run no Slurm exporter: this stack's synthesizer publishes no file assets (e.g. a "
        "StackSetStack's), so their set-up is inline user data and the exporter would take it past EC2's 16 KB; "
        "the per-job metrics (fm_slurm_job_info, fm_slurm_jobs_pending) and node states still run",
    )
    return False


def _register_job_mapping(
    cluster: PcsCluster, job_mapping: object, app: AppMetricsSpec | None
) -> JobMappingSpec | None:
    """The job mapping's pieces on the cluster (see ``monitor_pcs_cluster``); the spec, or None when off."""
    spec = check_job_mapping("job_mapping", job_mapping)
    if spec is None:
        return None
    # As the platform's node checks (platform/_health_wiring.py): inline user data has no room for the pieces.
    advice = job_mapping_fits_the_user_data(
        job_mapping_by_default=job_mapping is True,
        publishes_file_assets=synthesizer_publishes_file_assets(Stack.of(cluster)),
    )
    if advice is not None:
        warn(cluster, advice)
        return None
    pieces = (*job_mapping_pieces(spec, name=PCS_JOB_MAPPING_NAME), *app_metrics_pieces(app, name=PCS_APP_METRICS_NAME))
    try:
        cluster.add_slurm_scripts(*pieces, prolog_flags=JOB_MAPPING_PROLOG_FLAGS)
    except FmValidationError as error:
        if job_mapping is not True:
            raise
        add_warning(
            cluster,
            WarningId.JOB_MAPPING_SKIPPED,
            f"GPU series carry no hpc_job label: {error} (pass job_mapping=False to monitor_pcs_cluster to silence)",
        )
        return None
    return spec
