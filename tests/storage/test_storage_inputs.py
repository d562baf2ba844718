"""Storage constructs with any network and any input (issue 10 §1, §3 and §5).

- Subnet selection is explicit: ``subnet`` or ``vpc_subnets``; the default is the VPC's first private subnet, else its
  first isolated one, else an FmValidationError saying what to pass (a bare IndexError before).
- Subnets without zone information, security groups imported by id and CfnParameter values (numbers and strings)
  never crash; checks that need a value skip it.
- Wrong Python types raise FmTypeError naming the parameter; NaN/inf never reach jsii; enums as plain strings, a str
  for a sequence, newline-suffixed strings and bools as counts are refused.
"""

from __future__ import annotations

import math

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk.assertions import Match, Template

from fmconstructs import EfaSecurityGroup, FmValidationError
from fmconstructs.errors import FmTypeError
from fmconstructs.storage import (
    EksStaticVolume,
    LustreDataCompression,
    LustreDeploymentType,
    LustreFileSystem,
    LustreLogLevel,
    LustreMetadataConfiguration,
    lustre_mount_commands,
)
from fmconstructs.storage.client import lustre_mount_command

from tests.conftest import ENV, new_app, new_scene

FS = "AWS::FSx::FileSystem"
DNS = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"


def _stack() -> cdk.Stack:
    return cdk.Stack(new_app(), "Test", env=ENV)


# --- subnet selection (issue 10: "LustreFileSystem on a VPC without private subnets raises a bare IndexError") -----
def test_a_vpc_without_private_or_isolated_subnets_is_a_clear_error():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"], public_subnet_ids=["subnet-1"]
    )
    with pytest.raises(FmValidationError) as raised:
        LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)
    message = str(raised.value)
    assert message.startswith("subnet must be given (subnet=ec2.Subnet.from_subnet_attributes(...), or vpc_subnets=")
    assert "the VPC has no private or isolated subnet" in message
    assert stack.node.try_find_child("Fs") is None


def test_a_vpc_imported_without_subnets_is_a_clear_error():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"])
    with pytest.raises(FmValidationError, match=r"^subnet must be given"):
        LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)


def test_isolated_subnets_are_the_fallback():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        isolated_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    fs = LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)
    assert fs.zone == "us-east-1a"
    Template.from_stack(stack).has_resource_properties(FS, {"SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1"]})


def test_a_new_vpc_defaults_to_its_first_private_subnet():
    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    fs = LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)
    assert fs.subnet.node.path == vpc.private_subnets[0].node.path


def test_vpc_subnets_selects_the_subnet():
    scene = new_scene()
    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=1200,
        vpc_subnets=ec2.SubnetSelection(availability_zones=["us-east-1b"]),
    )
    assert fs.subnet.subnet_id == "subnet-0bbbbbbbbbbbbbbb2"
    assert fs.zone == "us-east-1b"


def test_vpc_subnets_that_match_nothing_is_our_error():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^vpc_subnets must be a selection that matches subnets of the VPC"):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=1200,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
        )


def test_subnet_and_vpc_subnets_together_are_refused():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^vpc_subnets must be None when subnet is given"):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=1200,
            subnet=scene.subnet_a,
            vpc_subnets=ec2.SubnetSelection(),
        )


@pytest.mark.parametrize(
    "subnet",
    [
        lambda stack: ec2.Subnet.from_subnet_id(stack, "S", "subnet-0ccccccccccccccc3"),
        lambda stack: ec2.Subnet.from_subnet_attributes(stack, "S", subnet_id="subnet-0ccccccccccccccc3"),
        lambda stack: ec2.Subnet.from_subnet_attributes(
            stack, "S", subnet_id=cdk.CfnParameter(stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
        ),
    ],
    ids=["from_subnet_id", "attributes-without-zone", "from-a-parameter"],
)
def test_a_subnet_without_zone_information_never_crashes(subnet):
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, subnet=subnet(scene.stack))
    assert fs.zone is None
    scene.app.synth()


