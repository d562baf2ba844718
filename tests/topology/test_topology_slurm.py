"""fmconstructs.topology.slurm: Slurm topology text from DescribeInstanceTopology responses (recorded shapes: the
botocore ec2 service model's InstanceTopology members), 3- and 4-layer types, UltraServer blocks, join/leave, paging."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fmconstructs.topology import slurm
from fmconstructs.topology.slurm import (
    ROOT_SWITCH,
    UNPLACED_SWITCH,
    InstanceTopology,
    describe_instance_topology,
    hostlist,
    node_features_for_topology,
    parse_instance_topology,
    render_block_topology,
    render_topology_conf,
    slurm_node_names,
)


def _item(instance_id: str, nodes: list[str], itype: str = "p5en.48xlarge", block: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "InstanceId": instance_id,
        "InstanceType": itype,
        "NetworkNodes": nodes,
        "AvailabilityZone": "us-east-1a",
        "ZoneId": "use1-az1",
    }
    if block is not None:
        item["CapacityBlockId"] = block
    return item


# p5en: 3 layers. Two instances share a bottom node, a third shares only layer 2, a fourth another layer 1.
P5EN = {
    "Instances": [
        _item("i-0000000000000000a", ["nn-l1a", "nn-l2a", "nn-l3a"]),
        _item("i-0000000000000000b", ["nn-l1a", "nn-l2a", "nn-l3a"]),
        _item("i-0000000000000000c", ["nn-l1a", "nn-l2a", "nn-l3b"]),
        _item("i-0000000000000000d", ["nn-l1b", "nn-l2b", "nn-l3c"]),
    ]
}
P5EN_NAMES = {
    "i-0000000000000000a": "gpu-st-p5en-1",
    "i-0000000000000000b": "gpu-st-p5en-2",
    "i-0000000000000000c": "gpu-st-p5en-3",
    "i-0000000000000000d": "gpu-st-p5en-4",
}


def _conf_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_three_layer_tree() -> None:
    text = render_topology_conf(parse_instance_topology([P5EN]), node_names=P5EN_NAMES)
    assert _conf_lines(text) == [
        f"SwitchName={ROOT_SWITCH} Switches=nn-l1a,nn-l1b",
        "SwitchName=nn-l1a Switches=nn-l2a",
        "SwitchName=nn-l1b Switches=nn-l2b",
        "SwitchName=nn-l2a Switches=nn-l3a,nn-l3b",
        "SwitchName=nn-l2b Switches=nn-l3c",
        "SwitchName=nn-l3a Nodes=gpu-st-p5en-[1-2]",
        "SwitchName=nn-l3b Nodes=gpu-st-p5en-3",
        "SwitchName=nn-l3c Nodes=gpu-st-p5en-4",
    ]
    assert text.startswith("# ")


def test_four_layer_tree_p6_b200() -> None:
    page = {
        "Instances": [
            _item("i-1", ["nn-a", "nn-b", "nn-c", "nn-d1"], "p6-b200.48xlarge"),
            _item("i-2", ["nn-a", "nn-b", "nn-c", "nn-d2"], "p6-b200.48xlarge"),
        ]
    }
    text = render_topology_conf(
        parse_instance_topology([page]), node_names={"i-1": "b-dy-b200-1", "i-2": "b-dy-b200-2"}
    )
    assert _conf_lines(text) == [
        "SwitchName=nn-a Switches=nn-b",
        "SwitchName=nn-b Switches=nn-c",
        "SwitchName=nn-c Switches=nn-d1,nn-d2",
        "SwitchName=nn-d1 Nodes=b-dy-b200-1",
        "SwitchName=nn-d2 Nodes=b-dy-b200-2",
    ]


def test_nodes_without_topology_stay_connected_under_the_unplaced_switch() -> None:
    text = render_topology_conf(
        parse_instance_topology([P5EN]),
        node_names={"i-0000000000000000a": "gpu-st-p5en-1"},
        all_nodes=["gpu-st-p5en-1", "gpu-dy-p5en-2", "gpu-dy-p5en-1", "cpu-dy-c7i-1"],
    )
    lines = _conf_lines(text)
    assert lines[0] == f"SwitchName={ROOT_SWITCH} Switches={UNPLACED_SWITCH},nn-l1a"
    assert f"SwitchName={UNPLACED_SWITCH} Nodes=cpu-dy-c7i-1,gpu-dy-p5en-[1-2]" in lines
    assert "gpu-st-p5en-1" not in lines[1]


def test_join_and_leave_keep_a_stable_order() -> None:
    before = render_topology_conf(parse_instance_topology([P5EN]), node_names=P5EN_NAMES)
    shuffled = {"Instances": list(reversed(P5EN["Instances"]))}
    assert render_topology_conf(parse_instance_topology([shuffled]), node_names=dict(reversed(P5EN_NAMES.items()))) == (
        before
    )
    # instance d leaves: it is gone from its mapping; its switches go with it, and the root is no longer needed
    left = {k: v for k, v in P5EN_NAMES.items() if not k.endswith("d")}
    after_leave = _conf_lines(render_topology_conf(parse_instance_topology([P5EN]), node_names=left))
    assert not any("gpu-st-p5en-4" in line or "nn-l1b" in line for line in after_leave)
    assert not any(line.startswith(f"SwitchName={ROOT_SWITCH}") for line in after_leave)
    # a node joins under an existing bottom node
    joined = {"Instances": [*P5EN["Instances"], _item("i-0000000000000000e", ["nn-l1a", "nn-l2a", "nn-l3b"])]}
    names = {**P5EN_NAMES, "i-0000000000000000e": "gpu-dy-p5en-1"}
    lines = _conf_lines(render_topology_conf(parse_instance_topology([joined]), node_names=names))
    assert "SwitchName=nn-l3b Nodes=gpu-dy-p5en-1,gpu-st-p5en-3" in lines


def test_instances_outside_the_mapping_are_dropped() -> None:
    text = render_topology_conf(parse_instance_topology([P5EN]), node_names={})
    assert _conf_lines(text) == []


def test_empty_responses() -> None:
    assert parse_instance_topology([]) == []
    assert parse_instance_topology([{"Instances": []}, {}]) == []
    assert _conf_lines(render_topology_conf([], node_names={})) == []
    assert _conf_lines(render_block_topology([], node_names={})) == []
    assert node_features_for_topology([], node_names={}) == {}


def test_items_without_network_nodes_are_skipped_and_pages_merge() -> None:
    pages = [{"Instances": [_item("i-1", ["a", "b", "c"])]}, {"Instances": [{"InstanceId": "i-2", "NetworkNodes": []}]}]
    (only,) = parse_instance_topology(pages)
    assert only == InstanceTopology(
        instance_id="i-1",
        instance_type="p5en.48xlarge",
        network_nodes=("a", "b", "c"),
        availability_zone="us-east-1a",
        zone_id="use1-az1",
    )


def test_ultraserver_blocks_by_capacity_block_id() -> None:
    page = {
        "Instances": [
            *[_item(f"i-a{n}", ["x", "y", f"z{n}"], "p6e-gb200.36xlarge", "cb-0aaa") for n in range(1, 4)],
            *[_item(f"i-b{n}", ["x", "y", f"z{n}"], "p6e-gb200.36xlarge", "cb-0bbb") for n in range(1, 3)],
            _item("i-c1", ["x", "y", "z9"], "p6e-gb200.36xlarge"),  # CapacityBlockId not propagated yet
        ]
    }
    names = {f"i-a{n}": f"u-st-gb-{n}" for n in range(1, 4)} | {"i-b1": "u-st-gb-4", "i-b2": "u-st-gb-5"}
    names["i-c1"] = "u-st-gb-6"
    text = render_block_topology(parse_instance_topology([page]), node_names=names)
    assert _conf_lines(text) == [
        "BlockName=cb-0aaa Nodes=u-st-gb-[1-3]",
        "BlockName=cb-0bbb Nodes=u-st-gb-[4-5]",
        "BlockSizes=2",
    ]
    sized = render_block_topology(parse_instance_topology([page]), node_names=names, block_sizes=[1, 2])
    assert _conf_lines(sized)[-1] == "BlockSizes=1,2"


@pytest.mark.parametrize("sizes", [[0], [-2]])
def test_block_sizes_must_be_positive(sizes: list[int]) -> None:
    with pytest.raises(ValueError, match="block_sizes"):
        render_block_topology([], node_names={}, block_sizes=sizes)


@pytest.mark.parametrize(
    ("layer", "expected"),
    [
        (-1, {"n-1": "nn-l3a", "n-3": "nn-l3b"}),
        (1, {"n-1": "nn-l1a", "n-3": "nn-l1a"}),
        (2, {"n-1": "nn-l2a", "n-3": "nn-l2a"}),
    ],
)
def test_node_features_per_network_node(layer: int, expected: dict[str, str]) -> None:
    names = {"i-0000000000000000a": "n-1", "i-0000000000000000c": "n-3"}
    assert node_features_for_topology(parse_instance_topology([P5EN]), node_names=names, layer=layer) == expected


def test_node_features_skip_instances_with_fewer_layers() -> None:
    names = {"i-0000000000000000a": "n-1"}
    assert node_features_for_topology(parse_instance_topology([P5EN]), node_names=names, layer=4) == {}


@pytest.mark.parametrize("layer", [0, True, "1", 1.5])
def test_node_features_bad_layer(layer: Any) -> None:
    with pytest.raises(ValueError, match="layer"):
        node_features_for_topology([], node_names={}, layer=layer)


@pytest.mark.parametrize("names", [{"i-1": "bad name"}, {"i-1": ""}, {"i-1": 3}, {"i-1": "-lead"}])
def test_bad_node_names(names: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="node_names"):
        render_topology_conf([], node_names=names)


@pytest.mark.parametrize("bad", [["not an item"], [{"InstanceId": "i-1"}]])
def test_bad_instances(bad: list[Any]) -> None:
    with pytest.raises(TypeError, match="instances"):
        render_topology_conf(bad, node_names={})


def test_bad_responses() -> None:
    with pytest.raises(TypeError, match="responses"):
        parse_instance_topology(["page"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="node_names"):
        render_topology_conf([], node_names=[("i-1", "n")])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["a-1", "a-2", "a-3", "a-5", "a-10"], "a-[1-3,5,10]"),
        (["b", "a-2"], "a-2,b"),
        (["x01", "x02", "x03"], "x[01-03]"),
        (["q-dy-p5-2", "q-st-p5-1", "q-dy-p5-1"], "q-dy-p5-[1-2],q-st-p5-1"),
        ([], ""),
    ],
)
def test_hostlist(names: list[str], expected: str) -> None:
    assert hostlist(names) == expected


def test_paging_with_stubber_follows_next_token() -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    stubber = Stubber(client)
    filters = [{"Name": "instance-type", "Values": ["p5en.48xlarge"]}]
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": P5EN["Instances"][:2], "NextToken": "page-2"},
        {"Filters": filters},
    )
    stubber.add_response(
        "describe_instance_topology",
        {"Instances": P5EN["Instances"][2:]},
        {"Filters": filters, "NextToken": "page-2"},
    )
    with stubber:
        pages = list(describe_instance_topology(client, Filters=filters))
    stubber.assert_no_pending_responses()
    assert len(pages) == 2
    assert render_topology_conf(parse_instance_topology(pages), node_names=P5EN_NAMES) == render_topology_conf(
        parse_instance_topology([P5EN]), node_names=P5EN_NAMES
    )


def test_empty_page_with_stubber() -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    stubber = Stubber(client)
    stubber.add_response("describe_instance_topology", {"Instances": []}, {})
    with stubber:
        assert parse_instance_topology(describe_instance_topology(client)) == []


SCONTROL = (
    "NodeName=gpu-st-p5en-1 Arch=x86_64 CoresPerSocket=48 NodeAddr=10.0.0.11 NodeHostName=ip-10-0-0-11 State=IDLE\n"
    "NodeName=gpu-st-p5en-2 NodeAddr=10.0.0.12 NodeHostName=ip-10-0-0-12 State=ALLOCATED\n"
    "NodeName=gpu-dy-p5en-1 NodeAddr=gpu-dy-p5en-1 NodeHostName=gpu-dy-p5en-1 State=IDLE+CLOUD+POWERED_DOWN\n"
)
DESCRIBE_INSTANCES = {
    "Reservations": [
        {"Instances": [{"InstanceId": "i-0000000000000000a", "PrivateIpAddress": "10.0.0.11"}]},
        {"Instances": [{"InstanceId": "i-0000000000000000b", "PrivateIpAddress": "10.0.0.12"}, {"InstanceId": "i-x"}]},
    ]
}


def test_slurm_node_names_by_private_ip() -> None:
    names, every = slurm_node_names([DESCRIBE_INSTANCES], SCONTROL)
    assert names == {"i-0000000000000000a": "gpu-st-p5en-1", "i-0000000000000000b": "gpu-st-p5en-2"}
    assert every == ["gpu-dy-p5en-1", "gpu-st-p5en-1", "gpu-st-p5en-2"]


def test_main_renders_from_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    (tmp_path / "t.json").write_text(json.dumps(P5EN))
    (tmp_path / "i.json").write_text(json.dumps(DESCRIBE_INSTANCES))
    (tmp_path / "n.txt").write_text(SCONTROL)
    assert slurm.main([str(tmp_path / f) for f in ("t.json", "i.json", "n.txt")]) == 0
    lines = _conf_lines(capsys.readouterr().out)
    assert "SwitchName=nn-l3a Nodes=gpu-st-p5en-[1-2]" in lines
    assert f"SwitchName={UNPLACED_SWITCH} Nodes=gpu-dy-p5en-1" in lines
    assert slurm.main(["only-one"]) == 2


def test_module_imports_only_the_standard_library() -> None:
    """The head node runs this file with its system python3: no aws_cdk, boto3 or fmconstructs imports."""
    tree = ast.parse(Path(slurm.__file__).read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert modules <= {"__future__", "re", "collections.abc", "dataclasses", "typing", "json", "sys"}
