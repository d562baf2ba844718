"""Cluster health for :class:`~fmconstructs.platform.TrainingPlatform`: :class:`PlatformHealth` and its wiring.

``TrainingPlatform(health=PlatformHealth())`` (the default) turns on, per backend, what issue 20 built below and above
the backends; ``health=None`` turns all of it off.

- **PCS**: node-join checks through ``PcsCluster(node_health=...)`` (boot gate and prolog checks on the GPU group);
  the NCCL check on the login node group: a systemd timer submits :func:`~fmconstructs.health.render_sbatch`'s job
  with the PCS ``sbatch`` (PCS custom Slurm settings have no ``ScronParameters``) and publish units copy its metrics
  into node exporter's textfile directory (the collectors' own); remediation ``RemediationTarget.pcs`` (the login
  node group runs the Slurm commands, the GPU group is remediated). No login node group: no NCCL check and no
  remediation, with the warning ``platform-health-skipped``.
- **ParallelCluster**: ``enable_node_health`` with the ``node-health`` step in the GPU queue's own OnNodeConfigured
  bootstrap (after the NVMe scratch and the collectors) and the prolog dispatch on the head node; the NCCL check as
  root's scrontab on the head node (``ScronParameters=enable`` in ``CustomSlurmSettings``), with the collectors and
  the publish units there, all in one head node OnNodeConfigured bootstrap; remediation
  ``RemediationTarget.parallelcluster``.
- **EKS**: ``GpuNodeGroup(node_checks=<the NodeHealthOptions>)`` (nodes join tainted, the gate DaemonSet runs the
  same BOOT checks as the Slurm gates, DCGM included, and lifts the taint); node auto
  repair with the EKS node monitoring agent stays the node group's default whatever ``health`` says; the NCCL check
  only with ``nccl_image`` (a CronJob that creates the ``MPIJob`` of
  :func:`~fmconstructs.health.render_mpijob_manifests` on ``spec.schedule``, results on the storage claim, served
  to the workspace's scraper by :func:`~fmconstructs.health.render_scheduled_nccl_manifests`; the Kubeflow MPI
  operator must be installed: warning ``platform-health-eks-nccl``); remediation ``RemediationTarget.eks``.
- **HyperPod** (Slurm): node-join checks through ``HyperPodCluster(node_health=...)`` (the boot gate from the GPU
  group's ``OnInitComplete`` set-up, drains on failure and never fails it; the prolog checks in the AMI's
  ``prolog.d``; DCGM left to HyperPod's ``InstanceStress`` deep health check; none with ``base_config_dir``); no NCCL
  check (its ``InstanceConnectivity`` deep health check tests the fabric: an explicit NCCL spec is refused);
  remediation ``RemediationTarget.hyperpod`` (BatchReplaceClusterNodes / BatchRebootClusterNodes; no Slurm commands,
  SSM Run Command does not reach HyperPod nodes). HyperPod's own deep health checks and node recovery
  (``NodeRecovery``) stay on. HyperPod on EKS: nothing new (HyperPod's own checks and recovery; a ``PlatformHealth``
  with node checks or remediation changes nothing there).

- **NCCL default** (``nccl=True``): a 2-node check (``gpus_per_node`` = the type's GPUs, partition = the platform's
  queue, ``instance_type`` = the platform's, whose published figure gives the baseline's floor, state in
  ``<mount point>/fmconstructs/nccl``) on PCS and ParallelCluster when ``nodes`` is known and >= 2
  and the platform has a file system (the job keeps its logs, baseline and metrics there); on PCS also a login node
  group. Anything missing turns the default off quietly; an explicit :class:`~fmconstructs.health.NcclCheckSpec`
  where it cannot run is refused. Every run takes ``nodes`` whole nodes for up to ``time_limit_minutes`` (with
  On-Demand capacity scaled to zero, it launches them). The binary is FmImages' ``/opt/nccl-tests`` build: another
  AMI fails the check (alert ``NcclCheckFailed``) unless the spec's ``all_reduce_perf`` points at its own.
- **NCCL alerts**: :func:`~fmconstructs.health.nccl_rule_group` joins a *new* workspace's rule groups when the Slurm
  check is on; with an existing workspace, add it there yourself (``extra_rule_groups``).
- **Remediation**: :class:`~fmconstructs.remediation.NodeRemediation` on the workspace's alert topic, only with
  observability (no alert topic, nothing triggers it). The policy is a dry run (notices only) unless
  ``replace_nodes=True``, the explicit opt-in that turns the policy's ``dry_run`` off; a
  ``RemediationPolicy(dry_run=False)`` without ``replace_nodes=True`` is refused, so replacement is never turned on
  by a policy passed around for another purpose.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from .._validate import check_bool, check_instance, known
from ..bootstrap import NodeBootstrap
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning
from ..health import (
    PARALLELCLUSTER_SLURM_BIN_DIR,
    SCRONTAB_SLURM_SETTINGS,
    NcclAlertOptions,
    NcclCheckSpec,
    NodeHealthOptions,
    pcs_slurm_bin_dir,
    render_publish_units,
    render_sbatch,
    render_scheduled_nccl_manifests,
    render_scrontab,
    render_timer_units,
)
from ..health.nccl import JOB_NAME, REPORT_PATH, SCRIPT_NAME, TEXTFILE_DIR, report_script
from ..health.nccl_eks import _check_image
from ..observability.collection import NodeLabels, node_collection_commands
from ..observability.sources import DOWNLOAD_FAILED_MARKER
from ..observability.workspace import PrometheusWorkspace
from ..remediation import NodeRemediation, RemediationPolicy, RemediationTarget
from . import rules

__all__ = ["NCCL_DIR", "NCCL_STEP", "PlatformHealth", "platform_nccl_spec"]

#: Where the NCCL job's files are installed on the login or head node (the script is then copied to the state dir).
NCCL_DIR = "/opt/fmconstructs/nccl"
#: The bootstrap step that installs the NCCL check on the login (PCS) or head (ParallelCluster) node.
NCCL_STEP = "nccl-check"
_SUBMIT = f"{NCCL_DIR}/submit.sh"
_UNIT_DIR = "/etc/systemd/system"


@dataclass(frozen=True, kw_only=True)
class PlatformHealth:
    """What :class:`~fmconstructs.platform.TrainingPlatform` turns on for cluster health (see the module docstring).

    :param node_checks: node-join checks (:class:`~fmconstructs.health.NodeHealthOptions`) on PCS,
        ParallelCluster and EKS (the EKS gate runs the same BOOT checks for these options). None: off. Default
        ``NodeHealthOptions()``. HyperPod Slurm: the same checks without DCGM where HyperPod's deep health check
        runs it; HyperPod on EKS: its own deep health checks only.
    :param nccl: the scheduled NCCL all-reduce check: True (default) for the default check where the platform can run
        it, False or None for none, or a :class:`~fmconstructs.health.NcclCheckSpec` (refused where it cannot run;
        ``partition`` None becomes the platform's queue).
    :param nccl_image: EKS only: the nccl-tests container image, pinned by tag or digest (no AWS image is
        published that the library could verify, :mod:`fmconstructs.health.nccl_eks`). Without it EKS runs no NCCL
        check. Default None.
    :param nccl_alerts: the NCCL rule group's options (:class:`~fmconstructs.health.NcclAlertOptions`). Default: its
        defaults (the check's own tolerance, ``NcclCheckSpec.drop_percent`` 10 %, below the rolling baseline or the
        floor; overdue against the schedule plus 1 h).
    :param remediation: the remediation handler's :class:`~fmconstructs.remediation.RemediationPolicy`, wired only
        with observability (the alert topic). None: no handler. Default ``RemediationPolicy()`` (dry run).
    :param replace_nodes: the opt-in to act on nodes: True turns the policy's ``dry_run`` off (drain, reboot and
        replace within ``max_replacements_per_hour``). Default False: notices only.
    """

    node_checks: NodeHealthOptions | None = field(default_factory=NodeHealthOptions)
    nccl: NcclCheckSpec | bool | None = True
    nccl_image: str | None = None
    nccl_alerts: NcclAlertOptions = field(default_factory=NcclAlertOptions)
    remediation: RemediationPolicy | None = field(default_factory=RemediationPolicy)
    replace_nodes: bool = False

    def __post_init__(self) -> None:
        if self.node_checks is not None:
            check_instance("node_checks", self.node_checks, NodeHealthOptions, "a NodeHealthOptions or None")
        if self.nccl is not None and not isinstance(self.nccl, bool | NcclCheckSpec):
            raise FmTypeError("nccl", self.nccl, "an NcclCheckSpec, True (the default check), False or None")
        if self.nccl_image is not None:
            _check_image(self.nccl_image)
            rules.nccl_image_needs_nccl(nccl_image=self.nccl_image, nccl=self.nccl)
        check_instance("nccl_alerts", self.nccl_alerts, NcclAlertOptions, "an NcclAlertOptions")
        if self.remediation is not None:
            check_instance("remediation", self.remediation, RemediationPolicy, "a RemediationPolicy or None")
        check_bool("replace_nodes", self.replace_nodes)
        rules.replace_nodes_needs_remediation(
            replace_nodes=self.replace_nodes, has_remediation=self.remediation is not None
        )
        if self.remediation is not None and not self.remediation.dry_run:
            rules.remediation_acts_only_with_replace_nodes(dry_run=False, replace_nodes=self.replace_nodes)

    @property
    def remediation_policy(self) -> RemediationPolicy | None:
        """The policy the handler gets: ``remediation`` with ``dry_run`` off when ``replace_nodes`` is True."""
        if self.remediation is None:
            return None
        return dataclasses.replace(self.remediation, dry_run=not self.replace_nodes)

    @property
    def node_checks_on(self) -> bool:
        return self.node_checks is not None and self.node_checks.enabled


# --- NCCL: which check, if any ------------------------------------------------------------------------------------
def platform_nccl_spec(
    health: PlatformHealth | None,
    *,
    backend: str,
    nodes: Any,
    gpus_per_node: int,
    mount_point: str | None,
    queue: str | None,
    login_nodes: int,
    instance_type: str | None = None,
) -> NcclCheckSpec | None:
    """The NCCL check the platform runs (None: none): the default where it can run, an explicit spec checked. The
    platform's ``instance_type`` fills the spec's (the catalog's published figure gives the baseline's floor)."""
    if health is None or health.nccl is None or health.nccl is False:
        return None
    # health.nccl_image on another backend than EKS: refused up front (platform.backends, Unsupported).
    explicit = isinstance(health.nccl, NcclCheckSpec)
    problem = _nccl_problem(health, backend=backend, nodes=nodes, mount_point=mount_point, explicit=explicit)
    if problem is not None:
        if explicit or health.nccl_image is not None:
            raise FmValidationError("health.nccl", health.nccl, problem)
        return None
    assert mount_point is not None
    if backend == "pcs" and login_nodes == 0:
        return None  # skipped with a warning once the platform exists (warn_pcs_nccl_skipped)
    if isinstance(health.nccl, NcclCheckSpec):
        spec = health.nccl
        _check_explicit(spec, gpus_per_node=gpus_per_node, nodes=nodes, mount_point=mount_point)
        if spec.partition is None and queue is not None:
            spec = dataclasses.replace(spec, partition=queue)
        if spec.instance_type is None and instance_type is not None:
            spec = dataclasses.replace(spec, instance_type=instance_type)
        return spec
    return NcclCheckSpec(
        nodes=2,
        gpus_per_node=gpus_per_node,
        state_dir=f"{mount_point}/fmconstructs/nccl",
        partition=queue,
        instance_type=instance_type,
    )


def _nccl_problem(
    health: PlatformHealth, *, backend: str, nodes: Any, mount_point: str | None, explicit: bool
) -> str | None:
    """Why no NCCL check can run here (None: it can)."""
    if backend == "hyperpod":
        return "None or False with HyperPod (its InstanceConnectivity deep health check tests the fabric)"
    if backend == "eks" and health.nccl_image is None:
        return "None or False on EKS without PlatformHealth(nccl_image=...) (the MPIJob needs a pinned image)"
    if mount_point is None:
        return "None or False without storage (the check keeps its logs, baseline and metrics on the file system)"
    if not known(nodes):
        return None if explicit else "a platform whose node count is known at synthesis"
    if nodes < 2:
        return f"None or False with {nodes} node (the check runs across at least 2 nodes)"
    return None


def _check_explicit(spec: NcclCheckSpec, *, gpus_per_node: int, nodes: Any, mount_point: str) -> None:
    rules.nccl_spec_fits_the_platform(
        gpus_per_node=spec.gpus_per_node,
        nodes=spec.nodes,
        state_dir=spec.state_dir,
        instance_gpus=gpus_per_node,
        platform_nodes=nodes,
        mount_point=mount_point,
    )


# --- NCCL: how each backend runs it ---------------------------------------------------------------------------------
def _submit_script(sbatch: str, squeue: str) -> str:
    """Submit unless a run is pending or running (one per cluster when several login nodes have the timer)."""
    return (
        "#!/bin/sh\n# fmconstructs: submit the NCCL check unless one is queued or running.\n"
        f'if [ -n "$({shlex.quote(squeue)} -h -n {JOB_NAME} -o %i)" ]; then exit 0; fi\n'
        f'exec {shlex.quote(sbatch)} "$@"\n'
    )


def _units(units: dict[str, str]) -> dict[str, tuple[str, int]]:
    return {f"{_UNIT_DIR}/{name}": (body, 0o644) for name, body in units.items()}


def _install_script(spec: NcclCheckSpec) -> list[str]:
    local = f"{NCCL_DIR}/{SCRIPT_NAME}"
    state = shlex.quote(spec.state_dir)
    return [f"mkdir -p {state} {TEXTFILE_DIR}", f"install -m 0755 {local} {shlex.quote(spec.script_path)}"]


def wire_pcs_nccl(login_group: Any, spec: NcclCheckSpec, *, slurm_version: str) -> None:
    """PCS: the job script, a timer that submits it with the PCS ``sbatch`` and the publish units, on the login
    node group (PCS custom Slurm settings have no ``ScronParameters``, :mod:`fmconstructs.health.nccl`)."""
    bin_dir = pcs_slurm_bin_dir(slurm_version)
    files = {
        f"{NCCL_DIR}/{SCRIPT_NAME}": (render_sbatch(spec), 0o755),
        REPORT_PATH: (report_script(), 0o755),  # the queue probe of the publish unit
        _SUBMIT: (_submit_script(f"{bin_dir}/sbatch", f"{bin_dir}/squeue"), 0o755),
        **_units(render_timer_units(spec, sbatch=_SUBMIT)),
        **_units(render_publish_units(spec, squeue=f"{bin_dir}/squeue")),
    }
    commands = [
        *_install_script(spec),
        "systemctl daemon-reload",
        "systemctl enable --now fm-nccl-check.timer fm-nccl-publish.timer",
    ]
    login_group.bootstrap.add_step(NCCL_STEP, commands, files=files)


def parallelcluster_head_steps(head: NodeBootstrap, cluster: Any, spec: NcclCheckSpec) -> None:
    """ParallelCluster: root's scrontab on the head node (``ScronParameters=enable`` added to the cluster's
    ``CustomSlurmSettings``) and the publish units there. Scrontab is installed from the head node's
    ``OnNodeConfigured`` action, after ParallelCluster configured Slurm (slurmctld is started by the cookbook's
    recipes/config/config_head_node.rb, before ``fetch_and_run -postinstall``; aws-parallelcluster-cookbook f75d84c):
    :func:`scrontab_install_commands` tries for five minutes, then says so loudly."""
    scrontab = f"{NCCL_DIR}/scrontab"
    files = {
        f"{NCCL_DIR}/{SCRIPT_NAME}": (render_sbatch(spec), 0o755),
        REPORT_PATH: (report_script(), 0o755),  # the queue probe of the publish unit
        scrontab: (render_scrontab(spec), 0o644),
        **_units(render_publish_units(spec, squeue=f"{PARALLELCLUSTER_SLURM_BIN_DIR}/squeue")),
    }
    commands = [
        *_install_script(spec),
        *scrontab_install_commands(f"{PARALLELCLUSTER_SLURM_BIN_DIR}/scrontab", scrontab),
        "systemctl daemon-reload",
        "systemctl enable --now fm-nccl-publish.timer",
    ]
    head.add_step(NCCL_STEP, commands, files=files)
    cluster.add_custom_slurm_settings(SCRONTAB_SLURM_SETTINGS)


#: The textfile of the NCCL check's install report (its own file: the collectors rewrite ``fm_bootstrap.prom``; node
#: exporter merges a metric without HELP across files, prometheus/node_exporter collector/textfile.go at 61c461c).
NCCL_INSTALL_TEXTFILE = "fm_bootstrap_nccl.prom"
#: The ``component`` label of the install report.
NCCL_INSTALL_COMPONENT = "nccl-check"
#: Attempts and the pause between them: five minutes for slurmctld to take root's scrontab.
SCRONTAB_ATTEMPTS, SCRONTAB_PAUSE_SECONDS = 30, 10


def scrontab_install_commands(
    scrontab_bin: str,
    scrontab: str,
    *,
    textfile_dir: str = TEXTFILE_DIR,
    attempts: int = SCRONTAB_ATTEMPTS,
    pause_seconds: int = SCRONTAB_PAUSE_SECONDS,
) -> list[str]:
    """Install ``scrontab`` as root's, retried; the outcome as ``fm_bootstrap_download_failed{component="nccl-check"}``
    (0 or 1, the ``NodeBootstrapDownloadFailed`` alert) and, on failure, one ``FMCONSTRUCTS-DOWNLOAD-FAILED
    component=nccl-check:`` line in the boot log. The step goes on either way: the head node's later steps (prolog
    checks, topology) must still run, and failing the head node's OnNodeConfigured fails the cluster's creation."""
    textfile = f"{textfile_dir}/{NCCL_INSTALL_TEXTFILE}"
    return [
        "fm_nccl_install() {",
        f"  local try; for try in $(seq {attempts}); do",
        f"    {shlex.quote(scrontab_bin)} {shlex.quote(scrontab)} && return 0",
        f'    [ "$try" -lt {attempts} ] && sleep {pause_seconds}',
        "  done",
        "  return 1",
        "}",
        "if fm_nccl_install; then fm_nccl_failed=0; else",
        "  fm_nccl_failed=1",
        f'  echo "{DOWNLOAD_FAILED_MARKER} component={NCCL_INSTALL_COMPONENT}: scrontab {scrontab} (root) was not '
        f"accepted in {attempts} tries over {attempts * pause_seconds // 60} minutes "
        '(slurmctld down, or ScronParameters=enable missing from slurm.conf): the NCCL check will not run" >&2',
        "fi",
        f'echo "fm_bootstrap_download_failed{{component=\\"{NCCL_INSTALL_COMPONENT}\\"}} $fm_nccl_failed" '
        f'>"{textfile}.tmp" && mv "{textfile}.tmp" "{textfile}"',
    ]


def parallelcluster_head_collectors(
    head: NodeBootstrap, workspace: PrometheusWorkspace, *, cluster_name: str, instance_type: str
) -> list[iam.PolicyStatement]:
    """The collectors on the head node (its node exporter publishes the NCCL metrics; as the cluster's Slurm client
    it also runs the Slurm exporter and the per-job textfile, ``login_node=True``); returns its statements."""
    labels = NodeLabels(cluster=cluster_name, queue="head", instance_type=instance_type)
    head.add_step(
        "observability",
        node_collection_commands(
            remote_write_url=workspace.remote_write_url, region=Stack.of(head).region, labels=labels, login_node=True
        ),
    )
    return [iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.workspace_arn])]


def wire_eks_nccl(
    scope: Construct, cluster: Any, spec: NcclCheckSpec, *, image: str, instance_type: str, claim: str, namespace: str
) -> Any:
    """EKS: the CronJob, MPIJob manifest and metrics Service of
    :func:`~fmconstructs.health.render_scheduled_nccl_manifests`, after the claim."""
    manifests = render_scheduled_nccl_manifests(
        spec, image=image, instance_type=instance_type, results_claim=claim, namespace=namespace
    )
    manifest = cluster.cluster.add_manifest("NcclCheck", *manifests)
    add_warning(
        scope,
        WarningId.PLATFORM_HEALTH_EKS_NCCL,
        "The NCCL check on EKS creates a Kubeflow MPIJob (kubeflow.org/v2beta1) from the CronJob "
        f"{namespace}/{JOB_NAME} on '{spec.schedule}' (UTC): install the MPI operator (v0.5.0 or later, for "
        "launcherCreationPolicy) on the cluster, or each run fails. "
        f"Run it now with `kubectl create job --from=cronjob/{JOB_NAME} -n {namespace} <name>`. Logs and "
        f"baseline stay on the claim {namespace}/{claim}; the metrics are scraped from the Service fm-nccl-metrics.",
    )
    return manifest


# --- remediation ----------------------------------------------------------------------------------------------------
def add_remediation(
    scope: Construct, health: PlatformHealth | None, *, workspace: PrometheusWorkspace | None, target: Any
) -> NodeRemediation | None:
    """A :class:`NodeRemediation` on the workspace's alert topic (None without a policy, a workspace or a target)."""
    policy = health.remediation_policy if health is not None else None
    if policy is None or workspace is None or target is None:
        return None
    return NodeRemediation(scope, "NodeRemediation", alert_topic=workspace.alert_topic, target=target, policy=policy)


def pcs_target(scope: Construct, *, cluster: Any, login: Any, gpu: Any) -> RemediationTarget | None:
    if login is None:
        add_warning(
            scope,
            WarningId.PLATFORM_HEALTH_SKIPPED,
            "Node remediation is off: the PCS platform has no login node group (PcsOptions(login_nodes=0)) and the "
            "handler runs Slurm commands (drain, reboot) on a login node through SSM Run Command. Keep login_nodes=1.",
        )
        return None
    return RemediationTarget.pcs(
        cluster_id=cluster.cluster_id,
        login_node_group_id=login.node_group_id,
        compute_node_group_ids=[gpu.node_group_id],
    )


def warn_pcs_nccl_skipped(scope: Construct) -> None:
    add_warning(
        scope,
        WarningId.PLATFORM_HEALTH_SKIPPED,
        "The scheduled NCCL check is off: the PCS platform has no login node group (PcsOptions(login_nodes=0)) to "
        "submit it from (PCS has no scrontab). Keep login_nodes=1, or pass PlatformHealth(nccl=False).",
    )
