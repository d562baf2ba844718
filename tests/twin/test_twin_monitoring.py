"""The cluster twin's monitoring and remediation half, without Slurm: a node's failing check reaches the remediation
handler through real node_exporter, Prometheus and Alertmanager, all fed with what the library renders.

GIVEN a synthesized stack (PrometheusWorkspace + NodeRemediation on PCS), two twin compute nodes whose agent
configuration is the library's ``agent_config`` and a login node for SSM, WHEN the library's rendered node-check
script fails a check on one node (stub commands, as tests/health do), THEN ``FmNodeCheckFailed`` fires for that node
only, Alertmanager publishes it to the local SNS endpoint (SigV4, the rendered attributes), the handler's ``process``
gets a fault for that instance and runs its Slurm script through SSM, then terminates the instance (``replace``).
The daemons are shared by the module; one test starts its own small twin to prove nothing is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Template

from fmconstructs.health import CheckMode, render_node_checks
from fmconstructs.observability import PrometheusWorkspace
from fmconstructs.observability.collection import NodeLabels, agent_config
from fmconstructs.observability.rules import default_rule_groups, rules_yaml
from fmconstructs.observability.workspace import alertmanager_config
from fmconstructs.remediation import JobKill, NodeRemediation, RemediationPolicy, RemediationTarget, Trigger
from fmconstructs.remediation.handler.runtime import NOTICE_ATTRIBUTE

from tests.conftest import ENV, new_app, require_tool
from tests.support.health_checks import STUBS, p5_spec
from tests.support.twin.artifacts import monitoring_artifacts, remediation_artifacts
from tests.support.twin.exporters import MonitoredNode
from tests.support.twin.monitoring import BINARIES, DUMMY_ACCESS_KEY_ID, DUMMY_SECRET_ACCESS_KEY, MonitoringTwin
from tests.support.twin.remediation import RemediationBridge
from tests.support.twin.sns import SnsReceiver
from tests.support.twin.timescale import FACTOR, scale_rules_yaml, twin_seconds

CLUSTER = "pcs_twin"
LABELS = NodeLabels(cluster=CLUSTER, queue="gpu", node_group="pcs_gpu", instance_type="p5.48xlarge")
#: Slurm nodes of the fake Slurm commands: name, NodeAddr, NodeHostName (the twin's loopback addresses).
SLURM_NODES = {"gpu-1": "127.0.0.11", "gpu-2": "127.0.0.12"}
# Fake Slurm for the handler's script (no slurmctld in this file): sinfo lists the nodes, scontrol and squeue record
# their calls; every node is idle.
FAKE_SLURM = {
    "sinfo": "#!/bin/bash\n"
    + "".join(f"echo '{name} {ip} ip-{ip.replace('.', '-')}'\n" for name, ip in SLURM_NODES.items()),
    "scontrol": '#!/bin/bash\necho "scontrol $*" >>"$SLURM_LOG"\n'
    'if [ "$1" = show ]; then echo "NodeName=$3 Arch=x86_64"; echo "   State=IDLE ThreadsPerCore=2"; fi\n',
    "squeue": '#!/bin/bash\necho "squeue $*" >>"$SLURM_LOG"\n',
}
POLICY = RemediationPolicy(
    dry_run=False, job_kill=JobKill.FATAL, fatal_triggers=frozenset({Trigger.FATAL_XID, Trigger.NODE_CHECK_FAILED})
)
TARGET = RemediationTarget.pcs(cluster_id=CLUSTER, login_node_group_id="pcs_login", compute_node_group_ids=["pcs_gpu"])
TIMEOUT_S = 30  # real seconds: alert for 2m (2 s), group_wait 30s (0.5 s), scrapes and evaluations, on a busy host


@pytest.fixture(scope="module")
def binaries() -> None:
    for binary, package in BINARIES:
        require_tool(binary, package)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """The library's workspace and PCS remediation; replacement allowed for failed node checks (job_kill FATAL)."""
    stack = cdk.Stack(new_app(), "Twin", env=ENV)
    workspace = PrometheusWorkspace(stack, "Prometheus")
    NodeRemediation(stack, "Remediation", alert_topic=workspace.alert_topic, target=TARGET, policy=POLICY)
    template: dict[str, Any] = Template.from_stack(stack).to_json()
    return template


class FakeSlurmHost:
    """The login node's side of SSM: runs the handler's script with bash and the fake Slurm commands."""

    def __init__(self, root: Path) -> None:
        self.bin, self.log = root / "bin", root / "slurm.log"
        self.bin.mkdir(parents=True)
        self.log.touch()
        for name, body in FAKE_SLURM.items():
            (self.bin / name).write_text(body)
            (self.bin / name).chmod(0o755)

    def __call__(self, script: str) -> tuple[int, str, str]:
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "SLURM_LOG": str(self.log)}
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)
        return done.returncode, done.stdout, done.stderr

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


class Twin:
    """The module's twin: bridge, SNS receiver, monitoring, nodes by Slurm name."""

    def __init__(self, bridge: RemediationBridge, receiver: SnsReceiver, monitoring: MonitoringTwin) -> None:
        self.bridge, self.receiver, self.monitoring = bridge, receiver, monitoring
        self.nodes: dict[str, MonitoredNode] = {}
        self.replaced: list[str] = []
        self.slurm: FakeSlurmHost | None = None


