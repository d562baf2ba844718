"""The monitoring half of the cluster twin: real Prometheus and Alertmanager (Debian 12 packages) fed with what the
library renders, scraping each twin node's node_exporter and fake dcgm-exporter (:mod:`.exporters`).

:class:`MonitoringTwin` runs, all on 127.0.0.1, each with its data under the twin's work directory:

- one ``prometheus-node-exporter`` and one fake dcgm-exporter per :class:`~.exporters.MonitoredNode`;
- ``prometheus`` (2.42) with, as **scrape configuration**, each node's agent configuration as the library renders it
  (:func:`fmconstructs.observability.collection.agent_config`: job names, target labels, relabelling, intervals), with
  only these substitutions (:func:`node_scrape_configs`):

  1. ``localhost:<port>`` targets -> ``127.0.0.1:<that node's exporter port>``;
  2. the instance-id placeholder (``__FM_INSTANCE_ID__``) -> the node's instance id;
  3. ``remote_write`` dropped (this Prometheus is the workspace: it evaluates the rules itself);
  4. each job becomes the scrape pool ``<job>/<node>`` with a last relabel rule ``job=<job>`` (one Prometheus
     scrapes every node, and job names must be unique in one configuration; the series keep the library's ``job``);
  5. ``fm-app`` file discovery reads the node's ``app_sd_dir`` (the job is dropped when the node has none), and a
     node's ``drop_jobs`` are left out;
  6. every duration in twin time (:mod:`.timescale`);

  and as **rule files** the ``Data`` of every ``AWS::APS::RuleGroupsNamespace`` of the workspace
  (:func:`~.artifacts.monitoring_artifacts`), time-scaled;
- ``prometheus-alertmanager`` (0.25) with the workspace's ``AlertManagerDefinition`` (its ``alertmanager_config``),
  with only: every ``sns_configs[]`` entry gets ``api_url`` = the local SNS receiver (:class:`~.sns.SnsReceiver`),
  route timers in twin time, clustering off (``--cluster.listen-address=``); it signs with SigV4 using dummy
  credentials from its environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``), as AMP signs with its service
  identity.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from fmconstructs.observability.app_metrics import DEFAULT_APP_METRICS_SD_DIR
from fmconstructs.observability.collection import DCGM_EXPORTER_PORT, INSTANCE_ID_PLACEHOLDER, NODE_EXPORTER_PORT

from .artifacts import MonitoringArtifacts
from .exporters import NODE_EXPORTER, FakeDcgmExporter, MonitoredNode, start_node_exporter
from .procs import Daemon, Daemons, TwinError, free_port, http_get, wait_for, wait_for_http
from .timescale import (
    FACTOR,
    prometheus_time_flags,
    scale_alertmanager_config,
    scale_duration,
    scale_prometheus_config,
    scale_rules_yaml,
)

__all__ = [
    "ALERTMANAGER",
    "BINARIES",
    "PROMETHEUS",
    "AlertmanagerServer",
    "MonitoringTwin",
    "PrometheusServer",
    "alertmanager_config",
    "node_scrape_configs",
    "prometheus_config",
]

PROMETHEUS = "prometheus"
ALERTMANAGER = "prometheus-alertmanager"  # Debian 12's name for alertmanager
#: The binaries of this half and their Debian 12 packages (for ``tests.conftest.require_tool``).
BINARIES: tuple[tuple[str, str], ...] = (
    (PROMETHEUS, "prometheus"),
    (ALERTMANAGER, "prometheus-alertmanager"),
    (NODE_EXPORTER, "prometheus-node-exporter"),
)
#: Prometheus's default evaluation interval (prometheus/prometheus config/config.go DefaultGlobalConfig: 1m); the
#: library's rule groups set their own ``interval``.
DEFAULT_EVALUATION_INTERVAL = "1m"
#: The dummy credentials Alertmanager signs its SNS calls with (what the receiver expects in SigV4 headers).
DUMMY_ACCESS_KEY_ID = "AKIDFMCONSTRUCTSTWIN"
DUMMY_SECRET_ACCESS_KEY = "fmconstructs-twin-secret"


def _substitute(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_substitute(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, old, new) for k, v in value.items()}
    return value


def _target(address: str, ports: Mapping[int, int], job: str, node: str) -> str:
    host, _, port = address.rpartition(":")
    if host not in ("localhost", "127.0.0.1") or not port.isdigit():
        raise TwinError(f"job {job} of {node} scrapes {address}: the twin only maps localhost targets")
    if int(port) not in ports:
        raise TwinError(f"job {job} of {node} scrapes port {port}, which no twin exporter serves (extra_ports)")
    return f"127.0.0.1:{ports[int(port)]}"


def node_scrape_configs(node: MonitoredNode, ports: Mapping[int, int]) -> list[dict[str, Any]]:
    """Substitutions 1, 2, 4 and 5 of the module docstring on ``node.agent_config``'s scrape jobs (not yet scaled).
    ``ports``: library port -> twin port of this node's exporters."""
    config = _substitute(copy.deepcopy(dict(node.agent_config)), INSTANCE_ID_PLACEHOLDER, node.instance_id)
    defaults = {k: v for k, v in (config.get("global") or {}).items() if k in ("scrape_interval", "scrape_timeout")}
    out: list[dict[str, Any]] = []
    for scrape in config.get("scrape_configs") or []:
        job = str(scrape["job_name"])
        if job in node.drop_jobs:
            continue
        scrape = {**defaults, **scrape, "job_name": f"{job}/{node.name}"}
        for static in scrape.get("static_configs") or []:
            static["targets"] = [_target(t, ports, job, node.name) for t in static.get("targets") or []]
        if scrape.get("file_sd_configs"):
            if node.app_sd_dir is None:
                continue
            for discovery in scrape["file_sd_configs"]:
                discovery["files"] = [
                    f.replace(DEFAULT_APP_METRICS_SD_DIR, str(node.app_sd_dir)) for f in discovery["files"]
                ]
        scrape["relabel_configs"] = [
            *(scrape.get("relabel_configs") or []),
            {"target_label": "job", "replacement": job},
        ]
        out.append(scrape)
    return out


