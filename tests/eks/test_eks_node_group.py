"""GpuNodeGroup: EFA launch templates, AMI types, capacity types, labels/taints, and the capacity and AZ rules."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import (
    CapacityBlock,
    CapacityReservation,
    FmTypeError,
    FmValidationError,
    OnDemand,
    UltraServerCapacityBlock,
    WarningId,
)
from fmconstructs.bootstrap import BootstrapDelivery
from fmconstructs.eks import NVIDIA_DRA_DRIVER, GpuEksCluster
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import new_scene

GB200_ARN = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200-block"


@pytest.fixture(scope="module")
def built():
    """One stack with a p5en block group, a p6-b300 ODCR group in us-east-1b and a GB200 UltraServer group."""
    scene = new_scene("EksNodeGroups")
    admin = iam.Role.from_role_arn(scene.stack, "Admin", "arn:aws:iam::123456789012:role/platform-admin")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, admin_roles=[admin])
    groups = {
        "p5en": cluster.add_gpu_node_group(
            "P5en",
            instance_type="p5en.48xlarge",
            capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
            max_nodes=2,
            min_nodes=0,
            desired_nodes=0,
        ),
        "b300": cluster.add_gpu_node_group(
            "B300",
            instance_type="p6-b300.48xlarge",
            capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1b"),
            max_nodes=1,
        ),
        "gb200": cluster.add_gpu_node_group(
            "Gb200",
            instance_type="p6e-gb200.36xlarge",
            capacity=UltraServerCapacityBlock(resource_group_arn=GB200_ARN, ultraserver_type="u-p6e-gb200x72"),
            max_nodes=18,
        ),
    }
    cluster.add_compute_domain("Domain", name="gb200", num_nodes=18, namespace="training")
    return scene, cluster, groups, Template.from_stack(scene.stack)


def nodegroup_props(template, instance_type):
    for res in template.find_resources("AWS::EKS::Nodegroup").values():
        if res["Properties"].get("Labels", {}).get("fmconstructs.io/instance-type") == instance_type:
            return res["Properties"]
    raise AssertionError(f"no node group for {instance_type}")


def launch_template_data(template, instance_type):
    found = [
        r["Properties"]["LaunchTemplateData"]
        for r in template.find_resources("AWS::EC2::LaunchTemplate").values()
        if r["Properties"]["LaunchTemplateData"]["InstanceType"] == instance_type
    ]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(
    ("instance_type", "ami_type", "capacity_type"),
    [
        ("p5en.48xlarge", "AL2023_x86_64_NVIDIA", "CAPACITY_BLOCK"),
        ("p6-b300.48xlarge", "AL2023_x86_64_NVIDIA", "ON_DEMAND"),
        ("p6e-gb200.36xlarge", "AL2023_ARM_64_NVIDIA", "CAPACITY_BLOCK"),
    ],
)
def test_ami_type_from_catalog_and_capacity_type(built, instance_type, ami_type, capacity_type):
    props = nodegroup_props(built[3], instance_type)
    assert props["AmiType"] == ami_type
    assert props["CapacityType"] == capacity_type
    assert "InstanceTypes" not in props  # the launch template names the type


@pytest.mark.parametrize(
    ("instance_type", "efa", "efa_cards"),
    [
        ("p5en.48xlarge", 16, list(range(16))),
        ("p6-b300.48xlarge", 16, list(range(1, 17))),
        ("p6e-gb200.36xlarge", 4, [1, 5, 9, 13]),
    ],
)
def test_launch_template_interfaces_without_subnet(built, instance_type, efa, efa_cards):
    interfaces = launch_template_data(built[3], instance_type)["NetworkInterfaces"]
    efa_interfaces = [i for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")]
    assert len(efa_interfaces) == efa
    assert sorted({i["NetworkCardIndex"] for i in efa_interfaces}) == efa_cards
    assert all("SubnetId" not in i for i in interfaces)
    primary = next(i for i in interfaces if i["NetworkCardIndex"] == 0 and i["DeviceIndex"] == 0)
    assert primary["InterfaceType"] == "interface"
    assert len(primary["Groups"]) == 2  # cluster security group + EFA group


@pytest.mark.parametrize("instance_type", ["p5en.48xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge"])
def test_launch_template_imdsv2_hop_limit_1_and_mime_user_data(built, instance_type):
    data = launch_template_data(built[3], instance_type)
    assert data["MetadataOptions"] == {
        "HttpTokens": "required",
        "HttpEndpoint": "enabled",
        "HttpPutResponseHopLimit": 1,
    }
    assert "ImageId" not in data and "IamInstanceProfile" not in data and "SecurityGroupIds" not in data
    user_data = json.dumps(data["UserData"])
    assert "MIME-Version: 1.0" in user_data
    assert "strategy: RAID0" in user_data


def test_capacity_block_template_targets_the_block(built):
    data = launch_template_data(built[3], "p5en.48xlarge")
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0fedcba9876543210"
    }
    assert "Placement" not in data  # blocks are already placed in an UltraCluster


def test_ultraserver_template_targets_the_resource_group(built):
    data = launch_template_data(built[3], "p6e-gb200.36xlarge")
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationResourceGroupArn": GB200_ARN
    }


def test_odcr_group_has_no_placement_group_by_default_and_a_subnet_in_the_reservation_zone(built):
    # 0.2.0: EKS node groups get a placement group only when asked (before: a new one for every EFA group off a
    # Capacity Block, unrelated to the ODCR; terraform-aws-eks#3730).
    scene, _, groups, template = built
    data = launch_template_data(template, "p6-b300.48xlarge")
    assert "Placement" not in data
    assert groups["b300"].placement_group is None
    assert template.find_resources("AWS::EC2::PlacementGroup") == {}
    assert [s.subnet_id for s in groups["b300"].subnets] == [scene.subnet_b.subnet_id]
    assert nodegroup_props(template, "p6-b300.48xlarge")["Subnets"] == ["subnet-0bbbbbbbbbbbbbbb2"]


def test_capacity_block_group_may_start_at_zero(built):
    assert nodegroup_props(built[3], "p5en.48xlarge")["ScalingConfig"] == {"MinSize": 0, "MaxSize": 2, "DesiredSize": 0}


def test_labels_and_gpu_taint(built):
    props = nodegroup_props(built[3], "p5en.48xlarge")
    labels = dict(props["Labels"])
    # node checks (default on): the group's gate DaemonSet selects this label (tests/health/test_health_eks.py)
    assert re.fullmatch(r"p5en-48xlarge-[0-9a-f]{8}", labels.pop("fmconstructs.io/node-checks-group"))
    assert labels == {
        "fmconstructs.io/instance-type": "p5en.48xlarge",
        "fmconstructs.io/gpu-count": "8",
        "fmconstructs.io/efa-interface-count": "16",
        "fmconstructs.io/capacity": "capacity-block",
        "nvidia.com/gpu.present": "true",
        "vpc.amazonaws.com/efa.present": "true",
    }
    assert props["Taints"] == [
        {"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NO_SCHEDULE"},
        {"Key": "fmconstructs.io/node-checks", "Value": "pending", "Effect": "NO_SCHEDULE"},
    ]


def test_gb200_installs_dra_driver_and_compute_domain(built):
    template = built[3]
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {"Chart": "nvidia-dra-driver-gpu", "Repository": "https://helm.ngc.nvidia.com/nvidia"},
    )
    manifests = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    assert any("ComputeDomain" in json.dumps(r["Properties"]["Manifest"]) for r in manifests.values())


def test_dra_driver_values_in_the_template_keep_the_controller_nulls(built):
    # EKS User Guide ml-eks-nvidia-ultraserver (dra-values.yaml): controller nodeSelector/affinity null, tolerations
    # []. aws-cdk-lib drops None when it serializes Helm values, so the nulls must survive into the Values property.
    charts = built[3].find_resources("Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "nvidia-dra-driver-gpu"}})
    assert len(charts) == 1
    props = next(iter(charts.values()))["Properties"]
    assert props["Version"] == "25.8.0"
    values = json.loads(props["Values"])
    assert values["controller"] == {"nodeSelector": None, "affinity": None, "tolerations": []}
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}
    ]


def test_chart_values_with_a_null_and_a_token_are_refused(scene):
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"values must be plain values \(no CDK tokens\)"):
        cluster._chart(
            "Bad",
            NVIDIA_DRA_DRIVER,
            {"controller": {"affinity": None}, "clusterName": cluster.cluster_name},
        )


def test_admin_role_access_entry(built):
    entries = built[3].find_resources("AWS::EKS::AccessEntry")
    admin = [
        e
        for e in entries.values()
        if e["Properties"]["PrincipalArn"] == "arn:aws:iam::123456789012:role/platform-admin"
    ]
    assert len(admin) == 1
    policies = admin[0]["Properties"]["AccessPolicies"]
    assert policies[0]["AccessScope"] == {"Type": "cluster"}
    assert "AmazonEKSClusterAdminPolicy" in json.dumps(policies[0]["PolicyArn"])


def test_no_placement_group_warning_on_capacity_blocks(built):
    # The groups on blocks get no placement group, so the foundation's block + placement-group warning never fires.
    warnings = Annotations.from_stack(built[0].stack).find_warning("*", Match.string_like_regexp("placement group"))
    assert warnings == []
    assert WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK.qualified not in json.dumps(warnings)


# --- FSx for Lustre clients (FSx UG "Configuring EFA clients", EKS UG "fsx-csi-tuning-efa") ------------------


def user_data_text(template, instance_type):
    """The launch template's user data with CloudFormation references written as ``{"Fn::GetAtt": ...}``."""

    def flat(value):
        if isinstance(value, str):
            return value
        if "Fn::Join" in value:
            return "".join(flat(part) for part in value["Fn::Join"][1])
        return json.dumps(value)

    return flat(launch_template_data(template, instance_type)["UserData"]["Fn::Base64"])


