"""Checks of the PCS node group props (:mod:`.node_group`, :mod:`.login_node_group`), each naming its parameter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from .._validate import (
    NOT_GIVEN,
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
from ..capacity import Capacity, default_min_nodes
from ..catalog import InstanceSpec, get_instance_spec
from ..errors import FmTypeError, FmValidationError
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
from .iam import PcsInstanceProfile

if TYPE_CHECKING:
    from .node_group import FileSystemMount

#: ``ComputeNodeGroupSlurmConfiguration.scaleDownIdleTimeInSeconds`` maximum (PCS API reference).
MAX_NODE_GROUP_IDLE_SECONDS = 10_000_000
#: gp3 root volume sizes (GiB): the bound GpuLaunchTemplate enforces (it cites EC2 LaunchTemplateEbsBlockDeviceRequest
#: VolumeSize, gp3 1-65,536 GiB; UNCONFIRMED here: the SDK reference pages seen still list gp3 1-16,384 GiB).
ROOT_VOLUME_SIZE_GIB_RANGE = (1, 65536)


@dataclass(frozen=True)
class _GpuNodeProps:
    """The checked props of a GPU node group that need no cluster or capacity to check."""

    spot: bool
    subnet: ec2.ISubnet | None
    efa_interface_count: int | None
    efa_cards: EfaCardSelection
    placement_group: ClusterPlacementGroup | None
    instance_store_mount_point: str | None
    mounts: tuple[FileSystemMount, ...]
    commands: tuple[str, ...]
    instance_profile: PcsInstanceProfile | None
    security_groups: tuple[ec2.ISecurityGroup, ...]
    idle: Any
    root_gib: int
    node_group_name: str | None
    tag_map: Any
    bootstrap_delivery: BootstrapDelivery | None


def _check_node_counts(capacity: Capacity, max_nodes: object, min_nodes: object) -> tuple[Any, Any]:
    """``max_nodes`` (required, >= 1), then ``min_nodes`` (default: the capacity's, see ``default_min_nodes``)."""
    if max_nodes is NOT_GIVEN:
        raise FmValidationError("max_nodes", None, "given: the group's maximum number of nodes")
    max_nodes = check_count("max_nodes", max_nodes, minimum=1)
    if min_nodes is None:
        min_nodes = default_min_nodes(capacity, max_nodes)
    return max_nodes, check_count("min_nodes", min_nodes, minimum=0)


def _check_gpu_props(
    *,
    spot: object,
    subnet: object,
    efa_interface_count: object,
    efa_cards: object,
    placement_group: object,
    instance_store_mount_point: str | None,
    mounts: object,
    user_data_commands: object,
    instance_profile: object,
    security_groups: object,
    scale_down_idle_time: Duration | None,
    root_volume_size_gib: object,
    node_group_name: str | None,
    tags: Mapping[str, str] | None,
    bootstrap_delivery: BootstrapDelivery | None,
) -> _GpuNodeProps:
    """Check a GPU node group's props, in the order the constructor documents them."""
    spot = check_bool("spot", spot)
    checked_subnet: ec2.ISubnet | None = check_optional_subnet("subnet", subnet)
    efa_count = _literal_count("efa_interface_count", efa_interface_count)
    efa_cards = check_enum("efa_cards", efa_cards, EfaCardSelection)
    if placement_group is not None and not isinstance(placement_group, ClusterPlacementGroup):
        raise FmTypeError(
            "placement_group", placement_group, f"a ClusterPlacementGroup (got a {type(placement_group).__name__})"
        )
    if instance_store_mount_point is not None:
        _check_mount_point("instance_store_mount_point", instance_store_mount_point)
    checked_mounts = _check_mounts("mounts", mounts)
    commands = check_str_sequence("user_data_commands", user_data_commands)
    profile = _check_instance_profile("instance_profile", instance_profile)
    groups = check_sequence("security_groups", security_groups, check_security_group)
    idle = idle_seconds("scale_down_idle_time", scale_down_idle_time, maximum_seconds=MAX_NODE_GROUP_IDLE_SECONDS)
    root_gib: int = _check_root_volume(root_volume_size_gib)
    name = check_name("node_group_name", node_group_name, NODE_GROUP_NAME_LENGTH)
    tag_map = check_tags("tags", tags)
    if bootstrap_delivery is not None:
        check_enum("bootstrap_delivery", bootstrap_delivery, BootstrapDelivery)
    return _GpuNodeProps(
        spot=spot,
        subnet=checked_subnet,
        efa_interface_count=efa_count,
        efa_cards=efa_cards,
        placement_group=placement_group,
        instance_store_mount_point=instance_store_mount_point,
        mounts=checked_mounts,
        commands=commands,
        instance_profile=profile,
        security_groups=groups,
        idle=idle,
        root_gib=root_gib,
        node_group_name=name,
        tag_map=tag_map,
        bootstrap_delivery=bootstrap_delivery,
    )


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
