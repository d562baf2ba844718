"""Kubernetes versions for GPU EKS clusters and the kubectl Lambda layer that matches each one.

aws-cdk-lib ``aws_eks_v2`` runs Helm charts and manifests through a kubectl handler (a Lambda function) whose layer
must carry a kubectl of the cluster's minor version; the layers ship as separate PyPI packages named
``aws-cdk.lambda-layer-kubectl-vNN``. :func:`kubectl_layer_for` finds the installed one for a version.
"""

from __future__ import annotations

import importlib
import re
import sys

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from ..errors import FmTypeError, FmValidationError, is_token

#: The default Kubernetes version: supported by aws-cdk-lib 2.275 (``KubernetesVersion.V1_35``) and by the
#: ``aws-cdk.lambda-layer-kubectl-v35`` package; EKS standard support for 1.35 runs to 2027-03 (EKS User Guide
#: "kubernetes-versions": 14 months from the 2026-01 release).
DEFAULT_KUBERNETES_VERSION: eks.KubernetesVersion = eks.KubernetesVersion.V1_35

#: P6e-GB200 UltraServers on EKS need Kubernetes 1.33 or later, for Dynamic Resource Allocation (EKS User Guide
#: "ml-eks-nvidia-ultraserver"; DRA is beta and enabled by EKS on 1.33, GA as resource.k8s.io/v1 from 1.34).
MIN_ULTRASERVER_VERSION: tuple[int, int] = (1, 33)

_VERSION = re.compile(r"^(\d+)\.(\d+)$")


def version_tuple(version: eks.KubernetesVersion) -> tuple[int, int]:
    """``KubernetesVersion.V1_35`` -> ``(1, 35)``."""
    match = _VERSION.match(version.version)
    if not match:
        raise FmValidationError("version", version.version, "a Kubernetes minor version such as '1.35'")
    return int(match.group(1)), int(match.group(2))


def kubectl_layer_for(scope: Construct, id: str, version: eks.KubernetesVersion) -> lambda_.ILayerVersion:
    """A kubectl layer for ``version`` from the installed ``aws-cdk.lambda-layer-kubectl-vNN`` package.

    Raises :class:`FmValidationError` naming the package to install when it is missing; pass ``kubectl_layer=``
    to the cluster to use another layer.
    """
    major, minor = version_tuple(version)
    suffix = f"{major}{minor}" if major > 1 else f"{minor}"
    module_name = f"aws_cdk.lambda_layer_kubectl_v{suffix}"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise FmValidationError(
            "version",
            version.version,
            f"a version whose kubectl layer is installed (pip install aws-cdk.lambda-layer-kubectl-v{suffix}) or "
            "an explicit kubectl_layer",
        ) from None
    layer_class = getattr(module, f"KubectlV{suffix}Layer")
    layer: lambda_.ILayerVersion = layer_class(scope, id)
    return layer


_VERSION_TEXT = "a Kubernetes minor version: aws_eks_v2.KubernetesVersion.V1_35 or the string '1.35'"


def check_kubernetes_version(parameter: str, value: object) -> eks.KubernetesVersion:
    """An ``aws_eks_v2.KubernetesVersion``; the string ``"1.34"`` and an ``aws_cdk.aws_eks.KubernetesVersion`` (the
    v1 module's) are mapped to it, since only the version string matters here. Anything else raises with the
    ``aws_eks_v2`` advice."""
    if isinstance(value, eks.KubernetesVersion):
        version_tuple(value)
        return value
    v1 = sys.modules.get("aws_cdk.aws_eks")
    if v1 is not None and isinstance(value, v1.KubernetesVersion):
        value = value.version  # same version string; aws_eks_v2 builds the cluster
    if isinstance(value, str) and not is_token(value):
        if not _VERSION.match(value):
            raise FmValidationError(parameter, value, _VERSION_TEXT)
        return eks.KubernetesVersion.of(value)
    if isinstance(value, str):
        raise FmValidationError(parameter, value, f"{_VERSION_TEXT}, known at synthesis (it picks the kubectl layer)")
    raise FmTypeError(
        parameter,
        value,
        f"{_VERSION_TEXT} (fmconstructs builds clusters with aws_cdk.aws_eks_v2; got a {type(value).__name__})",
    )
