"""Name and value rules of Kubernetes and the EKS API that the EKS constructs check before synthesis.

Kubernetes' own rules (k8s.io/apimachinery ``pkg/util/validation/validation.go``; Kubernetes docs "Object Names and
IDs", https://kubernetes.io/docs/concepts/overview/working-with-objects/names/):

- DNS-1123 label (``IsDNS1123Label``, namespaces): ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 63 characters.
- DNS-1123 subdomain (``IsDNS1123Subdomain``, most object names): DNS-1123 labels joined by ``.``, at most 253.
- Qualified name (``IsQualifiedName``, label and taint keys): an optional DNS-1123 subdomain prefix and ``/``, then a
  name ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`` of at most 63 characters.
- Label value (``IsValidLabelValue``): empty or a qualified name without prefix, at most 63 characters.

The EKS API adds its own limits on node groups (EKS API Reference ``CreateNodegroup``/``Taint``; botocore eks
``labelKey``/``labelValue`` 1-63, ``taintKey`` 1-63, ``taintValue`` 0-63) and cluster names (``CreateCluster.name``:
``^[0-9A-Za-z][A-Za-z0-9\\-_]*``, 1-100). Every pattern is matched against the whole string (a trailing newline never
passes); deploy-time values (CDK tokens) are accepted unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._validate import check_count, check_str, check_tag_key
from .._validate_refs import check_url_path
from ..errors import FmTypeError, FmValidationError, is_token

_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_DNS1123_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})*")
QUALIFIED_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63

#: EKS API ``CreateCluster.name`` (botocore eks ``ClusterName``: min 1, max 100, ``^[0-9A-Za-z][A-Za-z0-9\-_]*``; the
#: API reference: "can contain only alphanumeric characters (case-sensitive), hyphens, and underscores").
EKS_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")
#: Node group names: the EKS API reference gives no pattern for ``CreateNodegroup.nodegroupName`` (CloudFormation:
#: ``minLength`` 1). UNCONFIRMED against an AWS page: terraform-provider-aws documents "can't be longer than 63
#: characters. It must start with a letter or digit, but can also include hyphens and underscores".
EKS_NODEGROUP_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,62}")
#: EKS API ``labelKey``/``taintKey``: 1-63 characters (botocore eks; EKS API Reference "Taint").
EKS_LABEL_KEY_MAX = 63
#: EKS API ``TagKey`` 1-128, ``TagValue`` 0-256, at most 50 tags (botocore eks ``TagMap``).
EKS_TAG_KEY_MAX = 128
EKS_TAG_VALUE_MAX = 256
EKS_MAX_TAGS = 50


def _type_name(value: object) -> str:
    return type(value).__name__


def item_name(parameter: str, key: object) -> str:
    """``labels['team']``: how a mapping entry is named in messages (never a raw token)."""
    return f"{parameter}[a deploy-time key]" if is_token(key) else f"{parameter}[{key!r}]"


def _require_str(parameter: str, value: object) -> str:
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"a str (got a {_type_name(value)})")
    return value


def check_dns_label(parameter: str, value: object) -> Any:
    """A Kubernetes DNS-1123 label (namespaces): lower-case letters, digits and '-', at most 63 characters."""
    return check_str(
        parameter,
        value,
        pattern=DNS1123_LABEL,
        max_length=DNS1123_LABEL_MAX,
        allowed="a Kubernetes DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or "
        "digit, at most 63 characters)",
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


def _is_qualified_name(text: str) -> bool:
    prefix, slash, name = text.rpartition("/")
    if slash and not (0 < len(prefix) <= DNS1123_SUBDOMAIN_MAX and DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= QUALIFIED_NAME_MAX and bool(QUALIFIED_NAME.fullmatch(name))


def check_label_key(parameter: str, value: object, *, max_length: int = EKS_LABEL_KEY_MAX) -> Any:
    """A Kubernetes label or taint key (a qualified name: optional DNS-1123 subdomain prefix and '/') that the EKS
    API accepts (1-63 characters)."""
    text = _require_str(parameter, value)
    if is_token(text):
        return text
    if text.count("/") > 1 or len(text) > max_length or not _is_qualified_name(text):
        raise FmValidationError(
            parameter,
            value,
            f"a Kubernetes qualified name of at most {max_length} characters (EKS API): an optional DNS subdomain "
            "prefix and '/', then letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        )
    return text


def check_label_value(parameter: str, value: object, *, allow_empty: bool = False) -> Any:
    """A Kubernetes label value (at most 63 characters: letters, digits, '-', '_', '.', starting and ending with a
    letter or digit). The EKS API refuses empty node-group label values (``labelValue`` min 1); taint values may be
    empty (``taintValue`` min 0)."""
    text = _require_str(parameter, value)
    if is_token(text):
        return text
    if text == "" and allow_empty:
        return text
    if len(text) > LABEL_VALUE_MAX or not QUALIFIED_NAME.fullmatch(text):
        raise FmValidationError(
            parameter,
            value,
            ("empty or " if allow_empty else "")
            + "a Kubernetes label value (letters, digits, '-', '_' or '.', starting and ending with a letter or digit, "
            "at most 63 characters)",
        )
    return text


def check_labels(parameter: str, value: object) -> dict[str, str]:
    """A mapping of node labels (Kubernetes label keys and values, EKS API lengths)."""
    if not isinstance(value, Mapping):
        raise FmTypeError(parameter, value, f"a mapping of str to str (got a {_type_name(value)})")
    out: dict[str, str] = {}
    for key, item in value.items():
        check_label_key(f"{parameter} key", key)
        out[key] = check_label_value(item_name(parameter, key), item)
    return out


def check_tags(parameter: str, value: object) -> dict[str, str]:
    """EKS resource tags: keys 1-128 characters, values at most 256, at most 50 tags (EKS API ``TagMap``)."""
    if not isinstance(value, Mapping):
        raise FmTypeError(parameter, value, f"a mapping of str to str (got a {_type_name(value)})")
    if len(value) > EKS_MAX_TAGS:
        raise FmValidationError(parameter, f"{len(value)} tags", f"at most {EKS_MAX_TAGS} tags (EKS API TagMap)")
    out: dict[str, str] = {}
    for key, item in value.items():
        key_text = _require_str(f"{parameter} key", key)
        if not is_token(key_text) and not 1 <= len(key_text) <= EKS_TAG_KEY_MAX:
            raise FmValidationError(f"{parameter} key", key, f"1 to {EKS_TAG_KEY_MAX} characters (EKS API TagKey)")
        check_tag_key(f"{parameter} key", key_text)  # no reserved 'aws:' prefix
        item_text = _require_str(item_name(parameter, key), item)
        if not is_token(item_text) and len(item_text) > EKS_TAG_VALUE_MAX:
            raise FmValidationError(
                item_name(parameter, key), item, f"at most {EKS_TAG_VALUE_MAX} characters (EKS API TagValue)"
            )
        out[key_text] = item_text
    return out


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


# --- the pod side of the attribution contract (read by fmconstructs.observability.eks_attribution) -------------------
#: The pod/namespace label key that names the owning team (issue 22 shared contract).
TEAM_LABEL = "team"
#: Pod annotations of the application-metrics contract (``fm-app``).
APP_SCRAPE_ANNOTATION = "fmconstructs.io/scrape"
APP_PORT_ANNOTATION = "fmconstructs.io/port"
APP_PATH_ANNOTATION = "fmconstructs.io/path"
APP_DEFAULT_PATH = "/metrics"


def app_metrics_annotations(*, port: int, path: str = APP_DEFAULT_PATH) -> dict[str, str]:
    """The pod annotations that make the managed scraper collect a pod's own metrics (job ``fm-app``).

    :param port: the container port serving Prometheus metrics (1-65535).
    :param path: the metrics path, default ``/metrics``.
    """
    port = check_count("metrics_port", port, minimum=1, maximum=65535)
    check_url_path("metrics_path", path, max_length=1024, example="/metrics")
    annotations = {APP_SCRAPE_ANNOTATION: "true", APP_PORT_ANNOTATION: str(port)}
    if path != APP_DEFAULT_PATH:
        annotations[APP_PATH_ANNOTATION] = path
    return annotations


def check_team(parameter: str, value: object) -> Any:
    """A team name: the value of the ``team`` label (a Kubernetes label value)."""
    return check_label_value(parameter, value)
