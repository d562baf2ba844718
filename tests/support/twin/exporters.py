"""The exporters of one twin node: a real node_exporter over the node's textfile directory, and a fake dcgm-exporter.

**node_exporter** (Debian 12 package prometheus-node-exporter, 1.5): one process per node on 127.0.0.1, with
``--collector.disable-defaults --collector.textfile --collector.textfile.directory=<the node's textfile dir>``: the
textfile collector is what the library's node scripts feed (node checks, EFA counters, lifecycle marker, Slurm
textfiles on the login node); the host's CPU, memory and network collectors would describe this test machine, not the
twin node, so they are off (``collectors=`` adds some back).

**Fake dcgm-exporter**: a small HTTP server (a thread of the test process) that answers ``/metrics`` the way
dcgm-exporter 4.2.3-4.1.1 (the image the library pins, ``collection.DCGM_EXPORTER_IMAGE``) renders GPU fields: one
series per GPU of each field of the library's rendered counters file (:func:`fmconstructs.observability.metrics.
dcgm_counters_csv`), labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device`` (``nvidia<gpu>``), ``modelName`` and
``Hostname`` (NVIDIA/dcgm-exporter@4.2.3-4.1.1 internal/pkg/rendermetrics/render_metrics.go ``gpuMetricsFormat``;
``UUID`` is upper case unless ``--use-old-namespace``, internal/pkg/collector/gpu_collector.go:163-165; ``Hostname``
is the host name unless ``--no-hostname``, internal/pkg/hostname/hostname.go; the twin uses the node's name). With
the node's job-mapping directory it adds ``hpc_job`` as dcgm-exporter's HPC mapper does (internal/pkg/transformation/
hpc.go: one file per GPU named by its index, one job id per line; a series is copied once per job; an empty file
drops the GPU's series).

**Scenario file** (the node's ``scenario`` path, JSON, written by whoever drives the node: the Slurm half's fake
tools may share it; unknown keys are ignored, a missing file is a healthy node). Write it to a temporary name and
rename it: a file that does not parse is ignored (the last good one stays) and counted in ``errors``. Keys:

- ``gpus`` (int, default 8): GPUs reported;
- ``xid`` (int, default 0): the value of ``DCGM_FI_DEV_XID_ERRORS`` (the last XID, never reset) on GPU ``xid_gpu``
  (int, default 0). The library's XID alerts fire when the gauge *changes* (dcgm-exporter#500), so a scenario that
  injects an XID during a job starts at 0 and then writes the code;
- ``dcgm`` (object, field -> number): values for every GPU (``{"DCGM_FI_DEV_GPU_TEMP": 91}``);
- ``dcgm_gpus`` (object, GPU index -> object field -> number): values for one GPU;
- ``dcgm_exporter`` (``"up"`` or ``"down"``, default up): down answers HTTP 503, so the scrape fails (``up == 0``);
- ``model`` (str, default ``NVIDIA H100 80GB HBM3``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fmconstructs.health.metric_names import NODE_EXPORTER_TEXTFILE_DIR
from fmconstructs.observability.app_metrics import DEFAULT_APP_METRICS_SD_DIR
from fmconstructs.observability.job_mapping import DEFAULT_JOB_MAPPING_DIR, HPC_JOB_LABEL
from fmconstructs.observability.metrics import dcgm_counters_csv

from .procs import Daemon, Daemons, TwinError, free_port, wait_for_http

__all__ = [
    "NODE_EXPORTER",
    "SCENARIO_FILE",
    "DcgmField",
    "FakeDcgmExporter",
    "MonitoredNode",
    "dcgm_fields",
    "render_dcgm_metrics",
    "start_node_exporter",
]

NODE_EXPORTER = "prometheus-node-exporter"  # Debian 12's name for node_exporter
#: Where :meth:`MonitoredNode.under` puts a node's scenario file, relative to the node's root.
SCENARIO_FILE = "twin/scenario.json"
DEFAULT_MODEL = "NVIDIA H100 80GB HBM3"
DEFAULT_GPUS = 8
#: Healthy readings for fields whose zero would look odd; every other field reads 0 (no errors, no load).
HEALTHY_VALUES: Mapping[str, float] = {
    "DCGM_FI_DEV_GPU_TEMP": 40,
    "DCGM_FI_DEV_MEMORY_TEMP": 45,
    "DCGM_FI_DEV_POWER_USAGE": 110,
    "DCGM_FI_DEV_SM_CLOCK": 1980,
    "DCGM_FI_DEV_FB_FREE": 81000,
}


@dataclass(frozen=True)
class MonitoredNode:
    """One twin node as the monitoring half sees it.

    :param name: the node's name (the Slurm node name); the fake dcgm-exporter's ``Hostname`` label.
    :param instance_id: its EC2 instance id (in the twin: the moto instance of :class:`~.remediation.
        RemediationBridge`); it replaces the agent configuration's instance-id placeholder.
    :param agent_config: the library's Prometheus agent configuration for this node
        (:func:`fmconstructs.observability.collection.agent_config` with the node's ``NodeLabels``, or
        :func:`~.artifacts.agent_config_from_user_data`).
    :param textfile_dir: the host directory the node's scripts write ``*.prom`` files to (node_exporter reads it).
    :param scenario: the node's scenario file (module docstring).
    :param job_mapping_dir: the node's dcgm-exporter job-mapping directory (None: no ``hpc_job`` label).
    :param app_sd_dir: the node's ``fm-app`` file-discovery directory (None: the ``fm-app`` job is not scraped).
    :param extra_ports: library port -> twin port of exporters started elsewhere (the login node's Slurm exporter).
    :param drop_jobs: scrape jobs of the agent configuration not scraped in the twin (each dropped job is a
        documented substitution: say why where you drop it).
    """

    name: str
    instance_id: str
    agent_config: Mapping[str, Any]
    textfile_dir: Path
    scenario: Path
    job_mapping_dir: Path | None = None
    app_sd_dir: Path | None = None
    extra_ports: Mapping[int, int] = field(default_factory=dict)
    drop_jobs: frozenset[str] = frozenset()

    @classmethod
    def under(cls, root: Path, *, name: str, instance_id: str, agent_config: Mapping[str, Any]) -> MonitoredNode:
        """A node whose files live under ``root`` at the library's paths (``root`` + ``/var/lib/node_exporter/
        textfile`` and so on: the ``FMCONSTRUCTS_ROOT`` convention of the node-check script); creates the
        directories."""
        node = cls(
            name=name,
            instance_id=instance_id,
            agent_config=agent_config,
            textfile_dir=root / NODE_EXPORTER_TEXTFILE_DIR.lstrip("/"),
            scenario=root / SCENARIO_FILE,
            job_mapping_dir=root / DEFAULT_JOB_MAPPING_DIR.lstrip("/"),
            app_sd_dir=root / DEFAULT_APP_METRICS_SD_DIR.lstrip("/"),
        )
        for directory in (node.textfile_dir, node.scenario.parent, node.job_mapping_dir, node.app_sd_dir):
            if directory is not None:
                directory.mkdir(parents=True, exist_ok=True)
        return node

    def write_scenario(self, scenario: Mapping[str, Any]) -> None:
        """Replace the scenario file atomically (temporary file, then rename)."""
        self.scenario.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.scenario.with_name(f".{self.scenario.name}.tmp")
        tmp.write_text(json.dumps(dict(scenario), sort_keys=True))
        tmp.replace(self.scenario)


def start_node_exporter(
    daemons: Daemons, node: MonitoredNode, log_dir: Path, *, binary: str = NODE_EXPORTER, collectors: Sequence[str] = ()
) -> tuple[Daemon, int]:
    """A node_exporter for ``node`` on a free loopback port (textfile collector only, plus ``collectors``)."""
    port = free_port()
    argv = [
        binary,
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={node.textfile_dir}",
        *(f"--collector.{name}" for name in collectors),
    ]
    daemon = daemons.start(Daemon(f"node-exporter-{node.name}", argv, log_dir / f"node-exporter-{node.name}.log"))
    try:
        wait_for_http(f"http://127.0.0.1:{port}/metrics", timeout_s=20)
    except TwinError:
        raise TwinError(f"node_exporter of {node.name} did not answer: {daemon.tail()}") from None
    return daemon, port


# --- the fake dcgm-exporter -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DcgmField:
    name: str
    kind: str
    help: str


def dcgm_fields(counters_csv: str | None = None) -> tuple[DcgmField, ...]:
    """The fields of a dcgm-exporter counters file (``name, type, help`` lines; default: the library's rendered
    file). ``label`` fields would be labels, not series: the library's file has none, and they are skipped."""
    fields = []
    for line in (counters_csv if counters_csv is not None else dcgm_counters_csv()).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, kind, help_text = (part.strip() for part in line.split(",", 2))
        if kind != "label":
            fields.append(DcgmField(name, kind, help_text.rstrip(".")))
    return tuple(fields)


