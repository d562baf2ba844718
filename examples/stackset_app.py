"""One template, many accounts: the training environment replicated by CloudFormation StackSets.

Synthesize (no AWS account needed)::

    npx cdk synth --app '.venv/bin/python -m examples.stackset_app' --output cdk.out.stackset

The app has three stacks:

- **the replicated template** (``TrainingStackSetStack``, a ``StackSetStack`` inside FmTrainingStackSet): ONE
  environment-agnostic template of :class:`examples.training_stack.TrainingCluster` (Slurm on AWS PCS, a GPU node
  group on a targeted ODCR, EFA-enabled FSx for Lustre, a Prometheus workspace). Everything that differs per account
  and region is a CloudFormation parameter with its constraint (:data:`PARAMETERS`): VPC, subnet, reservation id, AMI
  id, node counts, file-system capacity, data bucket. A ``Rules`` entry checks before any resource is created that
  the subnet belongs to the VPC. The template names no account, region, partition or zone.
- **FmTrainingStackSet** (the administrator stack, deployed once with ``cdk deploy`` into the StackSets administrator
  or delegated-administrator account): the ``AWS::CloudFormation::StackSet`` with one stack instance per
  (account, region) of the configuration (context ``fmconstructs:stackset``, :func:`load_config`), each with its own
  parameter values.
- **FmTrainingGrafana** (not replicated): the Amazon Managed Grafana workspace and its provisioning custom resource,
  deployed with ``cdk deploy`` into the (bootstrapped) accounts that want dashboards; it reads the Prometheus workspace
  that the stack instance of that account and region exports (``<ExportPrefix>-PrometheusWorkspaceArn``).

Design choices:

- **Library: cdk-stacksets (cdklabs), not a hand-written ``aws_cloudformation.CfnStackSet``.** Its ``StackSetStack``
  synthesizes the replicated template from ordinary constructs and registers it as a file asset of the administrator
  stack (``TemplateURL`` is resolved for us), its ``StackSetStackSynthesizer`` emits no bootstrap-version parameter or
  rule (below), and ``StackSet``/``StackSetTarget``/``DeploymentType`` model both permission models, per-target
  parameter overrides, capabilities and operation preferences. With bare ``CfnStackSet`` we would have to write the
  template to S3 ourselves and strip the bootstrap rule by hand (aws/aws-cdk#26310: a CfnStackSet of a normal CDK stack
  fails in a region that is not CDK-bootstrapped, "Unable to fetch parameters [/cdk-bootstrap/hnb659fds/version]").
  The library is "experimental" (cdk-stacksets README banner): pin it.
- **Bootstrap version rule:** CDK's ``DefaultStackSynthesizer`` adds a ``BootstrapVersion`` parameter (read from SSM
  ``/cdk-bootstrap/<qualifier>/version``) and a ``CheckBootstrapVersion`` rule to every stack; a stack instance in an
  account that was never bootstrapped would fail on it. ``StackSetStack`` uses ``StackSetStackSynthesizer``, a plain
  ``StackSynthesizer`` subclass that adds neither (cdk-stacksets src/stackset-stack.ts), so the replicated template
  needs nothing from the target accounts. The administrator stack keeps the rule: it is deployed by ``cdk deploy``
  into a bootstrapped account, whose asset bucket also holds the replicated template.
- **Lambda-backed parts are not replicated.** Grafana provisioning (a custom-resource Lambda and the provider
  framework's Lambda) and the EKS kubectl handler (Lambda + kubectl layer) are file assets. cdk-stacksets copies file
  assets of a ``StackSetStack`` into buckets named ``<prefix>-<region>`` that you pre-create in every target region
  with organization-wide read access, through a ``BucketDeployment`` Lambda in the administrator stack; and on
  aws-cdk-lib >= 2.254 the object key the template points to differs from the key the copy writes for aws-cdk-lib's
  custom-resource handlers, so such stack instances fail with ``S3 NoSuchKey`` (cdklabs/cdk-stacksets#895, fix open as
  #896; this app uses aws-cdk-lib 2.275). So the replicated template holds no Lambda and no file asset (the
  ``StackSetStack`` is created without asset buckets: adding a file asset to it fails synthesis with "An Asset
  Bucket must be provided to use File Assets"), Grafana lives in FmTrainingGrafana, and EKS clusters with Helm charts
  take the CDK Pipelines path (:mod:`examples.pipeline_app`), where every target account is bootstrapped.
- **Permission model:** service-managed (AWS Organizations, deployed from the delegated administrator; stack instances
  targeted by OU intersected with the account) when the configuration lists ``organizationalUnits``, else
  self-managed (``AWSCloudFormationStackSetExecutionRole`` in each target account). Note: cdk-stacksets' self-managed
  administrator role policy hard-codes ``arn:aws:iam::*:role/<execution role>`` (src/stackset.ts), which is wrong
  outside the ``aws`` partition; service-managed has no such role.
- **What stays synth-time:** the GPU instance type (context ``fmconstructs:stackset-instance-type``, default
  p5.48xlarge): the launch template's EFA layout is derived from it, so it is one template per instance type.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import CfnParameter, CfnRule, CfnRuleAssertion, Fn, Stack
from constructs import Construct

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdk_stacksets import (
    Capability,
    DeploymentType,
    OperationPreferences,
    RegionConcurrencyType,
    StackSet,
    StackSetStack,
    StackSetTarget,
    StackSetTemplate,
)

from examples.training_stack import (
    DEFAULT_INSTANCE_TYPE,
    EFA_CAPACITY_STEP_GIB,
    TrainingCluster,
    TrainingGrafanaStack,
    TrainingInputs,
)
from fmconstructs import FmValidationError

CONTEXT_KEY = "fmconstructs:stackset"
INSTANCE_TYPE_CONTEXT_KEY = "fmconstructs:stackset-instance-type"
ADMIN_STACK = "FmTrainingStackSet"
GRAFANA_STACK = "FmTrainingGrafana"
#: Construct id of the replicated StackSetStack under the administrator stack.
TEMPLATE_ID = "Training"
DEFAULT_EXPORT_PREFIX = "fmconstructs-training"

# EC2 resource ids: a prefix, a hyphen, then 8 or 17 characters (EC2 User Guide "resource-ids"); lowercase hex.
_EC2_ID = "([0-9a-f]{8}|[0-9a-f]{17})"
# S3 general purpose bucket names: 3-63 characters of lowercase letters, digits, '.' and '-', beginning and ending
# with a letter or digit (S3 User Guide "bucketnamingrules").
_BUCKET_NAME = "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
#: EFA-enabled PERSISTENT_2 capacities the template accepts at 1,000 MB/s/TiB (multiples of 4,800 GiB, FSx User Guide
#: "increase-storage-capacity"); CloudFormation constraints cannot say "a multiple of", so the template lists them.
#: 40 steps (192,000 GiB) is this example's ceiling, not an FSx limit: extend the list for larger file systems.
FSX_CAPACITIES_GIB: tuple[int, ...] = tuple(EFA_CAPACITY_STEP_GIB * k for k in range(1, 41))


@dataclass(frozen=True)
class ParameterSpec:
    """One CloudFormation parameter of the replicated template and its constraints (also checked at synth time
    against the literal values of the StackSet configuration)."""

    name: str
    type: str
    description: str
    constraint_description: str
    allowed_pattern: str | None = None
    min_value: int | None = None
    max_value: int | None = None
    allowed_values: tuple[str, ...] = ()
    default: str | None = None

    @property
    def is_number(self) -> bool:
        return self.type == "Number"

    def check(self, value: str, where: str) -> None:
        """Raise :class:`FmValidationError` when ``value`` breaks this parameter's constraints."""
        if not isinstance(value, str):
            raise FmValidationError(f"{where}.{self.name}", value, "a string (CloudFormation parameter values are)")
        ok = True
        if self.allowed_pattern is not None:
            ok = re.fullmatch(self.allowed_pattern, value) is not None
        if self.is_number:
            ok = re.fullmatch(r"\d+", value) is not None
            if ok and self.min_value is not None:
                ok = int(value) >= self.min_value
            if ok and self.max_value is not None:
                ok = int(value) <= self.max_value
        if ok and self.allowed_values:
            ok = value in self.allowed_values
        if not ok:
            raise FmValidationError(f"{where}.{self.name}", value, self.constraint_description)


