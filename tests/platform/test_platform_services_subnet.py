"""TrainingPlatform(services_subnet=...): GPU nodes in a Local Zone subnet, the file system, the PCS controller, login
nodes and the ParallelCluster head node in a parent-Region subnet (issue 18 section 7)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.pcs import PcsAmi
from fmconstructs.platform import (
    EksOptions,
    HyperPodOptions,
    ParallelClusterOptions,
    PcsOptions,
    PlatformStorage,
    TrainingPlatform,
)

from tests.conftest import new_app

ENV = cdk.Environment(account="123456789012", region="us-west-2")
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
LZ_SUBNET = "subnet-0aaaaaaaaaaaaaaa1"
PARENT_SUBNET = "subnet-0bbbbbbbbbbbbbbb2"
OTHER_AZ_SUBNET = "subnet-0ccccccccccccccc3"
LZ = "us-west-2-lax-1a"
TCP = PlatformStorage.for_throughput(target_gbytes_per_s=1.0, efa_enabled=False)


def _scene() -> tuple[cdk.Stack, ec2.IVpc, dict[str, ec2.ISubnet]]:
    stack = cdk.Stack(new_app(), "P", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-west-2a", "us-west-2b"],
        private_subnet_ids=[PARENT_SUBNET, OTHER_AZ_SUBNET],
    )
    subnets = {
        "lz": ec2.Subnet.from_subnet_attributes(stack, "Lz", subnet_id=LZ_SUBNET, availability_zone=LZ),
        "parent": ec2.Subnet.from_subnet_attributes(
            stack, "Parent", subnet_id=PARENT_SUBNET, availability_zone="us-west-2a"
        ),
        "lz2": ec2.Subnet.from_subnet_attributes(
            stack, "Lz2", subnet_id="subnet-0ddddddddddddddd4", availability_zone="us-west-2-lax-1b"
        ),
        "unknown": ec2.Subnet.from_subnet_id(stack, "NoZone", "subnet-0eeeeeeeeeeeeeee5"),
    }
    return stack, vpc, subnets


def _platform(orchestrator: Any, *, storage: PlatformStorage | None = TCP, **props: Any) -> TrainingPlatform:
    stack, vpc, subnets = _scene()
    for key in ("subnet", "services_subnet"):
        if isinstance(props.get(key), str) and props[key] in subnets:
            props[key] = subnets[props[key]]
    props.setdefault("subnet", subnets["lz"])
    return TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=orchestrator,
        storage=storage,
        **props,
    )


def _warnings(platform: TrainingPlatform, warning: WarningId) -> list[str]:
    found = Annotations.from_stack(cdk.Stack.of(platform)).find_warning("*", Match.string_like_regexp(warning.value))
    return [str(entry.entry.data) for entry in found]


@pytest.fixture(scope="module")
def pcs() -> tuple[TrainingPlatform, Template]:
    platform = _platform(PcsOptions(ami=AMI), services_subnet="parent")
    return platform, Template.from_stack(cdk.Stack.of(platform))


def test_pcs_controller_login_and_file_system_in_the_services_subnet(pcs: tuple[TrainingPlatform, Template]) -> None:
    platform, template = pcs
    template.has_resource_properties(
        "AWS::PCS::Cluster", {"Networking": Match.object_like({"SubnetIds": [PARENT_SUBNET]})}
    )
    template.has_resource_properties("AWS::FSx::FileSystem", {"SubnetIds": [PARENT_SUBNET]})
    groups = template.find_resources("AWS::PCS::ComputeNodeGroup")
    subnets = sorted(tuple(group["Properties"]["SubnetIds"]) for group in groups.values())
    assert subnets == [(LZ_SUBNET,), (PARENT_SUBNET,)]  # the GPU group, the login group
    assert platform.node_group.subnet is platform.subnet
    assert platform.login_node_group.subnet is platform.services_subnet


def test_pcs_gpu_launch_template_stays_in_the_local_zone(pcs: tuple[TrainingPlatform, Template]) -> None:
    _, template = pcs
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {"NetworkInterfaces": Match.array_with([Match.object_like({"SubnetId": LZ_SUBNET})])}
            )
        },
    )


def test_pcs_warns_about_cross_zone_and_the_local_zone_lists_only_the_gpu_nodes(
    pcs: tuple[TrainingPlatform, Template],
) -> None:
    platform, _ = pcs
    (cross,) = _warnings(platform, WarningId.SERVICES_SUBNET_OTHER_ZONE)
    assert "us-west-2a, the GPU nodes in us-west-2-lax-1a" in cross
    assert "the PCS controller's network interface, the login nodes, the FSx for Lustre file system" in cross
    (local,) = _warnings(platform, WarningId.LOCAL_ZONE_SUBNET)
    assert "puts the GPU nodes there." in local


def test_parallelcluster_head_and_login_nodes_in_the_services_subnet() -> None:
    platform = _platform(ParallelClusterOptions(cluster_name="lz-pc", login_nodes=1), services_subnet="parent")
    config = platform.cluster.to_dict()  # type: ignore[union-attr]
    assert config["HeadNode"]["Networking"]["SubnetId"] == PARENT_SUBNET
    assert config["LoginNodes"]["Pools"][0]["Networking"]["SubnetIds"] == [PARENT_SUBNET]
    assert config["Scheduling"]["SlurmQueues"][0]["Networking"]["SubnetIds"] == [LZ_SUBNET]
    Template.from_stack(cdk.Stack.of(platform)).has_resource_properties(
        "AWS::FSx::FileSystem", {"SubnetIds": [PARENT_SUBNET]}
    )
    (cross,) = _warnings(platform, WarningId.SERVICES_SUBNET_OTHER_ZONE)
    assert "the ParallelCluster head node, the login nodes, the FSx for Lustre file system" in cross


def test_eks_file_system_in_the_services_subnet_gpu_nodes_in_the_local_zone() -> None:
    platform = _platform(EksOptions(), services_subnet="parent")
    template = Template.from_stack(cdk.Stack.of(platform))
    template.has_resource_properties("AWS::FSx::FileSystem", {"SubnetIds": [PARENT_SUBNET]})
    template.has_resource_properties("AWS::EKS::Nodegroup", {"Subnets": [LZ_SUBNET]})
    (cross,) = _warnings(platform, WarningId.SERVICES_SUBNET_OTHER_ZONE)
    assert "the FSx for Lustre file system reach" in cross


def test_same_zone_services_subnet_keeps_efa_and_does_not_warn() -> None:
    stack, vpc, subnets = _scene()
    nodes = ec2.Subnet.from_subnet_attributes(stack, "Nodes", subnet_id=OTHER_AZ_SUBNET, availability_zone="us-west-2a")
    platform = TrainingPlatform(
        stack,
        "Platform",
        vpc=vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
        subnet=nodes,
        services_subnet=subnets["parent"],
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::FSx::FileSystem",
        {"SubnetIds": [PARENT_SUBNET], "LustreConfiguration": Match.object_like({"EfaEnabled": True})},
    )
    assert _warnings(platform, WarningId.SERVICES_SUBNET_OTHER_ZONE) == []
    assert _warnings(platform, WarningId.LOCAL_ZONE_SUBNET) == []


def test_without_services_subnet_the_local_zone_warning_names_the_option() -> None:
    platform = _platform(ParallelClusterOptions(cluster_name="lz-pc"))
    (local,) = _warnings(platform, WarningId.LOCAL_ZONE_SUBNET)
    assert (
        "the GPU nodes, the ParallelCluster head node, the login nodes, the FSx for Lustre file system there" in local
    )
    assert "pass services_subnet= a subnet of the VPC in a zone of the parent Region" in local
    assert platform.services_subnet is platform.subnet


def test_a_node_subnet_of_unknown_zone_is_not_refused_with_efa() -> None:
    # The zone of an imported subnet without availability_zone is unknown at synthesis: nothing to refuse (the
    # storage module checks EFA zones only when both are known too).
    platform = _platform(
        PcsOptions(ami=AMI),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
        subnet="unknown",
        services_subnet="parent",
    )
    assert platform.services_subnet.subnet_id == PARENT_SUBNET
    assert _warnings(platform, WarningId.SERVICES_SUBNET_OTHER_ZONE) == []


@pytest.mark.parametrize(
    ("orchestrator", "props", "storage", "parameter", "message"),
    [
        pytest.param(
            PcsOptions(ami=AMI),
            {},
            TCP,
            "services_subnet",
            r"controller's subnet cannot reside",
            id="pcs-lz-no-services",
        ),
        pytest.param(
            PcsOptions(ami=AMI),
            {"services_subnet": "lz2"},
            TCP,
            "services_subnet",
            r"not a Local Zone",
            id="lz-services",
        ),
        pytest.param(
            EksOptions(),
            {"services_subnet": "lz2"},
            None,
            "services_subnet",
            r"not a Local Zone",
            id="lz-services-eks",
        ),
        pytest.param(
            PcsOptions(ami=AMI),
            {"services_subnet": "parent"},
            PlatformStorage.for_throughput(target_gbytes_per_s=1.0),
            "services_subnet",
            r"EFA traffic does not cross.*efa_enabled=False",
            id="efa-across-zones",
        ),
        pytest.param(
            ParallelClusterOptions(cluster_name="lz-pc"),
            {"services_subnet": "parent"},
            PlatformStorage.for_throughput(target_gbytes_per_s=1.0, efa_enabled=True),
            "services_subnet",
            r"EFA traffic does not cross",
            id="efa-across-zones-pc",
        ),
        pytest.param(
            HyperPodOptions(),
            {"services_subnet": "parent", "subnet": "parent"},
            None,
            "services_subnet",
            r"None with HyperPod",
            id="hyperpod",
        ),
    ],
)
def test_refusals(
    orchestrator: Any, props: dict[str, Any], storage: PlatformStorage | None, parameter: str, message: str
) -> None:
    with pytest.raises(FmValidationError, match=message) as raised:
        _platform(orchestrator, storage=storage, **props)
    assert raised.value.parameter == parameter


def test_refuses_a_subnet_of_another_vpc() -> None:
    stack, vpc, subnets = _scene()
    other = ec2.Subnet(
        stack, "Other", vpc_id="vpc-0fedcba9876543210", availability_zone="us-west-2a", cidr_block="10.1.0.0/24"
    )
    with pytest.raises(FmValidationError, match=r"services_subnet must be a subnet of the platform's vpc"):
        TrainingPlatform(
            stack,
            "Platform",
            vpc=vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            orchestrator=EksOptions(),
            subnet=subnets["lz"],
            services_subnet=other,
        )


@pytest.mark.parametrize("same_vpc", [True, False])
def test_a_new_subnet_is_compared_by_its_vpc_reference(same_vpc: bool) -> None:
    stack = cdk.Stack(new_app(), "P", env=ENV)
    isolated = [ec2.SubnetConfiguration(name="iso", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)]
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, subnet_configuration=isolated)
    owner = vpc if same_vpc else ec2.Vpc(stack, "Other", max_azs=2, subnet_configuration=isolated)
    extra = ec2.Subnet(
        stack, "Extra", vpc_id=owner.vpc_id, availability_zone=vpc.availability_zones[0], cidr_block="10.0.250.0/24"
    )

    def build() -> TrainingPlatform:
        return TrainingPlatform(
            stack,
            "Platform",
            vpc=vpc,
            instance_type="p5.48xlarge",
            nodes=2,
            orchestrator=PcsOptions(ami=AMI),
            subnet=vpc.isolated_subnets[0],
            services_subnet=extra,
        )

    if same_vpc:
        assert build().services_subnet is extra
    else:
        with pytest.raises(FmValidationError, match=r"services_subnet must be a subnet of the platform's vpc"):
            build()


@pytest.mark.parametrize("bad", ["subnet-0bbbbbbbbbbbbbbb2", 3, object()])
def test_rejects_a_services_subnet_that_is_not_a_subnet(bad: object) -> None:
    with pytest.raises((FmTypeError, FmValidationError), match=r"services_subnet must be an ec2.ISubnet"):
        _platform(EksOptions(), services_subnet=bad)
