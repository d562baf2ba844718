"""Service identifiers (fmconstructs._validate_ids): each kind against its service's own rule (botocore shapes)."""

from __future__ import annotations

import pytest
from aws_cdk import Token
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import _validate_ids as ids
from fmconstructs._validate_ids import ServiceId, check_service_id
from fmconstructs.errors import FmTypeError, FmValidationError

# (kind, good values, bad values): the bad ones break the pattern or a length of the source shape.
CASES: list[tuple[ServiceId, list[str], list[str]]] = [
    (ids.PCS_CLUSTER_IDENTIFIER, ["pcs_abc123", "my-cluster", "abc"], ["", "ab", "pcs_", "my cluster", "1abc", "a_b"]),
    (ids.PCS_NODE_GROUP_ID, ["pcs_abcdef1234"], ["", "login", "pcs_", "pcs_a b", "pcs_a-b", " pcs_a"]),
    (ids.PCS_NODE_GROUP_IDENTIFIER, ["pcs_x1", "gpu-p5"], ["gp", "g" * 27, "gpu_p5"]),
    (ids.PCS_QUEUE_IDENTIFIER, ["pcs_q1", "gpu"], ["q", "q" * 27, "-gpu"]),
    (ids.PCS_CLUSTER_NAME, ["abc", "a" * 40], ["ab", "a" * 41, "a_b", "9abc"]),
    (ids.PCS_QUEUE_NAME, ["gpu", "a" * 25], ["gp", "a" * 26, "gpu!"]),
    (ids.SAGEMAKER_CLUSTER_NAME, ["a", "ml-cluster-1", "a--b"], ["", "-a", "a-", "a_b", "a" * 64]),
    (ids.SAGEMAKER_INSTANCE_GROUP_NAME, ["gpu", "worker-group-1"], ["", "gpu_", "a" * 64, "gpu group"]),
    (ids.EKS_CLUSTER_NAME, ["training", "a_b-1", "0abc"], ["", "-a", "a.b", "a" * 101, "a b"]),
    (ids.FSX_FILE_SYSTEM_ID, ["fs-0123456789abcdef0", "fs-01234567"], ["fs-0123", "fs-0123456789ABCDEF0", "fsx-1"]),
    (ids.CAPACITY_RESERVATION_ID, ["cr-0123456789abcdef0", "cr-01234567"], ["cr-0123", "cr-0123456789", "cr-xyz"]),
    (ids.EC2_INSTANCE_ID, ["i-0123456789abcdef0", "i-01234567"], ["i-0123", "i-0123456789abcdef0a", "i-XYZ"]),
    (ids.AUTO_SCALING_GROUP_NAME, ["gpu fleet", "a" * 255], ["", "a" * 256, "bad\x00name"]),
    (ids.PARALLELCLUSTER_CLUSTER_NAME, ["train-1", "a" * 60], ["", "1train", "a" * 61, "train_1"]),
    (ids.PARALLELCLUSTER_QUEUE_NAME, ["gpu", "gpu-p5"], ["default", "Gpu", "1gpu", "a" * 26]),
]


@pytest.mark.parametrize(("kind", "good"), [(kind, good) for kind, goods, _ in CASES for good in goods])
def test_the_service_rule_accepts(kind: ServiceId, good: str) -> None:
    assert check_service_id("x", good, kind) == good


@pytest.mark.parametrize(("kind", "bad"), [(kind, bad) for kind, _, bads in CASES for bad in bads])
def test_the_service_rule_refuses_naming_its_source(kind: ServiceId, bad: str) -> None:
    with pytest.raises(FmValidationError, match=r"^x must be .*\(" + kind.source.split(",")[0]) as caught:
        check_service_id("x", bad, kind)
    assert caught.value.parameter == "x"


@pytest.mark.parametrize("kind", [kind for kind, _, _ in CASES])
def test_tokens_pass_and_other_types_are_refused(kind: ServiceId) -> None:
    token = Token.as_string({"Ref": "Id"})
    assert check_service_id("x", token, kind) == token
    with pytest.raises(FmTypeError):
        check_service_id("x", 12, kind)


@pytest.mark.parametrize("kind", [kind for kind, _, _ in CASES if kind is not ids.AUTO_SCALING_GROUP_NAME])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_string_of_the_pattern_and_length_passes(kind: ServiceId, data: st.DataObject) -> None:
    text = data.draw(
        st.from_regex(kind.pattern, fullmatch=True).filter(lambda t: kind.min_length <= len(t) <= kind.max_length)
    )
    assert check_service_id("x", text, kind) == text
