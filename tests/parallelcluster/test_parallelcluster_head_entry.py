"""Stable head node actions (fmconstructs.parallelcluster.head_entry): GIVEN a cluster whose head node piece changes
between two versions WHEN fmc changes compares the two templates THEN the cluster's configuration is unchanged (only the
SSM parameter holding the piece is updated in place); with stable_head_node_actions=False the same edit is a change
ParallelCluster refuses (HeadNodeCustomActionsSchema: UpdatePolicy.UNSUPPORTED)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs.bootstrap import NodeBootstrap
from fmconstructs.bootstrap.entry_point import PARAMETER_VALUE_MAX_CHARS
from fmconstructs.cli.changes import compare_templates
from fmconstructs.errors import FmTypeError
from fmconstructs.parallelcluster import CustomActionEvent

from tests.conftest import new_scene
from tests.support.parallelcluster import make_cluster


def _template(
    command: str, *, stable: bool = True, event: CustomActionEvent = CustomActionEvent.ON_NODE_CONFIGURED
) -> Any:
    scene = new_scene()
    cluster = make_cluster(scene, stable_head_node_actions=stable)
    boot = NodeBootstrap(scene.stack, "Head", name="pc-head")
    boot.add_commands(command)
    cluster.add_head_node_bootstrap(boot, event=event)
    return scene.template().to_json()


def _cluster_findings(old: Any, new: Any) -> list[str]:
    report = compare_templates("Test", old, new)
    return [f"{f.kind} {f.prop}" for f in report.findings if f.resource_type == "Custom::PclusterCluster"]


@pytest.mark.parametrize("event", [CustomActionEvent.ON_NODE_START, CustomActionEvent.ON_NODE_CONFIGURED])
def test_a_changed_head_node_piece_leaves_the_cluster_configuration_unchanged(event: CustomActionEvent) -> None:
    old, new = _template("echo v1", event=event), _template("echo v2 fixed", event=event)
    assert _cluster_findings(old, new) == []
    cluster = next(r for r in new["Resources"].values() if r["Type"] == "Custom::PclusterCluster")
    before = next(r for r in old["Resources"].values() if r["Type"] == "Custom::PclusterCluster")
    head, head_before = (c["Properties"]["ClusterConfiguration"]["HeadNode"] for c in (cluster, before))
    assert head["CustomActions"] == head_before["CustomActions"]
    # what changed is the piece's parameter, updated in place (its Name is its only create-only property)
    params = {k: v for k, v in new["Resources"].items() if v["Type"] == "AWS::SSM::Parameter"}
    assert set(params) == {k for k, v in old["Resources"].items() if v["Type"] == "AWS::SSM::Parameter"}
    assert all(params[k]["Properties"]["Value"] != old["Resources"][k]["Properties"]["Value"] for k in params)


def test_without_stable_actions_the_same_change_is_refused() -> None:
    findings = _cluster_findings(_template("echo v1", stable=False), _template("echo v2 fixed", stable=False))
    assert findings == ["refused ClusterConfiguration/HeadNode/CustomActions/OnNodeConfigured/Args/1"]


def test_the_entry_point_action_names_the_path_and_region_only() -> None:
    template = _template("echo v1")
    (cluster,) = [r for r in template["Resources"].values() if r["Type"] == "Custom::PclusterCluster"]
    action = cluster["Properties"]["ClusterConfiguration"]["HeadNode"]["CustomActions"]["OnNodeConfigured"]
    assert action["Args"] == ["/fmconstructs/parallelcluster/train/head/OnNodeConfigured", "us-east-1"]
    assert re.fullmatch(r"s3://cdk-hnb659fds-assets-123456789012-us-east-1/[0-9a-f]{64}\.sh", action["Script"])
    (param,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SSM::Parameter"]
    assert param["Properties"]["Name"] == "/fmconstructs/parallelcluster/train/head/OnNodeConfigured/001"
    assert param["Properties"]["Type"] == "String"


def test_the_entry_point_policy_reads_exactly_its_parameters() -> None:
    scene = new_scene()
    cluster = make_cluster(scene)
    for index in (1, 2):
        boot = NodeBootstrap(scene.stack, f"Head{index}", name=f"pc-head{index}")
        boot.add_commands(f"echo {index}")
        cluster.add_head_node_bootstrap(boot)
    policies = Template.from_stack(scene.stack).find_resources(
        "AWS::IAM::ManagedPolicy", {"Properties": {"ManagedPolicyName": "parallelcluster-train-us-east-1-head-entry"}}
    )
    ((_, policy),) = policies.items()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    arn = "arn:aws:ssm:us-east-1:123456789012:parameter/fmconstructs/parallelcluster/train/head/"
    by_path, *reads = statements
    assert by_path["Action"] == "ssm:GetParametersByPath"
    assert [_joined(r) for r in by_path["Resource"]] == [arn + "OnNodeStart", arn + "OnNodeConfigured"]
    assert [(r["Action"], _joined(r["Resource"])) for r in reads] == [
        ("ssm:GetParameter", arn + f"OnNodeConfigured/00{n}") for n in (1, 2)
    ]
    assert "*" not in json.dumps(statements)


def _joined(value: Any) -> str:
    """An ARN as text: ``Fn::Join`` parts, with the partition as ``aws``."""
    if isinstance(value, str):
        return value
    return "".join("aws" if p == {"Ref": "AWS::Partition"} else p for p in value["Fn::Join"][1])


def test_example_pieces_fit_a_standard_parameter(example_templates: dict[str, Any]) -> None:
    # SSM: "Standard parameters have a value limit of 4 KB" (botocore ssm PutParameterRequest Value). Deploy-time
    # values are counted at 200 characters each (ARNs, ids and URLs are shorter).
    for name in ("FmParallelClusterP5en", "FmParallelClusterGb200", "FmPlatform"):
        for resource in example_templates[name]["Resources"].values():
            if resource["Type"] == "AWS::SSM::Parameter" and "/head/" in json.dumps(resource["Properties"]["Name"]):
                parts = resource["Properties"]["Value"]["Fn::Join"][1]
                size = sum(len(p) if isinstance(p, str) else 200 for p in parts)
                assert size < PARAMETER_VALUE_MAX_CHARS, (name, size)


def test_stable_head_node_actions_is_a_bool() -> None:
    with pytest.raises(FmTypeError, match="stable_head_node_actions"):
        make_cluster(new_scene(), stable_head_node_actions="yes")
