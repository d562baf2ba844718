"""LustreFileSystem: properties, defaults, validation, security group rules, imported file systems."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Match, Template

from fmconstructs import EfaSecurityGroup, FmValidationError
from fmconstructs.storage import (
    LustreDataCompression,
    LustreDeploymentType,
    LustreFileSystem,
    LustreLogLevel,
    LustreMetadataConfiguration,
)

from tests.conftest import ENV, new_app, new_scene

P2 = LustreDeploymentType.PERSISTENT_2
FS = "AWS::FSx::FileSystem"


@dataclass
class Built:
    stack: cdk.Stack
    fs: LustreFileSystem
    template: Template


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )


@pytest.fixture(scope="module")
def built() -> dict[str, Built]:
    """Several configurations, one app, each synthesized once for the module."""
    app = new_app()
    pending: dict[str, tuple[cdk.Stack, LustreFileSystem]] = {}

    stack = cdk.Stack(app, "Default", env=ENV)
    vpc = _vpc(stack)
    fs = LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)
    clients = ec2.SecurityGroup(stack, "Clients", vpc=vpc, allow_all_outbound=False)
    fs.connections.allow_default_port_from(clients)
    pending["default"] = (stack, fs)

    stack = cdk.Stack(app, "Efa", env=ENV)
    vpc = _vpc(stack)
    efa = EfaSecurityGroup(stack, "EfaGroup", vpc=vpc)
    fs = LustreFileSystem(
        stack,
        "Fs",
        vpc=vpc,
        subnet=vpc.private_subnets[1],
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=efa,
    )
    pending["efa"] = (stack, fs)

    stack = cdk.Stack(app, "EfaPlainGroup", env=ENV)
    vpc = _vpc(stack)
    group = ec2.SecurityGroup(stack, "Group", vpc=vpc, allow_all_outbound=False)
    fs = LustreFileSystem(
        stack,
        "Fs",
        vpc=vpc,
        storage_capacity_gib=19200,
        throughput_mbps_per_tib=250,
        metadata_configuration=LustreMetadataConfiguration.user_provisioned(6000),
        efa_enabled=True,
        efa_security_group=group,
    )
    pending["efa_plain"] = (stack, fs)

    stack = cdk.Stack(app, "Options", env=ENV)
    vpc = _vpc(stack)
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    log_group = logs.LogGroup(stack, "Logs", log_group_name="/aws/fsx/training")
    fs = LustreFileSystem(
        stack,
        "Fs",
        vpc=vpc,
        storage_capacity_gib=2400,
        throughput_mbps_per_tib=500,
        metadata_configuration=LustreMetadataConfiguration.user_provisioned(24000),
        data_compression=LustreDataCompression.NONE,
        encryption_key=key,
        log_level=LustreLogLevel.ERROR_ONLY,
        log_group=log_group,
        weekly_maintenance_start_time=fsx.LustreMaintenanceTime(day=fsx.Weekday.WEDNESDAY, hour=5, minute=30),
        automatic_backup_retention=cdk.Duration.days(30),
        daily_automatic_backup_start_time=fsx.DailyAutomaticBackupStartTime(hour=1, minute=15),
        copy_tags_to_backups=False,
        removal_policy=cdk.RemovalPolicy.SNAPSHOT,
    )
    pending["options"] = (stack, fs)

    stack = cdk.Stack(app, "Scratch", env=ENV)
    fs = LustreFileSystem(
        stack, "Fs", vpc=_vpc(stack), storage_capacity_gib=2400, deployment_type=LustreDeploymentType.SCRATCH_2
    )
    pending["scratch"] = (stack, fs)

    stack = cdk.Stack(app, "NoBackups", env=ENV)
    fs = LustreFileSystem(
        stack, "Fs", vpc=_vpc(stack), storage_capacity_gib=1200, automatic_backup_retention=cdk.Duration.days(0)
    )
    pending["no_backups"] = (stack, fs)
    return {name: Built(stack, fs, Template.from_stack(stack)) for name, (stack, fs) in pending.items()}


# --- defaults ---------------------------------------------------------------------------------------------------


def test_default_is_persistent2_lustre_215_lz4_125(built):
    built["default"].template.has_resource_properties(
        FS,
        {
            "FileSystemType": "LUSTRE",
            "FileSystemTypeVersion": "2.15",
            "StorageCapacity": 1200,
            "StorageType": "SSD",
            "SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1"],
            "LustreConfiguration": Match.object_like(
                {
                    "DeploymentType": "PERSISTENT_2",
                    "PerUnitStorageThroughput": 125,
                    "DataCompressionType": "LZ4",
                    "LogConfiguration": {"Level": "WARN_ERROR"},
                    "WeeklyMaintenanceStartTime": "7:02:00",
                    "AutomaticBackupRetentionDays": 7,
                    "DailyAutomaticBackupStartTime": "03:00",
                    "CopyTagsToBackups": True,
                }
            ),
        },
    )


def test_default_has_no_efa_metadata_or_kms(built):
    props = next(iter(built["default"].template.find_resources(FS).values()))["Properties"]
    assert "EfaEnabled" not in props["LustreConfiguration"]
    assert "MetadataConfiguration" not in props["LustreConfiguration"]
    assert "KmsKeyId" not in props


def test_default_removal_policy_is_retain(built):
    built["default"].template.has_resource(FS, {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_removal_policy_is_configurable(built):
    built["options"].template.has_resource(FS, {"DeletionPolicy": "Snapshot"})


def test_exposes_identity_and_aggregate_throughput(built):
    fs = built["efa"].fs
    assert cdk.Token.is_unresolved(fs.file_system_id)
    assert cdk.Token.is_unresolved(fs.dns_name)
    assert cdk.Token.is_unresolved(fs.mount_name)
    assert fs.aggregate_throughput_mbps == 4687.5  # 4,800 GiB = 4.6875 TiB x 1,000 MB/s/TiB
    assert fs.aggregate_throughput_gbytes_per_s == 4.6875
    assert fs.sizing is not None and fs.sizing.storage_capacity_gib == 4800
    assert built["scratch"].fs.aggregate_throughput_mbps == 468.75  # 2,400 GiB = 2.34375 TiB x 200 MB/s/TiB
    assert fs.node.default_child is fs.resource


# --- options ----------------------------------------------------------------------------------------------------


def test_efa_enabled_file_system(built):
    built["efa"].template.has_resource_properties(
        FS,
        {
            "SubnetIds": ["subnet-0bbbbbbbbbbbbbbb2"],
            "StorageCapacity": 4800,
            "LustreConfiguration": Match.object_like(
                {
                    "DeploymentType": "PERSISTENT_2",
                    "EfaEnabled": True,
                    "PerUnitStorageThroughput": 1000,
                    "MetadataConfiguration": {"Mode": "AUTOMATIC"},
                }
            ),
        },
    )


def test_efa_file_system_joins_the_efa_security_group(built):
    template = built["efa"].template
    fs_props = next(iter(template.find_resources(FS).values()))["Properties"]
    group_ids = [ref["Fn::GetAtt"][0] for ref in fs_props["SecurityGroupIds"]]
    assert len(group_ids) == 2
    assert any(gid.startswith("EfaGroup") for gid in group_ids)


def test_efa_file_system_group_allows_all_traffic_to_and_from_itself(built):
    template = built["efa"].template
    own = built["efa"].stack.get_logical_id(built["efa"].fs.security_group.node.default_child)
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "GroupId": {"Fn::GetAtt": [own, "GroupId"]},
            "IpProtocol": "-1",
            "SourceSecurityGroupId": {"Fn::GetAtt": [own, "GroupId"]},
        },
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {
            "GroupId": {"Fn::GetAtt": [own, "GroupId"]},
            "IpProtocol": "-1",
            "DestinationSecurityGroupId": {"Fn::GetAtt": [own, "GroupId"]},
        },
    )


def test_efa_security_group_rules_are_not_duplicated(built):
    # EfaSecurityGroup already has the self rules: one ingress and one egress all-traffic rule per group.
    template = built["efa"].template
    assert len(template.find_resources("AWS::EC2::SecurityGroupIngress", {"Properties": {"IpProtocol": "-1"}})) == 2
    assert len(template.find_resources("AWS::EC2::SecurityGroupEgress", {"Properties": {"IpProtocol": "-1"}})) == 2


def test_plain_efa_security_group_gets_the_efa_rules(built):
    template = built["efa_plain"].template
    group = built["efa_plain"].stack.get_logical_id(
        built["efa_plain"].stack.node.find_child("Group").node.default_child
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "GroupId": {"Fn::GetAtt": [group, "GroupId"]},
            "IpProtocol": "-1",
            "SourceSecurityGroupId": {"Fn::GetAtt": [group, "GroupId"]},
        },
    )
    template.has_resource_properties(
        FS,
        {
            "LustreConfiguration": Match.object_like(
                {"MetadataConfiguration": {"Mode": "USER_PROVISIONED", "Iops": 6000}}
            )
        },
    )


def test_every_option_reaches_the_template(built):
    template = built["options"].template
    key = built["options"].stack.get_logical_id(built["options"].stack.node.find_child("Key").node.default_child)
    template.has_resource_properties(
        FS,
        {
            "KmsKeyId": {"Ref": key},
            "StorageCapacity": 2400,
            "LustreConfiguration": Match.object_like(
                {
                    "PerUnitStorageThroughput": 500,
                    "DataCompressionType": "NONE",
                    "MetadataConfiguration": {"Mode": "USER_PROVISIONED", "Iops": 24000},
                    "LogConfiguration": {
                        "Level": "ERROR_ONLY",
                        "Destination": Match.object_like({"Fn::Join": Match.any_value()}),
                    },
                    "WeeklyMaintenanceStartTime": "3:05:30",
                    "AutomaticBackupRetentionDays": 30,
                    "DailyAutomaticBackupStartTime": "01:15",
                    "CopyTagsToBackups": False,
                }
            ),
        },
    )


def test_log_destination_is_the_log_group_arn_without_suffix(built):
    props = next(iter(built["options"].template.find_resources(FS).values()))["Properties"]
    parts = props["LustreConfiguration"]["LogConfiguration"]["Destination"]["Fn::Join"][1]
    assert parts[-1] != ":*"
    assert any(isinstance(p, str) and ":log-group:" in p for p in parts)


def test_scratch_has_no_throughput_backups_or_kms(built):
    built["scratch"].template.has_resource_properties(
        FS,
        {
            "LustreConfiguration": {
                "DeploymentType": "SCRATCH_2",
                "DataCompressionType": "LZ4",
                "LogConfiguration": {"Level": "WARN_ERROR"},
                "WeeklyMaintenanceStartTime": "7:02:00",
            }
        },
    )


def test_backups_off_drop_the_start_time(built):
    props = next(iter(built["no_backups"].template.find_resources(FS).values()))["Properties"]
    assert props["LustreConfiguration"]["AutomaticBackupRetentionDays"] == 0
    assert "DailyAutomaticBackupStartTime" not in props["LustreConfiguration"]
    # CopyTagsToBackups is create-only: it stays (tests/storage/test_storage_create_only_settings.py).
    assert props["LustreConfiguration"]["CopyTagsToBackups"] is True


# --- network ----------------------------------------------------------------------------------------------------


def _rules(template: Template, kind: str, group: str, peer_key: str, peer: str) -> set[tuple[int, int]]:
    found = template.find_resources(
        kind,
        {"Properties": {"GroupId": {"Fn::GetAtt": [group, "GroupId"]}, peer_key: {"Fn::GetAtt": [peer, "GroupId"]}}},
    )
    return {(r["Properties"]["FromPort"], r["Properties"]["ToPort"]) for r in found.values()}


LUSTRE_PORTS = {(988, 988), (1018, 1023)}


def test_allow_default_port_from_opens_both_lustre_ranges_both_ways(built):
    b = built["default"]
    template = b.template
    fs_sg = b.stack.get_logical_id(b.fs.security_group.node.default_child)
    clients = b.stack.get_logical_id(b.stack.node.find_child("Clients").node.default_child)
    assert _rules(template, "AWS::EC2::SecurityGroupIngress", fs_sg, "SourceSecurityGroupId", clients) == LUSTRE_PORTS
    assert (
        _rules(template, "AWS::EC2::SecurityGroupEgress", clients, "DestinationSecurityGroupId", fs_sg) == LUSTRE_PORTS
    )
    assert (
        _rules(template, "AWS::EC2::SecurityGroupEgress", fs_sg, "DestinationSecurityGroupId", clients) == LUSTRE_PORTS
    )
    assert _rules(template, "AWS::EC2::SecurityGroupIngress", clients, "SourceSecurityGroupId", fs_sg) == LUSTRE_PORTS


def test_lustre_ports_open_between_the_file_system_servers(built):
    b = built["default"]
    fs_sg = b.stack.get_logical_id(b.fs.security_group.node.default_child)
    assert _rules(b.template, "AWS::EC2::SecurityGroupIngress", fs_sg, "SourceSecurityGroupId", fs_sg) == LUSTRE_PORTS


def test_file_system_group_opens_nothing_else(built):
    b = built["default"]
    fs_sg = b.stack.get_logical_id(b.fs.security_group.node.default_child)
    group = b.template.find_resources("AWS::EC2::SecurityGroup")[fs_sg]["Properties"]
    assert "SecurityGroupIngress" not in group
    # Inline egress is CDK's no-traffic placeholder: without it EC2 would add its default allow-all egress rule.
    assert group["SecurityGroupEgress"] == [
        {
            "CidrIp": "255.255.255.255/32",
            "Description": "Disallow all traffic",
            "IpProtocol": "icmp",
            "FromPort": 252,
            "ToPort": 86,
        }
    ]
    ingress = b.template.find_resources(
        "AWS::EC2::SecurityGroupIngress", {"Properties": {"GroupId": {"Fn::GetAtt": [fs_sg, "GroupId"]}}}
    )
    assert all("CidrIp" not in r["Properties"] for r in ingress.values())
    assert {(r["Properties"]["FromPort"], r["Properties"]["ToPort"]) for r in ingress.values()} == LUSTRE_PORTS


def test_allow_clients_from_accepts_an_efa_security_group():
    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    fs.allow_clients_from(efa, description="GPU nodes")
    template = scene.template()
    fs_sg = scene.stack.get_logical_id(fs.security_group.node.default_child)
    efa_sg = scene.stack.get_logical_id(efa.security_group.node.default_child)
    assert _rules(template, "AWS::EC2::SecurityGroupIngress", fs_sg, "SourceSecurityGroupId", efa_sg) == LUSTRE_PORTS


def test_default_port_is_988_and_any_ipv4_is_refused():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    assert fs.connections.default_port is not None
    assert fs.connections.default_port.to_string() == "988"
    with pytest.raises(FmValidationError, match=r"peer must be a client security group"):
        fs.connections.allow_default_port_from_any_ipv4()


def test_other_constructs_can_use_the_file_system_as_iconnectable():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    other = ec2.SecurityGroup(scene.stack, "Other", vpc=scene.vpc)
    other.connections.allow_to(fs, ec2.Port.tcp(988), "jsii sees fs as IConnectable")
    scene.template().has_resource_properties(
        "AWS::EC2::SecurityGroupIngress", {"Description": "jsii sees fs as IConnectable", "FromPort": 988}
    )


# --- validation -------------------------------------------------------------------------------------------------


def _make(**overrides):
    scene = new_scene()
    props = {"vpc": scene.vpc, "storage_capacity_gib": 1200}
    props.update(overrides)
    return LustreFileSystem(scene.stack, "Fs", **props)


def _efa(scene_stack, vpc):
    return EfaSecurityGroup(scene_stack, "Efa", vpc=vpc)


@pytest.mark.parametrize("capacity", [0, 1000, 3000, 3600, 6000])
def test_rejects_invalid_persistent2_capacity(capacity):
    with pytest.raises(
        FmValidationError,
        match=rf"storage_capacity_gib must be 1200, 2400 or a multiple of 2400 for PERSISTENT_2"
        rf"( \(nearest: [0-9, or]+ GiB\))?, got {capacity}",
    ):
        _make(storage_capacity_gib=capacity)


def test_rejects_invalid_scratch1_capacity():
    with pytest.raises(FmValidationError, match=r"of 3600 for SCRATCH_1 \(nearest: 3,600 or 7,200 GiB\), got 4800"):
        _make(storage_capacity_gib=4800, deployment_type=LustreDeploymentType.SCRATCH_1)


def test_rejects_non_integer_capacity():
    with pytest.raises(FmValidationError, match=r"storage_capacity_gib must be a whole number of GiB, got 1200.5"):
        _make(storage_capacity_gib=1200.5)


@pytest.mark.parametrize(("unit", "capacity"), [(125, 19200), (250, 9600), (500, 4800), (1000, 2400)])
def test_rejects_efa_capacity_off_the_tier_multiple(unit, capacity):
    scene = new_scene()
    multiple = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}[unit]
    expected = (
        rf"storage_capacity_gib must be a multiple of {multiple} for an EFA-enabled PERSISTENT_2 file system "
        rf"at {unit} MB/s/TiB \(nearest: {multiple:,} GiB\), got {capacity}"
    )
    with pytest.raises(FmValidationError, match=expected):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=capacity,
            throughput_mbps_per_tib=unit,
            efa_enabled=True,
            metadata_configuration=LustreMetadataConfiguration.automatic(),
            efa_security_group=_efa(scene.stack, scene.vpc),
        )


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (
            {"throughput_mbps_per_tib": 200},
            r"throughput_mbps_per_tib must be one of 125, 250, 500, 1000 for PERSISTENT_2, got 200",
        ),
        (
            {"throughput_mbps_per_tib": 125, "deployment_type": LustreDeploymentType.PERSISTENT_1},
            r"one of 50, 100, 200 for PERSISTENT_1, got 125",
        ),
        (
            {"throughput_mbps_per_tib": 200, "deployment_type": LustreDeploymentType.SCRATCH_2},
            r"throughput_mbps_per_tib must be None for SCRATCH_2 .*, got 200",
        ),
        ({"deployment_type": "PERSISTENT_2"}, r"deployment_type must be a LustreDeploymentType \("),
        ({"data_compression": "LZ4"}, r"data_compression must be a LustreDataCompression \("),
        ({"log_level": "WARN_ERROR"}, r"log_level must be a LustreLogLevel \("),
        (
            {
                "metadata_configuration": LustreMetadataConfiguration.automatic(),
                "deployment_type": LustreDeploymentType.PERSISTENT_1,
            },
            r"metadata_configuration must be None for PERSISTENT_1 \(PERSISTENT_2 only\), got 'AUTOMATIC'",
        ),
        (
            {"automatic_backup_retention": cdk.Duration.days(91)},
            r"automatic_backup_retention must be 0 to 90 whole days, got '91 days'",
        ),
        (
            {"automatic_backup_retention": cdk.Duration.hours(36)},
            r"automatic_backup_retention must be 0 to 90 whole days",
        ),
        (
            {
                "automatic_backup_retention": cdk.Duration.days(0),
                "daily_automatic_backup_start_time": fsx.DailyAutomaticBackupStartTime(hour=1, minute=0),
            },
            r"daily_automatic_backup_start_time must be None when automatic backups are off, got '01:00'",
        ),
        (
            {"deployment_type": LustreDeploymentType.SCRATCH_2, "automatic_backup_retention": cdk.Duration.days(7)},
            r"automatic_backup_retention must be None for SCRATCH_2",
        ),
        (
            {"efa_enabled": True},
            r"metadata_configuration must be set \(AUTOMATIC or USER_PROVISIONED\) when efa_enabled",
        ),
        (
            {"efa_enabled": True, "metadata_configuration": LustreMetadataConfiguration.automatic()},
            r"efa_security_group must be an EfaSecurityGroup or ec2.ISecurityGroup when efa_enabled is True, got None",
        ),
    ],
)
def test_rejects_invalid_props(overrides, match):
    with pytest.raises(FmValidationError, match=match):
        _make(**overrides)


# A bad metadata configuration is refused when it is built (issue 18 section 5), before it reaches the file system.
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda: LustreMetadataConfiguration.user_provisioned(2000),
            r"metadata_configuration.iops must be 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000, got 2000",
        ),
        (lambda: LustreMetadataConfiguration.user_provisioned(204000), r"metadata_configuration.iops .* got 204000"),
        (lambda: LustreMetadataConfiguration.user_provisioned(18000), r"metadata_configuration.iops .* got 18000"),
        (
            lambda: LustreMetadataConfiguration(LustreMetadataConfiguration.automatic().mode, 3000),
            r"metadata_configuration.iops must be None in AUTOMATIC mode, got 3000",
        ),
        (
            lambda: LustreMetadataConfiguration.user_provisioned(None),  # type: ignore[arg-type]
            r"metadata_configuration.iops must be set in USER_PROVISIONED mode, got None",
        ),
    ],
)
def test_rejects_invalid_metadata_configuration(make, match):
    with pytest.raises(FmValidationError, match=match):
        make()


@pytest.mark.parametrize(
    "deployment_type",
    [LustreDeploymentType.SCRATCH_1, LustreDeploymentType.SCRATCH_2, LustreDeploymentType.PERSISTENT_1],
)
def test_refuses_efa_on_anything_but_persistent2(deployment_type):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=rf"efa_enabled must be False for {deployment_type.value}"):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=2400,
            deployment_type=deployment_type,
            efa_enabled=True,
            efa_security_group=_efa(scene.stack, scene.vpc),
        )


def test_refuses_an_efa_security_group_without_efa():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"efa_security_group must be None unless efa_enabled is True"):
        LustreFileSystem(
            scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, efa_security_group=_efa(scene.stack, scene.vpc)
        )


def test_refuses_kms_on_scratch():
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    with pytest.raises(FmValidationError, match=r"encryption_key must be None for SCRATCH_2"):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=1200,
            deployment_type=LustreDeploymentType.SCRATCH_2,
            encryption_key=key,
        )


def test_refuses_a_log_group_outside_aws_fsx():
    scene = new_scene()
    group = logs.LogGroup.from_log_group_name(scene.stack, "Logs", "/training/fsx")
    with pytest.raises(FmValidationError, match=r"log_group must be a log group whose name begins with '/aws/fsx'"):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, log_group=group)


def test_refuses_a_log_group_with_logging_disabled():
    scene = new_scene()
    group = logs.LogGroup.from_log_group_name(scene.stack, "Logs", "/aws/fsx/x")
    with pytest.raises(FmValidationError, match=r"log_group must be None when log_level is DISABLED"):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=1200,
            log_group=group,
            log_level=LustreLogLevel.DISABLED,
        )


def test_skips_checks_on_unresolved_tokens():
    scene = new_scene()
    capacity = cdk.CfnParameter(scene.stack, "Capacity", type="Number").value_as_number
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=capacity)  # type: ignore[arg-type]
    assert fs.aggregate_throughput_mbps is None
    assert fs.sizing is None


@pytest.mark.parametrize("iops", [1500, 3000, 6000, 12000, 24000, 96000, 192000])
def test_accepts_valid_metadata_iops(iops):
    fs = _make(metadata_configuration=LustreMetadataConfiguration.user_provisioned(iops))
    assert fs.metadata_configuration is not None and fs.metadata_configuration.iops == iops


# --- imported ---------------------------------------------------------------------------------------------------


def test_imported_file_system_opens_ports_on_its_group():
    scene = new_scene()
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsGroup", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group=group,
        storage_capacity_gib=4800,
        deployment_type=P2,
        throughput_mbps_per_tib=1000,
        efa_enabled=True,
    )
    clients = ec2.SecurityGroup(scene.stack, "Clients", vpc=scene.vpc)
    fs.connections.allow_default_port_from(clients)
    template = scene.template()
    for from_port, to_port in LUSTRE_PORTS:
        template.has_resource_properties(
            "AWS::EC2::SecurityGroupIngress",
            {"GroupId": "sg-0123456789abcdef0", "FromPort": from_port, "ToPort": to_port},
        )
    assert fs.aggregate_throughput_mbps == 4687.5
    assert "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com" in fs.mount_commands()[-1]


def test_imported_file_system_without_facts():
    scene = new_scene()
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsGroup", "sg-0123456789abcdef0")
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="mnt",
        security_group=group,
    )
    assert fs.aggregate_throughput_mbps is None
    assert fs.efa_enabled is False
    with pytest.raises(FmValidationError, match=r"storage_capacity_gib must be known"):
        fs.eks_static_volume()


def test_imported_refuses_efa_on_scratch():
    scene = new_scene()
    group = ec2.SecurityGroup.from_security_group_id(scene.stack, "FsGroup", "sg-0123456789abcdef0")
    with pytest.raises(FmValidationError, match=r"efa_enabled must be False unless deployment_type is PERSISTENT_2"):
        LustreFileSystem.from_lustre_file_system_attributes(
            scene.stack,
            "Imported",
            file_system_id="fs-0123456789abcdef0",
            dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            mount_name="mnt",
            security_group=group,
            deployment_type=LustreDeploymentType.SCRATCH_2,
            efa_enabled=True,
        )
