"""Networking: EFA interface layout per instance type, the EFA security group, placement groups, VPC endpoints."""

from .endpoints import ClusterBackend, EndpointService, GpuClusterEndpoints, services_for
from .interfaces import EfaCardSelection, InterfaceLayout, InterfacePolicy, PlannedInterface, plan_network_interfaces
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
