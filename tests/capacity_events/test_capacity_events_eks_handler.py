"""CapacityBlockEvents handler, EKS: cordon the block's nodes through a real HTTPS round-trip to a fake Kubernetes API.

GIVEN a local TLS server (self-signed certificate made here with ``cryptography``) standing in for the API server,
botocore Stubbers for ec2/eks/sns and an offline STS presign with fake credentials, WHEN an expiration warning
arrives, THEN the handler lists nodes, PATCHes exactly the block's nodes with ``spec.unschedulable`` and the
annotations, authenticates with an EKS bearer token, and always publishes the notice.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events.handler import index

from tests.support.capacity_events_eks_handler import _certificate

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
CLUSTER = "fm-eks"
END = "2026-12-01T11:30:00Z"
KWARGS = {"region_name": "us-east-1", "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "fake-secret"}

# The block's two instances, and a third instance of the cluster outside the block.
IN_BLOCK = [
    ("i-0aaaaaaaaaaaaaaa1", "ip-10-0-1-10.ec2.internal"),
    ("i-0aaaaaaaaaaaaaaa2", "ip-10-0-1-11.ec2.internal"),
]
NODES = [
    # matched by providerID even though the node name is not the private DNS name
    {"metadata": {"name": "gpu-node-a"}, "spec": {"providerID": "aws:///us-east-1a/i-0aaaaaaaaaaaaaaa1"}},
    # no providerID yet: matched by name = private DNS name
    {"metadata": {"name": "ip-10-0-1-11.ec2.internal"}, "spec": {}},
    # another instance: not touched
    {"metadata": {"name": "ip-10-0-9-9.ec2.internal"}, "spec": {"providerID": "aws:///us-east-1a/i-0ccccccccccccccc9"}},
    # a name that equals a block DNS name but a providerID of another instance: providerID wins, not touched
    {
        "metadata": {"name": "ip-10-0-1-10.ec2.internal"},
        "spec": {"providerID": "aws:///us-east-1b/i-0ddddddddddddddd1"},
    },
]


class FakeApi:
    """Records every request; serves a node list in pages of two and answers PATCHes (status per node name)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.patch_status: dict[str, int] = {}
        self.list_status = 200


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # silence the test output
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self, body: bytes) -> None:
            api.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "authorization": self.headers.get("Authorization", ""),
                    "content_type": self.headers.get("Content-Type", ""),
                    "body": json.loads(body) if body else None,
                }
            )

        def do_GET(self) -> None:
            self._record(b"")
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/api/v1/nodes" or api.list_status != 200:
                self._send(api.list_status if url.path == "/api/v1/nodes" else 404, {"kind": "Status"})
                return
            start = int(urllib.parse.parse_qs(url.query).get("continue", ["0"])[0])
            page = NODES[start : start + 2]
            more = start + 2 < len(NODES)
            self._send(
                200, {"kind": "NodeList", "items": page, "metadata": {"continue": str(start + 2) if more else ""}}
            )

        def do_PATCH(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self._record(self.rfile.read(length))
            name = urllib.parse.unquote(self.path.rsplit("/", 1)[-1])
            status = api.patch_status.get(name, 200)
            self._send(status, {"kind": "Node", "metadata": {"name": name}} if status == 200 else {"kind": "Status"})

    return Handler


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, FakeApi]]:
    cert_path, key_path, pem = _certificate(tmp_path_factory.mktemp("tls"))
    api = FakeApi()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{httpd.server_address[1]}", pem, api
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def api(server: tuple[str, str, FakeApi]) -> FakeApi:
    fake = server[2]
    fake.requests.clear()
    fake.patch_status.clear()
    fake.list_status = 200
    return fake


def _clients() -> dict[str, Any]:
    return {name: boto3.client(name, **KWARGS) for name in ("ec2", "ssm", "sns", "eks", "sts")}  # type: ignore[call-overload]


def _instances() -> dict[str, object]:
    return {
        "Reservations": [
            {
                "Instances": [
                    {"InstanceId": i, "PrivateDnsName": dns, "PrivateIpAddress": "10.0.1.1"} for i, dns in IN_BLOCK
                ]
            }
        ]
    }


