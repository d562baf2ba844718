"""PCS constructs with real teams' inputs (issue 10): bring-your-own network, deploy-time values, the PCS API's name
rules and wrong Python types.

- Subnets without zone information (``Subnet.from_subnet_id``, ``from_subnet_attributes`` without a zone, ids from a
  ``CfnParameter`` or an import), VPCs and security groups imported by id never crash PcsCluster, PcsGpuNodeGroup,
  PcsLoginNodeGroup or PcsQueue (before: aws-cdk-lib's raw CannotReferenceSubnetSAvailability, even On-Demand); zone
  checks run only when both zones are known.
- Counts, idle times, names and AMI ids may be ``CfnParameter`` values: checks are skipped, numbers never compared,
  tokens never shown raw.
- Names follow the PCS API (botocore PCS model: clusterName 3-40, computeNodeGroupName and queueName 3-25, pattern
  ``[A-Za-z][A-Za-z0-9-]+`` matched whole).
- Every public constructor and function refuses wrong types (FmTypeError naming the parameter), plain strings for
  enums, a ``str`` for a sequence, newline-suffixed names and ids, NaN/inf and bools as counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    CpuArchitecture,
    EfaCardSelection,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
)
from fmconstructs.pcs import (
    AccountingMode,
    ClusterSetting,
    ControllerSize,
    FileSystemMount,
    NodeGroupSetting,
    PcsAmi,
    PcsCluster,
    PcsGpuNodeGroup,
    PcsInstanceProfile,
    PcsLoginNodeGroup,
    PcsQueue,
    QueueSetting,
    SlurmVersion,
    purchase_option_for,
    sample_ami_name,
)
from fmconstructs.pcs.slurm import parse_prolog_flags
from fmconstructs.pcs.user_data import imex_prolog_install_commands, imex_prolog_script, pcs_mime_user_data
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import new_app, new_scene

NAN = float("nan")
INF = float("inf")
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK = "cr-0123456789abcdef0"
CNG = "AWS::PCS::ComputeNodeGroup"
_IDS = iter(range(100_000))


def next_id(prefix: str = "G") -> str:
    return f"{prefix}{next(_IDS)}"


def assert_clean_message(error: BaseException, parameter: str) -> None:
    """The message starts with the parameter's name and never shows a raw token or a token's number."""
    text = str(error)
    assert text.startswith(parameter), text
    assert "${Token[" not in text and "#{Token[" not in text, text
    assert "e+289" not in text and "e+28" not in text, text


def _cluster(**props: Any) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)


def _number(stack: cdk.Stack, name: str | None = None) -> float:
    return cdk.CfnParameter(stack, name or next_id("Number"), type="Number").value_as_number


def _string(stack: cdk.Stack, name: str | None = None) -> str:
    return cdk.CfnParameter(stack, name or next_id("String")).value_as_string


# --- 1. Any network ---------------------------------------------------------------------------------------------------


def _zoneless_subnet(stack: cdk.Stack, how: str) -> ec2.ISubnet:
    if how == "from_subnet_id":
        return ec2.Subnet.from_subnet_id(stack, next_id("Subnet"), "subnet-0cccccccccccccc03")
    if how == "from_subnet_attributes":
        return ec2.Subnet.from_subnet_attributes(stack, next_id("Subnet"), subnet_id="subnet-0cccccccccccccc03")
    if how == "import_value":
        return ec2.Subnet.from_subnet_id(stack, next_id("Subnet"), cdk.Fn.import_value("team-subnet"))
    parameter = cdk.CfnParameter(stack, next_id("SubnetId"), type="AWS::EC2::Subnet::Id")
    return ec2.Subnet.from_subnet_id(stack, next_id("Subnet"), parameter.value_as_string)


ZONELESS = ["from_subnet_id", "from_subnet_attributes", "cfn_parameter", "import_value"]


@pytest.mark.parametrize("how", ZONELESS)
@pytest.mark.parametrize(
    "capacity",
    [OnDemand(), CapacityReservation(reservation_id=BLOCK, zone="us-east-1a"), CapacityBlock(reservation_id=BLOCK)],
    ids=["on-demand", "odcr-with-zone", "block"],
)
def test_subnets_without_zone_information_synthesize(how, capacity):
    # Before: aws-cdk-lib's raw CannotReferenceSubnetSAvailability (RuntimeError), even On-Demand.
    scene = new_scene()
    subnet = _zoneless_subnet(scene.stack, how)
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=subnet)
    group = cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, capacity=capacity, max_nodes=2)
    login = cluster.add_login_node_group("Login", ami=AMI)
    queue = group.add_queue("Queue", queue_name="gpu")
    assert group.subnet is subnet and login.subnet is subnet and queue.node_groups == (group,)
    template = scene.template()
    subnet_ids = [r["Properties"]["SubnetIds"] for r in template.find_resources(CNG).values()]
    expected = [scene.stack.resolve(subnet.subnet_id)]
    assert subnet_ids == [expected, expected]
    template.has_resource_properties("AWS::PCS::Cluster", {"Networking": Match.object_like({"SubnetIds": expected})})


@pytest.mark.parametrize("how", ZONELESS)
def test_a_zoneless_node_group_subnet_beside_a_cluster_subnet(how):
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    subnet = _zoneless_subnet(scene.stack, how)
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5.48xlarge",
        ami=AMI,
        capacity=CapacityBlock(reservation_id=BLOCK, zone="us-east-1b", instance_count=2),
        max_nodes=2,
        subnet=subnet,
    )
    cluster.add_login_node_group("Login", ami=AMI, subnet=subnet)
    assert group.subnet is subnet
    scene.app.synth()


def test_zone_check_still_runs_when_both_zones_are_known():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    subnet = ec2.Subnet.from_subnet_attributes(
        scene.stack, "Known", subnet_id="subnet-0ddddddddddddddd4", availability_zone="us-east-1-dfw-2a"
    )
    with pytest.raises(FmValidationError) as caught:
        cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5.48xlarge",
            ami=AMI,
            capacity=CapacityBlock(reservation_id=BLOCK, zone="us-east-1b"),
            max_nodes=2,
            subnet=subnet,
        )
    assert_clean_message(caught.value, "subnet")
    assert "subnet-0ddddddddddddddd4 in us-east-1-dfw-2a" in str(caught.value)


def test_a_zone_id_and_a_zone_name_are_not_compared():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5.48xlarge",
        ami=AMI,
        capacity=CapacityBlock(reservation_id=BLOCK, zone="use1-az4"),
        max_nodes=2,
    )


def test_zone_check_names_a_token_subnet_by_its_path():
    scene = new_scene()
    token_id = _string(scene.stack, "SubnetId")
    subnet = ec2.Subnet.from_subnet_attributes(scene.stack, "Known", subnet_id=token_id, availability_zone="us-east-1a")
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=subnet)
    with pytest.raises(FmValidationError, match=r"Test/Known in us-east-1a") as caught:
        cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5.48xlarge",
            ami=AMI,
            capacity=CapacityReservation(reservation_id=BLOCK, zone="us-east-1b"),
            max_nodes=2,
        )
    assert_clean_message(caught.value, "subnet")


def test_vpc_imported_by_id_needs_a_subnet_and_works_with_one():
    scene = new_scene()
    vpc = ec2.Vpc.from_vpc_attributes(scene.stack, "ByIdVpc", vpc_id="vpc-0fffffffffffffff0", availability_zones=["a"])
    with pytest.raises(FmValidationError) as caught:
        PcsCluster(scene.stack, "NoSubnet", vpc=vpc)
    assert_clean_message(caught.value, "subnet")
    cluster = PcsCluster(scene.stack, "Cluster", vpc=vpc, subnet=_zoneless_subnet(scene.stack, "from_subnet_id"))
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=1)
    scene.app.synth()


def test_vpc_and_security_groups_from_deploy_time_ids():
    app = new_app()
    stack = cdk.Stack(app, "Tokens")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id=cdk.Fn.import_value("team-vpc"),
        availability_zones=cdk.Fn.get_azs(),
        private_subnet_ids=[cdk.Fn.select(0, cdk.Fn.split(",", cdk.Fn.import_value("team-subnets")))],
    )
    cluster_group = ec2.SecurityGroup.from_security_group_id(stack, "ClusterSg", _string(stack, "ClusterSgId"))
    extra = ec2.SecurityGroup.from_security_group_id(stack, "ExtraSg", "sg-0123456789abcdef0", mutable=False)
    cluster = PcsCluster(stack, "Cluster", vpc=vpc, security_group=cluster_group)
    group = cluster.add_gpu_node_group(
        "Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, security_groups=[extra]
    )
    login = cluster.add_login_node_group("Login", ami=AMI, security_groups=[extra])
    ids = [stack.resolve(g.security_group_id) for g in group.connections.security_groups]
    assert {"Ref": "ClusterSgId"} in ids and "sg-0123456789abcdef0" in ids
    login_ids = [stack.resolve(g.security_group_id) for g in login.connections.security_groups]
    assert login_ids == [{"Ref": "ClusterSgId"}, "sg-0123456789abcdef0"]
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::PCS::Cluster", {"Networking": Match.object_like({"SecurityGroupIds": [{"Ref": "ClusterSgId"}]})}
    )


# --- 2. Deploy-time values ---------------------------------------------------------------------------------------------


def test_number_tokens_for_node_counts_are_rendered_not_compared():
    # Before: "min_instance_count must be at most max_instance_count (-1.888...e+289), got 0".
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    max_nodes, login_nodes = _number(scene.stack, "MaxNodes"), _number(scene.stack, "LoginNodes")
    group = cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=max_nodes)
    login = cluster.add_login_node_group("Login", ami=AMI, nodes=login_nodes)
    assert group.max_nodes is max_nodes and group.min_nodes == 0 and login.nodes is login_nodes
    template = scene.template()
    template.has_resource_properties(
        CNG, {"ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": {"Ref": "MaxNodes"}}}
    )
    template.has_resource_properties(
        CNG,
        {
            "ScalingConfiguration": {
                "MinInstanceCount": {"Ref": "LoginNodes"},
                "MaxInstanceCount": {"Ref": "LoginNodes"},
            }
        },
    )


@pytest.mark.parametrize("which", ["min_nodes", "max_nodes"])
def test_a_number_token_is_never_compared_with_a_known_count(which):
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    counts: dict[str, Any] = {"min_nodes": 2, "max_nodes": 2, which: _number(scene.stack)}
    cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5.48xlarge",
        ami=AMI,
        capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
        **counts,
    )
    scene.app.synth()


def test_a_capacity_block_defaults_min_to_the_token_max():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    token = _number(scene.stack, "Nodes")
    group = cluster.add_gpu_node_group(
        "Gpu", instance_type="p5.48xlarge", ami=AMI, capacity=CapacityBlock(reservation_id=BLOCK), max_nodes=token
    )
    assert group.min_nodes is token
    scene.template().has_resource_properties(
        CNG, {"ScalingConfiguration": {"MinInstanceCount": {"Ref": "Nodes"}, "MaxInstanceCount": {"Ref": "Nodes"}}}
    )


def test_ultraserver_queue_ratios_skip_token_counts():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, enable_imex=True)
    capacity = UltraServerCapacityBlock(reservation_id=BLOCK)
    groups = [
        cluster.add_gpu_node_group(
            name, instance_type="p6e-gb200.36xlarge", ami=AMI, capacity=capacity, max_nodes=count
        )
        for name, count in (("A", 18), ("B", _number(scene.stack)))
    ]
    cluster.add_queue("Queue", node_groups=groups)


def test_idle_times_as_deploy_time_seconds():
    scene = new_scene()
    idle = _number(scene.stack, "IdleSeconds")
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, scale_down_idle_time=cdk.Duration.seconds(idle))
    cluster.add_gpu_node_group(
        "Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, scale_down_idle_time=cdk.Duration.seconds(idle)
    )
    template = scene.template()
    template.has_resource_properties(
        "AWS::PCS::Cluster",
        {"SlurmConfiguration": Match.object_like({"ScaleDownIdleTimeInSeconds": {"Ref": "IdleSeconds"}})},
    )
    template.has_resource_properties(
        CNG, {"SlurmConfiguration": {"ScaleDownIdleTimeInSeconds": {"Ref": "IdleSeconds"}}}
    )


def test_an_idle_time_token_in_minutes_names_the_parameter():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"Duration.seconds\(\.\.\.\) when its amount is a deploy-time") as e:
        PcsCluster(
            scene.stack, "Cluster", vpc=scene.vpc, scale_down_idle_time=cdk.Duration.minutes(_number(scene.stack))
        )
    assert_clean_message(e.value, "scale_down_idle_time")


def test_names_and_ami_ids_as_deploy_time_values():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name=_string(scene.stack, "ClusterName"))
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id(_string(scene.stack, "AmiId")),
        max_nodes=2,
        node_group_name=_string(scene.stack, "GroupName"),
    )
    group.add_queue("Queue", queue_name=_string(scene.stack, "QueueName"))
    group.add_queue("Queue2", queue_name=_string(scene.stack, "QueueName2"))
    template = scene.template()
    template.has_resource_properties("AWS::PCS::Cluster", {"Name": {"Ref": "ClusterName"}})
    template.has_resource_properties(CNG, {"Name": {"Ref": "GroupName"}, "AmiId": {"Ref": "AmiId"}})
    template.has_resource_properties("AWS::PCS::Queue", {"Name": {"Ref": "QueueName"}})


def test_an_instance_type_must_be_known_and_the_error_shows_no_token():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"known at synthesis .*got a deploy-time value") as caught:
        cluster.add_gpu_node_group("Gpu", instance_type=_string(scene.stack), ami=AMI, max_nodes=2)
    assert_clean_message(caught.value, "instance_type")


def test_a_login_instance_type_may_be_a_deploy_time_value():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_login_node_group("Login", ami=AMI, instance_type=_string(scene.stack, "LoginType"))
    scene.template().has_resource_properties(CNG, {"InstanceConfigs": [{"InstanceType": {"Ref": "LoginType"}}]})


@pytest.fixture(scope="module")
def everything_is_a_token() -> Template:
    """One PcsCluster and GPU node group whose every environment-specific value is a CfnParameter."""
    app = new_app()
    stack = cdk.Stack(app, "Tokens")  # environment-agnostic, as a StackSet template is
    subnet_id = cdk.CfnParameter(stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id=cdk.CfnParameter(stack, "VpcId", type="AWS::EC2::VPC::Id").value_as_string,
        availability_zones=cdk.Fn.get_azs(),
    )
    subnet = ec2.Subnet.from_subnet_id(stack, "Subnet", subnet_id)
    cluster = PcsCluster(
        stack,
        "Cluster",
        vpc=vpc,
        subnet=subnet,
        cluster_name=_string(stack, "ClusterName"),
        accounting=AccountingMode.STANDARD,
        accounting_purge_time_days=_number(stack, "PurgeDays"),
        scale_down_idle_time=cdk.Duration.seconds(_number(stack, "IdleSeconds")),
        tags={"team": _string(stack, "Team")},
    )
    max_nodes = _number(stack, "MaxNodes")
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id(_string(stack, "AmiId"), architecture=CpuArchitecture.X86_64),
        capacity=CapacityReservation(
            reservation_id=_string(stack, "ReservationId"), instance_count=_number(stack, "ReservedInstances")
        ),
        max_nodes=max_nodes,
        min_nodes=_number(stack, "MinNodes"),
        node_group_name=_string(stack, "GroupName"),
        root_volume_size_gib=_number(stack, "RootGiB"),
    )
    cluster.add_login_node_group(
        "Login", ami=PcsAmi.from_image_id(_string(stack, "LoginAmiId")), nodes=_number(stack, "LoginNodes")
    )
    group.add_queue("Queue", queue_name=_string(stack, "QueueName"))
    app.synth()
    return Template.from_stack(stack)


def test_everything_is_a_token_synthesizes(everything_is_a_token):
    template = everything_is_a_token
    template.has_resource_properties(
        CNG,
        {
            "AmiId": {"Ref": "AmiId"},
            "Name": {"Ref": "GroupName"},
            "SubnetIds": [{"Ref": "SubnetId"}],
            "ScalingConfiguration": {"MinInstanceCount": {"Ref": "MinNodes"}, "MaxInstanceCount": {"Ref": "MaxNodes"}},
        },
    )
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "BlockDeviceMappings": [
                        Match.object_like({"Ebs": Match.object_like({"VolumeSize": {"Ref": "RootGiB"}})})
                    ],
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": {"Ref": "ReservationId"}}
                    },
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::PCS::Cluster",
        {
            "Name": {"Ref": "ClusterName"},
            "Networking": Match.object_like({"SubnetIds": [{"Ref": "SubnetId"}]}),
            "SlurmConfiguration": Match.object_like(
                {
                    "ScaleDownIdleTimeInSeconds": {"Ref": "IdleSeconds"},
                    "Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": {"Ref": "PurgeDays"}},
                }
            ),
        },
    )


def test_no_raw_token_in_the_template_text(everything_is_a_token):
    text = json.dumps(everything_is_a_token.to_json())
    assert "${Token[" not in text and "e+289" not in text


# --- 3. PCS API names -----------------------------------------------------------------------------------------------

# botocore PCS model 2023-02-10: ClusterName min 3 max 40, ComputeNodeGroupName and QueueName min 3 max 25, pattern
# (?!pcs_)^[A-Za-z][A-Za-z0-9-]+ (the old check allowed 2-41 characters, and a trailing newline).
NAME_CASES = [
    ("abc", True),
    ("A-1", True),
    ("ab", False),
    ("1abc", False),
    ("-abc", False),
    ("ab_c", False),
    ("pcs_abc", False),
    ("abc\n", False),
    (" abc", False),
    ("abc.d", False),
    ("ábc", False),
    ("", False),
]


def _name_cases(limit: int) -> list[tuple[str, bool]]:
    return [*NAME_CASES, ("a" * limit, True), ("a" * (limit + 1), False), ("a" + "-" * (limit - 1), True)]


@pytest.mark.parametrize(("name", "ok"), _name_cases(40))
def test_cluster_names_follow_the_pcs_api(name, ok):
    scene = new_scene()
    if ok:
        PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name=name)
        return
    with pytest.raises(FmValidationError, match=r"3-40 characters: a letter, then letters, digits or '-'") as caught:
        PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name=name)
    assert_clean_message(caught.value, "cluster_name")


@pytest.fixture(scope="module")
def shared_cluster() -> PcsCluster:
    """One cluster for checks that raise before a construct is added (each case uses a fresh id)."""
    return _cluster()


@pytest.fixture(scope="module")
def shared_group(shared_cluster: PcsCluster) -> PcsGpuNodeGroup:
    return shared_cluster.add_gpu_node_group("Shared", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)


@pytest.mark.parametrize(("name", "ok"), _name_cases(25))
def test_node_group_names_follow_the_pcs_api(shared_cluster, name, ok):
    def make(kind: str) -> None:
        if kind == "gpu":
            shared_cluster.add_gpu_node_group(
                next_id(), instance_type="p5.48xlarge", ami=AMI, max_nodes=1, node_group_name=name
            )
        else:
            shared_cluster.add_login_node_group(next_id(), ami=AMI, node_group_name=name)

    for kind in ("gpu", "login"):
        if ok:
            make(kind)
            continue
        with pytest.raises(FmValidationError, match=r"3-25 characters: a letter") as caught:
            make(kind)
        assert_clean_message(caught.value, "node_group_name")


@pytest.mark.parametrize(("name", "ok"), _name_cases(25))
def test_queue_names_follow_the_pcs_api(shared_group, name, ok):
    if ok:
        shared_group.add_queue(next_id("Q"), queue_name=name)
        return
    with pytest.raises(FmValidationError, match=r"3-25 characters: a letter") as caught:
        shared_group.add_queue(next_id("Q"), queue_name=name)
    assert_clean_message(caught.value, "queue_name")


# --- 6. Wrong types and unusual values: every public constructor and function -------------------------------------


class _Thing:
    """Not a construct, not an enum, not a sequence."""


WRONG_COUNTS: list[Any] = [True, False, NAN, INF, -INF, "2", 2.5, None, [2], _Thing()]


def _raises(make: Callable[[], object], parameter: str) -> FmValidationError:
    with pytest.raises(FmValidationError) as caught:
        make()
    assert_clean_message(caught.value, parameter)
    return caught.value


def _cases(table: dict[str, list[Any]]) -> list[tuple[str, Any]]:
    return [(name, value) for name, values in table.items() for value in values]


CLUSTER_BAD: dict[str, list[Any]] = {
    "vpc": ["vpc-0123456789abcdef0", None, _Thing()],
    "subnet": ["subnet-0aaaaaaaaaaaaaaa1", ["subnet-0aaaaaaaaaaaaaaa1"], _Thing()],
    "slurm_version": ["23.11", 25.11, None, "25.11\n", ControllerSize.SMALL],
    "size": ["SMALL", 1, AccountingMode.NONE],
    "accounting": ["NONE", "STANDARD", None, True],
    "accounting_purge_time_days": [True, NAN, INF, "30", 2.5, -2, 10_001],
    "scale_down_idle_time": [600, "10m", NAN, cdk.Duration.millis(1500), cdk.Duration.seconds(10_000_001)],
    "slurm_settings": ["Prolog=/x", [("Prolog", "/x")], {5: "/x"}, {ClusterSetting.EPILOG: 5}],
    "enable_imex": ["yes", 1, None],
    "security_group": ["sg-0123456789abcdef0", [_Thing()], _Thing()],
    "cluster_name": [123, "training\n", "a" * 41],
    "tags": [["team"], "team=ml", {"team": 1}, {1: "x"}],
}


@pytest.mark.parametrize(("parameter", "value"), _cases(CLUSTER_BAD))
def test_pcs_cluster_refuses(parameter, value):
    scene = new_scene()
    if parameter == "accounting_purge_time_days":
        props: dict[str, Any] = {"accounting": AccountingMode.STANDARD, parameter: value}
    else:
        props = {parameter: value}
    if parameter != "vpc":
        props.setdefault("vpc", scene.vpc)
    error = _raises(lambda: PcsCluster(scene.stack, "Cluster", **props), parameter)
    if not isinstance(value, str | cdk.Duration | int | float) or parameter in ("vpc", "subnet", "security_group"):
        assert isinstance(error, TypeError), error


@pytest.mark.parametrize(
    ("scope", "id", "parameter"), [("stack", "Cluster", "scope"), (None, 5, "id"), (None, "", "id")]
)
def test_pcs_cluster_refuses_bad_scope_and_id(scope, id, parameter):
    scene = new_scene()
    _raises(lambda: PcsCluster(scope or scene.stack, id, vpc=scene.vpc), parameter)


def test_construct_ids_must_be_known_and_unique():
    # Before: aws-cdk-lib's raw RuntimeErrors (ComponentsContainUnresolvedTokens; "There is already a Construct").
    scene = new_scene()
    _raises(lambda: PcsCluster(scene.stack, _string(scene.stack), vpc=scene.vpc), "id")
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    _raises(lambda: PcsCluster(scene.stack, "Cluster", vpc=scene.vpc), "id")
    cluster.add_login_node_group("Login/Nodes", ami=AMI)
    _raises(lambda: cluster.add_login_node_group("Login/Nodes", ami=AMI), "id")
    _raises(lambda: cluster.add_gpu_node_group("Login--Nodes", instance_type="p5.48xlarge", ami=AMI, max_nodes=1), "id")


@pytest.fixture(scope="module")
def lustre() -> LustreFileSystem:
    scene = new_scene()
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
    )


GPU_BAD: dict[str, list[Any]] = {
    "cluster": ["cluster", None, _Thing()],
    "instance_type": [5, None, "p5.48xlarge\n", "p4d.24xlarge"],
    "ami": ["ami-0123456789abcdef0", None, _Thing()],
    "max_nodes": [*WRONG_COUNTS, 0],
    "min_nodes": [True, NAN, INF, "0", 0.5, -1, 3],
    "capacity": ["on-demand", "cr-0123456789abcdef0", _Thing()],
    "spot": ["no", 0, None],
    "subnet": ["subnet-0aaaaaaaaaaaaaaa1", _Thing()],
    "efa_interface_count": [True, NAN, INF, "4", 2.5, -1],
    "efa_cards": ["RECOMMENDED", "all", None, 1],
    "placement_group": ["cluster", _Thing()],
    "instance_store_mount_point": ["scratch", "/scratch\n", "/scratch/", 5, "/scr atch", "/x;rm -rf /"],
    "mounts": ["/fsx", [_Thing()], ["/fsx"], _Thing()],
    "user_data_commands": ["echo hi", [1], [None], b"echo"],
    "instance_profile": ["profile", _Thing()],
    "security_groups": ["sg-0123456789abcdef0", ["sg-0123456789abcdef0"], _Thing()],
    "slurm_settings": ["Weight=1", {None: "1"}, {NodeGroupSetting.WEIGHT: 1}, {NodeGroupSetting.WEIGHT: "1\n"}],
    "scale_down_idle_time": [60, "1m", cdk.Duration.millis(10)],
    "root_volume_size_gib": [True, NAN, INF, "200", 200.5, 0, 65_537],
    "node_group_name": [5, "gpu\n", "gpu_nodes"],
    "tags": ["team", {"team": None}],
}


@pytest.mark.parametrize(("parameter", "value"), _cases(GPU_BAD))
def test_pcs_gpu_node_group_refuses(shared_cluster, parameter, value):
    props: dict[str, Any] = {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 2, parameter: value}
    if parameter == "cluster":
        _raises(lambda: PcsGpuNodeGroup(shared_cluster, next_id(), **props), parameter)
        return
    if parameter == "min_nodes" and value == 3:
        props["max_nodes"] = 2
    _raises(lambda: PcsGpuNodeGroup(shared_cluster, next_id(), cluster=shared_cluster, **props), parameter)


def test_a_gpu_node_group_needs_max_nodes(shared_cluster):
    _raises(lambda: shared_cluster.add_gpu_node_group(next_id(), instance_type="p5.48xlarge", ami=AMI), "max_nodes")


LOGIN_BAD: dict[str, list[Any]] = {
    "ami": ["ami-0123456789abcdef0", None],
    "instance_type": [5, "m7i.xlarge\n", "m7i", None],
    "nodes": [*WRONG_COUNTS, 0],
    "subnet": ["subnet-0aaaaaaaaaaaaaaa1"],
    "mounts": ["/fsx", ["/fsx"]],
    "user_data_commands": ["echo hi", [1]],
    "instance_profile": ["profile"],
    "security_groups": ["sg-0123456789abcdef0", ["sg-0123456789abcdef0"]],
    "root_volume_size_gib": [True, NAN, INF, "100", 0, 65_537],
    "node_group_name": [5, "login\n", "lo"],
    "tags": ["team", {"team": 5}],
}


@pytest.mark.parametrize(("parameter", "value"), _cases(LOGIN_BAD))
def test_pcs_login_node_group_refuses(shared_cluster, parameter, value):
    props: dict[str, Any] = {"ami": AMI, parameter: value}
    _raises(lambda: PcsLoginNodeGroup(shared_cluster, next_id(), cluster=shared_cluster, **props), parameter)


QUEUE_BAD: dict[str, list[Any]] = {
    "node_groups": ["Shared", None, _Thing(), [None], ["Shared"]],
    "queue_name": [5, "gpu\n", "q"],
    "slurm_settings": [
        "Default=YES",
        {ClusterSetting.PROLOG: "YES"},
        {QueueSetting.DEFAULT: True},
        {QueueSetting.DEFAULT: "YES\n"},
    ],
}


@pytest.mark.parametrize(("parameter", "value"), _cases(QUEUE_BAD))
def test_pcs_queue_refuses(shared_cluster, shared_group, parameter, value):
    props: dict[str, Any] = {"node_groups": [shared_group], parameter: value}
    _raises(lambda: PcsQueue(shared_cluster, next_id("Q"), cluster=shared_cluster, **props), parameter)
    _raises(lambda: shared_cluster.add_queue(next_id("Q"), **props), parameter)


def test_pcs_queue_refuses_a_cluster_of_the_wrong_type(shared_cluster, shared_group):
    _raises(lambda: PcsQueue(shared_cluster, next_id("Q"), cluster="c", node_groups=[shared_group]), "cluster")


@pytest.mark.parametrize(
    ("make", "parameter"),
    [
        (lambda: PcsAmi.from_image_id(5), "image_id"),
        (lambda: PcsAmi.from_image_id(None), "image_id"),
        (lambda: PcsAmi.from_image_id("ami-0123456789abcdef0\n"), "image_id"),
        (lambda: PcsAmi.from_image_id("ami-ABC"), "image_id"),
        (lambda: PcsAmi.from_image_id(["ami-0123456789abcdef0"]), "image_id"),
        (lambda: PcsAmi.from_image_id("ami-0123456789abcdef0", architecture="x86_64"), "architecture"),
        (lambda: PcsAmi.from_ssm_parameter(5), "parameter_name"),
        (lambda: PcsAmi.from_ssm_parameter(None), "parameter_name"),
        (lambda: PcsAmi.from_ssm_parameter("/pcs/ami\n"), "parameter_name"),
        (lambda: PcsAmi.from_ssm_parameter("/pcs/my ami"), "parameter_name"),
        (lambda: PcsAmi.from_ssm_parameter("/" + "a" * 2048), "parameter_name"),
        (lambda: PcsAmi.from_ssm_parameter("/pcs/ami", architecture="arm64"), "architecture"),
        (lambda: PcsAmi(image_id=5), "image_id"),
        (lambda: PcsAmi(ssm_parameter_name=[]), "ssm_parameter_name"),
        (lambda: sample_ami_name("arm64", SlurmVersion.V25_11), "architecture"),
        (lambda: sample_ami_name(CpuArchitecture.ARM64, "25.11"), "slurm_version"),
        (lambda: sample_ami_name(CpuArchitecture.ARM64, SlurmVersion.V25_11, os="al2023\n"), "os"),
        (lambda: purchase_option_for("on-demand"), "capacity"),
        (lambda: purchase_option_for(OnDemand(), spot="yes"), "spot"),
        (lambda: AMI.check_architecture("x86_64", "p5.48xlarge"), "architecture"),
        (lambda: AMI.resolve("stack"), "scope"),
        (lambda: SlurmVersion.V25_11.at_least("25.05"), "other"),
        (lambda: parse_prolog_flags(["Alloc"]), "PrologFlags"),
        (lambda: imex_prolog_script(25.11), "slurm_version"),
        (lambda: imex_prolog_script("25.11\n"), "slurm_version"),
        (lambda: imex_prolog_script("25.11; rm -rf /"), "slurm_version"),
        (lambda: imex_prolog_install_commands("opt/prolog.sh"), "path"),
        (lambda: imex_prolog_install_commands("/opt/prolog.sh\n"), "path"),
        (lambda: pcs_mime_user_data(["echo"]), "script"),
        (lambda: pcs_mime_user_data("echo", extra_parts="text/cloud-config"), "extra_parts"),
        (lambda: pcs_mime_user_data("echo", extra_parts=[("text/cloud-config",)]), "extra_parts[0]"),
        (lambda: pcs_mime_user_data("echo", extra_parts=[("text/cloud-config\nX: 1", "a")]), "extra_parts[0]"),
        (lambda: pcs_mime_user_data("echo", extra_parts=[("text/cloud-config", 5)]), "extra_parts[0]"),
    ],
)
def test_ami_and_helper_functions_refuse(make, parameter):
    _raises(make, parameter)


def test_an_ssm_parameter_name_must_be_known_at_synthesis():
    scene = new_scene()
    error = _raises(lambda: PcsAmi.from_ssm_parameter(_string(scene.stack)), "parameter_name")
    assert "PcsAmi.from_image_id(<token>)" in str(error)


def test_ami_names_the_api_accepts():
    # botocore PCS AmiId pattern ami-[a-z0-9]+: shorter ids than EC2's 8/17 hex digits are not refused here.
    assert PcsAmi.from_image_id("ami-12345678").image_id == "ami-12345678"
    assert PcsAmi.from_ssm_parameter("arn:aws:ssm:us-east-1:123456789012:parameter/pcs/ami").ssm_parameter_name


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"cluster_arn": 5}, "cluster_arn"),
        ({"cluster_arn": "not-an-arn"}, "cluster_arn"),
        ({"cluster_arn": "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abc\n"}, "cluster_arn"),
        ({"cluster_arn": "arn:aws:pcs:us-east-1:123456789012:cluster/pcs_abc", "enable_ssm": "yes"}, "enable_ssm"),
    ],
)
def test_instance_profile_refuses(kwargs, parameter):
    scene = new_scene()
    _raises(lambda: PcsInstanceProfile(scene.stack, "Profile", **kwargs), parameter)


@pytest.mark.parametrize(
    ("bucket", "prefix", "parameter"),
    [("example-data", "", "bucket"), (None, "", "bucket"), ("ok", 5, "prefix"), ("ok", "datasets\n", "prefix")],
)
def test_bucket_grants_refuse(shared_cluster, bucket, prefix, parameter):
    stack = cdk.Stack.of(shared_cluster)
    real = s3.Bucket.from_bucket_name(stack, next_id("Bucket"), "example-data")
    given = real if bucket == "ok" else bucket
    _raises(lambda: shared_cluster.instance_profile.grant_read_bucket(given, prefix=prefix), parameter)


def test_a_bucket_prefix_may_be_a_deploy_time_value(shared_cluster):
    stack = cdk.Stack.of(shared_cluster)
    bucket = s3.Bucket.from_bucket_name(stack, next_id("Bucket"), "example-data")
    shared_cluster.instance_profile.grant_read_bucket(bucket, prefix=_string(stack))


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"file_system": "fs-0123456789abcdef0"}, "file_system"),
        ({"mount_point": "fsx"}, "mount_point"),
        ({"mount_point": "/fsx\n"}, "mount_point"),
        ({"mount_point": "/fsx/"}, "mount_point"),
        ({"mount_point": 5}, "mount_point"),
        ({"mount_point": "/fs x"}, "mount_point"),
        ({"efa_interfaces": True}, "efa_interfaces"),
        ({"efa_interfaces": NAN}, "efa_interfaces"),
        ({"efa_interfaces": -1}, "efa_interfaces"),
        ({"efa_interfaces": "2"}, "efa_interfaces"),
    ],
)
def test_file_system_mount_refuses(lustre, kwargs, parameter):
    props: dict[str, Any] = {"file_system": lustre, **kwargs}
    _raises(lambda: FileSystemMount(**props), parameter)


def test_file_system_mount_paths_must_be_known(lustre):
    stack = cdk.Stack.of(lustre)
    _raises(lambda: FileSystemMount(lustre, _string(stack)), "mount_point")
    _raises(lambda: FileSystemMount(lustre, efa_interfaces=_number(stack)), "efa_interfaces")


@pytest.mark.parametrize(("commands", "parameter"), [((["echo a"],), "commands[0]"), ((5,), "commands[0]")])
def test_add_user_data_refuses_non_strings(shared_group, commands, parameter):
    _raises(lambda: shared_group.add_user_data(*commands), parameter)


def test_add_mount_refuses_a_file_system(shared_group, lustre):
    error = _raises(lambda: shared_group.add_mount(lustre), "mount")
    assert isinstance(error, TypeError)


def test_wrong_types_are_type_errors(shared_cluster):
    with pytest.raises(TypeError, match=r"^max_nodes must be an integer"):
        shared_cluster.add_gpu_node_group(next_id(), instance_type="p5.48xlarge", ami=AMI, max_nodes="2")
    with pytest.raises(TypeError, match=r"^efa_cards must be an? EfaCardSelection"):
        shared_cluster.add_gpu_node_group(
            next_id(), instance_type="p5.48xlarge", ami=AMI, max_nodes=2, efa_cards="EVERY_GPU_CARD"
        )
    assert isinstance(EfaCardSelection.RECOMMENDED, EfaCardSelection)
