"""The user's tags leave room for the tags the library adds to what a launch template launches (AWS allows 50 tags
per resource): a PCS node group or launch template takes 49 tags, an EKS node group 48."""

from __future__ import annotations

import pytest

from fmconstructs.compute._launch_template_inputs import (
    LAUNCH_TEMPLATE_TAG_KEYS,
    MAX_TAGS_PER_RESOURCE,
    _check_template_inputs,
)
from fmconstructs.compute.launch_template import UserDataFormat
from fmconstructs.eks._node_group_props import _check_room_for_the_library_tags
from fmconstructs.errors import FmValidationError


def _tags(count: int) -> dict[str, str]:
    return {f"team-{i}": "ml" for i in range(count)}


def _template_inputs(tags: dict[str, str]) -> None:
    _check_template_inputs(
        launch_template_name=None, tags=tags, user_data_format=UserDataFormat.SHELL, reservation_target_form=None
    )


def test_the_limit_and_the_library_keys() -> None:
    assert MAX_TAGS_PER_RESOURCE == 50
    assert "fmconstructs:instance-type" in LAUNCH_TEMPLATE_TAG_KEYS


@pytest.mark.parametrize("count", [0, 1, 49])
def test_launch_template_takes_up_to_49_tags(count: int) -> None:
    _template_inputs(_tags(count))


@pytest.mark.parametrize("count", [50, 51, 80])
def test_launch_template_refuses_a_50th_tag(count: int) -> None:
    with pytest.raises(FmValidationError, match=r"tags must be at most 49 tags: .*fmconstructs:instance-type.*got"):
        _template_inputs(_tags(count))


def test_overriding_the_library_key_frees_its_room() -> None:
    _template_inputs({**_tags(49), "fmconstructs:instance-type": "mine"})


@pytest.mark.parametrize("count", [0, 48])
def test_eks_node_group_takes_up_to_48_tags(count: int) -> None:
    _check_room_for_the_library_tags(_tags(count))


@pytest.mark.parametrize("count", [49, 50])
def test_eks_node_group_refuses_a_49th_tag(count: int) -> None:
    with pytest.raises(
        FmValidationError, match=r"at most 48 tags: .*fmconstructs:eks-cluster, fmconstructs:instance-type"
    ):
        _check_room_for_the_library_tags(_tags(count))
