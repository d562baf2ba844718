"""Helpers of tests/hyperpod/test_hyperpod_platform_eks.py that other test modules use too."""

from __future__ import annotations

from fmconstructs.hyperpod.eks_dependencies import (
    HyperPodDependenciesChart,
)

OCI = "oci://123456789012.dkr.ecr.us-east-1.amazonaws.com/helm-charts/hyperpod-helm-chart"
CHART = HyperPodDependenciesChart.from_oci(OCI, version="0.1.0")
