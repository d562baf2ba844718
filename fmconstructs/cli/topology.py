"""Which network-topology mechanism a node group's backend uses, and whether the user asked for tight placement.

Pure functions over a synthesized template (no AWS call, no aws_cdk import), used by ``fmc plan`` (the "Topology"
column and ``--json`` ``topology``) and ``fmc preflight`` (a reservation that spans several layer-3 network nodes is
a warning only where the group asked for tight placement):

- PCS: no topology plugin is configured by fmconstructs; nodes carry features per network node at most (README).
- AWS ParallelCluster: ``Scheduling.SlurmSettings.CustomSlurmSettings`` entries (a list of one-key mappings,
  ParallelCluster 3 configuration format) with ``TopologyPlugin``: ``topology/tree`` is reported as fmconstructs'
  DescribeInstanceTopology generator only when the resource's plan record says fmconstructs set it up
  (``slurm_topology``, written by ``enable_slurm_topology``, whose refresher runs at a head node creation event);
  a ``topology/tree`` setting without it is reported as a setting with no topology.conf known to come from
  fmconstructs. P6e-GB200 queues without it get ParallelCluster's own ``topology/block``
  (issue 21: "ParallelCluster (topology/block for GB200)", cookbook ``pcluster_topology_generator``; UNCONFIRMED here
  against the cookbook source).
- EKS: Kueue Topology Aware Scheduling when the stack installs the ``kueue`` Helm chart through the CDK's
  ``Custom::AWSCDK-EKS-HelmChart`` resource (aws-cdk-lib 2.275.0 aws-eks/lib/helm-chart.js ``RESOURCE_TYPE``,
  property ``Chart``).
- SageMaker HyperPod on EKS: HyperPod task governance (its own Kueue); HyperPod Slurm: none known here.

Tight placement: a launch template ``Placement.GroupName`` (or an Auto Scaling group's ``PlacementGroup``) that
refers to an ``AWS::EC2::PlacementGroup`` with ``Strategy: cluster``; a ParallelCluster queue or compute resource with
``Networking.PlacementGroup`` enabled or named; a Capacity Block (UltraServer or not).
"""

from __future__ import annotations

from typing import Any

from .._plan_metadata import read_plan_record
from .assembly import NodeGroup

#: The ``Custom::AWSCDK-EKS-HelmChart`` resource type of aws-cdk-lib's ``aws_eks.HelmChart`` (aws-cdk-lib 2.275.0
#: aws-eks/lib/helm-chart.js ``RESOURCE_TYPE``).
HELM_CHART_TYPE = "Custom::AWSCDK-EKS-HelmChart"

PCS_TOPOLOGY = "none (node features only; see README)"
PCLUSTER_TREE = "topology/tree from DescribeInstanceTopology (fmconstructs)"
PCLUSTER_TREE_SETTING_ONLY = "topology/tree (CustomSlurmSettings; no topology.conf from fmconstructs)"
PCLUSTER_BLOCK = "topology/block (ParallelCluster)"
KUEUE_TAS = "Kueue TAS"
HYPERPOD_EKS = "HyperPod (task governance)"
NONE = "none"
NOT_COMPUTE = "-"


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resources(template: dict[str, Any]) -> dict[str, Any]:
    return _dict(template.get("Resources"))


def _pc_parts(group: NodeGroup) -> tuple[str, list[str]]:
    """(resource logical id, path inside the cluster: ``[queue, compute resource]``, ``[head]``, ``[login, pool]``)."""
    logical, _, rest = group.logical_id.partition("/")
    return logical, rest.split("/") if rest else []


def _pc_config(group: NodeGroup, template: dict[str, Any]) -> dict[str, Any]:
    logical, _ = _pc_parts(group)
    resource = _dict(_resources(template).get(logical))
    return _dict(_dict(resource.get("Properties")).get("ClusterConfiguration"))


def _pc_queue(config: dict[str, Any], name: str) -> dict[str, Any]:
    for queue in _dict(config.get("Scheduling")).get("SlurmQueues") or []:
        if isinstance(queue, dict) and queue.get("Name") == name:
            return queue
    return {}


def topology_plugin(config: dict[str, Any]) -> object:
    """The ``TopologyPlugin`` of a ParallelCluster configuration's ``CustomSlurmSettings``, or None."""
    settings = _dict(_dict(config.get("Scheduling")).get("SlurmSettings")).get("CustomSlurmSettings")
    for entry in settings if isinstance(settings, list) else []:
        if isinstance(entry, dict) and "TopologyPlugin" in entry:
            return entry["TopologyPlugin"]
    return None


