"""ModelServerAutoscaler's keyword parameters are written once: the ScaledObject call is built from its record."""

from __future__ import annotations

import inspect
from dataclasses import fields, is_dataclass

from fmconstructs.serving.autoscaling import ModelServerAutoscaler, _Props, scaled_object_manifest

OWN = {"self", "scope", "id"}
#: What the construct derives for the manifest (from the workspace and the server name).
DERIVED = {"server_address", "aws_region", "authentication"}


def _keywords() -> list[str]:
    parameters = inspect.signature(ModelServerAutoscaler.__init__).parameters.values()
    return [p.name for p in parameters if p.name not in OWN]


def test_the_record_holds_every_keyword_parameter_in_order() -> None:
    assert is_dataclass(_Props)
    assert [field.name for field in fields(_Props)] == _keywords()


def test_the_manifest_keywords_are_the_renderers_parameters_but_the_derived_ones() -> None:
    record = _Props.of({name: object() for name in _keywords()})
    manifest_parameters = set(inspect.signature(scaled_object_manifest).parameters)
    assert set(record.manifest_keywords()) == manifest_parameters - DERIVED
    assert set(_keywords()) - set(record.manifest_keywords()) == _Props.OWN


def test_the_record_is_frozen_and_read_from_the_constructor_locals() -> None:
    assert _Props.__dataclass_params__.frozen  # type: ignore[attr-defined]
    given = {name: object() for name in _keywords()}
    record = _Props.of({**given, "self": object(), "scope": object(), "id": "x"})
    assert {field.name: getattr(record, field.name) for field in fields(_Props)} == given


def test_the_constructor_builds_the_record_from_its_locals() -> None:
    assert "_Props.of(locals())" in inspect.getsource(ModelServerAutoscaler.__init__)
