"""The cross-property rules of the serving constructs (fmconstructs.serving.rules), each with plain values: no
stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs._rules import Advice
from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.serving import rules

TOKEN = float("-1.8881545897087626e+289")  # what CfnParameter.value_as_number returns (a number token)


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


# --- autoscaling ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scale_to_zero", "min_replicas"), [(True, 0), (False, 1), (False, 0), (True, TOKEN)])
def test_scale_to_zero_at_zero_or_not_asked_passes(scale_to_zero, min_replicas):
    rules.scale_to_zero_starts_at_zero(scale_to_zero=scale_to_zero, min_replicas=min_replicas)


@pytest.mark.parametrize("min_replicas", [1, 3])
def test_scale_to_zero_above_zero_is_refused(min_replicas):
    _refused(
        lambda: rules.scale_to_zero_starts_at_zero(scale_to_zero=True, min_replicas=min_replicas),
        "min_replicas",
        rf"^min_replicas must be 0 when scale_to_zero=True, got {min_replicas}$",
    )


@pytest.mark.parametrize(("min_replicas", "max_replicas"), [(1, 1), (1, 4), (0, 1), (TOKEN, 1), (5, TOKEN)])
def test_min_replicas_within_max_or_unknown_passes(min_replicas, max_replicas):
    rules.min_replicas_at_most_max_replicas(min_replicas=min_replicas, max_replicas=max_replicas)


@pytest.mark.parametrize(("min_replicas", "max_replicas"), [(2, 1), (5, 4)])
def test_min_replicas_above_max_is_refused(min_replicas, max_replicas):
    _refused(
        lambda: rules.min_replicas_at_most_max_replicas(min_replicas=min_replicas, max_replicas=max_replicas),
        "min_replicas",
        rf"^min_replicas must be at most max_replicas \({max_replicas}\), got {min_replicas}$",
    )


@pytest.mark.parametrize(
    ("scale_to_zero", "wake_query"), [(False, None), (True, "sum(gateway_requests)"), (False, "q")]
)
def test_no_advice_when_something_wakes_the_server(scale_to_zero, wake_query):
    assert (
        rules.scale_to_zero_needs_a_wake_query(
            server_name="llama", metric="vllm:num_requests_waiting", scale_to_zero=scale_to_zero, wake_query=wake_query
        )
        is None
    )


def test_scale_to_zero_without_wake_query_is_advised_against():
    advice = rules.scale_to_zero_needs_a_wake_query(
        server_name="llama", metric="vllm:num_requests_waiting", scale_to_zero=True, wake_query=None
    )
    assert advice == Advice(
        WarningId.SERVING_SCALE_TO_ZERO_WITHOUT_WAKE,
        "model server 'llama' scales to zero on vllm:num_requests_waiting, which no pod reports once the last one "
        "stops: nothing will scale it up again. Pass wake_query= (a series that exists at zero replicas), or keep "
        "min_replicas >= 1",
    )


# --- exposure -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "internet_facing", "allow"),
    [("internal", False, False), ("internal", False, True), ("internet-facing", True, True)],
)
def test_internal_or_allowed_internet_facing_passes(scheme, internet_facing, allow):
    rules.internet_facing_needs_the_opt_in(scheme=scheme, internet_facing=internet_facing, allow_internet_facing=allow)


def test_internet_facing_without_the_opt_in_is_refused():
    _refused(
        lambda: rules.internet_facing_needs_the_opt_in(
            scheme="internet-facing", internet_facing=True, allow_internet_facing=False
        ),
        "scheme",
        r"^scheme must be LoadBalancerScheme.INTERNAL unless allow_internet_facing=True, got 'internet-facing'$",
    )


@pytest.mark.parametrize("kind", ["NLB", "ALB"])
def test_an_internet_facing_endpoint_is_advised_against(kind):
    advice = rules.an_internet_facing_endpoint_is_open_to_all(server_name="llama", kind=kind, internet_facing=True)
    assert advice is not None
    assert advice.warning is WarningId.SERVING_INTERNET_FACING_ENDPOINT
    assert advice.message.startswith(f"model server 'llama' is exposed on an internet-facing {kind}: anyone")
    assert (
        rules.an_internet_facing_endpoint_is_open_to_all(server_name="llama", kind=kind, internet_facing=False) is None
    )


# --- model server ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("parameters", "dtype"), [(None, None), (70e9, "bf16")])
def test_model_size_with_its_dtype_or_neither_passes(parameters, dtype):
    rules.model_size_comes_with_its_dtype(parameters=parameters, dtype=dtype)


@pytest.mark.parametrize(
    ("parameters", "dtype", "parameter", "message"),
    [
        (70e9, None, "dtype", r"^dtype must be given with parameters \(the model-fit check needs both\), got None$"),
        (None, "bf16", "parameters", r"^parameters must be given with dtype \(the model-fit check needs both\)"),
    ],
)
def test_model_size_without_its_dtype_is_refused(parameters, dtype, parameter, message):
    _refused(lambda: rules.model_size_comes_with_its_dtype(parameters=parameters, dtype=dtype), parameter, message)


def test_a_node_group_of_another_cluster_is_refused():
    rules.a_node_group_serves_its_cluster(node_group_path="Stack/Cluster/Group", of_the_cluster=True)
    _refused(
        lambda: rules.a_node_group_serves_its_cluster(node_group_path="Other/Cluster/Group", of_the_cluster=False),
        "node_group",
        r"^node_group must be a GPU node group of cluster, got 'Other/Cluster/Group'$",
    )


@pytest.mark.parametrize(("group_type", "server_type"), [("p5.48xlarge", "p5.48xlarge"), ("g6e.xlarge", "g6e.xlarge")])
def test_a_node_group_of_the_server_type_passes(group_type, server_type):
    rules.a_node_group_runs_the_server_type(node_group_type=group_type, instance_type=server_type)


@pytest.mark.parametrize(
    ("group_type", "server_type"), [("p5.48xlarge", "p5en.48xlarge"), ("g6e.xlarge", "p5.4xlarge")]
)
def test_a_node_group_of_another_type_is_refused(group_type, server_type):
    _refused(
        lambda: rules.a_node_group_runs_the_server_type(node_group_type=group_type, instance_type=server_type),
        "node_group",
        rf"^node_group must be a node group of {server_type}, got '{group_type}'$",
    )


@pytest.mark.parametrize(("node_pool", "node_group"), [(None, None), ("gpu", None), (None, object())])
def test_one_source_of_capacity_passes(node_pool, node_group):
    rules.one_source_of_capacity(node_pool=node_pool, node_group=node_group)


def test_a_node_pool_and_a_node_group_are_refused():
    _refused(
        lambda: rules.one_source_of_capacity(node_pool="gpu", node_group=object()),
        "node_pool",
        r"^node_pool must be None when node_group is given \(one source of capacity\), got 'gpu'$",
    )


@pytest.mark.parametrize("types", [("p5.48xlarge",), ("p5en.48xlarge", "p5.48xlarge")])
def test_a_node_pool_launching_the_server_type_passes(types):
    rules.a_node_pool_launches_the_server_type(node_pool="gpu", pool_types=types, instance_type="p5.48xlarge")


@pytest.mark.parametrize(("types", "listed"), [(("p5en.48xlarge",), "p5en.48xlarge"), (("a", "b"), "a, b")])
def test_a_node_pool_without_the_server_type_is_refused(types, listed):
    _refused(
        lambda: rules.a_node_pool_launches_the_server_type(
            node_pool="gpu", pool_types=types, instance_type="p5.48xlarge"
        ),
        "node_pool",
        rf"^node_pool must be a NodePool that launches p5.48xlarge \(it has {listed}\), got 'gpu'$",
    )


@pytest.mark.parametrize("group_types", [set(), {"g6e.xlarge"}])
def test_no_node_group_of_the_server_type_is_advised(group_types):
    advice = rules.nodes_of_the_server_type_join_the_cluster(
        server_path="Stack/Server", instance_type="p5.48xlarge", node_group_types=group_types
    )
    assert advice == Advice(
        WarningId.SERVING_NO_NODE_GROUP,
        "Stack/Server: the cluster has no GPU node group of p5.48xlarge (yet); the server's pods stay pending until "
        "nodes of that type join (a node group added later, or Karpenter)",
    )


def test_a_node_group_of_the_server_type_needs_no_advice():
    assert (
        rules.nodes_of_the_server_type_join_the_cluster(
            server_path="Stack/Server", instance_type="p5.48xlarge", node_group_types={"p5.48xlarge", "g6e.xlarge"}
        )
        is None
    )


# --- weights --------------------------------------------------------------------------------------------------------
S3_NEEDS = ("bucket", "prefix")


@pytest.mark.parametrize(
    "given",
    [{"bucket": "b", "prefix": "p/", "path": None, "model_id": None}, {"bucket": None, "prefix": None, "token": None}],
)
def test_weights_with_only_their_source_options_pass(given):
    rules.weights_take_the_options_of_their_source(source="S3", needs=S3_NEEDS, given=given)


@pytest.mark.parametrize(
    ("given", "parameter"),
    [
        ({"bucket": "b", "prefix": "p/", "path": "/models"}, "path"),
        ({"bucket": "b", "model_id": "org/model"}, "model_id"),
    ],
)
def test_weights_with_another_source_option_are_refused(given, parameter):
    _refused(
        lambda: rules.weights_take_the_options_of_their_source(source="S3", needs=S3_NEEDS, given=given),
        parameter,
        rf"^{parameter} must be None for S3 weights, got ",
    )
