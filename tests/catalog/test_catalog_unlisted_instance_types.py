"""Instance types outside the catalog are checked against botocore's EC2 InstanceType enum (exact spelling), and
their EFA capability comes from EC2 DescribeInstanceTypes data instead of being assumed False (issue 18, section 5)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import aws_cdk as cdk
import moto
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import FmValidationError
from fmconstructs._efa_instance_types import EFA_MAXIMUM_INTERFACES, WITHOUT_EFA
from fmconstructs.catalog import (
    CATALOG,
    check_instance_type,
    ec2_instance_types,
    efa_max_interfaces,
    supports_efa,
)
from fmconstructs.eks.addons import hyperpod_has_efa
from fmconstructs.eks.cluster import SystemNodeGroupOptions
from fmconstructs.parallelcluster.config import ComputeResource
from fmconstructs.pcs import PcsAmi, PcsCluster
from fmconstructs.platform import PcsOptions

from tests.conftest import new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _moto_instance_types() -> dict[str, dict]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))


# --- the data ----------------------------------------------------------------------------------------------------------


def test_efa_table_is_describe_instance_types_data():
    data = _moto_instance_types()
    with_efa = {
        name: item["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]
        for name, item in data.items()
        if item["NetworkInfo"].get("EfaSupported")
    }
    assert with_efa == EFA_MAXIMUM_INTERFACES
    assert {name for name in data if name not in with_efa} == WITHOUT_EFA


@pytest.mark.parametrize(
    ("instance_type", "maximum"),
    [
        ("c7i.48xlarge", 1),  # the review's example: EFA-capable, not in the catalog
        ("hpc7g.16xlarge", 1),
        ("p4d.24xlarge", 4),
        ("p5.48xlarge", 32),  # the catalog wins
        ("m7i.xlarge", 0),
        ("c7i.2xlarge", 0),
    ],
)
def test_efa_capability_comes_from_data(instance_type, maximum):
    assert efa_max_interfaces(instance_type) == maximum
    assert supports_efa(instance_type) is (maximum > 0)


@pytest.mark.parametrize("value", ["x9.future", None, 5, "m7i.XLARGE"])
def test_efa_capability_of_unknown_types_is_unknown(value):
    assert efa_max_interfaces(value) is None and supports_efa(value) is None


def test_efa_capability_of_a_token_is_unknown():
    stack = cdk.Stack()
    token = cdk.CfnParameter(stack, "Type").value_as_string
    assert efa_max_interfaces(token) is None


# --- the name check ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "good", ["m7i.xlarge", "c7i.48xlarge", "p6e-gb200.36xlarge", "u-6tb1.metal", *CATALOG.instance_types]
)
def test_known_types_pass(good):
    assert check_instance_type("instance_type", good) == good


@pytest.mark.parametrize(
    "bad",
    ["M7i.xlarge", "m7i.XLarge", " m7i.xlarge", "m7i.xlarge ", "m7i.xlarge\n", "m7i", "m7i.huge", "x9.large", ""],
)
def test_misspelled_types_are_refused_with_a_suggestion(bad):
    with pytest.raises(FmValidationError, match=r"^instance_type must be an EC2 instance type spelled exactly") as e:
        check_instance_type("instance_type", bad)
    assert e.value.parameter == "instance_type" and e.value.value == bad


def test_a_case_error_suggests_the_right_spelling():
    with pytest.raises(FmValidationError, match=r"did you mean 'p5\.48xlarge'"):
        check_instance_type("instance_type", "P5.48xlarge")


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(ec2_instance_types())), data=st.data())
def test_any_other_case_or_padding_of_a_real_type_is_refused(name, data):
    variant = data.draw(st.sampled_from([name.upper(), name.title(), f" {name}", f"{name}\t", name.replace(".", "")]))
    if variant in ec2_instance_types():
        return
    with pytest.raises(FmValidationError):
        check_instance_type("instance_type", variant)


def test_a_deploy_time_type_is_left_to_ec2():
    stack = cdk.Stack()
    token = cdk.CfnParameter(stack, "Type").value_as_string
    assert check_instance_type("instance_type", token) == token


# --- where types are taken -------------------------------------------------------------------------------------------


def test_pcs_login_node_group_refuses_a_misspelled_type():
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match=r"^instance_type must be an EC2 instance type spelled exactly"):
        cluster.add_login_node_group("Login", ami=AMI, instance_type="M7i.xlarge")


@pytest.mark.parametrize(
    "make",
    [
        lambda: SystemNodeGroupOptions(instance_type="m7i.XLarge"),
        lambda: PcsOptions(ami=AMI, login_instance_type="m7i xlarge"),
        lambda: ComputeResource(name="cpu", instance_type="C7i.48xlarge", max_nodes=2),
    ],
    ids=["eks-system-group", "platform-pcs-login", "parallelcluster-compute"],
)
def test_other_type_parameters_refuse_misspelled_types(make):
    with pytest.raises(FmValidationError, match=r"instance_type must be an EC2 instance type spelled exactly"):
        make()


def test_parallelcluster_takes_efa_on_an_efa_capable_type_outside_the_catalog():
    resource = ComputeResource(name="cpu", instance_type="c7i.48xlarge", max_nodes=2, efa=True)
    assert resource.efa_supported and resource.efa_enabled
    assert ComputeResource(name="cpu", instance_type="c7i.48xlarge", max_nodes=2).efa_enabled


def test_parallelcluster_refuses_efa_on_a_type_without_it():
    with pytest.raises(FmValidationError, match=r"^efa must be False for m7i\.xlarge"):
        ComputeResource(name="cpu", instance_type="m7i.xlarge", max_nodes=2, efa=True)


def test_hyperpod_efa_plugin_skips_types_without_efa():
    assert hyperpod_has_efa("ml.m5.large") is False
    assert hyperpod_has_efa("ml.c5n.18xlarge") is True
    assert hyperpod_has_efa("ml.p5.48xlarge") is True
