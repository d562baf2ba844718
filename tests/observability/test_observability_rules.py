"""Alert rules are real Prometheus: `promtool check rules`, then `promtool test rules` with input series that fire
every alert and healthy series that fire none."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.observability.metrics import ALL_METRICS
from fmconstructs.observability.rules import AlertRule, AlertThresholds, default_rule_groups, rules_yaml

GPU = {"gpu": "0", "Hostname": "gpu-node-1", "instance": "10.0.1.10:9400", "job": "dcgm"}
EFA = {"device": "rdmap16s27", "port": "1", "instance": "10.0.1.10:9101", "job": "efa"}
NODE = {"instance": "10.0.1.10:9100", "job": "node"}
SLURM = {"cluster": "training", "instance": "10.0.1.5:9101", "job": "slurm"}

# alert -> (input series, eval time, labels of the firing alert, {{ $value }} as rendered)
FIRING = {
    # Xid alerts carry their class and its remediation trigger (tests/observability/test_observability_xid_rules.py
    # fires each class)
    "GpuCriticalXid": (
        [("DCGM_FI_DEV_XID_ERRORS", GPU, "0x10 79x10")],
        "12m",
        {**GPU, "xid_class": "fatal", "fmconstructs_trigger": "fatal-xid"},
        "79",
    ),
    "GpuContainedXid": (
        [("DCGM_FI_DEV_XID_ERRORS", GPU, "0x10 94x10")],
        "12m",
        {**GPU, "xid_class": "contained", "fmconstructs_trigger": "contained-xid"},
        "94",
    ),
    "GpuXidError": ([("DCGM_FI_DEV_XID_ERRORS", GPU, "0x10 13x10")], "12m", GPU, "13"),
    "GpuRowRemapFailure": ([("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU, "0x5 1x10")], "10m", GPU, None),
    "GpuUncorrectableRemappedRows": ([("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", GPU, "0x5 1x10")], "10m", GPU, None),
    "GpuDoubleBitEccErrors": ([("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU, "0x5 2x10")], "10m", GPU, None),
    "GpuTemperatureHigh": ([("DCGM_FI_DEV_GPU_TEMP", GPU, "92x20")], "10m", GPU, None),
    "GpuMemoryTemperatureHigh": ([("DCGM_FI_DEV_MEMORY_TEMP", GPU, "98x20")], "10m", GPU, None),
    "GpuPowerThrottling": ([("DCGM_FI_DEV_POWER_VIOLATION", GPU, "0+30000000x30")], "20m", GPU, None),
    "GpuThermalThrottling": ([("DCGM_FI_DEV_THERMAL_VIOLATION", GPU, "0+30000000x30")], "20m", GPU, None),
    "GpuNvlinkErrors": ([("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GPU, "0x5 3x10")], "10m", GPU, None),
    "GpuPcieReplays": ([("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GPU, "0+600x20")], "15m", GPU, None),
    "GpuIdleWhileAllocated": (
        [("DCGM_FI_DEV_GPU_UTIL", GPU, "1x60"), ("DCGM_FI_DEV_FB_USED", GPU, "40000x60")],
        "45m",
        GPU,
        None,
    ),
    "EfaRdmaWorkRequestErrors": ([("fm_efa_rdma_read_wr_err_total", EFA, "0x5 4x10")], "10m", EFA, None),
    "EfaRetransmitRateHigh": (
        [("fm_efa_retrans_pkts_total", EFA, "0+100x20"), ("fm_efa_tx_pkts_total", EFA, "0+1000x20")],
        "15m",
        EFA,
        None,
    ),
    "EfaRetransmitTimeouts": ([("fm_efa_retrans_timeout_events_total", EFA, "0+1x20")], "15m", EFA, None),
    "EfaUnresponsiveRemote": ([("fm_efa_unresponsive_remote_events_total", EFA, "0x5 1x10")], "10m", EFA, None),
    "EfaImpairedRemoteConnections": ([("fm_efa_impaired_remote_conn_events_total", EFA, "0+1x20")], "15m", EFA, None),
    "EfaCollectorFailing": ([("fm_efa_collector_success", EFA, "0x20")], "10m", EFA, None),
    "ExporterDown": ([("up", NODE, "0x20")], "10m", NODE, None),
    "NodeStoppedReporting": (
        [("up", NODE, "1x10 stale"), ("fm_node_shutting_down", NODE, "0x10 stale")],
        "15m",
        NODE,
        None,
    ),
    "NodeBootstrapDownloadFailed": (
        [("fm_bootstrap_download_failed", {**NODE, "component": "dcgm-exporter"}, "1x20")],
        "10m",
        {**NODE, "component": "dcgm-exporter"},
        None,
    ),
    "LustreFileSystemAlmostFull": (
        [
            ("node_filesystem_avail_bytes", {**NODE, "fstype": "lustre", "mountpoint": "/fsx"}, "5x30"),
            ("node_filesystem_size_bytes", {**NODE, "fstype": "lustre", "mountpoint": "/fsx"}, "100x30"),
        ],
        "20m",
        {**NODE, "fstype": "lustre", "mountpoint": "/fsx"},
        None,
    ),
    # A node-join check fails: the failure's reason joins from fm_node_check_failure_info; the trigger label is the
    # remediation handler's NODE_CHECK_FAILED.
    "FmNodeCheckFailed": (
        [
            ("fm_node_check_status", {**NODE, "check": "efa-devices", "mode": "boot"}, "1x5 0x20"),
            (
                "fm_node_check_failure_info",
                {**NODE, "check": "efa-devices", "mode": "boot", "reason": "16 EFA devices, expected 32"},
                "_x5 1x20",
            ),
        ],
        "15m",
        {
            **NODE,
            "check": "efa-devices",
            "mode": "boot",
            "reason": "16 EFA devices, expected 32",
            "fmconstructs_trigger": "node-check-failed",
        },
        None,
    ),
    "SlurmNodesDown": (
        [("fm_slurm_nodes", {**SLURM, "state": "down"}, "2x20")],
        "15m",
        {**SLURM, "state": "down"},
        "2",
    ),
    "SlurmNodesDrained": (
        [("fm_slurm_nodes", {**SLURM, "state": "drain"}, "3x20")],
        "15m",
        {**SLURM, "state": "drain"},
        "3",
    ),
    "SlurmCollectorFailing": ([("fm_slurm_collector_success", SLURM, "0x20")], "15m", SLURM, None),
}

HEALTHY = [
    ("fm_bootstrap_download_failed", {**NODE, "component": "dcgm-exporter"}, "0x60"),
    ("DCGM_FI_DEV_XID_ERRORS", GPU, "0x60"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU, "0x60"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", GPU, "0x60"),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU, "0x60"),
    ("DCGM_FI_DEV_GPU_TEMP", GPU, "65x60"),
    ("DCGM_FI_DEV_MEMORY_TEMP", GPU, "70x60"),
    ("DCGM_FI_DEV_POWER_VIOLATION", GPU, "0+600000x60"),  # 1% of the time
    ("DCGM_FI_DEV_THERMAL_VIOLATION", GPU, "0x60"),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GPU, "0x60"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GPU, "0x60"),
    ("DCGM_FI_DEV_GPU_UTIL", GPU, "95x60"),
    ("DCGM_FI_DEV_FB_USED", GPU, "70000x60"),
    ("fm_efa_rdma_read_wr_err_total", EFA, "0x60"),
    ("fm_efa_retrans_pkts_total", EFA, "0+1x60"),
    ("fm_efa_tx_pkts_total", EFA, "0+100000x60"),
    ("fm_efa_retrans_timeout_events_total", EFA, "0x60"),
    ("fm_efa_unresponsive_remote_events_total", EFA, "0x60"),
    ("fm_efa_impaired_remote_conn_events_total", EFA, "0x60"),
    ("fm_efa_collector_success", EFA, "1x60"),
    ("up", NODE, "1x60"),
    ("fm_node_shutting_down", NODE, "0x60"),
    ("node_filesystem_avail_bytes", {**NODE, "fstype": "lustre", "mountpoint": "/fsx"}, "50x60"),
    ("node_filesystem_size_bytes", {**NODE, "fstype": "lustre", "mountpoint": "/fsx"}, "100x60"),
    ("fm_slurm_nodes", {**SLURM, "state": "idle"}, "4x60"),
    ("fm_slurm_nodes", {**SLURM, "state": "down"}, "0x60"),
    ("fm_slurm_collector_success", SLURM, "1x60"),
    ("fm_node_check_status", {**NODE, "check": "efa-devices", "mode": "boot"}, "1x60"),
    ("fm_node_check_status", {**NODE, "check": "gpu-count", "mode": "prolog"}, "1x60"),
]


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make test` installs it (Debian package prometheus)"
    return path


@pytest.fixture(scope="module")
def rule_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.yml"
    path.write_text(rules_yaml(default_rule_groups()))
    return path


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def render(template: str, labels: dict[str, str], value: str | None) -> str:
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    if "$value" in out:
        assert value is not None, f"set the rendered $value for {template!r}"
        out = out.replace("{{ $value }}", value)
    return out


def test_promtool_check_rules(promtool, rule_file):
    proc = subprocess.run([promtool, "check", "rules", str(rule_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {sum(len(g.rules) for g in default_rule_groups())} rules found" in proc.stdout


def test_every_alert_has_a_firing_case():
    # the fmconstructs-job layer and its alerts (which read that layer) are tested in tests/observability/test_job_rules.py
    names = {
        r.name
        for g in default_rule_groups()
        if g.name != "fmconstructs-job-alerts"
        for r in g.rules
        if isinstance(r, AlertRule)
    }
    assert names == set(FIRING)


def test_rules_read_only_collected_metrics():
    for group in default_rule_groups():
        for rule in group.rules:
            assert set(rule.metrics) <= ALL_METRICS


def rule_for(name: str, labels: dict[str, str]) -> AlertRule:
    """The rule named ``name`` whose own labels the firing alert carries (an alert name may have a rule per class)."""
    rules = [
        r
        for g in default_rule_groups()
        for r in g.rules
        if isinstance(r, AlertRule) and r.name == name and r.labels.items() <= labels.items()
    ]
    assert len(rules) == 1, (name, labels, rules)
    return rules[0]


def test_promtool_unit_tests_fire_every_alert_and_stay_quiet_when_healthy(promtool, rule_file, tmp_path):
    tests = []
    for name, (inputs, eval_time, labels, value) in FIRING.items():
        rule = rule_for(name, labels)
        tests.append(
            {
                "interval": "1m",
                "input_series": [{"series": series(m, lbl), "values": v} for m, lbl, v in inputs],
                "alert_rule_test": [
                    {
                        "eval_time": eval_time,
                        "alertname": name,
                        "exp_alerts": [
                            {
                                "exp_labels": {**labels, "severity": rule.severity.value},
                                "exp_annotations": {
                                    "summary": render(rule.summary, labels, value),
                                    "description": render(rule.description, labels, value),
                                },
                            }
                        ],
                    }
                ],
            }
        )
    tests.append(
        {
            "interval": "1m",
            "input_series": [{"series": series(m, lbl), "values": v} for m, lbl, v in HEALTHY],
            "alert_rule_test": [
                {"eval_time": t, "alertname": name, "exp_alerts": []} for name in FIRING for t in ("20m", "50m")
            ],
        }
    )
    test_file = tmp_path / "tests.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rule_file)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    assert "SUCCESS" in proc.stdout


# Elastic clusters: PCS terminates idle nodes after scale_down_idle_time, EKS scales node groups in. The node writes
# fm_node_shutting_down 1 as it stops cleanly (systemd ExecStop on Slurm nodes, the collector pod's preStop hook on
# EKS) and its agent/scraper collects it before the node goes; a crash or a network loss never writes it.
# case -> (input series, {eval time: alert expected})
NODE_A = {"cluster": "training", "instance": "i-0aaaaaaaaaaaaaaa1", "job": "node"}
ELASTIC_CASES = {
    # Slurm node (local agent): planned scale-down. The last scrape carries the marker, then the series end (the
    # agent writes no staleness markers on shutdown, so `up` lingers 5 minutes).
    "pcs-planned-scale-down": (
        [("up", NODE_A, "1x10"), ("fm_node_shutting_down", NODE_A, "0x9 1")],
        {"13m": False, "20m": False, "45m": False, "65m": False},
    ),
    # Slurm node crash: the series end with the marker still 0.
    "pcs-crash": (
        [("up", NODE_A, "1x10"), ("fm_node_shutting_down", NODE_A, "0x10")],
        {"12m": False, "20m": True, "45m": True},
    ),
    # EKS planned scale-in: the collector pod's preStop marker is scraped, then the node and its target go (the
    # scraper writes staleness markers for a dropped target).
    "eks-planned-scale-in": (
        [("up", NODE_A, "1x10 stale"), ("fm_node_shutting_down", NODE_A, "0x9 1 stale")],
        {"13m": False, "20m": False, "45m": False},
    ),
    # EKS node crash: the Node turns NotReady, its pod stays a target of the endpoints role and fails scrapes.
    "eks-crash-not-ready": (
        [("up", NODE_A, "1x10 0x30"), ("fm_node_shutting_down", NODE_A, "0x10 stale")],
        {"15m": True, "35m": True},
    ),
    # One failed scrape is not a stopped node.
    "one-failed-scrape": (
        [("up", NODE_A, "1x10 0 1x20"), ("fm_node_shutting_down", NODE_A, "0x10 stale 0x20")],
        {"11m": False, "12m": False, "20m": False},
    ),
    # A clean reboot (1, then 0 again at boot) does not silence a later crash: the last marker value counts.
    "clean-reboot-then-crash": (
        [("up", NODE_A, "1x30"), ("fm_node_shutting_down", NODE_A, "0x10 1 0x19")],
        {"20m": False, "40m": True},
    ),
}


def test_node_stopped_reporting_is_quiet_on_planned_scale_down_and_pages_on_crash(promtool, rule_file, tmp_path):
    rule = next(r for g in default_rule_groups() for r in g.rules if r.name == "NodeStoppedReporting")
    firing = [
        {
            "exp_labels": {**NODE_A, "severity": rule.severity.value},
            "exp_annotations": {
                "summary": render(rule.summary, NODE_A, None),
                "description": render(rule.description, NODE_A, None),
            },
        }
    ]
    tests = [
        {
            "name": name,
            "interval": "1m",
            "input_series": [{"series": series(m, lbl), "values": v} for m, lbl, v in inputs],
            "alert_rule_test": [
                {"eval_time": t, "alertname": "NodeStoppedReporting", "exp_alerts": firing if fires else []}
                for t, fires in expected.items()
            ],
        }
        for name, (inputs, expected) in ELASTIC_CASES.items()
    ]
    test_file = tmp_path / "elastic.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(rule_file)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    proc = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    assert "SUCCESS" in proc.stdout


def test_thresholds_are_props(promtool, tmp_path):
    groups = default_rule_groups(AlertThresholds(gpu_temperature_celsius=80, temperature_for="2m", critical_xids=(79,)))
    text = rules_yaml(groups)
    assert "DCGM_FI_DEV_GPU_TEMP > 80" in text
    assert "(DCGM_FI_DEV_XID_ERRORS == 79) and" in text and "== 48" not in text
    path = tmp_path / "r.yml"
    path.write_text(text)
    assert subprocess.run([promtool, "check", "rules", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"temperature_for": "5 minutes"}, r"temperature_for must be a Prometheus duration"),
        ({"xid_window": ""}, r"xid_window must be a Prometheus duration"),
        ({"node_stopped_for": "2 minutes"}, r"node_stopped_for must be a Prometheus duration"),
        ({"throttle_ratio": 1.5}, r"throttle_ratio must be a ratio between 0 and 1"),
        ({"efa_retransmit_ratio": 0}, r"efa_retransmit_ratio must be a ratio between 0 and 1"),
        ({"critical_xids": ()}, r"critical_xids must be a non-empty tuple"),
        ({"critical_xids": (0,)}, r"critical_xids\[0\] must be at least 1"),
    ],
)
def test_invalid_thresholds(kwargs, message):
    with pytest.raises(FmValidationError, match=message):
        AlertThresholds(**kwargs)
