"""The one Kubernetes name checker: object names, namespaces, label, taint and annotation keys, label and taint values.

Kubernetes' own rules (kubernetes/apimachinery at eed236c, ``pkg/util/validation/validation.go`` and
``pkg/api/validate/content/kube.go``; Kubernetes docs "Object Names and IDs" and "Labels and Selectors"):

- DNS-1123 label (``IsDNS1123Label``; namespace names, ``ValidateNamespaceName``): ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``,
  at most 63 characters (``DNS1123LabelMaxLength``).
- DNS-1123 subdomain (``IsDNS1123Subdomain``, most object names): DNS-1123 labels joined by ``.``, at most 253
  (``DNS1123SubdomainMaxLength``).
- Label key (``IsLabelKey``; also taint keys and annotation keys, which Kubernetes checks as qualified names): an
  optional DNS-1123 subdomain prefix and ``/``, then a name ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`` of at most 63
  characters (``labelKeyMaxLength``); at most one ``/``.
- Label value (``IsLabelValue``; also taint values): empty, or a name as above, at most 63 characters
  (``LabelValueMaxLength``).
- Taint effects (k8s.io/api ``core/v1`` ``TaintEffect``): ``NoSchedule``, ``PreferNoSchedule``, ``NoExecute``.

Services add their own limits, passed as arguments: the EKS API's node-group ``labelKey``/``taintKey`` 1-63 characters
and ``labelValue`` at least 1 (botocore eks), SageMaker HyperPod's ``ClusterKubernetesLabelKey`` 1-317 and
``ClusterKubernetesLabelValue`` 1-63 (botocore sagemaker). Every pattern matches the whole string (a trailing newline
never passes); deploy-time values (CDK tokens) are accepted unchecked. No aws_cdk import: the serving manifests and the
``fmc`` command use it without the jsii runtime.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._validate import check_str
from .errors import FmTypeError, FmValidationError, is_token

__all__ = [
    "DNS1123_LABEL_MAX",
    "DNS1123_SUBDOMAIN_MAX",
    "LABEL_KEY_MAX",
    "LABEL_NAME_MAX",
    "LABEL_VALUE_MAX",
    "TAINT_EFFECTS",
    "check_dns_label",
    "check_dns_subdomain",
    "check_karpenter_labels",
    "check_label_key",
    "check_label_value",
    "check_labels",
    "check_namespace",
    "check_taint_effect",
    "is_label_key",
    "item_name",
    "karpenter_restricted_label",
]

_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_DNS1123_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})*")
LABEL_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_NAME_MAX = 63
LABEL_VALUE_MAX = 63
#: The longest key ``IsLabelKey`` accepts: a 253-character prefix, ``/`` and a 63-character name.
LABEL_KEY_MAX = DNS1123_SUBDOMAIN_MAX + 1 + LABEL_NAME_MAX
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_LABEL_TEXT = (
    "a Kubernetes DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at "
    "most 63 characters)"
)


def item_name(parameter: str, key: object) -> str:
    """``labels['team']``: how a mapping entry is named in messages (never a raw token)."""
    return f"{parameter}[a deploy-time key]" if is_token(key) else f"{parameter}[{key!r}]"


def _require_str(parameter: str, value: object) -> str:
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"a str (got a {type(value).__name__})")
    return value


def check_dns_label(parameter: str, value: object) -> Any:
    """A Kubernetes DNS-1123 label: lower-case letters, digits and '-', at most 63 characters."""
    return check_str(parameter, value, pattern=DNS1123_LABEL, max_length=DNS1123_LABEL_MAX, allowed=_DNS_LABEL_TEXT)


def check_namespace(parameter: str, value: object) -> Any:
    """A Kubernetes namespace name (``ValidateNamespaceName``: a DNS-1123 label)."""
    return check_str(
        parameter,
        value,
        pattern=DNS1123_LABEL,
        max_length=DNS1123_LABEL_MAX,
        allowed=_DNS_LABEL_TEXT,
    )


def check_dns_subdomain(parameter: str, value: object) -> Any:
    """A Kubernetes DNS-1123 subdomain (most object names): DNS-1123 labels joined by '.', at most 253 characters."""
    return check_str(
        parameter,
        value,
        pattern=DNS1123_SUBDOMAIN,
        max_length=DNS1123_SUBDOMAIN_MAX,
        allowed="a Kubernetes DNS-1123 subdomain name (lower-case letters, digits, '-' and '.', each dot-separated "
        "part starting and ending with a letter or digit, at most 253 characters)",
    )


def is_label_key(text: str) -> bool:
    """Whether ``text`` passes ``IsLabelKey``: ``[prefix/]name``, prefix a DNS-1123 subdomain, name at most 63."""
    if text.count("/") > 1:
        return False
    prefix, slash, name = text.rpartition("/")
    if slash and not (0 < len(prefix) <= DNS1123_SUBDOMAIN_MAX and DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= LABEL_NAME_MAX and bool(LABEL_NAME.fullmatch(name))


def check_label_key(
    parameter: str, value: object, *, max_length: int = LABEL_KEY_MAX, service: str = "", kind: str = "label"
) -> Any:
    """A Kubernetes label, taint or annotation key (``IsLabelKey``, for annotations in any case; ``kind`` says
    which), at most ``max_length`` characters in all (a service's own limit, named by ``service``: 63 for EKS)."""
    text = _require_str(parameter, value)
    if is_token(text):
        return text
    # Annotation keys: "The rule is QualifiedName except that case doesn't matter" (ValidateAnnotations,
    # pkg/api/validation/objectmeta.go, checks strings.ToLower(k)).
    if len(text) > max_length or not is_label_key(text.lower() if kind == "annotation" else text):
        limit = f" (at most {max_length} characters: {service})" if service else ""
        raise FmValidationError(
            parameter,
            value,
            f"a Kubernetes {kind} key: an optional DNS subdomain prefix and '/', then a name of at most 63 letters, "
            f"digits, '-', '_' or '.', starting and ending with a letter or digit{limit}",
        )
    return text


def check_label_value(parameter: str, value: object, *, allow_empty: bool = True) -> Any:
    """A Kubernetes label or taint value (``IsLabelValue``): empty (unless ``allow_empty`` is False, as the EKS API's
    ``labelValue`` and HyperPod's need), or at most 63 letters, digits, '-', '_', '.', starting and ending with a letter
    or digit."""
    text = _require_str(parameter, value)
    if is_token(text) or (text == "" and allow_empty):
        return text
    if len(text) > LABEL_VALUE_MAX or not LABEL_NAME.fullmatch(text):
        raise FmValidationError(
            parameter,
            value,
            ("empty or " if allow_empty else "")
            + "a Kubernetes label value (letters, digits, '-', '_' or '.', starting and ending with a letter or digit, "
            "at most 63 characters)",
        )
    return text


def check_labels(
    parameter: str,
    value: object,
    *,
    key_max_length: int = LABEL_KEY_MAX,
    allow_empty_values: bool = True,
    max_labels: int | None = None,
    service: str = "",
) -> dict[str, str]:
    """A mapping of Kubernetes labels (:func:`check_label_key` to :func:`check_label_value`), with a service's
    limits."""
    if not isinstance(value, Mapping):
        raise FmTypeError(parameter, value, f"a mapping of str to str (got a {type(value).__name__})")
    if max_labels is not None and len(value) > max_labels:
        raise FmValidationError(parameter, f"{len(value)} labels", f"at most {max_labels} labels ({service})")
    out: dict[str, str] = {}
    for key, item in value.items():
        check_label_key(f"{parameter} key", key, max_length=key_max_length, service=service)
        out[key] = check_label_value(item_name(parameter, key), item, allow_empty=allow_empty_values)
    return out


def check_taint_effect(parameter: str, value: object) -> Any:
    """A Kubernetes taint effect: ``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute`` (an Enum of them too)."""
    text = getattr(value, "value", value)
    if text not in TAINT_EFFECTS:
        raise FmValidationError(parameter, value, "one of " + ", ".join(repr(e) for e in TAINT_EFFECTS))
    return value


# Karpenter v1 NodePool ``spec.template.metadata.labels`` (karpenter ``pkg/apis/crds/karpenter.sh_nodepools.yaml``,
# x-kubernetes-validations): the domains ``kubernetes.io`` (except the well-known labels below and the
# ``node.kubernetes.io`` / ``node-restriction.kubernetes.io`` domains), ``k8s.io`` (except ``kops.k8s.io``),
# ``karpenter.sh`` (except ``karpenter.sh/capacity-type``) and ``karpenter.k8s.aws`` (except its ``instance-*`` labels)
# are restricted, and so are ``karpenter.sh/nodepool`` and ``kubernetes.io/hostname``: Karpenter sets them.
KARPENTER_WELL_KNOWN_KUBERNETES_LABELS = frozenset(
    {
        "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region", "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
    }
)  # fmt: skip
_KARPENTER_LABEL_TEXT = (
    "a label key Karpenter leaves to the user (not kubernetes.io/hostname, karpenter.sh/nodepool, nor in the domains "
    "kubernetes.io, k8s.io, karpenter.sh, karpenter.k8s.aws except their well-known labels: Karpenter NodePool "
    "spec.template.metadata.labels)"
)


def karpenter_restricted_label(key: str) -> bool:
    """Whether Karpenter's NodePool CRD refuses ``key`` as a template label (see the rules above)."""
    if key in ("kubernetes.io/hostname", "karpenter.sh/nodepool"):
        return True
    domain = key.split("/", 1)[0] if "/" in key else ""
    if domain.endswith("kubernetes.io"):
        return not (
            key in KARPENTER_WELL_KNOWN_KUBERNETES_LABELS
            or domain.endswith("node.kubernetes.io")
            or domain.endswith("node-restriction.kubernetes.io")
        )
    if domain.endswith("k8s.io"):
        return not domain.endswith("kops.k8s.io")
    if domain.endswith("karpenter.sh"):
        return key != "karpenter.sh/capacity-type"
    if domain.endswith("karpenter.k8s.aws"):
        return not key.startswith("karpenter.k8s.aws/instance-")
    return False


def check_karpenter_labels(parameter: str, value: object) -> dict[str, str]:
    """Node labels of a Karpenter NodePool: :func:`check_labels` and none that Karpenter restricts."""
    labels = check_labels(parameter, value)
    for key in labels:
        if not is_token(key) and karpenter_restricted_label(key):
            raise FmValidationError(f"{parameter} key", key, _KARPENTER_LABEL_TEXT)
    return labels
