"""HyperPodEksDependencies (HyperPod's dependencies chart on a GpuEksCluster) and the GPU add-ons on HyperPod nodes
(GpuEksCluster.add_hyperpod_instance_types): synthesized properties, dependency ordering and invalid inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fmconstructs.eks import GpuEksCluster, dcgm_exporter_values, efa_device_plugin_values, nvidia_device_plugin_values
from fmconstructs.eks.addons import HYPERPOD_NODE_HEALTH_TOLERATION, INSTANCE_TYPE_LABEL
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.eks_dependencies import (
    CHART_NAME,
    RELEASE_NAME,
    RELEASE_NAMESPACE,
    ChartLocation,
    HyperPodDependenciesChart,
    HyperPodEksDependencies,
    dependencies_values,
)

from tests.conftest import ENV, new_app, new_scene
from tests.support.hyperpod_eks_dependencies import write_chart

HELM = "Custom::AWSCDK-EKS-HelmChart"
GPU_CHARTS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "dcgm-exporter")
OCI = "oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/helm-charts/hyperpod-helm-chart"


@pytest.fixture(scope="module")
def chart_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_chart(tmp_path_factory.mktemp("hyperpod-cli"))


def hyperpod(stack: cdk.Stack, eks_cluster: GpuEksCluster, vpc: ec2.IVpc, id: str = "HyperPod") -> HyperPodCluster:
    return HyperPodCluster(
        stack,
        id,
        vpc=vpc,
        subnets=[vpc.private_subnets[0]],
        orchestrator=HyperPodOrchestrator.eks(eks_cluster),
        instance_groups=[
            HyperPodInstanceGroup(name="gpu", instance_type="p5en.48xlarge", nodes=2),
            HyperPodInstanceGroup(name="cpu", instance_type="m5.2xlarge", nodes=1),
        ],
    )


class World:
    def __init__(self, chart: HyperPodDependenciesChart) -> None:
        scene = new_scene("HyperPodDeps")
        self.stack, self.vpc = scene.stack, scene.vpc
        self.eks = GpuEksCluster(self.stack, "Cluster", vpc=self.vpc)
        self.addons = self.eks.add_gpu_addons()
        self.deps = HyperPodEksDependencies(self.stack, "Deps", cluster=self.eks, chart=chart)
        self.hyperpod = hyperpod(self.stack, self.eks, self.vpc)
        self.deps.add_dependent(self.hyperpod)
        self.template = Template.from_stack(self.stack)

    def logical_id(self, element: Any) -> str:
        return str(self.stack.resolve(element.logical_id))

    def helm(self, chart: str) -> dict[str, Any]:
        (props,) = [
            r["Properties"]
            for r in self.template.find_resources(HELM).values()
            if r["Properties"].get("Chart") == chart or (chart == "" and "ChartAssetURL" in r["Properties"])
        ]
        return props

    def values(self, chart: str) -> dict[str, Any]:
        rendered = self.helm(chart)["Values"]
        assert isinstance(rendered, str), rendered  # no deploy-time part in these values
        return dict(json.loads(rendered))


@pytest.fixture(scope="module")
def world(chart_dir: Path) -> World:
    return World(HyperPodDependenciesChart.from_directory(str(chart_dir)))


# --- the chart install ---------------------------------------------------------------------------------------------
def test_release_and_namespace_as_hyperpod_documents(world):
    # GIVEN a checkout WHEN installed THEN `helm install hyperpod-dependencies ... --namespace kube-system`
    props = world.helm("")
    assert props["Release"] == RELEASE_NAME == "hyperpod-dependencies"
    assert props["Namespace"] == RELEASE_NAMESPACE == "kube-system"
    assert "CreateNamespace" not in props or props["CreateNamespace"] is False
    assert props.get("Wait", False) is False


def test_directory_chart_is_an_s3_asset(world):
    props = world.helm("")
    assert "Chart" not in props and "Repository" not in props and "Version" not in props
    assert json.dumps(props["ChartAssetURL"]).startswith('{"Fn::Join"') or "s3://" in json.dumps(props["ChartAssetURL"])
    assert world.deps.chart_asset is not None


def test_chart_device_plugins_off_and_region_set(world):
    values = json.loads(world.helm("")["Values"]) if isinstance(world.helm("")["Values"], str) else None
    assert values is not None
    assert values["nvidia-device-plugin"] == {"devicePlugin": {"enabled": False}}
    assert values["aws-efa-k8s-device-plugin"] == {"devicePlugin": {"enabled": False}}
    assert values["global"] == {"region": "us-east-1"}


def test_hyperpod_cluster_waits_for_the_chart(world):
    (hyperpod_resource,) = world.template.find_resources("AWS::SageMaker::Cluster").values()
    chart_id = world.logical_id(world.deps.chart.node.default_child.node.default_child)  # type: ignore[union-attr]
    assert chart_id in hyperpod_resource["DependsOn"]


def test_chart_installed_after_the_system_node_group(world):
    chart = world.template.find_resources(HELM, {"Properties": {"Release": RELEASE_NAME}})
    (resource,) = chart.values()
    nodegroup_id = world.logical_id(world.eks.system_node_group.node.default_child)  # type: ignore[union-attr]
    assert nodegroup_id in resource["DependsOn"]


# --- the GPU add-ons on HyperPod nodes -----------------------------------------------------------------------------
def _affinity_types(values: dict[str, Any]) -> list[list[str]]:
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return [[f"{e['key']}={','.join(e['values'])}" for e in term["matchExpressions"]] for term in terms]


@pytest.mark.parametrize("chart", ["nvidia-device-plugin", "dcgm-exporter"])
def test_gpu_daemonsets_select_fmconstructs_groups_or_hyperpod_types(world, chart):
    values = world.values(chart)
    assert "nodeSelector" not in values  # a nodeSelector would AND away the HyperPod term
    assert _affinity_types(values) == [
        ["nvidia.com/gpu.present=true"],
        [f"{INSTANCE_TYPE_LABEL}=ml.p5en.48xlarge"],  # only the accelerated group; not ml.m5.2xlarge
    ]


@pytest.mark.parametrize("chart", GPU_CHARTS)
def test_gpu_daemonsets_tolerate_hyperpod_node_health_taint(world, chart):
    assert HYPERPOD_NODE_HEALTH_TOLERATION in world.values(chart)["tolerations"]


def test_efa_plugin_lists_hyperpod_types_beside_ec2_types(world):
    values = world.values("aws-efa-k8s-device-plugin")
    assert {"ml.p5en.48xlarge", "p5en.48xlarge", "p5.48xlarge"} <= set(values["supportedInstanceLabels"]["values"])
    assert "ml.m5.2xlarge" not in values["supportedInstanceLabels"]["values"]
    assert "nodeSelector" not in values


def test_cluster_records_hyperpod_types(world):
    assert world.eks.hyperpod_instance_types == ("ml.p5en.48xlarge",)


def test_fsx_csi_addon_has_no_node_selector(world):
    # The managed add-on's node DaemonSet runs on every node (tolerates all taints), so HyperPod nodes mount claims.
    world.template.has_resource_properties(
        "AWS::EKS::Addon", {"AddonName": "aws-fsx-csi-driver", "ConfigurationValues": Match.absent()}
    )


def _values_after(order: str) -> dict[str, dict[str, Any]]:
    scene = new_scene(f"Order{order}")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    if order == "types-first":
        cluster.add_hyperpod_instance_types(["ml.p5en.48xlarge"])
        cluster.add_gpu_addons()
    elif order == "addons-first":
        cluster.add_gpu_addons()
        cluster.add_hyperpod_instance_types(["ml.p5en.48xlarge"])
    else:
        cluster.add_gpu_addons(hyperpod_instance_types=["ml.p5en.48xlarge"])
    resources = Template.from_stack(scene.stack).find_resources(HELM)
    return {r["Properties"]["Chart"]: json.loads(r["Properties"]["Values"]) for r in resources.values()}


def test_hyperpod_types_apply_in_either_order():
    # GIVEN the same types registered before, after or with the add-ons THEN the same values (charts added earlier
    # are re-rendered at synthesis).
    first, later, together = (_values_after(o) for o in ("types-first", "addons-first", "together"))
    assert first == later == together
    assert first["nvidia-device-plugin"] == nvidia_device_plugin_values(hyperpod_instance_types=["ml.p5en.48xlarge"])


def test_types_added_after_synthesis_values_are_rendered_late():
    scene = new_scene("Late")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_addons(hyperpod_instance_types=["ml.p5en.48xlarge"])
    cluster.add_hyperpod_instance_types(["ml.p5.48xlarge", "ml.p5en.48xlarge"])
    resources = Template.from_stack(scene.stack).find_resources(HELM)
    values = {r["Properties"]["Chart"]: json.loads(r["Properties"]["Values"]) for r in resources.values()}
    assert _affinity_types(values["dcgm-exporter"])[1] == [f"{INSTANCE_TYPE_LABEL}=ml.p5.48xlarge,ml.p5en.48xlarge"]
    assert cluster.hyperpod_instance_types == ("ml.p5en.48xlarge", "ml.p5.48xlarge")


def test_without_hyperpod_types_values_are_unchanged():
    assert nvidia_device_plugin_values(hyperpod_instance_types=()) == nvidia_device_plugin_values()
    assert dcgm_exporter_values(hyperpod_instance_types=()) == dcgm_exporter_values()
    assert efa_device_plugin_values(["p5.48xlarge"], hyperpod_instance_types=()) == efa_device_plugin_values(
        ["p5.48xlarge"]
    )


# --- other chart sources and values ---------------------------------------------------------------------------------
def test_oci_chart_source():
    scene = new_scene("Oci")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_addons()
    HyperPodEksDependencies(
        scene.stack,
        "Deps",
        cluster=cluster,
        chart=HyperPodDependenciesChart.from_oci(OCI, version="0.1.0-011ca92"),
        instance_types=["ml.p5en.48xlarge"],
        values={"trainingOperators": {"enabled": False}},
    )
    props = scene.template().find_resources(HELM, {"Properties": {"Release": RELEASE_NAME}})
    (resource,) = props.values()
    assert resource["Properties"]["Chart"] == CHART_NAME
    assert resource["Properties"]["Repository"] == OCI
    assert resource["Properties"]["Version"] == "0.1.0-011ca92"
    values = json.loads(resource["Properties"]["Values"])
    assert values["trainingOperators"] == {"enabled": False}
    assert values["nvidia-device-plugin"] == {"devicePlugin": {"enabled": False}}
    assert cluster.hyperpod_instance_types == ("ml.p5en.48xlarge",)


def test_helm_repository_chart_source():
    chart = HyperPodDependenciesChart.from_helm_repository("https://charts.example.com/hyperpod", version="0.1.0")
    assert (chart.repository, chart.version, chart.chart) == (
        "https://charts.example.com/hyperpod",
        "0.1.0",
        CHART_NAME,
    )


def test_environment_agnostic_region_is_a_reference():
    values = dependencies_values(region=cdk.Aws.REGION)
    assert cdk.Token.is_unresolved(values["global"]["region"])


def test_device_plugins_required_when_hyperpod_types_registered(chart_dir):
    # GIVEN HyperPod types but no GpuEksCluster device plugins WHEN synthesized THEN a validation error (the chart's
    # own plugins are off).
    app = new_app()
    stack = cdk.Stack(app, "NoPlugins", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    cluster = GpuEksCluster(stack, "Cluster", vpc=vpc)
    HyperPodEksDependencies(
        stack,
        "Deps",
        cluster=cluster,
        chart=HyperPodDependenciesChart.from_oci(OCI, version="0.1.0"),
        instance_types=["ml.p5en.48xlarge"],
    )
    with pytest.raises(Exception, match="have no NvidiaDevicePlugin or EfaDevicePlugin"):
        app.synth()


# --- invalid inputs -------------------------------------------------------------------------------------------------
@pytest.fixture
def cluster_scene():
    scene = new_scene()
    return scene, GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)


def _oci() -> HyperPodDependenciesChart:
    return HyperPodDependenciesChart.from_oci(OCI, version="0.1.0")


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"cluster": "my-cluster"}, FmTypeError, "cluster"),
        ({"chart": "HyperPodHelmChart"}, FmTypeError, "chart"),
        ({"chart": None}, FmTypeError, "chart"),
        ({"instance_types": "ml.p5en.48xlarge"}, FmTypeError, "instance_types"),
        ({"instance_types": ["p5en.48xlarge"]}, FmValidationError, r"instance_types\[0\]"),
        ({"instance_types": ["ml.P5en.48xlarge"]}, FmValidationError, r"instance_types\[0\]"),
        ({"instance_types": [cdk.Token.as_string(cdk.Aws.REGION)]}, FmValidationError, r"instance_types\[0\]"),
        ({"values": ["trainingOperators"]}, FmTypeError, "values"),
        ({"values": {"nvidia-device-plugin": {"devicePlugin": {"enabled": True}}}}, FmValidationError, "nvidia"),
        ({"values": {"aws-efa-k8s-device-plugin": {"devicePlugin": {"enabled": True}}}}, FmValidationError, "efa"),
        ({"values": {"namespace": {"name": "hyperpod"}}}, FmValidationError, "aws-hyperpod"),
        ({"timeout": cdk.Duration.minutes(16)}, FmValidationError, "timeout"),
        ({"timeout": cdk.Duration.seconds(0)}, FmValidationError, "timeout"),
        ({"timeout": 600}, FmTypeError, "timeout"),
    ],
)
def test_invalid_construct_inputs(cluster_scene, kwargs, error, pattern):
    scene, cluster = cluster_scene
    props: dict[str, Any] = {"cluster": cluster, "chart": _oci(), **kwargs}
    with pytest.raises(error, match=pattern):
        HyperPodEksDependencies(scene.stack, "Deps", **props)


@pytest.mark.parametrize(
    ("layout", "pattern"),
    [
        ({"name": "hyperpod-helm-chart-for-rig"}, "hyperpod-helm-chart"),
        ({"archived": False}, r"helm dependencies update.*charts/nvidia-device-plugin-<version>\.tgz"),
        ({"local_dir": False}, r"file://charts/health-monitoring-agent"),
    ],
)
def test_invalid_chart_directory(tmp_path, layout, pattern):
    chart = write_chart(tmp_path, **layout)
    with pytest.raises(FmValidationError, match=pattern):
        HyperPodDependenciesChart.from_directory(str(chart))


@pytest.mark.parametrize("path", ["", "/nonexistent/HyperPodHelmChart", cdk.Token.as_string(cdk.Aws.STACK_NAME)])
def test_invalid_chart_directory_path(path):
    with pytest.raises(FmValidationError, match="path"):
        HyperPodDependenciesChart.from_directory(path)


def test_directory_without_chart_yaml(tmp_path):
    with pytest.raises(FmValidationError, match=r"Chart\.yaml"):
        HyperPodDependenciesChart.from_directory(str(tmp_path))


@pytest.mark.parametrize(
    ("reference", "version", "error"),
    [
        ("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/helm-charts/other-chart", "0.1.0", FmValidationError),
        ("https://example.com/hyperpod-helm-chart", "0.1.0", FmValidationError),
        (OCI, None, FmValidationError),
        (OCI, "0.1 .0", FmValidationError),
        (OCI, 1, FmTypeError),
    ],
)
def test_invalid_oci_source(reference, version, error):
    with pytest.raises(error):
        HyperPodDependenciesChart.from_oci(reference, version=version)


@pytest.mark.parametrize("url", ["oci://registry/hyperpod-helm-chart", "ftp://example.com", "https://a b"])
def test_invalid_helm_repository(url):
    with pytest.raises(FmValidationError):
        HyperPodDependenciesChart.from_helm_repository(url, version="0.1.0")


def test_add_dependent_refuses_other_objects(cluster_scene):
    scene, cluster = cluster_scene
    deps = HyperPodEksDependencies(scene.stack, "Deps", cluster=cluster, chart=_oci())
    with pytest.raises(FmTypeError, match="hyperpod_cluster"):
        deps.add_dependent(cluster)


def test_add_dependent_refuses_hyperpod_on_another_cluster(cluster_scene):
    scene, cluster = cluster_scene
    other = GpuEksCluster(scene.stack, "Other", vpc=scene.vpc)
    deps = HyperPodEksDependencies(scene.stack, "Deps", cluster=cluster, chart=_oci())
    with pytest.raises(FmValidationError, match="orchestrated by"):
        deps.add_dependent(hyperpod(scene.stack, other, scene.vpc))


@pytest.mark.parametrize(
    ("types", "error"),
    [
        ("ml.p5en.48xlarge", FmTypeError),
        (["p5en.48xlarge"], FmValidationError),
        (["ml.p5en"], FmValidationError),
        ([None], FmTypeError),
    ],
)
def test_add_hyperpod_instance_types_refuses_bad_types(cluster_scene, types, error):
    _, cluster = cluster_scene
    with pytest.raises(error):
        cluster.add_hyperpod_instance_types(types)
    with pytest.raises(error):
        cluster.add_gpu_addons(hyperpod_instance_types=types)


# --- the FmHyperPodEks example with the chart, the scraper, cdk-nag and cfn-lint -----------------------------------
@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, chart_dir: Path) -> Path:
    from cdk_nag import AwsSolutionsChecks

    from examples.hyperpod_eks_stack import CHART_CONTEXT, HyperPodEksStack
    from fmconstructs.observability.workspace import PrometheusWorkspace

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=True, context={CHART_CONTEXT: str(chart_dir)})
    workspace = PrometheusWorkspace(cdk.Stack(app, "FmHyperPodDepsObservability", env=ENV), "Amp")
    HyperPodEksStack(app, "FmHyperPodEks", env=ENV, workspace=workspace)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on an unacknowledged cdk-nag error
    return outdir


def _example_resources(example: Path) -> dict[str, Any]:
    return dict(json.loads((example / "FmHyperPodEks.template.json").read_text())["Resources"])


def test_example_installs_the_chart_before_the_hyperpod_cluster(example):
    resources = _example_resources(example)
    charts = {k: r for k, r in resources.items() if r["Type"] == HELM and r["Properties"]["Release"] == RELEASE_NAME}
    (chart_id,) = charts
    assert charts[chart_id]["Properties"]["Namespace"] == "kube-system"
    (cluster,) = [r for r in resources.values() if r["Type"] == "AWS::SageMaker::Cluster"]
    assert chart_id in cluster["DependsOn"]


def test_example_gpu_addons_cover_p5en_hyperpod_nodes(example):
    resources = _example_resources(example)
    values = {
        r["Properties"]["Chart"]: json.loads(r["Properties"]["Values"])
        for r in resources.values()
        if r["Type"] == HELM and r["Properties"].get("Chart") in GPU_CHARTS
    }
    assert set(values) == set(GPU_CHARTS)
    assert "ml.p5en.48xlarge" in values["aws-efa-k8s-device-plugin"]["supportedInstanceLabels"]["values"]
    for chart in ("nvidia-device-plugin", "dcgm-exporter"):
        assert [f"{INSTANCE_TYPE_LABEL}=ml.p5en.48xlarge"] in _affinity_types(values[chart])


def test_example_lustre_volume_and_scraper(example):
    resources = _example_resources(example)
    (fs,) = [r for r in resources.values() if r["Type"] == "AWS::FSx::FileSystem"]
    assert fs["Properties"]["StorageCapacity"] == 1200
    assert any(
        r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" and "PersistentVolumeClaim" in json.dumps(r["Properties"])
        for r in resources.values()
    )
    assert [r for r in resources.values() if r["Type"] == "AWS::APS::Scraper"]


def test_example_cdk_nag_and_cfn_lint_clean(example):
    from cfnlint.api import lint_file

    report = json.loads((example / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []
    errors = [m for m in lint_file(example / "FmHyperPodEks.template.json") if m.rule.severity == "error"]
    assert [f"{m.rule.id} {m.message[:200]}" for m in errors] == []


def test_example_without_chart_warns():
    from aws_cdk.assertions import Annotations as AssertAnnotations

    from examples.hyperpod_eks_stack import HyperPodEksStack

    stack = HyperPodEksStack(new_app(), "FmHyperPodEks", env=ENV)
    assert stack.hyperpod_dependencies is None
    AssertAnnotations.from_stack(stack).has_warning(
        "/FmHyperPodEks", Match.string_like_regexp("dependencies chart is not installed")
    )


def test_efa_plugin_tolerates_the_efa_taint_on_hyperpod_nodes(world):
    # HyperPodHelmChart/values.yaml: its EFA plugin tolerates aws.amazon.com/efa; ours does too for HyperPod types.
    tolerations = world.values("aws-efa-k8s-device-plugin")["tolerations"]
    assert {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"} in tolerations


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"location": "oci", "repository": OCI, "version": "0.1.0"}, FmTypeError),
        ({"location": ChartLocation.DIRECTORY}, FmTypeError),
        ({"location": ChartLocation.OCI, "repository": OCI}, FmValidationError),
        ({"location": ChartLocation.OCI, "repository": None, "version": "0.1.0"}, FmTypeError),
        ({"location": ChartLocation.HELM_REPOSITORY, "repository": OCI, "version": "0.1.0"}, FmValidationError),
        (
            {"location": ChartLocation.OCI, "repository": OCI, "version": "0.1.0", "directory": "/tmp"},
            FmValidationError,
        ),
    ],
)
def test_chart_value_object_checks_itself(kwargs, error):
    with pytest.raises(error):
        HyperPodDependenciesChart(**kwargs)


def test_directory_chart_refuses_a_repository(chart_dir):
    with pytest.raises(FmValidationError, match="repository"):
        HyperPodDependenciesChart(ChartLocation.DIRECTORY, directory=str(chart_dir), repository=OCI)


def test_late_values_keep_a_private_image_token():
    # GIVEN an ECR image for the DCGM exporter WHEN HyperPod types are added after the chart THEN the re-rendered
    # values still carry the image (a CloudFormation reference) and the HyperPod affinity.
    from aws_cdk import aws_ecr as ecr

    from fmconstructs.eks import ChartSource

    scene = new_scene("Token")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    repo = ecr.Repository(scene.stack, "Repo")
    cluster.add_gpu_addons(dcgm_exporter_source=ChartSource().with_image(repo.repository_uri))
    cluster.add_hyperpod_instance_types(["ml.p5en.48xlarge"])
    (resource,) = scene.template().find_resources(HELM, {"Properties": {"Chart": "dcgm-exporter"}}).values()
    rendered = json.dumps(resource["Properties"]["Values"])
    assert "Fn::Join" in rendered and "ml.p5en.48xlarge" in rendered
    assert str(scene.stack.resolve(repo.node.default_child.logical_id)) in rendered


def test_example_runs_a_kubernetes_version_hyperpod_documents(example):
    # FmHyperPodEks pins 1.34 (sagemaker-hyperpod-eks-prerequisites lists 1.30-1.35), so the HyperPod version warning
    # does not fire and needs no acknowledgement.
    from fmconstructs.hyperpod import HYPERPOD_KUBERNETES_VERSIONS, KUBERNETES_VERSION_WARNING

    resources = _example_resources(example)
    (cluster,) = [r for r in resources.values() if r["Type"] == "AWS::EKS::Cluster"]
    assert cluster["Properties"]["Version"] == "1.34"
    assert "1.34" in HYPERPOD_KUBERNETES_VERSIONS
    metadata = json.loads((example / "FmHyperPodEks.metadata.json").read_text())
    texts = json.dumps(metadata)
    assert KUBERNETES_VERSION_WARNING not in texts


def test_example_installs_hyperpod_addons_after_the_cluster(example):
    # FmHyperPodEks: task governance and the training operator (with cert-manager and the Pod Identity agent).
    resources = _example_resources(example)
    addons = {r["Properties"]["AddonName"]: r for r in resources.values() if r["Type"] == "AWS::EKS::Addon"}
    assert {
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-training-operator",
        "cert-manager",
        "eks-pod-identity-agent",
    } <= set(addons)
    (cluster_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::SageMaker::Cluster"]
    assert cluster_id in addons["amazon-sagemaker-hyperpod-training-operator"]["DependsOn"]
