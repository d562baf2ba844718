"""The cross-property rules of :class:`~fmconstructs.platform.TrainingPlatform` as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in, no construct or scope; a hard rule raises
:class:`~fmconstructs.errors.FmValidationError`, a soft rule returns an :class:`~fmconstructs._rules.Advice` (or None)
that the platform attaches with :func:`~fmconstructs._rules.warn`.

Here: HyperPod's storage and chart rules (formerly ``platform._hyperpod_rules``, which re-exports them), the elastic
pool's rules (:mod:`.elastic`), the options' cross-field rules (:mod:`.options`), the services subnet's rules
(:mod:`.placement`), ``add_model_server``'s rules (:mod:`.serving`) and the platform health's rules (:mod:`.health`).
Checks of one option on its own stay with the options; values that are deploy-time tokens are never compared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._rules import Advice
from .._validate import is_local_zone, known, same_zone
from ..capacity import CapacityBlockScaling, CapacityKind
from ..errors import FmValidationError, WarningId
from ..hyperpod import LUSTRE_MOUNT_POINT
from ..hyperpod.eks_dependencies import CHART_CONTEXT

if TYPE_CHECKING:
    from .elastic import EksGpuCapacity

__all__ = [
    "HYPERPOD_EKS_VOLUME",
    "access_logs_only_for_the_platform_bucket",
    "base_config_dir_is_for_slurm",
    "base_config_dir_mounts_at_fsx",
    "base_config_dir_mounts_over_tcp",
    "dependencies_chart_is_for_eks",
    "efa_storage_keeps_services_in_the_node_zone",
    "elastic_pool_is_not_for_an_ultraserver_block",
    "elastic_pool_limits",
    "elastic_pool_reserves_by_id",
    "elastic_pool_scales_at_deploy",
    "exactly_one_weights_source",
    "existing_grafana_needs_its_prometheus",
    "fsx_path_needs_storage",
    "grafana_network_access_needs_a_new_grafana",
    "hyperpod_eks_mounts_through_the_claim",
    "hyperpod_eks_needs_a_dependencies_chart",
    "model_servers_need_eks",
    "nccl_image_needs_nccl",
    "nccl_spec_fits_the_platform",
    "new_workspace_options_need_a_new_workspace",
    "pcs_in_a_local_zone_needs_a_services_subnet",
    "remediation_acts_only_with_replace_nodes",
    "replace_nodes_needs_remediation",
    "services_across_zones",
    "services_subnet_is_in_the_parent_region",
]

#: The PersistentVolume and claim (namespace ``default``) of the file system on HyperPod's EKS cluster.
HYPERPOD_EKS_VOLUME = "fsx"


# --- HyperPod: storage and chart ------------------------------------------------------------------------------------
# HyperPod on EKS mounts over EFA: HyperPodCluster(file_system=<EFA-enabled>) configures LNet over EFA in the GPU
# groups' OnCreate lifecycle (as EKS User Guide fsx-csi-tuning-efa does on the node before the FSx CSI driver
# mounts, and as awsome-distributed-training's HyperPod EKS on_create_main.sh at ef3d0b1 does in OnCreate).
def base_config_dir_mounts_at_fsx(*, mount_point: str, base_config_dir: str | None) -> None:
    """The published lifecycle scripts (``base_config_dir``) mount the file system at /fsx and nowhere else."""
    if base_config_dir is not None and mount_point != LUSTRE_MOUNT_POINT:
        raise FmValidationError(
            "storage.mount_point",
            mount_point,
            f"{LUSTRE_MOUNT_POINT!r} with HyperPodOptions(base_config_dir=...): the published lifecycle_script.py "
            "mounts the file system at /fsx and takes no other path (drop base_config_dir to mount elsewhere)",
        )


def hyperpod_eks_mounts_through_the_claim(*, mount_point: str, on_eks: bool) -> None:
    """HyperPod on EKS (``on_eks``: HyperPodOrchestration.EKS): pods mount the claim, so the file system takes no
    other mount point than /fsx."""
    if on_eks and mount_point != LUSTRE_MOUNT_POINT:
        raise FmValidationError(
            "storage.mount_point",
            mount_point,
            f"{LUSTRE_MOUNT_POINT!r} with HyperPod on EKS: nothing mounts the file system on the HyperPod nodes; "
            f"pods mount the PersistentVolumeClaim default/{HYPERPOD_EKS_VOLUME} at their own volumeMounts path",
        )


def base_config_dir_mounts_over_tcp(*, efa_enabled: bool | None, base_config_dir: str | None) -> None:
    """The published lifecycle scripts mount over TCP: ``base_config_dir`` needs ``efa_enabled=False`` given."""
    if base_config_dir is not None and efa_enabled is not False:
        # awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/mount_fsx.sh
        # (commit 98dde54): modprobe lnet, then mount -t lustre <dns>@tcp:/<name>; no LNet over EFA is configured
        # (the storage module's EFA client set-up does that with lnetctl, fmconstructs/storage/client.py).
        raise FmValidationError(
            "storage.efa_enabled",
            efa_enabled,
            "False, given explicitly as PlatformStorage(efa_enabled=False), with HyperPodOptions(base_config_dir=...): "
            "the published lifecycle scripts' mount_fsx.sh configures no LNet over EFA (it loads lnet and mounts "
            "<dns>@tcp:/<name>), so the nodes reach the file system over TCP only; or drop base_config_dir to keep "
            "EFA (fmconstructs' node set-up mounts over EFA)",
        )


def hyperpod_eks_needs_a_dependencies_chart(chart: object | None) -> None:
    """HyperPod on EKS: a dependencies chart (the options' or CDK context's) is required."""
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


# --- EKS elastic pool -----------------------------------------------------------------------------------------------
def elastic_pool_is_not_for_an_ultraserver_block(*, gpu_capacity: EksGpuCapacity, capacity_kind: CapacityKind) -> None:
    """An UltraServer Capacity Block needs the managed node group (IMEX needs the NVIDIA DRA driver)."""
    if capacity_kind is CapacityKind.ULTRASERVER_CAPACITY_BLOCK:
        raise FmValidationError(
            "orchestrator.gpu_capacity",
            gpu_capacity.name,
            "EksGpuCapacity.MANAGED_NODE_GROUP on an UltraServer Capacity Block (IMEX needs the NVIDIA DRA driver, "
            "which Karpenter's chart ignores and EKS Auto Mode does not support)",
        )


def elastic_pool_scales_at_deploy(
    *, gpu_capacity: EksGpuCapacity, capacity_block_scaling: CapacityBlockScaling
) -> None:
    """An elastic pool has no group size to scale on the block's events."""
    if capacity_block_scaling is CapacityBlockScaling.ON_BLOCK_EVENTS:
        raise FmValidationError(
            "orchestrator.capacity_block_scaling",
            capacity_block_scaling.name,
            f"CapacityBlockScaling.AT_DEPLOY with EksGpuCapacity.{gpu_capacity.name} (an elastic pool has no group "
            "size to scale: it launches into the block while jobs are pending)",
        )


