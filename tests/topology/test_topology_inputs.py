"""Malformed DescribeInstanceTopology shapes, strings where lists belong and BlockSizes Slurm refuses are refused
with ValueError/TypeError naming the value (never AttributeError, never a string read one character at a time)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs.topology.slurm import (
    InstanceTopology,
    check_block_sizes,
    hostlist,
    parse_instance_topology,
    render_block_topology,
    render_topology_conf,
)

GOOD_PAGE = {"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["nn-a", "nn-b", "nn-c"], "CapacityBlockId": "cb"}]}


@pytest.mark.parametrize(
    "responses",
    [
        "Instances",
        {"Instances": []},
        [{"Instances": "i-1"}],
        [{"Instances": ["i-1"]}],
        [{"Instances": [{"InstanceId": "i-1", "NetworkNodes": "nn-a"}]}],
        [{"Instances": [{"InstanceId": 5, "NetworkNodes": ["nn-a"]}]}],
        [{"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["nn-a", 3]}]}],
        [{"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["nn-a"], "CapacityBlockId": ["cb"]}]}],
        [None],
    ],
)
def test_malformed_shapes_are_refused_with_value_or_type_errors(responses: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        parse_instance_topology(responses)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=3),
    max_leaves=12,
)
_KEYS = st.sampled_from(["Instances", "InstanceId", "NetworkNodes", "CapacityBlockId", "InstanceType", "NextToken"])
_SHAPED = st.recursive(
    _JSON, lambda children: st.dictionaries(_KEYS, children, max_size=4) | st.lists(children, max_size=3), max_leaves=15
)


@settings(max_examples=300, deadline=None)
@given(_SHAPED)
def test_any_json_gives_items_or_a_value_or_type_error(responses: Any) -> None:
    try:
        items = parse_instance_topology(responses)
    except (ValueError, TypeError):
        return
    assert all(isinstance(n, str) for item in items for n in item.network_nodes)


def test_a_good_page_parses() -> None:
    (item,) = parse_instance_topology([GOOD_PAGE])
    assert item.network_nodes == ("nn-a", "nn-b", "nn-c")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: hostlist("gpu-1"), "names"),
        (lambda: render_topology_conf([], node_names={}, all_nodes="gpu-1"), "all_nodes"),
        (
            lambda: InstanceTopology(instance_id="i-1", instance_type="p5.48xlarge", network_nodes="nn-a"),
            "network_nodes",
        ),
    ],
)
def test_a_plain_string_is_never_read_as_a_list(call: Any, name: str) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be a list"):
        call()


@pytest.mark.parametrize("sizes", [[2], [2, 4], [2, 4, 8, 16], [18, 36], [1, 2, 4, 8], [4, 4 * 2**15]])
def test_block_sizes_slurm_accepts(sizes: list[int]) -> None:
    assert check_block_sizes(sizes) == sizes


@pytest.mark.parametrize(
    "sizes",
    [[0], [-2], [2, 6], [2, 3], [4, 2], [18, 27], [2, 4, 4], [4, 4 * 2**16], "2,4", [True], [2.0], {"a": 2}],
)
def test_block_sizes_slurm_refuses(sizes: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="block_sizes must"):
        check_block_sizes(sizes)


def _instances(block_nodes: dict[str, int]) -> tuple[list[InstanceTopology], dict[str, str]]:
    instances, names = [], {}
    for block, count in block_nodes.items():
        for i in range(count):
            instance_id = f"i-{block}{i}"
            instances.append(
                InstanceTopology(instance_id, "p6e-gb200.36xlarge", ("a", "b", "c"), capacity_block_id=block)
            )
            names[instance_id] = f"gpu-{block}-{i}"
    return instances, names


def test_a_base_block_size_above_the_smallest_block_is_refused() -> None:
    instances, names = _instances({"cb1": 18, "cb2": 9})
    with pytest.raises(ValueError, match="smallest block's 9 nodes"):
        render_block_topology(instances, node_names=names, block_sizes=[18])
    assert "BlockSizes=9,18" in render_block_topology(instances, node_names=names, block_sizes=[9, 18])