#: The parameters of the replicated template (CloudFormation quotas: at most 200 parameters per template).
PARAMETERS: tuple[ParameterSpec, ...] = (
    ParameterSpec(
        "VpcId",
        "AWS::EC2::VPC::Id",
        "The VPC of the training environment (must exist in the target account and region).",
        "a VPC id: vpc- followed by 8 or 17 lowercase hexadecimal characters",
        allowed_pattern=f"^vpc-{_EC2_ID}$",
    ),
    ParameterSpec(
        "SubnetId",
        "AWS::EC2::Subnet::Id",
        "One private subnet of the VPC, in the zone of the capacity reservation: the PCS controller, every node and "
        "the file system live there (EFA traffic does not cross zones).",
        "a subnet id: subnet- followed by 8 or 17 lowercase hexadecimal characters",
        allowed_pattern=f"^subnet-{_EC2_ID}$",
    ),
    ParameterSpec(
        "ReservationId",
        "String",
        "The targeted On-Demand Capacity Reservation of the GPU nodes (in the subnet's zone).",
        "a capacity reservation id: cr- followed by 8 or 17 lowercase hexadecimal characters",
        allowed_pattern=f"^cr-{_EC2_ID}$",
    ),
    ParameterSpec(
        "AmiId",
        "AWS::EC2::Image::Id",
        "An x86_64 AMI of the region with the PCS agent, Slurm 25.11, EFA and the NVIDIA driver.",
        "an AMI id: ami- followed by 8 or 17 lowercase hexadecimal characters",
        allowed_pattern=f"^ami-{_EC2_ID}$",
    ),
    ParameterSpec(
        "GpuNodes",
        "Number",
        "Maximum GPU nodes of the Slurm partition 'gpu' (at most the reservation's instance count).",
        "a whole number from 1 to 256 (this template's ceiling; the reservation's size is the real bound)",
        min_value=1,
        max_value=256,
        default="2",
    ),
    ParameterSpec(
        "LoginNodes",
        "Number",
        "Static login nodes.",
        "a whole number from 1 to 4",
        min_value=1,
        max_value=4,
        default="1",
    ),
    ParameterSpec(
        "FsxCapacityGiB",
        "Number",
        "Storage of the EFA-enabled FSx for Lustre file system (GiB, 1,000 MB/s/TiB).",
        f"a multiple of {EFA_CAPACITY_STEP_GIB:,} GiB from {FSX_CAPACITIES_GIB[0]:,} to {FSX_CAPACITIES_GIB[-1]:,} "
        "(EFA-enabled FSx for Lustre at 1,000 MB/s/TiB)",
        allowed_values=tuple(str(c) for c in FSX_CAPACITIES_GIB),
        default=str(FSX_CAPACITIES_GIB[0]),
    ),
    ParameterSpec(
        "DataBucketName",
        "String",
        "An existing S3 bucket of the account: s3://<bucket>/datasets/ and /checkpoints/ are linked to /fsx.",
        "an S3 bucket name: 3-63 lowercase letters, digits, '.' or '-', starting and ending with a letter or digit",
        allowed_pattern=_BUCKET_NAME,
    ),
    ParameterSpec(
        "ExportPrefix",
        "String",
        "Prefix of the stack's export names (FmTrainingGrafana imports <prefix>-PrometheusWorkspaceArn).",
        "1-64 letters, digits or '-'",
        allowed_pattern="^[A-Za-z0-9-]{1,64}$",
        default=DEFAULT_EXPORT_PREFIX,
    ),
)
PARAMETER_SPECS: dict[str, ParameterSpec] = {p.name: p for p in PARAMETERS}


