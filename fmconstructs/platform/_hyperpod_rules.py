"""HyperPod's storage and chart rules for :class:`~fmconstructs.platform.TrainingPlatform` (checked before anything is
built, so a refused platform leaves nothing in the construct tree)."""

from __future__ import annotations

from constructs import Construct

from ..errors import FmValidationError
from ..hyperpod import LUSTRE_MOUNT_POINT
from ..hyperpod.eks_dependencies import CHART_CONTEXT, HyperPodDependenciesChart
from .options import HyperPodOptions, HyperPodOrchestration, Orchestrator, PlatformStorage

#: The PersistentVolume and claim (namespace ``default``) of the file system on HyperPod's EKS cluster.
HYPERPOD_EKS_VOLUME = "fsx"


def check_hyperpod_storage(options: HyperPodOptions, storage: PlatformStorage | None) -> None:
    """HyperPod's storage rules: the published lifecycle scripts mount at /fsx over TCP, so ``base_config_dir`` takes
    neither another mount point nor an EFA-enabled file system (refused rather than changed behind your back); on EKS
    pods mount the claim, so no other mount point either."""
    # HyperPod on EKS mounts over EFA: HyperPodCluster(file_system=<EFA-enabled>) configures LNet over EFA in the GPU
    # groups' OnCreate lifecycle (as EKS User Guide fsx-csi-tuning-efa does on the node before the FSx CSI driver
    # mounts, and as awsome-distributed-training's HyperPod EKS on_create_main.sh at ef3d0b1 does in OnCreate).
    if storage is None:
        return
    if storage.mount_point != LUSTRE_MOUNT_POINT:
        if options.base_config_dir is not None:
            raise FmValidationError(
                "storage.mount_point",
                storage.mount_point,
                f"{LUSTRE_MOUNT_POINT!r} with HyperPodOptions(base_config_dir=...): the published lifecycle_script.py "
                "mounts the file system at /fsx and takes no other path (drop base_config_dir to mount elsewhere)",
            )
        if options.orchestrator is HyperPodOrchestration.EKS:
            raise FmValidationError(
                "storage.mount_point",
                storage.mount_point,
                f"{LUSTRE_MOUNT_POINT!r} with HyperPod on EKS: nothing mounts the file system on the HyperPod nodes; "
                f"pods mount the PersistentVolumeClaim default/{HYPERPOD_EKS_VOLUME} at their own volumeMounts path",
            )
    if options.base_config_dir is not None and storage.efa_enabled is not False:
        # awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/mount_fsx.sh
        # (commit 98dde54): modprobe lnet, then mount -t lustre <dns>@tcp:/<name>; no LNet over EFA is configured
        # (the storage module's EFA client set-up does that with lnetctl, fmconstructs/storage/client.py).
        raise FmValidationError(
            "storage.efa_enabled",
            storage.efa_enabled,
            "False, given explicitly as PlatformStorage(efa_enabled=False), with HyperPodOptions(base_config_dir=...): "
            "the published lifecycle scripts' mount_fsx.sh configures no LNet over EFA (it loads lnet and mounts "
            "<dns>@tcp:/<name>), so the nodes reach the file system over TCP only; or drop base_config_dir to keep "
            "EFA (fmconstructs' node set-up mounts over EFA)",
        )


def hyperpod_chart(scope: Construct, options: Orchestrator) -> HyperPodDependenciesChart | None:
    """HyperPod on EKS: the dependencies chart (the options', else CDK context), refused when there is none."""
    if not isinstance(options, HyperPodOptions) or options.orchestrator is not HyperPodOrchestration.EKS:
        return None
    chart = options.dependencies_chart or HyperPodDependenciesChart.from_context(scope)
    if chart is None:
        raise FmValidationError(
            "orchestrator.dependencies_chart",
            None,
            "a HyperPodDependenciesChart (.from_directory, .from_oci, .from_ecr or .from_helm_repository), or CDK "
            f"context -c {CHART_CONTEXT}=<HyperPodHelmChart directory or oci:// reference>: SageMaker HyperPod "
            "requires its dependencies chart on the EKS cluster before the HyperPod cluster is created (SageMaker "
            "Developer Guide sagemaker-hyperpod-eks-install-packages-using-helm-chart), and the chart is published "
            "only in git (aws/sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart)",
        )
    return chart
