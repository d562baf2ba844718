"""TrainingPlatform on EKS gives its ``PlatformHealth(node_checks=NodeHealthOptions(...))`` to the GPU node group: the
EKS gate runs the BOOT checks a Slurm gate runs for those options (DCGM at their level, the file system's host mount),
and ``node_checks=None`` means no gate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock
from fmconstructs.health import NodeHealthOptions
from fmconstructs.platform import EksOptions, PlatformHealth, PlatformStorage, TrainingPlatform

from tests.conftest import new_scene


def _gate_scripts(health: PlatformHealth) -> list[str]:
    scene = new_scene("EksChecks")
    TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        orchestrator=EksOptions(),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
        health=health,
    )
    resources = Template.from_stack(scene.stack).find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    manifests: list[dict[str, Any]] = [
        m
        for r in resources.values()
        if isinstance(r["Properties"]["Manifest"], str)
        for m in json.loads(r["Properties"]["Manifest"])
    ]
    return [m["data"]["node-gate.sh"] for m in manifests if m["kind"] == "ConfigMap" and "node-gate.sh" in m["data"]]


@pytest.mark.parametrize("level", [1, 2])
def test_the_eks_gate_runs_dcgm_at_the_platforms_level_and_checks_the_lustre_mount(level: int) -> None:
    (script,) = _gate_scripts(PlatformHealth(node_checks=NodeHealthOptions(dcgm_level=level)))
    assert f"dcgmi diag -r {level}" in script
    assert "check_lustre_mount" in script


def test_no_node_checks_means_no_gate() -> None:
    assert _gate_scripts(PlatformHealth(node_checks=None)) == []
