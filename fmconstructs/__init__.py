"""fmconstructs: AWS CDK v2 constructs for the infrastructure that trains and serves foundation models.

Layout: ``catalog`` (instance facts) -> ``networking`` (EFA layout, security group, placement group) and
``capacity`` (On-Demand, ODCR, Capacity Blocks) -> ``compute`` (launch template, fleet) -> ``storage`` (FSx for
Lustre, S3 links, client mounts) -> ``observability``.
"""

from .capacity import (
    Capacity,
    CapacityBlock,
    CapacityKind,
    CapacityReservation,
    OnDemand,
    UltraServerCapacityBlock,
    pinned_availability_zone,
)
from .catalog import (
    BUILTIN_INSTANCE_TYPES,
    CATALOG,
    ULTRASERVERS,
    CpuArchitecture,
    EksAmiType,
    GpuSpec,
    InstanceCatalog,
    InstanceSpec,
    InstanceStoreSpec,
    InterfaceType,
    NetworkCardSpec,
    UltraServerSpec,
    get_instance_spec,
    get_ultraserver,
    register_instance_type,
)
from .compute import GpuAutoScalingGroup, GpuLaunchTemplate, nvme_raid_commands
from .errors import FmValidationError, WarningId
from .networking import (
    ClusterPlacementGroup,
    EfaSecurityGroup,
    InterfaceLayout,
    InterfacePolicy,
    PlacementStrategy,
    PlannedInterface,
    plan_network_interfaces,
)
from .storage import (
    DEFAULT_LAYOUT,
    DataRepositoryAssociation,
    DataRepositoryBucket,
    DataRepositoryEvent,
    DataRepositoryLink,
    EksStaticVolume,
    LustreDataCompression,
    LustreDeploymentType,
    LustreFileSystem,
    LustreLogLevel,
    LustreMetadataConfiguration,
    LustreSizing,
    size_for_checkpoint,
    size_for_throughput,
)

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_INSTANCE_TYPES",
    "CATALOG",
    "DEFAULT_LAYOUT",
    "ULTRASERVERS",
    "Capacity",
    "CapacityBlock",
    "CapacityKind",
    "CapacityReservation",
    "ClusterPlacementGroup",
    "CpuArchitecture",
    "DataRepositoryAssociation",
    "DataRepositoryBucket",
    "DataRepositoryEvent",
    "DataRepositoryLink",
    "EfaSecurityGroup",
    "EksAmiType",
    "EksStaticVolume",
    "FmValidationError",
    "GpuAutoScalingGroup",
    "GpuLaunchTemplate",
    "GpuSpec",
    "InstanceCatalog",
    "InstanceSpec",
    "InstanceStoreSpec",
    "InterfaceLayout",
    "InterfacePolicy",
    "InterfaceType",
    "LustreDataCompression",
    "LustreDeploymentType",
    "LustreFileSystem",
    "LustreLogLevel",
    "LustreMetadataConfiguration",
    "LustreSizing",
    "NetworkCardSpec",
    "OnDemand",
    "PlacementStrategy",
    "PlannedInterface",
    "UltraServerCapacityBlock",
    "UltraServerSpec",
    "WarningId",
    "get_instance_spec",
    "get_ultraserver",
    "nvme_raid_commands",
    "pinned_availability_zone",
    "plan_network_interfaces",
    "register_instance_type",
    "size_for_checkpoint",
    "size_for_throughput",
]
