"""Collection on Slurm nodes: exporters, EFA/Slurm textfile collectors and a Prometheus agent that remote-writes
to Amazon Managed Prometheus with SigV4.

:func:`node_collection_commands` returns idempotent user-data lines for a GPU node (or the login node, which also
runs the Slurm collector). The agent configuration is :func:`agent_config`;
``tests/observability/test_observability_collection.py``
checks it with ``promtool check config --agent``. Every target carries the labels cluster, queue, node_group,
instance_type and instance_id (read from IMDSv2 at boot).

Where the exporters come from is explicit (:class:`~fmconstructs.observability.sources.ExporterSource`): the node
image (nothing downloaded), an S3 mirror, or the internet (node exporter and Prometheus from their GitHub releases,
checked against the release's ``sha256sums.txt``; dcgm-exporter from NVIDIA's NGC registry). Downloads happen on the
node at boot, never at synth time; a component that cannot be installed logs a ``FMCONSTRUCTS-DOWNLOAD-FAILED`` line
and raises the ``NodeBootstrapDownloadFailed`` alert. dcgm-exporter needs Docker on the AMI (without Docker the step
is skipped with a message, and GPU alerts stay silent: see the README).
"""

from __future__ import annotations

import ast
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from .._validate import check_bool, check_instance, check_str
from ..compute.user_data import embedded_files_commands
from ..errors import FmValidationError, is_token
from ..health.metric_names import NODE_EXPORTER_TEXTFILE_DIR
from ._checks import PrometheusDuration, check_prometheus_duration, duration_milliseconds
from .app_metrics import DEFAULT_APP_METRICS_SD_DIR, app_metrics_scrape_config
from .job_mapping import JobMappingSpec, dcgm_exporter_job_mapping_args
from .metrics import dcgm_counters_csv
from .slurm_exporter import (
    SLURM_EXPORTER_PORT,
    SLURM_EXPORTER_UNIT,
    SLURM_EXPORTER_VERSION,
    SLURM_PATH_ENV_FILE,
    slurm_exporter_install_commands,
    slurm_exporter_unit,
    slurm_path_commands,
)
from .sources import ExporterSource, check_exporter_source, dcgm_exporter_commands, install_commands

# Pinned versions. Each tarball is checked at boot against the sha256sums.txt of the same GitHub release (integrity
# of the download; no checksum is pinned here).
# node_exporter: tag v1.9.1 (2025-04-01) in github.com/prometheus/node_exporter (CHANGELOG "1.9.1").
NODE_EXPORTER_VERSION = "1.9.1"
# Prometheus: the 3.13 LTS (prometheus/docs docs/introduction/release-cycle.md: "Prometheus 3.13 | 2026-07-01 |
# 2027-07-31 | Supported"; 3.5 LTS support ended 2026-07-31). 3.13.2 is its latest patch, tag v3.13.2 in
# github.com/prometheus/prometheus (CHANGELOG "3.13.2 / 2026-07-29").
PROMETHEUS_VERSION = "3.13.2"
# dcgm-exporter: tag 4.2.3-4.1.1 (2025-05-15) in github.com/NVIDIA/dcgm-exporter, whose Makefile builds the
# ubuntu22.04 image as nvcr.io/nvidia/k8s/dcgm-exporter:<DCGM>-<exporter>-ubuntu22.04.
DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.1-ubuntu22.04"

DCGM_EXPORTER_PORT = 9400  # dcgm-exporter default listen address :9400
NODE_EXPORTER_PORT = 9100  # node_exporter default :9100
TEXTFILE_DIR = NODE_EXPORTER_TEXTFILE_DIR  # one definition: fmconstructs.health.metric_names
LIFECYCLE_TEXTFILE = "fm_node_lifecycle.prom"  # fm_node_shutting_down, written by NODE_LIFECYCLE_SCRIPT
INSTANCE_ID_PLACEHOLDER = "__FM_INSTANCE_ID__"

# Label values fmconstructs writes into agent configurations, systemd units and user data (kept to characters that
# need no quoting in YAML or shell; a library rule, Prometheus itself accepts any UTF-8 value).
_LABEL_VALUE = re.compile(r"[A-Za-z0-9_.:/+-]{1,128}")
_LABEL_TEXT = "1-128 letters, digits or '_.:/+-'"
# Versions and images written into shell commands: no whitespace, quotes or shell metacharacters.
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9./:@_-]{0,254}")
#: Prometheus's default scrape timeout (prometheus/prometheus config/config.go ``DefaultGlobalConfig``:
#: ScrapeTimeout 10s); it may not exceed the scrape interval ("global scrape timeout greater than scrape interval").
DEFAULT_SCRAPE_TIMEOUT_MS = 10_000


