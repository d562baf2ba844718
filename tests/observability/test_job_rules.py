"""The per-job recording-rule layer (``fm_job:*``) and its alerts, run by promtool on Slurm-shaped and EKS-shaped
inputs: a running job, an idle allocated GPU (waste) and a finished job whose series end at 10 minutes.

promtool 2.42: range selectors include both ends, so ``[1h]`` at 30m holds 31 one-minute samples (0..30m) and a
series that ends at 10m holds 11."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.observability.job_rules import (
    RECORD_NAMES,
    job_alert_rule_group,
    job_rule_group,
)
from fmconstructs.observability.rules import AlertRule, RecordingRule, RuleGroup, default_rule_groups, rules_yaml

from tests.conftest import require_tool

SLURM = {"cluster": "slurm-a", "instance": "i-0a", "job": "dcgm"}
EKS = {"cluster": "eks-b", "instance": "ip-10-0-0-1", "job": "dcgm"}
# (base labels, gpu, job labels, utilization %, SM active, FB MiB, power W, NVLink per minute, XID values, end)
GPUS: list[tuple[dict[str, str], str, dict[str, str], float, float, float, float, float, str, str]] = [
    (SLURM, "0", {"hpc_job": "101"}, 90, 0.75, 1000, 500, 600, "0x60", ""),
    (SLURM, "1", {"hpc_job": "101"}, 70, 0.25, 3000, 300, 1200, "0x19 13x40", ""),
    (SLURM, "2", {"hpc_job": "102"}, 1, 0, 200, 100, 0, "0x60", ""),  # allocated, idle
    (SLURM, "3", {"hpc_job": "103"}, 50, 0.5, 100, 100, 60, "0x10", " stale"),  # finished at 10m
    (EKS, "0", {"namespace": "team-a", "pod": "llama-w-0-0", "container": "t"}, 90, 0.75, 1000, 500, 600, "0x60", ""),
    (
        EKS,
        "1",
        {"namespace": "team-a", "pod": "llama-w-0-0", "container": "t"},
        70,
        0.25,
        3000,
        300,
        1200,
        "0x19 79x40",
        "",
    ),
    (EKS, "2", {"namespace": "team-b", "pod": "eval-x7", "container": "t"}, 1, 0, 200, 100, 0, "0x60", ""),
    (EKS, "3", {"namespace": "team-b", "pod": "bare", "container": "t"}, 50, 0.5, 100, 100, 60, "0x10", " stale"),
]
SLURM_INFO = [("101", "alice", "ml", ""), ("102", "bob", "research", ""), ("103", "carol", "ml", " stale")]
# kube_pod_labels of the EKS pods: a JobSet pod with a team label, a Job pod (team from its namespace), a bare pod.
POD_LABELS = [
    {
        "namespace": "team-a",
        "pod": "llama-w-0-0",
        "uid": "u1",
        "label_jobset_sigs_k8s_io_jobset_name": "llama",
        "label_batch_kubernetes_io_job_name": "llama-w-0",
        "label_team": "ml",
    },
    {"namespace": "team-b", "pod": "eval-x7", "uid": "u2", "label_batch_kubernetes_io_job_name": "eval"},
    {"namespace": "team-b", "pod": "bare", "uid": "u3"},
    {"namespace": "kube-system", "pod": "coredns-1", "uid": "u4"},  # no GPU: not in fm_job:pod:info
]
KSM = {"cluster": "eks-b", "instance": "ksm", "job": "kube-state-metrics"}


def _s(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _gpu_inputs() -> list[dict[str, str]]:
    out = []
    for base, gpu, job, util, sm, fb, power, nvlink, xid, end in GPUS:
        labels = {**base, "gpu": gpu, **job}
        count = 10 if end else 60
        for metric, value in (
            ("DCGM_FI_DEV_GPU_UTIL", util),
            ("DCGM_FI_PROF_SM_ACTIVE", sm),
            ("DCGM_FI_DEV_FB_USED", fb),
            ("DCGM_FI_DEV_POWER_USAGE", power),
        ):
            out.append({"series": _s(metric, labels), "values": f"{value:g}x{count}{end}"})
        out.append({"series": _s("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", labels), "values": f"0+{nvlink:g}x{count}{end}"})
        out.append({"series": _s("DCGM_FI_DEV_XID_ERRORS", labels), "values": xid + end})
    return out


def _other_inputs() -> list[dict[str, str]]:
    out = []
    for job, user, account, end in SLURM_INFO:
        labels = {"cluster": "slurm-a", "instance": "login", "job": "node", "hpc_job": job}
        labels |= {"user": user, "account": account, "partition": "p5"}
        out.append({"series": _s("fm_slurm_job_info", labels), "values": f"1x{10 if end else 60}{end}"})
    for pod in POD_LABELS:
        end = " stale" if pod["pod"] == "bare" else ""
        out.append({"series": _s("kube_pod_labels", {**KSM, **pod}), "values": f"1x{10 if end else 60}{end}"})
    ns = {**KSM, "namespace": "team-b", "label_team": "research"}
    out.append({"series": _s("kube_namespace_labels", ns), "values": "1x60"})
    for base in (SLURM, EKS):
        node = {**base, "job": "node", "device": "rdmap0s6", "port": "1"}
        out.append({"series": _s("fm_efa_tx_bytes_total", node), "values": "0+6000x60"})  # 100 B/s
        out.append({"series": _s("fm_efa_rx_bytes_total", node), "values": "0+12000x60"})  # 200 B/s
    return out


def _job(scheduler: str, name: str) -> dict[str, str]:
    if scheduler == "slurm":
        return {"cluster": "slurm-a", "fm_job": name, "scheduler": "slurm"}
    namespace = "team-a" if name == "llama" else "team-b"
    return {"cluster": "eks-b", "namespace": namespace, "fm_job": name, "scheduler": "kubernetes"}


def _both(values: dict[str, float]) -> list[tuple[dict[str, str], float]]:
    """The same value for the Slurm and the EKS twin of the running (101/llama) and idle (102/eval) job."""
    twins = {"running": (("slurm", "101"), ("kubernetes", "llama")), "idle": (("slurm", "102"), ("kubernetes", "eval"))}
    return [(_job(s, n), v) for kind, v in values.items() for s, n in twins[kind]]


def _expected_at_30m() -> dict[str, list[tuple[dict[str, str], float]]]:
    return {
        "fm_job:gpus_allocated:count": _both({"running": 2, "idle": 1}),
        "fm_job:gpu_utilization:avg": _both({"running": 80, "idle": 1}),
        "fm_job:sm_active:avg": _both({"running": 0.5, "idle": 0}),
        "fm_job:fb_used_mib:sum": _both({"running": 4000, "idle": 200}),
        "fm_job:power_watts:sum": _both({"running": 800, "idle": 100}),
        "fm_job:nvlink_bandwidth:rate5m": _both({"running": 30, "idle": 0}),  # (600 + 1200) per minute
        "fm_job:xid_changes:sum15m": _both({"running": 1, "idle": 0}),  # XID at 20m, inside [15m]
        "fm_job:instance_gpus:count": [
            ({**j, "instance": i}, v)
            for (j, v), i in zip(_both({"running": 2, "idle": 1}), ["i-0a", "ip-10-0-0-1"] * 2, strict=True)
        ],
        "fm_job:nodes:count": _both({"running": 1, "idle": 1}),
        "fm_job:efa_bytes:rate5m": _both({"running": 300, "idle": 300}),  # the node's tx + rx, to each job on it
        "fm_job:info": [
            ({**_job("slurm", "101"), "user": "alice", "account": "ml", "partition": "p5", "team": "ml"}, 1),
            ({**_job("slurm", "102"), "user": "bob", "account": "research", "partition": "p5", "team": "research"}, 1),
            ({**_job("kubernetes", "llama"), "team": "ml"}, 1),  # the pod's team label
            ({**_job("kubernetes", "eval"), "team": "research"}, 1),  # the namespace's team label
        ],
        "fm_job:pod:info": [
            ({**_job("kubernetes", "llama"), "pod": "llama-w-0-0"}, 1),
            ({**_job("kubernetes", "eval"), "pod": "eval-x7"}, 1),
        ],
    }


def _usage_at_30m() -> dict[str, list[tuple[dict[str, str], float]]]:
    finished_slurm = {"cluster": "slurm-a", "fm_job": "103", "scheduler": "slurm"}
    finished_eks = {"cluster": "eks-b", "namespace": "team-b", "fm_job": "bare", "scheduler": "kubernetes"}
    slurm, eks = {"cluster": "slurm-a", "scheduler": "slurm"}, {"cluster": "eks-b", "scheduler": "kubernetes"}
    return {
        "fm_job:gpu_hours:1h": [
            *_both({"running": 62 / 60, "idle": 31 / 60}),
            (finished_slurm, 11 / 60),
            ({**finished_eks, "scheduler": "kubernetes"}, 11 / 60),
        ],
        "fm_job:gpus_allocated:sum_by_user": [({**slurm, "user": "alice"}, 2), ({**slurm, "user": "bob"}, 1)],
        "fm_job:gpus_allocated:sum_by_account": [
            ({**slurm, "account": "ml"}, 2),
            ({**slurm, "account": "research"}, 1),
        ],
        "fm_job:gpus_allocated:sum_by_team": [
            ({**slurm, "team": "ml"}, 2),
            ({**slurm, "team": "research"}, 1),
            ({**eks, "team": "ml"}, 2),
            ({**eks, "team": "research"}, 1),
        ],
        "fm_job:gpus_allocated:sum_by_namespace": [
            ({**eks, "namespace": "team-a"}, 2),
            ({**eks, "namespace": "team-b"}, 1),
        ],
        # Slurm: carol's finished job counts its 11 minutes; EKS: the bare pod's team comes from its namespace.
        "fm_job:gpu_hours:sum_by_user_1h": [
            ({**slurm, "user": "alice"}, 62 / 60),
            ({**slurm, "user": "bob"}, 31 / 60),
            ({**slurm, "user": "carol"}, 11 / 60),
        ],
        "fm_job:gpu_hours:sum_by_account_1h": [
            ({**slurm, "account": "ml"}, (11 * 3 + 20 * 2) / 60),
            ({**slurm, "account": "research"}, 31 / 60),
        ],
        "fm_job:gpu_hours:sum_by_team_1h": [
            ({**slurm, "team": "ml"}, (11 * 3 + 20 * 2) / 60),
            ({**slurm, "team": "research"}, 31 / 60),
            ({**eks, "team": "ml"}, 62 / 60),
            ({**eks, "team": "research"}, (11 * 2 + 20) / 60),
        ],
        "fm_job:gpu_hours:sum_by_namespace_1h": [
            ({**eks, "namespace": "team-a"}, 62 / 60),
            ({**eks, "namespace": "team-b"}, (11 * 2 + 20) / 60),
        ],
    }


def _sample(record: str, labels: dict[str, str], value: float) -> dict[str, object]:
    return {"labels": _s(record, labels), "value": value}


def _expr_tests() -> list[dict[str, Any]]:
    expected = {**_expected_at_30m(), **_usage_at_30m()}
    tests: list[dict[str, Any]] = [
        {"expr": record, "eval_time": "30m", "exp_samples": [_sample(record, lbl, v) for lbl, v in samples]}
        for record, samples in expected.items()
    ]
    # At 5m the finished jobs still run; at 20m their per-job gauges are gone (stale series end within 5m).
    for selector in ('{fm_job="103"}', '{fm_job="bare"}'):
        tests.append({"expr": f"fm_job:gpus_allocated:count{selector}", "eval_time": "20m", "exp_samples": []})
        tests.append({"expr": f"fm_job:info{selector}", "eval_time": "20m", "exp_samples": []})
        tests.append({"expr": f"fm_job:gpu_hours:1h{selector}", "eval_time": "75m", "exp_samples": []})
    tests.append(
        {
            "expr": 'fm_job:gpus_allocated:count{fm_job="103"}',
            "eval_time": "5m",
            "exp_samples": [_sample("fm_job:gpus_allocated:count", _job("slurm", "103"), 1)],
        }
    )
    return tests


def _alert(name: str, labels: dict[str, str], summary: str, description: str) -> dict[str, object]:
    return {
        "exp_labels": {**labels, "severity": "warning"},
        "exp_annotations": {"summary": summary, "description": description},
    }


def _alert_tests() -> list[dict[str, Any]]:
    idle, xid = job_alert_rule_group().rules
    assert isinstance(idle, AlertRule) and isinstance(xid, AlertRule)
    idle_alerts = [
        _alert(
            "FmJobGpusIdle",
            _job(s, n),
            f"Job {n} ({s}, {_job(s, n)['cluster']}) holds GPUs at 1% utilization",
            idle.description,
        )
        for s, n in (("slurm", "102"), ("kubernetes", "eval"))
    ]
    xid_alerts = [
        _alert(
            "FmJobGpuXid", _job(s, n), f"A GPU of job {n} ({s}, {_job(s, n)['cluster']}) raised an XID", xid.description
        )
        for s, n in (("slurm", "101"), ("kubernetes", "llama"))
    ]
    return [
        {"eval_time": "20m", "alertname": "FmJobGpusIdle", "exp_alerts": []},  # pending: idle for 20 of 30 minutes
        {"eval_time": "35m", "alertname": "FmJobGpusIdle", "exp_alerts": idle_alerts},  # not the busy or finished jobs
        {"eval_time": "15m", "alertname": "FmJobGpuXid", "exp_alerts": []},
        {"eval_time": "25m", "alertname": "FmJobGpuXid", "exp_alerts": xid_alerts},
        {"eval_time": "50m", "alertname": "FmJobGpuXid", "exp_alerts": []},  # 30 minutes later, out of the window
    ]


def _promtool(tmp_path: Path, groups: list[RuleGroup], tests: list[dict[str, Any]]) -> None:
    promtool = require_tool("promtool", "prometheus")
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(groups))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {sum(len(g.rules) for g in groups)} rules found" in check.stdout
    spec = tmp_path / "tests.yml"
    spec.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-8000:]


def test_every_record_and_alert_on_slurm_and_eks_inputs(tmp_path):
    # GIVEN a Slurm node and an EKS node, each with a running job, an idle allocated GPU and a job finished at 10m
    inputs = _gpu_inputs() + _other_inputs()
    tests = [
        {"interval": "1m", "input_series": inputs, "promql_expr_test": _expr_tests(), "alert_rule_test": _alert_tests()}
    ]
    # WHEN promtool evaluates the layer and its alerts THEN every record and alert has exactly the expected series
    _promtool(tmp_path, [job_rule_group(), job_alert_rule_group()], tests)


def test_every_record_name_is_tested():
    tested = set(_expected_at_30m()) | set(_usage_at_30m())
    assert tested == set(RECORD_NAMES)
    assert all(name.startswith("fm_job:") for name in RECORD_NAMES)


def test_per_job_series_carry_one_job_label_and_the_scheduler():
    for rule in job_rule_group().rules:
        assert isinstance(rule, RecordingRule)
        assert "hpc_job" not in rule.expr.split("by (")[-1].split(")")[0]  # never aggregated by the raw job id
        if len(rule.labels):
            assert set(rule.labels) == {"scheduler"}
            assert rule.labels["scheduler"] in {"slurm", "kubernetes"}


def test_the_recording_layer_and_its_alerts_are_default_groups():
    names = [g.name for g in default_rule_groups()]
    assert names.index("fmconstructs-job") < names.index("fmconstructs-job-alerts")


def test_idle_threshold_and_duration_are_options(tmp_path):
    group = job_alert_rule_group(idle_util_percent=10, idle_for="10m")
    (idle, _) = group.rules
    assert isinstance(idle, AlertRule)
    assert idle.expr == "fm_job:gpu_utilization:avg < 10" and idle.for_ == "10m"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"idle_util_percent": 0}, "idle_util_percent must be a percentage"),
        ({"idle_util_percent": 101}, "idle_util_percent must be a percentage"),
        ({"idle_util_percent": -5}, "idle_util_percent must be a percentage"),
        ({"idle_for": "0s"}, "idle_for"),
        ({"idle_for": "soon"}, "idle_for"),
    ],
)
def test_rejects_bad_alert_options(kwargs, match):
    with pytest.raises(FmValidationError, match=match):
        job_alert_rule_group(**kwargs)


def test_unallocated_gpus_are_not_jobs_and_a_job_with_two_team_labels_still_counts_once(tmp_path):
    # GIVEN a Slurm GPU with no job, an EKS GPU with no pod, and one JobSet whose two pods carry different team labels
    free_slurm = {**SLURM, "gpu": "5"}
    free_eks = {**EKS, "gpu": "5", "namespace": "", "pod": ""}
    inputs = [{"series": _s("DCGM_FI_DEV_GPU_UTIL", labels), "values": "0x30"} for labels in (free_slurm, free_eks)]
    for gpu, pod, team in (("0", "js-0", "a"), ("1", "js-1", "b")):
        inputs.append(
            {"series": _s("DCGM_FI_DEV_GPU_UTIL", {**EKS, "gpu": gpu, "namespace": "n", "pod": pod}), "values": "50x30"}
        )
        pod_labels = {"namespace": "n", "pod": pod, "label_jobset_sigs_k8s_io_jobset_name": "js", "label_team": team}
        inputs.append({"series": _s("kube_pod_labels", {**KSM, **pod_labels}), "values": "1x30"})
    count = "fm_job:gpus_allocated:count"
    tests = [
        # THEN only the JobSet is a job, with both GPUs
        {
            "expr": count,
            "eval_time": "10m",
            "exp_samples": [{"labels": _s(count, {**_job("kubernetes", "js"), "namespace": "n"}), "value": 2}],
        },
        # AND its GPUs are counted once, under one of its teams (the join does not fail with many-to-many)
        {
            "expr": "sum(fm_job:gpus_allocated:sum_by_team)",
            "eval_time": "10m",
            "exp_samples": [{"labels": "{}", "value": 2}],
        },
    ]
    _promtool(tmp_path, [job_rule_group()], [{"interval": "1m", "input_series": inputs, "promql_expr_test": tests}])
