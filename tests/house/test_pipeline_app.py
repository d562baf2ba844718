"""examples/pipeline_app.py: a CDK Pipelines pipeline with one stage per account and region, tested by synthesis.

Pipeline and stage wiring are tested with the training constructs replaced by a stub (one Prometheus workspace, so
the Grafana stack has something to read); the real stages are synthesized too.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from constructs import Construct

import examples.pipeline_app as pipeline_app
from examples.pipeline_app import DEFAULT_CONFIG, PIPELINE_STACK, PipelineStack, TrainingStage, load_config
from examples.training_stack import TrainingInputs
from fmconstructs import FmValidationError
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import new_app


class _StubTraining(Construct):
    """Stands in for TrainingCluster: a Prometheus workspace for the Grafana stack, and the inputs as tags."""

    def __init__(self, scope: Construct, id: str, *, inputs: TrainingInputs, **_: Any) -> None:
        super().__init__(scope, id)
        self.workspace = PrometheusWorkspace(self, "Prometheus")
        cdk.Tags.of(self).add("fmconstructs:reservation", inputs.reservation_id)


@pytest.fixture(scope="module")
def stub_stacks() -> dict[str, cdk.Stack]:
    with pytest.MonkeyPatch.context() as patch:  # only while the constructs are created
        patch.setattr(pipeline_app, "TrainingCluster", _StubTraining)
        return pipeline_app.build(new_app())


@pytest.fixture(scope="module")
def pipeline_template(stub_stacks) -> Template:
    return Template.from_stack(stub_stacks[PIPELINE_STACK])


def _stages(stub_stacks: dict[str, cdk.Stack]) -> dict[str, TrainingStage]:
    pipeline = stub_stacks[PIPELINE_STACK]
    assert isinstance(pipeline, PipelineStack)
    return pipeline.stages


def test_one_stage_per_configured_account_and_region(stub_stacks):
    stages = _stages(stub_stacks)
    assert {name: (s.account, s.region) for name, s in stages.items()} == {
        "Research": ("222222222222", "us-east-1"),
        "Production": ("333333333333", "us-west-2"),
    }
    for stage in stages.values():
        assert (stage.training.account, stage.training.region) == (stage.account, stage.region)
        assert (stage.grafana.account, stage.grafana.region) == (stage.account, stage.region)


def test_pipeline_deploys_the_stages_in_order_after_synth_and_self_mutation(pipeline_template):
    (pipeline,) = pipeline_template.find_resources("AWS::CodePipeline::Pipeline").values()
    names = [stage["Name"] for stage in pipeline["Properties"]["Stages"]]
    assert names[:3] == ["Source", "Build", "UpdatePipeline"]
    assert names[-2:] == ["Research", "Production"]


def test_stage_actions_assume_the_bootstrap_roles_of_the_stage_accounts(pipeline_template):
    body = json.dumps(pipeline_template.find_resources("AWS::CodePipeline::Pipeline"))
    for account, region in (("222222222222", "us-east-1"), ("333333333333", "us-west-2")):
        assert f"cdk-hnb659fds-deploy-role-{account}-{region}" in body


def test_artifacts_are_encrypted_with_a_key_the_stage_accounts_can_use(pipeline_template):
    pipeline_template.resource_count_is("AWS::KMS::Key", 1)  # cross_account_keys=True
    pipeline_template.has_resource_properties(
        "AWS::CodePipeline::Pipeline",
        {"ArtifactStores": Match.array_with([Match.object_like({"Region": "us-east-1"})])},
    )


def test_source_connection_arn_uses_the_partition_pseudo_parameter(pipeline_template):
    (pipeline,) = pipeline_template.find_resources("AWS::CodePipeline::Pipeline").values()
    source = pipeline["Properties"]["Stages"][0]["Actions"][0]["Configuration"]
    assert source["FullRepositoryId"] == "example-org/training-infrastructure"
    assert source["BranchName"] == "main"
    arn = json.dumps(source["ConnectionArn"])
    assert '{"Ref": "AWS::Partition"}' in arn and "arn:aws:" not in arn
    assert "connection/0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d" in arn


def test_synth_step_synthesizes_this_app(pipeline_template):
    body = json.dumps(pipeline_template.find_resources("AWS::CodeBuild::Project"))
    assert "npx cdk synth --app '.venv/bin/python -m examples.pipeline_app'" in body


def test_stage_stacks_keep_the_bootstrap_version_rule(stub_stacks):
    # Stage accounts are CDK-bootstrapped (trusting the pipeline account): unlike a StackSet's replicated template.
    for stage in _stages(stub_stacks).values():
        template = Template.from_stack(stage.training).to_json()
        assert "BootstrapVersion" in template["Parameters"]
        assert "CheckBootstrapVersion" in template["Rules"]


def test_grafana_stack_reads_the_stage_prometheus_workspace(stub_stacks):
    for stage in _stages(stub_stacks).values():
        grafana = Template.from_stack(stage.grafana)
        grafana.resource_count_is("Custom::FmGrafanaProvisioning", 1)
        assert "Fn::ImportValue" in json.dumps(grafana.to_json())  # a cross-stack reference inside the stage
        assert stage.training in stage.grafana.dependencies


def test_stage_values_reach_the_training_construct(stub_stacks):
    stage = _stages(stub_stacks)["Production"]
    Template.from_stack(stage.training).has_resource_properties(
        "AWS::APS::Workspace",
        {"Tags": Match.array_with([{"Key": "fmconstructs:reservation", "Value": "cr-03333333333333333"}])},
    )


# --- configuration ------------------------------------------------------------------------------------------------------


def _config(**changes: Any) -> dict[str, Any]:
    config = json.loads(json.dumps(DEFAULT_CONFIG))
    config.update(changes)
    return config


def _stage_config(**changes: Any) -> dict[str, Any]:
    stage = json.loads(json.dumps(DEFAULT_CONFIG["stages"][0]))
    stage.update(changes)
    return stage


def test_default_configuration_and_its_json_text_agree():
    assert load_config(json.dumps(DEFAULT_CONFIG)) == load_config(DEFAULT_CONFIG)
    assert load_config(DEFAULT_CONFIG).stages[1].inputs.zone == "us-west-2b"


@pytest.mark.parametrize(
    ("config", "parameter"),
    [
        (_config(account="12345"), "account"),
        (_config(region="us-east-1a"), "region"),
        (_config(repository="no-slash"), "repository"),
        (_config(connectionId="arn:aws:codeconnections:us-east-1:111111111111:connection/x"), "connectionId"),
        (_config(stages=[]), "stages"),
        (_config(stages=[_stage_config(name="Prod Stage")]), "name"),
        (_config(stages=[_stage_config(account="22222222222")]), "account"),
        (_config(stages=[_stage_config(region="moon-1")]), "region"),
        (_config(stages=[_stage_config(inputs={"vpc": "vpc-0123456789abcdef0"})]), "inputs"),
        (_config(stages=[_stage_config(), _stage_config()]), "stages"),
        ("[]", "fmconstructs:pipeline"),
    ],
)
def test_invalid_configuration_is_rejected_at_synth_time(config, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        load_config(config)


# --- the real stages -----------------------------------------------------------------------------------------------------


def test_real_stages_synthesize_with_the_stage_values():
    app = new_app()
    stacks = pipeline_app.build(app)
    app.synth()
    training = Template.from_stack(stacks["Production/Training"])
    training.resource_count_is("AWS::PCS::ComputeNodeGroup", 2)
    training.has_resource_properties(
        "AWS::PCS::ComputeNodeGroup",
        {"ScalingConfiguration": {"MinInstanceCount": 0, "MaxInstanceCount": 8}, "PurchaseOption": "ONDEMAND"},
    )
    training.has_resource_properties("AWS::FSx::FileSystem", {"StorageCapacity": 9600})
    training.has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "LaunchTemplateData": Match.object_like(
                {
                    "CapacityReservationSpecification": {
                        "CapacityReservationTarget": {"CapacityReservationId": "cr-03333333333333333"}
                    }
                }
            )
        },
    )
    Template.from_stack(stacks["Production/Grafana"]).resource_count_is("AWS::Grafana::Workspace", 1)


@pytest.mark.validation
def test_cfn_lint_finds_no_error_in_any_template(tmp_path):
    from cfnlint.api import lint_file

    # With the path metadata the CDK CLI adds (cfn-lint recognizes CDK templates by it).
    context = {"aws:cdk:enable-path-metadata": True}
    app = pipeline_app.create_app(outdir=str(tmp_path), builtin_cloud_formation_validation=False, context=context)
    pipeline_app.build(app)
    app.synth()
    templates = sorted(tmp_path.rglob("*.template.json"))
    assert len(templates) == 6  # pipeline, cross-region support stack, 2 stages x (Training, Grafana)
    errors = {
        t.name: [f"{m.rule.id} {m.message[:200]}" for m in lint_file(t) if m.rule.severity == "error"]
        for t in templates
    }
    assert errors == {name: [] for name in errors}
