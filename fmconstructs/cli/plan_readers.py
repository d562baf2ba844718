"""The readers of ``fmc``'s cloud assembly: one function per CloudFormation resource type, found in a registry.

:func:`fmconstructs.cli.assembly.parse_stack` hands every template resource to :data:`READERS`, which calls the
reader registered for its ``Type`` (``@reader("AWS::PCS::ComputeNodeGroup")``); a type without a reader is not part
of the plan. A reader adds what it finds to the :class:`~fmconstructs.cli.assembly.Stack` (node groups, file
systems, subnets' zones, other IP consumers).

The constructs also write a versioned plan record on their resources (:mod:`fmconstructs._plan_metadata`,
``Metadata`` key :data:`PLAN_METADATA_KEY`). Its Lustre EFA counts are preferred to the older
:data:`LUSTRE_EFA_METADATA_KEY`; a record of a version this release does not read, or a kind other than the one its
reader expects, becomes a note in the plan and the resource is read from its properties as without the record.
Templates without any record (older synths, other tools) are read exactly as before the record existed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._plan_metadata import PLAN_METADATA_KEY, PLAN_RECORD_VERSION, PlanKind, PlanRecord, read_plan_record
from ..storage.sizing import LUSTRE_EFA_METADATA_KEY
from .assembly import (
    DEPLOY_TIME,
    FileSystem,
    LaunchTemplate,
    NetworkConsumer,
    NodeGroup,
    Stack,
    _dict,
    _list,
    _template_ref,
    as_int,
    describe,
)


class ReaderRegistryError(ValueError):
    """A second reader registered for a resource type that already has one."""


@dataclass(frozen=True)
class ReadContext:
    """One template resource, handed to its reader."""

    stack: Stack
    logical_id: str
    resource: dict[str, Any]
    path: str | None
    launch_templates: Mapping[str, LaunchTemplate]
    """The stack's launch templates by logical id (groups reference theirs)."""

    @property
    def props(self) -> dict[str, Any]:
        return _dict(self.resource.get("Properties"))

    @property
    def where(self) -> str:
        return f"{self.stack.name}/{self.path or self.logical_id}"


Reader = Callable[[ReadContext], None]


class ReaderRegistry:
    """Readers by CloudFormation resource type, each with the plan kind its resources are (None: not planned as a
    node group or a file system, e.g. subnets and VPC endpoints)."""

    def __init__(self) -> None:
        self._readers: dict[str, tuple[Reader, PlanKind | None]] = {}

    def register(self, resource_type: str, *, kind: PlanKind | None = None) -> Callable[[Reader], Reader]:
        """Decorator: ``fn`` reads resources of ``resource_type``; raises :class:`ReaderRegistryError` when the
        type already has a reader."""

        def add(fn: Reader) -> Reader:
            if resource_type in self._readers:
                existing = self._readers[resource_type][0].__name__
                raise ReaderRegistryError(
                    f"{resource_type} already has a reader ({existing}); not adding {fn.__name__}"
                )
            self._readers[resource_type] = (fn, kind)
            return fn

        return add

    @property
    def resource_types(self) -> tuple[str, ...]:
        return tuple(self._readers)

    def read(self, ctx: ReadContext) -> None:
        """Check the resource's plan record (notes for what is not read), then call its type's reader."""
        rtype = str(ctx.resource.get("Type"))
        entry = self._readers.get(rtype)
        record = read_plan_record(ctx.resource)
        if record is not None:
            note = _record_note(ctx, rtype, record, entry[1] if entry else None, known_type=entry is not None)
            if note is not None:
                ctx.stack.notes.append(note)
        if entry is not None:
            entry[0](ctx)


def _record_note(
    ctx: ReadContext, rtype: str, record: PlanRecord, kind: PlanKind | None, *, known_type: bool
) -> str | None:
    """What the plan says about a record it cannot use: a version it does not read, a kind its reader does not
    expect, or a resource type without a reader."""
    if not record.supported:
        return (
            f"{ctx.where}: {PLAN_METADATA_KEY} version {record.version!r} is not the version this fmc reads "
            f"({PLAN_RECORD_VERSION}); read from its {rtype} properties as without the record (a newer fmconstructs "
            "reads it)"
        )
    if not known_type:
        return f"{ctx.where}: {PLAN_METADATA_KEY} kind {record.kind!r} on {rtype}, a type this fmc has no reader for"
    if kind is not None and record.kind != kind.value:
        return (
            f"{ctx.where}: {PLAN_METADATA_KEY} kind {record.kind!r}, but {rtype} is read as {kind.value!r}; read "
            "from its properties"
        )
    return None


