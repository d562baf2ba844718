"""The storage factories forward their options without writing the list again: the imported file system's attributes
are one record built from the factory's signature, and ``add_data_repository`` takes the association's options as
one ``TypedDict`` (``DataRepositoryAssociationOptions``) whose keys are the association's keywords."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs.storage import DataRepositoryAssociation, DataRepositoryAssociationOptions, LustreFileSystem
from fmconstructs.storage.lustre import _ImportedAttributes

from tests.conftest import new_scene


def _keywords(function: object) -> list[str]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_imported_attributes_are_the_factory_keywords() -> None:
    assert [f.name for f in fields(_ImportedAttributes)] == _keywords(
        LustreFileSystem.from_lustre_file_system_attributes
    )


def test_the_association_options_are_its_keywords_but_the_file_system() -> None:
    association = [k for k in _keywords(DataRepositoryAssociation.__init__) if k != "file_system"]
    assert list(DataRepositoryAssociationOptions.__annotations__) == association
    required = {
        name
        for name, parameter in inspect.signature(DataRepositoryAssociation.__init__).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is inspect.Parameter.empty
    } - {"file_system"}
    hints = typing.get_type_hints(DataRepositoryAssociationOptions, include_extras=True)
    marked = {name for name, hint in hints.items() if typing.get_origin(hint) is typing.Required}
    assert marked == required


def test_add_data_repository_declares_no_option_of_its_own() -> None:
    from fmconstructs.storage.lustre_repositories import _LustreDataRepositories

    hints = typing.get_type_hints(_LustreDataRepositories.add_data_repository, include_extras=True)
    assert typing.get_args(hints["options"]) == (DataRepositoryAssociationOptions,)


def _imported(**overrides: object) -> object:
    scene = new_scene()
    group = ec2.SecurityGroup(scene.stack, "Sg", vpc=scene.vpc)
    arguments: dict[str, object] = {
        "file_system_id": "fs-0123456789abcdef0",
        "dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        "mount_name": "abcdefgh",
        "security_group": group,
        **overrides,
    }
    return LustreFileSystem.from_lustre_file_system_attributes(scene.stack, "Imported", **arguments)  # type: ignore[arg-type]


def test_the_imported_file_system_keeps_its_facts() -> None:
    fs = _imported(storage_capacity_gib=4800, efa_enabled=True, zone="us-east-1a")
    assert fs.file_system_id == "fs-0123456789abcdef0"  # type: ignore[attr-defined]
    assert fs.storage_capacity_gib == 4800  # type: ignore[attr-defined]
    assert fs.efa_enabled is True  # type: ignore[attr-defined]
    assert fs.zone == "us-east-1a"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"file_system_id": "fs-1"}, "file_system_id must be an FSx file system id"),
        ({"storage_capacity_gib": 0}, "storage_capacity_gib"),
        ({"efa_enabled": "yes"}, "efa_enabled"),
    ],
)
def test_the_imported_attributes_are_still_checked(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _imported(**overrides)
