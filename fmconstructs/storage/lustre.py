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

Layout (every public name stays importable from this module): ``lustre`` holds the constructs (the shared base, the
created file system, the imported one); ``lustre_options`` the value types of the props; ``lustre_rules`` the
validation, one check per rule; ``lustre_network`` ports, connections, security groups and the subnet;
``lustre_efa`` the EFA clients and their 1,024-connection budget; ``lustre_alarms`` the saturation and export alarms;
``lustre_repositories`` the links to S3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import jsii
from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._renames import RenamedAttribute, renamed_keywords
from .._validate import (
    RemovedAttribute,
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_scope_id,
    check_security_group,
    check_str,
    check_zone,
    known,
    located,
    subnet_zone,
)
from .._validate_ids import FSX_FILE_SYSTEM_ID, check_service_id
from ..catalog import InstanceSpec
from ..errors import FmValidationError, WarningId, add_warning
from ..networking.security_group import EfaSecurityGroup, close_default_egress
from .client import (
    DEFAULT_MOUNT_OPTIONS,
    EksStaticVolume,
    check_dns_name,
    check_mount_name,
    lustre_mount_command,
    lustre_mount_commands,
)
from .data_repository import (
    DataRepositoryAssociation,
)
from .export_alarm import (
    ExportAlarms,
    ExportAlarmSettings,
)

# The file system's concerns, one module each; every public name stays importable from here.
from .lustre_alarms import _LustreAlarms
from .lustre_efa import EfaClientGroup as EfaClientGroup
from .lustre_efa import _LustreEfaClients
from .lustre_network import LUSTRE_TCP_PORT as LUSTRE_TCP_PORT
from .lustre_network import LUSTRE_TCP_PORT_RANGE as LUSTRE_TCP_PORT_RANGE
from .lustre_network import LustreConnections as LustreConnections
from .lustre_network import (
    _allow_all_traffic_to_itself,
    _as_connectable,
    _describe_group,
    _optional_security_group,
)
from .lustre_network import lustre_ports as lustre_ports
from .lustre_options import LUSTRE_VERSION as LUSTRE_VERSION
from .lustre_options import LustreDataCompression as LustreDataCompression
from .lustre_options import LustreLogLevel as LustreLogLevel
from .lustre_options import LustreMetadataConfiguration as LustreMetadataConfiguration
from .lustre_options import LustreMetadataMode as LustreMetadataMode
from .lustre_options import valid_metadata_iops as valid_metadata_iops
from .lustre_repositories import _LustreDataRepositories
from .lustre_rules import LOG_GROUP_PREFIX as LOG_GROUP_PREFIX
from .lustre_rules import _CheckedLustreProps, _LustreProps, _warn_retained_fixed_name, check_lustre_props
from .sizing import (
    # Re-exported: ``from fmconstructs.storage.lustre import MAX_EFA_CONNECTIONS`` keeps working (defined in sizing,
    # which the ``fmc`` command imports without aws_cdk).
    MAX_EFA_CONNECTIONS as MAX_EFA_CONNECTIONS,
)
from .sizing import (
    LustreDeploymentType,
    LustreSizing,
    per_unit_throughput_mbps_per_tib,
    quota_note,
)


