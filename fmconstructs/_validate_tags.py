"""The one AWS tag checker: every construct that takes ``tags=`` (PCS, EKS clusters and node groups, launch templates,
ParallelCluster, Karpenter and Auto Mode node classes) checks keys and values here.

AWS's rule (AWS General Reference "Tagging AWS resources", "Tag naming limits and requirements"; the same limits in
botocore's models: resourcegroupstaggingapi and eks ``TagKey`` 1-128, ``TagValue`` 0-256, ``TagMap`` at most 50;
sagemaker ``TagKey``/``TagValue`` and the EFS ``Tag`` API reference ``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*``, EFS keys
``^(?![aA]{1}[wW]{1}[sS]{1}:)``):

- a key is 1-128 Unicode characters, a value 0-256;
- "Generally allowed characters are: letters, numbers, and spaces representable in UTF-8, and the following
  characters: + - = . _ : / @" (EC2 alone accepts more; the library's tags reach other services through the stack's
  tags and the launched instances', so the common set is the rule);
- ``aws:`` in any case is reserved for AWS as a key prefix;
- at most 50 user tags per resource.

Deploy-time values (CDK tokens) are accepted unchecked.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from ._validate import check_str, known
from .errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "KARPENTER_RESTRICTED_TAG_KEYS",
    "KARPENTER_RESTRICTED_TAG_PREFIX",
    "MAX_TAGS_PER_RESOURCE",
    "RESERVED_TAG_PREFIX",
    "TAG_KEY_MAX",
    "TAG_VALUE_MAX",
    "check_karpenter_node_tags",
    "check_tag_key",
    "check_tag_value",
    "check_tags",
    "is_tag_text",
]

RESERVED_TAG_PREFIX = "aws:"
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
#: botocore resourcegroupstaggingapi / eks ``TagMap`` ``max`` 50 (the tagging guide: "Maximum number of tags per
#: resource - 50"; tags with the ``aws:`` prefix, which AWS adds, do not count).
MAX_TAGS_PER_RESOURCE = 50
#: The punctuation of ``[\p{L}\p{Z}\p{N}_.:/=+\-@]``; letters (L), separators (Z) and numbers (N) are Unicode
#: categories.
TAG_PUNCTUATION = frozenset("_.:/=+-@")
_CHARACTERS = "Unicode letters, digits, spaces and _ . : / = + - @"


def is_tag_text(text: str) -> bool:
    """Whether every character of ``text`` is in ``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]`` (AWS's tag characters)."""
    return all(c in TAG_PUNCTUATION or unicodedata.category(c)[0] in "LZN" for c in text)


def check_tag_key(parameter: str, key: object, *, reserved_prefixes: Iterable[str] = ()) -> Any:
    """A tag key: 1-128 of AWS's tag characters, not starting with ``aws:`` (any case) nor ``reserved_prefixes``
    (case-sensitive: a service's own, e.g. ParallelCluster's ``parallelcluster:``)."""
    text = check_str(parameter, key, min_length=1, max_length=TAG_KEY_MAX, allowed="a tag key of 1-128 characters")
    if not known(text):
        return text
    if text.lower().startswith(RESERVED_TAG_PREFIX):
        raise FmValidationError(parameter, key, "a tag key not starting with 'aws:' (reserved for AWS, any case)")
    for prefix in reserved_prefixes:
        if text.startswith(prefix):
            raise FmValidationError(parameter, key, f"a tag key not starting with {prefix!r} (reserved)")
    if not is_tag_text(text):
        raise FmValidationError(parameter, key, f"a tag key of {_CHARACTERS} (AWS tag naming rules)")
    return text


def check_tag_value(parameter: str, value: object) -> Any:
    """A tag value: 0-256 of AWS's tag characters (empty is allowed)."""
    text = check_str(parameter, value, max_length=TAG_VALUE_MAX, allowed="a tag value of 0-256 characters")
    if known(text) and not is_tag_text(text):
        raise FmValidationError(parameter, value, f"a tag value of {_CHARACTERS} (AWS tag naming rules)")
    return text


def check_tags(
    parameter: str, value: object, *, max_tags: int = MAX_TAGS_PER_RESOURCE, reserved_prefixes: Iterable[str] = ()
) -> dict[str, Any]:
    """Resource tags: a mapping of at most ``max_tags`` tag keys (:func:`check_tag_key`) to tag values
    (:func:`check_tag_value`). Messages name ``<parameter> key`` and ``<parameter>['<key>']``."""
    if not isinstance(value, Mapping):
        raise FmTypeError(parameter, value, f"a mapping of str to str (got a {type(value).__name__})")
    if len(value) > max_tags:
        raise FmValidationError(parameter, f"{len(value)} tags", f"at most {max_tags} tags per resource (AWS TagMap)")
    prefixes = tuple(reserved_prefixes)
    out: dict[str, Any] = {}
    for key, item in value.items():
        check_tag_key(f"{parameter} key", key, reserved_prefixes=prefixes)
        name = f"{parameter}[a deploy-time key]" if is_token(key) else f"{parameter}[{key!r}]"
        out[key] = check_tag_value(name, item)
    return out


# Karpenter v1 EC2NodeClass ``spec.tags`` (aws/karpenter-provider-aws ``pkg/apis/v1/ec2nodeclass.go``, kubebuilder
# XValidation): "empty tag keys aren't supported"; "tag contains a restricted tag matching eks:eks-cluster-name",
# "... kubernetes.io/cluster/" (``!k.startsWith('kubernetes.io/cluster')``), "... karpenter.sh/nodepool",
# "... karpenter.sh/nodeclaim", "... karpenter.k8s.aws/ec2nodeclass": Karpenter sets these itself.
KARPENTER_RESTRICTED_TAG_KEYS = frozenset(
    {"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"}
)
KARPENTER_RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"


def check_karpenter_node_tags(parameter: str, value: object) -> dict[str, Any]:
    """Tags Karpenter applies to the instances it launches (EC2NodeClass / Auto Mode NodeClass ``spec.tags``):
    :func:`check_tags` and none of Karpenter's restricted keys."""
    tags = check_tags(parameter, value)
    for key in tags:
        if known(key) and (key in KARPENTER_RESTRICTED_TAG_KEYS or key.startswith(KARPENTER_RESTRICTED_TAG_PREFIX)):
            restricted = ", ".join(sorted(KARPENTER_RESTRICTED_TAG_KEYS))
            raise FmValidationError(
                f"{parameter} key",
                key,
                f"a tag key Karpenter does not set itself (not {KARPENTER_RESTRICTED_TAG_PREFIX}/*, {restricted}: "
                "karpenter-provider-aws EC2NodeClass spec.tags)",
            )
    return tags
