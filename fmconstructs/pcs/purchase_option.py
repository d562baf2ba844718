"""Capacity -> PCS purchase option (``CreateComputeNodeGroup.purchaseOption``) for GPU node groups.

On-Demand -> ONDEMAND (or SPOT with ``spot=True``), a targeted ODCR -> ONDEMAND (the launch template targets the
reservation), a Capacity Block or an UltraServer Capacity Block -> CAPACITY_BLOCK, an interruptible Capacity
Reservation -> INTERRUPTIBLE_CAPACITY_RESERVATION (see :mod:`.node_group` for the sources).
"""

from __future__ import annotations

from .._validate import check_bool
from ..capacity import Capacity, CapacityKind
from ..errors import FmValidationError
from ._node_group_checks import _check_capacity
from .slurm import PurchaseOption


def purchase_option_for(capacity: Capacity, *, spot: bool = False) -> PurchaseOption:
    """The PCS purchase option for a capacity choice; SPOT only on plain On-Demand capacity."""
    _check_capacity("capacity", capacity)
    check_bool("spot", spot)
    if capacity.is_capacity_block:
        option = PurchaseOption.CAPACITY_BLOCK
    elif capacity.kind is CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION:
        # PCS User Guide capacity-reservations-iodcr: "Set the purchaseOption of the compute node group to
        # INTERRUPTIBLE_CAPACITY_RESERVATION"; the launch template carries the market type and the reservation id.
        option = PurchaseOption.INTERRUPTIBLE_CAPACITY_RESERVATION
    else:
        option = PurchaseOption.SPOT if spot else PurchaseOption.ONDEMAND
    if spot and capacity.kind is not CapacityKind.ON_DEMAND:
        raise FmValidationError(
            "spot", spot, f"False on a {capacity.kind.value} (Spot applies to On-Demand capacity only)"
        )
    return option
