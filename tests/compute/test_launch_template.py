"""GpuLaunchTemplate: interfaces, placement, capacity, IMDSv2, encryption, user data, warnings and errors."""

from __future__ import annotations

import base64

import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    ClusterPlacementGroup,
    EfaSecurityGroup,
    FmValidationError,
    GpuLaunchTemplate,
    InterfacePolicy,
    UltraServerCapacityBlock,
    WarningId,
)

from tests.conftest import embedded_files

GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200"


def lt_data(scene):
    resources = scene.template().find_resources("AWS::EC2::LaunchTemplate")
    assert len(resources) == 1
    return next(iter(resources.values()))["Properties"]["LaunchTemplateData"]


def user_data_text(scene, data) -> str:
    resolved = data["UserData"]["Fn::Base64"]
    assert isinstance(resolved, str)
    return resolved


def test_defaults_are_secure(scene):
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    data = lt_data(scene)
    assert data["InstanceType"] == "p5.48xlarge"
    assert data["MetadataOptions"] == {
        "HttpTokens": "required",
        "HttpEndpoint": "enabled",
        "HttpPutResponseHopLimit": 1,
    }
    root = data["BlockDeviceMappings"][0]
    assert root["DeviceName"] == "/dev/xvda"
    assert root["Ebs"] == {
        "VolumeType": "gp3",
        "VolumeSize": 200,
        "Encrypted": True,
        "DeleteOnTermination": True,
    }
    assert "SecurityGroupIds" not in data and "SecurityGroups" not in data
    assert data["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is False
    assert not any(n.get("AssociatePublicIpAddress") for n in data["NetworkInterfaces"][1:])
    assert "Placement" not in data and "InstanceMarketOptions" not in data
    assert "CapacityReservationSpecification" not in data
    assert (lt.efa_interface_count, lt.gpus_per_node, lt.efa_bandwidth_gbps_per_node) == (32, 8, 3200)
    # The template creates its node group (outbound only) and an EFA group.
    scene.template().resource_count_is("AWS::EC2::SecurityGroup", 2)


def test_interfaces_carry_groups_and_the_one_subnet(scene):
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p6-b300.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a)
    nics = lt_data(scene)["NetworkInterfaces"]
    resolve = scene.stack.resolve
    efa_sg = resolve(lt.efa_security_group.security_group_id)
    node_sg = resolve(lt.security_group.security_group_id)
    assert len(nics) == 17
    assert (nics[0]["NetworkCardIndex"], nics[0]["DeviceIndex"], nics[0]["InterfaceType"]) == (
        0,
        0,
        "interface",
    )
    assert nics[0]["Groups"] == [node_sg, efa_sg]
    assert [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in nics[1:]] == [
        (c, 0, "efa-only") for c in range(1, 17)
    ]
    assert all(n["Groups"] == [efa_sg] for n in nics[1:])
    assert {n["SubnetId"] for n in nics} == {"subnet-0aaaaaaaaaaaaaaa1"}


def test_eks_policy_has_no_subnet_and_hop_limit_2(scene):
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5en.48xlarge",
        vpc=scene.vpc,
        policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP,
        http_put_response_hop_limit=2,
    )
    data = lt_data(scene)
    assert all("SubnetId" not in n for n in data["NetworkInterfaces"])
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 2


def test_pcs_policy_primary_is_efa(scene):
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, policy=InterfacePolicy.PCS)
    nics = lt_data(scene)["NetworkInterfaces"]
    assert nics[0]["InterfaceType"] == "efa" and len(nics) == 32


def test_pcs_policy_puts_the_subnet_on_every_interface(scene):
    # PCS User Guide working-with_networking_efa_create-lt: SubnetId and Groups on each interface, no SecurityGroupIds.
    GpuLaunchTemplate(
        scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, policy=InterfacePolicy.PCS, subnet=scene.subnet_a
    )
    data = lt_data(scene)
    assert [n["SubnetId"] for n in data["NetworkInterfaces"]] == ["subnet-0aaaaaaaaaaaaaaa1"] * 32
    assert "SecurityGroupIds" not in data


def test_pcs_policy_checks_the_subnet_against_the_reservation_zone(scene):
    with pytest.raises(FmValidationError, match=r"subnet must be a subnet in us-east-1a, the availability zone"):
        GpuLaunchTemplate(
            scene.stack,
            "Lt",
            instance_type="p5.48xlarge",
            vpc=scene.vpc,
            policy=InterfacePolicy.PCS,
            subnet=scene.subnet_b,
            capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
        )


