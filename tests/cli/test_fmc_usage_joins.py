"""`fmc usage --by user|account|team`: GPU-hours joined at query time to the Slurm job info series
(`fm_slurm_job_info`) or to kube-state-metrics' team labels, against the local fake of the AMP query API
(tests/cli/test_fmc_usage.py FakeWorkspace), and the PromQL itself evaluated by promtool on raw series."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli
from fmconstructs.cli.usage_joins import joined_gpu_hours_query

from tests.support.fmc_usage import P5, REGION, FakeWorkspace, _sample

GPU = "DCGM_FI_DEV_GPU_UTIL"


@pytest.fixture
def workspace() -> Iterator[FakeWorkspace]:
    fake = FakeWorkspace()
    fake.result = [
        _sample({"user": "alice", "instance_type": P5}, 96.0),
        _sample({"instance_type": P5}, 16.0),  # GPUs of jobs without fm_slurm_job_info
        _sample({"user": "bob", "instance_type": P5}, 32.0),
    ]
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)


def _run(url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["usage", "--workspace-url", url, "--region", REGION, *args])


def _json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# --- the exact PromQL ------------------------------------------------------------------------------------------------
SLURM_USER = (
    'sum by (user, instance_type) (count_over_time(((DCGM_FI_DEV_GPU_UTIL{hpc_job!=""} * on(cluster, hpc_job) '
    "group_left(user) topk by (cluster, hpc_job) (1, fm_slurm_job_info)) or ignoring(user) "
    'DCGM_FI_DEV_GPU_UTIL{hpc_job!=""})[86400s:60s])) * 60 / 3600'
)
EKS_TEAM = (
    "sum by (label_team, instance_type) (count_over_time(("
    '(DCGM_FI_DEV_GPU_UTIL{namespace!="", pod!=""} * on(namespace, pod) group_left(label_team) '
    'topk by (namespace, pod) (1, kube_pod_labels{label_team!=""})) or ignoring(label_team) '
    '(DCGM_FI_DEV_GPU_UTIL{namespace!=""} * on(namespace) group_left(label_team) '
    'topk by (namespace) (1, kube_namespace_labels{label_team!=""})) or ignoring(label_team) '
    'DCGM_FI_DEV_GPU_UTIL{namespace!=""})[86400s:60s])) * 60 / 3600'
)


@pytest.mark.parametrize(
    ("by", "expected"),
    [
        ("user", SLURM_USER),
        ("account", SLURM_USER.replace("(user", "(account").replace("(user)", "(account)")),
        ("team", EKS_TEAM),
    ],
)
def test_the_exact_promql_is_sent_signed(workspace: FakeWorkspace, by: str, expected: str) -> None:
    _json(_run(workspace.url, "--by", by, "--start", "2026-11-01", "--end", "2026-11-02", "--json"))
    assert workspace.forms[-1]["query"] == [expected]
    assert joined_gpu_hours_query(by, period_seconds=86400, step_seconds=60) == expected
    assert "/aps/aws4_request" in workspace.authorizations[-1]


def test_team_is_the_default_grouping(workspace: FakeWorkspace) -> None:
    _json(_run(workspace.url, "--since", "1d", "--json"))
    assert "kube_namespace_labels" in workspace.forms[-1]["query"][0]


# --- rows, unknown owners, prices ------------------------------------------------------------------------------------
def test_user_rows_with_jobs_without_info_as_unknown(workspace: FakeWorkspace) -> None:
    data = _json(_run(workspace.url, "--by", "user", "--json"))
    assert [(r["group"], r["gpu_hours"]) for r in data["rows"]] == [("alice", 96.0), ("bob", 32.0), ("unknown", 16.0)]
    assert data["label"] == "user" and data["total_gpu_hours"] == 144.0
    assert any(
        n.startswith("unknown: 16.0 GPU-hours of GPUs of Slurm jobs without a fm_slurm_job_info") for n in data["notes"]
    )


def test_no_note_when_every_job_has_an_owner(workspace: FakeWorkspace) -> None:
    workspace.result = [_sample({"account": "ml", "instance_type": P5}, 8.0)]
    data = _json(_run(workspace.url, "--by", "account", "--json"))
    assert data["rows"][0]["group"] == "ml" and data["notes"] == []


def test_team_rows_name_the_team_label(workspace: FakeWorkspace) -> None:
    workspace.result = [
        _sample({"label_team": "vision", "instance_type": P5}, 10.0),
        _sample({"instance_type": P5}, 2.0),
    ]
    data = _json(_run(workspace.url, "--by", "team", "--json"))
    assert [(r["group"], r["gpu_hours"]) for r in data["rows"]] == [("vision", 10.0), ("unknown", 2.0)]
    assert any("no Kubernetes label team" in n and "--by namespace" in n for n in data["notes"])


def test_cost_uses_fmc_plan_prices(workspace: FakeWorkspace) -> None:
    gpus = get_instance_spec(P5).gpu.count
    data = _json(_run(workspace.url, "--by", "user", "--price-per-hour", f"{P5}=55.04", "--json"))
    assert data["rows"][0]["cost_usd"] == pytest.approx(96 / gpus * 55.04)
    assert data["total_cost_usd"] == pytest.approx(144 / gpus * 55.04) and data["unpriced_rows"] == 0


def test_table(workspace: FakeWorkspace) -> None:
    result = _run(workspace.url, "--by", "user", "--price-per-gpu-hour", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "GPU-hours by user (user)" in result.output
    header = next(line for line in lines if "Instance type" in line)
    assert header.split("┃")[1].strip() == "user"
    rows = {line.split("│")[1].strip(): line for line in lines if line.count("│") > 3}
    assert set(rows) >= {"alice", "bob", "unknown", "Total"}
    assert "192.00" in rows["alice"] and "32.00" in rows["unknown"] and "288.00" in rows["Total"]
    assert "Note: unknown: 16.0 GPU-hours" in result.output


def test_empty_result_names_the_series_label(workspace: FakeWorkspace) -> None:
    workspace.result = []
    data = _json(_run(workspace.url, "--by", "user", "--json"))
    assert data["rows"] == [] and data["total_cost_usd"] is None
    assert data["notes"] == [
        'no DCGM_FI_DEV_GPU_UTIL{hpc_job!=""} series in the period: no GPU was allocated, or the GPU series do not '
        "carry the hpc_job label"
    ]


# --- bad input: exit 2 before any query ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["--by", "users"],
        ["--by", "User"],
        ["--by", ""],
        ["--by", "user,account"],
        ["--by", "partition"],
        ["--by", "label_team"],
        ["--by", "user", "--price-per-hour", "p5.48xlarge=-3"],
        ["--by", "account", "--price-per-gpu-hour", "nan"],
        ["--by", "team", "--since", "1d", "--step", "2d"],
    ],
)
def test_bad_flags_exit_2(workspace: FakeWorkspace, args: list[str]) -> None:
    result = _run(workspace.url, *args)
    assert result.exit_code == int(ExitCode.USAGE), result.output
    assert "Traceback" not in result.output and not workspace.forms


# --- HTTP and botocore errors: one line, the exit code of fmconstructs/cli/errors.py ---------------------------------
@pytest.mark.parametrize(
    ("status", "body", "shown"),
    [
        (422, b'{"status":"error","errorType":"execution","error":"found duplicate series"}', "found duplicate series"),
        (429, b'{"message":"Rate exceeded"}', "HTTP 429"),
        (503, b"<html><body>Service Unavailable</body></html>", "Service Unavailable"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_http_errors_exit_5(workspace: FakeWorkspace, status: int, body: bytes, shown: str, as_json: bool) -> None:
    workspace.status, workspace.error_body = status, body
    result = _run(workspace.url, "--by", "user", *(["--json"] if as_json else []))
    assert result.exit_code == int(ExitCode.AWS_SETUP), result.output
    assert "Traceback" not in result.output and shown in result.output
    if as_json:
        assert json.loads(result.stdout)["error"]["kind"] == "aws-setup"
    else:
        assert len(result.output.strip().splitlines()) == 1


def _raise(error: Exception) -> Any:
    def add_auth(self: Any, request: Any) -> None:
        raise error

    return add_auth


@pytest.mark.parametrize(
    ("error_name", "code", "shown"),
    [
        ("NoCredentialsError", ExitCode.NO_CREDENTIALS, "no AWS credentials to sign the query with"),
        ("NoRegionError", ExitCode.AWS_SETUP, "signing the query failed (NoRegionError"),
    ],
)
def test_botocore_errors_while_signing(
    workspace: FakeWorkspace, monkeypatch: pytest.MonkeyPatch, error_name: str, code: ExitCode, shown: str
) -> None:
    import botocore.exceptions

    error = getattr(botocore.exceptions, error_name)()
    monkeypatch.setattr("botocore.auth.SigV4Auth.add_auth", _raise(error))
    result = _run(workspace.url, "--by", "account")
    assert result.exit_code == int(code), result.output
    assert shown in result.output and "Traceback" not in result.output and not workspace.forms


def test_unknown_profile_for_the_signing_region_exit_5(
    workspace: FakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("fmconstructs.cli.usage._credentials", lambda profile: object())
    result = CliRunner().invoke(cli, ["usage", "--workspace-url", workspace.url, "--profile", "nosuch", "--by", "user"])
    assert result.exit_code == int(ExitCode.AWS_SETUP), result.output
    assert "nosuch" in result.output and "Traceback" not in result.output


# --- the joins, evaluated by promtool on raw series ------------------------------------------------------------------
def _promtool(
    tmp_path: Path, by: str, series: list[tuple[str, str]], expected: list[tuple[str, float]], *, expr: str = ""
) -> None:
    """``expected``: (labels before instance_type, GPU-hours) of ``usage:gpu_hours``, or of ``expr`` when given."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it (Debian package prometheus)"
    rule = {"record": "usage:gpu_hours", "expr": joined_gpu_hours_query(by, period_seconds=7200, step_seconds=60)}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "usage", "rules": [rule]}]}))
    if expr:
        samples = [{"labels": labels, "value": value} for labels, value in expected]
    else:
        samples = [
            {"labels": f'usage:gpu_hours{{{labels}instance_type="{P5}"}}', "value": value} for labels, value in expected
        ]
    check = {"expr": expr or "usage:gpu_hours", "eval_time": "2h", "exp_samples": samples}
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [check],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _gpu(labels: str) -> str:
    return f'{GPU}{{{labels}, instance_type="{P5}"}}'