def elastic_pool_reserves_by_id(*, capacity_kind: CapacityKind, reservation_id: str | None) -> None:
    """A reserved elastic pool selects its reservation by id (not by resource group)."""
    if capacity_kind is not CapacityKind.ON_DEMAND and reservation_id is None:
        raise FmValidationError(
            "capacity",
            capacity_kind.value,
            "On-Demand, or a reservation given by reservation_id for an elastic pool (capacityReservationSelectorTerms "
            "select by id or tags, not by resource group); or EksGpuCapacity.MANAGED_NODE_GROUP",
        )


def elastic_pool_limits(*, gpu_capacity: EksGpuCapacity, node_checks_on: bool, has_file_system: bool) -> Advice | None:
    """What the managed node group does that the elastic pool's nodes do not (one warning, acknowledgeable)."""
    missing = []
    if node_checks_on:
        missing.append("the node checks (their bootstrap gate is a managed node group launch template)")
    if has_file_system:
        missing.append(
            "the host Lustre mount and LNet over EFA (node group bootstrap); pods mount the file system through "
            "its PersistentVolumeClaim (FSx CSI driver)"
        )
    if not missing:
        return None
    return Advice(
        WarningId.EKS_ELASTIC_POOL_LIMITS,
        f"EksGpuCapacity.{gpu_capacity.name}: the elastic pool's nodes do not get "
        + "; ".join(missing)
        + ". Use EksGpuCapacity.MANAGED_NODE_GROUP for them.",
    )


