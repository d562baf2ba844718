"""GPU-hours recording rules and the allocated-but-idle GPU alert, run by promtool on a running job, an idle
allocated GPU and a finished job (promtool 2.42: range selectors include both ends, so [1h] at 30m holds 31 samples)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from fmconstructs import FmValidationError
from fmconstructs.observability.gpu_hours import HPC_JOB_LABEL, gpu_hours_rule_group
from fmconstructs.observability.rules import RecordingRule, RuleGroup, alerts_table_markdown, rules_yaml

NODE_A = {"instance": "10.0.1.10:9400", "job": "dcgm"}
RUNNING = {**NODE_A, "gpu": "0", "hpc_job": "101"}  # busy all along
IDLE = {**NODE_A, "gpu": "1", "hpc_job": "102"}  # allocated, 1% utilization
FINISHED = {**NODE_A, "gpu": "2", "hpc_job": "103"}  # idle for 10 minutes, then its epilog removes the mapping
EKS_POD = {"instance": "10.0.2.20:9400", "job": "dcgm", "gpu": "0", "namespace": "team-a", "pod": "trainer-0"}


def _series(labels: dict[str, str]) -> str:
    return "DCGM_FI_DEV_GPU_UTIL{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _sample(record: str, labels: dict[str, str], value: float) -> dict[str, object]:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"labels": f"{record}{{{inner}}}", "value": value}


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make test` installs it (Debian package prometheus)"
    return path


def _run(promtool, tmp_path, group: RuleGroup, tests: list[dict[str, object]]) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml([group]))
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(group.rules)} rules found" in check.stdout
    spec = tmp_path / "tests.yml"
    spec.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]


def test_running_idle_and_finished_jobs(promtool, tmp_path):
    inputs = [
        {"series": _series(RUNNING), "values": "90x60"},
        {"series": _series(IDLE), "values": "1x60"},
        {"series": _series(FINISHED), "values": "0x10 stale"},
        {"series": _series(EKS_POD), "values": "50x60"},
    ]
    at_30m = [
        # GPUs now: node A has 2 (the finished job's GPU left with its mapping), the EKS node 1.
        ("fm:gpus:instance", [({"instance": NODE_A["instance"]}, 2), ({"instance": EKS_POD["instance"]}, 1)]),
        ("fm:gpus_allocated:job", [({"hpc_job": "101"}, 1), ({"hpc_job": "102"}, 1)]),
        ("fm:gpus_allocated:namespace", [({"namespace": "team-a"}, 1)]),
        # GPU-hours of the last hour: per-minute gauges at 0..30m (31 samples) / 60; the finished job's 0..10m.
        (
            "fm:gpu_hours:job_1h",
            [({"hpc_job": "101"}, 31 / 60), ({"hpc_job": "102"}, 31 / 60), ({"hpc_job": "103"}, 11 / 60)],
        ),
        (
            "fm:gpu_hours:instance_1h",
            [({"instance": NODE_A["instance"]}, (11 * 3 + 20 * 2) / 60), ({"instance": EKS_POD["instance"]}, 31 / 60)],
        ),
        ("fm:gpu_hours:namespace_1h", [({"namespace": "team-a"}, 31 / 60)]),
    ]
    expr_tests = [
        {"expr": record, "eval_time": "30m", "exp_samples": [_sample(record, lbl, v) for lbl, v in samples]}
        for record, samples in at_30m
    ]
    # An hour after it finished, the finished job has no GPU-hours series left (bounded cardinality).
    expr_tests.append({"expr": 'fm:gpu_hours:job_1h{hpc_job="103"}', "eval_time": "75m", "exp_samples": []})
    waste = {**IDLE, "severity": "warning"}
    alert_tests = [
        {"eval_time": "20m", "alertname": "FmGpuAllocatedIdle", "exp_alerts": []},  # pending, not yet 30m
        {
            "eval_time": "35m",
            "alertname": "FmGpuAllocatedIdle",
            "exp_alerts": [
                {
                    "exp_labels": waste,
                    "exp_annotations": {
                        "summary": "GPU 1 on 10.0.1.10:9400 is allocated to job 102 but idle",
                        "description": gpu_hours_rule_group().rules[-1].description,
                    },
                }
            ],
        },
    ]
    _run(
        promtool,
        tmp_path,
        gpu_hours_rule_group(),
        [{"interval": "1m", "input_series": inputs, "promql_expr_test": expr_tests, "alert_rule_test": alert_tests}],
    )


def test_job_label_and_threshold_are_options(promtool, tmp_path):
    group = gpu_hours_rule_group(idle_util_percent=10, idle_for="10m", job_label="slurm_job")
    job = {**NODE_A, "gpu": "0", "slurm_job": "7"}
    inputs = [{"series": _series(job), "values": "8x20"}]
    _run(
        promtool,
        tmp_path,
        group,
        [
            {
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": [
                    {
                        "expr": "fm:gpus_allocated:job",
                        "eval_time": "5m",
                        "exp_samples": [_sample("fm:gpus_allocated:job", {"slurm_job": "7"}, 1)],
                    }
                ],
                "alert_rule_test": [
                    {
                        "eval_time": "12m",
                        "alertname": "FmGpuAllocatedIdle",
                        "exp_alerts": [
                            {
                                "exp_labels": {**job, "severity": "warning"},
                                "exp_annotations": {
                                    "summary": "GPU 0 on 10.0.1.10:9400 is allocated to job 7 but idle",
                                    "description": group.rules[-1].description,
                                },
                            }
                        ],
                    }
                ],
            }
        ],
    )


def test_recording_rules_are_not_in_the_alert_table():
    table = alerts_table_markdown([gpu_hours_rule_group()])
    assert "FmGpuAllocatedIdle" in table and "fm:gpu_hours" not in table
    assert HPC_JOB_LABEL == "hpc_job"


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"idle_util_percent": 0}, "idle_util_percent"),
        ({"idle_util_percent": 101}, "idle_util_percent"),
        ({"idle_util_percent": "5"}, "idle_util_percent"),
        ({"idle_for": "0s"}, "idle_for"),
        ({"idle_for": "half an hour"}, "idle_for"),
        ({"job_label": "hpc-job"}, "job_label"),
        ({"job_label": "__name__"}, "job_label"),
        ({"job_label": 3}, "job_label"),
    ],
)
def test_bad_options(kwargs, parameter):
    with pytest.raises(FmValidationError, match=parameter):
        gpu_hours_rule_group(**kwargs)


@pytest.mark.parametrize("record", ["", "fm gpu", "1fm", 3])
def test_bad_recording_rule_names(record):
    with pytest.raises(FmValidationError, match="record"):
        RecordingRule(record, "up", ())


def test_rule_group_refuses_other_rules():
    with pytest.raises(FmValidationError, match="rules"):
        RuleGroup("g", ("up",))  # type: ignore[arg-type]