def prometheus_config(
    scrape_configs: Sequence[Mapping[str, Any]],
    *,
    rule_paths: Sequence[Path],
    alertmanager: str,
    global_config: Mapping[str, Any] | None = None,
    factor: int = FACTOR,
) -> dict[str, Any]:
    """The server's configuration (time-scaled): the nodes' scrape jobs, the rule files, one Alertmanager."""
    config = {
        "global": {"evaluation_interval": DEFAULT_EVALUATION_INTERVAL, **dict(global_config or {})},
        "rule_files": [str(p) for p in rule_paths],
        "alerting": {"alertmanagers": [{"api_version": "v2", "static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [dict(s) for s in scrape_configs],
    }
    return scale_prometheus_config(config, factor)


def alertmanager_config(rendered: Mapping[str, Any], *, sns_url: str, factor: int = FACTOR) -> dict[str, Any]:
    """The workspace's Alertmanager configuration with every SNS receiver sent to ``sns_url``, timers scaled."""
    config = scale_alertmanager_config(rendered, factor)
    for receiver in config.get("receivers") or []:
        for sns in receiver.get("sns_configs") or []:
            sns["api_url"] = sns_url
    return config


def _get_json(url: str) -> Any:
    body = json.loads(http_get(url))
    if isinstance(body, dict) and body.get("status") == "error":
        raise TwinError(f"{url}: {body.get('error')}")
    return body


class PrometheusServer:
    """A real Prometheus on 127.0.0.1 (``--web.enable-lifecycle``, so :meth:`reload` re-reads the files)."""

    def __init__(self, daemons: Daemons, workdir: Path, *, binary: str = PROMETHEUS, factor: int = FACTOR) -> None:
        self.daemons, self.workdir, self.binary, self.factor = daemons, workdir, binary, factor
        self.config_path = workdir / "prometheus.yml"
        self.port = 0
        self.daemon: Daemon | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self, config: Mapping[str, Any]) -> None:
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(dict(config), sort_keys=False, width=200))
        tmp.replace(self.config_path)

    def start(self, config: Mapping[str, Any]) -> None:
        self.write_config(config)
        self.port = free_port()
        argv = [
            self.binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.workdir / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--web.enable-lifecycle",
            *prometheus_time_flags(self.factor),
        ]
        self.daemon = self.daemons.start(Daemon("prometheus", argv, self.workdir / "prometheus.log"))
        try:
            wait_for_http(f"{self.url}/-/ready", timeout_s=30)
        except TwinError:
            raise TwinError(f"prometheus did not become ready: {self.daemon.tail()}") from None

    def reload(self, config: Mapping[str, Any]) -> None:
        """Write ``config`` and make the server load it (POST /-/reload); raises if it refused the file."""
        self.write_config(config)
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10):
                pass
        except urllib.error.HTTPError as error:
            raise TwinError(f"prometheus refused the reload: HTTP {error.code} {error.read()[:500]!r}") from None

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query: the ``result`` list (vector elements ``{"metric": {...}, "value": [t, "v"]}``)."""
        body = _get_json(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        data = body["data"]
        return list(data["result"]) if data["resultType"] == "vector" else [data]

    def alerts(self, name: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """Active alerts (``/api/v1/alerts``: labels, annotations, state pending|firing, activeAt, value)."""
        found = _get_json(f"{self.url}/api/v1/alerts")["data"]["alerts"]
        return [
            a
            for a in found
            if (name is None or a["labels"].get("alertname") == name) and (state is None or a["state"] == state)
        ]

    def rules(self) -> list[dict[str, Any]]:
        """The loaded rule groups (``/api/v1/rules``: name, file, interval in seconds, rules with duration)."""
        return list(_get_json(f"{self.url}/api/v1/rules")["data"]["groups"])

    def query_config(self) -> str:
        """The configuration the server runs (``/api/v1/status/config``), as YAML text."""
        return str(_get_json(f"{self.url}/api/v1/status/config")["data"]["yaml"])

    def targets(self) -> list[dict[str, Any]]:
        return list(_get_json(f"{self.url}/api/v1/targets")["data"]["activeTargets"])

    def wait_for_alert(
        self, name: str, *, labels: Mapping[str, str] | None = None, state: str = "firing", timeout_s: float = 30
    ) -> dict[str, Any]:
        """The first alert ``name`` in ``state`` whose labels include ``labels``; TwinError after ``timeout_s``."""
        wanted = dict(labels or {})

        def found() -> dict[str, Any] | None:
            for alert in self.alerts(name, state):
                if wanted.items() <= alert["labels"].items():
                    return alert
            return None

        alert: dict[str, Any] = wait_for(f"alert {name} {wanted} {state}", found, timeout_s, 0.2)  # type: ignore[assignment]
        return alert

    def wait_for_query(
        self, expr: str, ready: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 30
    ) -> list[dict[str, Any]]:
        """Poll ``expr`` until ``ready(result)``; returns that result."""
        holder: list[list[dict[str, Any]]] = []

        def check() -> bool:
            result = self.query(expr)
            if ready(result):
                holder.append(result)
                return True
            return False

        wait_for(f"query {expr}", check, timeout_s, 0.2)
        return holder[0]


class AlertmanagerServer:
    """A real Alertmanager on 127.0.0.1, no cluster, SigV4 with dummy credentials from its environment."""

    def __init__(self, daemons: Daemons, workdir: Path, *, binary: str = ALERTMANAGER) -> None:
        self.daemons, self.workdir, self.binary = daemons, workdir, binary
        self.config_path = workdir / "alertmanager.yml"
        self.port = 0
        self.daemon: Daemon | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, config: Mapping[str, Any], *, region: str = "us-east-1") -> None:
        self.config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False, width=200))
        self.port = free_port()
        argv = [
            self.binary,
            f"--config.file={self.config_path}",
            f"--storage.path={self.workdir / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--cluster.listen-address=",  # "Set to empty string to disable HA mode" (alertmanager --help, 0.25)
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.workdir),  # no ~/.aws of the machine
            "AWS_ACCESS_KEY_ID": DUMMY_ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET_ACCESS_KEY,
            "AWS_REGION": region,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        self.daemon = self.daemons.start(Daemon("alertmanager", argv, self.workdir / "alertmanager.log", env=env))
        try:
            wait_for_http(f"{self.url}/-/ready", timeout_s=30)
        except TwinError:
            raise TwinError(f"alertmanager did not become ready: {self.daemon.tail()}") from None

    def alerts(self) -> list[dict[str, Any]]:
        return list(_get_json(f"{self.url}/api/v2/alerts"))

    def status(self) -> dict[str, Any]:
        """``/api/v2/status``: ``config.original`` is the configuration it runs."""
        status: dict[str, Any] = _get_json(f"{self.url}/api/v2/status")
        return status


class MonitoringTwin:
    """Prometheus, Alertmanager and each node's exporters, fed with ``artifacts`` (module docstring).

    ``with MonitoringTwin(artifacts, workdir=..., sns_url=receiver.url) as twin: twin.start(nodes)``; every daemon
    and server thread is stopped when the block ends. :meth:`add_node` / :meth:`remove_node` /
    :meth:`replace_node` change the scraped nodes at run time (Prometheus reloads its configuration).
    """

    def __init__(self, artifacts: MonitoringArtifacts, *, workdir: Path, sns_url: str, factor: int = FACTOR) -> None:
        self.artifacts, self.workdir, self.sns_url, self.factor = artifacts, workdir, sns_url, factor
        self.daemons = Daemons()
        self.prometheus = PrometheusServer(self.daemons, workdir, factor=factor)
        self.alertmanager = AlertmanagerServer(self.daemons, workdir)
        self.nodes: dict[str, MonitoredNode] = {}
        self.node_exporters: dict[str, tuple[Daemon, int]] = {}
        self.dcgm_exporters: dict[str, FakeDcgmExporter] = {}
        self.rule_paths: list[Path] = []

    def __enter__(self) -> MonitoringTwin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_rules(self) -> None:
        rules_dir = self.workdir / "rules"
        shutil.rmtree(rules_dir, ignore_errors=True)
        rules_dir.mkdir(parents=True)
        for name, data in sorted(self.artifacts.rule_files.items()):
            path = rules_dir / f"{name}.yml"
            path.write_text(scale_rules_yaml(data, self.factor))
            self.rule_paths.append(path)

    def start(self, nodes: Sequence[MonitoredNode] = ()) -> MonitoringTwin:
        """Start Alertmanager, every node's exporters, then Prometheus; returns self."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_rules()
        self.alertmanager.start(
            alertmanager_config(self.artifacts.alertmanager_config, sns_url=self.sns_url, factor=self.factor)
        )
        for node in nodes:
            self._start_exporters(node)
        self.prometheus.start(self.config())
        return self

    def _start_exporters(self, node: MonitoredNode) -> None:
        if node.name in self.nodes:
            raise TwinError(f"node {node.name} is already in the twin")
        self.nodes[node.name] = node
        self.node_exporters[node.name] = start_node_exporter(self.daemons, node, self.workdir / "logs")
        dcgm = FakeDcgmExporter(node)
        dcgm.start()
        self.dcgm_exporters[node.name] = dcgm

    def ports(self, name: str) -> dict[int, int]:
        """Library port -> twin port of a node's exporters."""
        node = self.nodes[name]
        return {
            NODE_EXPORTER_PORT: self.node_exporters[name][1],
            DCGM_EXPORTER_PORT: self.dcgm_exporters[name].port,
            **node.extra_ports,
        }

    def config(self) -> dict[str, Any]:
        """The Prometheus configuration for the nodes now in the twin (time-scaled)."""
        scrapes = [s for name, node in self.nodes.items() for s in node_scrape_configs(node, self.ports(name))]
        first = next(iter(self.nodes.values()), None)
        global_config = {
            k: v
            for k, v in ((first.agent_config.get("global") or {}) if first else {}).items()
            if k in ("scrape_interval", "scrape_timeout")
        }
        return prometheus_config(
            scrapes,
            rule_paths=self.rule_paths,
            alertmanager=f"127.0.0.1:{self.alertmanager.port}",
            global_config=global_config,
            factor=self.factor,
        )

    def add_node(self, node: MonitoredNode) -> None:
        self._start_exporters(node)
        self.prometheus.reload(self.config())

    def remove_node(self, name: str) -> None:
        """Stop the node's exporters and stop scraping it (its series go stale, as a terminated instance's do)."""
        self._stop_exporters(name)
        self.prometheus.reload(self.config())

    def replace_node(self, name: str, new: MonitoredNode) -> None:
        """``name`` leaves, ``new`` (a fresh instance, maybe with a new instance id) joins, in one reload."""
        self._stop_exporters(name)
        self._start_exporters(new)
        self.prometheus.reload(self.config())

    def _stop_exporters(self, name: str) -> None:
        self.nodes.pop(name)
        daemon, _ = self.node_exporters.pop(name)
        self.daemons.stop(daemon)
        self.dcgm_exporters.pop(name).close()

    def pids(self) -> list[int]:
        """The process ids of every daemon now running (for tests that check nothing is left)."""
        return [d.pid for d in self.daemons.started if d.running()]

    def close(self) -> None:
        self.daemons.stop_all()
        for dcgm in self.dcgm_exporters.values():
            dcgm.close()
        self.dcgm_exporters.clear()
        self.node_exporters.clear()
        self.nodes.clear()

    def twin_duration(self, library_duration: str) -> str:
        """A library duration in this twin's time (``'2m'`` -> ``'2s'``)."""
        return scale_duration(library_duration, self.factor)