def check_cluster_label(value: object, parameter: str = "cluster_label") -> str:
    """The value of the ``cluster`` label (1-128 letters, digits or ``_.:/+-``; a deploy-time value passes)."""
    checked: str = check_str(parameter, value, pattern=_LABEL_VALUE, allowed=_LABEL_TEXT)
    return checked


@dataclass(frozen=True)
class NodeLabels:
    """Labels put on every series a node sends."""

    cluster: str
    queue: str | None = None
    node_group: str | None = None
    instance_type: str | None = None

    def __post_init__(self) -> None:
        # Deploy-time values are accepted: they are resolved in user data (Fn::Join); the EKS scraper, whose
        # configuration is base64-encoded at synth time, refuses them itself.
        check_str("cluster", self.cluster, pattern=_LABEL_VALUE, allowed=_LABEL_TEXT)
        for name in ("queue", "node_group", "instance_type"):
            value = getattr(self, name)
            if value is not None:
                check_str(name, value, pattern=_LABEL_VALUE, allowed=_LABEL_TEXT)

    def as_dict(self, instance_id: str) -> dict[str, str]:
        labels = {"cluster": self.cluster, "instance_id": instance_id, "instance": instance_id}
        for name in ("queue", "node_group", "instance_type"):
            value = getattr(self, name)
            if value is not None:
                labels[name] = value
        return labels


def scrape_timeout(scrape_interval: str) -> str:
    """Prometheus's default 10 s scrape timeout, or the scrape interval when it is shorter (a timeout longer than the
    interval is a configuration error)."""
    milliseconds = duration_milliseconds(scrape_interval)
    return "10s" if milliseconds >= DEFAULT_SCRAPE_TIMEOUT_MS else scrape_interval


def agent_config(
    *,
    remote_write_url: str,
    region: str,
    labels: NodeLabels,
    instance_id: str = INSTANCE_ID_PLACEHOLDER,
    scrape_interval: PrometheusDuration = "30s",
    login_node: bool = False,
    slurm_exporter: bool = True,
) -> dict[str, object]:
    """Prometheus agent-mode configuration: scrape the local exporters, remote-write to AMP with SigV4.

    GPU nodes (not the login node) also scrape the ports training jobs declare (job ``fm-app``, file discovery
    written by the Slurm prolog: :mod:`fmconstructs.observability.app_metrics`).

    :param remote_write_url: the workspace's remote-write URL (a deploy-time value is fine: user data resolves it).
    :param scrape_interval: a positive Prometheus duration (``'30s'``, ``'1m30s'``, ``'500ms'``) or ``Duration``.
    :param slurm_exporter: on a login node, scrape the Slurm exporter (job ``slurm``; default True).
    """
    check_str("remote_write_url", remote_write_url, min_length=1, allowed="a remote-write URL")
    check_str("region", region, min_length=1, allowed="an AWS Region code")
    check_instance("labels", labels, NodeLabels, "a NodeLabels")
    check_str("instance_id", instance_id, min_length=1, allowed="an EC2 instance id")
    interval = check_prometheus_duration("scrape_interval", scrape_interval, positive=True)
    check_bool("login_node", login_node)
    check_bool("slurm_exporter", slurm_exporter)
    target_labels = labels.as_dict(instance_id)
    jobs = [("dcgm", DCGM_EXPORTER_PORT), ("node", NODE_EXPORTER_PORT)]
    if (
        login_node and slurm_exporter
    ):  # the Slurm exporter runs on the login node only (one per cluster, not one per GPU node)
        jobs.append(("slurm", SLURM_EXPORTER_PORT))
    scrape_configs: list[dict[str, object]] = [
        {
            "job_name": job,
            "static_configs": [{"targets": [f"localhost:{port}"], "labels": dict(target_labels)}],
        }
        for job, port in jobs
    ]
    if not login_node:  # training jobs' own metrics (app_metrics: ports the Slurm prolog discovered)
        scrape_configs.append(app_metrics_scrape_config(target_labels, instance_id=instance_id))
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": scrape_timeout(interval)},
        "scrape_configs": scrape_configs,
        "remote_write": [
            {
                "url": remote_write_url,
                "sigv4": {"region": region},
                "queue_config": {"max_samples_per_send": 1000, "max_shards": 200, "capacity": 2500},
            }
        ],
    }


