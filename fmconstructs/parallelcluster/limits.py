"""What ParallelCluster's own configuration validators refuse, refused at construction.

Every limit is aws-parallelcluster 3.16.1's (PyPI; the same files as aws/aws-parallelcluster ``cli/src/pcluster/``):
``constants.py`` for the numbers, ``validators/cluster_validators.py`` for the rules, ``config/cluster_config.py`` for
where each validator is registered (and so what it is given). ``tools/pcluster_validate.py --offline-validators`` runs
the same validators on the generated configuration (tests/parallelcluster/test_parallelcluster_validators.py). The
rules that apply
these facts to several options at once are in :mod:`fmconstructs.parallelcluster.rules`.

Head and login node facts: ParallelCluster reads the head node's architecture and memory from EC2
(``HeadNode.architecture`` = ``DescribeInstanceTypes`` ``ProcessorInfo.SupportedArchitectures[0]``,
``HeadNodeMemorySizeValidator`` ``MemoryInfo.SizeInMiB``). fmconstructs knows them for the GPU catalog's types
(:mod:`fmconstructs.catalog`) and for the few head/login node types below (:data:`NODE_TYPE_FACTS`); for any other
type the architecture and memory checks are skipped (ParallelCluster still runs them at create time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._validate import known
from ..catalog import CATALOG, CpuArchitecture
from ..errors import FmValidationError

# constants.py: MAX_NUMBER_OF_QUEUES = 50, MAX_NUMBER_OF_LOGIN_NODE_POOLS = 10,
# MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER = MAX_COMPUTE_RESOURCES_PER_QUEUE = 50 (MaxCountValidator, registered
# by SlurmScheduling, SlurmQueue and SlurmClusterConfig._register_login_node_validators in cluster_config.py).
MAX_NUMBER_OF_QUEUES = 50
MAX_NUMBER_OF_LOGIN_NODE_POOLS = 10
MAX_COMPUTE_RESOURCES_PER_QUEUE = 50
MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER = 50
# constants.py MAX_EXISTING_STORAGE_COUNT["fsx"] = 20 (NumberOfStorageValidator "existing FSx").
MAX_EXISTING_FSX = 20
# cluster_validators.py NameValidator (queues, compute resources, login pools) and SharedStorageNameValidator:
# re.match("^default$", name) -> "It is forbidden to use 'default' as a name."
FORBIDDEN_NAME = "default"
# cluster_validators.py SharedStorageMountDirValidator reserved_directories (compared after prefixing a missing "/").
RESERVED_MOUNT_DIRS = frozenset(
    {
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib64",
        "/media",
        "/mnt",
        "/opt",
        "/opt/parallelcluster",
        "/opt/parallelcluster/shared",
        "/opt/parallelcluster/shared_login_nodes",
        "/opt/slurm",
        "/opt/intel",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",  # nosec B108: a reserved name compared against, not a temporary file
        "/usr",
        "/var",
    }
)
# constants.py DEFAULT_EPHEMERAL_DIR: where instance store volumes are mounted unless LocalStorage.EphemeralVolume says
# otherwise (cluster_config.py local_mount_dir_instance_types_dict), checked by OverlappingMountDirValidator.
DEFAULT_EPHEMERAL_DIR = "/scratch"


@dataclass(frozen=True)
class NodeTypeFacts:
    """``ProcessorInfo.SupportedArchitectures[0]`` and ``MemoryInfo.SizeInMiB`` of a head or login node type."""

    architecture: CpuArchitecture
    memory_mib: int


#: Head and login node types whose facts fmconstructs holds (EC2 DescribeInstanceTypes: ProcessorInfo.
#: SupportedArchitectures and MemoryInfo.SizeInMiB; tests/parallelcluster/test_parallelcluster_gb200_head.py checks
#: each against the
#: data moto bundles from that API). c7g/m7g are AWS Graviton3 (arm64) types of the same sizes as c7i/m7i.
NODE_TYPE_FACTS: dict[str, NodeTypeFacts] = {
    "c7i.xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 8192),
    "c7i.2xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 16384),
    "c7i.4xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 32768),
    "m7i.2xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 32768),
    "m7i.4xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 65536),
    "m7i.8xlarge": NodeTypeFacts(CpuArchitecture.X86_64, 131072),
    "c7g.xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 8192),
    "c7g.2xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 16384),
    "c7g.4xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 32768),
    "m7g.2xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 32768),
    "m7g.4xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 65536),
    "m7g.8xlarge": NodeTypeFacts(CpuArchitecture.ARM64, 131072),
}
#: The default head node type for compute nodes of each architecture (8 vCPUs, 16 GiB: enough memory for 384 compute
#: nodes by HeadNodeMemorySizeValidator's rule).
HEAD_NODE_TYPE_BY_ARCHITECTURE = {CpuArchitecture.X86_64: "c7i.2xlarge", CpuArchitecture.ARM64: "c7g.2xlarge"}
#: The default login node type for compute nodes of each architecture (one architecture for every node, so one
#: ``Image.CustomAmi`` serves them all).
LOGIN_NODE_TYPE_BY_ARCHITECTURE = {CpuArchitecture.X86_64: "c7i.xlarge", CpuArchitecture.ARM64: "c7g.xlarge"}


def node_type_facts(instance_type: str) -> NodeTypeFacts | None:
    """Architecture and memory of ``instance_type`` from the GPU catalog or :data:`NODE_TYPE_FACTS`, else None."""
    if not isinstance(instance_type, str) or not known(instance_type):
        return None
    if instance_type in CATALOG:
        spec = CATALOG.get(instance_type)
        return NodeTypeFacts(spec.architecture, spec.memory_mib)
    return NODE_TYPE_FACTS.get(instance_type)


def head_node_instance_type_for(architecture: CpuArchitecture) -> str:
    """The default head node type for compute nodes of ``architecture`` (``c7i.2xlarge`` / Graviton ``c7g.2xlarge``):
    ParallelCluster's InstanceArchitectureCompatibilityValidator refuses a head node of another architecture."""
    return HEAD_NODE_TYPE_BY_ARCHITECTURE[CpuArchitecture(architecture)]


