"""WarningId eks-no-graceful-node-shutdown: the collector pod's preStop hook (the clean-stop marker that keeps
NodeStoppedReporting quiet on scale-in) only runs when the kubelet shuts down gracefully, which the EKS AL2023 AMIs turn
on from Kubernetes 1.34 (amazon-eks-ami nodeadm/internal/kubelet/config.go withVersionToggles)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Annotations, Match
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import WarningId
from fmconstructs.observability.eks import GRACEFUL_NODE_SHUTDOWN_VERSION, AmpEksScraper
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import new_scene

WARNING = WarningId.EKS_NO_GRACEFUL_NODE_SHUTDOWN.qualified


def _scraped(version: eks.KubernetesVersion | None, *, install_node_exporter: bool = True) -> cdk.Stack:
    scene = new_scene()
    kwargs = {} if version is None else {"version": version, "kubectl_layer": KubectlV35Layer(scene.stack, "Layer")}
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, **kwargs)  # type: ignore[arg-type]
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=workspace,
        cluster_label="eks",
        install_node_exporter=install_node_exporter,
    )
    return scene.stack


def _warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found if WARNING in str(w.entry.data)]


def test_graceful_shutdown_starts_at_1_34():
    assert GRACEFUL_NODE_SHUTDOWN_VERSION == (1, 34)


@pytest.mark.parametrize("version", [eks.KubernetesVersion.V1_33, eks.KubernetesVersion.of("1.32")])
def test_older_clusters_warn_with_the_fix(version):
    warnings = _warnings(_scraped(version))
    assert len(warnings) == 1
    assert "shutdownGracePeriod" in warnings[0] and "1.34" in warnings[0]
    assert f"Kubernetes {version.version}" in warnings[0]


@pytest.mark.parametrize("version", [None, eks.KubernetesVersion.V1_34, eks.KubernetesVersion.V1_35])
def test_current_clusters_do_not_warn(version):
    assert _warnings(_scraped(version)) == []


def test_no_warning_without_the_node_exporter_daemonset():
    assert _warnings(_scraped(eks.KubernetesVersion.V1_33, install_node_exporter=False)) == []


def test_the_warning_can_be_acknowledged():
    stack = _scraped(eks.KubernetesVersion.V1_33)
    scraper = stack.node.find_child("Scraper")
    cdk.Annotations.of(scraper).acknowledge_warning(WARNING, "kubelet shutdownGracePeriod set in our NodeConfig")
    assert _warnings(stack) == []
