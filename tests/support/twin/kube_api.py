"""A stateful fake Kubernetes API server for the EKS half of the twin: nodes, pods, taints, cordons, evictions, events.

:class:`FakeKubeApi` serves HTTPS on 127.0.0.1 (a certificate from :mod:`.kube_tls`, bearer tokens checked) the calls
the library's EKS code makes, and nothing more:

- ``GET /api/v1/nodes`` (``limit``/``continue`` paging) and ``GET /api/v1/nodes/<name>``: the node gate
  (:mod:`fmconstructs.health.kubernetes_gate`), the remediation handler (``handler/kube.py``) and the
  CapacityBlockEvents handler (``capacity_events/handler/kube.py``);
- ``PATCH /api/v1/nodes/<name>`` as merge, strategic merge or JSON patch (:mod:`.kube_patch`): the gate's annotation
  (merge) and taint removal (JSON patch with ``test``), the handlers' cordon (strategic merge);
- ``GET /api/v1/pods?fieldSelector=spec.nodeName=<node>`` and ``GET /api/v1/namespaces/<ns>/pods``;
- ``POST /api/v1/namespaces/<ns>/pods/<name>/eviction`` (policy/v1 Eviction): 201 and the pod is deleted, 404 for a
  pod that is gone, or 429 with a Status whose ``details.causes[].reason`` is ``DisruptionBudget`` when a
  :class:`Budget` (a PodDisruptionBudget with ``maxUnavailable: 0``) covers the pod (Kubernetes docs "API-initiated
  Eviction");
- ``GET /api/v1/events`` and ``/api/v1/namespaces/<ns>/events``, ``POST /api/v1/namespaces/<ns>/events``.

What the controllers of a cluster would do, it does itself, synchronously after each change:

- the node lifecycle controller's ``node.kubernetes.io/unschedulable:NoSchedule`` taint while ``spec.unschedulable``
  is true (Kubernetes docs "Taints and Tolerations", taint-based conditions: "node.kubernetes.io/unschedulable: Node
  is unschedulable");
- a ReplicaSet's part: an evicted or deleted pod with ``replicated`` set comes back as a new Pending pod;
- a tiny scheduler: a Pending pod binds to a node that is Ready, not unschedulable, matches its ``nodeSelector`` and
  whose ``NoSchedule``/``NoExecute`` taints it all tolerates (toleration matching as in "Taints and Tolerations":
  ``Exists`` with no key matches every taint; ``Equal`` matches key and value; an empty effect matches every
  effect), the node with the fewest pods first. Each binding is an Event ``Scheduled``; a pod no node fits stays
  Pending (``FailedScheduling``, once).

Every request is kept in :attr:`FakeKubeApi.requests` (method, path, content type, the user of the token, status).
"""

from __future__ import annotations

import copy
import itertools
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .kube_patch import PatchError, apply_patch
from .kube_tls import make_server_certificate

