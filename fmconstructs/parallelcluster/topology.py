"""Slurm ``topology/tree`` on ParallelCluster, refreshed on the head node from EC2 ``DescribeInstanceTopology``:
:meth:`ParallelCluster.enable_slurm_topology` (:func:`enable_slurm_topology`).

What it sets up:

- ``Scheduling.SlurmSettings.CustomSlurmSettings`` ``TopologyPlugin: topology/tree``. ``TopologyPlugin`` is not in
  ParallelCluster's deny list (aws-parallelcluster 3.16.1 pcluster/validators/slurm_settings_validator.py
  ``SLURM_SETTINGS_DENY_LIST``). Without it Slurm 25.11 uses ``topology/flat`` (aws/aws-parallelcluster#7220: "in
  Slurm 25.11 the default TopologyPlugin changed from topology/default to topology/flat").
- A head node bootstrap step (default event OnNodeStart, before ParallelCluster configures and starts slurmctld: User
  Guide "custom-bootstrap-actions-v3") that installs the renderer (the source of
  :mod:`fmconstructs.topology.slurm`, standard library only), the refresh script :data:`REFRESH_PATH` and a systemd
  timer, writes a first ``/opt/slurm/etc/topology.conf`` with every node of the cluster under one switch (so the
  plugin has a file when slurmctld starts), and enables the timer.
- The timer runs the refresh script every ``interval_minutes``: ``aws ec2 describe-instances`` (tags
  ``parallelcluster:cluster-name`` = the cluster and ``parallelcluster:node-type`` = ``Compute``: aws-parallelcluster
  constants.py ``PCLUSTER_CLUSTER_NAME_TAG``/``PCLUSTER_NODE_TYPE_TAG``), ``aws ec2 describe-instance-topology``
  filtered by the queues' instance types (the CLI follows ``NextToken``: botocore's ec2 paginators-1.json pages
  DescribeInstanceTopology on ``NextToken``), and ``scontrol show nodes --oneliner``; nodes are matched to instances by
  ``NodeAddr`` = private IP (:func:`fmconstructs.topology.slurm.slurm_node_names`). The file is replaced and ``scontrol
  reconfigure`` run only when the text changed (topology.conf(5): changes take effect on ``scontrol reconfigure``).
  Nodes that leave drop out; nodes without topology (powered down) sit under ``fm-unplaced``, so each power-up or
  power-down of a dynamic node changes the file and costs one ``scontrol reconfigure`` at the next run.
- The head node's managed policy gets ``ec2:DescribeInstanceTopology`` and ``ec2:DescribeInstances`` on ``*``: both
  are List actions the EC2 User Guide's topology prerequisites ("IAM permissions") grant without a resource (that
  they support no resource-level permission: UNCONFIRMED, the Service Authorization Reference table was not read).

Not done, and why:

- p6e-gb200 queues: ParallelCluster 3.14+ writes topology.conf and ``TopologyPlugin=topology/block`` itself for
  GB200 (aws-parallelcluster-cookbook#3002 ``pcluster_topology_generator.py``, ``slurm_parallelcluster_topology.conf``);
  one Slurm has one topology.conf, so a cluster with such a queue is refused here rather than fought over.
  aws-parallelcluster-cookbook#3123 (Slurm 25.11 drops powered-down nodes from blocks until ``scontrol
  reconfigure``; workaround ``Topology=default:<BlockName>`` on node lines) concerns that block file and is left to
  ParallelCluster; this refresher writes tree topology and runs ``scontrol reconfigure`` whenever membership changes.
- ``topology.yaml`` (UNCONFIRMED fields, see :mod:`fmconstructs.topology.slurm`).
- On by default: no (a new piece of the head node's OnNodeStart is a change ParallelCluster refuses on an existing
  cluster). Call :meth:`ParallelCluster.enable_slurm_topology`, or ``ParallelClusterOptions(slurm_topology=True)`` on
  :class:`~fmconstructs.platform.TrainingPlatform`: the refresher is its own piece of the head node's OnNodeStart,
  next to IMEX and the Slurm scripts (:meth:`ParallelCluster.add_head_node_bootstrap` composes them), and a bootstrap
  that would only run at OnNodeUpdated (which does not run when the cluster is created) is refused.

UNCONFIRMED: the ``aws`` CLI and ``python3`` (3.9 or later) on ParallelCluster's head node AMIs; ``/opt/slurm/etc``
present at OnNodeStart; ParallelCluster leaving a topology.conf it did not write in place on non-GB200 clusters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IValidation

from .. import _nag
from .._validate import check_count, check_enum, check_first_call, check_instance, known
from ..bootstrap import NodeBootstrap
from ..errors import FmValidationError
from ..topology import slurm as _slurm
from .config import CustomActionEvent, SlurmQueue

if TYPE_CHECKING:
    from .cluster import ParallelCluster

__all__ = [
    "REFRESH_PATH",
    "RENDERER_PATH",
    "TOPOLOGY_CONF_PATH",
    "TOPOLOGY_SLURM_SETTINGS",
    "TOPOLOGY_STEP",
    "enable_slurm_topology",
    "initial_topology_conf",
    "render_refresh_script",
    "topology_instance_types",
    "topology_statements",
]

TOPOLOGY_STEP = "slurm-topology"
#: The head node events that run when the cluster is created (OnNodeUpdated runs on updates only).
CREATION_EVENTS = (CustomActionEvent.ON_NODE_START, CustomActionEvent.ON_NODE_CONFIGURED)
TOPOLOGY_DIR = "/opt/fmconstructs/topology"
RENDERER_PATH = f"{TOPOLOGY_DIR}/slurm_topology.py"
REFRESH_PATH = f"{TOPOLOGY_DIR}/refresh.sh"
ENV_PATH = "/etc/fmconstructs/slurm-topology.env"
UNIT = "fmconstructs-slurm-topology"
#: ParallelCluster's Slurm configuration directory (User Guide "Slurm prolog and epilog": /opt/slurm/etc/...).
TOPOLOGY_CONF_PATH = "/opt/slurm/etc/topology.conf"
TOPOLOGY_SLURM_SETTINGS: tuple[dict[str, str], ...] = ({"TopologyPlugin": "topology/tree"},)
#: The plan record's ``slurm_topology`` (:mod:`fmconstructs._plan_metadata`): what ``fmc plan`` reports.
PLAN_TOPOLOGY = {"plugin": "topology/tree", "source": "fmconstructs"}
# EC2 User Guide "Prerequisites for Amazon EC2 topology", Instance types (3 network nodes: p5.48xlarge, p5e.48xlarge,
# p5en.48xlarge; 4: p6-b200.48xlarge, p6-b300.48xlarge). p6e-gb200 is ParallelCluster's own (module docstring).
TOPOLOGY_INSTANCE_TYPES = frozenset(
    {"p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge"}
)
_GB200 = re.compile(r"p6e-gb200\.")


def topology_instance_types(queues: Sequence[SlurmQueue]) -> list[str]:
    """The queues' instance types this refresher reads topology for (P5/P6 types EC2 describes), sorted."""
    return sorted({r.instance_type for q in queues for r in q.compute_resources} & TOPOLOGY_INSTANCE_TYPES)


