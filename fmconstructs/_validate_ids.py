"""Service identifiers and names: one checker, one table of the services' own rules (botocore shapes, cited).

:func:`check_service_id` checks a string against a :class:`ServiceId` (pattern matched whole, length from the API
model); a deploy-time value (CDK token) passes unchecked. The patterns are copied from botocore 1.44.8's service
models (``botocore/data/<service>/<version>/service-2.json``), shape named in ``source``; where a model has no pattern
the rule's source says where it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._validate import check_str
from .errors import FmValidationError, is_token

__all__ = ["ServiceId", "check_optional_service_id", "check_service_id"]


@dataclass(frozen=True)
class ServiceId:
    """What a service accepts for one kind of identifier: ``pattern`` (matched whole), lengths and the source."""

    what: str
    pattern: re.Pattern[str]
    min_length: int
    max_length: int
    source: str

    @property
    def allowed(self) -> str:
        return f"{self.what} ({self.source})"

    def matches(self, text: str) -> bool:
        return self.min_length <= len(text) <= self.max_length and bool(self.pattern.fullmatch(text))


def check_service_id(parameter: str, value: object, kind: ServiceId) -> Any:
    """``value`` when it is a ``str`` matching ``kind`` (or a string token); the library's error otherwise."""
    text = check_str(parameter, value, allowed=kind.allowed)
    if is_token(text) or "${Token[" in text:
        return text
    if not kind.matches(text):
        raise FmValidationError(parameter, value, kind.allowed)
    return text


def check_optional_service_id(parameter: str, value: object, kind: ServiceId) -> Any:
    return None if value is None else check_service_id(parameter, value, kind)


# --- AWS PCS (botocore pcs 2023-02-10) ------------------------------------------------------------------------------

_PCS_NAME = r"[A-Za-z][A-Za-z0-9-]+"  # (?!pcs_)^[A-Za-z][A-Za-z0-9-]+: '_' is not allowed, so 'pcs_' never matches
PCS_CLUSTER_IDENTIFIER = ServiceId(
    "a PCS cluster id ('pcs_' then letters and digits) or name (a letter, then 2-40 letters, digits or '-')",
    re.compile(r"pcs_[a-zA-Z0-9]+|[A-Za-z][A-Za-z0-9-]{2,40}"),
    1,
    1011,
    "botocore pcs ClusterIdentifier",
)
PCS_NODE_GROUP_ID = ServiceId(
    "a PCS compute node group id ('pcs_' then letters and digits, GetAtt Id; the tag aws:pcs:compute-node-group-id)",
    re.compile(r"pcs_[a-zA-Z0-9]+"),
    5,
    1011,
    "botocore pcs ComputeNodeGroupIdentifier, id branch",
)
PCS_NODE_GROUP_IDENTIFIER = ServiceId(
    "a PCS compute node group id ('pcs_' then letters and digits) or name (a letter, then 2-25 letters, digits or '-')",
    re.compile(r"pcs_[a-zA-Z0-9]+|[A-Za-z][A-Za-z0-9-]{2,25}"),
    1,
    1011,
    "botocore pcs ComputeNodeGroupIdentifier",
)
PCS_QUEUE_IDENTIFIER = ServiceId(
    "a PCS queue id ('pcs_' then letters and digits) or name (a letter, then 2-25 letters, digits or '-')",
    re.compile(r"pcs_[a-zA-Z0-9]+|[A-Za-z][A-Za-z0-9-]{2,25}"),
    1,
    1011,
    "botocore pcs QueueIdentifier",
)
PCS_CLUSTER_NAME = ServiceId(
    "a PCS cluster name (3-40 letters, digits or '-', starting with a letter)",
    re.compile(_PCS_NAME),
    3,
    40,
    "botocore pcs ClusterName",
)
PCS_QUEUE_NAME = ServiceId(
    "a PCS queue name (3-25 letters, digits or '-', starting with a letter)",
    re.compile(_PCS_NAME),
    3,
    25,
    "botocore pcs QueueName",
)

# --- SageMaker HyperPod (botocore sagemaker 2017-07-24) -------------------------------------------------------------

