"""TrainingPlatform: one construct for capacity, storage, one orchestrator and observability, built with every backend.

The motivating bug: wiring the README's storage and PCS examples together gave two EFA security groups; the platform
uses ONE, shared by the GPU nodes and the EFA-enabled file system.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from fmconstructs import CapacityBlock, CapacityReservation, EfaSecurityGroup, OnDemand, UltraServerCapacityBlock
from fmconstructs.capacity_events import DETAIL_TYPES
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup
from fmconstructs.hyperpod.eks_dependencies import HyperPodDependenciesChart
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.parallelcluster import ParallelCluster, SlurmQueue
from fmconstructs.pcs import FileSystemMount, PcsAmi, PcsCluster, PcsGpuNodeGroup
from fmconstructs.platform import (
    Backend,
    EksOptions,
    HyperPodOptions,
    HyperPodOrchestration,
    PcsOptions,
    PlatformObservability,
    PlatformStorage,
    TrainingPlatform,
)
from fmconstructs.storage import LustreFileSystem, size_for_checkpoint, size_for_throughput

from tests.conftest import ENV, new_app, new_scene
from tests.support.hyperpod_efa_group import efa_group_ids
from tests.support.platform import (
    AMI,
    BLOCK,
    CHECKPOINT_BYTES,
    CHECKPOINT_SECONDS,
    Built,
    _built,
    _orchestrator,
    _platform,
)

#: HyperPod on EKS needs its dependencies chart (the platform refuses to go without it).
CHART = HyperPodDependenciesChart.from_oci(
    "oci://123456789012.dkr.ecr.us-east-1.amazonaws.com/helm-charts/hyperpod-helm-chart", version="0.1.0"
)


@pytest.fixture(scope="module", params=list(Backend), ids=[b.value for b in Backend])
def built(request: pytest.FixtureRequest) -> Built:
    return _built(request.param)


def _logical_id(built: Built, construct: Any) -> str:
    resource = construct.node.default_child
    return str(built.stack.resolve(resource.logical_id))


def _references(template: Template, logical_id: str) -> set[str]:
    """Resource types whose properties reference ``logical_id`` (Ref or GetAtt)."""
    types = set()
    for resource in template.to_json()["Resources"].values():
        text = json.dumps(resource.get("Properties", {}))
        if f'"Ref": "{logical_id}"' in text or f'["{logical_id}", "GroupId"]' in text:
            types.add(resource["Type"])
    return types


NODE_SIDE = {
    Backend.PCS: "AWS::EC2::LaunchTemplate",
    Backend.PARALLELCLUSTER: "Custom::PclusterCluster",
    Backend.EKS: "AWS::EC2::LaunchTemplate",
    Backend.HYPERPOD: "AWS::SageMaker::Cluster",
}
CLUSTER_TYPES = {
    Backend.PCS: PcsCluster,
    Backend.PARALLELCLUSTER: ParallelCluster,
    Backend.EKS: GpuEksCluster,
    Backend.HYPERPOD: HyperPodCluster,
}
NODE_GROUP_TYPES = {
    Backend.PCS: PcsGpuNodeGroup,
    Backend.PARALLELCLUSTER: SlurmQueue,
    Backend.EKS: GpuNodeGroup,
    Backend.HYPERPOD: HyperPodInstanceGroup,
}


# --- one EFA security group --------------------------------------------------------------------------------------------
def test_exactly_one_efa_security_group(built):
    # GIVEN a platform with storage WHEN synthesized THEN one EfaSecurityGroup exists in the stack, the platform's
    groups = [c for c in built.stack.node.find_all() if isinstance(c, EfaSecurityGroup)]
    assert groups == [built.platform.security_group]


def test_efa_group_is_the_nodes_group(built):
    group_id = _logical_id(built, built.platform.security_group.security_group)
    assert NODE_SIDE[built.backend] in _references(built.template, group_id)


def test_efa_file_system_shares_the_nodes_efa_group(built):
    file_system = built.platform.file_system
    assert file_system is not None
    group_id = _logical_id(built, built.platform.security_group.security_group)
    security_group_ids = built.template.find_resources("AWS::FSx::FileSystem")
    ((_, fsx),) = security_group_ids.items()
    ids = fsx["Properties"]["SecurityGroupIds"]
    # Every backend, HyperPod Slurm included (its node set-up mounts over EFA): the file system joins the nodes' group.
    assert file_system.efa_enabled and fsx["Properties"]["LustreConfiguration"]["EfaEnabled"] is True
    assert {"Fn::GetAtt": [group_id, "GroupId"]} in ids
    assert file_system.efa_security_group is built.platform.security_group.security_group


def test_nodes_and_file_system_in_one_subnet(built):
    built.template.has_resource_properties("AWS::FSx::FileSystem", {"SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1"]})
    assert built.platform.subnet.subnet_id == "subnet-0aaaaaaaaaaaaaaa1"


# --- storage -------------------------------------------------------------------------------------------------------------
def test_fsx_capacity_is_the_sizing_result(built):
    efa = True  # the default for every backend's platform here (HyperPod: Slurm without a base-config)
    if built.backend in (Backend.PCS, Backend.HYPERPOD):
        expected = size_for_checkpoint(CHECKPOINT_BYTES, CHECKPOINT_SECONDS, efa_enabled=efa)
    else:
        expected = size_for_throughput(target_gbytes_per_s=4.6875, efa_enabled=efa)
    assert built.platform.sizing == expected
    built.template.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": expected.storage_capacity_gib,
            "LustreConfiguration": Match.object_like(
                {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": expected.throughput_mbps_per_tib}
            ),
        },
    )


def test_file_system_is_linked_to_a_new_secure_bucket(built):
    bucket = built.platform.data_bucket
    assert bucket is not None
    bucket_id = _logical_id(built, bucket)
    associations = built.template.find_resources("AWS::FSx::DataRepositoryAssociation")
    assert {a["Properties"]["FileSystemPath"] for a in associations.values()} == {"/datasets", "/checkpoints"}
    assert all(bucket_id in json.dumps(a["Properties"]["DataRepositoryPath"]) for a in associations.values())
    built.template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "Properties": Match.object_like({"VersioningConfiguration": {"Status": "Enabled"}}),
        },
    )


# --- observability ---------------------------------------------------------------------------------------------------
def test_collectors_send_to_the_workspace(built):
    workspace = built.platform.prometheus_workspace
    assert workspace is not None
    if built.backend is Backend.EKS:
        built.template.resource_count_is("AWS::APS::Scraper", 1)
        return
    # PCS (monitor_pcs_cluster), ParallelCluster (node bootstrap policy), HyperPod Slurm (execution role).
    statements = [
        s
        for r in built.template.to_json()["Resources"].values()
        if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert any("aps:RemoteWrite" in json.dumps(s["Action"]) for s in statements)


def test_new_observability_creates_workspaces_here_existing_does_not(built):
    count = 1 if built.new_observability else 0
    built.template.resource_count_is("AWS::APS::Workspace", count)
    built.template.resource_count_is("AWS::Grafana::Workspace", count)
    assert built.platform.grafana_workspace is not None


def test_file_system_alarms_go_to_the_alert_topic(built):
    alarms = built.template.find_resources("AWS::CloudWatch::Alarm")
    assert alarms and all(a["Properties"].get("AlarmActions") for a in alarms.values())


def test_capacity_block_events_reach_the_alert_topic(built):
    # HyperPod takes no Capacity Block; the others are on one with a workspace.
    events = built.platform.capacity_events
    if built.backend is Backend.HYPERPOD:
        assert events is None
        return
    assert events is not None
    rules = built.template.find_resources("AWS::Events::Rule")
    patterns = [r["Properties"]["EventPattern"] for r in rules.values() if "EventPattern" in r["Properties"]]
    (pattern,) = [p for p in patterns if set(p.get("detail-type", [])) == set(DETAIL_TYPES)]
    assert BLOCK in json.dumps(pattern)  # only this platform's block


def test_capacity_block_events_can_be_turned_off(scene):
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    platform = _platform(
        scene,
        capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
        observability=PlatformObservability.existing(prometheus_workspace=workspace),
        capacity_block_events=False,
        health=None,  # the remediation handler has its own EventBridge rule (AWS Health scheduled changes)
    )
    assert platform.capacity_events is None
    template = scene.template()
    template.resource_count_is("AWS::Events::Rule", 0)
    # existing workspace without Grafana: the remote-write URL is an output, no Grafana URL
    outputs = template.to_json()["Outputs"]
    assert any(k.startswith("PlatformPrometheusRemoteWriteUrl") for k in outputs)
    assert not any(k.startswith("PlatformGrafanaUrl") for k in outputs)


# --- outputs and attributes ----------------------------------------------------------------------------------------
COMMON_OUTPUTS = ("FileSystemId", "FileSystemDnsName", "FileSystemMountName", "DataBucketName", "GrafanaUrl")
BACKEND_OUTPUTS = {
    Backend.PCS: ("ClusterId", "LoginCommand", "GpuNodesCommand"),
    Backend.PARALLELCLUSTER: ("ClusterName", "HeadNodePrivateIp"),
    Backend.EKS: ("EksClusterName", "UpdateKubeconfigCommand", "VolumeClaim"),
    Backend.HYPERPOD: ("HyperPodClusterArn", "HyperPodClusterName", "ClusterHealthCommand"),
}


def test_outputs_with_descriptions(built):
    outputs = built.template.to_json()["Outputs"]
    for name in (*COMMON_OUTPUTS, *BACKEND_OUTPUTS[built.backend]):
        matches = [o for key, o in outputs.items() if key.startswith(f"Platform{name}")]
        assert len(matches) == 1, name
        assert len(matches[0]["Description"]) > 10


def test_lower_level_constructs_are_attributes(built):
    platform = built.platform
    assert isinstance(platform.cluster, CLUSTER_TYPES[built.backend])
    assert isinstance(platform.node_group, NODE_GROUP_TYPES[built.backend])
    assert isinstance(platform.file_system, LustreFileSystem)
    assert isinstance(platform.prometheus_workspace, PrometheusWorkspace)
    assert platform.backend is built.backend


# --- backend specifics -----------------------------------------------------------------------------------------------
def test_pcs_gpu_nodes_mount_fsx_and_use_the_block():
    built = _built(Backend.PCS)
    built.template.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {"PurchaseOption": "CAPACITY_BLOCK", "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2}},
    )
    built.template.has_resource_properties("AWS::PCS::Queue", {"Name": "gpu"})
    fs = built.platform.file_system
    assert fs is not None and fs.efa_client_groups  # the GPU nodes registered as EFA clients


def test_parallelcluster_shares_fsx_and_efa_group():
    built = _built(Backend.PARALLELCLUSTER)
    cluster = built.platform.cluster
    assert isinstance(cluster, ParallelCluster)
    config = cluster.to_dict()
    assert config["SharedStorage"][0]["MountDir"] == "/fsx"
    queue = config["Scheduling"]["SlurmQueues"][0]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    assert queue["ComputeResources"][0]["MaxCount"] == 2
    assert cluster.node_security_group is built.platform.security_group.security_group


def test_eks_node_group_mounts_over_efa():
    built = _built(Backend.EKS)
    group = built.platform.node_group
    assert isinstance(group, GpuNodeGroup)
    (client,) = group.lustre_clients
    assert client.mount_point == "/fsx" and client.efa_interfaces
    built.template.has_resource_properties("AWS::EKS::Nodegroup", {"CapacityType": "CAPACITY_BLOCK"})


def test_hyperpod_gpu_group():
    built = _built(Backend.HYPERPOD)
    (cluster,) = built.template.find_resources("AWS::SageMaker::Cluster").values()
    groups = {g["InstanceGroupName"]: g for g in cluster["Properties"]["InstanceGroups"]}
    assert set(groups) == {"controller", "login", "gpu"}
    assert groups["gpu"]["InstanceType"] == "ml.p5.48xlarge" and groups["gpu"]["InstanceCount"] == 2


@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.EKS, Backend.HYPERPOD])
def test_token_node_count_synthesizes(backend):
    scene = new_scene()
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number", default=2).value_as_number
    _platform(scene, nodes=nodes, orchestrator=_orchestrator(backend), capacity=OnDemand())
    template = scene.template()
    assert "Nodes" in template.to_json()["Parameters"]
    assert '"Ref": "Nodes"' in json.dumps(template.to_json()["Resources"])


def test_subnet_follows_the_reservation_zone(scene):
    capacity = CapacityReservation(reservation_id="cr-0123456789abcdef0", instance_count=2, zone="us-east-1b")
    platform = _platform(scene, capacity=capacity)
    assert platform.subnet.subnet_id == scene.subnet_b.subnet_id
    scene.template().has_resource_properties("AWS::FSx::FileSystem", {"SubnetIds": ["subnet-0bbbbbbbbbbbbbbb2"]})


def test_existing_bucket_is_linked_and_no_bucket_is_created(scene):
    bucket = s3.Bucket.from_bucket_name(scene.stack, "Existing", "my-training-data")
    platform = _platform(scene, storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, data_bucket=bucket))
    assert platform.data_bucket is bucket
    template = scene.template()
    template.resource_count_is("AWS::S3::Bucket", 0)
    template.has_resource_properties(
        "AWS::FSx::DataRepositoryAssociation", {"DataRepositoryPath": "s3://my-training-data/datasets/"}
    )


def test_capacity_objective_and_tcp_file_system(scene):
    platform = _platform(scene, storage=PlatformStorage.of_capacity(storage_capacity_gib=2400, efa_enabled=False))
    assert platform.file_system is not None and not platform.file_system.efa_enabled
    scene.template().has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 2400})


def test_no_storage_no_observability(scene):
    platform = _platform(scene, storage=None)
    assert platform.file_system is None and platform.data_bucket is None and platform.sizing is None
    template = scene.template()
    template.resource_count_is("AWS::FSx::FileSystem", 0)
    template.resource_count_is("AWS::APS::Workspace", 0)


def test_pcs_ultraserver_block_turns_imex_on(scene):
    capacity = UltraServerCapacityBlock(reservation_id="cr-0a1b2c3d4e5f60718", ultraserver_type="u-p6e-gb200x72")
    platform = _platform(
        scene,
        instance_type="p6e-gb200.36xlarge",
        nodes=18,
        capacity=capacity,
        orchestrator=PcsOptions(ami=PcsAmi.from_image_id("ami-0123456789abcdef0")),
        storage=None,
    )
    assert isinstance(platform.cluster, PcsCluster) and platform.cluster.imex_enabled


def test_hyperpod_on_eks_shares_the_eks_clusters_group(scene):
    platform = _platform(
        scene, orchestrator=HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART)
    )
    assert isinstance(platform.cluster, HyperPodCluster) and isinstance(platform.eks_cluster, GpuEksCluster)
    assert platform.security_group is platform.cluster.efa_security_group is platform.eks_cluster.efa_security_group
    scene.template().resource_count_is("AWS::SageMaker::Cluster", 1)


# --- HyperPod: one EFA group for the nodes and the file system ------------------------------------------------------
def _hyperpod_efa_wiring(platform: TrainingPlatform, scene_stack: cdk.Stack) -> tuple[Template, str, list[Any]]:
    """The template, the platform's EFA group logical id (the only EFA group) and the FSx SecurityGroupIds."""
    template = Template.from_stack(scene_stack)
    group = platform.security_group
    group_id = str(scene_stack.resolve(group.security_group.node.default_child.logical_id))
    # exactly one security group with EFA's self-referencing all-traffic rules (the FSx servers' own group aside)
    assert efa_group_ids(template, scene_stack, platform.file_system) == {group_id}
    assert [c for c in scene_stack.node.find_all() if isinstance(c, EfaSecurityGroup)] == [group]
    # the HyperPod cluster's VpcConfig uses it
    (cluster,) = template.find_resources("AWS::SageMaker::Cluster").values()
    assert {"Fn::GetAtt": [group_id, "GroupId"]} in cluster["Properties"]["VpcConfig"]["SecurityGroupIds"]
    (fsx,) = template.find_resources("AWS::FSx::FileSystem").values()
    return template, group_id, fsx["Properties"]["SecurityGroupIds"]


