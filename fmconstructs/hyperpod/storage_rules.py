"""HyperPod's rules for the cluster's Lustre file system on the nodes: where it is mounted and over what."""

from __future__ import annotations

from ..errors import FmValidationError, is_token
from ..storage import LustreFileSystemBase
from ..storage.client import _check_mount_point
from .types import HyperPodInstanceGroup, SlurmConfiguration

#: Where the cluster's Lustre file system is mounted on every node by default: ``/fsx``, the mount point of the
#: published base-config, which cannot take another (awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/
#: LifecycleScripts/base-config/lifecycle_script.py at commit 7217859, line 182: ``ExecuteBashScript("./mount_fsx.sh")
#: .run(fsx_dns_name, fsx_mountname, "/fsx")``), and of fmconstructs' other backends. ``HyperPodCluster(mount_point=)``
#: chooses another one with ``SlurmConfiguration.API``.
LUSTRE_MOUNT_POINT = "/fsx"


def check_cluster_mount_point(
    value: object, mode: SlurmConfiguration | None, file_system: LustreFileSystemBase | None
) -> str:
    """``mount_point``: a path known at synthesis; another than ``/fsx`` only where something mounts it there
    (``SlurmConfiguration.API`` with a file system)."""
    point = _check_mount_point(value)
    if is_token(point):
        raise FmValidationError("mount_point", point, "a path known at synthesis (it goes into the node set-up)")
    if point == LUSTRE_MOUNT_POINT:
        return point
    if file_system is None:
        raise FmValidationError("mount_point", point, f"{LUSTRE_MOUNT_POINT!r} (the default) without a file_system")
    if mode is SlurmConfiguration.LIFECYCLE_SCRIPTS:
        raise FmValidationError(
            "mount_point",
            point,
            f"{LUSTRE_MOUNT_POINT!r} with base_config_dir: the published lifecycle_script.py mounts the file system at "
            "/fsx (mount_fsx.sh <dns> <mount name> /fsx) and takes no other path",
        )
    if mode is None:
        raise FmValidationError(
            "mount_point",
            point,
            f"{LUSTRE_MOUNT_POINT!r} with EKS orchestration: nothing mounts the file system on the HyperPod nodes; "
            "pods mount its PersistentVolumeClaim at the path of their own volumeMounts",
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
