"""How a deployed ParallelCluster takes a change: the provider's ``DeletionPolicy`` and the update policies.

**Deletion.** ``Custom::PclusterCluster`` takes ``DeletionPolicy`` ``Retain`` or ``Delete`` as a property: on a
Delete request the provider's handler returns at once for ``Retain`` and calls ``delete_cluster`` for ``Delete``
(aws/aws-parallelcluster ``cloudformation/custom_resource/cluster.yaml``, handler ``delete``:
``properties.get("DeletionPolicy", "Delete")``; ParallelCluster User Guide "cfn-cluster-resource"). Deleting the
cluster terminates the head node and with it ``/home`` (on the head node's volume unless ``/home`` is shared storage)
and the Slurm state; so :func:`resolve_deletion_policy` makes ``Retain`` the default. A retained cluster keeps running
(and billing) after the stack is gone: delete it with ``pcluster delete-cluster -n <name>``.

**Updates.** A change to ``ClusterConfiguration`` is a ``pcluster update-cluster``; ParallelCluster checks each changed
key against its update policy (aws-parallelcluster 3.16.1 ``pcluster/schemas/cluster_schema.py`` field metadata
``update_policy`` and ``pcluster/config/update_policy.py``; User Guide "using-pcluster-update-cluster-v3", "Update
policy: definitions") and fails the update (so the CloudFormation deploy) when the cluster's state does not allow it.
The construct cannot see the deployed configuration, so it cannot tell whether an edit changes such a key:
:func:`create_time_settings` lists, for one cluster, what is a create-time choice and what needs the compute fleet
stopped, as the warning ``fmconstructs:parallelcluster-create-time-settings``. Changing ``ClusterName`` is refused by
the provider itself (cluster.yaml: "Cannot update the ClusterName in the properties"), so the cluster is never
replaced by CloudFormation.
"""

from __future__ import annotations

from enum import Enum

from aws_cdk import RemovalPolicy

from .._replacement import check_removal_policy
from .._validate import check_enum, known
from ..errors import FmValidationError
from .config import HeadNode, LoginNodePool, QueueUpdateStrategy, SlurmQueue


class DeletionPolicy(str, Enum):
    """The custom resource's ``DeletionPolicy`` property (cluster.yaml: ``Retain`` or ``Delete``)."""

    DELETE = "Delete"
    RETAIN = "Retain"


_BY_REMOVAL_POLICY = {RemovalPolicy.RETAIN: DeletionPolicy.RETAIN, RemovalPolicy.DESTROY: DeletionPolicy.DELETE}


def resolve_deletion_policy(removal_policy: object, deletion_policy: object) -> DeletionPolicy:
    """The provider's ``DeletionPolicy`` from ``removal_policy`` (RETAIN or DESTROY) or its own word
    ``deletion_policy``; at most one given, or both saying the same. Default: RETAIN."""
    from_removal = None
    if removal_policy is not None:
        from_removal = _BY_REMOVAL_POLICY[check_removal_policy("removal_policy", removal_policy)]
    if deletion_policy is None:
        return from_removal or DeletionPolicy.RETAIN
    policy: DeletionPolicy = check_enum("deletion_policy", deletion_policy, DeletionPolicy)
    if from_removal is not None and from_removal is not policy:
        raise FmValidationError(
            "deletion_policy", policy.value, f"omitted or {from_removal.value} when removal_policy is given"
        )
    return policy


def _literal(value: object) -> str:
    return repr(value) if known(value) else "a deploy-time value"


def create_time_settings(
    *,
    head_node: HeadNode,
    queues: tuple[SlurmQueue, ...],
    login_nodes: tuple[LoginNodePool, ...],
    strategy: QueueUpdateStrategy,
) -> str:
    """What ParallelCluster refuses to change on this cluster (the warning's text), from its update policies."""
    parts = [
        "ParallelCluster refuses some changes to an existing cluster, and this construct cannot see the deployed "
        "values, so it cannot tell whether an edit changes one: treat these as create-time choices. Refused on any "
        f"existing cluster (UpdatePolicy UNSUPPORTED; a new cluster is needed): cluster_name; os and custom_ami "
        f"(Image); the head node's instance type ({_literal(head_node.instance_type)}), subnet, local storage and its "
        "OnNodeStart/OnNodeConfigured custom actions, adding one included (add_head_node_bootstrap, enable_imex); "
        "login pools' OnNodeStart/OnNodeConfigured custom actions; Monitoring.Logs; a shared storage's name and type.",
        "Refused while compute nodes run, whatever queue_update_strategy: a compute resource's instance type "
        "(COMPUTE_FLEET_STOP); stop the fleet first (pcluster update-compute-fleet --status STOP_REQUESTED).",
    ]
    if strategy is QueueUpdateStrategy.COMPUTE_FLEET_STOP:
        parts.append(
            "queue_update_strategy COMPUTE_FLEET_STOP: every queue setting (subnets, custom actions, AMI, EFA, "
            "capacity reservation, root volume, security groups) is refused while compute nodes run."
        )
    else:
        how = "draining and replacing their nodes" if strategy is QueueUpdateStrategy.DRAIN else "terminating nodes"
        parts.append(
            f"queue_update_strategy {strategy.value}: queue settings (subnets, custom actions, AMI, EFA, capacity "
            f"reservation, root volume) apply by {how}."
        )
    if strategy is not QueueUpdateStrategy.TERMINATE:
        parts.append(
            "Lowering min_nodes/max_nodes or removing a queue or compute resource needs queue_update_strategy "
            "TERMINATE or a stopped fleet (RESIZE_UPDATE_STRATEGY_ON_REMOVE); raising them is always accepted."
        )
    blocks = [q.name for q in queues if any(r.capacity.is_capacity_block for r in q.compute_resources)]
    if blocks:
        parts.append(
            f"Capacity Block queues ({', '.join(blocks)}): MinCount = MaxCount = the block's nodes, so a smaller "
            "block falls under the rule above and another instance type needs the fleet stopped."
        )
    if login_nodes:
        parts.append(
            "Login pools: settings other than the node count and grace time need the pool stopped (count 0; "
            "LOGIN_NODES_POOL_STOP)."
        )
    return " ".join(parts)
