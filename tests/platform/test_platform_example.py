"""FmPlatform (examples/platform_stack.py), synthesized with aws-cdk-lib's CloudFormation validation and cdk-nag
AwsSolutions on, then cfn-lint, with FmObservability's workspaces: the example app's assembly and cfn-lint findings
(tests/conftest.py ``example_assembly``, ``example_lint``: made once per run, shared with
tests/house/test_validation_tier.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmconstructs.storage import size_for_checkpoint

from tests.support.shared_outputs import errors

pytestmark = pytest.mark.validation

STACKS = ("FmObservability", "FmPlatform")


@pytest.fixture(scope="module")
def assembly(example_assembly: Path) -> Path:
    """The example app with CloudFormation validation and cdk-nag on (tests/conftest.py: one synthesis per run); its
    FmObservability and FmPlatform are the stacks ``ObservabilityStack`` and ``PlatformStack`` (with that
    observability's workspace and Grafana) make, their descriptions aside."""
    return example_assembly


def _template(assembly: Path) -> dict:
    return json.loads((assembly / "FmPlatform.template.json").read_text())


def test_cdk_nag_reports_nothing_unacknowledged(assembly):
    report = json.loads((assembly / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_nag_acknowledgements_have_reasons(assembly):
    acknowledged = {}
    for entries in json.loads((assembly / "FmPlatform.metadata.json").read_text()).values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                acknowledged.update(entry["data"])
    assert acknowledged, "the example acknowledges the node role's SSM policy"
    assert all(len(reason) >= 30 for reason in acknowledged.values())


def test_cfn_lint_has_zero_errors(example_lint):
    # cfn-lint ran once per run on the shared assembly (tests/support/shared_outputs.py)
    findings = {stack: errors(example_lint[f"{stack}.template.json"]) for stack in STACKS}
    assert findings == {stack: [] for stack in STACKS}


def test_one_efa_security_group_for_nodes_and_file_system(assembly):
    resources = _template(assembly)["Resources"]
    efa = [k for k, r in resources.items() if r["Type"] == "AWS::EC2::SecurityGroup"
           and r["Properties"]["GroupDescription"].startswith("EFA:")]  # fmt: skip
    assert len(efa) == 1
    (fsx,) = (r for r in resources.values() if r["Type"] == "AWS::FSx::FileSystem")
    assert {"Fn::GetAtt": [efa[0], "GroupId"]} in fsx["Properties"]["SecurityGroupIds"]
    templates = [r for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    gpu = [t for t in templates if "NetworkInterfaces" in json.dumps(t)]
    assert gpu and all(efa[0] in json.dumps(t["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]) for t in gpu)


def test_file_system_sized_for_the_checkpoint(assembly):
    from examples.platform_stack import CHECKPOINT_BYTES, CHECKPOINT_SECONDS

    expected = size_for_checkpoint(CHECKPOINT_BYTES, CHECKPOINT_SECONDS, efa_enabled=True)
    (fsx,) = (r for r in _template(assembly)["Resources"].values() if r["Type"] == "AWS::FSx::FileSystem")
    assert fsx["Properties"]["StorageCapacity"] == expected.storage_capacity_gib == 4800


def test_outputs_have_descriptions(assembly):
    outputs = _template(assembly)["Outputs"]
    names = ("ClusterId", "LoginCommand", "FileSystemId", "FileSystemDnsName", "DataBucketName", "GrafanaUrl")
    for name in names:
        assert any(key.startswith(f"Platform{name}") for key in outputs), name
    assert all(len(o.get("Description", "")) >= 20 for o in outputs.values())


def test_capacity_block_events_drain_through_the_login_node_group(assembly):
    resources = _template(assembly)["Resources"]
    rules = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule" and "EventPattern" in r["Properties"]]
    assert any("cr-0fedcba9876543210" in json.dumps(r["Properties"]["EventPattern"]) for r in rules)
