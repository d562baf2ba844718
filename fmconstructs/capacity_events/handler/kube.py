"""The Kubernetes API client of the EKS cordon (standard library + botocore's presigning only; split from index.py,
which re-exports these names). It runs in the handler's Lambda next to index.py: the whole ``handler`` folder is the
asset.
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
from typing import Any

try:  # package import (tests, fmconstructs)
    from . import budget as bg
except ImportError:  # pragma: no cover - Lambda: the asset's root is this directory, budget a top-level module
    bg = importlib.import_module("budget")

# EKS bearer token, the aws-iam-authenticator format (kubernetes-sigs/aws-iam-authenticator pkg/token/token.go:
# v1Prefix "k8s-aws-v1.", clusterIDHeader "x-k8s-aws-id", requestPresignParam 60, base64.RawURLEncoding of the
# presigned sts:GetCallerIdentity URL; the AWS CLI's awscli/customizations/eks/get_token.py builds the same token with
# botocore: URL_TIMEOUT 60, TOKEN_PREFIX, the header injected on "before-sign.sts.GetCallerIdentity", urlsafe base64
# with "=" stripped). STS accepts the signature for 15 minutes after X-Amz-Date whatever X-Amz-Expires says (same file).
# sts:GetCallerIdentity needs no IAM permission (STS API reference, GetCallerIdentity: "No permissions are required").
TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_URL_EXPIRES_S = 60
# Node annotations set with the cordon, so that `kubectl describe node` shows why the node is unschedulable.
ENDS_AT_ANNOTATION = "fmconstructs.io/capacity-block-ends-at"
RESERVATION_ANNOTATION = "fmconstructs.io/capacity-reservation-id"
# What kubectl cordon sends: a strategic merge patch setting spec.unschedulable (kubectl reference, "kubectl patch":
# kubectl patch node k8s-node-1 -p '{"spec":{"unschedulable":true}}'; kubectl's drain/cordon.go uses
# StrategicMergePatchType).
PATCH_CONTENT_TYPE = "application/strategic-merge-patch+json"
KUBE_TIMEOUT_S = 10.0
_NODE_LIST_PAGE = 500


def eks_token(sts: Any, cluster_name: str) -> str:
    """A Kubernetes bearer token for ``cluster_name``: a presigned sts:GetCallerIdentity URL signed with the
    ``x-k8s-aws-id`` header, base64url without padding, prefixed ``k8s-aws-v1.`` (see the constants above)."""

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, add_cluster_header, unique_id="fmconstructs-eks-token")
    try:
        url = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=TOKEN_URL_EXPIRES_S, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister(event, unique_id="fmconstructs-eks-token")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(str(url).encode()).decode().rstrip("=")


class KubeError(Exception):
    """A Kubernetes API call that did not succeed (status and a short body)."""


# Kubernetes answers that are worth another try: 429 Too Many Requests (API Priority and Fairness rejects with 429
# and a Retry-After header: Kubernetes docs, "API Priority and Fairness") and 5xx from the API server or a proxy in
# front of it; other statuses fail at once.
KUBE_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
KUBE_ATTEMPTS = 4
KUBE_BASE_DELAY_S = 0.5
KUBE_MAX_DELAY_S = 5.0


class KubeApi:
    """The few Kubernetes API calls the cordon needs, over HTTPS with the cluster's CA (standard library only).

    The CA is EKS DescribeCluster ``certificateAuthority.data`` ("The certificate-authority-data for your cluster",
    base64 of the PEM certificate, as in a kubeconfig's certificate-authority-data), loaded with ``cadata``; host
    names are checked (``ssl.create_default_context``). Each call has a timeout (``timeout_s``, never past the
    ``budget``) and is retried with exponential backoff and jitter on :data:`KUBE_RETRY_STATUSES`, timeouts and
    connection errors while the budget lasts (``Retry-After`` is honoured up to :data:`KUBE_MAX_DELAY_S`)."""

    def __init__(
        self,
        endpoint: str,
        ca_pem: str,
        token: str,
        *,
        timeout_s: float = KUBE_TIMEOUT_S,
        budget: bg.Budget | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(endpoint)
        if parsed.scheme != "https" or not parsed.hostname:
            raise KubeError(f"not an https endpoint: {endpoint!r}")
        self.host = parsed.hostname
        self.port = parsed.port or 443
        self.token = token
        self.timeout_s = timeout_s
        self.budget = budget or bg.Budget(bg.DEFAULT_BUDGET_S)
        self.sleep = sleep
        self.context = ssl.create_default_context(cadata=ca_pem)

    def _once(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, bytes, str]:
        timeout = min(self.timeout_s, self.budget.left())
        if timeout <= 0:
            raise KubeError(f"{method} {path}: not sent, the time budget is spent")
        conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(), str(response.getheader("Retry-After") or "")
        finally:
            conn.close()

    def request(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in range(1, KUBE_ATTEMPTS + 1):
            retry_after = ""
            try:
                status, payload, retry_after = self._once(method, path, data, headers)
            except (OSError, http.client.HTTPException) as error:  # timeouts, refused, reset, TLS
                if attempt == KUBE_ATTEMPTS or self.budget.expired():
                    raise KubeError(f"{method} {path}: {type(error).__name__} {error} (attempt {attempt})") from None
            else:
                text = payload[:200].decode(errors="replace")
                if status < 300:
                    try:
                        return json.loads(payload) if payload else {}
                    except ValueError:
                        raise KubeError(f"{method} {path}: HTTP {status} but not JSON: {text!r}") from None
                if status not in KUBE_RETRY_STATUSES or attempt == KUBE_ATTEMPTS:
                    raise KubeError(f"{method} {path}: HTTP {status} {text} (attempt {attempt})")
            delay = min(KUBE_MAX_DELAY_S, KUBE_BASE_DELAY_S * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            if retry_after.strip().isdigit():
                delay = min(KUBE_MAX_DELAY_S, float(retry_after.strip()))
            if delay >= self.budget.left():
                raise KubeError(f"{method} {path}: gave up after attempt {attempt}, the time budget is spent")
            self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def nodes(self) -> list[dict[str, Any]]:
        """Every node (GET /api/v1/nodes, following ``metadata.continue``)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"limit": str(_NODE_LIST_PAGE)}
            if token:
                query["continue"] = token
            page = self.request("GET", "/api/v1/nodes?" + urllib.parse.urlencode(query))
            items.extend(page.get("items") or [])
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def cordon(self, name: str, annotations: dict[str, str]) -> None:
        """PATCH /api/v1/nodes/<name>: ``spec.unschedulable`` true, plus ``annotations``."""
        body = {"metadata": {"annotations": annotations}, "spec": {"unschedulable": True}}
        self.request("PATCH", "/api/v1/nodes/" + urllib.parse.quote(name, safe=""), body, PATCH_CONTENT_TYPE)


