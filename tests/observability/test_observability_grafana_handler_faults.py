"""Grafana provisioner under faults: slow endpoints, HTML 5xx, broken responses, AccessDenied; private workspaces.

GIVEN a local HTTP server standing in for Grafana that answers slowly, with HTML 5xx and a long Retry-After, or with
a truncated body, and botocore Stubbers for the Amazon Managed Grafana API, WHEN CloudFormation sends
Create or Delete with a Lambda context that has little time left, THEN Create fails with a message before the
deadline (never a Lambda timeout) and Delete always succeeds in time with the reason logged. At synthesis, a
workspace with network access control is provisioned from a VPC or refused with the reason.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.observability.grafana import GrafanaNetworkAccess, GrafanaWorkspace
from fmconstructs.observability.grafana.handler import index

from tests.conftest import ENV, new_app

WORKSPACE = "g-0123456789"
SA_ID = "7"
TOKEN_ID = "42"
AMP_ARN = "arn:aws:aps:us-east-1:123456789012:workspace/ws-11111111-2222-3333-4444-555555555555"
AMP_URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-11111111-2222-3333-4444-555555555555/"
HTML_503 = "<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>"


class Context:
    """A Lambda context with ``seconds`` left beyond the handler's reserve."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + index.DEADLINE_RESERVE_SECONDS + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self._end - time.monotonic()) * 1000)


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (timeout) closes its connection: not an error of the fake server."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@pytest.fixture
def grafana() -> Iterator[dict[str, Any]]:
    """A fake Grafana whose every answer is ``state['mode']``: 'slow', 'html503' (Retry-After 10), 'truncated'."""
    state: dict[str, Any] = {"mode": "slow", "requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            state["requests"] += 1
            mode = state["mode"]
            if mode == "slow":
                time.sleep(5.0)
            if mode == "truncated":  # a body shorter than announced, then the connection closes
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(b'{"id": 1')
                self.close_connection = True
                return
            data = (HTML_503 if mode == "html503" else "{}").encode()
            self.send_response(503 if mode == "html503" else 200)
            self.send_header("Content-Type", "text/html" if mode == "html503" else "application/json")
            self.send_header("Retry-After", "10")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = _QuietServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _stub_session(stubber: Stubber) -> None:
    stubber.add_response(
        "list_workspace_service_accounts",
        {
            "serviceAccounts": [
                {"id": SA_ID, "name": "fmconstructs-provisioner", "isDisabled": "false", "grafanaRole": "ADMIN"}
            ],
            "workspaceId": WORKSPACE,
        },
        {"workspaceId": WORKSPACE},
    )
    stubber.add_response(
        "create_workspace_service_account_token",
        {
            "serviceAccountToken": {"id": TOKEN_ID, "name": "t", "key": "glsa_x"},
            "serviceAccountId": SA_ID,
            "workspaceId": WORKSPACE,
        },
        {"workspaceId": WORKSPACE, "serviceAccountId": SA_ID, "name": ANY, "secondsToLive": ANY},
    )
    stubber.add_response(
        "delete_workspace_service_account_token",
        {"tokenId": TOKEN_ID, "serviceAccountId": SA_ID, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "serviceAccountId": SA_ID, "tokenId": TOKEN_ID},
    )


def _event(request_type: str, url: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "PhysicalResourceId": f"fmconstructs-grafana-{WORKSPACE}-fm-amp",
        "ResourceProperties": {
            "WorkspaceId": WORKSPACE,
            "GrafanaEndpoint": url,
            "PrometheusWorkspaceArn": AMP_ARN,
            "PrometheusUrl": AMP_URL,
            "DataSourceUid": "fm-amp",
            "DataSourceName": "Amazon Managed Prometheus",
            "DataSourceIsDefault": "true",
            "FolderUid": "fmconstructs",
            "FolderTitle": "fmconstructs",
            "DashboardUids": ["fm-gpu"],
            "ServiceAccountName": "fmconstructs-provisioner",
        },
    }


def _within(seconds: float, call: Callable[[], Any]) -> tuple[bool, Any]:
    """Run ``call`` in a thread; (finished within ``seconds``, its return value or exception)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return (not thread.is_alive(), outcome[0] if outcome else None)


# --- Create / Delete within the deadline -----------------------------------------------------------------------------


def test_create_against_a_slow_grafana_fails_before_the_deadline(grafana):
    client = boto3.client("grafana", region_name="us-east-1")
    with Stubber(client) as stubber:
        _stub_session(stubber)
        finished, outcome = _within(
            8.0, lambda: index.on_event(_event("Create", grafana["url"]), Context(2.0), client=client)
        )
        assert finished, "Create did not return before its deadline"
        stubber.assert_no_pending_responses()  # the token was revoked
    assert isinstance(outcome, index.ProvisioningError)
    assert "deadline" in str(outcome)


def test_create_against_html_503_with_long_retry_after_gives_up_in_time(grafana):
    grafana["mode"] = "html503"
    client = boto3.client("grafana", region_name="us-east-1")
    with Stubber(client) as stubber:
        _stub_session(stubber)
        finished, outcome = _within(
            8.0, lambda: index.on_event(_event("Create", grafana["url"]), Context(3.0), client=client)
        )
        assert finished
    assert isinstance(outcome, index.ProvisioningError)
    assert "deadline" in str(outcome)


@pytest.mark.parametrize("mode", ["slow", "truncated"])
def test_delete_always_succeeds_in_time_with_the_reason_logged(grafana, caplog, mode):
    grafana["mode"] = mode
    client = boto3.client("grafana", region_name="us-east-1")
    caplog.set_level(logging.WARNING, logger="fmconstructs.grafana.provisioner")
    with Stubber(client) as stubber:
        _stub_session(stubber)
        stubber.add_response("delete_workspace_service_account", {"serviceAccountId": SA_ID, "workspaceId": WORKSPACE})
        finished, outcome = _within(
            8.0, lambda: index.on_event(_event("Delete", grafana["url"]), Context(2.0), client=client)
        )
    assert finished, "Delete did not return before its deadline"
    assert outcome == {"PhysicalResourceId": f"fmconstructs-grafana-{WORKSPACE}-fm-amp"}
    assert grafana["requests"] >= 1


def test_delete_with_access_denied_succeeds_and_logs_why(grafana, caplog):
    client = boto3.client("grafana", region_name="us-east-1")
    caplog.set_level(logging.WARNING, logger="fmconstructs.grafana.provisioner")
    with Stubber(client) as stubber:
        stubber.add_client_error("list_workspace_service_accounts", "AccessDeniedException", "no", http_status_code=403)
        response = index.on_event(_event("Delete", grafana["url"]), Context(5.0), client=client)
    assert response["PhysicalResourceId"].startswith("fmconstructs-grafana-")
    assert any(
        "deletion succeeds anyway" in r.getMessage() and "AccessDeniedException" in r.getMessage()
        for r in caplog.records
    )


def _unreadable(change: str) -> dict[str, Any]:
    """A Delete event whose properties the handler cannot read (issue 30: its Delete failed then)."""
    event = _event("Delete", "https://g-0123456789.grafana-workspace.us-east-1.amazonaws.com")
    props = event["ResourceProperties"]
    if change == "absent":
        del event["ResourceProperties"]
    elif change == "not-an-object":
        event["ResourceProperties"] = "WorkspaceId=g-0123456789"
    elif change == "missing-key":
        del props["ServiceAccountName"]
    elif change == "arn-not-an-arn":
        props["PrometheusWorkspaceArn"] = "ws-1234"
    elif change == "no-physical-id":
        del event["PhysicalResourceId"]
        del props["WorkspaceId"]
    return event


@pytest.mark.parametrize("change", ["absent", "not-an-object", "missing-key", "arn-not-an-arn", "no-physical-id"])
def test_delete_with_unreadable_properties_succeeds_without_calling_aws(change, caplog):
    client = boto3.client("grafana", region_name="us-east-1")
    caplog.set_level(logging.WARNING, logger="fmconstructs.grafana.provisioner")
    with Stubber(client):  # no responses queued: any AWS call would raise
        response = index.on_event(_unreadable(change), Context(5.0), client=client)
    expected = (
        "fmconstructs-grafana-unreadable" if change == "no-physical-id" else f"fmconstructs-grafana-{WORKSPACE}-fm-amp"
    )
    assert response == {"PhysicalResourceId": expected}
    assert any("properties unreadable" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("change", ["not-an-object", "missing-key", "arn-not-an-arn"])
def test_create_with_unreadable_properties_fails_with_the_reason(change):
    event = _unreadable(change)
    event["RequestType"] = "Create"
    with pytest.raises(index.ProvisioningError):
        index.on_event(event, Context(5.0), client=boto3.client("grafana", region_name="us-east-1"))


def test_the_grafana_client_retries_throttling_and_has_timeouts(monkeypatch, grafana):
    seen: dict[str, Any] = {}
    real = boto3.client

    def capture(service: str, **kwargs: Any) -> Any:
        seen.update(kwargs)
        client = real(service, region_name="us-east-1")
        stubber = Stubber(client)
        stubber.add_client_error(
            "list_workspace_service_accounts", "ThrottlingException", "Rate exceeded", http_status_code=429
        )
        stubber.activate()
        return client

    monkeypatch.setattr(index.boto3, "client", capture)
    index.on_event(_event("Delete", grafana["url"]), Context(5.0))
    config = seen["config"]
    assert config.retries["mode"] == "standard"
    assert config.connect_timeout <= 10 and config.read_timeout <= 30


# --- synthesis: a private workspace ----------------------------------------------------------------------------------


def _stack() -> tuple[cdk.Stack, ec2.IVpc]:
    stack = cdk.Stack(new_app(), "Private", env=ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    )
    return stack, vpc


def _private(stack: cdk.Stack) -> GrafanaWorkspace:
    return GrafanaWorkspace(
        stack,
        "Grafana",
        prometheus_workspace_arns=[AMP_ARN],
        network_access=GrafanaNetworkAccess(vpc_endpoint_ids=["vpce-0123456789abcdef0"]),
    )


def test_private_workspace_without_a_vpc_is_refused_with_the_reason():
    stack, _ = _stack()
    workspace = _private(stack)
    with pytest.raises(FmValidationError, match="network_access") as raised:
        workspace.provision(prometheus_workspace_arn=AMP_ARN, prometheus_endpoint=AMP_URL)
    assert "grafana-workspace" in str(raised.value) and "vpc=" in str(raised.value)


def test_private_workspace_is_provisioned_from_the_vpc():
    stack, vpc = _stack()
    provisioner = _private(stack).provision(prometheus_workspace_arn=AMP_ARN, prometheus_endpoint=AMP_URL, vpc=vpc)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "grafana.handler.index.on_event",
            "VpcConfig": {
                "SubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
                "SecurityGroupIds": [Match.any_value()],
            },
        },
    )
    assert provisioner.security_group is not None
    roles = template.find_resources("AWS::IAM::Role")
    assert any("AWSLambdaENIManagementAccess" in str(r["Properties"].get("ManagedPolicyArns")) for r in roles.values())


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)}, FmValidationError),
        ({"vpc": "vpc-0123456789abcdef0"}, FmTypeError),
        ({"security_groups": ["sg-1"]}, FmTypeError),
    ],
)
def test_bad_network_arguments_are_refused(kwargs, error):
    stack, vpc = _stack()
    workspace = GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[AMP_ARN])
    if "security_groups" in kwargs:
        kwargs = {**kwargs, "vpc": vpc}
    with pytest.raises(error):
        workspace.provision(prometheus_workspace_arn=AMP_ARN, prometheus_endpoint=AMP_URL, **kwargs)


UNREACHABLE = "fmconstructs:grafana-private-networks-without-endpoint"


def _warnings(access: GrafanaNetworkAccess) -> list[str]:
    stack, _ = _stack()
    GrafanaWorkspace(stack, "Grafana", prometheus_workspace_arns=[AMP_ARN], network_access=access)
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found]


@pytest.mark.parametrize(
    "cidrs", [["10.0.0.0/16"], ["10.0.0.0/16", "192.168.0.0/24"], ["172.16.0.0/12", "fd00::/8"]], ids=str
)
def test_only_private_networks_and_no_endpoint_warns_that_nothing_can_reach_the_workspace(cidrs):
    messages = _warnings(GrafanaNetworkAccess(allowed_cidrs=cidrs))
    assert any(UNREACHABLE in m and "grafana-workspace" in m and cidrs[0] in m for m in messages)


@pytest.mark.parametrize(
    "access",
    [
        GrafanaNetworkAccess(allowed_cidrs=["10.0.0.0/16"], vpc_endpoint_ids=["vpce-0123456789abcdef0"]),
        GrafanaNetworkAccess(allowed_cidrs=["10.0.0.0/16"], prefix_list_ids=["pl-1a2b3c4d"]),
        GrafanaNetworkAccess(allowed_cidrs=["10.0.0.0/16", "203.0.113.0/24"]),
        GrafanaNetworkAccess(allowed_cidrs=["203.0.113.0/24"]),
        GrafanaNetworkAccess(vpc_endpoint_ids=["vpce-0123456789abcdef0"]),
    ],
    ids=["with-endpoint", "with-prefix-list", "one-public-range", "public-only", "endpoint-only"],
)
def test_a_reachable_network_access_does_not_warn(access):
    assert not any(UNREACHABLE in m for m in _warnings(access))
