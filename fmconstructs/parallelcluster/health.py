"""Node-join checks on ParallelCluster: :meth:`ParallelCluster.enable_node_health` (:func:`enable_node_health`).

What it sets up, with the mechanisms ParallelCluster documents:

- **Boot gate** (``OnNodeConfigured``): each targeted queue gets a node bootstrap (``node-health`` step) that installs,
  per instance type of the queue, the boot gate (:func:`fmconstructs.health.render_slurm_boot_gate`) and the PROLOG
  checks under ``/opt/fmconstructs/health/<instance type>/``, links the node's type to
  ``/opt/fmconstructs/health/node`` and runs the gate. OnNodeConfigured runs after the node's own configuration and
  before ``slurmd`` starts (aws-parallelcluster cli/src/pcluster/resources/compute_node/user_data.sh: ``config``,
  ``fetch_and_run -postinstall``, then ``finalize``, whose finalize_compute.rb starts slurmd), as root. The gate runs
  with ``drain_while_checking=False``.
- **A failing gate does not fail the bootstrap.** A custom action that fails ends the node: user_data.sh's
  ``error_exit`` runs ``shutdown -h now``; clustermgtd counts the node as a bootstrap failure and, after
  ``protected_failure_count`` of them, puts the fleet in protected mode (aws-parallelcluster-node
  src/slurm_plugin/clustermgtd.py ``_handle_bootstrap_failure_nodes``, ``_enter_protected_mode``; User Guide
  "Slurm cluster protected mode"), before the node's metrics could raise an alert. Draining the node does not keep it
  either: clustermgtd's ``terminate_drain_nodes`` and ``terminate_down_nodes`` default to True (clustermgtd.py
  ``ClustermgtdConfig.DEFAULTS``; not in the cookbook's parallelcluster_clustermgtd.conf.erb, so not set by
  ParallelCluster's configuration) and ``StaticNode.is_state_healthy`` (src/slurm_plugin/slurm_resources.py) calls a
  DRAINED (IDLE+DRAIN) or DOWN node unhealthy whatever its reason, so clustermgtd replaces it within a loop; no reason
  exempts a node. A node in a Slurm reservation is neither: so the gate holds a failing node with
  :data:`GATE_HOLD` (:class:`fmconstructs.health.slurm_gate.GateHold`): a reservation
  ``fmconstructs-node-checks-<node>`` (``Users=root``, ``IGNORE_JOBS,OVERLAP``; without ``MAINT``, because
  clustermgtd's ``_update_static_nodes_in_replacement`` stops tracking a node "in maintenance", MAINTENANCE+RESERVED,
  as being replaced, and a later replacement would then be replaced again), the failure in the node's ``Comment``,
  jobs already allocated to it requeued, and a marker the prolog dispatch fails on. The wrapper logs
  :data:`GATE_FAILED_MARKER` and exits 0, so ParallelCluster finishes the bootstrap and starts slurmd; node exporter
  (the queue's observability step, before this one) publishes ``fm_node_check_status 0``, ``FmNodeCheckFailed``
  fires and remediation (within its hourly limit) drains or downs the node, which clustermgtd then replaces; the
  replacement's gate deletes the reservation when it passes. Static nodes (``<queue>-st-<resource>-<n>``) are held
  until then; dynamic nodes for :data:`DYNAMIC_HOLD_MINUTES` (Slurm powers the idle instance down after
  ``ScaledownIdletime`` and the name must return to the pool). Whether Slurm's power saving suspends a node inside a
  reservation is UNCONFIRMED (not read in the Slurm source).
- **Prolog checks**: a head node bootstrap (``node-health-prolog`` step, default ``OnNodeConfigured``) installs
  :data:`PROLOG_DISPATCH_PATH` in ``/opt/slurm/etc/scripts/prolog.d/``, the prolog directory the head node shares with
  the compute nodes (User Guide "Slurm prolog and epilog"; :mod:`.imex` installs its prolog there the same way). It
  runs the node's own ``prolog-checks.sh`` where the node has one (nodes of other queues pass at once) and fails on a
  node whose gate failed. Slurm runs ``prolog.d/*`` in reverse alphabetical order: ``95_`` runs it before IMEX's
  ``91_nvidia_imex_prolog.sh`` and ParallelCluster's ``90_pcluster_health_check_manager``
  (:data:`fmconstructs.parallelcluster.slurm_scripts.PROLOG_ORDER`); the step removes the ``85_`` file of earlier
  releases. The prolog checks' total budget must stay within half of ``BatchStartTimeout=180`` (User Guide "Slurm
  prolog and epilog": "The default is 3 minutes"): long diagnostics in a prolog hang jobs
  (aws/aws-parallelcluster#6777), so DCGM never runs there. A failing prolog drains the node and requeues the job,
  not held: ParallelCluster's slurm.conf sets ``SchedulerParameters=nohold_on_prolog_fail``.
- **ParallelCluster's own GPU health check** (``SlurmQueue(gpu_health_checks=True)`` /
  ``ComputeResource(gpu_health_checks=True)``: ``HealthChecks/Gpu/Enabled``) runs DCGM level 2 in the prolog
  (aws-parallelcluster-cookbook CHANGELOG 3.6.0). With both on, DCGM runs at boot and again before every job: the
  warning ``fmconstructs:parallelcluster-dcgm-twice`` suggests ``NodeHealthOptions(dcgm_level=None)``.

Whether OnNodeConfigured runs again after a node reboots is UNCONFIRMED (not seen in the User Guide): a rebooted
node is checked again by the prolog before its next job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._validate import check_first_call, check_instance
from ..bootstrap import NodeBootstrap
from ..compute.slurm_scripts import SlurmHook
from ..errors import FmValidationError, WarningId, add_warning
from ..health import (
    PARALLELCLUSTER_SLURM_BIN_DIR,
    CheckMode,
    NodeHealthOptions,
    render_node_checks,
    render_slurm_boot_gate,
)
from ..health.install import render_prolog_dispatch
from ..health.slurm_gate import GateHold
from .config import CustomActionEvent, SlurmQueue
from .slurm_scripts import NODE_CHECKS_PROLOG_NAME, PARALLELCLUSTER_SLURM_SCRIPT_DIRS, retire_commands

if TYPE_CHECKING:
    from .cluster import ParallelCluster

__all__ = [
    "BATCH_START_TIMEOUT_SECONDS",
    "DYNAMIC_HOLD_MINUTES",
    "GATE_FAILED_MARKER",
    "GATE_HOLD",
    "HEALTH_DIR",
    "NODE_HEALTH_STEP",
    "PROLOG_DISPATCH_PATH",
    "PROLOG_STEP",
    "enable_node_health",
    "node_health_files",
]

#: The bootstrap steps: on the compute nodes, and on the head node.
NODE_HEALTH_STEP = "node-health"
PROLOG_STEP = "node-health-prolog"
#: Where each compute node keeps its checks (``<instance type>/``, and ``node`` linking its own type).
HEALTH_DIR = "/opt/fmconstructs/health"
NODE_DIR = f"{HEALTH_DIR}/node"
#: The shared prolog (ParallelCluster User Guide "Slurm prolog and epilog": ``/opt/slurm/etc/scripts/prolog.d/``).
PROLOG_DISPATCH_PATH = f"{PARALLELCLUSTER_SLURM_SCRIPT_DIRS.prolog_dir}/{NODE_CHECKS_PROLOG_NAME}"
#: How long a failing dynamic node stays held (see the module notes): past ``FmNodeCheckFailed``'s 2 minutes and
#: ParallelCluster's default ``ScaledownIdletime`` of 10 minutes (aws-parallelcluster 3.16.1 config/cluster_config.py
#: ``SlurmSettings``: ``scaledown_idletime`` default 10).
DYNAMIC_HOLD_MINUTES = 30
#: How the gate holds a failing node; the queue's static node names are added per queue (:func:`gate_hold`).
GATE_HOLD = GateHold(minutes=DYNAMIC_HOLD_MINUTES)
#: The line the node's bootstrap log gets when the gate failed (the bootstrap itself goes on).
GATE_FAILED_MARKER = "FMCONSTRUCTS-NODE-CHECKS-FAILED"
#: ParallelCluster's ``BatchStartTimeout`` (User Guide "Slurm prolog and epilog": "The default is 3 minutes").
BATCH_START_TIMEOUT_SECONDS = 180
#: How long the gate looks for the node in Slurm (ParallelCluster defines every node in slurm.conf up front).
NODE_WAIT_SECONDS = 120
_IMDS = "http://169.254.169.254/latest"


def node_health_files(
    options: NodeHealthOptions, queue: SlurmQueue, *, lustre_mount_point: str | None = None
) -> dict[str, tuple[str, int]]:
    """``{path: (text, mode)}``: the boot gate and the prolog checks of every instance type of ``queue``;
    ``lustre_mount_point``: the cluster's first shared Lustre file system (``SharedStorage`` ``MountDir``), which the
    ``lustre-mount`` check expects mounted (None: no Lustre, the check is skipped)."""
    files: dict[str, tuple[str, int]] = {}
    for instance_type in _instance_types(queue):
        spec = options.spec_for(instance_type, lustre_mount_point=lustre_mount_point)
        _check_prolog_budget(options, spec.total_budget_seconds(CheckMode.PROLOG))
        gate = render_slurm_boot_gate(
            spec,
            slurm_bin_dir=PARALLELCLUSTER_SLURM_BIN_DIR,
            drain_while_checking=False,
            node_wait_seconds=NODE_WAIT_SECONDS,
            hold=gate_hold(queue),
        )
        files[f"{HEALTH_DIR}/{instance_type}/boot-gate.sh"] = (gate, 0o755)
        if options.prolog_checks:
            files[f"{HEALTH_DIR}/{instance_type}/prolog-checks.sh"] = (
                render_node_checks(spec, CheckMode.PROLOG),
                0o755,
            )
    return files


def _node_commands(queue: SlurmQueue) -> list[str]:
    """Link the node's own instance type to :data:`NODE_DIR`, then run its gate (a failure holds the node and logs
    :data:`GATE_FAILED_MARKER`; the bootstrap goes on)."""
    types = _instance_types(queue)
    if len(types) == 1:
        select = [f"fm_type={types[0]}"]
    else:
        # IMDSv2 (EC2 User Guide "Use the Instance Metadata Service to access instance metadata"): a session token,
        # then meta-data/instance-type.
        ttl = '-H "X-aws-ec2-metadata-token-ttl-seconds: 60"'
        select = [
            f"fm_token=$(curl -sf --max-time 5 -X PUT {ttl} {_IMDS}/api/token)",
            f'fm_type=$(curl -sf --max-time 5 -H "X-aws-ec2-metadata-token: $fm_token" '
            f"{_IMDS}/meta-data/instance-type)",
        ]
    return [
        *select,
        f'ln -sfn "{HEALTH_DIR}/$fm_type" {NODE_DIR}',
        # Never fails the bootstrap (see the module notes): the gate holds a failing node itself.
        f'{NODE_DIR}/boot-gate.sh || echo "{GATE_FAILED_MARKER}: the boot checks failed; the node stays out of work '
        f'(scontrol show reservation {GATE_HOLD.reservation_prefix}$(hostname -s)); see /var/log/fmconstructs" >&2',
    ]


def gate_hold(queue: SlurmQueue) -> GateHold:
    """:data:`GATE_HOLD` with ``queue``'s static node names (``<queue>-st-<compute resource>-<n>``: the ``-st-``
    marker of aws-parallelcluster's CustomSlurmNodeNamesValidator) held until released."""
    names = "|".join(f"{queue.name}-st-{r.name}-[0-9]*" for r in queue.compute_resources)
    return GateHold(minutes=GATE_HOLD.minutes, reservation_prefix=GATE_HOLD.reservation_prefix, unlimited_nodes=names)


