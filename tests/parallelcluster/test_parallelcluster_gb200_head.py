"""ParallelCluster on GB200: the head node's architecture follows the compute nodes' (issue 18 section 2).

ParallelCluster's InstanceArchitectureCompatibilityValidator (pcluster/validators/cluster_validators.py) refuses a
compute type that does not support the head node's architecture; p6e-gb200 is arm64 (Grace), so the default head
node of a GB200 cluster is the Graviton c7g.2xlarge, and x86_64 types keep c7i.2xlarge.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from fmconstructs import CATALOG, CapacityBlock, CpuArchitecture, FmValidationError, UltraServerCapacityBlock
from fmconstructs.parallelcluster import (
    ComputeResource,
    HeadNode,
    ParallelCluster,
    SlurmQueue,
    head_node_instance_type_for,
    login_node_instance_type_for,
)
from fmconstructs.parallelcluster.limits import NODE_TYPE_FACTS, node_type_facts
from fmconstructs.platform import ParallelClusterOptions, PlatformStorage, TrainingPlatform

from tests.conftest import Scene, new_app, new_scene

GB200 = "p6e-gb200.36xlarge"
ULTRASERVER = UltraServerCapacityBlock(reservation_id="cr-0a1b2c3d4e5f60718", ultraserver_type="u-p6e-gb200x72")


def _platform(scene: Scene, instance_type: str, capacity: Any, nodes: int, **options: Any) -> TrainingPlatform:
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type=instance_type,
        nodes=nodes,
        capacity=capacity,
        orchestrator=ParallelClusterOptions(cluster_name="platform-pc", **options),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )


def _config(platform: TrainingPlatform) -> dict[str, Any]:
    cluster = platform.cluster
    assert isinstance(cluster, ParallelCluster)
    return cluster.to_dict()


def test_gb200_platform_gets_a_graviton_head_and_login_node() -> None:
    config = _config(_platform(new_scene(), GB200, ULTRASERVER, 18))
    assert config["HeadNode"]["InstanceType"] == "c7g.2xlarge"
    assert config["LoginNodes"]["Pools"][0]["InstanceType"] == "c7g.xlarge"
    assert config["Scheduling"]["SlurmQueues"][0]["ComputeResources"][0]["InstanceType"] == GB200


def test_x86_platform_keeps_the_intel_head_and_login_node() -> None:
    block = CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2, zone="us-east-1a")
    config = _config(_platform(new_scene(), "p5en.48xlarge", block, 2))
    assert config["HeadNode"]["InstanceType"] == "c7i.2xlarge"
    assert config["LoginNodes"]["Pools"][0]["InstanceType"] == "c7i.xlarge"


def test_options_default_to_the_architecture_rule() -> None:
    options = ParallelClusterOptions()
    assert options.head_node_instance_type is None and options.login_instance_type is None


def test_explicit_arm64_head_node_is_kept_on_gb200() -> None:
    config = _config(_platform(new_scene(), GB200, ULTRASERVER, 18, head_node_instance_type="m7g.4xlarge"))
    assert config["HeadNode"]["InstanceType"] == "m7g.4xlarge"


def test_explicit_x86_head_node_is_refused_on_gb200() -> None:
    with pytest.raises(FmValidationError, match=r"^head_node\.instance_type must be an arm64 instance type") as caught:
        _platform(new_scene(), GB200, ULTRASERVER, 18, head_node_instance_type="c7i.2xlarge")
    assert "InstanceArchitectureCompatibilityValidator" in str(caught.value)
    assert "c7g.2xlarge" in str(caught.value)


@pytest.mark.parametrize("head", ["c7i.2xlarge", "m7i.8xlarge", "p5en.48xlarge"])
def test_parallelcluster_refuses_an_x86_head_node_beside_gb200(head: str) -> None:
    scene = new_scene()
    queue = SlurmQueue(
        name="gb200",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="nvl72", instance_type=GB200, capacity=ULTRASERVER)],
    )
    with pytest.raises(FmValidationError, match=r"queue gb200 compute resource nvl72 is p6e-gb200\.36xlarge \(arm64\)"):
        ParallelCluster(
            scene.stack,
            "Cluster",
            cluster_name="gb",
            head_node=HeadNode(instance_type=head, subnet=scene.subnet_a),
            queues=[queue],
        )


def test_parallelcluster_refuses_an_arm64_head_node_beside_x86_gpus() -> None:
    scene = new_scene()
    queue = SlurmQueue(
        name="gpu",
        subnets=[scene.subnet_a],
        compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge", max_nodes=2)],
    )
    with pytest.raises(FmValidationError, match=r"an x86_64 instance type such as c7i\.2xlarge"):
        ParallelCluster(
            scene.stack,
            "Cluster",
            cluster_name="x",
            head_node=HeadNode(instance_type="c7g.2xlarge", subnet=scene.subnet_a),
            queues=[queue],
        )


def test_gb200_example_head_node_is_arm64() -> None:
    from examples.parallelcluster_stacks import ParallelClusterGb200Stack

    stack = ParallelClusterGb200Stack(new_app(), "FmParallelClusterGb200")
    config = stack.cluster.to_dict()
    head = config["HeadNode"]["InstanceType"]
    facts = node_type_facts(head)
    assert facts is not None and facts.architecture is CpuArchitecture.ARM64
    assert head == head_node_instance_type_for(CATALOG.get(GB200).architecture) == "c7g.2xlarge"


@pytest.mark.parametrize("architecture", list(CpuArchitecture))
def test_default_types_have_the_architecture_they_serve(architecture: CpuArchitecture) -> None:
    for instance_type in (head_node_instance_type_for(architecture), login_node_instance_type_for(architecture)):
        facts = node_type_facts(instance_type)
        assert facts is not None and facts.architecture is architecture


def test_node_type_facts_match_describe_instance_types() -> None:
    """NODE_TYPE_FACTS against the DescribeInstanceTypes data moto bundles (as tests/catalog/test_catalog.py does)."""
    with mock_aws():
        client = boto3.client("ec2", region_name="us-east-1")
        described = client.describe_instance_types(InstanceTypes=sorted(NODE_TYPE_FACTS))["InstanceTypes"]
    api = {entry["InstanceType"]: entry for entry in described}
    assert sorted(api) == sorted(NODE_TYPE_FACTS)
    for instance_type, facts in NODE_TYPE_FACTS.items():
        assert api[instance_type]["ProcessorInfo"]["SupportedArchitectures"] == [facts.architecture.value]
        assert api[instance_type]["MemoryInfo"]["SizeInMiB"] == facts.memory_mib


def test_gb200_platform_passes_parallelclusters_architecture_validator() -> None:
    """The generated GB200 configuration through aws-parallelcluster's own validators (.venv-pcluster), with the
    instance types described: InstanceArchitectureCompatibilityValidator and HeadNodeMemorySizeValidator ran."""
    from tests.support.parallelcluster_schema import check_configs, replace_intrinsics

    config = replace_intrinsics(_config(_platform(new_scene(), GB200, ULTRASERVER, 18)))
    x86_head = {**config, "HeadNode": {**config["HeadNode"], "InstanceType": "c7i.2xlarge"}}
    good, bad = check_configs([config, x86_head], offline_validators=True)
    assert good["ok"], good
    assert not [s for s in good["validator_registration_skipped"] if "head node" in s], good
    assert not bad["ok"]
    messages = [
        f["message"]
        for f in bad["validator_failures"]
        if f["validator"] == "InstanceArchitectureCompatibilityValidator"
    ]
    assert messages and "(p6e-gb200.36xlarge) supports the architectures ['arm64']" in messages[0]