__all__ = ["Budget", "FakeKubeApi", "KubeRequest", "tolerates"]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class KubeRequest:
    method: str
    path: str
    content_type: str
    user: str
    status: int
    body: Any = None


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget with ``maxUnavailable: 0`` over the pods of ``namespace`` carrying every ``labels``."""

    name: str
    namespace: str
    labels: Mapping[str, str]


def _toleration_matches(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerates(pod: Mapping[str, Any], taints: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the pod tolerates every scheduling taint (``NoSchedule``/``NoExecute``) in ``taints``."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return all(
        any(_toleration_matches(t, taint) for t in tolerations)
        for taint in taints
        if taint.get("effect") in _SCHEDULING_EFFECTS
    )


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _status(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if causes:
        body["details"] = {"causes": causes}
    return body


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.code, self.body = code, _status(code, reason, message, causes)


class FakeKubeApi:
    """The fake API server (module docstring). ``tokens``: bearer token -> user name; a token accepted by
    ``token_check`` (e.g. an EKS ``k8s-aws-v1.`` token) is the user it returns."""

    def __init__(
        self,
        workdir: Path,
        *,
        tokens: Mapping[str, str] | None = None,
        token_check: Callable[[str], str | None] | None = None,
    ) -> None:
        self.workdir = workdir
        self.tokens = dict(tokens or {})
        self.token_check = token_check
        self.lock = threading.RLock()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.budgets: list[Budget] = []
        self.requests: list[KubeRequest] = []
        self._version = itertools.count(1)
        self._names = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.ca_pem = ""

    # --- the objects ------------------------------------------------------------------------------------------

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("metadata", {})["resourceVersion"] = str(next(self._version))
        return obj

    def event(self, kind: str, name: str, reason: str, message: str, namespace: str = "default") -> None:
        with self.lock:
            self.events.append(
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": f"{name}.{next(self._names):x}", "namespace": namespace},
                    "involvedObject": {"kind": kind, "name": name, "namespace": "" if kind == "Node" else namespace},
                    "reason": reason,
                    "message": message,
                    "type": "Normal",
                    "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            )

    def events_for(self, name: str) -> list[tuple[str, str]]:
        """(reason, message) of every event about the object ``name``."""
        with self.lock:
            return [(e["reason"], e["message"]) for e in self.events if e["involvedObject"]["name"] == name]

    def add_node(
        self,
        name: str,
        *,
        provider_id: str,
        labels: Mapping[str, str] | None = None,
        taints: Iterable[Mapping[str, str]] = (),
    ) -> dict[str, Any]:
        """A node as its kubelet registers it (``--register-with-taints``), Ready."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **dict(labels or {})}},
            "spec": {"providerID": provider_id, "taints": [dict(t) for t in taints]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
        }
        with self.lock:
            if name in self.nodes:
                raise ValueError(f"node {name} exists")
            self.nodes[name] = self._stamp(node)
            self.event("Node", name, "RegisteredNode", f"Node {name} event: Registered Node {name}")
            self.settle()
        return self.node(name)

    def node(self, name: str) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.nodes[name])

    def set_ready(self, name: str, ready: bool) -> None:
        with self.lock:
            conditions = self.nodes[name]["status"]["conditions"]
            conditions[0].update(status="True" if ready else "False", reason="KubeletReady" if ready else "Reboot")
            self._stamp(self.nodes[name])
            self.event("Node", name, "NodeReady" if ready else "NodeNotReady", f"Node {name} Ready={ready}")
            self.settle()

    def delete_node(self, name: str) -> None:
        """The node object goes (its instance was terminated) with every pod bound to it."""
        with self.lock:
            self.nodes.pop(name)
            for key, pod in list(self.pods.items()):
                if pod["spec"].get("nodeName") == name:
                    self._delete_pod(key, "NodeDeleted")
            self.event("Node", name, "RemovingNode", f"Node {name} event: Removing Node {name} from Controller")
            self.settle()

    def create_pod(
        self,
        name: str,
        *,
        namespace: str = "default",
        labels: Mapping[str, str] | None = None,
        tolerations: Iterable[Mapping[str, str]] = (),
        node_selector: Mapping[str, str] | None = None,
        node_name: str = "",
        owner_kind: str = "",
        replicated: bool = False,
    ) -> dict[str, Any]:
        """A pod (Pending unless ``node_name`` binds it, as the DaemonSet controller does); ``replicated``: a
        ReplicaSet brings it back as a new pod when it is evicted or deleted."""
        metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        if owner_kind:
            metadata["ownerReferences"] = [{"kind": owner_kind, "name": name.rsplit("-", 1)[0], "controller": True}]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": {
                "tolerations": [dict(t) for t in tolerations],
                "nodeSelector": dict(node_selector or {}),
                **({"nodeName": node_name} if node_name else {}),
            },
            "status": {"phase": "Running" if node_name else "Pending"},
            "twin": {"replicated": replicated},
        }
        with self.lock:
            self.pods[(namespace, name)] = self._stamp(pod)
            self.settle()
        return copy.deepcopy(pod)

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(p) for p in self.pods.values() if p["spec"].get("nodeName") == node]

    def pending(self) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(p) for p in self.pods.values() if not p["spec"].get("nodeName")]

    def _delete_pod(self, key: tuple[str, str], reason: str) -> None:
        pod = self.pods.pop(key)
        self.event("Pod", key[1], reason, f"pod {key[0]}/{key[1]} deleted ({reason})", key[0])
        if pod["twin"]["replicated"]:
            base = key[1].rsplit("-", 1)[0]
            self.create_pod(
                f"{base}-{next(self._names):x}",
                namespace=key[0],
                labels=pod["metadata"]["labels"],
                tolerations=pod["spec"]["tolerations"],
                node_selector=pod["spec"]["nodeSelector"],
                replicated=True,
            )

    # --- what the controllers do --------------------------------------------------------------------------------

    def settle(self) -> None:
        """The node lifecycle controller's unschedulable taint, then the scheduler (module docstring)."""
        with self.lock:
            for node in self.nodes.values():
                taints = node["spec"].setdefault("taints", []) or []
                has = any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints)
                if node["spec"].get("unschedulable") and not has:
                    taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
                elif not node["spec"].get("unschedulable") and has:
                    taints[:] = [t for t in taints if t.get("key") != UNSCHEDULABLE_TAINT]
                node["spec"]["taints"] = taints
            for pod in self.pods.values():
                if not pod["spec"].get("nodeName"):
                    self._schedule(pod)

    def fits(self, pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        labels = node["metadata"].get("labels") or {}
        return (
            _ready(node)
            and not node["spec"].get("unschedulable")
            and all(labels.get(k) == v for k, v in selector.items())
            and tolerates(pod, node["spec"].get("taints") or [])
        )

    def _schedule(self, pod: dict[str, Any]) -> None:
        candidates = [n for n in self.nodes.values() if self.fits(pod, n)]
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        if not candidates:
            if not pod["twin"].get("unschedulable_noted"):
                pod["twin"]["unschedulable_noted"] = True
                self.event("Pod", name, "FailedScheduling", f"0/{len(self.nodes)} nodes are available", namespace)
            return
        load = {n["metadata"]["name"]: 0 for n in candidates}
        for other in self.pods.values():
            if other["spec"].get("nodeName") in load:
                load[other["spec"]["nodeName"]] += 1
        chosen = min(load, key=lambda n: (load[n], n))
        pod["spec"]["nodeName"] = chosen
        pod["status"]["phase"] = "Running"
        pod["twin"].pop("unschedulable_noted", None)
        self._stamp(pod)
        self.event("Pod", name, "Scheduled", f"Successfully assigned {namespace}/{name} to {chosen}", namespace)

    # --- the API ------------------------------------------------------------------------------------------------

    def _list(self, items: list[dict[str, Any]], kind: str, query: Mapping[str, str]) -> dict[str, Any]:
        limit = int(query.get("limit") or 0)
        start = int(query.get("continue") or 0)
        page = items[start : start + limit] if limit else items[start:]
        more = bool(limit) and start + limit < len(items)
        metadata = {"resourceVersion": str(next(self._version)), **({"continue": str(start + limit)} if more else {})}
        return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "items": [self._public(i) for i in page]}

    @staticmethod
    def _public(obj: Mapping[str, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in obj.items() if k != "twin"}

    def _pods(self, namespace: str | None, query: Mapping[str, str]) -> list[dict[str, Any]]:
        selector = query.get("fieldSelector") or ""
        wanted: dict[str, str] = {}
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            if key != "spec.nodeName":
                raise ApiError(400, "BadRequest", f"field selector {key} is not served by the twin")
            wanted[key] = value
        return [
            p
            for (ns, _), p in sorted(self.pods.items())
            if (namespace is None or ns == namespace)
            and ("spec.nodeName" not in wanted or p["spec"].get("nodeName", "") == wanted["spec.nodeName"])
        ]

    def _evict(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        labels = pod["metadata"].get("labels") or {}
        for budget in self.budgets:
            if budget.namespace == namespace and all(labels.get(k) == v for k, v in budget.labels.items()):
                raise ApiError(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    [{"reason": "DisruptionBudget", "message": f"The disruption budget {budget.name} needs 0 more"}],
                )
        self._delete_pod((namespace, name), "Evicted")
        self.settle()
        return _status(201, "", "")  # the API server answers a Status (success) to an Eviction

    def _patch_node(self, name: str, content_type: str, body: Any) -> dict[str, Any]:
        node = self.nodes.get(name)
        if node is None:
            raise ApiError(404, "NotFound", f'nodes "{name}" not found')
        try:
            patched = apply_patch(node, content_type, body)
        except PatchError as error:
            raise ApiError(error.status, "Invalid", str(error)) from None
        if patched.get("metadata", {}).get("name") != name or not isinstance(patched.get("spec", {}), dict):
            raise ApiError(422, "Invalid", "metadata.name is immutable and spec an object")
        if not isinstance(patched["spec"].get("taints") or [], list):
            raise ApiError(422, "Invalid", "spec.taints must be a list")
        was = bool(node["spec"].get("unschedulable"))
        self.nodes[name] = self._stamp(patched)
        now = bool(patched["spec"].get("unschedulable"))
        if was != now:
            self.event("Node", name, "NodeNotSchedulable" if now else "NodeSchedulable", f"Node {name} cordon={now}")
        self.settle()
        return self._public(self.nodes[name])

    def route(self, method: str, path: str, query: Mapping[str, str], content_type: str, body: Any) -> Any:
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        with self.lock:
            if parts[:2] != ["api", "v1"]:
                raise ApiError(404, "NotFound", f"the twin serves /api/v1 only, not {path}")
            rest = parts[2:]
            if rest == ["nodes"] and method == "GET":
                return self._list(sorted(self.nodes.values(), key=lambda n: n["metadata"]["name"]), "NodeList", query)
            if len(rest) == 2 and rest[0] == "nodes":
                if method == "GET":
                    if rest[1] not in self.nodes:
                        raise ApiError(404, "NotFound", f'nodes "{rest[1]}" not found')
                    return self._public(self.nodes[rest[1]])
                if method == "PATCH":
                    return self._patch_node(rest[1], content_type, body)
            if rest == ["pods"] and method == "GET":
                return self._list(self._pods(None, query), "PodList", query)
            if rest in (["events"],) and method == "GET":
                return self._list(list(self.events), "EventList", query)
            if len(rest) >= 3 and rest[0] == "namespaces":
                return self._namespaced(method, rest[1], rest[2:], query, body)
        raise ApiError(405, "MethodNotAllowed", f"{method} {path} is not served by the twin")

    def _namespaced(self, method: str, namespace: str, rest: list[str], query: Mapping[str, str], body: Any) -> Any:
        if rest == ["pods"] and method == "GET":
            return self._list(self._pods(namespace, query), "PodList", query)
        if len(rest) == 3 and rest[0] == "pods" and rest[2] == "eviction" and method == "POST":
            if not isinstance(body, dict) or body.get("kind") != "Eviction":
                raise ApiError(400, "BadRequest", "the body of an eviction is a policy/v1 Eviction")
            return self._evict(namespace, rest[1])
        if rest == ["events"] and method == "GET":
            return self._list([e for e in self.events if e["metadata"]["namespace"] == namespace], "EventList", query)
        if rest == ["events"] and method == "POST" and isinstance(body, dict):
            self.events.append({**body, "metadata": {**(body.get("metadata") or {}), "namespace": namespace}})
            return body
        raise ApiError(405, "MethodNotAllowed", f"{method} namespaces/{namespace}/{'/'.join(rest)}")

    def user_of(self, authorization: str) -> str | None:
        scheme, _, token = authorization.partition(" ")
        if scheme != "Bearer" or not token:
            return None
        if token in self.tokens:
            return self.tokens[token]
        return self.token_check(token) if self.token_check else None

    # --- the server ---------------------------------------------------------------------------------------------

    def start(self) -> FakeKubeApi:
        certificate = make_server_certificate(self.workdir / "kube-api-tls")
        self.ca_pem = certificate.ca_pem
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate.cert_file, certificate.key_file)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-kube-api", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake Kubernetes API is not started")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeKubeApi:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler_for(api: FakeKubeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, code: int, body: Any) -> None:
            payload = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            content_type = str(self.headers.get("Content-Type") or "")
            user = api.user_of(str(self.headers.get("Authorization") or ""))
            body: Any = None
            code, answer = 200, None
            try:
                if user is None:
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                body = json.loads(raw) if raw else None
                answer = api.route(self.command, url.path, query, content_type, body)
                code = 201 if self.command == "POST" else 200
            except ApiError as error:
                code, answer = error.code, error.body
            except ValueError as error:
                code, answer = 400, _status(400, "BadRequest", f"not JSON: {error}")
            with api.lock:
                api.requests.append(KubeRequest(self.command, self.path, content_type, user or "", code, body))
            self._answer(code, answer)

        do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
