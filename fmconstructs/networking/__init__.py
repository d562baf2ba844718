"""EFA networking: interface layout per instance type, the EFA security group, placement groups."""

from .interfaces import EfaCardSelection, InterfaceLayout, InterfacePolicy, PlannedInterface, plan_network_interfaces
from .placement_group import ClusterPlacementGroup, PlacementStrategy
from .security_group import EfaSecurityGroup

__all__ = [
    "ClusterPlacementGroup",
    "EfaCardSelection",
    "EfaSecurityGroup",
    "InterfaceLayout",
    "InterfacePolicy",
    "PlacementStrategy",
    "PlannedInterface",
    "plan_network_interfaces",
]
