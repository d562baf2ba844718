"""describe_cluster_health: what a HyperPod cluster's nodes are doing, from the SageMaker API (boto3).

Fields (botocore ``sagemaker`` model): ``ListClusterNodes`` -> ``ClusterNodeSummaries[]`` with ``InstanceGroupName``,
``InstanceId``, ``InstanceType``, ``InstanceStatus{Status, Message}``; ``ClusterInstanceStatus`` values ``Running``,
``Failure``, ``Pending``, ``ShuttingDown``, ``SystemUpdating``, ``DeepHealthCheckInProgress``, ``NotFound``,
``DetachInProgress``, ``AttachInProgress``. The API reports deep health checks only through the node status
(``DeepHealthCheckInProgress``) and its ``Message`` (StartClusterHealthCheck: "You can use DescribeClusterNode API to
track progress of the deep health checks"); ``DescribeClusterNode`` returns the same ``InstanceStatus`` for one node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import FmTypeError, FmValidationError

#: ``ListClusterNodes.ClusterName`` (botocore sagemaker model): a cluster name or ARN, at most 256 characters.
CLUSTER_NAME_OR_ARN = re.compile(
    r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:cluster/[a-z0-9]{12})|([a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})"
)
#: Statuses of a node on its way out or being replaced (HyperPod replaces a failed node: ShuttingDown, then a new
#: Pending node in the group).
REPLACING_STATUSES = frozenset({"Failure", "ShuttingDown", "NotFound"})
DEEP_HEALTH_CHECK_STATUS = "DeepHealthCheckInProgress"


@dataclass(frozen=True)
class NodeHealth:
    instance_id: str
    instance_group: str
    instance_type: str
    status: str
    message: str | None

    @property
    def being_replaced(self) -> bool:
        return self.status in REPLACING_STATUSES

    @property
    def deep_health_check_in_progress(self) -> bool:
        return self.status == DEEP_HEALTH_CHECK_STATUS


@dataclass(frozen=True)
class GroupHealth:
    name: str
    nodes: tuple[NodeHealth, ...]

    @property
    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.status] = counts.get(node.status, 0) + 1
        return counts

    @property
    def running(self) -> int:
        return self.status_counts.get("Running", 0)


@dataclass(frozen=True)
class ClusterHealth:
    cluster_name: str
    groups: Mapping[str, GroupHealth] = field(default_factory=dict)

    @property
    def nodes(self) -> tuple[NodeHealth, ...]:
        return tuple(node for group in self.groups.values() for node in group.nodes)

    @property
    def being_replaced(self) -> tuple[NodeHealth, ...]:
        return tuple(n for n in self.nodes if n.being_replaced)

    @property
    def deep_health_checks(self) -> tuple[NodeHealth, ...]:
        """Nodes whose deep health checks are running (status ``DeepHealthCheckInProgress``, with the API's message)."""
        return tuple(n for n in self.nodes if n.deep_health_check_in_progress)

    @property
    def healthy(self) -> bool:
        return bool(self.nodes) and all(n.status == "Running" for n in self.nodes)


def describe_cluster_health(cluster_name: str, *, client: Any = None) -> ClusterHealth:
    """Node status per instance group, nodes being replaced and nodes in deep health checks (``ListClusterNodes``,
    paginated). ``client``: a boto3 SageMaker client (default: ``boto3.client("sagemaker")``)."""
    if not isinstance(cluster_name, str):
        raise FmTypeError("cluster_name", cluster_name, f"a str (got a {type(cluster_name).__name__})")
    if len(cluster_name) > 256 or not CLUSTER_NAME_OR_ARN.fullmatch(cluster_name):
        raise FmValidationError("cluster_name", cluster_name, "a HyperPod cluster name or ARN (ListClusterNodes)")
    if client is None:
        import boto3

        client = boto3.client("sagemaker")
    elif not hasattr(client, "list_cluster_nodes"):
        raise FmTypeError("client", client, "a boto3 SageMaker client")
    grouped: dict[str, list[NodeHealth]] = {}
    kwargs: dict[str, Any] = {"ClusterName": cluster_name}
    while True:
        page = client.list_cluster_nodes(**kwargs)
        for summary in page.get("ClusterNodeSummaries", []):
            status = summary.get("InstanceStatus", {})
            node = NodeHealth(
                instance_id=summary.get("InstanceId", ""),
                instance_group=summary.get("InstanceGroupName", ""),
                instance_type=summary.get("InstanceType", ""),
                status=status.get("Status", "Unknown"),
                message=status.get("Message"),
            )
            grouped.setdefault(node.instance_group, []).append(node)
        token = page.get("NextToken")
        if not token:
            break
        kwargs["NextToken"] = token
    return ClusterHealth(cluster_name, {name: GroupHealth(name, tuple(nodes)) for name, nodes in grouped.items()})
