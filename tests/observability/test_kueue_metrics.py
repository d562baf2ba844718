"""Kueue's metrics for the Queue dashboard: the managed scraper's opt-in ``kueue`` job (HTTPS to Kueue 0.19.2's
authenticated metrics Service with the scraper's own token), Kueue reporting its ClusterQueue quota series, and the
Queue dashboard's Kueue panels reading what the job collects."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.scheduling import KUEUE, kueue_configuration
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.observability.eks import AmpEksScraper, eks_scrape_config, scraper_rbac_manifests
from fmconstructs.observability.kueue_metrics import (
    KUEUE_METRICS_NAMESPACE,
    KUEUE_METRICS_PORT_NAME,
    KUEUE_METRICS_SERVICE,
    SCRAPER_TOKEN_FILE,
)
from fmconstructs.observability.metrics import KUEUE_METRICS
from fmconstructs.observability.workspace import PrometheusWorkspace

from tests.conftest import ENV, new_scene, require_tool

DASHBOARDS = Path(__file__).resolve().parents[2] / "fmconstructs" / "observability" / "dashboards"


def _jobs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {job["job_name"]: job for job in config["scrape_configs"]}


# --- the scrape job ---------------------------------------------------------------------------------------------------
def test_kueue_job_speaks_https_with_the_scraper_token() -> None:
    job = _jobs(eks_scrape_config(cluster_label="c", kueue=True))["kueue"]
    assert job["scheme"] == "https"
    assert job["bearer_token_file"] == "/var/run/secrets/kubernetes.io/serviceaccount/token" == SCRAPER_TOKEN_FILE
    assert job["tls_config"] == {"insecure_skip_verify": True}
    assert job["kubernetes_sd_configs"] == [{"role": "endpoints"}]
    keep = job["relabel_configs"][0]
    assert keep["action"] == "keep"
    assert keep["regex"] == "kueue-system;kueue-controller-manager-metrics-service;https"
    assert {"target_label": "cluster", "replacement": "c"} in job["relabel_configs"]


def test_kueue_job_is_opt_in() -> None:
    assert "kueue" not in _jobs(eks_scrape_config(cluster_label="c"))


def test_service_is_the_one_the_pinned_chart_installs() -> None:
    # Chart fullname = the release when it contains the chart name (charts/kueue/templates/_helpers.tpl, v0.19.2).
    assert KUEUE.release == "kueue" and KUEUE.chart in KUEUE.release
    assert f"{KUEUE.release}-controller-manager-metrics-service" == KUEUE_METRICS_SERVICE
    assert KUEUE.namespace == KUEUE_METRICS_NAMESPACE
    assert KUEUE_METRICS_PORT_NAME == "https"


def test_kueue_serves_metrics_on_8443_with_cluster_queue_resources() -> None:
    assert kueue_configuration()["metrics"] == {"bindAddress": ":8443", "enableClusterQueueResources": True}


def test_scraper_user_may_get_metrics_as_kueue_metrics_reader_allows() -> None:
    # kueue-metrics-reader (charts/kueue/templates/rbac/metrics_reader_role.yaml): nonResourceURLs /metrics, get.
    role = next(m for m in scraper_rbac_manifests() if m["kind"] == "ClusterRole")
    assert {"nonResourceURLs": ["/metrics"], "verbs": ["get"]} in role["rules"]


# --- promtool -----------------------------------------------------------------------------------------------------------
def _promtool_config(tmp_path: Path, targets: list[dict[str, Any]]) -> Path:
    config = eks_scrape_config(cluster_label="FmEksP5en", kueue=True)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "kueue"]
    token = tmp_path / "token"
    token.write_text("t")
    job["bearer_token_file"] = str(token)  # promtool checks that the file exists
    job.pop("kubernetes_sd_configs")  # Debian's promtool has no Kubernetes discovery: static targets stand in
    job["static_configs"] = targets
    path = tmp_path / "scrape.yml"
    path.write_text(yaml.safe_dump({"global": config["global"], "scrape_configs": [job]}))
    return path


def _meta(namespace: str, service: str, port: str, address: str) -> dict[str, Any]:
    return {
        "targets": [address],
        "labels": {
            "__meta_kubernetes_namespace": namespace,
            "__meta_kubernetes_service_name": service,
            "__meta_kubernetes_endpoint_port_name": port,
            "__meta_kubernetes_pod_name": "kueue-controller-manager-0",
        },
    }


def test_kueue_job_passes_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    path = _promtool_config(tmp_path, [_meta("kueue-system", KUEUE_METRICS_SERVICE, "https", "10.0.0.5:8443")])
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_kueue_job_keeps_only_the_metrics_port_of_kueues_service(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    targets = [
        _meta("kueue-system", KUEUE_METRICS_SERVICE, "https", "10.0.0.5:8443"),
        _meta("kueue-system", "kueue-webhook-service", "https", "10.0.0.5:9443"),
        _meta("other", KUEUE_METRICS_SERVICE, "https", "10.0.0.6:8443"),
        _meta("kueue-system", KUEUE_METRICS_SERVICE, "metrics", "10.0.0.7:8080"),
    ]
    path = _promtool_config(tmp_path, targets)
    proc = subprocess.run(
        [promtool, "check", "service-discovery", "--timeout=5s", str(path), "kueue"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = [t for t in json.loads(proc.stdout) if t.get("labels")]
    assert [t["labels"]["__address__"] for t in kept] == ["10.0.0.5:8443"]
    assert kept[0]["labels"]["__scheme__"] == "https"
    assert kept[0]["labels"]["cluster"] == "FmEksP5en" and kept[0]["labels"]["pod"] == "kueue-controller-manager-0"


# --- the scraper construct ------------------------------------------------------------------------------------------------
def _scraper(**kwargs: Any) -> AmpEksScraper:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    return AmpEksScraper(
        scene.stack,
        "Scraper",
        cluster=cluster,
        workspace=PrometheusWorkspace(cdk.Stack(scene.app, "Metrics", env=ENV), "P"),
        cluster_label="eks-training",
        install_node_exporter=False,
        install_kube_state_metrics=False,
        **kwargs,
    )


def _blob_jobs(scraper: AmpEksScraper) -> dict[str, dict[str, Any]]:
    blob = scraper.resource.scrape_configuration
    encoded = blob.configuration_blob  # type: ignore[union-attr]
    return _jobs(yaml.safe_load(base64.b64decode(encoded)))


def test_scraper_with_scrape_kueue_carries_the_job() -> None:
    jobs = _blob_jobs(_scraper(scrape_kueue=True))
    assert jobs["kueue"]["scheme"] == "https"
    assert {"target_label": "cluster", "replacement": "eks-training"} in jobs["kueue"]["relabel_configs"]


def test_scraper_default_has_no_kueue_job() -> None:
    assert "kueue" not in _blob_jobs(_scraper())


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_bad_scrape_kueue(value: object) -> None:
    with pytest.raises((FmValidationError, FmTypeError), match=r"^scrape_kueue"):
        _scraper(scrape_kueue=value)


@pytest.mark.parametrize("value", ["true", 0])
def test_bad_kueue_flag_of_the_config(value: object) -> None:
    with pytest.raises((FmValidationError, FmTypeError), match=r"^kueue"):
        eks_scrape_config(cluster_label="c", kueue=value)  # type: ignore[arg-type]


# --- the Queue dashboard reads what the job collects ------------------------------------------------------------------------
def test_queue_dashboard_kueue_panels_read_the_scraped_series_by_cluster() -> None:
    dashboard = json.loads((DASHBOARDS / "queue.json").read_text())
    assert dashboard["uid"] == "fm-queue"
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", []) if "kueue_" in t["expr"]]
    assert {m for m in KUEUE_METRICS if any(m in e for e in exprs)} == set(KUEUE_METRICS)
    assert all('cluster=~"$cluster"' in e for e in exprs)
