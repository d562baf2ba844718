"""`fmc` as a CI gate, reading cdk.out: a malformed cloud assembly is one clear error line and exit code 3 (never a
traceback), an unexpected exception is "internal error" and exit code 70, errors are JSON with --json, and StackSet
templates (``*.stackset.template.json``) are read."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli.assembly import AssemblyError, parse_stack
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli
from fmconstructs.cli.plan import plan_stacks

fmc_main = importlib.import_module("fmconstructs.cli.main")  # the module (fmconstructs.cli.main is also a function)

STACK_TYPES = [
    "AWS::EC2::LaunchTemplate",
    "AWS::PCS::ComputeNodeGroup",
    "AWS::PCS::Cluster",
    "AWS::EKS::Nodegroup",
    "AWS::AutoScaling::AutoScalingGroup",
    "AWS::SageMaker::Cluster",
    "Custom::PclusterCluster",
    "AWS::FSx::FileSystem",
    "AWS::EC2::Subnet",
    "AWS::EC2::VPCEndpoint",
]


def _gpu_template() -> dict[str, Any]:
    efa = get_instance_spec("p5.48xlarge").maximum_efa_interfaces
    interfaces: list[dict[str, Any]] = [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
    interfaces += [
        {"NetworkCardIndex": i, "DeviceIndex": 0 if i else 1, "InterfaceType": "efa-only"} for i in range(efa)
    ]
    return {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {"LaunchTemplateData": {"InstanceType": "p5.48xlarge", "NetworkInterfaces": interfaces}},
            },
            "Fleet": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {"MinSize": "0", "MaxSize": "2", "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}}},
            },
        }
    }


def _write(out: Path, manifest: object, files: Mapping[str, object] | None = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    for name, content in (files or {}).items():
        (out / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return out


def _stack_manifest(template_file: str = "S.template.json") -> dict[str, Any]:
    return {"artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": {"templateFile": template_file}}}}


def _one_error_line(result: Any) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fmc: error:"), result.output


# --- wrong JSON shapes: one line, exit 3 ---------------------------------------------------------------------------
MALFORMED: dict[str, tuple[object, dict[str, object]]] = {
    "manifest is a list": ([], {}),
    "manifest is a string": ('"cdk.out"', {}),
    "manifest is not JSON": ("{not json", {}),
    "artifacts is a list": ({"artifacts": []}, {}),
    "artifact is a string": ({"artifacts": {"S": "stack"}}, {}),
    "properties is a string": ({"artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": "x"}}}, {}),
    "templateFile missing on disk": (_stack_manifest("Gone.template.json"), {}),
    "template is not JSON": (_stack_manifest(), {"S.template.json": "{"}),
    "template is a list": (_stack_manifest(), {"S.template.json": []}),
    "Resources is a list": (_stack_manifest(), {"S.template.json": {"Resources": []}}),
    "Resources is a string": (_stack_manifest(), {"S.template.json": {"Resources": "none"}}),
    "a resource is a string": (_stack_manifest(), {"S.template.json": {"Resources": {"A": "x"}}}),
    "a resource has no Type": (_stack_manifest(), {"S.template.json": {"Resources": {"A": {}}}}),
    "Properties is a string": (
        _stack_manifest(),
        {"S.template.json": {"Resources": {"A": {"Type": "AWS::PCS::ComputeNodeGroup", "Properties": "p"}}}},
    ),
    "Metadata is a list": (
        _stack_manifest(),
        {"S.template.json": {"Resources": {"A": {"Type": "AWS::EC2::Subnet", "Metadata": []}}}},
    ),
    "Parameters is a list": (_stack_manifest(), {"S.template.json": {"Parameters": [], "Resources": {}}}),
    "environment is a number": (
        {
            "artifacts": {
                "S": {"type": "aws:cloudformation:stack", "environment": 1, "properties": {"templateFile": "t"}}
            }
        },
        {},
    ),
    "nested assembly points at itself": (
        {"artifacts": {"N": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "."}}}},
        {},
    ),
    "nested assembly outside cdk.out": (
        {"artifacts": {"N": {"type": "cdk:cloud-assembly", "properties": {"directoryName": ".."}}}},
        {},
    ),
    "nested assembly without directoryName": ({"artifacts": {"N": {"type": "cdk:cloud-assembly"}}}, {}),
    "nested assembly missing": (
        {"artifacts": {"N": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "assembly-N"}}}},
        {},
    ),
    "StackSet template is a list": ({"artifacts": {}}, {"X12345678.stackset.template.json": []}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["plan", "preflight"])
def test_malformed_assembly_is_one_error_line_and_exit_3(tmp_path: Path, case: str, command: str) -> None:
    # GIVEN a cdk.out whose files have the wrong JSON shape
    manifest, files = MALFORMED[case]
    out = _write(tmp_path / "cdk.out", manifest, files)
    # WHEN fmc reads it
    result = CliRunner().invoke(cli, [command, str(out)])
    # THEN one error line, exit code 3
    assert result.exit_code == int(ExitCode.ASSEMBLY) == 3, result.output
    _one_error_line(result)


def test_nested_assemblies_in_a_cycle_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "cdk.out"
    nested = {"artifacts": {"N": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "assembly-A"}}}}
    _write(out, nested)
    back = {"artifacts": {"N": {"type": "cdk:cloud-assembly", "properties": {"directoryName": ".."}}}}
    _write(out / "assembly-A", back)
    result = CliRunner().invoke(cli, ["plan", str(out)])
    assert result.exit_code == 3 and "already read" in result.output
    _one_error_line(result)


def test_errors_are_json_with_json(tmp_path: Path) -> None:
    out = _write(tmp_path / "cdk.out", [])
    for command in ("plan", "preflight"):
        result = CliRunner().invoke(cli, [command, str(out), "--json"])
        assert result.exit_code == 3
        data = json.loads(result.stdout)
        assert data["ok"] is False and data["exit_code"] == 3 and data["error"]["kind"] == "assembly"
        assert "manifest" in data["error"]["message"]


def test_usage_errors_are_json_with_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", "--instance-type", "p5.48xlarge", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["kind"] == "usage"


# --- hypothesis: any JSON in the places a template has JSON never escapes as a traceback ----------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(
    [
        "LaunchTemplateData",
        "NetworkInterfaces",
        "InstanceConfigs",
        "ScalingConfiguration",
        "CustomLaunchTemplate",
        "LaunchTemplate",
        "ScalingConfig",
        "InstanceTypes",
        "Subnets",
        "SubnetIds",
        "VPCZoneIdentifier",
        "MinSize",
        "MaxSize",
        "InstanceGroups",
        "VpcConfig",
        "ClusterConfiguration",
        "StorageCapacity",
        "LustreConfiguration",
        "Networking",
        "VpcEndpointType",
        "PurchaseOption",
        "AmiId",
    ]
)
PROPERTIES = st.dictionaries(KEYS, JSON, max_size=6)
RESOURCE = st.fixed_dictionaries(
    {"Type": st.sampled_from(STACK_TYPES), "Properties": PROPERTIES},
    optional={
        "Metadata": st.dictionaries(st.sampled_from(["aws:cdk:path", "fmconstructs:lustre-efa-interfaces"]), JSON)
    },
)
TEMPLATE = st.fixed_dictionaries({"Resources": st.dictionaries(st.sampled_from(["A", "B", "Lt", "C"]), RESOURCE)})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=TEMPLATE)
def test_any_property_shape_plans_without_an_exception(template: dict[str, Any]) -> None:
    # GIVEN resources of every type fmc reads, with arbitrary JSON where CloudFormation expects values
    # WHEN they are parsed and planned THEN nothing raises (a wrong shape is read as unknown)
    plan = plan_stacks([parse_stack("S", template)])
    json.dumps(plan.to_json(), default=str)


@settings(max_examples=200, deadline=None)
@given(template=JSON)
def test_any_template_value_is_an_assembly_error_or_a_plan(template: object) -> None:
    if not isinstance(template, dict) or not isinstance(template.get("Resources", {}), dict):
        with pytest.raises(AssemblyError, match="cdk_out"):
            parse_stack("S", template)  # type: ignore[arg-type]
        return
    try:
        stack = parse_stack("S", template)
    except AssemblyError:
        return  # a resource or Parameters of the wrong shape: refused with the file's name
    plan_stacks([stack])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(manifest=JSON, template=JSON)
def test_any_manifest_and_template_exit_0_or_3_never_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, manifest: object, template: object
) -> None:
    out = tmp_path_factory.mktemp("fuzz") / "cdk.out"
    stack = {
        "artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "S.template.json"}}}
    }
    for candidate in (manifest, stack):
        _write(out, candidate, {"S.template.json": template})
        result = CliRunner().invoke(cli, ["plan", str(out), "--json"])
        assert result.exit_code in (0, 3), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        json.loads(result.stdout)


# --- internal errors ------------------------------------------------------------------------------------------------
def test_an_unexpected_exception_is_internal_error_and_exit_70(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("a defect")

    monkeypatch.setattr(fmc_main, "plan_assembly", boom)
    result = CliRunner().invoke(cli, ["plan", str(tmp_path)])
    assert result.exit_code == int(ExitCode.INTERNAL) == 70
    assert "internal error (RuntimeError: a defect)" in result.output
    _one_error_line(result)
    result = CliRunner().invoke(cli, ["plan", str(tmp_path), "--json"])
    assert json.loads(result.stdout)["error"]["kind"] == "internal"


def test_main_guards_even_outside_a_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*_: object, **__: object) -> None:
        raise KeyError("x")

    monkeypatch.setattr(fmc_main.cli, "main", boom)
    with pytest.raises(SystemExit) as exit_info:
        fmc_main.main(["plan"])
    assert exit_info.value.code == 70
    captured = capsys.readouterr()
    assert "internal error (KeyError" in captured.err and "Traceback" not in captured.err


# --- StackSets ------------------------------------------------------------------------------------------------------
def _stackset_assembly(root: Path, template: dict[str, Any]) -> Path:
    """The layout cdk-stacksets writes: the administrator stack (an AWS::CloudFormation::StackSet) is the manifest's
    stack artifact; the replicated template is ``<uniqueId>.stackset.template.json`` beside it."""
    admin = {"Resources": {"StackSet": {"Type": "AWS::CloudFormation::StackSet", "Properties": {}}}}
    manifest = {
        "artifacts": {
            "FmTrainingStackSet": {
                "type": "aws:cloudformation:stack",
                "displayName": "FmTrainingStackSet",
                "properties": {"templateFile": "FmTrainingStackSet.template.json"},
            }
        }
    }
    files = {
        "FmTrainingStackSet.template.json": admin,
        "FmTrainingStackSetTraining6486CAC9.stackset.template.json": template,
    }
    return _write(root / "cdk.out", manifest, files)


def _with_paths(template: dict[str, Any]) -> dict[str, Any]:
    paths = {"Lt": "Gpu/LaunchTemplate/Resource", "Fleet": "Gpu/Resource"}
    for lid, suffix in paths.items():
        template["Resources"][lid]["Metadata"] = {"aws:cdk:path": f"FmTrainingStackSet/Training/Training/{suffix}"}
    return template


def test_stackset_templates_are_planned_with_construct_paths(tmp_path: Path) -> None:
    out = _stackset_assembly(tmp_path, _with_paths(_gpu_template()))
    result = CliRunner().invoke(cli, ["plan", str(out), "--json"])
    assert result.exit_code == 0, result.output
    (group,) = [g for g in json.loads(result.stdout)["node_groups"] if g["kind"] == "asg"]
    assert group["stack"] == "FmTrainingStackSetTraining6486CAC9 (StackSet)"
    assert group["group"] == "Training/Gpu" and group["gpus_total"] == 16


@pytest.mark.parametrize("command", ["plan", "preflight"])
def test_an_assembly_without_a_gpu_node_group_is_an_error(tmp_path: Path, command: str) -> None:
    # GIVEN a StackSet assembly whose replicated template is missing (only the administrator stack is read)
    out = _stackset_assembly(tmp_path, {"Resources": {}})
    result = CliRunner().invoke(cli, [command, str(out), "--region", "us-east-1"][: 2 if command == "plan" else 4])
    # THEN an error, never "preflight passed"
    assert result.exit_code == 3, result.output
    assert "no GPU node group" in result.output and "preflight passed" not in result.output
    _one_error_line(result)
