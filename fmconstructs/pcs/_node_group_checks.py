"""The PCS node groups' options as records (``_GpuNodeProps``, ``_LoginNodeProps``: the defaults, and one
``resolve`` that checks them) and the checks of single options (:mod:`.node_group`, :mod:`.login_node_group`), each
naming its parameter. Checks relating several options are in :mod:`.rules`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from .._validate import (
    check_bool,
    check_count,
    check_enum,
    check_mount_point,
    check_optional_count,
    check_sequence,
    check_str,
    check_str_sequence,
    is_token,
)
from ..bootstrap import BootstrapDelivery
from ..capacity import Capacity, OnDemand, default_min_nodes
from ..catalog import InstanceSpec, check_instance_type, get_instance_spec
from ..compute.launch_template import DEFAULT_ROOT_VOLUME_SIZE_GIB
from ..errors import FmTypeError, FmValidationError
from ..health import NodeHealthOptions
from ..networking import ClusterPlacementGroup, EfaCardSelection
from ._checks import (
    NODE_GROUP_NAME_LENGTH,
    check_name,
    check_optional_subnet,
    check_security_group,
    check_tags,
    idle_seconds,
)
from .ami import PcsAmi
from .health import check_node_health
from .iam import PcsInstanceProfile
from .instance_health import (
    PcsInstanceHealthChecks,
    PcsNodeLifecycleActions,
    check_instance_health_checks,
    check_node_lifecycle_actions,
)
from .slurm import NODE_GROUP_SETTINGS, NodeGroupSettings, check_settings

if TYPE_CHECKING:
    from .node_group import FileSystemMount

#: ``ComputeNodeGroupSlurmConfiguration.scaleDownIdleTimeInSeconds`` maximum (PCS API reference).
MAX_NODE_GROUP_IDLE_SECONDS = 10_000_000
#: gp3 root volume sizes (GiB): the bound GpuLaunchTemplate enforces (it cites EC2 LaunchTemplateEbsBlockDeviceRequest
#: VolumeSize, gp3 1-65,536 GiB; UNCONFIRMED here: the SDK reference pages seen still list gp3 1-16,384 GiB).
ROOT_VOLUME_SIZE_GIB_RANGE = (1, 65536)


_Record = TypeVar("_Record")


def _resolve_keys(
    record: type[_Record], owner: str, options: Mapping[str, object], required: Mapping[str, str]
) -> _Record:
    """``options`` as ``record``, unchecked: an unknown key raises a ``TypeError`` naming it (Python's own words for
    an unexpected keyword), a missing required key an :class:`FmValidationError` naming it (``required`` maps each to
    what it must be), and the record's defaults fill the rest."""
    names = {field.name for field in dataclasses.fields(record)}  # type: ignore[arg-type]
    for key, value in options.items():
        if key not in names:
            raise FmTypeError(key, value, f"an option of {owner} (unexpected keyword argument {key!r})")
    for key, allowed in required.items():
        if key not in options:
            raise FmValidationError(key, None, allowed)
    return record(**options)