#: Every reader ``fmc`` knows.
READERS = ReaderRegistry()
reader = READERS.register


def _reservation_target(value: object) -> object:
    target = _dict(value)
    return target.get("CapacityReservationId", target.get("CapacityReservationResourceGroupArn"))


def _lustre_efa_marker(resource: dict[str, Any]) -> dict[str, Any] | None:
    """The Lustre EFA counts of the resource's plan record (:data:`PLAN_METADATA_KEY`, when its version is read
    here), else its older :data:`LUSTRE_EFA_METADATA_KEY` mapping; None when it has neither."""
    record = read_plan_record(resource)
    if record is not None and record.lustre_efa_interfaces is not None:
        return record.lustre_efa_interfaces
    marker = _dict(resource.get("Metadata")).get(LUSTRE_EFA_METADATA_KEY)
    return marker if isinstance(marker, dict) else None


def _declare_lustre_efa(group: NodeGroup, marker: dict[str, Any] | None, name: object) -> None:
    """Set ``group``'s Lustre EFA interfaces from ``marker[name]``: a literal count, else (``"decided-on-node"``, or
    anything that is not a literal count) decided on the node (None)."""
    if marker is None or not isinstance(name, str) or name not in marker:
        return
    count = as_int(marker[name])
    group.lustre_efa_declared = True
    group.lustre_efa_interfaces = count if count is not None and count >= 0 else None


def _hyperpod_groups(
    name: str, logical_id: str, cfn_resource: dict[str, Any], path: str | None = None
) -> list[NodeGroup]:
    """One node group per ``InstanceGroups`` entry; ``ml.p5.48xlarge`` is planned as ``p5.48xlarge``."""
    props = _dict(cfn_resource.get("Properties"))
    marker = _lustre_efa_marker(cfn_resource)
    subnets = _list(_dict(props.get("VpcConfig")).get("Subnets"))
    groups: list[NodeGroup] = []
    for entry in _list(props.get("InstanceGroups")):
        group = _dict(entry)
        itype = group.get("InstanceType")
        if isinstance(itype, str) and itype.startswith("ml."):
            itype = itype[len("ml.") :]
        count = group.get("InstanceCount")
        plan = group.get("TrainingPlanArn")
        groups.append(
            NodeGroup(
                stack=name,
                logical_id=f"{logical_id}/{describe(group.get('InstanceGroupName'))}",
                path=f"{path}/{describe(group.get('InstanceGroupName'))}" if path else None,
                kind="hyperpod",
                instance_type=itype,
                min_nodes=group.get("MinInstanceCount", count),
                max_nodes=count,
                launch_template=None,
                purchase_option="TRAINING_PLAN" if plan is not None else "ON_DEMAND",
                subnet_ids=subnets,
                reservation=plan,
                efa_enabled=True,
                efa_decided_by="SageMaker HyperPod",
            )
        )
        _declare_lustre_efa(groups[-1], marker, group.get("InstanceGroupName"))
    return groups


