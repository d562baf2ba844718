"""HyperPod's cross-property rules: pure functions named for what they check (:mod:`fmconstructs._rules`).

Each takes plain values (names, counts, instance types, flags saying which configuration is in effect), never a
construct or a scope, and raises :class:`~fmconstructs.errors.FmValidationError`. :class:`HyperPodInstanceGroup` and
:func:`~fmconstructs.hyperpod.cluster_inputs.check_cluster_inputs` call them; the rules of the provisioning options
are in :mod:`fmconstructs.hyperpod.provisioning`, capacity and storage rules shared with the other backends in
:mod:`fmconstructs.capacity` and :mod:`fmconstructs.storage`.

This module imports nothing else of the package (the dataclasses of :mod:`fmconstructs.hyperpod.types` call it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._validate import known
from ..errors import FmValidationError, is_token

__all__ = [
    "LUSTRE_MOUNT_POINT",
    "autoscaling_needs_automatic_node_recovery",
    "autoscaling_needs_continuous_provisioning",
    "autoscaling_needs_eks",
    "base_config_dir_fits_the_slurm_configuration",
    "cluster_mount_point_fits_the_configuration",
    "cluster_role_needs_autoscaling",
    "deep_health_checks_need_an_accelerated_type",
    "efa_security_group_in_the_cluster_vpc",
    "exporter_source_needs_api_and_a_workspace",
    "group_type_matches_the_training_plan",
    "instance_group_names_are_unique",
    "job_mapping_spec_needs_api_and_a_workspace",
    "kubernetes_config_needs_eks",
    "lustre_mount_needs_api_and_a_file_system",
    "memory_percent_needs_tiered_checkpointing",
    "min_nodes_at_most_nodes",
    "nodes_fit_the_training_plan",
    "prometheus_workspace_needs_slurm",
    "slurm_groups_are_instance_groups",
]

#: Where the cluster's Lustre file system is mounted on every node by default: ``/fsx``, the mount point of the
#: published base-config, which cannot take another (awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/
#: LifecycleScripts/base-config/lifecycle_script.py at commit 7217859, line 182: ``ExecuteBashScript("./mount_fsx.sh")
#: .run(fsx_dns_name, fsx_mountname, "/fsx")``), and of fmconstructs' other backends. ``HyperPodCluster(mount_point=)``
#: chooses another one with ``SlurmConfiguration.API``.
LUSTRE_MOUNT_POINT = "/fsx"


# --- one instance group --------------------------------------------------------------------------------------------
def deep_health_checks_need_an_accelerated_type(checks: Sequence[Any], instance_type: str, accelerated: bool) -> None:
    """``OnStartDeepHealthChecks`` (``checks``: DeepHealthCheck members) only on GPU and Trainium types."""
    if checks and not accelerated:
        raise FmValidationError(
            "deep_health_checks",
            [c.value for c in checks],
            f"empty for {instance_type}: deep health checks run on GPU and Trainium instances only "
            "(SageMaker Developer Guide, deep health checks)",
        )


def group_type_matches_the_training_plan(instance_type: str, plan_type: str | None, plan_arn: str | None) -> None:
    """A group on a training plan runs the plan's instance type (when the plan's type is given)."""
    if plan_type is not None and plan_type != instance_type:
        raise FmValidationError(
            "instance_type", instance_type, f"{plan_type}, the instance type of training plan {plan_arn}"
        )


def nodes_fit_the_training_plan(nodes: Any, plan_count: Any, plan_arn: str | None) -> None:
    """A group on a training plan has at most the plan's instances (when both counts are known at synthesis)."""
    if plan_count is not None and not is_token(plan_count) and not is_token(nodes) and nodes > plan_count:
        raise FmValidationError(
            "nodes", nodes, f"at most {plan_count}, the instances reserved by training plan {plan_arn}"
        )


# --- the cluster ---------------------------------------------------------------------------------------------------
def instance_group_names_are_unique(names: Sequence[str]) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise FmValidationError(
            "instance_groups", list(names), f"unique group names (repeated: {', '.join(duplicates)})"
        )


