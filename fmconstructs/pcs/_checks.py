"""Input checks shared by the PCS constructs (types, names, durations, tags), on top of :mod:`fmconstructs._validate`.

Every check raises :class:`~fmconstructs.errors.FmTypeError` for a wrong Python type and
:class:`~fmconstructs.errors.FmValidationError` for a bad value, naming the parameter; deploy-time values (CDK tokens)
pass unchecked and are never shown raw.
"""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import Duration

from .._validate import (
    check_duration_seconds,
    check_optional_subnet,
    check_scope_id,
    check_security_group,
    check_str,
    check_subnet,
    check_vpc,
)
from .._validate_tags import check_tags as check_aws_tags
from ..errors import FmTypeError

__all__ = [
    "check_optional_subnet",
    "check_scope_id",
    "check_security_group",
    "check_subnet",
    "check_vpc",
]

#: PCS resource names (botocore PCS model 2023-02-10, shapes ``ClusterName``, ``ComputeNodeGroupName`` and
#: ``QueueName`` of CreateCluster.clusterName, CreateComputeNodeGroup.computeNodeGroupName and CreateQueue.queueName):
#: pattern ``(?!pcs_)^[A-Za-z][A-Za-z0-9-]+`` (matched here against the whole name; the ``pcs_`` look-ahead can never
#: match, since ``_`` is not allowed), min length 3, max length 40 (cluster) or 25 (node group, queue).
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9-]+")
CLUSTER_NAME_LENGTH = (3, 40)
NODE_GROUP_NAME_LENGTH = (3, 25)
QUEUE_NAME_LENGTH = (3, 25)

#: ``ClusterSlurmConfigurationRequest.scaleDownIdleTimeInSeconds``: 1 .. 10,000,000 (botocore PCS model);
#: ``ComputeNodeGroupSlurmConfigurationRequest.scaleDownIdleTimeInSeconds``: -1 .. 10,000,000 (-1 removes a
#: group's override on update; this library leaves the prop unset instead).
MAX_IDLE_SECONDS = 10_000_000

#: An absolute path without shell metacharacters (mount points and script paths written into node scripts).
ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._/-]*")


def check_name(parameter: str, value: object, length: tuple[int, int]) -> Any:
    """A PCS resource name (see :data:`NAME_PATTERN`) or None or a string token."""
    if value is None:
        return None
    low, high = length
    return check_str(
        parameter,
        value,
        pattern=NAME_PATTERN,
        min_length=low,
        max_length=high,
        allowed=f"{low}-{high} characters: a letter, then letters, digits or '-' (PCS API name)",
    )


def check_tags(parameter: str, tags: object) -> dict[str, str] | None:
    """A mapping of str to str (keys and values may be tokens), or None."""
    if tags is None:
        return None
    return check_aws_tags(parameter, tags)  # the one tag checker (AWS tag naming rules)


def check_duration(parameter: str, value: object) -> Duration | None:
    if value is None:
        return None
    if not isinstance(value, Duration):
        raise FmTypeError(parameter, value, f"a Duration such as Duration.minutes(10) (got a {type(value).__name__})")
    return value


def idle_seconds(parameter: str, value: object, *, maximum_seconds: int = MAX_IDLE_SECONDS) -> int | float | None:
    """A scale-down idle time as whole seconds (1 .. ``maximum_seconds``), a number token, or None.

    The toolkit's :func:`~fmconstructs._validate.check_duration_seconds`: a deploy-time amount must be given as
    ``Duration.seconds(token)``."""
    if value is None:
        return None
    seconds: int | float = check_duration_seconds(parameter, value, minimum_seconds=1, maximum_seconds=maximum_seconds)
    return seconds