# --- everything is a token -------------------------------------------------------------------------------------------
def test_everything_is_a_token_and_it_synthesizes():
    """CfnParameter capacity and throughput, an imported subnet without a zone, groups by deploy-time id, a VPC by
    deploy-time id, metadata IOPS and backup retention from parameters: no check crashes and the template refers to
    every parameter."""
    stack = _stack()

    def parameter(name: str, type: str = "String") -> cdk.CfnParameter:
        return cdk.CfnParameter(stack, name, type=type)

    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id=parameter("VpcId").value_as_string, availability_zones=["us-east-1a"]
    )
    subnet = ec2.Subnet.from_subnet_attributes(stack, "Subnet", subnet_id=parameter("SubnetId").value_as_string)
    group = ec2.SecurityGroup.from_security_group_id(stack, "Group", parameter("GroupId").value_as_string)
    efa_group = ec2.SecurityGroup.from_security_group_id(stack, "EfaGroup", parameter("EfaGroupId").value_as_string)
    fs = LustreFileSystem(
        stack,
        "Fs",
        vpc=vpc,
        subnet=subnet,
        security_group=group,
        storage_capacity_gib=parameter("Capacity", "Number").value_as_number,
        throughput_mbps_per_tib=parameter("Throughput", "Number").value_as_number,
        metadata_configuration=LustreMetadataConfiguration.user_provisioned(
            parameter("MetadataIops", "Number").value_as_number
        ),
        efa_enabled=True,
        efa_security_group=efa_group,
        automatic_backup_retention=cdk.Duration.days(parameter("BackupDays", "Number").value_as_number),
    )
    # Token-dependent facts are unknown, not wrong.
    assert fs.zone is None and fs.sizing is None and fs.aggregate_throughput_mbps is None
    nodes = ec2.SecurityGroup.from_security_group_id(stack, "Nodes", parameter("NodesEfaId").value_as_string)
    fs.register_efa_clients(
        cdk.Stack(stack.node.root, "Other"),
        max_nodes=parameter("MaxNodes", "Number").value_as_number,
        efa_interfaces_per_node=8,
        efa_security_group=nodes,
        subnets=[subnet],
    )
    fs.add_data_repository("D", bucket=parameter("Bucket").value_as_string, file_system_path="/datasets")
    volume = fs.eks_static_volume()
    commands = fs.mount_commands()
    assert commands and stack.resolve(volume.capacity)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        FS,
        {
            "StorageCapacity": {"Ref": "Capacity"},
            "SubnetIds": [{"Ref": "SubnetId"}],
            "SecurityGroupIds": [{"Ref": "GroupId"}, {"Ref": "EfaGroupId"}],
            "LustreConfiguration": Match.object_like(
                {
                    "PerUnitStorageThroughput": {"Ref": "Throughput"},
                    "AutomaticBackupRetentionDays": {"Ref": "BackupDays"},
                    "MetadataConfiguration": {"Mode": "USER_PROVISIONED", "Iops": {"Ref": "MetadataIops"}},
                }
            ),
        },
    )
    assert "Token[" not in str(template.to_json())


def test_token_errors_never_show_a_raw_token():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-1", availability_zones=["us-east-1a"], private_subnet_ids=["subnet-1"]
    )
    capacity = cdk.CfnParameter(stack, "Capacity").value_as_string  # a string where a number is expected
    with pytest.raises(FmTypeError) as raised:
        LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=capacity)
    assert "Token[" not in str(raised.value)
    assert str(raised.value).startswith("storage_capacity_gib must be an integer of GiB (got a str)")
    assert "a deploy-time value" in str(raised.value)


# --- wrong types, non-finite numbers, enums as strings, str for sequences, trailing newlines ------------------------
def _efa_props(scene):
    return {
        "storage_capacity_gib": 4800,
        "throughput_mbps_per_tib": 1000,
        "metadata_configuration": LustreMetadataConfiguration.automatic(),
        "efa_enabled": True,
        "efa_security_group": EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
    }


