"""EKS "from GPU to job": dcgm-exporter pod attribution, kube-state-metrics with the team/job label allowlist, the
managed scraper keeping those labels, and the ``fm-app`` application-metrics job (issue 22, sections 1 and 3)."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import aws_cdk as cdk
import kubernetes_validate
import pytest
import yaml
from aws_cdk.assertions import Template

from examples.eks_stack import EksStack
from fmconstructs import FmValidationError
from fmconstructs.eks import GpuEksCluster, render_sample_training_job
from fmconstructs.eks.addons import ChartSource, dcgm_exporter_values
from fmconstructs.eks.versions import DEFAULT_KUBERNETES_VERSION
from fmconstructs.errors import FmTypeError
from fmconstructs.observability.eks import AmpEksScraper, eks_scrape_config, scraper_rbac_manifests
from fmconstructs.observability.eks_attribution import (
    KUBE_STATE_METRICS,
    app_metrics_annotations,
    kube_state_metrics_values,
)
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import ENV, new_app, new_scene, require_tool
from tests.support.eks_job_attribution import _relabel
from tests.support.eks_kueue import validate as validate_jobset

K8S = DEFAULT_KUBERNETES_VERSION.version
ALLOWLIST = (
    "namespaces=[team],pods=[team,batch.kubernetes.io/job-name,jobset.sigs.k8s.io/jobset-name,"
    "fmconstructs.io/model-server]"
)
#: Top-level keys of charts/kube-state-metrics/values.yaml at prometheus-community/helm-charts tag
#: kube-state-metrics-8.4.0 (the ones this library may set).
KSM_CHART_KEYS = {
    "prometheusScrape", "image", "imagePullSecrets", "global", "replicas", "extraArgs", "service", "rbac",
    "securityContext", "containerSecurityContext", "nodeSelector", "affinity", "tolerations", "podAnnotations",
    "podLabels", "metricAllowlist", "metricDenylist", "metricLabelsAllowlist", "metricAnnotationsAllowList",
    "collectors", "collectorsExclude", "collectorsExtra", "namespaces", "resources",
}  # fmt: skip


@pytest.fixture(scope="module")
def fm_eks_p5en() -> tuple[EksStack, Template]:
    app = new_app()
    workspace = PrometheusWorkspace(cdk.Stack(app, "Obs"), "Workspace")
    stack = EksStack(app, "FmEksP5en", workspace=workspace)
    return stack, Template.from_stack(stack)


def _charts(template: Template) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["Chart"]: r["Properties"]
        for r in template.find_resources("Custom::AWSCDK-EKS-HelmChart").values()
    }


def _scrape_config(template: Template) -> dict[str, Any]:
    import base64

    (scraper,) = template.find_resources("AWS::APS::Scraper").values()
    blob = scraper["Properties"]["ScrapeConfiguration"]["ConfigurationBlob"]
    return yaml.safe_load(base64.b64decode(blob))


def _jobs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["job_name"]: job for job in config["scrape_configs"]}


# --- 1. dcgm-exporter: namespace, pod, container on every GPU series --------------------------------------------------
def test_fm_eks_p5en_dcgm_exporter_maps_gpus_to_pods(fm_eks_p5en):
    _, template = fm_eks_p5en
    values = json.loads(_charts(template)["dcgm-exporter"]["Values"])
    assert values["arguments"] == [
        "-f",
        "/etc/dcgm-exporter/default-counters.csv",
        "--kubernetes=true",
        "--kubernetes-gpu-id-type=uid",
    ]
    assert values["kubeletPath"] == "/var/lib/kubelet/pod-resources"  # the chart mounts it read-only
    # every pod label on GPU series would be unbounded: team/job come from kube-state-metrics instead
    assert values["kubernetes"] == {"enablePodLabels": False, "enablePodUID": False}


def test_pod_attribution_survives_the_hyperpod_widening():
    values = dcgm_exporter_values(hyperpod_instance_types=["ml.p5en.48xlarge"])
    assert "--kubernetes=true" in values["arguments"] and "affinity" in values


def test_dcgm_job_keeps_the_exporters_pod_labels(fm_eks_p5en):
    _, template = fm_eks_p5en
    dcgm = _jobs(_scrape_config(template))["dcgm"]
    assert dcgm["honor_labels"] is True
    written = {r.get("target_label") for r in dcgm["relabel_configs"]}
    assert not written & {"namespace", "pod", "container"}
    assert not any(r.get("action") == "labelmap" for r in dcgm["relabel_configs"])


# --- 2. kube-state-metrics ----------------------------------------------------------------------------------------------
def test_fm_eks_p5en_installs_pinned_kube_state_metrics_with_the_label_allowlist(fm_eks_p5en):
    _, template = fm_eks_p5en
    ksm = _charts(template)["kube-state-metrics"]
    assert (ksm["Repository"], ksm["Version"]) == ("https://prometheus-community.github.io/helm-charts", "8.4.0")
    assert (ksm["Namespace"], ksm["Release"]) == ("kube-state-metrics", "kube-state-metrics")
    values = json.loads(ksm["Values"])
    # templates/deployment.yaml: --metric-labels-allowlist={{ .Values.metricLabelsAllowlist | join "," }}
    assert ",".join(values["metricLabelsAllowlist"]) == ALLOWLIST
    assert values["collectors"] == ["pods", "namespaces", "nodes", "jobs"]  # bounded: four collectors
    assert values["prometheusScrape"] is True
    assert set(values) <= KSM_CHART_KEYS


def test_kube_state_metrics_job_keeps_object_labels(fm_eks_p5en):
    _, template = fm_eks_p5en
    ksm = _jobs(_scrape_config(template))["kube-state-metrics"]
    assert ksm["honor_labels"] is True
    assert ksm["kubernetes_sd_configs"] == [{"role": "endpoints"}]
    assert {"source_labels": ["__meta_kubernetes_service_name"], "action": "keep", "regex": "kube-state-metrics"} in (
        ksm["relabel_configs"]
    )
    # kube_pod_info{node=...} is about the pod, not the exporter's node
    assert not {r.get("target_label") for r in ksm["relabel_configs"]} & {"namespace", "pod", "node", "instance"}


def test_private_mirror_splits_registry_and_repository():
    """The chart builds its image from image.registry + image.repository (templates/_helpers.tpl)."""
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    mirror = "111122223333.dkr.ecr.us-east-1.amazonaws.com/kube-state-metrics/kube-state-metrics"
    source = ChartSource.oci("oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/charts/kube-state-metrics")
    AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "P"),
        cluster_label="eks-training",
        kube_state_metrics_source=source.with_image(mirror),
    )
    ksm = _charts(Template.from_stack(scene.stack))["kube-state-metrics"]
    assert ksm["Repository"] == source.repository
    assert json.loads(ksm["Values"])["image"] == {
        "registry": "111122223333.dkr.ecr.us-east-1.amazonaws.com",
        "repository": "kube-state-metrics/kube-state-metrics",
        "tag": "v2.20.0",
    }


def test_without_kube_state_metrics_no_chart_is_installed():
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    scraper = AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "P"),
        cluster_label="eks-training",
        install_kube_state_metrics=False,
    )
    assert scraper.kube_state_metrics is None
    assert "kube-state-metrics" not in _charts(Template.from_stack(scene.stack))


def test_kube_state_metrics_pin_is_the_default_version():
    assert (KUBE_STATE_METRICS.chart, KUBE_STATE_METRICS.version) == ("kube-state-metrics", "8.4.0")
    assert "image" not in kube_state_metrics_values()


POD = {
    "__address__": "10.0.3.7:29500",
    "__metrics_path__": "/metrics",
    "__meta_kubernetes_namespace": "training",
    "__meta_kubernetes_pod_name": "fm-train-workers-0-0-abcde",
    "__meta_kubernetes_pod_ip": "10.0.3.7",
    "__meta_kubernetes_pod_node_name": "ip-10-0-3-7.ec2.internal",
    "__meta_kubernetes_pod_phase": "Running",
}


def _annotated(**annotations: str) -> dict[str, str]:
    meta = {"__meta_kubernetes_pod_annotation_" + re.sub(r"[^A-Za-z0-9_]", "_", k): v for k, v in annotations.items()}
    return {**POD, **meta}


def test_fm_app_scrapes_annotated_pods_with_namespace_and_pod(fm_eks_p5en):
    _, template = fm_eks_p5en
    job = _jobs(_scrape_config(template))["fm-app"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}] and job["honor_labels"] is False
    pod = _annotated(**app_metrics_annotations(port=8000))
    target = _relabel(job["relabel_configs"], pod)
    assert target is not None
    assert target["__address__"] == "10.0.3.7:8000"
    assert target["__metrics_path__"] == "/metrics"
    assert (target["namespace"], target["pod"], target["cluster"]) == (
        "training",
        "fm-train-workers-0-0-abcde",
        "FmEksP5en",
    )


def test_fm_app_uses_the_declared_path():
    job = _jobs(eks_scrape_config(cluster_label="c"))["fm-app"]
    target = _relabel(job["relabel_configs"], _annotated(**app_metrics_annotations(port=9100, path="/stats")))
    assert target is not None and target["__metrics_path__"] == "/stats"


@pytest.mark.parametrize(
    "pod",
    [
        POD,  # not annotated
        _annotated(**{"fmconstructs.io/scrape": "false", "fmconstructs.io/port": "8000"}),
        _annotated(**{"fmconstructs.io/scrape": "true"}),  # no port
        {**_annotated(**app_metrics_annotations(port=8000)), "__meta_kubernetes_pod_phase": "Succeeded"},
    ],
    ids=["plain", "opted-out", "no-port", "finished"],
)
def test_fm_app_ignores_pods_that_do_not_opt_in(pod):
    job = _jobs(eks_scrape_config(cluster_label="c"))["fm-app"]
    assert _relabel(job["relabel_configs"], pod) is None


def test_scraper_rbac_allows_cluster_wide_pod_discovery():
    role = next(m for m in scraper_rbac_manifests() if m["kind"] == "ClusterRole")
    core = next(r for r in role["rules"] if r.get("apiGroups") == [""])
    assert {"pods", "services", "endpoints"} <= set(core["resources"])
    assert {"list", "watch"} <= set(core["verbs"])
    binding = next(m for m in scraper_rbac_manifests() if m["kind"] == "ClusterRoleBinding")
    assert binding["roleRef"]["kind"] == "ClusterRole"
    for manifest in scraper_rbac_manifests():
        assert kubernetes_validate.validate(manifest, K8S, strict=True) == K8S


def test_attribution_scrape_config_passes_promtool(tmp_path):
    """promtool (Debian, built without Kubernetes discovery) checks the jobs with a static target in place of
    kubernetes_sd_configs, whose roles are checked here."""
    promtool = require_tool("promtool", "prometheus")
    config = eks_scrape_config(cluster_label="FmEksP5en")
    roles = {}
    for job in config["scrape_configs"]:
        (sd,) = job.pop("kubernetes_sd_configs")
        roles[job["job_name"]] = sd["role"]
        job["static_configs"] = [{"targets": ["localhost:9100"]}]
    assert roles["fm-app"] == "pod" and roles["kube-state-metrics"] == roles["dcgm"] == "endpoints"
    path = tmp_path / "scrape.yml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- 4. the sample training job ----------------------------------------------------------------------------------------
def test_sample_job_demonstrates_attribution():
    job = render_sample_training_job(
        instance_type="p5en.48xlarge", nodes=2, image="img:1", namespace="training", team="llm", metrics_port=8000
    )
    validate_jobset(job)
    assert job["metadata"]["labels"]["team"] == "llm"
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["labels"] == {"team": "llm"}
    assert pod["metadata"]["annotations"]["fmconstructs.io/scrape"] == "true"
    assert pod["metadata"]["annotations"]["fmconstructs.io/port"] == "8000"
    assert "fmconstructs.io/path" not in pod["metadata"]["annotations"]  # default /metrics
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "metrics", "containerPort": 8000}]


# --- bad input ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"team": "Team A"}, "team"),
        ({"team": "-llm"}, "team"),
        ({"team": "x" * 64}, "team"),
        ({"team": ""}, "team"),
        ({"metrics_port": 0}, "metrics_port"),
        ({"metrics_port": 65536}, "metrics_port"),
        ({"metrics_port": True}, "metrics_port"),
        ({"metrics_port": 8000, "metrics_path": "metrics"}, "metrics_path"),
        ({"metrics_port": 8000, "metrics_path": "/a b"}, "metrics_path"),
    ],
)
def test_sample_job_refuses_bad_attribution(overrides, parameter):
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{parameter}"):
        render_sample_training_job(instance_type="p5en.48xlarge", nodes=2, image="img:1", **overrides)


@pytest.mark.parametrize(
    ("overrides", "parameter"),
    [
        ({"install_kube_state_metrics": 1}, "install_kube_state_metrics"),
        ({"kube_state_metrics_source": "oci://x/y/kube-state-metrics"}, "kube_state_metrics_source"),
        ({"kube_state_metrics_source": ChartSource.oci("oci://r.example/charts/other")}, "source"),
    ],
)
def test_scraper_refuses_bad_kube_state_metrics_options(overrides, parameter):
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises((FmValidationError, FmTypeError), match=rf"^{parameter}"):
        AmpEksScraper(
            scene.stack,
            "Scraper",
            cluster=cluster,
            workspace=PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "P"),
            cluster_label="eks-training",
            **overrides,
        )
