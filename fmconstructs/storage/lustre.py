"""An FSx for Lustre file system for GPU clusters: PERSISTENT_2, Lustre 2.15, LZ4, optional EFA.

Built on the L1 ``aws_fsx.CfnFileSystem``, not the L2 ``aws_fsx.LustreFileSystem``: the L2 lacks ``EfaEnabled``,
``MetadataConfiguration`` and ``LogConfiguration`` (three escape hatches), and its ``connections`` default port is
TCP 988-1023 on a security group that allows all outbound traffic, where Lustre needs only 988 and 1018-1023. Wrapping
the L1 keeps every property typed and validated in one place; the L2's value types (``LustreMaintenanceTime``,
``DailyAutomaticBackupStartTime``) are reused for the schedule props.

Network: the file system gets its own security group (or ``security_group``) with the Lustre ports open to itself;
``fs.connections.allow_default_port_from(clients)`` (or ``fs.allow_clients_from(clients)``) opens TCP 988 and
1018-1023 between the file system and the clients, both ways, as the FSx for Lustre User Guide lists for file system
and client security groups. EFA-enabled file systems also join ``efa_security_group`` (shared with the GPU nodes) and
their own group allows all traffic to and from itself, which FSx checks when it creates an EFA-enabled file system.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import jsii
from aws_cdk import ArnFormat, CfnDeletionPolicy, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct, IValidation

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_metric_period,
    check_number,
    check_sequence,
    check_str,
    check_zone,
    known,
    located,
    same_zone,
    subnet_zone,
)
from ..catalog import InstanceSpec
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, one_of
from ..networking.security_group import EfaSecurityGroup, close_default_egress
from ._checks import check_instance, check_scope_and_id
from .client import (
    DEFAULT_MOUNT_OPTIONS,
    FILE_SYSTEM_ID_PATTERN,
    EksStaticVolume,
    check_dns_name,
    check_mount_name,
    lustre_mount_command,
    lustre_mount_commands,
)
from .data_repository import (
    ALL_EVENTS,
    DEFAULT_LAYOUT,
    MAX_DATA_REPOSITORIES,
    DataRepositoryAssociation,
    DataRepositoryEvent,
    DataRepositoryLink,
    check_bucket,
    import_bucket,
    normalize_file_system_path,
    paths_overlap,
    warn_overlapping_s3_paths,
)
from .export_alarm import (
    DEFAULT_EXPORT_BACKLOG_AGE_SECONDS,
    ExportAlarms,
    ExportAlarmSettings,
    add_export_alarms,
    check_export_alarm_settings,
)
from .sizing import (
    EFA_CAPACITY_MULTIPLE_GIB,
    MAX_STORAGE_CAPACITY_GIB,
    THROUGHPUT_MBPS_PER_TIB,
    LustreDeploymentType,
    LustreSizing,
    capacity_rule,
    is_valid_capacity,
    per_unit_throughput_mbps_per_tib,
    quota_note,
)
from .sizing import (
    # Re-exported: ``from fmconstructs.storage.lustre import MAX_EFA_CONNECTIONS`` keeps working (defined in sizing,
    # which the ``fmc`` command imports without aws_cdk).
    MAX_EFA_CONNECTIONS as MAX_EFA_CONNECTIONS,
)
from .target_alarm import DEFAULT_STORAGE_TARGET_USED_PERCENT, add_storage_target_alarm, check_used_percent

#: FileSystemTypeVersion: EFA and metadata configurations need 2.15.
LUSTRE_VERSION = "2.15"
LUSTRE_TCP_PORT = 988
LUSTRE_TCP_PORT_RANGE = (1018, 1023)

_MAX_BACKUP_RETENTION_DAYS = 90
_DEFAULT_BACKUP_RETENTION_DAYS = 7
_METADATA_IOPS_TIERS = (1500, 3000, 6000, 12000)
_METADATA_IOPS_STEP = 12000
_METADATA_IOPS_MAX = 192000


def lustre_ports() -> tuple[ec2.Port, ec2.Port]:
    """The Lustre ports: TCP 988 and TCP 1018-1023."""
    return ec2.Port.tcp(LUSTRE_TCP_PORT), ec2.Port.tcp_range(*LUSTRE_TCP_PORT_RANGE)


class LustreDataCompression(str, Enum):
    """``DataCompressionType``."""

    NONE = "NONE"
    LZ4 = "LZ4"


class LustreLogLevel(str, Enum):
    """``LogConfiguration.Level``: which data repository events FSx logs to CloudWatch Logs."""

    WARN_ERROR = "WARN_ERROR"
    WARN_ONLY = "WARN_ONLY"
    ERROR_ONLY = "ERROR_ONLY"
    DISABLED = "DISABLED"


class LustreMetadataMode(str, Enum):
    AUTOMATIC = "AUTOMATIC"
    USER_PROVISIONED = "USER_PROVISIONED"


def valid_metadata_iops(iops: int) -> bool:
    """1500, 3000, 6000, 12000, or a multiple of 12000 up to 192000."""
    if iops in _METADATA_IOPS_TIERS:
        return True
    return 0 < iops <= _METADATA_IOPS_MAX and iops % _METADATA_IOPS_STEP == 0


@dataclass(frozen=True)
class LustreMetadataConfiguration:
    """``MetadataConfiguration``: AUTOMATIC (FSx scales metadata IOPS with capacity) or USER_PROVISIONED IOPS."""

    mode: LustreMetadataMode
    iops: int | None = None

    @classmethod
    def automatic(cls) -> LustreMetadataConfiguration:
        return cls(LustreMetadataMode.AUTOMATIC)

    @classmethod
    def user_provisioned(cls, iops: int) -> LustreMetadataConfiguration:
        return cls(LustreMetadataMode.USER_PROVISIONED, iops)

    def __post_init__(self) -> None:
        """The direct constructor and both factories refuse a bad mode/IOPS combination at once (issue 18 section 5);
        the file system checks the deployment type."""
        self.validate()

    def validate(self) -> None:
        mode = check_enum("metadata_configuration.mode", self.mode, LustreMetadataMode)
        if mode is LustreMetadataMode.AUTOMATIC:
            if self.iops is not None:
                raise FmValidationError("metadata_configuration.iops", self.iops, "None in AUTOMATIC mode")
            return
        if self.iops is None:
            raise FmValidationError("metadata_configuration.iops", None, "set in USER_PROVISIONED mode")
        iops = check_count("metadata_configuration.iops", self.iops, minimum=1)
        if known(iops) and not valid_metadata_iops(iops):
            raise FmValidationError(
                "metadata_configuration.iops",
                self.iops,
                "1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000",
            )

    def to_cfn(self) -> fsx.CfnFileSystem.MetadataConfigurationProperty:
        return fsx.CfnFileSystem.MetadataConfigurationProperty(mode=self.mode.value, iops=self.iops)


@dataclass(frozen=True)
class EfaClientGroup:
    """Clients that mount a file system over EFA: a node group, its maximum node count and the EFA interfaces each
    node uses for LNet (``max_nodes`` may be a token: unknown at synthesis)."""

    consumer_path: str
    max_nodes: int | float
    efa_interfaces_per_node: int | float

    def __post_init__(self) -> None:
        """The checks :meth:`LustreFileSystemBase.register_efa_clients` makes, for a group built directly."""
        check_str("consumer_path", self.consumer_path, allowed="a construct path (a non-empty str)", min_length=1)
        check_count("max_nodes", self.max_nodes)
        check_count("efa_interfaces_per_node", self.efa_interfaces_per_node)

    @property
    def max_efa_connections(self) -> int | None:
        """``max_nodes x efa_interfaces_per_node``; None when either is a deploy-time value (a token)."""
        if not (known(self.max_nodes) and known(self.efa_interfaces_per_node)):
            return None
        return int(self.max_nodes) * int(self.efa_interfaces_per_node)

    def describe(self) -> str:
        nodes = f"{int(self.max_nodes)}" if known(self.max_nodes) else "? (a deploy-time value)"
        interfaces = (
            f"{int(self.efa_interfaces_per_node)}" if known(self.efa_interfaces_per_node) else "? (a deploy-time value)"
        )
        connections = self.max_efa_connections
        total = "?" if connections is None else f"{connections:,}"
        return f"{self.consumer_path} ({nodes} nodes x {interfaces} EFA interfaces = {total})"


@jsii.implements(IValidation)
class _EfaConnectionBudget:
    """Synthesis fails when the registered EFA clients of one file system can open more than 1,024 connections."""

    def __init__(self, file_system: LustreFileSystemBase) -> None:
        self._file_system = file_system

    def validate(self) -> list[str]:
        groups = self._file_system.efa_client_groups
        total = sum(g.max_efa_connections or 0 for g in groups)
        if total <= MAX_EFA_CONNECTIONS:
            return []
        ranked = sorted(groups, key=lambda g: -(g.max_efa_connections or 0))
        error = FmValidationError(
            f"EFA connections to {self._file_system.node.path}",
            total,
            f'at most {MAX_EFA_CONNECTIONS:,} (FSx for Lustre User Guide "Configuring EFA clients": one file system '
            "accepts at most 1,024 EFA connections across all its clients, one per EFA interface a client uses for "
            "LNet)",
        )
        return [
            f"{error} from: {'; '.join(g.describe() for g in ranked)}. Lower max_nodes or "
            "efa_interfaces_for_lustre of these node groups, or mount the file system over TCP on some of them "
            "(efa_interfaces_for_lustre=0; ParallelCluster: SharedLustre(efa_clients=False))"
        ]


def _as_connectable(other: Any) -> ec2.IConnectable:
    """Accept anything with ``connections`` (e.g. :class:`EfaSecurityGroup`) by passing its Connections object."""
    connections = getattr(other, "connections", None)
    return connections if isinstance(connections, ec2.Connections) else other


class LustreConnections(ec2.Connections):
    """Connections whose "default port" is both Lustre port ranges, opened both ways.

    ``allow_default_port_from(clients)`` opens TCP 988 and 1018-1023 from the clients to the file system and from the
    file system to the clients (``ec2.Port`` holds one range, so :attr:`default_port` is 988 alone; rules made by
    these overrides cover both ranges).
    """

    def allow_default_port_from(self, other: ec2.IConnectable, description: str | None = None) -> None:
        peer = _as_connectable(other)
        for port in lustre_ports():
            self.allow_from(peer, port, description or "Lustre clients")
            self.allow_to(peer, port, description or "Lustre clients")

    def allow_default_port_to(self, other: ec2.IConnectable, description: str | None = None) -> None:
        peer = _as_connectable(other)
        for port in lustre_ports():
            self.allow_to(peer, port, description)

    def allow_default_port_internally(self, description: str | None = None) -> None:
        for port in lustre_ports():
            self.allow_internally(port, description or "Lustre servers")

    def allow_default_port_from_any_ipv4(self, description: str | None = None) -> None:
        raise FmValidationError(
            "peer", "0.0.0.0/0", "a client security group (fs.allow_clients_from(...)), not any IPv4 address"
        )


@jsii.implements(ec2.IConnectable)
class LustreFileSystemBase(Construct):
    """What a created and an imported Lustre file system share: identity, network rules, mounting, S3 links."""

    file_system_id: str
    dns_name: str
    mount_name: str
    deployment_type: LustreDeploymentType | None
    storage_capacity_gib: int | None
    throughput_mbps_per_tib: int | None
    efa_enabled: bool
    removal_policy: RemovalPolicy
    security_group: ec2.ISecurityGroup
    #: The EFA security group the file system's servers are in (None when not EFA-enabled, or imported without it).
    efa_security_group: ec2.ISecurityGroup | None = None
    #: The log group FSx writes data repository events to (None: FSx's shared ``/aws/fsx/lustre``, or imported).
    log_group: logs.ILogGroup | None = None
    #: ``LogConfiguration.Level`` (None when imported).
    log_level: str | None = None
    #: The automatic export alarms (:meth:`add_export_alarms`), once an association exports to S3.
    export_alarms: ExportAlarms | None = None

    @located
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self._data_repositories: list[DataRepositoryAssociation] = []
        self._connections: LustreConnections | None = None
        self._efa_clients: dict[str, EfaClientGroup] = {}
        self._efa_client_security_groups: list[ec2.ISecurityGroup] = []
        self._export_alarm_settings: ExportAlarmSettings | None = None

    @property
    def zone(self) -> str | None:
        """The Availability Zone of the file system (None when unknown at synthesis)."""
        return None

    # --- network -------------------------------------------------------------------------------------------------
    @property
    def connections(self) -> ec2.Connections:
        """Network rules (IConnectable); ``connections.allow_default_port_from(x)`` opens both Lustre ranges."""
        assert self._connections is not None
        return self._connections

    def allow_clients_from(self, *clients: ec2.IConnectable | EfaSecurityGroup, description: str | None = None) -> None:
        """Open TCP 988 and 1018-1023 between the file system and each client (both directions)."""
        if description is not None:
            check_str("description", description)
        for index, client in enumerate(clients):
            if not isinstance(client, EfaSecurityGroup):
                check_construct(
                    f"clients[{index}]",
                    client,
                    attribute="connections",
                    expected="an ec2.IConnectable (a security group, an instance, a node group) or EfaSecurityGroup",
                )
            self.connections.allow_default_port_from(_as_connectable(client), description)

    # --- throughput ----------------------------------------------------------------------------------------------
    @property
    def sizing(self) -> LustreSizing | None:
        """Capacity, tier and aggregate throughput as a value object (None when capacity or tier is unknown, e.g.
        imported without them, or a token)."""
        if self.deployment_type is None or self.storage_capacity_gib is None:
            return None
        unit = per_unit_throughput_mbps_per_tib(self.deployment_type, self.throughput_mbps_per_tib)
        if unit is None or not known(unit) or not known(self.storage_capacity_gib):
            return None
        return LustreSizing(self.deployment_type, self.storage_capacity_gib, unit, self.efa_enabled)

    def add_saturation_alarms(
        self,
        *,
        topic: sns.ITopic | None = None,
        throughput_ratio: float = 0.9,
        free_capacity_ratio: float = 0.1,
        period: Duration | None = None,
        evaluation_periods: int = 3,
        storage_target_used_percent: float | None = DEFAULT_STORAGE_TARGET_USED_PERCENT,
    ) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm]:
        """CloudWatch alarms for throughput and capacity saturation (FSx publishes these to CloudWatch only).

        Throughput: ``(DataReadBytes + DataWriteBytes) / period`` against the file system's aggregate baseline
        throughput (FSx for Lustre User Guide "Monitoring with Amazon CloudWatch": both metrics are Sums per period,
        in bytes; FSx's MB/s are 10^6 bytes per second). Capacity: the file system's free bytes
        (``FreeDataStorageCapacity`` Sum per minute: every storage target together) below ``free_capacity_ratio`` of
        the storage capacity. Alarms go to ``topic`` when given.

        Storage target: unless ``storage_target_used_percent`` is None, a third alarm on the fullest storage target
        (OST), which fills before the aggregate (:func:`fmconstructs.storage.target_alarm.add_storage_target_alarm`);
        it is kept as :attr:`storage_target_alarm`.

        :param period: default 5 minutes.
        """
        sizing = self.sizing
        if sizing is None:
            raise FmValidationError(
                "storage_capacity_gib/deployment_type",
                (self.storage_capacity_gib, self.deployment_type),
                "known (pass them to from_lustre_file_system_attributes) to size saturation alarms",
            )
        _check_saturation_inputs(topic, throughput_ratio, free_capacity_ratio, storage_target_used_percent)
        evaluation_periods = check_count("evaluation_periods", evaluation_periods, minimum=1)
        check_instance("period", period, Duration, "a Duration (Duration.minutes(n))")
        period = period or Duration.minutes(5)
        seconds = check_metric_period("period", period, alarm=True)  # CloudWatch PutMetricAlarm Period values
        dimensions = {"FileSystemId": self.file_system_id}

        def metric(name: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace="AWS/FSx", metric_name=name, dimensions_map=dimensions, statistic=statistic, period=period
            )

        # Baseline = storage in TiB (GiB / 1024) x per-unit throughput (MB/s/TiB): sizing.aggregate_throughput_mbps,
        # the one implementation (4,800 GiB at 1,000 MB/s/TiB = 4,687.5 MB/s).
        baseline_mbps = sizing.aggregate_throughput_mbps
        baseline_bytes_per_second = baseline_mbps * 1_000_000
        utilisation = cloudwatch.MathExpression(
            expression=f"(r + w) / {seconds} / {baseline_bytes_per_second:.0f}",
            using_metrics={"r": metric("DataReadBytes", "Sum"), "w": metric("DataWriteBytes", "Sum")},
            label="Throughput / aggregate baseline throughput",
            period=period,
        )
        throughput_alarm = utilisation.create_alarm(
            self,
            "ThroughputSaturationAlarm",
            threshold=throughput_ratio,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=(
                f"FSx for Lustre throughput at or above {throughput_ratio:.0%} of its "
                f"{baseline_mbps:,.1f} MB/s baseline: jobs are I/O bound"
            ),
        )
        capacity_bytes = sizing.storage_capacity_gib * 1024**3
        # FreeDataStorageCapacity is one data point per storage target (disk) per minute; its Sum is the bytes free in
        # the whole file system and its Minimum only those of the fullest target (FSx for Lustre User Guide
        # "Monitoring with Amazon CloudWatch", awsdocs/amazon-fsx-lustre-user-guide doc_source/monitoring-cloudwatch.md;
        # the current "Amazon FSx for Lustre metrics and dimensions" page says the same of Minimum for the I/O
        # metrics: "on a single OST"). Against a share of the whole capacity the aggregate is the Sum of ONE minute:
        # the Sum over the period divided by its minutes (a shorter period holds at most one point per target). The
        # fullest target has its own alarm (storage_target_used_percent).
        minutes = max(seconds / 60, 1) if known(seconds) else 1
        free_bytes = cloudwatch.MathExpression(
            expression=f"free / {minutes:g}",
            using_metrics={"free": metric("FreeDataStorageCapacity", "Sum")},
            label="Free bytes in the file system",
            period=period,
        )
        capacity_alarm = free_bytes.create_alarm(
            self,
            "FreeCapacityAlarm",
            threshold=capacity_bytes * free_capacity_ratio,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"FSx for Lustre has less than {free_capacity_ratio:.0%} free: checkpoints will fail",
        )
        if topic is not None:
            for alarm in (throughput_alarm, capacity_alarm):
                alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
        if storage_target_used_percent is not None:
            self.storage_target_alarm: cloudwatch.Alarm | None = add_storage_target_alarm(
                self,
                file_system_id=self.file_system_id,
                topic=topic,
                used_percent=storage_target_used_percent,
                period=period,
                evaluation_periods=evaluation_periods,
            )
        return throughput_alarm, capacity_alarm

    def add_export_alarms(
        self,
        *,
        topic: sns.ITopic | None = None,
        export_backlog_age_seconds: float = DEFAULT_EXPORT_BACKLOG_AGE_SECONDS,
        period: Duration | None = None,
        evaluation_periods: int = 3,
        export_failures: bool = True,
        log_group: logs.ILogGroup | None = None,
    ) -> ExportAlarms | None:
        """CloudWatch alarms on automatic export to S3 (:mod:`fmconstructs.storage.export_alarm`): the oldest change
        not yet exported older than ``export_backlog_age_seconds``, and any export error in the file system's log
        group (``log_group``, default the one given to the file system; none: no failure alarm, with a warning).

        Only for a file system with a data repository association whose ``auto_export_events`` are set (the default
        ``/checkpoints`` link): created now if one exists, else when the first one is added. Returns the alarms, or
        None until then (see :attr:`export_alarms`). Alarms go to ``topic`` when given. ``period`` default 5 minutes.
        """
        if self._export_alarm_settings is not None:
            raise FmValidationError("add_export_alarms", "a second call", "called once per file system")
        self._export_alarm_settings = check_export_alarm_settings(
            topic=topic,
            backlog_age_seconds=export_backlog_age_seconds,
            period=period,
            evaluation_periods=evaluation_periods,
            failures=export_failures,
            log_group=log_group if log_group is not None else self.log_group,
        )
        self._create_export_alarms()
        return self.export_alarms

    def _create_export_alarms(self) -> None:
        settings = self._export_alarm_settings
        exporting = [a for a in self._data_repositories if a.exports_to_s3]
        if settings is None or self.export_alarms is not None or not exporting:
            return
        self.export_alarms = add_export_alarms(
            self,
            file_system_id=self.file_system_id,
            settings=settings,
            log_level=self.log_level,
            paths=tuple(a.file_system_path for a in exporting),
        )

    @property
    def aggregate_throughput_mbps(self) -> float | None:
        """Aggregate baseline throughput in MB/s (None when unknown, see :attr:`sizing`)."""
        sizing = self.sizing
        return sizing.aggregate_throughput_mbps if sizing else None

    @property
    def aggregate_throughput_gbytes_per_s(self) -> float | None:
        """Aggregate baseline throughput in GB/s (10^9 bytes per second; None when unknown)."""
        mbps = self.aggregate_throughput_mbps
        return None if mbps is None else mbps / 1000

    @property
    def aggregate_throughput_gbps(self) -> float | None:
        """Deprecated (removed in 0.3.0): GB/s under a gigabit name; use :attr:`aggregate_throughput_gbytes_per_s`."""
        warnings.warn(
            "aggregate_throughput_gbps is deprecated and will be removed in fmconstructs 0.3.0: it is in gigabytes "
            "per second; use aggregate_throughput_gbytes_per_s",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.aggregate_throughput_gbytes_per_s

    # --- what an operator needs -----------------------------------------------------------------------------------
    @property
    def mount_command(self) -> str:
        """The command line an operator runs on a client with the Lustre client installed to mount the file system
        at ``/fsx`` (FSx for Lustre User Guide "Mounting from an Amazon Elastic Compute Cloud instance"); it holds
        :attr:`dns_name` and :attr:`mount_name` (deploy-time values in a ``CfnOutput``). Node groups mount through
        :meth:`mount_commands` instead (LNet over EFA, fstab, reboots)."""
        return lustre_mount_command(dns_name=self.dns_name, mount_name=self.mount_name)

    @property
    def file_system_arn(self) -> str:
        """``arn:<partition>:fsx:<region>:<account>:file-system/<file_system_id>``."""
        return Stack.of(self).format_arn(service="fsx", resource="file-system", resource_name=self.file_system_id)

    # --- client side ---------------------------------------------------------------------------------------------
    def mount_commands(
        self,
        mount_point: str = "/fsx",
        *,
        mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
        gpudirect_storage: bool | None = None,
        instance_spec: InstanceSpec | None = None,
        efa_interfaces_for_lustre: int | None = None,
        node_efa_interfaces: int | None = None,
    ) -> list[str]:
        """Idempotent node-side shell commands that install the Lustre client and mount this file system.

        EFA-enabled file systems also get LNet over EFA on
        :func:`~fmconstructs.storage.client.lustre_efa_interfaces` interfaces (``instance_spec``: the node's catalog
        entry, whose FSx default it uses; ``efa_interfaces_for_lustre``: an explicit count, 0 for TCP;
        ``node_efa_interfaces``: the EFA interfaces the node attaches), a systemd unit that redoes it at every boot,
        and the GPUDirect Storage prerequisites (``gpudirect_storage`` default: True when the node uses EFA for
        Lustre). Register the node group with :meth:`register_efa_clients` for the 1,024 EFA connection budget.
        See :func:`~fmconstructs.storage.client.lustre_mount_commands`.
        """
        return lustre_mount_commands(
            dns_name=self.dns_name,
            mount_name=self.mount_name,
            mount_point=mount_point,
            mount_options=mount_options,
            efa_enabled=self.efa_enabled,
            gpudirect_storage=gpudirect_storage,
            instance_spec=instance_spec,
            efa_interfaces_for_lustre=efa_interfaces_for_lustre,
            node_efa_interfaces=node_efa_interfaces,
        )

    # --- the 1,024 EFA connection budget ----------------------------------------------------------------------
    def register_efa_clients(
        self,
        consumer: IConstruct,
        *,
        max_nodes: int | float,
        efa_interfaces_per_node: int | float,
        efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None = None,
        subnets: Sequence[ec2.ISubnet] = (),
    ) -> None:
        """Record that up to ``max_nodes`` nodes of ``consumer`` (a node group) mount this file system over EFA, each
        with ``efa_interfaces_per_node`` EFA interfaces for LNet (the count :meth:`mount_commands` used, see
        :func:`~fmconstructs.storage.client.lustre_efa_interfaces`), and check that they can reach it over EFA.

        - The 1,024 EFA connection budget: one file system accepts at most 1,024 EFA connections across all its
          clients, one per client EFA interface (FSx for Lustre User Guide "Configuring EFA clients"). When every
          registered count is known, the registration that exceeds it raises
          :class:`~fmconstructs.errors.FmValidationError` naming each group and its share; with a deploy-time (token)
          count, synthesis fails when the known groups alone exceed it, and the unknown share is a warning
          (``fmconstructs:lustre-efa-connections-unknown``).
        - ``efa_security_group`` (default None: not checked): the EFA security group of the clients. When it is known
          to differ from the file system's EFA group and was not opened with :meth:`allow_efa_clients_from`, raises
          :class:`~fmconstructs.errors.FmValidationError` naming both groups.
        - ``subnets`` (default none: not checked): the clients' subnets. When the zone of the file system and of a
          client subnet are both known and differ, raises :class:`~fmconstructs.errors.FmValidationError` (EFA
          traffic does not cross Availability Zones). Subnets without zone information are skipped.

        TCP clients (a file system that is not EFA-enabled, or 0 interfaces) use no EFA connection and are neither
        recorded nor checked. Registering the same consumer again replaces its entry (a node has one LNet
        configuration, whatever it mounts).
        """
        check_construct("consumer", consumer, attribute="node", expected="a construct (the node group)")
        max_nodes = check_count("max_nodes", max_nodes)
        efa_interfaces_per_node = check_count("efa_interfaces_per_node", efa_interfaces_per_node)
        client_group = _optional_security_group("efa_security_group", efa_security_group)
        client_subnets = check_sequence("subnets", subnets, _check_subnet)
        if not self.efa_enabled or (known(efa_interfaces_per_node) and efa_interfaces_per_node == 0):
            return
        self._check_efa_client_group(consumer, client_group)
        self._check_efa_client_zones(consumer, client_subnets)
        group = EfaClientGroup(consumer.node.path, max_nodes, efa_interfaces_per_node)
        self._check_efa_connection_budget({**self._efa_clients, group.consumer_path: group}.values())
        if not self._efa_clients:
            self.node.add_validation(_EfaConnectionBudget(self))
        self._efa_clients[group.consumer_path] = group
        if group.max_efa_connections is None:
            add_warning(
                self,
                WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN,
                f"{group.describe()} mounts this file system over EFA, but its node count or EFA interfaces per node "
                "is a deploy-time value: the 1,024 EFA connections one file system accepts (FSx for Lustre User Guide "
                '"Configuring EFA clients") cannot be checked at synthesis',
            )

    def _check_efa_connection_budget(self, groups: Any) -> None:
        """Refuse, at construction, client groups whose counts are all known and exceed 1,024 EFA connections (with a
        deploy-time count the synthesis-time validation checks the known ones, and a warning says what is unknown)."""
        counts = [group.max_efa_connections for group in groups]
        if None in counts or sum(counts) <= MAX_EFA_CONNECTIONS:
            return
        ranked = sorted(groups, key=lambda g: -(g.max_efa_connections or 0))
        raise FmValidationError(
            f"EFA connections to {self.node.path}",
            f"{sum(counts):,}",
            f'at most {MAX_EFA_CONNECTIONS:,} (FSx for Lustre User Guide "Configuring EFA clients": one file system '
            "accepts at most 1,024 EFA connections across all its clients, one per EFA interface a client uses for "
            f"LNet); these node groups can open more: {'; '.join(g.describe() for g in ranked)}. Lower max_nodes or "
            "efa_interfaces_for_lustre of these node groups, or mount the file system over TCP on some of them "
            "(efa_interfaces_for_lustre=0; ParallelCluster: SharedLustre(efa_clients=False))",
        )

    def allow_efa_clients_from(self, *groups: ec2.ISecurityGroup | EfaSecurityGroup) -> None:
        """Let clients in another EFA security group reach this EFA-enabled file system: all traffic both ways between
        the file system's EFA group and each of ``groups`` (rules on both groups).

        The FSx for Lustre User Guide ("Creating an FSx for Lustre file system fails", cannot-create-fs) asks an EFA
        file system's group to allow all traffic "to and from the security group itself and the security group of
        the clients if clients reside in a different security group". Sharing one group
        (``LustreFileSystem(efa_security_group=<the nodes' EFA group>)``) needs no rules; this is for separate groups.
        """
        if not self.efa_enabled or self.efa_security_group is None:
            raise FmValidationError(
                "allow_efa_clients_from",
                self.node.path,
                "called on an EFA-enabled file system whose EFA security group is known (created here, or imported "
                "with efa_security_group=...)",
            )
        own = self.efa_security_group
        for index, given in enumerate(groups):
            group = _optional_security_group(f"groups[{index}]", given)
            assert group is not None
            if _same_security_group(own, group):
                continue
            own.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic from Lustre EFA clients")
            own.add_egress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic to Lustre EFA clients")
            group.add_ingress_rule(own, ec2.Port.all_traffic(), "EFA: all traffic from the Lustre file system")
            group.add_egress_rule(own, ec2.Port.all_traffic(), "EFA: all traffic to the Lustre file system")
            self._efa_client_security_groups.append(group)

    def _check_efa_client_group(self, consumer: IConstruct, client_group: ec2.ISecurityGroup | None) -> None:
        own = self.efa_security_group
        if client_group is None or own is None:
            return
        for allowed in (own, *self._efa_client_security_groups):
            if _same_security_group(allowed, client_group) is not False:
                return  # the same group, or unknown at synthesis (imported by a deploy-time id)
        raise FmValidationError(
            f"efa_security_group of {consumer.node.path}",
            _describe_group(client_group),
            f"the EFA security group of the EFA-enabled file system {self.node.path} ({_describe_group(own)}): EFA "
            "traffic between a Lustre client and the file system needs a group that allows all traffic to and from "
            "both (FSx for Lustre User Guide, cannot-create-fs and limit-access-security-groups). Share one group: "
            "pass the nodes' EFA group as LustreFileSystem(efa_security_group=...) or the file system's "
            "(fs.efa_security_group) to the node group; or keep both and call "
            "fs.allow_efa_clients_from(<the nodes' EFA group>) before adding the node group",
        )

    def _check_efa_client_zones(self, consumer: IConstruct, subnets: Sequence[ec2.ISubnet]) -> None:
        own_zone = self.zone
        for index, subnet in enumerate(subnets):
            client_zone = subnet_zone(subnet)
            if same_zone(own_zone, client_zone) is False:
                raise FmValidationError(
                    f"subnets[{index}] of {consumer.node.path}",
                    f"{_describe_subnet(subnet)} in {client_zone}",
                    f"a subnet in {own_zone}, the zone of the EFA-enabled file system {self.node.path}: EFA traffic "
                    'does not cross Availability Zones (EC2 User Guide "Elastic Fabric Adapter"; ParallelCluster User '
                    'Guide "Elastic Fabric Adapter": EFA is not supported over different availability zones). Put '
                    "the node group in a subnet of that zone, create the file system in the nodes' zone "
                    "(LustreFileSystem(subnet=...)), or mount it over TCP on this group (efa_interfaces_for_lustre=0)",
                )

    @property
    def efa_client_groups(self) -> tuple[EfaClientGroup, ...]:
        """The node groups registered with :meth:`register_efa_clients`."""
        return tuple(self._efa_clients.values())

    @property
    def max_efa_connections(self) -> int | None:
        """The EFA connections the registered groups can open (None when a group's node count is a token)."""
        counts = [g.max_efa_connections for g in self._efa_clients.values()]
        return None if None in counts else sum(c for c in counts if c is not None)

    def eks_static_volume(self, *, mount_options: Sequence[str] = ("flock",)) -> EksStaticVolume:
        """The attributes of a static PersistentVolume for the FSx for Lustre CSI driver."""
        if self.storage_capacity_gib is None:
            raise FmValidationError(
                "storage_capacity_gib", None, "known: pass it to from_lustre_file_system_attributes(...)"
            )
        return EksStaticVolume(
            file_system_id=self.file_system_id,
            dns_name=self.dns_name,
            mount_name=self.mount_name,
            storage_capacity_gib=self.storage_capacity_gib,
            mount_options=mount_options,  # type: ignore[arg-type]  # EksStaticVolume checks and normalises it
        )

    # --- S3 links ------------------------------------------------------------------------------------------------
    @property
    def data_repositories(self) -> tuple[DataRepositoryAssociation, ...]:
        return tuple(self._data_repositories)

    def add_data_repository(
        self,
        id: str,
        *,
        bucket: s3.IBucket | str,
        file_system_path: str,
        data_repository_prefix: str = "",
        auto_import_events: Sequence[DataRepositoryEvent] = ALL_EVENTS,
        auto_export_events: Sequence[DataRepositoryEvent] = (),
        batch_import_meta_data_on_create: bool = False,
        imported_file_chunk_size_mib: int | None = None,
        removal_policy: RemovalPolicy | None = None,
    ) -> DataRepositoryAssociation:
        """Link ``file_system_path`` to ``s3://bucket/data_repository_prefix`` (AWS::FSx::DataRepositoryAssociation).

        ``bucket``: an ``s3.IBucket``, or a bucket name or ``arn:<partition>:s3:::<name>`` ARN (checked against the S3
        bucket naming rules, then imported). ``file_system_path``: any path the FSx API accepts (a leading ``/``;
        spaces, non-ASCII and a trailing ``/`` are fine). Defaults: import NEW, CHANGED, DELETED; no export; no batch
        import; FSx chunk size (1024 MiB); the file system's removal policy. Rules: at most 8 per file system, ``/``
        only as the first and only one, none on SCRATCH_1, unique paths, no path nested in another (``/ns1/`` and
        ``/ns1`` are the same directory). Note: a tag change on a file system with associations can fail its
        CloudFormation update (cloudformation-coverage-roadmap#1687).
        """
        return DataRepositoryAssociation(
            self,
            id,
            file_system=self,
            bucket=bucket,
            file_system_path=file_system_path,
            data_repository_prefix=data_repository_prefix,
            auto_import_events=auto_import_events,
            auto_export_events=auto_export_events,
            batch_import_meta_data_on_create=batch_import_meta_data_on_create,
            imported_file_chunk_size_mib=imported_file_chunk_size_mib,
            removal_policy=removal_policy,
        )

    def add_data_repositories(
        self, bucket: s3.IBucket | str, layout: Sequence[DataRepositoryLink] = DEFAULT_LAYOUT
    ) -> list[DataRepositoryAssociation]:
        """One association per link of ``layout`` (default :data:`DEFAULT_LAYOUT`: /datasets and /checkpoints).

        Construct ids come from the paths: ``/datasets`` -> ``Datasets``, ``/a/b-c`` -> ``ABC``; a path with other
        characters (spaces, non-ASCII, a trailing ``/``) also gets a short hash of the path, so that ids stay distinct.
        """
        links = check_sequence("layout", layout, _check_link)
        ids = [_id_from_path(link.file_system_path) for link in links]
        for index, association_id in enumerate(ids):
            if association_id in ids[:index] or self.node.try_find_child(association_id) is not None:
                raise FmValidationError(
                    f"layout[{index}].file_system_path",
                    links[index].file_system_path,
                    f"a path whose construct id ({association_id!r}) is not taken on {self.node.path}: call "
                    "add_data_repository(id, ...) with your own id for it",
                )
        if isinstance(bucket, str):
            bucket = import_bucket(self, check_bucket("bucket", bucket))
        return [
            self.add_data_repository(
                association_id,
                bucket=bucket,
                file_system_path=link.file_system_path,
                data_repository_prefix=link.data_repository_prefix,
                auto_import_events=link.auto_import_events,
                auto_export_events=link.auto_export_events,
                batch_import_meta_data_on_create=link.batch_import_meta_data_on_create,
                imported_file_chunk_size_mib=link.imported_file_chunk_size_mib,
            )
            for association_id, link in zip(ids, links, strict=True)
        ]

    def _check_new_data_repository(self, file_system_path: str) -> None:
        """Check the per-file-system rules for a new association at ``file_system_path`` (before it is created)."""
        existing = self._data_repositories
        if self.deployment_type is LustreDeploymentType.SCRATCH_1:
            raise FmValidationError(
                "deployment_type", self.deployment_type.value, "not SCRATCH_1 for data repository associations"
            )
        if len(existing) >= MAX_DATA_REPOSITORIES:
            raise FmValidationError(
                "data repository associations",
                len(existing) + 1,
                f"at most {MAX_DATA_REPOSITORIES} per file system",
            )
        if not known(file_system_path):
            return  # a deploy-time path: FSx checks it
        path = normalize_file_system_path(file_system_path)
        if path == "/" and existing:
            raise FmValidationError(
                "file_system_path", file_system_path, "used only by the first and only association of a file system"
            )
        for other in existing:
            if not known(other.file_system_path):
                continue
            if normalize_file_system_path(other.file_system_path) == path:
                raise FmValidationError(
                    "file_system_path",
                    file_system_path,
                    f"unique on the file system ({other.file_system_path!r} is already linked)",
                )
            if paths_overlap(other.file_system_path, file_system_path):
                raise FmValidationError(
                    "file_system_path", file_system_path, f"not nested in or containing {other.file_system_path!r}"
                )

    def _register_data_repository(self, association: DataRepositoryAssociation) -> None:
        """Record a new association (checked by :meth:`_check_new_data_repository`)."""
        warn_overlapping_s3_paths(association, association, self._data_repositories)
        self._data_repositories.append(association)
        self._create_export_alarms()


def _check_link(parameter: str, value: object) -> DataRepositoryLink:
    if not isinstance(value, DataRepositoryLink):
        raise FmTypeError(parameter, value, f"a DataRepositoryLink (got a {type(value).__name__})")
    return value


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: The paths the 0.1 releases accepted; their construct ids stay as they were (ids are public API).
_PLAIN_PATH = re.compile(r"/([A-Za-z0-9._@+-]+(/[A-Za-z0-9._@+-]+)*)?")


def _id_from_path(path: str) -> str:
    name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", path) if part) or "Root"
    if _PLAIN_PATH.fullmatch(path):
        return name
    return f"{name}{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _check_saturation_inputs(
    topic: object, throughput_ratio: object, free_capacity_ratio: object, storage_target_used_percent: object
) -> None:
    if topic is not None:
        check_construct("topic", topic, attribute="topic_arn", expected="an sns.ITopic")
    for name, ratio in (("throughput_ratio", throughput_ratio), ("free_capacity_ratio", free_capacity_ratio)):
        checked = check_number(name, ratio)
        if not known(checked) or not 0 < checked < 1:
            raise FmValidationError(name, ratio, "a ratio between 0 and 1 (exclusive) known at synthesis")
    if storage_target_used_percent is not None:
        check_used_percent("storage_target_used_percent", storage_target_used_percent)


class LustreFileSystem(LustreFileSystemBase):
    """An FSx for Lustre file system (``AWS::FSx::FileSystem``, child id "Resource").

    Props (keyword-only; units in names):

    - ``vpc`` (``ec2.IVpc``), ``subnet`` (``ec2.ISubnet``; default: the VPC's first private subnet; put it in the AZ
      of the GPU nodes).
    - ``storage_capacity_gib``: 1200, 2400 or a multiple of 2400 (SCRATCH_1: 3600); EFA-enabled: a multiple of
      38400 / 19200 / 9600 / 4800 at 125 / 250 / 500 / 1000 MB/s/TiB. See :mod:`fmconstructs.storage.sizing`. Above
      the default storage quota of the type (100,800 GiB for PERSISTENT_2 and scratch, adjustable): warning
      ``fmconstructs:lustre-capacity-above-default-quota``.
    - ``deployment_type`` default PERSISTENT_2.
    - ``throughput_mbps_per_tib`` default 125 for PERSISTENT_2 (125|250|500|1000), 50 for PERSISTENT_1 (50|100|200);
      must be None for scratch types (fixed 200 MB/s/TiB baseline).
    - ``metadata_configuration`` default None (FSx's default); PERSISTENT_2 only; required when ``efa_enabled``.
    - ``data_compression`` default LZ4. The file system type version is always Lustre 2.15.
    - ``efa_enabled`` default False: PERSISTENT_2 only, needs ``metadata_configuration`` and ``efa_security_group``
      (``EfaSecurityGroup`` or an ``ec2.ISecurityGroup`` with all traffic to and from itself), immutable.
    - ``security_group`` default: a new group (no outbound traffic except to itself and to clients).
    - ``kms_key`` (``kms.IKey``) default None (AWS-managed key); persistent types only.
    - ``log_level`` default WARN_ERROR; ``log_group`` default None (FSx writes to ``/aws/fsx/lustre``); a given log
      group's name must begin with ``/aws/fsx`` (FSx API ``LustreLogCreateConfiguration.Destination``), so a
      ``logs.LogGroup`` of the app needs ``log_group_name="/aws/fsx/..."``; it must be in the file system's account
      and Region. That name is fixed and ``logs.LogGroup`` defaults to RETAIN: after ``cdk destroy`` the retained
      group makes a redeploy fail (a log group of that name exists). Give it ``removal_policy=RemovalPolicy.DESTROY``
      (its logs go with the stack), or keep it outside the stack and pass ``logs.LogGroup.from_log_group_name(...)``;
      a retained one gets the warning ``fmconstructs:lustre-log-group-retained-fixed-name``.
    - ``weekly_maintenance_start_time`` default Sunday 02:00 UTC.
    - ``automatic_backup_retention`` default 7 days for persistent types (0-90 days; ``Duration.days(0)`` turns
      automatic backups off), must be None for scratch; ``daily_automatic_backup_start_time`` default 03:00 UTC.
    - ``copy_tags_to_backups`` default True: emitted on every persistent file system whatever the backup retention
      (``CopyTagsToBackups`` is create-only, so turning automatic backups off must not drop it); scratch: never
      emitted. None omits it (FSx's default, false): pass None for a file system that fmconstructs 0.2.x or earlier
      created with ``automatic_backup_retention=Duration.days(0)``, whose template had no ``CopyTagsToBackups``.
    - ``removal_policy`` default RETAIN (also the default of its data repository associations).

    Create-time choices (changing one after the first deploy makes CloudFormation REPLACE the file system: a new,
    empty ``/fsx``, the old one left running and billed with RETAIN): ``subnet``/``vpc_subnets`` and the VPC,
    ``security_group`` (and rewording a description: ``GroupDescription`` is create-only too), ``efa_enabled`` and
    ``efa_security_group``, ``kms_key``, ``deployment_type``, ``throughput_mbps_per_tib``, ``copy_tags_to_backups``
    (:data:`~fmconstructs.storage.create_only.CREATE_ONLY_PROPERTIES` lists them, with sources).
    ``storage_capacity_gib`` may only grow (FSx cannot shrink a file system): size with ``min_capacity_gib=<the
    deployed capacity>`` (see :func:`~fmconstructs.storage.size_for_throughput`). Changed in place: capacity
    increases, backups, maintenance window, logging, metadata configuration, data compression, new data repository
    associations.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        storage_capacity_gib: int,
        subnet: ec2.ISubnet | None = None,
        deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
        throughput_mbps_per_tib: int | None = None,
        metadata_configuration: LustreMetadataConfiguration | None = None,
        data_compression: LustreDataCompression = LustreDataCompression.LZ4,
        efa_enabled: bool = False,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None = None,
        security_group: ec2.ISecurityGroup | None = None,
        kms_key: kms.IKey | None = None,
        log_level: LustreLogLevel = LustreLogLevel.WARN_ERROR,
        log_group: logs.ILogGroup | None = None,
        weekly_maintenance_start_time: fsx.LustreMaintenanceTime | None = None,
        automatic_backup_retention: Duration | None = None,
        daily_automatic_backup_start_time: fsx.DailyAutomaticBackupStartTime | None = None,
        copy_tags_to_backups: bool | None = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        vpc_subnets: ec2.SubnetSelection | None = None,
    ) -> None:
        check_scope_and_id(scope, id)
        # Types first (wrong types raise FmTypeError naming the parameter; NaN/inf never reach jsii).
        vpc = check_construct("vpc", vpc, attribute="vpc_id", expected="an ec2.IVpc")
        storage_capacity_gib = check_number("storage_capacity_gib", storage_capacity_gib, integer=True, unit="GiB")
        deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
        if throughput_mbps_per_tib is not None:
            throughput_mbps_per_tib = check_number(
                "throughput_mbps_per_tib", throughput_mbps_per_tib, integer=True, unit="MB/s/TiB"
            )
        if metadata_configuration is not None and not isinstance(metadata_configuration, LustreMetadataConfiguration):
            raise FmTypeError(
                "metadata_configuration",
                metadata_configuration,
                "a LustreMetadataConfiguration (LustreMetadataConfiguration.automatic() or .user_provisioned(iops))",
            )
        data_compression = check_enum("data_compression", data_compression, LustreDataCompression)
        efa_enabled = check_bool("efa_enabled", efa_enabled)
        if efa_security_group is not None and not isinstance(efa_security_group, EfaSecurityGroup):
            check_construct(
                "efa_security_group",
                efa_security_group,
                attribute="security_group_id",
                expected="an EfaSecurityGroup or ec2.ISecurityGroup",
            )
        if security_group is not None:
            check_construct(
                "security_group", security_group, attribute="security_group_id", expected="an ec2.ISecurityGroup"
            )
        if kms_key is not None:
            check_construct("kms_key", kms_key, attribute="key_arn", expected="a kms.IKey")
        log_level = check_enum("log_level", log_level, LustreLogLevel)
        if log_group is not None:
            check_construct("log_group", log_group, attribute="log_group_name", expected="a logs.ILogGroup")
        check_instance(
            "weekly_maintenance_start_time",
            weekly_maintenance_start_time,
            fsx.LustreMaintenanceTime,
            "an fsx.LustreMaintenanceTime",
        )
        check_instance(
            "automatic_backup_retention", automatic_backup_retention, Duration, "a Duration (Duration.days(n))"
        )
        check_instance(
            "daily_automatic_backup_start_time",
            daily_automatic_backup_start_time,
            fsx.DailyAutomaticBackupStartTime,
            "an fsx.DailyAutomaticBackupStartTime",
        )
        if copy_tags_to_backups is not None and not isinstance(copy_tags_to_backups, bool):
            raise FmTypeError("copy_tags_to_backups", copy_tags_to_backups, "True, False or None (not emitted)")
        removal_policy = check_enum("removal_policy", removal_policy, RemovalPolicy)
        selected_subnet = _select_subnet(vpc, subnet, vpc_subnets)
        _check_log_group_environment(scope, log_group)

        if throughput_mbps_per_tib is None and deployment_type.is_persistent:
            throughput_mbps_per_tib = THROUGHPUT_MBPS_PER_TIB[deployment_type][0]
        backup_days = self._validate(
            deployment_type=deployment_type,
            storage_capacity_gib=storage_capacity_gib,
            throughput_mbps_per_tib=throughput_mbps_per_tib,
            metadata_configuration=metadata_configuration,
            data_compression=data_compression,
            efa_enabled=efa_enabled,
            efa_security_group=efa_security_group,
            kms_key=kms_key,
            log_level=log_level,
            log_group=log_group,
            automatic_backup_retention=automatic_backup_retention,
            daily_automatic_backup_start_time=daily_automatic_backup_start_time,
        )
        super().__init__(scope, id)  # after every check: a refused file system leaves nothing in the tree

        note = quota_note(storage_capacity_gib, deployment_type)
        if note is not None:
            add_warning(self, WarningId.LUSTRE_CAPACITY_ABOVE_DEFAULT_QUOTA, note)
        _warn_retained_fixed_name(self, log_group)

        self.vpc = vpc
        self.subnet = selected_subnet
        self.deployment_type = deployment_type
        self.storage_capacity_gib = storage_capacity_gib
        self.throughput_mbps_per_tib = throughput_mbps_per_tib
        self.metadata_configuration = metadata_configuration
        self.data_compression = data_compression
        self.efa_enabled = efa_enabled
        self.kms_key = kms_key
        self.removal_policy = removal_policy
        self.log_group = log_group
        self.log_level = log_level.value

        # Network: the file system's own group, Lustre ports to itself; EFA: all traffic to and from itself.
        if security_group is None:
            own_group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="FSx for Lustre: Lustre ports (TCP 988, 1018-1023) from its clients only",
                allow_all_outbound=False,
                allow_all_ipv6_outbound=False,
            )
            close_default_egress(own_group)  # SG-peer egress rules alone would leave EC2's allow-all default
            security_group = own_group
        self.security_group = security_group
        self._connections = LustreConnections(
            security_groups=[self.security_group], default_port=ec2.Port.tcp(LUSTRE_TCP_PORT)
        )
        security_group_ids = [self.security_group.security_group_id]
        self.efa_security_group = None
        if not efa_enabled:
            self._connections.allow_default_port_internally("Lustre servers of this file system")
        else:
            _allow_all_traffic_to_itself(self.security_group)  # covers the Lustre ports between servers
            assert efa_security_group is not None  # checked by _validate
            efa_group: ec2.ISecurityGroup
            if isinstance(efa_security_group, EfaSecurityGroup):
                efa_group = efa_security_group.security_group  # already all traffic to and from itself
            else:
                efa_group = efa_security_group
                _allow_all_traffic_to_itself(efa_group)
            self.efa_security_group = efa_group
            security_group_ids.append(efa_group.security_group_id)

        persistent = deployment_type.is_persistent
        maintenance = weekly_maintenance_start_time or fsx.LustreMaintenanceTime(
            day=fsx.Weekday.SUNDAY, hour=2, minute=0
        )
        backup_start: fsx.DailyAutomaticBackupStartTime | None
        if known(backup_days):
            backups_on = persistent and backup_days > 0
            backup_start = daily_automatic_backup_start_time or fsx.DailyAutomaticBackupStartTime(hour=3, minute=0)
        else:  # a deploy-time retention: FSx picks the start time unless one is given
            backups_on = persistent
            backup_start = daily_automatic_backup_start_time
        log_config = fsx.CfnFileSystem.LogConfigurationProperty(
            level=log_level.value,
            destination=self._log_destination(log_group) if log_group is not None else None,
        )
        self.resource = fsx.CfnFileSystem(
            self,
            "Resource",
            file_system_type="LUSTRE",
            file_system_type_version=LUSTRE_VERSION,
            storage_capacity=storage_capacity_gib,
            storage_type="SSD",
            subnet_ids=[self.subnet.subnet_id],
            security_group_ids=security_group_ids,
            kms_key_id=kms_key.key_id if kms_key is not None else None,
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=deployment_type.value,
                per_unit_storage_throughput=throughput_mbps_per_tib if persistent else None,
                data_compression_type=data_compression.value,
                efa_enabled=True if efa_enabled else None,
                metadata_configuration=metadata_configuration.to_cfn() if metadata_configuration else None,
                log_configuration=log_config,
                weekly_maintenance_start_time=maintenance.to_timestamp(),
                automatic_backup_retention_days=backup_days if persistent else None,
                daily_automatic_backup_start_time=(
                    backup_start.to_timestamp() if backups_on and backup_start is not None else None
                ),
                # Create-only: the same value whether automatic backups are on or off (never dropped with them).
                copy_tags_to_backups=copy_tags_to_backups if persistent else None,
            ),
        )
        self.resource.apply_removal_policy(removal_policy)
        write_plan_record(self.resource, PlanKind.FILE_SYSTEM, backend="fsx-lustre")  # what `fmc plan` reads
        self.file_system_id = self.resource.ref
        self.dns_name = self.resource.attr_dns_name
        self.mount_name = self.resource.attr_lustre_mount_name

    @property
    def zone(self) -> str | None:
        """The zone of :attr:`subnet` (None when the subnet was imported without one)."""
        return subnet_zone(self.subnet)

    def _log_destination(self, log_group: logs.ILogGroup) -> str:
        # FSx wants the log group ARN without the ":*" suffix of LogGroup.log_group_arn.
        return Stack.of(self).format_arn(
            service="logs",
            resource="log-group",
            resource_name=log_group.log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    # --- validation: one small check per rule ---------------------------------------------------------------------
    @staticmethod
    def _validate(
        *,
        deployment_type: LustreDeploymentType,
        storage_capacity_gib: int,
        throughput_mbps_per_tib: int | None,
        metadata_configuration: LustreMetadataConfiguration | None,
        data_compression: LustreDataCompression,
        efa_enabled: bool,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None,
        kms_key: kms.IKey | None,
        log_level: LustreLogLevel,
        log_group: logs.ILogGroup | None,
        automatic_backup_retention: Duration | None,
        daily_automatic_backup_start_time: fsx.DailyAutomaticBackupStartTime | None,
    ) -> int:
        """Raise :class:`FmValidationError` on misuse; return the backup retention in days."""
        _check_throughput(deployment_type, throughput_mbps_per_tib)
        _check_efa(deployment_type, efa_enabled, metadata_configuration, efa_security_group)
        _check_capacity(deployment_type, storage_capacity_gib, throughput_mbps_per_tib, efa_enabled)
        _check_metadata(deployment_type, metadata_configuration)
        if not isinstance(data_compression, LustreDataCompression):
            raise FmValidationError("data_compression", data_compression, one_of(LustreDataCompression))
        if kms_key is not None and not deployment_type.is_persistent:
            raise FmValidationError(
                "kms_key", kms_key.node.path, f"None for {deployment_type.value} (scratch data uses FSx-managed keys)"
            )
        _check_logging(log_level, log_group)
        return _check_backups(deployment_type, automatic_backup_retention, daily_automatic_backup_start_time)

    @classmethod
    def from_lustre_file_system_attributes(
        cls,
        scope: Construct,
        id: str,
        *,
        file_system_id: str,
        dns_name: str,
        mount_name: str,
        security_group: ec2.ISecurityGroup,
        storage_capacity_gib: int | None = None,
        deployment_type: LustreDeploymentType | None = None,
        throughput_mbps_per_tib: int | None = None,
        efa_enabled: bool = False,
        efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None = None,
        zone: str | None = None,
    ) -> LustreFileSystemBase:
        """Import an existing file system: mount it, open its ports to clients, link it to S3.

        ``security_group`` is the file system's group (rules are added to it); the optional facts feed
        :meth:`eks_static_volume` (capacity), the SCRATCH_1 rule (deployment type), the aggregate throughput and the
        EFA client set-up of :meth:`mount_commands` (``efa_enabled``). ``efa_security_group`` (the file system's EFA
        group, default None) and ``zone`` (its zone name or id, default None) let :meth:`register_efa_clients` check
        EFA clients; unknown facts skip those checks.
        """
        return _ImportedLustreFileSystem(
            scope,
            id,
            file_system_id=file_system_id,
            dns_name=dns_name,
            mount_name=mount_name,
            security_group=security_group,
            storage_capacity_gib=storage_capacity_gib,
            deployment_type=deployment_type,
            throughput_mbps_per_tib=throughput_mbps_per_tib,
            efa_enabled=efa_enabled,
            efa_security_group=efa_security_group,
            zone=zone,
        )


class _ImportedLustreFileSystem(LustreFileSystemBase):
    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        file_system_id: str,
        dns_name: str,
        mount_name: str,
        security_group: ec2.ISecurityGroup,
        storage_capacity_gib: int | None,
        deployment_type: LustreDeploymentType | None,
        throughput_mbps_per_tib: int | None,
        efa_enabled: bool,
        efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None,
        zone: str | None,
    ) -> None:
        check_scope_and_id(scope, id)
        file_system_id = check_str(
            "file_system_id",
            file_system_id,
            pattern=FILE_SYSTEM_ID_PATTERN,
            allowed="a file system id (FSx API FileSystemId, 'fs-' and 8 or more hex digits)",
            max_length=21,
        )
        dns_name = check_dns_name(dns_name)
        mount_name = check_mount_name(mount_name)
        check_construct(
            "security_group", security_group, attribute="security_group_id", expected="an ec2.ISecurityGroup"
        )
        if storage_capacity_gib is not None:
            storage_capacity_gib = check_count("storage_capacity_gib", storage_capacity_gib, minimum=1)
        if deployment_type is not None:
            deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
        if throughput_mbps_per_tib is not None:
            throughput_mbps_per_tib = check_count("throughput_mbps_per_tib", throughput_mbps_per_tib, minimum=1)
        efa_enabled = check_bool("efa_enabled", efa_enabled)
        efa_group = _optional_security_group("efa_security_group", efa_security_group)
        zone = check_zone("zone", zone)
        if efa_enabled and deployment_type not in (None, LustreDeploymentType.PERSISTENT_2):
            raise FmValidationError("efa_enabled", efa_enabled, "False unless deployment_type is PERSISTENT_2")
        if efa_group is not None and not efa_enabled:
            raise FmValidationError("efa_security_group", _describe_group(efa_group), "None unless efa_enabled is True")
        super().__init__(scope, id)
        self.file_system_id = file_system_id
        self.dns_name = dns_name
        self.mount_name = mount_name
        self.security_group = security_group
        self.storage_capacity_gib = storage_capacity_gib
        self.deployment_type = deployment_type
        self.throughput_mbps_per_tib = throughput_mbps_per_tib
        self.efa_enabled = efa_enabled
        self.efa_security_group = efa_group
        self._zone: str | None = zone
        self.removal_policy = RemovalPolicy.RETAIN
        self._connections = LustreConnections(
            security_groups=[security_group], default_port=ec2.Port.tcp(LUSTRE_TCP_PORT)
        )

    @property
    def zone(self) -> str | None:
        return self._zone if known(self._zone) else None


def _select_subnet(vpc: ec2.IVpc, subnet: object, vpc_subnets: object) -> ec2.ISubnet:
    """The one subnet of the file system (FSx for Lustre takes exactly one SubnetId).

    ``subnet``, else the first subnet of ``vpc_subnets``, else the VPC's first private subnet, else its first isolated
    subnet; a VPC with neither (public subnets only, or imported without subnet ids) needs ``subnet``.
    """
    if subnet is not None and vpc_subnets is not None:
        raise FmValidationError("vpc_subnets", "given", "None when subnet is given (pass one of them)")
    if subnet is not None:
        return _check_subnet("subnet", subnet)
    if vpc_subnets is not None:
        if not isinstance(vpc_subnets, ec2.SubnetSelection):
            raise FmTypeError(
                "vpc_subnets", vpc_subnets, f"an ec2.SubnetSelection (got a {type(vpc_subnets).__name__})"
            )
        try:
            selected = vpc.select_subnets(
                availability_zones=vpc_subnets.availability_zones,
                one_per_az=vpc_subnets.one_per_az,
                subnet_filters=vpc_subnets.subnet_filters,
                subnet_group_name=vpc_subnets.subnet_group_name,
                subnets=vpc_subnets.subnets,
                subnet_type=vpc_subnets.subnet_type,
            ).subnets
        except RuntimeError as error:  # jsii: aws-cdk-lib's own selection errors
            raise FmValidationError(
                "vpc_subnets",
                "the given ec2.SubnetSelection",
                f"a selection that matches subnets of the VPC ({str(error).splitlines()[0]})",
            ) from None
        if not selected:
            raise FmValidationError("vpc_subnets", "the given ec2.SubnetSelection", "a selection that matches a subnet")
        return selected[0]
    for candidates in (vpc.private_subnets, vpc.isolated_subnets):
        if candidates:
            return candidates[0]
    raise FmValidationError(
        "subnet",
        None,
        "given (subnet=ec2.Subnet.from_subnet_attributes(...), or vpc_subnets=ec2.SubnetSelection(...)) because the "
        "VPC has no private or isolated subnet to default to; FSx for Lustre takes one subnet, best in the zone of "
        "its clients",
    )


def _check_subnet(parameter: str, value: object) -> ec2.ISubnet:
    checked: ec2.ISubnet = check_construct(parameter, value, attribute="subnet_id", expected="an ec2.ISubnet")
    return checked


def _describe_subnet(subnet: ec2.ISubnet) -> str:
    subnet_id = subnet.subnet_id
    return f"subnet {subnet_id}" if known(subnet_id) else f"subnet {subnet.node.path}"


def _optional_security_group(
    parameter: str, value: ec2.ISecurityGroup | EfaSecurityGroup | None
) -> ec2.ISecurityGroup | None:
    """An ``ec2.ISecurityGroup`` (an :class:`EfaSecurityGroup` gives its group), or None."""
    if value is None:
        return None
    if isinstance(value, EfaSecurityGroup):
        return value.security_group
    group: ec2.ISecurityGroup = check_construct(
        parameter, value, attribute="security_group_id", expected="an ec2.ISecurityGroup or EfaSecurityGroup"
    )
    return group


def _is_created_here(group: ec2.ISecurityGroup) -> bool:
    """Whether the group is an ``AWS::EC2::SecurityGroup`` of this app (not imported by id)."""
    return isinstance(group.node.default_child, ec2.CfnSecurityGroup)


def _same_security_group(a: ec2.ISecurityGroup, b: ec2.ISecurityGroup) -> bool | None:
    """Whether two groups are the same, or None when that is only known at deploy time."""
    if a is b or a.node.path == b.node.path:
        return True
    a_id, b_id = a.security_group_id, b.security_group_id
    if a_id == b_id:
        return True
    if known(a_id) and known(b_id):
        return False  # two literal ids
    if _is_created_here(a) and _is_created_here(b):
        return False  # two AWS::EC2::SecurityGroup resources of this app
    return None  # at least one is imported by a deploy-time id


def _describe_group(group: ec2.ISecurityGroup) -> str:
    group_id = group.security_group_id
    return group_id if known(group_id) else group.node.path


def _allow_all_traffic_to_itself(group: ec2.ISecurityGroup) -> None:
    """EFA: all traffic in from and out to members of ``group`` (rules by security group id)."""
    # The group itself as the peer: CDK then writes separate rule resources (an inline self-reference is a cycle).
    group.add_ingress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic from the group")
    group.add_egress_rule(group, ec2.Port.all_traffic(), "EFA: all traffic to the group")


def _check_throughput(deployment_type: LustreDeploymentType, throughput: int | None) -> None:
    if deployment_type.is_persistent:
        allowed = THROUGHPUT_MBPS_PER_TIB[deployment_type]
        if known(throughput) and throughput not in allowed:
            raise FmValidationError(
                "throughput_mbps_per_tib", throughput, f"{one_of(allowed)} for {deployment_type.value}"
            )
    elif throughput is not None:
        raise FmValidationError(
            "throughput_mbps_per_tib",
            throughput,
            f"None for {deployment_type.value} (scratch throughput is a fixed 200 MB/s/TiB baseline)",
        )


def _check_efa(
    deployment_type: LustreDeploymentType,
    efa_enabled: bool,
    metadata_configuration: LustreMetadataConfiguration | None,
    efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None,
) -> None:
    if not efa_enabled:
        if efa_security_group is not None:
            raise FmValidationError("efa_security_group", "given", "None unless efa_enabled is True")
        return
    if deployment_type is not LustreDeploymentType.PERSISTENT_2:
        raise FmValidationError(
            "efa_enabled", efa_enabled, f"False for {deployment_type.value} (EFA needs PERSISTENT_2)"
        )
    if metadata_configuration is None:
        raise FmValidationError(
            "metadata_configuration", None, "set (AUTOMATIC or USER_PROVISIONED) when efa_enabled is True"
        )
    if efa_security_group is None:
        raise FmValidationError(
            "efa_security_group", None, "an EfaSecurityGroup or ec2.ISecurityGroup when efa_enabled is True"
        )


def _check_capacity(
    deployment_type: LustreDeploymentType, capacity: int, throughput: int | None, efa_enabled: bool
) -> None:
    if not known(capacity):
        return  # a deploy-time value (checked for type and NaN/inf before): FSx checks it at deploy time
    if capacity > MAX_STORAGE_CAPACITY_GIB:
        raise FmValidationError(
            "storage_capacity_gib",
            capacity,
            f"at most {MAX_STORAGE_CAPACITY_GIB:,} (FSx API CreateFileSystem StorageCapacity)",
        )
    if efa_enabled and not known(throughput):
        return
    if efa_enabled and throughput not in EFA_CAPACITY_MULTIPLE_GIB:
        return  # reported by _check_throughput
    if not is_valid_capacity(capacity, deployment_type, throughput, efa_enabled=efa_enabled):
        raise FmValidationError(
            "storage_capacity_gib",
            capacity,
            capacity_rule(deployment_type, throughput, efa_enabled=efa_enabled, near=capacity),
        )


def _check_metadata(deployment_type: LustreDeploymentType, metadata: LustreMetadataConfiguration | None) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, LustreMetadataConfiguration):
        raise FmValidationError("metadata_configuration", metadata, "a LustreMetadataConfiguration")
    if deployment_type is not LustreDeploymentType.PERSISTENT_2:
        raise FmValidationError(
            "metadata_configuration", metadata.mode.value, f"None for {deployment_type.value} (PERSISTENT_2 only)"
        )
    metadata.validate()


#: FSx API ``LustreLogCreateConfiguration.Destination`` (FSx API Reference): "The name of the Amazon CloudWatch Logs log
#: group must begin with the /aws/fsx prefix"; the destination must be in the file system's partition, Region and
#: account; without one FSx writes to ``/aws/fsx/lustre``.
LOG_GROUP_PREFIX = "/aws/fsx"
_LOG_GROUP_RULE = (
    f"a log group whose name begins with '{LOG_GROUP_PREFIX}' (FSx API LustreLogCreateConfiguration.Destination: "
    f"FSx writes only to log groups named {LOG_GROUP_PREFIX}...), e.g. logs.LogGroup(..., "
    f"log_group_name='{LOG_GROUP_PREFIX}/lustre/<name>')"
)


def _check_logging(log_level: LustreLogLevel, log_group: logs.ILogGroup | None) -> None:
    if not isinstance(log_level, LustreLogLevel):
        raise FmValidationError("log_level", log_level, one_of(LustreLogLevel))
    if log_group is None:
        return
    if log_level is LustreLogLevel.DISABLED:
        raise FmValidationError("log_group", log_group.node.path, "None when log_level is DISABLED")
    name: Any = log_group.log_group_name
    created = log_group.node.default_child
    if not known(name) and isinstance(created, logs.CfnLogGroup):
        # A LogGroup of this app: its log_group_name is a Ref; the name it was given is on the L1 (None: unnamed).
        name = Stack.of(log_group).resolve(created.log_group_name)
        if name is None:
            # CloudFormation names it <stack>-<id>-<hash>, never /aws/fsx...: FSx would refuse it at deploy time.
            raise FmValidationError(
                "log_group", f"{log_group.node.path} (a name CloudFormation generates)", _LOG_GROUP_RULE
            )
    if isinstance(name, str) and known(name) and not name.startswith(LOG_GROUP_PREFIX):
        raise FmValidationError("log_group", name, _LOG_GROUP_RULE)


def _warn_retained_fixed_name(file_system: Construct, log_group: logs.ILogGroup | None) -> None:
    """A log group of this app with a fixed (literal) name and DeletionPolicy Retain outlives ``cdk destroy`` and
    then blocks a redeploy: CloudFormation cannot create a log group whose name exists (LogGroupName is its
    identifier and create-only: cfn-lint 1.58.0 schema of AWS::Logs::LogGroup)."""
    if log_group is None:
        return
    created = log_group.node.default_child
    if not isinstance(created, logs.CfnLogGroup) or created.cfn_options.deletion_policy is not CfnDeletionPolicy.RETAIN:
        return
    name = Stack.of(created).resolve(created.log_group_name)
    if isinstance(name, str) and known(name):
        add_warning(
            file_system,
            WarningId.LUSTRE_LOG_GROUP_RETAINED_FIXED_NAME,
            f"log group {name} ({log_group.node.path}) is retained (RETAIN) under a fixed name: after cdk destroy it "
            "stays, and deploying the stack again fails because a log group of that name exists. Give it "
            "removal_policy=RemovalPolicy.DESTROY, or create it outside the stack and pass "
            "logs.LogGroup.from_log_group_name(...)",
        )


def _check_log_group_environment(scope: Construct, log_group: logs.ILogGroup | None) -> None:
    """The destination is built from the log group's name in the file system's account and Region: a log group known
    to be in another account or Region (imported by ARN) is refused rather than silently replaced."""
    if log_group is None:
        return
    stack, env = Stack.of(scope), log_group.env
    for what, theirs, ours in (("account", env.account, stack.account), ("Region", env.region, stack.region)):
        if known(theirs) and known(ours) and theirs != ours:
            raise FmValidationError(
                "log_group",
                f"{log_group.node.path} ({what} {theirs})",
                f"a log group in the file system's {what} ({ours}): FSx logs only to its own partition, Region and "
                "account (FSx API LustreLogCreateConfiguration.Destination)",
            )


def _check_backups(
    deployment_type: LustreDeploymentType,
    retention: Duration | None,
    start_time: fsx.DailyAutomaticBackupStartTime | None,
) -> int:
    if not deployment_type.is_persistent:
        if retention is not None or start_time is not None:
            raise FmValidationError(
                "automatic_backup_retention",
                retention.to_human_string() if retention is not None else None,
                f"None for {deployment_type.value} (scratch file systems have no backups)",
            )
        return 0
    if retention is None:
        return _DEFAULT_BACKUP_RETENTION_DAYS
    if retention.is_unresolved():
        # A deploy-time number of days (Duration.days(CfnParameter.value_as_number)): CloudFormation passes it on.
        token_days: int = retention.to_days()  # type: ignore[assignment]
        return token_days
    days = retention.to_days(integral=False)
    if days != int(days) or not 0 <= days <= _MAX_BACKUP_RETENTION_DAYS:
        raise FmValidationError("automatic_backup_retention", retention.to_human_string(), "0 to 90 whole days")
    if days == 0 and start_time is not None:
        raise FmValidationError(
            "daily_automatic_backup_start_time", start_time.to_timestamp(), "None when automatic backups are off"
        )
    return int(days)
