"""Networking: EFA interface layout per instance type, the EFA security group, placement groups, VPC endpoints."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .endpoints import ClusterBackend, EndpointService, GpuClusterEndpoints, services_for
    from .interfaces import (
        EfaCardSelection,
        InterfaceLayout,
        InterfacePolicy,
        PlannedInterface,
        plan_network_interfaces,
    )
    from .placement_group import ClusterPlacementGroup, PlacementStrategy
    from .security_group import EfaSecurityGroup

__all__ = [
    "ClusterBackend",
    "ClusterPlacementGroup",
    "EfaCardSelection",
    "EfaSecurityGroup",
    "EndpointService",
    "GpuClusterEndpoints",
    "InterfaceLayout",
    "InterfacePolicy",
    "PlacementStrategy",
    "PlannedInterface",
    "plan_network_interfaces",
    "services_for",
]

# Lazy (PEP 562): each name is imported from its submodule on first use, so that the light modules (catalog,
# networking.interfaces, storage.sizing) import without aws_cdk, which starts Node.js (see fmconstructs._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    ".endpoints": (
        "ClusterBackend",
        "EndpointService",
        "GpuClusterEndpoints",
        "services_for",
    ),
    ".interfaces": (
        "EfaCardSelection",
        "InterfaceLayout",
        "InterfacePolicy",
        "PlannedInterface",
        "plan_network_interfaces",
    ),
    ".placement_group": (
        "ClusterPlacementGroup",
        "PlacementStrategy",
    ),
    ".security_group": ("EfaSecurityGroup",),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