def _parallelcluster_groups(
    name: str, logical_id: str, cfn_resource: dict[str, Any], base: str | None = None
) -> list[NodeGroup]:
    """The head node, login pools and every queue's compute resources of a ParallelCluster configuration."""
    props = _dict(cfn_resource.get("Properties"))
    config = _dict(props.get("ClusterConfiguration"))
    marker = _lustre_efa_marker(cfn_resource)
    groups: list[NodeGroup] = []

    def add(path: str, itype: object, low: object, high: object, subnets: tuple[object, ...], **extra: Any) -> None:
        groups.append(
            NodeGroup(
                stack=name,
                logical_id=f"{logical_id}/{path}",
                path=f"{base}/{path}" if base else None,
                kind="parallelcluster",
                instance_type=itype,
                min_nodes=low,
                max_nodes=high,
                launch_template=None,
                subnet_ids=subnets,
                efa_decided_by="AWS ParallelCluster",
                **extra,
            )
        )

    def over_tcp() -> None:
        # fmconstructs never configures LNet over EFA on the head node or login nodes: with the marker, they are TCP.
        if marker is not None:
            groups[-1].lustre_efa_declared = True
            groups[-1].lustre_efa_interfaces = 0

    head = _dict(config.get("HeadNode"))
    if head:
        add("head", head.get("InstanceType"), 1, 1, _list(_dict(head.get("Networking")).get("SubnetId")))
        over_tcp()
    for pool in _list(_dict(config.get("LoginNodes")).get("Pools")):
        pool = _dict(pool)
        count = pool.get("Count")
        subnets = _list(_dict(pool.get("Networking")).get("SubnetIds"))
        add(f"login/{describe(pool.get('Name'))}", pool.get("InstanceType"), count, count, subnets)
        over_tcp()
    for queue in _list(_dict(config.get("Scheduling")).get("SlurmQueues")):
        queue = _dict(queue)
        subnets = _list(_dict(queue.get("Networking")).get("SubnetIds"))
        for resource in _list(queue.get("ComputeResources")):
            resource = _dict(resource)
            itype = resource.get("InstanceType")
            if itype is None:  # the flexible form: Instances[].InstanceType (the first one is planned)
                itype = _dict((_list(resource.get("Instances")) or ({},))[0]).get("InstanceType")
            add(
                f"{describe(queue.get('Name'))}/{describe(resource.get('Name'))}",
                itype,
                resource.get("MinCount", 0),
                resource.get("MaxCount"),
                subnets,
                purchase_option=queue.get("CapacityType", "ONDEMAND"),
                reservation=_reservation_target(resource.get("CapacityReservationTarget"))
                or _reservation_target(queue.get("CapacityReservationTarget")),
                efa_enabled=_dict(resource.get("Efa")).get("Enabled", False),
            )
            _declare_lustre_efa(groups[-1], marker, queue.get("Name"))
    return groups


def _pcs_group(name: str, lid: str, props: dict[str, Any], lt: LaunchTemplate | None) -> NodeGroup:
    configs = props.get("InstanceConfigs")
    first = _dict(configs[0]) if isinstance(configs, list) and configs else {}
    scaling = _dict(props.get("ScalingConfiguration"))
    return NodeGroup(
        stack=name,
        logical_id=lid,
        kind="pcs",
        instance_type=first.get("InstanceType", lt.instance_type if lt else None),
        min_nodes=scaling.get("MinInstanceCount"),
        max_nodes=scaling.get("MaxInstanceCount"),
        launch_template=lt,
        purchase_option=props.get("PurchaseOption"),
        subnet_ids=_list(props.get("SubnetIds")),
        image_id=props.get("AmiId", lt.image_id if lt else None),
    )


def _eks_group(name: str, lid: str, props: dict[str, Any], lt: LaunchTemplate | None) -> NodeGroup:
    types = props.get("InstanceTypes")
    itype = types[0] if isinstance(types, list) and types else (lt.instance_type if lt else None)
    scaling = _dict(props.get("ScalingConfig"))
    return NodeGroup(
        stack=name,
        logical_id=lid,
        kind="eks",
        instance_type=itype,
        min_nodes=scaling.get("MinSize"),
        max_nodes=scaling.get("MaxSize"),
        launch_template=lt,
        purchase_option=props.get("CapacityType", "ON_DEMAND"),
        subnet_ids=_list(props.get("Subnets")),
        image_id=lt.image_id if lt else None,
        eks_ami_type=props.get("AmiType"),
    )


def _asg_group(name: str, lid: str, props: dict[str, Any], lt: LaunchTemplate | None) -> NodeGroup:
    return NodeGroup(
        stack=name,
        logical_id=lid,
        kind="asg",
        instance_type=lt.instance_type if lt else None,
        min_nodes=props.get("MinSize"),
        max_nodes=props.get("MaxSize"),
        launch_template=lt,
        subnet_ids=_list(props.get("VPCZoneIdentifier")),
        image_id=lt.image_id if lt else None,
    )


def _file_system(name: str, lid: str, props: dict[str, Any], path: str | None) -> FileSystem:
    lustre = _dict(props.get("LustreConfiguration"))
    return FileSystem(
        stack=name,
        logical_id=lid,
        file_system_type=props.get("FileSystemType"),
        storage_capacity_gib=props.get("StorageCapacity"),
        deployment_type=lustre.get("DeploymentType"),
        throughput_mbps_per_tib=lustre.get("PerUnitStorageThroughput"),
        efa_enabled=lustre.get("EfaEnabled", False),
        subnet_ids=_list(props.get("SubnetIds")),
        path=path,
    )


