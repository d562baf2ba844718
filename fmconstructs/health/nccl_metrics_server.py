#!/usr/bin/env python3
"""Serve the NCCL check's metrics file on ``/metrics`` (EKS: the workspace's managed scraper reads it).

``nccl_metrics_server.py FILE PORT``. Standard library only (it runs in a stock ``python`` image from a ConfigMap).
The file is read on every request, so the latest report (written atomically by :mod:`.nccl_report`) is served; a
missing file (no run yet) is an empty exposition, not an error, so the target stays up before the first run. The
content type is the Prometheus text format's (``text/plain; version=0.0.4``: Prometheus "Exposition formats").
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def handler(metrics_file: Path) -> type[BaseHTTPRequestHandler]:
    """A request handler serving ``metrics_file`` on ``GET /metrics`` and 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404)
                return
            try:
                body = metrics_file.read_bytes()
            except FileNotFoundError:
                body = b""
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: one line per scrape would fill the pod's log."""

    return Handler


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        print("usage: nccl_metrics_server.py FILE PORT", file=sys.stderr)
        return 2
    server = ThreadingHTTPServer(("", int(argv[2])), handler(Path(argv[1])))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