def node_set_up_text(group):
    """Every pre-bootstrap step of ``group`` (delivered as an S3 asset by default), references as JSON."""

    def flat(value):
        if isinstance(value, str):
            return value
        if "Fn::Join" in value:
            return "".join(flat(part) for part in value["Fn::Join"][1])
        return json.dumps(value)

    return flat(Stack.of(group).resolve(group.launch_template.bootstrap.render()))


def mount_lines(text):
    return [
        shlex.split(line) for line in text.splitlines() if line.startswith("/usr/local/sbin/fmconstructs-lustre-mount ")
    ]


@pytest.fixture(scope="module")
def lustre_built():
    """p5en (16 EFA), p6-b300 limited to 0 EFA interfaces for Lustre, GB200 (4 EFA) added after the EFA volume, and a
    TCP file system as a second volume."""
    scene = new_scene("EksLustre")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    groups = {
        "p5en": cluster.add_gpu_node_group(
            "P5en",
            instance_type="p5en.48xlarge",
            capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
            max_nodes=2,
        ),
        "b300": cluster.add_gpu_node_group(
            "B300",
            instance_type="p6-b300.48xlarge",
            capacity=CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
            max_nodes=1,
            efa_interfaces_for_lustre=0,
        ),
    }
    efa_fs = LustreFileSystem(
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
    tcp_fs = LustreFileSystem(scene.stack, "TcpFs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster.add_lustre_volume("EfaVolume", efa_fs, name="fsx-efa")
    cluster.add_lustre_volume("TcpVolume", tcp_fs, name="fsx-tcp")
    groups["gb200"] = cluster.add_gpu_node_group(
        "Gb200",
        instance_type="p6e-gb200.36xlarge",
        capacity=UltraServerCapacityBlock(resource_group_arn=GB200_ARN, ultraserver_type="u-p6e-gb200x72"),
        max_nodes=18,
    )
    return cluster, groups, efa_fs, Template.from_stack(scene.stack)


@pytest.mark.parametrize(
    ("instance_type", "efa_interfaces", "gds"),
    [
        ("p5en.48xlarge", "8", "1"),  # FSx UG default for p5en: 8 (of the 16 the node attaches)
        ("p6-b300.48xlarge", "0", "0"),  # efa_interfaces_for_lustre=0: LNet over TCP, no GPUDirect Storage
        ("p6e-gb200.36xlarge", "4", "1"),  # FSx UG default 8, capped by the 4 EFA interfaces on cards 1, 5, 9, 13
    ],
)
def test_efa_file_system_is_set_up_before_kubelet_on_every_gpu_group(lustre_built, instance_type, efa_interfaces, gds):
    text = user_data_text(lustre_built[3], instance_type)
    (group,) = [g for g in lustre_built[1].values() if g.instance_spec.instance_type == instance_type]
    (line,) = mount_lines(node_set_up_text(group))  # the TCP file system is left to the CSI driver
    assert line[3:] == [
        "/fsx/fsx-efa",
        "defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target",
        efa_interfaces,
        gds,
        instance_type.split(".")[0],
    ]
    assert "EfaFs" in line[1] and "DNSName" in line[1] and "LustreMountName" in line[2]
    # The shell part follows the nodeadm part, so cloud-init runs it before nodeadm-run starts kubelet.
    assert text.index("application/node.eks.aws") < text.index("text/x-shellscript")


def test_lustre_set_up_is_an_s3_asset_and_the_nodes_wait_for_its_permissions(lustre_built):
    _, groups, _, template = lustre_built
    for group in groups.values():
        bootstrap = group.launch_template.bootstrap
        assert bootstrap.delivery is BootstrapDelivery.ASSET and bootstrap.asset is not None
        assert [step.name for step in bootstrap.steps] == ["lustre-fsx-fsx-efa"]
    # the managed node groups depend on the node role's policy that grants read on the asset and the log writes
    policy_ids = [
        k for k in template.find_resources("AWS::IAM::Policy") if k.startswith("ClusterNodeRoleDefaultPolicy")
    ]
    gpu_nodegroups = [
        r
        for k, r in template.find_resources("AWS::EKS::Nodegroup").items()
        if not k.startswith("ClusterNodegroupSystem")
    ]
    assert len(gpu_nodegroups) == 3
    for nodegroup in gpu_nodegroups:
        assert set(policy_ids) <= set(nodegroup.get("DependsOn", [])), nodegroup.get("DependsOn")


def test_groups_without_pre_bootstrap_steps_have_no_shell_part(scene):
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group("P5en", instance_type="p5en.48xlarge", max_nodes=1)
    text = user_data_text(scene.template(), "p5en.48xlarge")
    assert "application/node.eks.aws" in text and "text/x-shellscript" not in text
    assert group.launch_template.bootstrap.asset is None


def test_pre_bootstrap_steps_can_stay_inline(scene):
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "P5en", instance_type="p5en.48xlarge", max_nodes=1, bootstrap_delivery=BootstrapDelivery.INLINE
    )
    group.launch_template.add_user_data("echo pre-bootstrap")
    text = user_data_text(scene.template(), "p5en.48xlarge")
    assert "echo pre-bootstrap" in text and "fmconstructs.bootstrap loader" not in text


@pytest.mark.parametrize("value", ["asset", True, 1, object()])
def test_bootstrap_delivery_must_be_the_enum(scene, value):
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmTypeError, match="bootstrap_delivery"):
        cluster.add_gpu_node_group("P5en", instance_type="p5en.48xlarge", max_nodes=1, bootstrap_delivery=value)