def test_hyperpod_slurm_one_efa_group_and_an_efa_file_system():
    # GIVEN the module's HyperPod Slurm platform (storage with the default efa_enabled)
    built = _built(Backend.HYPERPOD)
    template, group_id, fsx_groups = _hyperpod_efa_wiring(built.platform, built.stack)
    # THEN the EFA-enabled file system is in the same group, and the GPU group registered as its EFA clients
    assert {"Fn::GetAtt": [group_id, "GroupId"]} in fsx_groups
    template.has_resource_properties(
        "AWS::FSx::FileSystem", {"LustreConfiguration": Match.object_like({"EfaEnabled": True})}
    )
    file_system = built.platform.file_system
    assert file_system is not None
    assert [g.consumer_path for g in file_system.efa_client_groups] == ["Platform/Platform/Cluster/Bootstrap-gpu"]


def test_hyperpod_eks_one_efa_group_and_an_efa_file_system(scene):
    # GIVEN HyperPod on EKS with storage (default efa_enabled: the GPU group's OnCreate configures LNet over EFA)
    platform = _platform(
        scene, orchestrator=HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART)
    )
    template, group_id, fsx_groups = _hyperpod_efa_wiring(platform, scene.stack)
    # THEN the GpuEksCluster's group is the only EFA group, and the EFA-enabled file system is in it
    assert isinstance(platform.eks_cluster, GpuEksCluster)
    assert platform.security_group is platform.eks_cluster.efa_security_group
    assert {"Fn::GetAtt": [group_id, "GroupId"]} in fsx_groups
    file_system = platform.file_system
    assert file_system is not None and file_system.efa_enabled
    assert file_system.efa_security_group is platform.security_group.security_group
    template.has_resource_properties(
        "AWS::FSx::FileSystem",
        {"LustreConfiguration": Match.object_like({"EfaEnabled": True, "PerUnitStorageThroughput": 1000})},
    )
    # and the GPU group (2 x p5, 8 EFA interfaces each) configures LNet over EFA and counts against the budget
    assert [(g.consumer_path, g.max_efa_connections) for g in file_system.efa_client_groups] == [
        ("Test/Platform/Cluster/Bootstrap-gpu", 16)
    ]
    cluster = platform.cluster
    assert isinstance(cluster, HyperPodCluster) and cluster.lustre_efa_interfaces == {"gpu": 8}
    assert "--lnet-only 8 p5" in cluster.node_bootstraps["gpu"].render()
    # and the FSx CSI driver's claim still mounts it in pods
    template.has_resource_properties("AWS::EKS::Addon", {"AddonName": "aws-fsx-csi-driver"})