LUSTRE_BAD_INPUTS = [
    ("vpc", "vpc-0123456789abcdef0", FmTypeError, r"^vpc must be an ec2.IVpc \(got a str\)"),
    ("vpc", None, FmTypeError, r"^vpc must be an ec2.IVpc"),
    ("storage_capacity_gib", "1200", FmTypeError, r"^storage_capacity_gib must be an integer of GiB \(got a str\)"),
    ("storage_capacity_gib", True, FmTypeError, r"^storage_capacity_gib must be an integer .*got True"),
    ("storage_capacity_gib", math.nan, FmValidationError, r"^storage_capacity_gib must be a finite number, got nan"),
    ("storage_capacity_gib", math.inf, FmValidationError, r"^storage_capacity_gib must be a finite number, got inf"),
    ("storage_capacity_gib", -math.inf, FmValidationError, r"^storage_capacity_gib must be a finite number"),
    ("storage_capacity_gib", 1200.5, FmValidationError, r"^storage_capacity_gib must be a whole number of GiB"),
    ("storage_capacity_gib", -1200, FmValidationError, r"^storage_capacity_gib must be 1200, 2400 or a multiple"),
    ("storage_capacity_gib", [1200], FmTypeError, r"^storage_capacity_gib must be an integer"),
    ("throughput_mbps_per_tib", math.nan, FmValidationError, r"^throughput_mbps_per_tib must be a finite number"),
    ("throughput_mbps_per_tib", "125", FmTypeError, r"^throughput_mbps_per_tib must be an integer"),
    ("throughput_mbps_per_tib", True, FmTypeError, r"^throughput_mbps_per_tib must be an integer"),
    ("deployment_type", "PERSISTENT_2", FmTypeError, r"^deployment_type must be a LustreDeploymentType"),
    ("deployment_type", None, FmTypeError, r"^deployment_type must be a LustreDeploymentType"),
    ("data_compression", "LZ4", FmTypeError, r"^data_compression must be a LustreDataCompression"),
    ("log_level", "WARN_ERROR", FmTypeError, r"^log_level must be a LustreLogLevel"),
    ("metadata_configuration", "AUTOMATIC", FmTypeError, r"^metadata_configuration must be a LustreMetadata"),
    ("efa_enabled", "true", FmTypeError, r"^efa_enabled must be a bool"),
    ("efa_enabled", 1, FmTypeError, r"^efa_enabled must be a bool"),
    ("efa_security_group", "sg-0123456789abcdef0", FmTypeError, r"^efa_security_group must be an EfaSecurityGroup"),
    ("security_group", "sg-0123456789abcdef0", FmTypeError, r"^security_group must be an ec2.ISecurityGroup"),
    ("subnet", "subnet-0123456789abcdef0", FmTypeError, r"^subnet must be an ec2.ISubnet"),
    ("subnet", ["subnet-0123456789abcdef0"], FmTypeError, r"^subnet must be an ec2.ISubnet"),
    ("vpc_subnets", "private", FmTypeError, r"^vpc_subnets must be an ec2.SubnetSelection"),
    ("encryption_key", "alias/fsx", FmTypeError, r"^encryption_key must be a kms.IKey"),
    ("log_group", "/aws/fsx/lustre", FmTypeError, r"^log_group must be a logs.ILogGroup"),
    ("weekly_maintenance_start_time", "1:02:00", FmTypeError, r"^weekly_maintenance_start_time must be an fsx"),
    ("automatic_backup_retention", 7, FmTypeError, r"^automatic_backup_retention must be a Duration"),
    ("daily_automatic_backup_start_time", "03:00", FmTypeError, r"^daily_automatic_backup_start_time must be an"),
    ("copy_tags_to_backups", "yes", FmTypeError, r"^copy_tags_to_backups must be True, False or None"),
    ("removal_policy", "retain", FmTypeError, r"^removal_policy must be a RemovalPolicy"),
]


@pytest.mark.parametrize(
    ("name", "value", "error", "match"), LUSTRE_BAD_INPUTS, ids=[f"{n}={v!r}" for n, v, _, _ in LUSTRE_BAD_INPUTS]
)
def test_lustre_file_system_refuses_bad_inputs_naming_the_parameter(name, value, error, match):
    scene = new_scene()
    props = {"vpc": scene.vpc, "storage_capacity_gib": 1200, name: value}
    with pytest.raises(error, match=match):
        LustreFileSystem(scene.stack, "Fs", **props)
    assert scene.stack.node.try_find_child("Fs") is None


