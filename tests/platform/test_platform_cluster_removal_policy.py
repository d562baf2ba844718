"""Clusters take ``removal_policy`` with a documented default (issue 19: no silent loss of a cluster).

PCS: RETAIN with Slurm accounting (the accounting database lives in the cluster), DESTROY without; the construct's
own security group follows the cluster. EKS: DESTROY by default, RETAIN through ``aws_eks_v2.Cluster``.
ParallelCluster: RETAIN by default, as the provider's ``DeletionPolicy`` property. The platform passes each through.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs import FmValidationError
from fmconstructs.eks import GpuEksCluster
from fmconstructs.parallelcluster import ComputeResource, DeletionPolicy, HeadNode, ParallelCluster, SlurmQueue
from fmconstructs.pcs import AccountingMode, PcsAmi, PcsCluster
from fmconstructs.platform import EksOptions, ParallelClusterOptions, PcsOptions, TrainingPlatform

from tests.conftest import Scene, new_scene

PCS = "AWS::PCS::Cluster"
EKS = "AWS::EKS::Cluster"
PCLUSTER = "Custom::PclusterCluster"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _policies(template: Template, resource_type: str) -> list[tuple[Any, Any]]:
    found = template.find_resources(resource_type)
    assert found, resource_type
    return [(r.get("DeletionPolicy"), r.get("UpdateReplacePolicy")) for r in found.values()]


def _pcs(**props: Any) -> Template:
    scene = new_scene()
    PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)
    return scene.template()


# --- PCS ------------------------------------------------------------------------------------------------------------
def test_pcs_cluster_with_accounting_is_retained_by_default() -> None:
    template = _pcs(accounting=AccountingMode.STANDARD)
    assert _policies(template, PCS) == [("Retain", "Retain")]
    # the controller's network interface keeps using the cluster's own group: it stays too
    assert _policies(template, "AWS::EC2::SecurityGroup") == [("Retain", "Retain")]


def test_pcs_cluster_without_accounting_is_destroyed_by_default() -> None:
    template = _pcs()
    assert _policies(template, PCS) == [("Delete", "Delete")]


@pytest.mark.parametrize(
    ("accounting", "policy", "expected"),
    [
        (AccountingMode.NONE, cdk.RemovalPolicy.RETAIN, "Retain"),
        (AccountingMode.STANDARD, cdk.RemovalPolicy.DESTROY, "Delete"),
    ],
)
def test_pcs_removal_policy_given_wins(accounting: AccountingMode, policy: cdk.RemovalPolicy, expected: str) -> None:
    template = _pcs(accounting=accounting, removal_policy=policy)
    assert _policies(template, PCS) == [(expected, expected)]


def test_pcs_node_groups_and_queues_are_not_retained_with_the_cluster() -> None:
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, removal_policy=cdk.RemovalPolicy.RETAIN)
    gpu = cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)
    gpu.add_queue("Queue", queue_name="gpu")
    template = scene.template()
    assert _policies(template, PCS) == [("Retain", "Retain")]
    for resource_type in ("AWS::PCS::ComputeNodeGroup", "AWS::PCS::Queue"):
        assert all(policy != "Retain" for policy, _ in _policies(template, resource_type))


# --- EKS ------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def eks_retained() -> Template:
    scene = new_scene()
    GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, removal_policy=cdk.RemovalPolicy.RETAIN)
    return scene.template()


def test_eks_cluster_retained_on_request(eks_retained: Template) -> None:
    assert _policies(eks_retained, EKS) == [("Retain", "Retain")]
    # aws_eks_v2 applies it to the cluster's own resources: the system node group and the cluster role stay usable
    assert _policies(eks_retained, "AWS::EKS::Nodegroup") == [("Retain", "Retain")]


def test_eks_cluster_default_is_destroy() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    assert cluster.removal_policy is cdk.RemovalPolicy.DESTROY
    assert all(policy != "Retain" for policy, _ in _policies(scene.template(), EKS))


# --- ParallelCluster ------------------------------------------------------------------------------------------------
def _pcluster(scene: Scene, **props: Any) -> ParallelCluster:
    return ParallelCluster(
        scene.stack,
        "Cluster",
        cluster_name="train",
        head_node=HeadNode(instance_type="c7i.2xlarge", subnet=scene.subnet_a),
        queues=[
            SlurmQueue(
                name="gpu",
                subnets=[scene.subnet_a],
                compute_resources=[ComputeResource(name="p5", instance_type="p5.48xlarge")],
            )
        ],
        **props,
    )


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, "Retain"),
        ({"removal_policy": cdk.RemovalPolicy.RETAIN}, "Retain"),
        ({"removal_policy": cdk.RemovalPolicy.DESTROY}, "Delete"),
        ({"deletion_policy": DeletionPolicy.DELETE}, "Delete"),
        ({"removal_policy": cdk.RemovalPolicy.DESTROY, "deletion_policy": DeletionPolicy.DELETE}, "Delete"),
    ],
)
def test_parallelcluster_deletion_policy(props: dict[str, Any], expected: str) -> None:
    scene = new_scene()
    cluster = _pcluster(scene, **props)
    found = scene.template().find_resources(PCLUSTER)
    assert [r["Properties"]["DeletionPolicy"] for r in found.values()] == [expected]
    assert cluster.removal_policy is (cdk.RemovalPolicy.RETAIN if expected == "Retain" else cdk.RemovalPolicy.DESTROY)


# --- bad input ------------------------------------------------------------------------------------------------------
BAD = [
    (lambda s: PcsCluster(s.stack, "C", vpc=s.vpc, removal_policy=cdk.RemovalPolicy.SNAPSHOT), "removal_policy"),
    (lambda s: PcsCluster(s.stack, "C", vpc=s.vpc, removal_policy="RETAIN"), "removal_policy"),
    (lambda s: GpuEksCluster(s.stack, "C", vpc=s.vpc, removal_policy=cdk.RemovalPolicy.SNAPSHOT), "removal_policy"),
    (lambda s: GpuEksCluster(s.stack, "C", vpc=s.vpc, removal_policy=None), "removal_policy"),
    (lambda s: _pcluster(s, removal_policy=cdk.RemovalPolicy.SNAPSHOT), "removal_policy"),
    (lambda s: _pcluster(s, removal_policy="Retain"), "removal_policy"),
    (
        lambda s: _pcluster(s, removal_policy=cdk.RemovalPolicy.RETAIN, deletion_policy=DeletionPolicy.DELETE),
        "deletion_policy",
    ),
    (lambda s: PcsOptions(ami=AMI, removal_policy=cdk.RemovalPolicy.SNAPSHOT), "removal_policy"),
    (lambda s: EksOptions(removal_policy="DESTROY"), "removal_policy"),
    (lambda s: ParallelClusterOptions(removal_policy=cdk.RemovalPolicy.SNAPSHOT), "removal_policy"),
]


@pytest.mark.parametrize(("make", "parameter"), BAD)
def test_bad_removal_policy_rejected(make: Any, parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        make(new_scene())


# --- the platform passes it through ----------------------------------------------------------------------------------
def _platform(orchestrator: Any) -> Template:
    scene = new_scene()
    TrainingPlatform(
        scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=orchestrator
    )
    return scene.template()


def test_platform_pcs_takes_removal_policy() -> None:
    template = _platform(PcsOptions(ami=AMI, removal_policy=cdk.RemovalPolicy.RETAIN))
    assert _policies(template, PCS) == [("Retain", "Retain")]


def test_platform_parallelcluster_is_retained_by_default() -> None:
    template = _platform(ParallelClusterOptions(cluster_name="platform-pc"))
    assert [r["Properties"]["DeletionPolicy"] for r in template.find_resources(PCLUSTER).values()] == ["Retain"]


def test_platform_eks_takes_removal_policy() -> None:
    template = _platform(EksOptions(removal_policy=cdk.RemovalPolicy.RETAIN))
    assert _policies(template, EKS) == [("Retain", "Retain")]


def test_retained_parallelcluster_names_its_node_security_group_the_stack_would_delete() -> None:
    from aws_cdk import aws_ec2 as ec2

    scene = new_scene()
    group = ec2.SecurityGroup(scene.stack, "Nodes", vpc=scene.vpc)
    _pcluster(scene, node_security_group=group)
    found = Annotations.from_stack(scene.stack).find_warning(
        "*", Match.string_like_regexp("RETAIN keeps the cluster.*security group Test/Nodes")
    )
    assert found
    retained = new_scene()
    kept = ec2.SecurityGroup(retained.stack, "Nodes", vpc=retained.vpc)
    kept.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    _pcluster(retained, node_security_group=kept)
    assert Annotations.from_stack(retained.stack).find_warning("*", Match.string_like_regexp("security group")) == []
