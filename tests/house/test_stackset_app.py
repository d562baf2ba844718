"""examples/stackset_app.py: one parameterized, environment-agnostic training template replicated by StackSets.

- Parameters, constraints and the subnet-in-VPC rule (independent of the constructs).
- StackSet wiring, the bootstrap-version rule and the asset guard, with the training constructs replaced by a stub
  (the wiring is tested apart from the constructs).
- The real app: in-process synthesis and, with the real CDK CLI, ``cdk synth`` + cfn-lint (0 errors) + parameters.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from constructs import Construct

import examples.stackset_app as stackset_app
from examples.stackset_app import (
    ADMIN_STACK,
    DEFAULT_CONFIG,
    FSX_CAPACITIES_GIB,
    GRAFANA_STACK,
    PARAMETER_SPECS,
    PARAMETERS,
    StackSetAdminStack,
    TrainingStackSetStack,
    declare_parameters,
    load_config,
)
from examples.training_stack import TrainingInputs
from fmconstructs import FmValidationError

from tests.conftest import new_app

ROOT = Path(__file__).resolve().parents[2]


def synthesize(outdir: Path, **context: Any) -> dict[str, cdk.Stack]:
    """The real app, synthesized in-process (validation off, as unit tests do) into ``outdir``."""
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False, context=context or None)
    stacks = stackset_app.build(app)
    app.synth()
    return stacks


def replicated_template(admin: StackSetAdminStack, outdir: Path) -> dict[str, Any]:
    return json.loads((outdir / admin.template_stack.template_file).read_text())


class _StubTraining(Construct):
    """Stands in for TrainingCluster: one resource per input, so every parameter is used."""

    def __init__(self, scope: Construct, id: str, *, inputs: TrainingInputs, **_: Any) -> None:
        super().__init__(scope, id)
        for name, value in vars(inputs).items():
            if value is not None:
                sns.CfnTopic(self, name, display_name=cdk.Token.as_string(value))


@pytest.fixture(scope="module")
def stub_assembly(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, cdk.Stack], Path]:
    outdir = tmp_path_factory.mktemp("stackset-stub")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stackset_app, "TrainingCluster", _StubTraining)
        stacks = synthesize(outdir)
    return stacks, outdir


@pytest.fixture(scope="module")
def admin_template(stub_assembly) -> Template:
    return Template.from_stack(stub_assembly[0][ADMIN_STACK])


@pytest.fixture(scope="module")
def stub_replicated(stub_assembly) -> dict[str, Any]:
    stacks, outdir = stub_assembly
    admin = stacks[ADMIN_STACK]
    assert isinstance(admin, StackSetAdminStack)
    return replicated_template(admin, outdir)


# --- parameters and their constraints --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parameters_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A StackSetStack with only the parameters and the rule (no construct involved)."""
    from cdk_stacksets import StackSetStack

    outdir = tmp_path_factory.mktemp("parameters")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = StackSetStack(cdk.Stack(app, "Parent"), "Params")
    inputs, prefix = declare_parameters(stack)
    sns.CfnTopic(stack, "Uses", display_name=cdk.Fn.join("-", [inputs.vpc_id, inputs.subnet_id, prefix]))
    app.synth()
    return json.loads((outdir / stack.template_file).read_text())


EXPECTED_PARAMETERS = {
    "VpcId": {"Type": "AWS::EC2::VPC::Id", "AllowedPattern": "^vpc-([0-9a-f]{8}|[0-9a-f]{17})$"},
    "SubnetId": {"Type": "AWS::EC2::Subnet::Id", "AllowedPattern": "^subnet-([0-9a-f]{8}|[0-9a-f]{17})$"},
    "ReservationId": {"Type": "String", "AllowedPattern": "^cr-([0-9a-f]{8}|[0-9a-f]{17})$"},
    "AmiId": {"Type": "AWS::EC2::Image::Id", "AllowedPattern": "^ami-([0-9a-f]{8}|[0-9a-f]{17})$"},
    "GpuNodes": {"Type": "Number", "MinValue": 1, "MaxValue": 256, "Default": "2"},
    "LoginNodes": {"Type": "Number", "MinValue": 1, "MaxValue": 4, "Default": "1"},
    "FsxCapacityGiB": {"Type": "Number", "Default": "4800"},
    "DataBucketName": {"Type": "String", "AllowedPattern": "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"},
    "ExportPrefix": {"Type": "String", "AllowedPattern": "^[A-Za-z0-9-]{1,64}$", "Default": "fmconstructs-training"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PARAMETERS))
