"""The EKS options are declared once: ``GpuNodeGroupOptions`` (with the ``_NodeGroupProps`` record that holds the
defaults) for node groups, ``GpuNodePoolOptions`` for the Karpenter and Auto Mode GPU node pools."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import typing
from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs import FmTypeError, FmValidationError
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup, GpuNodeGroupOptions
from fmconstructs.eks import node_group as node_group_module
from fmconstructs.eks._node_group_props import _NodeGroupProps
from fmconstructs.eks._node_pools import GpuNodePoolOptions
from fmconstructs.eks.auto_mode import AutoModeGpuNodePoolOptions, AutoModeGpuNodePools, auto_mode_node_pool_manifest
from fmconstructs.eks.karpenter import Karpenter, KarpenterGpuNodePoolOptions
from fmconstructs.eks.karpenter_manifests import NodePoolOptions, node_pool_manifest

from tests.conftest import new_scene


def _params(typed_dict: type) -> set[str]:
    return set(re.findall(r":var (\w+):", typed_dict.__doc__ or ""))


# --- GpuNodeGroup ---------------------------------------------------------------------------------------------------


def test_the_record_fields_are_the_options_keys():
    fields = {field.name for field in dataclasses.fields(_NodeGroupProps)}
    assert fields == set(GpuNodeGroupOptions.__annotations__)


def test_the_required_options_are_the_fields_without_a_default():
    required = {
        field.name
        for field in dataclasses.fields(_NodeGroupProps)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }
    # The annotations are strings (postponed evaluation): mypy reads Required[...] from them.
    marked = {key for key, hint in GpuNodeGroupOptions.__annotations__.items() if "Required[" in str(hint)}
    assert required == marked == {"instance_type", "max_nodes"}


def test_every_option_is_documented_in_the_typed_dict():
    assert _params(GpuNodeGroupOptions) == set(GpuNodeGroupOptions.__annotations__)


def test_the_constructor_declares_no_option_of_its_own():
    parameters = inspect.signature(GpuNodeGroup.__init__).parameters
    assert [p for p in parameters if parameters[p].kind is inspect.Parameter.KEYWORD_ONLY] == ["cluster"]
    hints = typing.get_type_hints(
        GpuNodeGroup.__init__, include_extras=True, localns={**vars(node_group_module), "GpuEksCluster": GpuEksCluster}
    )
    assert typing.get_args(hints["options"]) == (GpuNodeGroupOptions,)


def _cluster() -> GpuEksCluster:
    scene = new_scene("EksOptionsOnce")
    return GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)


@pytest.fixture(scope="module")
def cluster() -> GpuEksCluster:
    return _cluster()


@pytest.mark.parametrize("via", ["factory", "constructor"])
def test_an_unknown_option_is_a_type_error_naming_it(cluster, via):
    options: dict[str, Any] = {"instance_type": "p5en.48xlarge", "max_nodes": 2, "max_size_nodes": 3}
    build = (
        (lambda: cluster.add_gpu_node_group(f"Unknown{via}", **options))
        if via == "factory"
        else (lambda: GpuNodeGroup(cluster, f"Unknown{via}", cluster=cluster, **options))
    )
    with pytest.raises(TypeError, match=r"GpuNodeGroup\(\) got an unexpected keyword argument 'max_size_nodes'"):
        build()


@pytest.mark.parametrize(
    ("missing", "allowed"),
    [("instance_type", "a catalog instance type"), ("max_nodes", "a number of nodes")],
)
def test_a_missing_required_option_is_refused_by_name(cluster, missing, allowed):
    options: dict[str, Any] = {"instance_type": "p5en.48xlarge", "max_nodes": 2}
    del options[missing]
    with pytest.raises(FmValidationError, match=rf"^{missing} must be {allowed} \(required\), got None") as error:
        cluster.add_gpu_node_group(f"Missing{missing}", **options)
    assert isinstance(error.value, FmTypeError) and error.value.parameter == missing


def test_resolve_fills_the_defaults():
    props = _NodeGroupProps.resolve("GpuNodeGroup", {"instance_type": "p5en.48xlarge", "max_nodes": 2})
    assert props.labels == {} and props.taints is None and props.imds_hop_limit == 1
    assert props.root_volume_size_gib == 200 and props.instance_store_raid0 is True


def test_resolve_refuses_an_unknown_key_without_a_construct():
    with pytest.raises(TypeError, match=r"^Owner\(\) got an unexpected keyword argument 'x'$"):
        _NodeGroupProps.resolve("Owner", {"instance_type": "p5en.48xlarge", "max_nodes": 2, "x": 1})


# --- GPU node pools: Karpenter and EKS Auto Mode ------------------------------------------------------------------


POOLS = [
    (Karpenter.add_gpu_node_pool, KarpenterGpuNodePoolOptions),
    (AutoModeGpuNodePools.add_gpu_node_pool, AutoModeGpuNodePoolOptions),
]


@pytest.mark.parametrize(("method", "options"), POOLS)
def test_both_pools_take_the_shared_options_and_declare_none_of_their_own(method, options):
    assert set(GpuNodePoolOptions.__annotations__) <= set(options.__annotations__)
    parameters = inspect.signature(method).parameters
    assert [p for p in parameters if parameters[p].kind is not inspect.Parameter.VAR_KEYWORD] == ["self", "name"]
    assert _params(GpuNodePoolOptions) | _params(options) == set(options.__annotations__)


def test_the_pools_keep_their_public_keywords():
    shared = {
        "instance_types", "max_gpus", "max_nodes", "capacity_reservations", "capacity_types", "reservation_type",
        "subnets", "labels", "gpu_taint", "disruption", "tags",
    }  # fmt: skip
    assert set(KarpenterGpuNodePoolOptions.__annotations__) == shared | {
        "ami_version", "root_volume_size_gib", "imds_hop_limit", "weight"
    }  # fmt: skip
    assert set(AutoModeGpuNodePoolOptions.__annotations__) == shared | {"ephemeral_storage_gib"}


@pytest.mark.parametrize("function", [node_pool_manifest, auto_mode_node_pool_manifest])
def test_both_node_pool_manifests_take_node_pool_options(function):
    parameters = inspect.signature(function).parameters
    assert set(parameters) - {"weight", "options"} == {"name", "node_class_name", "instance_types"}
    assert _params(NodePoolOptions) == set(NodePoolOptions.__annotations__)
    with pytest.raises(TypeError, match=rf"^{function.__name__}\(\) got an unexpected keyword argument 'max_size'$"):
        function(name="gpu", node_class_name="gpu", instance_types=["p5.48xlarge"], max_nodes=2, max_size=3)


@pytest.fixture(scope="module")
def pool_owners() -> dict[str, Any]:
    scene = new_scene("EksPoolOptionsOnce")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, auto_mode=True)
    karpenter = cluster.add_karpenter()
    auto = cluster.add_auto_mode_gpu_node_pool("first", instance_types=["p5.48xlarge"], max_nodes=1)
    assert auto is not None and cluster.auto_mode_pools is not None
    return {"karpenter": karpenter, "auto": cluster.auto_mode_pools, "scene": scene}


OWNERS = [("karpenter", "Karpenter.add_gpu_node_pool"), ("auto", "AutoModeGpuNodePools.add_gpu_node_pool")]


@pytest.mark.parametrize(("owner", "name"), OWNERS)
def test_an_unknown_pool_option_is_a_type_error_naming_it(pool_owners, owner, name):
    with pytest.raises(TypeError, match=rf"^{re.escape(name)}\(\) got an unexpected keyword argument 'subnet_ids'$"):
        pool_owners[owner].add_gpu_node_pool("bad", instance_types=["p5.48xlarge"], max_nodes=1, subnet_ids=["x"])


@pytest.mark.parametrize(("owner", "name"), OWNERS)
def test_a_pool_without_instance_types_is_refused_by_name(pool_owners, owner, name):
    with pytest.raises(FmValidationError, match=r"^instance_types must be GPU catalog instance types \(required\)"):
        pool_owners[owner].add_gpu_node_pool("none", max_nodes=1)


@pytest.mark.parametrize("product", ["karpenter", "auto"])
def test_pool_tags_reach_the_node_class(product):
    scene = new_scene("EksPoolTags")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, auto_mode=product == "auto")
    options: dict[str, Any] = {"instance_types": ["p5.48xlarge"], "max_nodes": 1, "tags": {"team": "research"}}
    if product == "auto":
        cluster.add_auto_mode_gpu_node_pool("tagged", **options)
    else:
        cluster.add_karpenter().add_gpu_node_pool("tagged", **options)
    manifests = Template.from_stack(scene.stack).find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    (body,) = [json.dumps(r["Properties"]["Manifest"]) for k, r in manifests.items() if "Pooltagged" in k]
    assert '\\"tags\\":{\\"team\\":\\"research\\"}' in body
