"""What the serving add-ons installed once per cluster (KEDA, the AWS Load Balancer Controller) share: the check of
their chart inputs and the "one per cluster" lookup of :meth:`of`."""

from __future__ import annotations

from typing import Any, TypeVar

from constructs import Construct

from .._validate import check_instance
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, check_chart_source, check_version

_AddOn = TypeVar("_AddOn", bound=Construct)


def check_chart_inputs(cluster: object, version: object, source: object) -> ChartSource | None:
    """``cluster`` (a GpuEksCluster), the chart ``version`` and ``source``; returns the checked source."""
    check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
    check_version("version", version)
    return check_chart_source("source", source)


def one_per_cluster(cls: type[_AddOn], cluster: GpuEksCluster, id: str, **props: Any) -> _AddOn:
    """The cluster's child ``id`` of type ``cls``, created with ``cluster`` and ``props`` on first use."""
    check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
    found = cluster.node.try_find_child(id)
    if isinstance(found, cls):
        return found
    return cls(cluster, id, cluster=cluster, **props)  # type: ignore[call-arg]