def initial_topology_conf(queues: Sequence[SlurmQueue]) -> str:
    """The first topology.conf: every node of ``queues`` under the unplaced switch. ParallelCluster names nodes
    ``<queue>-st-<compute resource>-<n>`` (static, 1..MinCount) and ``<queue>-dy-<compute resource>-<n>`` (dynamic,
    1..MaxCount-MinCount): the ``-st-``/``-dy-`` markers are ParallelCluster's (slurm_settings_validator.py
    CustomSlurmNodeNamesValidator); the numbering is UNCONFIRMED, and the first refresh replaces this file with the
    names ``scontrol`` reports."""
    groups: list[str] = []
    for queue in queues:
        for resource in queue.compute_resources:
            low, high = resource.resolved_min_nodes, resource.resolved_max_nodes
            if not (known(low) and known(high)):
                raise FmValidationError(
                    f"queues[{queue.name}].compute_resources[{resource.name}]",
                    "a deploy-time node count",
                    "node counts known at synthesis (the first topology.conf lists every node)",
                )
            for kind, count in (("st", int(low)), ("dy", int(high) - int(low))):
                if count > 0:
                    span = "1" if count == 1 else f"[1-{count}]"
                    groups.append(f"{queue.name}-{kind}-{resource.name}-{span}")
    return f"{_slurm.HEADER}SwitchName={_slurm.UNPLACED_SWITCH} Nodes={','.join(groups)}\n"


