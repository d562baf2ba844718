"""The CDK-native multi-account path: a CDK Pipelines pipeline with one stage per account and region.

Synthesize (no AWS account needed)::

    npx cdk synth --app '.venv/bin/python -m examples.pipeline_app' --output cdk.out.pipeline

FmTrainingPipeline (deployed once, with ``cdk deploy``, into the tooling account) is an ``aws_cdk.pipelines``
``CodePipeline`` that synthesizes this app from the team's repository and deploys one :class:`TrainingStage` per
(account, region) in order (context ``fmconstructs:pipeline``, :func:`load_config`). Each stage holds two stacks of
that account and region:

- **Training**: :class:`examples.training_stack.TrainingCluster` with the stage's values (VPC, subnet and its zone,
  reservation id, AMI id, node counts, FSx capacity, data bucket), known at synth time, so every construct checks
  them when the app is synthesized (zones, counts, capacity steps), unlike a StackSet's deploy-time parameters;
- **Grafana**: the Lambda-backed Grafana workspace and provisioning custom resource, reading the Training stack's
  Prometheus workspace by object reference. File assets are fine here: every stage account is CDK-bootstrapped
  (``cdk bootstrap aws://<account>/<region> --trust <pipeline account>
  --cloudformation-execution-policies <policy ARN>``), and the pipeline publishes the assets to that account's
  bootstrap bucket.

Compared with :mod:`examples.stackset_app`: a StackSet replicates one template to accounts that need no CDK
bootstrap and takes per-account values as parameters; a pipeline synthesizes one template per stage (values
validated at synth time, Lambda-backed parts and assets allowed) into accounts that are bootstrapped and trust the
pipeline account. Stage stacks are environment-specific, so CDK writes the stage's own account id and region where a
construct asks for ``Stack.account``/``Stack.region``; nothing else is hard-coded (partition via
``${AWS::Partition}``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Stack, pipelines
from constructs import Construct

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.training_stack import DEFAULT_INSTANCE_TYPE, TrainingCluster, TrainingGrafanaStack, TrainingInputs
from fmconstructs import FmValidationError

CONTEXT_KEY = "fmconstructs:pipeline"
PIPELINE_STACK = "FmTrainingPipeline"

_ACCOUNT = re.compile(r"\d{12}")
_REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d+")
# CodePipeline stage names: 1-100 of letters, digits, '.', '@', '-', '_' (botocore codepipeline service-2.json
# StageName); CDK stage ids also name cloud-assembly directories, so this example keeps to letters, digits and '-'.
_STAGE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
# The connection id: the part of a CodeConnections ConnectionArn after "connection/", [\w-]+ (botocore codeconnections
# service-2.json ConnectionArn pattern).
_CONNECTION_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_INPUT_FIELDS = {
    "vpcId": "vpc_id",
    "subnetId": "subnet_id",
    "zone": "zone",
    "reservationId": "reservation_id",
    "amiId": "ami_id",
    "gpuNodes": "gpu_nodes",
    "loginNodes": "login_nodes",
    "fsxCapacityGiB": "fsx_capacity_gib",
    "dataBucketName": "data_bucket_name",
}


@dataclass(frozen=True)
class StageConfig:
    """One deployment stage: a name, an account, a region and the training environment's values there."""

    name: str
    account: str
    region: str
    inputs: TrainingInputs


@dataclass(frozen=True)
class PipelineConfig:
    """The pipeline's own environment, its source repository and the stages, in deployment order."""

    account: str
    region: str
    repository: str
    branch: str
    connection_id: str
    stages: tuple[StageConfig, ...]


