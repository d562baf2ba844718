"""EKS collection: the managed scraper, its scrape configuration (promtool) and manifests (Kubernetes schemas)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess

import aws_cdk as cdk
import kubernetes_validate
import pytest
import yaml
from aws_cdk.assertions import Template

from fmconstructs import FmValidationError
from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.versions import DEFAULT_KUBERNETES_VERSION
from fmconstructs.health.metric_names import NODE_EXPORTER_TEXTFILE_DIR
from fmconstructs.observability.collection import NODE_LIFECYCLE_SCRIPT
from fmconstructs.observability.eks import (
    SCRAPER_USERNAME,
    AmpEksScraper,
    eks_scrape_config,
    node_exporter_manifests,
    scraper_rbac_manifests,
)
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import ENV, new_scene

K8S = DEFAULT_KUBERNETES_VERSION.version


@pytest.fixture(scope="module")
def scraped():
    scene = new_scene()
    metrics = cdk.Stack(scene.app, "Metrics", env=ENV)
    workspace = PrometheusWorkspace(metrics, "Prometheus")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    scraper = AmpEksScraper(scene.stack, "Scraper", cluster=cluster, workspace=workspace, cluster_label="eks-training")
    return Template.from_stack(scene.stack), scene.stack, scraper


def test_scrape_config_passes_promtool(tmp_path):
    """Debian's promtool is built without Kubernetes service discovery ("field kubernetes_sd_configs not found"),
    so promtool checks everything else (global, jobs, relabelling) with a static target in its place, and the
    service-discovery block is checked against its documented fields here."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it"
    config = eks_scrape_config(cluster_label="eks-training")
    for job in config["scrape_configs"]:
        role = "pod" if job["job_name"] == "fm-app" else "endpoints"  # fm-app: pod discovery (annotations)
        assert job.pop("kubernetes_sd_configs") == [{"role": role}]
        job["static_configs"] = [{"targets": ["localhost:9100"]}]
    path = tmp_path / "scrape.yml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_scraper_resource(scraped):
    template, _, _ = scraped
    props = next(iter(template.find_resources("AWS::APS::Scraper").values()))["Properties"]
    assert "Fn::ImportValue" in str(props["Destination"]["AmpConfiguration"]["WorkspaceArn"])
    eks = props["Source"]["EksConfiguration"]
    assert eks["SubnetIds"] == ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
    assert len(eks["SecurityGroupIds"]) == 1
    blob = yaml.safe_load(base64.b64decode(props["ScrapeConfiguration"]["ConfigurationBlob"]))
    assert blob == eks_scrape_config(cluster_label="eks-training")
    assert {job["job_name"] for job in blob["scrape_configs"]} == {
        "dcgm",
        "node",
        "nccl",
        "kube-state-metrics",
        "fm-app",
    }


def test_access_entry_maps_the_scraper_role_to_its_user(scraped):
    template, stack, scraper = scraped
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "Username": SCRAPER_USERNAME,
            "PrincipalArn": stack.resolve(scraper.resource.attr_role_arn),
            "Type": "STANDARD",
        },
    )


def test_manifests_are_applied(scraped):
    template, _, _ = scraped
    manifests = [
        str(r["Properties"]["Manifest"])
        for r in template.find_resources("Custom::AWSCDK-EKS-KubernetesResource").values()
    ]
    assert any("aps-collector-role" in m for m in manifests)
    assert any("fm-node-exporter" in m and "efa_textfile.py" in m for m in manifests)


@pytest.mark.parametrize("manifest", [*scraper_rbac_manifests(), *node_exporter_manifests()], ids=lambda m: m["kind"])
def test_manifests_validate_against_kubernetes_schemas(manifest):
    assert kubernetes_validate.validate(manifest, K8S, strict=True) == K8S


