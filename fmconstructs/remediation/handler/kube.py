"""The remediation handler's Kubernetes side: an API client that retries within the invocation's deadline, and the
cordon-and-evict drain (standard library + botocore's presigning only; the handler folder is the Lambda asset).

Every call has a timeout (at most :data:`KUBE_TIMEOUT_S`, never past the :class:`~runtime.Deadline`) and is retried
with exponential backoff and jitter on :data:`KUBE_RETRY_STATUSES`, timeouts and connection errors while the deadline
allows; a ``Retry-After`` header in seconds is honoured (up to :data:`KUBE_MAX_DELAY_S`). A call the deadline cuts
short raises :class:`~runtime.OutOfTime`; any other failure :class:`KubeError`. The same policy as the
CapacityBlockEvents handler's client (``fmconstructs/capacity_events/handler/kube.py``), which this Lambda asset cannot
import.

Cordons are marked: :data:`CORDONED_BY_ANNOTATION` = :data:`CORDONED_BY_REMEDIATION` on the node, so that the EKS
node-check gate uncordons the node once its checks pass after a reboot, and so that a node an operator cordoned
(unschedulable without the mark) is told apart and left alone. Before a reboot, :func:`pend_node_checks` puts the
node-checks taint back on a node that has a gate (label :data:`NODE_CHECKS_GROUP_LABEL`): the gate finds it at boot,
runs the checks again and lifts taint and cordon on pass (``fmconstructs/health/kubernetes_gate.py``).
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import random
import ssl
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:  # package import (tests, fmconstructs)
    from . import runtime as rt
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, runtime a top-level module
    rt = importlib.import_module("runtime")

# Copies of fmconstructs.health.metric_names (this directory is the Lambda asset: it cannot import the package);
# tests/remediation/test_remediation_handler_contract.py keeps them equal.
#: The annotation remediation sets on a node it cordons, and its value.
CORDONED_BY_ANNOTATION = "fmconstructs.io/cordoned-by"
CORDONED_BY_REMEDIATION = "remediation"
#: Why remediation cordoned the node (shown by `kubectl describe node`); the gate removes it with the cordon.
REASON_ANNOTATION = "fmconstructs.io/remediation-reason"
# Copies of fmconstructs.eks.health's names (the same contract test keeps them equal): the node-checks taint, put back
# before a reboot on a node that has a gate (its group label), so that the gate checks it again at boot.
NODE_CHECKS_TAINT_KEY = "fmconstructs.io/node-checks"
NODE_CHECKS_TAINT_VALUE = "pending"
NODE_CHECKS_GROUP_LABEL = "fmconstructs.io/node-checks-group"
JSON_PATCH_CONTENT_TYPE = "application/json-patch+json"

# EKS bearer token, the aws-iam-authenticator format (as in fmconstructs/capacity_events/handler/kube.py, which cites
# kubernetes-sigs/aws-iam-authenticator pkg/token/token.go and awscli customizations/eks/get_token.py).
TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# What kubectl cordon sends: a strategic merge patch of spec.unschedulable (kubectl's drain/cordon.go uses
# StrategicMergePatchType, as the CapacityBlockEvents client notes).
PATCH_CONTENT_TYPE = "application/strategic-merge-patch+json"
# Kubernetes answers worth another try: 429 (API Priority and Fairness rejects with 429 and a Retry-After header:
# Kubernetes docs, "API Priority and Fairness") and 5xx from the API server or a proxy in front of it.
KUBE_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
KUBE_TIMEOUT_S = 10.0
KUBE_ATTEMPTS = 5
KUBE_BASE_DELAY_S = 0.5
KUBE_MAX_DELAY_S = 8.0
# The Eviction API answers 429 when a PodDisruptionBudget does not allow the eviction now (Kubernetes docs,
# "API-initiated Eviction": "429 Too Many Requests ... because of the configured PodDisruptionBudget"), with a Status
# whose details.causes carry reason "DisruptionBudget" and the message "Cannot evict pod as it would violate the pod's
# disruption budget." (as the API server answers; UNCONFIRMED: k8s.io/kubernetes pkg/registry/core/pod/storage/
# eviction.go was not opened, the body was seen in a recorded answer). kubectl drain retries later; the handler does
# not wait: it reports the pod as blocked. Any other 429 is throttling and retried.
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
NOT_FOUND = 404
_NODE_LIST_PAGE = 500


class KubeError(Exception):
    """A Kubernetes API call that did not succeed (``status`` 0: no answer)."""

    def __init__(self, message: str, status: int = 0, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def eks_token(sts: Any, cluster_name: str) -> str:
    def add_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, add_header, unique_id="fmconstructs-remediation-token")
    try:
        url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    finally:
        sts.meta.events.unregister(event, unique_id="fmconstructs-remediation-token")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(str(url).encode()).decode().rstrip("=")


def blocked_by_budget(error: KubeError) -> bool:
    """Whether an eviction's 429 is a PodDisruptionBudget refusal (not throttling)."""
    if error.status != 429:
        return False
    try:
        body = json.loads(error.body or b"{}")
    except ValueError:
        return False
    if not isinstance(body, dict):
        return False
    causes = (body.get("details") or {}).get("causes") or []
    if any(isinstance(c, dict) and c.get("reason") == DISRUPTION_BUDGET_CAUSE for c in causes):
        return True
    return "disruption budget" in str(body.get("message") or "").lower()


