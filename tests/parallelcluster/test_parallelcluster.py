"""ParallelCluster construct: the provider stack, the custom resource and the configuration built from typed props."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError, OnDemand, UltraServerCapacityBlock
from fmconstructs.parallelcluster import (
    CapacityType,
    ComputeResource,
    CustomAction,
    DeletionPolicy,
    HeadNode,
    LoginNodePool,
    Monitoring,
    OperatingSystem,
    ParallelCluster,
    SharedLustre,
    SlurmQueue,
)

from tests.conftest import Scene, new_scene
from tests.support.parallelcluster import BLOCK, make_cluster


@pytest.fixture(scope="module")
def built() -> tuple[Scene, ParallelCluster]:
    scene = new_scene()
    cluster = make_cluster(
        scene,
        login_nodes=[LoginNodePool(name="login", instance_type="c7i.xlarge", subnet=scene.subnet_a, nodes=2)],
        tags={"team": "ml"},
    )
    cluster.add_override("Scheduling.SlurmQueues.0.JobExclusiveAllocation", True)
    return scene, cluster


def test_provider_is_a_nested_stack_from_the_pinned_template(built: tuple[Scene, ParallelCluster]) -> None:
    scene, _ = built
    template = scene.template()
    template.has_resource_properties(
        "AWS::CloudFormation::Stack",
        {
            "TemplateURL": {
                "Fn::Sub": "https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                "/parallelcluster/3.16.1/templates/custom_resource/cluster.yaml"
            }
        },
    )


def test_custom_resource_carries_name_token_and_policy(built: tuple[Scene, ParallelCluster]) -> None:
    scene, _ = built
    scene.template().has_resource_properties(
        "Custom::PclusterCluster",
        {
            "ClusterName": "train",
            "DeletionPolicy": "Retain",
            "ServiceToken": {"Fn::GetAtt": [Match.any_value(), "Outputs.ServiceToken"]},
            "ClusterConfiguration": Match.object_like(
                {"Image": {"Os": "alinux2023"}, "Scheduling": Match.object_like({"Scheduler": "slurm"})}
            ),
        },
    )


def test_capacity_block_queue_has_fixed_size_target_and_no_placement_group(
    built: tuple[Scene, ParallelCluster],
) -> None:
    _, cluster = built
    queue = cluster.to_dict()["Scheduling"]["SlurmQueues"][0]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    resource = queue["ComputeResources"][0]
    assert resource["MinCount"] == resource["MaxCount"] == 4
    assert resource["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0123456789abcdef0"}
    assert resource["Efa"] == {"Enabled": True, "GdrSupport": True}
    assert resource["Networking"] == {"PlacementGroup": {"Enabled": False}}


def test_head_node_imds_secured_and_subnet_token(built: tuple[Scene, ParallelCluster]) -> None:
    _, cluster = built
    head = cluster.to_dict()["HeadNode"]
    assert head["Imds"] == {"Secured": True}
    assert head["Networking"]["SubnetId"] == "subnet-0aaaaaaaaaaaaaaa1"


def test_login_nodes_tags_and_override(built: tuple[Scene, ParallelCluster]) -> None:
    _, cluster = built
    config = cluster.to_dict()
    assert config["LoginNodes"]["Pools"][0]["Count"] == 2
    assert config["Tags"] == [{"Key": "team", "Value": "ml"}]
    assert config["Scheduling"]["SlurmQueues"][0]["JobExclusiveAllocation"] is True


def test_override_reaches_the_template(built: tuple[Scene, ParallelCluster]) -> None:
    scene, _ = built
    resource = next(iter(scene.template().find_resources("Custom::PclusterCluster").values()))
    queue = resource["Properties"]["ClusterConfiguration"]["Scheduling"]["SlurmQueues"][0]
    assert queue["JobExclusiveAllocation"] is True


def test_yaml_round_trips(built: tuple[Scene, ParallelCluster], tmp_path: Any) -> None:
    _, cluster = built
    assert yaml.safe_load(cluster.to_yaml()) == cluster.to_dict()
    written = cluster.write_yaml(tmp_path / "cluster.yaml")
    assert yaml.safe_load(written.read_text()) == cluster.to_dict()


def test_attributes_are_getatts(built: tuple[Scene, ParallelCluster]) -> None:
    scene, cluster = built
    resolved = scene.stack.resolve(cluster.head_node_private_ip)
    assert resolved["Fn::GetAtt"][1] == "headNode.privateIpAddress"
    assert scene.stack.resolve(cluster.validation_messages)["Fn::GetAtt"][1] == "validationMessages"
    assert scene.stack.resolve(cluster.provider_log_group_arn)["Fn::GetAtt"][1] == "Outputs.LogGroupArn"
    assert scene.stack.resolve(cluster.log_group_name)["Fn::GetAtt"][1] == "logGroupName"
    assert scene.stack.resolve(cluster.head_node_public_ip)["Fn::GetAtt"][1] == "headNode.publicIpAddress"


def test_on_demand_efa_queue_gets_placement_group() -> None:
    resource = ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=8)
    config = resource.to_config()
    assert config["MinCount"] == 0 and config["MaxCount"] == 8
    assert config["Networking"] == {"PlacementGroup": {"Enabled": True}}
    assert "CapacityReservationTarget" not in config


def test_odcr_targets_reservation_in_on_demand_queue(scene: Scene) -> None:
    odcr = CapacityReservation(reservation_id="cr-0123456789abcdef1", instance_count=2)
    queue = SlurmQueue(
        name="odcr",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", capacity=odcr)],
    )
    config = queue.to_config()
    assert config["CapacityType"] == "ONDEMAND"
    assert config["ComputeResources"][0]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef1"
    }


def test_ultraserver_block_sizes_from_catalog() -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2")
    config = ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block).to_config()
    assert config["MinCount"] == config["MaxCount"] == 18
    assert config["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0123456789abcdef2"}


def test_cpu_type_outside_catalog_has_no_efa() -> None:
    config = ComputeResource(name="cpu", instance_type="c7i.4xlarge", max_nodes=4).to_config()
    assert "Efa" not in config and "Networking" not in config


def test_custom_actions_and_s3_access(scene: Scene) -> None:
    action = CustomAction(script="s3://my-bucket/setup.sh", args=["-v"])
    queue = SlurmQueue(
        name="q",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="cpu", instance_type="c7i.4xlarge")],
        on_node_configured=action,
        s3_read_buckets=["my-bucket"],
    )
    config = queue.to_config()
    assert config["CustomActions"] == {"OnNodeConfigured": {"Script": "s3://my-bucket/setup.sh", "Args": ["-v"]}}
    assert config["Iam"] == {"S3Access": [{"BucketName": "my-bucket"}]}


def test_monitoring_defaults() -> None:
    assert Monitoring().to_config() == {
        "DetailedMonitoring": False,
        "Logs": {"CloudWatch": {"Enabled": True, "RetentionInDays": 14}},
        "Dashboards": {"CloudWatch": {"Enabled": True}},
    }


def test_retain_warns_about_deleted_subnets() -> None:
    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Retain")
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=1,
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="p", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )
    subnet = vpc.isolated_subnets[0]
    ParallelCluster(
        stack,
        "Cluster",
        cluster_name="keep",
        deletion_policy=DeletionPolicy.RETAIN,
        head_node=HeadNode(instance_type="c7i.large", subnet=subnet),
        queues=[
            SlurmQueue(
                name="q", subnets=[subnet], compute_resources=[ComputeResource(name="c", instance_type="c7i.large")]
            )
        ],
    )
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("deletion_policy RETAIN"))
    assert warnings


# --- validation -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1abc", "a_b", "", "a" * 61, "abc\n"])
def test_rejects_bad_cluster_names(name: str) -> None:
    with pytest.raises(FmValidationError, match="cluster_name"):
        make_cluster(new_scene(), cluster_name=name)


def test_rejects_cluster_name_equal_to_stack_name() -> None:
    with pytest.raises(FmValidationError, match="different from the stack name"):
        make_cluster(new_scene("Same"), cluster_name="Same")


@pytest.mark.parametrize("name", ["GPU", "1q", "q_1", "a" * 26, "q\n"])
def test_rejects_bad_queue_names(scene: Scene, name: str) -> None:
    with pytest.raises(FmValidationError, match="name"):
        SlurmQueue(
            name=name,
            subnets=[scene.subnet_a],
            compute_resources=[ComputeResource(name="c", instance_type="c7i.large")],
        )


def test_block_requires_min_equal_max() -> None:
    with pytest.raises(FmValidationError, match="min_nodes"):
        ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK, min_nodes=1, max_nodes=4)


def test_block_max_at_most_reservation() -> None:
    with pytest.raises(FmValidationError, match="max_nodes"):
        ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK, min_nodes=5, max_nodes=5)


def test_efa_on_type_without_efa_rejected() -> None:
    with pytest.raises(FmValidationError, match="efa"):
        ComputeResource(name="cpu", instance_type="c7i.large", efa=True)


def test_block_and_on_demand_cannot_share_a_queue(scene: Scene) -> None:
    with pytest.raises(FmValidationError, match="CapacityType is per queue"):
        SlurmQueue(
            name="mixed",
            subnets=[scene.subnet_a],
            compute_resources=[
                ComputeResource(name="blk", instance_type="p5en.48xlarge", capacity=BLOCK),
                ComputeResource(name="od", instance_type="p5en.48xlarge", capacity=OnDemand()),
            ],
        )


def test_block_subnet_must_be_in_its_zone(scene: Scene) -> None:
    with pytest.raises(FmValidationError, match="subnet"):
        SlurmQueue(
            name="gpu",
            subnets=[scene.subnet_b],
            compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
        )


def test_spot_queue_rejects_blocks(scene: Scene) -> None:
    with pytest.raises(FmValidationError, match="SPOT queue"):
        SlurmQueue(
            name="s",
            subnets=[scene.subnet_a],
            capacity_type=CapacityType.SPOT,
            compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
        )


@pytest.mark.parametrize("key", ["parallelcluster:x"])
def test_reserved_tag_prefix(key: str) -> None:
    with pytest.raises(FmValidationError, match="tags"):
        make_cluster(new_scene(), tags={key: "v"})


def test_ultraserver_block_rejects_other_types() -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2")
    with pytest.raises(FmValidationError, match="instance_type"):
        ComputeResource(name="p5", instance_type="p5.48xlarge", capacity=block)


def test_ultraserver_block_by_resource_group_only_is_refused() -> None:
    block = UltraServerCapacityBlock(resource_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gb200")
    with pytest.raises(FmValidationError, match="reservation_id"):
        ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block)


# --- outputs, shared groups, images, versions ---------------------------------------------------------------------


def test_yaml_file_is_written_into_the_assembly(tmp_path: Any) -> None:
    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Yaml")
    subnet = ec2.Subnet.from_subnet_id(stack, "S", "subnet-0123456789abcdef0")
    cluster = ParallelCluster(
        stack,
        "Cluster",
        cluster_name="yaml",
        head_node=HeadNode(instance_type="c7i.large", subnet=subnet),
        queues=[
            SlurmQueue(
                name="q", subnets=[subnet], compute_resources=[ComputeResource(name="c", instance_type="c7i.large")]
            )
        ],
    )
    app.synth()
    written = tmp_path / "Yaml.Cluster.pcluster.yaml"
    assert cluster.yaml_file_name == written.name
    assert yaml.safe_load(written.read_text())["HeadNode"]["Networking"]["SubnetId"] == "subnet-0123456789abcdef0"


def test_node_security_group_joins_every_node_and_opens_lustre(scene: Scene) -> None:
    from fmconstructs import EfaSecurityGroup
    from fmconstructs.storage import LustreFileSystem

    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    cluster = make_cluster(
        scene,
        shared_storage=[SharedLustre(file_system=fs, mount_point="/fsx")],
        login_nodes=[LoginNodePool(name="login", instance_type="c7i.xlarge", subnet=scene.subnet_a)],
        node_security_group=efa,
    )
    config = cluster.to_dict()
    group = scene.stack.resolve(efa.security_group_id)
    for section in (config["HeadNode"], config["Scheduling"]["SlurmQueues"][0], config["LoginNodes"]["Pools"][0]):
        assert section["Networking"]["AdditionalSecurityGroups"] == [group]
    assert config["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == scene.stack.resolve(fs.file_system_id)
    scene.template().has_resource_properties(
        "AWS::EC2::SecurityGroupIngress", {"FromPort": 988, "SourceSecurityGroupId": group}
    )


def test_retain_warns_about_a_deletable_file_system(scene: Scene) -> None:
    from fmconstructs.storage import LustreFileSystem

    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=1200,
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    make_cluster(scene, deletion_policy=DeletionPolicy.RETAIN, shared_storage=[SharedLustre(file_system=fs)])
    scene.template().has_resource_properties("Custom::PclusterCluster", {"DeletionPolicy": "Retain"})
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp("file system fsx"))
    assert found


def test_retain_without_deletable_dependencies_is_quiet(scene: Scene) -> None:
    make_cluster(scene, deletion_policy=DeletionPolicy.RETAIN)
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp("deletion_policy RETAIN"))
    assert found == []


def test_gpu_node_image_becomes_a_typed_ssm_parameter(scene: Scene) -> None:
    from fmconstructs import GpuNodeImage

    image = GpuNodeImage(scene.stack, "Image", instance_types=["p5.48xlarge"], vpc=scene.vpc, subnet=scene.subnet_a)
    cluster = make_cluster(scene, custom_ami=image)
    ami = cluster.to_dict()["Image"]["CustomAmi"]
    (parameter,) = [p for p in scene.template().to_json()["Parameters"] if ami == {"Ref": p}]
    assert scene.template().to_json()["Parameters"][parameter]["Type"] == (
        "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    )
    assert scene.template().to_json()["Parameters"][parameter]["Default"] == image.ssm_parameter_name


def test_custom_ami_id_and_os(scene: Scene) -> None:
    config = make_cluster(scene, custom_ami="ami-0123456789abcdef0", os=OperatingSystem.UBUNTU2204).to_dict()
    assert config["Image"] == {"Os": "ubuntu2204", "CustomAmi": "ami-0123456789abcdef0"}


def test_gb200_needs_parallelcluster_3_14(scene: Scene) -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2")
    queue = SlurmQueue(
        name="gb200",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block)],
    )
    with pytest.raises(FmValidationError, match=r"3\.14\.0 or later"):
        make_cluster(scene, queues=[queue], version="3.13.2")
    assert make_cluster(new_scene(), queues=[queue], version="3.14.0").version == "3.14.0"


def test_job_exclusive_allocation(scene: Scene) -> None:
    queue = SlurmQueue(
        name="q",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="c", instance_type="c7i.large")],
        job_exclusive_allocation=True,
    )
    assert queue.to_config()["JobExclusiveAllocation"] is True


def test_override_into_missing_list_index_refused(scene: Scene) -> None:
    cluster = make_cluster(scene)
    cluster.add_override("Scheduling.SlurmQueues.5.Name", "x")
    with pytest.raises(FmValidationError, match="path"):
        cluster.to_dict()


# --- input sweep (issue 10 rule 3): wrong types, NaN/inf, bools as counts, str for sequences, newlines, tokens -----

NAN = float("nan")
INF = float("inf")


def _sub(scene: Scene) -> ec2.ISubnet:
    return scene.subnet_a


BAD_COMPUTE: list[tuple[str, Any]] = [
    ("name", 3),
    ("name", "gpu\n"),
    ("name", None),
    ("instance_type", 5),
    ("instance_type", ""),
    ("min_nodes", NAN),
    ("min_nodes", True),
    ("min_nodes", -1),
    ("max_nodes", INF),
    ("max_nodes", 0),
    ("max_nodes", "4"),
    ("capacity", "ONDEMAND"),
    ("efa", "yes"),
    ("placement_group", 1),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_COMPUTE)
def test_compute_resource_rejects(parameter: str, value: Any) -> None:
    props: dict[str, Any] = {"name": "c", "instance_type": "c7i.large", parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        ComputeResource(**props)


BAD_QUEUE: list[tuple[str, Any]] = [
    ("name", 1),
    ("subnets", "subnet-0123"),
    ("subnets", []),
    ("subnets", [None]),
    ("compute_resources", []),
    ("compute_resources", "c"),
    ("compute_resources", [{"Name": "c"}]),
    ("capacity_type", "ONDEMAND"),
    ("security_groups", "sg-1"),
    ("on_node_start", "s3://b/x.sh"),
    ("s3_read_buckets", "bucket"),
    ("s3_read_buckets", ["Bucket_Upper"]),
    ("custom_ami", "ami-1\n"),
    ("custom_ami", 7),
    ("custom_slurm_settings", [("a", "b")]),
    ("job_exclusive_allocation", "true"),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_QUEUE)
def test_slurm_queue_rejects(scene: Scene, parameter: str, value: Any) -> None:
    props: dict[str, Any] = {
        "name": "q",
        "subnets": [scene.subnet_a],
        "compute_resources": [ComputeResource(name="c", instance_type="c7i.large")],
        parameter: value,
    }
    with pytest.raises(FmValidationError, match=parameter):
        SlurmQueue(**props)


BAD_HEAD: list[tuple[str, Any]] = [
    ("instance_type", None),
    ("subnet", "subnet-0123456789abcdef0"),
    ("key_name", 5),
    ("key_name", "key\n"),
    ("imds_secured", 1),
    ("security_groups", "sg-1"),
    ("on_node_configured", {"Script": "s3://b/x"}),
    ("s3_read_buckets", "b"),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_HEAD)
def test_head_node_rejects(scene: Scene, parameter: str, value: Any) -> None:
    props: dict[str, Any] = {"instance_type": "c7i.large", "subnet": scene.subnet_a, parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        HeadNode(**props)


BAD_LOGIN: list[tuple[str, Any]] = [
    ("name", "Login"),
    ("nodes", True),
    ("nodes", NAN),
    ("nodes", -1),
    ("subnet", None),
    ("key_name", ""),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_LOGIN)
def test_login_pool_rejects(scene: Scene, parameter: str, value: Any) -> None:
    props: dict[str, Any] = {"name": "login", "instance_type": "c7i.large", "subnet": scene.subnet_a, parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        LoginNodePool(**props)


@pytest.mark.parametrize(
    ("parameter", "value"),
    [("script", "http://x/y.sh"), ("script", "s3://b/x.sh\n"), ("script", 3), ("args", "a"), ("args", [1])],
)
def test_custom_action_rejects(parameter: str, value: Any) -> None:
    props: dict[str, Any] = {"script": "s3://b/x.sh", parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        CustomAction(**props)


@pytest.mark.parametrize(
    ("parameter", "value"),
    [("logs", "yes"), ("log_retention_days", 2), ("log_retention_days", True), ("log_retention_days", NAN)],
)
def test_monitoring_rejects(parameter: str, value: Any) -> None:
    props: dict[str, Any] = {parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        Monitoring(**props)


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("file_system", "fs-0123456789abcdef0"),
        ("name", "FSX"),
        ("name", "a" * 31),
        ("mount_point", "/.fsx"),
        ("mount_point", "/"),
        ("mount_point", "/fsx\n"),
    ],
)
def test_shared_lustre_rejects(scene: Scene, parameter: str, value: Any) -> None:
    from fmconstructs.storage import LustreFileSystem

    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
    props: dict[str, Any] = {"file_system": fs, parameter: value}
    with pytest.raises(FmValidationError, match=parameter):
        SharedLustre(**props)


BAD_CLUSTER: list[tuple[str, Any]] = [
    ("head_node", None),
    ("queues", []),
    ("queues", "gpu"),
    ("queues", [None]),
    ("cluster_name", 5),
    ("os", "alinux2023"),
    ("custom_ami", "ami-xyz"),
    ("login_nodes", "login"),
    ("shared_storage", [object()]),
    ("monitoring", {}),
    ("tags", [("a", "b")]),
    ("tags", {"a": 1}),
    ("version", "3.16"),
    ("version", 3.16),
    ("version", "3.16.1\n"),
    ("deletion_policy", "Retain"),
    ("node_security_group", "sg-1"),
]


@pytest.mark.parametrize(("parameter", "value"), BAD_CLUSTER)
def test_cluster_rejects(parameter: str, value: Any) -> None:
    with pytest.raises(FmValidationError, match=parameter):
        make_cluster(new_scene(), **{parameter: value})


def test_duplicate_queue_names_rejected(scene: Scene) -> None:
    queue = SlurmQueue(
        name="q", subnets=[scene.subnet_a], compute_resources=[ComputeResource(name="c", instance_type="c7i.large")]
    )
    with pytest.raises(FmValidationError, match="queues"):
        make_cluster(scene, queues=[queue, queue])


def test_everything_a_token_synthesizes() -> None:
    app = cdk.App(builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Tokens")

    def text(name: str) -> str:
        return cdk.CfnParameter(stack, name).value_as_string

    def number(name: str) -> float:
        return cdk.CfnParameter(stack, name, type="Number").value_as_number

    subnet = ec2.Subnet.from_subnet_id(stack, "Subnet", text("SubnetId"))
    group = ec2.SecurityGroup.from_security_group_id(stack, "Group", text("GroupId"))
    block_size: Any = number("BlockSize")  # a number token (CapacityBlock.instance_count accepts them)
    block = CapacityBlock(reservation_id=text("BlockId"), instance_count=block_size, zone=text("Zone"))
    cluster = ParallelCluster(
        stack,
        "Cluster",
        cluster_name=text("ClusterName"),
        custom_ami=text("Ami"),
        head_node=HeadNode(
            instance_type=text("HeadType"),
            subnet=subnet,
            key_name=text("Key"),
            security_groups=[group],
            on_node_configured=CustomAction(script=text("Script"), args=[text("Arg")]),
            s3_read_buckets=[text("Bucket")],
        ),
        login_nodes=[LoginNodePool(name="login", instance_type=text("LoginType"), subnet=subnet, nodes=number("N"))],
        queues=[
            SlurmQueue(
                name="gpu",
                subnets=[subnet],
                compute_resources=[
                    ComputeResource(
                        name="p5en",
                        instance_type="p5en.48xlarge",
                        capacity=block,
                        min_nodes=number("Min"),
                        max_nodes=number("Max"),
                    )
                ],
                custom_ami=text("QueueAmi"),
            ),
            SlurmQueue(
                name="cpu",
                subnets=[subnet],
                compute_resources=[ComputeResource(name="c", instance_type=text("CpuType"), max_nodes=number("M"))],
            ),
        ],
        tags={"team": text("Team")},
        node_security_group=group,
    )
    resource = next(iter(Template.from_stack(stack).find_resources("Custom::PclusterCluster").values()))
    assert resource["Properties"]["ClusterName"] == {"Ref": "ClusterName"}
    queue = cluster.to_dict()["Scheduling"]["SlurmQueues"][0]
    assert queue["ComputeResources"][0]["CapacityReservationTarget"] == {"CapacityReservationId": {"Ref": "BlockId"}}
    assert queue["ComputeResources"][0]["MinCount"] == {"Ref": "Min"}


# --- ParallelCluster 3.16.1 rules (schema patterns, constants.py, validators) -------------------------------------


def test_operating_systems_are_those_of_3_16_1() -> None:
    # aws-parallelcluster 3.16.1 constants.py SUPPORTED_OSES
    assert {o.value for o in OperatingSystem} == {
        "alinux2023",
        "ubuntu2204",
        "ubuntu2404",
        "rhel8",
        "rocky8",
        "rhel9",
        "rocky9",
    }


@pytest.mark.parametrize("os_value", [OperatingSystem.RHEL8, OperatingSystem.ROCKY8, OperatingSystem.RHEL9])
def test_gb200_refuses_unsupported_os(scene: Scene, os_value: OperatingSystem) -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2")
    queue = SlurmQueue(
        name="gb200",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block)],
    )
    with pytest.raises(FmValidationError, match="os must be one of"):
        make_cluster(scene, queues=[queue], os=os_value)


def test_ultraserver_block_of_two_ultraservers_refused() -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2", ultraserver_count=2)
    with pytest.raises(FmValidationError, match="ultraserver_count"):
        ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block)


def test_x36_ultraserver_block_is_nine_nodes() -> None:
    block = UltraServerCapacityBlock(reservation_id="cr-0123456789abcdef2", ultraserver_type="u-p6e-gb200x36")
    config = ComputeResource(name="gb200", instance_type="p6e-gb200.36xlarge", capacity=block).to_config()
    assert config["MinCount"] == config["MaxCount"] == 9


def test_max_below_min_refused_on_any_type() -> None:
    with pytest.raises(FmValidationError, match="min_nodes"):
        ComputeResource(name="c", instance_type="c7i.large", min_nodes=3, max_nodes=2)


def test_malformed_subnet_id_refused(scene: Scene) -> None:
    bad = ec2.Subnet.from_subnet_attributes(scene.stack, "Bad", subnet_id="subnet-123", availability_zone="us-east-1a")
    with pytest.raises(FmValidationError, match="subnet_id"):
        SlurmQueue(name="q", subnets=[bad], compute_resources=[ComputeResource(name="c", instance_type="c7i.large")])
    with pytest.raises(FmValidationError, match="subnet_id"):
        HeadNode(instance_type="c7i.large", subnet=bad)


def test_malformed_security_group_id_refused(scene: Scene) -> None:
    bad = ec2.SecurityGroup.from_security_group_id(scene.stack, "Bad", "sg-12")
    with pytest.raises(FmValidationError, match="security_group_id"):
        HeadNode(instance_type="c7i.large", subnet=scene.subnet_a, security_groups=[bad])
    with pytest.raises(FmValidationError, match="security_group_id"):
        make_cluster(scene, node_security_group=bad)


def test_placement_group_on_a_block_warns(scene: Scene) -> None:
    queue = SlurmQueue(
        name="gpu",
        subnets=[scene.subnet_a],
        compute_resources=[
            ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK, placement_group=True)
        ],
    )
    make_cluster(scene, queues=[queue])
    found = Annotations.from_stack(scene.stack).find_warning(
        "*", Match.string_like_regexp("placement group on a Capacity Block")
    )
    assert found
    config = queue.to_config()["ComputeResources"][0]
    assert config["Networking"] == {"PlacementGroup": {"Enabled": True}}


def test_default_block_has_no_placement_group_warning(scene: Scene) -> None:
    make_cluster(scene)
    found = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp("placement group"))
    assert found == []


def test_odcr_subnet_must_be_in_its_zone(scene: Scene) -> None:
    odcr = CapacityReservation(reservation_id="cr-0123456789abcdef1", zone="us-east-1a")
    with pytest.raises(FmValidationError, match="subnet"):
        SlurmQueue(
            name="odcr",
            subnets=[scene.subnet_b],
            compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", capacity=odcr)],
        )