def _info(cluster: str, job: str, user: str, account: str, login: str = "login1") -> str:
    return (
        f'fm_slurm_job_info{{cluster="{cluster}", hpc_job="{job}", user="{user}", account="{account}", '
        f'partition="gpu", instance="{login}"}}'
    )


#: One sample a minute; evaluated at minute 120 over the 2 h before. promtool's "_xN" is N empty minutes and "vxM" is
#: M + 1 samples, so "_xN vx(120-N)" is present at the 121 - N steps N..120; "... stale" ends a series.
SLURM_SERIES = [
    # alice, job 7 on cluster c1: running to the end, its info written by two login nodes (deduplicated by topk)
    (_gpu('cluster="c1", hpc_job="7", gpu="0"'), "_x60 90x60"),
    (_info("c1", "7", "alice", "ml"), "_x60 1x60"),
    (_info("c1", "7", "alice", "ml", "login2"), "_x60 1x60"),
    # bob, job 7 on cluster c2 (same id, other cluster): an idle allocated GPU (0 %) still counts
    (_gpu('cluster="c2", hpc_job="7", gpu="0"'), "_x100 0x20"),
    (_info("c2", "7", "bob", "ml"), "_x100 1x20"),
    # carol, job 9: ran minutes 10..39; its info is gone at the end, yet its GPU-hours keep their owner
    (_gpu('cluster="c1", hpc_job="9", gpu="1"'), "_x10 80x29 stale"),
    (_info("c1", "9", "carol", "vision"), "_x10 1x29 stale"),
    # job 11: no info series at all -> unknown
    (_gpu('cluster="c1", hpc_job="11", gpu="2"'), "_x110 50x10"),
    # an unallocated GPU: not counted
    (_gpu('cluster="c1", gpu="3"'), "0x120"),
]