def test_hyperpod_eks_above_the_efa_budget_is_refused():
    # GIVEN HyperPod on EKS with 129 p5 nodes (129 x 8 = 1,032 EFA connections > 1,024) and the default EFA storage
    scene = new_scene()
    # THEN the platform is refused naming the GPU group's share (issue 18: at construction, every count is known)
    with pytest.raises(FmValidationError) as raised:
        _platform(
            scene,
            nodes=129,
            orchestrator=HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART),
        )
    assert "Test/Platform/Cluster/Bootstrap-gpu (129 nodes x 8 EFA interfaces = 1,032)" in str(raised.value)


def test_hyperpod_eks_tcp_file_system_when_asked(scene):
    # GIVEN HyperPod on EKS with storage.efa_enabled=False
    storage = PlatformStorage.of_capacity(storage_capacity_gib=2400, efa_enabled=False)
    platform = _platform(
        scene,
        orchestrator=HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART),
        storage=storage,
    )
    template, group_id, fsx_groups = _hyperpod_efa_wiring(platform, scene.stack)
    # THEN a TCP file system outside the EFA group, its Lustre port open to it, and no LNet step
    assert platform.file_system is not None and not platform.file_system.efa_enabled
    assert {"Fn::GetAtt": [group_id, "GroupId"]} not in fsx_groups
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"FromPort": 988, "SourceSecurityGroupId": {"Fn::GetAtt": [group_id, "GroupId"]}},
    )
    cluster = platform.cluster
    assert isinstance(cluster, HyperPodCluster) and cluster.lustre_efa_interfaces == {}
    assert all("--lnet-only" not in b.render() for b in cluster.node_bootstraps.values())