#: Placeholders (documentation accounts and ids); override with ``-c fmconstructs:pipeline='<json>'`` or cdk.json.
DEFAULT_CONFIG: dict[str, Any] = {
    "account": "111111111111",
    "region": "us-east-1",
    "repository": "example-org/training-infrastructure",
    "branch": "main",
    "connectionId": "0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d",
    "stages": [
        {
            "name": "Research",
            "account": "222222222222",
            "region": "us-east-1",
            "inputs": {
                "vpcId": "vpc-02222222222222222",
                "subnetId": "subnet-02222222222222222",
                "zone": "us-east-1a",
                "reservationId": "cr-02222222222222222",
                "amiId": "ami-02222222222222222",
                "gpuNodes": 2,
                "loginNodes": 1,
                "fsxCapacityGiB": 4800,
                "dataBucketName": "research-training-data",
            },
        },
        {
            "name": "Production",
            "account": "333333333333",
            "region": "us-west-2",
            "inputs": {
                "vpcId": "vpc-03333333333333333",
                "subnetId": "subnet-03333333333333333",
                "zone": "us-west-2b",
                "reservationId": "cr-03333333333333333",
                "amiId": "ami-03333333333333333",
                "gpuNodes": 8,
                "loginNodes": 2,
                "fsxCapacityGiB": 9600,
                "dataBucketName": "production-training-data",
            },
        },
    ],
}


def load_config(raw: object) -> PipelineConfig:
    """Parse and check the configuration (a mapping, or its JSON text as ``-c`` passes it)."""
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, Mapping):
        raise FmValidationError(CONTEXT_KEY, raw, "a JSON object with account, region, repository and stages")
    account, region = _account(raw.get("account"), f"{CONTEXT_KEY}.account"), raw.get("region")
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise FmValidationError(f"{CONTEXT_KEY}.region", region, "a region name like 'us-east-1'")
    repository, branch = raw.get("repository"), raw.get("branch", "main")
    if not isinstance(repository, str) or not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
        raise FmValidationError(f"{CONTEXT_KEY}.repository", repository, "'owner/name' of the source repository")
    if not isinstance(branch, str) or not branch.strip():
        raise FmValidationError(f"{CONTEXT_KEY}.branch", branch, "a branch name")
    connection_id = raw.get("connectionId")
    if not isinstance(connection_id, str) or not _CONNECTION_ID.fullmatch(connection_id):
        raise FmValidationError(
            f"{CONTEXT_KEY}.connectionId",
            connection_id,
            "the id of a CodeConnections connection (after 'connection/' in its ARN)",
        )
    stages_raw = raw.get("stages")
    if not isinstance(stages_raw, list) or not stages_raw:
        raise FmValidationError(f"{CONTEXT_KEY}.stages", stages_raw, "a non-empty JSON list of stages")
    stages = tuple(_stage(i, item) for i, item in enumerate(stages_raw))
    names = [s.name for s in stages]
    if len(names) != len(set(names)):
        raise FmValidationError(f"{CONTEXT_KEY}.stages", names, "distinct stage names")
    return PipelineConfig(account, region, repository, branch, connection_id, stages)


