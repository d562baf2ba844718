"""``fmc changes`` (a replacement gate for CI) and ``fmc stack-policy`` (protect stateful resources)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.table import Table

from ..errors import FmValidationError
from .assembly import Stack, read_assembly
from .changes import Report, acknowledge, compare_stacks
from .changes_aws import (
    GateAwsError,
    GateInputError,
    change_set_changes,
    change_set_findings,
    deployed_template,
    with_change_set,
)
from .stack_policy import STACK_POLICY_MAX_BYTES, stack_policy

EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 3
EXIT_AWS = 4


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def _client(region: str | None) -> Any:
    """A CloudFormation client (region: the stack's environment, else --region, else the AWS configuration)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.client("cloudformation", region_name=region)
    except BotoCoreError as error:  # e.g. NoRegionError
        raise GateAwsError(f"cannot make a CloudFormation client: {error} (give --region)") from None


#: How ``fmc changes --deployed`` makes a client for a region (tests swap in a Stubber-backed client).
client_factory: Callable[[str | None], Any] = _client


def _read(cdk_out: str, stacks: tuple[str, ...]) -> list[Stack]:
    try:
        found = read_assembly(cdk_out)
    except FmValidationError as error:
        _fail(str(error), EXIT_BAD_INPUT)
    except (AttributeError, TypeError, KeyError, ValueError) as error:  # JSON of an unexpected shape
        _fail(f"{cdk_out} is not a cloud assembly fmc can read ({type(error).__name__}: {error})", EXIT_BAD_INPUT)
    if stacks:
        unknown = sorted(set(stacks) - {s.name for s in found})
        if unknown:
            names = ", ".join(s.name for s in found) or "none"
            _fail(f"--stack {', '.join(unknown)} is not in {cdk_out} (stacks: {names})", EXIT_BAD_INPUT)
        found = [s for s in found if s.name in stacks]
    return found


def _deployed_report(stacks: list[Stack], region: str | None, use_change_set: bool) -> Report:
    old: dict[str, dict[str, Any]] = {}
    clients: dict[str | None, Any] = {}
    for stack in stacks:
        where = stack.region or region
        client = clients.setdefault(where, client_factory(where))
        template = deployed_template(client, stack.name)
        if template is not None:
            old[stack.name] = template
    report = compare_stacks(old, {s.name: s.template for s in stacks})
    if use_change_set:
        for stack in stacks:
            if stack.name not in old:
                continue
            changes = change_set_changes(clients[stack.region or region], stack.name, stack.template)
            if changes is None:
                report.notes.append(f"{stack.name}: template over 51,200 bytes: no change set, template comparison")
                continue
            report = with_change_set(report, stack.name, change_set_findings(stack.name, stack.template, changes))
    return report


def render_report(report: Report, console: Console) -> None:
    stateful = [f for f in report.findings if f.gating]
    if stateful:
        table = Table(title="Stateful resources this deploy would replace, remove or shrink", title_justify="left")
        for column in ("Stack", "Resource", "Type", "Change", "Property", "Old -> new", "Why", "Allowed"):
            table.add_column(column, overflow="fold")
        for f in stateful:
            change = f"{f.old} -> {f.new}" if f.old is not None or f.new is not None else "-"
            allowed = "yes" if f.acknowledged else "NO"
            table.add_row(f.stack, f.path, f.resource_type, f.kind, f.prop or "-", change, f.detail, allowed)
        console.print(table)
    else:
        console.print("No stateful resource is replaced, removed or shrunk.")
    other = [f for f in report.findings if not f.gating and f.kind in ("replace", "may-replace")]
    if other:
        console.print(f"Also replaced (not gating): {len(other)} resource(s):", markup=False)
        for f in other:
            console.print(f"  - {f.path} ({f.resource_type}): {f.prop} {f.old} -> {f.new}", markup=False)
    for note in report.notes:
        console.print(f"Note: {note}", markup=False)
    blocking = report.blocking
    if blocking:
        console.print(
            f"{len(blocking)} finding(s) not acknowledged: re-run with --allow PATH for each intended one.",
            markup=False,
        )


_CHANGES_HELP = """Compare the cloud assembly CDK_OUT (default ./cdk.out) with a previous one (--against OLD_CDK_OUT,
offline) or with the deployed stacks (--deployed: CloudFormation GetTemplate; add --change-set for CloudFormation's own
answer from a change set that is created, read and deleted, never executed).

For each stateful resource (file systems, data repository associations, buckets, keys, workspaces, clusters, node
groups, queues) it lists a replacement (the create-only property that causes it, old -> new), a logical id that
disappears (removed, or renamed: matched by construct path or as the only new resource of its type) and an FSx storage
decrease. Create-only properties come from the CloudFormation resource schemas (copied from cfn-lint). Intrinsic
functions are compared structurally: the same expression is the same value unless it refers to a new or replaced
resource; any other change involving one is "may-replace" and gates like a replacement. A create-only property
set on one side only is a change. Replacements of other resources (security groups, roles...) are listed, not
gating. Two changes gate whatever the resource, because the deploy fails: an update a custom resource's provider
refuses ("refused": ParallelCluster's head node, image, cluster name) and a replacement or logical id move of a
resource that keeps its custom name (a log group, bucket, EKS or HyperPod cluster name).

--allow takes a construct path such as Stack/Platform/FileSystem (or STACK/LOGICAL_ID) and covers everything below it.

\b
Exit status:
  0  no finding, or every finding acknowledged with --allow
  1  a stateful resource would be replaced, removed or shrunk, or the deploy would fail (not acknowledged)
  2  usage error
  3  unreadable input (no cdk.out, a broken manifest or template, an unknown --stack)
  4  a CloudFormation call failed (credentials, permissions, a failed change set)"""


@click.command(help=_CHANGES_HELP, short_help="Gate CI on replaced, removed or shrunk stateful resources.")
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option("--against", "previous", type=click.Path(file_okay=False), help="A previous cdk.out to compare with.")
@click.option("--deployed", is_flag=True, help="Compare with the deployed stacks (read-only CloudFormation calls).")
@click.option("--change-set", "use_change_set", is_flag=True, help="With --deployed: ask CloudFormation (change set).")
@click.option("--stack", "stacks", multiple=True, help="Only this stack (repeatable).")
@click.option("--allow", "allowed", multiple=True, help="Acknowledge findings under this construct path (repeatable).")
@click.option("--region", help="Region for stacks whose environment is not pinned (default: AWS configuration).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for CI) instead of tables.")
def changes(
    cdk_out: str,
    previous: str | None,
    deployed: bool,
    use_change_set: bool,
    stacks: tuple[str, ...],
    allowed: tuple[str, ...],
    region: str | None,
    as_json: bool,
) -> None:
    if (previous is None) == (not deployed):
        raise click.UsageError("give exactly one of --against OLD_CDK_OUT and --deployed")
    if use_change_set and not deployed:
        raise click.UsageError("--change-set goes with --deployed")
    new = _read(cdk_out, stacks)
    try:
        if previous is not None:
            old = {s.name: s.template for s in _read(previous, ())}
            report = compare_stacks(old, {s.name: s.template for s in new})
        else:
            report = _deployed_report(new, region, use_change_set)
    except GateInputError as error:
        _fail(str(error), EXIT_BAD_INPUT)
    except GateAwsError as error:
        _fail(str(error), EXIT_AWS)
    report = acknowledge(report, allowed)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        console = Console()
        render_report(report, console if console.is_terminal else Console(width=220))
    if report.blocking:
        sys.exit(EXIT_FINDINGS)


_POLICY_HELP = """Print a CloudFormation stack policy (JSON) for one stack of CDK_OUT (default ./cdk.out): it allows
every update and denies Update:Replace and Update:Delete on the stack's stateful resources (file systems, data
repository associations, buckets, keys, workspaces, clusters, node groups, queues), by logical id.

Apply it after a deploy (cdk deploy has no stack-policy option):

\b
  fmc stack-policy cdk.out --stack STACK > policy.json
  aws cloudformation set-stack-policy --stack-name STACK --stack-policy-body file://policy.json

A denied replacement or deletion then fails the update and CloudFormation rolls it back. For an intended change,
set a policy generated with --allow PATH for the resources you mean to replace, deploy, then set the full policy
again. A plain CloudFormation update can instead take a one-off override
(aws cloudformation update-stack --stack-policy-during-update-body); cdk deploy executes change sets, and
ExecuteChangeSet takes no override. A stack policy cannot be deleted, only replaced (Allow Update:* on * lifts
every protection)."""


@click.command(
    "stack-policy", help=_POLICY_HELP, short_help="Print a stack policy that protects the stateful resources."
)
@click.argument("cdk_out", required=False, default="cdk.out", type=click.Path(file_okay=False))
@click.option("--stack", "stack_name", help="The stack (required when the assembly has more than one).")
@click.option("--allow", "allowed", multiple=True, help="Leave resources under this construct path unprotected.")
def stack_policy_command(cdk_out: str, stack_name: str | None, allowed: tuple[str, ...]) -> None:
    found = _read(cdk_out, (stack_name,) if stack_name else ())
    if len(found) != 1:
        names = ", ".join(s.name for s in found) or "none"
        _fail(f"--stack must name one stack of {cdk_out} (stacks: {names})", EXIT_BAD_INPUT)
    stack = found[0]
    document = stack_policy(stack.name, stack.template, allow=allowed)
    click.echo(policy_text(stack.name, document))


def policy_text(stack: str, document: Mapping[str, Any]) -> str:
    """The policy as printed: indented, or compact when only that fits CloudFormation's limit (said on stderr); a
    policy that does not fit even compact ends ``fmc`` with :data:`EXIT_FINDINGS` and a line saying what to do."""
    compact = json.dumps(document, separators=(",", ":"))
    size = len(compact.encode())
    if size > STACK_POLICY_MAX_BYTES:
        protected = sum(len(s.get("Resource", [])) for s in document.get("Statement", []) if s.get("Effect") == "Deny")
        _fail(
            f"the stack policy of {stack} is {size:,} bytes even without spaces ({protected} protected resources), "
            f"over CloudFormation's {STACK_POLICY_MAX_BYTES:,} (SetStackPolicy StackPolicyBody, at most "
            f"{STACK_POLICY_MAX_BYTES} characters): leave some resources out with --allow PATH, or move node groups "
            "to nested stacks (each takes its own policy)",
            EXIT_FINDINGS,
        )
    text = json.dumps(document, indent=2)
    if len(text.encode()) > STACK_POLICY_MAX_BYTES:
        click.echo(
            f"Note: the policy is printed without spaces ({size:,} bytes): indented it would pass CloudFormation's "
            f"{STACK_POLICY_MAX_BYTES:,}-byte limit (SetStackPolicy StackPolicyBody)",
            err=True,
        )
        return compact
    return text