def _node(root: Path, name: str, instance_id: str) -> MonitoredNode:
    config = agent_config(
        remote_write_url="https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-twin/api/v1/remote_write",
        region="us-east-1",
        labels=LABELS,
    )
    return MonitoredNode.under(root / name, name=name, instance_id=instance_id, agent_config=config)


@pytest.fixture(scope="module")
def twin(binaries: None, template: dict[str, Any], tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("twin-monitoring")
    replaced: list[str] = []
    slurm = FakeSlurmHost(root / "login")
    remediation = remediation_artifacts(template)
    with RemediationBridge(remediation, replace=replaced.append, run_slurm_script=slurm) as bridge:
        bridge.launch("login", private_ip="127.0.0.10")
        receiver = SnsReceiver(
            remediation.topic_arn, bridge, filter_policy=remediation.filter_policy, secret_key=DUMMY_SECRET_ACCESS_KEY
        )
        with (
            receiver,
            MonitoringTwin(
                monitoring_artifacts(template), workdir=root / "monitoring", sns_url=receiver.url
            ) as monitoring,
        ):
            state = Twin(bridge, receiver, monitoring)
            state.replaced, state.slurm = replaced, slurm
            for name, ip in SLURM_NODES.items():
                state.nodes[name] = _node(root / "nodes", name, bridge.launch("compute", private_ip=ip))
            monitoring.start(list(state.nodes.values()))
            yield state


def _run_checks(node: MonitoredNode, **fake: str) -> subprocess.CompletedProcess[str]:
    """The library's prolog node checks, rendered for p5.48xlarge, run with stub GPU/EFA tools under the node's
    root (FMCONSTRUCTS_ROOT): they write the node's textfile."""
    root = node.textfile_dir.parents[3]  # <root>/var/lib/node_exporter/textfile
    for name, body in STUBS.items():
        stub = root / "bin" / name
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text(body)
        stub.chmod(0o755)
    script = root / "node-checks.sh"
    script.write_text(render_node_checks(p5_spec(), CheckMode.PROLOG))
    env = {"PATH": "/usr/bin:/bin", "FMCONSTRUCTS_ROOT": str(root), "CALLS": str(root / "calls"), **fake}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_twin_runs_what_the_template_holds(template: dict[str, Any], twin: Twin) -> None:
    monitoring = monitoring_artifacts(template)
    assert monitoring.rule_files == {"fmconstructs": rules_yaml(default_rule_groups())}
    remediation = remediation_artifacts(template)
    topic = remediation.topic_arn
    assert monitoring.alertmanager_config == yaml.safe_load(alertmanager_config(topic_arn=topic, region="us-east-1"))
    assert remediation.policy == json.loads(POLICY.to_json()) and remediation.target == json.loads(TARGET.to_json())
    assert remediation.filter_policy == {NOTICE_ATTRIBUTE: [{"exists": False}]}
    assert [p.read_text() for p in twin.monitoring.rule_paths] == [scale_rules_yaml(rules_yaml(default_rule_groups()))]


def test_a_failing_node_check_reaches_the_handler_and_replaces_that_node(twin: Twin) -> None:
    bad, good = twin.nodes["gpu-1"], twin.nodes["gpu-2"]
    assert _run_checks(good).returncode == 0
    failed = _run_checks(bad, FAKE_LUSTRE_RC="32")  # findmnt finds no /fsx
    assert failed.returncode == 1, failed.stdout
    assert "fm_node_check_status" in (bad.textfile_dir / "fm_node_checks_prolog.prom").read_text()

    alert = twin.monitoring.prometheus.wait_for_alert(
        "FmNodeCheckFailed", labels={"instance_id": bad.instance_id}, timeout_s=TIMEOUT_S
    )
    assert alert["labels"]["check"] == "lustre-mount" and alert["labels"]["mode"] == "prolog"
    assert alert["labels"]["fmconstructs_trigger"] == "node-check-failed"
    assert alert["labels"]["cluster"] == CLUSTER and alert["labels"]["job"] == "node"
    record = twin.bridge.wait_for_record(instance=bad.instance_id, trigger="node-check-failed", timeout_s=TIMEOUT_S)
    assert record["outcome"] == "replaced", record
    assert twin.replaced == [bad.instance_id]
    assert twin.bridge.instance_state(bad.instance_id) in ("shutting-down", "terminated")

    # the handler ran its Slurm script on the login node through SSM, and it set the failing node (only) DOWN
    assert twin.bridge.ssm is not None and twin.slurm is not None
    (command,) = [c for c in twin.bridge.ssm.commands if SLURM_NODES["gpu-1"] in c.script]
    assert command.instance_id in twin.bridge.slurm_hosts() and command.exit_code == 0, command
    downs = [c for c in twin.slurm.calls() if c.startswith("scontrol update")]
    assert downs and all("nodename=gpu-1" in c and "state=DOWN" in c for c in downs), twin.slurm.calls()
    # nothing for the healthy node
    assert not twin.monitoring.prometheus.alerts("FmNodeCheckFailed") or all(
        a["labels"]["instance_id"] == bad.instance_id for a in twin.monitoring.prometheus.alerts("FmNodeCheckFailed")
    )
    assert not [r for r in twin.bridge.records() if r.get("instance") == good.instance_id]


def test_alertmanager_publishes_the_rendered_sns_message_signed_with_sigv4(twin: Twin) -> None:
    twin.receiver.wait_idle(TIMEOUT_S)
    firing = [p for p in twin.receiver.published if p.subject == "[FIRING] FmNodeCheckFailed"]
    assert firing, [p.subject for p in twin.receiver.published]
    publish = firing[0]
    assert publish.attributes == {"severity": "critical"}  # the rendered sns_configs attributes
    assert (publish.access_key_id, publish.region) == (DUMMY_ACCESS_KEY_ID, "us-east-1")
    assert "Alerts Firing:" in publish.message and f"instance_id = {twin.nodes['gpu-1'].instance_id}" in publish.message
    assert twin.receiver.rejected == []
    # the handler's own notice went to the topic (moto) and would be dropped by the subscription's filter policy
    assert any(str(n.get("Subject", "")).startswith("[replaced]") for n in twin.bridge.notices), twin.bridge.notices
    assert twin.receiver.delivery_errors == []


def test_a_fatal_xid_from_the_fake_dcgm_exporter_replaces_the_node(twin: Twin) -> None:
    node = twin.nodes["gpu-2"]
    prometheus = twin.monitoring.prometheus
    gpu3 = f'DCGM_FI_DEV_XID_ERRORS{{instance_id="{node.instance_id}",gpu="3"}}'
    (series,) = prometheus.wait_for_query(gpu3, lambda r: len(r) == 1, TIMEOUT_S)
    assert {"UUID", "pci_bus_id", "device", "modelName", "Hostname"} <= set(series["metric"])
    assert series["metric"]["Hostname"] == "gpu-2" and series["metric"]["job"] == "dcgm"
    node.write_scenario({"xid": 79, "xid_gpu": 3})  # the last XID changes from 0 to 79 during the run
    alert = prometheus.wait_for_alert("GpuCriticalXid", labels={"instance_id": node.instance_id}, timeout_s=TIMEOUT_S)
    assert alert["labels"]["gpu"] == "3" and float(alert["value"]) == 79
    record = twin.bridge.wait_for_record(instance=node.instance_id, trigger="fatal-xid", timeout_s=TIMEOUT_S)
    assert record["outcome"] == "replaced", record
    assert node.instance_id in twin.replaced


def test_the_running_daemons_use_the_time_factor(twin: Twin) -> None:
    rules = {r["name"]: (g, r) for g in twin.monitoring.prometheus.rules() for r in g["rules"]}
    group, rule = rules["FmNodeCheckFailed"]
    assert FACTOR == 60
    assert group["interval"] == twin_seconds("1m") == 1  # the rendered group interval 1m
    assert rule["duration"] == twin_seconds("2m") == 2  # AlertThresholds.node_check_for 2m
    assert "[15s]" in rules["GpuCriticalXid"][1]["query"]  # xid_window 15m
    config = yaml.safe_load(twin.monitoring.prometheus.query_config())
    assert config["global"]["scrape_interval"] == "500ms"  # the agent's 30s
    assert {s["job_name"].split("/")[0] for s in config["scrape_configs"]} == {"dcgm", "node", "fm-app"}
    alertmanager = yaml.safe_load(twin.monitoring.alertmanager.status()["config"]["original"])
    assert {k: alertmanager["route"][k] for k in ("group_wait", "group_interval", "repeat_interval")} == {
        "group_wait": "500ms",
        "group_interval": "5s",
        "repeat_interval": "4m",
    }
    assert alertmanager["receivers"][0]["sns_configs"][0]["api_url"] == twin.receiver.url


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie child not yet reaped counts as gone: Daemon.stop waits for it, so this is not reached normally
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_twin_leaves_nothing_running(binaries: None, template: dict[str, Any], tmp_path: Path) -> None:
    before = {t.name for t in threading.enumerate()}
    receiver = SnsReceiver("arn:aws:sns:us-east-1:123456789012:Nothing", lambda event: None)
    with receiver, MonitoringTwin(monitoring_artifacts(template), workdir=tmp_path / "m", sns_url=receiver.url) as m:
        m.start([_node(tmp_path, "gpu-9", "i-0123456789abcdef0")])
        m.replace_node("gpu-9", _node(tmp_path, "gpu-10", "i-0fedcba9876543210"))
        m.prometheus.wait_for_query('up{job="node"} == 1', lambda r: len(r) == 1, TIMEOUT_S)
        assert {t["labels"]["instance"] for t in m.prometheus.targets()} == {"i-0fedcba9876543210"}
        pids = m.pids()
        assert len(pids) == 3  # alertmanager, prometheus, one node_exporter (the replaced one's was stopped)
    assert all(_gone(pid) for pid in pids)
    assert {t.name for t in threading.enumerate()} - before == set()
