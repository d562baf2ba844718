"""TrainingPlatform on HyperPod with EKS orchestration builds a cluster HyperPod can create: a Kubernetes version HyperPod
documents (default 1.35), HyperPod's dependencies chart before the HyperPod cluster, the NVIDIA and EFA device plugins
once (GpuEksCluster's, covering the ``ml.`` types; the chart's own off), and an error when the chart has no source."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import FmValidationError
from fmconstructs.hyperpod import (
    HYPERPOD_KUBERNETES_VERSIONS,
    KUBERNETES_VERSION_WARNING,
    HyperPodCluster,
    HyperPodInstanceGroup,
    HyperPodOrchestrator,
)
from fmconstructs.hyperpod.eks_dependencies import (
    CHART_CONTEXT,
    CHART_NAME,
    CHART_VERSION_CONTEXT,
    RELEASE_NAME,
    HyperPodDependenciesChart,
)
from fmconstructs.platform import HyperPodOptions, HyperPodOrchestration, PlatformStorage, TrainingPlatform

from tests.conftest import ENV, Scene, new_app, new_scene
from tests.support.hyperpod_eks_dependencies import write_chart
from tests.support.hyperpod_platform_eks import CHART, OCI

HELM = "Custom::AWSCDK-EKS-HelmChart"


def _platform(scene: Scene, **options: Any) -> TrainingPlatform:
    options.setdefault("dependencies_chart", CHART)
    return TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, **options),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
    )


@dataclass
class Built:
    scene: Scene
    platform: TrainingPlatform
    template: Template

    def helm(self, chart: str) -> dict[str, Any]:
        found = self.template.find_resources(HELM, {"Properties": {"Chart": chart}})
        assert len(found) == 1, f"{chart}: {len(found)} charts"
        (resource,) = found.values()
        return dict(resource)

    def values(self, chart: str) -> str:
        return json.dumps(self.helm(chart)["Properties"]["Values"])


@pytest.fixture(scope="module")
def built() -> Built:
    scene = new_scene("HyperPodEksPlatform")
    platform = _platform(scene)
    return Built(scene, platform, scene.template())


# --- Kubernetes version -------------------------------------------------------------------------------------------
def test_default_version_is_the_newest_hyperpod_documents(built):
    # GIVEN no eks_version WHEN synthesized THEN the EKS cluster runs 1.35, in HyperPod's documented 1.30-1.35
    assert HYPERPOD_KUBERNETES_VERSIONS == ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")
    built.template.has_resource_properties("AWS::EKS::Cluster", {"Version": "1.35"})
    # and aws-cdk-lib offers it as a constant
    assert eks.KubernetesVersion.V1_35.version == "1.35"


def test_no_version_warning_on_the_platform(built):
    warnings = Annotations.from_stack(built.scene.stack).find_warning("*", Match.any_value())
    assert not any(KUBERNETES_VERSION_WARNING in str(w.entry.data) for w in warnings)


@pytest.mark.parametrize("version", ["1.28", "1.29", "1.36"])
def test_undocumented_version_refused_by_the_options(version):
    with pytest.raises(
        FmValidationError, match=rf"eks_version must be one SageMaker HyperPod supports .* got '{version}'"
    ):
        HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, eks_version=eks.KubernetesVersion.of(version))


def test_documented_version_is_taken():
    scene = new_scene("HyperPodEks134")
    _platform(scene, eks_version=eks.KubernetesVersion.V1_34)
    scene.template().has_resource_properties("AWS::EKS::Cluster", {"Version": "1.34"})


def test_standalone_cluster_on_an_undocumented_version_warns():
    # GIVEN a HyperPodCluster on an EKS cluster of 1.29 (no longer documented) THEN the version warning
    scene = new_scene("HyperPodEks129")
    layer = lambda_.LayerVersion.from_layer_version_arn(
        scene.stack, "Layer", "arn:aws:lambda:us-east-1:123456789012:layer:kubectl-v29:1"
    )
    eks_cluster = GpuEksCluster(
        scene.stack, "Eks", vpc=scene.vpc, version=eks.KubernetesVersion.V1_29, kubectl_layer=layer
    )
    gpu = HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1)
    HyperPodCluster(
        scene.stack, "H", vpc=scene.vpc, instance_groups=[gpu], orchestrator=HyperPodOrchestrator.eks(eks_cluster)
    )
    Annotations.from_stack(scene.stack).has_warning("/HyperPodEks129/H", Match.string_like_regexp("1.30, 1.31.*1.35"))


# --- the dependencies chart --------------------------------------------------------------------------------------
def test_dependencies_chart_installed_from_the_given_source(built):
    props = built.helm(CHART_NAME)["Properties"]
    assert props["Release"] == RELEASE_NAME
    assert props["Repository"] == OCI and props["Version"] == "0.1.0"
    assert built.platform.hyperpod_dependencies is not None


def test_hyperpod_cluster_waits_for_the_chart(built):
    chart_ids = list(built.template.find_resources(HELM, {"Properties": {"Chart": CHART_NAME}}))
    (cluster,) = built.template.find_resources("AWS::SageMaker::Cluster").values()
    assert chart_ids[0] in cluster["DependsOn"]


def test_device_plugins_installed_once_and_cover_the_ml_types(built):
    # THEN the chart's own NVIDIA and EFA device plugins are off ...
    chart_values = json.loads(built.helm(CHART_NAME)["Properties"]["Values"])
    assert chart_values["nvidia-device-plugin"] == {"devicePlugin": {"enabled": False}}
    assert chart_values["aws-efa-k8s-device-plugin"] == {"devicePlugin": {"enabled": False}}
    # ... and GpuEksCluster's (one chart each) select the HyperPod nodes' ml. type
    for chart in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "dcgm-exporter"):
        assert "ml.p5.48xlarge" in built.values(chart)
    eks_cluster = built.platform.eks_cluster
    assert eks_cluster is not None and eks_cluster.hyperpod_instance_types == ("ml.p5.48xlarge",)


def test_volume_claim_output_and_file_system_description(built):
    outputs = built.template.to_json()["Outputs"]
    claim = [o for k, o in outputs.items() if k.startswith("PlatformVolumeClaim")]
    assert claim and claim[0]["Value"] == "default/fsx"
    (fs_id,) = [o for k, o in outputs.items() if k.startswith("PlatformFileSystemId")]
    assert "PersistentVolumeClaim default/fsx" in fs_id["Description"]


def test_missing_chart_is_an_error_and_leaves_nothing():
    # GIVEN no dependencies_chart and no context WHEN the platform is built THEN an error naming the option
    scene = new_scene("HyperPodEksNoChart")
    with pytest.raises(FmValidationError, match=r"orchestrator.dependencies_chart must be a HyperPodDependenciesChart"):
        _platform(scene, dependencies_chart=None)
    assert scene.stack.node.try_find_child("Platform") is None


def test_chart_from_context_oci():
    # GIVEN no dependencies_chart but -c fmconstructs:hyperpod-helm-chart=oci://... (and its version)
    app = new_app(**{CHART_CONTEXT: OCI, CHART_VERSION_CONTEXT: "0.1.0-011ca92"})
    stack = cdk.Stack(app, "Ctx", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    _platform(Scene(app, stack, vpc), dependencies_chart=None)
    # THEN the chart comes from the context
    Template.from_stack(stack).has_resource_properties(
        HELM, {"Chart": CHART_NAME, "Repository": OCI, "Version": "0.1.0-011ca92"}
    )


def test_chart_from_context_directory(tmp_path: Path):
    chart_dir = write_chart(tmp_path)
    app = new_app(**{CHART_CONTEXT: str(chart_dir)})
    chart = HyperPodDependenciesChart.from_context(app)
    assert chart is not None and chart.directory == str(chart_dir)


def test_chart_from_ecr_repository():
    scene = new_scene("HyperPodEcr")
    repository = ecr.Repository.from_repository_name(scene.stack, "Repo", "helm-charts/hyperpod-helm-chart")
    _platform(scene, dependencies_chart=HyperPodDependenciesChart.from_ecr(repository, version="0.1.0"))
    (resource,) = scene.template().find_resources(HELM, {"Properties": {"Chart": CHART_NAME}}).values()
    repo = json.dumps(resource["Properties"]["Repository"])
    assert "oci://" in repo and "helm-charts/hyperpod-helm-chart" in repo and "dkr.ecr" in repo


@pytest.mark.parametrize(
    ("make", "parameter"),
    [
        (lambda: HyperPodDependenciesChart.from_ecr("not-a-repository", version="0.1.0"), "repository"),  # type: ignore[arg-type]
        (lambda: HyperPodOptions(dependencies_chart=CHART), "dependencies_chart"),  # Slurm takes no chart
        (lambda: HyperPodOptions(orchestrator=HyperPodOrchestration.EKS, dependencies_chart=OCI), "dependencies_chart"),  # type: ignore[arg-type]
    ],
    ids=["ecr-not-a-repository", "slurm-with-chart", "chart-as-string"],
)
def test_bad_chart_options_refused(make, parameter):
    with pytest.raises((FmValidationError, TypeError), match=parameter):
        make()


def test_missing_kubectl_layer_is_an_error_naming_the_package():
    # GIVEN a documented version whose kubectl layer package is not installed (1.31) THEN an error, not silence
    scene = new_scene("HyperPodEks131")
    with pytest.raises(FmValidationError, match=r"pip install aws-cdk.lambda-layer-kubectl-v31"):
        _platform(scene, eks_version=eks.KubernetesVersion.V1_31)