def declare_parameters(stack: Stack) -> tuple[TrainingInputs, str]:
    """Declare :data:`PARAMETERS` and the subnet-in-VPC rule in ``stack``; return the inputs (tokens) and the export
    prefix (a token)."""
    params: dict[str, CfnParameter] = {}
    for spec in PARAMETERS:
        params[spec.name] = CfnParameter(
            stack,
            spec.name,
            type=spec.type,
            description=spec.description,
            constraint_description=spec.constraint_description,
            allowed_pattern=spec.allowed_pattern,
            min_value=spec.min_value,
            max_value=spec.max_value,
            allowed_values=list(spec.allowed_values) or None,
            default=spec.default,
        )
    # Rules run before any resource is created (CloudFormation User Guide "rules-section-structure"). This is the rule
    # functions reference's own Fn::EachMemberIn example: the VpcId attribute of every AWS::EC2::Subnet::Id parameter
    # (here SubnetId) is among the values of the AWS::EC2::VPC::Id parameters (here VpcId).
    CfnRule(
        stack,
        "SubnetInVpc",
        assertions=[
            CfnRuleAssertion(
                assert_=Fn.condition_each_member_in(
                    Fn.value_of_all("AWS::EC2::Subnet::Id", "VpcId"), Fn.ref_all("AWS::EC2::VPC::Id")
                ),
                assert_description="SubnetId must be a subnet of VpcId",
            )
        ],
    )
    inputs = TrainingInputs(
        vpc_id=params["VpcId"].value_as_string,
        subnet_id=params["SubnetId"].value_as_string,
        reservation_id=params["ReservationId"].value_as_string,
        ami_id=params["AmiId"].value_as_string,
        gpu_nodes=params["GpuNodes"].value_as_number,
        login_nodes=params["LoginNodes"].value_as_number,
        fsx_capacity_gib=params["FsxCapacityGiB"].value_as_number,
        data_bucket_name=params["DataBucketName"].value_as_string,
    )
    return inputs, params["ExportPrefix"].value_as_string


