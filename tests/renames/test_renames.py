"""The deprecation helpers of the one node-group vocabulary: old names work, warn, and never hide a conflict."""

from __future__ import annotations

import warnings

import pytest

from fmconstructs._renames import DEPRECATED_UNTIL, RenamedAttribute, renamed_keywords
from fmconstructs.errors import FmTypeError, FmValidationError


@renamed_keywords("Thing", nodegroup_name="node_group_name", kms_key="encryption_key")
def _thing(*, node_group_name: str | None = None, encryption_key: object = None) -> tuple[object, object]:
    return node_group_name, encryption_key


def test_new_keywords_pass_without_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _thing(node_group_name="a", encryption_key="k") == ("a", "k")


@pytest.mark.parametrize(("old", "new"), [("nodegroup_name", "node_group_name"), ("kms_key", "encryption_key")])
def test_old_keyword_is_passed_on_with_a_deprecation_warning(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"Thing\({old}=\) is deprecated .* {DEPRECATED_UNTIL}: use {new}="):
        result = _thing(**{old: "v"})
    assert "v" in result


def test_old_and_new_together_are_refused() -> None:
    with pytest.raises(FmTypeError, match="nodegroup_name must be omitted when node_group_name is given") as info:
        _thing(nodegroup_name="a", node_group_name="b")  # type: ignore[call-arg]
    assert isinstance(info.value, FmValidationError)
    assert isinstance(info.value, TypeError)


def test_unknown_keyword_still_fails_as_python_does() -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        _thing(node_name="x")  # type: ignore[call-arg]


class _Owner:
    kms_key = RenamedAttribute("encryption_key")

    def __init__(self) -> None:
        self.encryption_key = "key"


def test_renamed_attribute_reads_the_new_one_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"_Owner.kms_key is deprecated .*: use _Owner.encryption_key"):
        assert _Owner().kms_key == "key"
    assert isinstance(_Owner.kms_key, RenamedAttribute)