def _block_filter() -> dict[str, object]:
    return {
        "Filters": [
            {"Name": "capacity-reservation-id", "Values": [BLOCK]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    }


def _cluster(endpoint: str, pem: str) -> dict[str, object]:
    return {
        "cluster": {
            "name": CLUSTER,
            "endpoint": endpoint,
            "certificateAuthority": {"data": base64.b64encode(pem.encode()).decode()},
        }
    }


def _event(detail_type: str = "Capacity Block Expiration Warning", reservation: str = BLOCK) -> dict[str, object]:
    return {
        "source": "aws.ec2",
        "detail-type": detail_type,
        "detail": {"capacity-reservation-id": reservation, "end-date": END},
    }


def _run(clients: dict[str, Any], event: dict[str, object] | None = None, **kwargs: Any) -> dict[str, Any]:
    return index.process(
        event or _event(),
        ec2=clients["ec2"],
        ssm=clients["ssm"],
        sns=clients["sns"],
        topic_arn=TOPIC,
        login_node_group_id="",
        eks=clients["eks"],
        sts=clients["sts"],
        eks_cluster_name=CLUSTER,
        **kwargs,
    )


def _decode(token: str) -> urllib.parse.SplitResult:
    assert token.startswith("k8s-aws-v1.")
    encoded = token.removeprefix("k8s-aws-v1.")
    assert "=" not in encoded and "+" not in encoded and "/" not in encoded  # base64url, no padding
    return urllib.parse.urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())


# --- the token ------------------------------------------------------------------------------------------------------


def test_token_is_a_presigned_get_caller_identity_signed_with_the_cluster_header():
    sts = boto3.client("sts", **KWARGS)
    url = _decode(index.eks_token(sts, CLUSTER))
    query = urllib.parse.parse_qs(url.query)
    assert url.scheme == "https" and url.hostname and url.hostname.startswith("sts.")
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Credential"][0].startswith("AKIDFAKE/")


def test_token_header_is_not_left_registered_on_the_client():
    sts = boto3.client("sts", **KWARGS)
    index.eks_token(sts, CLUSTER)
    url = urllib.parse.urlsplit(sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60))
    assert "x-k8s-aws-id" not in urllib.parse.parse_qs(url.query)["X-Amz-SignedHeaders"][0]


def test_tokens_differ_per_cluster():
    sts = boto3.client("sts", **KWARGS)
    a = urllib.parse.parse_qs(_decode(index.eks_token(sts, "a")).query)["X-Amz-Signature"]
    b = urllib.parse.parse_qs(_decode(index.eks_token(sts, "b")).query)["X-Amz-Signature"]
    assert a != b


# --- node matching --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("aws:///us-east-1a/i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa1"),
        ("aws:///i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa1"),
        ("kind://docker/x/y", ""),
        ("", ""),
        ("aws:///us-east-1a/fargate-ip-10-0-0-1", ""),
    ],
)
def test_provider_instance_id(provider, expected):
    assert index.provider_instance_id({"spec": {"providerID": provider}}) == expected


def test_match_prefers_provider_id_over_name():
    instances = [{"InstanceId": i, "PrivateDnsName": dns} for i, dns in IN_BLOCK]
    assert index.match_nodes(NODES, instances) == {
        "gpu-node-a": "i-0aaaaaaaaaaaaaaa1",
        "ip-10-0-1-11.ec2.internal": "i-0aaaaaaaaaaaaaaa2",
    }


# --- the whole path over HTTPS --------------------------------------------------------------------------------------


def test_expiry_warning_cordons_block_nodes_over_https(server, api):
    endpoint, pem, _ = server
    clients = _clients()
    with (
        Stubber(clients["ec2"]) as ec2,
        Stubber(clients["eks"]) as eks,
        Stubber(clients["sns"]) as sns,
    ):
        ec2.add_response("describe_instances", _instances(), _block_filter())
        eks.add_response("describe_cluster", _cluster(endpoint, pem), {"name": CLUSTER})
        sns.add_response(
            "publish",
            {"MessageId": "m-1"},
            {"TopicArn": TOPIC, "Subject": "Capacity Block Expiration Warning", "Message": ANY},
        )
        result = _run(clients)
        for stub in (ec2, eks, sns):
            stub.assert_no_pending_responses()

    assert result["cordoned"] == ["gpu-node-a", "ip-10-0-1-11.ec2.internal"]
    assert "Cordoned in EKS cluster fm-eks: gpu-node-a, ip-10-0-1-11.ec2.internal." in result["message"]
    lists = [r for r in api.requests if r["method"] == "GET"]
    assert [urllib.parse.urlsplit(r["path"]).path for r in lists] == ["/api/v1/nodes"] * 2  # two pages
    patches = [r for r in api.requests if r["method"] == "PATCH"]
    # nodes are cordoned in parallel: any order
    assert sorted(r["path"] for r in patches) == [
        "/api/v1/nodes/gpu-node-a",
        "/api/v1/nodes/ip-10-0-1-11.ec2.internal",
    ]
    for request in patches:
        assert request["content_type"] == "application/strategic-merge-patch+json"
        assert request["body"] == {
            "metadata": {
                "annotations": {
                    "fmconstructs.io/capacity-block-ends-at": END,
                    "fmconstructs.io/capacity-reservation-id": BLOCK,
                }
            },
            "spec": {"unschedulable": True},
        }
    for request in api.requests:
        scheme, _, token = request["authorization"].partition(" ")
        assert scheme == "Bearer"
        url = _decode(token)
        assert "x-k8s-aws-id" in urllib.parse.parse_qs(url.query)["X-Amz-SignedHeaders"][0]