@jsii.implements(ec2.IConnectable)
class LustreFileSystemBase(_LustreAlarms, _LustreEfaClients, _LustreDataRepositories, Construct):
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

    aggregate_throughput_gbps = RemovedAttribute("aggregate_throughput_gbytes_per_s (the value was in GB/s)")

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
    - ``encryption_key`` (``kms.IKey``) default None (AWS-managed key); persistent types only (``kms_key`` is its
      deprecated name).
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
    ``efa_security_group``, ``encryption_key``, ``deployment_type``, ``throughput_mbps_per_tib``,
    ``copy_tags_to_backups`` (:data:`~fmconstructs.storage.create_only.CREATE_ONLY_PROPERTIES` lists them, with
    sources).
    ``storage_capacity_gib`` may only grow (FSx cannot shrink a file system): size with ``min_capacity_gib=<the
    deployed capacity>`` (see :func:`~fmconstructs.storage.size_for_throughput`). Changed in place: capacity
    increases, backups, maintenance window, logging, metadata configuration, data compression, new data repository
    associations.
    """

    #: Deprecated name of :attr:`encryption_key` (until fmconstructs 0.4.0).
    kms_key = RenamedAttribute("encryption_key")

    @renamed_keywords("LustreFileSystem", kms_key="encryption_key")
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
        encryption_key: kms.IKey | None = None,
        log_level: LustreLogLevel = LustreLogLevel.WARN_ERROR,
        log_group: logs.ILogGroup | None = None,
        weekly_maintenance_start_time: fsx.LustreMaintenanceTime | None = None,
        automatic_backup_retention: Duration | None = None,
        daily_automatic_backup_start_time: fsx.DailyAutomaticBackupStartTime | None = None,
        copy_tags_to_backups: bool | None = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        vpc_subnets: ec2.SubnetSelection | None = None,
    ) -> None:
        check_scope_id(scope, id)
        props = check_lustre_props(scope, _LustreProps.of(locals()))
        super().__init__(scope, id)  # after every check: a refused file system leaves nothing in the tree
        self._warn_about(props)
        self._keep(props)
        security_group_ids = self._build_security_groups(props)
        self._build_file_system(props, security_group_ids)

    def _warn_about(self, props: _CheckedLustreProps) -> None:
        note = quota_note(props.storage_capacity_gib, props.deployment_type)
        if note is not None:
            add_warning(self, WarningId.LUSTRE_CAPACITY_ABOVE_DEFAULT_QUOTA, note)
        _warn_retained_fixed_name(self, props.log_group)

    def _keep(self, props: _CheckedLustreProps) -> None:
        assert props.subnet is not None  # chosen by check_lustre_props
        self.vpc = props.vpc
        self.subnet = props.subnet
        self.deployment_type = props.deployment_type
        self.storage_capacity_gib = props.storage_capacity_gib
        self.throughput_mbps_per_tib = props.throughput_mbps_per_tib
        self.metadata_configuration = props.metadata_configuration
        self.data_compression = props.data_compression
        self.efa_enabled = props.efa_enabled
        self.encryption_key = props.encryption_key
        self.removal_policy = props.removal_policy
        self.log_group = props.log_group
        self.log_level = props.log_level.value

    def _build_security_groups(self, props: _CheckedLustreProps) -> list[str]:
        """The file system's own group, Lustre ports to itself; EFA: all traffic to and from itself. Returns the ids of
        the groups the file system is in."""
        security_group = props.security_group
        if security_group is None:
            own_group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=props.vpc,
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
        if not props.efa_enabled:
            self._connections.allow_default_port_internally("Lustre servers of this file system")
        else:
            _allow_all_traffic_to_itself(self.security_group)  # covers the Lustre ports between servers
            efa_security_group = props.efa_security_group
            assert efa_security_group is not None  # checked by check_lustre_props
            efa_group: ec2.ISecurityGroup
            if isinstance(efa_security_group, EfaSecurityGroup):
                efa_group = efa_security_group.security_group  # already all traffic to and from itself
            else:
                efa_group = efa_security_group
                _allow_all_traffic_to_itself(efa_group)
            self.efa_security_group = efa_group
            security_group_ids.append(efa_group.security_group_id)
        return security_group_ids

    def _build_file_system(self, props: _CheckedLustreProps, security_group_ids: list[str]) -> None:
        """The ``AWS::FSx::FileSystem`` (child id "Resource") with its schedules, logging and removal policy."""
        persistent = props.deployment_type.is_persistent
        backup_days = props.backup_days
        maintenance = props.weekly_maintenance_start_time or fsx.LustreMaintenanceTime(
            day=fsx.Weekday.SUNDAY, hour=2, minute=0
        )
        backup_start: fsx.DailyAutomaticBackupStartTime | None
        if known(backup_days):
            backups_on = persistent and backup_days > 0
            backup_start = props.daily_automatic_backup_start_time or fsx.DailyAutomaticBackupStartTime(
                hour=3, minute=0
            )
        else:  # a deploy-time retention: FSx picks the start time unless one is given
            backups_on = persistent
            backup_start = props.daily_automatic_backup_start_time
        log_config = fsx.CfnFileSystem.LogConfigurationProperty(
            level=props.log_level.value,
            destination=self._log_destination(props.log_group) if props.log_group is not None else None,
        )
        metadata_configuration = props.metadata_configuration
        self.resource = fsx.CfnFileSystem(
            self,
            "Resource",
            file_system_type="LUSTRE",
            file_system_type_version=LUSTRE_VERSION,
            storage_capacity=props.storage_capacity_gib,
            storage_type="SSD",
            subnet_ids=[self.subnet.subnet_id],
            security_group_ids=security_group_ids,
            kms_key_id=props.encryption_key.key_id if props.encryption_key is not None else None,
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=props.deployment_type.value,
                per_unit_storage_throughput=props.throughput_mbps_per_tib if persistent else None,
                data_compression_type=props.data_compression.value,
                efa_enabled=True if props.efa_enabled else None,
                metadata_configuration=metadata_configuration.to_cfn() if metadata_configuration else None,
                log_configuration=log_config,
                weekly_maintenance_start_time=maintenance.to_timestamp(),
                automatic_backup_retention_days=backup_days if persistent else None,
                daily_automatic_backup_start_time=(
                    backup_start.to_timestamp() if backups_on and backup_start is not None else None
                ),
                # Create-only: the same value whether automatic backups are on or off (never dropped with them).
                copy_tags_to_backups=props.copy_tags_to_backups if persistent else None,
            ),
        )
        self.resource.apply_removal_policy(props.removal_policy)
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
        return _ImportedLustreFileSystem(scope, id, _ImportedAttributes.of(locals()))


@dataclass(frozen=True)
class _ImportedAttributes:
    """The keyword arguments of :meth:`LustreFileSystem.from_lustre_file_system_attributes`, as given."""

    file_system_id: str
    dns_name: str
    mount_name: str
    security_group: ec2.ISecurityGroup
    storage_capacity_gib: int | None
    deployment_type: LustreDeploymentType | None
    throughput_mbps_per_tib: int | None
    efa_enabled: bool
    efa_security_group: ec2.ISecurityGroup | EfaSecurityGroup | None
    zone: str | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _ImportedAttributes:
        """The attributes among the factory's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


