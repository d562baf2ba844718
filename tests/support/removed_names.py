"""Helpers of tests/house/test_removed_names.py that other test modules use too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fmconstructs
from fmconstructs.capacity import Capacity, OnDemand
from fmconstructs.compute import GpuAutoScalingGroup, GpuLaunchTemplate
from fmconstructs.eks import GpuNodeGroup, SystemNodeGroupOptions
from fmconstructs.hyperpod import HyperPodCluster
from fmconstructs.pcs import PcsGpuNodeGroup, PcsLoginNodeGroup
from fmconstructs.preflight import ReservationInfo, check_capacity
from fmconstructs.storage import LustreFileSystem, size_for_throughput
from fmconstructs.storage.sizing import LustreSizing

from tests.conftest import new_scene


def _construct(cls: type) -> Callable[[dict[str, Any]], object]:
    def build(kwargs: dict[str, Any]) -> object:
        scene = new_scene()
        return cls(scene.stack, "Old", **kwargs)

    return build


#: (owner as named in the message, how to call it, old keyword, new keyword)
REMOVED_KEYWORDS: list[tuple[str, Callable[[dict[str, Any]], object], str, str]] = [
    ("PcsGpuNodeGroup", _construct(PcsGpuNodeGroup), "max_instance_count", "max_nodes"),
    ("PcsGpuNodeGroup", _construct(PcsGpuNodeGroup), "min_instance_count", "min_nodes"),
    ("PcsLoginNodeGroup", _construct(PcsLoginNodeGroup), "instance_count", "nodes"),
    ("GpuLaunchTemplate", _construct(GpuLaunchTemplate), "node_count", "max_nodes"),
    ("GpuAutoScalingGroup", _construct(GpuAutoScalingGroup), "min_count", "min_nodes"),
    ("GpuAutoScalingGroup", _construct(GpuAutoScalingGroup), "max_count", "max_nodes"),
    ("GpuAutoScalingGroup", _construct(GpuAutoScalingGroup), "desired_count", "desired_nodes"),
    ("GpuNodeGroup", _construct(GpuNodeGroup), "max_size", "max_nodes"),
    ("GpuNodeGroup", _construct(GpuNodeGroup), "min_size", "min_nodes"),
    ("GpuNodeGroup", _construct(GpuNodeGroup), "desired_size", "desired_nodes"),
    ("SystemNodeGroupOptions", lambda kw: SystemNodeGroupOptions(**kw), "min_size", "min_nodes"),
    ("SystemNodeGroupOptions", lambda kw: SystemNodeGroupOptions(**kw), "max_size", "max_nodes"),
    ("SystemNodeGroupOptions", lambda kw: SystemNodeGroupOptions(**kw), "desired_size", "desired_nodes"),
    ("Capacity.validate_for", lambda kw: OnDemand().validate_for(_p5(), **kw), "min_count", "min_nodes"),
    ("Capacity.validate_for", lambda kw: OnDemand().validate_for(_p5(), **kw), "max_count", "max_nodes"),
    (
        "ReservationInfo",
        lambda kw: ReservationInfo("cr-0123456789abcdef0", "p5.48xlarge", **kw),
        "availability_zone",
        "zone",
    ),
    ("check_capacity", lambda kw: check_capacity(OnDemand(), "p5.48xlarge", **kw), "node_count", "max_nodes"),
    ("size_for_throughput", lambda kw: size_for_throughput(**kw), "target_gbps", "target_gbytes_per_s"),
]


def _p5() -> Any:
    return fmconstructs.get_instance_spec("p5.48xlarge")


#: (class, old attribute, the replacement the message names)
REMOVED_ATTRIBUTES: list[tuple[type, str, str]] = [
    (PcsGpuNodeGroup, "max_instance_count", "max_nodes"),
    (PcsGpuNodeGroup, "min_instance_count", "min_nodes"),
    (PcsLoginNodeGroup, "instance_count", "nodes"),
    (GpuLaunchTemplate, "node_count", "max_nodes"),
    (GpuAutoScalingGroup, "min_count", "min_nodes"),
    (GpuAutoScalingGroup, "max_count", "max_nodes"),
    (GpuAutoScalingGroup, "desired_count", "desired_nodes"),
    (GpuNodeGroup, "max_size", "max_nodes"),
    (GpuNodeGroup, "min_size", "min_nodes"),
    (GpuNodeGroup, "desired_size", "desired_nodes"),
    (SystemNodeGroupOptions, "min_size", "min_nodes"),
    (SystemNodeGroupOptions, "max_size", "max_nodes"),
    (SystemNodeGroupOptions, "desired_size", "desired_nodes"),
    (Capacity, "availability_zone", "zone"),
    (ReservationInfo, "availability_zone", "zone"),
    (HyperPodCluster, "node_bootstrap", "node_bootstraps[<group name>]"),
    (LustreFileSystem, "aggregate_throughput_gbps", "aggregate_throughput_gbytes_per_s"),
    (LustreSizing, "aggregate_throughput_gbps", "aggregate_throughput_gbytes_per_s"),
]
