"""Node-side collection: the agent configuration passes `promtool check config --agent`, and the user data is
valid bash that passes shellcheck."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.compute.user_data import MAX_USER_DATA_BYTES
from fmconstructs.observability.collection import (
    INSTANCE_ID_PLACEHOLDER,
    NODE_LIFECYCLE_SCRIPT,
    PROMETHEUS_VERSION,
    NodeLabels,
    agent_config,
    agent_config_yaml,
    node_collection_commands,
)
from fmconstructs.observability.metrics import dcgm_counters_csv

from tests.conftest import embedded_files

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-12345678-abcd-ef01-2345-6789abcdef01/api/v1/remote_write"
LABELS = NodeLabels(cluster="training", queue="gpu", node_group="p5", instance_type="p5.48xlarge")


def test_agent_config_passes_promtool(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it"
    path = tmp_path / "agent.yml"
    path.write_text(agent_config_yaml(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0abc"))
    proc = subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_targets_carry_the_cluster_labels():
    config = agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, instance_id="i-0abc")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}  # type: ignore[index,union-attr]
    # fm-app: file discovery, its labels in tests/observability/test_app_metrics.py
    assert set(jobs) == {"dcgm", "node", "fm-app"}
    for job in (jobs["dcgm"], jobs["node"]):
        labels = job["static_configs"][0]["labels"]
        assert labels == {
            "cluster": "training",
            "queue": "gpu",
            "node_group": "p5",
            "instance_type": "p5.48xlarge",
            "instance_id": "i-0abc",
            "instance": "i-0abc",
        }
    assert config["remote_write"] == [  # type: ignore[comparison-overlap]
        {
            "url": URL,
            "sigv4": {"region": "us-east-1"},
            "queue_config": {"max_samples_per_send": 1000, "max_shards": 200, "capacity": 2500},
        }
    ]
    # scrape_timeout below the interval (awsome-distributed-ai#1042 shipped the opposite)
    assert config["global"] == {"scrape_interval": "30s", "scrape_timeout": "10s"}


def test_user_data_is_valid_bash_and_passes_shellcheck(tmp_path):
    script = "#!/bin/bash\n" + "\n".join(
        node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True)
    )
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    path = tmp_path / "ud.sh"
    path.write_text(script)
    proc = subprocess.run(["shellcheck", "--severity=warning", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_user_data_content():
    lines = node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS)
    text = "\n".join(lines)
    assert "sha256sum -c -" in text
    assert INSTANCE_ID_PLACEHOLDER in text and "X-aws-ec2-metadata-token" in text
    assert "fm-efa-textfile.timer" in text
    files = embedded_files(text)
    assert set(files) == {
        "/opt/fmconstructs/efa_textfile.py",
        "/opt/fmconstructs/node_lifecycle.sh",
        "/etc/fmconstructs/dcgm-counters.csv",
        "/etc/systemd/system/fm-node-exporter.service",
        "/etc/systemd/system/fm-efa-textfile.service",
        "/etc/systemd/system/fm-efa-textfile.timer",
        "/etc/systemd/system/fm-prometheus-agent.service",
        "/etc/systemd/system/fm-node-lifecycle.service",
    }
    assert "--agent" in files["/etc/systemd/system/fm-prometheus-agent.service"]
    assert files["/etc/fmconstructs/dcgm-counters.csv"] == dcgm_counters_csv()
    assert "slurm_textfile" not in text  # only on the login node
    embedded = text.split("cat > /etc/fmconstructs/prometheus-agent.yml <<'FMCONSTRUCTS_EOF'\n", 1)[1].split(
        "\nFMCONSTRUCTS_EOF", 1
    )[0]
    assert yaml.safe_load(embedded)["remote_write"][0]["url"] == URL
    login = "\n".join(
        node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True)
    )
    assert "fm-slurm-textfile.timer" in login
    assert "/opt/fmconstructs/slurm_textfile.py" in embedded_files(login)


def unit_settings(unit: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in unit.splitlines() if "=" in line)


def test_clean_shutdown_marker_is_sent_before_the_agent_stops():
    """NodeStoppedReporting stays quiet for a planned scale-down (PCS terminates idle nodes; EC2's default terminate
    attempts a graceful OS shutdown): on the way down, fm-node-lifecycle writes fm_node_shutting_down 1 and waits
    for the agent to scrape and send it. systemd stops units in the reverse of their start order, so the unit is
    ordered after the exporter and the agent, which still run while its ExecStop waits."""
    text = "\n".join(node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS))
    unit = embedded_files(text)["/etc/systemd/system/fm-node-lifecycle.service"]
    settings = unit_settings(unit)
    assert set(settings["After"].split()) >= {"fm-node-exporter.service", "fm-prometheus-agent.service"}
    assert settings["Type"] == "oneshot" and settings["RemainAfterExit"] == "yes"
    marker = "/var/lib/node_exporter/textfile/fm_node_lifecycle.prom"
    assert settings["ExecStart"] == f"/bin/sh /opt/fmconstructs/node_lifecycle.sh start {marker}"
    # at most 60 s for a 30 s scrape interval
    assert settings["ExecStop"] == f"/bin/sh /opt/fmconstructs/node_lifecycle.sh stop {marker} 60 30"
    assert int(settings["TimeoutStopSec"]) > 60
    assert embedded_files(text)["/opt/fmconstructs/node_lifecycle.sh"] == NODE_LIFECYCLE_SCRIPT
    assert "fm-node-lifecycle.service" in next(line for line in text.splitlines() if "systemctl enable --now" in line)
    # the marker lands in the directory node exporter's textfile collector reads, in the job the rule matches
    exporter = unit_settings(embedded_files(text)["/etc/systemd/system/fm-node-exporter.service"])
    assert "--collector.textfile.directory=/var/lib/node_exporter/textfile" in exporter["ExecStart"]
    config = agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS)
    node_job = next(j for j in config["scrape_configs"] if j["job_name"] == "node")  # type: ignore[union-attr]
    assert node_job["static_configs"][0]["targets"] == ["localhost:9100"]  # type: ignore[index]


@pytest.mark.parametrize(("interval", "timeout"), [("15s", 45), ("30s", 60), ("1m", 90)])
def test_shutdown_wait_follows_the_scrape_interval(interval, timeout):
    text = "\n".join(
        node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, scrape_interval=interval)
    )
    unit = unit_settings(embedded_files(text)["/etc/systemd/system/fm-node-lifecycle.service"])
    assert unit["ExecStop"].endswith(f" {timeout} {timeout - 30}")
    assert unit["TimeoutStopSec"] == str(timeout + 15)


def test_prometheus_agent_is_the_supported_lts():
    """The 3.5 LTS reached end of support on 2026-07-31; 3.13 is the LTS supported until 2027-07-31 (prometheus/docs
    docs/introduction/release-cycle.md), 3.13.2 its latest patch (prometheus/prometheus tag v3.13.2)."""
    assert PROMETHEUS_VERSION == "3.13.2"
    text = "\n".join(node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS))
    assert "fm_release prometheus 3.13.2" in text
    assert "/opt/fmconstructs/prometheus-3.13.2.linux-$goarch/prometheus" in text
    assert "3.5.0" not in text


def test_embedded_archive_is_deterministic_and_small():
    a = "\n".join(node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True))
    b = "\n".join(node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS, login_node=True))
    assert a == b  # no timestamps: templates do not churn
    # Node groups deliver this text in an S3 asset by default (fmconstructs.bootstrap); inline delivery (a stack that
    # cannot publish file assets, e.g. a StackSet template) must leave room for the RAID, FSx and user steps. GPU nodes
    # keep 10/16 of the limit; the login node (no RAID step) also carries the Slurm job collector and exporter.
    gpu = "\n".join(node_collection_commands(remote_write_url=URL, region="us-east-1", labels=LABELS))
    assert len(gpu.encode()) < MAX_USER_DATA_BYTES * 10 // 16
    assert len(a.encode()) < MAX_USER_DATA_BYTES * 13 // 16


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cluster": "has space"}, r"cluster must be 1-128 letters"),
        ({"cluster": "ok", "queue": 'bad"quote'}, r"queue must be 1-128 letters"),
    ],
)
def test_invalid_labels(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        NodeLabels(**kwargs)


def test_invalid_interval():
    with pytest.raises(FmValidationError, match=r"scrape_interval must be a Prometheus duration"):
        agent_config(remote_write_url=URL, region="us-east-1", labels=LABELS, scrape_interval="often")
