"""Checks shared by the storage constructs: the library-wide ones from :mod:`fmconstructs._validate`."""

from __future__ import annotations

from .. import _validate

__all__ = ["check_instance"]


def check_instance(parameter: str, value: object, expected_type: type, expected: str) -> None:
    """None, or an instance of ``expected_type`` (jsii classes and structs such as ``Duration``)."""
    if value is not None:
        _validate.check_instance(parameter, value, expected_type, expected)