def test_hyperpod_slurm_with_base_config_keeps_tcp_and_one_group(tmp_path):
    # GIVEN HyperPod Slurm configured by the published lifecycle scripts (they mount over TCP), with the TCP file system
    # asked for explicitly (the platform no longer switches EFA off behind the user's back)
    scene = new_scene()
    storage = PlatformStorage.for_throughput(target_gbytes_per_s=4.6875, efa_enabled=False)
    platform = _platform(scene, orchestrator=HyperPodOptions(base_config_dir=str(tmp_path)), storage=storage)
    template, group_id, fsx_groups = _hyperpod_efa_wiring(platform, scene.stack)
    # THEN a TCP file system whose Lustre port is open to the platform's one EFA group
    assert platform.file_system is not None and not platform.file_system.efa_enabled
    assert {"Fn::GetAtt": [group_id, "GroupId"]} not in fsx_groups
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"FromPort": 988, "SourceSecurityGroupId": {"Fn::GetAtt": [group_id, "GroupId"]}},
    )


def test_hyperpod_slurm_takes_an_explicit_efa_file_system(scene):
    # GIVEN storage.efa_enabled=True (refused before HyperPodCluster took an EFA group from outside)
    storage = PlatformStorage.of_capacity(storage_capacity_gib=4800, efa_enabled=True)
    platform = _platform(scene, orchestrator=HyperPodOptions(), storage=storage)
    # THEN the file system is EFA-enabled in the platform's (the nodes') group
    assert platform.file_system is not None and platform.file_system.efa_enabled
    assert platform.file_system.efa_security_group is platform.security_group.security_group