class TrainingStackSetStack(StackSetStack):
    """The replicated template: environment-agnostic, parameterized, no bootstrap rule, no Lambda, no file asset."""

    def __init__(self, scope: Construct, id: str, *, instance_type: str = DEFAULT_INSTANCE_TYPE) -> None:
        super().__init__(scope, id)  # no asset buckets: a file asset here fails synthesis (see the module docstring)
        self.template_options.description = (
            f"fmconstructs training environment ({instance_type}): AWS PCS, FSx for Lustre, Amazon Managed "
            "Prometheus; replicated by CloudFormation StackSets"
        )
        self.inputs, export_prefix = declare_parameters(self)
        self.training = TrainingCluster(
            self, "Training", inputs=self.inputs, instance_type=instance_type, export_prefix=export_prefix
        )


@dataclass(frozen=True)
class StackInstance:
    """One stack instance: an account and a region, with the parameter values that differ there."""

    account: str
    region: str
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StackSetConfig:
    """Where the template goes and with which values (context ``fmconstructs:stackset``, JSON).

    :param instances: the stack instances.
    :param parameters: StackSet-level values of every parameter without a default (an instance may override any
        parameter only if the StackSet specifies it: CloudFormation UpdateStackInstances "ParameterOverrides").
    :param organizational_units: AWS Organizations OUs: service-managed permissions when given, else self-managed.
    :param delegated_admin: service-managed only: deployed from the delegated administrator (True) or the
        management account (False).
    :param stack_set_name: default "fmconstructs-training".
    """

    instances: tuple[StackInstance, ...]
    parameters: Mapping[str, str]
    organizational_units: tuple[str, ...] = ()
    delegated_admin: bool = True
    stack_set_name: str = "fmconstructs-training"


