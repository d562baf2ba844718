"""Classes of input defects fixed everywhere (issue 18, sections 5, 6, 7 and 9): one mount-point rule, durations
checked before aws-cdk-lib, reserved tag keys, the abstract Capacity, contradictory options, Kubernetes versions,
subnets given as ids, the missing subnet's zone, FSx capacity steps, encrypted log groups, Local Zone subnets."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks_v1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Annotations, Match, Template
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import CapacityBlock, FmTypeError, FmValidationError, OnDemand
from fmconstructs._validate import check_duration_seconds, check_metric_period, check_mount_point
from fmconstructs._validate_tags import check_tags
from fmconstructs.capacity import Capacity
from fmconstructs.catalog import UltraServerSpec
from fmconstructs.compute import GpuAutoScalingGroup, GpuLaunchTemplate
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.node_group import check_mount_point as eks_check_mount_point
from fmconstructs.errors import WarningId
from fmconstructs.observability import GrafanaWorkspace, PrometheusWorkspace
from fmconstructs.parallelcluster.config import SharedLustre
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.pcs.node_group import FileSystemMount
from fmconstructs.platform import (
    EksOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.storage import LustreFileSystem
from fmconstructs.storage.client import lustre_mount_commands

from tests.conftest import ENV, new_app, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK = "cr-0123456789abcdef0"

# --- 1. one mount-point rule -------------------------------------------------------------------------------------------

BAD_MOUNT_POINTS = [
    "/fsx/../etc",  # the review's example: PCS accepted it
    "/fsx/./data",
    "/fsx/",
    "//fsx",
    "/.fsx",
    "/fsx/.hidden",
    "fsx",
    "/",
    "/etc",
    "/etc/fsx",
    "/usr/local/fsx",
    "/proc/x",
    "/tmp",
    "/opt",
    "/fsx data",
    "/fsx;reboot",
    "/fsx\n",
]
GOOD_MOUNT_POINTS = ["/fsx", "/fsx/data", "/home/shared", "/mnt/fsx", "/opt/data", "/scratch-1", "/data.v2"]


def _consumers():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    return {
        "pcs": lambda p: FileSystemMount(fs, mount_point=p),
        "eks": lambda p: eks_check_mount_point("mount_point", p),
        "storage-client": lambda p: lustre_mount_commands(
            dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", mount_name="abcdefgh", mount_point=p
        ),
        "parallelcluster": lambda p: SharedLustre(file_system=fs, mount_point=p),
        "platform": lambda p: PlatformStorage.for_throughput(target_gbytes_per_s=1.0, mount_point=p),
    }


CONSUMERS = _consumers()
_FS_SCENE = new_scene()
CONSUMERS_FS = LustreFileSystem(_FS_SCENE.stack, "Fs", vpc=_FS_SCENE.vpc, storage_capacity_gib=1200)


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("bad", BAD_MOUNT_POINTS)
def test_every_consumer_refuses_the_same_mount_points(consumer, bad):
    if consumer == "parallelcluster" and bad == "fsx":
        # ParallelCluster's own MountDir pattern makes the leading '/' optional (aws-parallelcluster schemas/
        # common_schema.py "file_path"): SharedLustre takes "fsx" as "/fsx", every other consumer refuses it.
        assert SharedLustre(file_system=CONSUMERS_FS, mount_point=bad).mount_point == "/fsx"
        return
    with pytest.raises(FmValidationError, match=r"^(mount_point|mount_dir) must be ") as raised:
        CONSUMERS[consumer](bad)
    assert raised.value.value == bad


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("good", GOOD_MOUNT_POINTS)
def test_every_consumer_accepts_the_same_mount_points(consumer, good):
    CONSUMERS[consumer](good)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="/.a-_", min_size=1, max_size=12))
def test_an_accepted_mount_point_is_normalized_and_outside_the_system(path):
    try:
        checked = check_mount_point("mount_point", path)
    except FmValidationError:
        return
    parts = checked.split("/")[1:]
    assert checked.startswith("/") and all(parts) and not any(p.startswith(".") for p in parts)


# --- 2. durations --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration", "message"),
    [
        (cdk.Duration.millis(1500), "a whole number of seconds"),
        (cdk.Duration.seconds(0), "at least 1 second"),
        (cdk.Duration.hours(2), "at most 3600 seconds"),
        (90, "an aws_cdk.Duration"),
        ("5m", "an aws_cdk.Duration"),
    ],
)
def test_duration_helper_names_the_parameter(duration, message):
    with pytest.raises(FmValidationError, match=rf"^timeout must be {message}"):
        check_duration_seconds("timeout", duration, minimum_seconds=1, maximum_seconds=3600)


@pytest.mark.parametrize("seconds", [7, 45, 90, 61, 3601])
def test_alarm_periods_off_the_cloudwatch_steps_show_the_nearest(seconds):
    with pytest.raises(FmValidationError, match=r"^period must be 10, 20, 30 seconds or a multiple of 60 .*nearest"):
        check_metric_period("period", cdk.Duration.seconds(seconds), alarm=True)


@pytest.mark.parametrize("seconds", [1, 5, 10, 20, 30, 60, 300, 3600])
def test_metric_periods_on_the_cloudwatch_steps_pass(seconds):
    assert check_metric_period("period", cdk.Duration.seconds(seconds)) == seconds


def test_fsx_saturation_alarm_period_is_checked_before_cloudwatch():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmValidationError, match=r"^period must be 10, 20, 30 seconds or a multiple of 60"):
        fs.add_saturation_alarms(period=cdk.Duration.seconds(90))


def test_asg_grace_period_in_milliseconds_is_our_error():
    scene = new_scene()
    template = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    with pytest.raises(FmValidationError, match=r"^health_check_grace_period must be a whole number of seconds"):
        GpuAutoScalingGroup(
            scene.stack,
            "Asg",
            launch_template=template,
            min_nodes=0,
            max_nodes=2,
            health_check_grace_period=cdk.Duration.millis(1500),
        )


# --- 3. reserved tag keys, abstract Capacity, dataclasses, contradictions -------------------------------------------


@pytest.mark.parametrize("key", ["aws:team", "AWS:team", "Aws:cost-center"])
def test_reserved_tag_keys_are_refused_everywhere(key):
    with pytest.raises(FmValidationError, match=r"not starting with 'aws:'"):
        check_tags("tags", {key: "x"})
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^tags key must be a tag key not starting with 'aws:'"):
        PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, tags={key: "x"})
    with pytest.raises(FmValidationError, match=r"^tags key must be a tag key not starting with 'aws:'"):
        GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, tags={key: "x"})
    with pytest.raises(FmValidationError, match=r"^tags key must be a tag key not starting with 'aws:'"):
        GpuLaunchTemplate(
            scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a, tags={key: "x"}
        )


def test_the_abstract_capacity_is_refused():
    with pytest.raises(FmTypeError, match=r"^capacity must be a concrete capacity: OnDemand\(\)"):
        Capacity()
    assert OnDemand().kind.value


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "", "instance_type": "p6e-gb200.36xlarge", "instance_count": 18},
        {"name": "u-x", "instance_type": "P6e", "instance_count": 18},
        {"name": "u-x", "instance_type": "p6e-gb200.36xlarge", "instance_count": 0},
    ],
)
def test_ultraserver_spec_validates_like_the_catalog(kwargs):
    with pytest.raises(FmValidationError):
        UltraServerSpec(**kwargs)


def test_an_existing_workspace_with_create_grafana_is_refused():
    stack = cdk.Stack(new_app(), "Obs", env=ENV)
    workspace = PrometheusWorkspace(stack, "Prometheus")
    with pytest.raises(FmValidationError, match=r"^create_grafana must be False with an existing prometheus_workspace"):
        PlatformObservability(prometheus_workspace=workspace, create_grafana=True)
    grafana = GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[workspace.workspace_arn])
    with pytest.raises(FmValidationError, match=r"^create_grafana must be False"):
        PlatformObservability(prometheus_workspace=workspace, grafana_workspace=grafana, create_grafana=True)
    with pytest.raises(FmValidationError, match=r"^alias must be None with an existing prometheus_workspace"):
        PlatformObservability(prometheus_workspace=workspace, alias="mine")


# --- 4. errors in the caller's terms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version", ["1.34", eks.KubernetesVersion.V1_34, eks_v1.KubernetesVersion.V1_34], ids=["str", "v2", "v1"]
)
def test_kubernetes_versions_are_mapped_to_aws_eks_v2(version):
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, version=version)
    assert isinstance(cluster.version, eks.KubernetesVersion) and cluster.version.version == "1.34"
    assert EksOptions(version=version).version.version == "1.34"


@pytest.mark.parametrize("version", ["1.34.2", "v1.34", "134", 1.34, None])
def test_other_kubernetes_versions_get_the_aws_eks_v2_advice(version):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^version must be a Kubernetes minor version: aws_eks_v2"):
        GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, version=version)


def test_a_subnet_list_parameter_gets_fn_select_advice():
    scene = new_scene()
    subnets = cdk.CfnParameter(scene.stack, "Subnets", type="List<AWS::EC2::Subnet::Id>").value_as_list
    for value in (subnets, subnets[0], "subnet-0123456789abcdef0"):
        with pytest.raises(FmTypeError, match=r"^subnet must be an ec2.ISubnet, not a subnet id: .*Fn\.select"):
            PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, subnet=value)


def _vpc(stack: cdk.Stack, *, private: bool = True) -> ec2.IVpc:
    subnets = {"private_subnet_ids" if private else "isolated_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"]}
    return ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a"], **subnets
    )


def test_the_platform_says_which_zone_has_no_subnet():
    stack = cdk.Stack(new_app(), "P", env=ENV)
    with pytest.raises(FmValidationError, match=r"^subnet must be given: the VPC has no private subnet in us-east-1d"):
        TrainingPlatform(
            stack,
            "Platform",
            vpc=_vpc(stack),
            instance_type="p5.48xlarge",
            nodes=2,
            capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2, zone="us-east-1d"),
            orchestrator=PcsOptions(ami=AMI),
        )


def test_the_platform_falls_back_to_isolated_subnets():
    stack = cdk.Stack(new_app(), "P", env=ENV)
    vpc = _vpc(stack, private=False)
    platform = TrainingPlatform(
        stack, "Platform", vpc=vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=PcsOptions(ami=AMI)
    )
    assert platform.subnet.subnet_id == "subnet-0aaaaaaaaaaaaaaa1"


@pytest.mark.parametrize(("capacity", "nearest"), [(3000, "2,400 or 4,800"), (1000, "1,200"), (7300, "7,200 or 9,600")])
def test_fsx_capacity_errors_show_the_nearest_valid_sizes(capacity, nearest):
    scene = new_scene()
    with pytest.raises(FmValidationError, match=rf"\(nearest: {nearest} GiB\), got {capacity}"):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=capacity)


# --- 7. security: encrypted log groups, Local Zone subnets ----------------------------------------------------------


def test_every_log_group_the_library_creates_is_kms_encrypted():
    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    grafana = GrafanaWorkspace(scene.stack, "Grafana", prometheus_workspace_arns=[workspace.workspace_arn])
    grafana.provision(
        prometheus_workspace_arn=workspace.workspace_arn, prometheus_endpoint=workspace.prometheus_endpoint
    )
    template = Template.from_stack(scene.stack)
    groups = template.find_resources("AWS::Logs::LogGroup")
    assert len(groups) >= 3
    assert all("KmsKeyId" in g["Properties"] for g in groups.values()), groups
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [Match.object_like({"Sid": "CloudWatchLogsForFmconstructsLogGroups", "Resource": "*"})]
                )
            },
        },
    )


def _local_zone_platform(zone: str) -> TrainingPlatform:
    stack = cdk.Stack(new_app(), "P", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=[zone],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    return TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        # Not PCS: its controller cannot be in a Local Zone, so PCS refuses it without services_subnet
        # (tests/platform/test_platform_services_subnet.py).
        orchestrator=ParallelClusterOptions(cluster_name="lz-pc"),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
    )


def test_a_local_zone_subnet_warns_with_what_goes_there():
    platform = _local_zone_platform("us-east-1-dfw-2a")
    Annotations.from_stack(cdk.Stack.of(platform)).has_warning(
        "/P/Platform",
        Match.string_like_regexp(
            r"us-east-1-dfw-2a, a Local Zone.*the GPU nodes, the ParallelCluster head node, the login nodes, "
            r"the FSx for Lustre file system there.*services_subnet=.*\[ack: fmconstructs:"
            + WarningId.LOCAL_ZONE_SUBNET.value
            + r"\]"
        ),
    )


def test_a_region_zone_subnet_does_not_warn():
    platform = _local_zone_platform("us-east-1a")
    warnings = Annotations.from_stack(cdk.Stack.of(platform)).find_warning(
        "*", Match.string_like_regexp(WarningId.LOCAL_ZONE_SUBNET.value)
    )
    assert warnings == []
