"""``fmc plan``: what a cloud assembly (or an instance type and a node count) gives you, from the catalog.

Figures come from the same places the constructs use: :mod:`fmconstructs.catalog` (GPUs, GPU memory, vCPUs, NVMe,
``fsx_lustre_efa_interfaces``), :class:`fmconstructs.networking.InterfaceLayout` (EFA Gbit/s per node, rebuilt from
the interfaces counted in the launch template), :mod:`fmconstructs.storage.sizing` (Lustre throughput and sizing) and
:data:`fmconstructs.storage.sizing.MAX_EFA_CONNECTIONS`. Nothing is priced unless the user gives a price.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..catalog import CATALOG, InstanceSpec, InterfaceType, get_instance_spec
from ..networking.interfaces import InterfaceLayout, InterfacePolicy, PlannedInterface, plan_network_interfaces
from ..storage.sizing import (
    LUSTRE_EFA_METADATA_KEY,
    MAX_EFA_CONNECTIONS,
    LustreDeploymentType,
    aggregate_throughput_mbps,
    per_unit_throughput_mbps_per_tib,
    size_for_checkpoint,
    size_for_throughput,
)
from .assembly import (
    DEPLOY_TIME,
    FileSystem,
    NodeGroup,
    Stack,
    as_int,
    describe,
    literal,
    read_assembly,
)
from .ip_consumers import IpConsumer, ip_consumers
from .pcs_size import PcsSizePlan, plan_pcs_clusters
from .pcs_size import unknowns as pcs_size_unknowns
from .plan_models import ComputeTotal, ServingPlan, TrainingPlan, compute_total, group_compute
from .topology import tight_placement, topology_mechanism

Count = int | str | None
"""A count: an int, :data:`DEPLOY_TIME`, or None (not applicable)."""

#: ``lustre_efa_interfaces_per_node`` of a group whose template marker leaves the count to the node (HyperPod groups
#: of a type the catalog lacks: the node uses 2 EFA interfaces when it has several EFA devices, else 1).
DECIDED_ON_NODE = "decided on the node"


@dataclass
class NodeGroupPlan:
    stack: str
    group: str
    kind: str
    instance_type: str
    min_nodes: Count
    max_nodes: Count
    in_catalog: bool = False
    gpu_model: str | None = None
    gpus_per_node: int | None = None
    gpu_memory_gib_per_node: float | None = None
    gpus_total: Count = None
    gpu_memory_gib_total: float | str | None = None
    vcpus_per_node: int | None = None
    vcpus_total: Count = None
    efa_interfaces_per_node: Count = None
    ip_interfaces_per_node: Count = None
    efa_gbps_per_node: float | str | None = None
    efa_gbps_total: float | str | None = None
    nvme_gb_per_node: int | None = None
    capacity: str = "on-demand"
    reservation: str | None = None
    zone: str | None = None
    lustre_efa_interfaces_per_node: Count = None
    """EFA interfaces per node for LNet: the catalog default (capped by the node's EFA interfaces) for launch-template
    groups, the template's ``fmconstructs:lustre-efa-interfaces`` for ParallelCluster queues and HyperPod groups
    (:data:`DECIDED_ON_NODE` when it says null); None when unknown or not applicable."""
    price_per_hour: float | None = None
    cost_per_hour: float | str | None = None
    subnets: list[str] = field(default_factory=list)
    image: str | None = None
    topology: str | None = None
    """The topology mechanism active on the group's backend (:func:`fmconstructs.cli.topology.topology_mechanism`)."""
    tight_placement: str | None = None
    """Why the group's nodes should share network nodes (a cluster placement group, a Capacity Block), or None."""
    dense_pflops_per_node: dict[str, float] | None = None
    """Peak dense tensor PFLOPS per precision of one node (catalog ``gpu_performance`` x GPUs)."""
    dense_pflops_total: dict[str, float | str] | None = None
    """The same at max nodes (``deploy-time`` when the node count is)."""
    efa_generation: int | None = None


@dataclass
class FileSystemPlan:
    stack: str
    file_system: str
    storage_capacity_gib: Count
    deployment_type: str | None
    throughput_mbps_per_tib: Count
    aggregate_throughput_mbps: float | str | None
    efa_enabled: bool | str
    efa_connections: Count = None
    efa_connection_limit: int = MAX_EFA_CONNECTIONS
    efa_clients: list[str] = field(default_factory=list)
    within_budget: bool | None = None


@dataclass
class Plan:
    node_groups: list[NodeGroupPlan] = field(default_factory=list)
    file_systems: list[FileSystemPlan] = field(default_factory=list)
    pcs_clusters: list[PcsSizePlan] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ip_consumers: list[IpConsumer] = field(default_factory=list)
    """Everything that takes private IPs from a subnet (node groups, FSx, PCS controllers, interface endpoints)."""
    compute_total: ComputeTotal | None = None
    """GPUs, peak dense PFLOPS per precision and GPU memory of every GPU group (:mod:`.plan_models`)."""
    serving: ServingPlan | None = None
    """``--model-params``: does the model fit for serving, and the smallest layout that does."""
    training: TrainingPlan | None = None
    """``--model-params --tokens --mfu``: training time and cost."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _takes_efa(instance_type: object) -> bool:
    spec = _spec(instance_type)
    return spec is not None and spec.maximum_efa_interfaces > 0


def _spec(instance_type: object) -> InstanceSpec | None:
    if isinstance(instance_type, str) and instance_type in CATALOG:
        return get_instance_spec(instance_type)
    return None


def _layout(spec: InstanceSpec, group: NodeGroup) -> InterfaceLayout | None:
    """The group's interfaces as an :class:`InterfaceLayout`, to reuse its per-card EFA bandwidth model."""
    lt = group.launch_template
    if lt is None or lt.interfaces is None:
        return None
    planned: list[PlannedInterface] = []
    for i in lt.interfaces:
        if i.network_card_index is None or i.device_index is None:
            return None
        try:
            kind = InterfaceType(i.interface_type)
        except ValueError:
            return None
        planned.append(PlannedInterface(i.network_card_index, i.device_index, kind))
    if any(p.network_card_index >= spec.network_card_count for p in planned):
        return None  # a card the catalog does not know for this type: no bandwidth figure rather than a guess
    policy = InterfacePolicy.PCS if group.kind == "pcs" else InterfacePolicy.SELF_MANAGED
    return InterfaceLayout(spec=spec, policy=policy, interfaces=tuple(planned))


def _capacity(group: NodeGroup, spec: InstanceSpec | None) -> tuple[str, str | None]:
    lt = group.launch_template
    market = lt.market_type if lt else None
    block = market == "capacity-block" or group.purchase_option in ("CAPACITY_BLOCK",)
    reservation: str | None = None
    if group.purchase_option == "TRAINING_PLAN":
        return "SageMaker training plan", describe(group.reservation)
    if group.reservation is not None:
        reservation = describe(group.reservation)
    elif lt is not None and lt.reservation_id is not None:
        reservation = describe(lt.reservation_id)
    elif lt is not None and lt.reservation_group_arn is not None:
        reservation = describe(lt.reservation_group_arn)
    if block:
        kind = "UltraServer Capacity Block" if spec is not None and spec.ultraserver_types else "Capacity Block"
    elif (
        market == "interruptible-capacity-reservation" or group.purchase_option == "INTERRUPTIBLE_CAPACITY_RESERVATION"
    ):
        kind = "interruptible ODCR"  # PCS User Guide capacity-reservations-iodcr: reclaimable with a 2-minute warning
    elif reservation is not None:
        kind = "ODCR"
    elif market == "spot" or group.purchase_option == "SPOT":
        kind = "spot"
    else:
        kind = "on-demand"
    return kind, reservation


def _zone(group: NodeGroup, stack: Stack) -> str | None:
    lt = group.launch_template
    if lt is not None and lt.zone is not None:
        return str(lt.zone) if literal(lt.zone) else DEPLOY_TIME
    zones: set[str] = set()
    for subnet in group.subnet_ids:
        logical = subnet.get("Ref") if isinstance(subnet, dict) else None
        if isinstance(logical, str) and logical in stack.subnet_zones:
            zone = stack.subnet_zones[logical]
            zones.add(str(zone) if literal(zone) else DEPLOY_TIME)
        elif isinstance(subnet, str):
            zones.add(f"zone of {subnet}")
        else:
            zones.add(DEPLOY_TIME)
    if not zones:
        return None
    return ", ".join(sorted(zones))


def _times(count: Count, value: float | int | None) -> float | str | None:
    if value is None or count is None:
        return None
    if isinstance(count, str):
        return DEPLOY_TIME
    product = count * value
    return int(product) if float(product).is_integer() else product


def _count(value: object) -> Count:
    if value is None:
        return None
    number = as_int(value)
    return DEPLOY_TIME if number is None else number


def _fill_from_spec(plan: NodeGroupPlan, spec: InstanceSpec, nodes: Count, efa: int | None, gbps: float | None) -> None:
    plan.in_catalog = True
    plan.gpu_model = spec.gpu.model
    plan.gpus_per_node = spec.gpu.count
    plan.gpu_memory_gib_per_node = spec.gpu.total_memory_mib / 1024
    plan.gpus_total = _count(_times(nodes, spec.gpu.count))
    plan.gpu_memory_gib_total = _times(nodes, plan.gpu_memory_gib_per_node)
    plan.vcpus_per_node = spec.vcpus
    plan.vcpus_total = _count(_times(nodes, spec.vcpus))
    plan.nvme_gb_per_node = spec.instance_store.total_gb if spec.instance_store else 0
    plan.dense_pflops_per_node, plan.dense_pflops_total = group_compute(spec.gpu.count, spec.instance_type, nodes)
    plan.efa_generation = spec.efa_generation
    if gbps is not None:
        plan.efa_gbps_per_node = gbps
        plan.efa_gbps_total = _times(nodes, gbps)
    if efa is not None:
        # FSx for Lustre clients use the catalog's default EFA count for LNet, never more than the node has
        # (fmconstructs.storage.client; FSx for Lustre User Guide "Configuring EFA clients").
        plan.lustre_efa_interfaces_per_node = min(spec.fsx_lustre_efa_interfaces or 0, efa)


def plan_group(group: NodeGroup, stack: Stack, prices: dict[str, float], unknowns: list[str]) -> NodeGroupPlan:
    where = f"{stack.name}/{group.name}"
    itype = group.instance_type
    if itype is not None and not literal(itype):
        unknowns.append(f"{where}: instance type ({describe(itype)})")
    min_nodes = _count(group.min_nodes)
    max_nodes = _count(group.max_nodes)
    for name, raw, value in (("min nodes", group.min_nodes, min_nodes), ("max nodes", group.max_nodes, max_nodes)):
        if value == DEPLOY_TIME:
            unknowns.append(f"{where}: {name} ({describe(raw)})")
    plan = NodeGroupPlan(
        stack=stack.name,
        group=group.name,
        kind=group.kind,
        instance_type=str(itype) if literal(itype) and itype is not None else DEPLOY_TIME,
        min_nodes=min_nodes,
        max_nodes=max_nodes,
    )
    lt = group.launch_template
    efa: int | None = None
    if lt is not None and lt.interfaces is not None:
        efa = sum(1 for i in lt.interfaces if i.is_efa)
        plan.efa_interfaces_per_node = efa
        plan.ip_interfaces_per_node = sum(1 for i in lt.interfaces if i.carries_ip) or 1
    elif lt is not None:
        plan.efa_interfaces_per_node = DEPLOY_TIME
        unknowns.append(f"{where}: network interfaces ({describe(lt.interfaces)})")
    elif group.efa_decided_by is not None and group.efa_enabled is not False and _takes_efa(itype):
        # The service creates the interfaces (ParallelCluster from Efa.Enabled, HyperPod on its own): not guessed.
        plan.efa_interfaces_per_node = f"set by {group.efa_decided_by}"
        plan.ip_interfaces_per_node = 1
        unknowns.append(f"{where}: EFA interfaces per node (set by {group.efa_decided_by} at launch)")
    else:
        plan.efa_interfaces_per_node = 0
        plan.ip_interfaces_per_node = 1
        efa = 0
    spec = _spec(itype)
    if spec is not None:
        layout = _layout(spec, group) if efa else None
        gbps = layout.efa_bandwidth_gbps if layout is not None else (0.0 if efa == 0 else None)
        _fill_from_spec(plan, spec, max_nodes, efa, gbps)
    if group.lustre_efa_declared:
        # ParallelCluster queues / HyperPod groups: the count fmconstructs wrote into the resource's Metadata.
        n = group.lustre_efa_interfaces
        plan.lustre_efa_interfaces_per_node = DECIDED_ON_NODE if n is None else n
    plan.capacity, plan.reservation = _capacity(group, spec)
    plan.topology = topology_mechanism(group, stack.template)
    block = plan.capacity if "Capacity Block" in plan.capacity else None
    plan.tight_placement = tight_placement(group, stack.template) or block
    target = (
        group.reservation
        if group.reservation is not None
        else (lt.reservation_id or lt.reservation_group_arn if lt else None)
    )
    if plan.reservation is not None and not literal(target):
        unknowns.append(f"{where}: capacity reservation ({plan.reservation})")
    plan.zone = _zone(group, stack)
    plan.subnets = [describe(s) for s in group.subnet_ids]
    if group.image_id is not None:
        plan.image = describe(group.image_id)
        if not literal(group.image_id):
            unknowns.append(f"{where}: AMI ({plan.image})")
    elif group.eks_ami_type is not None:
        plan.image = f"EKS {describe(group.eks_ami_type)}"
    if plan.instance_type in prices:
        plan.price_per_hour = prices[plan.instance_type]
        plan.cost_per_hour = _times(max_nodes, plan.price_per_hour)
    return plan


def plan_file_system(fs: FileSystem, groups: list[NodeGroupPlan], unknowns: list[str]) -> FileSystemPlan:
    where = f"{fs.stack}/{fs.name}"
    capacity = _count(fs.storage_capacity_gib)
    deployment = str(fs.deployment_type) if literal(fs.deployment_type) and fs.deployment_type else None
    unit_raw = fs.throughput_mbps_per_tib
    unit: Count = _count(unit_raw)
    throughput: float | str | None = None
    if deployment in LustreDeploymentType.__members__:
        dtype = LustreDeploymentType(deployment)
        effective = per_unit_throughput_mbps_per_tib(dtype, unit if isinstance(unit, int) else None)
        if not dtype.is_persistent:
            unit = effective
        if isinstance(capacity, int) and isinstance(unit, int):
            throughput = aggregate_throughput_mbps(capacity, unit)
        elif capacity == DEPLOY_TIME or unit == DEPLOY_TIME:
            throughput = DEPLOY_TIME
    for name, raw, value in (("storage capacity", fs.storage_capacity_gib, capacity), ("throughput", unit_raw, unit)):
        if value == DEPLOY_TIME:
            unknowns.append(f"{where}: {name} ({describe(raw)})")
    efa_enabled: bool | str = bool(fs.efa_enabled) if literal(fs.efa_enabled) else DEPLOY_TIME
    plan = FileSystemPlan(
        stack=fs.stack,
        file_system=fs.name,
        storage_capacity_gib=capacity,
        deployment_type=deployment,
        throughput_mbps_per_tib=unit,
        aggregate_throughput_mbps=throughput,
        efa_enabled=efa_enabled,
    )
    if efa_enabled is True:
        total = 0
        unknown = False
        for g in groups:
            if g.stack != fs.stack or g.kind == "launch-template":
                continue
            per_node = g.lustre_efa_interfaces_per_node
            service = isinstance(g.efa_interfaces_per_node, str) and g.efa_interfaces_per_node.startswith("set by")
            if per_node is None and service:
                # A ParallelCluster/HyperPod group without the constructs' marker: its Lustre EFA interfaces are not
                # in the template (fmconstructs' constructs count them against the budget at synth).
                plan.efa_clients.append(f"{g.group}: not counted here (checked at synth by the construct)")
                unknowns.append(
                    f"{where}: EFA connections of {g.group} (no {LUSTRE_EFA_METADATA_KEY} in the template; checked "
                    "at synth by the construct)"
                )
                unknown = True
                continue
            if isinstance(per_node, str):
                plan.efa_clients.append(f"{g.group}: ? interfaces ({per_node})")
                unknowns.append(f"{where}: EFA connections of {g.group} (Lustre EFA interfaces {per_node})")
                unknown = True
                continue
            if not per_node:
                continue
            if not isinstance(g.max_nodes, int):
                unknown = True
                plan.efa_clients.append(f"{g.group}: ? nodes x {per_node}")
                continue
            total += g.max_nodes * per_node
            plan.efa_clients.append(f"{g.group}: {g.max_nodes} x {per_node} = {g.max_nodes * per_node}")
        plan.efa_connections = DEPLOY_TIME if unknown else total
        plan.within_budget = None if unknown else total <= MAX_EFA_CONNECTIONS
    return plan


def plan_stacks(stacks: list[Stack], *, prices: dict[str, float] | None = None) -> Plan:
    """The plan of every node group and file system of ``stacks``."""
    plan = Plan()
    for stack in stacks:
        for group in stack.node_groups:
            plan.node_groups.append(plan_group(group, stack, prices or {}, plan.unknowns))
        for fs in stack.file_systems:
            plan.file_systems.append(plan_file_system(fs, plan.node_groups, plan.unknowns))
        pcs = plan_pcs_clusters(stack.name, stack.template)  # PCS controller size and headroom (cli.pcs_size)
        plan.pcs_clusters += pcs
        plan.unknowns += pcs_size_unknowns(pcs)
        for parameter in stack.parameters:
            plan.unknowns.append(f"{stack.name}: parameter {parameter} (resolved at deploy time)")
        plan.notes += stack.notes  # plan records the readers could not use (cli.plan_readers)
    plan.ip_consumers = ip_consumers(stacks, plan.node_groups)
    plan.compute_total = compute_total(plan.node_groups)
    plan.notes.append(
        "EFA connections count the node groups of the file system's own stack: PCS, EKS and Auto Scaling groups at "
        "their catalog default fsx_lustre_efa_interfaces (capped by their EFA interfaces), ParallelCluster queues "
        f"and HyperPod instance groups at the count fmconstructs wrote as resource Metadata {LUSTRE_EFA_METADATA_KEY}"
        " (max nodes x interfaces, 0 for TCP); clients in other stacks, or launch-template groups with "
        "efa_interfaces_for_lustre set, are not seen in the template."
    )
    if not prices:
        plan.notes.append("No prices: give --price-per-hour TYPE=USD to see cost per hour (nothing is hard-coded).")
    return plan


def plan_assembly(path: str | Path, *, prices: dict[str, float] | None = None) -> Plan:
    """Read the cloud assembly at ``path`` and plan it."""
    return plan_stacks(read_assembly(path), prices=prices)


def plan_instances(
    instance_type: str,
    nodes: int,
    *,
    checkpoint_bytes: float | None = None,
    checkpoint_seconds: float | None = None,
    throughput_gbytes_per_s: float | None = None,
    lustre_efa: bool = False,
    price_per_hour: float | None = None,
) -> Plan:
    """Plan ``nodes`` x ``instance_type`` without an app: the default interface layout and, when a checkpoint or a
    throughput objective is given, the Lustre file system :func:`~fmconstructs.storage.sizing.size_for_checkpoint`
    (or ``size_for_throughput``) picks, as the constructs do."""
    spec = get_instance_spec(instance_type)
    layout = plan_network_interfaces(spec)
    efa = layout.efa_interface_count
    plan = Plan()
    group = NodeGroupPlan(
        stack="-",
        group="planned",
        kind="plan",
        instance_type=spec.instance_type,
        min_nodes=nodes,
        max_nodes=nodes,
        efa_interfaces_per_node=efa,
        ip_interfaces_per_node=sum(1 for i in layout.interfaces if i.interface_type is not InterfaceType.EFA_ONLY),
    )
    _fill_from_spec(group, spec, nodes, efa, layout.efa_bandwidth_gbps)
    if price_per_hour is not None:
        group.price_per_hour = price_per_hour
        group.cost_per_hour = _times(nodes, price_per_hour)
    plan.node_groups.append(group)
    plan.compute_total = compute_total(plan.node_groups)
    sizing = None
    if checkpoint_bytes is not None or checkpoint_seconds is not None:
        if checkpoint_bytes is None or checkpoint_seconds is None:
            from ..errors import FmValidationError

            raise FmValidationError(
                "checkpoint_seconds" if checkpoint_seconds is None else "checkpoint_bytes",
                None,
                "given together with the other checkpoint option",
            )
        sizing = size_for_checkpoint(checkpoint_bytes, checkpoint_seconds, efa_enabled=lustre_efa)
    elif throughput_gbytes_per_s is not None:
        sizing = size_for_throughput(throughput_gbytes_per_s, efa_enabled=lustre_efa)
    if sizing is not None:
        fs = FileSystemPlan(
            stack="-",
            file_system="sized",
            storage_capacity_gib=sizing.storage_capacity_gib,
            deployment_type=sizing.deployment_type.value,
            throughput_mbps_per_tib=sizing.throughput_mbps_per_tib,
            aggregate_throughput_mbps=sizing.aggregate_throughput_mbps,
            efa_enabled=sizing.efa_enabled,
        )
        if sizing.efa_enabled:
            per_node = (
                group.lustre_efa_interfaces_per_node if isinstance(group.lustre_efa_interfaces_per_node, int) else 0
            )
            total = nodes * per_node
            fs.efa_connections = total
            fs.efa_clients.append(f"planned: {nodes} x {per_node} = {total}")
            fs.within_budget = total <= MAX_EFA_CONNECTIONS
        if checkpoint_bytes is not None:
            plan.notes.append(
                f"A {checkpoint_bytes:,.0f}-byte checkpoint takes {sizing.seconds_to_write(checkpoint_bytes):,.1f} s "
                "at the file system's aggregate baseline throughput."
            )
        plan.file_systems.append(fs)
    return plan