def test_parameter_type_and_constraint(parameters_only, name):
    declared = parameters_only["Parameters"][name]
    assert declared == {**declared, **EXPECTED_PARAMETERS[name]}
    assert len(declared["ConstraintDescription"]) >= 10
    assert declared["Description"]


def test_fsx_capacity_allows_only_efa_steps_of_4800_gib(parameters_only):
    allowed = parameters_only["Parameters"]["FsxCapacityGiB"]["AllowedValues"]
    assert allowed == [str(4800 * k) for k in range(1, 41)]
    assert "2400" not in allowed  # valid for PERSISTENT_2, not for EFA-enabled at 1,000 MB/s/TiB


def test_subnet_must_belong_to_the_vpc_rule(parameters_only):
    assert parameters_only["Rules"]["SubnetInVpc"]["Assertions"] == [
        {
            "Assert": {
                "Fn::EachMemberIn": [
                    {"Fn::ValueOfAll": ["AWS::EC2::Subnet::Id", "VpcId"]},
                    {"Fn::RefAll": "AWS::EC2::VPC::Id"},
                ]
            },
            "AssertDescription": "SubnetId must be a subnet of VpcId",
        }
    ]


def test_parameter_count_is_far_below_the_quota():
    assert len(PARAMETERS) == len(EXPECTED_PARAMETERS) <= 200  # CloudFormation quotas: 200 parameters


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VpcId", "vpc-0123456789abcdef0"),
        ("VpcId", "vpc-1a2b3c4d"),
        ("SubnetId", "subnet-0123456789abcdef0"),
        ("ReservationId", "cr-0123456789abcdef0"),
        ("AmiId", "ami-0123456789abcdef0"),
        ("GpuNodes", "1"),
        ("GpuNodes", "256"),
        ("LoginNodes", "4"),
        ("FsxCapacityGiB", "4800"),
        ("FsxCapacityGiB", "192000"),
        ("DataBucketName", "my.training-data"),
        ("ExportPrefix", "team-a"),
    ],
)
def test_values_the_template_accepts_pass_the_synth_time_check(name, value):
    PARAMETER_SPECS[name].check(value, "test")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VpcId", "vpc-0123456789abcdef"),  # 16 characters
        ("VpcId", "vpc-0123456789ABCDEF0"),
        ("VpcId", "vpc-0123456789abcdef0\n"),
        ("SubnetId", "sg-0123456789abcdef0"),
        ("ReservationId", "cr-xyz"),
        ("AmiId", "ami-0123456789abcdef0 "),
        ("GpuNodes", "0"),
        ("GpuNodes", "257"),
        ("GpuNodes", "2.5"),
        ("LoginNodes", "5"),
        ("FsxCapacityGiB", "2400"),
        ("FsxCapacityGiB", "196800"),
        ("DataBucketName", "Data_Bucket"),
        ("DataBucketName", "ab"),
        ("ExportPrefix", "team a"),
    ],
)
def test_values_the_template_rejects_fail_the_synth_time_check(name, value):
    with pytest.raises(FmValidationError, match=name):
        PARAMETER_SPECS[name].check(value, "test")


def test_fsx_capacities_are_the_efa_steps():
    assert FSX_CAPACITIES_GIB[:3] == (4800, 9600, 14400)
    assert all(c % 4800 == 0 for c in FSX_CAPACITIES_GIB)


# --- configuration ------------------------------------------------------------------------------------------------------


def test_default_configuration_is_service_managed_with_two_instances():
    config = load_config(DEFAULT_CONFIG)
    assert config.organizational_units == ("ou-abcd-11111111",)
    assert [(i.account, i.region) for i in config.instances] == [
        ("111111111111", "us-east-1"),
        ("222222222222", "us-west-2"),
    ]


def test_configuration_accepts_json_text_as_cdk_context_passes_it():
    assert load_config(json.dumps(DEFAULT_CONFIG)) == load_config(DEFAULT_CONFIG)


def _config(**changes: Any) -> dict[str, Any]:
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    config.update(changes)
    return config


