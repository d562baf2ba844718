"""Node checks on PCS: the boot gate at every boot, the prolog checks before every job and the idle checks between.

Wiring (``PcsCluster(node_health=NodeHealthOptions(...))``, per group ``PcsGpuNodeGroup(node_health=...)``):

- **Boot gate.** Each GPU node group's bootstrap step ``node-health`` installs
  :func:`fmconstructs.health.render_slurm_boot_gate` at :data:`BOOT_GATE_PATH` and a systemd oneshot unit
  (:func:`fmconstructs.health.render_boot_gate_unit`) enabled for every boot and started without blocking. The user
  data runs "after the node registers with PCS and before slurmd starts" (PCS User Guide "Working with Amazon EC2
  user data"), so the gate first waits for ``slurmd`` (``ready_command="pgrep -x slurmd"``, up to
  :data:`PCS_NODE_WAIT_SECONDS`), then reserves the node while it checks (no new jobs; its state and reason untouched,
  so an operator's drain is never overwritten: :mod:`fmconstructs.health.slurm_gate` says why not a drain), deletes
  the reservation when the checks end and leaves the node drained with ``fmconstructs: <check>: <reason>`` on fail
  (a drain of ours from an earlier run is resumed on pass). PCS's own ``nodeReady`` lifecycle stage ("after the
  Slurm daemon (slurmd) starts and the compute node registers with the Slurm controller", botocore PCS model
  ``NodeLifecycleStages``) is the documented place for such a script; it takes scripts from S3 with checksums and is
  not used by the gate yet (``PcsGpuNodeGroup(node_lifecycle_actions=...)`` takes your own scripts there; aws-cdk-lib
  2.275's ``CfnComputeNodeGroup`` has ``node_lifecycle_actions``).
- **Prolog checks.** PCS takes one cluster-level ``Prolog`` (custom settings,
  :data:`~fmconstructs.pcs.slurm.CLUSTER_SETTINGS`). With node health on, the cluster's ``Prolog`` is
  :data:`PROLOG_RUNNER_PATH`, a runner (:func:`fmconstructs.health.render_prolog_runner`) of :data:`PROLOG_DIR` that
  every GPU node group installs: the PROLOG checks as ``10-node-checks.sh`` (where the group's options keep them)
  and, on an IMEX cluster, a link ``91-nvidia-imex.sh`` to the IMEX prolog
  (:data:`~fmconstructs.pcs.user_data.IMEX_PROLOG_PATH`), run in that order. A failing prolog drains the node and
  requeues the job (Slurm "Prolog and Epilog Guide"); the cluster's ``SchedulerParameters`` carry
  ``nohold_on_prolog_fail`` whenever the library sets its ``Prolog``
  (:data:`~fmconstructs.pcs.slurm.NOHOLD_ON_PROLOG_FAIL`), so that job runs again elsewhere instead of waiting held
  for an administrator. The budget: each check at most ``prolog_budget_seconds`` (default 10 s, about 70 s for every
  check at worst); PCS's ``BatchStartTimeout`` is not a custom setting and its value is UNCONFIRMED.
- **Between jobs.** With ``idle_check_interval_seconds`` (default 300 s), the cluster's ``HealthCheckProgram`` is
  :data:`IDLE_CHECK_PATH` with ``HealthCheckInterval`` and ``HealthCheckNodeState`` from the options (default
  ``IDLE,CYCLE``: idle nodes, spread over the interval): every GPU node group installs
  :func:`fmconstructs.health.render_slurm_idle_check` there (a group whose own options turn node health or the idle
  checks off installs a program that passes), which drains a failing node with ``fmconstructs: <check>: <reason>``
  and resumes a node drained for one of its own checks once that check passes again (never an operator's drain,
  remediation's or a boot-only check's); remediation takes a failing node from there. Nodes of compute node groups
  made outside this library need a program at that path too (slurmd logs an error at each interval otherwise).
- **Dynamic nodes.** A node PCS launches for a waiting job gets that job as soon as ``slurmd`` registers, before the
  boot gate reserves it; the prolog checks cover that first job.
- **PCS instance health checks** (PCS API ``InstanceHealthChecks``: ``deepHealthChecks.onStart.profile``
  QUICK / MEDIUM / LONG = DCGM level 1 / 2 / 3, ``healthMonitoring`` STANDARD; PCS User Guide "Configuring instance
  health checks"): ``PcsGpuNodeGroup(instance_health_checks=PcsInstanceHealthChecks(...))``
  (:mod:`.instance_health`), set through a custom resource until the CloudFormation schema of
  ``AWS::PCS::ComputeNodeGroup`` has the property (:mod:`.instance_health_resource`). With a deep health check on,
  the group's boot gate runs without DCGM (``NodeHealthOptions.without_dcgm``), so DCGM does not run twice; the
  library's other checks (EFA count, Lustre, NCCL, IMEX) still run, PCS has none of them.

No aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validate import check_instance
from ..errors import FmValidationError
from ..health import (
    CheckMode,
    NodeHealthOptions,
    pcs_slurm_bin_dir,
    render_node_checks,
    render_slurm_boot_gate,
    render_slurm_idle_check,
)
from ..health.install import boot_gate_unit_commands, render_boot_gate_unit, render_prolog_runner
from ..health.slurm_gate import IDLE_CHECK_OFF
from .slurm import ClusterSetting
from .user_data import IMEX_PROLOG_PATH

__all__ = [
    "BOOT_GATE_PATH",
    "BOOT_GATE_UNIT_PATH",
    "IDLE_CHECK_PATH",
    "NODE_CHECKS_PROLOG_PATH",
    "NODE_HEALTH_STEP",
    "PCS_NODE_WAIT_SECONDS",
    "PROLOG_DIR",
    "PROLOG_RUNNER_PATH",
    "PcsNodeHealthStep",
    "check_node_health",
    "cluster_runs_idle_checks",
    "cluster_runs_prolog_checks",
    "idle_check_settings",
    "pcs_node_health_step",
]

#: The bootstrap step that installs the gate and the prolog files.
NODE_HEALTH_STEP = "node-health"
#: Where the boot gate is installed, and its systemd unit.
BOOT_GATE_PATH = "/opt/fmconstructs/health/boot-gate.sh"
BOOT_GATE_UNIT_PATH = "/etc/systemd/system/fmconstructs-node-checks.service"
#: The cluster's ``Prolog`` when node health is on, and the directory it runs.
PROLOG_RUNNER_PATH = "/opt/fmconstructs/slurm/prolog.sh"
PROLOG_DIR = "/opt/fmconstructs/slurm/prolog.d"
NODE_CHECKS_PROLOG_PATH = f"{PROLOG_DIR}/10-node-checks.sh"
#: The cluster's ``HealthCheckProgram`` when node health runs idle checks.
IDLE_CHECK_PATH = "/opt/fmconstructs/health/idle-check.sh"
IMEX_PROLOG_LINK = f"{PROLOG_DIR}/91-nvidia-imex.sh"
#: How long the gate waits for ``slurmd`` (seconds): the rest of the user data runs first (mounts, your steps).
PCS_NODE_WAIT_SECONDS = 1800
# The unit's timeout beyond the node wait and the checks' budgets (seconds).
_UNIT_MARGIN_SECONDS = 300


def check_node_health(parameter: str, value: object) -> NodeHealthOptions | None:
    """None or a :class:`NodeHealthOptions`."""
    if value is None:
        return None
    options: NodeHealthOptions = check_instance(parameter, value, NodeHealthOptions, "a NodeHealthOptions")
    return options


def cluster_runs_prolog_checks(options: NodeHealthOptions | None) -> bool:
    """Whether a cluster with these options sets its ``Prolog`` to :data:`PROLOG_RUNNER_PATH`."""
    return options is not None and options.enabled and options.prolog_checks


def cluster_runs_idle_checks(options: NodeHealthOptions | None) -> bool:
    """Whether a cluster with these options sets its ``HealthCheckProgram`` to :data:`IDLE_CHECK_PATH`."""
    return options is not None and options.idle_checks


def idle_check_settings(options: NodeHealthOptions) -> dict[str, str]:
    """The cluster settings of the between-jobs check (slurm.conf(5) ``HealthCheck*``)."""
    return {
        ClusterSetting.HEALTH_CHECK_PROGRAM: IDLE_CHECK_PATH,
        ClusterSetting.HEALTH_CHECK_INTERVAL: str(options.idle_check_interval_seconds),
        ClusterSetting.HEALTH_CHECK_NODE_STATE: options.health_check_node_state,
    }


@dataclass(frozen=True)
class PcsNodeHealthStep:
    """What one GPU node group installs: ``files`` (``{path: (text, mode)}``) and ``commands`` run after them."""

    files: dict[str, tuple[str, int]]
    commands: list[str]


def pcs_node_health_step(
    options: NodeHealthOptions,
    *,
    instance_type: str,
    efa_interfaces: int,
    lustre_mount_point: str | None,
    slurm_version: str,
    cluster_prolog: bool,
    imex: bool,
    cluster_idle_checks: bool = False,
) -> PcsNodeHealthStep:
    """The ``node-health`` step of a GPU node group (see the module notes)."""
    if options.prolog_checks and options.enabled and not cluster_prolog:
        raise FmValidationError(
            "node_health.prolog_checks",
            True,
            "False when the cluster runs no prolog checks (the Prolog is cluster-wide: give PcsCluster(node_health=...)"
            " with prolog_checks=True)",
        )
    files: dict[str, tuple[str, int]] = {}
    commands: list[str] = []
    if cluster_prolog:
        files[PROLOG_RUNNER_PATH] = (render_prolog_runner(PROLOG_DIR), 0o755)
        if imex:
            commands += [f"mkdir -p {PROLOG_DIR}", f"ln -sfn {IMEX_PROLOG_PATH} {IMEX_PROLOG_LINK}"]
    if cluster_idle_checks and not options.idle_checks:
        files[IDLE_CHECK_PATH] = (IDLE_CHECK_OFF, 0o755)
    if not options.enabled:
        return PcsNodeHealthStep(files, commands)
    spec = options.spec_for(instance_type, efa_interfaces=efa_interfaces, lustre_mount_point=lustre_mount_point)
    if options.prolog_checks:
        files[NODE_CHECKS_PROLOG_PATH] = (render_node_checks(spec, CheckMode.PROLOG), 0o755)
    if cluster_idle_checks and options.idle_checks:
        idle = render_slurm_idle_check(spec, slurm_bin_dir=pcs_slurm_bin_dir(slurm_version))
        files[IDLE_CHECK_PATH] = (idle, 0o755)
    gate = render_slurm_boot_gate(
        spec,
        slurm_bin_dir=pcs_slurm_bin_dir(slurm_version),
        drain_while_checking=False,
        reserve_while_checking=True,
        node_wait_seconds=PCS_NODE_WAIT_SECONDS,
        ready_command="pgrep -x slurmd >/dev/null",
    )
    files[BOOT_GATE_PATH] = (gate, 0o755)
    timeout = PCS_NODE_WAIT_SECONDS + spec.total_budget_seconds(CheckMode.BOOT) + _UNIT_MARGIN_SECONDS
    files[BOOT_GATE_UNIT_PATH] = (render_boot_gate_unit(BOOT_GATE_PATH, timeout_seconds=timeout), 0o644)
    commands += boot_gate_unit_commands()
    return PcsNodeHealthStep(files, commands)
