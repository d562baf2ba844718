"""Node checks on HyperPod Slurm (``SlurmConfiguration.API``): the boot gate from each GPU compute group's
``OnInitComplete`` set-up and the prolog checks in the HyperPod AMI's ``prolog.d``, with the renderers every backend
uses (:mod:`fmconstructs.health`).

- **Boot gate.** The group's ``node-health`` step installs :func:`fmconstructs.health.render_slurm_boot_gate` at
  :data:`BOOT_GATE_PATH` and runs it inline: ``OnInitComplete`` runs after HyperPod configured and started Slurm
  (:mod:`fmconstructs.hyperpod.lifecycle`), so the node is registered already. The gate reserves the node while it
  checks (``reserve_while_checking``: no new job, its state and reason untouched, so an operator's drain is never
  overwritten), resumes a drain of ours on pass and drains the node with ``fmconstructs: <check>: <reason>`` on fail.
  It never fails the set-up: a failing lifecycle script fails the cluster's creation or the node's replacement
  (SageMaker Developer Guide sagemaker-hyperpod-lifecycle-best-practices: UNCONFIRMED wording, not re-read here), so
  the step logs :data:`GATE_FAILED_MARKER` and goes on; the drain keeps jobs off the node, node exporter (the
  ``observability`` step, before this one) publishes ``fm_node_check_status 0``, ``FmNodeCheckFailed`` fires and
  remediation (``RemediationTarget.hyperpod``) replaces the node within its hourly limit.
- **Prolog checks.** The PROLOG checks as :data:`NODE_CHECKS_PROLOG_NAME` in ``/opt/slurm/etc/prolog.d`` (the
  node's own directory, :mod:`fmconstructs.hyperpod.slurm_scripts`). Slurm runs a glob's files in reverse
  alphabetical order (:mod:`fmconstructs.compute.slurm_scripts`), so ``95_`` runs before the AMI's ``700_`` pieces
  and the job mapping's ``30_``/``20_``. A failing prolog drains the node and requeues the job; the controller adds
  ``nohold_on_prolog_fail`` to ``SchedulerParameters`` (:data:`NOHOLD_ON_PROLOG_FAIL`) so the job is not held.
- **DCGM.** HyperPod's own deep health checks run DCGM diagnostics level 4 on GPU groups with ``InstanceStress``
  (SageMaker Developer Guide sagemaker-hyperpod-resiliency-slurm-deep-health-checks, and the EKS page's check
  list: "DCGM diagnostics level 4"), holding the node "in a Slurm maintenance reservation" until they pass; the gate
  then runs without DCGM (:func:`hyperpod_node_health`), as on PCS with its deep health checks.
- **Between jobs**: not wired (the library does not set ``HealthCheckProgram`` in HyperPod's ``slurm.conf``).

No aws_cdk import.
"""

from __future__ import annotations

from .._validate import check_instance
from ..health import CheckMode, NodeHealthOptions, render_node_checks, render_slurm_boot_gate
from ..health.slurm_gate import PARALLELCLUSTER_SLURM_BIN_DIR
from .slurm_scripts import HYPERPOD_SLURM_SCRIPT_DIRS
from .types import DeepHealthCheck, HyperPodInstanceGroup

__all__ = [
    "BOOT_GATE_PATH",
    "GATE_FAILED_MARKER",
    "HYPERPOD_SLURM_BIN_DIR",
    "NODE_CHECKS_PROLOG_NAME",
    "NODE_CHECKS_PROLOG_PATH",
    "NODE_HEALTH_STEP",
    "NOHOLD_ON_PROLOG_FAIL",
    "check_node_health",
    "hyperpod_node_health",
    "node_health_step",
]

#: The bootstrap step of a GPU compute group.
NODE_HEALTH_STEP = "node-health"
#: Where the gate is installed.
BOOT_GATE_PATH = "/opt/fmconstructs/health/boot-gate.sh"
#: The prolog piece (runs first under Slurm's reverse alphabetical glob, see the module notes).
NODE_CHECKS_PROLOG_NAME = "95_fmconstructs_node_checks.sh"
NODE_CHECKS_PROLOG_PATH = f"{HYPERPOD_SLURM_SCRIPT_DIRS.prolog_dir}/{NODE_CHECKS_PROLOG_NAME}"
#: HyperPod's Slurm commands (base-config observability/install_slurm_exporter.sh: ``PATH=/opt/slurm/bin``; the
#: same directory as ParallelCluster's).
HYPERPOD_SLURM_BIN_DIR = PARALLELCLUSTER_SLURM_BIN_DIR
#: The SchedulerParameters option that keeps a job whose prolog failed from being held (slurm.conf(5)).
NOHOLD_ON_PROLOG_FAIL = "nohold_on_prolog_fail"
#: The line the set-up log gets when the gate failed (the set-up goes on).
GATE_FAILED_MARKER = "FMCONSTRUCTS-NODE-CHECKS-FAILED"
#: How long the gate looks for the node in Slurm (HyperPod started slurmd before OnInitComplete).
NODE_WAIT_SECONDS = 300


def check_node_health(value: object) -> NodeHealthOptions | None:
    """None or a :class:`NodeHealthOptions` (``node_health``)."""
    if value is None:
        return None
    options: NodeHealthOptions = check_instance("node_health", value, NodeHealthOptions, "a NodeHealthOptions or None")
    return options


def hyperpod_node_health(options: NodeHealthOptions, group: HyperPodInstanceGroup) -> NodeHealthOptions:
    """The options the group's gate runs: without DCGM where HyperPod's ``InstanceStress`` deep health check runs
    DCGM level 4 on the group (the module notes), else as given."""
    if DeepHealthCheck.INSTANCE_STRESS in group.effective_deep_health_checks:
        return options.without_dcgm()
    return options


def node_health_step(
    options: NodeHealthOptions, group: HyperPodInstanceGroup, *, lustre_mount_point: str | None
) -> tuple[list[str], dict[str, tuple[str, int]]]:
    """``(commands, files)`` of a GPU compute group's ``node-health`` step (see the module notes)."""
    instance_type = group.instance_type.removeprefix("ml.")  # the catalog's EC2 name (HyperPodInstanceGroup)
    spec = hyperpod_node_health(options, group).spec_for(instance_type, lustre_mount_point=lustre_mount_point)
    gate = render_slurm_boot_gate(
        spec,
        slurm_bin_dir=HYPERPOD_SLURM_BIN_DIR,
        drain_while_checking=False,
        reserve_while_checking=True,
        node_wait_seconds=NODE_WAIT_SECONDS,
    )
    files = {BOOT_GATE_PATH: (gate, 0o755)}
    if options.prolog_checks:
        files[NODE_CHECKS_PROLOG_PATH] = (render_node_checks(spec, CheckMode.PROLOG), 0o755)
    commands = [
        # Never fails OnInitComplete (see the module notes): the gate drains a failing node itself.
        f'{BOOT_GATE_PATH} || echo "{GATE_FAILED_MARKER}: the boot checks failed; the node is drained '
        '(scontrol show node $(hostname -s)); see /var/log/fmconstructs" >&2',
    ]
    return commands, files
