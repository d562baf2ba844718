"""The Lustre-over-EFA marker the ParallelCluster and HyperPod constructs write for ``fmc plan``: resource ``Metadata``
``fmconstructs:lustre-efa-interfaces`` mapping each queue / instance group to its EFA interfaces per node for LNet
(0: over TCP; null: decided on the node), and the plan reading it back to the same count the construct registered
against the file system's 1,024 EFA connections."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import _plan_metadata
from fmconstructs.cli.assembly import LUSTRE_EFA_METADATA_KEY, parse_stack
from fmconstructs.cli.plan import plan_stacks
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodLustreMount, HyperPodOrchestrator
from fmconstructs.hyperpod import cluster as hyperpod_cluster
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.parallelcluster import ComputeResource, SharedLustre
from fmconstructs.parallelcluster import cluster_lustre as parallelcluster_cluster_lustre
from fmconstructs.storage import LustreFileSystem

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster import BLOCK, make_cluster
from tests.support.parallelcluster_lustre_efa import _efa_fs, _p5, _queue


def _metadata(scene: Scene, resource_type: str) -> dict[str, Any]:
    (resource,) = scene.template().find_resources(resource_type).values()
    metadata: dict[str, Any] = resource.get("Metadata", {})
    return metadata


def _plan_fs(scene: Scene) -> Any:
    stack = parse_stack("Test", dict(scene.template().to_json()))
    (fs,) = plan_stacks([stack]).file_systems
    return fs


def test_the_reader_and_the_constructs_use_one_key() -> None:
    assert LUSTRE_EFA_METADATA_KEY == "fmconstructs:lustre-efa-interfaces"
    # The constructs write it through the plan record's writer (fmconstructs._plan_metadata).
    assert parallelcluster_cluster_lustre.write_plan_record is hyperpod_cluster.write_plan_record
    assert _plan_metadata._LEGACY_LUSTRE_EFA_KEY == LUSTRE_EFA_METADATA_KEY


# --- ParallelCluster -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pcluster() -> tuple[Scene, LustreFileSystem]:
    """GIVEN an EFA file system shared with a p5en block queue, a p5 queue of two compute resources and a CPU queue."""
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = _efa_fs(scene, group)
    queues = [
        _queue(scene, "gpu", ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)),
        _queue(scene, "p5", _p5("small", 2), _p5("large", 3)),
        _queue(scene, "cpu", ComputeResource(name="c7i", instance_type="c7i.4xlarge", max_nodes=4)),
    ]
    make_cluster(scene, queues=queues, shared_storage=[SharedLustre(file_system=fs)], node_security_group=group)
    return scene, fs


def test_parallelcluster_marks_each_queues_lustre_efa_interfaces(pcluster: tuple[Scene, LustreFileSystem]) -> None:
    scene, _ = pcluster
    # THEN the EFA queues carry the catalog's FSx default (8 on p5/p5en) and the CPU queue, over TCP, 0
    metadata = _metadata(scene, "Custom::PclusterCluster")
    assert metadata[LUSTRE_EFA_METADATA_KEY] == {"gpu": 8, "p5": 8, "cpu": 0}


def test_the_plan_counts_what_the_parallelcluster_construct_registered(
    pcluster: tuple[Scene, LustreFileSystem],
) -> None:
    scene, fs = pcluster
    registered = sum(g.max_efa_connections or 0 for g in fs.efa_client_groups)
    planned = _plan_fs(scene)
    assert planned.within_budget is True
    assert planned.efa_connections == registered


def test_parallelcluster_queues_over_tcp_are_marked_0() -> None:
    # GIVEN an EFA file system but no node_security_group (LNet over EFA needs one): every queue mounts over TCP
    scene = new_scene()
    fs = _efa_fs(scene)
    make_cluster(scene, queues=[_queue(scene, "gpu", _p5())], shared_storage=[SharedLustre(file_system=fs)])
    assert _metadata(scene, "Custom::PclusterCluster")[LUSTRE_EFA_METADATA_KEY] == {"gpu": 0}
    assert _plan_fs(scene).efa_connections == 0


def test_parallelcluster_without_an_efa_file_system_has_no_marker() -> None:
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    make_cluster(scene, shared_storage=[SharedLustre(file_system=fs)])
    assert LUSTRE_EFA_METADATA_KEY not in _metadata(scene, "Custom::PclusterCluster")


# --- HyperPod ------------------------------------------------------------------------------------------------------
def _hyperpod_groups() -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=4),
    ]


def _hyperpod(mount: HyperPodLustreMount | None = None, efa: bool = True) -> tuple[Scene, LustreFileSystem]:
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = (
        _efa_fs(scene, group)
        if efa
        else LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    )
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=_hyperpod_groups(),
                    orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"), file_system=fs,
                    efa_security_group=group, lustre_mount=mount)  # fmt: skip
    return scene, fs


@pytest.fixture(scope="module")
def hyperpod_slurm() -> tuple[Scene, LustreFileSystem]:
    """GIVEN HyperPod with the API-driven Slurm configuration mounting an EFA file system (fmconstructs' node set-up)."""
    return _hyperpod()


def test_hyperpod_marks_each_groups_lustre_efa_interfaces(hyperpod_slurm: tuple[Scene, LustreFileSystem]) -> None:
    scene, _ = hyperpod_slurm
    marker = _metadata(scene, "AWS::SageMaker::Cluster")[LUSTRE_EFA_METADATA_KEY]
    assert marker["gpu"] == 8
    # the m5 controller, a CPU type: over TCP by default, 0 EFA connections (it used to be "decided-on-node", which left
    # the file system's budget unknown to fmc; types the catalog lacks still write LUSTRE_EFA_DECIDED_ON_NODE)
    assert marker["controller"] == 0
    assert hyperpod_cluster.LUSTRE_EFA_DECIDED_ON_NODE == "decided-on-node"


def test_the_plan_reads_what_the_hyperpod_construct_registered(
    hyperpod_slurm: tuple[Scene, LustreFileSystem],
) -> None:
    scene, fs = hyperpod_slurm
    planned = _plan_fs(scene)
    # THEN the GPU group counts as registered (4 x 8); the controller (TCP) counts 0, so the total is known
    assert sum(g.max_efa_connections or 0 for g in fs.efa_client_groups) == 32
    assert any(c.endswith("/gpu: 4 x 8 = 32") for c in planned.efa_clients)
    assert not any("/controller" in c for c in planned.efa_clients)
    assert planned.efa_connections == 32 and planned.within_budget is True


@pytest.mark.parametrize("case", ["hyperpod-mount", "no-efa"])
def test_hyperpod_without_fmconstructs_lnet_has_no_marker(case: str) -> None:
    # GIVEN HyperPod mounting the file system itself (FsxLustreConfig), or a file system without EFA
    scene, _ = _hyperpod(HyperPodLustreMount.HYPERPOD) if case == "hyperpod-mount" else _hyperpod(efa=False)
    assert LUSTRE_EFA_METADATA_KEY not in _metadata(scene, "AWS::SageMaker::Cluster")


def test_hyperpod_on_eks_marks_gpu_groups_and_keeps_the_others_on_tcp() -> None:
    from fmconstructs.eks import GpuEksCluster

    # GIVEN HyperPod on EKS with an EFA file system: 4 x p5 (LNet over EFA in OnCreate) and 1 x m5 (no LNet step)
    scene = new_scene()
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    fs = _efa_fs(scene, eks_cluster.efa_security_group)
    eks_cluster.add_lustre_volume("Volume", fs, name="fsx")
    groups = [
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=4),
        HyperPodInstanceGroup(name="system", instance_type="m5.2xlarge", nodes=1),
    ]
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=groups,
                    orchestrator=HyperPodOrchestrator.eks(eks_cluster), file_system=fs,
                    efa_security_group=eks_cluster.efa_security_group)  # fmt: skip
    # THEN the marker says 8 and 0, and the plan counts 4 x 8, as the construct registered
    assert _metadata(scene, "AWS::SageMaker::Cluster")[LUSTRE_EFA_METADATA_KEY] == {"gpu": 8, "system": 0}
    planned = _plan_fs(scene)
    assert (planned.efa_connections, planned.within_budget) == (32, True)
    assert planned.efa_connections == sum(g.max_efa_connections or 0 for g in fs.efa_client_groups)
