"""ParallelCluster's cross-property rules: pure functions named for what they check (:mod:`fmconstructs._rules`).

Each takes plain values (counts, names, instance types, :class:`~fmconstructs.parallelcluster.ComputeResource` and
the other configuration dataclasses, never a construct or a scope), raises
:class:`~fmconstructs.errors.FmValidationError` (hard rules) or returns an :class:`~fmconstructs._rules.Advice` (soft
rules). The constructors and the configuration dataclasses call them; the facts they apply (ParallelCluster's limits,
head and login node types) are in :mod:`fmconstructs.parallelcluster.limits`, capacity rules shared with the other
backends in :mod:`fmconstructs.capacity`.

Sources: aws-parallelcluster 3.16.1 (PyPI; the same files as aws/aws-parallelcluster ``cli/src/pcluster/``):
``validators/cluster_validators.py``, ``validators/ec2_validators.py``, ``constants.py``; named at each rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._rules import Advice
from .._validate import known
from ..capacity import Capacity, ReservationTargetForm, UltraServerCapacityBlock
from ..catalog import InstanceSpec, efa_max_interfaces
from ..errors import FmValidationError, WarningId
from .limits import (
    DEFAULT_EPHEMERAL_DIR,
    MAX_EXISTING_FSX,
    MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER,
    MAX_NUMBER_OF_LOGIN_NODE_POOLS,
    MAX_NUMBER_OF_QUEUES,
    _count,
    head_node_instance_type_for,
    node_type_facts,
    required_head_node_memory_gib,
)

if TYPE_CHECKING:
    from .config import ComputeResource, HeadNode, LoginNodePool, OperatingSystem, SharedLustre, SlurmQueue

__all__ = [
    "block_reservation_is_targeted_by_id",
    "capacity_block_needs_a_catalog_type",
    "capacity_matches_the_queue_type",
    "check_cluster_limits",
    "cluster_counts_fit_parallelcluster",
    "compute_resource_names_are_distinct",
    "compute_types_share_the_head_architecture",
    "efa_needs_an_efa_type",
    "head_node_memory_fits_the_compute_nodes",
    "min_nodes_at_most_max_nodes",
    "mount_dirs_do_not_overlap",
    "p6e_gb200_needs_a_supported_os",
    "placement_group_on_capacity_block",
    "queue_names_are_distinct",
    "shared_storage_is_distinct",
    "ultraserver_block_holds_one_ultraserver",
    "ultraservers_need_version_3_14",
]

# ParallelCluster User Guide "support-nvidia-imex-p6e-gb200-instance": version 3.14.0 installs the NVIDIA stack
# (driver, CUDA, EFA, IMEX) for p6e-gb200, writes the nvidia-imex configuration, starts nvidia-imex and makes each
# UltraServer (one Capacity Block) a Slurm topology block.
ULTRASERVER_MIN_VERSION = (3, 14, 0)
#: A ParallelCluster 3 version (``ParallelCluster(version=)``).
VERSION_PATTERN = re.compile(r"3\.\d+\.\d+")


# --- one compute resource ---------------------------------------------------------------------------------------------
def min_nodes_at_most_max_nodes(min_nodes: Any, max_nodes: Any) -> None:
    """ComputeResourceSizeValidator: "Max count must be greater than or equal to min count." (when both are known)."""
    if known(min_nodes) and known(max_nodes) and min_nodes > max_nodes:
        raise FmValidationError("min_nodes", min_nodes, f"at most max_nodes ({max_nodes})")


def capacity_block_needs_a_catalog_type(capacity: Capacity, instance_type: str, spec: InstanceSpec | None) -> None:
    """A Capacity Block's rules (fixed size, the block's type) need the type's catalog facts."""
    if capacity.is_capacity_block and spec is None and known(instance_type):
        raise FmValidationError("instance_type", instance_type, "a catalog instance type on a Capacity Block")


def efa_needs_an_efa_type(efa: bool | None, instance_type: str) -> None:
    """``Efa.Enabled`` only on a type that takes EFA (catalog, else EC2 DescribeInstanceTypes data)."""
    if efa and efa_max_interfaces(instance_type) == 0:
        raise FmValidationError("efa", efa, f"False for {instance_type} (it takes no EFA interface)")


def ultraserver_block_holds_one_ultraserver(capacity: Capacity) -> None:
    """UltraserverCapacityBlockSizeValidator (validators/ec2_validators.py): an UltraServer block's TotalCapacity
    must be in ULTRASERVER_CAPACITY_BLOCK_ALLOWED_SIZE_DICT (p6e-gb200: 9 or 18 instances, i.e. one u-p6e-gb200x36 or
    one u-p6e-gb200x72 per the catalog): one UltraServer per block."""
    if (
        isinstance(capacity, UltraServerCapacityBlock)
        and known(capacity.ultraserver_count)
        and capacity.ultraserver_count != 1
    ):
        raise FmValidationError(
            "capacity.ultraserver_count",
            capacity.ultraserver_count,
            "1 for ParallelCluster (a block of one UltraServer: 9 or 18 instances; ParallelCluster "
            "UltraserverCapacityBlockSizeValidator); give each UltraServer block its own compute resource",
        )


