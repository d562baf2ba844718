"""The Lustre file system's validation: one small check per rule (pure functions, no construct built)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from aws_cdk import CfnDeletionPolicy, Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from .._validate import (
    check_bool,
    check_construct,
    check_enum,
    check_kms_key,
    check_number,
    check_security_group,
    check_vpc,
    known,
)
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning, one_of
from ..networking.security_group import EfaSecurityGroup
from . import rules
from ._checks import check_instance
from .lustre_network import _select_subnet
from .lustre_options import LustreDataCompression, LustreLogLevel, LustreMetadataConfiguration
from .sizing import (
    THROUGHPUT_MBPS_PER_TIB,
    LustreDeploymentType,
)

_MAX_BACKUP_RETENTION_DAYS = 90
_DEFAULT_BACKUP_RETENTION_DAYS = 7


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


@dataclass(frozen=True)
class _LustreProps:
    """The keyword arguments of :class:`~fmconstructs.storage.lustre.LustreFileSystem` as given (its signature is the
    one declaration: names, types and defaults); :func:`check_lustre_props` returns them checked, as
    :class:`_CheckedLustreProps`."""

    vpc: ec2.IVpc
    storage_capacity_gib: int
    subnet: ec2.ISubnet | None
    deployment_type: LustreDeploymentType
    throughput_mbps_per_tib: int | None
    metadata_configuration: LustreMetadataConfiguration | None
    data_compression: LustreDataCompression
    efa_enabled: bool
    efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None
    security_group: ec2.ISecurityGroup | None
    encryption_key: kms.IKey | None
    log_level: LustreLogLevel
    log_group: logs.ILogGroup | None
    weekly_maintenance_start_time: fsx.LustreMaintenanceTime | None
    automatic_backup_retention: Duration | None
    daily_automatic_backup_start_time: fsx.DailyAutomaticBackupStartTime | None
    copy_tags_to_backups: bool | None
    removal_policy: RemovalPolicy
    vpc_subnets: ec2.SubnetSelection | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _LustreProps:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


@dataclass(frozen=True)
class _CheckedLustreProps(_LustreProps):
    """The props as :func:`check_lustre_props` returns them (typed, the subnet chosen, the default throughput and
    backup days set)."""

    #: The backup retention in days (may be a token).
    backup_days: int = 0


def check_lustre_props(scope: Construct, given: _LustreProps) -> _CheckedLustreProps:
    """Raise on misuse, before any construct is built: types, the subnet, the log group's account and Region, then
    one small check per rule. Returns the props with the subnet chosen and the defaults that depend on others set."""
    props = _check_types(given)
    subnet = _select_subnet(props.vpc, given.subnet, given.vpc_subnets)
    _check_log_group_environment(scope, props.log_group)
    throughput = props.throughput_mbps_per_tib
    if throughput is None and props.deployment_type.is_persistent:
        throughput = THROUGHPUT_MBPS_PER_TIB[props.deployment_type][0]
    props = replace(props, subnet=subnet, throughput_mbps_per_tib=throughput)
    backup_days = _check_rules(props)
    return _CheckedLustreProps(
        **{field.name: getattr(props, field.name) for field in fields(props)}, backup_days=backup_days
    )


def _check_types(given: _LustreProps) -> _LustreProps:
    """Types first (wrong types raise FmTypeError naming the parameter; NaN/inf never reach jsii); the record with
    the checked values (enums resolved, numbers checked) in place of the given ones."""
    checked: dict[str, Any] = {
        "vpc": check_vpc("vpc", given.vpc),
        "storage_capacity_gib": check_number(
            "storage_capacity_gib", given.storage_capacity_gib, integer=True, unit="GiB"
        ),
        "deployment_type": check_enum("deployment_type", given.deployment_type, LustreDeploymentType),
    }
    if given.throughput_mbps_per_tib is not None:
        checked["throughput_mbps_per_tib"] = check_number(
            "throughput_mbps_per_tib", given.throughput_mbps_per_tib, integer=True, unit="MB/s/TiB"
        )
    metadata_configuration = given.metadata_configuration
    if metadata_configuration is not None and not isinstance(metadata_configuration, LustreMetadataConfiguration):
        raise FmTypeError(
            "metadata_configuration",
            metadata_configuration,
            "a LustreMetadataConfiguration (LustreMetadataConfiguration.automatic() or .user_provisioned(iops))",
        )
    checked["data_compression"] = check_enum("data_compression", given.data_compression, LustreDataCompression)
    checked["efa_enabled"] = check_bool("efa_enabled", given.efa_enabled)
    _check_optional_constructs(given)
    checked["log_level"] = check_enum("log_level", given.log_level, LustreLogLevel)
    _check_schedule_types(given)
    if given.copy_tags_to_backups is not None and not isinstance(given.copy_tags_to_backups, bool):
        raise FmTypeError("copy_tags_to_backups", given.copy_tags_to_backups, "True, False or None (not emitted)")
    checked["removal_policy"] = check_enum("removal_policy", given.removal_policy, RemovalPolicy)
    return replace(given, **checked)


def _check_optional_constructs(given: _LustreProps) -> None:
    """The optional groups, key and log group (in the order the props are listed)."""
    efa_security_group = given.efa_security_group
    if efa_security_group is not None and not isinstance(efa_security_group, EfaSecurityGroup):
        check_construct(
            "efa_security_group",
            efa_security_group,
            attribute="security_group_id",
            expected="an EfaSecurityGroup or ec2.ISecurityGroup",
        )
    if given.security_group is not None:
        check_security_group("security_group", given.security_group)
    if given.encryption_key is not None:
        check_kms_key("encryption_key", given.encryption_key)
    if given.log_group is not None:
        check_construct("log_group", given.log_group, attribute="log_group_name", expected="a logs.ILogGroup")


def _check_schedule_types(given: _LustreProps) -> None:
    check_instance(
        "weekly_maintenance_start_time",
        given.weekly_maintenance_start_time,
        fsx.LustreMaintenanceTime,
        "an fsx.LustreMaintenanceTime",
    )
    check_instance(
        "automatic_backup_retention", given.automatic_backup_retention, Duration, "a Duration (Duration.days(n))"
    )
    check_instance(
        "daily_automatic_backup_start_time",
        given.daily_automatic_backup_start_time,
        fsx.DailyAutomaticBackupStartTime,
        "an fsx.DailyAutomaticBackupStartTime",
    )


def _check_rules(props: _LustreProps) -> int:
    """Raise :class:`FmValidationError` on misuse (one small check per rule); return the backup retention in days."""
    deployment_type = props.deployment_type
    rules.throughput_fits_the_deployment_type(
        deployment_type=deployment_type, throughput_mbps_per_tib=props.throughput_mbps_per_tib
    )
    rules.efa_needs_persistent_2_metadata_and_a_group(
        deployment_type=deployment_type,
        efa_enabled=props.efa_enabled,
        metadata_configuration=props.metadata_configuration,
        efa_security_group=props.efa_security_group,
    )
    rules.capacity_fits_the_deployment_type(
        deployment_type=deployment_type,
        storage_capacity_gib=props.storage_capacity_gib,
        throughput_mbps_per_tib=props.throughput_mbps_per_tib,
        efa_enabled=props.efa_enabled,
    )
    rules.metadata_configuration_needs_persistent_2(
        deployment_type=deployment_type, metadata_configuration=props.metadata_configuration
    )
    if not isinstance(props.data_compression, LustreDataCompression):
        raise FmValidationError("data_compression", props.data_compression, one_of(LustreDataCompression))
    if props.encryption_key is not None and not deployment_type.is_persistent:
        raise FmValidationError(
            "encryption_key",
            props.encryption_key.node.path,
            f"None for {deployment_type.value} (scratch data uses FSx-managed keys)",
        )
    _check_logging(props.log_level, props.log_group)
    return _check_backups(deployment_type, props.automatic_backup_retention, props.daily_automatic_backup_start_time)