SAGEMAKER_CLUSTER_NAME = ServiceId(
    "a HyperPod cluster name (1-63 letters, digits or '-', starting and ending with a letter or digit)",
    re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*"),
    1,
    63,
    "botocore sagemaker ClusterName",
)
_SAGEMAKER_CLUSTER_ARN = r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:cluster/[a-z0-9]{12}"
SAGEMAKER_CLUSTER_ARN = ServiceId(
    "a HyperPod cluster ARN (arn:aws:sagemaker:<region>:<account>:cluster/<12 lowercase letters or digits>)",
    re.compile(_SAGEMAKER_CLUSTER_ARN),
    1,
    256,
    "botocore sagemaker ClusterArn",
)
SAGEMAKER_CLUSTER_NAME_OR_ARN = ServiceId(
    "a HyperPod cluster name (1-63 letters, digits or '-', starting and ending with a letter or digit) or ARN",
    re.compile(rf"({_SAGEMAKER_CLUSTER_ARN})|([a-zA-Z0-9](-*[a-zA-Z0-9]){{0,62}})"),
    1,
    256,
    "botocore sagemaker ClusterNameOrArn (BatchReplaceClusterNodes, BatchRebootClusterNodes, ListClusterNodes)",
)
SAGEMAKER_INSTANCE_GROUP_NAME = ServiceId(
    "a HyperPod instance group name (1-63 letters, digits or '-', starting and ending with a letter or digit)",
    re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*"),
    1,
    63,
    "botocore sagemaker ClusterInstanceGroupName",
)

# --- EKS, FSx, EC2, Auto Scaling, ParallelCluster -------------------------------------------------------------------

EKS_CLUSTER_NAME = ServiceId(
    "an EKS cluster name (1-100 letters, digits, '-' or '_', starting with a letter or digit)",
    re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]*"),
    1,
    100,
    "botocore eks ClusterName",
)
FSX_FILE_SYSTEM_ID = ServiceId(
    "an FSx file system id ('fs-' then at least 8 lower-case hex digits)",
    re.compile(r"fs-[0-9a-f]{8,}"),
    11,
    21,
    "botocore fsx FileSystemId",
)
#: botocore ec2 ``CapacityReservationId`` is a plain string; EC2 resource ids are the prefix and 8 or 17 hexadecimal
#: characters (EC2 User Guide "Resource IDs": "17-character IDs ... 8-character IDs" for older resources).
CAPACITY_RESERVATION_ID = ServiceId(
    "a capacity reservation id ('cr-' then 8 or 17 lower-case hex digits)",
    re.compile(r"cr-(?:[0-9a-f]{8}|[0-9a-f]{17})"),
    11,
    20,
    "EC2 User Guide, Resource IDs",
)
EC2_INSTANCE_ID = ServiceId(
    "an EC2 instance id ('i-' then 8 or 17 lower-case hex digits)",
    re.compile(r"i-(?:[0-9a-f]{8}|[0-9a-f]{17})"),
    10,
    19,
    "EC2 User Guide, Resource IDs",
)
AUTO_SCALING_GROUP_NAME = ServiceId(
    "an Auto Scaling group name (1-255 characters, no control characters other than tab, CR and LF)",
    re.compile("[\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff\r\n\t]+"),
    1,
    255,
    "botocore autoscaling XmlStringMaxLen255",
)
#: aws-parallelcluster 3.16.1 ``pcluster/constants.py`` PCLUSTER_NAME_REGEX ``^([a-zA-Z][a-zA-Z0-9-]{0,%d})$`` with
#: PCLUSTER_NAME_MAX_LENGTH 60 (``validators/cluster_validators.py`` ClusterNameValidator; 40 with Slurm accounting).
PARALLELCLUSTER_CLUSTER_NAME = ServiceId(
    "a ParallelCluster cluster name (a letter, then up to 59 letters, digits or '-')",
    re.compile(r"[a-zA-Z][a-zA-Z0-9-]*"),
    1,
    60,
    "aws-parallelcluster PCLUSTER_NAME_REGEX",
)
#: aws-parallelcluster ``validators/cluster_validators.py`` NameValidator: NAME_REGEX ``^[a-z][a-z0-9\-]*$``,
#: NAME_MAX_LENGTH 25 (queue and compute resource names); the name ``default`` is forbidden (FORBIDDEN_NAME).
PARALLELCLUSTER_QUEUE_NAME = ServiceId(
    "a ParallelCluster queue name (a lower-case letter, then lower-case letters, digits or '-', at most 25; not "
    "'default')",
    re.compile(r"(?!default$)[a-z][a-z0-9-]*"),
    1,
    25,
    "aws-parallelcluster NameValidator",
)
