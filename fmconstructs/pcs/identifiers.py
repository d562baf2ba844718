"""PCS ids and ARNs given as strings: an id where an ARN is needed (or the reverse) is refused with the fix.

The shapes, from AWS sources:

- ids: ``pcs_`` followed by letters and digits (botocore 1.44.8 PCS model, ``ClusterIdentifier`` /
  ``ComputeNodeGroupIdentifier`` / ``QueueIdentifier``: ``(pcs_[a-zA-Z0-9]+|<name>)``; names may not start with
  ``pcs_``, ``ClusterName`` pattern ``(?!pcs_)^[A-Za-z][A-Za-z0-9-]+``);
- ARNs (Service Authorization Reference, AWS PCS resource types, as mirrored in iann0036/iam-dataset):
  ``arn:${Partition}:pcs:${Region}:${Account}:cluster/${ClusterIdentifier}``, ``.../cluster/${ClusterIdentifier}/
  computenodegroup/${ComputeNodeGroupIdentifier}`` and ``.../cluster/${ClusterIdentifier}/queue/${QueueIdentifier}``;
  botocore's ``Arn`` shape: ``arn:aws.*:pcs:.*:[0-9]{12}:.*/[a-z0-9_\\-]+``.

Deploy-time values (CDK tokens) pass unchecked. This module imports no aws_cdk.
"""

from __future__ import annotations

import re
from enum import Enum

from .._validate import check_str
from ..errors import FmValidationError, is_token

#: A PCS resource id (botocore PCS ``*Identifier`` shapes, the id branch). Matched whole.
_ID = re.compile(r"pcs_[a-zA-Z0-9]+")
#: Any PCS ARN: partition, region, 12-digit account, then the resource path (botocore PCS ``Arn``). Matched whole.
_ARN = re.compile(r"arn:aws[a-z-]*:pcs:[a-z0-9-]*:(?:\d{12})?:(?P<path>\S+)")
_PATH_SEGMENT = r"[A-Za-z0-9_-]+"


class PcsResourceType(str, Enum):
    """PCS resource types as they appear in ARNs (Service Authorization Reference, AWS PCS)."""

    CLUSTER = "cluster"
    COMPUTE_NODE_GROUP = "computenodegroup"
    QUEUE = "queue"

    @property
    def label(self) -> str:
        return {"cluster": "cluster", "computenodegroup": "compute node group", "queue": "queue"}[self.value]

    @property
    def path_pattern(self) -> re.Pattern[str]:
        """The ARN resource path of this type (``cluster/<id>`` or ``cluster/<id>/<type>/<id>``)."""
        if self is PcsResourceType.CLUSTER:
            return re.compile(rf"cluster/{_PATH_SEGMENT}")
        return re.compile(rf"cluster/{_PATH_SEGMENT}/{self.value}/{_PATH_SEGMENT}")


def _kind_of_arn(value: str) -> PcsResourceType | None:
    match = _ARN.fullmatch(value)
    if match is None:
        return None
    return next((kind for kind in PcsResourceType if kind.path_pattern.fullmatch(match["path"])), None)


def check_pcs_id(parameter: str, value: object, resource: PcsResourceType) -> str:
    """A PCS ``resource`` id (``pcs_...``, ``GetAtt Id``); an ARN, a name or anything else is refused, naming what was
    given and where the id comes from. Tokens pass."""
    text: str = check_str(parameter, value)
    if is_token(text) or _ID.fullmatch(text):
        return text
    label = resource.label
    wanted = f"a PCS {label} id ('pcs_' then letters and digits, GetAtt Id)"
    if text.startswith("arn:"):
        kind = _kind_of_arn(text)
        found = f"a {kind.label} ARN" if kind is not None else "an ARN"
        raise FmValidationError(parameter, text, f"{wanted}, not {found}: take the id after the last '/' of the ARN")
    raise FmValidationError(parameter, text, wanted)


def check_pcs_arn(parameter: str, value: object, resource: PcsResourceType) -> str:
    """A PCS ``resource`` ARN (``GetAtt Arn``); an id, another resource type's ARN or anything else is refused,
    naming what was given. Tokens (and ARNs with deploy-time parts) pass."""
    text: str = check_str(parameter, value)
    if is_token(text) or "${Token[" in text:
        return text
    label = resource.label
    shape = "cluster/<id>" if resource is PcsResourceType.CLUSTER else f"cluster/<id>/{resource.value}/<id>"
    wanted = f"a PCS {label} ARN ('arn:<partition>:pcs:<region>:<account>:{shape}', GetAtt Arn)"
    if _ID.fullmatch(text):
        raise FmValidationError(parameter, text, f"{wanted}, not an id")
    kind = _kind_of_arn(text)
    if kind is resource:
        return text
    if kind is not None:
        raise FmValidationError(parameter, text, f"{wanted}, not a {kind.label} ARN")
    raise FmValidationError(parameter, text, wanted)
