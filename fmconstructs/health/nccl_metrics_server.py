#!/usr/bin/env python3
"""Serve the NCCL check's metrics file on ``/metrics`` (EKS: the workspace's managed scraper reads it), with the EKS
queue probe.

``nccl_metrics_server.py FILE PORT [--probe-job NAME --probe-namespace NS]``. Standard library only (it runs in a stock
``python`` image from a ConfigMap). The file is read on every request, so the latest report (written atomically by
:mod:`.nccl_report`) is served; a missing file (no run yet) is an empty exposition, not an error, so the target stays
up before the first run. The content type is the Prometheus text format's (``text/plain; version=0.0.4``: Prometheus
"Exposition formats").

Queue probe (with ``--probe-job``): on each request, the check's worker pods are listed through the Kubernetes API
(``GET /api/v1/namespaces/NS/pods`` with ``labelSelector`` ``training.kubeflow.org/job-name=NAME,
training.kubeflow.org/job-role=worker``: the labels kubeflow/mpi-operator puts on an MPIJob's workers, its
``defaultLabels``), with the pod's service account token (in-cluster: ``/var/run/secrets/kubernetes.io/serviceaccount``
``token`` and ``ca.crt``, the API at ``https://kubernetes.default.svc``). The check is *deferred* when a worker is
Pending with condition ``PodScheduled`` False, reason ``Unschedulable``, for ``Insufficient nvidia.com/gpu`` or
``Insufficient vpc.amazonaws.com/efa`` (kube-scheduler's NodeResourcesFit message): other pods hold the GPUs. The
three metrics are :mod:`.nccl_report`'s queue metrics (``fm_nccl_check_deferred``, the probe's time and success);
``tests/health/test_health_metrics.py`` keeps the names equal.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CHECK_DEFERRED = "fm_nccl_check_deferred"
QUEUE_PROBE_TIME = "fm_nccl_queue_probe_timestamp_seconds"
QUEUE_PROBE_SUCCESS = "fm_nccl_queue_probe_success"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
IN_CLUSTER_API = "https://kubernetes.default.svc"
#: kube-scheduler NodeResourcesFit: "Insufficient <resource>" for a resource other pods hold.
HELD_RESOURCES = ("Insufficient nvidia.com/gpu", "Insufficient vpc.amazonaws.com/efa")


def workers_deferred(pods: dict[str, object]) -> bool:
    """Whether a worker of a ``PodList`` waits for GPUs or EFA interfaces that other pods hold."""
    items = pods.get("items")
    for pod in items if isinstance(items, list) else []:
        status = pod.get("status", {}) if isinstance(pod, dict) else {}
        if status.get("phase") != "Pending":
            continue
        for condition in status.get("conditions") or []:
            if (
                condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("reason") == "Unschedulable"
                and any(text in str(condition.get("message", "")) for text in HELD_RESOURCES)
            ):
                return True
    return False


class WorkerProbe:
    """Lists the check's worker pods through the Kubernetes API (see the module docstring)."""

    def __init__(self, *, namespace: str, job: str, api: str, token_file: Path, ca_file: Path | None) -> None:
        selector = f"training.kubeflow.org/job-name={job},training.kubeflow.org/job-role=worker"
        query = urllib.parse.urlencode({"labelSelector": selector})
        self.url = f"{api.rstrip('/')}/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods?{query}"
        self.token_file = token_file
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file is not None else None

    def __call__(self) -> bool | None:
        """Deferred or not; None when the API cannot be asked."""
        try:
            token = self.token_file.read_text().strip()
            request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=5, context=self.context) as response:
                return workers_deferred(json.loads(response.read()))
        except (OSError, ValueError) as error:
            print(f"fmconstructs nccl: queue probe: {error}", file=sys.stderr)
            return None


def render_probe(deferred: bool | None, now: float) -> str:
    """The queue probe's three gauges (the same text as :func:`.nccl_report.render_probe`)."""
    lines = []
    for name, help_text, value in (
        (CHECK_DEFERRED, "1 while the NCCL check waits for nodes that other jobs hold.", f"{int(bool(deferred))}"),
        (QUEUE_PROBE_TIME, "Unix time the NCCL queue probe last looked.", f"{now:.0f}"),
        (QUEUE_PROBE_SUCCESS, "1 if the NCCL queue probe could read the queue.", f"{int(deferred is not None)}"),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value}"]
    return "\n".join(lines) + "\n"


def handler(metrics_file: Path, probe: Callable[[], bool | None] | None = None) -> type[BaseHTTPRequestHandler]:
    """A request handler serving ``metrics_file`` (and the probe's gauges) on ``GET /metrics`` and 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404)
                return
            try:
                body = metrics_file.read_bytes()
            except FileNotFoundError:
                body = b""
            if probe is not None:
                body += render_probe(probe(), time.time()).encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: one line per scrape would fill the pod's log."""

    return Handler


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="nccl_metrics_server.py", description="serve the NCCL check's metrics")
    parser.add_argument("file", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--probe-job", help="the check's MPIJob name: probe its worker pods")
    parser.add_argument("--probe-namespace", help="the MPIJob's namespace")
    parser.add_argument("--api-url", default=IN_CLUSTER_API)
    parser.add_argument("--token-file", type=Path, default=SERVICE_ACCOUNT / "token")
    parser.add_argument("--ca-file", type=Path, default=SERVICE_ACCOUNT / "ca.crt")
    args = parser.parse_args(argv)
    if (args.probe_job is None) != (args.probe_namespace is None):
        parser.error("--probe-job and --probe-namespace go together")
    if not 0 < args.port < 65536:
        parser.error(f"port must be from 1 to 65535, got {args.port}")
    return args


def main(argv: list[str]) -> int:
    args = _arguments(argv[1:])
    probe = None
    if args.probe_job is not None:
        ca_file = args.ca_file if args.api_url.startswith("https:") else None
        probe = WorkerProbe(
            namespace=args.probe_namespace,
            job=args.probe_job,
            api=args.api_url,
            token_file=args.token_file,
            ca_file=ca_file,
        )
    server = ThreadingHTTPServer(("", args.port), handler(args.file, probe))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
