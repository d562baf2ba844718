"""CapacityBlockEvents handler under faults: throttling, AccessDenied, HTML 5xx and slow endpoints.

GIVEN botocore Stubbers for ec2/eks/ssm/sns and a local TLS server standing in for the Kubernetes API server that
answers 429, HTML 5xx or slowly on demand, WHEN an expiration warning arrives, THEN the handler retries what is worth
retrying, stays within its time budget, names in the notice what failed and what was not reached in time, does not
patch a node twice on a duplicate delivery, and reads the drain's SSM result truthfully.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import ssl
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events import CapacityBlockEvents
from fmconstructs.capacity_events.handler import index

from tests.conftest import ENV, new_app
from tests.support.capacity_events_eks_handler import _certificate

x509 = pytest.importorskip("cryptography.x509")

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
CLUSTER = "fm-eks"
LOGIN_GROUP = "pcs_abcdef1234"
LOGIN = "i-0bbbbbbbbbbbbbbb1"
COMMAND = "0b5c2f34-1d8b-4b8a-9c1f-2a3b4c5d6e7f"
KWARGS = {"region_name": "us-east-1", "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "fake-secret"}
NODES = ["node-a", "node-b"]
IDS = {"node-a": "i-0aaaaaaaaaaaaaaa1", "node-b": "i-0aaaaaaaaaaaaaaa2"}
HTML_503 = b"<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>"


def _no_sleep(_: float) -> None:
    pass


# --- a fake Kubernetes API server ------------------------------------------------------------------------------------


class Script:
    """What the fake API answers: per (method, node or 'list') a queue of faults consumed one per request
    ('429', 'html503', 'html500', 'slow'); an empty queue answers 200. ``unschedulable``: nodes already cordoned."""

    def __init__(self) -> None:
        self.faults: dict[tuple[str, str], list[str]] = {}
        self.always: dict[tuple[str, str], str] = {}
        self.unschedulable: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def next_fault(self, key: tuple[str, str]) -> str:
        with self.lock:
            self.requests.append(key)
            queue = self.faults.get(key) or []
            return queue.pop(0) if queue else self.always.get(key, "")


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, fault: str, body: object) -> None:
            if fault == "slow":
                time.sleep(3.0)
            if fault == "429":
                status, data, kind = 429, b'{"kind":"Status","code":429}', "application/json"
            elif fault in ("html503", "html500"):
                status, data, kind = int(fault[-3:]), HTML_503, "text/html"
            else:
                status, data, kind = 200, json.dumps(body).encode(), "application/json"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            fault = script.next_fault(("GET", "list"))
            items = [
                {
                    "metadata": {"name": name},
                    "spec": {"providerID": f"aws:///us-east-1a/{IDS[name]}"}
                    | ({"unschedulable": True} if name in script.unschedulable else {}),
                }
                for name in NODES
            ]
            self._answer(fault, {"kind": "NodeList", "items": items, "metadata": {}})

        def do_PATCH(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            name = urllib.parse.unquote(self.path.rsplit("/", 1)[-1])
            fault = script.next_fault(("PATCH", name))
            self._answer(fault, {"kind": "Node", "metadata": {"name": name}})

    return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (timeout) closes its connection: not an error of the fake server."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Script]]:
    cert_path, key_path, pem = _certificate(tmp_path_factory.mktemp("tls"))
    script = Script()
    httpd = _QuietServer(("127.0.0.1", 0), _handler(script))
    httpd.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{httpd.server_address[1]}", pem, script
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def script(server: tuple[str, str, Script]) -> Script:
    fresh = server[2]
    fresh.faults.clear()
    fresh.always.clear()
    fresh.unschedulable.clear()
    fresh.requests.clear()
    return fresh


def _clients() -> dict[str, Any]:
    return {name: boto3.client(name, **KWARGS) for name in ("ec2", "ssm", "sns", "eks", "sts")}  # type: ignore[call-overload]


def _event() -> dict[str, object]:
    return {
        "id": "evt-1",
        "detail-type": "Capacity Block Expiration Warning",
        "detail": {"capacity-reservation-id": BLOCK, "end-date": "2026-12-01T11:30:00Z"},
    }


def _instances() -> dict[str, object]:
    return {
        "Reservations": [
            {
                "Instances": [
                    {"InstanceId": i, "PrivateIpAddress": f"10.0.1.{n}", "PrivateDnsName": f"ip-10-0-1-{n}.internal"}
                    for n, i in enumerate(IDS.values(), start=10)
                ]
            }
        ]
    }


def _cordon(server: tuple[str, str, Script], *, budget_s: float = 30.0) -> tuple[dict[str, Any], float]:
    """Run an expiration warning through the EKS cordon; returns (result, seconds taken)."""
    endpoint, pem, _ = server
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns_stub:
        # The extension check first (the block still ends when the warning says), then the cordon's lookup.
        end = datetime.datetime(2026, 12, 1, 11, 30, tzinfo=datetime.UTC)
        ec2.add_response("describe_capacity_reservations", {"CapacityReservations": [{"EndDate": end}]}, None)
        ec2.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": []}, None)
        ec2.add_response("describe_instances", _instances(), None)
        cluster = {"endpoint": endpoint, "certificateAuthority": {"data": base64.b64encode(pem.encode()).decode()}}
        eks.add_response("describe_cluster", {"cluster": cluster}, {"name": CLUSTER})
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        started = time.monotonic()
        result = index.process(
            _event(),
            ec2=clients["ec2"],
            ssm=clients["ssm"],
            sns=clients["sns"],
            topic_arn=TOPIC,
            login_node_group_id="",
            eks=clients["eks"],
            sts=clients["sts"],
            eks_cluster_name=CLUSTER,
            budget=index.Budget(budget_s),
        )
        sns_stub.assert_no_pending_responses()
    return result, time.monotonic() - started


# --- EKS cordon ------------------------------------------------------------------------------------------------------


def test_cordon_retries_429_with_retry_after(server, script):
    script.faults[("PATCH", "node-a")] = ["429", "429"]
    result, _ = _cordon(server)
    assert sorted(result["cordoned"]) == NODES
    assert script.requests.count(("PATCH", "node-a")) == 3
    assert "FAILED" not in result["message"]


def test_cordon_retries_html_503_on_the_node_list(server, script):
    script.faults[("GET", "list")] = ["html503", "html503"]
    result, _ = _cordon(server)
    assert sorted(result["cordoned"]) == NODES
    assert "cordon_error" not in result


def test_cordon_gives_up_on_persistent_html_500_and_names_the_node(server, script):
    script.always[("PATCH", "node-b")] = "html500"
    result, _ = _cordon(server)
    assert result["cordoned"] == ["node-a"]
    assert script.requests.count(("PATCH", "node-b")) == index.KUBE_ATTEMPTS
    (failure,) = result["cordon_failures"]
    assert failure.startswith("node-b: ") and "HTTP 500" in failure and "<html>" in failure
    assert "Cordon FAILED for: node-b" in result["message"]


def test_cordon_within_the_budget_names_nodes_not_reached(server, script):
    script.always[("PATCH", "node-b")] = "slow"  # 3 s per answer; the budget is 1.5 s
    result, took = _cordon(server, budget_s=1.5)
    assert took < 3.0
    assert result["cordoned"] == ["node-a"]
    assert result["cordon_not_reached"] == ["node-b"]
    assert "NOT FINISHED in time" in result["message"] and "node-b" in result["message"]


def test_duplicate_delivery_does_not_patch_again_and_says_so(server, script):
    script.unschedulable.update(NODES)
    result, _ = _cordon(server)
    assert [r for r in script.requests if r[0] == "PATCH"] == []
    assert result["already_cordoned"] == NODES
    assert "Already unschedulable" in result["message"]


def test_budget_comes_from_the_lambda_context():
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 120_000

    budget = index.Budget.from_context(Context())
    assert 120 - index.NOTICE_RESERVE_S - 1 < budget.left() <= 120 - index.NOTICE_RESERVE_S


# --- the notice ------------------------------------------------------------------------------------------------------


def test_throttled_notice_is_retried():
    clients = _clients()
    with Stubber(clients["sns"]) as sns_stub:
        sns_stub.add_client_error("publish", "Throttling", "Rate exceeded", http_status_code=400)
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        index.process(
            {**_event(), "detail-type": "Capacity Block Delivered"},
            ec2=clients["ec2"],
            ssm=clients["ssm"],
            sns=clients["sns"],
            topic_arn=TOPIC,
            login_node_group_id="",
            sleep=_no_sleep,
        )
        sns_stub.assert_no_pending_responses()


def test_notice_that_cannot_be_published_raises_after_logging_it(capsys):
    clients = _clients()
    with Stubber(clients["sns"]) as sns_stub:
        sns_stub.add_client_error("publish", "AuthorizationError", "not allowed", http_status_code=403)
        with pytest.raises(Exception, match="AuthorizationError"):
            index.process(
                {**_event(), "detail-type": "Capacity Block Delivered"},
                ec2=clients["ec2"],
                ssm=clients["ssm"],
                sns=clients["sns"],
                topic_arn=TOPIC,
                login_node_group_id="",
                sleep=_no_sleep,
            )
    # the message is in the log even though nobody received it (Lambda retries, then the failure queue)
    assert '"notice"' in capsys.readouterr().out


# --- PCS drain -------------------------------------------------------------------------------------------------------


def _drain(ssm_script: list[tuple[str, Any]], *, budget_s: float = 30.0) -> dict[str, Any]:
    """Run the drain with ``ssm_script``: ("send", response or error code) and ("get", response or error code)."""
    clients = _clients()
    with (
        Stubber(clients["ec2"]) as ec2,
        Stubber(clients["ssm"]) as ssm,
        Stubber(clients["sns"]) as sns_stub,
    ):
        ec2.add_response("describe_instances", _instances(), None)
        ec2.add_response("describe_instances", {"Reservations": [{"Instances": [{"InstanceId": LOGIN}]}]}, None)
        for step, answer in ssm_script:
            operation = "send_command" if step == "send" else "get_command_invocation"
            if isinstance(answer, str):
                ssm.add_client_error(operation, answer, f"{answer} injected", http_status_code=400)
            elif step == "send":
                ssm.add_response(operation, answer, None)
            else:
                ssm.add_response(operation, answer, {"CommandId": COMMAND, "InstanceId": LOGIN})
        sns_stub.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _event(),
            ec2=clients["ec2"],
            ssm=clients["ssm"],
            sns=clients["sns"],
            topic_arn=TOPIC,
            login_node_group_id=LOGIN_GROUP,
            sleep=_no_sleep,
            budget=index.Budget(budget_s),
        )
        sns_stub.assert_no_pending_responses()
    return result


SENT = ("send", {"Command": {"CommandId": COMMAND}})


def test_drain_failure_is_reported_with_exit_code_and_stderr():
    result = _drain(
        [
            SENT,
            ("get", "InvocationDoesNotExist"),
            ("get", "ThrottlingException"),
            ("get", {"Status": "InProgress", "StatusDetails": "InProgress"}),
            (
                "get",
                {
                    "Status": "Failed",
                    "StatusDetails": "Failed",
                    "ResponseCode": 1,
                    "StandardErrorContent": "scontrol: error: Invalid node name specified",
                },
            ),
        ]
    )
    assert result["drain_status"] == "Failed"
    assert "Drain of the block's Slurm nodes FAILED" in result["message"]
    assert "exit code 1" in result["message"] and "Invalid node name" in result["message"]
    assert "Drained" not in result["message"] and "Draining" not in result["message"]


def test_drain_success_is_reported_with_its_output():
    result = _drain(
        [SENT, ("get", {"Status": "Success", "ResponseCode": 0, "StandardOutputContent": "drained: gpu-[1-2]"})]
    )
    assert result["drain_status"] == "Success"
    assert "Drained the block's Slurm nodes" in result["message"] and "gpu-[1-2]" in result["message"]


def test_drain_not_finished_within_the_budget_is_not_called_a_success():
    pending = ("get", {"Status": "InProgress", "StatusDetails": "InProgress"})
    result = _drain([SENT, pending], budget_s=1.0)  # the first poll leaves less than one interval: stop
    assert result["drain_status"] == "NotFinished"
    assert "Drain NOT CONFIRMED" in result["message"] and COMMAND in result["message"]


def test_throttled_send_command_is_retried_then_access_denied_is_reported():
    result = _drain([("send", "ThrottlingException"), ("send", "AccessDeniedException")])
    assert "AccessDeniedException" in result["message"] and "FAILED" in result["message"]
    assert "command_id" not in result


# --- the drain script ------------------------------------------------------------------------------------------------


def _fake_tool(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_drain_script_exits_non_zero_when_sinfo_fails(tmp_path):
    _fake_tool(tmp_path, "sinfo", 'echo "slurm_load_node error: Unable to contact slurm controller" >&2; exit 1')
    _fake_tool(tmp_path, "scontrol", "exit 0")
    run = subprocess.run(
        ["bash", "-c", index.drain_script(["10.0.1.10"])],
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode != 0
    assert "no Slurm node matches" not in run.stdout


# --- the construct: where a failed event goes ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template() -> Template:
    stack = cdk.Stack(new_app(), "Faults", env=ENV)
    topic = sns.Topic(stack, "Alerts")
    CapacityBlockEvents(stack, "Events", alert_topic=topic, pcs_login_node_group_id=LOGIN_GROUP)
    return Template.from_stack(stack)


def test_failed_events_go_to_an_encrypted_tls_only_queue(template):
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "MaximumRetryAttempts": 2,
            "MaximumEventAgeInSeconds": 3600,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [Match.any_value(), "Arn"]}}},
        },
    )
    template.has_resource_properties("AWS::SQS::Queue", {"SqsManagedSseEnabled": True})
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::Events::Rule",
        {"Targets": [Match.object_like({"DeadLetterConfig": {"Arn": {"Fn::GetAtt": [Match.any_value(), "Arn"]}}})]},
    )


def test_handler_may_read_the_drain_result_and_has_time_to_wait(template):
    template.has_resource_properties("AWS::Lambda::Function", {"Timeout": 120})
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": "ssm:GetCommandInvocation", "Resource": "*"})]
                )
            }
        },
    )
