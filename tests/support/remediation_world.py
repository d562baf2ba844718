"""The remediation handler's world in tests: moto clients (DynamoDB, SNS, SQS, EC2, Auto Scaling), the SSM double
that runs the handler's Slurm script against fake Slurm commands, and a fake Kubernetes API over TLS (the shared test
certificate) whose answers can be scripted: 503 or 429 (with Retry-After) before the real answer, or hanging."""

from __future__ import annotations

import copy
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3

from fmconstructs.remediation import RemediationPolicy
from fmconstructs.remediation.handler import index
from fmconstructs.remediation.handler.kube import KubeApi

from tests.support.capacity_events_eks_handler import _certificate
from tests.support.remediation_slurm import FakeSlurm, ScriptSsm

REGION = "us-east-1"
TABLE = "remediation-state"
NOW = 1_800_000_000.0  # a fixed clock: every fault of a test falls in the same hour window
PCS_TARGET = {
    "backend": "pcs",
    "cluster": "pcs_c1",
    "login_node_group_id": "pcs_login",
    "compute_node_group_ids": ["pcs_gpu"],
}
EKS_TARGET = {"backend": "eks", "cluster": "gpu", "login_node_group_id": "", "compute_node_group_ids": []}
LOGIN = {"aws:pcs:compute-node-group-id": "pcs_login"}
GPU = {"aws:pcs:compute-node-group-id": "pcs_gpu"}


def policy(**kwargs: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"dry_run": False}
    base.update(kwargs)
    return json.loads(RemediationPolicy(**base).to_json())


