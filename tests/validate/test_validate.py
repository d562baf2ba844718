"""The shared input checks (fmconstructs._validate): types, tokens, NaN/inf, whole-string patterns, zones."""

from __future__ import annotations

import math
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from hypothesis import given
from hypothesis import strategies as st

from fmconstructs import _validate as v
from fmconstructs.capacity import CapacityKind
from fmconstructs.errors import FmTypeError, FmValidationError, describe_value, is_token

from tests.conftest import new_app


@pytest.fixture(scope="module")
def tokens() -> dict[str, object]:
    app = new_app()
    stack = cdk.Stack(app, "Tokens")
    number = cdk.CfnParameter(stack, "Count", type="Number").value_as_number
    text = cdk.CfnParameter(stack, "Text").value_as_string
    imported = cdk.Fn.import_value("SomeExport")
    subnets = cdk.CfnParameter(stack, "Subnets", type="List<AWS::EC2::Subnet::Id>").value_as_list
    return {"number": number, "text": text, "imported": imported, "list": subnets, "stack": stack}


def test_tokens_are_recognised(tokens):
    for key in ("number", "text", "imported", "list"):
        assert is_token(tokens[key]), key
    # One element of a list token (what Fn.get_azs()/Fn.select give back) is unknown too.
    assert is_token(tokens["list"][0])
    assert is_token(cdk.Fn.get_azs()[0])


@pytest.mark.parametrize("value", [0, 1, -1.5, 1e300, -1e300, "plain", "", [], ["a"], None, True, math.nan, math.inf])
def test_plain_values_are_not_tokens(value):
    assert not is_token(value)


def test_errors_never_show_raw_tokens(tokens):
    message = str(FmValidationError("instance_count", tokens["number"], "positive"))
    assert "Token[" not in message and "-1.8" not in message
    assert "deploy-time value" in message
    assert "deploy-time value" in describe_value(f"prefix-{tokens['text']}")


def test_number_token_skips_range_checks(tokens):
    assert v.check_count("instance_count", tokens["number"], minimum=1) is tokens["number"]


@pytest.mark.parametrize("value", [True, False, "3", None, [1], b"1"])
def test_count_rejects_wrong_types_with_type_error(value):
    with pytest.raises(TypeError, match=r"^instance_count must be an integer"):
        v.check_count("instance_count", value)
    with pytest.raises(FmTypeError):
        v.check_count("instance_count", value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_count_rejects_non_finite(value):
    with pytest.raises(FmValidationError, match=r"instance_count must be a finite number"):
        v.check_count("instance_count", value)


@pytest.mark.parametrize(("value", "match"), [(2.5, "whole number"), (-1, "at least 0"), (11, "at most 10")])
def test_count_rejects_out_of_range(value, match):
    with pytest.raises(FmValidationError, match=match):
        v.check_count("n", value, maximum=10)


def test_count_accepts_integral_float():
    assert v.check_count("n", 4.0) == 4


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_any_float_gives_a_value_or_our_error(value):
    """Every float either passes or raises our error naming the parameter; none reaches jsii as NaN/inf."""
    if math.isfinite(value) and value >= 0:
        assert v.check_number("size", value, minimum=0) == value
    else:
        with pytest.raises(FmValidationError, match=r"^size must be"):
            v.check_number("size", value, minimum=0)


def test_str_pattern_matches_whole_string():
    pattern = re.compile(r"[a-z]+")
    assert v.check_str("name", "abc", pattern=pattern) == "abc"
    with pytest.raises(FmValidationError, match="name must be"):
        v.check_str("name", "abc\n", pattern=pattern, allowed="lowercase letters")


def test_str_rejects_non_str():
    with pytest.raises(TypeError, match="name must be a str"):
        v.check_str("name", 5)


def test_str_token_skips_pattern(tokens):
    assert v.check_str("name", tokens["text"], pattern=re.compile("x")) is tokens["text"]


def test_sequence_rejects_bare_string():
    with pytest.raises(TypeError, match=r"mount_options must be a list of str"):
        v.check_str_sequence("mount_options", "defaults")


def test_sequence_names_the_bad_element():
    with pytest.raises(TypeError, match=r"mount_options\[1\] must be a str"):
        v.check_str_sequence("mount_options", ["defaults", 3])


def test_enum_rejects_plain_string():
    with pytest.raises(TypeError, match=r"kind must be a CapacityKind \(CapacityKind.ON_DEMAND"):
        v.check_enum("kind", "on-demand", CapacityKind)
    assert v.check_enum("kind", CapacityKind.ON_DEMAND, CapacityKind) is CapacityKind.ON_DEMAND


def test_construct_check(tokens):
    stack = tokens["stack"]
    subnet = ec2.Subnet.from_subnet_id(stack, "Sub", "subnet-0123456789abcdef0")
    assert v.check_construct("subnet", subnet, attribute="subnet_id", expected="an ec2.ISubnet") is subnet
    with pytest.raises(TypeError, match=r"vpc must be an ec2.IVpc \(got a str\)"):
        v.check_construct("vpc", "vpc-123", attribute="vpc_id", expected="an ec2.IVpc")


@pytest.mark.parametrize(
    "zone",
    [
        "us-east-1a",
        "eu-central-2c",
        "us-gov-west-1a",
        "us-east-1-dfw-2a",
        "us-west-2-lax-1b",
        "use1-az4",
        "usw2-lax1-az1",
        "us-east-1-wl1-bos-wlz-1",
        "apne1-az1",
    ],
)
def test_zones_accepted(zone):
    assert v.check_zone("zone", zone) == zone


@pytest.mark.parametrize("zone", ["us-east-1", "useast1a", "us-east-1a\n", "US-EAST-1A", "", "az4", "use1-az"])
def test_zones_rejected(zone):
    with pytest.raises(FmValidationError, match="zone must be a zone name"):
        v.check_zone("zone", zone)


def test_same_zone():
    assert v.same_zone("us-east-1a", "us-east-1a") is True
    assert v.same_zone("us-east-1a", "us-east-1b") is False
    assert v.same_zone("us-east-1a", "use1-az4") is None
    assert v.same_zone(None, "us-east-1a") is None


def test_removed_keyword_is_refused_naming_the_new_one():
    @v.removed_keywords("f", old="new")
    def f(*, new: int = 0) -> int:
        return new

    assert f(new=3) == 3
    with pytest.raises(
        FmValidationError, match=r"^old must be renamed to new \(f\(old=\) was removed in fmconstructs 0\.3\.0\)"
    ):
        f(old=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        f(old=3)  # type: ignore[call-arg]


def test_removed_attribute_names_the_new_one():
    class Holder:
        old = v.RemovedAttribute("new")

    with pytest.raises(AttributeError, match=r"^Holder\.old was removed in fmconstructs 0\.3\.0: use new$"):
        Holder().old  # noqa: B018