#: ``VpcEndpointType`` values whose endpoint puts one network interface in each subnet it names (EC2 API Reference
#: CreateVpcEndpoint ``SubnetId``: "(Interface and Gateway Load Balancer endpoints) The IDs of the subnets in which to
#: create endpoint network interfaces"); gateway endpoints (the default type) take no IP address.
_ENI_ENDPOINT_TYPES = frozenset({"Interface", "GatewayLoadBalancer"})


def _launch_template_group(
    ctx: ReadContext,
    outer: str,
    inner: str,
    build: Callable[[str, str, dict[str, Any], LaunchTemplate | None], NodeGroup],
) -> None:
    """A group whose launch template is referenced from ``Properties.<outer>.<inner>``."""
    lt = ctx.launch_templates.get(_template_ref(_dict(ctx.props.get(outer)).get(inner)) or "")
    group = build(ctx.stack.name, ctx.logical_id, ctx.props, lt)
    group.path = ctx.path
    ctx.stack.node_groups.append(group)


@reader("AWS::PCS::ComputeNodeGroup", kind=PlanKind.NODE_GROUP)
def read_pcs_node_group(ctx: ReadContext) -> None:
    _launch_template_group(ctx, "CustomLaunchTemplate", "TemplateId", _pcs_group)


@reader("AWS::EKS::Nodegroup", kind=PlanKind.NODE_GROUP)
def read_eks_node_group(ctx: ReadContext) -> None:
    _launch_template_group(ctx, "LaunchTemplate", "Id", _eks_group)


@reader("AWS::AutoScaling::AutoScalingGroup", kind=PlanKind.NODE_GROUP)
def read_auto_scaling_group(ctx: ReadContext) -> None:
    _launch_template_group(ctx, "LaunchTemplate", "LaunchTemplateId", _asg_group)


@reader("AWS::SageMaker::Cluster", kind=PlanKind.NODE_GROUP)
def read_hyperpod_cluster(ctx: ReadContext) -> None:
    ctx.stack.node_groups.extend(_hyperpod_groups(ctx.stack.name, ctx.logical_id, ctx.resource, ctx.path))


@reader("Custom::PclusterCluster", kind=PlanKind.NODE_GROUP)
def read_parallelcluster(ctx: ReadContext) -> None:
    ctx.stack.node_groups.extend(_parallelcluster_groups(ctx.stack.name, ctx.logical_id, ctx.resource, ctx.path))


@reader("AWS::FSx::FileSystem", kind=PlanKind.FILE_SYSTEM)
def read_fsx_file_system(ctx: ReadContext) -> None:
    ctx.stack.file_systems.append(_file_system(ctx.stack.name, ctx.logical_id, ctx.props, ctx.path))


@reader("AWS::EC2::Subnet")
def read_subnet(ctx: ReadContext) -> None:
    ctx.stack.subnet_zones[ctx.logical_id] = ctx.props.get("AvailabilityZone", DEPLOY_TIME)


@reader("AWS::PCS::Cluster")
def read_pcs_cluster(ctx: ReadContext) -> None:
    """A PCS controller (AWS PCS API Reference ``Networking.subnetIds``: the subnet "where AWS PCS creates an Elastic
    Network Interface (ENI)"; "The subnet must have an available IP address")."""
    subnets = _list(_dict(ctx.props.get("Networking")).get("SubnetIds"))
    ctx.stack.network_consumers.append(
        NetworkConsumer(ctx.stack.name, ctx.path or ctx.logical_id, "pcs-controller", subnets)
    )


@reader("AWS::EC2::VPCEndpoint")
def read_vpc_endpoint(ctx: ReadContext) -> None:
    """An interface (or Gateway Load Balancer) endpoint: one network interface per subnet."""
    if str(ctx.props.get("VpcEndpointType")) in _ENI_ENDPOINT_TYPES:
        subnets = _list(ctx.props.get("SubnetIds"))
        ctx.stack.network_consumers.append(
            NetworkConsumer(ctx.stack.name, ctx.path or ctx.logical_id, "vpc-endpoint", subnets)
        )
