"""Stable head node actions: the head node's OnNodeStart/OnNodeConfigured pieces behind one frozen entry point.

ParallelCluster refuses any change to the head node's ``OnNodeStart``/``OnNodeConfigured`` on an existing cluster
(aws-parallelcluster 3.16.1 ``pcluster/schemas/cluster_schema.py`` ``HeadNodeCustomActionsSchema``:
``UpdatePolicy.UNSUPPORTED`` on ``Script`` and ``Args``; ``OnNodeUpdated`` is ``SUPPORTED``). Each piece's arguments
hold its archive's sha256 and URL, so a library upgrade that changes a piece's steps made the update fail. With
``ParallelCluster(stable_head_node_actions=True)`` (the default) each such event is one action whose ``Script`` is the
frozen :data:`fmconstructs.bootstrap.entry_point.ENTRY_POINT` (a content-addressed file asset that never changes) and
whose ``Args`` are ``[/fmconstructs/parallelcluster/<cluster name>/head/<event>, <Region>]``; each piece is an SSM
parameter ``.../<event>/<NNN>`` under that path holding the piece's loader URL and arguments, which CloudFormation
updates in place. The head node runs the same loaders with the same arguments, in the same order, as the pieces did as
a ``Sequence``; what changes is only where it reads them. A change of the pieces reaches a new head node only:
ParallelCluster runs these events when the head node is created.

ParallelCluster's ``S3Access`` and ``AdditionalIamPolicies`` of the head node take updates (``HeadNodeIamSchema``,
``S3AccessSchema``: ``UpdatePolicy.SUPPORTED``), so the objects and policies granted may change with the pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from .._validate import check_str, known, located
from ..bootstrap import ScriptAction
from ..bootstrap.entry_point import PARAMETER_VALUE_MAX_CHARS, entry_point_file, parameter_value
from ..bootstrap.node_bootstrap import _archive_dir
from ..errors import FmValidationError
from .config import CustomActionEvent

#: The head node events ParallelCluster refuses to update (HeadNodeCustomActionsSchema: UNSUPPORTED).
ENTRY_EVENTS = (CustomActionEvent.ON_NODE_START, CustomActionEvent.ON_NODE_CONFIGURED)


class HeadNodeEntryPoint(Construct):
    """The entry point's asset, its parameters (one per piece) and the managed policy reading them."""

    ID = "HeadNodeEntryPoint"

    @located
    def __init__(self, scope: Construct, id: str, *, cluster_name: str, policy_name: str) -> None:
        check_str("cluster_name", cluster_name, allowed="the ParallelCluster cluster name")
        check_str("policy_name", policy_name, allowed="an IAM managed policy name")
        super().__init__(scope, id)
        self._prefix = f"/fmconstructs/parallelcluster/{cluster_name}/head"
        script = s3_assets.Asset(self, "Script", path=str(entry_point_file(_archive_dir())))
        self.script_url: str = script.s3_object_url
        self.bucket_name: str = script.s3_bucket_name
        self.object_key: str = script.s3_object_key
        self._counts: dict[CustomActionEvent, int] = {}
        stack = Stack.of(self)
        paths = [self.path(event).lstrip("/") for event in ENTRY_EVENTS]
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            managed_policy_name=policy_name,
            description="fmconstructs head node entry point: read its SSM parameters",
            statements=[
                # GetParametersByPath is authorized against the path, not the parameters it returns (Systems Manager
                # User Guide "How Parameter Store authorizes parameter retrieval").
                iam.PolicyStatement(
                    actions=["ssm:GetParametersByPath"],
                    resources=[stack.format_arn(service="ssm", resource="parameter", resource_name=p) for p in paths],
                ),
            ],
        )

    def path(self, event: CustomActionEvent) -> str:
        """The SSM path the entry point reads for ``event``."""
        return f"{self._prefix}/{event.value}"

    def add_piece(self, event: CustomActionEvent, action: ScriptAction) -> ssm.CfnParameter:
        """One more piece of ``event``: a String parameter ``<path>/<NNN>`` holding the loader's URL and args."""
        index = self._counts[event] = self._counts.get(event, 0) + 1
        value = parameter_value(action.script_url, action.args)
        if known(value) and len(value) > PARAMETER_VALUE_MAX_CHARS:
            raise FmValidationError(
                "add_head_node_bootstrap", f"{len(value)} characters", f"at most {PARAMETER_VALUE_MAX_CHARS}"
            )
        name = f"{self.path(event)}/{index:03d}"
        parameter = ssm.CfnParameter(
            self,
            f"{event.value}{index}",
            type="String",
            name=name,
            value=value,
            description=f"fmconstructs head node {event.value} piece {index}: loader URL, then its arguments",
        )
        arn = Stack.of(self).format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
        self.policy.add_statements(iam.PolicyStatement(actions=["ssm:GetParameter"], resources=[arn]))
        return parameter

    def action(self, event: CustomActionEvent) -> dict[str, Any]:
        """The head node's ``CustomActions.<event>`` entry: the same for every library version."""
        return {"Script": self.script_url, "Args": [self.path(event), Stack.of(self).region]}

    def grant(self, section: dict[str, Any], grant_policy: Callable[[dict[str, Any], str], None]) -> None:
        """``Iam.S3Access`` on the entry point's object and its policy in ``AdditionalIamPolicies``."""
        access = section.setdefault("Iam", {}).setdefault("S3Access", [])
        entry = {"BucketName": self.bucket_name, "KeyName": self.object_key}
        if entry not in access:
            access.append(entry)
        grant_policy(section, self.policy.managed_policy_arn)
