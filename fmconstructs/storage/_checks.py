"""Checks shared by the storage constructs (the library-wide ones live in fmconstructs._validate)."""

from __future__ import annotations

from .._validate import check_construct, check_str
from ..errors import FmTypeError


def check_scope_and_id(scope: object, id: object) -> None:
    """A construct scope and a construct id (a non-empty str), before jsii sees them."""
    check_construct("scope", scope, attribute="node", expected="a Construct (the scope)")
    check_str("id", id, allowed="a construct id (a non-empty str)", min_length=1)


def check_instance(parameter: str, value: object, expected_type: type, expected: str) -> None:
    """None, or an instance of ``expected_type`` (jsii classes and structs such as ``Duration``)."""
    if value is not None and not isinstance(value, expected_type):
        raise FmTypeError(parameter, value, f"{expected} (got a {type(value).__name__})")