def test_outputs_can_be_turned_off(scene):
    _platform(scene, outputs=False)
    assert scene.template().to_json().get("Outputs", {}) == {}


# --- invalid input -------------------------------------------------------------------------------------------------
INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("instance_type", {"instance_type": "p9.48xlarge"}, "instance_type"),
    ("nodes-zero", {"nodes": 0}, "nodes"),
    ("nodes-fraction", {"nodes": 2.5}, "nodes"),
    ("nodes-above-block", {"nodes": 4, "capacity": CapacityBlock(reservation_id=BLOCK, instance_count=2)}, "nodes"),
    ("hyperpod-capacity-block", {
        "orchestrator": HyperPodOptions(), "capacity": CapacityBlock(reservation_id=BLOCK, instance_count=2)
    }, "capacity"),
    ("hyperpod-eks-efa-capacity-step", {
        "orchestrator": HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART),
        "storage": PlatformStorage.of_capacity(storage_capacity_gib=2400),
    }, "storage_capacity_gib"),
    ("hyperpod-base-config-efa-storage", {
        "orchestrator": HyperPodOptions(base_config_dir="base-config"),
        "storage": PlatformStorage.of_capacity(storage_capacity_gib=4800, efa_enabled=True),
    }, "storage.efa_enabled"),
    ("efa-capacity-step", {"storage": PlatformStorage.of_capacity(storage_capacity_gib=2400)}, "storage_capacity_gib"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "parameter"), [(o, p) for _, o, p in INVALID], ids=[i for i, _, _ in INVALID])