def test_placement_group_is_attached_by_name(scene):
    pg = ClusterPlacementGroup(scene.stack, "Pg")
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, placement_group=pg)
    assert lt_data(scene)["Placement"] == {"GroupName": scene.stack.resolve(pg.placement_group_name)}
    Annotations.from_stack(scene.stack).has_no_warning("*", Match.any_value())


def test_odcr_targeting(scene):
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0"),
    )
    data = lt_data(scene)
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
    }
    assert "InstanceMarketOptions" not in data


def test_capacity_block_targeting(scene):
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5en.48xlarge",
        vpc=scene.vpc,
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210"),
        max_nodes=2,
    )
    data = lt_data(scene)
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0fedcba9876543210"
    }


def test_ultraserver_block_targets_the_resource_group(scene):
    lt = GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p6e-gb200.36xlarge",
        vpc=scene.vpc,
        capacity=UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
        max_nodes=18,
    )
    data = lt_data(scene)
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationResourceGroupArn": GROUP_ARN
    }
    assert lt.total_gpus == 72
    assert lt.efa_interface_count == 4


BLOCK_ID = "cr-0123456789abcdef0"


@pytest.mark.parametrize(
    ("policy", "capacity", "expected"),
    [
        # PCS User Guide capacity-blocks-configure-cng: "a valid CapacityReservationId" in the launch template.
        (
            InterfacePolicy.PCS,
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID),
            {"CapacityReservationId": BLOCK_ID},
        ),
        (InterfacePolicy.PCS, UltraServerCapacityBlock(reservation_id=BLOCK_ID), {"CapacityReservationId": BLOCK_ID}),
        # Self-managed fleets and EKS keep the resource group when they have it (EC2 User Guide cb-group).
        (
            InterfacePolicy.SELF_MANAGED,
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID),
            {"CapacityReservationResourceGroupArn": GROUP_ARN},
        ),
        (
            InterfacePolicy.EKS_MANAGED_NODE_GROUP,
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID),
            {"CapacityReservationResourceGroupArn": GROUP_ARN},
        ),
        (
            InterfacePolicy.EKS_MANAGED_NODE_GROUP,
            UltraServerCapacityBlock(reservation_id=BLOCK_ID),
            {"CapacityReservationId": BLOCK_ID},
        ),
    ],
)
def test_ultraserver_block_target_follows_the_consumer(scene, policy, capacity, expected):
    GpuLaunchTemplate(
        scene.stack, "Lt", instance_type="p6e-gb200.36xlarge", vpc=scene.vpc, policy=policy, capacity=capacity
    )
    assert lt_data(scene)["CapacityReservationSpecification"] == {"CapacityReservationTarget": expected}


def test_explicit_target_form_overrides_the_policy(scene):
    from fmconstructs.capacity import ReservationTargetForm

    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p6e-gb200.36xlarge",
        vpc=scene.vpc,
        capacity=UltraServerCapacityBlock(resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID),
        reservation_target_form=ReservationTargetForm.RESERVATION_ID,
    )
    assert lt_data(scene)["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": BLOCK_ID}
    }


@pytest.mark.parametrize(
    ("instance_type", "capacity", "message"),
    [
        (
            "p6e-gb200.36xlarge",
            UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
            r"reservation_id must be given for AWS PCS \(PCS User Guide capacity-blocks-configure-cng\), which "
            r"targets a ultraserver-capacity-block by CapacityReservationId",
        ),
        (
            "p5.48xlarge",
            CapacityBlock(resource_group_arn=GROUP_ARN),
            r"reservation_id must be given for AWS PCS .*capacity-block by CapacityReservationId",
        ),
    ],
)
def test_pcs_refuses_a_capacity_block_without_a_reservation_id(scene, instance_type, capacity, message):
    with pytest.raises(FmValidationError, match=message):
        GpuLaunchTemplate(
            scene.stack, "Lt", instance_type=instance_type, vpc=scene.vpc, policy=InterfacePolicy.PCS, capacity=capacity
        )


def test_pcs_keeps_an_odcr_resource_group(scene):
    # Only Capacity Blocks need the id on PCS; a targeted ODCR keeps the form it was given.
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        policy=InterfacePolicy.PCS,
        capacity=CapacityReservation(resource_group_arn=GROUP_ARN),
    )
    assert lt_data(scene)["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": GROUP_ARN}
    }