@dataclass(frozen=True, kw_only=True)
class _GpuNodeProps:
    """The options of a GPU node group (:class:`~fmconstructs.pcs.node_group.PcsGpuNodeGroupOptions`, documented
    there) with their defaults; :meth:`resolve` builds it checked, with the defaults that depend on other options
    (``capacity``, ``min_nodes``) filled."""

    instance_type: str
    ami: PcsAmi
    max_nodes: int | float
    min_nodes: int | float | None = None
    capacity: Capacity = dataclasses.field(default_factory=OnDemand)
    spot: bool = False
    subnet: ec2.ISubnet | None = None
    efa_interface_count: int | None = None
    efa_cards: EfaCardSelection = EfaCardSelection.RECOMMENDED
    placement_group: ClusterPlacementGroup | None = None
    instance_store_mount_point: str | None = "/scratch"
    mounts: Sequence[FileSystemMount] = ()
    user_data_commands: Sequence[str] = ()
    instance_profile: PcsInstanceProfile | None = None
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    slurm_settings: NodeGroupSettings | None = None
    scale_down_idle_time: Duration | None = None
    root_volume_size_gib: int | float = DEFAULT_ROOT_VOLUME_SIZE_GIB
    node_group_name: str | None = None
    tags: Mapping[str, str] | None = None
    bootstrap_delivery: BootstrapDelivery | None = None
    node_health: NodeHealthOptions | None = None
    instance_health_checks: PcsInstanceHealthChecks | None = None
    node_lifecycle_actions: PcsNodeLifecycleActions | None = None

    @classmethod
    def resolve(cls, owner: str, options: Mapping[str, object]) -> _GpuNodeProps:
        """The checked options (each check names its parameter), in the order they are documented."""
        props = _resolve_keys(cls, owner, options, _GPU_REQUIRED)
        check_node_health("node_health", props.node_health)
        check_instance_health_checks("instance_health_checks", props.instance_health_checks)
        check_node_lifecycle_actions("node_lifecycle_actions", props.node_lifecycle_actions)
        _gpu_instance_spec(props.instance_type)
        _check_ami("ami", props.ami)
        # capacity=None (given or not) is On-Demand
        capacity = OnDemand() if props.capacity is None else _check_capacity("capacity", props.capacity)
        max_nodes, min_nodes = _check_node_counts(capacity, props.max_nodes, props.min_nodes)
        return dataclasses.replace(
            props,
            capacity=capacity,
            max_nodes=max_nodes,
            min_nodes=min_nodes,
            **_check_gpu_options(props),
            **_check_common_options(props),
            slurm_settings=check_settings("slurm_settings", props.slurm_settings, NODE_GROUP_SETTINGS),
        )

    @property
    def instance_spec(self) -> InstanceSpec:
        """The catalog entry of ``instance_type``."""
        return get_instance_spec(self.instance_type)

    @property
    def idle(self) -> int | float | None:
        """``scale_down_idle_time`` in whole seconds (or a number token), None when not given."""
        return _idle_seconds(self.scale_down_idle_time)


#: The GPU options without a default, and what each must be.
_GPU_REQUIRED = {
    "instance_type": "given: a catalog GPU instance type such as 'p5.48xlarge'",
    "ami": "given: a PcsAmi (PcsAmi.from_image_id or PcsAmi.from_ssm_parameter)",
    "max_nodes": "given: the group's maximum number of nodes",
}


@dataclass(frozen=True, kw_only=True)
class _LoginNodeProps:
    """The options of a login node group (:class:`~fmconstructs.pcs.login_node_group.PcsLoginNodeGroupOptions`,
    documented there) with their defaults; :meth:`resolve` builds it checked."""

    ami: PcsAmi
    instance_type: str = "m7i.xlarge"
    nodes: int | float = 1
    subnet: ec2.ISubnet | None = None
    mounts: Sequence[FileSystemMount] = ()
    user_data_commands: Sequence[str] = ()
    instance_profile: PcsInstanceProfile | None = None
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    root_volume_size_gib: int | float = 100
    node_group_name: str | None = None
    tags: Mapping[str, str] | None = None
    bootstrap_delivery: BootstrapDelivery | None = None

    @classmethod
    def resolve(cls, owner: str, options: Mapping[str, object]) -> _LoginNodeProps:
        """The checked options (each check names its parameter), in the order they are documented."""
        props = _resolve_keys(cls, owner, options, _LOGIN_REQUIRED)
        _check_ami("ami", props.ami)
        check_instance_type("instance_type", props.instance_type)  # catalog or botocore's EC2 InstanceType enum
        nodes = check_count("nodes", props.nodes, minimum=1)
        subnet = check_optional_subnet("subnet", props.subnet)
        return dataclasses.replace(props, nodes=nodes, subnet=subnet, **_check_common_options(props))


#: The login options without a default, and what each must be.
_LOGIN_REQUIRED = {"ami": "given: a PcsAmi (PcsAmi.from_image_id or PcsAmi.from_ssm_parameter)"}


def _check_node_counts(capacity: Capacity, max_nodes: object, min_nodes: object) -> tuple[Any, Any]:
    """``max_nodes`` (>= 1), then ``min_nodes`` (default: the capacity's, see ``default_min_nodes``)."""
    max_nodes = check_count("max_nodes", max_nodes, minimum=1)
    if min_nodes is None:
        min_nodes = default_min_nodes(capacity, max_nodes)
    return max_nodes, check_count("min_nodes", min_nodes, minimum=0)


def _idle_seconds(scale_down_idle_time: Duration | None) -> int | float | None:
    return idle_seconds("scale_down_idle_time", scale_down_idle_time, maximum_seconds=MAX_NODE_GROUP_IDLE_SECONDS)