@pytest.mark.parametrize(
    ("scope", "id", "match"),
    [("stack", 3, r"^id must be a str"), ("stack", "", r"^id must be a construct id"), ("nope", "Fs", r"^scope must")],
)
def test_scope_and_id_are_checked(scope, id, match):
    scene = new_scene()
    with pytest.raises(FmTypeError if isinstance(id, int) or scope == "nope" else FmValidationError, match=match):
        LustreFileSystem(scene.stack if scope == "stack" else scope, id, vpc=scene.vpc, storage_capacity_gib=1200)


@pytest.mark.parametrize(
    ("iops", "error", "match"),
    [
        (math.nan, FmValidationError, r"^metadata_configuration.iops must be a finite number"),
        (True, FmTypeError, r"^metadata_configuration.iops must be an integer"),
        ("3000", FmTypeError, r"^metadata_configuration.iops must be an integer"),
        (3000.5, FmValidationError, r"^metadata_configuration.iops must be a whole number"),
    ],
)
def test_metadata_iops_refuses_bad_numbers(iops, error, match):
    scene = new_scene()
    with pytest.raises(error, match=match):
        LustreFileSystem(
            scene.stack,
            "Fs",
            vpc=scene.vpc,
            storage_capacity_gib=1200,
            metadata_configuration=LustreMetadataConfiguration.user_provisioned(iops),
        )


def test_nan_never_disables_a_size_check():
    """Before: ``nan`` compared False everywhere, so a NaN capacity skipped the capacity rule and reached jsii."""
    scene = new_scene()
    for value in (math.nan, math.inf):
        with pytest.raises(FmValidationError, match=r"must be a finite number"):
            LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=value)
    # jsii still works afterwards (NaN never reached it).
    LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    scene.app.synth()


IMPORT_BAD_INPUTS = [
    ("file_system_id", "fs-1", FmValidationError, r"^file_system_id must be an FSx file system id"),
    ("file_system_id", "fs-0123456789abcdef0\n", FmValidationError, r"^file_system_id must be an FSx file system id"),
    ("file_system_id", 3, FmTypeError, r"^file_system_id must be a str"),
    ("dns_name", "dns", FmValidationError, r"^dns_name must be the file system's DNS name"),
    ("dns_name", DNS + "\n", FmValidationError, r"^dns_name must be the file system's DNS name"),
    ("dns_name", None, FmTypeError, r"^dns_name must be a str"),
    ("mount_name", "abcdefghi", FmValidationError, r"^mount_name must be the file system's mount name"),
    ("mount_name", "abc'def", FmValidationError, r"^mount_name must be the file system's mount name"),
    ("mount_name", "abc\n", FmValidationError, r"^mount_name must be the file system's mount name"),
    ("security_group", "sg-0123456789abcdef0", FmTypeError, r"^security_group must be an ec2.ISecurityGroup"),
    ("storage_capacity_gib", math.nan, FmValidationError, r"^storage_capacity_gib must be a finite number"),
    ("storage_capacity_gib", True, FmTypeError, r"^storage_capacity_gib must be an integer"),
    ("deployment_type", "PERSISTENT_2", FmTypeError, r"^deployment_type must be a LustreDeploymentType"),
    ("throughput_mbps_per_tib", math.inf, FmValidationError, r"^throughput_mbps_per_tib must be a finite number"),
    ("efa_enabled", "no", FmTypeError, r"^efa_enabled must be a bool"),
    ("efa_security_group", "sg-0123456789abcdef0", FmTypeError, r"^efa_security_group must be an ec2.ISecurityGroup"),
    ("zone", "us-east-1a\n", FmValidationError, r"^zone must be a zone name"),
    ("zone", 1, FmTypeError, r"^zone must be a str"),
]


@pytest.mark.parametrize(
    ("name", "value", "error", "match"), IMPORT_BAD_INPUTS, ids=[f"{n}={v!r}" for n, v, _, _ in IMPORT_BAD_INPUTS]
)
def test_import_refuses_bad_inputs_naming_the_parameter(name, value, error, match):
    scene = new_scene()
    props = {
        "file_system_id": "fs-0123456789abcdef0",
        "dns_name": DNS,
        "mount_name": "abcdefgh",
        "security_group": ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0"),
        name: value,
    }
    with pytest.raises(error, match=match):
        LustreFileSystem.from_lustre_file_system_attributes(scene.stack, "Imported", **props)
    assert scene.stack.node.try_find_child("Imported") is None


