"""Value objects of :class:`~fmconstructs.platform.TrainingPlatform`: the storage objective, the observability
choice and one small options object per orchestrator backend.

Each options object carries only what its backend needs besides the platform's shared choices (instance type, node
count, capacity, subnet, storage, observability); every field names the backend prop it feeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from .._renames import RenamedAttribute, renamed_keywords
from .._replacement import check_removal_policy
from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_instance,
    check_kms_key,
    check_number,
    check_optional_count,
    check_sequence,
    check_str,
)
from .._validate_ids import (
    EKS_CLUSTER_NAME,
    PARALLELCLUSTER_CLUSTER_NAME,
    PARALLELCLUSTER_QUEUE_NAME,
    PCS_QUEUE_NAME,
    SAGEMAKER_INSTANCE_GROUP_NAME,
    ServiceId,
    check_service_id,
)
from .._validate_k8s import check_dns_subdomain, check_namespace
from ..capacity import CapacityBlockScaling
from ..catalog import check_instance_type
from ..eks.node_group import check_mount_point
from ..eks.versions import check_kubernetes_version
from ..errors import FmValidationError, is_token
from ..hyperpod import HYPERPOD_KUBERNETES_VERSIONS, HyperPodCapacity
from ..hyperpod.data_safety import DEFAULT_REMOVAL_POLICY as HYPERPOD_DEFAULT_REMOVAL_POLICY
from ..hyperpod.data_safety import check_removal_policy as check_hyperpod_removal_policy
from ..hyperpod.eks_dependencies import HyperPodDependenciesChart
from ..images import GpuNodeImage
from ..observability.grafana import GrafanaNetworkAccess, GrafanaWorkspace
from ..observability.sources import ExporterSource
from ..observability.workspace import PrometheusWorkspace
from ..parallelcluster import Monitoring, OperatingSystem, QueueUpdateStrategy
from ..parallelcluster.accounting import ExternalSlurmdbd, SlurmDatabase, check_slurm_accounting
from ..parallelcluster.cluster import DEFAULT_VERSION as PARALLELCLUSTER_DEFAULT_VERSION
from ..pcs import AccountingMode, ControllerSize, PcsAmi, SlurmVersion
from ..pcs.cluster import check_accounting_purge_days
from ..pcs.instance_health import (
    PcsInstanceHealthChecks,
    PcsNodeLifecycleActions,
    check_instance_health_checks,
    check_node_lifecycle_actions,
)
from ..pcs.slurm import DEFAULT_SLURM_VERSION
from ..storage import (
    DEFAULT_LAYOUT,
    DataRepositoryLink,
    LustreDeploymentType,
    LustreSizing,
    size_for_checkpoint,
    size_for_throughput,
)
from ..storage.sizing import THROUGHPUT_MBPS_PER_TIB
from . import rules
from .elastic import EksGpuCapacity

#: The highest PERSISTENT_2 tier (MB/s/TiB): the smallest file system for a throughput objective
#: (:func:`~fmconstructs.storage.size_for_throughput`'s own default).
DEFAULT_THROUGHPUT_MBPS_PER_TIB = THROUGHPUT_MBPS_PER_TIB[LustreDeploymentType.PERSISTENT_2][-1]


class StorageObjective(str, Enum):
    """How :class:`PlatformStorage` sizes the file system."""

    THROUGHPUT = "throughput"
    CHECKPOINT = "checkpoint"
    CAPACITY = "capacity"


def _check_link(parameter: str, value: object) -> DataRepositoryLink:
    checked: DataRepositoryLink = check_instance(parameter, value, DataRepositoryLink, "a DataRepositoryLink")
    return checked


def _check_known_positive(parameter: str, value: object, unit: str) -> Any:
    """A positive number known at synthesis (it sizes the file system)."""
    number = check_number(parameter, value, minimum=0, exclusive_minimum=True, unit=unit)
    if is_token(number):
        raise FmValidationError(parameter, value, f"a number of {unit} known at synthesis (it sizes the file system)")
    return number


@dataclass(frozen=True, kw_only=True)
class PlatformStorage:
    """An FSx for Lustre PERSISTENT_2 file system sized from an objective and linked to an S3 bucket.

    Build it with :meth:`for_throughput`, :meth:`for_checkpoint` or :meth:`of_capacity`.

    Create-time choices: ``efa_enabled`` (and what flips it: the orchestrator, HyperPod ``base_config_dir``),
    ``encryption_key``, ``throughput_mbps_per_tib`` and the platform's subnet (zone) make CloudFormation REPLACE the
    file system when changed after the first deploy (a new, empty ``/fsx``; the old one stays, billed). The size may
    only grow: once deployed, pass ``min_capacity_gib=<the deployed capacity>``. A ``layout`` link whose path, prefix
    or bucket changes cannot be replaced in one deploy (see :class:`~fmconstructs.storage.DataRepositoryAssociation`).

    :param data_bucket: the bucket the file system links to. Default (None): a new
        :class:`~fmconstructs.storage.DataRepositoryBucket` (versioned, encrypted, TLS only, public access blocked,
        RETAIN).
    :param layout: the data repository associations. Default :data:`~fmconstructs.storage.DEFAULT_LAYOUT`:
        ``/datasets`` (import) and ``/checkpoints`` (import and export).
    :param mount_point: where nodes mount the file system. Default ``/fsx``, the only one HyperPod accepts with
        ``base_config_dir`` (the published lifecycle scripts mount at ``/fsx``) and on EKS (pods mount the claim).
    :param efa_enabled: an EFA-enabled file system sharing the nodes' EFA security group. Default (None): True for
        PCS, ParallelCluster, EKS, HyperPod Slurm (fmconstructs' node set-up mounts it over EFA) and HyperPod on EKS
        (the GPU group's OnCreate lifecycle configures LNet over EFA; the FSx CSI driver mounts). HyperPod with
        ``base_config_dir`` (the published lifecycle scripts mount over TCP) requires an explicit False.
    :param access_logs_bucket: server access logs of a new data bucket (prefix ``data/``); it takes precedence over
        ``TrainingPlatform(access_logs_bucket=...)`` for that bucket. Default: none (the platform's, if given). Refused
        with ``data_bucket`` (the platform creates no bucket then).
    :param removal_policy: what ``cdk destroy`` (or removing the storage) does to the file system, its data
        repository associations and a new data bucket. Default ``RemovalPolicy.RETAIN``: they stay, and stay billed:
        the FSx file system (storage and throughput capacity), its user-initiated backups, the data bucket with
        every object version (the bucket's lifecycle rules keep expiring noncurrent versions after 7 days), and the
        CloudFormation stack no longer knows them (delete them in the FSx and S3 consoles, or import them into
        another stack). ``RemovalPolicy.DESTROY`` for a throw-away test platform: the file system is deleted with its
        data (back it up first if it matters), and the new bucket is deleted only if it is empty (every version and
        delete marker): empty it first, or CloudFormation reports DELETE_FAILED for it and leaves it. For a test
        platform whose bucket goes too, pass ``data_bucket=s3.Bucket(..., removal_policy=RemovalPolicy.DESTROY,
        auto_delete_objects=True)`` (or ``DataRepositoryBucket(..., auto_delete_objects=True)``).
    :param encryption_key: a customer managed key (``kms.IKey``) for the file system and a new data bucket (SSE-KMS
        with a bucket key; a ``kms.Key`` of the app also gets the key policy statement FSx's S3 access roles need).
        Default (None): AWS managed keys (FSx's ``aws/fsx`` key; SSE-S3 for the bucket). ``kms_key`` is its deprecated
        name (a ``DeprecationWarning``; removed in fmconstructs 0.4.0).
    """

    objective: StorageObjective
    target_gbytes_per_s: float | None = None
    checkpoint_bytes: float | None = None
    checkpoint_seconds: float | None = None
    storage_capacity_gib: int | None = None
    throughput_mbps_per_tib: int = DEFAULT_THROUGHPUT_MBPS_PER_TIB
    min_capacity_gib: int = 0
    data_bucket: s3.IBucket | None = None
    layout: Sequence[DataRepositoryLink] = DEFAULT_LAYOUT
    mount_point: str = "/fsx"
    efa_enabled: bool | None = None
    access_logs_bucket: s3.IBucket | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN
    encryption_key: kms.IKey | None = None
    #: Deprecated name of :attr:`encryption_key` (until fmconstructs 0.4.0).
    kms_key = RenamedAttribute("encryption_key")

    def __post_init__(self) -> None:
        check_enum("objective", self.objective, StorageObjective)
        if self.objective is StorageObjective.THROUGHPUT:
            _check_known_positive("target_gbytes_per_s", self.target_gbytes_per_s, "GB/s")
        elif self.objective is StorageObjective.CHECKPOINT:
            _check_known_positive("checkpoint_bytes", self.checkpoint_bytes, "bytes")
            _check_known_positive("checkpoint_seconds", self.checkpoint_seconds, "seconds")
        else:
            # A deploy-time capacity (a CfnParameter) is passed on: there is nothing to size (FSx checks the steps).
            check_count("storage_capacity_gib", self.storage_capacity_gib, minimum=1)
        check_count("throughput_mbps_per_tib", self.throughput_mbps_per_tib, minimum=1)
        check_count("min_capacity_gib", self.min_capacity_gib)
        if self.data_bucket is not None:
            check_construct("data_bucket", self.data_bucket, attribute="bucket_name", expected="an s3.IBucket")
        object.__setattr__(self, "layout", check_sequence("layout", self.layout, _check_link))
        check_mount_point("mount_point", self.mount_point)
        if self.efa_enabled is not None:
            check_bool("efa_enabled", self.efa_enabled)
        if self.access_logs_bucket is not None:
            check_construct(
                "access_logs_bucket", self.access_logs_bucket, attribute="bucket_name", expected="an s3.IBucket"
            )
            rules.access_logs_only_for_the_platform_bucket(
                access_logs_bucket=self.access_logs_bucket.node.path, data_bucket_given=self.data_bucket is not None
            )
        check_enum("removal_policy", self.removal_policy, RemovalPolicy)
        if self.encryption_key is not None:
            check_kms_key("encryption_key", self.encryption_key)

    @classmethod
    def for_throughput(cls, *, target_gbytes_per_s: float, **options: Any) -> PlatformStorage:
        """The smallest file system whose baseline throughput reaches ``target_gbytes_per_s`` GB/s
        (:func:`~fmconstructs.storage.size_for_throughput`). ``options``: the other fields; once deployed, pass
        ``min_capacity_gib=<the deployed capacity>`` so that a lower target never shrinks it (FSx cannot)."""
        return cls(objective=StorageObjective.THROUGHPUT, target_gbytes_per_s=target_gbytes_per_s, **options)

    @classmethod
    def for_checkpoint(cls, *, checkpoint_bytes: float, checkpoint_seconds: float, **options: Any) -> PlatformStorage:
        """The smallest file system that absorbs a ``checkpoint_bytes`` checkpoint in ``checkpoint_seconds``
        (:func:`~fmconstructs.storage.size_for_checkpoint`). ``options``: the other fields; once deployed, pass
        ``min_capacity_gib=<the deployed capacity>`` so that a smaller objective never shrinks it (FSx cannot)."""
        return cls(
            objective=StorageObjective.CHECKPOINT,
            checkpoint_bytes=checkpoint_bytes,
            checkpoint_seconds=checkpoint_seconds,
            **options,
        )

    @classmethod
    def of_capacity(cls, *, storage_capacity_gib: int, **options: Any) -> PlatformStorage:
        """A file system of exactly ``storage_capacity_gib`` (the file system construct checks the capacity steps).

        The capacity may be a deploy-time value (``CfnParameter(...).value_as_number``): the platform then has no
        sizing decision (``TrainingPlatform.sizing`` is None), adds no saturation alarms (their thresholds need the
        capacity) and FSx checks the capacity steps at deploy time."""
        return cls(objective=StorageObjective.CAPACITY, storage_capacity_gib=storage_capacity_gib, **options)

    def size(self, *, efa_enabled: bool) -> LustreSizing | None:
        """The sizing decision for this objective (the storage module's sizing functions, PERSISTENT_2); None for
        :meth:`of_capacity` with a deploy-time capacity."""
        if self.objective is StorageObjective.THROUGHPUT:
            assert self.target_gbytes_per_s is not None
            return size_for_throughput(
                target_gbytes_per_s=self.target_gbytes_per_s,
                throughput_mbps_per_tib=self.throughput_mbps_per_tib,
                efa_enabled=efa_enabled,
                min_capacity_gib=self.min_capacity_gib,
            )
        if self.objective is StorageObjective.CHECKPOINT:
            assert self.checkpoint_bytes is not None and self.checkpoint_seconds is not None
            return size_for_checkpoint(
                self.checkpoint_bytes,
                self.checkpoint_seconds,
                throughput_mbps_per_tib=self.throughput_mbps_per_tib,
                efa_enabled=efa_enabled,
                min_capacity_gib=self.min_capacity_gib,
            )
        assert self.storage_capacity_gib is not None
        if is_token(self.storage_capacity_gib):
            return None
        return LustreSizing(
            LustreDeploymentType.PERSISTENT_2, self.storage_capacity_gib, self.throughput_mbps_per_tib, efa_enabled
        )


# PlatformStorage(kms_key=) keeps working, with a DeprecationWarning, until fmconstructs 0.4.0.
PlatformStorage.__init__ = renamed_keywords(  # type: ignore[method-assign]
    "PlatformStorage", kms_key="encryption_key"
)(PlatformStorage.__init__)


@dataclass(frozen=True, kw_only=True)
class PlatformObservability:
    """Where metrics and alerts go: a new Amazon Managed Prometheus workspace (and Managed Grafana workspace), or
    existing ones (e.g. another stack's). Build it with :meth:`new` or :meth:`existing`.

    Network exposure of a new Grafana workspace: by default (``grafana_network_access`` None) its URL is reachable
    from every network and protected by sign-in (IAM Identity Center); with a
    :class:`~fmconstructs.observability.grafana.GrafanaNetworkAccess` only the listed CIDRs, prefix lists and VPC
    endpoints reach it (AWS::Grafana::Workspace ``NetworkAccessControl``), and the platform provisions the data
    source and dashboards from inside its own VPC and subnet (list the ``grafana-workspace`` interface endpoint of
    that VPC in ``vpc_endpoint_ids``, or its NAT gateways' addresses in ``allowed_cidrs``, so the provisioner is let
    in).
    """

    prometheus_workspace: PrometheusWorkspace | None = None
    grafana_workspace: GrafanaWorkspace | None = None
    create_grafana: bool = False
    alias: str | None = None
    grafana_network_access: GrafanaNetworkAccess | None = None

    def __post_init__(self) -> None:
        if self.prometheus_workspace is not None:
            check_instance(
                "prometheus_workspace", self.prometheus_workspace, PrometheusWorkspace, "a PrometheusWorkspace"
            )
        if self.grafana_workspace is not None:
            check_instance("grafana_workspace", self.grafana_workspace, GrafanaWorkspace, "a GrafanaWorkspace")
            rules.existing_grafana_needs_its_prometheus(
                grafana_given=True, prometheus_given=self.prometheus_workspace is not None
            )
        check_bool("create_grafana", self.create_grafana)
        if self.grafana_network_access is not None:
            check_instance(
                "grafana_network_access", self.grafana_network_access, GrafanaNetworkAccess, "a GrafanaNetworkAccess"
            )
            rules.grafana_network_access_needs_a_new_grafana(
                grafana_network_access=self.grafana_network_access,
                create_grafana=self.create_grafana,
                prometheus_given=self.prometheus_workspace is not None,
            )
        if self.alias is not None:
            check_str("alias", self.alias, min_length=1, max_length=100, allowed="1-100 characters")
        _refuse_contradictions(self)

    @property
    def is_new(self) -> bool:
        return self.prometheus_workspace is None

    @classmethod
    def new(
        cls,
        *,
        grafana: bool = True,
        alias: str | None = None,
        grafana_network_access: GrafanaNetworkAccess | None = None,
    ) -> PlatformObservability:
        """A new Prometheus workspace (alert rules, Alertmanager to an encrypted SNS topic) and, with ``grafana``
        (default True), a Managed Grafana workspace provisioned with its data source and dashboards.

        :param grafana_network_access: only these networks reach the Grafana workspace. Default None: every network
            (sign-in still required). See the class docstring for what the provisioner then needs.
        """
        return cls(create_grafana=grafana, alias=alias, grafana_network_access=grafana_network_access)

    @classmethod
    def existing(
        cls, *, prometheus_workspace: PrometheusWorkspace, grafana_workspace: GrafanaWorkspace | None = None
    ) -> PlatformObservability:
        """Send to an existing workspace (e.g. FmObservability's); ``grafana_workspace`` only adds its URL as an
        output (it must already read ``prometheus_workspace``)."""
        if prometheus_workspace is None:
            raise FmValidationError("prometheus_workspace", None, "a PrometheusWorkspace")
        return cls(prometheus_workspace=prometheus_workspace, grafana_workspace=grafana_workspace)


def _refuse_contradictions(choice: PlatformObservability) -> None:
    """``create_grafana`` and ``alias`` describe new workspaces: refused beside an existing Prometheus workspace
    (they would be silently ignored)."""
    rules.new_workspace_options_need_a_new_workspace(
        prometheus_given=choice.prometheus_workspace is not None,
        create_grafana=choice.create_grafana,
        alias=choice.alias,
    )


def _check_name(parameter: str, value: object) -> str:
    checked: str = check_str(parameter, value, min_length=1, allowed="a non-empty name")
    return checked


def _check_id(parameter: str, value: object, kind: ServiceId) -> str:
    """A name the service itself checks (fmconstructs._validate_ids: the service's pattern and lengths)."""
    checked: str = check_service_id(parameter, value, kind)
    return checked


@dataclass(frozen=True, kw_only=True)
class PcsOptions:
    """AWS PCS (:class:`~fmconstructs.pcs.PcsCluster`, :class:`~fmconstructs.pcs.PcsGpuNodeGroup`).

    :param ami: the GPU nodes' :class:`~fmconstructs.pcs.PcsAmi` (PCS agent, Slurm, EFA and the NVIDIA driver).
    :param login_ami: the login nodes' AMI. Default: ``ami``.
    :param login_nodes: login nodes (``PcsLoginNodeGroup.nodes``); 0 for no login node group. Default 1.
    :param login_instance_type: default ``m7i.xlarge`` (``PcsLoginNodeGroup``'s default).
    :param slurm_version: default :data:`~fmconstructs.pcs.slurm.DEFAULT_SLURM_VERSION` (pinned).
    :param queue_name: the Slurm partition of the GPU nodes. Default ``gpu``.
    :param scale_down_idle_time: ``PcsCluster.scale_down_idle_time``. Default: PCS's.
    :param exporter_source: where nodes get the collectors (``monitor_pcs_cluster``). Default: its default.
    :param size: the PCS controller size (``PcsCluster.size``). Default None: the smallest that holds the GPU and login
        nodes (at least MEDIUM when a count is a deploy-time value). Changing it replaces the cluster.
    :param removal_policy: ``PcsCluster.removal_policy``. Default None: RETAIN with Slurm accounting (the cluster holds
        the job history), DESTROY without.
    :param accounting: ``PcsCluster.accounting``: :class:`~fmconstructs.pcs.AccountingMode` STANDARD turns on PCS
        managed Slurm accounting (``sacct`` job history with user and account; ``sacctmgr`` users, accounts, limits);
        billed by PCS, and it cannot be turned off again without a new cluster. Default NONE.
    :param accounting_purge_time_days: ``PcsCluster.accounting_purge_time_days``: how long accounting records are kept,
        -1 (forever) or 1 .. 10000 days; STANDARD only. Default: PCS's (-1).
    :param instance_health_checks: PCS's own instance health checks on the GPU node group
        (``PcsGpuNodeGroup.instance_health_checks``; Slurm 26.05 or later). Default None: not managed.
    :param node_lifecycle_actions: PCS node lifecycle scripts of the GPU node group
        (``PcsGpuNodeGroup.node_lifecycle_actions``). Default None.
    """

    ami: PcsAmi
    login_ami: PcsAmi | None = None
    login_nodes: int = 1
    login_instance_type: str = "m7i.xlarge"
    slurm_version: SlurmVersion = DEFAULT_SLURM_VERSION
    queue_name: str = "gpu"
    scale_down_idle_time: Duration | None = None
    exporter_source: ExporterSource | None = None
    size: ControllerSize | None = None
    removal_policy: RemovalPolicy | None = None
    accounting: AccountingMode = AccountingMode.NONE
    accounting_purge_time_days: int | None = None
    instance_health_checks: PcsInstanceHealthChecks | None = None
    node_lifecycle_actions: PcsNodeLifecycleActions | None = None

    def __post_init__(self) -> None:
        if self.removal_policy is not None:
            check_removal_policy("removal_policy", self.removal_policy)
        check_instance_health_checks("instance_health_checks", self.instance_health_checks)
        check_node_lifecycle_actions("node_lifecycle_actions", self.node_lifecycle_actions)
        check_enum("accounting", self.accounting, AccountingMode)
        check_accounting_purge_days(self.accounting, self.accounting_purge_time_days)
        check_instance("ami", self.ami, PcsAmi, "a PcsAmi (PcsAmi.from_image_id or .from_ssm_parameter)")
        if self.login_ami is not None:
            check_instance("login_ami", self.login_ami, PcsAmi, "a PcsAmi")
        check_count("login_nodes", self.login_nodes)
        check_instance_type("login_instance_type", self.login_instance_type)
        check_enum("slurm_version", self.slurm_version, SlurmVersion)
        _check_id("queue_name", self.queue_name, PCS_QUEUE_NAME)
        if self.scale_down_idle_time is not None:
            check_instance("scale_down_idle_time", self.scale_down_idle_time, Duration, "a Duration")
        if self.exporter_source is not None:
            check_instance("exporter_source", self.exporter_source, ExporterSource, "an ExporterSource")
        if self.size is not None:
            check_enum("size", self.size, ControllerSize)


@dataclass(frozen=True, kw_only=True)
class ParallelClusterOptions:
    """AWS ParallelCluster (:class:`~fmconstructs.parallelcluster.ParallelCluster`).

    :param head_node_instance_type: default: by the GPU type's architecture, ``c7i.2xlarge`` for x86_64 and the
        Graviton ``c7g.2xlarge`` for arm64 (P6e-GB200): ParallelCluster refuses a head node whose architecture is not
        the compute nodes' (InstanceArchitectureCompatibilityValidator; ``head_node_instance_type_for``).
    :param login_nodes: nodes of one login pool; 0 for none. Default 1.
    :param login_instance_type: default: ``c7i.xlarge`` for x86_64 GPU types, ``c7g.xlarge`` for arm64 ones (one
        architecture on every node, so one ``custom_ami`` serves them all).
    :param queue_name: the GPU queue (Slurm partition). Default ``gpu``.
    :param cluster_name: default ``<stack name lowercased>-cluster``. A create-time choice: the provider refuses to
        rename a cluster (the update fails; the cluster is never replaced).
    :param os: default ALINUX2023.
    :param custom_ami: an AMI id or a :class:`~fmconstructs.GpuNodeImage`. Default: ParallelCluster's.
    :param version: the ParallelCluster version. Default: the construct's pinned one.
    :param monitoring: default: the construct's (CloudWatch logs and dashboard).
    :param removal_policy: ``ParallelCluster.removal_policy``. Default RETAIN: deleting the stack keeps the cluster,
        its head node and ``/home`` (delete it with ``pcluster delete-cluster``).
    :param queue_update_strategy: ``ParallelCluster.queue_update_strategy``. Default DRAIN.
    :param slurm_accounting: ``ParallelCluster.slurm_accounting``: a
        :class:`~fmconstructs.parallelcluster.SlurmDatabase` (an existing MySQL server, or
        :class:`~fmconstructs.parallelcluster.SlurmAccountingDatabase` ``.slurm_database``) or an
        :class:`~fmconstructs.parallelcluster.ExternalSlurmdbd`, so ``sacct`` keeps each job's user and account.
        Default: none.
    """

    head_node_instance_type: str | None = None
    login_nodes: int = 1
    login_instance_type: str | None = None
    queue_name: str = "gpu"
    cluster_name: str | None = None
    os: OperatingSystem = OperatingSystem.ALINUX2023
    custom_ami: str | GpuNodeImage | None = None
    version: str = PARALLELCLUSTER_DEFAULT_VERSION
    monitoring: Monitoring | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN
    queue_update_strategy: QueueUpdateStrategy = QueueUpdateStrategy.DRAIN
    slurm_accounting: SlurmDatabase | ExternalSlurmdbd | None = None

    def __post_init__(self) -> None:
        check_removal_policy("removal_policy", self.removal_policy)
        check_enum("queue_update_strategy", self.queue_update_strategy, QueueUpdateStrategy)
        check_slurm_accounting("slurm_accounting", self.slurm_accounting)
        if self.head_node_instance_type is not None:  # None: chosen by the GPU type's architecture
            check_instance_type("head_node_instance_type", self.head_node_instance_type)
        check_count("login_nodes", self.login_nodes)
        if self.login_instance_type is not None:
            check_instance_type("login_instance_type", self.login_instance_type)
        _check_id("queue_name", self.queue_name, PARALLELCLUSTER_QUEUE_NAME)
        if self.cluster_name is not None:
            _check_id("cluster_name", self.cluster_name, PARALLELCLUSTER_CLUSTER_NAME)
        check_enum("os", self.os, OperatingSystem)
        if self.monitoring is not None:
            check_instance("monitoring", self.monitoring, Monitoring, "a Monitoring")


def _check_role(parameter: str, value: object) -> iam.IRole:
    role: iam.IRole = check_construct(parameter, value, attribute="role_arn", expected="an iam.IRole")
    return role


@dataclass(frozen=True, kw_only=True)
class EksOptions:
    """Amazon EKS (:class:`~fmconstructs.eks.GpuEksCluster`, one GPU managed node group).

    :param version: Kubernetes version. Default: ``GpuEksCluster``'s.
    :param admin_roles: roles given cluster admin through access entries. Default: none.
    :param cluster_name: default: generated by CloudFormation. A fixed name warns
        ``fmconstructs:fixed-name-blocks-replacement`` (a create-only change then fails with "already exists").
    :param gpu_addons: install the NVIDIA and EFA device plugins, DCGM exporter and the FSx CSI driver. Default True.
    :param volume_name: the static PersistentVolume and claim of the file system. Default ``fsx``.
    :param namespace: the claim's namespace. Default ``default``.
    :param create_namespace: create ``namespace``. Default False.
    :param capacity_block_scaling: on a Capacity Block, when the GPU node group gets its nodes:
        ``CapacityBlockScaling.AT_DEPLOY`` (default): a full-size group (min = max = desired = ``nodes``), deploy after
        the block starts; ``CapacityBlockScaling.ON_BLOCK_EVENTS``: an empty group (min 0, desired 0, max ``nodes``),
        deploy any time before the block starts; the platform's
        :class:`~fmconstructs.capacity_events.CapacityBlockEvents` scales it to ``nodes`` when the block is delivered
        and to 0 on its expiration warning. ``ON_BLOCK_EVENTS`` needs a Capacity Block given by ``reservation_id``,
        ``observability`` (the events' alert topic) and ``capacity_block_events=True``.
    :param removal_policy: ``GpuEksCluster.removal_policy``. Default DESTROY.
    :param scheduling: topology-aware, all-or-nothing scheduling (``GpuEksCluster.add_topology_scheduling``): Kueue
        with a Topology of the EKS network-node labels, JobSet, a ClusterQueue of the GPU node group and the
        LocalQueue ``fm-gpu`` in ``namespace``. Default True.
    :param gpu_capacity: how the GPU nodes come (:mod:`fmconstructs.platform.elastic`):
        ``EksGpuCapacity.MANAGED_NODE_GROUP`` (default: a fixed group with the full EFA layout), ``KARPENTER`` or
        ``AUTO_MODE`` (an elastic NodePool of at most ``nodes`` nodes; its Kueue flavor has no topology).
    """

    version: eks.KubernetesVersion | None = None
    admin_roles: Sequence[iam.IRole] = ()
    cluster_name: str | None = None
    gpu_addons: bool = True
    volume_name: str = "fsx"
    namespace: str = "default"
    create_namespace: bool = False
    capacity_block_scaling: CapacityBlockScaling = CapacityBlockScaling.AT_DEPLOY
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    scheduling: bool = True
    gpu_capacity: EksGpuCapacity = EksGpuCapacity.MANAGED_NODE_GROUP

    def __post_init__(self) -> None:
        check_removal_policy("removal_policy", self.removal_policy)
        check_enum("gpu_capacity", self.gpu_capacity, EksGpuCapacity)
        check_enum("capacity_block_scaling", self.capacity_block_scaling, CapacityBlockScaling)
        check_bool("scheduling", self.scheduling)
        if self.version is not None:
            object.__setattr__(self, "version", check_kubernetes_version("version", self.version))
        object.__setattr__(self, "admin_roles", check_sequence("admin_roles", self.admin_roles, _check_role))
        if self.cluster_name is not None:
            _check_id("cluster_name", self.cluster_name, EKS_CLUSTER_NAME)
        check_bool("gpu_addons", self.gpu_addons)
        check_dns_subdomain("volume_name", self.volume_name)
        check_namespace("namespace", self.namespace)
        check_bool("create_namespace", self.create_namespace)


class HyperPodOrchestration(str, Enum):
    """What orchestrates a HyperPod cluster."""

    SLURM = "slurm"
    EKS = "eks"


@dataclass(frozen=True, kw_only=True)
class HyperPodOptions:
    """SageMaker HyperPod (:class:`~fmconstructs.hyperpod.HyperPodCluster`).

    :param orchestrator: :class:`HyperPodOrchestration` SLURM (default) or EKS (a new
        :class:`~fmconstructs.eks.GpuEksCluster`).
    :param controller_instance_type: Slurm controller group (1 node). Default ``m5.2xlarge``.
    :param login_instance_type: Slurm login group (1 node); None for none. Default ``m5.4xlarge``.
    :param gpu_group_name: the GPU instance group (and Slurm partition). Default ``gpu``.
    :param capacity: :class:`~fmconstructs.hyperpod.HyperPodCapacity` (On-Demand or a SageMaker training plan);
        HyperPod takes no EC2 reservation, so the platform's ``capacity`` must be On-Demand.
    :param extra_ebs_gib: extra EBS per GPU node. Default: none.
    :param base_config_dir: a local copy of HyperPod's published lifecycle scripts (Slurm). Default: none.
    :param eks_version: Kubernetes version of the EKS cluster (EKS orchestration), one SageMaker HyperPod documents
        (:data:`~fmconstructs.hyperpod.HYPERPOD_KUBERNETES_VERSIONS`: 1.30-1.35; others are refused). Default:
        :data:`~fmconstructs.hyperpod.cluster.HYPERPOD_DEFAULT_KUBERNETES_VERSION` (1.35).
    :param dependencies_chart: where HyperPod's dependencies Helm chart comes from (EKS orchestration; HyperPod requires
        it on the EKS cluster before the HyperPod cluster is created):
        :class:`~fmconstructs.hyperpod.eks_dependencies.HyperPodDependenciesChart` ``.from_directory(path)`` (a
        checkout uploaded as a CDK asset), ``.from_oci(reference, version=...)``, ``.from_ecr(repository,
        version=...)`` or ``.from_helm_repository(url, version=...)``. Default: CDK context
        ``fmconstructs:hyperpod-helm-chart`` (``HyperPodDependenciesChart.from_context``); without either the platform
        raises :class:`~fmconstructs.errors.FmValidationError`. The chart's own NVIDIA and EFA device plugins are
        turned off: GpuEksCluster's GPU add-ons (installed by the platform) serve the ``ml.`` nodes, once.
    :param admin_roles: EKS cluster admins (EKS orchestration). Default: none.
    :param efa_interfaces_for_lustre: EFA interfaces each GPU node uses for Lustre (0 = TCP). Default: the type's
        FSx default from the catalog (8 on p5): lower it to fit more nodes in the file system's 1,024 EFA connections.
    :param removal_policy: the HyperPod cluster's (``HyperPodCluster(removal_policy=...)``): ``RemovalPolicy.DESTROY``
        (default) or ``RETAIN``.
    """

    orchestrator: HyperPodOrchestration = HyperPodOrchestration.SLURM
    controller_instance_type: str = "m5.2xlarge"
    login_instance_type: str | None = "m5.4xlarge"
    gpu_group_name: str = "gpu"
    capacity: HyperPodCapacity = field(default_factory=HyperPodCapacity.on_demand)
    extra_ebs_gib: int | None = None
    base_config_dir: str | None = None
    eks_version: eks.KubernetesVersion | None = None
    admin_roles: Sequence[iam.IRole] = ()
    efa_interfaces_for_lustre: int | None = None
    dependencies_chart: HyperPodDependenciesChart | None = None
    removal_policy: RemovalPolicy = HYPERPOD_DEFAULT_REMOVAL_POLICY

    def __post_init__(self) -> None:
        check_enum("orchestrator", self.orchestrator, HyperPodOrchestration)
        check_hyperpod_removal_policy("removal_policy", self.removal_policy)
        check_optional_count("efa_interfaces_for_lustre", self.efa_interfaces_for_lustre, minimum=0)
        check_instance_type("controller_instance_type", self.controller_instance_type)
        if self.login_instance_type is not None:
            check_instance_type("login_instance_type", self.login_instance_type)
        _check_id("gpu_group_name", self.gpu_group_name, SAGEMAKER_INSTANCE_GROUP_NAME)
        check_instance("capacity", self.capacity, HyperPodCapacity, "a HyperPodCapacity")
        check_optional_count("extra_ebs_gib", self.extra_ebs_gib, minimum=1)
        if self.base_config_dir is not None:
            _check_name("base_config_dir", self.base_config_dir)
        if self.eks_version is not None:
            object.__setattr__(self, "eks_version", check_kubernetes_version("eks_version", self.eks_version))
            if self.eks_version.version not in HYPERPOD_KUBERNETES_VERSIONS:
                raise FmValidationError(
                    "eks_version",
                    self.eks_version.version,
                    f"one SageMaker HyperPod supports ({', '.join(HYPERPOD_KUBERNETES_VERSIONS)}; SageMaker Developer "
                    "Guide sagemaker-hyperpod-eks-prerequisites)",
                )
        object.__setattr__(self, "admin_roles", check_sequence("admin_roles", self.admin_roles, _check_role))
        rules.base_config_dir_is_for_slurm(
            base_config_dir=self.base_config_dir, on_eks=self.orchestrator is HyperPodOrchestration.EKS
        )
        if self.dependencies_chart is not None:
            check_instance(
                "dependencies_chart",
                self.dependencies_chart,
                HyperPodDependenciesChart,
                "a HyperPodDependenciesChart (.from_directory, .from_oci, .from_ecr, .from_helm_repository)",
            )
            rules.dependencies_chart_is_for_eks(chart_given=True, on_eks=self.orchestrator is HyperPodOrchestration.EKS)


#: What :class:`~fmconstructs.platform.TrainingPlatform` accepts as ``orchestrator``.
Orchestrator = PcsOptions | ParallelClusterOptions | EksOptions | HyperPodOptions
ORCHESTRATOR_TYPES = (PcsOptions, ParallelClusterOptions, EksOptions, HyperPodOptions)
