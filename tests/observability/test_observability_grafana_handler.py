"""The Grafana provisioning Lambda handler, against botocore Stubber (Amazon Managed Grafana API) and a local HTTP
server on 127.0.0.1 standing in for the Grafana HTTP API. Nothing here reaches AWS or the network."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmconstructs.observability.dashboards import load_dashboards
from fmconstructs.observability.grafana.handler import index

WORKSPACE = "g-0123456789"
SA_ID = "7"
TOKEN_ID = "42"
TOKEN = "glsa_S3CRET-provisioning-token_0123456789abcdef"
AMP_ARN = "arn:aws:aps:us-west-2:123456789012:workspace/ws-11111111-2222-3333-4444-555555555555"
AMP_URL = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-11111111-2222-3333-4444-555555555555/"
SHIPPED_UIDS = [d.uid for d in load_dashboards()]


# ---------------------------------------------------------------------------------------------------------------
# Fake Grafana
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class FakeGrafana:
    """State and scripted failures of the stand-in Grafana."""

    url: str = ""
    requests: list[tuple[str, str, str | None, Any]] = field(default_factory=list)
    datasources: dict[str, dict[str, Any]] = field(default_factory=dict)
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (method, path prefix) -> list of (status, body, headers) served before the normal answer
    failures: dict[tuple[str, str], list[tuple[int, str, dict[str, str]]]] = field(default_factory=dict)

    def fail(self, method: str, prefix: str, status: int, times: int = 1, body: str = "{}", **headers: str) -> None:
        self.failures.setdefault((method, prefix), []).extend([(status, body, headers)] * times)

    def calls(self, method: str, prefix: str = "") -> list[tuple[str, str, str | None, Any]]:
        return [r for r in self.requests if r[0] == method and r[1].startswith(prefix)]

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        for (m, prefix), queue in self.failures.items():
            if m == method and path.startswith(prefix) and queue:
                status, text, headers = queue.pop(0)
                return status, json.loads(text) if text.startswith("{") else text, headers
        parts = urlsplit(path).path.strip("/").split("/")
        if parts[:3] == ["api", "datasources", "uid"]:
            uid = parts[3]
            if method == "GET":
                return (200, self.datasources[uid], {}) if uid in self.datasources else (404, {"message": "nf"}, {})
            if method == "PUT":
                self.datasources[uid] = body
                return 200, {"message": "Datasource updated"}, {}
            if method == "DELETE":
                return (200, {}, {}) if self.datasources.pop(uid, None) else (404, {"message": "nf"}, {})
        if parts == ["api", "datasources"] and method == "POST":
            self.datasources[body["uid"]] = body
            return 200, {"message": "Datasource added"}, {}
        if parts[:2] == ["api", "folders"]:
            if method == "POST":
                self.folders[body["uid"]] = body
                return 200, body, {}
            uid = parts[2]
            if method == "GET":
                return (200, self.folders[uid], {}) if uid in self.folders else (404, {"message": "nf"}, {})
            if method == "DELETE":
                return (200, {}, {}) if self.folders.pop(uid, None) else (404, {"message": "nf"}, {})
        if parts == ["api", "dashboards", "db"] and method == "POST":
            self.dashboards[body["dashboard"]["uid"]] = body
            return 200, {"status": "success", "uid": body["dashboard"]["uid"]}, {}
        if parts[:3] == ["api", "dashboards", "uid"] and method == "DELETE":
            return (200, {}, {}) if self.dashboards.pop(parts[3], None) else (404, {"message": "nf"}, {})
        if parts == ["api", "search"] and method == "GET":
            folder = urlsplit(path).query.split("folderUIDs=")[1].split("&")[0]
            return 200, [{"uid": u} for u, d in self.dashboards.items() if d.get("folderUid") == folder], {}
        return 404, {"message": "no such route"}, {}


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    state = FakeGrafana()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            state.requests.append((self.command, self.path, self.headers.get("Authorization"), body))
            status, payload, headers = state.answer(self.command, self.path, body)
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(index, "_sleep", recorded.append)
    return recorded


# ---------------------------------------------------------------------------------------------------------------
# Amazon Managed Grafana API (Stubber)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def client() -> Any:
    return boto3.client("grafana", region_name="us-east-1")


def stub_session(stubber: Stubber, *, existing: bool = False, revoke_error: bool = False) -> None:
    """Expected calls for one run: find (or create) the service account, create a token, (then, later) revoke it."""
    accounts = [{"id": SA_ID, "name": "fmconstructs-provisioner", "isDisabled": "false", "grafanaRole": "ADMIN"}]
    stubber.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": accounts if existing else [], "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE},
    )
    if not existing:
        stubber.add_response(
            "create_workspace_service_account",
            {"id": SA_ID, "name": "fmconstructs-provisioner", "grafanaRole": "ADMIN", "workspaceId": WORKSPACE},
            {"workspaceId": WORKSPACE, "name": "fmconstructs-provisioner", "grafanaRole": "ADMIN"},
        )
    stubber.add_response(
        "create_workspace_service_account_token",
        {
            "serviceAccountToken": {"id": TOKEN_ID, "name": "t", "key": TOKEN},
            "serviceAccountId": SA_ID,
            "workspaceId": WORKSPACE,
        },
        {"workspaceId": WORKSPACE, "serviceAccountId": SA_ID, "name": ANY, "secondsToLive": 600},
    )
    revoke_params = {"workspaceId": WORKSPACE, "serviceAccountId": SA_ID, "tokenId": TOKEN_ID}
    if revoke_error:
        stubber.add_client_error(
            "delete_workspace_service_account_token",
            "InternalServerException",
            http_status_code=500,
            expected_params=revoke_params,
        )
    else:
        stubber.add_response(
            "delete_workspace_service_account_token",
            {"tokenId": TOKEN_ID, "serviceAccountId": SA_ID, "workspaceId": WORKSPACE},
            revoke_params,
        )


def properties(grafana: FakeGrafana, **overrides: Any) -> dict[str, Any]:
    props = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
        "WorkspaceId": WORKSPACE,
        "GrafanaEndpoint": grafana.url,
        "PrometheusWorkspaceArn": AMP_ARN,
        "PrometheusUrl": AMP_URL,
        "DataSourceUid": "fm-amp",
        "DataSourceName": "Amazon Managed Prometheus",
        "DataSourceIsDefault": "true",
        "FolderUid": "fmconstructs",
        "FolderTitle": "fmconstructs",
        "DashboardUids": SHIPPED_UIDS,
        "ServiceAccountName": "fmconstructs-provisioner",
        "DashboardsDigest": "abc",
        "HandlerDigest": "def",
    }
    props.update(overrides)
    return props


def event(request_type: str, props: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {
        "RequestType": request_type,
        "ResourceType": "Custom::FmGrafanaProvisioning",
        "LogicalResourceId": "GrafanaProvisioner",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/FmObservability/1",
        "RequestId": "r-1",
        "ResourceProperties": props,
    }
    if request_type != "Create":
        e["PhysicalResourceId"] = f"fmconstructs-grafana-{WORKSPACE}-fm-amp"
    if old is not None:
        e["OldResourceProperties"] = old
    return e


# ---------------------------------------------------------------------------------------------------------------
# Create
# ---------------------------------------------------------------------------------------------------------------


def test_create_provisions_sigv4_data_source_folder_and_every_dashboard(grafana, client, sleeps):
    # GIVEN a workspace without our service account
    with Stubber(client) as stubber:
        stub_session(stubber)
        # WHEN CloudFormation creates the resource
        response = index.on_event(event("Create", properties(grafana)), None, client=client)
        # THEN the token was created and revoked
        stubber.assert_no_pending_responses()
    ds = grafana.datasources["fm-amp"]
    assert ds["type"] == "prometheus"
    assert ds["url"] == AMP_URL.rstrip("/")
    assert ds["isDefault"] is True
    assert ds["jsonData"] == {
        "httpMethod": "POST",
        "sigV4Auth": True,
        "sigV4AuthType": "ec2_iam_role",
        "sigV4Region": "us-west-2",
        "timeInterval": "30s",
    }
    assert grafana.folders == {"fmconstructs": {"uid": "fmconstructs", "title": "fmconstructs"}}
    assert sorted(grafana.dashboards) == sorted(SHIPPED_UIDS)
    for uploaded in grafana.dashboards.values():
        assert uploaded["overwrite"] is True
        assert uploaded["folderUid"] == "fmconstructs"
        assert uploaded["dashboard"]["id"] is None
        (ds_var,) = [v for v in uploaded["dashboard"]["templating"]["list"] if v["type"] == "datasource"]
        assert ds_var["current"]["value"] == "fm-amp"
    assert {auth for _, _, auth, _ in grafana.requests} == {f"Bearer {TOKEN}"}
    assert response["PhysicalResourceId"] == f"fmconstructs-grafana-{WORKSPACE}-fm-amp"
    assert response["Data"] == {
        "DataSourceUid": "fm-amp",
        "FolderUid": "fmconstructs",
        "DashboardUids": ",".join(SHIPPED_UIDS),
        "DashboardCount": str(len(SHIPPED_UIDS)),
    }
    assert sleeps == []


def test_create_reuses_an_existing_service_account(grafana, client, sleeps):
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)  # no create_workspace_service_account expected
        index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    assert sorted(grafana.dashboards) == sorted(SHIPPED_UIDS)


# ---------------------------------------------------------------------------------------------------------------
# Update
# ---------------------------------------------------------------------------------------------------------------


def test_update_replaces_data_source_and_removes_dashboards_no_longer_shipped(grafana, client, sleeps):
    # GIVEN a workspace provisioned by an older version that shipped "fm-old"
    grafana.datasources["fm-amp"] = {"uid": "fm-amp", "url": "https://old"}
    grafana.dashboards["fm-old"] = {"dashboard": {"uid": "fm-old"}, "folderUid": "fmconstructs"}
    old = properties(grafana, DashboardUids=[*SHIPPED_UIDS, "fm-old"])
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        # WHEN the dashboards change
        response = index.on_event(event("Update", properties(grafana), old), None, client=client)
        stubber.assert_no_pending_responses()
    # THEN the data source is updated in place, the stale dashboard removed, the others re-uploaded
    assert len(grafana.calls("PUT", "/api/datasources/uid/fm-amp")) == 1
    assert grafana.calls("POST", "/api/datasources") == []
    assert grafana.datasources["fm-amp"]["url"] == AMP_URL.rstrip("/")
    assert sorted(grafana.dashboards) == sorted(SHIPPED_UIDS)
    assert response["PhysicalResourceId"] == f"fmconstructs-grafana-{WORKSPACE}-fm-amp"


def test_update_with_a_new_data_source_uid_deletes_the_old_one(grafana, client, sleeps):
    grafana.datasources["fm-amp"] = {"uid": "fm-amp"}
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        response = index.on_event(
            event("Update", properties(grafana, DataSourceUid="fm-amp-2"), properties(grafana)), None, client=client
        )
        stubber.assert_no_pending_responses()
    assert set(grafana.datasources) == {"fm-amp-2"}
    assert response["PhysicalResourceId"] == f"fmconstructs-grafana-{WORKSPACE}-fm-amp-2"


# ---------------------------------------------------------------------------------------------------------------
# Delete
# ---------------------------------------------------------------------------------------------------------------


def _stub_delete_service_account(stubber: Stubber) -> None:
    stubber.add_response(
        "delete_workspace_service_account",
        {"serviceAccountId": SA_ID, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "serviceAccountId": SA_ID},
    )


def test_delete_removes_dashboards_data_source_empty_folder_and_service_account(grafana, client, sleeps):
    grafana.datasources["fm-amp"] = {"uid": "fm-amp"}
    grafana.folders["fmconstructs"] = {"uid": "fmconstructs"}
    for uid in SHIPPED_UIDS:
        grafana.dashboards[uid] = {"dashboard": {"uid": uid}, "folderUid": "fmconstructs"}
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        _stub_delete_service_account(stubber)
        response = index.on_event(event("Delete", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    assert grafana.dashboards == {}
    assert grafana.datasources == {}
    assert grafana.folders == {}
    assert response == {"PhysicalResourceId": f"fmconstructs-grafana-{WORKSPACE}-fm-amp"}


def test_delete_keeps_a_folder_that_still_holds_user_dashboards(grafana, client, sleeps):
    grafana.folders["fmconstructs"] = {"uid": "fmconstructs"}
    grafana.dashboards["users-own"] = {"dashboard": {"uid": "users-own"}, "folderUid": "fmconstructs"}
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        _stub_delete_service_account(stubber)
        index.on_event(event("Delete", properties(grafana)), None, client=client)
    assert "fmconstructs" in grafana.folders
    assert "users-own" in grafana.dashboards


def test_delete_succeeds_and_revokes_the_token_when_grafana_refuses(grafana, client, sleeps, caplog):
    # GIVEN a Grafana that forbids every deletion
    grafana.fail("DELETE", "/api/", 403, times=20)
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        _stub_delete_service_account(stubber)
        # WHEN the stack is deleted THEN the resource deletion still succeeds (best effort), token revoked
        response = index.on_event(event("Delete", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    assert response["PhysicalResourceId"] == f"fmconstructs-grafana-{WORKSPACE}-fm-amp"
    assert "HTTP 403" in caplog.text


def test_delete_succeeds_when_the_workspace_is_already_gone(grafana, client, sleeps):
    with Stubber(client) as stubber:
        stubber.add_client_error("list_workspace_service_accounts", "ResourceNotFoundException", http_status_code=404)
        response = index.on_event(event("Delete", properties(grafana)), None, client=client)
    assert response["PhysicalResourceId"].startswith("fmconstructs-grafana-")
    assert grafana.requests == []


# ---------------------------------------------------------------------------------------------------------------
# Retries and failures
# ---------------------------------------------------------------------------------------------------------------


def test_5xx_is_retried_with_backoff_then_succeeds(grafana, client, sleeps):
    grafana.fail("POST", "/api/datasources", 503, times=2)
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    assert len(grafana.calls("POST", "/api/datasources")) == 3
    assert "fm-amp" in grafana.datasources
    assert len(sleeps) == 2
    assert 0.5 * index.BACKOFF_BASE_SECONDS <= sleeps[0] <= index.BACKOFF_BASE_SECONDS
    assert sleeps[1] >= index.BACKOFF_BASE_SECONDS  # exponential: the second wait is at least the base


def test_429_honours_retry_after(grafana, client, sleeps):
    grafana.fail("POST", "/api/dashboards/db", 429, times=1, **{"Retry-After": "3"})
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        index.on_event(event("Create", properties(grafana)), None, client=client)
    assert sleeps == [3.0]
    assert sorted(grafana.dashboards) == sorted(SHIPPED_UIDS)


def test_persistent_5xx_fails_after_the_last_attempt_and_revokes_the_token(grafana, client, sleeps):
    grafana.fail("POST", "/api/dashboards/db", 502, times=index.MAX_ATTEMPTS)
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        with pytest.raises(
            index.GrafanaApiError, match=r"POST /api/dashboards/db failed with HTTP 502.*after 5 attempts"
        ):
            index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()  # the token was revoked in the finally
    assert len(sleeps) == index.MAX_ATTEMPTS - 1


def test_4xx_fails_at_once_with_a_clear_message_and_revokes_the_token(grafana, client, sleeps):
    # GIVEN a Grafana that refuses the data source, echoing the bearer token in its error body
    grafana.fail("POST", "/api/datasources", 403, body=json.dumps({"message": f"permission denied for {TOKEN}"}))
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        with pytest.raises(index.GrafanaApiError) as raised:
            index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    message = str(raised.value)
    assert "POST /api/datasources failed with HTTP 403" in message
    assert "permission denied" in message
    assert TOKEN not in message
    assert raised.value.status == 403
    assert sleeps == []  # no retry on 4xx
    assert grafana.dashboards == {}


def test_redirects_are_not_followed(grafana, client, sleeps):
    grafana.fail("GET", "/api/datasources/uid/", 302, Location="http://127.0.0.1:9/steal")
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        with pytest.raises(index.GrafanaApiError, match="HTTP 302"):
            index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()


def test_unreachable_grafana_is_retried_then_fails(client, sleeps):
    unreachable = FakeGrafana(url="http://127.0.0.1:9")  # discard port: connection refused
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        with pytest.raises(index.ProvisioningError, match="unreachable"):
            index.on_event(event("Create", properties(unreachable)), None, client=client)
        stubber.assert_no_pending_responses()
    assert len(sleeps) == index.MAX_ATTEMPTS - 1


def test_a_failed_revocation_is_logged_not_raised(grafana, client, sleeps, caplog):
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True, revoke_error=True)
        response = index.on_event(event("Create", properties(grafana)), None, client=client)
        stubber.assert_no_pending_responses()
    assert response["Data"]["DashboardCount"] == str(len(SHIPPED_UIDS))
    assert f"could not revoke Grafana token {TOKEN_ID}" in caplog.text


def test_missing_property_fails_clearly(grafana, client):
    props = properties(grafana)
    del props["WorkspaceId"]
    with pytest.raises(index.ProvisioningError, match="missing custom resource property 'WorkspaceId'"):
        index.on_event(event("Create", props), None, client=client)


# ---------------------------------------------------------------------------------------------------------------
# The token never leaks
# ---------------------------------------------------------------------------------------------------------------


def test_token_is_absent_from_logs_and_responses(grafana, client, sleeps, caplog, capsys):
    caplog.set_level(logging.DEBUG)  # everything, botocore included
    responses = []
    grafana.fail("POST", "/api/folders", 500, body=json.dumps({"message": f"boom {TOKEN}"}))
    with Stubber(client) as stubber:
        stub_session(stubber, existing=True)
        responses.append(index.on_event(event("Create", properties(grafana)), None, client=client))
        stub_session(stubber, existing=True)
        responses.append(index.on_event(event("Update", properties(grafana), properties(grafana)), None, client=client))
        stub_session(stubber, existing=True)
        _stub_delete_service_account(stubber)
        responses.append(index.on_event(event("Delete", properties(grafana)), None, client=client))
        grafana.fail("PUT", "/api/datasources", 400, body=json.dumps({"message": f"bad {TOKEN}"}))
        grafana.datasources["fm-amp"] = {"uid": "fm-amp"}
        stub_session(stubber, existing=True)
        with pytest.raises(index.GrafanaApiError) as raised:
            index.on_event(event("Create", properties(grafana)), None, client=client)
    captured = capsys.readouterr()
    assert caplog.records, "the handler logs its steps"
    assert TOKEN not in caplog.text
    assert TOKEN not in captured.out + captured.err
    assert TOKEN not in json.dumps(responses)
    assert TOKEN not in str(raised.value)
    assert TOKEN not in repr(index.GrafanaApi("https://x", TOKEN))


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        (
            "g-0123456789.grafana-workspace.us-east-1.amazonaws.com",
            "https://g-0123456789.grafana-workspace.us-east-1.amazonaws.com",
        ),
        ("https://g-1.example/", "https://g-1.example"),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000"),
    ],
)
def test_base_url(endpoint, expected):
    assert index.base_url(endpoint) == expected


def test_plain_http_is_refused_for_a_remote_host():
    with pytest.raises(index.ProvisioningError, match="https"):
        index.base_url("http://grafana.example.com")


def test_region_comes_from_the_prometheus_workspace_arn(grafana):
    props = index.Properties.from_event(properties(grafana))
    assert props.prometheus_region == "us-west-2"
    assert props.data_source_is_default is True