#: Placeholders (documentation accounts and ids); override with ``-c fmconstructs:stackset='<json>'`` or cdk.json.
DEFAULT_CONFIG: dict[str, Any] = {
    "stackSetName": "fmconstructs-training",
    "organizationalUnits": ["ou-abcd-11111111"],
    "delegatedAdmin": True,
    "parameters": {
        "VpcId": "vpc-0a1b2c3d4e5f60718",
        "SubnetId": "subnet-0a1b2c3d4e5f60718",
        "ReservationId": "cr-0a1b2c3d4e5f60718",
        "AmiId": "ami-0a1b2c3d4e5f60718",
        "DataBucketName": "example-training-data",
    },
    "instances": [
        {
            "account": "111111111111",
            "region": "us-east-1",
            "parameters": {
                "VpcId": "vpc-01111111111111111",
                "SubnetId": "subnet-01111111111111111",
                "ReservationId": "cr-01111111111111111",
                "AmiId": "ami-01111111111111111",
                "GpuNodes": "4",
                "DataBucketName": "team-a-training-data",
            },
        },
        {
            "account": "222222222222",
            "region": "us-west-2",
            "parameters": {
                "VpcId": "vpc-02222222222222222",
                "SubnetId": "subnet-02222222222222222",
                "ReservationId": "cr-02222222222222222",
                "AmiId": "ami-02222222222222222",
                "FsxCapacityGiB": "9600",
                "DataBucketName": "team-b-training-data",
            },
        },
    ],
}

_ACCOUNT = re.compile(r"\d{12}")
_REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d+")
_OU = re.compile(r"ou-[0-9a-z]{4,32}-[a-z0-9]{8,32}")  # botocore organizations service-2.json OrganizationalUnitId


def load_config(raw: object) -> StackSetConfig:
    """Parse and check the configuration (a mapping, or its JSON text as ``-c`` passes it); every parameter value is
    checked against the template's constraints here, at synth time, not by the first failing stack instance."""
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, Mapping):
        raise FmValidationError(CONTEXT_KEY, raw, "a JSON object with 'instances' and 'parameters'")
    instances = tuple(_instance(i, item) for i, item in enumerate(_list(raw, "instances")))
    if not instances:
        raise FmValidationError(f"{CONTEXT_KEY}.instances", [], "at least one stack instance")
    seen = [(i.account, i.region) for i in instances]
    if len(seen) != len(set(seen)):
        raise FmValidationError(f"{CONTEXT_KEY}.instances", seen, "one instance per (account, region)")
    parameters = _parameters(raw.get("parameters", {}), f"{CONTEXT_KEY}.parameters")
    missing = [p.name for p in PARAMETERS if p.default is None and p.name not in parameters]
    if missing:
        raise FmValidationError(
            f"{CONTEXT_KEY}.parameters", sorted(parameters), f"StackSet-level values for {', '.join(missing)}"
        )
    ous = tuple(str(ou) for ou in _list(raw, "organizationalUnits"))
    for ou in ous:
        if not _OU.fullmatch(ou):
            raise FmValidationError(f"{CONTEXT_KEY}.organizationalUnits", ou, "an OU id like 'ou-abcd-11111111'")
    delegated = raw.get("delegatedAdmin", True)
    if not isinstance(delegated, bool):
        raise FmValidationError(f"{CONTEXT_KEY}.delegatedAdmin", delegated, "true or false")
    name = raw.get("stackSetName", "fmconstructs-training")
    # CreateStackSet StackSetName: a letter, then letters, digits and '-', at most 128 characters (botocore
    # cloudformation service-2.json CreateStackSetInput.StackSetName).
    if not isinstance(name, str) or not re.fullmatch(r"[a-zA-Z][-a-zA-Z0-9]{0,127}", name):
        raise FmValidationError(f"{CONTEXT_KEY}.stackSetName", name, "a letter, then up to 127 letters, digits or '-'")
    return StackSetConfig(
        instances=instances,
        parameters=parameters,
        organizational_units=ous,
        delegated_admin=delegated,
        stack_set_name=name,
    )


