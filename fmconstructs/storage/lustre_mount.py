"""The one "Lustre on a node group" input: :class:`LustreMount` (which file system, where, and how many EFA interfaces
its client uses). PCS node groups take it as ``mounts=`` (``fmconstructs.pcs.FileSystemMount`` is its deprecated
name), EKS node groups as ``GpuNodeGroup.add_lustre_client(mount)``, and ParallelCluster through
``SharedLustre.from_mount(mount, name=...)``."""

from __future__ import annotations

from dataclasses import dataclass

from .._renames import RenamedAttribute, renamed_keywords
from .._validate import check_mount_point, check_optional_count
from ..errors import FmTypeError, FmValidationError, is_token
from .lustre import LustreFileSystemBase

__all__ = ["LustreMount"]


@dataclass(frozen=True)
class LustreMount:
    """Mount ``file_system`` at ``mount_point`` on every node of a node group (default ``/fsx``).

    ``efa_interfaces`` (default None) is the number of EFA interfaces LNet uses on GPU nodes of an EFA-enabled file
    system: None for the FSx for Lustre User Guide per-type count capped by the node's EFA interfaces, 0 for LNet
    over TCP (see :func:`fmconstructs.storage.client.lustre_efa_interfaces`); known at synthesis.
    ``efa_interfaces_for_lustre`` is its deprecated name (a ``DeprecationWarning``; removed in fmconstructs 0.4.0).
    """

    file_system: LustreFileSystemBase
    mount_point: str = "/fsx"
    efa_interfaces: int | None = None
    """EFA interfaces LNet uses on GPU nodes (default: the FSx UG per-type count, capped by the node's EFA
    interfaces; 0: TCP). See :func:`fmconstructs.storage.client.lustre_efa_interfaces`."""

    #: Deprecated name of :attr:`efa_interfaces` (until fmconstructs 0.4.0).
    efa_interfaces_for_lustre = RenamedAttribute("efa_interfaces")

    def __post_init__(self) -> None:
        if not isinstance(self.file_system, LustreFileSystemBase):
            raise FmTypeError(
                "file_system",
                self.file_system,
                "an FSx for Lustre file system (LustreFileSystem or an import; "
                f"got a {type(self.file_system).__name__})",
            )
        check_mount_point("mount_point", self.mount_point)
        if is_token(check_optional_count("efa_interfaces", self.efa_interfaces)):
            raise FmValidationError("efa_interfaces", self.efa_interfaces, "a number known at synthesis")


# The old keyword of FileSystemMount (LustreMount's deprecated name) keeps working, with a DeprecationWarning, until
# fmconstructs 0.4.0.
LustreMount.__init__ = renamed_keywords(  # type: ignore[method-assign]
    "FileSystemMount", efa_interfaces_for_lustre="efa_interfaces"
)(LustreMount.__init__)
