"""The checks of :class:`~fmconstructs.eks.node_group.GpuNodeGroup`'s props (moved from ``node_group.py`` unchanged)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from .._validate import (
    NOT_GIVEN,
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_optional_count,
    check_sequence,
    check_str,
)
from ..bootstrap import BootstrapDelivery
from ..capacity import Capacity, CapacityBlockScaling
from ..errors import FmTypeError, FmValidationError, is_token
from ..networking import ClusterPlacementGroup, EfaCardSelection
from ._names import EKS_NODEGROUP_NAME, check_label_key, check_label_value, check_labels, check_tags


def _check_taint(parameter: str, taint: object) -> eks.TaintSpec:
    if not isinstance(taint, eks.TaintSpec):
        raise FmTypeError(parameter, taint, f"an aws_eks_v2.TaintSpec (got a {type(taint).__name__})")
    if taint.key is None:
        raise FmValidationError(f"{parameter}.key", None, "a taint key (Kubernetes requires one)")
    check_label_key(f"{parameter}.key", taint.key)
    if taint.value is not None:
        check_label_value(f"{parameter}.value", taint.value, allow_empty=True)
    if taint.effect is None:
        raise FmValidationError(f"{parameter}.effect", None, "a TaintEffect (the EKS API requires one)")
    check_enum(f"{parameter}.effect", taint.effect, eks.TaintEffect)
    return taint


def _check_subnet(parameter: str, subnet: object) -> ec2.ISubnet:
    checked: ec2.ISubnet = check_construct(parameter, subnet, attribute="subnet_id", expected="an ec2.ISubnet")
    return checked


def known_count(parameter: str, value: object) -> int | None:
    """A count that shapes the template (interfaces, LNet set-up): a whole number known at synthesis, or None."""
    if value is None:
        return None
    checked = check_count(parameter, value)
    if is_token(checked):
        raise FmValidationError(
            parameter, checked, "a number known at synthesis (it shapes the launch template and node set-up)"
        )
    return int(checked)


@dataclass(frozen=True)
class _NodeGroupProps:
    """The props :func:`check_node_group_props` checked (normalised where the constructor used the checked value)."""

    instance_type: str
    max_nodes: Any  # int, or a number token
    min_nodes: Any
    desired_nodes: Any
    capacity: Capacity | None
    subnets: tuple[ec2.ISubnet, ...] | None
    placement_group: ClusterPlacementGroup | None
    use_placement_group: bool
    efa_interface_count: int | None
    efa_cards: EfaCardSelection
    labels: dict[str, str]
    taints: tuple[eks.TaintSpec, ...] | None
    instance_store_raid0: bool
    root_volume_size_gib: Any  # int, or a number token
    node_group_name: str | None
    tags: dict[str, str] | None
    node_role: iam.IRole | None
    enable_node_auto_repair: bool
    node_checks: bool
    efa_interfaces_for_lustre: int | None
    bootstrap_delivery: BootstrapDelivery | None
    capacity_block_scaling: CapacityBlockScaling
    imds_hop_limit: int


def check_node_group_props(*, id: str, **props: Any) -> _NodeGroupProps:
    """Each of :class:`GpuNodeGroup`'s props (its keywords but ``cluster``; ``id`` the construct id) checked on its
    own, in the constructor's order (the first bad one raises)."""
    check_str("id", id, min_length=1, allowed="a non-empty construct id")
    checked = _check_layout(props)
    checked.update(_check_node_options(props))
    return _NodeGroupProps(**{**props, **checked})


def _check_layout(props: Mapping[str, Any]) -> dict[str, Any]:
    """Node counts, instance type, capacity, placement group and EFA layout: the checked values that differ."""
    max_nodes = props["max_nodes"]
    if max_nodes is NOT_GIVEN or max_nodes is None:
        raise FmTypeError("max_nodes", None, "a number of nodes (required)")
    max_nodes = check_count("max_nodes", max_nodes, minimum=1)
    min_nodes = check_optional_count("min_nodes", props["min_nodes"])
    desired_nodes = check_optional_count("desired_nodes", props["desired_nodes"])
    check_str("instance_type", props["instance_type"], min_length=1, allowed="a catalog instance type")
    capacity = props["capacity"]
    if capacity is not None and not isinstance(capacity, Capacity):
        raise FmTypeError(
            "capacity",
            capacity,
            "an OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock "
            f"(got a {type(capacity).__name__})",
        )
    placement_group = props["placement_group"]
    if placement_group is not None and not isinstance(placement_group, ClusterPlacementGroup):
        raise FmTypeError(
            "placement_group", placement_group, f"a ClusterPlacementGroup (got a {type(placement_group).__name__})"
        )
    # None was the old default ("decide for me"); it now means no new placement group, like False.
    use_placement_group = props["use_placement_group"]
    use_placement_group = (
        False if use_placement_group is None else check_bool("use_placement_group", use_placement_group)
    )
    return {
        "max_nodes": max_nodes,
        "min_nodes": min_nodes,
        "desired_nodes": desired_nodes,
        "use_placement_group": use_placement_group,
        "efa_interface_count": known_count("efa_interface_count", props["efa_interface_count"]),
        "efa_cards": check_enum("efa_cards", props["efa_cards"], EfaCardSelection),
    }


def _check_node_options(props: Mapping[str, Any]) -> dict[str, Any]:
    """Labels, taints, disks, names, roles, health, Lustre, bootstrap and IMDS: the checked values that differ."""
    labels = props["labels"]
    taints = props["taints"]
    user_labels = check_labels("labels", labels) if labels is not None else {}
    user_taints = check_sequence("taints", taints, _check_taint) if taints is not None else None
    check_bool("instance_store_raid0", props["instance_store_raid0"])
    # The size range (gp3 limits) is the launch template's check.
    root_volume_size_gib = check_count("root_volume_size_gib", props["root_volume_size_gib"], minimum=1)
    node_group_name = props["node_group_name"]
    if node_group_name is not None:
        check_str(
            "node_group_name",
            node_group_name,
            pattern=EKS_NODEGROUP_NAME,
            allowed="a node group name: 1-63 letters, digits, '-' or '_', starting with a letter or digit",
        )
    tags = props["tags"]
    checked_tags = check_tags("tags", tags) if tags is not None else None
    node_role = props["node_role"]
    if node_role is not None:
        check_construct("node_role", node_role, attribute="role_arn", expected="an iam.IRole")
    check_bool("enable_node_auto_repair", props["enable_node_auto_repair"])
    check_bool("node_checks", props["node_checks"])
    efa_interfaces_for_lustre = known_count("efa_interfaces_for_lustre", props["efa_interfaces_for_lustre"])
    subnets = props["subnets"]
    checked_subnets = check_sequence("subnets", subnets, _check_subnet) if subnets is not None else None
    if props["bootstrap_delivery"] is not None:
        check_enum("bootstrap_delivery", props["bootstrap_delivery"], BootstrapDelivery)
    check_enum("capacity_block_scaling", props["capacity_block_scaling"], CapacityBlockScaling)
    check_count("imds_hop_limit", props["imds_hop_limit"], minimum=1, maximum=2)
    return {
        "labels": user_labels,
        "taints": user_taints,
        "root_volume_size_gib": root_volume_size_gib,
        "efa_interfaces_for_lustre": efa_interfaces_for_lustre,
        "subnets": checked_subnets,
        "tags": checked_tags,
    }
