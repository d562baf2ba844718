"""``fmc preflight --responses FILE``: answer every AWS call from a file of recorded responses (a dry run that needs
no account, no credentials and no network).

The file is a JSON object: service (``ec2``, ``service-quotas``, ``pricing``) -> API operation name
(``DescribeSubnets``) -> the response as boto3 returns it (``{"Subnets": [...]}``), or a list of them for successive
calls (the last one repeats), or an error ``{"Error": {"Code": "UnauthorizedOperation", "Message": "..."},
"HTTPStatusCode": 403}``. Strings in ISO 8601 form under keys ending in ``Date`` or ``Time`` become datetimes, as
botocore would parse them. An operation the file lacks fails its check with ``NotRecorded``.

The responses are injected the way botocore's ``Stubber`` does it: a ``before-call`` event handler returns the
(HTTP response, parsed response) pair, so botocore sends nothing (botocore/stub.py, botocore/client.py
``_make_api_call``).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders

from .errors import ExitCode, FmcError

Recorded = dict[str, dict[str, list[dict[str, Any]]]]


def _dates(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _dates(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates(v, key) for v in value]
    if isinstance(value, str) and key.endswith(("Date", "Time")):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return value


def load_responses(path: str) -> Recorded:
    """The recorded responses in ``path``; :class:`FmcError` (usage, exit 2) when the file is missing or not of the
    documented shape."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise FmcError(f"--responses {path}: not a readable JSON file ({error})", ExitCode.USAGE) from None
    if not isinstance(data, dict):
        raise FmcError(f"--responses {path}: a JSON object of services, got {type(data).__name__}", ExitCode.USAGE)
    recorded: Recorded = {}
    for service, operations in data.items():
        if not isinstance(operations, dict):
            raise FmcError(f"--responses {path}: {service} must map operation names to responses", ExitCode.USAGE)
        recorded[service] = {}
        for operation, responses in operations.items():
            entries = responses if isinstance(responses, list) else [responses]
            if not entries or not all(isinstance(e, dict) for e in entries):
                raise FmcError(
                    f"--responses {path}: {service} {operation} must be a response object or a list of them",
                    ExitCode.USAGE,
                )
            recorded[service][operation] = [_dates(e) for e in entries]
    return recorded


def attach(client: Any, service: str, recorded: Recorded) -> Any:
    """Make ``client`` answer from ``recorded[service]``; returns the client."""
    operations = recorded.get(service, {})

    def respond(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        queue = operations.get(model.name)
        if not queue:
            message = f"{service} {model.name} is not in the --responses file"
            return AWSResponse("", 400, HTTPHeaders(), None), {
                "Error": {"Code": "NotRecorded", "Message": message},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
        entry = dict(queue.pop(0) if len(queue) > 1 else queue[0])
        status = entry.pop("HTTPStatusCode", 400 if "Error" in entry else 200)
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise FmcError(
                f"--responses: {service} {model.name} HTTPStatusCode must be an HTTP status (100-599), got {status!r}",
                ExitCode.USAGE,
            )
        if "Error" not in entry:
            _check_shape(service, model, entry)
        entry.setdefault("ResponseMetadata", {"HTTPStatusCode": status})
        return AWSResponse("", status, HTTPHeaders(), None), entry

    client.meta.events.register(f"before-call.{client.meta.service_model.service_id.hyphenize()}.*", respond)
    return client


def _check_shape(service: str, model: Any, entry: dict[str, Any]) -> None:
    """A recorded response of the operation's output types, checked with botocore's own validator as ``Stubber``
    does (botocore/stub.py ``_validate_operation_response``), so a malformed file ends ``fmc`` with one usage line
    instead of an error deep in the command. Missing members are allowed: recordings are often trimmed to the
    fields a command reads, and every reader treats an absent member as unknown."""
    from botocore.validate import ParamValidator

    shape = model.output_shape
    if shape is None:
        return
    body = {k: v for k, v in entry.items() if k != "ResponseMetadata"}
    errors = ParamValidator().validate(body, shape)
    kept = [e for e in getattr(errors, "_errors", []) if e[0] != "missing required field"]
    if not kept:
        return
    errors._errors = kept
    report = " ".join(errors.generate_report().split())
    raise FmcError(
        f"--responses: {service} {model.name} is not of the API's output shape: {report[:400]}", ExitCode.USAGE
    ) from None