# --- services subnet ------------------------------------------------------------------------------------------------
def pcs_in_a_local_zone_needs_a_services_subnet(*, backend: str, node_zone: str | None) -> None:
    """PCS with the nodes' subnet in a Local Zone needs a services subnet (the controller cannot be there)."""
    if backend == "pcs" and is_local_zone(node_zone):
        raise FmValidationError(
            "services_subnet",
            None,
            f"given with PCS when subnet is in a Local Zone or Wavelength Zone ({node_zone}): the PCS "
            "controller's subnet cannot reside in AWS Outposts, AWS Wavelength or an AWS Local Zone (AWS PCS API "
            "Reference, Networking.subnetIds); pass services_subnet= a subnet in a zone of the parent Region "
            "(the controller, login nodes and file system go there; the GPU nodes stay in subnet)",
        )


def services_subnet_is_in_the_parent_region(*, services: str, zone: str | None) -> None:
    """The services subnet (``services``: its label) is not in a Local Zone or Wavelength Zone."""
    if is_local_zone(zone):
        raise FmValidationError(
            "services_subnet",
            f"{services} in {zone}",
            "a subnet in a zone of the parent Region, not a Local Zone or Wavelength Zone (it holds what those zones "
            "may not offer: the PCS controller's subnet cannot be in one, AWS PCS API Reference Networking.subnetIds)",
        )


def efa_storage_keeps_services_in_the_node_zone(
    *, services: str, zone: str | None, node_zone: str | None, storage: bool, efa_storage: bool
) -> None:
    """An EFA-enabled file system in the services subnet must be in the nodes' zone (EFA does not cross zones)."""
    if storage and efa_storage and same_zone(zone, node_zone) is False:
        raise FmValidationError(
            "services_subnet",
            f"{services} in {zone}",
            f"a subnet in {node_zone}, the GPU nodes' zone, while the file system is EFA-enabled: EFA traffic does "
            'not cross Availability Zones (EC2 User Guide "Elastic Fabric Adapter"). Pass '
            "PlatformStorage(efa_enabled=False) to mount the file system over TCP across zones, or a services_subnet "
            "in the nodes' zone",
        )


def services_across_zones(*, services: str, zone: str | None, node_zone: str | None, parts: list[str]) -> Advice | None:
    """A warning when the services subnet is known to be in another zone than the nodes: ``parts`` (what went there)
    talk to the GPU nodes across zones."""
    if not parts or same_zone(node_zone, zone) is not False:
        return None
    return Advice(
        WarningId.SERVICES_SUBNET_OTHER_ZONE,
        f"services_subnet {services} is in {zone}, the GPU nodes in {node_zone}: {', '.join(parts)} "
        "reach the nodes across zones (higher latency; traffic between zones is billed as data transfer). A "
        "file system there is mounted over TCP: EFA does not cross zones.",
    )


# --- add_model_server -----------------------------------------------------------------------------------------------
def model_servers_need_eks(*, backend: str) -> None:
    """Model servers run on the platform's GpuEksCluster: the EKS backend only (``backend``: the Backend value)."""
    if backend != "eks":
        raise FmValidationError(
            "backend",
            backend,
            "eks for add_model_server (model servers run on the platform's GpuEksCluster: EksOptions)",
        )


def exactly_one_weights_source(*, weights: object | None, fsx_path: str | None) -> None:
    """``weights`` or ``fsx_path``: exactly one."""
    if (weights is None) == (fsx_path is None):
        raise FmValidationError(
            "weights",
            weights,
            "exactly one of weights (ModelWeights.from_s3/from_hugging_face/from_fsx) or fsx_path (a directory of the "
            "platform's FSx for Lustre file system)",
        )


def fsx_path_needs_storage(*, fsx_path: str | None, has_file_system: bool) -> None:
    """``fsx_path`` names a directory of the platform's file system: a platform with storage."""
    if fsx_path is not None and not has_file_system:
        raise FmValidationError("fsx_path", fsx_path, "None on a platform without storage (pass weights=)")


# --- platform health ------------------------------------------------------------------------------------------------
def nccl_image_needs_nccl(*, nccl_image: str | None, nccl: object) -> None:
    """An NCCL image is for the NCCL check: None when the check is off."""
    if nccl_image is not None and (nccl is False or nccl is None):
        raise FmValidationError("nccl_image", nccl_image, "None when nccl is off")


def replace_nodes_needs_remediation(*, replace_nodes: bool, has_remediation: bool) -> None:
    """``replace_nodes`` needs a remediation policy to replace with."""
    if replace_nodes and not has_remediation:
        raise FmValidationError("replace_nodes", True, "False when remediation is None (nothing to replace with)")