def _delay(attempt: int, retry_after: str) -> float:
    value = retry_after.strip()
    if value.isdigit():
        return min(KUBE_MAX_DELAY_S, float(value))
    return min(KUBE_MAX_DELAY_S, KUBE_BASE_DELAY_S * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.0)


class KubeApi:
    """The Kubernetes calls remediation needs, over HTTPS with the cluster's CA (see the module docstring).

    ``http://`` endpoints are accepted for a local fake API server only (tests, a harness); EKS endpoints are HTTPS.
    """

    def __init__(
        self,
        endpoint: str,
        ca_pem: str | None,
        token: str,
        *,
        deadline: rt.Deadline | None = None,
        timeout_s: float = KUBE_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(endpoint)
        if parsed.scheme not in ("https", "http") or not parsed.hostname:
            raise KubeError(f"not an endpoint: {endpoint!r}")
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.token, self.timeout_s, self.sleep = token, timeout_s, sleep
        self.deadline = deadline or rt.Deadline()
        self.context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
        self._nodes: list[dict[str, Any]] | None = None

    def _once(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, bytes, str]:
        timeout = min(self.timeout_s, self.deadline.left())
        if timeout <= 0:
            raise rt.OutOfTime(f"{method} {path}: not sent, the invocation's deadline has come")
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), str(response.getheader("Retry-After") or "")
        finally:
            conn.close()

    def request(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Any:
        """One call, retried as the module docstring says; the decoded JSON answer."""
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = content_type
        failure: KubeError | None = None
        for attempt in range(1, KUBE_ATTEMPTS + 1):
            retry_after = ""
            try:
                status, payload, retry_after = self._once(method, path, data, headers)
            except ssl.SSLCertVerificationError as error:  # the wrong server: another try will not help
                raise KubeError(f"{method} {path}: {error}") from None
            except (OSError, http.client.HTTPException) as error:  # timeouts, refused, reset
                failure = KubeError(f"{method} {path}: {type(error).__name__} {error} (attempt {attempt})")
            else:
                if status < 300:
                    try:
                        return json.loads(payload) if payload else {}
                    except ValueError:
                        raise KubeError(f"{method} {path}: HTTP {status} but not JSON", status, payload) from None
                text = payload[:200].decode(errors="replace")
                failure = KubeError(f"{method} {path}: HTTP {status} {text} (attempt {attempt})", status, payload)
                if status not in KUBE_RETRY_STATUSES or blocked_by_budget(failure):
                    raise failure
            if attempt == KUBE_ATTEMPTS:
                break
            delay = _delay(attempt, retry_after)
            if delay >= self.deadline.left():
                raise rt.OutOfTime(f"{failure}; no time left for another attempt")
            self.sleep(delay)
        raise failure or KubeError(f"{method} {path}: no attempt made")

    def nodes(self) -> list[dict[str, Any]]:
        """Every node (GET /api/v1/nodes, following ``metadata.continue``)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"limit": str(_NODE_LIST_PAGE), **({"continue": token} if token else {})}
            page = self.request("GET", "/api/v1/nodes?" + urllib.parse.urlencode(query))
            items.extend(page.get("items") or [])
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def node_for_instance(self, instance_id: str) -> str:
        """The node whose ``spec.providerID`` ends with ``/<instance-id>`` (aws:///<zone>/<id>), or ''. The node
        list is read once per client (one invocation), so that a burst of faults lists the nodes once."""
        if self._nodes is None:
            self._nodes = self.nodes()
        for node in self._nodes:
            provider = str((node.get("spec") or {}).get("providerID") or "")
            if provider.startswith("aws://") and provider.rsplit("/", 1)[-1] == instance_id:
                return str(node["metadata"]["name"])
        return ""

    def instance_of_node(self, name: str) -> str:
        """The instance id of node ``name`` (the last segment of its ``spec.providerID``, aws:///<zone>/<id>), or ''
        when there is no such node or it is not an EC2 instance."""
        try:
            node = self.node(name)
        except KubeError as error:
            if error.status == NOT_FOUND:
                return ""
            raise
        provider = str((node.get("spec") or {}).get("providerID") or "")
        instance = provider.rsplit("/", 1)[-1]
        return instance if provider.startswith("aws://") and instance.startswith("i-") else ""

    def node(self, name: str) -> dict[str, Any]:
        return dict(self.request("GET", "/api/v1/nodes/" + urllib.parse.quote(name, safe="")))

    def cordon(self, node: str, reason: str) -> None:
        """Cordon ``node`` and mark it as remediation's (:data:`CORDONED_BY_ANNOTATION`)."""
        annotations = {CORDONED_BY_ANNOTATION: CORDONED_BY_REMEDIATION, REASON_ANNOTATION: reason}
        body = {"metadata": {"annotations": annotations}, "spec": {"unschedulable": True}}
        self.request("PATCH", "/api/v1/nodes/" + urllib.parse.quote(node, safe=""), body, PATCH_CONTENT_TYPE)

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={node}"})
        return list(self.request("GET", "/api/v1/pods?" + query).get("items") or [])

    def evict(self, namespace: str, name: str) -> None:
        """POST .../pods/<name>/eviction (policy/v1 Eviction): the API server checks PodDisruptionBudgets."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}/eviction"
        self.request("POST", path, body)


def kube_for_cluster(eks: Any, sts: Any, cluster_name: str, deadline: rt.Deadline) -> KubeApi:
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    return KubeApi(cluster["endpoint"], ca_pem, eks_token(sts, cluster_name), deadline=deadline)


def _node_path(name: str) -> str:
    return "/api/v1/nodes/" + urllib.parse.quote(name, safe="")


def pend_node_checks(kube: Any, name: str) -> bool:
    """Before a reboot: the node-checks taint (``fmconstructs.io/node-checks=pending:NoSchedule``) back on ``name``
    when the node has a gate (label :data:`NODE_CHECKS_GROUP_LABEL`), so that the gate runs its checks again at boot
    and then lifts the taint and remediation's cordon. A JSON patch that ``test``s the taints it read (or adds the
    list when the node has none); a concurrent change (HTTP 409/422) is read again, 3 times. Returns whether the node
    has a gate (False: nothing changed; the node stays cordoned after the reboot)."""
    taint = {"key": NODE_CHECKS_TAINT_KEY, "value": NODE_CHECKS_TAINT_VALUE, "effect": "NoSchedule"}
    failure: KubeError | None = None
    for _attempt in range(3):
        node = kube.node(name)
        if NODE_CHECKS_GROUP_LABEL not in ((node.get("metadata") or {}).get("labels") or {}):
            return False
        taints = (node.get("spec") or {}).get("taints")
        if any(isinstance(t, dict) and t.get("key") == NODE_CHECKS_TAINT_KEY for t in taints or []):
            return True
        patch: list[dict[str, Any]] = (
            [
                {"op": "test", "path": "/spec/taints", "value": taints},
                {"op": "add", "path": "/spec/taints/-", "value": taint},
            ]
            if taints
            else [{"op": "add", "path": "/spec/taints", "value": [taint]}]
        )
        try:
            kube.request("PATCH", _node_path(name), patch, JSON_PATCH_CONTENT_TYPE)
            return True
        except KubeError as error:
            if error.status not in (409, 422):
                raise
            failure = error
    raise failure or KubeError(f"PATCH {_node_path(name)}: the taints kept changing")


def cordoned_by_someone_else(node: dict[str, Any]) -> bool:
    """Unschedulable without remediation's mark: an operator's (or another tool's) cordon, left alone."""
    spec = node.get("spec") or {}
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return bool(spec.get("unschedulable")) and annotations.get(CORDONED_BY_ANNOTATION) != CORDONED_BY_REMEDIATION


def evictable(pod: dict[str, Any]) -> bool:
    """What kubectl drain evicts: not DaemonSet pods (recreated on the node anyway), not mirror pods (static pods,
    annotation ``kubernetes.io/config.mirror``), not pods already finished (kubectl drain's filters, as in
    k8s.io/kubectl pkg/drain/filters.go; UNCONFIRMED: the file was not re-read for this module)."""
    metadata = pod.get("metadata") or {}
    if "kubernetes.io/config.mirror" in (metadata.get("annotations") or {}):
        return False
    if any(owner.get("kind") == "DaemonSet" for owner in metadata.get("ownerReferences") or []):
        return False
    return str((pod.get("status") or {}).get("phase") or "") not in ("Succeeded", "Failed")


@dataclass
class Drain:
    """What :func:`drain_node` did: ``operator`` when the node was cordoned by someone else (nothing done)."""

    operator: bool = False
    evicted: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


def drain_node(kube: Any, node: str, reason: str) -> Drain:
    """Cordon ``node`` (marked as remediation's) and evict its pods, unless someone else cordoned it. A pod whose
    eviction a PodDisruptionBudget refuses is blocked; any other error raises. Again on a node remediation already
    cordoned: the same result (idempotent)."""
    if cordoned_by_someone_else(kube.node(node)):
        return Drain(operator=True)
    kube.cordon(node, reason)
    out = Drain()
    for pod in kube.pods_on(node):
        if not evictable(pod):
            continue
        namespace = str(pod["metadata"].get("namespace") or "default")
        name = str(pod["metadata"]["name"])
        try:
            kube.evict(namespace, name)
            out.evicted.append(f"{namespace}/{name}")
        except KubeError as error:
            if error.status == NOT_FOUND:  # gone meanwhile: as good as evicted
                out.evicted.append(f"{namespace}/{name}")
            elif blocked_by_budget(error):
                out.blocked.append(f"{namespace}/{name}")
            else:
                raise
    return out
