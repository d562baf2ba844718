"""NodeBootstrap: the node-side set-up of one group of nodes, as ordered steps, delivered inline or as an S3 asset.

Every backend hands its node-side set-up to a :class:`NodeBootstrap`: the NVMe RAID0 scratch volume, Lustre mounts
with LNet over EFA, the IMEX prolog, observability collectors and the user's own commands are *steps* (a name, shell
lines, and files to install). The bootstrap delivers them one of two ways (:class:`BootstrapDelivery`):

- ``INLINE``: the steps' shell lines, in order, are the user data (files travel compressed inside it, see
  :func:`~fmconstructs.bootstrap.archive.embedded_files_commands`). This is what fmconstructs did before 0.3: EC2's
  16 KB user-data limit applies and is checked at synthesis.
- ``ASSET``: the steps become a deterministic ``tar.gz`` (same content -> same bytes -> same S3 asset hash: no churn)
  published as an ``aws_s3_assets.Asset``, and the user data becomes a small loader
  (:mod:`fmconstructs.bootstrap.loader`) that fetches it with the node role, checks its sha256, runs the steps once
  each (markers per content hash), logs to ``/var/log/fmconstructs/`` and to CloudWatch Logs, and exits non-zero
  when a step fails. The node role gets ``s3:GetObject`` on that one object (not the bucket:
  ``Asset.grant_read`` grants read on the whole asset bucket, aws-cdk-lib ``aws-s3-assets/lib/asset.ts``
  ``grantRead`` -> ``this.bucket.grantRead(grantee)``) and ``logs:CreateLogStream``/``logs:PutLogEvents`` on the
  log group (:class:`NodeBootstrapLogs`, one per stack: KMS-encrypted, one-year retention).

Script-URL consumers (ParallelCluster ``CustomActions``: ``Script`` + ``Args``) use :meth:`NodeBootstrap.script_action`
instead of user data: the same archive, and the same loader rendered as a static file asset that takes its values as
arguments (:func:`~fmconstructs.bootstrap.loader.render_static_loader`); the consumer grants the node role.

Deploy-time values (CDK tokens such as a file system's DNS name) may appear in step commands: inline, CloudFormation
resolves them in the user data; with an asset, each distinct token becomes a placeholder in the archive and its value
travels in the loader, which substitutes it on the node (so the archive, and its hash, do not depend on them). Files
(``files=``) must be known at synthesis.

The archive is built when the tree is complete: an Aspect (priority 900, after mutating and default-priority
Aspects such as ``monitor_pcs_cluster``) finalizes the bootstrap, or the first resolution of its user data does.
Steps added after that fail synthesis with a clear error instead of being dropped.

Which delivery: ``delivery=None`` (the node groups' default) means ASSET when a role is given and the stack's
synthesizer publishes file assets (``DefaultStackSynthesizer`` and its subclasses except
``BootstraplessSynthesizer``, ``CliCredentialsStackSynthesizer``, ``LegacyStackSynthesizer``, nested stacks), else
INLINE: a CloudFormation StackSet template (cdk-stacksets ``StackSetStackSynthesizer`` without asset buckets) stays
inline. A bootstrap without steps renders nothing either way.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import jsii
from aws_cdk import (
    ArnFormat,
    Aspects,
    Aws,
    BootstraplessSynthesizer,
    CliCredentialsStackSynthesizer,
    DefaultStackSynthesizer,
    Fn,
    IAspect,
    LegacyStackSynthesizer,
    NestedStack,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IConstruct, IValidation

from .._log_groups import allow_cloudwatch_logs, encrypted_log_group
from .._validate import check_construct, check_enum, check_str, check_str_sequence, located
from ..errors import FmTypeError, FmValidationError, is_token
from .archive import FileMap, check_node_path, deterministic_tar_gz, embedded_files_commands, lift_embedded_files
from .loader import NAME_PATTERN, PLACEHOLDER, RUNNER_SCRIPT, render_loader, render_static_loader
from .size import REFERENCE_BYTES, TOKEN_PATTERN, size_errors, text_size_bytes

#: S3 bucket names are at most 63 characters (S3 User Guide "Bucket naming rules"): the asset bucket's bound.
BUCKET_NAME_BYTES = 63
#: A step name: lowercase letters, digits and '-' (it names a directory and a marker on the node).
STEP_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
#: The Aspect priority of finalization: after ``AspectPriority.MUTATING`` (200) and ``DEFAULT`` (500) Aspects, which
#: may still add steps, and before ``READONLY`` (1000) ones (aws-cdk-lib core ``AspectPriority``).
FINALIZE_PRIORITY = 900
#: The step that :meth:`NodeBootstrap.add_commands` appends to.
COMMANDS_STEP = "commands"


class BootstrapDelivery(str, Enum):
    """How a :class:`NodeBootstrap` reaches the node."""

    INLINE = "inline"
    """The steps in the user data (EC2's 16 KB limit applies; checked at synthesis)."""
    ASSET = "asset"
    """A content-addressed S3 asset fetched by a small loader in the user data (needs the node role and a stack
    synthesizer that publishes file assets, e.g. after ``cdk bootstrap``)."""


@dataclass(frozen=True)
class BootstrapStep:
    """One named step: shell lines (may contain deploy-time values) and files to install (known at synthesis)."""

    name: str
    commands: tuple[str, ...] = ()
    files: Mapping[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A bare str would be written one character per line of user data.
        object.__setattr__(self, "commands", check_str_sequence("commands", self.commands))

    def inline_commands(self) -> list[str]:
        """The step as user-data lines: its files packed with ``embedded_files_commands``, then its commands."""
        packed = embedded_files_commands(dict(self.files), name=f"fmconstructs-{self.name}") if self.files else []
        return [*packed, *self.commands]


@dataclass(frozen=True)
class ScriptAction:
    """A node bootstrap as a script URL and its arguments, for consumers that run a script from S3 with arguments
    (ParallelCluster ``CustomActions``: ``Script`` and ``Args``, User Guide "custom-bootstrap-actions-config-v3").

    :param script_url: ``s3://<bucket>/<key>`` of the static loader (:func:`~fmconstructs.bootstrap.loader.
        render_static_loader`, a content-addressed file asset: the same for every bootstrap).
    :param args: the loader's arguments: name, the archive's sha256, the archive's ``s3://`` URL, the Region, the log
        group name, then each deploy-time value (may hold CDK tokens).
    :param bucket: the asset bucket holding both objects.
    :param object_keys: the loader's and the archive's object keys (what the node must be able to read).
    :param log_group: where runs are logged (the node needs ``logs:CreateLogStream`` and ``logs:PutLogEvents``).
    """

    script_url: str
    args: tuple[str, ...]
    bucket: s3.IBucket
    object_keys: tuple[str, ...]
    log_group: logs.ILogGroup

    def read_statement(self) -> iam.PolicyStatement:
        """``s3:GetObject`` on the loader and the archive objects only."""
        return iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(key) for key in self.object_keys]
        )

    def log_statement(self) -> iam.PolicyStatement:
        """``logs:CreateLogStream`` and ``logs:PutLogEvents`` on the bootstrap's log group."""
        return iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[self.log_group.log_group_arn]
        )

    def policy_statements(self) -> list[iam.PolicyStatement]:
        """What the node role needs: :meth:`read_statement` and :meth:`log_statement`."""
        return [self.read_statement(), self.log_statement()]


