"""One mapping of a failed AWS call (fmconstructs/cli/aws_call.py): ``fmc capacity`` exits, ``fmc preflight`` writes
a FAIL row; credentials problems end both with exit 4."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from botocore.parsers import ResponseParserError

from fmconstructs.cli import capacity_aws, preflight
from fmconstructs.cli.aws_call import AwsFailure, call_aws
from fmconstructs.cli.errors import ExitCode, FmcError
from fmconstructs.errors import FmValidationError

ACTION = "ec2:DescribeCapacityReservations"


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "DescribeCapacityReservations")


def _raiser(error: Exception) -> Any:
    def fn(**_: Any) -> Any:
        raise error

    return fn


def test_call_aws_returns_the_answer_and_passes_keywords() -> None:
    failure = AwsFailure(answered=RuntimeError, unreachable=RuntimeError, not_aws="{action} {error}")
    assert call_aws(ACTION, lambda **kw: kw, failure, failure=1, action=2) == {"failure": 1, "action": 2}


@pytest.mark.parametrize("call", [capacity_aws.call, preflight._call], ids=["capacity", "preflight"])
@pytest.mark.parametrize(
    "error",
    [NoCredentialsError(), _client_error("UnrecognizedClientException"), _client_error("ExpiredToken")],
    ids=["no-credentials", "unrecognized-client", "expired-token"],
)
def test_credentials_problems_exit_4_for_every_caller(call: Any, error: Exception) -> None:
    with pytest.raises(FmcError) as raised:
        call(ACTION, _raiser(error))
    assert raised.value.code == ExitCode.NO_CREDENTIALS


@pytest.mark.parametrize(
    ("error", "code", "text"),
    [
        (_client_error("UnauthorizedOperation"), ExitCode.CHECKS_FAILED, f"missing permission {ACTION}"),
        (_client_error("Throttling"), ExitCode.CHECKS_FAILED, "was throttled"),
        (EndpointConnectionError(endpoint_url="http://x"), ExitCode.AWS_SETUP, f"{ACTION} failed"),
        (ResponseParserError("html"), ExitCode.AWS_SETUP, f"{ACTION}: the answer is not an AWS response: html"),
    ],
    ids=["denied", "throttled", "endpoint", "not-aws"],
)
def test_capacity_exits(error: Exception, code: ExitCode, text: str) -> None:
    with pytest.raises(FmcError) as raised:
        capacity_aws.call(ACTION, _raiser(error))
    assert raised.value.code == code
    assert text in str(raised.value)


@pytest.mark.parametrize(
    "error", [FmValidationError("x", 1, "a string"), KeyError("Subnets")], ids=["validation", "malformed"]
)
def test_capacity_lets_other_errors_through(error: Exception) -> None:
    with pytest.raises(type(error)):
        capacity_aws.call(ACTION, _raiser(error))


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (_client_error("UnauthorizedOperation"), f"missing permission {ACTION}"),
        (EndpointConnectionError(endpoint_url="http://x"), f"{ACTION} failed"),
        (ResponseParserError("html"), f"{ACTION}: the response is not an AWS response (a proxy or captive page?)"),
        (FmValidationError("x", 1, "a string"), "x must be a string, got 1"),
        (KeyError("Subnets"), f"{ACTION}: unexpected response (KeyError: 'Subnets')"),
    ],
    ids=["denied", "endpoint", "not-aws", "validation", "malformed"],
)
def test_preflight_fail_rows(error: Exception, text: str) -> None:
    with pytest.raises(preflight.AwsProblem) as raised:
        preflight._call(ACTION, _raiser(error))
    assert text in str(raised.value)
