"""The EKS API's own name limits; Kubernetes' rules are the library's one checker, :mod:`fmconstructs._validate_k8s`,
and tags the one tag checker, :mod:`fmconstructs._validate_tags`.

The EKS API limits node groups (EKS API Reference ``CreateNodegroup``/``Taint``; botocore eks
``labelKey``/``labelValue`` 1-63, ``taintKey`` 1-63, ``taintValue`` 0-63) and cluster names (``CreateCluster.name``:
``^[0-9A-Za-z][A-Za-z0-9\\-_]*``, 1-100). Deploy-time values (CDK tokens) are accepted unchecked.
"""

from __future__ import annotations

import re
from typing import Any

from .._validate import check_count
from .._validate_k8s import check_label_key, check_label_value, check_labels
from .._validate_refs import check_url_path

#: EKS API ``CreateCluster.name`` (botocore eks ``ClusterName``: min 1, max 100, ``^[0-9A-Za-z][A-Za-z0-9\-_]*``; the
#: API reference: "can contain only alphanumeric characters (case-sensitive), hyphens, and underscores").
EKS_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")
#: Node group names: the EKS API reference gives no pattern for ``CreateNodegroup.nodegroupName`` (CloudFormation:
#: ``minLength`` 1). UNCONFIRMED against an AWS page: terraform-provider-aws documents "can't be longer than 63
#: characters. It must start with a letter or digit, but can also include hyphens and underscores".
EKS_NODEGROUP_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,62}")
#: EKS API ``labelKey``/``taintKey``: 1-63 characters (botocore eks; EKS API Reference "Taint").
EKS_LABEL_KEY_MAX = 63
_EKS = "EKS API labelKey/taintKey"


def check_node_label_key(parameter: str, value: object, *, kind: str = "label") -> Any:
    """A node-group label or taint key: a Kubernetes label key the EKS API accepts (1-63 characters)."""
    return check_label_key(parameter, value, max_length=EKS_LABEL_KEY_MAX, service=_EKS, kind=kind)


def check_node_labels(parameter: str, value: object) -> dict[str, str]:
    """Node-group labels: Kubernetes labels with the EKS API's limits (keys 1-63 characters, values not empty)."""
    return check_labels(parameter, value, key_max_length=EKS_LABEL_KEY_MAX, allow_empty_values=False, service=_EKS)


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
    return check_label_value(parameter, value, allow_empty=False)
