"""The EKS half of the cluster twin: GPU nodes against the fake Kubernetes API, with what the library renders.

:class:`EksTwin` runs, on 127.0.0.1:

- the fake API server (:mod:`.kube_api`), HTTPS with a throwaway CA;
- per GPU node (named ``ip-127-0-0-N.ec2.internal`` as EKS names nodes after their private DNS name, provider id
  ``aws:///us-east-1a/<instance id>`` of a moto instance): a node root (``FMCONSTRUCTS_ROOT``) with the fake GPU,
  EFA and DCGM tools of :mod:`.nodes` in ``<root>/bin``; a node object registered with the node group's rendered
  taints and labels (:mod:`.eks_rendered`); the pods of the two rendered DaemonSets bound to it;
- the **node-check gate pod**: the rendered container command (``sh -c <wrapper>``) run as a process, with the pod's
  volumes (the ConfigMap's ``node-gate.sh``, the service account's ``token`` and ``ca.crt``) at twin paths and its
  environment as the kubelet gives it (``NODE_NAME`` from the downward API, ``KUBERNETES_SERVICE_HOST``/``PORT``),
  plus ``FMCONSTRUCTS_ROOT``. Two substitutions, nothing else: each container mount path in the command becomes the
  twin directory of that volume, and ``nsenter --target 1 ... --`` (enter the host's namespaces) is dropped: the
  twin node's "host" is this machine with the node root as ``FMCONSTRUCTS_ROOT``;
- the **node-exporter pod**: a real node_exporter (:mod:`.exporters`) reading the directory the rendered DaemonSet's
  ``--collector.textfile.directory`` names inside the container, resolved through its volumes: a ``hostPath`` is
  ``<node root><path>`` (shared with the host, where the gate writes), an ``emptyDir`` a directory of the pod's own
  (shared only by the pod's containers). The EFA collector sidecar is not run (no EFA sysfs in the twin);
- a fake dcgm-exporter per node (:mod:`.exporters`), behind the rendered chart's Service port and annotations;
- real Prometheus and Alertmanager (:class:`~.monitoring.MonitoringTwin`) with the workspace's rules and routes, and
  as scrape configuration the managed scraper's rendered jobs ``node`` and ``dcgm``: their ``kubernetes_sd_configs``
  (role ``endpoints``) become one static target per node with the meta labels the endpoints role gives that node's
  pod (``__meta_kubernetes_service_name``, ``__meta_kubernetes_service_annotation_prometheus_io_scrape``,
  ``__meta_kubernetes_pod_node_name``, ``__meta_kubernetes_namespace``); their relabelling runs unchanged. The jobs
  ``nccl``, ``kube-state-metrics`` and ``fm-app`` have no target in the twin (none of those pods runs);
- the SNS endpoint and the remediation handler (:class:`~.remediation.RemediationBridge`), whose Kubernetes client is
  the handler's own ``KubeApi`` pointed at the fake API (``kube_factory``) with an EKS token (``eks_token`` of moto's
  STS), and whose EC2 calls reach the twin: ``reboot_instances`` reboots the node (Ready goes False, the pods stop,
  the node comes back with a fresh healthy scenario, Ready, its pods start again: the gate runs again), and
  ``terminate_instances`` replaces it (the node object and its pods go, the node group launches a new instance: a
  new node registers with the group's taints and boots).

Nodes are addressed by slot (``gpu-1`` ...): a replacement takes its predecessor's slot.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

from fmconstructs.observability.collection import DCGM_EXPORTER_PORT, NODE_EXPORTER_PORT
from fmconstructs.remediation.handler import kube as handler_kube

from .artifacts import monitoring_artifacts, remediation_artifacts
from .eks_rendered import EksRendered, eks_rendered
from .exporters import MonitoredNode
from .kube_api import FakeKubeApi
from .monitoring import DUMMY_SECRET_ACCESS_KEY, MonitoringTwin
from .nodes import HEALTHY, Scenario, install_fakes
from .procs import Daemon, Daemons, TwinError, wait_for
from .remediation import RemediationBridge, deliver_logged
from .sns import SnsReceiver

__all__ = ["ADMIN_TOKEN", "GATE_TOKEN", "EksNode", "EksTwin", "metric_filter_matches"]

GATE_TOKEN = "twin-node-checks-service-account-token"
GATE_USER = "system:serviceaccount:kube-system:fmconstructs-node-checks"
#: An operator's kubectl (cluster admin) in the twin.
ADMIN_TOKEN = "twin-cluster-admin-token"
ADMIN_USER = "kubernetes-admin"
REMEDIATION_USER = "eks:fmconstructs-node-remediation"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_NSENTER = re.compile(r"nsenter --target 1(?: --[a-z]+)+ -- ")
_GATE_EXIT = re.compile(r"fmconstructs node gate exited (\d+)")
_ZONE = "us-east-1a"


def _eks_user(token: str) -> str | None:
    """The user of an EKS token (``k8s-aws-v1.`` + a presigned STS GetCallerIdentity URL signing ``x-k8s-aws-id``),
    as aws-iam-authenticator accepts it (the twin checks the form, not the signature)."""
    if not token.startswith(handler_kube.TOKEN_PREFIX):
        return None
    encoded = token[len(handler_kube.TOKEN_PREFIX) :]
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    signed = query.get("X-Amz-SignedHeaders", "").split(";")
    if query.get("Action") != "GetCallerIdentity" or handler_kube.CLUSTER_ID_HEADER not in signed:
        return None
    return REMEDIATION_USER


_FILTER_TERM = re.compile(r'\(?\s*\$\.([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"\s*\)?')


def metric_filter_matches(pattern: str, event: Mapping[str, Any]) -> bool:
    """A CloudWatch Logs JSON filter pattern of ``$.field = "value"`` terms joined by ``&&`` (the form the
    remediation construct renders; CloudWatch Logs User Guide "Filter pattern syntax", JSON log events) against one
    JSON log event. Any other pattern raises: the twin does not guess at CloudWatch's syntax."""
    body = pattern.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise TwinError(f"not a JSON filter pattern: {pattern!r}")
    terms = [t.strip() for t in body[1:-1].split("&&")]
    wanted = []
    for term in terms:
        match = _FILTER_TERM.fullmatch(term)
        if match is None:
            raise TwinError(f'the twin evaluates only $.field = "value" && ... patterns, not {term!r}')
        wanted.append((match.group(1), match.group(2)))
    return all(str(event.get(key)) == value for key, value in wanted)