def _job_map(directory: Path | None) -> dict[str, list[str]]:
    """GPU index -> job ids, as dcgm-exporter's HPC mapper reads the directory (files named by a number only)."""
    if directory is None or not directory.is_dir():
        return {}
    found: dict[str, list[str]] = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name.isdigit():
            found[path.name] = path.read_text().splitlines()
    return found


def _value(scenario: Mapping[str, Any], field_name: str, gpu: int) -> float:
    per_gpu = (scenario.get("dcgm_gpus") or {}).get(str(gpu)) or {}
    if field_name in per_gpu:
        return float(per_gpu[field_name])
    if field_name == "DCGM_FI_DEV_XID_ERRORS" and int(scenario.get("xid_gpu", 0)) == gpu:
        return float(scenario.get("xid", 0))
    everywhere = scenario.get("dcgm") or {}
    if field_name in everywhere:
        return float(everywhere[field_name])
    return float(HEALTHY_VALUES.get(field_name, 0))


def _gpu_labels(hostname: str, gpu: int, model: str) -> str:
    gpu_uuid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{hostname}.gpu{gpu}.fmconstructs-twin")
    return (
        f'gpu="{gpu}",UUID="GPU-{gpu_uuid}",pci_bus_id="00000000:{0x18 + 0x11 * gpu:02X}:00.0",'
        f'device="nvidia{gpu}",modelName="{model}",Hostname="{hostname}"'
    )