def alert_record(alertname: str, instance: str, *, status: str = "firing", **labels: str) -> dict[str, Any]:
    """An SNS record with an Alertmanager message in AMP's documented JSON template form."""
    alert = {
        "status": status,
        "labels": {"alertname": alertname, "instance_id": instance, "instance": instance, **labels},
    }
    message = {"receiver": "sns", "status": status, "alerts": [alert]}
    return {"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message), "MessageAttributes": {}}}


def sns_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


class World:
    """moto clients, the state table, the alert topic with an SQS queue subscribed to read the notices, fake Slurm."""

    def __init__(self, root: Path) -> None:
        self.clients = {
            name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
            for name in ("ec2", "sns", "dynamodb", "autoscaling", "eks", "sts", "sqs")
        }
        self.clients["dynamodb"].create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.topic = self.clients["sns"].create_topic(Name="alerts")["TopicArn"]
        self.queue = self.clients["sqs"].create_queue(QueueName="notices")["QueueUrl"]
        arn = self.clients["sqs"].get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]
        self.clients["sns"].subscribe(TopicArn=self.topic, Protocol="sqs", Endpoint=arn["QueueArn"])
        # One of moto's built-in AMIs (moto's own tests use it as EXAMPLE_AMI_ID); listing images is slow in moto.
        self.image = "ami-12c6146b"
        self.slurm = FakeSlurm(root / "slurm")
        self.ssm = ScriptSsm([self.slurm.bin], self.slurm.env())
        self.clients["ssm"] = self.ssm
        self.now = NOW

    def instances(self, count: int, tags: dict[str, str], *, slurm: bool = False) -> list[str]:
        """``count`` instances; with ``slurm`` each is also a Slurm node named after its private DNS host label."""
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        found = self.clients["ec2"].run_instances(
            ImageId=self.image, MinCount=count, MaxCount=count, InstanceType="p5.48xlarge", TagSpecifications=spec
        )
        ids = [i["InstanceId"] for i in found["Instances"]]
        for instance in found["Instances"] if slurm else []:
            host = instance["PrivateDnsName"].split(".", 1)[0]
            self.slurm.add_node(f"gpu-{host}", instance["PrivateIpAddress"], host)
        return ids

    def node_of(self, instance_id: str) -> str:
        found = self.clients["ec2"].describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return "gpu-" + found["PrivateDnsName"].split(".", 1)[0]

    def state(self, instance_id: str) -> str:
        found = self.clients["ec2"].describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return str(found["State"]["Name"])

    def notices(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            batch = self.clients["sqs"].receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10)
            messages = batch.get("Messages", [])
            if not messages:
                return out
            for message in messages:
                out.append(json.loads(message["Body"]))
                self.clients["sqs"].delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])

    def ledger_item(self, key: str) -> dict[str, Any]:
        item = self.clients["dynamodb"].get_item(TableName=TABLE, Key={"pk": {"S": f"once#{key}"}}).get("Item") or {}
        return {k: next(iter(v.values())) for k, v in item.items()}

    def run(
        self, event: dict[str, Any], policy: dict[str, Any], target: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        clients = {**self.clients, **kwargs.pop("clients", {})}
        kwargs.setdefault("sleep", lambda _s: None)
        kwargs.setdefault("remaining_s", lambda: 3600.0)  # no deadline unless a test sets one (a loaded machine)
        return index.process(
            event,
            clients=clients,
            policy=policy,
            target=target,
            topic_arn=self.topic,
            table=TABLE,
            clock=lambda: self.now,
            **kwargs,
        )


# --- a fake Kubernetes API server ------------------------------------------------------------------------------------


@dataclass
class KubeState:
    """Nodes (name -> Node object), pods, PDB-protected pod names, and scripted faults: per request key
    (``"GET nodes"``, ``"GET node"``, ``"PATCH node"``, ``"GET pods"``, ``"POST eviction"``) a queue of ``"503"``,
    ``"429"`` (Retry-After ``retry_after``) or ``"hang"``, consumed one per request; ``always`` hangs every request."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    protected: set[str] = field(default_factory=set)
    faults: dict[str, list[str]] = field(default_factory=dict)
    always: str = ""
    retry_after: str = "1"
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_node(
        self,
        name: str,
        instance_id: str,
        *,
        unschedulable: bool = False,
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
        **annotations: str,
    ) -> None:
        spec: dict[str, Any] = {"providerID": f"aws:///us-east-1a/{instance_id}"}
        if unschedulable:
            spec["unschedulable"] = True
        if taints is not None:
            spec["taints"] = taints
        metadata = {"name": name, "annotations": dict(annotations), "labels": dict(labels or {})}
        self.nodes[name] = {"metadata": metadata, "spec": spec}

    def fault(self, key: str) -> str:
        with self.lock:
            queue = self.faults.get(key) or []
            return queue.pop(0) if queue else self.always

    def count(self, method: str, prefix: str) -> int:
        return sum(1 for m, p, _ in self.calls if m == method and p.startswith(prefix))


def pod(name: str, node: str, *, daemonset: bool = False) -> dict[str, Any]:
    owners = [{"kind": "DaemonSet", "name": "dcgm"}] if daemonset else [{"kind": "ReplicaSet", "name": "train"}]
    return {
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": owners},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


def _json_patch(node: dict[str, Any], patch: list[dict[str, Any]]) -> bool:
    """RFC 6902 ``test`` and ``add`` (``/-`` appends) on ``/spec/...`` paths, applied only when every test holds."""
    for op in patch:
        *parents, last = op["path"].split("/")[1:]
        target: Any = node
        for step in parents:
            target = target[int(step)] if isinstance(target, list) else target.setdefault(step, {})
        if op["op"] == "test":
            if (target.get(last) if isinstance(target, dict) else target[int(last)]) != op["value"]:
                return False
        elif op["op"] == "add" and last == "-":
            target.append(op["value"])
        elif op["op"] == "add":
            target[last] = op["value"]
        else:
            raise AssertionError(f"unsupported JSON patch operation {op}")
    return True


def _handler(state: KubeState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _faulted(self, key: str) -> bool:
            fault = state.fault(key)
            if fault == "hang":
                time.sleep(30)
                return True
            if fault == "503":
                self._reply(503, {"kind": "Status", "code": 503})
                return True
            if fault == "429":
                self._reply(429, {"kind": "Status", "code": 429}, {"Retry-After": state.retry_after})
                return True
            return False

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length)) if length else None

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            state.calls.append(("GET", url.path, None))
            if url.path == "/api/v1/nodes":
                if not self._faulted("GET nodes"):
                    self._reply(200, {"items": list(state.nodes.values()), "metadata": {}})
            elif url.path.startswith("/api/v1/nodes/"):
                name = urllib.parse.unquote(url.path.rsplit("/", 1)[-1])
                if not self._faulted("GET node"):
                    self._reply(200, state.nodes[name]) if name in state.nodes else self._reply(404, {})
            elif url.path == "/api/v1/pods":
                node = urllib.parse.parse_qs(url.query)["fieldSelector"][0].split("=", 1)[1]
                if not self._faulted("GET pods"):
                    self._reply(200, {"items": [p for p in state.pods if p["spec"]["nodeName"] == node]})
            else:
                self._reply(404, {})

        def do_PATCH(self) -> None:
            body = self._body()
            state.calls.append(("PATCH", self.path, body))
            if self._faulted("PATCH node"):
                return
            node = state.nodes[urllib.parse.unquote(self.path.rsplit("/", 1)[-1])]
            if isinstance(body, list):  # application/json-patch+json: all or nothing
                patched = copy.deepcopy(node)
                if not _json_patch(patched, body):
                    self._reply(422, {"kind": "Status", "code": 422, "message": "the test operation failed"})
                    return
                node.clear()
                node.update(patched)
                self._reply(200, node)
                return
            node["metadata"]["annotations"].update(body["metadata"]["annotations"])
            node["spec"].update(body["spec"])
            self._reply(200, node)

        def do_POST(self) -> None:
            body = self._body()
            state.calls.append(("POST", self.path, body))
            if self._faulted("POST eviction"):
                return
            if body["metadata"]["name"] in state.protected:
                message = "Cannot evict pod as it would violate the pod's disruption budget."
                cause = {"reason": "DisruptionBudget", "message": "The disruption budget train needs 1"}
                status = {"kind": "Status", "code": 429, "message": message, "details": {"causes": [cause]}}
                self._reply(429, status)
            else:
                self._reply(201, {})

    return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (timeout) closes its connection: not an error of the fake server."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@dataclass
class KubeServer:
    endpoint: str
    ca_pem: str
    state: KubeState

    def factory(self, *, timeout_s: float = 10.0) -> Callable[[Any], KubeApi]:
        """A ``kube_factory`` for ``index.process``: a client of this server bound to the invocation's deadline."""
        return lambda deadline: KubeApi(
            self.endpoint, self.ca_pem, "token", deadline=deadline, timeout_s=timeout_s, sleep=lambda _s: None
        )


def kube_server(tmp: Path) -> Iterator[KubeServer]:
    """A TLS fake Kubernetes API on loopback (a generator for a fixture)."""
    cert_path, key_path, pem = _certificate(tmp)
    state = KubeState()
    httpd = _QuietServer(("127.0.0.1", 0), _handler(state))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield KubeServer(f"https://localhost:{httpd.server_address[1]}", pem, state)
    finally:
        httpd.shutdown()
        httpd.server_close()
