"""TrainingPlatform's backends as adapters (issue 25 section 2): one registry keyed by the options class, a typed
result per backend, and per backend the platform choices it does not support, refused up front (before anything is
built) with an FmValidationError naming the option and the backend."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from fmconstructs import CapacityBlock, CapacityReservation, OnDemand
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.health import NcclCheckSpec
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    Backend,
    EksOptions,
    HyperPodOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformCapacityEvents,
    PlatformHealth,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.platform.backends import BACKENDS, BackendResult, PlatformBackend, backend_for
from fmconstructs.teams import Team

from tests.conftest import Scene, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:v2.19.6"
OPTIONS: dict[Backend, Any] = {
    Backend.PCS: PcsOptions(ami=AMI),
    Backend.PARALLELCLUSTER: ParallelClusterOptions(cluster_name="adapters"),
    Backend.EKS: EksOptions(),
    Backend.HYPERPOD: HyperPodOptions(),
}
BACKEND_NAMES = {
    Backend.PCS: "PCS",
    Backend.PARALLELCLUSTER: "ParallelCluster",
    Backend.EKS: "EKS",
    Backend.HYPERPOD: "HyperPod",
}

#: For each option a backend may declare unsupported: the platform props that use it.
USES: dict[str, Callable[[Scene], dict[str, Any]]] = {
    "capacity": lambda s: {"capacity": CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2)},
    "services_subnet": lambda s: {"subnet": s.subnet_a, "services_subnet": s.subnet_b},
    "health.nccl_image": lambda s: {
        "health": PlatformHealth(nccl_image=IMAGE),
        "storage": PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
    },
    "health.nccl": lambda s: {
        "health": PlatformHealth(nccl=NcclCheckSpec(nodes=2, state_dir="/fsx/health/nccl")),
        "storage": PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
    },
    "slurm_topology": lambda s: {"slurm_topology": True},
    "capacity_block_events": lambda s: {"capacity_block_events": PlatformCapacityEvents()},
    "teams": lambda s: {"teams": [Team(name="research")]},
}


def _declared() -> list[Any]:
    return [
        pytest.param(backend, unsupported.option, id=f"{backend.backend.value}-{unsupported.option}")
        for backend in BACKENDS.values()
        for unsupported in backend.unsupported
    ]


def _platform(scene: Scene, backend: Backend, **props: Any) -> TrainingPlatform:
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=OPTIONS[backend],
        **props,
    )


@pytest.mark.parametrize("backend", list(Backend))
def test_registry_maps_each_options_class_to_its_backend(backend: Backend) -> None:
    adapter = backend_for(OPTIONS[backend])
    assert adapter.backend is backend
    assert isinstance(adapter, PlatformBackend)
    assert BACKENDS[type(OPTIONS[backend])] is adapter


@pytest.mark.parametrize("options", [None, "pcs", object(), {"ami": AMI}], ids=["none", "str", "object", "dict"])
def test_registry_refuses_anything_else(options: object) -> None:
    with pytest.raises(FmTypeError, match=r"orchestrator must be PcsOptions, ParallelClusterOptions"):
        backend_for(options)


def test_every_declared_option_has_a_test_case() -> None:
    declared = {u.option for backend in BACKENDS.values() for u in backend.unsupported}
    assert declared <= set(USES), declared - set(USES)
    assert declared >= {"capacity", "services_subnet", "health.nccl_image", "health.nccl"}


@pytest.mark.parametrize(("adapter", "option"), _declared())
def test_every_declared_unsupported_option_is_refused_up_front(adapter: Any, option: str) -> None:
    # GIVEN a platform of this backend using an option it declares unsupported
    scene = new_scene()
    # WHEN it is built THEN it is refused, naming the option and the backend, and nothing is left in the tree
    with pytest.raises(FmValidationError, match="^" + re.escape(option) + " must be ") as raised:
        _platform(scene, adapter.backend, **USES[option](scene))
    assert BACKEND_NAMES[adapter.backend] in str(raised.value)
    assert scene.stack.node.try_find_child("Platform") is None


@pytest.mark.parametrize(
    "capacity",
    [
        CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2, zone="us-east-1a"),
    ],
    ids=["block", "reservation"],
)
def test_hyperpod_refuses_every_ec2_capacity(capacity: Any) -> None:
    with pytest.raises(FmValidationError, match=r"capacity must be OnDemand with HyperPod"):
        _platform(new_scene(), Backend.HYPERPOD, capacity=capacity)


@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.HYPERPOD])
def test_nccl_image_is_refused_on_every_backend_but_eks(backend: Backend) -> None:
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"health\.nccl_image must be None except with EksOptions"):
        _platform(scene, backend, health=PlatformHealth(nccl_image=IMAGE))


@pytest.mark.parametrize("backend", list(Backend))
def test_supported_choices_build_and_the_result_becomes_the_attributes(backend: Backend) -> None:
    scene = new_scene()
    props: dict[str, Any] = {"capacity": OnDemand()}
    if backend is Backend.EKS:
        props["health"] = PlatformHealth(nccl_image=IMAGE)
        props["storage"] = PlatformStorage.for_throughput(target_gbytes_per_s=1.0)
    platform = _platform(scene, backend, **props)
    assert platform.backend is backend
    assert platform.cluster is not None and platform.security_group is not None
    assert platform.node_group is not None
    assert (platform.eks_cluster is not None) is (backend is Backend.EKS)
    assert (platform.queue is not None) is (backend in (Backend.PCS, Backend.PARALLELCLUSTER))
    assert (platform.head_bootstrap is not None) is (backend is Backend.PARALLELCLUSTER)
    assert set(BackendResult.__dataclass_fields__) <= set(vars(platform)) | {"outputs"}
