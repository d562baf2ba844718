"""Helpers of tests/cli/test_fmc_usage.py that other test modules use too."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REGION = "us-east-1"
P5 = "p5.48xlarge"


class FakeWorkspace:
    """Answers ``POST .../api/v1/query`` with :attr:`result`; 403 without a SigV4 ``aps`` header; records forms."""

    def __init__(self) -> None:
        self.result: list[dict[str, Any]] = []
        self.status = 200
        self.error_body = b"<html>oops</html>"
        self.forms: list[dict[str, list[str]]] = []
        self.authorizations: list[str] = []
        workspace = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                workspace.forms.append(urllib.parse.parse_qs(self.rfile.read(length).decode()))
                auth = self.headers.get("Authorization", "")
                workspace.authorizations.append(auth)
                if not auth.startswith("AWS4-HMAC-SHA256 ") or "/aps/aws4_request" not in auth:
                    return self._send(403, b'{"message": "Missing Authentication Token"}')
                if workspace.status != 200 or not self.path.endswith("/api/v1/query"):
                    return self._send(workspace.status if workspace.status != 200 else 404, workspace.error_body)
                body = {"status": "success", "data": {"resultType": "vector", "result": workspace.result}}
                return self._send(200, json.dumps(body).encode())

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/workspaces/ws-test/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _sample(labels: dict[str, str], value: float) -> dict[str, Any]:
    return {"metric": labels, "value": [1_700_000_000, str(value)]}
