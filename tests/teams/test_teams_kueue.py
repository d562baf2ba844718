"""Teams on Kueue: every rendered object is valid against the pinned Kueue CRD schemas (v0.19.2, tests/data/
kueue_crds), the guarantees split over the flavors, and GpuEksCluster.add_teams keeps the topology-aware flavors with
the platform ClusterQueue holding what no team is guaranteed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.scheduling import FlavorQuota
from fmconstructs.errors import FmValidationError
from fmconstructs.teams import Preemption, Team
from fmconstructs.teams.kueue import allocate_guarantees, render_kueue_teams, shared_queue_spec

from tests.conftest import new_scene
from tests.support.eks_kueue import validate

TEAMS = [
    Team(
        name="research",
        namespaces=["ml", "ml-eval"],
        guaranteed_gpus=16,
        borrowing_limit_gpus=8,
        priority=50,
        preemption=Preemption.LOWER_PRIORITY,
    ),
    Team(name="prod", namespaces=["prod"], guaranteed_gpus=8, priority=90),
    Team(name="dev", namespaces=["dev"], priority=10, preemption=Preemption.NEVER),
]
FLAVORS = [
    FlavorQuota("p5-48xlarge-capacity-block", {"a": "b"}, 3, 16, 512),
    FlavorQuota("p5-48xlarge-on-demand", {"a": "c"}, 3, 16, 512),
]


def _of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def test_every_team_object_is_valid_against_the_pinned_kueue_crd_schemas():
    objects = render_kueue_teams(TEAMS, FLAVORS)
    assert [o["kind"] for o in objects].count("LocalQueue") == 4
    assert {o["kind"] for o in objects} == {"Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue"}
    for manifest in objects:
        validate(manifest)
    validate(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "fm-gpu"},
            "spec": shared_queue_spec("fm-gpu", FLAVORS, TEAMS),
        }
    )


def test_guarantees_are_taken_from_the_flavors_in_order():
    assert allocate_guarantees(TEAMS, FLAVORS) == {
        "research": {"p5-48xlarge-capacity-block": 16, "p5-48xlarge-on-demand": 0},
        "prod": {"p5-48xlarge-capacity-block": 0, "p5-48xlarge-on-demand": 8},
        "dev": {"p5-48xlarge-capacity-block": 0, "p5-48xlarge-on-demand": 0},
    }
    spec = shared_queue_spec("fm-gpu", FLAVORS, TEAMS)
    gpus = [f["resources"][0]["nominalQuota"] for f in spec["resourceGroups"][0]["flavors"]]
    assert gpus == [0, 8] and spec["cohortName"] == "fm-teams"
    with pytest.raises(FmValidationError, match=r"^teams\[1\]\.guaranteed_gpus"):
        allocate_guarantees([Team(name="a", guaranteed_gpus=30), Team(name="b", guaranteed_gpus=3)], FLAVORS)


def test_a_team_queue_admits_only_its_namespaces_with_its_quota_borrowing_limit_and_preemption():
    objects = render_kueue_teams(TEAMS, FLAVORS)
    research, prod, dev = _of(objects, "ClusterQueue")
    assert research["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml", "ml-eval"]
    assert research["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8}
    ]
    assert "borrowingLimit" not in prod["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0]
    assert research["spec"]["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    assert prod["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
    assert dev["spec"]["preemption"] == {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}
    assert {c["metadata"]["name"]: c["value"] for c in _of(objects, "WorkloadPriorityClass")} == {
        "research": 50,
        "prod": 90,
        "dev": 10,
    }


@pytest.mark.parametrize(
    ("teams", "parameter"),
    [
        ([Team(name="a")], r"teams\[0\]\.namespaces"),
        ([Team(name="A_b", namespaces=["x"])], r"teams\[0\]\.name"),
        ([Team(name="a", namespaces=["x"]), Team(name="b", namespaces=["x"])], r"teams\[1\]\.namespaces"),
    ],
)
def test_the_renderer_refuses_bad_teams(teams: list[Team], parameter: str):
    with pytest.raises(FmValidationError, match=rf"^{parameter}"):
        render_kueue_teams(teams, FLAVORS)


def _kueue_objects(template: Any) -> list[dict[str, Any]]:
    found = []
    for resource in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, str) and "kueue.x-k8s.io/" in body:
            found += json.loads(body)
    return found


def test_add_teams_on_a_cluster_keeps_the_topology_flavors_and_shares_what_is_left():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_topology_scheduling(namespaces=["default"])
    cluster.add_gpu_node_group("A", instance_type="p5.48xlarge", max_nodes=4, subnets=[scene.subnet_a])
    cluster.add_teams(TEAMS, create_namespaces=True)
    objects = _kueue_objects(scene.template())
    for manifest in objects:
        if manifest["apiVersion"].startswith("kueue.x-k8s.io/"):
            validate(manifest)
    (flavor,) = _of(objects, "ResourceFlavor")
    assert flavor["spec"]["topologyName"] == "aws-network-3-layers"
    queues = {q["metadata"]["name"]: q for q in _of(objects, "ClusterQueue")}
    shared = queues["fm-gpu"]["spec"]
    assert shared["cohortName"] == "fm-teams"
    assert shared["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 32 - 24
    assert queues["research"]["spec"]["resourceGroups"][0]["flavors"][0]["name"] == flavor["metadata"]["name"]
    namespaces = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Namespace")
    assert namespaces == ["dev", "ml", "ml-eval", "prod"]


def test_add_teams_needs_kueue_and_is_refused_at_synthesis_when_guarantees_exceed_the_node_groups():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"^add_teams"):
        cluster.add_teams(TEAMS)
    cluster.add_topology_scheduling()
    cluster.add_gpu_node_group("A", instance_type="p5.48xlarge", max_nodes=2, subnets=[scene.subnet_a])
    with pytest.raises(FmValidationError, match=r"^teams\[0\]\.name"):
        cluster.add_teams([Team(name="fm-gpu", namespaces=["x"])])
    cluster.add_teams(TEAMS)  # 24 guaranteed, 16 GPUs in the node group
    with pytest.raises(Exception, match=r"guaranteed_gpus"):
        scene.template()