def block_reservation_is_targeted_by_id(capacity: Capacity) -> None:
    """CapacityReservationTarget needs the id on blocks (ec2_validators.py CapacityReservationValidator)."""
    if capacity.reservation_target_forms:
        form = ReservationTargetForm.RESERVATION_ID if capacity.is_capacity_block else None
        capacity.reservation_target(form, consumer="ParallelCluster (CapacityType CAPACITY_BLOCK)")


# --- one queue --------------------------------------------------------------------------------------------------------
def compute_resource_names_are_distinct(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        raise FmValidationError("compute_resources", list(names), "compute resources with distinct names")


def capacity_matches_the_queue_type(index: int, capacity: Capacity, *, block_queue: bool, kind: str) -> None:
    """``CapacityType`` is per queue: compute resource ``index`` of a CAPACITY_BLOCK queue (``block_queue``) is on a
    Capacity Block, of any other queue not. ``kind`` is the queue's CapacityType value (for the message)."""
    block = capacity.is_capacity_block
    if block != block_queue:
        raise FmValidationError(
            f"compute_resources[{index}].capacity",
            type(capacity).__name__,
            f"{'a Capacity Block' if not block else 'not a Capacity Block'} in a {kind} queue "
            "(CapacityType is per queue)",
        )


# --- the cluster ------------------------------------------------------------------------------------------------------
def queue_names_are_distinct(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        raise FmValidationError("queues", list(names), "queues with distinct names")


def p6e_gb200_needs_a_supported_os(resources: Iterable[ComputeResource], os: OperatingSystem) -> None:
    """ec2_validators.py refuses constants.py UNSUPPORTED_OSES_FOR_P6E_GB200 on p6e-gb200."""
    from .config import UNSUPPORTED_OSES_FOR_P6E_GB200, OperatingSystem

    for resource in resources:
        spec = resource.spec
        if spec is not None and spec.family == "p6e-gb200" and os in UNSUPPORTED_OSES_FOR_P6E_GB200:
            allowed = [o.value for o in OperatingSystem if o not in UNSUPPORTED_OSES_FOR_P6E_GB200]
            raise FmValidationError(
                "os", os.value, f"one of {', '.join(allowed)} for {spec.instance_type} (ParallelCluster 3.16.1)"
            )


def ultraservers_need_version_3_14(resources: Iterable[ComputeResource], version: str) -> None:
    """UltraServer types need ParallelCluster 3.14.0 or later (:data:`ULTRASERVER_MIN_VERSION`; a version that is not
    a known ``3.x.y`` is left to the version's own check)."""
    if not known(version) or not VERSION_PATTERN.fullmatch(version):
        return
    parsed = tuple(int(part) for part in version.split("."))
    for resource in resources:
        spec = resource.spec
        if spec is not None and spec.ultraserver_types and parsed < ULTRASERVER_MIN_VERSION:
            raise FmValidationError(
                "version",
                version,
                f"3.14.0 or later for {spec.instance_type} (UltraServer support: ParallelCluster User Guide "
                "support-nvidia-imex-p6e-gb200-instance)",
            )


def placement_group_on_capacity_block(queue_name: str, resource: ComputeResource) -> Advice | None:
    """validators/ec2_validators.py PlacementGroupCapacityTypeValidator (a WARNING in ParallelCluster)."""
    if not (resource.capacity.is_capacity_block and resource.placement_group is True):
        return None
    return Advice(
        WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK,
        f"queue {queue_name} compute resource {resource.name} sets a placement group on a Capacity "
        "Block: insufficient capacity errors may occur from placement constraints outside the "
        "reservation (ParallelCluster PlacementGroupCapacityTypeValidator); blocks are placed in "
        "UltraClusters already",
    )


def _distinct(parameter: str, values: Sequence[Any], what: str) -> None:
    seen = [v for v in values if known(v)]
    duplicates = sorted({str(v) for v in seen if seen.count(v) > 1})
    if duplicates:
        raise FmValidationError(
            parameter,
            duplicates,
            f"{what} that are unique (ParallelCluster DuplicateNameValidator / DuplicateMountDirValidator)",
        )


def cluster_counts_fit_parallelcluster(
    *, queues: int, compute_resources: int, login_pools: int, login_pool_names: Sequence[str]
) -> None:
    """MaxCountValidator (queues, compute resources of all queues, login pools) and DuplicateNameValidator (pools)."""
    _count("queues", queues, MAX_NUMBER_OF_QUEUES, "MAX_NUMBER_OF_QUEUES")
    _count(
        "queues (compute resources in all queues)",
        compute_resources,
        MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER,
        "MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER",
    )
    _count("login_nodes", login_pools, MAX_NUMBER_OF_LOGIN_NODE_POOLS, "MAX_NUMBER_OF_LOGIN_NODE_POOLS")
    _distinct("login_nodes", login_pool_names, "login pool names")


def shared_storage_is_distinct(names: Sequence[str], file_systems: Sequence[str], mount_dirs: Sequence[str]) -> None:
    """DuplicateNameValidator (names; "Shared Storage IDs": one file system mounted twice), DuplicateMountDirValidator
    and NumberOfStorageValidator (constants.py MAX_EXISTING_STORAGE_COUNT["fsx"])."""
    _distinct("shared_storage", names, "shared storage names")
    _distinct("shared_storage", file_systems, "file systems")
    _distinct("shared_storage", mount_dirs, "mount directories")
    _count("shared_storage", len(names), MAX_EXISTING_FSX, 'MAX_EXISTING_STORAGE_COUNT["fsx"]')


def mount_dirs_do_not_overlap(mount_dirs: Sequence[str], instance_storage: bool) -> None:
    """cluster_validators.py _find_overlapping_paths: every pair of shared directories and every (shared, local) pair
    (local: :data:`~fmconstructs.parallelcluster.limits.DEFAULT_EPHEMERAL_DIR` when a compute type has instance
    storage); two directories overlap when one starts with the other + "/" (OverlappingMountDirValidator, an ERROR)."""
    shared = [d for d in mount_dirs if known(d)]
    local = [DEFAULT_EPHEMERAL_DIR] if instance_storage else []
    pairs = [(a, b) for i, a in enumerate(shared) for b in shared[i + 1 :]] + [(a, b) for a in shared for b in local]
    for first, second in pairs:
        if first.startswith(second + "/") or second.startswith(first + "/"):
            raise FmValidationError(
                "shared_storage (mount_point)",
                [first, second],
                "mount directories that do not contain one another (ParallelCluster OverlappingMountDirValidator; "
                f"{DEFAULT_EPHEMERAL_DIR} holds the instance store volumes of the compute nodes)",
            )


def compute_types_share_the_head_architecture(
    head_instance_type: str, resources: Iterable[tuple[str, ComputeResource]]
) -> None:
    """cluster_validators.py InstanceArchitectureCompatibilityValidator (registered for every compute resource with
    ``architecture=self.head_node.architecture``): each compute type (``resources``: queue name and compute resource)
    must support the head node's architecture."""
    head = node_type_facts(head_instance_type)
    if head is None:
        return
    for queue_name, resource in resources:
        compute = node_type_facts(resource.instance_type)
        if compute is None or compute.architecture is head.architecture:
            continue
        raise FmValidationError(
            "head_node.instance_type",
            head_instance_type,
            f"an {compute.architecture.value} instance type such as "
            f"{head_node_instance_type_for(compute.architecture)}: queue {queue_name} compute resource "
            f"{resource.name} is {resource.instance_type} ({compute.architecture.value}) and ParallelCluster "
            "refuses compute types without the head node's architecture "
            f"(InstanceArchitectureCompatibilityValidator; {head_instance_type} is "
            f"{head.architecture.value})",
        )


def head_node_memory_fits_the_compute_nodes(head_instance_type: str, max_nodes: Sequence[Any]) -> None:
    """cluster_validators.py HeadNodeMemorySizeValidator, given every compute resource's MaxCount."""
    head = node_type_facts(head_instance_type)
    if head is None or not all(known(c) for c in max_nodes):
        return
    total = sum(max_nodes)
    required = required_head_node_memory_gib(total)
    memory_gib = head.memory_mib / 1024
    if memory_gib < required:
        raise FmValidationError(
            "head_node.instance_type",
            head_instance_type,
            f"a type with at least {required:g} GiB of memory to manage {total:g} compute nodes "
            f"({head_instance_type} has {memory_gib:g} GiB; ParallelCluster HeadNodeMemorySizeValidator: "
            "min(nodes / 25 + 0.6, 16) GiB)",
        )


def check_cluster_limits(
    *,
    head_node: HeadNode,
    queues: Sequence[SlurmQueue],
    login_nodes: Sequence[LoginNodePool],
    shared_storage: Sequence[SharedLustre],
) -> None:
    """The cluster-level rules of ParallelCluster's validators that need no AWS call, in the order they always ran."""
    resources = [(queue.name, resource) for queue in queues for resource in queue.compute_resources]
    cluster_counts_fit_parallelcluster(
        queues=len(queues),
        compute_resources=len(resources),
        login_pools=len(login_nodes),
        login_pool_names=[pool.name for pool in login_nodes],
    )
    shared_storage_is_distinct(
        [s.name for s in shared_storage],
        [
            s.file_system.file_system_id if known(s.file_system.file_system_id) else s.file_system.node.path
            for s in shared_storage
        ],
        [s.mount_point for s in shared_storage],
    )
    instance_storage = any(r.spec is not None and r.spec.instance_store is not None for _, r in resources)
    mount_dirs_do_not_overlap([s.mount_point for s in shared_storage], instance_storage)
    compute_types_share_the_head_architecture(head_node.instance_type, resources)
    head_node_memory_fits_the_compute_nodes(head_node.instance_type, [r.resolved_max_nodes for _, r in resources])
