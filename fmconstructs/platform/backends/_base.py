"""The contract between :class:`~fmconstructs.platform.TrainingPlatform` and its backends (adapters).

A backend is registered for one options class (:class:`~fmconstructs.platform.PcsOptions` -> PCS, ...). It declares
the platform choices it does not support (:class:`Unsupported`; the platform refuses them before anything is built,
never ignores them), checks its own cross-choice rules (:meth:`PlatformBackend.check`), then builds its parts in the
platform's scope (so construct ids and paths are the platform's) and returns them as a :class:`BackendResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from ...capacity import Capacity
from ...errors import FmValidationError

if TYPE_CHECKING:
    from aws_cdk import aws_ec2 as ec2

    from ...bootstrap import NodeBootstrap
    from ...eks import GpuEksCluster, GpuNodeGroup
    from ...hyperpod import HyperPodCluster, HyperPodInstanceGroup
    from ...hyperpod.eks_dependencies import HyperPodEksDependencies
    from ...networking import EfaSecurityGroup
    from ...observability.eks import AmpEksScraper
    from ...parallelcluster import ParallelCluster, SlurmQueue
    from ...pcs import PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup, PcsQueue
    from ...teams import Team
    from ..elastic import ElasticPool
    from ..health import PlatformHealth
    from ..options import PlatformObservability, PlatformStorage
    from ..platform import TrainingPlatform
    from ..scheduling import PlatformCapacityEvents


class Backend(str, Enum):
    """The orchestrator a :class:`~fmconstructs.platform.TrainingPlatform` runs (from the type of its
    ``orchestrator`` options)."""

    PCS = "pcs"
    PARALLELCLUSTER = "parallelcluster"
    EKS = "eks"
    HYPERPOD = "hyperpod"


@dataclass(frozen=True)
class PlatformChoices:
    """The platform-level choices a backend may not support (what :class:`Unsupported` looks at)."""

    capacity: Capacity
    services_subnet: ec2.ISubnet | None
    storage: PlatformStorage | None
    observability: PlatformObservability | None
    health: PlatformHealth | None
    #: ``capacity_block_events`` when it is a PlatformCapacityEvents (None for True/False).
    capacity_events: PlatformCapacityEvents | None = None
    slurm_topology: bool = False
    #: ``teams`` (:class:`~fmconstructs.teams.Team`), checked.
    teams: tuple[Team, ...] = ()


@dataclass(frozen=True)
class Unsupported:
    """A platform choice a backend does not support.

    :param option: the parameter as the error names it (``capacity``, ``services_subnet``, ``health.nccl_image``).
    :param given: the offending value (as the error shows it) when the choices use the option, else None.
    :param allowed: what the option must be with this backend (the error's "must be ..." text, naming the backend).
    """

    option: str
    given: Callable[[PlatformChoices], object | None]
    allowed: str

    def refuse(self, choices: PlatformChoices) -> None:
        """Raise :class:`~fmconstructs.errors.FmValidationError` when ``choices`` use the option."""
        value = self.given(choices)
        if value is not None:
            raise FmValidationError(self.option, value, self.allowed)


@dataclass
class BackendResult:
    """What a backend built; the platform exposes each field as its attribute of the same name."""

    cluster: PcsCluster | ParallelCluster | GpuEksCluster | HyperPodCluster
    security_group: EfaSecurityGroup
    #: The GPU node group (None with an elastic EKS pool).
    node_group: PcsGpuNodeGroup | SlurmQueue | GpuNodeGroup | HyperPodInstanceGroup | None = None
    queue: PcsQueue | SlurmQueue | None = None
    login_node_group: PcsLoginNodeGroup | HyperPodInstanceGroup | None = None
    eks_cluster: GpuEksCluster | None = None
    elastic_pool: ElasticPool | None = None
    scraper: AmpEksScraper | None = None
    node_bootstrap: NodeBootstrap | None = None
    head_bootstrap: NodeBootstrap | None = None
    hyperpod_dependencies: HyperPodEksDependencies | None = None
    #: ``CfnOutput`` id -> (value, description), emitted unless ``outputs=False``.
    outputs: dict[str, tuple[str, str]] = field(default_factory=dict)


OptionsT_contra = TypeVar("OptionsT_contra", contravariant=True)


@runtime_checkable
class PlatformBackend(Protocol[OptionsT_contra]):
    """An adapter from one options class to one orchestrator's constructs."""

    #: Which backend this is (``TrainingPlatform.backend``).
    backend: Backend
    #: Platform choices this backend refuses (checked before anything else is validated or built).
    unsupported: tuple[Unsupported, ...]
    #: What this backend puts in ``services_subnet`` besides login nodes and the file system (Local Zone warnings).
    services: tuple[str, ...]

    def check(self, platform: TrainingPlatform, options: OptionsT_contra, storage: PlatformStorage | None) -> None:
        """Cross-choice rules of this backend, before the platform is built (a refused platform leaves nothing)."""
        ...

    def build(self, platform: TrainingPlatform, options: OptionsT_contra) -> BackendResult:
        """Build the backend's parts in the platform's scope (the platform's shared parts already exist)."""
        ...


def refuse_unsupported(backend: PlatformBackend[object], choices: PlatformChoices) -> None:
    """Refuse the first platform choice ``backend`` declares unsupported."""
    for unsupported in backend.unsupported:
        unsupported.refuse(choices)


def nccl_image_unsupported(name: str) -> Unsupported:
    """``PlatformHealth(nccl_image=...)``: only EKS runs the NCCL check as an MPIJob from an image."""
    return Unsupported(
        "health.nccl_image",
        lambda c: c.health.nccl_image if c.health is not None else None,
        f"None except with EksOptions (the {name} platform runs no NCCL image)",
    )


def storage_mount_point(platform: TrainingPlatform) -> str:
    """The storage mount point (only called when there is storage)."""
    point = platform.mount_point
    assert point is not None
    return point


def slurm_topology_unsupported(allowed: str) -> Unsupported:
    """``slurm_topology=True`` on a backend whose Slurm topology fmconstructs cannot set (:mod:`..scheduling`)."""
    return Unsupported("slurm_topology", lambda c: True if c.slurm_topology else None, allowed)


def slurm_teams_unsupported(name: str) -> Unsupported:
    """``teams=`` on a Slurm backend: the platform does not run the sacctmgr script on the cluster yet."""
    return Unsupported(
        "teams",
        lambda c: [t.name for t in c.teams] if c.teams else None,
        f"empty with {name} (TrainingPlatform does not apply teams on Slurm yet: render the sacctmgr script with "
        "fmconstructs.teams.slurm.render_sacctmgr_script and run it on a node that reaches slurmdbd)",
    )
