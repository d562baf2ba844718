"""``fmc plan``: each PCS cluster's controller size against the node groups it manages (no aws_cdk).

For every ``AWS::PCS::Cluster`` of a template: its ``Size``, how many compute nodes that size holds
(:data:`fmconstructs.pcs.slurm.CONTROLLER_SIZE_LIMITS`, PCS API reference ``CreateCluster.size``), the sum of
``ScalingConfiguration.MaxInstanceCount`` over the ``AWS::PCS::ComputeNodeGroup`` resources whose ``ClusterId``
refers to it (login node groups included: PCS runs login nodes as a compute node group), and the headroom. A count or
a size that is not a literal makes the sum or the headroom ``deploy-time``. Node groups of other stacks (a cluster id
imported across stacks) are not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..pcs.slurm import ControllerSize
from .assembly import DEPLOY_TIME, as_int, literal

#: The resource types read here (CloudFormation resource reference, AWS PCS).
CLUSTER_TYPE = "AWS::PCS::Cluster"
NODE_GROUP_TYPE = "AWS::PCS::ComputeNodeGroup"
#: Columns of the ``fmc plan`` table, in order (:func:`table_rows`).
COLUMNS = ("Stack", "Cluster", "Size", "Holds nodes", "Node groups (max nodes)", "Max nodes", "Headroom")


@dataclass
class PcsSizePlan:
    """One PCS cluster's controller size and the nodes its node groups may launch."""

    stack: str
    cluster: str
    size: str
    """SMALL / MEDIUM / LARGE, :data:`DEPLOY_TIME`, or the literal found when it is not a size."""
    size_max_nodes: int | None
    node_groups: dict[str, int | str] = field(default_factory=dict)
    """Logical id -> ``MaxInstanceCount`` (or :data:`DEPLOY_TIME`)."""
    max_nodes: int | str = 0
    """The sum of the node groups' counts, or :data:`DEPLOY_TIME` when one is not a literal."""
    headroom: int | str | None = None
    """``size_max_nodes - max_nodes``; negative when the node groups exceed the size; :data:`DEPLOY_TIME` when
    either side is unknown."""
    fits: bool | None = None


def _refers_to(value: object, logical_id: str) -> bool:
    """Whether ``ClusterId`` refers to the cluster ``logical_id`` (``GetAtt X.Id``, ``GetAtt X.Arn`` or ``Ref X``)."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    (fn, arg), *_ = value.items()
    if fn == "Ref":
        return bool(arg == logical_id)
    if fn == "Fn::GetAtt":
        target = arg[0] if isinstance(arg, list) and arg else str(arg).split(".", 1)[0]
        return bool(target == logical_id)
    return False


def _properties(resource: dict[str, Any]) -> dict[str, Any]:
    props = resource.get("Properties")
    return props if isinstance(props, dict) else {}


def _size(props: dict[str, Any]) -> tuple[str, int | None]:
    raw = props.get("Size")
    if raw is None:
        return "not set", None
    if not literal(raw):
        return DEPLOY_TIME, None
    try:
        size = ControllerSize(str(raw))
    except ValueError:
        return str(raw), None
    return size.value, size.max_nodes


def plan_pcs_clusters(stack: str, template: dict[str, Any]) -> list[PcsSizePlan]:
    """The controller size and headroom of every PCS cluster of one template."""
    resources = template.get("Resources") if isinstance(template, dict) else None
    if not isinstance(resources, dict):
        return []
    typed = {lid: r for lid, r in resources.items() if isinstance(r, dict)}
    groups = {lid: r for lid, r in typed.items() if r.get("Type") == NODE_GROUP_TYPE}
    plans: list[PcsSizePlan] = []
    for lid, resource in typed.items():
        if resource.get("Type") != CLUSTER_TYPE:
            continue
        props = _properties(resource)
        size, holds = _size(props)
        plan = PcsSizePlan(stack=stack, cluster=lid, size=size, size_max_nodes=holds)
        for group_id, group in groups.items():
            group_props = _properties(group)
            if not _refers_to(group_props.get("ClusterId"), lid):
                continue
            scaling = group_props.get("ScalingConfiguration")
            count = as_int(scaling.get("MaxInstanceCount")) if isinstance(scaling, dict) else None
            plan.node_groups[group_id] = DEPLOY_TIME if count is None else count
        _total(plan)
        plans.append(plan)
    return plans


def _total(plan: PcsSizePlan) -> None:
    counts = list(plan.node_groups.values())
    if any(not isinstance(c, int) for c in counts):
        plan.max_nodes = DEPLOY_TIME
    else:
        plan.max_nodes = sum(c for c in counts if isinstance(c, int))
    if isinstance(plan.max_nodes, int) and plan.size_max_nodes is not None:
        plan.headroom = plan.size_max_nodes - plan.max_nodes
        plan.fits = plan.headroom >= 0
    elif plan.size == DEPLOY_TIME or plan.max_nodes == DEPLOY_TIME:
        plan.headroom = DEPLOY_TIME


def unknowns(plans: list[PcsSizePlan]) -> list[str]:
    """``fmc plan``'s "known only at deploy time" lines for these clusters."""
    lines: list[str] = []
    for p in plans:
        where = f"{p.stack}/{p.cluster}"
        if p.size == DEPLOY_TIME:
            lines.append(f"{where}: PCS controller size")
        lines += [
            f"{where}: max nodes of {g} (PCS controller headroom)" for g, c in p.node_groups.items() if c == DEPLOY_TIME
        ]
    return lines


def table_rows(plans: list[PcsSizePlan]) -> list[tuple[str, ...]]:
    """Rows for :data:`COLUMNS`: the headroom marked ``OVER`` when the node groups exceed the size."""
    rows: list[tuple[str, ...]] = []
    for p in plans:
        holds = f"{p.size_max_nodes:,}" if p.size_max_nodes is not None else "?"
        groups = ", ".join(f"{g}: {c:,}" if isinstance(c, int) else f"{g}: {c}" for g, c in p.node_groups.items())
        total = f"{p.max_nodes:,}" if isinstance(p.max_nodes, int) else str(p.max_nodes)
        if isinstance(p.headroom, int):
            headroom = f"{p.headroom:,}" + (" OVER" if p.headroom < 0 else "")
        else:
            headroom = "?" if p.headroom is None else str(p.headroom)
        rows.append((p.stack, p.cluster, p.size, holds, groups or "-", total, headroom))
    return rows
