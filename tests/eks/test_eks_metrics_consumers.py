"""What acts on an EKS cluster's metrics warns at synthesis when nothing collects them (issue 29: "a KEDA autoscaler or
EKS remediation with no scraper is inert, no warning"): NodeRemediation on EKS without an AmpEksScraper of the
cluster (``eks-remediation-without-scraper``), a ModelServerAutoscaler without a scraper collecting serving metrics
(``serving-autoscaler-without-scraper``). A scraper added after the consumer counts (the check runs at synthesis)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import WarningId
from fmconstructs.observability.eks import AmpEksScraper
from fmconstructs.remediation import NodeRemediation, RemediationTarget
from fmconstructs.serving import ModelServerAutoscaler

from tests.conftest import new_scene

WS_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-0123456789abcdef"
REMEDIATION = WarningId.EKS_REMEDIATION_WITHOUT_SCRAPER.qualified
AUTOSCALER = WarningId.SERVING_AUTOSCALER_WITHOUT_SCRAPER.qualified


def _warnings(stack: cdk.Stack, path: str, warning: str) -> list[Any]:
    found: list[Any] = Annotations.from_stack(stack).find_warning(path, Match.string_like_regexp(f".*{warning}.*"))
    return found


def _scene(*, scraper: str | None, consumer: str, scraper_first: bool = True) -> cdk.Stack:
    """A cluster with ``consumer`` ('remediation' or 'autoscaler') and a scraper: None, 'plain' or 'serving'."""
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)

    def add_scraper() -> None:
        if scraper is not None:
            AmpEksScraper(
                scene.stack,
                "Scraper",
                cluster=cluster,
                workspace=WS_ARN,
                cluster_label="gpu",
                serving=scraper == "serving",
            )

    if scraper_first:
        add_scraper()
    if consumer == "remediation":
        NodeRemediation(
            scene.stack,
            "Fix",
            alert_topic=sns.Topic(scene.stack, "Alerts"),
            target=RemediationTarget.eks(cluster=cluster),
        )
    else:
        ModelServerAutoscaler(scene.stack, "Scale", cluster=cluster, server_name="llama", workspace=WS_ARN)
    if not scraper_first:
        add_scraper()
    return scene.stack


def test_eks_remediation_without_a_scraper_warns() -> None:
    (warning,) = _warnings(_scene(scraper=None, consumer="remediation"), "/Test/Fix", REMEDIATION)
    assert "no AmpEksScraper collects this cluster's metrics" in warning.entry.data


@pytest.mark.parametrize("scraper_first", [True, False], ids=["scraper-first", "scraper-after"])
def test_eks_remediation_with_a_scraper_is_quiet(scraper_first: bool) -> None:
    stack = _scene(scraper="plain", consumer="remediation", scraper_first=scraper_first)
    assert _warnings(stack, "*", REMEDIATION) == []


@pytest.mark.parametrize("scraper", [None, "plain"], ids=["no-scraper", "scraper-without-serving"])
def test_an_autoscaler_without_serving_metrics_warns(scraper: str | None) -> None:
    (warning,) = _warnings(_scene(scraper=scraper, consumer="autoscaler"), "/Test/Scale", AUTOSCALER)
    assert "AmpEksScraper(serving=True)" in warning.entry.data


@pytest.mark.parametrize("scraper_first", [True, False], ids=["scraper-first", "scraper-after"])
def test_an_autoscaler_with_a_serving_scraper_is_quiet(scraper_first: bool) -> None:
    stack = _scene(scraper="serving", consumer="autoscaler", scraper_first=scraper_first)
    assert _warnings(stack, "*", AUTOSCALER) == []


def test_enable_serving_later_counts() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    scraper = AmpEksScraper(scene.stack, "Scraper", cluster=cluster, workspace=WS_ARN, cluster_label="gpu")
    ModelServerAutoscaler(scene.stack, "Scale", cluster=cluster, server_name="llama", workspace=WS_ARN)
    scraper.enable_serving()
    assert scraper.collects_serving is True
    assert _warnings(scene.stack, "*", AUTOSCALER) == []


def test_a_scraper_of_another_cluster_does_not_count() -> None:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    other = GpuEksCluster(scene.stack, "Other", vpc=scene.vpc)
    AmpEksScraper(scene.stack, "Scraper", cluster=other, workspace=WS_ARN, cluster_label="other")
    NodeRemediation(
        scene.stack, "Fix", alert_topic=sns.Topic(scene.stack, "Alerts"), target=RemediationTarget.eks(cluster=cluster)
    )
    assert len(_warnings(scene.stack, "/Test/Fix", REMEDIATION)) == 1