def test_invalid_choices_are_refused(overrides, parameter):
    scene = new_scene()
    with pytest.raises(FmValidationError) as raised:
        _platform(scene, **overrides)
    assert raised.value.parameter.startswith(parameter) or parameter in raised.value.parameter


@pytest.mark.parametrize("orchestrator", ["pcs", None, PcsAmi.from_image_id("ami-0123456789abcdef0")])
def test_orchestrator_of_the_wrong_type(orchestrator):
    with pytest.raises(FmTypeError, match="orchestrator"):
        _platform(new_scene(), orchestrator=orchestrator)


@pytest.mark.parametrize(
    ("factory", "parameter"),
    [
        (lambda: PlatformStorage.for_checkpoint(checkpoint_bytes=0, checkpoint_seconds=60), "checkpoint_bytes"),
        (lambda: PlatformStorage.for_checkpoint(checkpoint_bytes=1e12, checkpoint_seconds=-1), "checkpoint_seconds"),
        (lambda: PlatformStorage.for_checkpoint(checkpoint_bytes=1e12, checkpoint_seconds=0), "checkpoint_seconds"),
        (lambda: PlatformStorage.for_throughput(target_gbytes_per_s=0), "target_gbytes_per_s"),
        (lambda: PlatformStorage.for_throughput(target_gbytes_per_s=-2.0), "target_gbytes_per_s"),
        (lambda: PlatformStorage.of_capacity(storage_capacity_gib=0), "storage_capacity_gib"),
        (lambda: PlatformStorage.for_throughput(target_gbytes_per_s=1, efa_enabled="yes"), "efa_enabled"),
        (lambda: PlatformStorage.for_throughput(target_gbytes_per_s=1, mount_point="fsx"), "mount_point"),
        (lambda: PcsOptions(ami="ami-0123456789abcdef0"), "ami"),
        (lambda: PcsOptions(ami=AMI, login_nodes=-1), "login_nodes"),
        (lambda: HyperPodOptions(orchestrator="slurm"), "orchestrator"),
        (lambda: EksOptions(admin_roles=["arn:aws:iam::123456789012:role/x"]), "admin_roles[0]"),
    ],
    ids=[
        "checkpoint-bytes-zero",
        "checkpoint-seconds-negative",
        "checkpoint-seconds-zero",
        "throughput-zero",
        "throughput-negative",
        "capacity-zero",
        "efa-not-bool",
        "mount-point-relative",
        "pcs-ami-string",
        "pcs-login-negative",
        "hyperpod-orchestrator-string",
        "eks-admin-role-string",
    ],
)
def test_invalid_options_name_the_parameter(factory, parameter):
    with pytest.raises(FmValidationError) as raised:
        factory()
    assert raised.value.parameter == parameter