@dataclass
class EksNode:
    """One twin GPU node (module docstring)."""

    slot: str
    name: str
    instance_id: str
    home: Path
    scenario: Scenario
    gate: Daemon | None = None
    boots: int = 0
    monitored: MonitoredNode | None = None
    volumes: dict[str, Path] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.home / "root"

    def gate_log(self) -> str:
        path = self.home / "pods" / "gate.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def gate_exits(self) -> list[int]:
        """The gate's exit status of every boot so far (the wrapper echoes it)."""
        return [int(code) for code in _GATE_EXIT.findall(self.gate_log())]


class EksTwin:
    """The EKS twin (module docstring): ``with EksTwin(template, home) as twin: twin.boot({...})``."""

    def __init__(self, template: Mapping[str, Any], home: Path) -> None:
        self.template, self.home = template, home
        self.rendered: EksRendered = eks_rendered(template)
        self.remediation = remediation_artifacts(template)
        self.daemons = Daemons()
        self.api = FakeKubeApi(
            home / "api", tokens={GATE_TOKEN: GATE_USER, ADMIN_TOKEN: ADMIN_USER}, token_check=_eks_user
        )
        self.bridge = RemediationBridge(
            self.remediation,
            replace=self._on_terminate,
            reboot=self._on_reboot,
            run_slurm_script=self._no_slurm,
            kube_factory=self._kube,
        )
        self.receiver = SnsReceiver(
            self.remediation.topic_arn,
            self._deliver,
            filter_policy=self.remediation.filter_policy,
            secret_key=DUMMY_SECRET_ACCESS_KEY,
        )
        self.monitoring = MonitoringTwin(monitoring_artifacts(template), workdir=home / "monitoring", sns_url="")
        self.nodes: dict[str, EksNode] = {}
        self.retired: list[EksNode] = []
        self.lock = threading.RLock()
        self._addresses = itertools.count(11)
        self._workers: list[threading.Thread] = []
        #: The handler's log lines (its stdout: what CloudWatch Logs would keep), one JSON object each.
        self.handler_log: list[dict[str, Any]] = []

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def __enter__(self) -> EksTwin:
        self.api.start()
        self.bridge.start()
        self.receiver.start()
        self.monitoring.sns_url = self.receiver.url
        self.monitoring.start([])
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in list(self._workers):
            worker.join(timeout=30)
        self.daemons.stop_all()
        self.monitoring.close()
        self.receiver.close()
        self.bridge.close()
        self.api.close()

    def _deliver(self, event: dict[str, Any]) -> object:
        """The Lambda invocation: the bridge runs the handler; its stdout is the function's log."""
        return deliver_logged(self.bridge, event, self.handler_log)

    def admin(self) -> handler_kube.KubeApi:
        """An operator's client (cluster admin), e.g. ``twin.admin().request("PATCH", ...)`` for a cordon."""
        return handler_kube.KubeApi(self.api.endpoint, self.api.ca_pem, ADMIN_TOKEN)

    def _no_slurm(self, script: str) -> tuple[int, str, str]:
        raise TwinError("the EKS handler ran a Slurm script")

    def _kube(self, deadline: Any) -> handler_kube.KubeApi:
        sts = boto3.session.Session(region_name=self.bridge.region).client("sts")
        token = handler_kube.eks_token(sts, self.remediation.target["cluster"])
        return handler_kube.KubeApi(self.api.endpoint, self.api.ca_pem, token, deadline=deadline)

    # --- nodes ----------------------------------------------------------------------------------------------------

    def boot(self, scenarios: Mapping[str, Scenario]) -> None:
        """Launch one node per slot (``{"gpu-1": HEALTHY, ...}``) and boot them all."""
        for slot, scenario in scenarios.items():
            self.launch(slot, scenario)

    def launch(self, slot: str, scenario: Scenario = HEALTHY) -> EksNode:
        """A new instance in the node group: it registers as a node with the group's taints and labels, boots."""
        number = next(self._addresses)
        address = f"127.0.0.{number}"
        instance_id = self.bridge.launch("compute", private_ip=address)
        name = f"ip-127-0-0-{number}.ec2.internal"
        node = EksNode(
            slot=slot, name=name, instance_id=instance_id, home=self.home / "nodes" / name, scenario=scenario
        )
        (node.root / "bin").mkdir(parents=True)
        install_fakes(node.root / "bin", node.root / "bin", scenario)
        self._write_scenario(node, scenario)
        with self.lock:
            self.nodes[slot] = node
        self.api.add_node(
            name,
            provider_id=f"aws:///{_ZONE}/{instance_id}",
            labels={"node.kubernetes.io/instance-type": "p5.48xlarge", **self.rendered.labels},
            taints=self.rendered.taints,
        )
        self._start_pods(node, first=True)
        return node

    def node(self, slot: str) -> EksNode:
        with self.lock:
            return self.nodes[slot]

    def _write_scenario(self, node: EksNode, scenario: Scenario, *, xid: int = 0) -> None:
        """The node's tools and its fake dcgm-exporter read one file (``<root>/bin/scenario.json``): the fakes'
        keys and the exporter's (``gpus``, ``xid``)."""
        data = {**asdict(scenario), "xids": list(scenario.xids), "lustre_mounts": list(scenario.lustre_mounts)}
        data.update(hostname=node.name, instance_id=node.instance_id, xid=xid)
        path = node.root / "bin" / "scenario.json"
        tmp = path.with_name(".scenario.json.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        tmp.replace(path)
        node.scenario = scenario

    def set_scenario(self, slot: str, scenario: Scenario, *, xid: int = 0) -> None:
        """A fault on a running node: its tools (and the dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` = ``xid``)."""
        self._write_scenario(self.node(slot), scenario, xid=xid)

    # --- pods -----------------------------------------------------------------------------------------------------

    def _volume_dir(self, node: EksNode, pod: str, volume: Mapping[str, Any]) -> Path:
        if "hostPath" in volume:  # the host's own directory (created as a container runtime does for a missing one)
            path = node.root / str(volume["hostPath"]["path"]).lstrip("/")
        else:  # emptyDir, configMap, projected: the pod's own directory, kept across a reboot (kubelet's disk)
            path = node.home / "pods" / pod / str(volume["name"])
        path.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            config_map = self.rendered.manifest("ConfigMap", str(volume["configMap"]["name"]))
            for key, text in (config_map.get("data") or {}).items():
                (path / key).write_text(str(text))
                (path / key).chmod(int(volume["configMap"].get("defaultMode", 0o644)))
        return path

    def _mounts(
        self, node: EksNode, pod: str, daemon_set: Mapping[str, Any], container: Mapping[str, Any]
    ) -> dict[str, Path]:
        """Container mount path -> twin directory, the service account's token and CA included."""
        volumes = {v["name"]: v for v in daemon_set["spec"]["template"]["spec"].get("volumes") or []}
        mounts = {
            str(m["mountPath"]): self._volume_dir(node, pod, volumes[m["name"]])
            for m in container.get("volumeMounts") or []
        }
        account = node.home / "pods" / pod / "serviceaccount"
        account.mkdir(parents=True, exist_ok=True)
        (account / "token").write_text(GATE_TOKEN)
        (account / "ca.crt").write_text(self.api.ca_pem)
        mounts[_SA_DIR] = account
        return mounts

    def _register_pod(self, node: EksNode, daemon_set: Mapping[str, Any]) -> None:
        name = f"{daemon_set['metadata']['name']}-{node.name.split('.')[0]}"
        namespace = str(daemon_set["metadata"]["namespace"])
        if (namespace, name) not in self.api.pods:
            spec = daemon_set["spec"]["template"]["spec"]
            self.api.create_pod(
                name,
                namespace=namespace,
                labels=daemon_set["spec"]["template"]["metadata"]["labels"],
                tolerations=spec.get("tolerations") or [],
                node_name=node.name,
                owner_kind="DaemonSet",
            )

    def gate_command(self, node: EksNode) -> tuple[list[str], dict[str, str]]:
        """The gate container's command with the two substitutions of the module docstring, and its environment."""
        daemon_set = self.rendered.gate_daemon_set
        (container,) = daemon_set["spec"]["template"]["spec"]["containers"]
        command = [str(c) for c in container["command"]]
        if command[:2] != ["sh", "-c"] or not _NSENTER.search(command[2]):
            raise TwinError(f"the gate's command is not sh -c '... nsenter --target 1 ... --': {command}")
        script = _NSENTER.sub("", command[2])
        for mount, directory in sorted(self._mounts(node, "gate", daemon_set, container).items(), reverse=True):
            script = script.replace(mount, str(directory))
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(node.home)}
        for variable in container.get("env") or []:
            path = ((variable.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            env[variable["name"]] = node.name if path == "spec.nodeName" else str(variable.get("value", ""))
        env.update(
            KUBERNETES_SERVICE_HOST="127.0.0.1",
            KUBERNETES_SERVICE_PORT=str(self.api.port),
            FMCONSTRUCTS_ROOT=str(node.root),
        )
        return ["sh", "-c", script], env

    def textfile_dir(self, node: EksNode) -> Path:
        """The host directory behind node-exporter's ``--collector.textfile.directory`` in the rendered DaemonSet."""
        daemon_set = self.rendered.node_exporter_daemon_set
        container = next(
            c for c in daemon_set["spec"]["template"]["spec"]["containers"] if c["name"] == "node-exporter"
        )
        flag = next(a for a in container["args"] if a.startswith("--collector.textfile.directory="))
        inside = str(flag).split("=", 1)[1]
        for mount, directory in self._mounts(node, "node-exporter", daemon_set, container).items():
            if inside == mount or inside.startswith(mount.rstrip("/") + "/"):
                return Path(directory, inside[len(mount) :].lstrip("/"))
        raise TwinError(f"node-exporter's textfile directory {inside} is on no volume of its pod")

    def _start_pods(self, node: EksNode, *, first: bool) -> None:
        for daemon_set in (self.rendered.gate_daemon_set, self.rendered.node_exporter_daemon_set):
            self._register_pod(node, daemon_set)
        node.boots += 1
        argv, env = self.gate_command(node)
        node.gate = self.daemons.start(Daemon(f"gate-{node.name}", argv, node.home / "pods" / "gate.log", env=env))
        monitored = MonitoredNode(
            name=node.name,
            instance_id=node.instance_id,
            agent_config=self.scrape_config(node),
            textfile_dir=self.textfile_dir(node),
            scenario=node.root / "bin" / "scenario.json",
        )
        node.monitored = monitored
        with self.lock:  # replacements run in threads: MonitoringTwin's node tables are not thread-safe
            if first:
                self.monitoring.add_node(monitored)
            else:
                self.monitoring.replace_node(node.name, monitored)

    def _stop_pods(self, node: EksNode) -> None:
        if node.gate is not None:
            self.daemons.stop(node.gate)
            node.gate = None

    # --- scraping -------------------------------------------------------------------------------------------------

    def _target(self, node: EksNode, service: Mapping[str, Any], port: int) -> dict[str, Any]:
        annotations = (service.get("metadata") or {}).get("annotations") or service.get("annotations") or {}
        name = (service.get("metadata") or {}).get("name") or service.get("name")
        namespace = (service.get("metadata") or {}).get("namespace") or service.get("namespace")
        labels = {
            "__meta_kubernetes_service_name": str(name),
            "__meta_kubernetes_namespace": str(namespace),
            "__meta_kubernetes_pod_node_name": node.name,
        }
        for key, value in annotations.items():
            labels["__meta_kubernetes_service_annotation_" + re.sub(r"[^A-Za-z0-9_]", "_", key)] = str(value)
        return {"targets": [f"localhost:{port}"], "labels": labels}

    def scrape_config(self, node: EksNode) -> dict[str, Any]:
        """The scraper's ``node`` and ``dcgm`` jobs for this node (module docstring), as an agent configuration."""
        service = self.rendered.node_exporter_service
        node_port = int(service["spec"]["ports"][0]["targetPort"])
        dcgm_port = int(self.rendered.dcgm_service["port"])
        if (node_port, dcgm_port) != (NODE_EXPORTER_PORT, DCGM_EXPORTER_PORT):
            raise TwinError(f"the twin's exporters serve {NODE_EXPORTER_PORT}/{DCGM_EXPORTER_PORT}, not {node_port}")
        targets = {
            "node": self._target(node, service, node_port),
            "dcgm": self._target(node, self.rendered.dcgm_service, dcgm_port),
        }
        jobs = []
        for job in self.rendered.scrape_config["scrape_configs"]:
            if job["job_name"] in targets:
                job = {k: v for k, v in job.items() if k != "kubernetes_sd_configs"}
                jobs.append({**job, "static_configs": [targets[job["job_name"]]]})
        return {"global": self.rendered.scrape_config.get("global") or {}, "scrape_configs": jobs}

    # --- what EC2 does ----------------------------------------------------------------------------------------------

    def _background(self, name: str, work: Any) -> None:
        worker = threading.Thread(target=work, name=name, daemon=True)
        self._workers.append(worker)
        worker.start()

    def _slot_of(self, instance_id: str) -> str:
        with self.lock:
            for slot, node in self.nodes.items():
                if node.instance_id == instance_id:
                    return slot
        raise TwinError(f"no twin node has instance {instance_id}")

    def _on_reboot(self, instance_id: str) -> None:
        slot = self._slot_of(instance_id)
        self._background(f"reboot-{slot}", lambda: self.reboot(slot))

    def reboot(self, slot: str, scenario: Scenario = HEALTHY) -> None:
        """The instance reboots: NotReady, its pods stop, it comes back healthy (XIDs are since boot), Ready, the
        pods start again (the gate runs again)."""
        node = self.node(slot)
        self.api.set_ready(node.name, False)
        self._stop_pods(node)
        self._write_scenario(node, scenario)
        self.api.set_ready(node.name, True)
        self._start_pods(node, first=False)

    def _on_terminate(self, instance_id: str) -> None:
        slot = self._slot_of(instance_id)
        self._background(f"replace-{slot}", lambda: self.replace(slot))

    def replace(self, slot: str, scenario: Scenario = HEALTHY) -> EksNode:
        """The instance is gone (node object and pods deleted, exporters stopped); the node group launches another."""
        old = self.node(slot)
        self._stop_pods(old)
        self.monitoring.remove_node(old.name)
        self.api.delete_node(old.name)
        self.retired.append(old)
        return self.launch(slot, scenario)

    # --- waiting ----------------------------------------------------------------------------------------------------

    def wait_gate(self, slot: str, *, boots: int = 1, timeout_s: float = 60) -> int:
        """The gate's exit status of boot number ``boots`` of the node now in ``slot``."""

        def exited() -> list[int] | None:
            codes = self.node(slot).gate_exits()
            return codes if len(codes) >= boots else None

        try:
            codes: list[int] = wait_for(f"the gate of {slot}", exited, timeout_s, 0.2)  # type: ignore[assignment]
        except TwinError:
            raise TwinError(f"gate of {slot} did not finish: {self.node(slot).gate_log()[-3000:]}") from None
        return codes[boots - 1]

    def replacement_of(self, slot: str, old_instance: str, timeout_s: float = 60) -> EksNode:
        node: EksNode = wait_for(  # type: ignore[assignment]
            f"a replacement in {slot}",
            lambda: self.node(slot).instance_id != old_instance and self.node(slot),
            timeout_s,
        )
        return node

    def clean_home(self) -> None:
        shutil.rmtree(self.home / "nodes", ignore_errors=True)
