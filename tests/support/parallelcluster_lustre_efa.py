"""Helpers of tests/parallelcluster/test_parallelcluster_lustre_efa.py that other test modules use too."""

from __future__ import annotations

from typing import Any

from fmconstructs import EfaSecurityGroup, LustreFileSystem
from fmconstructs.parallelcluster import (
    ComputeResource,
    SlurmQueue,
)
from fmconstructs.storage import LustreMetadataConfiguration

from tests.conftest import Scene


def _efa_fs(scene: Scene, group: EfaSecurityGroup | None = None, **kwargs: Any) -> LustreFileSystem:
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        efa_enabled=True,
        efa_security_group=group or EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        **kwargs,
    )


def _queue(scene: Scene, name: str, *resources: ComputeResource, **kwargs: Any) -> SlurmQueue:
    kwargs.setdefault("subnets", [scene.subnet_a])
    return SlurmQueue(name=name, compute_resources=list(resources), **kwargs)


def _p5(name: str = "p5", max_nodes: Any = 2, **kwargs: Any) -> ComputeResource:
    return ComputeResource(name=name, instance_type="p5.48xlarge", max_nodes=max_nodes, **kwargs)