def test_lustre_clients_record_the_efa_interfaces(lustre_built):
    _, groups, efa_fs, _ = lustre_built
    counts = {
        name: [(c.file_system, c.mount_point, c.efa_interfaces) for c in g.lustre_clients] for name, g in groups.items()
    }
    assert counts == {
        "p5en": [(efa_fs, "/fsx/fsx-efa", 8)],
        "b300": [(efa_fs, "/fsx/fsx-efa", 0)],
        "gb200": [(efa_fs, "/fsx/fsx-efa", 4)],
    }


def test_efa_clients_are_registered_against_the_connection_budget(lustre_built):
    # FSx UG "Configuring EFA clients": at most 1,024 EFA connections per file system. p5en: 2 nodes x 8; GB200:
    # 18 nodes x 4; the p6-b300 group mounts over TCP and uses none.
    _, groups, efa_fs, _ = lustre_built
    registered = {g.consumer_path: (g.max_nodes, g.efa_interfaces_per_node) for g in efa_fs.efa_client_groups}
    assert registered == {groups["p5en"].node.path: (2, 8), groups["gb200"].node.path: (18, 4)}
    assert efa_fs.max_efa_connections == 88


def test_too_many_efa_clients_are_refused_naming_the_node_group(scene):
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
    # Issue 18: every count is known, so the node group is refused at construction (it was a synthesis error).
    with pytest.raises(FmValidationError, match=r"^EFA connections to Test/EfaFs must be at most 1,024.*Cluster/Big"):
        cluster.add_gpu_node_group("Big", instance_type="p5en.48xlarge", max_nodes=129, subnets=[scene.subnet_a])


