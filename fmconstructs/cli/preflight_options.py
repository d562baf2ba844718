"""Checks of ``fmc preflight``'s options and of the caller's credentials, offline (botocore's bundled data)."""

from __future__ import annotations

from functools import cache
from typing import Any

import click
from botocore.exceptions import ClientError

from .errors import ExitCode, FmcError
from .replay import Recorded, load_responses

#: Capacity Block durations: "1-day increments up to 14 days, and in 7-day increments up to 182 days"; "Each
#: Capacity Block can have up to 64 instances" (EC2 User Guide "Find and purchase Capacity Blocks",
#: capacity-blocks-purchase; EC2 API Reference DescribeCapacityBlockOfferings ``CapacityDurationHours``).
CAPACITY_BLOCK_DAYS: tuple[int, ...] = (*range(1, 15), *range(21, 183, 7))
MAX_CAPACITY_BLOCK_INSTANCES = 64

#: Error codes that mean the credentials were refused, not that a permission or a resource is missing:
#: ``AuthFailure``, ``InvalidClientTokenId``, ``MissingAuthenticationToken`` (EC2 API Reference "Error codes for the
#: Amazon EC2 API", common client errors); ``ExpiredTokenException``, ``IncompleteSignature`` (EC2 API Reference
#: "Common Error Types"). ``ExpiredToken``, ``UnrecognizedClientException`` and ``SignatureDoesNotMatch`` are the
#: spellings other protocols use (UNCONFIRMED against an AWS page for Service Quotas and the Price List API).
_REFUSED = frozenset(
    {
        "AuthFailure",
        "InvalidClientTokenId",
        "MissingAuthenticationToken",
        "ExpiredTokenException",
        "IncompleteSignature",
        "ExpiredToken",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
    }
)


def credentials_problem(error: ClientError) -> str | None:
    """One line when ``error`` says the credentials were refused (expired, unknown key, bad signature); else None."""
    code = str(error.response.get("Error", {}).get("Code", ""))
    if code not in _REFUSED:
        return None
    message = str(error.response.get("Error", {}).get("Message", ""))
    return f"AWS refused the credentials ({code}: {message}): refresh them (aws sso login, a new session token)"


@cache
def known_regions() -> frozenset[str]:
    """Every region botocore's bundled endpoint data lists for EC2, in every partition (no network call)."""
    import botocore.session

    session = botocore.session.get_session()
    regions: set[str] = set()
    for partition in session.get_available_partitions():
        regions.update(session.get_available_regions("ec2", partition_name=partition))
    return frozenset(regions)


def check_region(region: str) -> str:
    """``region`` if botocore knows it; else a usage error naming the closest known regions."""
    known = known_regions()
    if region in known:
        return region
    import difflib

    import botocore

    close = difflib.get_close_matches(region, sorted(known), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise FmcError(
        f"unknown region {region!r}: not an EC2 region of botocore {botocore.__version__}'s endpoint data{hint} "
        "(a region newer than botocore needs a newer boto3)",
        ExitCode.AWS_SETUP,
    )


@cache
def ec2_instance_types() -> frozenset[str]:
    """The ``InstanceType`` enum of botocore's EC2 service model (offline)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("ec2")
    shape: Any = model.shape_for("InstanceType")  # a StringShape with the enum of every instance type
    return frozenset(shape.enum)


def parse_find_block(value: str) -> tuple[str, int, int]:
    """``TYPE:COUNT:DAYS`` -> (instance type, instance count, days), refusing what EC2 refuses: a type outside the
    EC2 ``InstanceType`` enum, more than 64 instances, a duration that is not 1-14 days or a 7-day step to 182."""
    parts = value.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise click.BadParameter(f"{value!r}: give TYPE:COUNT:DAYS, e.g. p5.48xlarge:4:7", param_hint="--find-block")
    instance_type, count, days = parts[0], int(parts[1]), int(parts[2])
    if instance_type not in ec2_instance_types():
        raise click.BadParameter(f"{value!r}: {instance_type!r} is not an EC2 instance type", param_hint="--find-block")
    if not 1 <= count <= MAX_CAPACITY_BLOCK_INSTANCES:
        raise click.BadParameter(
            f"{value!r}: COUNT must be 1 to {MAX_CAPACITY_BLOCK_INSTANCES} instances per Capacity Block",
            param_hint="--find-block",
        )
    if days not in CAPACITY_BLOCK_DAYS:
        nearest = sorted(CAPACITY_BLOCK_DAYS, key=lambda d: (abs(d - days), d))[:2]
        raise click.BadParameter(
            f"{value!r}: DAYS must be 1-14, or 21 to 182 in 7-day steps (nearest: {' or '.join(map(str, nearest))})",
            param_hint="--find-block",
        )
    return instance_type, count, days


def connection_options(endpoint_url: str | None, responses_file: str | None, region: str | None) -> Recorded | None:
    """Check ``--endpoint-url`` (an http(s) URL, not with ``--responses``) and ``--region``; the recorded responses
    of ``--responses`` if given."""
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{endpoint_url!r}: an http:// or https:// URL", param_hint="--endpoint-url")
    if endpoint_url is not None and responses_file is not None:
        raise click.UsageError("--endpoint-url and --responses exclude each other (one dry run at a time)")
    responses = load_responses(responses_file) if responses_file is not None else None
    if region is not None:
        check_region(region)
    return responses
