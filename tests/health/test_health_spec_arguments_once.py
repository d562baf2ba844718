"""NodeCheckSpec.for_instance_type's parameters are written once: the spec is built from a record of its locals."""

from __future__ import annotations

import inspect
from dataclasses import fields, is_dataclass

from fmconstructs.health.spec import NodeCheckSpec, _Given


def _parameters() -> list[str]:
    return list(inspect.signature(NodeCheckSpec.for_instance_type).parameters)


def test_the_record_holds_every_parameter_in_order() -> None:
    assert is_dataclass(_Given)
    assert [field.name for field in fields(_Given)] == _parameters()


def test_every_argument_is_a_spec_field_of_the_same_name() -> None:
    assert {field.name for field in fields(_Given)} <= {field.name for field in fields(NodeCheckSpec)}


def test_the_record_is_frozen_and_read_from_the_locals_without_copies() -> None:
    assert _Given.__dataclass_params__.frozen  # type: ignore[attr-defined]
    given = {name: object() for name in _parameters()}
    record = _Given.of({**given, "cls": NodeCheckSpec})
    assert record.as_keywords() == given
    assert all(record.as_keywords()[name] is value for name, value in given.items())


def test_for_instance_type_builds_the_record_from_its_locals() -> None:
    assert "_Given.of(locals())" in inspect.getsource(NodeCheckSpec.for_instance_type)