def _instance_types(queue: SlurmQueue) -> list[str]:
    types: list[str] = []
    for resource in queue.compute_resources:
        if resource.spec is None or resource.spec.gpu.count == 0:
            raise FmValidationError(
                f"queues[{queue.name}].compute_resources[{resource.name}].instance_type",
                resource.instance_type,
                "a catalog GPU instance type (node health checks GPU nodes)",
            )
        if resource.instance_type not in types:
            types.append(resource.instance_type)
    return types


def _check_prolog_budget(options: NodeHealthOptions, total_seconds: int) -> None:
    limit = BATCH_START_TIMEOUT_SECONDS // 2
    if total_seconds > limit:
        raise FmValidationError(
            "node_health.prolog_budget_seconds",
            options.prolog_budget_seconds,
            f"a budget whose prolog checks total at most {limit} s, half of ParallelCluster's BatchStartTimeout "
            f"{BATCH_START_TIMEOUT_SECONDS} s (got {total_seconds} s)",
        )


def enable_node_health(
    cluster: ParallelCluster,
    options: NodeHealthOptions,
    *,
    queues: Sequence[str] | None = None,
    head_bootstrap: NodeBootstrap | None = None,
    node_bootstrap: NodeBootstrap | None = None,
) -> list[NodeBootstrap]:
    """See :meth:`ParallelCluster.enable_node_health`."""
    check_instance("options", options, NodeHealthOptions, "a NodeHealthOptions")
    if head_bootstrap is not None:
        check_instance("head_bootstrap", head_bootstrap, NodeBootstrap, "a NodeBootstrap")
        cluster._check_unattached("head_bootstrap", head_bootstrap)
    if node_bootstrap is not None:
        check_instance("node_bootstrap", node_bootstrap, NodeBootstrap, "a NodeBootstrap")
        cluster._check_unattached("node_bootstrap", node_bootstrap)
    if not options.enabled:
        return []
    names = [q.name for q in cluster.queues]
    targets = cluster._targets("queues", queues, names, "queue")
    if node_bootstrap is not None and len(targets) != 1:
        raise FmValidationError("queues", list(targets), "exactly one queue with node_bootstrap (its OnNodeConfigured)")
    for name in targets if node_bootstrap is None else ():
        check_first_call(cluster, f"NodeHealth{_pascal(name)}", method="enable_node_health", remedy=_AGAIN % name)
    if options.prolog_checks and head_bootstrap is None:
        check_first_call(cluster, "NodeHealthProlog", method="enable_node_health", remedy=_PROLOG_AGAIN)
    created: list[NodeBootstrap] = []
    for name in targets:
        queue = cluster.queues[names.index(name)]
        _warn_dcgm_twice(cluster, options, queue)
        bootstrap = node_bootstrap or NodeBootstrap(
            cluster, f"NodeHealth{_pascal(name)}", name=f"node-health-{name}"[:40]
        )
        # The first shared Lustre file system, as on PCS (fmconstructs/pcs/node_group.py): the twin found the
        # ParallelCluster gate passing a node with no Lustre mount (issue 29).
        lustre = cluster.shared_storage[0].mount_point if cluster.shared_storage else None
        files = node_health_files(options, queue, lustre_mount_point=lustre)
        bootstrap.add_step(NODE_HEALTH_STEP, _node_commands(queue), files=files)
        if node_bootstrap is None:
            cluster.add_node_bootstrap(bootstrap, queues=[name], event=CustomActionEvent.ON_NODE_CONFIGURED)
        created.append(bootstrap)
    if options.prolog_checks:
        head = head_bootstrap or NodeBootstrap(cluster, "NodeHealthProlog", name="node-health-prolog")
        head.add_step(
            PROLOG_STEP, retire_commands(SlurmHook.PROLOG), files={PROLOG_DISPATCH_PATH: (_dispatch(), 0o755)}
        )
        if head_bootstrap is None:
            cluster.add_head_node_bootstrap(head, event=CustomActionEvent.ON_NODE_CONFIGURED)
        created.append(head)
    return created


_AGAIN = "queue %r has node health already: pass queues= naming only the queues not enabled yet"
_PROLOG_AGAIN = (
    "the head node runs the PROLOG checks already: pass head_bootstrap= or NodeHealthOptions(prolog_checks=False)"
)


def _dispatch() -> str:
    return render_prolog_dispatch(f"{NODE_DIR}/prolog-checks.sh", failed_marker=GATE_HOLD.marker_path)


def _warn_dcgm_twice(cluster: ParallelCluster, options: NodeHealthOptions, queue: SlurmQueue) -> None:
    gpu_checks = queue.gpu_health_checks is True or any(r.gpu_health_checks is True for r in queue.compute_resources)
    if gpu_checks and options.dcgm_level is not None:
        add_warning(
            cluster,
            WarningId.PARALLELCLUSTER_DCGM_TWICE,
            f"queue {queue.name}: ParallelCluster's GPU health check (HealthChecks/Gpu) runs DCGM in every prolog and "
            f"node health runs dcgmi diag -r {options.dcgm_level} at boot; give NodeHealthOptions(dcgm_level=None) "
            "to run DCGM once",
        )


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))