def render_refresh_script() -> str:
    """The refresh script (bash). Settings come from :data:`ENV_PATH` (``FM_CLUSTER_NAME``, ``FM_INSTANCE_TYPES``
    comma-separated, ``AWS_DEFAULT_REGION``); ``FM_AWS``, ``FM_SCONTROL``, ``FM_PYTHON``, ``FM_TOPOLOGY_FILE`` and
    ``FM_RENDERER`` override the tools and paths (tests run it with fakes)."""
    return f"""#!/bin/bash
# fmconstructs: refresh Slurm topology.conf (topology/tree) from EC2 DescribeInstanceTopology; scontrol reconfigure
# only when the file changes. Run by {UNIT}.timer.
set -euo pipefail
if [ -r {ENV_PATH} ]; then
  # shellcheck source=/dev/null
  . {ENV_PATH}
fi
: "${{FM_CLUSTER_NAME:?FM_CLUSTER_NAME is not set}}"
: "${{FM_INSTANCE_TYPES:?FM_INSTANCE_TYPES is not set}}"
export AWS_DEFAULT_REGION
aws_cli="${{FM_AWS:-aws}}"
scontrol="${{FM_SCONTROL:-/opt/slurm/bin/scontrol}}"
python="${{FM_PYTHON:-python3}}"
target="${{FM_TOPOLOGY_FILE:-{TOPOLOGY_CONF_PATH}}}"
renderer="${{FM_RENDERER:-{RENDERER_PATH}}}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$aws_cli" ec2 describe-instances --output json \\
  --filters "Name=tag:parallelcluster:cluster-name,Values=$FM_CLUSTER_NAME" \\
  "Name=tag:parallelcluster:node-type,Values=Compute" "Name=instance-state-name,Values=pending,running" \\
  >"$work/instances.json"
"$aws_cli" ec2 describe-instance-topology --output json \\
  --filters "Name=instance-type,Values=$FM_INSTANCE_TYPES" >"$work/topology.json"
"$scontrol" show nodes --oneliner >"$work/nodes.txt"
"$python" "$renderer" "$work/topology.json" "$work/instances.json" "$work/nodes.txt" >"$work/topology.conf"
if ! grep -q '^SwitchName=' "$work/topology.conf"; then
  echo "fmconstructs: no Slurm nodes found; keeping $target" >&2
  exit 0
fi
if [ -f "$target" ] && cmp -s "$work/topology.conf" "$target"; then
  exit 0
fi
install -m 0644 "$work/topology.conf" "$target.fm-new"
mv -f "$target.fm-new" "$target"
echo "fmconstructs: $target changed; scontrol reconfigure" >&2
"$scontrol" reconfigure
"""


def _units(interval_minutes: int) -> dict[str, tuple[str, int]]:
    service = f"""[Unit]
Description=fmconstructs: refresh Slurm topology.conf from EC2 DescribeInstanceTopology
After=network-online.target

[Service]
Type=oneshot
ExecStart={REFRESH_PATH}
"""
    timer = f"""[Unit]
Description=fmconstructs: refresh Slurm topology.conf every {interval_minutes} minutes

[Timer]
OnBootSec=2min
OnUnitActiveSec={interval_minutes}min

[Install]
WantedBy=timers.target
"""
    return {
        f"/etc/systemd/system/{UNIT}.service": (service, 0o644),
        f"/etc/systemd/system/{UNIT}.timer": (timer, 0o644),
    }


def _files(queues: Sequence[SlurmQueue], interval_minutes: int) -> dict[str, tuple[str, int]]:
    source = Path(_slurm.__file__).read_text(encoding="utf-8")
    return {
        RENDERER_PATH: (source, 0o644),
        REFRESH_PATH: (render_refresh_script(), 0o755),
        f"{TOPOLOGY_DIR}/topology.conf.initial": (initial_topology_conf(queues), 0o644),
        **_units(interval_minutes),
    }


def _commands(cluster: ParallelCluster, types: list[str]) -> list[str]:
    region = Stack.of(cluster).region
    return [
        "mkdir -p /etc/fmconstructs",
        f"printf 'FM_CLUSTER_NAME=%s\\nFM_INSTANCE_TYPES=%s\\nAWS_DEFAULT_REGION=%s\\n' "
        f"'{cluster.cluster_name}' '{','.join(types)}' '{region}' > {ENV_PATH}",
        f"if [ ! -f {TOPOLOGY_CONF_PATH} ]; then install -D -m 0644 {TOPOLOGY_DIR}/topology.conf.initial "
        f"{TOPOLOGY_CONF_PATH}; fi",
        "systemctl daemon-reload",
        f"systemctl enable --now {UNIT}.timer",
    ]


