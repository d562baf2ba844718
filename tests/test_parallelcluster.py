"""ParallelCluster construct: the provider stack, the custom resource and the configuration built from typed props."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match

from fmconstructs import CapacityBlock, CapacityReservation, FmValidationError, OnDemand, UltraServerCapacityBlock
from fmconstructs.parallelcluster import (
    CapacityType,
    ComputeResource,
    CustomAction,
    DeletionPolicy,
    HeadNode,
    LoginNodePool,
    Monitoring,
    ParallelCluster,
    SlurmQueue,
)
from tests.conftest import Scene, new_scene

BLOCK = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=4, zone="us-east-1a")


def make_cluster(scene: Scene, **overrides: Any) -> ParallelCluster:
    props: dict[str, Any] = {
        "cluster_name": "train",
        "head_node": HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a),
        "queues": [
            SlurmQueue(
                name="gpu",
                subnets=[scene.subnet_a],
                compute_resources=[ComputeResource(name="p5en", instance_type="p5en.48xlarge", capacity=BLOCK)],
            )
        ],
    }
    props.update(overrides)
    return ParallelCluster(scene.stack, "Cluster", **props)


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
            "DeletionPolicy": "Delete",
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
