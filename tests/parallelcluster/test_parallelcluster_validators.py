"""fmconstructs refuses at construction what ParallelCluster's offline configuration validators refuse (issue 18).

Each case is built twice: through the fmconstructs constructs (FmValidationError) and as the ClusterConfiguration
ParallelCluster would get, checked by aws-parallelcluster 3.16.1's own validators in .venv-pcluster
(tools/pcluster_validate.py --offline-validators, instance types described from moto's EC2 data): the validator's
message must appear. Limits: fmconstructs/parallelcluster/limits.py (constants.py, validators/cluster_validators.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs import FmValidationError, UltraServerCapacityBlock
from fmconstructs.parallelcluster import (
    ComputeResource,
    HeadNode,
    LoginNodePool,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
)
from fmconstructs.parallelcluster.limits import RESERVED_MOUNT_DIRS, required_head_node_memory_gib
from fmconstructs.storage import LustreFileSystem, LustreFileSystemBase

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster_schema import (
    LUSTRE,
    SUBNET,
    _cluster,
    _queue,
    check_configs,
    error_text,
)

CPU = {"InstanceType": "c7i.large", "MaxCount": 1}


def _fs(scene: Scene, index: int = 0) -> LustreFileSystemBase:
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, f"FsGroup{index}", f"sg-0123456789abcde{index:02x}")
    return LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        f"Fs{index}",
        file_system_id=f"fs-0123456789abcde{index:02x}",
        dns_name=f"fs-0123456789abcde{index:02x}.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=group,
    )


def _resources(count: int, prefix: str = "r") -> list[ComputeResource]:
    return [ComputeResource(name=f"{prefix}{i}", instance_type="c7i.large") for i in range(count)]


def _fm_queue(scene: Scene, name: str = "q", resources: list[ComputeResource] | None = None) -> SlurmQueue:
    return SlurmQueue(name=name, subnets=[scene.subnet_a], compute_resources=resources or _resources(1))


def _fm_cluster(scene: Scene, *, head: str = "c7i.2xlarge", queues: list[SlurmQueue] | None = None, **props: Any):
    return ParallelCluster(
        scene.stack,
        "Cluster",
        cluster_name="limits",
        head_node=HeadNode(instance_type=head, subnet=scene.subnet_a),
        queues=queues or [_fm_queue(scene)],
        **props,
    )


def _pools(scene: Scene, names: list[str]) -> list[LoginNodePool]:
    return [LoginNodePool(name=n, instance_type="c7i.xlarge", subnet=scene.subnet_a) for n in names]


def _raw_pools(names: list[str]) -> dict[str, Any]:
    pools = [
        {"Name": n, "Count": 1, "InstanceType": "c7i.xlarge", "Networking": {"SubnetIds": [SUBNET]}} for n in names
    ]
    return {"Pools": pools}


def _raw_crs(count: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [{"Name": f"{prefix}{i}", **CPU} for i in range(count)]


def _storage(scene: Scene, *entries: tuple[int, str, str]) -> list[SharedLustre]:
    """(file system index, name, mount dir) -> SharedLustre; one imported file system per index."""
    systems: dict[int, LustreFileSystemBase] = {}
    out = []
    for index, name, mount in entries:
        if index not in systems:
            systems[index] = _fs(scene, index)
        out.append(SharedLustre(file_system=systems[index], name=name, mount_point=mount))
    return out


def _raw_storage(*entries: tuple[int, str, str]) -> list[dict[str, Any]]:
    return [
        {**LUSTRE, "Name": name, "MountDir": mount, "FsxLustreSettings": {"FileSystemId": f"fs-0123456789abcde{i:02x}"}}
        for i, name, mount in entries
    ]


GB200_BLOCK = UltraServerCapacityBlock(reservation_id="cr-0a1b2c3d4e5f60718", ultraserver_type="u-p6e-gb200x72")
_HEAD = {"Networking": {"SubnetId": SUBNET}, "Imds": {"Secured": True}}
_FSX21 = [(i, f"fsx{i}", f"/fsx{i}") for i in range(21)]

# name -> (fmconstructs build, the FmValidationError text, ParallelCluster's configuration, its validator's message)
Case = tuple[Callable[[Scene], Any], str, dict[str, Any], str]
CASES: dict[str, Case] = {
    "compute-resources-per-queue": (
        lambda s: _fm_queue(s, resources=_resources(51)),
        r"compute_resources must be at most 50 \(ParallelCluster MAX_COMPUTE_RESOURCES_PER_QUEUE\), got 51",
        _cluster(_queue("q", *_raw_crs(51))),
        "Invalid number of ComputeResources per Queue (51) specified. Currently only supports up to 50",
    ),
    "compute-resources-per-cluster": (
        lambda s: _fm_cluster(s, queues=[_fm_queue(s, "a", _resources(26)), _fm_queue(s, "b", _resources(26))]),
        r"MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER\), got 52",
        _cluster(_queue("a", *_raw_crs(26)), _queue("b", *_raw_crs(26))),
        "Invalid number of ComputeResources per Cluster (52) specified. Currently only supports up to 50",
    ),
    "login-pools": (
        lambda s: _fm_cluster(s, login_nodes=_pools(s, [f"l{i}" for i in range(11)])),
        r"login_nodes must be at most 10 \(ParallelCluster MAX_NUMBER_OF_LOGIN_NODE_POOLS\), got 11",
        _cluster(_queue("q", {"Name": "c", **CPU}), LoginNodes=_raw_pools([f"l{i}" for i in range(11)])),
        "Invalid number of LoginNodePools (11) specified. Currently only supports up to 10",
    ),
    "duplicate-login-pool-names": (
        lambda s: _fm_cluster(s, login_nodes=_pools(s, ["login", "login"])),
        r"login_nodes must be login pool names that are unique",
        _cluster(_queue("q", {"Name": "c", **CPU}), LoginNodes=_raw_pools(["login", "login"])),
        "Pool name login must be unique.",
    ),
    "queue-named-default": (
        lambda s: _fm_queue(s, "default"),
        r"^name must be a name other than 'default'",
        _cluster(_queue("default", {"Name": "c", **CPU})),
        "It is forbidden to use 'default' as a name.",
    ),
    "compute-resource-named-default": (
        lambda s: ComputeResource(name="default", instance_type="c7i.large"),
        r"^name must be a name other than 'default'",
        _cluster(_queue("q", {"Name": "default", **CPU})),
        "It is forbidden to use 'default' as a name.",
    ),
    "login-pool-named-default": (
        lambda s: _pools(s, ["default"]),
        r"^name must be a name other than 'default'",
        _cluster(_queue("q", {"Name": "c", **CPU}), LoginNodes=_raw_pools(["default"])),
        "It is forbidden to use 'default' as a name.",
    ),
    "shared-storage-named-default": (
        lambda s: _storage(s, (0, "default", "/fsx")),
        r"^name must be a name other than 'default'",
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "default", "/fsx"))),
        "It is forbidden to use 'default' as a name.",
    ),
    "duplicate-storage-names": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, (0, "fsx", "/fsx"), (1, "fsx", "/data"))),
        r"shared_storage must be shared storage names that are unique",
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "fsx", "/fsx"), (1, "fsx", "/d"))),
        "Shared Storage name fsx must be unique.",
    ),
    "same-file-system-twice": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, (0, "a", "/fsx"), (0, "b", "/data"))),
        r"shared_storage must be file systems that are unique",
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "a", "/fsx"), (0, "b", "/data"))),
        "Shared Storage IDs name fs-0123456789abcde00 must be unique.",
    ),
    "duplicate-mount-dirs": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, (0, "a", "/fsx"), (1, "b", "/fsx"))),
        r"shared_storage must be mount directories that are unique",
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "a", "/fsx"), (1, "b", "/fsx"))),
        "The mount directory `/fsx` is used for multiple shared storage",
    ),
    "overlapping-mount-dirs": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, (0, "a", "/fsx"), (1, "b", "/fsx/data"))),
        r"mount directories that do not contain one another",
        _cluster(
            _queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "a", "/fsx"), (1, "b", "/fsx/data"))
        ),
        "cannot overlap",
    ),
    "mount-dir-inside-the-instance-store": (
        lambda s: _fm_cluster(
            s,
            queues=[_fm_queue(s, "gpu", [ComputeResource(name="p5en", instance_type="p5en.48xlarge", efa=False)])],
            shared_storage=_storage(s, (0, "a", "/scratch/fsx")),
        ),
        r"mount directories that do not contain one another",
        _cluster(
            _queue("gpu", {"Name": "p5en", "InstanceType": "p5en.48xlarge", "MaxCount": 1}),
            SharedStorage=_raw_storage((0, "a", "/scratch/fsx")),
        ),
        "cannot overlap",
    ),
    "too-many-file-systems": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, *_FSX21)),
        r'shared_storage must be at most 20 \(ParallelCluster MAX_EXISTING_STORAGE_COUNT\["fsx"\]\), got 21',
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage(*_FSX21)),
        "Too many existing FSx shared storage specified in the configuration. ParallelCluster supports 20",
    ),
    "head-node-memory": (
        lambda s: _fm_cluster(
            s,
            head="c7i.xlarge",
            queues=[_fm_queue(s, resources=[ComputeResource(name="c", instance_type="c7i.large", max_nodes=200)])],
        ),
        r"^head_node\.instance_type must be a type with at least 8\.6 GiB of memory to manage 200 compute nodes",
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 200}),
            HeadNode={"InstanceType": "c7i.xlarge", **_HEAD},
        ),
        "Head node instance type c7i.xlarge has 8.0 GB of memory. Please choose a head node instance type with at "
        "least 8.6 GB of memory to manage 200 compute nodes.",
    ),
    "head-node-architecture": (
        lambda s: _fm_cluster(
            s,
            queues=[
                _fm_queue(
                    s,
                    "gb200",
                    [ComputeResource(name="nvl72", instance_type="p6e-gb200.36xlarge", capacity=GB200_BLOCK)],
                )
            ],
        ),
        r"^head_node\.instance_type must be an arm64 instance type such as c7g\.2xlarge",
        _cluster(
            _queue("gb200", {"Name": "nvl72", "InstanceType": "p6e-gb200.36xlarge", "MaxCount": 1}),
            HeadNode={"InstanceType": "c7i.2xlarge", **_HEAD},
        ),
        "none of which are compatible with the architecture supported by the head node instance type (x86_64)",
    ),
}


@pytest.fixture(scope="module")
def parallelcluster_results() -> dict[str, dict[str, Any]]:
    results = check_configs([case[2] for case in CASES.values()], offline_validators=True)
    return dict(zip(CASES, results, strict=True))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fmconstructs_refuses_at_construction(name: str) -> None:
    build, message, _, _ = CASES[name]
    with pytest.raises(FmValidationError, match=message):
        build(new_scene())


@pytest.mark.parametrize("name", sorted(CASES))
def test_parallelcluster_refuses_the_same_configuration(parallelcluster_results: Any, name: str) -> None:
    result = parallelcluster_results[name]
    assert not result["ok"], result
    assert CASES[name][3] in error_text(result), result


@pytest.mark.parametrize("mount_dir", [*sorted(RESERVED_MOUNT_DIRS), "opt/slurm", "tmp"])
def test_reserved_mount_directories_are_refused(mount_dir: str) -> None:
    with pytest.raises(
        FmValidationError, match=r"^mount_point must be (a directory other than '/' and the reserved|an absolute path)"
    ):
        _storage(new_scene(), (0, "fsx", mount_dir))


def test_parallelcluster_reserves_the_same_mount_directories() -> None:
    configs = [
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage((0, "fsx", d)))
        for d in [*sorted(RESERVED_MOUNT_DIRS), "opt/slurm", "/opt/data", "/fsx"]
    ]
    *reserved, data, fsx = check_configs(configs, offline_validators=True)
    for result in reserved:
        assert not result["ok"] and "is reserved. Please use another directory" in error_text(result), result
    assert data["ok"] and fsx["ok"], (data, fsx)


# --- boundaries: what both accept -----------------------------------------------------------------------------------

BOUNDARIES: dict[str, tuple[Callable[[Scene], Any], dict[str, Any]]] = {
    "50-compute-resources-in-one-queue": (
        lambda s: _fm_cluster(s, queues=[_fm_queue(s, resources=_resources(50))]),
        _cluster(_queue("q", *_raw_crs(50))),
    ),
    "10-login-pools": (
        lambda s: _fm_cluster(s, login_nodes=_pools(s, [f"l{i}" for i in range(10)])),
        _cluster(_queue("q", {"Name": "c", **CPU}), LoginNodes=_raw_pools([f"l{i}" for i in range(10)])),
    ),
    "20-file-systems": (
        lambda s: _fm_cluster(s, shared_storage=_storage(s, *_FSX21[:20])),
        _cluster(_queue("q", {"Name": "c", **CPU}), SharedStorage=_raw_storage(*_FSX21[:20])),
    ),
    "c7i.xlarge-head-for-185-nodes": (
        lambda s: _fm_cluster(
            s,
            head="c7i.xlarge",
            queues=[_fm_queue(s, resources=[ComputeResource(name="c", instance_type="c7i.large", max_nodes=185)])],
        ),
        _cluster(
            _queue("q", {"Name": "c", "InstanceType": "c7i.large", "MaxCount": 185}),
            HeadNode={"InstanceType": "c7i.xlarge", **_HEAD},
        ),
    ),
    "graviton-head-beside-gb200": (
        lambda s: _fm_cluster(
            s,
            head="c7g.2xlarge",
            queues=[
                _fm_queue(
                    s,
                    "gb200",
                    [ComputeResource(name="nvl72", instance_type="p6e-gb200.36xlarge", capacity=GB200_BLOCK)],
                )
            ],
        ),
        _cluster(
            _queue("gb200", {"Name": "nvl72", "InstanceType": "p6e-gb200.36xlarge", "MaxCount": 1}),
            HeadNode={"InstanceType": "c7g.2xlarge", **_HEAD},
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(BOUNDARIES))
def test_both_accept_the_boundaries(name: str) -> None:
    build, raw = BOUNDARIES[name]
    build(new_scene())
    (result,) = check_configs([raw], offline_validators=True)
    assert result["ok"], result


@pytest.mark.parametrize(("nodes", "gib"), [(0, 0.6), (25, 1.6), (185, 8.0), (400, 16), (10_000, 16)])
def test_head_node_memory_rule(nodes: int, gib: float) -> None:
    assert required_head_node_memory_gib(nodes) == pytest.approx(gib)