def test_adding_a_file_system_twice_keeps_one_client(lustre_built):
    _, groups, efa_fs, _ = lustre_built
    again = groups["p5en"].add_lustre_client(efa_fs, mount_point="/elsewhere")
    assert again is groups["p5en"].lustre_clients[0]
    assert len(groups["p5en"].lustre_clients) == 1


def test_tcp_file_system_can_be_mounted_on_hosts_when_asked(scene):
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group(
        "P5en",
        instance_type="p5en.48xlarge",
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        max_nodes=2,
    )
    tcp_fs = LustreFileSystem(scene.stack, "TcpFs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster.add_lustre_volume("TcpVolume", tcp_fs, name="fsx-tcp", host_mount_point="/data")
    (line,) = mount_lines(node_set_up_text(cluster.gpu_node_groups[0]))
    assert line[3] == "/data" and line[5:] == ["off", "0", "p5en"]


# --- rules (no synthesis) --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rules_cluster():
    scene = new_scene("EksRules")
    return scene, GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)


_COUNTER = iter(range(10_000))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_nodes": 0}, r"max_nodes must be at least 1, got 0"),
        ({"max_nodes": 2, "min_nodes": 3}, r"min_nodes must be between 0 and max_nodes \(2\), got 3"),
        ({"max_nodes": 2, "min_nodes": 1, "desired_nodes": 0}, r"desired_nodes must be between min_nodes \(1\)"),
        (
            {"max_nodes": 4, "capacity": CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2)},
            r"^max_nodes must be at most the reservation's 2 instances, got 4",
        ),
        (
            {"max_nodes": 2, "min_nodes": 1, "capacity": CapacityBlock(reservation_id="cr-0fedcba9876543210")},
            r"min_nodes must be 0 or max_nodes \(2\) on a Capacity Block",
        ),
        (
            {
                "max_nodes": 2,
                "min_nodes": 0,
                "desired_nodes": 1,
                "capacity": CapacityBlock(reservation_id="cr-0fedcba9876543210"),
            },
            r"desired_nodes must be 0 \(before the block starts\) or max_nodes \(2\) on a Capacity Block, got 1",
        ),
        (
            {"max_nodes": 1, "capacity": CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1c")},
            r"subnets must be a subnet in us-east-1c",
        ),
        (
            {
                "max_nodes": 1,
                "capacity": CapacityReservation(reservation_id="cr-0123456789abcdef0", zone="us-east-1a"),
                "subnets": "b",
            },
            r"subnets\[0\] must be a subnet in us-east-1a, the zone of the capacity-reservation, got "
            r"'subnet-0bbbbbbbbbbbbbbb2 in us-east-1b'",
        ),
        ({"max_nodes": 1, "subnets": "ab"}, r"subnets must be exactly one subnet for an EFA node group"),
        ({"max_nodes": 1, "subnets": ""}, r"subnets must be at least one subnet"),
        (
            {"max_nodes": 1, "efa_interfaces_for_lustre": 17},
            r"efa_interfaces_for_lustre must be at most 16, the EFA interfaces of p5en.48xlarge, got 17",
        ),
        (
            {"max_nodes": 1, "efa_interface_count": 4, "efa_interfaces_for_lustre": 8},
            r"efa_interfaces_for_lustre must be at most 4, the EFA interfaces the node attaches",
        ),
        ({"max_nodes": 1, "efa_interfaces_for_lustre": -1}, r"efa_interfaces_for_lustre must be at least 0, got -1"),
    ],
)
def test_capacity_and_zone_rules(rules_cluster, options, message):
    scene, cluster = rules_cluster
    options = dict(options)
    if "subnets" in options:
        options["subnets"] = [{"a": scene.subnet_a, "b": scene.subnet_b}[c] for c in options["subnets"]]
    with pytest.raises(FmValidationError, match=message):
        cluster.add_gpu_node_group(f"Bad{next(_COUNTER)}", instance_type="p5en.48xlarge", **options)


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        (OnDemand(), r"capacity must be an UltraServerCapacityBlock: p6e-gb200.36xlarge is sold only"),
        (CapacityBlock(reservation_id="cr-0fedcba9876543210"), r"capacity must be an UltraServerCapacityBlock"),
    ],
)
def test_gb200_needs_an_ultraserver_block(rules_cluster, capacity, message):
    _, cluster = rules_cluster
    with pytest.raises(FmValidationError, match=message):
        cluster.add_gpu_node_group(
            f"Gb{next(_COUNTER)}", instance_type="p6e-gb200.36xlarge", capacity=capacity, max_nodes=9
        )