def test_placement_group_with_capacity_block_warns(scene):
    pg = ClusterPlacementGroup(scene.stack, "Pg")
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        placement_group=pg,
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0"),
    )
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Lt",
        Match.string_like_regexp(r"placement group on a Capacity Block risks insufficient-capacity"),
    )
    warnings = Annotations.from_stack(scene.stack).find_warning("/Test/Lt", Match.any_value())
    assert any(WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK.qualified in str(w.entry.data) for w in warnings)
    # Still attached: the user asked for it.
    assert "Placement" in lt_data(scene)


def test_kms_key_image_profile_and_tags(scene):
    key = kms.Key(scene.stack, "Key")
    role = iam.Role(scene.stack, "Role", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    profile = iam.InstanceProfile(scene.stack, "Profile", role=role)
    GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        encryption_key=key,
        machine_image=ec2.MachineImage.generic_linux({"us-east-1": "ami-0123456789abcdef0"}),
        instance_profile=profile,
        root_volume_size_gib=500,
        tags={"team": "ml"},
        launch_template_name="gpu-p5",
    )
    t = scene.template()
    data = lt_data(scene)
    assert data["ImageId"] == "ami-0123456789abcdef0"
    assert data["BlockDeviceMappings"][0]["Ebs"]["KmsKeyId"] == scene.stack.resolve(key.key_arn)
    assert data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 500
    assert data["IamInstanceProfile"] == {"Arn": scene.stack.resolve(profile.instance_profile_arn)}
    kinds = {spec["ResourceType"]: spec["Tags"] for spec in data["TagSpecifications"]}
    assert set(kinds) == {"instance", "volume", "network-interface"}
    assert {"Key": "team", "Value": "ml"} in kinds["instance"]
    assert {"Key": "fmconstructs:instance-type", "Value": "p5.48xlarge"} in kinds["volume"]
    t.has_resource_properties("AWS::EC2::LaunchTemplate", {"LaunchTemplateName": "gpu-p5"})


def test_user_data_assembles_nvme_raid_at_the_mount_point(scene):
    lt = GpuLaunchTemplate(
        scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, instance_store_mount_point="/local"
    )
    lt.add_user_data("echo added-later")
    text = user_data_text(scene, lt_data(scene))
    assert "/usr/local/sbin/fmconstructs-nvme-raid /local fmscratch" in text
    assert "mdadm --create" in embedded_files(text)["/usr/local/sbin/fmconstructs-nvme-raid"]
    assert text.rstrip().endswith("echo added-later")


def test_user_data_can_be_skipped(scene):
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, instance_store_mount_point=None)
    assert "UserData" not in lt_data(scene)


def test_shared_groups_and_connections(scene):
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    node = ec2.SecurityGroup(scene.stack, "Node", vpc=scene.vpc)
    lt = GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p5.48xlarge",
        vpc=scene.vpc,
        efa_security_group=efa,
        security_groups=[node],
    )
    assert lt.security_group is node and lt.security_groups == (node,)
    assert len(lt.connections.security_groups) == 2
    scene.template().resource_count_is("AWS::EC2::SecurityGroup", 2)


def test_exposes_version_and_l2_reference(scene):
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, max_nodes=4)
    resolved = scene.stack.resolve(lt.version_number)
    assert resolved["Fn::GetAtt"][1] == "LatestVersionNumber"
    assert scene.stack.resolve(lt.launch_template.launch_template_id) == scene.stack.resolve(lt.launch_template_id)
    assert lt.total_gpus == 32 and lt.max_nodes == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"instance_type": "p4d.24xlarge"},
            r"instance_type must be one of the catalog's types \(p5.48xlarge, ",
        ),
        ({"http_put_response_hop_limit": 0}, r"http_put_response_hop_limit must be at least 1, got 0"),
        ({"http_put_response_hop_limit": 65}, r"http_put_response_hop_limit must be at most 64, got 65"),
        ({"root_volume_size_gib": 0}, r"root_volume_size_gib must be at least 1, got 0"),
        ({"root_volume_size_gib": 65537}, r"root_volume_size_gib must be at most 65536, got 65537"),
        ({"max_nodes": 0}, r"max_nodes must be at least 1, got 0"),
        (
            {"security_groups": []},
            r"security_groups must be None \(a new group\) or at least one group, got \[\]",
        ),
        (
            {"efa_interface_count": 40},
            r"efa_interface_count must be between 0 and 32 for p5.48xlarge, got 40",
        ),
        ({"instance_store_mount_point": "scratch"}, r"instance_store_mount_point must be an absolute path"),
        ({"instance_store_mount_point": "/"}, r"instance_store_mount_point must be an absolute path"),
        ({"instance_store_mount_point": "/a b"}, r"instance_store_mount_point must be an absolute path"),
        (
            {
                "capacity": CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
                "max_nodes": 3,
            },
            r"max_nodes must be at most the reservation's 2 instances, got 3",
        ),
        (
            {"capacity": UltraServerCapacityBlock(resource_group_arn=GROUP_ARN)},
            r"instance_type must be p6e-gb200.36xlarge on a u-p6e-gb200x72 UltraServer Capacity Block",
        ),
        (
            {"policy": InterfacePolicy.EKS_MANAGED_NODE_GROUP, "subnet": "subnet_a"},
            r"subnet must be None for the eks-managed-node-group policy",
        ),
        (
            {
                "subnet": "subnet_b",
                "capacity": CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
            },
            r"subnet must be a subnet in us-east-1a",
        ),
    ],
)
def test_invalid_input(scene, kwargs, message):
    props = {"instance_type": "p5.48xlarge", "vpc": scene.vpc, **kwargs}
    if isinstance(props.get("subnet"), str):
        props["subnet"] = getattr(scene, props["subnet"])  # the scene's subnets, named in the parameters
    with pytest.raises(FmValidationError, match=message):
        GpuLaunchTemplate(scene.stack, "Lt", **props)


