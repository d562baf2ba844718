"""How ``fmc`` ends when it cannot answer: one line (or one JSON object with ``--json``) and an exit code per cause.

Exit codes (stable, for CI gates):

====  ======================================================================================================
0     plan printed / every preflight check passed
1     a preflight check failed (a FAIL row); ``fmc health``'s verdict is not HEALTHY; ``fmc capacity``: EC2
      answered an error (not found, missing permission, throttling, no capacity)
2     bad command-line usage (click's own code for usage errors); ``fmc capacity extend --offering`` without
      ``--yes`` (nothing bought)
3     the cloud assembly cannot be read: a missing or invalid file, JSON of the wrong shape, a nested assembly
      that points at itself, or no GPU node group in it
4     no AWS credentials (or the credentials were refused)
5     AWS set-up: no region, a region botocore does not know, an endpoint that cannot be reached
70    internal error: a defect in fmc (``EX_SOFTWARE`` of BSD sysexits.h); please report it
====  ======================================================================================================
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import IO, TYPE_CHECKING, Any

import click

from .assembly import DEPLOY_TIME

if TYPE_CHECKING:
    from .plan import Plan


class ExitCode(IntEnum):
    OK = 0
    CHECKS_FAILED = 1
    USAGE = 2
    ASSEMBLY = 3
    NO_CREDENTIALS = 4
    AWS_SETUP = 5
    INTERNAL = 70


class FmcError(click.ClickException):
    """An error that ends ``fmc`` with :attr:`code`; shown as one line, or as JSON when :attr:`as_json` is set."""

    def __init__(self, message: str, code: ExitCode, *, as_json: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.as_json = as_json

    @property
    def exit_code(self) -> int:  # click reads it to end the process
        return int(self.code)

    @exit_code.setter
    def exit_code(self, value: int) -> None:
        self.code = ExitCode(value)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": False,
            "error": {"kind": self.code.name.lower().replace("_", "-"), "message": self.message},
            "exit_code": self.exit_code,
        }

    def show(self, file: IO[Any] | None = None) -> None:
        if self.as_json:
            click.echo(json.dumps(self.to_json(), indent=2))
        else:
            click.echo(f"fmc: error: {self.format_message()}", err=True)


def as_fmc_error(error: BaseException, *, as_json: bool) -> FmcError | None:
    """``error`` as an :class:`FmcError`: click's errors (bad options) get code 2, any other exception is an
    internal error (70); None for what must propagate unchanged (``SystemExit``, click's ``Exit``/``Abort``,
    ``KeyboardInterrupt``)."""
    if isinstance(error, FmcError):
        error.as_json = error.as_json or as_json
        return error
    if isinstance(error, click.UsageError):
        return FmcError(error.format_message(), ExitCode.USAGE, as_json=as_json)
    if isinstance(error, click.ClickException):
        return FmcError(error.format_message(), ExitCode.USAGE, as_json=as_json)
    if isinstance(error, (SystemExit, click.exceptions.Exit, click.Abort, KeyboardInterrupt)):
        return None
    if isinstance(error, Exception):
        message = f"internal error ({type(error).__name__}: {error}); please report it with the command you ran"
        return FmcError(message, ExitCode.INTERNAL, as_json=as_json)
    return None


def require_gpu_groups(plan: Plan, what: str) -> None:
    """Refuse an assembly without a GPU node group: fmc would otherwise print empty tables or "preflight passed"."""
    gpu = [
        g
        for g in plan.node_groups
        if g.kind != "launch-template" and (g.gpus_per_node or g.instance_type == DEPLOY_TIME)
    ]
    if gpu:
        return
    stacks = sorted({g.stack for g in plan.node_groups} | {f.stack for f in plan.file_systems})
    raise FmcError(
        f"no GPU node group in {what} (a PCS, EKS, Auto Scaling, ParallelCluster or HyperPod group of a catalog GPU "
        f"type); stacks with resources read: {', '.join(stacks) or 'none'}. For a StackSet, synthesize the app so that "
        "cdk.out holds the replicated *.stackset.template.json",
        ExitCode.ASSEMBLY,
    )
