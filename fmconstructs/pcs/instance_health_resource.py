"""How PCS instance health checks and node lifecycle actions reach a GPU node group (:mod:`.instance_health`).

- **Node lifecycle actions** go through CloudFormation: ``AWS::PCS::ComputeNodeGroup.NodeLifecycleActions`` (aws-cdk-lib
  2.275 ``CfnComputeNodeGroup.node_lifecycle_actions``; the resource schema bundled with cfn-lint 1.58, schema date
  2026-10-20, has the property and does not list it create-only, so a change updates the group in place).
- **Instance health checks** go through the custom resource ``Custom::FmPcsInstanceHealthChecks`` (child id
  "InstanceHealthChecks" of the node group), because neither that schema nor ``CfnComputeNodeGroup`` has an
  ``InstanceHealthChecks`` property yet. One provider per stack (:class:`PcsInstanceHealthChecksProvider`, id
  ``FmPcsInstanceHealthChecksProvider``): a Python Lambda (``handler/index.py``, boto3 only: on_event + is_complete)
  behind ``custom_resources.Provider``, which polls every :data:`QUERY_INTERVAL` and fails the resource after
  :data:`TOTAL_TIMEOUT` ("never leaves a stack waiting"). The handler's semantics (idempotent compare first, the wait
  for ACTIVE, Delete leaves the group as it is, truthful errors) are in its docstring.

**IAM** (each node group adds its own statements to the one handler role):

- ``pcs:GetComputeNodeGroup`` and ``pcs:UpdateComputeNodeGroup`` on the cluster's and the node group's ARN: both
  resource types are required for these actions (Service Authorization Reference, AWS PCS, "Actions defined by AWS
  Parallel Computing Service").
- ``iam:PassRole`` on the node group's instance role, with ``iam:PassedToService`` = ``ec2.amazonaws.com``: the
  Service Authorization Reference maps the ``UpdateComputeNodeGroup`` operation to ``pcs:UpdateComputeNodeGroup`` and
  ``iam:PassRole`` with that condition. Whether an update that leaves ``iamInstanceProfileArn`` out checks it is
  UNCONFIRMED; the grant names one role only.
- The rest of PCS's documented minimum for ``UpdateComputeNodeGroup`` (PCS User Guide "Minimum permissions for AWS
  PCS": ``ec2:Describe*`` of VPCs, subnets, security groups, launch templates and versions, instance types and
  offerings, ``ec2:RunInstances``, ``ec2:CreateFleet``, ``ec2:CreateTags``, ``iam:GetInstanceProfile``), only when PCS
  makes the call on the handler's behalf: ``aws:CalledVia`` contains ``pcs.amazonaws.com`` (IAM User Guide "Forward
  access sessions": FAS requests carry it). The handler itself calls no EC2 or IAM action. Which of these an
  ``instanceHealthChecks``-only update needs is UNCONFIRMED (the table lists the operation's minimum, not per field).

**When CloudFormation gains ``InstanceHealthChecks``** (watch the ``AWS::PCS::ComputeNodeGroup`` schema and
aws-cdk-lib's ``CfnComputeNodeGroup``): in one deploy, set the property on the node group's L1 (``Resource``) with
the values the custom resource set (:meth:`PcsInstanceHealthChecks.to_api`, in the schema's PascalCase) and remove
the custom resource. Not a replacement of the node group as long as the new property is not create-only (check the
schema's ``createOnlyProperties``); the custom resource's Delete makes no call, so removing it leaves the checks as
they are, and the group's update with the same values changes nothing (whether PCS then replaces instances anyway is
UNCONFIRMED: compare with ``aws pcs get-compute-node-group`` first). A library release that takes the property
should make this switch itself, keeping the construct ids.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pcs as pcs
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from .. import _nag
from .._log_groups import encrypted_log_group
from .._validate import located
from .instance_health import PcsInstanceHealthChecks, PcsLifecycleScript, PcsNodeLifecycleActions

__all__ = [
    "PROVIDER_ID",
    "QUERY_INTERVAL",
    "RESOURCE_TYPE",
    "TOTAL_TIMEOUT",
    "PcsInstanceHealthChecksProvider",
    "add_instance_health_checks",
    "lifecycle_actions_property",
]

_HANDLER_DIR = Path(__file__).resolve().parent / "handler"
RESOURCE_TYPE = "Custom::FmPcsInstanceHealthChecks"
PROVIDER_ID = "FmPcsInstanceHealthChecksProvider"
#: How often the provider asks whether the node group is ACTIVE with the wanted settings, and for how long at most
#: (the framework fails the resource then: "Operation timed out"). How long PCS stays UPDATING for this change is
#: UNCONFIRMED; the replacement of instances after their jobs finish runs on after the resource completes.
QUERY_INTERVAL = cdk.Duration.seconds(30)
TOTAL_TIMEOUT = cdk.Duration.minutes(30)
#: EC2 and IAM actions of PCS's documented minimum for UpdateComputeNodeGroup (module docstring), via PCS only.
FAS_ACTIONS = (
    "ec2:DescribeVpcs",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateTags",
)
_VIA_PCS = {"ForAnyValue:StringEquals": {"aws:CalledVia": ["pcs.amazonaws.com"]}}


class PcsInstanceHealthChecksProvider(Construct):
    """The stack's one provider of ``Custom::FmPcsInstanceHealthChecks`` (:meth:`of`); node groups add their grants."""

    @located
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.log_group = encrypted_log_group(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        self.role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="fmconstructs: PCS instance health checks of this stack's node groups, own logs",
        )
        self.log_group.grant_write(self.role)
        self.function = self._build_function()
        self.provider = self._build_provider()
        self._fas_added = False

    @classmethod
    def of(cls, scope: IConstruct) -> PcsInstanceHealthChecksProvider:
        """The provider of ``scope``'s stack, created on first use."""
        stack = cdk.Stack.of(scope)
        existing = stack.node.try_find_child(PROVIDER_ID)
        if isinstance(existing, PcsInstanceHealthChecksProvider):
            return existing
        return cls(stack, PROVIDER_ID)

    def _build_function(self) -> lambda_.Function:
        return lambda_.Function(
            self,
            "Handler",
            description="fmconstructs: PCS compute node group instance health checks (custom resource)",
            # Latest Python the aws-cdk-lib 2.275 Runtime enum offers (cdk-nag AwsSolutions-L1), as the others.
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.on_event",
            code=lambda_.Code.from_asset(str(_HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=cdk.Duration.minutes(2),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
        )

    def _build_provider(self) -> cr.Provider:
        complete = lambda_.Function(
            self,
            "IsComplete",
            description="fmconstructs: PCS instance health checks, wait for the node group (custom resource)",
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.is_complete",
            code=lambda_.Code.from_asset(str(_HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            timeout=cdk.Duration.minutes(2),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
        )
        self.is_complete_function = complete
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            is_complete_handler=complete,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_group=self.log_group,
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=encrypted_log_group(
                    self, "WaiterLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=cdk.RemovalPolicy.DESTROY
                ),
                level=cdk.aws_stepfunctions.LogLevel.ALL,  # cdk-nag AwsSolutions-SF1; the events hold no secret
            ),
        )
        _acknowledge_provider(provider, (self.function, complete))
        return provider

    def grant_node_group(
        self, *, cluster_arn: str, node_group_arn: str, node_role: iam.IRole, instance_profile_arn: str
    ) -> None:
        """The handler may read and update this node group's health checks, and pass its role to EC2 through PCS."""
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["pcs:GetComputeNodeGroup", "pcs:UpdateComputeNodeGroup"],
                resources=[cluster_arn, node_group_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[node_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["iam:GetInstanceProfile"], resources=[instance_profile_arn], conditions=_VIA_PCS
            )
        )
        if not self._fas_added:
            self._fas_added = True
            self.role.add_to_policy(
                iam.PolicyStatement(actions=list(FAS_ACTIONS), resources=["*"], conditions=_VIA_PCS)
            )
            _nag.acknowledge(
                self.role,
                f"{_nag.IAM5}[Resource::*]",
                "PCS's documented minimum for UpdateComputeNodeGroup (PCS User Guide 'Minimum permissions'): EC2 "
                "describe, RunInstances, CreateFleet and CreateTags, allowed only when PCS makes the call on the "
                "handler's behalf (aws:CalledVia pcs.amazonaws.com); the handler calls no EC2 action itself",
            )


def _acknowledge_provider(provider: cr.Provider, functions: tuple[IConstruct, ...]) -> None:
    """The provider framework's own findings (aws-cdk-lib's functions and roles, not the library's)."""
    reason_invoke = (
        "The provider framework invokes the handler functions by ARN, qualified or not (ARN and ARN:*); the grant "
        "names these functions only"
    )
    stack = cdk.Stack.of(provider)
    # aws-cdk-lib's framework functions (ids "framework-isComplete", "framework-onTimeout"), invoked by its waiter
    framework = [provider.node.try_find_child(f"framework-{name}") for name in ("isComplete", "onTimeout")]
    for function in [*functions, *(f for f in framework if f is not None)]:
        logical = stack.get_logical_id(cast(cdk.CfnElement, function.node.default_child))
        _nag.acknowledge(provider, f"{_nag.IAM5}[Resource::<{logical}.Arn>:*]", reason_invoke)
    _nag.acknowledge(
        provider,
        _nag.aws_managed_policy_finding("service-role/AWSLambdaBasicExecutionRole"),
        "aws-cdk-lib's provider framework functions get the AWS managed basic execution role (custom_resources."
        "Provider builds them); they only write their own logs",
    )
    _nag.acknowledge(
        provider,
        _nag.L1,
        "aws-cdk-lib's provider framework functions pick their own Node.js runtime (custom_resources.Provider); the "
        "library's handlers run the latest Python",
    )
    _nag.acknowledge(
        provider,
        f"{_nag.IAM5}[Resource::*]",
        "the waiter state machine's logging: aws-cdk-lib grants its role the CloudWatch Logs delivery actions on '*' "
        "for the state machine's LoggingConfiguration (that they allow no narrower resource is UNCONFIRMED here)",
    )
    _nag.acknowledge(
        provider,
        "AwsSolutions-SF2",
        "the provider framework's waiter state machine only polls the isComplete handler; X-Ray tracing adds no "
        "insight there and aws-cdk-lib offers no switch for it",
    )


def add_instance_health_checks(
    scope: Construct,
    checks: PcsInstanceHealthChecks,
    *,
    cluster_id: str,
    cluster_arn: str,
    node_group_id: str,
    node_group_arn: str,
    node_role: iam.IRole,
    instance_profile_arn: str,
) -> cdk.CustomResource:
    """The ``Custom::FmPcsInstanceHealthChecks`` resource of one node group (child "InstanceHealthChecks" of
    ``scope``), with its grants on the stack's provider."""
    provider = PcsInstanceHealthChecksProvider.of(scope)
    provider.grant_node_group(
        cluster_arn=cluster_arn,
        node_group_arn=node_group_arn,
        node_role=node_role,
        instance_profile_arn=instance_profile_arn,
    )
    resource = cdk.CustomResource(
        scope,
        "InstanceHealthChecks",
        service_token=provider.provider.service_token,
        resource_type=RESOURCE_TYPE,
        properties={
            "ClusterId": cluster_id,
            "ComputeNodeGroupId": node_group_id,
            "InstanceHealthChecks": checks.to_api(),
            # Not read by the handler: a new handler sends an Update, which compares and changes nothing when equal.
            "HandlerDigest": hashlib.sha256((_HANDLER_DIR / "index.py").read_bytes()).hexdigest(),
        },
    )
    # The handler's grants must exist before it runs.
    resource.node.add_dependency(provider.role)
    return resource


def lifecycle_actions_property(
    actions: PcsNodeLifecycleActions,
) -> pcs.CfnComputeNodeGroup.NodeLifecycleActionsProperty:
    """``AWS::PCS::ComputeNodeGroup.NodeLifecycleActions`` of ``actions`` (the CloudFormation property)."""
    return pcs.CfnComputeNodeGroup.NodeLifecycleActionsProperty(
        stages=pcs.CfnComputeNodeGroup.NodeLifecycleStagesProperty(
            node_bootstrapped=[_script_property(s) for s in actions.node_bootstrapped] or None,
            node_ready=[_script_property(s) for s in actions.node_ready] or None,
        ),
        script_caching_policy=actions.script_caching.value if actions.script_caching is not None else None,
    )


def _script_property(script: PcsLifecycleScript) -> pcs.CfnComputeNodeGroup.NodeLifecycleScriptProperty:
    return pcs.CfnComputeNodeGroup.NodeLifecycleScriptProperty(
        name=script.name,
        script_source=pcs.CfnComputeNodeGroup.ScriptSourceProperty(
            script_location=script.script_location,
            checksum=script.checksum_sha256,
            s3_version_id=script.s3_version_id,
        ),
        arguments=list(script.arguments) or None,
        execution_policy=script.execution.value if script.execution is not None else None,
        on_error=script.on_error.value if script.on_error is not None else None,
    )
