"""CapacityBlockEvents' keyword parameters are written once: the record its checks read is built from the signature."""

from __future__ import annotations

import inspect
from dataclasses import fields, is_dataclass

from fmconstructs.capacity_events.construct import CapacityBlockEvents, _check_props, _Props

OWN = {"self", "scope", "id"}


def _keywords() -> list[str]:
    parameters = inspect.signature(CapacityBlockEvents.__init__).parameters.values()
    return [p.name for p in parameters if p.name not in OWN]


def test_the_record_holds_every_keyword_parameter_in_order() -> None:
    assert is_dataclass(_Props)
    assert [field.name for field in fields(_Props)] == _keywords()


def test_the_record_is_frozen_and_read_from_the_constructor_locals() -> None:
    assert _Props.__dataclass_params__.frozen  # type: ignore[attr-defined]
    given = {name: object() for name in _keywords()}
    record = _Props.of({**given, "self": object(), "scope": object(), "id": "x"})
    assert {field.name: getattr(record, field.name) for field in fields(_Props)} == given


def test_the_constructor_builds_the_record_and_the_checks_take_it() -> None:
    assert "_Props.of(locals())" in inspect.getsource(CapacityBlockEvents.__init__)
    assert list(inspect.signature(_check_props).parameters) == ["props"]
