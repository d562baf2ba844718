"""Issue 10's first list, bullet by bullet, as a new user met it: each test failed on 0.1.0 (see each module's own
tests for the full tables; this file is the acceptance view across constructs)."""

from __future__ import annotations

import math

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    EfaSecurityGroup,
    FmTypeError,
    FmValidationError,
    GpuLaunchTemplate,
    OnDemand,
    UltraServerCapacityBlock,
)
from fmconstructs.eks import GpuEksCluster
from fmconstructs.pcs import FileSystemMount, PcsAmi, PcsCluster
from fmconstructs.storage import (
    LustreFileSystem,
    LustreMetadataConfiguration,
    lustre_mount_commands,
    size_for_throughput,
)

from tests.conftest import ENV, new_app, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _zoneless_subnets(stack: cdk.Stack) -> dict[str, ec2.ISubnet]:
    parameter = cdk.CfnParameter(stack, "SubnetId", type="AWS::EC2::Subnet::Id")
    return {
        "from_subnet_id": ec2.Subnet.from_subnet_id(stack, "ById", "subnet-0123456789abcdef0"),
        "from_subnet_attributes": ec2.Subnet.from_subnet_attributes(
            stack, "ByAttrs", subnet_id="subnet-0fedcba9876543210"
        ),
        "cfn_parameter": ec2.Subnet.from_subnet_id(stack, "ByParameter", parameter.value_as_string),
    }


@pytest.mark.parametrize("kind", ["from_subnet_id", "from_subnet_attributes", "cfn_parameter"])
@pytest.mark.parametrize("capacity", [OnDemand(), CapacityReservation(reservation_id="cr-0123456789abcdef0")])
def test_subnet_without_zone_works_for_every_gpu_construct(kind, capacity):
    scene = new_scene()
    subnet = _zoneless_subnets(scene.stack)[kind]
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        subnet=subnet,
        efa_security_group=efa,
        capacity=capacity,
    )
    pcs = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, subnet=subnet)
    pcs.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, capacity=capacity, subnet=subnet)
    eks = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, subnets=[subnet])
    eks.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=2, capacity=capacity, subnets=[subnet])
    template = scene.template()
    template.resource_count_is("AWS::PCS::ComputeNodeGroup", 1)
    template.resource_count_is("AWS::EKS::Nodegroup", 2)  # the system node group and the GPU group


def test_numeric_parameter_counts_are_deploy_time_values_not_numbers():
    scene = new_scene()
    count = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    reservation = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=count)
    pcs = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc)
    pcs.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, capacity=reservation, max_nodes=count)
    Template.from_stack(scene.stack).has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {"ScalingConfiguration": {"MaxInstanceCount": {"Ref": "Nodes"}, "MinInstanceCount": {"Ref": "Nodes"}}},
    )


def test_errors_name_string_tokens_as_deploy_time_values():
    scene = new_scene()
    name = cdk.CfnParameter(scene.stack, "Name").value_as_string
    with pytest.raises(FmValidationError) as raised:
        size_for_throughput(target_gbytes_per_s=float("nan"))
    assert "Token[" not in str(raised.value)
    with pytest.raises(FmValidationError) as raised:
        UltraServerCapacityBlock(reservation_id=name, ultraserver_type=name)
    assert "Token[" not in str(raised.value) and "deploy-time value" in str(raised.value)


def test_lustre_on_a_vpc_without_private_subnets_says_what_to_pass():
    app = new_app()
    stack = cdk.Stack(app, "NoPrivate", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        public_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    with pytest.raises(FmValidationError, match=r"subnet"):
        LustreFileSystem(stack, "Fs", vpc=vpc, storage_capacity_gib=1200)


@pytest.mark.parametrize("zone", ["us-east-1-dfw-2a", "use1-az4"])
def test_local_zone_names_and_zone_ids_are_accepted(zone):
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef0", zone=zone)
    assert block.zone == zone
    assert CapacityReservation(reservation_id="cr-0123456789abcdef0", zone=zone).zone == zone


def test_example_stacks_have_outputs_with_descriptions(example_stacks):
    outputs = Template.from_stack(example_stacks["FmObservability"]).find_outputs("*")
    assert "GrafanaUrl" in outputs and outputs["GrafanaUrl"].get("Description")
    for name in ("FmPcsP5", "FmEksP5en", "FmStorage"):
        found = Template.from_stack(example_stacks[name]).find_outputs("*")
        assert found and all(o.get("Description") for o in found.values()), name


def _efa_fs(scene, efa_group: EfaSecurityGroup, subnet: ec2.ISubnet | None = None) -> LustreFileSystem:
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=subnet,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=efa_group,
    )


def test_efa_file_system_with_another_efa_group_than_the_nodes_is_an_error():
    scene = new_scene()
    pcs = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc)
    fs = _efa_fs(scene, EfaSecurityGroup(scene.stack, "OtherEfa", vpc=scene.vpc))
    with pytest.raises(FmValidationError, match=r"efa_security_group"):
        pcs.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, mounts=[FileSystemMount(fs)])


def test_efa_lustre_in_another_zone_than_its_efa_clients_is_an_error():
    scene = new_scene()
    pcs = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, subnet=scene.subnet_a)
    fs = _efa_fs(scene, pcs.efa_security_group, subnet=scene.subnet_b)
    with pytest.raises(FmValidationError, match=r"zone"):
        pcs.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2, mounts=[FileSystemMount(fs)])