def test_checkpoint_size_must_be_known_at_synthesis():
    scene = new_scene()
    seconds = cdk.CfnParameter(scene.stack, "Seconds", type="Number").value_as_number
    with pytest.raises(FmValidationError, match="checkpoint_seconds"):
        PlatformStorage.for_checkpoint(checkpoint_bytes=1e12, checkpoint_seconds=seconds)


def test_existing_grafana_needs_its_prometheus_workspace():
    app = new_app()
    stack = cdk.Stack(app, "O", env=ENV)
    workspace = PrometheusWorkspace(stack, "P")
    grafana = GrafanaWorkspace(stack, "G", prometheus_workspace_arns=[workspace.workspace_arn])
    with pytest.raises(FmValidationError, match="prometheus_workspace"):
        PlatformObservability(grafana_workspace=grafana)


def test_a_refused_platform_leaves_nothing_in_the_tree(scene):
    with pytest.raises(FmValidationError):
        _platform(scene, nodes=0)
    assert scene.stack.node.try_find_child("Platform") is None


def test_customization_through_attributes_keeps_one_efa_group(scene):
    # GIVEN a PCS platform WHEN a second GPU node group is added through .cluster, mounting .file_system
    platform = _platform(scene)
    cluster, file_system = platform.cluster, platform.file_system
    assert isinstance(cluster, PcsCluster) and file_system is not None
    extra = cluster.add_gpu_node_group(
        "P5en", instance_type="p5en.48xlarge", ami=AMI, max_nodes=1, mounts=[FileSystemMount(file_system, "/fsx")]
    )
    extra.add_user_data("echo my own set-up")
    # THEN both groups are EFA clients of the file system through the same single EFA group
    assert [c for c in scene.stack.node.find_all() if isinstance(c, EfaSecurityGroup)] == [platform.security_group]
    assert len(file_system.efa_client_groups) == 2
    scene.template().resource_count_is("AWS::PCS::ComputeNodeGroup", 3)  # login, Gpu, P5en


def test_hyperpod_fewer_lustre_efa_interfaces_fit_more_nodes():
    # GIVEN 129 p5 nodes on HyperPod (EKS) with 4 EFA interfaces each for Lustre: 516 <= 1,024
    scene = new_scene()
    platform = _platform(
        scene,
        nodes=129,
        orchestrator=HyperPodOptions(
            orchestrator=HyperPodOrchestration.EKS, dependencies_chart=CHART, efa_interfaces_for_lustre=4
        ),
    )
    scene.app.synth()  # THEN it synthesizes (the same platform with the default 8 fails, test above)
    cluster = platform.cluster
    assert isinstance(cluster, HyperPodCluster) and cluster.lustre_efa_interfaces == {"gpu": 4}


@pytest.mark.parametrize("value", [-1, 1.5, "4", True])
def test_hyperpod_options_refuse_bad_lustre_efa_interfaces(value):
    with pytest.raises(FmValidationError, match="efa_interfaces_for_lustre"):
        HyperPodOptions(efa_interfaces_for_lustre=value)
