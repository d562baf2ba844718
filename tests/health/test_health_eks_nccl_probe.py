"""The EKS queue probe: the metrics pod lists the MPIJob's worker pods (exactly the RBAC for that) and serves
``fm_nccl_check_deferred`` 1 while a worker waits for GPUs that other pods hold. Run against a fake Kubernetes API."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.health import NcclCheckSpec, render_scheduled_nccl_manifests
from fmconstructs.health.nccl_metrics_server import workers_deferred

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:cuda13.1.2-efa1.50.0-testsv2.20.0"
MANIFESTS = render_scheduled_nccl_manifests(
    NcclCheckSpec(nodes=2), image=IMAGE, instance_type="p5.48xlarge", results_claim="fsx-claim", namespace="ml"
)


def _kind(kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in MANIFESTS if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def _pending(message: str, reason: str = "Unschedulable") -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
    return {
        "metadata": {"name": "fm-nccl-allreduce-worker-0"},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


GPUS_HELD = "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity."


@pytest.mark.parametrize(
    ("pods", "deferred"),
    [
        ([_pending(GPUS_HELD)], True),
        ([_pending("0/2 nodes are available: 2 Insufficient vpc.amazonaws.com/efa.")], True),
        # unschedulable for another reason (a taint, no node of the type): not waiting behind a job
        ([_pending("0/2 nodes are available: 2 node(s) had untolerated taint {fmconstructs/node-checks: }.")], False),
        ([{"status": {"phase": "Running"}}], False),
        ([{"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}}], False),
        ([], False),
    ],
)
def test_deferred_only_while_other_pods_hold_the_gpus(pods: list[dict[str, Any]], deferred: bool) -> None:
    assert workers_deferred({"kind": "PodList", "items": pods}) is deferred


def test_the_metrics_pod_may_list_pods_and_nothing_else() -> None:
    role = _kind("Role", "fm-nccl-metrics")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    binding = _kind("RoleBinding", "fm-nccl-metrics")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "fm-nccl-metrics", "namespace": "ml"}]
    pod = _kind("Deployment", "fm-nccl-metrics")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "fm-nccl-metrics"
    args = pod["containers"][0]["args"]
    assert args[2:] == ["--probe-job", "fm-nccl-allreduce", "--probe-namespace", "ml"]


class FakeApi:
    """A Kubernetes API that answers the pod list with ``self.pods`` (or ``self.status``) and records the requests."""

    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []
        self.status = 200
        self.requests: list[tuple[str, str | None]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                api.requests.append((self.path, self.headers.get("Authorization")))
                body = json.dumps({"kind": "PodList", "items": api.pods}).encode()
                self.send_response(api.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi()
    yield fake
    fake.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metrics(url: str) -> str:
    for _ in range(100):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return str(response.read().decode())
        except urllib.error.URLError:
            time.sleep(0.05)
    raise AssertionError(f"no answer from {url}")


def test_the_metrics_pod_serves_the_probe_next_to_the_report(tmp_path: Path, api: FakeApi) -> None:
    # GIVEN the metrics pod's command and arguments from the manifests, the API and the token file local
    config = _kind("ConfigMap", "fm-nccl-allreduce-report")["data"]
    server_script = tmp_path / "nccl_metrics_server.py"
    server_script.write_text(config["nccl_metrics_server.py"])
    (tmp_path / "fm_nccl.prom").write_text("fm_nccl_last_run_success 1\n")
    (tmp_path / "token").write_text("sa-token\n")
    container = _kind("Deployment", "fm-nccl-metrics")["spec"]["template"]["spec"]["containers"][0]
    port = _free_port()
    args = [str(tmp_path / "fm_nccl.prom"), str(port), *container["args"][2:]]
    command = [sys.executable, "-I", str(server_script), *args, "--api-url", api.url]
    server = subprocess.Popen([*command, "--token-file", str(tmp_path / "token")])
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        # WHEN a worker waits for GPUs a training job holds THEN deferred
        api.pods = [_pending(GPUS_HELD)]
        body = _metrics(url)
        assert body.startswith("fm_nccl_last_run_success 1\n")
        assert "fm_nccl_check_deferred 1\n" in body and "fm_nccl_queue_probe_success 1\n" in body
        # WHEN the workers run THEN not deferred
        api.pods = [{"status": {"phase": "Running"}}]
        assert "fm_nccl_check_deferred 0\n" in _metrics(url)
        # WHEN the API fails THEN the probe says it could not look (never "deferred")
        api.status, api.pods = 503, [_pending(GPUS_HELD)]
        body = _metrics(url)
        assert "fm_nccl_check_deferred 0\n" in body and "fm_nccl_queue_probe_success 0\n" in body
    finally:
        server.terminate()
        server.wait(timeout=10)
    path, authorization = api.requests[0]
    assert authorization == "Bearer sa-token"
    parsed = urllib.parse.urlsplit(path)
    assert parsed.path == "/api/v1/namespaces/ml/pods"
    assert urllib.parse.parse_qs(parsed.query) == {
        "labelSelector": ["training.kubeflow.org/job-name=fm-nccl-allreduce,training.kubeflow.org/job-role=worker"]
    }


@pytest.mark.parametrize(
    "args",
    [
        ["only-a-file"],
        ["f", "port"],
        ["f", "0"],
        ["f", "9403", "--probe-job", "x"],
        ["f", "9403", "--probe-namespace", "x"],
    ],
)
def test_the_metrics_server_refuses_bad_arguments(tmp_path: Path, args: list[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text(_kind("ConfigMap", "fm-nccl-allreduce-report")["data"]["nccl_metrics_server.py"])
    proc = subprocess.run([sys.executable, "-I", str(script), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage" in proc.stderr