def test_ultraserver_block_rejects_other_types(rules_cluster):
    _, cluster = rules_cluster
    with pytest.raises(FmValidationError, match=r"instance_type must be p6e-gb200.36xlarge on a u-p6e-gb200x72"):
        cluster.add_gpu_node_group(
            "P5OnUltra",
            instance_type="p5.48xlarge",
            capacity=UltraServerCapacityBlock(resource_group_arn=GB200_ARN),
            max_nodes=1,
        )


def test_gb200_needs_kubernetes_1_33():
    scene = new_scene("EksOld")
    layer = lambda_.LayerVersion.from_layer_version_arn(
        scene.stack, "Layer", "arn:aws:lambda:us-east-1:123456789012:layer:kubectl-v32:1"
    )
    cluster = GpuEksCluster(
        scene.stack, "Cluster", vpc=scene.vpc, version=eks.KubernetesVersion.V1_32, kubectl_layer=layer
    )
    with pytest.raises(FmValidationError, match=r"cluster.version must be 1.33 or later for p6e-gb200.36xlarge"):
        cluster.add_gpu_node_group(
            "Gb200",
            instance_type="p6e-gb200.36xlarge",
            capacity=UltraServerCapacityBlock(resource_group_arn=GB200_ARN),
            max_nodes=18,
        )