class _ImportedLustreFileSystem(LustreFileSystemBase):
    @located
    def __init__(self, scope: Construct, id: str, given: _ImportedAttributes) -> None:
        check_scope_id(scope, id)
        file_system_id = check_service_id("file_system_id", given.file_system_id, FSX_FILE_SYSTEM_ID)
        dns_name = check_dns_name(given.dns_name)
        mount_name = check_mount_name(given.mount_name)
        security_group = given.security_group
        check_security_group("security_group", security_group)
        storage_capacity_gib = given.storage_capacity_gib
        if storage_capacity_gib is not None:
            storage_capacity_gib = check_count("storage_capacity_gib", storage_capacity_gib, minimum=1)
        deployment_type = given.deployment_type
        if deployment_type is not None:
            deployment_type = check_enum("deployment_type", deployment_type, LustreDeploymentType)
        throughput_mbps_per_tib = given.throughput_mbps_per_tib
        if throughput_mbps_per_tib is not None:
            throughput_mbps_per_tib = check_count("throughput_mbps_per_tib", throughput_mbps_per_tib, minimum=1)
        efa_enabled = check_bool("efa_enabled", given.efa_enabled)
        efa_group = _optional_security_group("efa_security_group", given.efa_security_group)
        zone = check_zone("zone", given.zone)
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
