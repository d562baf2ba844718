"""Helpers of tests/platform/test_platform_health.py that other test modules use too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    Backend,
    EksOptions,
    HyperPodOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
STORAGE = PlatformStorage.of_capacity(storage_capacity_gib=4800)


def _orchestrator(backend: Backend, **options: Any) -> Any:
    return {
        Backend.PCS: lambda: PcsOptions(ami=AMI, **options),
        Backend.PARALLELCLUSTER: lambda: ParallelClusterOptions(cluster_name="platform-pc", **options),
        Backend.EKS: lambda: EksOptions(**options),
        Backend.HYPERPOD: lambda: HyperPodOptions(**options),  # Slurm
    }[backend]()


@dataclass
class Built:
    platform: TrainingPlatform
    stack: cdk.Stack

    @property
    def template(self) -> Template:
        return Template.from_stack(self.stack)

    @property
    def text(self) -> str:
        return json.dumps(self.template.to_json())


def _build(
    backend: Backend,
    *,
    nodes: int = 2,
    storage: PlatformStorage | None = STORAGE,
    observability: bool = True,
    options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Built:
    scene = new_scene("Platform")
    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=nodes,
        capacity=None
        if backend is Backend.HYPERPOD
        else CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=nodes),
        orchestrator=_orchestrator(backend, **(options or {})),
        storage=storage,
        observability=PlatformObservability.new(grafana=False) if observability else None,
        **kwargs,
    )
    return Built(platform, scene.stack)