def test_eks_node_group_on_an_odcr_gets_no_unrelated_placement_group():
    scene = new_scene()
    eks = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    eks.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        max_nodes=2,
        subnets=[scene.subnet_a],
        capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0"),
    )
    scene.template().resource_count_is("AWS::EC2::PlacementGroup", 0)
    group = eks.add_gpu_node_group(
        "Asked",
        instance_type="p5.48xlarge",
        max_nodes=2,
        subnets=[scene.subnet_a],
        use_placement_group=True,
        capacity=CapacityReservation(reservation_id="cr-0fedcba9876543210"),
    )
    Annotations.from_stack(scene.stack).has_warning(
        f"/{group.node.path}", Match.string_like_regexp("placement-group-with-capacity-reservation")
    )


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda s: PcsCluster(s.stack, "Pcs", vpc="vpc-0123456789abcdef0"), "vpc"),
        (lambda s: PcsCluster(s.stack, "Pcs", vpc=s.vpc, slurm_version=object()), "slurm_version"),
        (
            lambda s: LustreFileSystem(
                s.stack, "Fs", vpc=s.vpc, storage_capacity_gib=1200, deployment_type="SCRATCH_2"
            ),
            "deployment_type",
        ),
        (
            lambda s: GpuEksCluster(s.stack, "Eks", vpc=s.vpc, admin_roles="arn:aws:iam::123456789012:role/admin"),
            "admin_roles",
        ),
    ],
)
def test_wrong_python_types_raise_type_errors_naming_the_parameter(call, parameter):
    with pytest.raises(TypeError, match=rf"^{parameter}\b") as raised:
        call(new_scene())
    assert isinstance(raised.value, FmTypeError)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_never_reach_jsii(value):
    scene = new_scene()
    with pytest.raises(FmValidationError):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=value)
    with pytest.raises(FmValidationError):
        PcsCluster(scene.stack, "Pcs", vpc=scene.vpc).add_gpu_node_group(
            "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=value
        )
    # The jsii runtime is still alive: later CDK calls work.
    LustreFileSystem(scene.stack, "Fs2", vpc=scene.vpc, storage_capacity_gib=1200)
    scene.app.synth()


def test_invalid_bucket_names_are_our_error():
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    with pytest.raises(FmValidationError, match=r"^bucket"):
        fs.add_data_repository("Data", bucket="Not_A_Bucket", file_system_path="/data")


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (
            lambda s: lustre_mount_commands(
                dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
                mount_name="abcdefgh",
                mount_options="defaults",
            ),
            "mount_options",
        ),
        (
            lambda s: GpuEksCluster(s.stack, "Eks", vpc=s.vpc).add_efa_device_plugin(instance_types="p5.48xlarge"),
            "instance_types",
        ),
        (
            lambda s: GpuEksCluster(s.stack, "Eks", vpc=s.vpc, public_endpoint_cidrs="10.0.0.0/8"),
            "public_endpoint_cidrs",
        ),
        (
            lambda s: GpuLaunchTemplate(
                s.stack,
                "Lt",
                instance_type="p5.48xlarge",
                vpc=s.vpc,
                efa_security_group=EfaSecurityGroup(s.stack, "Efa", vpc=s.vpc),
            ).add_user_data("echo one", ["echo", "two"]),
            "commands",
        ),
    ],
)
def test_a_str_is_never_iterated_as_a_sequence(call, parameter):
    with pytest.raises(TypeError, match=parameter):
        call(new_scene())


def test_saml_admin_values_refuse_a_bare_string():
    from fmconstructs.observability.grafana import SamlOptions

    with pytest.raises(TypeError, match="admin_role_values"):
        SamlOptions(idp_metadata_url="https://idp.example.com/metadata", admin_role_values="admins")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "ok"),
    [("ab", False), ("abc", True), ("a" * 40, True), ("a" * 41, False), ("abc\n", False)],
)
def test_pcs_cluster_name_length_is_the_apis(name, ok):
    scene = new_scene()
    if ok:
        PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, cluster_name=name)
    else:
        with pytest.raises(FmValidationError, match="cluster_name"):
            PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, cluster_name=name)


@pytest.mark.parametrize("count", [True, 2.5])
def test_bools_and_fractions_are_not_counts(count):
    scene = new_scene()
    with pytest.raises(FmValidationError, match="max_nodes"):
        PcsCluster(scene.stack, "Pcs", vpc=scene.vpc).add_gpu_node_group(
            "P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=count
        )


@pytest.mark.parametrize("path", ["/training data", "/données", "/datasets/"])
def test_data_repository_paths_the_fsx_api_allows(path):
    scene = new_scene()
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200)
    fs.add_data_repository("Data", bucket="my-training-bucket", file_system_path=path)


def test_amp_alias_with_spaces_and_prometheus_durations():
    from fmconstructs.observability import AlertThresholds, PrometheusWorkspace

    scene = new_scene()
    PrometheusWorkspace(
        scene.stack,
        "Amp",
        alias="GPU training",
        thresholds=AlertThresholds(temperature_for="1h30m", xid_window="1w", throttle_for="500ms"),
    )
    scene.template().has_resource_properties("AWS::APS::Workspace", {"Alias": "GPU training"})


def test_one_vocabulary():
    scene = new_scene()
    pcs = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc)
    group = pcs.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)
    assert group.max_nodes == 2
    assert size_for_throughput(target_gbytes_per_s=4.6875, throughput_mbps_per_tib=1000).aggregate_throughput_mbps
    assert CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a").zone == "us-east-1a"
