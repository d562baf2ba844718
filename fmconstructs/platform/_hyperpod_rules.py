"""HyperPod's storage and chart rules for :class:`~fmconstructs.platform.TrainingPlatform` (checked before anything is
built, so a refused platform leaves nothing in the construct tree). The rules themselves live in
:mod:`fmconstructs.platform.rules`; this module keeps its import path and composes them."""

from __future__ import annotations

from constructs import Construct

from ..hyperpod.eks_dependencies import HyperPodDependenciesChart
from .options import HyperPodOptions, HyperPodOrchestration, Orchestrator, PlatformStorage
from .rules import HYPERPOD_EKS_VOLUME as HYPERPOD_EKS_VOLUME
from .rules import (
    base_config_dir_mounts_at_fsx,
    base_config_dir_mounts_over_tcp,
    hyperpod_eks_mounts_through_the_claim,
    hyperpod_eks_needs_a_dependencies_chart,
)


def check_hyperpod_storage(options: HyperPodOptions, storage: PlatformStorage | None) -> None:
    """HyperPod's storage rules: the published lifecycle scripts mount at /fsx over TCP, so ``base_config_dir`` takes
    neither another mount point nor an EFA-enabled file system (refused rather than changed behind your back); on EKS
    pods mount the claim, so no other mount point either."""
    if storage is None:
        return
    base_config_dir_mounts_at_fsx(mount_point=storage.mount_point, base_config_dir=options.base_config_dir)
    on_eks = options.orchestrator is HyperPodOrchestration.EKS
    hyperpod_eks_mounts_through_the_claim(mount_point=storage.mount_point, on_eks=on_eks)
    base_config_dir_mounts_over_tcp(efa_enabled=storage.efa_enabled, base_config_dir=options.base_config_dir)


def hyperpod_chart(scope: Construct, options: Orchestrator) -> HyperPodDependenciesChart | None:
    """HyperPod on EKS: the dependencies chart (the options', else CDK context), refused when there is none."""
    if not isinstance(options, HyperPodOptions) or options.orchestrator is not HyperPodOrchestration.EKS:
        return None
    chart = options.dependencies_chart or HyperPodDependenciesChart.from_context(scope)
    hyperpod_eks_needs_a_dependencies_chart(chart)
    assert chart is not None
    return chart