def _check_gpu_options(props: _GpuNodeProps) -> dict[str, Any]:
    """The GPU-only options between the counts and the mounts, in the order they are documented."""
    spot = check_bool("spot", props.spot)
    subnet: ec2.ISubnet | None = check_optional_subnet("subnet", props.subnet)
    efa_count = _literal_count("efa_interface_count", props.efa_interface_count)
    efa_cards = check_enum("efa_cards", props.efa_cards, EfaCardSelection)
    placement_group = props.placement_group
    if placement_group is not None and not isinstance(placement_group, ClusterPlacementGroup):
        raise FmTypeError(
            "placement_group", placement_group, f"a ClusterPlacementGroup (got a {type(placement_group).__name__})"
        )
    if props.instance_store_mount_point is not None:
        _check_mount_point("instance_store_mount_point", props.instance_store_mount_point)
    return {"spot": spot, "subnet": subnet, "efa_interface_count": efa_count, "efa_cards": efa_cards}


def _check_common_options(props: _GpuNodeProps | _LoginNodeProps) -> dict[str, Any]:
    """The options GPU and login groups share, from ``mounts`` on, in the order they are documented (a GPU group's
    ``scale_down_idle_time`` between ``security_groups`` and ``root_volume_size_gib``)."""
    mounts = _check_mounts("mounts", props.mounts)
    commands = check_str_sequence("user_data_commands", props.user_data_commands)
    profile = _check_instance_profile("instance_profile", props.instance_profile)
    groups = check_sequence("security_groups", props.security_groups, check_security_group)
    if isinstance(props, _GpuNodeProps):
        _idle_seconds(props.scale_down_idle_time)
    root_gib = _check_root_volume(props.root_volume_size_gib)
    name = check_name("node_group_name", props.node_group_name, NODE_GROUP_NAME_LENGTH)
    tag_map = check_tags("tags", props.tags)
    if props.bootstrap_delivery is not None:
        check_enum("bootstrap_delivery", props.bootstrap_delivery, BootstrapDelivery)
    return {
        "mounts": mounts,
        "user_data_commands": commands,
        "instance_profile": profile,
        "security_groups": groups,
        "root_volume_size_gib": root_gib,
        "node_group_name": name,
        "tags": tag_map,
    }


def _group_path(scope: Construct, id: str) -> str:
    """The construct path a node group will have (``Stack/Cluster/Gpu``), before it is created."""
    return "/".join(part for part in (scope.node.path, id) if part)


def _gpu_instance_spec(instance_type: object) -> InstanceSpec:
    name = check_str("instance_type", instance_type, allowed="a catalog GPU instance type such as 'p5.48xlarge'")
    if is_token(name):
        raise FmValidationError(
            "instance_type", name, "known at synthesis (the launch template's EFA layout is derived from it)"
        )
    return get_instance_spec(name)


def _check_ami(parameter: str, value: object) -> PcsAmi:
    if not isinstance(value, PcsAmi):
        raise FmTypeError(
            parameter,
            value,
            f"a PcsAmi (PcsAmi.from_image_id or PcsAmi.from_ssm_parameter; got a {type(value).__name__})",
        )
    return value


def _check_capacity(parameter: str, value: object) -> Capacity:
    if not isinstance(value, Capacity):
        raise FmTypeError(
            parameter,
            value,
            "a Capacity (OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock; "
            f"got a {type(value).__name__})",
        )
    return value


def _check_instance_profile(parameter: str, value: object) -> PcsInstanceProfile | None:
    if value is not None and not isinstance(value, PcsInstanceProfile):
        raise FmTypeError(parameter, value, f"a PcsInstanceProfile or None (got a {type(value).__name__})")
    return value


def _check_mount(parameter: str, value: object) -> FileSystemMount:
    from .node_group import FileSystemMount  # the props module imports these checks

    if not isinstance(value, FileSystemMount):
        raise FmTypeError(parameter, value, f"a FileSystemMount (got a {type(value).__name__})")
    return value


def _check_mounts(parameter: str, value: object) -> tuple[FileSystemMount, ...]:
    return check_sequence(parameter, value, _check_mount)


def _check_mount_point(parameter: str, value: object) -> None:
    check_mount_point(parameter, value)  # the library's one mount-point rule (fmconstructs._validate)


def _literal_count(parameter: str, value: object) -> Any:
    count = check_optional_count(parameter, value)
    if is_token(count):
        raise FmValidationError(parameter, count, "a number known at synthesis")
    return count


def _check_root_volume(value: object) -> Any:
    low, high = ROOT_VOLUME_SIZE_GIB_RANGE
    return check_count("root_volume_size_gib", value, minimum=low, maximum=high)
