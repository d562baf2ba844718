"""What an operator needs after `cdk deploy` (issue 10 §3): the AMP remote-write and query URLs, the Grafana URL, and
the example stack's CfnOutputs, including the `GrafanaUrl` the docs promise."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from examples.observability_stack import OUTPUT_DESCRIPTIONS, ObservabilityStack
from fmconstructs.observability.grafana import GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import ENV, new_app
from tests.house.docs_pages import pages

#: What the docs promise (every page; the stack outputs are on docs/concepts/observability.md).
DOCS_TEXT = "\n".join(p.read_text() for p in pages())


def _workspace_url_parts(stack: cdk.Stack, workspace: PrometheusWorkspace) -> list[object]:
    logical_id = stack.get_logical_id(workspace.resource)
    return [
        "https://aps-workspaces.",
        {"Ref": "AWS::Region"},
        ".",
        {"Ref": "AWS::URLSuffix"},
        "/workspaces/",
        {"Fn::GetAtt": [logical_id, "WorkspaceId"]},
    ]


@pytest.fixture(scope="module")
def amp() -> tuple[cdk.Stack, PrometheusWorkspace]:
    stack = cdk.Stack(new_app(), "Metrics", env=ENV)
    return stack, PrometheusWorkspace(stack, "Prometheus")


@pytest.mark.parametrize(
    ("attribute", "path"),
    [("workspace_url", "/"), ("remote_write_url", "/api/v1/remote_write"), ("query_url", "/api/v1/query")],
)
def test_workspace_urls_are_built_from_the_workspace_id_and_region(amp, attribute, path):
    # AMP User Guide "AMP-find-workspace-details": https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/
    # api/v1/remote_write; built from WorkspaceId, not from PrometheusEndpoint (documented with and without api/v1/).
    stack, workspace = amp
    resolved = stack.resolve(getattr(workspace, attribute))
    assert resolved == {"Fn::Join": ["", [*_workspace_url_parts(stack, workspace), path]]}


def test_prometheus_endpoint_is_the_cloudformation_attribute(amp):
    stack, workspace = amp
    assert stack.resolve(workspace.prometheus_endpoint) == {
        "Fn::GetAtt": [stack.get_logical_id(workspace.resource), "PrometheusEndpoint"]
    }


def test_grafana_url_is_https_and_the_workspace_endpoint():
    stack = cdk.Stack(new_app(), "Obs", env=ENV)
    grafana = GrafanaWorkspace(
        stack, "Grafana", prometheus_workspace_arns=["arn:aws:aps:us-east-1:123456789012:workspace/ws-1"]
    )
    assert stack.resolve(grafana.url) == {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [stack.get_logical_id(grafana.resource), "Endpoint"]}]]
    }


@pytest.fixture(scope="module")
def example() -> tuple[ObservabilityStack, Template]:
    stack = ObservabilityStack(new_app(), "FmObservability", env=ENV)
    return stack, Template.from_stack(stack)


def test_example_emits_every_operator_output_with_a_description(example):
    _, template = example
    outputs = template.find_outputs("*")
    for name in ("GrafanaUrl", "PrometheusRemoteWriteUrl", "PrometheusQueryUrl", "AlertTopicArn"):
        assert name in outputs, f"{name} missing from FmObservability outputs"
        assert outputs[name]["Description"] == OUTPUT_DESCRIPTIONS[name]
        assert len(outputs[name]["Description"]) > 20


def test_example_output_values_point_at_the_resources(example):
    stack, template = example
    outputs = template.find_outputs("*")
    workspace = stack.workspace
    assert outputs["PrometheusRemoteWriteUrl"]["Value"] == stack.resolve(workspace.remote_write_url)
    assert outputs["PrometheusQueryUrl"]["Value"] == stack.resolve(workspace.query_url)
    assert outputs["GrafanaUrl"]["Value"] == stack.resolve(stack.grafana.url)
    assert outputs["AlertTopicArn"]["Value"] == {"Ref": stack.get_logical_id(workspace.alert_topic.node.default_child)}
    assert outputs["PrometheusWorkspaceId"]["Value"] == stack.resolve(workspace.workspace_id)


def test_every_stack_output_the_readme_names_exists(example):
    _, template = example
    promised = set(re.findall(r"stack output `(\w+)`", DOCS_TEXT))
    assert "GrafanaUrl" in promised
    assert promised <= set(template.find_outputs("*"))


def test_example_grafana_data_source_is_the_workspace_url(example):
    stack, template = example
    (provisioning,) = template.find_resources("Custom::FmGrafanaProvisioning").values()
    assert provisioning["Properties"]["PrometheusUrl"] == stack.resolve(stack.workspace.workspace_url)
