"""Backend actions of the remediation handler: Slurm through SSM Run Command, Kubernetes, Auto Scaling, EC2.

Each function does one AWS or Kubernetes call sequence and raises on failure; the caller (index.py) logs, notifies and
counts. Standard library + boto3 only.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import ssl
import urllib.parse
from typing import Any

RUN_SHELL_DOCUMENT = "AWS-RunShellScript"
# PCS tags every instance it launches with its node group id (PCS User Guide, working-with_cng_find-instances; the
# same constant as fmconstructs.pcs.NODE_GROUP_ID_TAG, which this module cannot import inside Lambda).
PCS_NODE_GROUP_TAG = "aws:pcs:compute-node-group-id"
# ParallelCluster tags its instances with the cluster name and node type (aws-parallelcluster 3.16.1
# pcluster/constants.py PCLUSTER_CLUSTER_NAME_TAG "parallelcluster:cluster-name", PCLUSTER_NODE_TYPE_TAG
# "parallelcluster:node-type"; pcluster/models/cluster.py NodeType HEAD_NODE "HeadNode", COMPUTE "Compute", and
# _get_instance_filters filters instances by these tags).
PC_CLUSTER_TAG = "parallelcluster:cluster-name"
PC_NODE_TYPE_TAG = "parallelcluster:node-type"
PC_HEAD_NODE = "HeadNode"
PC_COMPUTE = "Compute"
# What may reach the shell script: IPv4 addresses, EC2 private DNS host labels, a reason of safe characters.
_ADDRESS = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_HOST = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:/-]")

# Slurm modes: DRAIN lets running jobs finish and schedules no new ones; DOWN takes the node away now, ending what
# runs there; reboot ASAP drains the node and reboots it once its jobs are done, then resumes it (Slurm scontrol man
# page, "update NodeName ... State" and "reboot [ASAP] [nextstate={RESUME|DOWN}] [reason=<reason>]"; UNCONFIRMED: the
# man page was not re-read for this module, nor whether PCS configures the RebootProgram a reboot needs).
SLURM_DRAIN, SLURM_DOWN, SLURM_REBOOT = "drain", "down", "reboot"


def safe_reason(text: str) -> str:
    return _UNSAFE.sub("_", text)[:120]


def slurm_script(addresses: list[str], mode: str, reason: str) -> str:
    """The shell script run on the login node (PCS) or head node (ParallelCluster): find the Slurm nodes whose address
    or host name is in ``addresses`` (``sinfo -N -o '%N %o %n'``: node name, NodeAddr, NodeHostName) and apply ``mode``
    with ``reason``. Slurm lives in /opt/aws/pcs/scheduler/slurm-<version>/bin on PCS (PCS User Guide, as in
    pcs/user_data.py) and /opt/slurm/bin on ParallelCluster (User Guide slurm-prolog-epilog-v3 paths)."""
    wanted = " ".join(sorted({a for a in addresses if _ADDRESS.fullmatch(a) or _HOST.fullmatch(a)}))
    reason = safe_reason(reason)
    commands = {
        SLURM_DRAIN: f'scontrol update nodename="$nodes" state=DRAIN reason="{reason}"',
        SLURM_DOWN: f'scontrol update nodename="$nodes" state=DOWN reason="{reason}"',
        SLURM_REBOOT: f'scontrol reboot ASAP nextstate=RESUME reason="{reason}" "$nodes"',
    }
    return "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            'for d in /opt/aws/pcs/scheduler/slurm-*/bin /opt/slurm/bin; do [ -d "$d" ] && PATH="$d:$PATH"; done',
            "export PATH",
            f'wanted=" {wanted} "',
            'nodes=""',
            "while read -r name addr host; do",
            '  case "$wanted" in',
            '    *" $addr "*|*" $host "*)',
            '      case ",$nodes," in *",$name,"*) ;; *) nodes="${nodes:+$nodes,}$name" ;; esac ;;',
            "  esac",
            "done < <(sinfo -h -N -o '%N %o %n')",
            'if [ -z "$nodes" ]; then echo "no Slurm node matches"; exit 3; fi',
            commands[mode],
            f'echo "{mode}: $nodes"',
            "",
        ]
    )


def describe(ec2: Any, instance_id: str) -> dict[str, Any]:
    """The instance (ec2:DescribeInstances by id), with ``Tags`` as a dict; {} when it does not exist."""
    pages = ec2.describe_instances(InstanceIds=[instance_id]).get("Reservations", [])
    for reservation in pages:
        for instance in reservation.get("Instances", []):
            out = dict(instance)
            out["Tags"] = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            return out
    return {}


def addresses_of(instance: dict[str, Any]) -> list[str]:
    out = [str(instance.get("PrivateIpAddress") or "")]
    dns = str(instance.get("PrivateDnsName") or "")
    out.append(dns.split(".", 1)[0])
    return [a for a in out if a]


def slurm_host(ec2: Any, target: dict[str, Any]) -> str | None:
    """A running login node (PCS, by node group tag) or head node (ParallelCluster, by cluster name and node type)."""
    if target["backend"] == "pcs":
        filters = [{"Name": f"tag:{PCS_NODE_GROUP_TAG}", "Values": [target["login_node_group_id"]]}]
    else:
        filters = [
            {"Name": f"tag:{PC_CLUSTER_TAG}", "Values": [target["cluster"]]},
            {"Name": f"tag:{PC_NODE_TYPE_TAG}", "Values": [PC_HEAD_NODE]},
        ]
    filters.append({"Name": "instance-state-name", "Values": ["running"]})
    ids = sorted(
        i["InstanceId"]
        for r in ec2.describe_instances(Filters=filters).get("Reservations", [])
        for i in r.get("Instances", [])
    )
    return ids[0] if ids else None


def run_slurm(ssm: Any, host: str, script: str, comment: str) -> str:
    """Send ``script`` to ``host`` with SSM Run Command (AWS-RunShellScript); returns the command id."""
    response = ssm.send_command(
        InstanceIds=[host],
        DocumentName=RUN_SHELL_DOCUMENT,
        Comment=comment[:100],
        Parameters={"commands": [script]},
    )
    return str(response["Command"]["CommandId"])


def in_auto_scaling_group(autoscaling: Any, instance_id: str, group: str) -> bool:
    found = autoscaling.describe_auto_scaling_instances(InstanceIds=[instance_id]).get("AutoScalingInstances", [])
    return any(i.get("AutoScalingGroupName") == group for i in found)


def set_unhealthy(autoscaling: Any, instance_id: str) -> None:
    """autoscaling:SetInstanceHealth Unhealthy: "Amazon EC2 Auto Scaling terminates and replaces the unhealthy
    instance" (Auto Scaling API reference, SetInstanceHealth HealthStatus). The grace period is not respected:
    the fault is known now (ShouldRespectGracePeriod False)."""
    autoscaling.set_instance_health(InstanceId=instance_id, HealthStatus="Unhealthy", ShouldRespectGracePeriod=False)


# --- Kubernetes: cordon, evict, as kubectl drain does ------------------------------------------------------------

# EKS bearer token, the aws-iam-authenticator format (as in fmconstructs/capacity_events/handler/index.py, which cites
# kubernetes-sigs/aws-iam-authenticator pkg/token/token.go and awscli customizations/eks/get_token.py).
TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PATCH_CONTENT_TYPE = "application/strategic-merge-patch+json"
REASON_ANNOTATION = "fmconstructs.io/remediation-reason"
# The Eviction API answers 429 Too Many Requests when a PodDisruptionBudget does not allow the eviction now
# (Kubernetes docs, "API-initiated Eviction": "429 Too Many Requests ... because of the configured
# PodDisruptionBudget"); kubectl drain retries later. The handler does not wait: it reports the node as blocked.
EVICTION_BLOCKED = 429


class KubeError(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


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


class KubeApi:
    """The Kubernetes calls remediation needs, over HTTPS with the cluster's CA (standard library only)."""

    def __init__(self, endpoint: str, ca_pem: str | None, token: str, *, timeout_s: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(endpoint)
        if parsed.scheme not in ("https", "http") or not parsed.hostname:
            raise KubeError(f"not an endpoint: {endpoint!r}")
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, parsed.port
        self.token, self.timeout_s = token, timeout_s
        self.context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None

    def request(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = content_type
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s, context=self.context)
        else:  # a local fake API server in tests
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            payload = response.read()
        finally:
            conn.close()
        if response.status >= 300:
            text = payload[:200].decode(errors="replace")
            raise KubeError(f"{method} {path}: HTTP {response.status} {text}", response.status)
        return json.loads(payload) if payload else {}

    def node_for_instance(self, instance_id: str) -> str:
        """The node whose ``spec.providerID`` ends with ``/<instance-id>`` (aws:///<zone>/<id>), or ''."""
        token = ""
        while True:
            query = {"limit": "500", **({"continue": token} if token else {})}
            page = self.request("GET", "/api/v1/nodes?" + urllib.parse.urlencode(query))
            for node in page.get("items") or []:
                provider = str((node.get("spec") or {}).get("providerID") or "")
                if provider.startswith("aws://") and provider.rsplit("/", 1)[-1] == instance_id:
                    return str(node["metadata"]["name"])
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return ""

    def cordon(self, node: str, reason: str) -> None:
        body = {"metadata": {"annotations": {REASON_ANNOTATION: reason}}, "spec": {"unschedulable": True}}
        self.request("PATCH", "/api/v1/nodes/" + urllib.parse.quote(node, safe=""), body, PATCH_CONTENT_TYPE)

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={node}"})
        return list(self.request("GET", "/api/v1/pods?" + query).get("items") or [])

    def evict(self, namespace: str, name: str) -> None:
        """POST .../pods/<name>/eviction (policy/v1 Eviction): the API server checks PodDisruptionBudgets."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}/eviction"
        self.request("POST", path, body)


def kube_for_cluster(eks: Any, sts: Any, cluster_name: str) -> KubeApi:
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    return KubeApi(cluster["endpoint"], ca_pem, eks_token(sts, cluster_name))


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


def drain_node(kube: Any, node: str, reason: str) -> tuple[list[str], list[str]]:
    """Cordon ``node`` and evict its pods; returns (evicted, blocked) as ``namespace/name``. A pod whose eviction a
    PodDisruptionBudget refuses (HTTP 429) is blocked; any other error raises."""
    kube.cordon(node, reason)
    evicted: list[str] = []
    blocked: list[str] = []
    for pod in kube.pods_on(node):
        if not evictable(pod):
            continue
        namespace = str(pod["metadata"].get("namespace") or "default")
        name = str(pod["metadata"]["name"])
        try:
            kube.evict(namespace, name)
            evicted.append(f"{namespace}/{name}")
        except KubeError as error:
            if error.status != EVICTION_BLOCKED:
                raise
            blocked.append(f"{namespace}/{name}")
    return evicted, blocked