def login_node_instance_type_for(architecture: CpuArchitecture) -> str:
    """The default login node type for compute nodes of ``architecture`` (``c7i.xlarge`` / ``c7g.xlarge``)."""
    return LOGIN_NODE_TYPE_BY_ARCHITECTURE[CpuArchitecture(architecture)]


def required_head_node_memory_gib(total_max_compute_nodes: float) -> float:
    """cluster_validators.py HeadNodeMemorySizeValidator: ``min(total_max_compute_nodes / 25 + 0.6, 16)`` GiB
    ("Assume OS takes up 0.6GB memory. Only check upto 16GB memory")."""
    return min(total_max_compute_nodes / 25 + 0.6, 16)


def check_name_not_default(parameter: str, name: str) -> None:
    if known(name) and name == FORBIDDEN_NAME:
        raise FmValidationError(
            parameter, name, "a name other than 'default' (ParallelCluster NameValidator: a forbidden name)"
        )


def check_mount_dir_not_reserved(parameter: str, mount_dir: str) -> None:
    if not known(mount_dir):
        return
    absolute = mount_dir if mount_dir.startswith("/") else "/" + mount_dir
    if absolute in RESERVED_MOUNT_DIRS:
        raise FmValidationError(
            parameter,
            mount_dir,
            "a directory ParallelCluster does not reserve (SharedStorageMountDirValidator reserves "
            + ", ".join(sorted(RESERVED_MOUNT_DIRS))
            + ")",
        )


def _count(parameter: str, count: int, maximum: int, constant: str) -> None:
    if count > maximum:
        raise FmValidationError(parameter, count, f"at most {maximum} (ParallelCluster {constant})")


def check_queue_limits(compute_resources: Sequence[Any]) -> None:
    """SlurmQueue._register_validators: at most MAX_COMPUTE_RESOURCES_PER_QUEUE compute resources."""
    _count(
        "compute_resources", len(compute_resources), MAX_COMPUTE_RESOURCES_PER_QUEUE, "MAX_COMPUTE_RESOURCES_PER_QUEUE"
    )