@pytest.mark.parametrize("zone", ["us-east-1a", "us-east-1-dfw-2a", "use1-az4"])
def test_import_accepts_zone_names_local_zones_and_zone_ids(zone):
    scene = new_scene()
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        scene.stack,
        "Imported",
        file_system_id="fs-0123456789abcdef0",
        dns_name=DNS,
        mount_name="abcdefgh",
        security_group=ec2.SecurityGroup.from_security_group_id(scene.stack, "G", "sg-0123456789abcdef0"),
        zone=zone,
    )
    assert fs.zone == zone


MOUNT_BAD_INPUTS = [
    ("mount_options", "defaults,flock", FmTypeError, r"^mount_options must be a list of str \(got a str\)"),
    ("mount_options", ("flock\n",), FmValidationError, r"^mount_options\[0\] must be a mount option"),
    ("mount_options", ["flock", None], FmTypeError, r"^mount_options\[1\] must be a str"),
    ("mount_point", "/fsx\n", FmValidationError, r"^mount_point must be an absolute path"),
    ("mount_point", "/fsx'; reboot; '", FmValidationError, r"^mount_point must be an absolute path"),
    ("dns_name", "x'; reboot; '", FmValidationError, r"^dns_name must be the file system's DNS name"),
    ("mount_name", ["abc"], FmTypeError, r"^mount_name must be a str"),
    ("efa_enabled", None, FmTypeError, r"^efa_enabled must be a bool"),
    ("instance_spec", "p5.48xlarge", FmTypeError, r"^instance_spec must be an InstanceSpec"),
    ("efa_interfaces_for_lustre", math.nan, FmValidationError, r"^efa_interfaces_for_lustre must be a finite"),
    ("node_efa_interfaces", True, FmTypeError, r"^node_efa_interfaces must be an integer"),
]


@pytest.mark.parametrize(
    ("name", "value", "error", "match"), MOUNT_BAD_INPUTS, ids=[f"{n}={v!r}" for n, v, _, _ in MOUNT_BAD_INPUTS]
)
def test_mount_commands_refuse_bad_inputs_naming_the_parameter(name, value, error, match):
    props = {"dns_name": DNS, "mount_name": "abcdefgh", "efa_enabled": True, name: value}
    with pytest.raises(error, match=match):
        lustre_mount_commands(**props)


def test_file_system_mount_commands_refuse_a_str_for_mount_options():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmTypeError, match=r"^mount_options must be a list of str \(got a str\)"):
        fs.mount_commands("/fsx", mount_options="defaults,flock")
    with pytest.raises(FmTypeError, match=r"^mount_options must be a list of str \(got a str\)"):
        fs.eks_static_volume(mount_options="flock")


def test_the_mount_command_is_the_fsx_guide_line():
    assert lustre_mount_command(dns_name=DNS, mount_name="abcdefgh") == (
        f"sudo mkdir -p /fsx && sudo mount -t lustre -o relatime,flock {DNS}@tcp:/abcdefgh /fsx"
    )
    with pytest.raises(FmValidationError, match=r"^mount_options must be comma-separated mount options"):
        lustre_mount_command(dns_name=DNS, mount_name="abcdefgh", mount_options="relatime flock")


def test_a_file_system_exposes_what_an_operator_needs():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    resolved = scene.stack.resolve(fs.mount_command)
    logical_id = scene.stack.get_logical_id(fs.resource)
    assert resolved == {
        "Fn::Join": [
            "",
            [
                "sudo mkdir -p /fsx && sudo mount -t lustre -o relatime,flock ",
                {"Fn::GetAtt": [logical_id, "DNSName"]},
                "@tcp:/",
                {"Fn::GetAtt": [logical_id, "LustreMountName"]},
                " /fsx",
            ],
        ]
    }
    assert scene.stack.resolve(fs.file_system_id) == {"Ref": logical_id}
    assert scene.stack.resolve(fs.dns_name) == {"Fn::GetAtt": [logical_id, "DNSName"]}
    assert scene.stack.resolve(fs.mount_name) == {"Fn::GetAtt": [logical_id, "LustreMountName"]}
    assert "file-system/" in str(scene.stack.resolve(fs.file_system_arn))


