"""The one AWS tag checker (fmconstructs._validate_tags): AWS's rule (botocore sagemaker ``TagKey``/``TagValue``
pattern, 1-128 / 0-256 characters, ``aws:`` reserved, 50 tags) and every construct taking ``tags=`` using it."""

from __future__ import annotations

import glob
import gzip
import json
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import FmTypeError, FmValidationError
from fmconstructs._validate_tags import check_tag_key, check_tag_value, check_tags, is_tag_text
from fmconstructs.compute import GpuLaunchTemplate
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.auto_mode import auto_mode_node_class_manifest
from fmconstructs.eks.karpenter_manifests import ec2_node_class_manifest
from fmconstructs.pcs import PcsAmi, PcsCluster

from tests.conftest import new_scene
from tests.support.parallelcluster import make_cluster

regex = pytest.importorskip("regex")  # the \p{..} classes of the AWS pattern (a cfn-lint dependency)
botocore = pytest.importorskip("botocore")


def _sagemaker_shape(name: str) -> dict[str, Any]:
    (path,) = glob.glob(str(Path(botocore.__file__).parent / "data" / "sagemaker" / "*" / "service-2.json*"))
    model = json.load(gzip.open(path) if path.endswith(".gz") else open(path))  # noqa: SIM115
    shape: dict[str, Any] = model["shapes"][name]
    return shape


KEY_SHAPE = _sagemaker_shape("TagKey")
VALUE_SHAPE = _sagemaker_shape("TagValue")


def _aws_accepts_key(key: str) -> bool:
    """The service's own rule: botocore's TagKey shape and the reserved prefix (AWS tagging guide)."""
    return (
        KEY_SHAPE["min"] <= len(key) <= KEY_SHAPE["max"]
        and regex.fullmatch(KEY_SHAPE["pattern"], key) is not None
        and not key.lower().startswith("aws:")
    )


def _accepts(check: Callable[[str, object], Any], text: str) -> bool:
    try:
        check("tags key", text)
    except FmValidationError:
        return False
    return True


#: Characters Python's Unicode database knows (unicodedata); a character assigned only in a later Unicode version
#: (the ``regex`` module's may be newer) is outside what either side can agree on.
KNOWN_CHARACTERS = st.characters(codec="utf-8").filter(lambda c: unicodedata.category(c) != "Cn")
TAG_TEXT = st.text(
    alphabet=st.one_of(st.sampled_from("aAws:_.:/=+-@ #,;*?!\"'\\\t\n\x00é中٣\u2028\u00a0"), KNOWN_CHARACTERS),
    max_size=140,
)


@settings(max_examples=300, deadline=None)
@given(TAG_TEXT)
def test_tag_keys_are_accepted_exactly_when_aws_accepts_them(key: str) -> None:
    assert _accepts(check_tag_key, key) == _aws_accepts_key(key)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=KNOWN_CHARACTERS, max_size=270))
def test_tag_values_are_accepted_exactly_when_aws_accepts_them(value: str) -> None:
    aws = len(value) <= VALUE_SHAPE["max"] and regex.fullmatch(VALUE_SHAPE["pattern"], value) is not None
    assert _accepts(check_tag_value, value) == aws
    assert is_tag_text(value) == (regex.fullmatch(VALUE_SHAPE["pattern"], value) is not None)


@pytest.mark.parametrize("key", ["team", "Cost Center", "a:b/c=d+e-f@g_h.i", "é中٣", "k" * 128])
def test_legal_keys_pass(key: str) -> None:
    assert check_tags("tags", {key: ""}) == {key: ""}


