"""EKS deploy order (issue 30): GPU node groups wait only for what their nodes need.

GIVEN a GpuEksCluster with a GPU node group (auto repair and node checks on, the defaults) and every example stack,
WHEN the template's dependency graph (DependsOn, Ref, Fn::GetAtt) is followed from each GPU node group, THEN it
reaches the cluster, the pod identity agent and the VPC CNI add-ons (pod networking) and the group's node-check gate,
but neither the system node group nor the node monitoring agent add-on: those deploy beside the GPU groups. Before,
the chain was cluster -> pod identity agent -> VPC CNI -> system node group -> node monitoring agent -> GPU group
(the issue measured the EKS critical path at about 29 minutes, 21 before this wait); now it is cluster -> pod
identity agent -> VPC CNI -> GPU group, as long as the system group's own chain (steps, not minutes: not deployed).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs.cli.changes import references
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.health import NODE_MONITORING_AGENT_ADDON_NAME

from tests.conftest import new_scene


def _closure(resources: dict[str, Any], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        resource = resources[todo.pop()]
        direct = set(resource.get("DependsOn", [])) | references(resource.get("Properties", {}))
        for lid in direct & set(resources) - seen:
            seen.add(lid)
            todo.append(lid)
    return seen


def _is_system(resource: dict[str, Any]) -> bool:
    return "NVIDIA" not in str(resource["Properties"].get("AmiType", ""))


def _check(resources: dict[str, Any]) -> int:
    groups = {lid: r for lid, r in resources.items() if r["Type"] == "AWS::EKS::Nodegroup" and not _is_system(r)}
    for lid in groups:
        upstream = _closure(resources, lid)
        waits = sorted(
            u
            for u in upstream
            if resources[u]["Type"] == "AWS::EKS::Nodegroup"
            or resources[u]["Properties"].get("AddonName") == NODE_MONITORING_AGENT_ADDON_NAME
        )
        assert not waits, f"GPU node group {lid} waits for {waits}"
        slow = {resources[u]["Type"] for u in upstream}
        assert "AWS::EKS::Cluster" in slow
    return len(groups)


@pytest.fixture(scope="module")
def cluster_template() -> dict[str, Any]:
    scene = new_scene("EksOrder")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=2)
    resources: dict[str, Any] = Template.from_stack(scene.stack).to_json()["Resources"]
    return resources


def test_a_gpu_group_waits_for_neither_the_system_nodes_nor_the_agent(cluster_template: dict[str, Any]) -> None:
    assert _check(cluster_template) == 1
    agents = [
        r for r in cluster_template.values() if r["Properties"].get("AddonName") == NODE_MONITORING_AGENT_ADDON_NAME
    ]
    assert len(agents) == 1  # auto repair still installs the agent


def test_a_gpu_group_still_waits_for_pod_networking(cluster_template: dict[str, Any]) -> None:
    (lid,) = [lid for lid, r in cluster_template.items() if r["Type"] == "AWS::EKS::Nodegroup" and not _is_system(r)]
    names = {cluster_template[u]["Properties"].get("AddonName") for u in _closure(cluster_template, lid)}
    assert {"vpc-cni", "eks-pod-identity-agent"} <= names


def test_every_example_gpu_group_deploys_beside_the_system_nodes(example_stacks: dict[str, cdk.Stack]) -> None:
    (first,) = list(example_stacks.values())[:1]
    stacks = [c for c in first.node.root.node.find_all() if isinstance(c, cdk.Stack)]
    checked = 0
    for stack in stacks:
        resources = Template.from_stack(stack).to_json().get("Resources", {})
        if any(r["Type"] == "AWS::EKS::Nodegroup" for r in resources.values()):
            checked += _check(resources)
    assert checked >= 2  # the EKS examples' GPU groups
