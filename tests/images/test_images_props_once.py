"""GpuNodeImage's keyword parameters are written once (issue 25): the record its checks and build steps read
(``_ImageProps``) is built from the signature (``_ImageProps.of(locals())``), not passed keyword by keyword."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError, fields, is_dataclass

import pytest

from fmconstructs.images import GpuNodeImage
from fmconstructs.images.image import _ImageProps


def _keywords() -> list[str]:
    parameters = inspect.signature(GpuNodeImage.__init__).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_the_record_fields_are_the_constructor_keywords_in_order() -> None:
    assert is_dataclass(_ImageProps)
    assert [field.name for field in fields(_ImageProps)] == _keywords()


def test_the_record_is_frozen_and_read_from_the_constructor_locals() -> None:
    given = {name: object() for name in _keywords()}
    record = _ImageProps.of({**given, "self": object(), "scope": object(), "id": "x", "__class__": GpuNodeImage})
    assert {field.name: getattr(record, field.name) for field in fields(_ImageProps)} == given
    with pytest.raises(FrozenInstanceError):
        record.image_name = "changed"  # type: ignore[misc]


def test_a_missing_keyword_is_a_key_error_not_a_silent_default() -> None:
    given = {name: object() for name in _keywords()[1:]}
    with pytest.raises(KeyError, match="instance_types"):
        _ImageProps.of(given)


def test_the_constructor_builds_the_record_from_its_locals() -> None:
    source = inspect.getsource(GpuNodeImage.__init__)
    assert "_ImageProps.of(locals())" in source
    steps = ("_check_props", "_resolve_settings", "_build_storage", "_build_pipeline")
    for step in steps:
        parameters = list(inspect.signature(getattr(GpuNodeImage, step)).parameters)
        assert parameters[:2] == ["self", "props"], step