def synthesizer_publishes_file_assets(stack: Stack) -> bool:
    """Whether ``stack``'s synthesizer can publish a file asset (see the module docstring)."""
    synthesizer = stack.synthesizer
    if isinstance(stack, NestedStack):
        return synthesizer_publishes_file_assets(Stack.of(stack.node.scope)) if stack.node.scope else False
    if isinstance(synthesizer, BootstraplessSynthesizer):
        return False
    return isinstance(synthesizer, DefaultStackSynthesizer | CliCredentialsStackSynthesizer | LegacyStackSynthesizer)


class NodeBootstrapLogs(Construct):
    """The CloudWatch Logs group that node bootstraps of a stack send their runs to, encrypted with its own KMS key.

    One per stack (:meth:`of`), id ``FmNodeBootstrapLogs`` at the stack's root. Log group
    ``/fmconstructs/node-bootstrap/<stack name>/<suffix>``, retention one year, KMS key with rotation; both RETAIN by
    default. ``<suffix>`` is the last group of the stack's id (the UUID in ``AWS::StackId``, new each time the stack
    is created), so a retained group never blocks re-creating the stack: a log group name is create-only
    (``AWS::Logs::LogGroup`` ``createOnlyProperties``: LogGroupName, CloudFormation schema as bundled by cfn-lint
    1.58.0) and a fixed one makes the next create fail with "already exists", also after a failed first create
    rolled back. The key policy lets CloudWatch
    Logs in this Region use the key for this log group only (CloudWatch Logs User Guide "Encrypt log data in
    CloudWatch Logs using AWS KMS": principal ``logs.<region>.amazonaws.com``, ``kms:Encrypt*``, ``kms:Decrypt*``,
    ``kms:ReEncrypt*``, ``kms:GenerateDataKey*``, ``kms:Describe*``, condition ``ArnEquals``
    ``kms:EncryptionContext:aws:logs:arn``). Nodes get no KMS permission: CloudWatch Logs encrypts with the key itself
    (that ``PutLogEvents`` callers need none is UNCONFIRMED here, not tried against an encrypted group).

    Other settings: create it yourself before the first node group, ``NodeBootstrapLogs(stack, NodeBootstrapLogs.ID,
    retention=..., removal_policy=...)``, or give each bootstrap a ``log_group``.
    """

    ID = "FmNodeBootstrapLogs"

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        check_enum("retention", retention, logs.RetentionDays)
        check_enum("removal_policy", removal_policy, RemovalPolicy)
        super().__init__(scope, id)
        stack = Stack.of(self)
        # arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<uuid>: the UUID's last 12 hex digits.
        suffix = Fn.select(4, Fn.split("-", Fn.select(2, Fn.split("/", Aws.STACK_ID))))
        self.log_group_name = Fn.join("", [f"/fmconstructs/node-bootstrap/{stack.stack_name}/", suffix])
        arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=self.log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.encryption_key = kms.Key(
            self,
            "Key",
            enable_key_rotation=True,
            description=f"fmconstructs node bootstrap logs (/fmconstructs/node-bootstrap/{stack.stack_name}/...)",
            removal_policy=removal_policy,
        )
        allow_cloudwatch_logs(self.encryption_key, arn, exact=True, sid="CloudWatchLogsForTheBootstrapLogGroup")
        self.log_group = encrypted_log_group(  # the library's one log-group helper, with this group's own key
            self,
            "Resource",
            log_group_name=self.log_group_name,
            retention=retention,
            removal_policy=removal_policy,
            encryption_key=self.encryption_key,
        )

    @classmethod
    def of(cls, scope: IConstruct) -> NodeBootstrapLogs:
        """The stack's bootstrap log group, created on first use."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(cls.ID)
        if isinstance(existing, NodeBootstrapLogs):
            return existing
        return cls(stack, cls.ID)


@jsii.implements(IAspect)
class _Finalize:
    def __init__(self, bootstrap: NodeBootstrap) -> None:
        self._bootstrap = bootstrap

    def visit(self, node: IConstruct) -> None:
        if node.node.path == self._bootstrap.node.path:
            self._bootstrap.finalize()


@jsii.implements(IValidation)
class _Problems:
    def __init__(self, bootstrap: NodeBootstrap) -> None:
        self._bootstrap = bootstrap

    def validate(self) -> list[str]:
        return list(self._bootstrap._problems)


def _archive_dir() -> Path:
    """A per-user cache of built archives, named by their sha256 (content-addressed, so reuse is always safe; kept
    after the process ends because an asset whose staging is disabled is read from here)."""
    path = Path(tempfile.gettempdir()) / f"fmconstructs-bootstrap-{os.getuid() if hasattr(os, 'getuid') else 0}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


class NodeBootstrap(Construct):
    """Ordered node-side steps for one group of nodes, delivered inline or as an S3 asset with a loader.

    :param name: what the node's log files (``/var/log/fmconstructs/<name>.<time>.log``) and CloudWatch log streams
        (``<name>/<instance id>``) are named after: 1-64 letters, digits, '.', '_' or '-'. Default: the scope's path
        in the stack with '/' as '-'.
    :param delivery: :class:`BootstrapDelivery`, or None (default): ASSET when ``role`` is given and the stack's
        synthesizer publishes file assets, else INLINE.
    :param role: the node role (asset delivery): it gets read on the asset object and write to the log group.
    :param log_group: where asset runs are logged. Default: the stack's :class:`NodeBootstrapLogs`.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        name: str | None = None,
        delivery: BootstrapDelivery | None = None,
        role: iam.IRole | None = None,
        log_group: logs.ILogGroup | None = None,
    ) -> None:
        if name is not None:
            check_str("name", name, pattern=NAME_PATTERN, allowed="1-64 letters, digits, '.', '_' or '-'")
            if is_token(name):
                raise FmValidationError("name", name, "a name known at synthesis (it names files on the node)")
        if delivery is not None:
            check_enum("delivery", delivery, BootstrapDelivery)
        if role is not None:
            check_construct("role", role, attribute="role_arn", expected="an iam.IRole")
        if log_group is not None:
            check_construct("log_group", log_group, attribute="log_group_name", expected="a logs.ILogGroup")
        super().__init__(scope, id)
        stack = Stack.of(self)
        if delivery is None:
            delivery = (
                BootstrapDelivery.ASSET
                if role is not None and synthesizer_publishes_file_assets(stack)
                else BootstrapDelivery.INLINE
            )
        if delivery is BootstrapDelivery.ASSET and role is None:
            raise FmValidationError("role", None, "the node role (an iam.IRole) for asset delivery")
        if delivery is BootstrapDelivery.ASSET and not synthesizer_publishes_file_assets(stack):
            raise FmValidationError(
                "delivery",
                delivery.value,
                "BootstrapDelivery.INLINE in a stack whose synthesizer does not publish file assets "
                f"({type(stack.synthesizer).__name__})",
            )
        self.name: str = name or default_bootstrap_name(scope)
        self.delivery: BootstrapDelivery = delivery
        self.role = role
        self._log_group = log_group
        self._steps: list[BootstrapStep] = []
        self._problems: list[str] = []
        self._finalized_archive: bytes | None = None
        self._finalized_values: list[str] = []
        self._script_action: ScriptAction | None = None
        self.asset: s3_assets.Asset | None = None
        self._loader: str | None = None
        self._known_bytes: dict[str, int] = {}
        self._bounds: dict[str, int] = {}
        self._dependents: list[IConstruct] = []
        self.node.add_validation(_Problems(self))
        Aspects.of(self).add(_Finalize(self), priority=FINALIZE_PRIORITY)

    # --- steps ----------------------------------------------------------------------------------------------------
    def add_step(
        self, name: str, commands: Sequence[str] = (), *, files: Mapping[str, tuple[str, int]] | None = None
    ) -> BootstrapStep:
        """Append a step: ``commands`` (shell lines, may hold deploy-time values) run after ``files``
        (``{absolute path: (text, mode)}``, known at synthesis) are installed. Returns the step."""
        check_str("name", name, pattern=STEP_NAME, allowed="1-40 lowercase letters, digits or '-'")
        lines = tuple(check_str_sequence("commands", commands))
        checked: dict[str, tuple[str, int]] = {}
        if files is not None and not isinstance(files, Mapping):
            raise FmTypeError("files", files, "a mapping of absolute path to (text, mode)")
        for path, entry in (files or {}).items():
            check_str("files (path)", path)
            check_node_path("files (path)", path)
            if not isinstance(entry, tuple) or len(entry) != 2:
                raise FmTypeError(f"files[{path!r}]", entry, "a (text, mode) pair")
            text, mode = entry
            check_str(f"files[{path!r}] text", text)
            if is_token(text):
                raise FmValidationError(
                    f"files[{path!r}] text", text, "text known at synthesis (pass deploy-time values in commands)"
                )
            if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o7777:
                raise FmTypeError(f"files[{path!r}] mode", mode, "a file mode such as 0o755")
            checked[path] = (text, mode)
        step = BootstrapStep(name, lines, checked)
        self._add(step)
        return step

    def add_commands(self, *commands: str) -> None:
        """Append shell lines to the trailing ``commands`` step (your own set-up; created after the steps so far)."""
        lines = tuple(check_str_sequence("commands", commands))
        if not lines:
            return
        if self._steps and self._steps[-1].name == COMMANDS_STEP:
            last = self._steps[-1]
            self._steps[-1] = BootstrapStep(COMMANDS_STEP, (*last.commands, *lines), last.files)
            self._changed()
        else:
            self._add(BootstrapStep(COMMANDS_STEP, lines))

    def _add(self, step: BootstrapStep) -> None:
        if self.delivery is BootstrapDelivery.ASSET and self._log_group is None:
            # Created with the first step, while the tree is being built: stack-wide Aspects (tags) then reach it.
            NodeBootstrapLogs.of(self)
        self._steps.append(step)
        self._changed()

    def _changed(self) -> None:
        if self._finalized_archive is not None:
            problem = (
                f"{self.node.path}: a step was added after the node bootstrap was packaged as an S3 asset; "
                "add steps before synthesis (an Aspect that adds them needs a priority below "
                f"{FINALIZE_PRIORITY})"
            )
            if problem not in self._problems:
                self._problems.append(problem)

    def bound_value(self, value: str, max_bytes: int) -> None:
        """Record that the deploy-time ``value`` (one token; anything else is ignored) resolves to at most ``max_bytes``
        bytes (e.g. an FSx mount name: 8), so size estimates count it exactly instead of as a generic reference."""
        check_str("value", value)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise FmTypeError("max_bytes", max_bytes, "a whole number of bytes >= 0")
        if TOKEN_PATTERN.fullmatch(value):
            self._bounds[value] = max_bytes

    @property
    def steps(self) -> tuple[BootstrapStep, ...]:
        return tuple(self._steps)

    def add_dependent(self, construct: IConstruct) -> None:
        """Make ``construct`` (what launches the nodes) wait for the node role's asset and log permissions."""
        self._dependents.append(construct)

    # --- renderings -----------------------------------------------------------------------------------------------
    def render(self) -> str:
        """Every step as one shell script, as inline delivery puts it in user data (``#!/bin/bash`` and the lines)."""
        lines = [line for step in self._steps for line in step.inline_commands()]
        return "\n".join(["#!/bin/bash", *lines])

    @property
    def is_empty(self) -> bool:
        return not self._steps

    def user_data_script(self) -> str | None:
        """The shell script that goes into user data: :meth:`render` (inline) or the loader (asset); None when
        there are no steps."""
        if self.is_empty:
            return None
        if self.delivery is BootstrapDelivery.INLINE:
            return self.render()
        self.finalize()
        return self._loader

    @property
    def known_token_bytes(self) -> Mapping[str, int]:
        """Upper bounds of tokens in the user data (the asset bucket's name, values given :meth:`bound_value`)."""
        return {**self._bounds, **self._known_bytes}

    def user_data_size_bytes(self) -> int:
        """Bytes of :meth:`user_data_script` once deployed, from the Python-side text (tokens counted by
        :func:`~fmconstructs.bootstrap.size.text_size_bytes`)."""
        script = self.user_data_script()
        return 0 if script is None else text_size_bytes(script, self.known_token_bytes)

    # --- the asset ------------------------------------------------------------------------------------------------
    def archive(self) -> tuple[bytes, list[str]]:
        """The asset archive's bytes and the deploy-time values (tokens) its placeholders stand for, in order."""
        values: list[str] = []
        index: dict[str, int] = {}

        def placeholder(match: re.Match[str]) -> str:
            token = match.group(0)
            if token not in index:
                values.append(token)
                index[token] = len(values)
            return PLACEHOLDER.format(index=index[token])

        entries: dict[str, tuple[bytes | str, int]] = {"run.sh": (RUNNER_SCRIPT, 0o755)}
        width = max(3, len(str(len(self._steps))))
        for number, step in enumerate(self._steps, start=1):
            lines, lifted = lift_embedded_files(step.commands)
            directory = f"steps/{number:0{width}d}-{step.name}"
            script = "\n".join(["#!/bin/bash", "set -e", *lines]) + "\n"
            entries[f"{directory}/run.sh"] = (TOKEN_PATTERN.sub(placeholder, script), 0o755)
            files: dict[str, tuple[bytes | str, int]] = {**lifted, **step.files}
            for path, (content, mode) in files.items():
                entries[f"{directory}/files{path}"] = (content, mode)
        return deterministic_tar_gz(entries), values

    def _publish_archive(self) -> tuple[str, list[str]]:
        """Build the archive and publish it as ``self.asset`` (once); its sha256 and deploy-time values."""
        data, values = self.archive()
        sha256 = hashlib.sha256(data).hexdigest()
        if self._finalized_archive is not None:
            if data != self._finalized_archive:
                self._changed()
            return hashlib.sha256(self._finalized_archive).hexdigest(), self._finalized_values
        self._finalized_archive = data
        self._finalized_values = values
        path = _archive_dir() / f"{sha256}.tgz"  # the asset's object key keeps the extension: <hash>.tgz
        _write_once(path, data)
        self.asset = s3_assets.Asset(self, "Asset", path=str(path))
        return sha256, values

    def _resolved_log_group(self) -> tuple[logs.ILogGroup, str]:
        if self._log_group is not None:
            return self._log_group, self._log_group.log_group_name
        shared = NodeBootstrapLogs.of(self)
        return shared.log_group, shared.log_group_name

    def finalize(self) -> None:
        """Package the steps (asset delivery: build the archive, publish it as an asset, grant the role, render the
        loader). Called by an Aspect at synthesis; idempotent; a no-op for inline delivery and for no steps (after
        :meth:`script_action`, it only checks that no step was added since)."""
        if self.is_empty:
            return
        if self.delivery is not BootstrapDelivery.ASSET:
            if self._script_action is not None:
                self._publish_archive()
            return
        if self._loader is not None:
            self._publish_archive()
            return
        sha256, values = self._publish_archive()
        assert self.asset is not None
        log_group, group_name = self._resolved_log_group()
        assert self.role is not None
        # Read on this object only (Asset.grant_read would grant the whole asset bucket).
        read = self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[self.asset.bucket.arn_for_objects(self.asset.s3_object_key)]
            )
        )
        log_group.grant(self.role, "logs:CreateLogStream", "logs:PutLogEvents")
        # The role's policy that now holds both statements (iam.Role: "DefaultPolicy"; a mutable imported role:
        # "Policy"). Found by id: AddToPrincipalPolicyResult.policy_dependable does not carry its roots through jsii.
        policies = [
            child
            for child in (self.role.node.try_find_child(name) for name in ("DefaultPolicy", "Policy"))
            if child is not None
        ]
        if read.statement_added:
            for dependent in self._dependents:
                for policy in policies:
                    dependent.node.add_dependency(policy)
        self._known_bytes = {self.asset.s3_bucket_name: BUCKET_NAME_BYTES}
        self._loader = render_loader(
            name=self.name,
            sha256=sha256,
            bucket=self.asset.s3_bucket_name,
            key=self.asset.s3_object_key,
            region=Stack.of(self).region,
            log_group=group_name,
            values=values,
        )

    def script_action(self) -> ScriptAction:
        """The steps as a static loader script in S3 and its arguments, for consumers that run a script URL with
        arguments (ParallelCluster ``CustomActions``), whatever :attr:`delivery` is (it governs user data only).

        The archive is the same as asset delivery's; the loader is :func:`~fmconstructs.bootstrap.loader.
        render_static_loader` as a file asset (the same bytes for every bootstrap, so one S3 object), and the values
        it would embed travel as arguments. Nothing is granted here: the consumer gives the node role
        :meth:`ScriptAction.policy_statements` (or its own equivalent). Needs at least one step and a stack
        synthesizer that publishes file assets; the archive is built on the first call, so add the steps first (a
        step added later fails synthesis). Idempotent."""
        if self._script_action is not None:
            return self._script_action
        if self.is_empty:
            raise FmValidationError("steps", [], "at least one step before script_action()")
        stack = Stack.of(self)
        if not synthesizer_publishes_file_assets(stack):
            raise FmValidationError(
                "script_action",
                type(stack.synthesizer).__name__,
                "a stack whose synthesizer publishes file assets (the loader and the archive are S3 assets)",
            )
        sha256, values = self._publish_archive()
        assert self.asset is not None
        script = render_static_loader()
        script_sha = hashlib.sha256(script.encode()).hexdigest()
        path = _archive_dir() / f"loader-{script_sha}.sh"
        _write_once(path, script.encode())
        loader = s3_assets.Asset(self, "Loader", path=str(path))
        log_group, group_name = self._resolved_log_group()
        self._script_action = ScriptAction(
            script_url=loader.s3_object_url,
            args=(self.name, sha256, self.asset.s3_object_url, stack.region, group_name, *values),
            bucket=self.asset.bucket,
            object_keys=(loader.s3_object_key, self.asset.s3_object_key),
            log_group=log_group,
        )
        return self._script_action

    @property
    def log_group(self) -> logs.ILogGroup | None:
        """Where asset runs are logged: the given group, or the stack's :class:`NodeBootstrapLogs` once a step exists
        (None for inline delivery and before the first step)."""
        if self.delivery is not BootstrapDelivery.ASSET:
            return None
        if self._log_group is not None:
            return self._log_group
        shared = Stack.of(self).node.try_find_child(NodeBootstrapLogs.ID)
        return shared.log_group if isinstance(shared, NodeBootstrapLogs) else None


