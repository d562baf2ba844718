"""GrafanaWorkspace's keyword parameters are written once (issue 25): the record its checks and the workspace step
read (``_WorkspaceProps``) is built from the signature (``_WorkspaceProps.of(locals())``)."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError, fields, is_dataclass

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.grafana.workspace import (
    GrafanaAccountAccess,
    GrafanaAuthentication,
    _validate,
    _WorkspaceProps,
)

ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-12345678-abcd-1234-abcd-123456789012"


def _keywords() -> list[str]:
    parameters = inspect.signature(GrafanaWorkspace.__init__).parameters.values()
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def _defaults() -> dict[str, object]:
    parameters = inspect.signature(GrafanaWorkspace.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_the_record_fields_are_the_constructor_keywords_in_order() -> None:
    assert is_dataclass(_WorkspaceProps)
    assert [field.name for field in fields(_WorkspaceProps)] == _keywords()


def test_the_record_is_frozen_and_read_from_the_constructor_locals() -> None:
    given = {name: object() for name in _keywords()}
    record = _WorkspaceProps.of({**given, "self": object(), "scope": object(), "id": "x"})
    assert {field.name: getattr(record, field.name) for field in fields(_WorkspaceProps)} == given
    with pytest.raises(FrozenInstanceError):
        record.description = "changed"  # type: ignore[misc]


def test_the_constructor_builds_the_record_from_its_locals() -> None:
    assert "_WorkspaceProps.of(locals())" in inspect.getsource(GrafanaWorkspace.__init__)
    assert list(inspect.signature(_validate).parameters) == ["props"]
    assert list(inspect.signature(GrafanaWorkspace._build_workspace).parameters)[:2] == ["self", "props"]


def test_the_checks_take_the_record_and_return_the_arns() -> None:
    props = _WorkspaceProps.of({**_defaults(), "prometheus_workspace_arns": [ARN]})
    assert _validate(props) == (ARN,)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"prometheus_workspace_arns": []}, "prometheus_workspace_arns"),
        ({"workspace_name": "bad name"}, "workspace_name"),
        ({"authentication": (GrafanaAuthentication.SAML,)}, "saml"),
        ({"permission_type": "CUSTOMER_MANAGED"}, "permission_type"),
        ({"account_access": GrafanaAccountAccess.ORGANIZATION}, "organizational_units"),
        ({"grafana_version": "10.4"}, "grafana_version"),
    ],
    ids=["no-arns", "name", "saml-missing", "permission-type", "organization-without-units", "version"],
)
def test_bad_props_in_the_record_name_the_parameter(overrides: dict[str, object], parameter: str) -> None:
    props = _WorkspaceProps.of({**_defaults(), "prometheus_workspace_arns": [ARN], **overrides})
    with pytest.raises(FmValidationError) as raised:
        _validate(props)
    assert raised.value.parameter == parameter
