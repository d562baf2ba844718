"""PCS controller size: by default the smallest size that holds every node group's maximum node count (login nodes
included), an explicit size that is too small refused naming each group, deploy-time counts warned about.

Before: ``AWS::PCS::Cluster.Size`` was SMALL (32 compute nodes, PCS API reference ``CreateCluster.size``) unless given,
so a 200-node platform synthesized silently with a controller that holds 32.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.errors import FmValidationError, WarningId
from fmconstructs.pcs import CONTROLLER_SIZE_LIMITS, ControllerSize, PcsAmi, PcsCluster
from fmconstructs.platform import PcsOptions, TrainingPlatform

from tests.conftest import Scene, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _size(stack: cdk.Stack) -> str:
    (cluster,) = Template.from_stack(stack).find_resources("AWS::PCS::Cluster").values()
    return str(cluster["Properties"]["Size"])


def _cluster(scene: Scene, **props: Any) -> PcsCluster:
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, **props)


def _gpu(cluster: PcsCluster, id: str, max_nodes: int | float) -> None:
    cluster.add_gpu_node_group(id, instance_type="p5.48xlarge", ami=AMI, max_nodes=max_nodes)


# --- the size table --------------------------------------------------------------------------------------------------
def test_size_table_is_the_pcs_api_reference():
    assert {size.value: (limits.max_nodes, limits.max_jobs) for size, limits in CONTROLLER_SIZE_LIMITS.items()} == {
        "SMALL": (32, 256),
        "MEDIUM": (512, 8192),
        "LARGE": (2048, 16384),
    }
    assert ControllerSize.MEDIUM.max_nodes == 512 and ControllerSize.LARGE.max_jobs == 16384


@pytest.mark.parametrize(
    ("nodes", "size"), [(0, "SMALL"), (32, "SMALL"), (33, "MEDIUM"), (512, "MEDIUM"), (513, "LARGE"), (2048, "LARGE")]
)
def test_smallest_for(nodes, size):
    assert ControllerSize.smallest_for(nodes) is ControllerSize(size)


def test_smallest_for_past_large_is_none():
    assert ControllerSize.smallest_for(2049) is None


def test_size_table_imports_without_aws_cdk():
    # fmc reads it without Node.js.
    code = (
        "import sys; from fmconstructs.pcs.slurm import ControllerSize; import fmconstructs.cli.pcs_size; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'constructs', 'jsii'}))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, cwd=root
    )
    assert out.stdout.strip() == "[]", out.stderr


# --- automatic size --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("gpu_nodes", "size"), [(31, "SMALL"), (32, "MEDIUM"), (200, "MEDIUM"), (600, "LARGE")])
def test_automatic_size_holds_gpu_and_login_nodes(gpu_nodes, size):
    # GIVEN one login node and gpu_nodes GPU nodes (32 in total is the most SMALL holds)
    scene = new_scene()
    cluster = _cluster(scene)
    cluster.add_login_node_group("Login", ami=AMI)
    _gpu(cluster, "Gpu", gpu_nodes)
    # THEN the smallest size holding 1 + gpu_nodes is rendered
    assert _size(scene.stack) == size
    assert cluster.size is ControllerSize(size)


@pytest.mark.parametrize(("total", "size"), [(32, "SMALL"), (33, "MEDIUM")])
def test_automatic_size_at_the_small_boundary(total, size):
    scene = new_scene()
    cluster = _cluster(scene)
    _gpu(cluster, "A", 16)
    _gpu(cluster, "B", total - 16)
    assert _size(scene.stack) == size


def test_node_groups_added_later_raise_the_size():
    # The size is resolved at synthesis from the groups added by then.
    scene = new_scene()
    cluster = _cluster(scene)
    _gpu(cluster, "A", 8)
    assert cluster.size is ControllerSize.SMALL
    _gpu(cluster, "B", 100)
    assert _size(scene.stack) == "MEDIUM"


def test_200_node_platform_gets_medium():
    scene = new_scene()
    TrainingPlatform(
        scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=200, orchestrator=PcsOptions(ami=AMI)
    )
    assert _size(scene.stack) == "MEDIUM"


def test_platform_passes_an_explicit_size():
    scene = new_scene()
    TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI, size=ControllerSize.LARGE),
    )
    assert _size(scene.stack) == "LARGE"


@pytest.mark.parametrize("size", ["MEDIUM", 1, True])
def test_platform_options_refuse_a_size_that_is_not_a_controller_size(size):
    with pytest.raises(FmValidationError, match=r"^size must be a ControllerSize"):
        PcsOptions(ami=AMI, size=size)


# --- refusals --------------------------------------------------------------------------------------------------------
def test_explicit_small_with_40_nodes_is_refused_naming_each_group():
    scene = new_scene()
    cluster = _cluster(scene, size=ControllerSize.SMALL)
    cluster.add_login_node_group("Login", ami=AMI, nodes=2)
    _gpu(cluster, "Train", 20)
    with pytest.raises(FmValidationError) as caught:
        _gpu(cluster, "Eval", 18)
    message = str(caught.value)
    assert message.startswith("max_nodes must be at most 10 for Test/Cluster/Eval")
    assert "Test/Cluster/Login: 2, Test/Cluster/Train: 20, Test/Cluster/Eval: 18" in message
    assert "SMALL holds 32 compute nodes" in message
    assert "size=ControllerSize.MEDIUM" in message
    assert message.split(" (at ")[0].endswith("got 18")


def test_login_group_past_an_explicit_size_names_nodes():
    scene = new_scene()
    cluster = _cluster(scene, size=ControllerSize.SMALL)
    _gpu(cluster, "Gpu", 32)
    with pytest.raises(FmValidationError, match=r"^nodes must be at most 0 for Test/Cluster/Login: .*Gpu: 32"):
        cluster.add_login_node_group("Login", ami=AMI)


def test_a_refused_group_leaves_the_cluster_usable():
    scene = new_scene()
    cluster = _cluster(scene, size=ControllerSize.SMALL)
    with pytest.raises(FmValidationError):
        _gpu(cluster, "TooBig", 33)
    _gpu(cluster, "Fits", 32)
    assert _size(scene.stack) == "SMALL"


@pytest.mark.parametrize("size", [None, ControllerSize.SMALL, ControllerSize.MEDIUM, ControllerSize.LARGE])
def test_more_than_2048_nodes_is_refused(size):
    scene = new_scene()
    cluster = _cluster(scene, size=size)
    with pytest.raises(FmValidationError, match=r"^max_nodes must be at most .*Test/Cluster/Gpu: 3000"):
        _gpu(cluster, "Gpu", 3000)


def test_3000_node_platform_is_refused():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"at most 2,048 compute nodes \(LARGE\).*split them"):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=3000,
            orchestrator=PcsOptions(ami=AMI),
        )


def test_sum_past_large_over_several_groups_is_refused():
    scene = new_scene()
    cluster = _cluster(scene)
    _gpu(cluster, "A", 1024)
    _gpu(cluster, "B", 1024)
    with pytest.raises(FmValidationError, match=r"^nodes must be at most 0 for Test/Cluster/Login"):
        cluster.add_login_node_group("Login", ami=AMI)


# --- deploy-time counts ----------------------------------------------------------------------------------------------
def _token_cluster(size: ControllerSize | None) -> tuple[Scene, PcsCluster]:
    scene = new_scene()
    cluster = _cluster(scene, size=size)
    cluster.add_login_node_group("Login", ami=AMI)
    nodes = cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number
    _gpu(cluster, "Gpu", nodes)
    return scene, cluster


def test_token_count_warns_and_defaults_to_medium():
    scene, _ = _token_cluster(None)
    assert _size(scene.stack) == "MEDIUM"
    Annotations.from_stack(scene.stack).has_warning(
        "/Test/Cluster",
        Match.string_like_regexp(
            r"max_nodes of Test/Cluster/Gpu is a deploy-time value: the controller size cannot be checked.*MEDIUM"
        ),
    )
    assert WarningId.PCS_SIZE_UNKNOWN_NODE_COUNT.qualified == "fmconstructs:pcs-size-unknown-node-count"


def test_token_count_with_known_counts_past_medium_takes_large():
    scene = new_scene()
    cluster = _cluster(scene)
    _gpu(cluster, "Known", 600)
    _gpu(cluster, "Unknown", cdk.CfnParameter(scene.stack, "Nodes", type="Number").value_as_number)
    assert _size(scene.stack) == "LARGE"


def test_token_count_keeps_an_explicit_size_and_warns():
    scene, _ = _token_cluster(ControllerSize.SMALL)
    assert _size(scene.stack) == "SMALL"
    Annotations.from_stack(scene.stack).has_warning("/Test/Cluster", Match.string_like_regexp(r"it stays SMALL"))


def test_known_counts_past_the_size_are_refused_even_with_a_token_count():
    _, cluster = _token_cluster(ControllerSize.SMALL)
    with pytest.raises(FmValidationError, match=r"Test/Cluster/Gpu: deploy-time, Test/Cluster/More: 40"):
        _gpu(cluster, "More", 40)


def test_no_warning_when_every_count_is_known():
    scene = new_scene()
    cluster = _cluster(scene)
    _gpu(cluster, "Gpu", 4)
    Annotations.from_stack(scene.stack).has_no_warning("*", Match.string_like_regexp("deploy-time value: the contr"))


def test_synthesis_check_names_each_group():
    # The construction-time refusal is repeated at synthesis over the final node groups (a safety net).
    from fmconstructs.pcs.controller_size import NodeCount

    scene = new_scene()
    cluster = _cluster(scene, size=ControllerSize.SMALL)
    _gpu(cluster, "Gpu", 30)
    cluster._node_counts.append(NodeCount("Test/Cluster/Other", "max_nodes", 5))
    with pytest.raises(Exception, match=r"Test/Cluster/Gpu: 30, Test/Cluster/Other: 5"):
        scene.app.synth()
