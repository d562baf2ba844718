"""HyperPodCluster: a SageMaker HyperPod cluster (``AWS::SageMaker::Cluster``) with Slurm or EKS orchestration.

Sources: CloudFormation ``AWS::SageMaker::Cluster`` (aws-cdk-lib ``aws_sagemaker.CfnCluster``), the botocore
``sagemaker`` model of ``CreateCluster``, SageMaker Developer Guide pages "sagemaker-hyperpod-prerequisites",
"sagemaker-hyperpod-prerequisites-iam", "sagemaker-hyperpod-eks-prerequisites" and the deep health check pages.
API-driven Slurm (``Orchestrator.Slurm``, ``InstanceGroups[].SlurmConfig``, ``LifeCycleConfig.OnInitComplete``,
``InstanceStorageConfigs[].FsxLustreConfig``): the botocore ``sagemaker`` model shipped with boto3 1.44.8 and
aws-cdk-lib 2.275 ``CfnCluster``; SageMaker API reference ClusterOrchestratorSlurmConfig and ClusterSlurmConfig;
SageMaker Developer Guide "sagemaker-hyperpod-slurm-api-config-migration" (only its introduction and table of
contents were readable); awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/Extensions (README files of
observability, add-users and detect-node; commit 0edaf15).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Fn, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    RemovedAttribute,
    check_construct,
    check_enum,
    check_scope_id,
    check_sequence,
    check_str,
    check_str_sequence,
    check_subnet,
    check_vpc,
    known,
    located,
)
from ..bootstrap import BootstrapDelivery, NodeBootstrap
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, is_token
from ..networking import EfaSecurityGroup
from ..observability.app_metrics import AppMetricsSpec
from ..observability.collection import NodeLabels, node_collection_commands
from ..observability.job_mapping import JobMappingSpec
from ..observability.slurm_job_mapping import JOB_MAPPING_PROLOG_FLAGS, check_app_metrics, check_job_mapping
from ..observability.sources import ExporterSource, check_exporter_source
from ..storage import LustreFileSystemBase
from ..storage.client import lustre_efa_interfaces, lustre_lnet_commands
from ..storage.data_repository import check_bucket_name
from . import _nag
from .access import session_command
from .data_safety import DEFAULT_REMOVAL_POLICY, check_removal_policy, warn_fixed_cluster_name
from .iam import (
    VPC_DESCRIBE_ACTIONS,
    VPC_ENI_ACTIONS,
    eks_execution_role_statements,
    execution_role_principal,
    vpc_statements,
)
from .instance_group_options import group_option_properties
from .lifecycle import (
    ON_CREATE,
    ON_INIT_COMPLETE,
    lifecycle_files,
    observability_commands,
    slurm_provisioning_parameters,
)
from .provisioning import (
    HyperPodAutoScaling,
    NodeProvisioningMode,
    TieredCheckpointing,
    check_group_orchestrator,
    check_provisioning,
    cluster_properties,
)
from .slurm_scripts import (
    PROLOG_FLAGS_STEP,
    SLURM_SCRIPTS_STEP,
    hyperpod_slurm_pieces,
    hyperpod_slurm_script_files,
    prolog_flags_commands,
)
from .storage_rules import LUSTRE_MOUNT_POINT, api_lustre_efa_interfaces, check_cluster_mount_point
from .types import (
    API_PARTITION_ALLOWED,
    API_PARTITION_MAX_LENGTH,
    API_PARTITION_PATTERN,
    DEFAULT_SLURM_CONFIG_STRATEGY,
    NAME_ALLOWED,
    NAME_PATTERN,
    HyperPodInstanceGroup,
    HyperPodLustreMount,
    NodeRecovery,
    SlurmConfigStrategy,
    SlurmConfiguration,
    SlurmNodeType,
)

#: The managed policy HyperPod documents for the cluster instance (execution) role (SageMaker Developer Guide
#: "sagemaker-hyperpod-prerequisites-iam", IAM role for SageMaker HyperPod).
INSTANCE_ROLE_MANAGED_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
#: VPC permissions of the execution role when the cluster has a VpcConfig ("sagemaker-hyperpod-prerequisites-iam";
#: statement list UNCONFIRMED verbatim: read from the page's summary, not its JSON). Since 0.2.x the interface
#: changes are scoped to the cluster's network (:func:`~fmconstructs.hyperpod.iam.vpc_statements`).
VPC_ACTIONS = (*VPC_ENI_ACTIONS, *VPC_DESCRIBE_ACTIONS)
#: Kubernetes versions SageMaker HyperPod documents for EKS orchestration: SageMaker Developer Guide "Getting started
#: with Amazon EKS support in SageMaker HyperPod" (sagemaker-hyperpod-eks-prerequisites,
#: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html), "Kubernetes version
#: support": "SageMaker HyperPod supports Kubernetes versions 1.30, 1.31, 1.32, 1.33, 1.34, and 1.35" (the page's
#: newest text seen, its Markdown source, 2026; older copies list 1.28-1.32, 1.28-1.33 and 1.28-1.34).
HYPERPOD_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")  # sagemaker-hyperpod-eks-prerequisites
#: The version ``TrainingPlatform`` gives HyperPod's EKS cluster: the newest one listed above, which aws-cdk-lib 2.275
#: offers (``aws_eks_v2.KubernetesVersion.V1_35``) with the kubectl layer package ``aws-cdk.lambda-layer-kubectl-v35``
#: (installed with fmconstructs; GpuEksCluster's own default, :data:`~fmconstructs.eks.versions.
#: DEFAULT_KUBERNETES_VERSION`).
HYPERPOD_DEFAULT_KUBERNETES_VERSION = "1.35"  # newest of the above; aws_eks_v2.KubernetesVersion.V1_35
#: EKS authentication modes HyperPod supports (same page): API and API_AND_CONFIG_MAP. API mode is what HyperPod needs
#: for its access entries, which it creates itself: the execution role's and its service-linked role's (SageMaker API
#: reference, ClusterMetadata: ``EksRoleAccessEntries`` and ``SlrAccessEntry`` are "created by HyperPod on your
#: behalf" for EKS-orchestrated clusters), so this construct adds none.
HYPERPOD_EKS_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
#: The warning id for an EKS version HyperPod does not document (to be added to WarningId by the lead).
KUBERNETES_VERSION_WARNING = WarningId.HYPERPOD_KUBERNETES_VERSION.qualified
#: The key prefix of the lifecycle scripts in the lifecycle bucket.
LIFECYCLE_PREFIX = "lifecycle/"
# LUSTRE_EFA_METADATA_KEY (storage.sizing) on the ``AWS::SageMaker::Cluster`` resource records, when fmconstructs'
# node set-up mounts an EFA-enabled file system (``SlurmConfiguration.API`` with ``HyperPodLustreMount.NODE_BOOTSTRAP``,
# or EKS), each instance group's EFA interfaces per node for LNet (0: over TCP; :data:`LUSTRE_EFA_DECIDED_ON_NODE`: a
# type the catalog lacks, whose node picks the count).
#: The marker's value for a group whose node decides its EFA interfaces for LNet (a string: CDK drops null values
#: from Metadata when it resolves the template).
LUSTRE_EFA_DECIDED_ON_NODE = "decided-on-node"
#: ``VpcConfig.Subnets``: 1-16; ``VpcConfig.SecurityGroupIds``: 1-5 (botocore sagemaker model).
MAX_SUBNETS = 16
#: HyperPod reads lifecycle scripts from a bucket whose name starts with ``sagemaker-``: the API reference
#: (ClusterLifeCycleConfig.SourceS3Uri, "Important: Make sure that the S3 bucket path starts with s3://sagemaker-")
#: ties it to AmazonSageMakerClusterInstanceRolePolicy, which allows S3 access only on that prefix.
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"
MAX_SECURITY_GROUPS = 5


def _source(name: str, value: Any) -> s3deploy.ISource:
    """A BucketDeployment source of one lifecycle file (JSON for mappings, text otherwise)."""
    return s3deploy.Source.json_data(name, value) if isinstance(value, dict) else s3deploy.Source.data(name, value)


class OrchestratorKind(str, Enum):
    SLURM = "slurm"
    EKS = "eks"


@dataclass(frozen=True)
class HyperPodOrchestrator:
    """Slurm (:meth:`slurm`: HyperPod's API-driven configuration, or the published lifecycle scripts) or EKS
    (``Orchestrator.Eks.ClusterArn``)."""

    kind: OrchestratorKind
    controller_group: str | None = None
    login_group: str | None = None
    eks_cluster: Any = None
    slurm_configuration: SlurmConfiguration | None = None
    slurm_config_strategy: SlurmConfigStrategy | None = None

    @classmethod
    def slurm(
        cls,
        *,
        controller_group: str,
        login_group: str | None = None,
        configuration: SlurmConfiguration | None = None,
        strategy: SlurmConfigStrategy | None = None,
    ) -> HyperPodOrchestrator:
        """Slurm. ``controller_group`` and ``login_group`` name instance groups (``SlurmConfig.NodeType`` Controller
        and Login; every other group is Compute, in the partition of its ``partition_name``).

        :param configuration: :class:`SlurmConfiguration`. Default (None): ``LIFECYCLE_SCRIPTS`` when the cluster
            gets a ``base_config_dir``, else ``API`` (HyperPod configures and starts Slurm).
        :param strategy: ``Orchestrator.Slurm.SlurmConfigStrategy`` (``API`` only). Default:
            :data:`~fmconstructs.hyperpod.types.DEFAULT_SLURM_CONFIG_STRATEGY` (``Managed``).
        """
        _check_slurm_fields(controller_group, login_group, configuration, strategy, "configuration", "strategy")
        return cls(OrchestratorKind.SLURM, controller_group, login_group, None, configuration, strategy)

    def __post_init__(self) -> None:
        """The direct constructor refuses what :meth:`slurm` and :meth:`eks` refuse (issue 18 section 5), and the
        fields of the other orchestrator."""
        kind = check_enum("kind", self.kind, OrchestratorKind)
        if kind is OrchestratorKind.SLURM:
            if self.eks_cluster is not None:
                raise FmValidationError("eks_cluster", self.eks_cluster, "None for OrchestratorKind.SLURM")
            _check_slurm_fields(
                self.controller_group,
                self.login_group,
                self.slurm_configuration,
                self.slurm_config_strategy,
                "slurm_configuration",
                "slurm_config_strategy",
            )
            return
        for name in ("controller_group", "login_group", "slurm_configuration", "slurm_config_strategy"):
            if getattr(self, name) is not None:
                raise FmValidationError(name, getattr(self, name), "None for OrchestratorKind.EKS (Slurm only)")
        _check_eks_cluster("eks_cluster", self.eks_cluster)

    def slurm_node_type(self, group_name: str) -> SlurmNodeType:
        """``SlurmConfig.NodeType`` of an instance group of this Slurm orchestrator."""
        if group_name == self.controller_group:
            return SlurmNodeType.CONTROLLER
        if group_name == self.login_group:
            return SlurmNodeType.LOGIN
        return SlurmNodeType.COMPUTE

    @classmethod
    def eks(cls, cluster: Any) -> HyperPodOrchestrator:
        """EKS: an fmconstructs ``GpuEksCluster`` (anything with ``cluster_arn``)."""
        _check_eks_cluster("cluster", cluster)
        return cls(OrchestratorKind.EKS, eks_cluster=cluster)


def _check_slurm_fields(
    controller_group: object,
    login_group: object,
    configuration: object,
    strategy: object,
    configuration_name: str,
    strategy_name: str,
) -> None:
    """What :meth:`HyperPodOrchestrator.slurm` and its direct constructor refuse (parameter names differ)."""
    check_str("controller_group", controller_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
    if login_group is not None:
        check_str("login_group", login_group, pattern=NAME_PATTERN, max_length=63, allowed=NAME_ALLOWED)
    if configuration is not None:
        check_enum(configuration_name, configuration, SlurmConfiguration)
    if strategy is not None:
        checked = check_enum(strategy_name, strategy, SlurmConfigStrategy)
        if configuration is SlurmConfiguration.LIFECYCLE_SCRIPTS:
            raise FmValidationError(
                strategy_name,
                checked.value,
                "None with SlurmConfiguration.LIFECYCLE_SCRIPTS (SlurmConfigStrategy is part of the API-driven "
                "Slurm configuration, Orchestrator.Slurm)",
            )


def _check_eks_cluster(parameter: str, cluster: object) -> None:
    """An EKS cluster HyperPod can orchestrate: anything with ``cluster_arn``, in an authentication mode HyperPod
    supports when known at synthesis."""
    check_construct(parameter, cluster, attribute="cluster_arn", expected="an fmconstructs.eks.GpuEksCluster")
    mode = _authentication_mode(cluster)
    if mode is not None and mode not in HYPERPOD_EKS_AUTHENTICATION_MODES:
        raise FmValidationError(
            parameter,
            f"an EKS cluster with authentication mode {mode}",
            "an EKS cluster whose authentication mode is API or API_AND_CONFIG_MAP "
            "(SageMaker Developer Guide, sagemaker-hyperpod-eks-prerequisites)",
        )


def _authentication_mode(cluster: Any) -> str | None:
    """``AccessConfig.AuthenticationMode`` of the EKS cluster when known at synthesis (its L1), else None."""
    inner = getattr(cluster, "cluster", None)
    resource = getattr(getattr(inner, "node", None), "default_child", None)
    access = getattr(resource, "access_config", None)
    mode = getattr(access, "authentication_mode", None) if access is not None else None
    if mode is None and isinstance(access, dict):
        mode = access.get("authenticationMode")
    return mode if isinstance(mode, str) and not is_token(mode) else None


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
    if mode is SlurmConfiguration.API and base_config_dir is not None:
        raise FmValidationError(
            "base_config_dir",
            base_config_dir,
            "None with SlurmConfiguration.API: HyperPod configures and starts Slurm itself, while the base-config's "
            "lifecycle_script.py reads provisioning_parameters.json (not uploaded with the API-driven configuration) "
            "and starts Slurm again; use "
            "HyperPodOrchestrator.slurm(configuration=SlurmConfiguration.LIFECYCLE_SCRIPTS)",
        )
    if mode is SlurmConfiguration.LIFECYCLE_SCRIPTS and base_config_dir is None:
        raise FmValidationError(
            "base_config_dir",
            None,
            "a local copy of HyperPod's published lifecycle scripts (awsome-distributed-training LifecycleScripts/"
            "base-config) with SlurmConfiguration.LIFECYCLE_SCRIPTS: without them nothing configures Slurm",
        )
    return mode


def _job_mapping(
    job_mapping: object, app_metrics: object, mode: SlurmConfiguration | None, workspace: Any
) -> tuple[JobMappingSpec | None, AppMetricsSpec | None]:
    """The job mapping and application metrics in effect: only with ``SlurmConfiguration.API`` and a workspace
    (fmconstructs' collectors); a spec given explicitly elsewhere is refused, the default ``True`` is dropped."""
    spec = check_job_mapping("job_mapping", job_mapping)
    app = check_app_metrics("app_metrics", app_metrics)
    if mode is SlurmConfiguration.API and workspace is not None:
        return spec, app
    if isinstance(job_mapping, JobMappingSpec):
        raise FmValidationError(
            "job_mapping",
            "a JobMappingSpec",
            "True, False or None without SlurmConfiguration.API and a prometheus_workspace (the job mapping labels "
            "fmconstructs' dcgm-exporter, which runs only then)",
        )
    return None, None


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
    if known(group_vpc) and known(vpc.vpc_id) and group_vpc != vpc.vpc_id:
        raise FmValidationError(
            "efa_security_group",
            f"{value.node.path} (VPC {group_vpc})",
            f"an EfaSecurityGroup in the cluster's VPC ({vpc.vpc_id})",
        )


def _lustre_mount(
    value: HyperPodLustreMount | None, mode: SlurmConfiguration | None, file_system: LustreFileSystemBase | None
) -> HyperPodLustreMount | None:
    """Who mounts the file system with the API-driven configuration (None otherwise)."""
    if value is not None:
        check_enum("lustre_mount", value, HyperPodLustreMount)
        if mode is not SlurmConfiguration.API or file_system is None:
            raise FmValidationError(
                "lustre_mount",
                value.value,
                "None unless the cluster uses SlurmConfiguration.API and has a file_system (with LIFECYCLE_SCRIPTS "
                "the base-config mounts it from provisioning_parameters.json)",
            )
    if mode is not SlurmConfiguration.API or file_system is None:
        return None
    return value or HyperPodLustreMount.NODE_BOOTSTRAP


def _exporter_source(value: object, mode: SlurmConfiguration | None, workspace: object) -> ExporterSource | None:
    """Where fmconstructs' collectors come from (API-driven configuration with a workspace), else None."""
    if value is not None:
        source = check_exporter_source("exporter_source", value)
        if mode is not SlurmConfiguration.API or workspace is None:
            raise FmValidationError(
                "exporter_source",
                value,
                "None unless the cluster uses SlurmConfiguration.API and has a prometheus_workspace (with "
                "LIFECYCLE_SCRIPTS the base-config installs its own collectors)",
            )
        return source
    if mode is not SlurmConfiguration.API or workspace is None:
        return None
    return ExporterSource.INTERNET


def _default_cluster_name(scope: Construct, id: str) -> str | None:
    stack_name = Stack.of(scope).stack_name
    if Token.is_unresolved(stack_name):
        return None
    name = re.sub(r"[^a-zA-Z0-9]+", "-", f"{stack_name}-{id}").strip("-")
    return name[:63].rstrip("-") or None


def _lifecycle_bucket_name(scope: Construct) -> str:
    """``sagemaker-fmc-<account>-<stack UUID, first 8>-<path hash, 6>``: at most 42 characters, deploy-time parts as
    tokens (the stack id ``arn:...:stack/<name>/<uuid>`` is new for every stack creation)."""
    stack_uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    path_hash = hashlib.sha256(scope.node.path.encode()).hexdigest()[:6]
    return Fn.join(
        "",
        [LIFECYCLE_BUCKET_PREFIX, "fmc-", Aws.ACCOUNT_ID, "-", Fn.select(0, Fn.split("-", stack_uuid)), "-", path_hash],
    )


class HyperPodCluster(Construct):
    """A SageMaker HyperPod cluster on ``AWS::SageMaker::Cluster``.

    :param vpc: the nodes' VPC (``VpcConfig``); may be imported by id.
    :param instance_groups: :class:`HyperPodInstanceGroup` list (unique names).
    :param orchestrator: :class:`HyperPodOrchestrator`: ``.slurm(controller_group=..., login_group=...)`` or
        ``.eks(gpu_eks_cluster)``. Slurm defaults to HyperPod's API-driven configuration (``Orchestrator.Slurm``
        with ``SlurmConfigStrategy``, each group's ``SlurmConfig``, ``OnInitComplete`` under ``lifecycle/<group>/``):
        HyperPod configures and starts Slurm, and the cluster is complete without any published lifecycle script.
    :param subnets: ``VpcConfig.Subnets`` (1-16). Default: the VPC's private subnets. Subnets without a known zone
        are accepted.
    :param cluster_name: ``ClusterName`` (1-63, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``). Default: ``<stack>-<id>``.
    :param node_recovery: ``NodeRecovery``. Default: :attr:`NodeRecovery.AUTOMATIC`.
    :param file_system: an fmconstructs Lustre file system, mounted at ``/fsx`` on every node; the node security group
        may reach it. ``SlurmConfiguration.API``: mounted as ``lustre_mount`` says. ``LIFECYCLE_SCRIPTS``: the
        provisioning parameters carry ``fsx_dns_name``/``fsx_mountname`` and the published ``lifecycle_script.py``
        mounts it (``mount_fsx.sh``); fmconstructs does not mount it a second time. EKS orchestration: the FSx CSI
        driver mounts it in pods (``GpuEksCluster.add_lustre_volume``, whose node DaemonSet runs on HyperPod's nodes
        too), so it is not mounted at ``/fsx``; the node security group may reach it (TCP 988, 1018-1023), and when
        it is EFA-enabled every GPU group whose type the catalog holds configures LNet over EFA in its ``OnCreate``
        lifecycle (:func:`~fmconstructs.storage.lustre_lnet_commands`: Lustre client when missing, LNet over EFA on
        the group's ``efa_interfaces_for_lustre`` interfaces, a systemd unit that redoes it at every boot; no mount),
        so the CSI driver's ``<dns>@tcp:/<mount name>`` mounts go over EFA, as GpuEksCluster's own node groups do
        from their launch templates. Each of those groups is registered against the file system's 1,024 EFA
        connections (``nodes`` x interfaces; synthesis fails above it) and its EFA group is opened to the file
        system's (no rules when they share one). With an EFA-enabled file system every instance group gets a
        lifecycle prefix of its own (``lifecycle/<group>/``, as with ``SlurmConfiguration.API``).
    :param mount_point: where the nodes mount ``file_system`` with ``SlurmConfiguration.API`` (fmconstructs' mount
        step, or HyperPod's ``FsxLustreConfig.MountPath``). Default :data:`LUSTRE_MOUNT_POINT` (``/fsx``), the only one
        accepted with ``base_config_dir`` (the published ``lifecycle_script.py`` mounts at ``/fsx``) and with EKS
        orchestration (pods mount the claim at the path of their own ``volumeMounts``; nothing mounts on the node).
    :param lustre_mount: :class:`HyperPodLustreMount` (``SlurmConfiguration.API`` with a ``file_system`` only).
        Default: ``NODE_BOOTSTRAP`` (the storage module's mount steps in fmconstructs' lifecycle script).
    :param base_config_dir: a local copy of HyperPod's published lifecycle scripts (awsome-distributed-training
        ``LifecycleScripts/base-config``), for ``SlurmConfiguration.LIFECYCLE_SCRIPTS``: uploaded beside
        fmconstructs' files; its ``lifecycle_script.py`` then runs after the fmconstructs steps (it configures Slurm,
        mounts the file system and, with ``prometheus_workspace``, runs its own collectors). Default: none
        (``SlurmConfiguration.API``: HyperPod configures Slurm, fmconstructs mounts the file system and installs its
        collectors).
    :param setup_commands: shell lines run on every node (a :class:`~fmconstructs.bootstrap.NodeBootstrap` step,
        rendered at construction into ``fmconstructs_setup.sh``; before the base-config with ``LIFECYCLE_SCRIPTS``,
        after the Lustre mount and collectors with ``API``).
    :param security_groups: up to 4 more groups for ``VpcConfig.SecurityGroupIds``.
    :param efa_security_group: the nodes' EFA group (an :class:`~fmconstructs.networking.EfaSecurityGroup` in
        ``vpc``), first in ``VpcConfig.SecurityGroupIds``: share one with an EFA-enabled file system
        (``LustreFileSystem(efa_security_group=...)``, made before the cluster) or with a ``GpuEksCluster``
        (``gpu_eks_cluster.efa_security_group``). The cluster adds its HTTPS-out rule to it. Default: a new one
        (``HyperPod nodes: EFA within the group, HTTPS out``).
    :param access_logs_bucket: where the lifecycle bucket writes S3 server access logs. Default: none.
    :param lifecycle_bucket_name: the lifecycle bucket's name; it must start with ``sagemaker-`` (HyperPod's
        ``SourceS3Uri`` requirement). Default: ``sagemaker-fmc-<account>-<first 8 of the stack id's UUID>-<6 hex of
        this construct's path>``, unique per stack creation, so a deleted stack's retained bucket never blocks a new
        one and StackSet instances get their own.
    :param prometheus_workspace: an fmconstructs ``PrometheusWorkspace`` (Slurm; FmObservability's): the execution
        role gets ``aps:RemoteWrite`` on it. ``SlurmConfiguration.API``: GPU groups run fmconstructs' node collectors
        (the exporters, EFA collector and Prometheus agent PCS GPU nodes get,
        :func:`~fmconstructs.observability.collection.node_collection_commands`) and the login group (else the
        controller group) also collects Slurm node states, all remote-writing to the workspace with labels
        ``cluster`` (the cluster name, or the construct id when CloudFormation names it), ``node_group``,
        ``queue`` (the partition, ``login``) and ``instance_type``. ``LIFECYCLE_SCRIPTS``: a setup step turns on the
        published base-config's own observability instead (``config.py``: ``Config.enable_observability = True``,
        ``ObservabilityConfig.prometheus_remote_write_url`` = the workspace's remote-write URL), so a node never runs
        two collector sets. Default: none.
    :param exporter_source: where fmconstructs' collectors come from (an
        :class:`~fmconstructs.observability.sources.ExporterSource`; ``API`` with ``prometheus_workspace``).
        Default: ``ExporterSource.INTERNET``.
    :param job_mapping: ``SlurmConfiguration.API`` with ``prometheus_workspace``: label every GPU series with the Slurm
        job using the GPU (``hpc_job``, the numeric job id), as ``monitor_pcs_cluster`` does on PCS: each GPU compute
        group's set-up copies the dcgm-exporter job mapping pieces into the HyperPod AMI's ``/opt/slurm/etc/prolog.d``
        and ``epilog.d`` and its exporter reads the mapping; the controller group's set-up adds ``Alloc`` to
        ``PrologFlags`` in ``slurm.conf`` (:mod:`fmconstructs.hyperpod.slurm_scripts`). ``True`` (default): the
        default :class:`~fmconstructs.observability.job_mapping.JobMappingSpec`; a spec to choose its directory (refused
        without the API configuration and a workspace); ``False`` or None: off.
    :param app_metrics: with the job mapping, also install the pieces that turn a job's declared metrics ports
        (``sbatch --comment="fm_metrics_ports=9300-9307"``) into ``fm-app`` targets of the GPU node's agent
        (:mod:`~fmconstructs.observability.app_metrics`). ``True`` (default), an ``AppMetricsSpec``, or ``False``/None.
    :param removal_policy: what CloudFormation does with the ``AWS::SageMaker::Cluster`` when it leaves the stack or is
        replaced (``DeletionPolicy`` and ``UpdateReplacePolicy``): ``RemovalPolicy.DESTROY`` (default, as before this
        option: the cluster, its nodes and their local storage are deleted; the lifecycle bucket and a file system
        are retained by their own policies) or ``RemovalPolicy.RETAIN`` (the cluster keeps running, and billing,
        outside the stack; delete it yourself; its network interfaces keep the subnets and security groups in use).
        See :mod:`fmconstructs.hyperpod.data_safety`.
    :param node_provisioning_mode: ``NodeProvisioningMode`` (:class:`~fmconstructs.hyperpod.provisioning.
        NodeProvisioningMode`): ``CONTINUOUS`` keeps groups InService while HyperPod launches and retries instances
        towards each group's ``nodes``. Default: not set (HyperPod's standard provisioning).
    :param auto_scaling: ``AutoScaling`` and ``ClusterRole`` (:class:`~fmconstructs.hyperpod.provisioning.
        HyperPodAutoScaling`): HyperPod's managed Karpenter autoscaling; EKS only, with ``CONTINUOUS`` provisioning and
        ``NodeRecovery.AUTOMATIC``. Without a ``cluster_role`` the cluster creates one (:attr:`autoscaling_role`).
        Default: not set.
    :param tiered_checkpointing: ``TieredStorageConfig`` (:class:`~fmconstructs.hyperpod.provisioning.
        TieredCheckpointing`): managed tiered checkpointing. Default: not set.

    Create-time choices: ``cluster_name``, ``vpc``/``subnets``/``security_groups``/``efa_security_group``
    (``VpcConfig``) and the EKS cluster of ``orchestrator`` are create-only properties of the resource: changing one
    replaces the cluster (a new, empty one), which fails and rolls back because the name is fixed (the default name
    ``<stack>-<id>`` too). A given ``cluster_name`` warns ``fmconstructs:hyperpod-fixed-cluster-name``.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        instance_groups: Sequence[HyperPodInstanceGroup],
        orchestrator: HyperPodOrchestrator,
        subnets: Sequence[ec2.ISubnet] | None = None,
        cluster_name: str | None = None,
        node_recovery: NodeRecovery = NodeRecovery.AUTOMATIC,
        file_system: LustreFileSystemBase | None = None,
        base_config_dir: str | None = None,
        setup_commands: Sequence[str] = (),
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        access_logs_bucket: s3.IBucket | None = None,
        lifecycle_bucket_name: str | None = None,
        prometheus_workspace: Any = None,
        lustre_mount: HyperPodLustreMount | None = None,
        exporter_source: ExporterSource | None = None,
        efa_security_group: EfaSecurityGroup | None = None,
        mount_point: str = LUSTRE_MOUNT_POINT,
        removal_policy: RemovalPolicy = DEFAULT_REMOVAL_POLICY,
        job_mapping: JobMappingSpec | bool | None = True,
        app_metrics: AppMetricsSpec | bool | None = True,
        node_provisioning_mode: NodeProvisioningMode | None = None,
        auto_scaling: HyperPodAutoScaling | None = None,
        tiered_checkpointing: TieredCheckpointing | None = None,
    ) -> None:
        check_scope_id(scope, id)
        check_vpc("vpc", vpc)
        _check_efa_security_group(efa_security_group, vpc)
        groups = check_sequence("instance_groups", instance_groups, _check_group)
        if not groups:
            raise FmValidationError("instance_groups", [], "at least one HyperPodInstanceGroup")
        names = [g.name for g in groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise FmValidationError("instance_groups", names, f"unique group names (repeated: {', '.join(duplicates)})")
        if not isinstance(orchestrator, HyperPodOrchestrator):
            raise FmTypeError("orchestrator", orchestrator, "a HyperPodOrchestrator (.slurm(...) or .eks(cluster))")
        if orchestrator.kind is OrchestratorKind.SLURM:
            for parameter, group in (
                ("controller_group", orchestrator.controller_group),
                ("login_group", orchestrator.login_group),
            ):
                if group is not None and group not in names:
                    raise FmValidationError(
                        f"orchestrator.{parameter}", group, f"one of the groups ({', '.join(names)})"
                    )
            if orchestrator.controller_group == orchestrator.login_group:
                raise FmValidationError(
                    "orchestrator.login_group", orchestrator.login_group, "a group other than the controller group"
                )
        chosen_subnets = (
            check_sequence("subnets", subnets, check_subnet) if subnets is not None else tuple(vpc.private_subnets)
        )
        if not 1 <= len(chosen_subnets) <= MAX_SUBNETS:
            raise FmValidationError("subnets", len(chosen_subnets), f"1-{MAX_SUBNETS} subnets (VpcConfig.Subnets)")
        if cluster_name is not None:
            check_str(
                "cluster_name", cluster_name, pattern=NAME_PATTERN, min_length=1, max_length=63, allowed=NAME_ALLOWED
            )
        check_enum("node_recovery", node_recovery, NodeRecovery)
        check_provisioning(
            node_provisioning_mode=node_provisioning_mode,
            auto_scaling=auto_scaling,
            tiered_checkpointing=tiered_checkpointing,
            eks=orchestrator.kind is OrchestratorKind.EKS,
            node_recovery=node_recovery,
        )
        check_group_orchestrator(groups, eks=orchestrator.kind is OrchestratorKind.EKS)
        removal_policy = check_removal_policy("removal_policy", removal_policy)
        if file_system is not None and not isinstance(file_system, LustreFileSystemBase):
            raise FmTypeError("file_system", file_system, "an fmconstructs LustreFileSystemBase")
        if base_config_dir is not None:
            check_str("base_config_dir", base_config_dir, min_length=1, allowed="a local directory")
            if is_token(base_config_dir) or not Path(base_config_dir).is_dir():
                raise FmValidationError("base_config_dir", base_config_dir, "an existing local directory")
        commands = check_str_sequence("setup_commands", setup_commands)
        extra_groups = check_sequence(
            "security_groups",
            security_groups,
            lambda p, v: check_construct(p, v, attribute="security_group_id", expected="an ec2.ISecurityGroup"),
        )
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
        if prometheus_workspace is not None:
            check_construct(
                "prometheus_workspace",
                prometheus_workspace,
                attribute="remote_write_url",
                expected="an fmconstructs PrometheusWorkspace",
            )
            if orchestrator.kind is not OrchestratorKind.SLURM:
                raise FmValidationError(
                    "prometheus_workspace",
                    "a PrometheusWorkspace",
                    "None for EKS orchestration (scrape the EKS cluster with fmconstructs.observability.eks)",
                )
        if len(extra_groups) > MAX_SECURITY_GROUPS - 1:
            raise FmValidationError("security_groups", len(extra_groups), f"at most {MAX_SECURITY_GROUPS - 1} groups")
        mode = _slurm_configuration(orchestrator, base_config_dir)
        if mode is SlurmConfiguration.API:
            _check_api_partitions(groups, orchestrator)
        mount = _lustre_mount(lustre_mount, mode, file_system)
        check_cluster_mount_point(mount_point, mode, file_system)
        source = _exporter_source(exporter_source, mode, prometheus_workspace)
        mapping, app = _job_mapping(job_mapping, app_metrics, mode, prometheus_workspace)
        eks_lustre_efa = (
            orchestrator.kind is OrchestratorKind.EKS and file_system is not None and file_system.efa_enabled
        )
        super().__init__(scope, id)
        self.instance_groups: tuple[HyperPodInstanceGroup, ...] = groups
        self.orchestrator = orchestrator
        self.file_system = file_system
        #: The dcgm-exporter job mapping the GPU compute groups keep (None: off) and the application metrics' spec.
        self.job_mapping: JobMappingSpec | None = mapping
        self.app_metrics: AppMetricsSpec | None = app

        # --- network: the EFA rules HyperPod documents (sagemaker-hyperpod-prerequisites: the security group allows
        # all inbound and outbound traffic to and from itself, for EFA) + HTTPS out for AWS APIs and S3. A given
        # EfaSecurityGroup already has the EFA rules; it gets the HTTPS rule too.
        self.efa_security_group = efa_security_group or EfaSecurityGroup(
            self, "EfaSecurityGroup", vpc=vpc, description="HyperPod nodes: EFA within the group, HTTPS out"
        )
        self.efa_security_group.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS APIs, S3 and ECR"
        )
        if file_system is not None:
            file_system.allow_clients_from(self.efa_security_group)
        group_ids = [self.efa_security_group.security_group_id, *(g.security_group_id for g in extra_groups)]
        if orchestrator.kind is OrchestratorKind.EKS:
            # Nodes join the EKS cluster: its cluster security group lets members reach the control plane
            # (UNCONFIRMED that HyperPod requires it in VpcConfig; EKS UG sec-group-reqs: the cluster security group).
            sg = getattr(orchestrator.eks_cluster, "cluster_security_group", None)
            if sg is not None and len(group_ids) < MAX_SECURITY_GROUPS:
                group_ids.append(sg.security_group_id)

        # --- lifecycle scripts: a bucket of their own, uploaded under one prefix (SourceS3Uri is a prefix).
        self.lifecycle_bucket = s3.Bucket(
            self,
            "LifecycleBucket",
            bucket_name=lifecycle_bucket_name or _lifecycle_bucket_name(self),
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs_bucket,
            server_access_logs_prefix="hyperpod-lifecycle/" if access_logs_bucket is not None else None,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.slurm_configuration: SlurmConfiguration | None = mode
        self.lustre_mount: HyperPodLustreMount | None = mount
        #: Where the nodes mount the file system (None without one, and with EKS orchestration: pods mount the claim).
        self.mount_point: str | None = (
            mount_point if file_system is not None and orchestrator.kind is OrchestratorKind.SLURM else None
        )
        self.cluster_name_given = cluster_name or _default_cluster_name(scope, id)
        #: Each instance group's node set-up (rendered at construction into its ``fmconstructs_setup.sh``). With
        #: ``SlurmConfiguration.API``, and with EKS and an EFA-enabled file system, every group has its own (and its
        #: own lifecycle prefix, ``lifecycle/<group>/``); otherwise all groups share one, under ``lifecycle/`` (beside
        #: the base-config with ``LIFECYCLE_SCRIPTS``).
        self.node_bootstraps: dict[str, NodeBootstrap] = {}
        self.provisioning_parameters: dict[str, Any] | None = None
        #: The instance groups that configure LNet over EFA for the cluster's EFA-enabled file system, and the EFA
        #: interfaces each of their nodes uses for it (None: decided on the node, for a type the catalog lacks).
        self.lustre_efa_interfaces: dict[str, int | None] = {}
        #: Whether each instance group has a lifecycle prefix of its own (``lifecycle/<group>/``):
        #: ``SlurmConfiguration.API``, or EKS with an EFA-enabled file system.
        self.per_group_lifecycle: bool = mode is SlurmConfiguration.API or eks_lustre_efa
        sources: list[s3deploy.ISource] = []
        if self.per_group_lifecycle:
            entry = ON_INIT_COMPLETE if mode is SlurmConfiguration.API else ON_CREATE
            for instance_group in groups:
                if mode is SlurmConfiguration.API:
                    bootstrap = self._api_group_bootstrap(
                        instance_group, file_system, mount, prometheus_workspace, source, commands, chosen_subnets
                    )
                else:
                    assert file_system is not None
                    bootstrap = self._eks_group_bootstrap(instance_group, file_system, commands, chosen_subnets)
                self.node_bootstraps[instance_group.name] = bootstrap
                files = lifecycle_files(None if bootstrap.is_empty else bootstrap.render(), None, entry=entry)
                sources += [_source(f"{instance_group.name}/{name}", value) for name, value in files.items()]
        else:
            bootstrap = NodeBootstrap(self, "Bootstrap", delivery=BootstrapDelivery.INLINE)
            if prometheus_workspace is not None:
                bootstrap.add_step("observability", observability_commands(prometheus_workspace.remote_write_url))
            if commands:
                bootstrap.add_commands(*commands)
            self.node_bootstraps = {g.name: bootstrap for g in groups}
            if mode is SlurmConfiguration.LIFECYCLE_SCRIPTS:
                workers = [
                    (g.name, g.partition_name or g.name)
                    for g in groups
                    if orchestrator.slurm_node_type(g.name) is SlurmNodeType.COMPUTE
                ]
                self.provisioning_parameters = slurm_provisioning_parameters(
                    controller_group=orchestrator.controller_group or "",
                    login_group=orchestrator.login_group,
                    worker_groups=workers,
                    fsx_dns_name=file_system.dns_name if file_system is not None else None,
                    fsx_mount_name=file_system.mount_name if file_system is not None else None,
                )
            files = lifecycle_files(
                None if bootstrap.is_empty else bootstrap.render(), self.provisioning_parameters, entry=ON_CREATE
            )
            sources = [_source(name, value) for name, value in files.items()]
            if base_config_dir is not None:
                sources.insert(0, s3deploy.Source.asset(base_config_dir))
        self.lifecycle_deployment = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            sources=sources,
            destination_bucket=self.lifecycle_bucket,
            destination_key_prefix=LIFECYCLE_PREFIX,
            prune=True,
            retain_on_delete=True,
        )
        self.lifecycle_s3_uri: str = Fn.join("", ["s3://", self.lifecycle_bucket.bucket_name, "/", LIFECYCLE_PREFIX])

        # --- execution role (least privilege: the documented managed policy, VPC ENI actions, lifecycle read; with
        # EKS also the VPC CNI, ECR and Pod Identity grants of AWS's HyperPod EKS IAM templates).
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=execution_role_principal(),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_MANAGED_POLICY)],
            description="SageMaker HyperPod instance groups",
        )
        # Interface changes only in the cluster's subnets and security groups (fmconstructs.hyperpod.iam).
        for statement in vpc_statements(
            self,
            vpc_id=vpc.vpc_id,
            subnet_ids=[s.subnet_id for s in chosen_subnets],
            security_group_ids=group_ids,
        ):
            self.execution_role.add_to_policy(statement)
        if orchestrator.kind is OrchestratorKind.EKS:
            # The VPC CNI's pod addresses, ECR pulls and EKS Pod Identity, as AWS's HyperPod EKS IAM templates grant
            # (fmconstructs.hyperpod.iam, which cites them).
            for statement in eks_execution_role_statements(
                self,
                eks_cluster_arn=orchestrator.eks_cluster.cluster_arn,
                vpc_id=vpc.vpc_id,
                subnet_ids=[s.subnet_id for s in chosen_subnets],
                security_group_ids=group_ids,
            ):
                self.execution_role.add_to_policy(statement)
        if prometheus_workspace is not None:
            prometheus_workspace.grant_remote_write(self.execution_role)
        if source is not None:
            source.grant_read(self.execution_role)  # an S3 mirror: read on its prefix; the internet: nothing
        self.execution_role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[self.lifecycle_bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}*")]
            )
        )
        self.execution_role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.lifecycle_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{LIFECYCLE_PREFIX}*"]}},
            )
        )

        # --- the cluster.
        orchestrator_property = None
        if mode is SlurmConfiguration.API:
            strategy = orchestrator.slurm_config_strategy or DEFAULT_SLURM_CONFIG_STRATEGY
            orchestrator_property = sagemaker.CfnCluster.OrchestratorProperty(
                slurm=sagemaker.CfnCluster.ClusterOrchestratorSlurmConfigProperty(slurm_config_strategy=strategy.value)
            )
        if orchestrator.kind is OrchestratorKind.EKS:
            orchestrator_property = sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=orchestrator.eks_cluster.cluster_arn
                )
            )
        # Continuous provisioning, autoscaling (and its ClusterRole), tiered checkpointing (.provisioning).
        current_api, self.autoscaling_role = cluster_properties(
            self,
            node_provisioning_mode=node_provisioning_mode,
            auto_scaling=auto_scaling,
            tiered_checkpointing=tiered_checkpointing,
        )
        self.resource = sagemaker.CfnCluster(
            self,
            "Resource",
            **current_api,
            cluster_name=self.cluster_name_given,
            instance_groups=[self._group_property(g) for g in groups],
            node_recovery=node_recovery.value,
            orchestrator=orchestrator_property,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=group_ids, subnets=[s.subnet_id for s in chosen_subnets]
            ),
        )
        self.resource.node.add_dependency(self.lifecycle_deployment)
        self.resource.apply_removal_policy(removal_policy)
        self.removal_policy: RemovalPolicy = removal_policy
        if cluster_name is not None:
            warn_fixed_cluster_name(self, cluster_name)
        own_mount = eks_lustre_efa or (mode is SlurmConfiguration.API and mount is HyperPodLustreMount.NODE_BOOTSTRAP)
        efa_fs = file_system is not None and file_system.efa_enabled
        self._write_plan_record(groups, lustre_over_efa=efa_fs and own_mount)
        if orchestrator.kind is OrchestratorKind.EKS:
            version = getattr(getattr(orchestrator.eks_cluster, "version", None), "version", None)
            if isinstance(version, str) and version not in HYPERPOD_KUBERNETES_VERSIONS:
                add_warning(
                    self,
                    WarningId.HYPERPOD_KUBERNETES_VERSION,
                    f"the EKS cluster runs Kubernetes {version}; SageMaker HyperPod documents "
                    f"{', '.join(HYPERPOD_KUBERNETES_VERSIONS)} (sagemaker-hyperpod-eks-prerequisites)",
                )
        policy = self.execution_role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            self.resource.node.add_dependency(policy)
        self.node_recovery = node_recovery
        _nag.acknowledge_cluster(self)

    def _write_plan_record(self, groups: Sequence[HyperPodInstanceGroup], *, lustre_over_efa: bool) -> None:
        """The plan record ``fmc plan`` reads; with Lustre over EFA, each group's EFA interfaces for LNet (or
        :data:`LUSTRE_EFA_DECIDED_ON_NODE`)."""
        marker: dict[str, int | str] | None = None
        if lustre_over_efa:
            counts = {g.name: self.lustre_efa_interfaces.get(g.name, 0) for g in groups}
            marker = {name: LUSTRE_EFA_DECIDED_ON_NODE if n is None else n for name, n in counts.items()}
        write_plan_record(self.resource, PlanKind.NODE_GROUP, backend="hyperpod", lustre_efa_interfaces=marker)

    def _api_group_bootstrap(
        self,
        group: HyperPodInstanceGroup,
        file_system: LustreFileSystemBase | None,
        mount: HyperPodLustreMount | None,
        workspace: Any,
        source: ExporterSource | None,
        commands: Sequence[str],
        subnets: Sequence[ec2.ISubnet],
    ) -> NodeBootstrap:
        """One group's set-up with the API-driven configuration: Lustre mount, collectors, then ``setup_commands``."""
        bootstrap = NodeBootstrap(self, f"Bootstrap-{group.name}", delivery=BootstrapDelivery.INLINE)
        if file_system is not None and mount is HyperPodLustreMount.NODE_BOOTSTRAP:
            spec = group.instance_spec
            interfaces = api_lustre_efa_interfaces(group)
            bootstrap.add_step(
                "lustre",
                file_system.mount_commands(
                    self.mount_point or LUSTRE_MOUNT_POINT,
                    instance_spec=spec,
                    gpudirect_storage=None if group.gpu else False,
                    efa_interfaces_for_lustre=interfaces,
                ),
            )
            efa_interfaces = lustre_efa_interfaces(
                efa_enabled=file_system.efa_enabled, instance_spec=spec, efa_interfaces_for_lustre=interfaces
            )
            if file_system.efa_enabled and efa_interfaces != 0:
                self.lustre_efa_interfaces[group.name] = efa_interfaces
            if file_system.efa_enabled and group.gpu and spec is None and efa_interfaces is None:
                # The mount script decides on the node (2 EFA interfaces with several EFA devices, else 1:
                # storage.lustre_efa_interfaces): it may use EFA, but the count is not known here.
                add_warning(
                    self,
                    WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN,
                    f"instance group {group.name!r} ({group.instance_type}) decides its EFA interfaces for Lustre on "
                    "the node (the instance catalog does not hold its type): they are not counted against the file "
                    "system's 1,024 EFA connections (set efa_interfaces_for_lustre, or register the type with "
                    "fmconstructs.register_instance_type)",
                )
            if efa_interfaces:
                self._register_lustre_efa_clients(bootstrap, group, file_system, efa_interfaces, subnets)
        node_type = self.orchestrator.slurm_node_type(group.name)
        slurm_states = node_type is SlurmNodeType.LOGIN or (
            node_type is SlurmNodeType.CONTROLLER and self.orchestrator.login_group is None
        )
        if workspace is not None and source is not None and (group.gpu or slurm_states):
            labels = NodeLabels(
                cluster=self.cluster_name_given or self.node.id,
                queue=(group.partition_name or group.name) if node_type is SlurmNodeType.COMPUTE else "login",
                node_group=group.name,
                instance_type=group.instance_type,
            )
            bootstrap.add_step(
                "observability",
                node_collection_commands(
                    remote_write_url=workspace.remote_write_url,
                    region=Stack.of(self).region,
                    labels=labels,
                    login_node=slurm_states,
                    exporter_source=source,
                    job_mapping=self.job_mapping if node_type is SlurmNodeType.COMPUTE and group.gpu else None,
                ),
            )
        if workspace is not None and source is not None and self.job_mapping is not None:
            self._add_slurm_scripts(bootstrap, group, node_type)
        if commands:
            bootstrap.add_commands(*commands)
        return bootstrap

    def _add_slurm_scripts(
        self, bootstrap: NodeBootstrap, group: HyperPodInstanceGroup, node_type: SlurmNodeType | None
    ) -> None:
        """The job mapping's pieces on a GPU compute group, the ``PrologFlags`` merge on the controller group
        (:mod:`fmconstructs.hyperpod.slurm_scripts`)."""
        if node_type is SlurmNodeType.COMPUTE and group.gpu:
            pieces = hyperpod_slurm_pieces(self.job_mapping, self.app_metrics)
            bootstrap.add_step(SLURM_SCRIPTS_STEP, files=hyperpod_slurm_script_files(pieces))
        elif node_type is SlurmNodeType.CONTROLLER and any(
            g.gpu and self.orchestrator.slurm_node_type(g.name) is SlurmNodeType.COMPUTE for g in self.instance_groups
        ):
            bootstrap.add_step(PROLOG_FLAGS_STEP, prolog_flags_commands(JOB_MAPPING_PROLOG_FLAGS))

    def _eks_group_bootstrap(
        self,
        group: HyperPodInstanceGroup,
        file_system: LustreFileSystemBase,
        commands: Sequence[str],
        subnets: Sequence[ec2.ISubnet],
    ) -> NodeBootstrap:
        """One group's ``OnCreate`` set-up with EKS orchestration and an EFA-enabled file system: LNet over EFA (GPU
        groups the catalog holds, unless ``efa_interfaces_for_lustre=0``), then ``setup_commands``.

        What this mirrors, and why in ``OnCreate``:

        - EKS User Guide "fsx-csi-tuning-efa" (Optimize Amazon FSx for Lustre performance on nodes (EFA)) sets EFA
          for Lustre up on the node itself, in the node group's eksctl ``preBootstrapCommands`` (EFA driver at least
          2.12.1, then the Lustre client's EFA configuration), before the node joins the cluster; the FSx CSI driver
          then mounts in pods. fmconstructs' EKS node groups do the same from their launch templates
          (``GpuNodeGroup.add_lustre_client``). HyperPod nodes have no launch template: their node set-up is the
          lifecycle script (SageMaker Developer Guide "sagemaker-hyperpod-eks-operate-cli-command-create-cluster":
          prepare a lifecycle script such as the sample ``on_create.sh``, upload it to S3, and add further set-up
          commands "to be executed during the HyperPod cluster provisioning stage"; ``LifeCycleConfig.OnCreate``
          runs "during cluster creation", botocore ``ClusterLifeCycleConfig``).
        - awsome-distributed-training 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/
          on_create_main.sh (commit ef3d0b1) does exactly this in OnCreate: when ``fi_info -p efa`` finds EFA it runs
          AWS's configure-efa-fsx-lustre-client ``setup.sh`` (the bundle the storage module's script mirrors), and
          falls back to standard (TCP) Lustre otherwise; the same file (and its ``on_create.sh``) rewrites the
          containerd configuration and moves ``/var/lib/kubelet`` in OnCreate, which suggests OnCreate runs before
          kubelet serves pods, hence before the CSI driver's first mount (UNCONFIRMED: no HyperPod page states the
          order; a node whose CSI mount came first would keep that mount's TCP path until it is remounted).
        - Whether HyperPod's EKS AMI ships the Lustre client and an EFA driver new enough for kefalnd is
          UNCONFIRMED (the sample only ``modprobe``s lnet/lustre); the storage script installs the client when it is
          missing and falls back to LNet over TCP, with a log line, on any EFA problem.

        The count (:func:`~fmconstructs.storage.lustre_efa_interfaces`: the type's FSx default or the group's
        ``efa_interfaces_for_lustre``) is registered against the file system's 1,024 EFA connections for ``nodes``
        nodes. Groups whose type the catalog does not hold (its EFA layout unknown) and CPU groups stay on TCP.
        """
        bootstrap = NodeBootstrap(self, f"Bootstrap-{group.name}", delivery=BootstrapDelivery.INLINE)
        spec = group.instance_spec
        if group.gpu and spec is not None:
            count = lustre_efa_interfaces(
                efa_enabled=True, instance_spec=spec, efa_interfaces_for_lustre=group.efa_interfaces_for_lustre
            )
            if count:
                bootstrap.add_step(
                    "lustre-lnet",
                    lustre_lnet_commands(instance_spec=spec, efa_interfaces_for_lustre=group.efa_interfaces_for_lustre),
                )
                self.lustre_efa_interfaces[group.name] = count
                self._register_lustre_efa_clients(bootstrap, group, file_system, count, subnets)
        elif group.gpu:
            self._warn_lustre_over_tcp(group)
        if commands:
            bootstrap.add_commands(*commands)
        return bootstrap

    def _warn_lustre_over_tcp(self, group: HyperPodInstanceGroup) -> None:
        add_warning(
            self,
            WarningId.HYPERPOD_LUSTRE_OVER_TCP,
            f"instance group {group.name!r} ({group.instance_type}) mounts the EFA-enabled file system over TCP: the "
            "instance catalog does not hold its type, so its EFA layout for Lustre is unknown (register it with "
            "fmconstructs.register_instance_type to use EFA)",
        )

    def _register_lustre_efa_clients(
        self,
        bootstrap: NodeBootstrap,
        group: HyperPodInstanceGroup,
        file_system: LustreFileSystemBase,
        efa_interfaces: int,
        subnets: Sequence[ec2.ISubnet],
    ) -> None:
        """EFA rules between the nodes' group and the file system's, and the group against the 1,024 budget."""
        if file_system.efa_security_group is not None:
            # Open EFA traffic between the nodes' group and the file system's (no rules when the file system shares
            # the nodes' group: allow_efa_clients_from skips its own group).
            file_system.allow_efa_clients_from(self.efa_security_group)
        # The file system's 1,024 EFA connection budget (FSx for Lustre User Guide "Configuring EFA clients": at most
        # 1,024 EFA connections per file system, one per client EFA interface used for LNet; every node of the group
        # counts) and the EFA security group / zone checks.
        file_system.register_efa_clients(
            bootstrap,
            max_nodes=group.nodes,
            efa_interfaces_per_node=efa_interfaces,
            efa_security_group=self.efa_security_group,
            subnets=subnets,
        )

    node_bootstrap = RemovedAttribute("node_bootstraps[<group name>] (one per instance group)")

    def lifecycle_s3_uri_of(self, group_name: str) -> str:
        """``LifeCycleConfig.SourceS3Uri`` of a group: ``lifecycle/<group>/`` with ``SlurmConfiguration.API`` or EKS
        with an EFA-enabled file system (:attr:`per_group_lifecycle`), else the shared ``lifecycle/``."""
        if not self.per_group_lifecycle:
            return self.lifecycle_s3_uri
        return Fn.join("", [self.lifecycle_s3_uri, group_name, "/"])

    def _group_property(self, group: HyperPodInstanceGroup) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
        checks = group.effective_deep_health_checks
        storage: list[sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty] = []
        if group.extra_ebs_gib is not None:
            storage.append(
                sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                    ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                        volume_size_in_gb=group.extra_ebs_gib
                    )
                )
            )
        if self.lustre_mount is HyperPodLustreMount.HYPERPOD and self.file_system is not None:
            storage.append(
                sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                    fsx_lustre_config=sagemaker.CfnCluster.ClusterFsxLustreConfigProperty(
                        dns_name=self.file_system.dns_name,
                        mount_name=self.file_system.mount_name,
                        mount_path=self.mount_point or LUSTRE_MOUNT_POINT,
                    )
                )
            )
        slurm_config = None
        if self.slurm_configuration is SlurmConfiguration.API:
            node_type = self.orchestrator.slurm_node_type(group.name)
            slurm_config = sagemaker.CfnCluster.ClusterSlurmConfigProperty(
                node_type=node_type.value,
                partition_names=([group.partition_name or group.name] if node_type is SlurmNodeType.COMPUTE else None),
            )
            life_cycle = sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                on_init_complete=ON_INIT_COMPLETE, source_s3_uri=self.lifecycle_s3_uri_of(group.name)
            )
        else:
            life_cycle = sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                on_create=ON_CREATE, source_s3_uri=self.lifecycle_s3_uri_of(group.name)
            )
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            execution_role=self.execution_role.role_arn,
            instance_count=group.nodes,
            instance_group_name=group.name,
            instance_type=group.instance_type,
            life_cycle_config=life_cycle,
            threads_per_core=group.threads_per_core,
            instance_storage_configs=storage or None,
            on_start_deep_health_checks=[c.value for c in checks] or None,
            training_plan_arn=group.capacity.training_plan_arn,
            slurm_config=slurm_config,
            **group_option_properties(group),
        )

    @property
    def cluster_arn(self) -> str:
        """``Fn::GetAtt ClusterArn``."""
        return self.resource.attr_cluster_arn

    @property
    def cluster_name(self) -> str:
        """The cluster's name (given, or ``<stack>-<id>``; for an environment-agnostic stack name, the ARN)."""
        return self.cluster_name_given or self.resource.attr_cluster_arn

    @property
    def cluster_id(self) -> str:
        """The cluster id: the last part of ``ClusterArn`` (``arn:...:cluster/<12 characters>``, botocore sagemaker
        model ``ClusterArn`` pattern), the ``<cluster-id>`` of Session Manager targets."""
        return Fn.select(1, Fn.split("/", self.cluster_arn))

    @property
    def login_command(self) -> str | None:
        """Slurm: an AWS CLI command that opens a shell through Session Manager on a running node of the login group
        (else the controller group); None with EKS orchestration (:func:`~fmconstructs.hyperpod.access.
        session_command`)."""
        orchestrator = self.orchestrator
        if orchestrator.kind is not OrchestratorKind.SLURM:
            return None
        group = orchestrator.login_group or orchestrator.controller_group or ""
        return session_command(cluster_id=self.cluster_id, cluster_name=self.cluster_name, group=group)

    @property
    def security_group(self) -> ec2.ISecurityGroup:
        return self.efa_security_group.security_group

    @property
    def connections(self) -> ec2.Connections:
        return self.efa_security_group.connections