@pytest.mark.parametrize(
    ("config", "parameter"),
    [
        (_config(instances=[]), "instances"),
        (_config(instances="111111111111"), "instances"),
        (_config(instances=[{"account": "1111", "region": "us-east-1"}]), "account"),
        (_config(instances=[{"account": "111111111111", "region": "us-east-1a"}]), "region"),
        (
            _config(instances=[{"account": "111111111111", "region": "us-east-1"}] * 2),
            "instances",
        ),
        (
            _config(instances=[{"account": "111111111111", "region": "us-east-1", "parameters": {"Vpc": "x"}}]),
            "parameters",
        ),
        (
            _config(instances=[{"account": "111111111111", "region": "us-east-1", "parameters": {"GpuNodes": 0}}]),
            "GpuNodes",
        ),
        (_config(parameters={"VpcId": "vpc-0123456789abcdef0"}), "parameters"),
        (_config(organizationalUnits=["root"]), "organizationalUnits"),
        (_config(delegatedAdmin="yes"), "delegatedAdmin"),
        (_config(stackSetName="1-training"), "stackSetName"),
        ([], "fmconstructs:stackset"),
    ],
)
def test_invalid_configuration_is_rejected_at_synth_time(config, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        load_config(config)


# --- StackSet wiring (stubbed training constructs) ---------------------------------------------------------------------


def test_one_stackset_with_one_target_per_account_and_region(admin_template):
    admin_template.resource_count_is("AWS::CloudFormation::StackSet", 1)
    admin_template.has_resource_properties(
        "AWS::CloudFormation::StackSet",
        {
            "StackSetName": "fmconstructs-training",
            "PermissionModel": "SERVICE_MANAGED",
            "CallAs": "DELEGATED_ADMIN",
            "AutoDeployment": {"Enabled": False},
            "Capabilities": ["CAPABILITY_IAM"],
            "ManagedExecution": {"Active": True},
            "OperationPreferences": {
                "FailureToleranceCount": 0,
                "MaxConcurrentCount": 1,
                "RegionConcurrencyType": "SEQUENTIAL",
            },
            "StackInstancesGroup": [
                {
                    "DeploymentTargets": {
                        "AccountFilterType": "INTERSECTION",
                        "Accounts": ["111111111111"],
                        "OrganizationalUnitIds": ["ou-abcd-11111111"],
                    },
                    "Regions": ["us-east-1"],
                    "ParameterOverrides": Match.array_with([{"ParameterKey": "GpuNodes", "ParameterValue": "4"}]),
                },
                Match.object_like(
                    {
                        "DeploymentTargets": Match.object_like({"Accounts": ["222222222222"]}),
                        "Regions": ["us-west-2"],
                    }
                ),
            ],
        },
    )


def test_every_parameter_is_specified_at_the_stackset_level(admin_template):
    # An instance may only override parameters the StackSet specifies (CloudFormation UpdateStackInstances).
    (stack_set,) = admin_template.find_resources("AWS::CloudFormation::StackSet").values()
    keys = {p["ParameterKey"] for p in stack_set["Properties"]["Parameters"]}
    assert keys == set(PARAMETER_SPECS)


def test_template_url_is_the_replicated_template_asset_in_the_admin_bootstrap_bucket(admin_template, stub_assembly):
    (stack_set,) = admin_template.find_resources("AWS::CloudFormation::StackSet").values()
    url = json.dumps(stack_set["Properties"]["TemplateURL"])
    assert "${AWS::AccountId}" in url and "${AWS::Region}" in url
    _, outdir = stub_assembly
    assets = json.loads((outdir / f"{ADMIN_STACK}.assets.json").read_text())["files"]
    assert any(a["source"]["path"].endswith(".stackset.template.json") for a in assets.values())


def test_self_managed_when_no_organizational_units(tmp_path):
    config = _config(organizationalUnits=[])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stackset_app, "TrainingCluster", _StubTraining)
        stacks = synthesize(tmp_path, **{"fmconstructs:stackset": config})
    template = Template.from_stack(stacks[ADMIN_STACK])
    template.has_resource_properties(
        "AWS::CloudFormation::StackSet",
        {
            "PermissionModel": "SELF_MANAGED",
            "StackInstancesGroup": Match.array_with(
                [Match.object_like({"DeploymentTargets": {"Accounts": ["111111111111"]}})]
            ),
        },
    )
    template.resource_count_is("AWS::IAM::Role", 1)  # the StackSets administration role


def test_replicated_template_has_no_bootstrap_version_parameter_or_rule(stub_replicated):
    # Target accounts may never have been CDK-bootstrapped: no /cdk-bootstrap/<qualifier>/version to read.
    assert "BootstrapVersion" not in stub_replicated.get("Parameters", {})
    assert "CheckBootstrapVersion" not in stub_replicated.get("Rules", {})


def test_admin_stack_keeps_the_bootstrap_version_rule(admin_template):
    # Deployed by `cdk deploy` into a bootstrapped account, whose asset bucket holds the replicated template.
    admin_template.has_parameter("BootstrapVersion", {"Type": "AWS::SSM::Parameter::Value<String>"})
    assert "CheckBootstrapVersion" in admin_template.to_json()["Rules"]


