"""Names that block a change (issue 19, "Names").

- A fixed name on a resource whose name is create-only (``AWS::PCS::Cluster``, ``AWS::EKS::Cluster``) warns
  ``fmconstructs:fixed-name-blocks-replacement``: CloudFormation creates a replacement before deleting the old resource,
  so with the same name the update fails ("already exists") instead of replacing.
- Retained log groups never have a fixed name: the node bootstrap log group's name ends with the stack id's last UUID
  group, new at each stack creation, so destroy-then-redeploy (or a retry after a failed first create) succeeds.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.bootstrap import NodeBootstrap, NodeBootstrapLogs
from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import WarningId
from fmconstructs.parallelcluster import ComputeResource, HeadNode, ParallelCluster, SlurmQueue
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.platform import EksOptions, PcsOptions, TrainingPlatform

from tests.conftest import Scene, new_scene

FIXED = WarningId.FIXED_NAME_BLOCKS_REPLACEMENT.qualified
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _fixed_name_warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("."))
    return [str(w.entry.data) for w in found if FIXED in str(w.entry.data)]


# --- fixed names on resources with create-only properties ---------------------------------------------------------
def test_pcs_cluster_name_warns_with_the_reason() -> None:
    scene = new_scene()
    PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name="training")
    (message,) = _fixed_name_warnings(scene.stack)
    assert "cluster_name 'training' fixes the name of the AWS::PCS::Cluster" in message
    assert "(Name, Networking, Size)" in message
    assert "fails with 'already exists'" in message


def test_eks_cluster_name_warns_with_the_reason() -> None:
    scene = new_scene()
    GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name="gpu")
    (message,) = _fixed_name_warnings(scene.stack)
    assert "cluster_name 'gpu' fixes the name of the AWS::EKS::Cluster" in message
    assert "EncryptionConfig" in message and "fails with 'already exists'" in message


def test_deploy_time_name_warns_too() -> None:
    scene = new_scene()
    name = cdk.CfnParameter(scene.stack, "Name").value_as_string
    PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, cluster_name=name)
    (message,) = _fixed_name_warnings(scene.stack)
    assert "a deploy-time value" in message


@pytest.mark.parametrize(
    "make",
    [
        lambda s: PcsCluster(s.stack, "Cluster", vpc=s.vpc),
        lambda s: GpuEksCluster(s.stack, "Cluster", vpc=s.vpc),
    ],
)
def test_generated_names_do_not_warn(make: Any) -> None:
    scene = new_scene()
    make(scene)
    assert _fixed_name_warnings(scene.stack) == []


@pytest.mark.parametrize(
    ("orchestrator", "warned"),
    [
        (EksOptions(cluster_name="platform-eks"), True),
        (EksOptions(), False),
        (PcsOptions(ami=AMI), False),
    ],
)
def test_platform_cluster_names(orchestrator: Any, warned: bool) -> None:
    scene = new_scene()
    TrainingPlatform(
        scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=orchestrator
    )
    assert bool(_fixed_name_warnings(scene.stack)) is warned


# --- retained log groups -------------------------------------------------------------------------------------------
def _retained_log_groups(template: Template) -> list[dict[str, Any]]:
    groups = template.find_resources("AWS::Logs::LogGroup")
    return [g for g in groups.values() if g.get("DeletionPolicy") == "Retain"]


def _pcs_with_nodes(scene: Scene) -> None:
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)


def _pcluster_with_bootstrap(scene: Scene) -> None:
    cluster = ParallelCluster(
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
    )
    boot = NodeBootstrap(scene.stack, "Boot", name="pc-nodes")
    boot.add_step("hello", ["echo hello"])
    cluster.add_node_bootstrap(boot)


def _eks_with_nodes(scene: Scene) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", max_nodes=2)


@pytest.mark.parametrize("build", [_pcs_with_nodes, _pcluster_with_bootstrap, _eks_with_nodes])
def test_no_retained_log_group_has_a_fixed_name(build: Any) -> None:
    scene = new_scene()
    build(scene)
    for group in _retained_log_groups(scene.template()):
        name = group["Properties"].get("LogGroupName")
        # generated by CloudFormation, or made unique per stack creation from AWS::StackId
        assert name is None or "AWS::StackId" in json.dumps(name), name


def test_bootstrap_log_group_name_is_unique_per_stack_creation() -> None:
    scene = new_scene("Boot")
    logs = NodeBootstrapLogs.of(scene.stack)
    assert scene.stack.resolve(logs.log_group_name) == {
        "Fn::Join": [
            "",
            [
                "/fmconstructs/node-bootstrap/Boot/",
                {
                    "Fn::Select": [
                        4,
                        {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]},
                    ]
                },
            ],
        ]
    }
    template = scene.template()
    template.has_resource("AWS::Logs::LogGroup", {"DeletionPolicy": "Retain"})
    # the key policy names the same group (no cycle: the name depends on the stack id only)
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": Match.object_like(
                {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Condition": {
                                        "ArnEquals": {"kms:EncryptionContext:aws:logs:arn": Match.object_like({})}
                                    }
                                }
                            )
                        ]
                    )
                }
            )
        },
    )
