"""HyperPodCluster(efa_security_group=...): the nodes' EFA group given from outside, shared with an EFA-enabled file
system (or a GpuEksCluster) instead of a second group of the cluster's own."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.networking import EfaSecurityGroup
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration

from tests.conftest import ENV, Scene, new_app, new_scene
from tests.support.hyperpod_efa_group import efa_group_ids


def _groups() -> list[HyperPodInstanceGroup]:
    return [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2),
    ]


def _slurm() -> HyperPodOrchestrator:
    return HyperPodOrchestrator.slurm(controller_group="controller")


def _cluster(scene: Scene, **kwargs: Any) -> HyperPodCluster:
    return HyperPodCluster(
        scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=_groups(), orchestrator=_slurm(),
        **kwargs,
    )  # fmt: skip


def _group_id(scene: Scene, group: EfaSecurityGroup) -> Any:
    return scene.stack.resolve(group.security_group_id)


@pytest.fixture(scope="module")
def shared():
    """GIVEN one EfaSecurityGroup shared by an EFA-enabled file system and the cluster (given as efa_security_group)."""
    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=4800,
                          throughput_mbps_per_tib=1000, metadata_configuration=LustreMetadataConfiguration.automatic(),
                          efa_enabled=True, efa_security_group=efa)  # fmt: skip
    cluster = _cluster(scene, file_system=fs, efa_security_group=efa)
    return scene, efa, fs, cluster, scene.template()


def test_given_group_is_the_clusters_group(shared):
    scene, efa, _, cluster, template = shared
    # THEN the cluster creates no group of its own and its first VpcConfig group is the given one
    assert cluster.efa_security_group is efa and cluster.security_group is efa.security_group
    assert cluster.node.try_find_child("EfaSecurityGroup") is None
    (resource,) = template.find_resources("AWS::SageMaker::Cluster").values()
    assert resource["Properties"]["VpcConfig"]["SecurityGroupIds"][0] == _group_id(scene, efa)


def test_one_efa_group_for_nodes_and_file_system(shared):
    scene, efa, _, _, template = shared
    # THEN exactly one group carries EFA's self-referencing rules, and the file system joins it
    group_logical_id = scene.stack.resolve(efa.security_group.node.default_child.logical_id)
    assert efa_group_ids(template, scene.stack, shared[2]) == {group_logical_id}
    (fsx,) = template.find_resources("AWS::FSx::FileSystem").values()
    assert _group_id(scene, efa) in fsx["Properties"]["SecurityGroupIds"]
    assert fsx["Properties"]["LustreConfiguration"]["EfaEnabled"] is True


def test_shared_group_gets_https_out_and_no_rules_to_itself_beyond_efa(shared):
    scene, efa, _, _, template = shared
    group = _group_id(scene, efa)
    # THEN the cluster's HTTPS-out rule is on the given group (inline egress)
    (sg,) = [
        r for r in template.find_resources("AWS::EC2::SecurityGroup").values()
        if {"CidrIp": "0.0.0.0/0", "Description": "HTTPS to AWS APIs, S3 and ECR", "FromPort": 443,
            "IpProtocol": "tcp", "ToPort": 443} in r["Properties"].get("SecurityGroupEgress", [])
    ]  # fmt: skip
    assert sg["Properties"]["GroupDescription"] == efa.security_group.node.default_child.group_description
    # and no "Lustre file system <-> EFA clients" pair was added between the group and itself (same group)
    ingress = template.find_resources("AWS::EC2::SecurityGroupIngress").values()
    efa_client_rules = [
        r for r in ingress
        if r["Properties"].get("GroupId") == group and r["Properties"].get("SourceSecurityGroupId") == group
        and r["Properties"]["IpProtocol"] == "-1"
    ]  # fmt: skip
    assert len(efa_client_rules) == 1  # EfaSecurityGroup's own rule only


def test_gpu_group_registers_as_efa_clients_of_the_shared_group(shared):
    _, _, fs, _, _ = shared
    # THEN the p5 group (2 nodes x 8 EFA interfaces) counts against the file system's EFA connections
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [("Test/H/Bootstrap-gpu", 16)]


def test_default_still_creates_the_clusters_own_group(scene):
    # GIVEN no efa_security_group WHEN the cluster is built THEN it creates its own, as before
    cluster = _cluster(scene)
    assert isinstance(cluster.node.try_find_child("EfaSecurityGroup"), EfaSecurityGroup)
    assert cluster.efa_security_group is cluster.node.find_child("EfaSecurityGroup")
    assert len(efa_group_ids(scene.template(), scene.stack)) == 1


def test_eks_cluster_group_can_be_shared(scene):
    from fmconstructs.eks import GpuEksCluster

    # GIVEN a GpuEksCluster (it has an EFA group of its own) WHEN HyperPod on EKS is given that group
    eks_cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=_groups()[1:],
                              orchestrator=HyperPodOrchestrator.eks(eks_cluster),
                              efa_security_group=eks_cluster.efa_security_group)  # fmt: skip
    # THEN one EFA group in the stack, used by HyperPod (and still followed by the EKS cluster security group)
    assert cluster.efa_security_group is eks_cluster.efa_security_group
    assert [c for c in scene.stack.node.find_all() if isinstance(c, EfaSecurityGroup)] == [cluster.efa_security_group]
    template = scene.template()
    (resource,) = template.find_resources("AWS::SageMaker::Cluster").values()
    ids = resource["Properties"]["VpcConfig"]["SecurityGroupIds"]
    assert ids[0] == _group_id(scene, eks_cluster.efa_security_group) and len(ids) == 2


@pytest.mark.parametrize(
    "value",
    ["sg-0123456789abcdef0", 42, "security_group"],
    ids=["group-id-string", "number", "security-group"],
)
def test_efa_security_group_of_the_wrong_type(value: Any):
    scene = new_scene()
    given = ec2.SecurityGroup(scene.stack, "Plain", vpc=scene.vpc) if value == "security_group" else value
    with pytest.raises(FmTypeError, match=r"efa_security_group .*EfaSecurityGroup"):
        _cluster(scene, efa_security_group=given)
    assert scene.stack.node.try_find_child("H") is None


def test_efa_security_group_in_another_vpc_is_refused():
    scene = new_scene()
    other = ec2.Vpc.from_vpc_attributes(
        scene.stack, "Other", vpc_id="vpc-0fedcba9876543210", availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0ccccccccccccccc3"],
    )  # fmt: skip
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=other)
    with pytest.raises(
        FmValidationError, match=r"efa_security_group .*cluster's VPC \(vpc-0123456789abcdef0\).*vpc-0fedcba9876543210"
    ):
        _cluster(scene, efa_security_group=efa)


def test_vpc_check_skips_tokens():
    # GIVEN the cluster's VPC created in the stack (its id a token) and a group in another in-stack VPC
    app = new_app()
    stack = cdk.Stack(app, "Tokens", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1)
    efa = EfaSecurityGroup(stack, "Efa", vpc=ec2.Vpc(stack, "Other", max_azs=1))
    # WHEN built THEN nothing is refused at synthesis (the ids are only known at deploy time)
    cluster = HyperPodCluster(stack, "H", vpc=vpc, instance_groups=_groups(), orchestrator=_slurm(),
                              efa_security_group=efa)  # fmt: skip
    assert cluster.efa_security_group is efa


def test_slurm_group_efa_interfaces_for_lustre_sets_mount_and_budget():
    # GIVEN a Slurm (API) GPU group using 4 of its EFA interfaces for Lustre, sharing the file system's EFA group
    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=4800,
                          throughput_mbps_per_tib=1000, metadata_configuration=LustreMetadataConfiguration.automatic(),
                          efa_enabled=True, efa_security_group=efa)  # fmt: skip
    groups = [
        HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
        HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=2, efa_interfaces_for_lustre=4),
    ]
    cluster = HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=groups,
                              orchestrator=_slurm(), file_system=fs, efa_security_group=efa)  # fmt: skip
    # THEN the mount step uses 4 interfaces and the group counts 2 x 4 connections
    assert [(g.consumer_path, g.max_efa_connections) for g in fs.efa_client_groups] == [("Test/H/Bootstrap-gpu", 8)]
    assert cluster.lustre_efa_interfaces["gpu"] == 4
    assert " 4 1 p5" in cluster.node_bootstraps["gpu"].render()  # EFA=4 GDS=1 FAMILY=p5 arguments of the script


def test_slurm_gpu_group_outside_the_catalog_warns_its_lustre_efa_is_uncounted():
    # ml.g5.48xlarge is not in the catalog: the node-bootstrap mount decides its EFA interfaces on the node (2 or 1),
    # so the construct cannot count them against the 1,024 connections, and says so (it is not "over TCP").
    from aws_cdk.assertions import Annotations, Match

    scene = new_scene()
    efa = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=4800,
                          throughput_mbps_per_tib=1000, metadata_configuration=LustreMetadataConfiguration.automatic(),
                          efa_enabled=True, efa_security_group=efa)  # fmt: skip
    groups = [*_groups(), HyperPodInstanceGroup(name="g5", instance_type="g5.48xlarge", nodes=1)]
    HyperPodCluster(scene.stack, "H", vpc=scene.vpc, subnets=[scene.subnet_a], instance_groups=groups,
                    orchestrator=_slurm(), file_system=fs, efa_security_group=efa)  # fmt: skip
    annotations = Annotations.from_stack(scene.stack)
    annotations.has_warning("/Test/H", Match.string_like_regexp("'g5' \\(ml.g5.48xlarge\\) decides its EFA interfaces"))
    annotations.has_no_warning("/Test/H", Match.string_like_regexp("over TCP"))