def test_daemonset_runs_non_root_and_tolerates_gpu_taints():
    ds = next(m for m in node_exporter_manifests() if m["kind"] == "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]
    for container in spec["containers"]:
        assert container["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert all(v.get("readOnly") for c in spec["containers"] for v in c["volumeMounts"] if v["name"] in ("root", "sys"))


def test_collector_pod_publishes_the_clean_shutdown_marker_before_it_ends():
    """EKS scale-in: graceful node shutdown (EKS AL2023 AMIs from Kubernetes 1.34, amazon-eks-ami nodeadm) runs the
    pods' preStop hooks; the sidecar writes fm_node_shutting_down 1 and waits a scrape interval and a margin while
    node exporter keeps serving it, so the managed scraper collects it and NodeStoppedReporting stays quiet."""
    manifests = node_exporter_manifests(scrape_interval="30s")
    config_map = next(m for m in manifests if m["kind"] == "ConfigMap")
    assert config_map["data"]["node_lifecycle.sh"] == NODE_LIFECYCLE_SCRIPT
    spec = next(m for m in manifests if m["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    sidecar, exporter = containers["efa-collector"], containers["node-exporter"]
    marker = "/textfile/fm_node_lifecycle.prom"
    assert sidecar["args"][0].startswith(f"sh /scripts/node_lifecycle.sh start {marker};")
    assert sidecar["lifecycle"]["preStop"]["exec"]["command"] == [
        "sh",
        "/scripts/node_lifecycle.sh",
        "stop",
        marker,
        "60",
    ]
    assert exporter["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "60"]
    assert spec["terminationGracePeriodSeconds"] > 60
    # kubelet gives pods without a critical priority class 2 of the AMI's 2m30s shutdownGracePeriod
    assert spec["terminationGracePeriodSeconds"] <= 120 and "priorityClassName" not in spec
    service = next(m for m in manifests if m["kind"] == "Service")
    assert service["spec"]["publishNotReadyAddresses"] is True  # a terminating pod stays a target meanwhile


def test_scraper_sizes_the_shutdown_wait_to_its_scrape_interval():
    scene = new_scene()
    metrics = cdk.Stack(scene.app, "Metrics", env=ENV)
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=PrometheusWorkspace(metrics, "Prometheus"),
        cluster_label="eks-training",
        scrape_interval="15s",
    )
    resources = Template.from_stack(scene.stack).find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    applied = [m for r in resources.values() for m in json.loads(r["Properties"]["Manifest"])]
    spec = next(m for m in applied if m["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    sidecar = next(c for c in spec["containers"] if c["name"] == "efa-collector")
    assert sidecar["lifecycle"]["preStop"]["exec"]["command"][-1] == "45"  # 15 s interval + 30 s


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cluster_label": "bad label"}, r"cluster_label must be 1-128 letters"),
        ({"cluster_label": "ok", "scrape_interval": "30m1h"}, r"scrape_interval must be a Prometheus duration"),
    ],
)
def test_invalid_scrape_config(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        eks_scrape_config(**kwargs)


def test_node_exporter_reads_the_hosts_textfile_directory_read_only():
    """The textfile directory is the host's (hostPath, DirectoryOrCreate), where the EKS node-check gate writes
    fm_node_checks_boot.prom; node exporter mounts it read-only, the EFA collector writes into it."""
    spec = next(m for m in node_exporter_manifests() if m["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    volume = next(v for v in spec["volumes"] if v["name"] == "textfile")
    assert volume == {"name": "textfile", "hostPath": {"path": NODE_EXPORTER_TEXTFILE_DIR, "type": "DirectoryOrCreate"}}
    containers = {c["name"]: c for c in spec["containers"]}
    exporter = containers["node-exporter"]
    assert "--collector.textfile.directory=/textfile" in exporter["args"]
    assert {"name": "textfile", "mountPath": "/textfile", "readOnly": True} in exporter["volumeMounts"]
    assert {"name": "textfile", "mountPath": "/textfile"} in containers["efa-collector"]["volumeMounts"]


def test_only_the_textfile_owner_runs_as_root_and_only_chowns():
    """The collector (uid 65534) cannot write a directory the kubelet creates root-owned 0755: an init container
    hands it over, with CAP_CHOWN and nothing else."""
    spec = next(m for m in node_exporter_manifests() if m["kind"] == "DaemonSet")["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    assert init["command"] == ["chown", "65534:65534", "/textfile"]
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    assert init["securityContext"]["allowPrivilegeEscalation"] is False
    assert all(c["securityContext"]["runAsUser"] == 65534 for c in spec["containers"])
