"""``fmc usage CDK_OUT`` without ``--workspace-url``: the Prometheus workspace the deployed stacks created.

The same read-only lookup as ``fmc health`` (:class:`~fmconstructs.cli.health_aws.HealthAws`): CloudFormation
``DescribeStacks`` + ``ListStackResources`` of each stack of the assembly, then the workspace URL of a stack output or
of an ``AWS::APS::Workspace`` resource (amp ``DescribeWorkspace`` ``prometheusEndpoint``). IAM:
``cloudformation:DescribeStacks``, ``cloudformation:ListStackResources``, ``aps:DescribeWorkspace``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import FmValidationError
from .assembly import read_assembly
from .errors import ExitCode, FmcError


@dataclass(frozen=True)
class Found:
    """The workspace to read, the region the stacks are in and the credentials to sign with."""

    url: str
    region: str
    credentials: Any
    others: tuple[str, ...] = ()


def find_workspace(cdk_out: str, *, region: str | None, profile: str | None, responses_file: str | None) -> Found:
    """The first workspace of the deployed stacks of ``cdk_out``; exit 3 (unreadable assembly) or 5 (none found)."""
    from .health import _Clients, _region, _session
    from .health_aws import HealthAws, read_stack
    from .health_model import HealthReport
    from .preflight import AwsProblem, _call
    from .replay import load_responses

    try:
        stacks = [s for s in read_assembly(cdk_out) if not s.stackset]
    except FmValidationError as error:
        raise FmcError(str(error), ExitCode.ASSEMBLY) from None
    responses = load_responses(responses_file) if responses_file is not None else None
    session, credentials = _session(profile, region, replay=responses is not None, endpoint=False)
    resolved = _region(region, stacks, session.region_name)
    aws = HealthAws(_Clients(session, resolved, None, responses), HealthReport(region=resolved))
    for stack in stacks:
        try:
            cfn = aws.client("cloudformation")
            deployed = _call("cloudformation:DescribeStacks", read_stack, cfn=cfn, name=stack.name)
            if deployed is not None:
                aws._find_workspaces(stack, deployed)
        except AwsProblem as problem:
            raise FmcError(f"{stack.name}: {problem}", ExitCode.AWS_SETUP) from None
    if not aws.workspaces:
        names = ", ".join(s.name for s in stacks) or "none"
        raise FmcError(
            f"no Prometheus workspace in the deployed stacks of {cdk_out} ({names}) in {resolved}: "
            "give --workspace-url",
            ExitCode.AWS_SETUP,
        )
    return Found(aws.workspaces[0], resolved, credentials, tuple(aws.workspaces[1:]))