def render_dcgm_metrics(
    scenario: Mapping[str, Any],
    *,
    hostname: str,
    fields: Iterable[DcgmField],
    job_map: Mapping[str, list[str]] | None = None,
) -> str:
    """dcgm-exporter's text for ``scenario`` (module docstring), in its label order."""
    gpus = int(scenario.get("gpus", DEFAULT_GPUS))
    model = str(scenario.get("model", DEFAULT_MODEL))
    jobs = job_map or {}
    lines: list[str] = []
    for dcgm_field in fields:
        lines += [f"# HELP {dcgm_field.name} {dcgm_field.help}", f"# TYPE {dcgm_field.name} {dcgm_field.kind}"]
        for gpu in range(gpus):
            labels = _gpu_labels(hostname, gpu, model)
            value = _value(scenario, dcgm_field.name, gpu)
            for job in jobs.get(str(gpu), [None]):  # listed with no job: dropped
                extra = f',{HPC_JOB_LABEL}="{job}"' if job is not None else ""
                lines.append(f"{dcgm_field.name}{{{labels}{extra}}} {value:g}")
    return "\n".join(lines) + "\n"


class FakeDcgmExporter:
    """A dcgm-exporter stand-in for one node, on 127.0.0.1 (a thread of the test process)."""

    def __init__(self, node: MonitoredNode, fields: Sequence[DcgmField] | None = None) -> None:
        self.node = node
        self.fields = tuple(fields) if fields is not None else dcgm_fields()
        self.errors: list[str] = []
        self.scrapes = 0
        self._last_good: dict[str, Any] = {}
        self._server: ThreadingHTTPServer | None = None
        self.aborted_scrapes = 0
        self._thread: threading.Thread | None = None

    def scenario(self) -> dict[str, Any]:
        """The node's scenario (the last one that parsed; {} when there is no file)."""
        try:
            loaded = json.loads(self.node.scenario.read_text())
        except FileNotFoundError:
            loaded = {}
        except (OSError, ValueError) as error:
            self.errors.append(f"{self.node.scenario}: {error}")
            return self._last_good
        if not isinstance(loaded, dict):
            self.errors.append(f"{self.node.scenario}: not a JSON object")
            return self._last_good
        self._last_good = loaded
        return loaded

    def metrics(self) -> str | None:
        """The ``/metrics`` body now, or None when the scenario says the exporter is down."""
        scenario = self.scenario()
        if scenario.get("dcgm_exporter", "up") == "down":
            return None
        return render_dcgm_metrics(
            scenario, hostname=self.node.name, fields=self.fields, job_map=_job_map(self.node.job_mapping_dir)
        )

    def start(self) -> int:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.metrics() if self.path.split("?")[0] == "/metrics" else ""
                exporter.scrapes += 1
                if body is None or not body:
                    self.send_response(503 if body is None else 404)
                    self.end_headers()
                    return
                payload = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # Prometheus closed the scrape at its timeout (a loaded machine): the scrape fails, as it would
                    # against a slow exporter; nothing to report here.
                    exporter.aborted_scrapes += 1

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"dcgm-{self.node.name}", daemon=True)
        self._thread.start()
        return self.port

    @property
    def port(self) -> int:
        if self._server is None:
            raise TwinError(f"the fake dcgm-exporter of {self.node.name} is not started")
        return int(self._server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
