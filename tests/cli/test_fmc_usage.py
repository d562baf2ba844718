"""`fmc usage`: GPU-hours per team/job/instance type from a local fake of the Amazon Managed Prometheus query API (an
http.server that requires a SigV4 `aps` Authorization header and answers Prometheus JSON), priced as `fmc plan`."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli
from fmconstructs.cli.usage_queries import GPU_SERIES, HPC_JOB_LABEL, NAMESPACE_LABEL, gpu_hours_query, parse_duration

from tests.support.fmc_usage import P5, REGION, FakeWorkspace, _sample


@pytest.fixture
def workspace() -> Iterator[FakeWorkspace]:
    fake = FakeWorkspace()
    fake.result = [
        _sample({"namespace": "team-a", "instance_type": P5}, 160.0),
        _sample({"namespace": "team-b", "instance_type": P5}, 40.0),
        _sample({"namespace": "team-b"}, 8.0),  # a series without instance_type
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


# --- the query ----------------------------------------------------------------------------------------------------
def test_query_counts_labelled_gpu_series_per_step() -> None:
    query = gpu_hours_query(NAMESPACE_LABEL, period_seconds=7 * 86400, step_seconds=60)
    assert query == (
        f'sum by (namespace, instance_type) (count_over_time({GPU_SERIES}{{namespace!=""}}[604800s:60s])) * 60 / 3600'
    )


def test_signed_query_groups_by_the_chosen_label_at_the_period_end(workspace: FakeWorkspace) -> None:
    data = _json(_run(workspace.url, "--by", "job", "--start", "2026-11-01", "--end", "2026-11-02T00:00:00Z", "--json"))
    form = workspace.forms[-1]
    end = datetime(2026, 11, 2, tzinfo=UTC).timestamp()
    assert f'{HPC_JOB_LABEL}!=""' in form["query"][0] and "[86400s:60s]" in form["query"][0]
    assert float(form["time"][0]) == end and data["end"] == end and data["label"] == HPC_JOB_LABEL
    assert "Credential=testing/" in workspace.authorizations[-1]
    assert f"/{REGION}/aps/aws4_request" in workspace.authorizations[-1]


def test_grouping_and_totals(workspace: FakeWorkspace) -> None:
    data = _json(_run(workspace.url, "--by", "namespace", "--json"))
    assert [(r["group"], r["instance_type"], r["gpu_hours"]) for r in data["rows"]] == [
        ("team-a", P5, 160.0),
        ("team-b", P5, 40.0),
        ("team-b", "-", 8.0),
    ]
    assert data["total_gpu_hours"] == 208.0 and data["total_cost_usd"] is None and data["by"] == "namespace"


def test_price_per_node_hour_divides_by_catalog_gpus(workspace: FakeWorkspace) -> None:
    gpus = get_instance_spec(P5).gpu.count
    data = _json(_run(workspace.url, "--by", "namespace", "--price-per-hour", f"{P5}=55.04", "--json"))
    team_a = data["rows"][0]
    assert team_a["gpus_per_node"] == gpus and team_a["usd_per_node_hour"] == 55.04
    assert team_a["cost_usd"] == pytest.approx(160 / gpus * 55.04)
    assert data["total_cost_usd"] == pytest.approx(200 / gpus * 55.04)
    assert data["rows"][2]["cost_usd"] is None and data["unpriced_rows"] == 1
    assert any("without an instance_type label" in n for n in data["notes"])


def test_price_per_gpu_hour_prices_every_row(workspace: FakeWorkspace) -> None:
    data = _json(_run(workspace.url, "--by", "namespace", "--price-per-gpu-hour", "2.5", "--json"))
    assert data["total_cost_usd"] == pytest.approx(208 * 2.5) and data["unpriced_rows"] == 0


def test_table_has_totals(workspace: FakeWorkspace) -> None:
    result = _run(workspace.url, "--by", "namespace", "--price-per-hour", f"{P5}=80")
    assert result.exit_code == 0, result.output
    assert "team-a" in result.output and "Total" in result.output and "208.0" in result.output
    assert f"{200 / get_instance_spec(P5).gpu.count * 80:,.2f}" in result.output


def test_no_series_is_a_note_not_an_error(workspace: FakeWorkspace) -> None:
    workspace.result = []
    data = _json(_run(workspace.url, "--json"))
    assert data["rows"] == [] and data["total_gpu_hours"] == 0 and "no DCGM_FI_DEV_GPU_UTIL" in data["notes"][0]


@pytest.mark.parametrize(("text", "seconds"), [("7d", 604800), ("12h", 43200), ("90m", 5400), ("2w", 1209600)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


# --- bad input: exit 2, one line -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["--since", "7"],
        ["--since", "0d"],
        ["--since", "-1d"],
        ["--since", "1y"],
        ["--start", "yesterday"],
        ["--start", "2026-11-02", "--end", "2026-11-01"],
        ["--start", "2026-11-01", "--since", "7d"],
        ["--end", "2026-11-01"],
        ["--start", "2026-11-01", "--end", "2999-01-01"],
        ["--step", "0s"],
        ["--since", "1h", "--step", "2h"],
        ["--by", "pod"],
        ["--price-per-hour", "p5.48xlarge=abc"],
        ["--price-per-hour", "55.04"],
        ["--price-per-gpu-hour", "-1"],
        ["--price-per-gpu-hour", "1", "--price-per-hour", "p5.48xlarge=1"],
    ],
)
def test_bad_values_exit_2(workspace: FakeWorkspace, args: list[str]) -> None:
    result = _run(workspace.url, *args)
    assert result.exit_code == int(ExitCode.USAGE) == 2, result.output
    assert "Traceback" not in result.output and not workspace.forms


# --- the workspace fails: one line, exit 5 (unreachable) or 4 (refused) ----------------------------------------------
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("as_json", [False, True])
def test_unreachable_workspace_exit_5(as_json: bool) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/workspaces/ws-test/"
    result = _run(url, *(["--json"] if as_json else []))
    assert result.exit_code == int(ExitCode.AWS_SETUP) == 5, result.output
    assert "Traceback" not in result.output
    if as_json:
        assert json.loads(result.stdout)["error"]["kind"] == "aws-setup"
    else:
        assert len(result.output.strip().splitlines()) == 1 and "unreachable" in result.output


def test_workspace_error_page_exit_5(workspace: FakeWorkspace) -> None:
    workspace.status = 503
    result = _run(workspace.url)
    assert result.exit_code == 5 and "HTTP 503" in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("as_json", [False, True])
def test_no_credentials_exit_4(workspace: FakeWorkspace, as_json: bool) -> None:
    result = _run(workspace.url, *(["--json"] if as_json else []))
    assert result.exit_code == int(ExitCode.NO_CREDENTIALS) == 4, result.output
    assert "Traceback" not in result.output and not workspace.forms
    if as_json:
        assert json.loads(result.stdout)["error"]["kind"] == "no-credentials"


def test_refused_credentials_exit_4(workspace: FakeWorkspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fmconstructs.cli.usage_queries.UsageQuery._signed_at", _unsigned)
    result = _run(workspace.url)
    assert result.exit_code == 4 and "aps:QueryMetrics" in result.output and "Traceback" not in result.output


def _unsigned(self: Any, promql: str, at: float) -> Any:
    import urllib.request

    body = urllib.parse.urlencode({"query": promql}).encode()
    return urllib.request.Request(self.url, data=body, method="POST")


# --- CDK_OUT: the workspace the deployed stacks created (recorded AWS responses, as fmc health) ---------------------
def _assembly(root: Path) -> Path:
    out = root / "cdk.out"
    out.mkdir()
    template = {"Resources": {"Ws": {"Type": "AWS::APS::Workspace", "Properties": {}}}}
    (out / "Fm.template.json").write_text(json.dumps(template))
    stack = {
        "type": "aws:cloudformation:stack",
        "environment": f"aws://123456789012/{REGION}",
        "properties": {"templateFile": "Fm.template.json"},
    }
    (out / "manifest.json").write_text(json.dumps({"artifacts": {"Fm": stack}}))
    return out


def _responses(root: Path, endpoint: str | None) -> Path:
    arn = f"arn:aws:aps:{REGION}:123456789012:workspace/ws-test"
    summary = {"LogicalResourceId": "Ws", "ResourceType": "AWS::APS::Workspace", "PhysicalResourceId": arn}
    recorded: dict[str, dict[str, Any]] = {
        "cloudformation": {
            "DescribeStacks": {"Stacks": [{"StackName": "Fm", "StackStatus": "CREATE_COMPLETE"}]},
            "ListStackResources": {"StackResourceSummaries": [{**summary, "ResourceStatus": "CREATE_COMPLETE"}]},
        },
        "amp": {"DescribeWorkspace": {"workspace": {"workspaceId": "ws-test", "prometheusEndpoint": endpoint}}},
    }
    if endpoint is None:
        recorded["cloudformation"]["ListStackResources"] = {"StackResourceSummaries": []}
    file = root / "responses.json"
    file.write_text(json.dumps(recorded))
    return file


def test_workspace_found_in_the_deployed_stacks(workspace: FakeWorkspace, tmp_path: Path) -> None:
    responses = _responses(tmp_path, workspace.url + "api/v1/")
    result = CliRunner().invoke(
        cli, ["usage", str(_assembly(tmp_path)), "--by", "namespace", "--responses", str(responses), "--json"]
    )
    assert _json(result)["total_gpu_hours"] == 208.0 and workspace.forms
    assert f"/{REGION}/aps/aws4_request" in workspace.authorizations[-1]


def test_no_workspace_in_the_stacks_exit_5(workspace: FakeWorkspace, tmp_path: Path) -> None:
    responses = _responses(tmp_path, None)
    result = CliRunner().invoke(cli, ["usage", str(_assembly(tmp_path)), "--responses", str(responses)])
    assert result.exit_code == 5 and "give --workspace-url" in result.output and "Traceback" not in result.output


def test_unreadable_assembly_exit_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["usage", str(tmp_path / "missing"), "--region", REGION])
    assert result.exit_code == int(ExitCode.ASSEMBLY) == 3, result.output
    assert "Traceback" not in result.output


def test_responses_with_workspace_url_exit_2(workspace: FakeWorkspace, tmp_path: Path) -> None:
    result = _run(workspace.url, "--responses", str(_responses(tmp_path, workspace.url)))
    assert result.exit_code == 2 and not workspace.forms


# --- the formula, evaluated by promtool on series of a running, an idle allocated and a finished job -----------------
def test_formula_with_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it (Debian package prometheus)"
    expr = gpu_hours_query(NAMESPACE_LABEL, period_seconds=3600, step_seconds=60)
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "usage", "rules": [{"record": "usage:gpu_hours", "expr": expr}]}]})
    )
    gpu = "DCGM_FI_DEV_GPU_UTIL"
    series = [
        # team-a: one GPU busy from minute 65 to the end, one busy from 90 to 110 then gone (stale)
        (f'{gpu}{{namespace="team-a", instance_type="{P5}", gpu="0"}}', "_x65 90x55"),
        (f'{gpu}{{namespace="team-a", instance_type="{P5}", gpu="2"}}', "_x90 90x20 stale"),
        # team-b: an idle allocated GPU (0 % is still allocated) from minute 100
        (f'{gpu}{{namespace="team-b", instance_type="{P5}", gpu="1"}}', "_x100 0x20"),
        # team-c: a job that finished before the period; and a GPU without an owner
        (f'{gpu}{{namespace="team-c", instance_type="{P5}", gpu="3"}}', "50x30 stale"),
        (f'{gpu}{{namespace="", gpu="4"}}', "0x120"),
    ]
    labels = f'instance_type="{P5}"'
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series],
                "promql_expr_test": [
                    {
                        "expr": "usage:gpu_hours",
                        "eval_time": "2h",
                        "exp_samples": [
                            {"labels": f'usage:gpu_hours{{namespace="team-a", {labels}}}', "value": (56 + 21) / 60},
                            {"labels": f'usage:gpu_hours{{namespace="team-b", {labels}}}', "value": 21 / 60},
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