@jsii.implements(IValidation)
class _TopologyAtCreation:
    """The bootstrap holding the refresher runs on the head node at OnNodeStart or OnNodeConfigured, so a new cluster
    has topology.conf (``fmc plan`` reports ``topology/tree`` from the TopologyPlugin setting alone)."""

    def __init__(self, cluster: ParallelCluster, bootstrap: NodeBootstrap) -> None:
        self._cluster, self._bootstrap = cluster, bootstrap

    def validate(self) -> list[str]:
        if any(self._bootstrap in self._cluster.head_node_pieces(event) for event in CREATION_EVENTS):
            return []
        return [
            f"enable_slurm_topology: bootstrap {self._bootstrap.node.path} holds the topology refresher but does not "
            "run on the head node at OnNodeStart or OnNodeConfigured: attach it with add_head_node_bootstrap"
        ]


def topology_statements() -> list[iam.PolicyStatement]:
    """The head node's permissions for the refresher: give them as ``statements`` to
    :meth:`ParallelCluster.add_head_node_bootstrap` when you pass your own ``bootstrap``."""
    return [
        iam.PolicyStatement(
            actions=["ec2:DescribeInstanceTopology", "ec2:DescribeInstances"],
            resources=["*"],
        )
    ]


def enable_slurm_topology(
    cluster: ParallelCluster,
    *,
    bootstrap: NodeBootstrap | None = None,
    event: CustomActionEvent = CustomActionEvent.ON_NODE_START,
    interval_minutes: int = 5,
) -> NodeBootstrap:
    """See :meth:`ParallelCluster.enable_slurm_topology`."""
    check_count("interval_minutes", interval_minutes, minimum=1, maximum=1440)
    if not known(interval_minutes):
        raise FmValidationError("interval_minutes", interval_minutes, "a number known at synthesis (1 to 1440)")
    check_enum("event", event, CustomActionEvent)
    if event not in CREATION_EVENTS:
        raise FmValidationError(
            "event",
            event.value,
            "OnNodeStart or OnNodeConfigured (OnNodeUpdated runs on pcluster update-cluster only: the cluster would "
            "be created with TopologyPlugin=topology/tree and no topology.conf)",
        )
    if bootstrap is not None:
        check_instance("bootstrap", bootstrap, NodeBootstrap, "a NodeBootstrap")
        cluster._check_unattached("bootstrap", bootstrap)
    gb200 = [q.name for q in cluster.queues if any(_GB200.match(r.instance_type) for r in q.compute_resources)]
    if gb200:
        raise FmValidationError(
            "enable_slurm_topology",
            gb200,
            "a cluster without p6e-gb200 queues (ParallelCluster writes topology.conf with topology/block for them)",
        )
    types = topology_instance_types(cluster.queues)
    if not types:
        raise FmValidationError(
            "enable_slurm_topology",
            [q.name for q in cluster.queues],
            f"a cluster with a queue of {', '.join(sorted(TOPOLOGY_INSTANCE_TYPES))}",
        )
    own = bootstrap is None
    if bootstrap is None:
        check_first_call(cluster, "SlurmTopology", method="enable_slurm_topology", remedy="one topology per cluster")
        bootstrap = NodeBootstrap(cluster, "SlurmTopology", name="slurm-topology")
    bootstrap.add_step(TOPOLOGY_STEP, _commands(cluster, types), files=_files(cluster.queues, interval_minutes))
    cluster.add_custom_slurm_settings(TOPOLOGY_SLURM_SETTINGS[0])
    cluster.node.add_validation(_TopologyAtCreation(cluster, bootstrap))
    cluster._write_plan_record(slurm_topology=PLAN_TOPOLOGY)
    if own:
        policy = cluster.add_head_node_bootstrap(bootstrap, event=event, statements=topology_statements())
        _nag.acknowledge(
            policy,
            _nag.iam5_resource(policy, "*"),
            "ec2:DescribeInstanceTopology and ec2:DescribeInstances are List actions granted on '*' (EC2 User Guide "
            "topology prerequisites, IAM permissions); the head node lists its cluster's instances by tag",
        )
    return bootstrap
