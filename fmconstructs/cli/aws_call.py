"""The one mapping of a failed AWS call to what ``fmc`` does about it (no click, no rendering, no aws_cdk).

Missing or refused credentials always end ``fmc`` with exit 4; every other failure becomes the caller's own error,
described by an :class:`AwsFailure` (``fmc capacity`` exits, ``fmc preflight`` writes a FAIL row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    SSOError,
    TokenRetrievalError,
)
from botocore.parsers import ResponseParserError

from .errors import ExitCode, FmcError
from .preflight_options import credentials_problem

T = TypeVar("T")

#: botocore error codes -> what they mean for the user.
_DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess"})
_THROTTLED = frozenset({"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"})

#: botocore errors that mean "no usable credentials": the run stops with one error and ExitCode.NO_CREDENTIALS
#: instead of a table of failed checks (botocore.exceptions).
_CREDENTIAL_ERRORS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    TokenRetrievalError,
    SSOError,
    ProfileNotFound,
)


def explain(error: Exception, action: str) -> str:
    """One line for an AWS error: a missing permission (named), throttling, a missing resource, or the message."""
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        message = str(error.response.get("Error", {}).get("Message", ""))
        if code in _DENIED:
            return f"missing permission {action} ({code}): grant it to the caller's role or user"
        if code in _THROTTLED:
            return f"{action} was throttled ({code}): retry later or lower the request rate"
        if code.endswith(".NotFound") or code.endswith(".Malformed") or code.startswith("NoSuch"):
            return f"not found ({code}): {message}"
        return f"{action} failed ({code}): {message}"
    if isinstance(error, NoCredentialsError):
        return "no AWS credentials found (set a profile with --profile, or the usual environment/config)"
    return f"{action} failed: {error}"


@dataclass(frozen=True)
class AwsFailure:
    """What one caller raises for a failed AWS call that is not a credentials problem.

    ``answered``: AWS answered with an error (not found, missing permission, throttling, no capacity...), given the
    :func:`explain` line. ``unreachable``: botocore got no AWS answer (``BotoCoreError``: endpoint, connection; or
    ``ResponseParserError``, e.g. an HTML page from a proxy: it subclasses neither ``ClientError`` nor
    ``BotoCoreError``, botocore.parsers), given the line. ``not_aws``: the line for ``ResponseParserError``
    (``{action}`` and ``{error}`` are filled in). ``also``: further exception types that become
    ``answered(str(error))``. ``unexpected``: when set, any other exception (a response without the fields the caller
    reads: ``KeyError``, ``TypeError``...) becomes ``answered`` of this line (``{action}``, ``{kind}``, ``{error}``).
    """

    answered: Callable[[str], Exception]
    unreachable: Callable[[str], Exception]
    not_aws: str
    also: tuple[type[Exception], ...] = ()
    unexpected: str | None = None


def call_aws(action: str, fn: Callable[..., T], failure: AwsFailure, /, **kwargs: Any) -> T:
    """``fn(**kwargs)``; missing or refused credentials raise :class:`FmcError` (exit 4), any other AWS failure the
    error ``failure`` names."""
    try:
        return fn(**kwargs)
    except _CREDENTIAL_ERRORS as error:
        raise FmcError(explain(error, action), ExitCode.NO_CREDENTIALS) from None
    except ClientError as error:
        refused = credentials_problem(error)
        if refused:
            raise FmcError(refused, ExitCode.NO_CREDENTIALS) from None
        raise failure.answered(explain(error, action)) from None
    except BotoCoreError as error:
        raise failure.unreachable(explain(error, action)) from None
    except ResponseParserError as error:
        raise failure.unreachable(failure.not_aws.format(action=action, error=error)) from None
    except failure.also as error:
        raise failure.answered(str(error)) from None
    except Exception as error:
        if failure.unexpected is None:
            raise
        kind = type(error).__name__
        raise failure.answered(failure.unexpected.format(action=action, kind=kind, error=error)) from None
