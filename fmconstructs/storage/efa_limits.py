"""EFA interfaces per instance type for the Lustre client's bounds (pure Python, no CDK).

:func:`~fmconstructs.storage.lustre_efa_interfaces` bounds an explicit ``efa_interfaces_for_lustre`` by the type's
EFA maximum. The facts live in one place, the instance catalog (:func:`fmconstructs.catalog.efa_max_interfaces`:
the catalog's types, then EC2 ``DescribeInstanceTypes`` data in :mod:`fmconstructs._efa_instance_types`); this module
only maps HyperPod's ``ml.`` names onto EC2 names. A type in neither is not bounded here (EC2 refuses what it cannot
attach).
"""

from __future__ import annotations

from .._efa_instance_types import EFA_MAXIMUM_INTERFACES
from ..catalog import efa_max_interfaces

__all__ = ["EFA_MAXIMUM_INTERFACES", "efa_maximum_interfaces"]


def efa_maximum_interfaces(instance_type: str) -> int | None:
    """The EFA interfaces ``instance_type`` (or ``ml.<type>``) can attach (0 for a type without EFA); None when
    unknown."""
    return efa_max_interfaces(instance_type.removeprefix("ml."))
