"""The cross-property rules of the serving constructs (:class:`~fmconstructs.serving.ModelServer`, its endpoint, its
autoscaler and its weights) as pure functions (the shape of :mod:`fmconstructs._rules`): plain values in (numbers,
names, enum values, catalog facts), no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the construct attaches with :func:`~fmconstructs._rules.warn`.

Checks of one option on its own stay with the constructors and manifest functions. The tensor/pipeline degrees
against the catalog's GPUs are checked here for :func:`~fmconstructs.serving.vllm.plan_parallelism`; the model
against the GPU memory is :func:`~fmconstructs.serving.sizing.check_model_fits` (already a pure function of plain
values). Values that are deploy-time tokens are never compared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .._rules import Advice
from ..errors import FmValidationError, WarningId, is_token

__all__ = [
    "a_node_group_runs_the_server_type",
    "a_node_group_serves_its_cluster",
    "a_node_pool_launches_the_server_type",
    "an_internet_facing_endpoint_is_open_to_all",
    "internet_facing_needs_the_opt_in",
    "min_replicas_at_most_max_replicas",
    "model_size_comes_with_its_dtype",
    "nodes_of_the_server_type_join_the_cluster",
    "one_node_degrees_divide_its_gpus",
    "one_source_of_capacity",
    "replica_degrees_use_every_gpu",
    "scale_to_zero_needs_a_wake_query",
    "scale_to_zero_starts_at_zero",
    "tensor_parallel_divides_the_gpus",
    "weights_take_the_options_of_their_source",
]


# --- autoscaling ----------------------------------------------------------------------------------------------------
def scale_to_zero_starts_at_zero(*, scale_to_zero: bool, min_replicas: Any) -> None:
    """With ``scale_to_zero`` the ScaledObject's ``minReplicaCount`` is 0 (``min_replicas`` 0 when known)."""
    if scale_to_zero and not is_token(min_replicas) and min_replicas != 0:
        raise FmValidationError("min_replicas", min_replicas, "0 when scale_to_zero=True")


def min_replicas_at_most_max_replicas(*, min_replicas: Any, max_replicas: Any) -> None:
    """``min_replicas <= max_replicas`` when both are known at synthesis."""
    if not is_token(min_replicas) and not is_token(max_replicas) and int(min_replicas) > int(max_replicas):
        raise FmValidationError("min_replicas", min_replicas, f"at most max_replicas ({max_replicas})")


def scale_to_zero_needs_a_wake_query(
    *, server_name: str, metric: str, scale_to_zero: bool, wake_query: str | None
) -> Advice | None:
    """Advice when a server scales to zero on a vLLM series (``metric``, its name) and nothing else wakes it: the
    series vanish with the last pod."""
    if not scale_to_zero or wake_query is not None:
        return None
    return Advice(
        WarningId.SERVING_SCALE_TO_ZERO_WITHOUT_WAKE,
        f"model server {server_name!r} scales to zero on {metric}, which no pod reports once the last "
        "one stops: nothing will scale it up again. Pass wake_query= (a series that exists at zero "
        "replicas), or keep min_replicas >= 1",
    )


# --- parallelism (vllm.plan_parallelism) ---------------------------------------------------------------------------
def tensor_parallel_divides_the_gpus(*, tensor_parallel: int | None, degree: int, gpus: int, of: str) -> None:
    """The tensor-parallel ``degree`` (``tensor_parallel`` as given, None: the default) divides the ``gpus`` GPUs of
    ``of`` (the catalog's GPUs of one node, ``p5.48xlarge``, or of the replica, ``2 x p5.48xlarge``)."""
    if gpus % degree:
        raise FmValidationError("tensor_parallel", tensor_parallel, f"a divisor of the {gpus} GPUs of {of}")


def one_node_degrees_divide_its_gpus(
    *, pipeline_parallel: int | None, tp: int, pp: int, node_gpus: int, instance_type: str
) -> None:
    """One node: the pod's ``tp x pp`` GPUs divide the node's GPUs (the catalog's ``gpu.count``)."""
    gpus = tp * pp
    if gpus > node_gpus or node_gpus % gpus:
        raise FmValidationError(
            "pipeline_parallel",
            pipeline_parallel,
            f"a degree whose product with tensor_parallel {tp} divides the {node_gpus} GPUs of {instance_type}",
        )