def _write_once(path: Path, data: bytes) -> None:
    """Write a content-addressed file unless it exists (atomically: a partial file is never read)."""
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(data)
        partial.replace(path)


def default_bootstrap_name(scope: IConstruct) -> str:
    """``scope``'s path in its stack as a bootstrap name ('/' and other characters as '-', the last 64 kept)."""
    stack = Stack.of(scope)
    path = scope.node.path
    prefix = stack.node.path
    relative = path[len(prefix) + 1 :] if path.startswith(prefix + "/") else path
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", relative).strip("-._") or "node"
    return name[-64:].lstrip("-._") or "node"


def step_name(prefix: str, text: str) -> str:
    """A valid step name from ``prefix`` and free text (``step_name("lustre", "/fsx/data")`` -> ``lustre-fsx-data``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return f"{prefix}-{slug}"[:40].rstrip("-") if slug else prefix


def user_data_text_size(text: str, known: Mapping[str, int] | None = None) -> int:
    """Bytes of user-data ``text`` once deployed (tokens at their bound or :data:`REFERENCE_BYTES`)."""
    return text_size_bytes(text, known)


def user_data_size_errors(text: str | None, known: Mapping[str, int] | None = None) -> list[str]:
    """EC2's 16 KB user-data limit for Python-side ``text`` (None: no user data)."""
    return [] if text is None else size_errors(text_size_bytes(text, known))


__all__ = [
    "REFERENCE_BYTES",
    "BootstrapDelivery",
    "BootstrapStep",
    "FileMap",
    "NodeBootstrap",
    "NodeBootstrapLogs",
    "ScriptAction",
    "default_bootstrap_name",
    "step_name",
    "synthesizer_publishes_file_assets",
    "user_data_size_errors",
]
