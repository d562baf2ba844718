"""HyperPod's API-driven node set-up (cluster_node_setup.api_group_bootstrap) plans its Lustre client with the one
planner (fmconstructs.storage.lustre_clients.plan_lustre_client), so its GPUDirect Storage default is the planner's:
on only where the nodes use a known, non-zero EFA count for LNet (FSx for Lustre User Guide, "Working with
EFA-enabled file systems": GDS support is built on EFA)."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import EfaSecurityGroup
from fmconstructs.hyperpod import (
    LUSTRE_MOUNT_POINT,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
    cluster_node_setup,
)
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration
from fmconstructs.storage.lustre_clients import LustreClientPlan, plan_lustre_client

from tests.conftest import new_scene

GROUPS = {
    "controller": "ml.m5.2xlarge",
    "gpu": "ml.p5.48xlarge",  # in the catalog: FSx UG default 8 EFA interfaces for LNet
    "g6e": "ml.g6e.48xlarge",  # an NVIDIA GPU type the catalog does not hold: EFA decided on the node
    "trn": "ml.trn1.32xlarge",  # accelerated, no NVIDIA GPU
}


def build(efa_enabled: bool = True) -> tuple[HyperPodCluster, LustreFileSystem]:
    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    extra: dict[str, Any] = (
        {"throughput_mbps_per_tib": 1000, "efa_enabled": True, "efa_security_group": efa,
         "metadata_configuration": LustreMetadataConfiguration.automatic(), "storage_capacity_gib": 4800}
        if efa_enabled else {"storage_capacity_gib": 1200}
    )  # fmt: skip
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, **extra)
    groups = [HyperPodInstanceGroup(name=name, instance_type=t, nodes=2) for name, t in GROUPS.items()]
    cluster = HyperPodCluster(
        scene.stack,
        "HyperPod",
        vpc=scene.vpc,
        subnets=[scene.subnet_a],
        instance_groups=groups,
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        file_system=fs,
        efa_security_group=efa,
    )
    return cluster, fs


@pytest.fixture(scope="module")
def efa_cluster() -> tuple[HyperPodCluster, LustreFileSystem]:
    return build()


def lustre_commands(cluster: HyperPodCluster, group: str) -> list[str]:
    (step,) = [s for s in cluster.node_bootstraps[group].steps if s.name == "lustre"]
    return list(step.commands)


def script_args(commands: list[str]) -> str:
    return commands[-1].split("fmconstructs-lustre-mount", 1)[1]


@pytest.mark.parametrize(
    ("group", "ending"),
    [
        ("gpu", " 8 1 p5"),  # EFA for LNet, GPUDirect Storage
        ("g6e", " auto 0 -"),  # EFA count unknown at synthesis: GPUDirect Storage off (was on before 0.3.1)
        ("controller", " 0 0 -"),  # CPU groups mount over TCP
        ("trn", " auto 0 -"),  # Trainium: EFA decided on the node, no NVIDIA GPU so no GPUDirect Storage
    ],
)
def test_gpudirect_storage_only_where_the_efa_count_is_known(efa_cluster: Any, group: str, ending: str) -> None:
    cluster, _ = efa_cluster
    assert script_args(lustre_commands(cluster, group)).endswith(ending)


@pytest.mark.parametrize("group", list(GROUPS))
def test_the_commands_are_the_planners(efa_cluster: Any, group: str) -> None:
    cluster, fs = efa_cluster
    spec = next(g for g in cluster.instance_groups if g.name == group).instance_spec
    plan = plan_lustre_client(
        efa_enabled=True,
        dns_name=fs.dns_name,
        mount_name=fs.mount_name,
        instance_spec=spec,
        max_nodes=2,
        efa_interfaces=0 if group == "controller" else None,
        mount_point=LUSTRE_MOUNT_POINT,
        gpudirect_storage=False if group == "trn" else None,
    )
    assert lustre_commands(cluster, group) == list(plan.commands)


def test_api_group_bootstrap_calls_the_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[LustreClientPlan] = []

    def spy(**kwargs: Any) -> LustreClientPlan:
        seen.append(plan_lustre_client(**kwargs))
        return seen[-1]

    monkeypatch.setattr(cluster_node_setup, "plan_lustre_client", spy)
    cluster, _ = build()
    assert len(seen) == len(GROUPS)
    assert cluster.lustre_efa_interfaces == {"gpu": 8, "g6e": None, "trn": None}
    # the known, non-zero counts are registered against the file system's 1,024 EFA connections
    (fs,) = [c for c in cluster.node.scope.node.children if isinstance(c, LustreFileSystem)]  # type: ignore[union-attr]
    assert [(g.consumer_path.rsplit("/", 1)[-1], g.max_efa_connections) for g in fs.efa_client_groups] == [
        ("Bootstrap-gpu", 16)
    ]


@pytest.mark.parametrize("gpudirect_storage", ["yes", 1])
def test_the_planner_refuses_a_non_boolean_gpudirect_storage(gpudirect_storage: object) -> None:
    with pytest.raises(Exception, match=r"gpudirect_storage must be "):
        plan_lustre_client(
            efa_enabled=True,
            dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            mount_name="abcdefgh",
            instance_spec=None,
            max_nodes=1,
            gpudirect_storage=gpudirect_storage,  # type: ignore[arg-type]
        )
