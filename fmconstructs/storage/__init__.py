"""Storage: FSx for Lustre file systems linked to S3, sized for GPU clusters.

``lustre`` (the file system construct), ``sizing`` (capacity/throughput rules and the sizing helper),
``data_repository`` (S3 links and a secure bucket), ``client`` (node-side mount steps, EKS static volume attributes).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .access_logs import server_access_logs_bucket
    from .client import (
        DEFAULT_MOUNT_OPTIONS,
        FSX_CSI_DRIVER,
        LNET_EFA_UNIT,
        LUSTRE_MOUNT_SCRIPT_PATH,
        EksStaticVolume,
        lustre_efa_interfaces,
        lustre_lnet_commands,
        lustre_mount_command,
        lustre_mount_commands,
        lustre_mount_script,
    )
    from .data_repository import (
        ALL_EVENTS,
        CHECKPOINTS_LINK,
        DATASETS_LINK,
        DEFAULT_LAYOUT,
        MAX_DATA_REPOSITORIES,
        DataRepositoryAssociation,
        DataRepositoryAssociationOptions,
        DataRepositoryBucket,
        DataRepositoryEvent,
        DataRepositoryLink,
    )
    from .lustre import (
        LUSTRE_VERSION,
        EfaClientGroup,
        LustreConnections,
        LustreDataCompression,
        LustreFileSystem,
        LustreFileSystemBase,
        LustreLogLevel,
        LustreMetadataConfiguration,
        LustreMetadataMode,
        lustre_ports,
    )
    from .lustre_clients import LustreClientPlan, LustreClientSteps, apply_lustre_client_plan, plan_lustre_client
    from .lustre_mount import LustreMount
    from .sizing import (
        EFA_CAPACITY_MULTIPLE_GIB,
        GIB_PER_TIB,
        MAX_EFA_CONNECTIONS,
        SCRATCH_BASELINE_MBPS_PER_TIB,
        THROUGHPUT_MBPS_PER_TIB,
        LustreDeploymentType,
        LustreSizing,
        aggregate_throughput_mbps,
        is_valid_capacity,
        next_valid_capacity_gib,
        size_for_checkpoint,
        size_for_throughput,
    )

__all__ = [
    "ALL_EVENTS",
    "CHECKPOINTS_LINK",
    "DATASETS_LINK",
    "DEFAULT_LAYOUT",
    "DEFAULT_MOUNT_OPTIONS",
    "EFA_CAPACITY_MULTIPLE_GIB",
    "FSX_CSI_DRIVER",
    "GIB_PER_TIB",
    "LNET_EFA_UNIT",
    "LUSTRE_MOUNT_SCRIPT_PATH",
    "LUSTRE_VERSION",
    "MAX_DATA_REPOSITORIES",
    "MAX_EFA_CONNECTIONS",
    "SCRATCH_BASELINE_MBPS_PER_TIB",
    "THROUGHPUT_MBPS_PER_TIB",
    "DataRepositoryAssociation",
    "DataRepositoryAssociationOptions",
    "DataRepositoryBucket",
    "DataRepositoryEvent",
    "DataRepositoryLink",
    "EfaClientGroup",
    "EksStaticVolume",
    "LustreClientPlan",
    "LustreClientSteps",
    "LustreConnections",
    "LustreDataCompression",
    "LustreDeploymentType",
    "LustreFileSystem",
    "LustreFileSystemBase",
    "LustreLogLevel",
    "LustreMetadataConfiguration",
    "LustreMetadataMode",
    "LustreMount",
    "LustreSizing",
    "aggregate_throughput_mbps",
    "apply_lustre_client_plan",
    "is_valid_capacity",
    "lustre_efa_interfaces",
    "lustre_lnet_commands",
    "lustre_mount_command",
    "lustre_mount_commands",
    "lustre_mount_script",
    "lustre_ports",
    "next_valid_capacity_gib",
    "plan_lustre_client",
    "server_access_logs_bucket",
    "size_for_checkpoint",
    "size_for_throughput",
]

# Lazy (PEP 562): each name is imported from its submodule on first use, so that the light modules (catalog,
# networking.interfaces, storage.sizing) import without aws_cdk, which starts Node.js (see fmconstructs._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    ".access_logs": ("server_access_logs_bucket",),
    ".client": (
        "DEFAULT_MOUNT_OPTIONS",
        "FSX_CSI_DRIVER",
        "LNET_EFA_UNIT",
        "LUSTRE_MOUNT_SCRIPT_PATH",
        "EksStaticVolume",
        "lustre_efa_interfaces",
        "lustre_lnet_commands",
        "lustre_mount_command",
        "lustre_mount_commands",
        "lustre_mount_script",
    ),
    ".data_repository": (
        "ALL_EVENTS",
        "CHECKPOINTS_LINK",
        "DATASETS_LINK",
        "DEFAULT_LAYOUT",
        "MAX_DATA_REPOSITORIES",
        "DataRepositoryAssociation",
        "DataRepositoryAssociationOptions",
        "DataRepositoryBucket",
        "DataRepositoryEvent",
        "DataRepositoryLink",
    ),
    ".lustre": (
        "LUSTRE_VERSION",
        "EfaClientGroup",
        "LustreConnections",
        "LustreDataCompression",
        "LustreFileSystem",
        "LustreFileSystemBase",
        "LustreLogLevel",
        "LustreMetadataConfiguration",
        "LustreMetadataMode",
        "lustre_ports",
    ),
    ".lustre_clients": ("LustreClientPlan", "LustreClientSteps", "apply_lustre_client_plan", "plan_lustre_client"),
    ".lustre_mount": ("LustreMount",),
    ".sizing": (
        "EFA_CAPACITY_MULTIPLE_GIB",
        "GIB_PER_TIB",
        "MAX_EFA_CONNECTIONS",
        "SCRATCH_BASELINE_MBPS_PER_TIB",
        "THROUGHPUT_MBPS_PER_TIB",
        "LustreDeploymentType",
        "LustreSizing",
        "aggregate_throughput_mbps",
        "is_valid_capacity",
        "next_valid_capacity_gib",
        "size_for_checkpoint",
        "size_for_throughput",
    ),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