def test_unknown_instance_type_lists_catalog(rules_cluster):
    _, cluster = rules_cluster
    with pytest.raises(FmValidationError, match=r"instance_type must be one of the catalog's types"):
        cluster.add_gpu_node_group("Unknown", instance_type="p9.huge", max_nodes=1)


def test_missing_kubectl_layer_names_the_package():
    scene = new_scene("EksNoLayer")
    with pytest.raises(FmValidationError, match=r"pip install aws-cdk.lambda-layer-kubectl-v31"):
        GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, version=eks.KubernetesVersion.V1_31)


def test_mime_parts_need_the_multipart_format(scene):
    from fmconstructs import GpuLaunchTemplate

    lt = GpuLaunchTemplate(scene.stack, "Shell", instance_type="p5.48xlarge", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"user_data_format must be 'mime-multipart'"):
        lt.add_user_data_part("application/node.eks.aws", "kind: NodeConfig")


def test_render_mime_multipart_orders_parts():
    from fmconstructs.compute.launch_template import MIME_BOUNDARY, render_mime_multipart

    text = render_mime_multipart(
        [("application/node.eks.aws", "a: 1\n"), ("text/x-shellscript", "#!/bin/bash\necho hi")]
    )
    assert text.startswith(f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\nMIME-Version: 1.0\n\n')
    assert text.index("application/node.eks.aws") < text.index("text/x-shellscript")
    # A blank line before every boundary (AWS PCS requires it).
    assert f"a: 1\n\n--{MIME_BOUNDARY}\n" in text and f"echo hi\n\n--{MIME_BOUNDARY}--" in text
    assert text.endswith(f"--{MIME_BOUNDARY}--\n")