def slurm_groups_are_instance_groups(
    controller_group: str | None, login_group: str | None, names: Sequence[str]
) -> None:
    """A Slurm orchestrator's controller and login groups are among the instance groups, and not the same group."""
    for parameter, group in (("controller_group", controller_group), ("login_group", login_group)):
        if group is not None and group not in names:
            raise FmValidationError(f"orchestrator.{parameter}", group, f"one of the groups ({', '.join(names)})")
    if controller_group == login_group:
        raise FmValidationError("orchestrator.login_group", login_group, "a group other than the controller group")


def base_config_dir_fits_the_slurm_configuration(api: bool, base_config_dir: str | None) -> None:
    """``SlurmConfiguration.API`` (``api``) takes no base-config; ``LIFECYCLE_SCRIPTS`` needs one."""
    if api and base_config_dir is not None:
        raise FmValidationError(
            "base_config_dir",
            base_config_dir,
            "None with SlurmConfiguration.API: HyperPod configures and starts Slurm itself, while the base-config's "
            "lifecycle_script.py reads provisioning_parameters.json (not uploaded with the API-driven configuration) "
            "and starts Slurm again; use "
            "HyperPodOrchestrator.slurm(configuration=SlurmConfiguration.LIFECYCLE_SCRIPTS)",
        )
    if not api and base_config_dir is None:
        raise FmValidationError(
            "base_config_dir",
            None,
            "a local copy of HyperPod's published lifecycle scripts (awsome-distributed-training LifecycleScripts/"
            "base-config) with SlurmConfiguration.LIFECYCLE_SCRIPTS: without them nothing configures Slurm",
        )


def job_mapping_spec_needs_api_and_a_workspace(spec_given: bool, api_with_workspace: bool) -> None:
    """An explicit ``JobMappingSpec`` (``spec_given``) labels fmconstructs' dcgm-exporter, which runs only with
    ``SlurmConfiguration.API`` and a ``prometheus_workspace``."""
    if spec_given and not api_with_workspace:
        raise FmValidationError(
            "job_mapping",
            "a JobMappingSpec",
            "True, False or None without SlurmConfiguration.API and a prometheus_workspace (the job mapping labels "
            "fmconstructs' dcgm-exporter, which runs only then)",
        )


def efa_security_group_in_the_cluster_vpc(path: str, group_vpc: Any, vpc_id: Any) -> None:
    """The ``EfaSecurityGroup`` (construct path ``path``) is in the cluster's VPC, when both VPC ids are known."""
    if known(group_vpc) and known(vpc_id) and group_vpc != vpc_id:
        raise FmValidationError(
            "efa_security_group", f"{path} (VPC {group_vpc})", f"an EfaSecurityGroup in the cluster's VPC ({vpc_id})"
        )


def lustre_mount_needs_api_and_a_file_system(value: Any, api: bool, has_file_system: bool) -> None:
    """``lustre_mount`` (a HyperPodLustreMount) chooses who mounts the file system with the API-driven configuration."""
    if value is not None and (not api or not has_file_system):
        raise FmValidationError(
            "lustre_mount",
            value.value,
            "None unless the cluster uses SlurmConfiguration.API and has a file_system (with LIFECYCLE_SCRIPTS "
            "the base-config mounts it from provisioning_parameters.json)",
        )


def exporter_source_needs_api_and_a_workspace(value: Any, api: bool, has_workspace: bool) -> None:
    """``exporter_source`` chooses where fmconstructs' collectors come from (API-driven configuration, workspace)."""
    if value is not None and (not api or not has_workspace):
        raise FmValidationError(
            "exporter_source",
            value,
            "None unless the cluster uses SlurmConfiguration.API and has a prometheus_workspace (with "
            "LIFECYCLE_SCRIPTS the base-config installs its own collectors)",
        )


def prometheus_workspace_needs_slurm(has_workspace: bool, slurm: bool) -> None:
    if has_workspace and not slurm:
        raise FmValidationError(
            "prometheus_workspace",
            "a PrometheusWorkspace",
            "None for EKS orchestration (scrape the EKS cluster with fmconstructs.observability.eks)",
        )


