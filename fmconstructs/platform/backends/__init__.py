"""The backends of :class:`~fmconstructs.platform.TrainingPlatform` as adapters behind one protocol
(:class:`PlatformBackend`) and one registry keyed by the options class (:func:`backend_for`): each builds its
orchestrator's parts into a typed :class:`BackendResult` and declares the platform choices it does not support
(:class:`Unsupported`, refused before anything is built)."""

from __future__ import annotations

from typing import Any

from ...errors import FmTypeError
from ..options import EksOptions, HyperPodOptions, ParallelClusterOptions, PcsOptions
from ._base import Backend, BackendResult, PlatformBackend, PlatformChoices, Unsupported, refuse_unsupported
from .eks import EksBackend
from .hyperpod import HyperPodBackend
from .parallelcluster import ParallelClusterBackend
from .pcs import PcsBackend

#: The registry: options class -> backend.
BACKENDS: dict[type, PlatformBackend[Any]] = {
    PcsOptions: PcsBackend(),
    ParallelClusterOptions: ParallelClusterBackend(),
    EksOptions: EksBackend(),
    HyperPodOptions: HyperPodBackend(),
}


def backend_for(options: object) -> PlatformBackend[Any]:
    """The backend registered for ``options``' class; FmTypeError naming ``orchestrator`` for any other value."""
    backend = BACKENDS.get(type(options))
    if backend is None:
        raise FmTypeError(
            "orchestrator",
            options,
            f"PcsOptions, ParallelClusterOptions, EksOptions or HyperPodOptions (got a {type(options).__name__})",
        )
    return backend


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendResult",
    "EksBackend",
    "HyperPodBackend",
    "ParallelClusterBackend",
    "PcsBackend",
    "PlatformBackend",
    "PlatformChoices",
    "Unsupported",
    "backend_for",
    "refuse_unsupported",
]
