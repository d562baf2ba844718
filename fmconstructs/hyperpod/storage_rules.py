"""HyperPod's rules for the cluster's Lustre file system on the nodes: where it is mounted and over what."""

from __future__ import annotations

from ..errors import FmValidationError, is_token
from ..storage import LustreFileSystemBase
from ..storage.client import _check_mount_point
from .rules import LUSTRE_MOUNT_POINT as LUSTRE_MOUNT_POINT  # where the file system is mounted by default
from .rules import cluster_mount_point_fits_the_configuration
from .types import HyperPodInstanceGroup, SlurmConfiguration


def check_cluster_mount_point(
    value: object, mode: SlurmConfiguration | None, file_system: LustreFileSystemBase | None
) -> str:
    """``mount_point``: a path known at synthesis; another than ``/fsx`` only where something mounts it there
    (``SlurmConfiguration.API`` with a file system)."""
    point = _check_mount_point(value)
    if is_token(point):
        raise FmValidationError("mount_point", point, "a path known at synthesis (it goes into the node set-up)")
    cluster_mount_point_fits_the_configuration(
        point,
        has_file_system=file_system is not None,
        lifecycle_scripts=mode is SlurmConfiguration.LIFECYCLE_SCRIPTS,
        eks=mode is None,
    )
    return point


def api_lustre_efa_interfaces(group: HyperPodInstanceGroup) -> int | None:
    """The group's ``efa_interfaces_for_lustre``; for CPU groups (controller, login, other non-accelerated types)
    without one, 0: they mount over TCP and use none of the file system's 1,024 EFA connections. The instance catalog
    holds GPU types only, so a CPU type's EFA interfaces are unknown here and its node would otherwise decide (and
    the count stay unknown to ``fmc``); CPU nodes need no EFA bandwidth to Lustre. Give the group an explicit count to
    use EFA on a CPU type that has it."""
    if group.efa_interfaces_for_lustre is None and not group.accelerated:
        return 0
    return group.efa_interfaces_for_lustre