EKS_VOLUME_BAD_INPUTS = [
    ("file_system_id", "fs-1", FmValidationError, r"^file_system_id must be an FSx file system id"),
    ("dns_name", 3, FmTypeError, r"^dns_name must be a str"),
    ("mount_name", "too-long-name", FmValidationError, r"^mount_name must be the file system's mount name"),
    ("storage_capacity_gib", math.nan, FmValidationError, r"^storage_capacity_gib must be a finite number"),
    ("storage_capacity_gib", "1200", FmTypeError, r"^storage_capacity_gib must be an integer"),
    ("storage_capacity_gib", False, FmTypeError, r"^storage_capacity_gib must be an integer"),
    ("mount_options", "flock", FmTypeError, r"^mount_options must be a list of str"),
]


@pytest.mark.parametrize(
    ("name", "value", "error", "match"),
    EKS_VOLUME_BAD_INPUTS,
    ids=[f"{n}={v!r}" for n, v, _, _ in EKS_VOLUME_BAD_INPUTS],
)
def test_eks_static_volume_refuses_bad_inputs_naming_the_parameter(name, value, error, match):
    props = {
        "file_system_id": "fs-0123456789abcdef0",
        "dns_name": DNS,
        "mount_name": "abcdefgh",
        "storage_capacity_gib": 1200,
        name: value,
    }
    with pytest.raises(error, match=match):
        EksStaticVolume(**props)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"access_modes": "ReadWriteMany"}, FmTypeError, r"^access_modes must be a list of str"),
        ({"reclaim_policy": "Retain\n"}, FmValidationError, r"^reclaim_policy must be 'Retain', 'Delete'"),
        ({"storage_class_name": None}, FmTypeError, r"^storage_class_name must be a str"),
    ],
)
def test_eks_static_volume_manifest_refuses_bad_inputs(kwargs, error, match):
    volume = EksStaticVolume(
        file_system_id="fs-0123456789abcdef0", dns_name=DNS, mount_name="abcdefgh", storage_capacity_gib=1200
    )
    with pytest.raises(error, match=match):
        volume.to_manifest("pv", **kwargs)


def test_eks_static_volume_with_a_deploy_time_capacity():
    stack = _stack()
    capacity = cdk.CfnParameter(stack, "Capacity", type="Number").value_as_number
    volume = EksStaticVolume(
        file_system_id="fs-0123456789abcdef0", dns_name=DNS, mount_name="abcdefgh", storage_capacity_gib=capacity
    )
    assert stack.resolve(volume.capacity) == {"Fn::Join": ["", [{"Ref": "Capacity"}, "Gi"]]}


def test_a_token_backup_retention_leaves_the_start_time_to_fsx():
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-1", availability_zones=["us-east-1a"], private_subnet_ids=["subnet-1"]
    )
    days = cdk.CfnParameter(stack, "Days", type="Number").value_as_number
    LustreFileSystem(
        stack, "Fs", vpc=vpc, storage_capacity_gib=1200, automatic_backup_retention=cdk.Duration.days(days)
    )
    config = Template.from_stack(stack).find_resources(FS)
    lustre = next(iter(config.values()))["Properties"]["LustreConfiguration"]
    assert lustre["AutomaticBackupRetentionDays"] == {"Ref": "Days"}
    assert "DailyAutomaticBackupStartTime" not in lustre


def test_enum_members_are_still_accepted():
    scene = new_scene()
    LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=2400,
        deployment_type=LustreDeploymentType.PERSISTENT_1,
        throughput_mbps_per_tib=50,
        data_compression=LustreDataCompression.NONE,
        log_level=LustreLogLevel.ERROR_ONLY,
        weekly_maintenance_start_time=fsx.LustreMaintenanceTime(day=fsx.Weekday.MONDAY, hour=1, minute=0),
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


@pytest.mark.parametrize("client", ["sg-0123456789abcdef0", None, 3])
def test_allow_clients_from_refuses_what_is_not_connectable(client):
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmTypeError, match=r"^clients\[0\] must be an ec2.IConnectable"):
        fs.allow_clients_from(client)