def _check_synth_str(parameter: str, value: object, pattern: re.Pattern[str], allowed: str) -> str:
    """A str known at synth time (it selects what is downloaded) matching ``pattern`` entirely."""
    checked: str = check_str(parameter, value, pattern=pattern, allowed=allowed)
    if is_token(checked):
        raise FmValidationError(parameter, checked, f"{allowed}, known at synth time")
    return checked


def agent_config_yaml(**kwargs: object) -> str:
    return str(yaml.safe_dump(agent_config(**kwargs), sort_keys=False, width=200))  # type: ignore[arg-type]


def _script(name: str) -> str:
    """A collector script as the nodes get it: the source without comments and docstrings (``ast`` round trip, the
    same program), so it costs less of the 16 KB inline user data (about 1.2 KB for the login node's two scripts)."""
    tree = ast.parse((Path(__file__).parent / "node" / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and _docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    return "#!/usr/bin/env python3\n" + ast.unparse(tree) + "\n"


def _docstring(node: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _heredoc(path: str, content: str, mode: str = "0644") -> list[str]:
    marker = "FMCONSTRUCTS_EOF"
    if marker in content:
        raise AssertionError(f"{marker} inside {path}")
    return [f"cat > {path} <<'{marker}'", *content.rstrip("\n").splitlines(), marker, f"chmod {mode} {path}"]


#: The clean-shutdown marker (``fm_node_shutting_down``) that the ``NodeStoppedReporting`` alert reads: 0 while the
#: node runs, 1 once a clean stop began (a crashed node never writes 1). ``start FILE`` writes 0. ``stop FILE SECONDS
#: [INTERVAL]`` writes 1, then waits at most SECONDS for the marker to leave the node: with INTERVAL (a local
#: Prometheus agent, ``$FM_AGENT_URL`` or http://127.0.0.1:9090, scraping every INTERVAL seconds) until the agent's
#: remote-write queue has sent a sample scraped one interval after the marker
#: (``prometheus_remote_storage_queue_highest_sent_timestamp_seconds``, prometheus/prometheus
#: storage/remote/queue_manager.go), so every job has been scraped since, then 5 s (remote write's default
#: ``batch_send_deadline``) for the other queue shards; without INTERVAL (scraped from outside, on Kubernetes)
#: SECONDS. POSIX sh, curl and awk only: it runs from a systemd unit on Slurm nodes and in the collector pod
#: (python:3.12-slim) on EKS. Kept terse: it travels in the 16 KB user data.
NODE_LIFECYCLE_SCRIPT = r"""#!/bin/sh
set -u
action=$1 file=$2 value=0
[ "$action" = stop ] && value=1
{
  echo "# HELP fm_node_shutting_down 1 once a clean stop began"
  echo "# TYPE fm_node_shutting_down gauge"
  echo "fm_node_shutting_down $value"
} >"$file.tmp" && mv "$file.tmp" "$file"
[ "$action" = stop ] || exit 0
seconds=$3 interval=${4:-}
if [ -z "$interval" ]; then
  sleep "$seconds"
  exit 0
fi
now=$(date +%s)
goal=$((now + interval)) end=$((now + seconds))
while [ "$(date +%s)" -lt "$end" ]; do
  sent=$(curl -fsSm 2 "${FM_AGENT_URL:-http://127.0.0.1:9090}/metrics" 2>/dev/null |
    awk '/^prometheus_remote_storage_queue_highest_sent_/ && $NF + 0 > s { s = $NF + 0 } END { printf "%d", s }')
  if [ "${sent:-0}" -ge "$goal" ]; then
    sleep "${FM_SEND_DEADLINE_SECONDS:-5}"
    exit 0
  fi
  sleep 1
done
echo "fm_node_shutting_down: not sent in ${seconds}s" >&2
"""


def duration_seconds(duration: PrometheusDuration) -> int:
    """Whole seconds (rounded up) of a positive Prometheus duration: ``'30s'`` -> 30, ``'1m30s'`` -> 90,
    ``'500ms'`` -> 1."""
    text = check_prometheus_duration("scrape_interval", duration, positive=True)
    return math.ceil(duration_milliseconds(text) / 1000)


def shutdown_wait_seconds(scrape_interval: PrometheusDuration) -> int:
    """How long a clean stop may wait for the shutdown marker to be scraped and sent: one scrape interval, the
    remote-write batch deadline (5 s by default) and a margin."""
    return duration_seconds(scrape_interval) + 30


def _units(
    login_node: bool, scrape_interval: PrometheusDuration = "30s", slurm_exporter: bool = True
) -> dict[str, str]:
    marker = f"{TEXTFILE_DIR}/{LIFECYCLE_TEXTFILE}"
    wait = shutdown_wait_seconds(scrape_interval)
    units = {
        "fm-node-exporter.service": "[Unit]\nDescription=fmconstructs node exporter\nAfter=network-online.target\n\n"
        f"[Service]\nExecStart=/usr/local/bin/fm-node-exporter --web.listen-address=127.0.0.1:{NODE_EXPORTER_PORT} "
        f"--collector.textfile.directory={TEXTFILE_DIR}\nRestart=always\nDynamicUser=yes\n\n"
        "[Install]\nWantedBy=multi-user.target\n",
        "fm-efa-textfile.service": "[Unit]\nDescription=fmconstructs EFA counters to the textfile directory\n\n"
        "[Service]\nType=oneshot\nExecStart=/usr/bin/python3 -I /opt/fmconstructs/efa_textfile.py "
        f"{TEXTFILE_DIR}/fm_efa.prom\n",
        "fm-efa-textfile.timer": "[Unit]\nDescription=Refresh EFA counters every 15 s\n\n[Timer]\nOnBootSec=30s\n"
        "OnUnitActiveSec=15s\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n",
        "fm-prometheus-agent.service": "[Unit]\nDescription=fmconstructs Prometheus agent (remote write to Amazon "
        "Managed Prometheus)\nAfter=network-online.target\n\n[Service]\n"
        # The fm-app job watches this directory (app_metrics): it must exist when the agent starts; /var/run is tmpfs.
        f"ExecStartPre=-/bin/mkdir -p {DEFAULT_APP_METRICS_SD_DIR}\nExecStart=/usr/local/bin/fm-prometheus --agent "
        "--config.file=/etc/fmconstructs/prometheus-agent.yml --storage.agent.path=/var/lib/fm-prometheus-agent "
        "--web.listen-address=127.0.0.1:9090\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n",
        # Clean-shutdown marker for NodeStoppedReporting. Ordered after the exporter and the agent, so systemd stops
        # it first on shutdown (stop order is the reverse of start order) while both still run: ExecStop writes
        # fm_node_shutting_down 1 and waits until the agent has scraped and sent it. EC2's default terminate (which
        # PCS scale-down uses) attempts a graceful OS shutdown (EC2 User Guide instance-terminate-methods).
        "fm-node-lifecycle.service": "[Unit]\nDescription=fmconstructs clean-stop marker\n"
        "Wants=fm-node-exporter.service fm-prometheus-agent.service\n"
        "After=fm-node-exporter.service fm-prometheus-agent.service\n\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        f"ExecStart=/bin/sh /opt/fmconstructs/node_lifecycle.sh start {marker}\n"
        f"ExecStop=/bin/sh /opt/fmconstructs/node_lifecycle.sh stop {marker} {wait} "
        f"{duration_seconds(scrape_interval)}\n"
        f"TimeoutStopSec={wait + 15}\n\n"
        "[Install]\nWantedBy=multi-user.target\n",
    }
    if login_node:
        units["fm-slurm-textfile.service"] = (
            "[Unit]\nDescription=fmconstructs Slurm node states and jobs to the textfile directory\n\n[Service]\n"
            f"Type=oneshot\nEnvironmentFile=-{SLURM_PATH_ENV_FILE}\n"
            "ExecStart=/usr/bin/python3 -I /opt/fmconstructs/slurm_textfile.py "
            f"{TEXTFILE_DIR}/fm_slurm.prom\n"
        )
        units["fm-slurm-textfile.timer"] = (
            "[Unit]\nDescription=Refresh Slurm node states every 30 s\n\n[Timer]\nOnBootSec=60s\n"
            "OnUnitActiveSec=30s\n\n[Install]\nWantedBy=timers.target\n"
        )
        if slurm_exporter:
            units[SLURM_EXPORTER_UNIT] = slurm_exporter_unit()
    return units


def node_files(
    *, login_node: bool, scrape_interval: PrometheusDuration = "30s", slurm_exporter: bool = True
) -> dict[str, tuple[str, int]]:
    """The static files a node needs: collector scripts, the DCGM counters file and the systemd units."""
    check_bool("login_node", login_node)
    check_bool("slurm_exporter", slurm_exporter)
    files = {
        "/opt/fmconstructs/efa_textfile.py": (_script("efa_textfile.py"), 0o755),
        "/opt/fmconstructs/node_lifecycle.sh": (NODE_LIFECYCLE_SCRIPT, 0o755),
        "/etc/fmconstructs/dcgm-counters.csv": (dcgm_counters_csv(), 0o644),
        **{
            f"/etc/systemd/system/{name}": (body, 0o644)
            for name, body in _units(login_node, scrape_interval, slurm_exporter).items()
        },
    }
    if login_node:
        files["/opt/fmconstructs/slurm_textfile.py"] = (_script("slurm_textfile.py"), 0o755)
    return files


def _slurm_exporter_lines(source: ExporterSource, region: str, version: str) -> list[str]:
    """Login node: the Slurm exporter (installed and reported like the others) and the Slurm PATH file."""
    return [
        *slurm_exporter_install_commands(source, region=region),
        f"fm_slurm_exporter {version}",
        f"ln -sfn /opt/fmconstructs/slurm_exporter-{version}.linux-$goarch/slurm_exporter "
        "/usr/local/bin/fm-slurm-exporter",
        *slurm_path_commands(),
    ]


def _exporter_unit(slurm_exporter: bool) -> str:
    return f" {SLURM_EXPORTER_UNIT}" if slurm_exporter else ""


def _job_mapping_options(job_mapping: object) -> tuple[str, str, str]:
    """What ``job_mapping`` adds to the ``mkdir`` line, the exporter's ``docker run`` options and its arguments."""
    if job_mapping is None:
        return "", "", ""
    spec = check_instance("job_mapping", job_mapping, JobMappingSpec, "a JobMappingSpec or None")
    args = dcgm_exporter_job_mapping_args(spec)
    return f" {shlex.quote(spec.mapping_dir)}", f" {args.docker_run_options}", f" {args.exporter_arguments}"


def node_collection_commands(
    *,
    remote_write_url: str,
    region: str,
    labels: NodeLabels,
    login_node: bool = False,
    scrape_interval: PrometheusDuration = "30s",
    node_exporter_version: str = NODE_EXPORTER_VERSION,
    prometheus_version: str = PROMETHEUS_VERSION,
    dcgm_exporter_image: str = DCGM_EXPORTER_IMAGE,
    exporter_source: ExporterSource = ExporterSource.INTERNET,
    slurm_exporter_version: str = SLURM_EXPORTER_VERSION,
    job_mapping: JobMappingSpec | None = None,
    slurm_exporter: bool = True,
) -> list[str]:
    """User-data lines that install and start the collectors and the agent (idempotent; safe to run twice).

    Same parameters as :func:`agent_config`, plus the pinned versions (no whitespace or shell characters) and
    ``exporter_source``: where the exporters come from (default ``ExporterSource.INTERNET``, GitHub and nvcr.io;
    ``ExporterSource.IMAGE`` or ``ExporterSource.s3_mirror(...)`` for subnets without an internet route; give the node
    role what the source needs with ``exporter_source.grant_read(role)``).
    ``job_mapping``: on a Slurm GPU node whose prolog and epilog write dcgm-exporter's HPC job mapping
    (:mod:`~fmconstructs.observability.job_mapping`), the exporter reads that directory (created here, mounted
    read-only) and labels every series of a job's GPUs with ``hpc_job``. Default None: no job label.
    ``slurm_exporter``: on a login node, install and scrape the Slurm exporter (default True; the per-job textfile
    ``fm_slurm_job_info`` runs either way). False saves about 1.2 KB of inline user data.
    """
    check_exporter_source("exporter_source", exporter_source)
    mapping_dirs, mapping_options, mapping_arguments = _job_mapping_options(job_mapping)
    _check_pins(node_exporter_version, prometheus_version, slurm_exporter_version, dcgm_exporter_image)
    scrape_interval = check_prometheus_duration("scrape_interval", scrape_interval, positive=True)
    config = agent_config_yaml(
        remote_write_url=remote_write_url,
        region=region,
        labels=labels,
        scrape_interval=scrape_interval,
        login_node=login_node,
        slurm_exporter=slurm_exporter,
    )
    lines = [
        "# --- fmconstructs observability: exporters + Prometheus agent -> Amazon Managed Prometheus ---",
        "fm_obs() {",
        "set -euo pipefail",
        "mkdir -p /opt/fmconstructs /etc/fmconstructs " + TEXTFILE_DIR + " /var/lib/fm-prometheus-agent" + mapping_dirs,
        'case "$(uname -m)" in x86_64) goarch=amd64 ;; aarch64) goarch=arm64 ;; '
        '*) echo "unsupported arch"; return 1 ;; esac',
        *install_commands(exporter_source, textfile_dir=TEXTFILE_DIR, region=region),
        f"fm_release node_exporter {node_exporter_version}",
        f"fm_release prometheus {prometheus_version}",
        f"ln -sfn /opt/fmconstructs/node_exporter-{node_exporter_version}.linux-$goarch/node_exporter "
        "/usr/local/bin/fm-node-exporter",
        f"ln -sfn /opt/fmconstructs/prometheus-{prometheus_version}.linux-$goarch/prometheus "
        "/usr/local/bin/fm-prometheus",
        *(
            _slurm_exporter_lines(exporter_source, region, slurm_exporter_version)
            if login_node and slurm_exporter
            else []
        ),
        *embedded_files_commands(
            node_files(login_node=login_node, scrape_interval=scrape_interval, slurm_exporter=slurm_exporter),
            name="fmconstructs-observability",
        ),
        *_heredoc("/etc/fmconstructs/prometheus-agent.yml", config),
        # IMDSv2: the instance id becomes the instance and instance_id labels.
        'token=$(curl -fsS -X PUT "http://169.254.169.254/latest/api/token" '
        '-H "X-aws-ec2-metadata-token-ttl-seconds: 300")',
        'instance_id=$(curl -fsS -H "X-aws-ec2-metadata-token: $token" '
        "http://169.254.169.254/latest/meta-data/instance-id)",
        f'sed -i "s/{INSTANCE_ID_PLACEHOLDER}/$instance_id/g" /etc/fmconstructs/prometheus-agent.yml',
    ]
    return lines + _start_commands(
        exporter_source, dcgm_exporter_image, login_node, slurm_exporter, mapping_options, mapping_arguments
    )


def _check_pins(
    node_exporter_version: str, prometheus_version: str, slurm_exporter_version: str, dcgm_exporter_image: str
) -> None:
    """The pinned versions and image (no whitespace or shell characters: they go into shell lines)."""
    for name, value in (
        ("node_exporter_version", node_exporter_version),
        ("prometheus_version", prometheus_version),
        ("slurm_exporter_version", slurm_exporter_version),
    ):
        _check_synth_str(name, value, _VERSION, "a release version such as '1.9.1'")
    _check_synth_str("dcgm_exporter_image", dcgm_exporter_image, _IMAGE, "a container image reference")


def _start_commands(
    exporter_source: ExporterSource,
    dcgm_exporter_image: str,
    login_node: bool,
    slurm_exporter: bool,
    mapping_options: str,
    mapping_arguments: str,
) -> list[str]:
    """The end of the set-up function: start the units and dcgm-exporter, then call it (a failure never stops the
    node's bootstrap)."""
    return [
        "systemctl daemon-reload",
        "systemctl enable --now fm-node-exporter.service fm-efa-textfile.timer fm-prometheus-agent.service "
        "fm-node-lifecycle.service",
        *([f"systemctl enable --now fm-slurm-textfile.timer{_exporter_unit(slurm_exporter)}"] if login_node else []),
        *dcgm_exporter_commands(
            exporter_source,
            image=exporter_source.dcgm_exporter_image(dcgm_exporter_image),
            run_options="--restart=always --name fm-dcgm-exporter --gpus all --cap-add SYS_ADMIN --net host "
            "-v /etc/fmconstructs/dcgm-counters.csv:/etc/dcgm-exporter/fm-counters.csv:ro" + mapping_options,
            run_arguments=f"-f /etc/dcgm-exporter/fm-counters.csv -a 127.0.0.1:{DCGM_EXPORTER_PORT}"
            + mapping_arguments,
        ),
        "}",
        'fm_obs || echo "fmconstructs: observability set-up failed; training continues without node metrics" >&2',
    ]