def _parallelcluster_topology(group: NodeGroup, template: dict[str, Any]) -> str:
    _, parts = _pc_parts(group)
    if len(parts) != 2 or parts[0] == "login":
        return NOT_COMPUTE  # the head node and login pools run no jobs
    plugin = topology_plugin(_pc_config(group, template))
    if plugin == "topology/tree":
        return PCLUSTER_TREE if _fmconstructs_tree(group, template) else PCLUSTER_TREE_SETTING_ONLY
    if isinstance(plugin, str):
        return f"{plugin} (CustomSlurmSettings)"
    if plugin is not None:
        return "TopologyPlugin set at deploy time"
    itype = group.instance_type
    if isinstance(itype, str) and itype.startswith("p6e-gb200."):
        return PCLUSTER_BLOCK
    return NONE


def _fmconstructs_tree(group: NodeGroup, template: dict[str, Any]) -> bool:
    """Whether the resource's plan record says fmconstructs writes its topology.conf (see the module docstring)."""
    logical, _ = _pc_parts(group)
    record = read_plan_record(_dict(_resources(template).get(logical)))
    topology = record.fields.get("slurm_topology") if record is not None and record.supported else None
    return isinstance(topology, dict) and topology.get("source") == "fmconstructs"


def _installs_kueue(template: dict[str, Any]) -> bool:
    for resource in _resources(template).values():
        resource = _dict(resource)
        if resource.get("Type") != HELM_CHART_TYPE:
            continue
        chart = _dict(resource.get("Properties")).get("Chart")
        if isinstance(chart, str) and (chart == "kueue" or chart.endswith("/kueue")):
            return True
    return False


def _hyperpod_topology(group: NodeGroup, template: dict[str, Any]) -> str:
    logical = group.logical_id.partition("/")[0]
    props = _dict(_dict(_resources(template).get(logical)).get("Properties"))
    if "Eks" in _dict(props.get("Orchestrator")):
        return HYPERPOD_EKS
    return "none (HyperPod Slurm; see README)"


def topology_mechanism(group: NodeGroup, template: dict[str, Any]) -> str:
    """What places ``group``'s jobs by network topology on its backend (see the module docstring)."""
    if group.kind == "pcs":
        return PCS_TOPOLOGY
    if group.kind == "parallelcluster":
        return _parallelcluster_topology(group, template)
    if group.kind == "eks":
        return KUEUE_TAS if _installs_kueue(template) else NONE
    if group.kind == "hyperpod":
        return _hyperpod_topology(group, template)
    if group.kind == "launch-template":
        return NOT_COMPUTE
    return NONE


def _cluster_group(reference: object, template: dict[str, Any]) -> str | None:
    """``reference`` (``Ref`` or ``Fn::GetAtt [id, GroupName]`` to a placement group) when its strategy is cluster."""
    ref = _dict(reference)
    logical = ref.get("Ref")
    if logical is None and isinstance(ref.get("Fn::GetAtt"), list) and ref["Fn::GetAtt"]:
        logical = ref["Fn::GetAtt"][0]
    if not isinstance(logical, str):
        return None
    resource = _dict(_resources(template).get(logical))
    if resource.get("Type") != "AWS::EC2::PlacementGroup":
        return None
    if _dict(resource.get("Properties")).get("Strategy") == "cluster":
        return f"cluster placement group {logical}"
    return None


def _pc_placement(group: NodeGroup, template: dict[str, Any]) -> str | None:
    _, parts = _pc_parts(group)
    if len(parts) != 2 or parts[0] == "login":
        return None
    queue = _pc_queue(_pc_config(group, template), parts[0])
    resources = [r for r in queue.get("ComputeResources") or [] if isinstance(r, dict) and r.get("Name") == parts[1]]
    for where in [*resources, queue]:
        placement = _dict(_dict(where.get("Networking")).get("PlacementGroup"))
        if "Enabled" in placement or "Id" in placement or "Name" in placement:
            enabled = placement.get("Enabled", True)  # naming a group places in it (UNCONFIRMED without Enabled)
            return "ParallelCluster placement group" if enabled is True or enabled == "true" else None
    return None


def tight_placement(group: NodeGroup, template: dict[str, Any]) -> str | None:
    """Why ``group``'s nodes are meant to sit close together (a cluster placement group), or None."""
    if group.kind == "parallelcluster":
        return _pc_placement(group, template)
    lt = group.launch_template
    if lt is not None:
        data = _dict(_dict(_dict(_resources(template).get(lt.logical_id)).get("Properties")).get("LaunchTemplateData"))
        found = _cluster_group(_dict(data.get("Placement")).get("GroupName"), template)
        if found:
            return found
    if group.kind == "asg":
        resources = _resources(template)
        props = _dict(_dict(resources.get(group.logical_id)).get("Properties"))
        return _cluster_group(props.get("PlacementGroup"), template)
    return None
