"""GpuNodeGroup speaks the house vocabulary: ``node_group_name`` (``nodegroup_name`` deprecated until 0.4.0) and
``tags`` on the node group and on what its launch template launches (instances, volumes, network interfaces)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs import FmTypeError, FmValidationError
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup

from tests.conftest import new_scene

BASE: dict[str, Any] = {"instance_type": "p5en.48xlarge", "max_nodes": 2}


def _template(**options: Any) -> tuple[GpuNodeGroup, Template]:
    scene = new_scene("EksVocabulary")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("Gpu", **{**BASE, **options})
    return group, Template.from_stack(scene.stack)


def _nodegroup(template: Template) -> dict[str, Any]:
    (found,) = [
        r["Properties"]
        for r in template.find_resources("AWS::EKS::Nodegroup").values()
        if r["Properties"].get("Labels", {}).get("fmconstructs.io/instance-type") == "p5en.48xlarge"
    ]
    return dict(found)


def _gpu_launch_template(template: Template) -> dict[str, Any]:
    (found,) = [
        r["Properties"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"].get("InstanceType") == "p5en.48xlarge"
    ]
    return dict(found)


# --- node_group_name ------------------------------------------------------------------------------------------------


def test_node_group_name_names_the_node_group():
    group, template = _template(node_group_name="gpu-p5en")
    assert _nodegroup(template)["NodegroupName"] == "gpu-p5en"
    assert group.node_group_name == group.nodegroup.nodegroup_name  # the node group's Ref


def test_nodegroup_name_is_deprecated_and_gives_the_same_template():
    _, new = _template(node_group_name="gpu-p5en")
    with pytest.warns(
        DeprecationWarning, match=r"GpuNodeGroup\(nodegroup_name=\) is deprecated .* use node_group_name="
    ):
        group, old = _template(nodegroup_name="gpu-p5en")
    assert json.dumps(old.to_json(), sort_keys=True) == json.dumps(new.to_json(), sort_keys=True)
    with pytest.warns(
        DeprecationWarning, match=r"GpuNodeGroup.nodegroup_name is deprecated .* GpuNodeGroup.node_group_name"
    ):
        assert group.nodegroup_name == group.node_group_name


def test_nodegroup_name_and_node_group_name_together_are_refused():
    with pytest.raises(FmTypeError, match="nodegroup_name must be omitted when node_group_name is given"):
        _template(node_group_name="a", nodegroup_name="b")


def test_the_new_name_does_not_warn():
    with warnings.catch_warnings():
        warnings.filterwarnings("error", r".* is deprecated and will be removed in fmconstructs")
        group, _ = _template(node_group_name="gpu")
        assert group.node_group_name == group.nodegroup.nodegroup_name


# --- tags -----------------------------------------------------------------------------------------------------------


def test_tags_reach_the_node_group_and_the_instances_volumes_and_interfaces():
    _, template = _template(tags={"team": "research", "cost-center": "42"})
    assert _nodegroup(template)["Tags"] == {"team": "research", "cost-center": "42"}
    lt = _gpu_launch_template(template)
    specs = {
        s["ResourceType"]: {t["Key"]: t["Value"] for t in s["Tags"]}
        for s in lt["LaunchTemplateData"]["TagSpecifications"]
    }
    assert set(specs) == {"instance", "volume", "network-interface"}
    for tags in specs.values():
        assert tags["team"] == "research" and tags["cost-center"] == "42"
        assert tags["fmconstructs:instance-type"] == "p5en.48xlarge"


def test_the_library_tags_win_over_the_same_keys():
    _, template = _template(tags={"fmconstructs:eks-cluster": "mine"})
    lt = _gpu_launch_template(template)
    instance = next(s for s in lt["LaunchTemplateData"]["TagSpecifications"] if s["ResourceType"] == "instance")
    assert {t["Key"]: t["Value"] for t in instance["Tags"]}["fmconstructs:eks-cluster"] != "mine"


def test_no_tags_no_node_group_tags():
    _, template = _template()
    assert "Tags" not in _nodegroup(template)


@pytest.mark.parametrize(
    ("tags", "parameter", "type_error"),
    [
        ("team=research", "tags", True),
        ({"aws:team": "x"}, "tags key", False),
        ({"": "x"}, "tags key", False),
        ({"k" * 129: "x"}, "tags key", False),
        ({"team": "v" * 257}, "tags['team']", False),
        ({"team": 5}, "tags['team']", True),
        ({f"k{i}": "v" for i in range(51)}, "tags", False),
    ],
)
def test_bad_tags_are_refused(tags, parameter, type_error):
    with pytest.raises(FmValidationError) as error:
        _template(tags=tags)
    assert error.value.parameter == parameter
    assert isinstance(error.value, TypeError) == type_error
