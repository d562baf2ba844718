"""EKS constructs with real teams' inputs (issue 10): bring-your-own network, deploy-time values, placement groups,
one vocabulary and wrong Python types.

- Subnets without zone information (``Subnet.from_subnet_id``, ``from_subnet_attributes`` without a zone, ids from a
  ``CfnParameter``) and VPCs imported by id never crash GpuEksCluster or GpuNodeGroup; zone checks run only when
  both zones are known.
- Number tokens (``CfnParameter.value_as_number``) for node counts skip the range checks and are never compared;
  errors never show a raw token.
- Node groups get a placement group only when asked; with an On-Demand Capacity Reservation a placement group warns
  (EC2 User Guide "cr-cpg").
- ``max_nodes``/``min_nodes``/``desired_nodes`` (the old ``max_size``/``min_size``/``desired_size`` were removed in
  0.3.0: tests/house/test_removed_names.py); ``efa_cards``.
- Every public constructor and method refuses wrong types (FmTypeError naming the parameter), plain strings for
  enums, a ``str`` for a sequence, newline-suffixed names, NaN/inf and bools as counts.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    ClusterPlacementGroup,
    EfaCardSelection,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
    WarningId,
)
from fmconstructs.eks import (
    GpuEksCluster,
    GpuNodeGroup,
    HelmChartPin,
    SystemNodeGroupOptions,
    compute_domain_manifest,
    dcgm_exporter_values,
    efa_device_plugin_values,
    lustre_static_volume_manifests,
    nvidia_device_plugin_values,
)
from fmconstructs.eks.manifests import lustre_persistent_volume_claim
from fmconstructs.errors import FmTypeError
from fmconstructs.storage import EksStaticVolume, LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import ENV, new_app, new_scene

NAN = float("nan")
INF = float("inf")
GB200_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200-block"
ODCR = "cr-0123456789abcdef0"
BLOCK = "cr-0fedcba9876543210"
_IDS = iter(range(100_000))


def next_id(prefix: str = "G") -> str:
    return f"{prefix}{next(_IDS)}"


def assert_clean_message(error: BaseException, parameter: str) -> None:
    """The message starts with the parameter's name and never shows a raw token or a token's number."""
    text = str(error)
    assert text.startswith(parameter), text
    assert "${Token[" not in text and "#{Token[" not in text, text
    assert "e+289" not in text and "e+28" not in text, text


def node_group_props(template: Template) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in template.find_resources("AWS::EKS::Nodegroup").values()
        if "fmconstructs.io/instance-type" in r["Properties"].get("Labels", {})
    ]


def launch_template_data(template: Template) -> list[dict[str, Any]]:
    return [r["Properties"]["LaunchTemplateData"] for r in template.find_resources("AWS::EC2::LaunchTemplate").values()]


# --- 1. Any network: subnets without zones, VPCs imported by id -----------------------------------------------------


def _zoneless_subnet(stack: cdk.Stack, how: str) -> ec2.ISubnet:
    if how == "from_subnet_id":
        return ec2.Subnet.from_subnet_id(stack, next_id("Subnet"), "subnet-0cccccccccccccc03")
    if how == "from_subnet_attributes":
        return ec2.Subnet.from_subnet_attributes(stack, next_id("Subnet"), subnet_id="subnet-0cccccccccccccc03")
    parameter = cdk.CfnParameter(stack, next_id("SubnetId"), type="AWS::EC2::Subnet::Id")
    return ec2.Subnet.from_subnet_id(stack, next_id("Subnet"), parameter.value_as_string)


ZONELESS = ["from_subnet_id", "from_subnet_attributes", "cfn_parameter"]


@pytest.mark.parametrize("how", ZONELESS)
@pytest.mark.parametrize(
    "capacity",
    [
        OnDemand(),
        CapacityReservation(reservation_id=ODCR, zone="us-east-1a"),
        CapacityBlock(reservation_id=BLOCK, zone="us-east-1b", instance_count=2),
    ],
    ids=["on-demand", "odcr-with-zone", "block-with-zone"],
)
def test_subnets_without_zone_information_synthesize(how, capacity):
    # Before: aws-cdk-lib's raw CannotReferenceSubnetSAvailability (RuntimeError) from the node group.
    scene = new_scene()
    subnet = _zoneless_subnet(scene.stack, how)
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, subnets=[subnet, _zoneless_subnet(scene.stack, how)])
    group = cluster.add_gpu_node_group(
        "Gpu", instance_type="p5en.48xlarge", capacity=capacity, max_nodes=2, subnets=[subnet]
    )
    assert group.subnets == (subnet,)
    (props,) = node_group_props(scene.template())
    assert len(props["Subnets"]) == 1


def test_zone_check_still_runs_when_both_zones_are_known_and_names_the_subnet_without_a_token():
    scene = new_scene()
    subnet_id = cdk.CfnParameter(scene.stack, "SubnetId", type="AWS::EC2::Subnet::Id").value_as_string
    subnet = ec2.Subnet.from_subnet_attributes(
        scene.stack, "Subnet", subnet_id=subnet_id, availability_zone="us-east-1b"
    )
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5en.48xlarge",
            capacity=CapacityReservation(reservation_id=ODCR, zone="us-east-1a"),
            max_nodes=1,
            subnets=[subnet],
        )
    assert_clean_message(error.value, "subnets[0]")
    assert "a subnet in us-east-1a" in str(error.value)
    assert "a subnet with a deploy-time id in us-east-1b" in str(error.value)


def test_zone_id_reservation_and_zone_name_subnet_are_not_compared():
    # A zone id (use1-az4) and a zone name (us-east-1b) cannot be compared at synthesis: no error, no guess.
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5en.48xlarge",
        capacity=CapacityReservation(reservation_id=ODCR, zone="use1-az4"),
        max_nodes=1,
        subnets=[scene.subnet_b],
    )
    assert [s.subnet_id for s in group.subnets] == [scene.subnet_b.subnet_id]


def _vpc_by_id(stack: cdk.Stack) -> ec2.IVpc:
    vpc_id = cdk.CfnParameter(stack, "VpcId", type="AWS::EC2::VPC::Id")
    return ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=vpc_id.value_as_string, availability_zones=cdk.Fn.get_azs())


def test_vpc_imported_by_id_without_subnets_needs_subnets_and_says_so():
    stack = cdk.Stack(new_app(), "ByoVpc")
    with pytest.raises(FmValidationError) as error:
        GpuEksCluster(stack, "Cluster", vpc=_vpc_by_id(stack))
    assert_clean_message(error.value, "subnets")
    assert "a VPC imported by id needs subnets=" in str(error.value)


def test_vpc_imported_by_id_with_subnets_from_a_list_parameter():
    stack = cdk.Stack(new_app(), "ByoVpc")
    ids = cdk.CfnParameter(stack, "SubnetIds", type="List<AWS::EC2::Subnet::Id>").value_as_list
    subnets = [ec2.Subnet.from_subnet_id(stack, f"Subnet{i}", cdk.Fn.select(i, ids)) for i in range(2)]
    cluster = GpuEksCluster(stack, "Cluster", vpc=_vpc_by_id(stack), subnets=subnets)
    cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=subnets[:1])
    template = Template.from_stack(stack)
    (props,) = node_group_props(template)
    assert props["Subnets"] == [{"Fn::Select": [0, {"Ref": "SubnetIds"}]}]
    cluster_props = next(iter(template.find_resources("AWS::EKS::Cluster").values()))["Properties"]
    assert {"Fn::Select": [1, {"Ref": "SubnetIds"}]} in cluster_props["ResourcesVpcConfig"]["SubnetIds"]


def test_default_subnet_needs_known_zones_when_the_reservation_names_one():
    # The VPC's private subnets have deploy-time zones: the reservation's subnet cannot be chosen at synthesis.
    stack = cdk.Stack(new_app(), "TokenZones")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=cdk.Fn.get_azs(),
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group(
            "Gpu",
            instance_type="p5en.48xlarge",
            capacity=CapacityReservation(reservation_id=ODCR, zone="us-east-1b"),
            max_nodes=1,
        )
    assert_clean_message(error.value, "subnets")
    assert "pass subnets=[the subnet in us-east-1b]" in str(error.value)
    # On-Demand (no zone): the first private subnet, as before.
    group = cluster.add_gpu_node_group("OnDemand", instance_type="p5en.48xlarge", max_nodes=1)
    assert [s.subnet_id for s in group.subnets] == ["subnet-0aaaaaaaaaaaaaaa1"]


def test_two_subnets_for_an_efa_group_are_counted_not_listed():
    stack = cdk.Stack(new_app(), "TwoSubnets")
    ids = cdk.CfnParameter(stack, "SubnetIds", type="List<AWS::EC2::Subnet::Id>").value_as_list
    subnets = [ec2.Subnet.from_subnet_id(stack, f"Subnet{i}", cdk.Fn.select(i, ids)) for i in range(2)]
    cluster = GpuEksCluster(stack, "Cluster", vpc=_vpc_by_id(stack), subnets=subnets)
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=subnets)
    assert_clean_message(error.value, "subnets")
    assert "got '2 subnets'" in str(error.value)


# --- 2. Deploy-time values --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def token_scene():
    """An environment-agnostic stack where ids, names, counts and zones are CloudFormation parameters."""
    app = new_app()
    stack = cdk.Stack(app, "EksTokens")

    def param(name: str, type_: str = "String", **kwargs: Any) -> cdk.CfnParameter:
        return cdk.CfnParameter(stack, name, type=type_, **kwargs)

    p = {
        "vpc": param("VpcId", "AWS::EC2::VPC::Id"),
        "subnets": param("SubnetIds", "List<AWS::EC2::Subnet::Id>"),
        "gpu_subnet": param("GpuSubnetId", "AWS::EC2::Subnet::Id"),
        "cluster_name": param("ClusterName"),
        "max_nodes": param("MaxNodes", "Number", min_value=1),
        "reserved": param("ReservedInstances", "Number", min_value=1),
        "root_gib": param("RootVolumeGiB", "Number", min_value=8),
        "min_nodes": param("MinNodes", "Number", min_value=0),
        "system_nodes": param("SystemNodes", "Number", min_value=1),
        "reservation": param("ReservationId"),
        "zone": param("ReservationZone", "AWS::EC2::AvailabilityZone::Name"),
        "team": param("Team"),
        "nodegroup_name": param("NodegroupName"),
        "domain_nodes": param("DomainNodes", "Number", min_value=0),
        "fs_id": param("FileSystemId"),
        "fs_dns": param("FileSystemDnsName"),
        "fs_mount": param("FileSystemMountName"),
        "fs_sg": param("FileSystemSecurityGroupId", "AWS::EC2::SecurityGroup::Id"),
    }
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id=p["vpc"].value_as_string, availability_zones=cdk.Fn.get_azs()
    )
    ids = p["subnets"].value_as_list
    subnets = [ec2.Subnet.from_subnet_id(stack, f"Subnet{i}", cdk.Fn.select(i, ids)) for i in range(2)]
    cluster = GpuEksCluster(
        stack,
        "Cluster",
        vpc=vpc,
        subnets=subnets,
        cluster_name=p["cluster_name"].value_as_string,
        system_node_group=SystemNodeGroupOptions(
            min_nodes=p["system_nodes"].value_as_number,
            max_nodes=p["system_nodes"].value_as_number,
            desired_nodes=p["system_nodes"].value_as_number,
        ),
        tags={"team": p["team"].value_as_string},
    )
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5en.48xlarge",
        capacity=CapacityReservation(
            reservation_id=p["reservation"].value_as_string,
            zone=p["zone"].value_as_string,
            instance_count=p["reserved"].value_as_number,
        ),
        root_volume_size_gib=p["root_gib"].value_as_number,
        max_nodes=p["max_nodes"].value_as_number,
        min_nodes=p["min_nodes"].value_as_number,
        subnets=[ec2.Subnet.from_subnet_id(stack, "GpuSubnet", p["gpu_subnet"].value_as_string)],
        labels={"fmconstructs.io/team": p["team"].value_as_string},
        node_group_name=p["nodegroup_name"].value_as_string,
    )
    file_system = LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Lustre",
        file_system_id=p["fs_id"].value_as_string,
        dns_name=p["fs_dns"].value_as_string,
        mount_name=p["fs_mount"].value_as_string,
        security_group=ec2.SecurityGroup.from_security_group_id(stack, "FsSg", p["fs_sg"].value_as_string),
        storage_capacity_gib=4800,
        deployment_type=None,
        efa_enabled=True,
        efa_security_group=cluster.efa_security_group,
    )
    cluster.add_lustre_volume("Volume", file_system, name="fsx", namespace="training", create_namespace=True)
    cluster.add_compute_domain("Domain", name="domain", num_nodes=p["domain_nodes"].value_as_number)
    return stack, cluster, group, Template.from_stack(stack)


def test_everything_is_a_token_synthesizes(token_scene):
    _, _, _, template = token_scene
    (props,) = node_group_props(template)
    assert props["ScalingConfig"] == {
        "MinSize": {"Ref": "MinNodes"},
        "MaxSize": {"Ref": "MaxNodes"},
        "DesiredSize": {"Ref": "MaxNodes"},
    }
    assert props["Subnets"] == [{"Ref": "GpuSubnetId"}]
    assert props["NodegroupName"] == {"Ref": "NodegroupName"}
    assert props["Labels"]["fmconstructs.io/team"] == {"Ref": "Team"}
    (data,) = launch_template_data(template)
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": {"Ref": "ReservationId"}
    }
    assert data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == {"Ref": "RootVolumeGiB"}
    cluster = next(iter(template.find_resources("AWS::EKS::Cluster").values()))["Properties"]
    assert cluster["Name"] == {"Ref": "ClusterName"}
    system = [r["Properties"] for r in template.find_resources("AWS::EKS::Nodegroup").values()]
    assert {
        "MinSize": {"Ref": "SystemNodes"},
        "MaxSize": {"Ref": "SystemNodes"},
        "DesiredSize": {"Ref": "SystemNodes"},
    } in [p["ScalingConfig"] for p in system]
    manifests = json.dumps(template.find_resources("Custom::AWSCDK-EKS-KubernetesResource"))
    assert '"Ref": "DomainNodes"' in manifests


def test_token_counts_keep_their_tokens_and_unknown_totals(token_scene):
    _, _, group, _ = token_scene
    assert cdk.Token.is_unresolved(group.max_nodes)
    assert group.desired_nodes is group.max_nodes
    assert group.total_gpus is None


def test_a_token_node_count_on_efa_lustre_warns_instead_of_failing(token_scene):
    stack = token_scene[0]
    warnings_found = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp(WarningId.LUSTRE_EFA_CONNECTIONS_UNKNOWN.value)
    )
    assert warnings_found


def test_no_raw_token_in_the_template_text(token_scene):
    text = json.dumps(token_scene[3].to_json())
    assert "${Token[" not in text and "e+289" not in text


@pytest.mark.parametrize("parameter", ["max_nodes", "min_nodes", "desired_nodes"])
def test_number_tokens_are_never_compared_with_known_counts(parameter):
    # A reservation of 2 instances and a Capacity Block's fixed-size rule: the token count is not compared with them.
    scene = new_scene()
    token = cdk.CfnParameter(scene.stack, "Count", type="Number").value_as_number
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    options: dict[str, Any] = {"max_nodes": 2, parameter: token}
    group = cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5en.48xlarge",
        capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
        subnets=[scene.subnet_a],
        **options,
    )
    assert getattr(group, parameter) is token
    scene.template()


@pytest.mark.parametrize(
    ("parameter", "value_kind"),
    [("efa_interface_count", "number"), ("efa_interfaces_for_lustre", "number")],
)
def test_counts_that_shape_the_template_must_be_known_and_say_so(parameter, value_kind):
    scene = new_scene()
    token = cdk.CfnParameter(scene.stack, "Count", type="Number").value_as_number
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=1, **{parameter: token})
    assert_clean_message(error.value, parameter)
    assert "a number known at synthesis" in str(error.value)
    assert "a deploy-time value" in str(error.value)


# --- 3. Placement groups ---------------------------------------------------------------------------------------


def _placement_warnings(stack: cdk.Stack, warning: WarningId) -> list[Any]:
    return Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(warning.value))


def test_efa_groups_get_no_placement_group_unless_asked():
    # Before: every EFA group off a Capacity Block got a new cluster placement group by default.
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[scene.subnet_a])
    assert group.placement_group is None
    template = scene.template()
    assert template.find_resources("AWS::EC2::PlacementGroup") == {}
    assert all("Placement" not in data for data in launch_template_data(template))


def test_use_placement_group_creates_one_on_demand_without_warning():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[scene.subnet_a], use_placement_group=True
    )
    assert group.placement_group is not None
    template = scene.template()
    template.resource_count_is("AWS::EC2::PlacementGroup", 1)
    (data,) = launch_template_data(template)
    assert "GroupName" in data["Placement"]
    assert _placement_warnings(scene.stack, WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION) == []


def test_none_for_use_placement_group_is_the_old_default_and_means_no_group():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[scene.subnet_a], use_placement_group=None
    )
    assert group.placement_group is None


@pytest.mark.parametrize("how", ["new", "given"])
@pytest.mark.parametrize(
    "capacity",
    [
        CapacityReservation(reservation_id=ODCR, zone="us-east-1a"),
        CapacityReservation(resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/odcrs"),
    ],
    ids=["by-id", "by-group"],
)
def test_placement_group_with_an_odcr_not_known_to_be_in_it_warns(how, capacity):
    # EC2 User Guide "cr-cpg": capacity is reserved in a cluster placement group only by a reservation created in it.
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    options: dict[str, Any] = (
        {"use_placement_group": True} if how == "new" else {"placement_group": ClusterPlacementGroup(scene.stack, "Pg")}
    )
    cluster.add_gpu_node_group(
        "Gpu", instance_type="p5en.48xlarge", capacity=capacity, max_nodes=1, subnets=[scene.subnet_a], **options
    )
    found = _placement_warnings(scene.stack, WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION)
    assert len(found) == 1
    assert found[0].id.endswith("/Cluster/Gpu")
    assert "Capacity Reservations in cluster placement groups" in str(found[0].entry.data)


def test_placement_group_the_reservation_is_known_to_be_in_does_not_warn():
    # A reservation created in the placement group (CfnCapacityReservation.placement_group_arn): the capacity names
    # the group, so launches into it use the reservation.
    @dataclasses.dataclass(frozen=True)
    class InPlacementGroup(CapacityReservation):
        placement_group_arn: str | None = None

    scene = new_scene()
    pg = ClusterPlacementGroup(scene.stack, "Pg")
    reservation = ec2.CfnCapacityReservation(
        scene.stack,
        "Odcr",
        instance_type="p5en.48xlarge",
        instance_platform="Linux/UNIX",
        instance_count=1,
        availability_zone="us-east-1a",
        placement_group_arn=pg.placement_group_arn,
        instance_match_criteria="targeted",
    )
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5en.48xlarge",
        capacity=InPlacementGroup(reservation_id=reservation.ref, placement_group_arn=pg.placement_group_arn),
        max_nodes=1,
        subnets=[scene.subnet_a],
        placement_group=pg,
    )
    assert _placement_warnings(scene.stack, WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION) == []


def test_placement_group_on_a_capacity_block_keeps_the_block_warning():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group(
        "Gpu",
        instance_type="p5en.48xlarge",
        capacity=CapacityBlock(reservation_id=BLOCK),
        max_nodes=2,
        subnets=[scene.subnet_a],
        use_placement_group=True,
    )
    assert _placement_warnings(scene.stack, WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK)
    assert _placement_warnings(scene.stack, WarningId.PLACEMENT_GROUP_WITH_CAPACITY_RESERVATION) == []


# --- 4. One vocabulary ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vocabulary_cluster():
    scene = new_scene("EksVocabulary")
    return scene, GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)


def test_max_nodes_is_required(vocabulary_cluster):
    scene, cluster = vocabulary_cluster
    with pytest.raises(FmTypeError) as error:
        cluster.add_gpu_node_group(next_id(), instance_type="p5en.48xlarge", subnets=[scene.subnet_a])
    assert_clean_message(error.value, "max_nodes")


def test_system_node_group_options_use_the_new_names():
    options = SystemNodeGroupOptions(min_nodes=1, max_nodes=3, desired_nodes=2)
    assert (options.min_nodes, options.max_nodes, options.desired_nodes) == (1, 3, 2)
    assert SystemNodeGroupOptions() == SystemNodeGroupOptions(min_nodes=2, max_nodes=4, desired_nodes=2)


def test_system_node_group_scaling_config_from_the_new_names():
    scene = new_scene()
    GpuEksCluster(
        scene.stack,
        "Cluster",
        vpc=scene.vpc,
        system_node_group=SystemNodeGroupOptions(min_nodes=1, max_nodes=3, desired_nodes=1),
    )
    groups = [r["Properties"] for r in scene.template().find_resources("AWS::EKS::Nodegroup").values()]
    assert [g["ScalingConfig"] for g in groups] == [{"MinSize": 1, "MaxSize": 3, "DesiredSize": 1}]


@pytest.mark.parametrize(
    ("efa_cards", "cards"),
    [
        (EfaCardSelection.RECOMMENDED, [1, 5, 9, 13]),
        (EfaCardSelection.EVERY_GPU_CARD, [1, 3, 5, 7, 9, 11, 13, 15]),
        (EfaCardSelection.ALL, list(range(1, 17))),
    ],
)
def test_efa_cards_reach_the_launch_template(efa_cards, cards):
    # EC2 User Guide efa-acc-inst-types#efa-for-p6e: 4 x 400 Gbps (RECOMMENDED) or 8 x 200 Gbps (EVERY_GPU_CARD).
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "Gb200",
        instance_type="p6e-gb200.36xlarge",
        capacity=UltraServerCapacityBlock(resource_group_arn=GB200_ARN),
        max_nodes=18,
        subnets=[scene.subnet_a],
        efa_cards=efa_cards,
    )
    assert group.efa_interface_count == len(cards)
    (data,) = launch_template_data(scene.template())
    efa = [i["NetworkCardIndex"] for i in data["NetworkInterfaces"] if i["InterfaceType"] in ("efa", "efa-only")]
    assert sorted(efa) == cards


def test_efa_connection_budget_error_names_max_nodes():
    # FSx for Lustre User Guide "Configuring EFA clients": 1,024 EFA connections per file system.
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = LustreFileSystem(
        scene.stack,
        "EfaFs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=cluster.efa_security_group,
    )
    cluster.add_lustre_volume("Volume", fs, name="fsx")
    # Issue 18: refused at construction (every count is known).
    with pytest.raises(
        FmValidationError, match=r"Cluster/Big \(129 nodes x 8 EFA interfaces = 1,032\).*Lower max_nodes"
    ):
        cluster.add_gpu_node_group("Big", instance_type="p5en.48xlarge", max_nodes=129, subnets=[scene.subnet_a])


# --- 5. Types and bad values: a table per public constructor and method ---------------------------------------


@pytest.fixture(scope="module")
def rules():
    """One cluster (and a file system) that every invalid call is tried against; nothing is synthesized."""
    scene = new_scene("EksInputRules")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    role = iam.Role.from_role_arn(scene.stack, "Role", "arn:aws:iam::123456789012:role/admin")
    return scene, cluster, fs, role


NUMBER_TOKEN = "NUMBER_TOKEN"  # replaced by a CfnParameter number in the tests that need one
STRING_TOKEN = "STRING_TOKEN"


def _resolve(scene, value):
    if value == NUMBER_TOKEN:
        return cdk.CfnParameter(scene.stack, next_id("Num"), type="Number").value_as_number
    if value == STRING_TOKEN:
        return cdk.CfnParameter(scene.stack, next_id("Str")).value_as_string
    if value == "SUBNET":
        return scene.subnet_a
    return value


BAD_NODE_GROUP = [
    # (option, value, parameter named in the message, is a TypeError)
    ("instance_type", 5, "instance_type", True),
    ("instance_type", None, "instance_type", True),
    ("instance_type", "p5en.48xlarge\n", "instance_type", False),
    ("instance_type", "", "instance_type", False),
    ("max_nodes", "2", "max_nodes", True),
    ("max_nodes", True, "max_nodes", True),
    ("max_nodes", NAN, "max_nodes", False),
    ("max_nodes", INF, "max_nodes", False),
    ("max_nodes", -INF, "max_nodes", False),
    ("max_nodes", 2.5, "max_nodes", False),
    ("max_nodes", 0, "max_nodes", False),
    ("max_nodes", [2], "max_nodes", True),
    ("min_nodes", True, "min_nodes", True),
    ("min_nodes", NAN, "min_nodes", False),
    ("min_nodes", "0", "min_nodes", True),
    ("min_nodes", -1, "min_nodes", False),
    ("desired_nodes", False, "desired_nodes", True),
    ("desired_nodes", INF, "desired_nodes", False),
    ("desired_nodes", 1.5, "desired_nodes", False),
    ("capacity", "ON_DEMAND", "capacity", True),
    ("capacity", {"reservation_id": ODCR}, "capacity", True),
    ("subnets", "subnet-0aaaaaaaaaaaaaaa1", "subnets", True),
    ("subnets", ["subnet-0aaaaaaaaaaaaaaa1"], "subnets[0]", True),
    ("subnets", "SUBNET", "subnets", True),
    ("subnets", [], "subnets", False),
    ("placement_group", "my-pg", "placement_group", True),
    ("use_placement_group", "yes", "use_placement_group", True),
    ("use_placement_group", 1, "use_placement_group", True),
    ("efa_interface_count", True, "efa_interface_count", True),
    ("efa_interface_count", NAN, "efa_interface_count", False),
    ("efa_interface_count", "4", "efa_interface_count", True),
    ("efa_interface_count", NUMBER_TOKEN, "efa_interface_count", False),
    ("efa_cards", "recommended", "efa_cards", True),
    ("efa_cards", None, "efa_cards", True),
    ("labels", "team=a", "labels", True),
    ("labels", [("team", "a")], "labels", True),
    ("labels", {"team": 1}, "labels['team']", True),
    ("labels", {"team": "a\n"}, "labels['team']", False),
    ("labels", {"team": ""}, "labels['team']", False),
    ("labels", {"team": "a" * 64}, "labels['team']", False),
    ("labels", {"Bad Key": "a"}, "labels key", False),
    ("labels", {"a/b/c": "a"}, "labels key", False),
    ("labels", {"-a": "a"}, "labels key", False),
    ("labels", {"example.com/" + "a" * 60: "a"}, "labels key", False),
    ("labels", {"team\n": "a"}, "labels key", False),
    ("labels", {5: "a"}, "labels key", True),
    ("taints", "nvidia.com/gpu", "taints", True),
    ("taints", [{"key": "k", "effect": "NO_SCHEDULE"}], "taints[0]", True),
    ("taints", [eks.TaintSpec(key="bad key", effect=eks.TaintEffect.NO_SCHEDULE)], "taints[0].key", False),
    ("taints", [eks.TaintSpec(key="k" * 64, effect=eks.TaintEffect.NO_SCHEDULE)], "taints[0].key", False),
    ("taints", [eks.TaintSpec(key="k", value="v\n", effect=eks.TaintEffect.NO_SCHEDULE)], "taints[0].value", False),
    ("taints", [eks.TaintSpec(key="k")], "taints[0].effect", False),
    ("taints", [eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE)], "taints[0].key", False),
    ("instance_store_raid0", "true", "instance_store_raid0", True),
    ("instance_store_raid0", None, "instance_store_raid0", True),
    ("root_volume_size_gib", NAN, "root_volume_size_gib", False),
    ("root_volume_size_gib", True, "root_volume_size_gib", True),
    ("root_volume_size_gib", "200", "root_volume_size_gib", True),
    ("root_volume_size_gib", 0, "root_volume_size_gib", False),
    ("root_volume_size_gib", 70000, "root_volume_size_gib", False),
    ("node_group_name", "gpu\n", "node_group_name", False),
    ("node_group_name", "-gpu", "node_group_name", False),
    ("node_group_name", "gpu nodes", "node_group_name", False),
    ("node_group_name", "g" * 64, "node_group_name", False),
    ("node_group_name", 5, "node_group_name", True),
    ("node_role", "arn:aws:iam::123456789012:role/nodes", "node_role", True),
    ("enable_node_auto_repair", None, "enable_node_auto_repair", True),
    ("enable_node_auto_repair", "false", "enable_node_auto_repair", True),
    ("efa_interfaces_for_lustre", True, "efa_interfaces_for_lustre", True),
    ("efa_interfaces_for_lustre", NAN, "efa_interfaces_for_lustre", False),
    ("efa_interfaces_for_lustre", "8", "efa_interfaces_for_lustre", True),
    ("efa_interfaces_for_lustre", NUMBER_TOKEN, "efa_interfaces_for_lustre", False),
]


@pytest.mark.parametrize(
    ("option", "value", "parameter", "type_error"),
    BAD_NODE_GROUP,
    ids=[f"{o}={v!r}"[:60] for o, v, _, _ in BAD_NODE_GROUP],
)
def test_gpu_node_group_refuses_bad_input(rules, option, value, parameter, type_error):
    scene, cluster, _, _ = rules
    options: dict[str, Any] = {"instance_type": "p5en.48xlarge", "max_nodes": 2, "subnets": [scene.subnet_a]}
    options[option] = _resolve(scene, value)
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group(next_id(), **options)
    assert isinstance(error.value, TypeError) == type_error, str(error.value)
    assert_clean_message(error.value, parameter)


@pytest.mark.parametrize("cluster_value", ["Cluster", None, 5])
def test_gpu_node_group_needs_a_gpu_eks_cluster(rules, cluster_value):
    scene = rules[0]
    with pytest.raises(FmTypeError) as error:
        GpuNodeGroup(scene.stack, next_id(), cluster=cluster_value, instance_type="p5en.48xlarge", max_nodes=1)
    assert_clean_message(error.value, "cluster")


def test_add_gpu_node_group_refuses_a_cluster_option(rules):
    _, cluster, _, _ = rules
    with pytest.raises(FmTypeError, match=r"^cluster must be omitted"):
        cluster.add_gpu_node_group(next_id(), instance_type="p5en.48xlarge", max_nodes=1, cluster=cluster)


BAD_CLUSTER = [
    ("id", 5, "id", True),
    ("vpc", "vpc-0123456789abcdef0", "vpc", True),
    ("vpc", None, "vpc", True),
    ("version", "1.35.0", "version", False),  # "1.35" itself is accepted (issue 18: mapped to aws_eks_v2)
    ("version", 1.35, "version", True),
    ("cluster_name", "bad name", "cluster_name", False),
    ("cluster_name", "training\n", "cluster_name", False),
    ("cluster_name", "-training", "cluster_name", False),
    ("cluster_name", "t" * 101, "cluster_name", False),
    ("cluster_name", 5, "cluster_name", True),
    ("subnets", "subnet-0aaaaaaaaaaaaaaa1", "subnets", True),
    ("subnets", ["subnet-0aaaaaaaaaaaaaaa1"], "subnets[0]", True),
    ("subnets", [], "subnets", False),
    ("public_endpoint_cidrs", "203.0.113.0/24", "public_endpoint_cidrs", True),
    ("public_endpoint_cidrs", ["203.0.113.0/24\n"], "public_endpoint_cidrs[0]", False),
    ("public_endpoint_cidrs", ["203.0.113.7"], "public_endpoint_cidrs[0]", False),
    ("public_endpoint_cidrs", ["300.0.113.0/24"], "public_endpoint_cidrs[0]", False),
    ("public_endpoint_cidrs", [24], "public_endpoint_cidrs[0]", True),
    ("public_endpoint_cidrs", [], "public_endpoint_cidrs", False),
    ("admin_roles", "arn:aws:iam::123456789012:role/admin", "admin_roles", True),
    ("admin_roles", ["arn:aws:iam::123456789012:role/admin"], "admin_roles[0]", True),
    ("secrets_encryption_key", "alias/eks", "secrets_encryption_key", True),
    ("control_plane_logging", ["api"], "control_plane_logging[0]", True),
    ("control_plane_logging", "api", "control_plane_logging", True),
    ("system_node_group", {"instance_type": "m7i.xlarge"}, "system_node_group", True),
    ("node_role", "arn:aws:iam::123456789012:role/nodes", "node_role", True),
    ("kubectl_layer", "arn:aws:lambda:us-east-1:123456789012:layer:kubectl:1", "kubectl_layer", True),
    ("efa_security_group", "sg-0123456789abcdef0", "efa_security_group", True),
    ("tags", "team=a", "tags", True),
    ("tags", {"team": 1}, "tags['team']", True),
    ("tags", {"": "a"}, "tags key", False),
    ("tags", {"k" * 129: "a"}, "tags key", False),
    ("tags", {"team": "v" * 257}, "tags['team']", False),
    ("tags", {f"k{i}": "v" for i in range(51)}, "tags", False),
]


@pytest.mark.parametrize(
    ("option", "value", "parameter", "type_error"),
    BAD_CLUSTER,
    ids=[f"{o}={v!r}"[:60] for o, v, _, _ in BAD_CLUSTER],
)
def test_gpu_eks_cluster_refuses_bad_input(rules, option, value, parameter, type_error):
    scene = rules[0]
    options: dict[str, Any] = {"vpc": scene.vpc}
    construct_id = next_id("Cluster")
    if option == "id":
        construct_id = value
    else:
        options[option] = value
    with pytest.raises(FmValidationError) as error:
        GpuEksCluster(scene.stack, construct_id, **options)
    assert isinstance(error.value, TypeError) == type_error, str(error.value)
    assert_clean_message(error.value, parameter)


def test_a_public_endpoint_open_to_the_internet_warns_for_any_spelling():
    scene = new_scene()
    GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, public_endpoint_cidrs=["0.0.0.0/0"])
    found = Annotations.from_stack(scene.stack).find_warning(
        "*", Match.string_like_regexp("eks-public-endpoint-open-to-internet")
    )
    assert found


BAD_SYSTEM_NODE_GROUP = [
    ("instance_type", "m7i", "instance_type", False),
    ("instance_type", "m7i.xlarge\n", "instance_type", False),
    ("instance_type", 5, "instance_type", True),
    ("min_nodes", True, "min_nodes", True),
    ("min_nodes", NAN, "min_nodes", False),
    ("min_nodes", -1, "min_nodes", False),
    ("max_nodes", 0, "max_nodes", False),
    ("max_nodes", INF, "max_nodes", False),
    ("max_nodes", "4", "max_nodes", True),
    ("desired_nodes", 10, "desired_nodes", False),
    ("desired_nodes", 2.5, "desired_nodes", False),
    ("min_nodes", 5, "min_nodes", False),
    ("labels", "role=system", "labels", True),
    ("labels", {"role": "system\n"}, "labels['role']", False),
]


@pytest.mark.parametrize(
    ("option", "value", "parameter", "type_error"),
    BAD_SYSTEM_NODE_GROUP,
    ids=[f"{o}={v!r}"[:60] for o, v, _, _ in BAD_SYSTEM_NODE_GROUP],
)
def test_system_node_group_options_refuse_bad_input(option, value, parameter, type_error):
    with pytest.raises(FmValidationError) as error:
        SystemNodeGroupOptions(**{option: value})
    assert isinstance(error.value, TypeError) == type_error, str(error.value)
    assert_clean_message(error.value, parameter)


BAD_METHOD_CALLS = [
    # (method, kwargs, parameter, is a TypeError)
    ("add_nvidia_device_plugin", {"version": 1.0}, "version", True),
    ("add_nvidia_device_plugin", {"version": "0.17.1\n"}, "version", False),
    ("add_nvidia_device_plugin", {"efa_plugin": "yes"}, "efa_plugin", True),
    ("add_nvidia_device_plugin", {"gpu_feature_discovery": 1}, "gpu_feature_discovery", True),
    ("add_efa_device_plugin", {"instance_types": "p5en.48xlarge"}, "instance_types", True),
    ("add_efa_device_plugin", {"instance_types": []}, "instance_types", False),
    ("add_efa_device_plugin", {"instance_types": ["p5en.48xlarge\n"]}, "instance_types[0]", False),
    ("add_efa_device_plugin", {"instance_types": [5]}, "instance_types[0]", True),
    ("add_efa_device_plugin", {"version": " "}, "version", False),
    ("add_dcgm_exporter", {"service_monitor": "no"}, "service_monitor", True),
    ("add_dcgm_exporter", {"version": 4}, "version", True),
    ("add_nvidia_dra_driver", {"version": ["25.8.0"]}, "version", True),
    ("add_fsx_csi_driver", {"addon_version": "v1.5.1-eksbuild.1\n"}, "addon_version", False),
    ("add_lustre_volume", {"id": 5}, "id", True),
    ("add_lustre_volume", {"file_system": "fs-0123456789abcdef0"}, "file_system", True),
    ("add_lustre_volume", {"name": "Bad_Name"}, "name", False),
    ("add_lustre_volume", {"name": "fsx\n"}, "name", False),
    ("add_lustre_volume", {"name": "a..b"}, "name", False),
    ("add_lustre_volume", {"name": 5}, "name", True),
    ("add_lustre_volume", {"namespace": "n" * 64}, "namespace", False),
    ("add_lustre_volume", {"namespace": "training\n"}, "namespace", False),
    ("add_lustre_volume", {"namespace": "a.b"}, "namespace", False),
    ("add_lustre_volume", {"create_namespace": "yes"}, "create_namespace", True),
    ("add_lustre_volume", {"mount_options": "flock"}, "mount_options", True),
    ("add_lustre_volume", {"mount_options": ["flock,ro"]}, "mount_options[0]", False),
    ("add_lustre_volume", {"mount_options": ["flock\n"]}, "mount_options[0]", False),
    ("add_lustre_volume", {"mount_options": []}, "mount_options", False),
    ("add_lustre_volume", {"host_mount_point": "fsx"}, "host_mount_point", False),
    ("add_lustre_volume", {"host_mount_point": "/fsx\n"}, "host_mount_point", False),
    ("add_lustre_volume", {"host_mount_point": "/a/../b"}, "host_mount_point", False),
    ("add_lustre_volume", {"host_mount_point": ["/fsx"]}, "host_mount_point", True),
    ("add_compute_domain", {"id": None}, "id", True),
    ("add_compute_domain", {"name": "Domain"}, "name", False),
    ("add_compute_domain", {"name": "domain\n"}, "name", False),
    ("add_compute_domain", {"num_nodes": True}, "num_nodes", True),
    ("add_compute_domain", {"num_nodes": NAN}, "num_nodes", False),
    ("add_compute_domain", {"num_nodes": -1}, "num_nodes", False),
    ("add_compute_domain", {"num_nodes": "2"}, "num_nodes", True),
    ("add_compute_domain", {"namespace": "ns\n"}, "namespace", False),
    ("grant_admin", {"role": "arn:aws:iam::123456789012:role/admin"}, "role", True),
]


@pytest.mark.parametrize(
    ("method", "kwargs", "parameter", "type_error"),
    BAD_METHOD_CALLS,
    ids=[f"{m}-{k!r}"[:70] for m, k, _, _ in BAD_METHOD_CALLS],
)
def test_cluster_methods_refuse_bad_input(rules, method, kwargs, parameter, type_error):
    _, cluster, fs, _ = rules
    base: dict[str, dict[str, Any]] = {
        "add_lustre_volume": {"id": next_id("Volume"), "file_system": fs, "name": "fsx"},
        "add_compute_domain": {"id": next_id("Domain"), "name": "domain"},
    }
    call = {**base.get(method, {}), **kwargs}
    with pytest.raises(FmValidationError) as error:
        getattr(cluster, method)(**call)
    assert isinstance(error.value, TypeError) == type_error, str(error.value)
    assert_clean_message(error.value, parameter)


VOLUME = EksStaticVolume(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
    storage_capacity_gib=1200,
)

BAD_FUNCTION_CALLS = [
    (lustre_static_volume_manifests, {"volume": "fs-1", "name": "fsx"}, "volume", True),
    (lustre_static_volume_manifests, {"volume": VOLUME, "name": 5}, "name", True),
    (lustre_static_volume_manifests, {"volume": VOLUME, "name": "fsx\n"}, "name", False),
    (lustre_static_volume_manifests, {"volume": VOLUME, "name": "f" * 254}, "name", False),
    (lustre_static_volume_manifests, {"volume": VOLUME, "name": "fsx", "namespace": None}, "namespace", True),
    (
        lustre_static_volume_manifests,
        {"volume": VOLUME, "name": "fsx", "create_namespace": 1},
        "create_namespace",
        True,
    ),
    (
        lustre_persistent_volume_claim,
        {"volume": VOLUME, "name": "fsx", "namespace": "default", "volume_name": "Bad"},
        "volume_name",
        False,
    ),
    (compute_domain_manifest, {"name": "d", "namespace": "default", "num_nodes": INF}, "num_nodes", False),
    (compute_domain_manifest, {"name": "d", "namespace": "default", "num_nodes": 2.5}, "num_nodes", False),
    (compute_domain_manifest, {"name": "d", "namespace": "default", "num_nodes": False}, "num_nodes", True),
    (
        compute_domain_manifest,
        {"name": "d", "namespace": "default", "channel_claim_template": "Bad"},
        "channel_claim_template",
        False,
    ),
    (compute_domain_manifest, {"name": "d" * 250, "namespace": "default"}, "channel_claim_template", False),
    (efa_device_plugin_values, {"instance_types": "p5.48xlarge"}, "instance_types", True),
    (efa_device_plugin_values, {"instance_types": ("p5.48xlarge", None)}, "instance_types[1]", True),
    (nvidia_device_plugin_values, {"efa_plugin": None}, "efa_plugin", True),
    (dcgm_exporter_values, {"port": True}, "port", True),
    (dcgm_exporter_values, {"port": 0}, "port", False),
    (dcgm_exporter_values, {"port": 70000}, "port", False),
    (dcgm_exporter_values, {"port": NAN}, "port", False),
    (dcgm_exporter_values, {"service_monitor": "true"}, "service_monitor", True),
]


@pytest.mark.parametrize(
    ("function", "kwargs", "parameter", "type_error"),
    BAD_FUNCTION_CALLS,
    ids=[f"{f.__name__}-{k!r}"[:70] for f, k, _, _ in BAD_FUNCTION_CALLS],
)
def test_manifest_and_addon_helpers_refuse_bad_input(function, kwargs, parameter, type_error):
    with pytest.raises(FmValidationError) as error:
        function(**kwargs)
    assert isinstance(error.value, TypeError) == type_error, str(error.value)
    assert_clean_message(error.value, parameter)


def test_helm_chart_pin_refuses_a_non_string_version():
    pin = HelmChartPin("c", "https://example.com/charts", "1.0.0", "ns", "release")
    with pytest.raises(FmTypeError) as error:
        pin.with_version(5)  # type: ignore[arg-type]
    assert_clean_message(error.value, "version")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"name": "a.b-c", "namespace": "x1"}, "a.b-c"),
        ({"name": "f" * 253, "namespace": "n" * 63}, "f" * 253),
    ],
)
def test_kubernetes_names_at_the_limits_pass(kwargs, expected):
    manifests = lustre_static_volume_manifests(VOLUME, **kwargs)
    assert manifests[0]["metadata"]["name"] == expected


@pytest.mark.parametrize(
    "labels",
    [
        {"team": "a"},
        {"example.com/team": "A_b.c-1"},
        {"a" * 63: "b" * 63},
        {"k8s.io/x": "1"},
    ],
)
def test_valid_labels_pass(rules, labels):
    scene, cluster, _, _ = rules
    group = cluster.add_gpu_node_group(
        next_id(), instance_type="p5en.48xlarge", max_nodes=1, subnets=[scene.subnet_a], labels=labels
    )
    assert labels.items() <= group.labels.items()


def test_jsii_runtime_survives_non_finite_numbers(rules):
    # NaN/inf never reach jsii: after the refusals above, CDK calls still work.
    _, cluster, _, _ = rules
    for value in (NAN, INF, -INF):
        with pytest.raises(FmValidationError):
            cluster.add_gpu_node_group(next_id(), instance_type="p5en.48xlarge", max_nodes=value)
    assert cdk.Stack.of(cluster).resolve(cdk.Fn.join("-", ["a", "b"])) == "a-b"


def test_error_text_for_a_string_token_is_never_raw(rules):
    scene, cluster, _, _ = rules
    name = cdk.CfnParameter(scene.stack, next_id("Name")).value_as_string
    # A token name passes (checked by Kubernetes at deploy time); the same token in a bad position is named.
    cluster.add_compute_domain(next_id("Domain"), name=name, namespace="default")
    with pytest.raises(FmValidationError) as error:
        cluster.add_lustre_volume(next_id("Volume"), rules[2], name="fsx", host_mount_point=name)
    assert_clean_message(error.value, "host_mount_point")
    assert re.search(r"a deploy-time value", str(error.value))


def test_env_agnostic_and_env_stacks_both_accept_the_defaults():
    for env in (None, ENV):
        stack = cdk.Stack(new_app(), "Defaults", env=env)
        vpc = ec2.Vpc.from_vpc_attributes(
            stack,
            "Vpc",
            vpc_id="vpc-0123456789abcdef0",
            availability_zones=["us-east-1a"],
            private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
        )
        cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
        cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=1)
        Template.from_stack(stack)


# --- EFA-enabled Lustre: the node groups' EFA security group and zone are checked by the file system ------------


def _efa_file_system(scene, *, subnet, efa_security_group):
    return LustreFileSystem(
        scene.stack,
        next_id("EfaFs"),
        vpc=scene.vpc,
        subnet=subnet,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=efa_security_group,
    )


def test_efa_lustre_in_another_zone_than_the_gpu_nodes_is_refused():
    # Before: nothing (EFA traffic does not cross Availability Zones).
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[scene.subnet_b])
    fs = _efa_file_system(scene, subnet=scene.subnet_a, efa_security_group=cluster.efa_security_group)
    with pytest.raises(FmValidationError) as error:
        cluster.add_lustre_volume("Volume", fs, name="fsx")
    assert "us-east-1a" in str(error.value) and "us-east-1b" in str(error.value)


def test_efa_lustre_with_another_efa_security_group_is_refused():
    # Before: a warning only. A node group added after the volume is checked too.
    from fmconstructs import EfaSecurityGroup

    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    other = EfaSecurityGroup(scene.stack, "OtherEfa", vpc=scene.vpc)
    fs = _efa_file_system(scene, subnet=scene.subnet_a, efa_security_group=other)
    cluster.add_lustre_volume("Volume", fs, name="fsx")
    with pytest.raises(FmValidationError) as error:
        cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[scene.subnet_a])
    assert "efa_security_group" in str(error.value)


def test_efa_lustre_with_zoneless_gpu_subnets_is_not_compared():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    subnet = ec2.Subnet.from_subnet_id(scene.stack, "Zoneless", "subnet-0cccccccccccccc03")
    cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, subnets=[subnet])
    fs = _efa_file_system(scene, subnet=scene.subnet_a, efa_security_group=cluster.efa_security_group)
    cluster.add_lustre_volume("Volume", fs, name="fsx")
    scene.template()
