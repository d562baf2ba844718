"""Checks shared by the storage constructs: the library-wide ones from :mod:`fmconstructs._validate`."""

from __future__ import annotations

from .. import _validate
from .._validate import check_scope_id as check_scope_and_id

__all__ = ["check_instance", "check_scope_and_id"]


def check_instance(parameter: str, value: object, expected_type: type, expected: str) -> None:
    """None, or an instance of ``expected_type`` (jsii classes and structs such as ``Duration``)."""
    if value is not None:
        _validate.check_instance(parameter, value, expected_type, expected)