def remediation_acts_only_with_replace_nodes(*, dry_run: bool | None, replace_nodes: bool) -> None:
    """A remediation policy that acts (``dry_run=False``; None: no policy) needs the explicit ``replace_nodes``."""
    if dry_run is False and not replace_nodes:
        raise FmValidationError(
            "remediation.dry_run",
            False,
            "True unless replace_nodes=True (the explicit opt-in to drain, reboot and replace nodes)",
        )


def nccl_spec_fits_the_platform(
    *, gpus_per_node: int, nodes: int, state_dir: str, instance_gpus: int, platform_nodes: Any, mount_point: str
) -> None:
    """An explicit NCCL check fits the platform: GPUs per node, node count, and a state directory on the file
    system (``platform_nodes`` unknown at synthesis: not compared)."""
    if gpus_per_node > instance_gpus:
        raise FmValidationError(
            "health.nccl.gpus_per_node", gpus_per_node, f"at most {instance_gpus}, the instance type's GPUs"
        )
    if known(platform_nodes) and nodes > platform_nodes:
        raise FmValidationError("health.nccl.nodes", nodes, f"at most the platform's {platform_nodes} nodes")
    if not (state_dir + "/").startswith(mount_point.rstrip("/") + "/"):
        raise FmValidationError(
            "health.nccl.state_dir", state_dir, f"a directory under the file system's mount point {mount_point}"
        )


# --- options --------------------------------------------------------------------------------------------------------
def access_logs_only_for_the_platform_bucket(*, access_logs_bucket: str | None, data_bucket_given: bool) -> None:
    """``access_logs_bucket`` (its construct path) is set on the bucket the platform creates: not with data_bucket."""
    if access_logs_bucket is not None and data_bucket_given:
        raise FmValidationError(
            "access_logs_bucket",
            access_logs_bucket,
            "None when data_bucket is given (access logs are set on the bucket the platform creates; "
            "configure your bucket's own server access logging)",
        )


def existing_grafana_needs_its_prometheus(*, grafana_given: bool, prometheus_given: bool) -> None:
    """An existing Grafana workspace comes with the Prometheus workspace it reads."""
    if grafana_given and not prometheus_given:
        raise FmValidationError(
            "prometheus_workspace",
            None,
            "the Prometheus workspace the existing Grafana workspace reads, given with grafana_workspace "
            "(a new workspace would make the Grafana stack depend on this one and this one on it)",
        )


def grafana_network_access_needs_a_new_grafana(
    *, grafana_network_access: object | None, create_grafana: bool, prometheus_given: bool
) -> None:
    """``grafana_network_access`` is for the Grafana workspace the platform creates."""
    if grafana_network_access is not None and (not create_grafana or prometheus_given):
        raise FmValidationError(
            "grafana_network_access",
            grafana_network_access,
            "None unless the platform creates the Grafana workspace (PlatformObservability.new(grafana=True)):"
            " an existing workspace keeps its own network access control",
        )


def new_workspace_options_need_a_new_workspace(
    *, prometheus_given: bool, create_grafana: bool, alias: str | None
) -> None:
    """``create_grafana`` and ``alias`` describe new workspaces: refused beside an existing Prometheus workspace
    (they would be silently ignored)."""
    if not prometheus_given:
        return
    if create_grafana:
        raise FmValidationError(
            "create_grafana",
            True,
            "False with an existing prometheus_workspace (a Grafana workspace is created only with "
            "PlatformObservability.new(); pass an existing one as grafana_workspace=)",
        )
    if alias is not None:
        raise FmValidationError(
            "alias", alias, "None with an existing prometheus_workspace (alias names a new workspace)"
        )


def base_config_dir_is_for_slurm(*, base_config_dir: str | None, on_eks: bool) -> None:
    """HyperPod's published lifecycle scripts (``base_config_dir``) are for Slurm orchestration."""
    if on_eks and base_config_dir is not None:
        raise FmValidationError("base_config_dir", base_config_dir, "None with EKS orchestration (Slurm only)")


def dependencies_chart_is_for_eks(*, chart_given: bool, on_eks: bool) -> None:
    """HyperPod's dependencies chart is installed on its EKS cluster: EKS orchestration only."""
    if chart_given and not on_eks:
        raise FmValidationError(
            "dependencies_chart", "a HyperPodDependenciesChart", "None with Slurm orchestration (EKS only)"
        )