def test_user_join_with_promtool(tmp_path: Path) -> None:
    expected = [('user="alice", ', 61 / 60), ('user="bob", ', 21 / 60), ('user="carol", ', 30 / 60), ("", 11 / 60)]
    _promtool(tmp_path, "user", SLURM_SERIES, expected)


def test_account_join_with_promtool(tmp_path: Path) -> None:
    expected = [('account="ml", ', 82 / 60), ('account="vision", ', 30 / 60), ("", 11 / 60)]
    _promtool(tmp_path, "account", SLURM_SERIES, expected)


def test_team_join_pod_label_wins_over_namespace_with_promtool(tmp_path: Path) -> None:
    series = [
        # pod p1 in namespace ns1: the pod's team (vision) wins over the namespace's (nlp)
        (_gpu('namespace="ns1", pod="p1", gpu="0"'), "_x60 90x60"),
        ('kube_pod_labels{namespace="ns1", pod="p1", label_team="vision"}', "1x120"),
        # pod p2 in ns1 has no team label: the namespace's team, reported by two kube-state-metrics replicas
        (_gpu('namespace="ns1", pod="p2", gpu="1"'), "_x90 0x30"),
        ('kube_pod_labels{namespace="ns1", pod="p2"}', "1x120"),
        ('kube_namespace_labels{namespace="ns1", label_team="nlp", instance="ksm-0"}', "1x120"),
        ('kube_namespace_labels{namespace="ns1", label_team="nlp", instance="ksm-1"}', "1x120"),
        # ns2 has no team label anywhere: unknown
        (_gpu('namespace="ns2", pod="p3", gpu="2"'), "_x110 100x10"),
        ('kube_namespace_labels{namespace="ns2"}', "1x120"),
        # a Slurm GPU (no namespace): not counted
        (_gpu('hpc_job="5", gpu="3"'), "1x120"),
    ]
    expected = [('label_team="vision", ', 61 / 60), ('label_team="nlp", ', 31 / 60), ("", 11 / 60)]
    _promtool(tmp_path, "team", series, expected)


def test_team_label_edited_during_the_period_keeps_every_gpu_hour(tmp_path: Path) -> None:
    """At minutes 60..64 the namespace has two team values (the old series is still in the 5-minute lookback): a bare
    group_left would fail the whole query with "found duplicate series"; topk keeps one, so nothing is lost."""
    series = [
        (_gpu('namespace="ns1", pod="p1", gpu="0"'), "_x50 90x70"),
        ('kube_namespace_labels{namespace="ns1", label_team="nlp-old"}', "1x59"),
        ('kube_namespace_labels{namespace="ns1", label_team="nlp"}', "_x60 1x60"),
    ]
    _promtool(tmp_path, "team", series, [("{}", 71 / 60)], expr="sum(usage:gpu_hours)")
