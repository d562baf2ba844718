"""One declaration of the PCS node groups' options (issue 25): the ``...Options`` TypedDict is the list of keywords
(its docstring the one ``:param`` list), the constructors take ``**options: Unpack[...]``, and one frozen record
(``_GpuNodeProps``, ``_LoginNodeProps``) holds the defaults, built by one ``resolve``."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup
from fmconstructs.pcs._node_group_checks import _GpuNodeProps, _LoginNodeProps
from fmconstructs.pcs.node_group import PcsGpuNodeGroupOptions, PcsLoginNodeGroupOptions

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")
CNG = "AWS::PCS::ComputeNodeGroup"

DECLARATIONS = [
    pytest.param(PcsGpuNodeGroupOptions, _GpuNodeProps, PcsGpuNodeGroup, id="gpu"),
    pytest.param(PcsLoginNodeGroupOptions, _LoginNodeProps, PcsLoginNodeGroup, id="login"),
]


def _cluster() -> PcsCluster:
    scene = new_scene()
    return PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)


@pytest.mark.parametrize(("options", "record", "construct"), DECLARATIONS)
def test_the_record_fields_are_the_typed_dict_keys(options, record, construct):
    fields = [field.name for field in dataclasses.fields(record)]
    assert fields == list(options.__annotations__)  # same names, same (documented) order
    required = {f.name for f in dataclasses.fields(record) if f.default is f.default_factory is dataclasses.MISSING}
    # postponed annotations are strings: mypy reads Required[...] from them, as this test does
    assert required == {key for key, hint in options.__annotations__.items() if "Required[" in str(hint)}


@pytest.mark.parametrize(("options", "record", "construct"), DECLARATIONS)
def test_every_option_is_documented_once_in_the_typed_dict(options, record, construct):
    documented = re.findall(r":var (\w+):", options.__doc__)
    assert documented == list(options.__annotations__)
    # the constructor's docstring points to the options instead of repeating them
    assert re.findall(r":param (\w+):", construct.__doc__) == ["cluster", "options"]


@pytest.mark.parametrize(("options", "record", "construct"), DECLARATIONS)
def test_the_constructor_declares_no_option_of_its_own(options, record, construct):
    parameters = inspect.signature(construct.__init__).parameters
    assert [p.name for p in parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY] == ["cluster"]
    assert parameters["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert not set(parameters) & set(options.__annotations__)


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (
            lambda c: c.add_gpu_node_group("G", instance_type="p5.48xlarge", ami=AMI, max_nodes=1, max_node=2),
            "max_node",
        ),
        (lambda c: c.add_gpu_node_group("G", instance_type="p5.48xlarge", ami=AMI, max_nodes=1, vpc=None), "vpc"),
        (lambda c: c.add_login_node_group("L", ami=AMI, node=2), "node"),
        (lambda c: PcsLoginNodeGroup(c, "L", cluster=c, ami=AMI, spot=True), "spot"),  # a GPU-only option
    ],
)
def test_an_unknown_option_is_a_type_error_naming_it(make, key):
    with pytest.raises(
        TypeError, match=rf"^{key} must be an option of PcsGpuNodeGroup|^{key} must be an option of Pcs"
    ):
        make(_cluster())


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda c: c.add_gpu_node_group("G", ami=AMI, max_nodes=1), "instance_type"),  # type: ignore[call-arg]
        (lambda c: c.add_gpu_node_group("G", instance_type="p5.48xlarge", max_nodes=1), "ami"),  # type: ignore[call-arg]
        (lambda c: c.add_gpu_node_group("G", instance_type="p5.48xlarge", ami=AMI), "max_nodes"),  # type: ignore[call-arg]
        (lambda c: c.add_login_node_group("L"), "ami"),  # type: ignore[call-arg]
        (lambda c: PcsLoginNodeGroup(c, "L", cluster=c, nodes=1), "ami"),  # type: ignore[call-arg]
    ],
)
def test_a_missing_required_option_is_a_validation_error_naming_it(make, key):
    with pytest.raises(FmValidationError, match=rf"^{key} must be given") as caught:
        make(_cluster())
    assert caught.value.parameter == key
    assert not isinstance(caught.value, TypeError)


def test_resolve_fills_the_defaults_that_depend_on_other_options():
    block = CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2)
    on_demand = _GpuNodeProps.resolve("PcsGpuNodeGroup", {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 4})
    on_block = _GpuNodeProps.resolve(
        "PcsGpuNodeGroup", {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 2, "capacity": block}
    )
    assert (on_demand.capacity.kind.value, on_demand.min_nodes, on_block.min_nodes) == ("on-demand", 0, 2)
    assert (on_demand.instance_store_mount_point, on_demand.root_volume_size_gib, on_demand.slurm_settings) == (
        "/scratch",
        200,
        {},
    )
    login = _LoginNodeProps.resolve("PcsLoginNodeGroup", {"ami": AMI})
    assert (login.instance_type, login.nodes, login.root_volume_size_gib) == ("m7i.xlarge", 1, 100)


@pytest.mark.parametrize("through_factory", [True, False])
def test_the_factory_and_the_constructor_give_the_same_node_groups(through_factory):
    cluster = _cluster()
    gpu: dict[str, Any] = {"instance_type": "p5.48xlarge", "ami": AMI, "max_nodes": 2, "node_group_name": "gpu"}
    login: dict[str, Any] = {"ami": AMI, "nodes": 2, "tags": {"team": "ml"}}
    if through_factory:
        cluster.add_gpu_node_group("Gpu", **gpu)
        cluster.add_login_node_group("Login", **login)
    else:
        PcsGpuNodeGroup(cluster, "Gpu", cluster=cluster, **gpu)
        PcsLoginNodeGroup(cluster, "Login", cluster=cluster, **login)
    template = Template.from_stack(cdk.Stack.of(cluster))
    template.has_resource_properties(
        CNG, {"Name": "gpu", "ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 2}}
    )
    template.has_resource_properties(
        CNG, {"ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2}, "Tags": {"team": "ml"}}
    )