def test_replicated_template_is_environment_agnostic(stub_assembly):
    stacks, _ = stub_assembly
    admin = stacks[ADMIN_STACK]
    assert isinstance(admin, StackSetAdminStack)
    assert cdk.Token.is_unresolved(admin.template_stack.account)
    assert cdk.Token.is_unresolved(admin.template_stack.region)


def test_a_file_asset_in_the_replicated_template_fails_synthesis(tmp_path):
    # The replicated StackSetStack has no asset buckets on purpose: Lambda-backed parts live in FmTrainingGrafana.
    app = new_app()
    parent = cdk.Stack(app, "Parent")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stackset_app, "TrainingCluster", _StubTraining)
        template_stack = TrainingStackSetStack(parent, "Training")
    with pytest.raises(RuntimeError, match="An Asset Bucket must be provided to use File Assets"):
        lambda_.Function(
            template_stack,
            "Fn",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(ROOT / "examples")),
        )


def test_grafana_is_a_separate_stack_that_imports_the_instance_exports(stub_assembly):
    stacks, _ = stub_assembly
    grafana = Template.from_stack(stacks[GRAFANA_STACK])
    grafana.resource_count_is("AWS::Grafana::Workspace", 1)
    grafana.resource_count_is("Custom::FmGrafanaProvisioning", 1)
    assert "fmconstructs-training-PrometheusWorkspaceArn" in json.dumps(grafana.to_json())
    assert "fmconstructs-training-PrometheusEndpoint" in json.dumps(grafana.to_json())


# --- the real app --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_assembly(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, cdk.Stack], Path]:
    outdir = tmp_path_factory.mktemp("stackset-real")
    return synthesize(outdir), outdir


def test_real_replicated_template_holds_the_training_environment_and_no_lambda(real_assembly):
    stacks, outdir = real_assembly
    admin = stacks[ADMIN_STACK]
    assert isinstance(admin, StackSetAdminStack)
    template = Template.from_json(replicated_template(admin, outdir))
    for resource_type in ("AWS::PCS::Cluster", "AWS::FSx::FileSystem", "AWS::APS::Workspace"):
        template.resource_count_is(resource_type, 1)
    template.resource_count_is("AWS::PCS::ComputeNodeGroup", 2)
    template.resource_count_is("AWS::Lambda::Function", 0)
    assert not [t for t in template.to_json()["Resources"].values() if t["Type"].startswith("Custom::")]
    template.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {"ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": {"Ref": "GpuNodes"}}},
    )
    template.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": {"Ref": "FsxCapacityGiB"}})
    template.has_output("PrometheusWorkspaceArn", {"Export": {"Name": Match.any_value()}})


def test_real_replicated_template_uses_every_parameter(real_assembly):
    stacks, outdir = real_assembly
    admin = stacks[ADMIN_STACK]
    assert isinstance(admin, StackSetAdminStack)
    body = json.dumps(replicated_template(admin, outdir)["Resources"])
    body += json.dumps(replicated_template(admin, outdir)["Outputs"])
    unused = [name for name in PARAMETER_SPECS if json.dumps({"Ref": name}) not in body]
    assert unused == []


# --- the real CDK CLI ----------------------------------------------------------------------------------------------------


def _cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_CLI_TELEMETRY="true",
        AWS_EC2_METADATA_DISABLED="true",
        HOME=str(home),  # no ~/.aws config or credentials
    )
    return env


@pytest.mark.cli
def test_cdk_cli_synthesizes_the_stackset_app_and_cfn_lint_finds_no_error(tmp_path):
    from cfnlint.api import lint_file

    assert (ROOT / "node_modules" / ".bin" / "cdk").exists(), "the pinned CDK CLI is missing: run `make test`"
    out = tmp_path / "cdk.out"
    proc = subprocess.run(
        [
            shutil.which("npx") or "npx",
            "cdk",
            "synth",
            "--quiet",
            "--no-notices",
            "--app",
            f"{sys.executable} -m examples.stackset_app",
            "--output",
            str(out),
        ],
        cwd=ROOT,
        env=_cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert {ADMIN_STACK, GRAFANA_STACK} <= set(manifest["artifacts"])
    (replicated,) = out.glob("*.stackset.template.json")
    errors = [f"{m.rule.id} {m.message[:200]}" for m in lint_file(replicated) if m.rule.severity == "error"]
    assert errors == []
    parameters = json.loads(replicated.read_text())["Parameters"]
    assert set(parameters) == set(EXPECTED_PARAMETERS)
    for name, expected in EXPECTED_PARAMETERS.items():
        assert parameters[name] == {**parameters[name], **expected}, name
