"""Every public construct checks its scope and id first, and an error raised inside it names the construct path
(issue 18, sections 5 and 9): with two node groups, "max_nodes must be at least 1, got 0" says which."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import aws_cdk as cdk
import pytest
from constructs import Construct

import fmconstructs
from fmconstructs import CapacityBlock, FmTypeError, FmValidationError
from fmconstructs.eks import GpuEksCluster
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.platform import PcsOptions, TrainingPlatform

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
BLOCK = "cr-0123456789abcdef0"


def _public_constructs() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(fmconstructs.__path__, "fmconstructs."):
        if ".cli" in info.name or "handler" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Construct)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = value
    return [found[k] for k in sorted(found)]


CONSTRUCTS = _public_constructs()


def test_the_walk_finds_the_constructs():
    names = {c.__name__ for c in CONSTRUCTS}
    assert {"TrainingPlatform", "PcsGpuNodeGroup", "GpuNodeGroup", "GpuClusterEndpoints", "HyperPodEksAddons"} <= names
    assert len(CONSTRUCTS) >= 25


@pytest.mark.parametrize("construct", CONSTRUCTS, ids=lambda c: c.__name__)
def test_every_public_constructor_is_located(construct):
    assert hasattr(construct.__init__, "__wrapped__"), f"{construct.__name__}.__init__ lacks @located"


@pytest.mark.parametrize("construct", CONSTRUCTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("scope", [None, "Stack", 5, cdk.Duration.minutes(1)], ids=["None", "str", "int", "Duration"])
def test_a_wrong_scope_is_refused_first(construct, scope):
    with pytest.raises(FmTypeError, match=r"^scope must be a Construct") as raised:
        construct(scope, "Id")
    assert raised.value.parameter == "scope"


@pytest.mark.parametrize("construct", CONSTRUCTS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad_id", ["", None, 5], ids=["empty", "None", "int"])
def test_a_wrong_id_is_refused_first(construct, bad_id):
    stack = cdk.Stack()
    with pytest.raises(FmValidationError, match=r"^id must be") as raised:
        construct(stack, bad_id)
    assert raised.value.parameter == "id"


@pytest.mark.parametrize("construct", CONSTRUCTS, ids=lambda c: c.__name__)
def test_a_duplicate_or_token_id_is_refused_first(construct):
    stack = cdk.Stack()
    Construct(stack, "Taken")
    with pytest.raises(FmValidationError, match=r"^id must be unique among the children of Default"):
        construct(stack, "Taken")
    token = cdk.CfnParameter(stack, "Name").value_as_string
    with pytest.raises(FmValidationError, match=r"^id must be a construct id known at synthesis"):
        construct(stack, token)


def test_keyword_scope_and_id_are_checked_too():
    with pytest.raises(FmTypeError, match=r"^scope must be a Construct"):
        PcsCluster(scope=None, id="Cluster", vpc=None)  # type: ignore[arg-type]


# --- errors name the construct path ----------------------------------------------------------------------------------


def test_the_second_of_two_pcs_node_groups_is_named():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("H100", instance_type="p5.48xlarge", ami=AMI, max_nodes=2)
    with pytest.raises(FmValidationError) as raised:
        cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=0)
    error = raised.value
    assert str(error) == "max_nodes must be at least 1, got 0 (at Test/Cluster/P5)"
    assert (error.parameter, error.value, error.allowed, error.path) == (
        "max_nodes",
        0,
        "at least 1",
        "Test/Cluster/P5",
    )


def test_the_second_of_two_eks_node_groups_is_named():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("A", instance_type="p5.48xlarge", max_nodes=2)
    with pytest.raises(FmValidationError, match=r"^max_nodes must be at least 1, got 0 \(at Test/Cluster/B\)$"):
        cluster.add_gpu_node_group("B", instance_type="p5.48xlarge", max_nodes=0)


def test_nested_constructs_name_the_innermost_once():
    scene = new_scene()
    platform = TrainingPlatform(
        scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=PcsOptions(ami=AMI)
    )
    cluster = platform.cluster
    assert isinstance(cluster, PcsCluster)
    with pytest.raises(FmValidationError) as raised:
        cluster.add_gpu_node_group("More", instance_type="p5.48xlarge", ami=AMI, max_nodes=-1)
    assert str(raised.value).count("(at ") == 1
    assert raised.value.path == "Test/Platform/Cluster/More"


def test_a_type_error_keeps_its_type_and_gains_the_path():
    scene = new_scene()
    with pytest.raises(FmTypeError) as raised:
        PcsCluster(scene.stack, "Cluster", vpc="vpc-0123")  # type: ignore[arg-type]
    assert isinstance(raised.value, TypeError) and raised.value.path == "Test/Cluster"


def test_errors_outside_constructors_have_no_path():
    with pytest.raises(FmValidationError) as raised:
        CapacityBlock(reservation_id="cr-1")
    assert raised.value.path is None and "(at " not in str(raised.value)


# --- messages in the caller's terms ----------------------------------------------------------------------------------


def test_platform_names_nodes_not_the_node_groups_max_nodes():
    scene = new_scene()
    with pytest.raises(FmValidationError, match=r"^nodes must be at most the reservation's 2 instances, got 3"):
        TrainingPlatform(
            scene.stack,
            "Platform",
            vpc=scene.vpc,
            instance_type="p5.48xlarge",
            nodes=3,
            capacity=CapacityBlock(reservation_id=BLOCK, instance_count=2),
            orchestrator=PcsOptions(ami=AMI),
        )