def test_base64_is_valid_when_resolved(scene):
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p6-b200.48xlarge", vpc=scene.vpc)
    text = user_data_text(scene, lt_data(scene))
    base64.b64encode(text.encode())  # a plain string CloudFormation will encode
    assert text.startswith("#!/bin/bash")


def test_user_data_over_16_kib_fails_synthesis(scene):
    lt = GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc)
    lt.add_user_data(*[f"echo {'x' * 100} {i}" for i in range(160)])
    with pytest.raises(RuntimeError, match=r"user data is about \d+ bytes but EC2 accepts at most 16384 bytes"):
        scene.app.synth()


def test_user_data_size_counts_references():
    from fmconstructs.compute.user_data import check_user_data_size, estimated_size_bytes

    assert estimated_size_bytes({"Fn::Base64": {"Fn::Join": ["", ["ab", {"Ref": "X"}, "cd"]]}}) == 4 + 160
    assert check_user_data_size("x" * 16384) == []
    assert check_user_data_size("x" * 16385)


def test_all_efa_cards_option_reaches_the_template(scene):
    from fmconstructs import EfaCardSelection

    lt = GpuLaunchTemplate(
        scene.stack,
        "Lt",
        instance_type="p6e-gb200.36xlarge",
        vpc=scene.vpc,
        capacity=UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
        efa_cards=EfaCardSelection.ALL,
    )
    assert lt.efa_interface_count == 16
    assert len(lt_data(scene)["NetworkInterfaces"]) == 17


def test_operator_properties(scene):
    lt = GpuLaunchTemplate(
        scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, launch_template_name="gpu-nodes", max_nodes=2
    )
    resolve = scene.stack.resolve
    assert resolve(lt.launch_template_id) == {"Ref": resolve(lt.resource.logical_id)}
    assert resolve(lt.default_version_number)["Fn::GetAtt"][1] == "DefaultVersionNumber"
    assert (lt.launch_template_name, lt.instance_type, lt.max_nodes, lt.total_gpus) == (
        "gpu-nodes",
        "p5.48xlarge",
        2,
        16,
    )
    scene.template().has_resource_properties("AWS::EC2::LaunchTemplate", {"LaunchTemplateName": "gpu-nodes"})


def test_image_id_reaches_the_template(scene):
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, image_id="ami-0123456789abcdef0")
    assert lt_data(scene)["ImageId"] == "ami-0123456789abcdef0"


def test_image_id_and_machine_image_are_exclusive(scene):
    with pytest.raises(FmValidationError, match=r"^image_id must be omitted when machine_image is given"):
        GpuLaunchTemplate(
            scene.stack,
            "Lt",
            instance_type="p5.48xlarge",
            vpc=scene.vpc,
            image_id="ami-0123456789abcdef0",
            machine_image=ec2.MachineImage.latest_amazon_linux2023(),
        )


def test_efa_cards_docstring_lists_the_three_layouts():
    doc = GpuLaunchTemplate.__doc__ or ""  # the :param docs moved from __init__ to the class (house limits)
    for text in ("RECOMMENDED", "EVERY_GPU_CARD", "8 x 200 Gbps", "1, 3, 5, ..., 15", "ALL", "ParallelCluster"):
        assert text in doc, text
    assert "leave a GPU without EFA" in doc