def _account(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ACCOUNT.fullmatch(value):
        raise FmValidationError(where, value, "a 12-digit account id")
    return value


def _stage(index: int, item: object) -> StageConfig:
    where = f"{CONTEXT_KEY}.stages[{index}]"
    if not isinstance(item, Mapping):
        raise FmValidationError(where, item, "an object with name, account, region and inputs")
    name = item.get("name")
    if not isinstance(name, str) or not _STAGE_NAME.fullmatch(name):
        raise FmValidationError(f"{where}.name", name, "a letter, then up to 63 letters, digits or '-'")
    region = item.get("region")
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise FmValidationError(f"{where}.region", region, "a region name like 'us-east-1'")
    inputs = item.get("inputs")
    if not isinstance(inputs, Mapping):
        raise FmValidationError(f"{where}.inputs", inputs, "an object of training inputs")
    unknown = sorted(set(inputs) - set(_INPUT_FIELDS))
    if unknown:
        raise FmValidationError(f"{where}.inputs", unknown, f"keys among {', '.join(_INPUT_FIELDS)}")
    # The constructs check the values themselves (types, patterns, counts, zones) when the stage is built.
    return StageConfig(
        name=name,
        account=_account(item.get("account"), f"{where}.account"),
        region=region,
        inputs=TrainingInputs(**{_INPUT_FIELDS[k]: v for k, v in inputs.items()}),
    )


class TrainingStack(Stack):
    """The training environment of one stage (environment-specific: the stage's account and region)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        inputs: TrainingInputs,
        instance_type: str = DEFAULT_INSTANCE_TYPE,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.training = TrainingCluster(self, "Training", inputs=inputs, instance_type=instance_type)


class TrainingStage(cdk.Stage):
    """One account and region: the Training stack and the Grafana stack that reads its Prometheus workspace."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        inputs: TrainingInputs,
        instance_type: str = DEFAULT_INSTANCE_TYPE,
        env: cdk.Environment,
    ) -> None:
        super().__init__(scope, id, env=env)
        self.training = TrainingStack(
            self,
            "Training",
            inputs=inputs,
            instance_type=instance_type,
            description="fmconstructs example: training environment (AWS PCS, FSx for Lustre, Prometheus)",
        )
        workspace = self.training.training.workspace
        self.grafana = TrainingGrafanaStack(
            self,
            "Grafana",
            prometheus_workspace_arn=workspace.workspace_arn,
            prometheus_endpoint=workspace.prometheus_endpoint,
            description="fmconstructs example: Grafana for the stage's Prometheus workspace",
        )


class PipelineStack(Stack):
    """FmTrainingPipeline: source (CodeConnections), synth, then one stage per account and region, in order."""

    def __init__(self, scope: Construct, id: str, *, config: PipelineConfig, **kwargs: Any) -> None:
        super().__init__(scope, id, env=cdk.Environment(account=config.account, region=config.region), **kwargs)
        # The connection ARN is built with ${AWS::Partition} (never a literal "arn:aws:").
        connection_arn = self.format_arn(
            service="codeconnections", resource="connection", resource_name=config.connection_id
        )
        source = pipelines.CodePipelineSource.connection(
            config.repository, config.branch, connection_arn=connection_arn
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            # Stage accounts differ from the pipeline account: the artifact bucket needs a KMS key they may use.
            cross_account_keys=True,
            synth=pipelines.ShellStep(
                "Synth",
                input=source,
                commands=[
                    "python3 -m venv .venv",
                    ".venv/bin/pip install -e .",
                    "npm ci",
                    "npx cdk synth --app '.venv/bin/python -m examples.pipeline_app'",
                ],
            ),
        )
        self.stages: dict[str, TrainingStage] = {}
        for stage in config.stages:
            self.stages[stage.name] = TrainingStage(
                self,
                stage.name,
                inputs=stage.inputs,
                env=cdk.Environment(account=stage.account, region=stage.region),
            )
            self.pipeline.add_stage(self.stages[stage.name])


def build(app: cdk.App) -> dict[str, Stack]:
    """Add the pipeline stack to ``app``; return it and every stage stack by path (``<Stage>/<Stack>``)."""
    config = load_config(app.node.try_get_context(CONTEXT_KEY) or DEFAULT_CONFIG)
    pipeline = PipelineStack(
        app,
        PIPELINE_STACK,
        config=config,
        description="fmconstructs example: CDK Pipelines deploying the training environment per account and region",
    )
    stacks: dict[str, Stack] = {PIPELINE_STACK: pipeline}
    for name, stage in pipeline.stages.items():
        stacks[f"{name}/Training"] = stage.training
        stacks[f"{name}/Grafana"] = stage.grafana
    return stacks


def create_app(**props: Any) -> cdk.App:
    """The app, with CDK's analytics metadata off: its ``AWS::CDK::Metadata`` resource comes with a
    ``CDKMetadataAvailable`` condition that lists some thirty region names, which these templates must not contain
    (and a replicated template would report the administrator's CDK version from every team's account)."""
    return cdk.App(analytics_reporting=False, **props)


def main() -> None:
    app = create_app()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