def _list(raw: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = raw.get(key, [])
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise FmValidationError(f"{CONTEXT_KEY}.{key}", value, "a JSON list")
    return value


def _instance(index: int, item: object) -> StackInstance:
    where = f"{CONTEXT_KEY}.instances[{index}]"
    if not isinstance(item, Mapping):
        raise FmValidationError(where, item, "an object with account, region and parameters")
    account, region = item.get("account"), item.get("region")
    if not isinstance(account, str) or not _ACCOUNT.fullmatch(account):
        raise FmValidationError(f"{where}.account", account, "a 12-digit account id")
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise FmValidationError(f"{where}.region", region, "a region name like 'us-east-1'")
    return StackInstance(account, region, _parameters(item.get("parameters", {}), f"{where}.parameters"))


def _parameters(raw: object, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise FmValidationError(where, raw, "an object of parameter names to values")
    values: dict[str, str] = {}
    for name, value in raw.items():
        spec = PARAMETER_SPECS.get(name)
        if spec is None:
            raise FmValidationError(where, name, f"one of the template's parameters: {', '.join(PARAMETER_SPECS)}")
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        spec.check(text, where)
        values[name] = text
    return values


class StackSetAdminStack(Stack):
    """FmTrainingStackSet: the replicated template (as an asset) and the StackSet with one target per instance."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StackSetConfig,
        instance_type: str = DEFAULT_INSTANCE_TYPE,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.template_stack = TrainingStackSetStack(self, TEMPLATE_ID, instance_type=instance_type)
        service_managed = bool(config.organizational_units)
        deployment_type = (
            DeploymentType.service_managed(
                delegated_admin=config.delegated_admin, auto_deploy_enabled=False
            )  # no automatic deployment: every new account needs its own VPC, subnet and reservation values
            if service_managed
            else DeploymentType.self_managed()
        )
        self.stack_set = StackSet(
            self,
            "StackSet",
            stack_set_name=config.stack_set_name,
            description="fmconstructs training environment (AWS PCS, FSx for Lustre, Amazon Managed Prometheus)",
            template=StackSetTemplate.from_stack_set_stack(self.template_stack),
            deployment_type=deployment_type,
            # The template creates IAM resources (the PCS node role and instance profile), none with a custom name.
            capabilities=[Capability.IAM],
            # Every parameter at the StackSet level: an instance may only override parameters the StackSet specifies.
            parameters={**{p.name: p.default for p in PARAMETERS if p.default is not None}, **config.parameters},
            # One instance at a time, stop at the first failure: GPU capacity is scarce and expensive.
            operation_preferences=OperationPreferences(
                failure_tolerance_count=0,
                max_concurrent_count=1,
                region_concurrency_type=RegionConcurrencyType.SEQUENTIAL,
            ),
        )
        for instance in config.instances:
            overrides = dict(instance.parameters) or None
            if service_managed:
                target = StackSetTarget.from_organizational_units(
                    regions=[instance.region],
                    organizational_units=list(config.organizational_units),
                    intersection_accounts=[instance.account],
                    parameter_overrides=overrides,
                )
            else:
                target = StackSetTarget.from_accounts(
                    regions=[instance.region], accounts=[instance.account], parameter_overrides=overrides
                )
            self.stack_set.add_target(target)


def build(app: cdk.App) -> dict[str, Stack]:
    """Add the StackSet administrator stack and the Grafana stack to ``app``; return them by name."""
    config = load_config(app.node.try_get_context(CONTEXT_KEY) or DEFAULT_CONFIG)
    instance_type = str(app.node.try_get_context(INSTANCE_TYPE_CONTEXT_KEY) or DEFAULT_INSTANCE_TYPE)
    admin = StackSetAdminStack(
        app,
        ADMIN_STACK,
        config=config,
        instance_type=instance_type,
        description="fmconstructs example: the training environment replicated by CloudFormation StackSets",
    )
    prefix = str(app.node.try_get_context("fmconstructs:stackset-export-prefix") or DEFAULT_EXPORT_PREFIX)
    grafana = TrainingGrafanaStack(
        app,
        GRAFANA_STACK,
        prometheus_workspace_arn=Fn.import_value(f"{prefix}-PrometheusWorkspaceArn"),
        prometheus_endpoint=Fn.import_value(f"{prefix}-PrometheusEndpoint"),
        description="fmconstructs example: Grafana for a StackSet instance's Prometheus workspace (not replicated)",
    )
    return {ADMIN_STACK: admin, GRAFANA_STACK: grafana}


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