def provider_instance_id(node: dict[str, Any]) -> str:
    """The EC2 instance id of a node's ``spec.providerID`` (``aws:///<zone>/<instance-id>``, the form the AWS cloud
    provider sets: awsInstance.ProviderID, "aws:///" + zone + "/" + instance id), or ''."""
    provider = str((node.get("spec") or {}).get("providerID") or "")
    if not provider.startswith("aws://"):
        return ""
    last = provider.rsplit("/", 1)[-1]
    return last if last.startswith("i-") else ""


def match_nodes(nodes: list[dict[str, Any]], instances: list[dict[str, Any]]) -> dict[str, str]:
    """Node name -> instance id for the block's instances: by ``spec.providerID`` (independent of node naming); a node
    without a providerID matches by name = the instance's private DNS name (the EKS default node name)."""
    by_id = {str(i["InstanceId"]): i for i in instances if i.get("InstanceId")}
    by_dns = {str(i.get("PrivateDnsName")): str(i["InstanceId"]) for i in by_id.values() if i.get("PrivateDnsName")}
    out: dict[str, str] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        if not name:
            continue
        instance_id = provider_instance_id(node)
        if instance_id:
            if instance_id in by_id:
                out[name] = instance_id
        elif name in by_dns:
            out[name] = by_dns[name]
    return out


def kube_for_cluster(eks: Any, sts: Any, cluster_name: str, budget: bg.Budget | None = None) -> KubeApi:
    """A :class:`KubeApi` for the cluster: endpoint and CA from eks:DescribeCluster, a fresh token."""
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    return KubeApi(cluster["endpoint"], ca_pem, eks_token(sts, cluster_name), budget=budget)