INVALID_TAGS: list[tuple[dict[str, Any], str]] = [
    ({"": "x"}, r"tags key must be a tag key of 1-128 characters"),
    ({"k" * 129: "x"}, r"tags key must be a tag key of 1-128 characters"),
    ({"aws:team": "x"}, r"tags key must be a tag key not starting with 'aws:'"),
    ({"AwS:team": "x"}, r"tags key must be a tag key not starting with 'aws:'"),
    ({"team#1": "x"}, r"tags key must be a tag key of Unicode letters, digits, spaces and _ \. : / = \+ - @"),
    ({"team,ml": "x"}, r"tags key must be a tag key of Unicode letters"),
    ({"team": "a\nb"}, r"tags\['team'\] must be a tag value of Unicode letters"),
    ({"team": "x*"}, r"tags\['team'\] must be a tag value of Unicode letters"),
    ({"team": "v" * 257}, r"tags\['team'\] must be a tag value of 0-256 characters"),
    ({f"k{i}": "v" for i in range(51)}, r"tags must be at most \d+ tags"),
]


def _pcs(tags: dict[str, Any]) -> None:
    scene = new_scene()
    PcsCluster(scene.stack, "Pcs", vpc=scene.vpc, tags=tags)


def _pcs_group(tags: dict[str, Any]) -> None:
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Pcs", vpc=scene.vpc)
    ami = PcsAmi.from_image_id("ami-0123456789abcdef0")
    cluster.add_gpu_node_group("Gpu", instance_type="p5.48xlarge", ami=ami, max_nodes=2, tags=tags)


def _eks(tags: dict[str, Any]) -> None:
    scene = new_scene()
    GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc, tags=tags)


def _eks_group(tags: dict[str, Any]) -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, tags=tags)


def _launch_template(tags: dict[str, Any]) -> None:
    scene = new_scene()
    GpuLaunchTemplate(scene.stack, "Lt", instance_type="p5.48xlarge", vpc=scene.vpc, subnet=scene.subnet_a, tags=tags)


def _parallelcluster(tags: dict[str, Any]) -> None:
    make_cluster(new_scene(), tags=tags)


_NODE_CLASS = {
    "name": "gpu",
    "role": "NodeRole",
    "subnet_ids": ["subnet-0123456789abcdef0"],
    "security_group_ids": ["sg-0123456789abcdef0"],
}

TAKES_TAGS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "PcsCluster": _pcs,
    "PcsGpuNodeGroup": _pcs_group,
    "GpuEksCluster": _eks,
    "GpuNodeGroup": _eks_group,
    "GpuLaunchTemplate": _launch_template,
    "ParallelCluster": _parallelcluster,
    "EC2NodeClass": lambda tags: ec2_node_class_manifest(**_NODE_CLASS, tags=tags),
    "AutoModeNodeClass": lambda tags: auto_mode_node_class_manifest(**_NODE_CLASS, tags=tags),
}


@pytest.mark.parametrize(("tags", "message"), INVALID_TAGS, ids=[m[:40] for _, m in INVALID_TAGS])
def test_the_checker_refuses_what_aws_refuses(tags: dict[str, Any], message: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{message}"):
        check_tags("tags", tags)


# The constructs: one invalid key and one invalid value each (the full list above runs against the checker).
@pytest.mark.parametrize("construct", list(TAKES_TAGS))
@pytest.mark.parametrize(
    ("tags", "parameter"),
    [({"team#1": "x"}, "tags key"), ({"team": "a\nb"}, "tags['team']"), ({"aws:x": "y"}, "tags key")],
    ids=["bad-key", "bad-value", "reserved"],
)
def test_every_construct_taking_tags_uses_the_one_checker(construct: str, tags: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError) as raised:
        TAKES_TAGS[construct](tags)
    assert raised.value.parameter == parameter


def test_parallelcluster_keeps_its_own_reserved_prefix() -> None:
    with pytest.raises(FmValidationError, match=r"^tags key must be a tag key not starting with 'parallelcluster:'"):
        _parallelcluster({"parallelcluster:owner": "x"})


def test_deploy_time_values_are_not_checked() -> None:
    import aws_cdk as cdk

    scene = new_scene()
    token = cdk.CfnParameter(scene.stack, "Team").value_as_string
    assert check_tags("tags", {token: token}) == {token: token}


def test_a_non_mapping_is_a_type_error() -> None:
    with pytest.raises(FmTypeError, match=r"^tags must be a mapping of str to str"):
        check_tags("tags", [("team", "ml")])