def test_wrong_ca_fails_tls_and_still_notifies(server, api, tmp_path):
    endpoint, _, _ = server
    _, _, other_pem = _certificate(tmp_path)  # a CA that did not sign the server's certificate
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns:
        ec2.add_response("describe_instances", _instances(), _block_filter())
        eks.add_response("describe_cluster", _cluster(endpoint, other_pem), {"name": CLUSTER})
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        sns.assert_no_pending_responses()
    assert "CERTIFICATE_VERIFY_FAILED" in result["cordon_error"]
    assert "FAILED" in result["message"]
    assert api.requests == []  # nothing reached the API without a verified certificate


def test_one_node_failing_is_reported_and_the_other_is_cordoned(server, api):
    endpoint, pem, _ = server
    api.patch_status["gpu-node-a"] = 403
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns:
        ec2.add_response("describe_instances", _instances(), _block_filter())
        eks.add_response("describe_cluster", _cluster(endpoint, pem), {"name": CLUSTER})
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        sns.assert_no_pending_responses()
    assert result["cordoned"] == ["ip-10-0-1-11.ec2.internal"]
    assert result["cordon_failures"][0].startswith("gpu-node-a: PATCH /api/v1/nodes/gpu-node-a: HTTP 403")
    assert "Cordon FAILED for: gpu-node-a" in result["message"]


def test_forbidden_node_list_is_reported(server, api):
    endpoint, pem, _ = server
    api.list_status = 403
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns:
        ec2.add_response("describe_instances", _instances(), _block_filter())
        eks.add_response("describe_cluster", _cluster(endpoint, pem), {"name": CLUSTER})
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        sns.assert_no_pending_responses()
    assert "HTTP 403" in result["cordon_error"]
    assert "Cordon of the block's nodes in EKS cluster fm-eks FAILED" in result["message"]


def test_describe_cluster_error_still_notifies():
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns:
        ec2.add_response("describe_instances", _instances(), _block_filter())
        eks.add_client_error("describe_cluster", "AccessDeniedException", "not allowed")
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        sns.assert_no_pending_responses()
    assert "AccessDeniedException" in result["cordon_error"]


def test_describe_instances_error_still_notifies():
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["sns"]) as sns:
        ec2.add_client_error("describe_instances", "RequestLimitExceeded", "slow down")
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        sns.assert_no_pending_responses()
    assert "RequestLimitExceeded" in result["message"]


def test_empty_block_cordons_nothing():
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["eks"]) as eks, Stubber(clients["sns"]) as sns:
        ec2.add_response("describe_instances", {"Reservations": []}, _block_filter())
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients)
        eks.assert_no_pending_responses()
    assert "no EKS node of fm-eks to cordon" in result["message"]
    assert "cordoned" not in result


@pytest.mark.parametrize("detail_type", index.DELIVERED_DETAIL_TYPES)
def test_delivered_does_not_cordon(detail_type):
    clients = _clients()
    with Stubber(clients["ec2"]), Stubber(clients["eks"]), Stubber(clients["sns"]) as sns:
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": detail_type, "Message": ANY})
        result = _run(clients, _event(detail_type))
    assert "cordoned" not in result and "cordon_error" not in result


def test_malformed_reservation_id_does_not_cordon():
    clients = _clients()
    with Stubber(clients["ec2"]), Stubber(clients["eks"]), Stubber(clients["sns"]) as sns:
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = _run(clients, _event(reservation="cr-x"))
    assert "NOT drained or cordoned" in result["message"]


def test_pcs_drain_error_still_notifies():
    clients = _clients()
    with Stubber(clients["ec2"]) as ec2, Stubber(clients["sns"]) as sns:
        ec2.add_client_error("describe_instances", "UnauthorizedOperation", "no")
        sns.add_response("publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY})
        result = index.process(
            _event(), ec2=clients["ec2"], ssm=clients["ssm"], sns=clients["sns"], topic_arn=TOPIC,
            login_node_group_id="pcs_abcdef1234",
        )  # fmt: skip
        sns.assert_no_pending_responses()
    assert "Drain of the block's Slurm nodes FAILED" in result["message"]


def test_kube_api_refuses_plain_http():
    with pytest.raises(index.KubeError, match="https"):
        index.KubeApi("http://localhost:1", "", "t")
