"""The checks of :class:`~fmconstructs.hyperpod.cluster.HyperPodCluster`'s properties, split out of
:mod:`fmconstructs.hyperpod.cluster`: :func:`check_cluster_inputs` refuses bad input (in the order the constructor
always checked it) and resolves the choices in effect (:class:`ClusterInputs`).

Sources: the botocore ``sagemaker`` model of ``CreateCluster`` (``VpcConfig``, ``ClusterName``,
``ClusterPartitionName``) and the SageMaker API reference (``ClusterLifeCycleConfig.SourceS3Uri``); see
:mod:`fmconstructs.hyperpod.cluster`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3

from .._validate import (
    check_construct,
    check_enum,
    check_security_group,
    check_sequence,
    check_str,
    check_str_sequence,
    check_subnet,
    check_vpc,
)
from ..errors import FmTypeError, FmValidationError, is_token
from ..health import NodeHealthOptions
from ..networking import EfaSecurityGroup
from ..observability.app_metrics import AppMetricsSpec
from ..observability.job_mapping import JobMappingSpec
from ..observability.slurm_job_mapping import check_app_metrics, check_job_mapping
from ..observability.sources import ExporterSource, check_exporter_source
from ..storage import LustreFileSystemBase
from ..storage.data_repository import check_bucket_name
from . import rules
from .cluster_lifecycle import LIFECYCLE_BUCKET_PREFIX
from .data_safety import check_removal_policy
from .node_health import check_node_health
from .orchestrator import HyperPodOrchestrator, OrchestratorKind
from .provisioning import (
    HyperPodAutoScaling,
    NodeProvisioningMode,
    TieredCheckpointing,
    check_group_orchestrator,
    check_provisioning,
)
from .storage_rules import check_cluster_mount_point
from .types import (
    API_PARTITION_ALLOWED,
    API_PARTITION_MAX_LENGTH,
    API_PARTITION_PATTERN,
    MAX_INSTANCE_GROUPS,
    NAME_ALLOWED,
    NAME_PATTERN,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    NodeRecovery,
    SlurmConfiguration,
    SlurmNodeType,
)

#: ``VpcConfig.Subnets``: 1-16; ``VpcConfig.SecurityGroupIds``: 1-5 (botocore sagemaker model).
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5


def _check_group(parameter: str, value: object) -> HyperPodInstanceGroup:
    if not isinstance(value, HyperPodInstanceGroup):
        raise FmTypeError(parameter, value, f"a HyperPodInstanceGroup (got a {type(value).__name__})")
    return value


def _slurm_configuration(orchestrator: HyperPodOrchestrator, base_config_dir: str | None) -> SlurmConfiguration | None:
    """The Slurm configuration in effect (None for EKS); refuses a base-config with the API-driven configuration and
    the lifecycle-scripts configuration without one."""
    if orchestrator.kind is not OrchestratorKind.SLURM:
        return None
    mode = orchestrator.slurm_configuration
    if mode is None:
        mode = SlurmConfiguration.LIFECYCLE_SCRIPTS if base_config_dir is not None else SlurmConfiguration.API
    rules.base_config_dir_fits_the_slurm_configuration(mode is SlurmConfiguration.API, base_config_dir)
    return mode


def _job_mapping(
    job_mapping: object, app_metrics: object, mode: SlurmConfiguration | None, workspace: Any
) -> tuple[JobMappingSpec | None, AppMetricsSpec | None]:
    """The job mapping and application metrics in effect: only with ``SlurmConfiguration.API`` and a workspace
    (fmconstructs' collectors); a spec given explicitly elsewhere is refused, the default ``True`` is dropped."""
    spec = check_job_mapping("job_mapping", job_mapping)
    app = check_app_metrics("app_metrics", app_metrics)
    api_with_workspace = mode is SlurmConfiguration.API and workspace is not None
    rules.job_mapping_spec_needs_api_and_a_workspace(isinstance(job_mapping, JobMappingSpec), api_with_workspace)
    return (spec, app) if api_with_workspace else (None, None)


def _check_api_partitions(groups: Sequence[HyperPodInstanceGroup], orchestrator: HyperPodOrchestrator) -> None:
    """Partition names of compute groups must fit ``ClusterPartitionName`` (API-driven configuration)."""
    for index, group in enumerate(groups):
        if orchestrator.slurm_node_type(group.name) is not SlurmNodeType.COMPUTE or group.partition_name is None:
            continue
        name = group.partition_name
        if len(name) > API_PARTITION_MAX_LENGTH or not API_PARTITION_PATTERN.fullmatch(name):
            raise FmValidationError(f"instance_groups[{index}].partition_name", name, API_PARTITION_ALLOWED)


def _check_efa_security_group(value: object, vpc: ec2.IVpc) -> None:
    """An :class:`EfaSecurityGroup` (or None) in ``vpc`` when both VPC ids are known at synthesis."""
    if value is None:
        return
    if not isinstance(value, EfaSecurityGroup):
        raise FmTypeError(
            "efa_security_group", value, f"an fmconstructs EfaSecurityGroup (got a {type(value).__name__})"
        )
    resource = value.security_group.node.default_child
    group_vpc = resource.vpc_id if isinstance(resource, ec2.CfnSecurityGroup) else None
    rules.efa_security_group_in_the_cluster_vpc(value.node.path, group_vpc, vpc.vpc_id)


def _lustre_mount(
    value: HyperPodLustreMount | None, mode: SlurmConfiguration | None, file_system: LustreFileSystemBase | None
) -> HyperPodLustreMount | None:
    """Who mounts the file system with the API-driven configuration (None otherwise)."""
    if value is not None:
        check_enum("lustre_mount", value, HyperPodLustreMount)
        rules.lustre_mount_needs_api_and_a_file_system(value, mode is SlurmConfiguration.API, file_system is not None)
    if mode is not SlurmConfiguration.API or file_system is None:
        return None
    return value or HyperPodLustreMount.NODE_BOOTSTRAP


def _exporter_source(value: object, mode: SlurmConfiguration | None, workspace: object) -> ExporterSource | None:
    """Where fmconstructs' collectors come from (API-driven configuration with a workspace), else None."""
    if value is not None:
        source = check_exporter_source("exporter_source", value)
        rules.exporter_source_needs_api_and_a_workspace(value, mode is SlurmConfiguration.API, workspace is not None)
        return source
    if mode is not SlurmConfiguration.API or workspace is None:
        return None
    return ExporterSource.INTERNET


@dataclass(frozen=True)
class ClusterInputs:
    """A HyperPod cluster's checked properties and the choices in effect (the constructor's build steps read it)."""

    vpc: ec2.IVpc
    groups: tuple[HyperPodInstanceGroup, ...]
    orchestrator: HyperPodOrchestrator
    subnets: tuple[ec2.ISubnet, ...]
    cluster_name: str | None
    node_recovery: NodeRecovery
    file_system: LustreFileSystemBase | None
    base_config_dir: str | None
    commands: tuple[str, ...]
    extra_groups: tuple[ec2.ISecurityGroup, ...]
    access_logs_bucket: s3.IBucket | None
    lifecycle_bucket_name: str | None
    prometheus_workspace: Any
    efa_security_group: EfaSecurityGroup | None
    mount_point: str
    removal_policy: RemovalPolicy
    node_provisioning_mode: NodeProvisioningMode | None
    auto_scaling: HyperPodAutoScaling | None
    tiered_checkpointing: TieredCheckpointing | None
    #: EKS orchestration with an EFA-enabled file system (each group configures LNet over EFA in ``OnCreate``).
    eks_lustre_efa: bool
    #: The Slurm configuration in effect (None for EKS), who mounts the file system, where collectors come from, the
    #: job mapping and application metrics in effect (:func:`_with_choices`).
    mode: SlurmConfiguration | None = None
    mount: HyperPodLustreMount | None = None
    source: ExporterSource | None = None
    job_mapping: JobMappingSpec | None = None
    app_metrics: AppMetricsSpec | None = None
    #: The node checks of the GPU compute groups (None: off; :mod:`fmconstructs.hyperpod.node_health`).
    node_health: NodeHealthOptions | None = None


@dataclass(frozen=True)
class ClusterProps:
    """The keyword arguments of :class:`~fmconstructs.hyperpod.cluster.HyperPodCluster` as given, in its order (the
    signature is the one list: :meth:`of` reads them from the constructor's ``locals()``)."""

    vpc: ec2.IVpc
    instance_groups: Sequence[HyperPodInstanceGroup]
    orchestrator: HyperPodOrchestrator
    subnets: Sequence[ec2.ISubnet] | None
    cluster_name: str | None
    node_recovery: NodeRecovery
    file_system: LustreFileSystemBase | None
    base_config_dir: str | None
    setup_commands: Sequence[str]
    security_groups: Sequence[ec2.ISecurityGroup]
    access_logs_bucket: s3.IBucket | None
    lifecycle_bucket_name: str | None
    prometheus_workspace: Any
    lustre_mount: HyperPodLustreMount | None
    exporter_source: ExporterSource | None
    efa_security_group: EfaSecurityGroup | None
    mount_point: str
    removal_policy: RemovalPolicy
    job_mapping: JobMappingSpec | bool | None
    app_metrics: AppMetricsSpec | bool | None
    node_provisioning_mode: NodeProvisioningMode | None
    auto_scaling: HyperPodAutoScaling | None
    tiered_checkpointing: TieredCheckpointing | None
    node_health: NodeHealthOptions | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> ClusterProps:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


def check_cluster_inputs(props: ClusterProps) -> ClusterInputs:
    """Every check of :class:`~fmconstructs.hyperpod.cluster.HyperPodCluster`, in the order it always ran them."""
    vpc, orchestrator, file_system = props.vpc, props.orchestrator, props.file_system
    check_vpc("vpc", vpc)
    _check_efa_security_group(props.efa_security_group, vpc)
    groups = _check_groups(props.instance_groups, orchestrator)
    chosen_subnets = _check_subnets(props.subnets, vpc)
    eks = orchestrator.kind is OrchestratorKind.EKS
    removal_policy = _check_cluster_options(groups, props, eks=eks)
    commands, extra_groups = _check_lifecycle_inputs(
        props.base_config_dir,
        props.setup_commands,
        props.security_groups,
        props.access_logs_bucket,
        props.lifecycle_bucket_name,
    )
    _check_workspace(props.prometheus_workspace, orchestrator)
    if len(extra_groups) > MAX_SECURITY_GROUPS - 1:
        raise FmValidationError("security_groups", len(extra_groups), f"at most {MAX_SECURITY_GROUPS - 1} groups")
    checked = ClusterInputs(
        vpc=vpc,
        groups=groups,
        orchestrator=orchestrator,
        subnets=chosen_subnets,
        cluster_name=props.cluster_name,
        node_recovery=props.node_recovery,
        file_system=file_system,
        base_config_dir=props.base_config_dir,
        commands=commands,
        extra_groups=extra_groups,
        access_logs_bucket=props.access_logs_bucket,
        lifecycle_bucket_name=props.lifecycle_bucket_name,
        prometheus_workspace=props.prometheus_workspace,
        efa_security_group=props.efa_security_group,
        mount_point=props.mount_point,
        removal_policy=removal_policy,
        node_provisioning_mode=props.node_provisioning_mode,
        auto_scaling=props.auto_scaling,
        tiered_checkpointing=props.tiered_checkpointing,
        eks_lustre_efa=eks and file_system is not None and file_system.efa_enabled,
    )
    chosen = _with_choices(checked, props.lustre_mount, props.exporter_source, props.job_mapping, props.app_metrics)
    return replace(chosen, node_health=_node_health(props.node_health, chosen.mode))


def _node_health(value: object, mode: SlurmConfiguration | None) -> NodeHealthOptions | None:
    """The node checks in effect: enabled options with the API-driven Slurm configuration (the only one whose
    ``OnInitComplete`` set-up fmconstructs writes after Slurm starts), else refused; disabled options are None."""
    options = check_node_health(value)
    if options is None or not options.enabled:
        return None
    if mode is not SlurmConfiguration.API:
        raise FmValidationError(
            "node_health",
            options,
            "None without the API-driven Slurm configuration (no base_config_dir, Slurm orchestration): the checks "
            "run from OnInitComplete",
        )
    return options


def _check_groups(
    instance_groups: Sequence[HyperPodInstanceGroup], orchestrator: HyperPodOrchestrator
) -> tuple[HyperPodInstanceGroup, ...]:
    """At least one group, unique names, a :class:`HyperPodOrchestrator` whose Slurm groups are among them."""
    groups = check_sequence("instance_groups", instance_groups, _check_group)
    if not groups:
        raise FmValidationError("instance_groups", [], "at least one HyperPodInstanceGroup")
    if len(groups) > MAX_INSTANCE_GROUPS:
        raise FmValidationError(
            "instance_groups",
            len(groups),
            f"at most {MAX_INSTANCE_GROUPS} instance groups per cluster (SageMaker CreateCluster InstanceGroups, "
            "botocore ClusterInstanceGroupSpecifications max): split the groups into more than one HyperPodCluster",
        )
    names = [g.name for g in groups]
    rules.instance_group_names_are_unique(names)
    if not isinstance(orchestrator, HyperPodOrchestrator):
        raise FmTypeError("orchestrator", orchestrator, "a HyperPodOrchestrator (.slurm(...) or .eks(cluster))")
    if orchestrator.kind is OrchestratorKind.SLURM:
        rules.slurm_groups_are_instance_groups(orchestrator.controller_group, orchestrator.login_group, names)
    return groups


def _check_cluster_options(
    groups: tuple[HyperPodInstanceGroup, ...], props: ClusterProps, *, eks: bool
) -> RemovalPolicy:
    """``ClusterName``, ``NodeRecovery``, the cluster-level provisioning options, the groups' orchestrator-only
    options, the removal policy (returned, checked) and the file system's type."""
    if props.cluster_name is not None:
        check_str(
            "cluster_name", props.cluster_name, pattern=NAME_PATTERN, min_length=1, max_length=63, allowed=NAME_ALLOWED
        )
    check_enum("node_recovery", props.node_recovery, NodeRecovery)
    check_provisioning(
        node_provisioning_mode=props.node_provisioning_mode,
        auto_scaling=props.auto_scaling,
        tiered_checkpointing=props.tiered_checkpointing,
        eks=eks,
        node_recovery=props.node_recovery,
    )
    check_group_orchestrator(groups, eks=eks)
    removal_policy = check_removal_policy("removal_policy", props.removal_policy)
    file_system = props.file_system
    if file_system is not None and not isinstance(file_system, LustreFileSystemBase):
        raise FmTypeError("file_system", file_system, "an fmconstructs LustreFileSystemBase")
    return removal_policy


def _with_choices(
    inputs: ClusterInputs,
    lustre_mount: HyperPodLustreMount | None,
    exporter_source: ExporterSource | None,
    job_mapping: JobMappingSpec | bool | None,
    app_metrics: AppMetricsSpec | bool | None,
) -> ClusterInputs:
    """``inputs`` with the Slurm configuration, Lustre mount, collectors' source, job mapping and application metrics
    in effect (refusing what the configuration in effect cannot do)."""
    orchestrator, file_system, workspace = inputs.orchestrator, inputs.file_system, inputs.prometheus_workspace
    mode = _slurm_configuration(orchestrator, inputs.base_config_dir)
    if mode is SlurmConfiguration.API:
        _check_api_partitions(inputs.groups, orchestrator)
    mount = _lustre_mount(lustre_mount, mode, file_system)
    check_cluster_mount_point(inputs.mount_point, mode, file_system)
    source = _exporter_source(exporter_source, mode, workspace)
    mapping, app = _job_mapping(job_mapping, app_metrics, mode, workspace)
    return replace(inputs, mode=mode, mount=mount, source=source, job_mapping=mapping, app_metrics=app)


def _check_subnets(subnets: Sequence[ec2.ISubnet] | None, vpc: ec2.IVpc) -> tuple[ec2.ISubnet, ...]:
    """``VpcConfig.Subnets`` (1-16); default: the VPC's private subnets."""
    chosen = check_sequence("subnets", subnets, check_subnet) if subnets is not None else tuple(vpc.private_subnets)
    if not 1 <= len(chosen) <= MAX_SUBNETS:
        raise FmValidationError("subnets", len(chosen), f"1-{MAX_SUBNETS} subnets (VpcConfig.Subnets)")
    return chosen


def _check_lifecycle_inputs(
    base_config_dir: str | None,
    setup_commands: Sequence[str],
    security_groups: Sequence[ec2.ISecurityGroup],
    access_logs_bucket: s3.IBucket | None,
    lifecycle_bucket_name: str | None,
) -> tuple[tuple[str, ...], tuple[ec2.ISecurityGroup, ...]]:
    """The base-config directory, setup commands, extra security groups, access-logs bucket, lifecycle bucket name."""
    if base_config_dir is not None:
        check_str("base_config_dir", base_config_dir, min_length=1, allowed="a local directory")
        if is_token(base_config_dir) or not Path(base_config_dir).is_dir():
            raise FmValidationError("base_config_dir", base_config_dir, "an existing local directory")
    commands = check_str_sequence("setup_commands", setup_commands)
    extra_groups = check_sequence("security_groups", security_groups, check_security_group)
    if access_logs_bucket is not None:
        check_construct("access_logs_bucket", access_logs_bucket, attribute="bucket_name", expected="an s3.IBucket")
    if lifecycle_bucket_name is not None:
        check_bucket_name("lifecycle_bucket_name", lifecycle_bucket_name)
        if not is_token(lifecycle_bucket_name) and not lifecycle_bucket_name.startswith(LIFECYCLE_BUCKET_PREFIX):
            raise FmValidationError(
                "lifecycle_bucket_name",
                lifecycle_bucket_name,
                "a name starting with 'sagemaker-' (ClusterLifeCycleConfig.SourceS3Uri must start with "
                "s3://sagemaker-)",
            )
    return tuple(commands), extra_groups


def _check_workspace(prometheus_workspace: Any, orchestrator: HyperPodOrchestrator) -> None:
    """An fmconstructs ``PrometheusWorkspace`` (or None), with Slurm orchestration only."""
    if prometheus_workspace is None:
        return
    check_construct(
        "prometheus_workspace",
        prometheus_workspace,
        attribute="remote_write_url",
        expected="an fmconstructs PrometheusWorkspace",
    )
    rules.prometheus_workspace_needs_slurm(True, orchestrator.kind is OrchestratorKind.SLURM)