def cluster_mount_point_fits_the_configuration(
    point: str, *, has_file_system: bool, lifecycle_scripts: bool, eks: bool
) -> None:
    """A ``mount_point`` other than ``/fsx`` only where something mounts the file system there:
    ``SlurmConfiguration.API`` with a file system (not the base-config's ``lifecycle_scripts``, not ``eks``)."""
    if point == LUSTRE_MOUNT_POINT:
        return
    if not has_file_system:
        raise FmValidationError("mount_point", point, f"{LUSTRE_MOUNT_POINT!r} (the default) without a file_system")
    if lifecycle_scripts:
        raise FmValidationError(
            "mount_point",
            point,
            f"{LUSTRE_MOUNT_POINT!r} with base_config_dir: the published lifecycle_script.py mounts the file system at "
            "/fsx (mount_fsx.sh <dns> <mount name> /fsx) and takes no other path",
        )
    if eks:
        raise FmValidationError(
            "mount_point",
            point,
            f"{LUSTRE_MOUNT_POINT!r} with EKS orchestration: nothing mounts the file system on the HyperPod nodes; "
            "pods mount its PersistentVolumeClaim at the path of their own volumeMounts",
        )


# --- provisioning options (instance groups, autoscaling, tiered checkpointing) ------------------------------------
def min_nodes_at_most_nodes(min_nodes: Any, nodes: Any) -> None:
    """``MinInstanceCount`` at most ``InstanceCount`` (CloudFormation schema) when both are known numbers."""
    if is_token(min_nodes) or is_token(nodes):
        return
    if isinstance(min_nodes, int | float) and isinstance(nodes, int | float) and min_nodes > nodes:
        raise FmValidationError("min_nodes", min_nodes, f"at most nodes ({nodes}): MinInstanceCount <= InstanceCount")


def kubernetes_config_needs_eks(index: int, has_kubernetes: bool, eks: bool) -> None:
    """Kubernetes labels and taints (``KubernetesConfig``) of group ``index`` only on an EKS-orchestrated cluster:
    Slurm nodes are not Kubernetes nodes."""
    if has_kubernetes and not eks:
        raise FmValidationError(
            f"instance_groups[{index}].kubernetes",
            "a HyperPodKubernetesConfig",
            "None with Slurm orchestration (KubernetesConfig labels and taints apply to EKS nodes)",
        )


_AUTOSCALING_PAGE = "(SageMaker Developer Guide sagemaker-hyperpod-eks-autoscaling)"


def autoscaling_needs_eks(eks: bool) -> None:
    """HyperPod's managed autoscaling (enabled) is for EKS clusters."""
    if not eks:
        raise FmValidationError(
            "auto_scaling",
            "Karpenter",
            f"None with Slurm: HyperPod's managed autoscaling is for EKS clusters {_AUTOSCALING_PAGE}",
        )


def autoscaling_needs_continuous_provisioning(node_provisioning_mode: Any, continuous: bool) -> None:
    """Enabled autoscaling builds on ``NodeProvisioningMode.CONTINUOUS`` (``continuous``)."""
    if not continuous:
        raise FmValidationError(
            "node_provisioning_mode",
            node_provisioning_mode,
            "NodeProvisioningMode.CONTINUOUS with auto_scaling (autoscaling builds on continuous provisioning "
            f"{_AUTOSCALING_PAGE})",
        )


def autoscaling_needs_automatic_node_recovery(node_recovery: str, automatic: bool) -> None:
    """Enabled autoscaling needs ``NodeRecovery.AUTOMATIC`` (``automatic``; ``node_recovery`` is the value given)."""
    if not automatic:
        raise FmValidationError(
            "node_recovery",
            node_recovery,
            f"NodeRecovery.AUTOMATIC with auto_scaling (a prerequisite of HyperPod autoscaling {_AUTOSCALING_PAGE})",
        )


def cluster_role_needs_autoscaling(has_cluster_role: bool, enabled: bool) -> None:
    """``ClusterRole`` serves autoscaling: none when autoscaling is disabled."""
    if has_cluster_role and not enabled:
        raise FmValidationError(
            "cluster_role", "an iam.IRole", "None when autoscaling is disabled (ClusterRole serves autoscaling)"
        )


def memory_percent_needs_tiered_checkpointing(instance_memory_percent: Any, enabled: bool) -> None:
    """``InstanceMemoryAllocationPercentage`` only with tiered checkpointing on."""
    if instance_memory_percent is not None and not enabled:
        raise FmValidationError(
            "instance_memory_percent", instance_memory_percent, "None when tiered checkpointing is off"
        )