def replica_degrees_use_every_gpu(*, pipeline_parallel: int | None, tp: int, pp: int, gpus: int, nodes: int) -> None:
    """Several nodes: ``tp x pp`` is every GPU of the replica (``gpus`` on ``nodes`` nodes)."""
    if tp * pp != gpus:
        raise FmValidationError(
            "pipeline_parallel",
            pipeline_parallel,
            f"{gpus // tp} (tensor_parallel {tp} x pipeline_parallel must use the {gpus} GPUs of {nodes} nodes)",
        )


# --- exposure -------------------------------------------------------------------------------------------------------
def internet_facing_needs_the_opt_in(*, scheme: str, internet_facing: bool, allow_internet_facing: bool) -> None:
    """An internet-facing load balancer (``scheme``, the scheme's value) only with ``allow_internet_facing``."""
    if internet_facing and not allow_internet_facing:
        raise FmValidationError("scheme", scheme, "LoadBalancerScheme.INTERNAL unless allow_internet_facing=True")


def an_internet_facing_endpoint_is_open_to_all(*, server_name: str, kind: str, internet_facing: bool) -> Advice | None:
    """Advice on every internet-facing endpoint (``kind``: NLB or ALB): vLLM's API has no authentication by
    default."""
    if not internet_facing:
        return None
    return Advice(
        WarningId.SERVING_INTERNET_FACING_ENDPOINT,
        f"model server {server_name!r} is exposed on an internet-facing {kind}: anyone on the internet "
        "can reach the OpenAI-compatible API, which vLLM serves without authentication unless --api-key is "
        "set; prefer an internal load balancer reached through the VPC",
    )


# --- model server ---------------------------------------------------------------------------------------------------
def model_size_comes_with_its_dtype(*, parameters: object, dtype: object) -> None:
    """The model-fit check needs ``parameters`` and ``dtype`` together: both or neither."""
    if (parameters is None) != (dtype is None):
        missing, given = ("dtype", "parameters") if dtype is None else ("parameters", "dtype")
        raise FmValidationError(missing, None, f"given with {given} (the model-fit check needs both)")


def a_node_group_serves_its_cluster(*, node_group_path: str, of_the_cluster: bool) -> None:
    """The node group given is one of the cluster's GPU node groups (``node_group_path`` names it)."""
    if not of_the_cluster:
        raise FmValidationError("node_group", node_group_path, "a GPU node group of cluster")


def a_node_group_runs_the_server_type(*, node_group_type: str, instance_type: str) -> None:
    """The node group runs the server's instance type."""
    if node_group_type != instance_type:
        raise FmValidationError("node_group", node_group_type, f"a node group of {instance_type}")


def one_source_of_capacity(*, node_pool: object, node_group: object) -> None:
    """A Karpenter NodePool or a node group, not both (``node_pool`` as given)."""
    if node_pool is not None and node_group is not None:
        raise FmValidationError("node_pool", node_pool, "None when node_group is given (one source of capacity)")


def a_node_pool_launches_the_server_type(*, node_pool: str, pool_types: Collection[str], instance_type: str) -> None:
    """The NodePool ``node_pool`` (which launches ``pool_types``) launches the server's instance type."""
    if instance_type not in pool_types:
        raise FmValidationError(
            "node_pool", node_pool, f"a NodePool that launches {instance_type} (it has {', '.join(pool_types)})"
        )


def nodes_of_the_server_type_join_the_cluster(
    *, server_path: str, instance_type: str, node_group_types: Collection[str]
) -> Advice | None:
    """Advice when no GPU node group of the cluster (their types: ``node_group_types``) runs the server's type: its
    pods stay pending until such nodes join."""
    if instance_type in node_group_types:
        return None
    return Advice(
        WarningId.SERVING_NO_NODE_GROUP,
        f"{server_path}: the cluster has no GPU node group of {instance_type} (yet); the server's pods "
        "stay pending until nodes of that type join (a node group added later, or Karpenter)",
    )


# --- weights --------------------------------------------------------------------------------------------------------
def weights_take_the_options_of_their_source(
    *, source: str, needs: Collection[str], given: Mapping[str, object]
) -> None:
    """Each option of ``given`` (name -> value) that the source (``source``, its name: S3, FSX, HUGGING_FACE) does
    not take (``needs``) is None."""
    for field_name, value in given.items():
        if field_name not in needs and value is not None:
            raise FmValidationError(field_name, value, f"None for {source} weights")
