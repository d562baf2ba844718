"""Helpers of tests/platform/test_platform.py that other test modules use too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace
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

from tests.conftest import ENV, Scene, new_app

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK = "cr-0fedcba9876543210"
CHECKPOINT_BYTES = 2 * 10**12
CHECKPOINT_SECONDS = 600


def _orchestrator(backend: Backend) -> Any:
    return {
        Backend.PCS: PcsOptions(ami=AMI),
        Backend.PARALLELCLUSTER: ParallelClusterOptions(cluster_name="platform-pc"),
        Backend.EKS: EksOptions(),
        Backend.HYPERPOD: HyperPodOptions(),
    }[backend]


@dataclass
class Built:
    backend: Backend
    platform: TrainingPlatform
    template: Template
    stack: cdk.Stack
    new_observability: bool


def _build(backend: Backend) -> Built:
    """PCS: a new workspace and Grafana; the others: FmObservability-like workspaces of another stack (existing).
    Capacity Block of 2 everywhere but HyperPod (On-Demand only); PCS and HyperPod size for a checkpoint, the others
    for a throughput."""
    app = new_app()
    observability = None
    if backend is not Backend.PCS:
        shared = cdk.Stack(app, "Observability", env=ENV)
        workspace = PrometheusWorkspace(shared, "Prometheus")
        grafana = GrafanaWorkspace(shared, "Grafana", prometheus_workspace_arns=[workspace.workspace_arn])
        observability = PlatformObservability.existing(prometheus_workspace=workspace, grafana_workspace=grafana)
    else:
        observability = PlatformObservability.new()
    stack = cdk.Stack(app, "Platform", env=ENV)
    scene = new_scene_in(stack)
    checkpoint = backend in (Backend.PCS, Backend.HYPERPOD)
    storage = (
        PlatformStorage.for_checkpoint(checkpoint_bytes=CHECKPOINT_BYTES, checkpoint_seconds=CHECKPOINT_SECONDS)
        if checkpoint
        else PlatformStorage.for_throughput(target_gbytes_per_s=4.6875)
    )
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        capacity=None if backend is Backend.HYPERPOD else CapacityBlock(reservation_id=BLOCK, instance_count=2),
        orchestrator=_orchestrator(backend),
        storage=storage,
        observability=observability,
    )
    return Built(backend, platform, Template.from_stack(stack), stack, backend is Backend.PCS)


def new_scene_in(stack: cdk.Stack) -> Scene:
    """The conftest scene's imported VPC (known zones us-east-1a/b), in ``stack``."""
    from aws_cdk import aws_ec2 as ec2

    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )
    return Scene(stack.node.root, stack, vpc)  # type: ignore[arg-type]


_BUILT: dict[Backend, Built] = {}


def _built(backend: Backend) -> Built:
    """One platform per backend for the whole module (each xdist worker builds what its tests need)."""
    if backend not in _BUILT:
        _BUILT[backend] = _build(backend)
    return _BUILT[backend]


# --- other choices -----------------------------------------------------------------------------------------------------
def _platform(scene: Scene, **overrides: Any) -> TrainingPlatform:
    props: dict[str, Any] = {
        "vpc": scene.vpc,
        "instance_type": "p5.48xlarge",
        "nodes": 2,
        "orchestrator": PcsOptions(ami=AMI),
        "storage": PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    }
    props.update(overrides)
    return TrainingPlatform(scene.stack, "Platform", **props)
