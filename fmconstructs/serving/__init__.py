"""Serving foundation models on the training platform's EKS clusters (issue 23).

``model_server`` (:class:`ModelServer`: vLLM as a Deployment or a LeaderWorkerSet), ``weights`` (S3 through the
Mountpoint CSI driver, FSx for Lustre, Hugging Face), ``sizing`` (does a model fit; no aws_cdk, ``fmc plan`` uses
it), ``exposure`` (AWS Load Balancer Controller, internal NLB/ALB), ``autoscaling`` (KEDA on vLLM's queue in AMP),
``observability`` (the ``fm-serving`` scrape job, recording rules and alerts).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .autoscaling import KedaAutoscaling, ModelServerAutoscaler, ScaleTargetKind, ServingMetric
    from .exposure import (
        AwsLoadBalancerController,
        LoadBalancerKind,
        LoadBalancerScheme,
        ModelServerEndpoint,
    )
    from .model_server import ModelServer
    from .observability import ServingAlertThresholds
    from .sizing import (
        ModelDtype,
        ServingLayout,
        check_model_fits,
        serving_layout,
        smallest_serving_layout,
    )
    from .weights import ModelWeights, WeightsSource

__all__ = [
    "AwsLoadBalancerController",
    "KedaAutoscaling",
    "LoadBalancerKind",
    "LoadBalancerScheme",
    "ModelDtype",
    "ModelServer",
    "ModelServerAutoscaler",
    "ModelServerEndpoint",
    "ModelWeights",
    "ScaleTargetKind",
    "ServingAlertThresholds",
    "ServingLayout",
    "ServingMetric",
    "WeightsSource",
    "check_model_fits",
    "serving_layout",
    "smallest_serving_layout",
]

# Lazy (PEP 562): ``fmc`` imports ``fmconstructs.serving.sizing``, which runs this file; importing the constructs here
# would import aws_cdk, which starts Node.js (see fmconstructs._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    ".autoscaling": ("KedaAutoscaling", "ModelServerAutoscaler", "ScaleTargetKind", "ServingMetric"),
    ".exposure": (
        "AwsLoadBalancerController",
        "LoadBalancerKind",
        "LoadBalancerScheme",
        "ModelServerEndpoint",
    ),
    ".model_server": ("ModelServer",),
    ".observability": ("ServingAlertThresholds",),
    ".sizing": (
        "ModelDtype",
        "ServingLayout",
        "check_model_fits",
        "serving_layout",
        "smallest_serving_layout",
    ),
    ".weights": ("ModelWeights", "WeightsSource"),
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
