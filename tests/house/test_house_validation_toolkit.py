"""House rule (issue 25): one validation toolkit in fmconstructs/_validate.py, one name per check."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from aws_cdk import aws_kms as kms

from fmconstructs import _validate
from fmconstructs.errors import FmTypeError
from fmconstructs.observability import _checks as observability_checks
from fmconstructs.observability.grafana.provisioner import GrafanaProvisioner, GrafanaProvisionerOptions
from fmconstructs.observability.grafana.workspace import GrafanaWorkspace

from tests.conftest import new_scene

AMP_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-12345678-abcd-1234-abcd-123456789012"


def test_check_kms_key_accepts_a_key() -> None:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    assert _validate.check_kms_key("encryption_key", key) is key


class _KeyArnOnly:
    key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.parametrize(
    "value",
    ["alias/aws/ebs", "arn:aws:kms:us-east-1:123456789012:key/1234abcd", None, 7, _KeyArnOnly()],
    ids=["alias", "arn-string", "none", "number", "key-arn-without-node"],
)
def test_check_kms_key_refuses_what_is_not_a_key(value: object) -> None:
    with pytest.raises(FmTypeError, match=r"encryption_key must be a kms\.IKey"):
        _validate.check_kms_key("encryption_key", value)


def test_observability_checks_do_not_rename_the_toolkit() -> None:
    """The scope check has one name (``check_scope_id``); observability._checks keeps only its own checks."""
    assert not hasattr(observability_checks, "check_scope")
    assert not hasattr(observability_checks, "check_instance")


def test_provision_takes_the_provisioner_options_once() -> None:
    provision = inspect.signature(GrafanaWorkspace.provision)
    assert [p.name for p in provision.parameters.values()] == ["self", "id", "options"]
    constructor = inspect.signature(GrafanaProvisioner.__init__)
    own = {"self", "scope", "id", "workspace"}
    assert set(GrafanaProvisionerOptions.__annotations__) == set(constructor.parameters) - own
    # the module has postponed annotations: Required[...] is kept as text (typing then lists no required key)
    required = {key for key, text in GrafanaProvisionerOptions.__annotations__.items() if "Required[" in str(text)}
    assert required == {"prometheus_workspace_arn", "prometheus_endpoint"}


def test_provision_refuses_an_unknown_option() -> None:
    scene = new_scene()
    workspace = GrafanaWorkspace(scene.stack, "Grafana", prometheus_workspace_arns=[AMP_ARN])
    options: dict[str, Any] = {
        "prometheus_workspace_arn": AMP_ARN,
        "prometheus_endpoint": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/",
        "folder_titel": "typo",
    }
    with pytest.raises(TypeError, match="folder_titel"):
        workspace.provision(**options)
