"""PCS node groups: launch-template wiring, purchase options, scaling rules, AMIs, user data, UltraServers, login."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    CpuArchitecture,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
)
from fmconstructs.bootstrap import BootstrapDelivery
from fmconstructs.compute.launch_template import MIME_BOUNDARY
from fmconstructs.pcs import (
    IMEX_PROLOG_PATH,
    NodeGroupSetting,
    PcsAmi,
    PcsCluster,
    PcsGpuNodeGroup,
    PurchaseOption,
    SlurmVersion,
    purchase_option_for,
    sample_ami_name,
)

from tests.conftest import new_scene

CNG = "AWS::PCS::ComputeNodeGroup"
LT = "AWS::EC2::LaunchTemplate"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK_ID = "cr-0123456789abcdef0"
GROUP_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200-block"


def _cluster(**props: object) -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)  # type: ignore[arg-type]


def _rendered_user_data(template: Template, logical_prefix: str) -> str:
    """The user data of the launch template whose logical id starts with ``logical_prefix``, tokens as <TOKEN>."""
    for logical_id, res in template.find_resources(LT).items():
        if logical_id.startswith(logical_prefix):
            value = res["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
            if isinstance(value, str):
                return value
            return "".join(p if isinstance(p, str) else "<TOKEN>" for p in value["Fn::Join"][1])
    raise AssertionError(f"no launch template {logical_prefix}*")


@pytest.fixture(scope="module")
def p5() -> tuple[PcsGpuNodeGroup, Template]:
    cluster = _cluster()
    group = cluster.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.X86_64),
        capacity=CapacityBlock(reservation_id=BLOCK_ID, instance_count=2),
        max_nodes=2,
        slurm_settings={NodeGroupSetting.WEIGHT: "10", NodeGroupSetting.REAL_MEMORY: "2000000"},
        scale_down_idle_time=cdk.Duration.minutes(30),
        node_group_name="p5-nodes",
    )
    group.add_user_data("echo my-own-step")
    return group, Template.from_stack(cdk.Stack.of(cluster))


def test_node_group_uses_the_launch_template_id_and_pinned_version(p5):
    _, template = p5
    template.has_resource_properties(
        CNG,
        {
            "CustomLaunchTemplate": {
                "TemplateId": {"Ref": Match.string_like_regexp("^ClusterP5LaunchTemplate")},
                "Version": {
                    "Fn::GetAtt": [Match.string_like_regexp("^ClusterP5LaunchTemplate"), "LatestVersionNumber"]
                },
            },
            "ClusterId": {"Fn::GetAtt": [Match.string_like_regexp("^Cluster"), "Id"]},
            "IamInstanceProfileArn": {"Fn::GetAtt": [Match.string_like_regexp("^ClusterInstanceProfile"), "Arn"]},
            "AmiId": "ami-0123456789abcdef0",
            "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
            "SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1"],
            "Name": "p5-nodes",
        },
    )


def test_capacity_block_maps_to_capacity_block_purchase_and_fixed_size(p5):
    group, template = p5
    assert group.purchase_option is PurchaseOption.CAPACITY_BLOCK
    template.has_resource_properties(
        CNG,
        {"PurchaseOption": "CAPACITY_BLOCK", "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2}},
    )
    template.has_resource_properties(
        LT,
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "InstanceType": "p5.48xlarge",
                    "InstanceMarketOptions": {"MarketType": "capacity-block"},
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": BLOCK_ID}
                    },
                }
            )
        },
    )


def test_p5_launch_template_has_all_32_efa_interfaces_with_the_pcs_layout(p5):
    group, template = p5
    assert group.efa_interface_count == 32
    (lt,) = [r for k, r in template.find_resources(LT).items() if k.startswith("ClusterP5")]
    interfaces = lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    assert len(interfaces) == 32
    assert (interfaces[0]["NetworkCardIndex"], interfaces[0]["InterfaceType"]) == (0, "efa")
    assert all(i["InterfaceType"] == "efa-only" for i in interfaces[1:])
    assert all(i["Groups"] for i in interfaces)
    assert "SecurityGroupIds" not in lt["Properties"]["LaunchTemplateData"]


def _interface_subnets(template: Template, logical_prefix: str) -> list[object]:
    (lt,) = [r for k, r in template.find_resources(LT).items() if k.startswith(logical_prefix)]
    return [i.get("SubnetId") for i in lt["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]]


def test_every_interface_names_the_node_groups_subnet(p5):
    # PCS User Guide working-with_networking_efa_create-lt and aws-hpc-recipes pcs/enable_efa (pcs-lt-efa-p5.yaml):
    # SubnetId on every network interface, the node group's subnet.
    group, template = p5
    (cng,) = template.find_resources(CNG).values()
    assert cng["Properties"]["SubnetIds"] == ["subnet-0aaaaaaaaaaaaaaa1"]
    assert _interface_subnets(template, "ClusterP5") == ["subnet-0aaaaaaaaaaaaaaa1"] * 32
    assert group.launch_template.subnet is group.subnet


def test_a_given_subnet_reaches_the_interfaces_and_the_node_group():
    cluster = _cluster()
    subnet = cluster.vpc.private_subnets[1]
    _gpu(cluster, subnet=subnet)
    template = Template.from_stack(cdk.Stack.of(cluster))
    template.has_resource_properties(CNG, {"SubnetIds": ["subnet-0bbbbbbbbbbbbbbb2"]})
    assert set(_interface_subnets(template, "ClusterGpu")) == {"subnet-0bbbbbbbbbbbbbbb2"}


def test_node_group_slurm_configuration(p5):
    _, template = p5
    template.has_resource_properties(
        CNG,
        {
            "SlurmConfiguration": {
                "ScaleDownIdleTimeInSeconds": 1800,
                "SlurmCustomSettings": [
                    {"ParameterName": "RealMemory", "ParameterValue": "2000000"},
                    {"ParameterName": "Weight", "ParameterValue": "10"},
                ],
            }
        },
    )


def test_user_data_is_a_mime_archive_with_the_bootstrap_loader(p5):
    group, template = p5
    text = _rendered_user_data(template, "ClusterP5LaunchTemplate")
    assert text.startswith(f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\nMIME-Version: 1.0\n\n')
    assert f'--{MIME_BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\n' in text
    assert text.endswith(f"\n\n--{MIME_BOUNDARY}--\n")
    # asset delivery by default (the stack publishes file assets): the shell part is the loader, the steps are in S3
    assert group.bootstrap.delivery is BootstrapDelivery.ASSET
    assert "# fmconstructs.bootstrap loader" in text and "echo my-own-step" not in text


def test_steps_run_scratch_first_and_the_hook_last(p5):
    group, _ = p5
    assert [step.name for step in group.bootstrap.steps] == ["nvme-raid", "commands"]
    script = group.bootstrap.render()
    assert script.index("fmconstructs-nvme-raid /scratch") < script.index("echo my-own-step")
    assert IMEX_PROLOG_PATH not in script  # the cluster has no IMEX


def test_inline_delivery_keeps_the_steps_in_the_user_data():
    cluster = _cluster()
    group = _gpu(cluster, bootstrap_delivery=BootstrapDelivery.INLINE)
    group.add_user_data("echo my-own-step")
    text = _rendered_user_data(Template.from_stack(cdk.Stack.of(cluster)), "ClusterGpuLaunchTemplate")
    assert text.index("fmconstructs-nvme-raid /scratch") < text.index("echo my-own-step")
    assert "fmconstructs.bootstrap loader" not in text


def test_node_role_policy_exists_before_nodes_register(p5):
    _, template = p5
    (cng,) = template.find_resources(CNG).values()
    assert any(dep.startswith("ClusterInstanceProfileRoleDefaultPolicy") for dep in cng["DependsOn"])


# --- purchase options --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "spot", "expected"),
    [
        (OnDemand(), False, PurchaseOption.ONDEMAND),
        (OnDemand(), True, PurchaseOption.SPOT),
        (CapacityReservation(reservation_id=BLOCK_ID), False, PurchaseOption.ONDEMAND),
        (CapacityBlock(reservation_id=BLOCK_ID), False, PurchaseOption.CAPACITY_BLOCK),
        (UltraServerCapacityBlock(resource_group_arn=GROUP_ARN), False, PurchaseOption.CAPACITY_BLOCK),
    ],
)
def test_purchase_option_mapping(capacity, spot, expected):
    assert purchase_option_for(capacity, spot=spot) is expected


@pytest.mark.parametrize(
    "capacity",
    [
        CapacityReservation(reservation_id=BLOCK_ID),
        CapacityBlock(reservation_id=BLOCK_ID),
        UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
    ],
)
def test_spot_only_on_on_demand_capacity(capacity):
    with pytest.raises(FmValidationError, match=rf"spot must be False on a {capacity.kind.value} .*got True"):
        purchase_option_for(capacity, spot=True)


def test_spot_node_group_defaults_to_elastic_scaling():
    cluster = _cluster()
    group = cluster.add_gpu_node_group("Spot", instance_type="p5.48xlarge", ami=AMI, max_nodes=4, spot=True)
    assert group.min_nodes == 0
    Template.from_stack(cdk.Stack.of(cluster)).has_resource_properties(
        CNG, {"PurchaseOption": "SPOT", "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 4}}
    )


# --- validation: every rule ---------------------------------------------------------------------------------------


def _gpu(cluster: PcsCluster | None = None, **overrides: object) -> PcsGpuNodeGroup:
    cluster = cluster or _cluster()
    props: dict[str, object] = {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 2}
    props.update(overrides)
    return cluster.add_gpu_node_group("Gpu", **props)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"instance_type": "p4d.24xlarge"}, r"instance_type must be one of the catalog's types"),
        ({"max_nodes": 0}, r"max_nodes must be at least 1, got 0"),
        ({"min_nodes": -1}, r"min_nodes must be at least 0, got -1"),
        ({"min_nodes": 3}, r"min_nodes must be at most max_nodes \(2\), got 3"),
        (
            {"capacity": CapacityBlock(reservation_id=BLOCK_ID, instance_count=2), "max_nodes": 4},
            r"max_nodes must be at most the reservation's 2 instances, got 4",
        ),
        (
            {"capacity": CapacityBlock(reservation_id=BLOCK_ID), "min_nodes": 0},
            r"min_nodes must be equal to max_nodes \(2\) on a Capacity Block .*got 0",
        ),
        (
            {"capacity": CapacityBlock(reservation_id=BLOCK_ID, zone="us-east-1b")},
            r"subnet must be a subnet in us-east-1b, the zone of the capacity-block, got 'subnet-0aaaaaaaaaaaaaaa1 in "
            r"us-east-1a'",
        ),
        ({"spot": True, "capacity": CapacityBlock(reservation_id=BLOCK_ID)}, r"spot must be False on a capacity-block"),
        ({"ami": "ami-0123456789abcdef0"}, r"ami must be a PcsAmi"),
        (
            {"ami": PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.ARM64)},
            r"ami.architecture must be x86_64 to match p5.48xlarge, got 'arm64'",
        ),
        ({"slurm_settings": {NodeGroupSetting.WEIGHT: "-1"}}, r"slurm_settings\[Weight\] must be an integer from 0"),
        (
            {"slurm_settings": {NodeGroupSetting.REAL_MEMORY: "lots"}},
            r"slurm_settings\[RealMemory\] must be a positive",
        ),
        (
            {"slurm_settings": {NodeGroupSetting.REAL_MEMORY: "2097153"}},
            r"slurm_settings\[RealMemory\] must be at most 2097152 MiB, the memory of p5.48xlarge",
        ),
        ({"slurm_settings": {"Nodes": "1"}}, r"slurm_settings name must be a NodeGroupSetting or a name on the PCS"),
        (
            {"scale_down_idle_time": cdk.Duration.seconds(10_000_001)},
            r"scale_down_idle_time must be at most 10000000 seconds",
        ),
        ({"node_group_name": "p5_nodes"}, r"node_group_name must be 3-25 characters: a letter, then letters, digits"),
        ({"node_group_name": "a" * 26}, r"node_group_name must be 3-25 characters"),
        ({"node_group_name": "p5"}, r"node_group_name must be 3-25 characters"),
        (
            {"instance_type": "p6e-gb200.36xlarge", "capacity": CapacityBlock(reservation_id=BLOCK_ID)},
            r"capacity must be an UltraServerCapacityBlock for p6e-gb200.36xlarge",
        ),
    ],
)
def test_rejects_invalid_gpu_node_groups(overrides, message):
    with pytest.raises(FmValidationError, match=message):
        _gpu(**overrides)


def test_node_group_idle_time_needs_slurm_25_11():
    cluster = _cluster(slurm_version=SlurmVersion.V25_05)
    with pytest.raises(FmValidationError, match=r"scale_down_idle_time must be None on Slurm 25.05 .*25.11 or later"):
        _gpu(cluster, scale_down_idle_time=cdk.Duration.minutes(5))


# --- AMIs ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, r"image_id/ssm_parameter_name must be exactly one of the two"),
        ({"image_id": "ami-1", "ssm_parameter_name": "/x"}, r"image_id/ssm_parameter_name must be exactly one"),
        (
            {"image_id": "ami-XYZ"},
            r"image_id must be an AMI id like 'ami-0123456789abcdef0' \(PCS AmiId\), got 'ami-XYZ'",
        ),
        ({"image_id": "ami-0123456789abcdef0\n"}, r"image_id must be an AMI id"),
        ({"ssm_parameter_name": "my param"}, r"ssm_parameter_name must be an SSM parameter name"),
    ],
)
def test_rejects_invalid_amis(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        PcsAmi(**kwargs)


def test_ssm_parameter_ami_resolves_at_deploy_time():
    cluster = _cluster()
    _gpu(cluster, ami=PcsAmi.from_ssm_parameter("/pcs/ami/x86_64"))
    template = Template.from_stack(cdk.Stack.of(cluster))
    params = template.to_json()["Parameters"]
    ssm_params = [p for p in params.values() if p["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"]
    assert [p["Default"] for p in ssm_params] == ["/pcs/ami/x86_64"]
    template.has_resource_properties(CNG, {"AmiId": {"Ref": Match.string_like_regexp("^SsmParameterValue")}})


def test_sample_ami_name():
    assert sample_ami_name(CpuArchitecture.ARM64, SlurmVersion.V25_11) == "aws-pcs-sample_ami-al2023-arm64-slurm-25.11"


# --- UltraServers --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gb200() -> tuple[PcsGpuNodeGroup, Template]:
    cluster = _cluster(enable_imex=True)
    capacity = UltraServerCapacityBlock(
        resource_group_arn=GROUP_ARN, reservation_id=BLOCK_ID, ultraserver_type="u-p6e-gb200x72"
    )
    group = cluster.add_gpu_node_group(
        "Gb200",
        instance_type="p6e-gb200.36xlarge",
        ami=PcsAmi.from_image_id("ami-0123456789abcdef0", architecture=CpuArchitecture.ARM64),
        capacity=capacity,
        max_nodes=capacity.max_instances,
    )
    return group, Template.from_stack(cdk.Stack.of(cluster))


def test_ultraserver_node_group_is_one_fixed_block_of_18(gb200):
    group, template = gb200
    assert group.min_nodes == group.max_nodes == 18
    template.has_resource_properties(
        CNG,
        {
            "PurchaseOption": "CAPACITY_BLOCK",
            "InstanceConfigs": [{"InstanceType": "p6e-gb200.36xlarge"}],
            "ScalingConfiguration": {"MinInstanceCount": 18, "MaxInstanceCount": 18},
        },
    )


def test_ultraserver_launch_template_targets_the_reservation_id(gb200):
    # PCS User Guide capacity-blocks-configure-cng: "A CapacityReservationSpecification with a valid
    # CapacityReservationId"; the resource group the block was also given is for other consumers (EKS, fleets).
    _, template = gb200
    template.has_resource_properties(
        LT,
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "InstanceMarketOptions": {"MarketType": "capacity-block"},
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": BLOCK_ID}
                    },
                }
            )
        },
    )


def test_ultraserver_node_group_needs_the_reservation_id():
    cluster = _cluster(enable_imex=True)
    with pytest.raises(
        FmValidationError,
        match=r"reservation_id must be given for AWS PCS \(PCS User Guide capacity-blocks-configure-cng\), which "
        r"targets a ultraserver-capacity-block by CapacityReservationId \(this UltraServerCapacityBlock has only "
        r"resource_group_arn\), got None",
    ):
        _gpu(
            cluster,
            instance_type="p6e-gb200.36xlarge",
            capacity=UltraServerCapacityBlock(resource_group_arn=GROUP_ARN),
            max_nodes=18,
        )


def test_ultraserver_cluster_runs_the_imex_prolog_on_slurm_25_05_or_later(gb200):
    group, template = gb200
    assert group.cluster.slurm_version.at_least(SlurmVersion.V25_05)
    template.has_resource_properties(
        "AWS::PCS::Cluster",
        {
            "SlurmConfiguration": Match.object_like(
                {
                    "SlurmCustomSettings": [
                        {"ParameterName": "Prolog", "ParameterValue": IMEX_PROLOG_PATH},
                        {"ParameterName": "PrologFlags", "ParameterValue": "Alloc,NoHold"},
                        {"ParameterName": "SchedulerParameters", "ParameterValue": "nohold_on_prolog_fail"},
                    ]
                }
            )
        },
    )
    text = group.bootstrap.render()
    assert f"cat > {IMEX_PROLOG_PATH} <<'FMCONSTRUCTS_EOF'" in text
    assert f"chmod 0755 {IMEX_PROLOG_PATH}" in text
    assert "imex-prolog" in [step.name for step in group.bootstrap.steps]


def test_gb200_interfaces_name_the_subnet(gb200):
    _, template = gb200
    subnets = _interface_subnets(template, "ClusterGb200")
    assert len(subnets) >= 2 and set(subnets) == {"subnet-0aaaaaaaaaaaaaaa1"}


def test_gb200_efa_layout_comes_from_the_catalog(gb200):
    group, _ = gb200
    # Catalog: EFA on cards 1, 5, 9, 13 (efa-acc-inst-types), card 0 ENA only.
    assert group.efa_interface_count == 4


@pytest.mark.parametrize(
    ("cluster_props", "message"),
    [
        ({"slurm_version": SlurmVersion.V24_11}, r"cluster.slurm_version must be 25.05 or later for UltraServer"),
        ({}, r"cluster.enable_imex must be True for UltraServer node groups"),
    ],
)
def test_ultraserver_requirements(cluster_props, message):
    cluster = _cluster(**cluster_props)
    with pytest.raises(FmValidationError, match=message):
        _gpu(
            cluster,
            instance_type="p6e-gb200.36xlarge",
            capacity=UltraServerCapacityBlock(reservation_id=BLOCK_ID),
            max_nodes=18,
        )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_nodes": 19}, r"max_nodes must be at most the reservation's 18 instances, got 19"),
        (
            {"max_nodes": 18, "min_nodes": 9},
            r"min_nodes must be equal to max_nodes \(18\)",
        ),
        ({"instance_type": "p5.48xlarge"}, r"instance_type must be p6e-gb200.36xlarge on a u-p6e-gb200x72"),
    ],
)
def test_ultraserver_scaling_rules(overrides, message):
    cluster = _cluster(enable_imex=True)
    props = {
        "instance_type": "p6e-gb200.36xlarge",
        "capacity": UltraServerCapacityBlock(reservation_id=BLOCK_ID),
        "max_nodes": 18,
        **overrides,
    }
    with pytest.raises(FmValidationError, match=message):
        _gpu(cluster, **props)


def test_every_node_group_of_an_imex_cluster_installs_the_prolog():
    # The cluster's Prolog runs on every node, so non-UltraServer groups must have the script too.
    cluster = _cluster(enable_imex=True)
    group = _gpu(cluster)
    assert f"cat > {IMEX_PROLOG_PATH}" in group.bootstrap.render()


# --- login nodes ---------------------------------------------------------------------------------------------------


def test_login_node_group():
    cluster = _cluster()
    login = cluster.add_login_node_group("Login", ami=AMI, nodes=2)
    login.add_user_data("echo login-step")
    template = Template.from_stack(cdk.Stack.of(cluster))
    template.has_resource_properties(
        CNG,
        {
            "PurchaseOption": "ONDEMAND",
            "InstanceConfigs": [{"InstanceType": "m7i.xlarge"}],
            "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2},
        },
    )
    template.has_resource_properties(
        LT,
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "MetadataOptions": Match.object_like({"HttpTokens": "required"}),
                    "SecurityGroupIds": [
                        {"Fn::GetAtt": [Match.string_like_regexp("^ClusterSecurityGroup"), "GroupId"]}
                    ],
                    "BlockDeviceMappings": [Match.object_like({"Ebs": Match.object_like({"Encrypted": True})})],
                }
            )
        },
    )
    text = _rendered_user_data(template, "ClusterLoginLaunchTemplate")
    assert text.startswith("Content-Type: multipart/mixed") and "fmconstructs.bootstrap loader" in text
    assert login.bootstrap.delivery is BootstrapDelivery.ASSET and "echo login-step" in login.bootstrap.render()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"instance_type": "m7i"}, r"instance_type must be an EC2 instance type spelled exactly as EC2 lists it"),
        ({"nodes": 0}, r"nodes must be at least 1, got 0"),
        ({"root_volume_size_gib": 0}, r"root_volume_size_gib must be at least 1, got 0"),
        ({"ami": None}, r"ami must be a PcsAmi"),
    ],
)
def test_rejects_invalid_login_node_groups(overrides, message):
    cluster = _cluster()
    props: dict[str, object] = {"ami": AMI, **overrides}
    with pytest.raises(FmValidationError, match=message):
        cluster.add_login_node_group("Login", **props)


def test_node_groups_join_the_cluster_security_group():
    cluster = _cluster()
    group = _gpu(cluster)
    extra = ec2.SecurityGroup(cdk.Stack.of(cluster), "Extra", vpc=cluster.vpc)
    login = cluster.add_login_node_group("Login", ami=AMI, security_groups=[extra])
    assert cluster.security_group in group.connections.security_groups
    assert cluster.efa_security_group.security_group in group.connections.security_groups
    assert login.connections.security_groups == [cluster.security_group, extra]


def test_mime_archive_holds_one_plain_shell_part():
    cluster = _cluster()
    _gpu(cluster, instance_store_mount_point=None, user_data_commands=["echo only"])
    text = _rendered_user_data(Template.from_stack(cdk.Stack.of(cluster)), "ClusterGpuLaunchTemplate")
    assert text.count("#!/bin/bash") == 1 and text.count(f"--{MIME_BOUNDARY}\n") == 1
    assert "Content-Transfer-Encoding" not in text and "fmconstructs.bootstrap loader" in text


def test_login_group_without_steps_has_an_empty_shell_part_and_no_bootstrap_logs():
    cluster = _cluster()
    login = cluster.add_login_node_group("Login", ami=AMI)
    template = Template.from_stack(cdk.Stack.of(cluster))
    text = _rendered_user_data(template, "ClusterLoginLaunchTemplate")
    assert "#!/bin/bash\n\n--" in text and login.bootstrap.asset is None
    assert template.find_resources("AWS::Logs::LogGroup") == {}
