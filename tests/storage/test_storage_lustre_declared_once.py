"""LustreFileSystem's keyword arguments are declared once: the signature (names, types, defaults); the constructor
builds its record from it (``_LustreProps.of(locals())``) instead of passing every keyword a second time, and the
checked record (:class:`_CheckedLustreProps`) adds only what the checks derive."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from aws_cdk import Duration

from fmconstructs.storage import LustreDeploymentType, LustreFileSystem
from fmconstructs.storage.lustre_rules import _CheckedLustreProps, _LustreProps, check_lustre_props

from tests.conftest import new_scene


def _keyword_parameters(function: object) -> list[str]:
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    return [name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_the_record_fields_are_the_constructor_keywords():
    fields = [field.name for field in dataclasses.fields(_LustreProps)]
    assert fields == _keyword_parameters(LustreFileSystem.__init__)


def test_the_checked_record_adds_only_the_derived_backup_days():
    given = {field.name for field in dataclasses.fields(_LustreProps)}
    checked = {field.name for field in dataclasses.fields(_CheckedLustreProps)}
    assert checked - given == {"backup_days"}


def test_every_keyword_is_named_in_the_docstring():
    missing = [
        name
        for name in _keyword_parameters(LustreFileSystem.__init__)
        if f"``{name}``" not in (LustreFileSystem.__doc__ or "")
    ]
    assert missing == []


def _given(**overrides: object) -> _LustreProps:
    """The keyword arguments of a call that gives only ``overrides`` (the signature's defaults for the rest)."""
    signature = inspect.signature(LustreFileSystem.__init__)
    defaults = {
        name: p.default
        for name, p in signature.parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
    }
    return _LustreProps.of({**defaults, **overrides})


@pytest.mark.parametrize(
    ("deployment_type", "retention", "days"),
    [
        (LustreDeploymentType.PERSISTENT_2, None, 7),
        (LustreDeploymentType.PERSISTENT_2, Duration.days(30), 30),
        (LustreDeploymentType.SCRATCH_2, None, 0),
    ],
)
def test_the_checks_take_the_record_built_from_the_signature(deployment_type, retention, days):
    scene = new_scene()
    given = _given(
        vpc=scene.vpc,
        storage_capacity_gib=1200,
        deployment_type=deployment_type,
        automatic_backup_retention=retention,
    )
    checked = check_lustre_props(scene.stack, given)
    assert isinstance(checked, _CheckedLustreProps)
    assert checked.backup_days == days
    assert checked.subnet is not None
    assert checked.subnet.subnet_id == scene.subnet_a.subnet_id
