"""The node-checks gate (about 16 KB) is shared by the groups whose gates are the same (issue 30): one ConfigMap per
distinct gate, one small DaemonSet per group, each group's nodes still running exactly their own gate."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.health import NodeHealthOptions
from fmconstructs.storage import LustreFileSystem

from tests.conftest import new_scene

KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"


def _manifests(template: Template) -> list[dict[str, Any]]:
    return [
        m
        for r in template.find_resources(KUBERNETES_RESOURCE).values()
        if isinstance(r["Properties"]["Manifest"], str)
        for m in json.loads(r["Properties"]["Manifest"])
    ]


def _gates(template: Template) -> dict[str, str]:
    """Each gate DaemonSet's name -> the script its ConfigMap volume holds."""
    manifests = _manifests(template)
    scripts = {m["metadata"]["name"]: m["data"]["node-gate.sh"] for m in manifests if m["kind"] == "ConfigMap"}
    return {
        m["metadata"]["name"]: scripts[
            next(v["configMap"]["name"] for v in m["spec"]["template"]["spec"]["volumes"] if "configMap" in v)
        ]
        for m in manifests
        if m["kind"] == "DaemonSet" and m["metadata"]["name"].startswith("fmconstructs-node-checks-")
    }


def test_groups_of_one_type_share_one_gate_and_other_types_get_their_own() -> None:
    scene = new_scene("SharedGates")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    for i in range(3):
        cluster.add_gpu_node_group(f"P5n{i}", instance_type="p5.48xlarge", max_nodes=1)
    cluster.add_gpu_node_group("P5en", instance_type="p5en.48xlarge", max_nodes=1)
    template = Template.from_stack(scene.stack)
    gates = _gates(template)
    config_maps = [m for m in _manifests(template) if m["kind"] == "ConfigMap"]
    assert len(gates) == 4  # one DaemonSet per group
    assert len(config_maps) == 2  # one gate per type
    assert sorted(m["metadata"]["name"].split("-script-")[0] for m in config_maps) == [
        "fmconstructs-node-checks-p5-48xlarge",
        "fmconstructs-node-checks-p5en-48xlarge",
    ]
    for name, script in gates.items():
        wanted = "p5en.48xlarge" if "p5en" in name else "p5.48xlarge"
        assert f"fmconstructs node checks (boot) for {wanted}" in script


def test_a_group_with_other_checks_or_a_lustre_mount_gets_its_own_gate() -> None:
    scene = new_scene("OwnGates")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    plain = cluster.add_gpu_node_group("Plain", instance_type="p5.48xlarge", max_nodes=1)
    level1 = cluster.add_gpu_node_group(
        "Level1", instance_type="p5.48xlarge", max_nodes=1, node_checks=NodeHealthOptions(dcgm_level=1)
    )
    mounted = cluster.add_gpu_node_group("Mounted", instance_type="p5.48xlarge", max_nodes=1)
    file_system = LustreFileSystem(
        scene.stack, "Fsx", vpc=scene.vpc, subnet=scene.vpc.private_subnets[0], storage_capacity_gib=1200
    )
    mounted.add_lustre_client(file_system, mount_point="/fsx")  # after the group: seen at synthesis
    gates = _gates(Template.from_stack(scene.stack))
    by_group = {g: gates[f"fmconstructs-node-checks-{g.node_checks_group}"] for g in (plain, level1, mounted)}
    assert len(set(by_group.values())) == 3
    assert "dcgmi diag -r 1" in by_group[level1] and "dcgmi diag -r 2" in by_group[plain]
    assert 'findmnt -t lustre -n "/fsx"' in by_group[mounted] and "findmnt -t lustre" not in by_group[plain]


def test_each_group_waits_for_its_daemon_set_which_waits_for_its_gate() -> None:
    scene = new_scene("GateOrder")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1)
    template = Template.from_stack(scene.stack)
    resources = template.find_resources(KUBERNETES_RESOURCE)
    (gate_id,) = [k for k in resources if "FmNodeChecksScript" in k]
    daemon_set_id = next(k for k in resources if group.node_checks_group.replace("-", "") in k)  # type: ignore[union-attr]
    assert gate_id in resources[daemon_set_id]["DependsOn"]
    nodegroup = next(r for r in template.find_resources("AWS::EKS::Nodegroup").values() if "Taints" in r["Properties"])
    assert daemon_set_id in nodegroup["DependsOn"]
