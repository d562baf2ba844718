"""`fmc health`: a verdict from the deployed stacks (recorded AWS responses through `--responses`, the botocore
before-call hook Stubber uses) and from a local fake of the Amazon Managed Prometheus query API (an http.server that
requires a SigV4 `aps` Authorization header and answers Prometheus JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from fmconstructs.cli.assembly import read_assembly
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.health_aws import HealthAws
from fmconstructs.cli.health_model import Health, HealthReport
from fmconstructs.cli.health_queries import (
    NCCL_BASELINE,
    NCCL_BUSBW,
    NODE_CHECK_FAILURE_INFO,
    NODE_CHECK_LAST_RUN,
    NODE_CHECK_STATUS,
    SLURM_NODES,
    QueryProblem,
    parse_vector,
    workspace_base,
)
from fmconstructs.cli.main import cli
from fmconstructs.cli.replay import Recorded, attach, load_responses

from tests.support.fmc_health import (  # noqa: F401 (shared with tests/cli/test_fmc_fuzz.py)
    ASG_NAME,
    HYPERPOD_ARN,
    PCS_CLUSTER,
    PCS_GROUP,
    PCS_TAG,
    REGION,
    _assembly,
    _instances,
    _responses,
    _summary,
    _template,
)


# --- the fake workspace ----------------------------------------------------------------------------------------------
class FakeWorkspace:
    """Answers ``POST .../api/v1/query`` from :attr:`answers` (PromQL -> result list); 403 without a SigV4 header."""

    def __init__(self) -> None:
        self.answers: dict[str, list[dict[str, Any]]] = {}
        self.html_503 = False
        self.authorizations: list[str] = []
        workspace = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                auth = self.headers.get("Authorization", "")
                workspace.authorizations.append(auth)
                if workspace.html_503:
                    return self._send(503, b"<html><body><h1>503 Service Unavailable</h1></body></html>", "text/html")
                if not auth.startswith("AWS4-HMAC-SHA256 ") or "/aps/aws4_request" not in auth:
                    return self._send(403, b'{"message": "Missing Authentication Token"}', "application/json")
                if not self.path.endswith("/api/v1/query"):
                    return self._send(404, b"{}", "application/json")
                result = workspace.answers.get(form.get("query", [""])[0], [])
                body = {"status": "success", "data": {"resultType": "vector", "result": result}}
                return self._send(200, json.dumps(body).encode(), "application/json")

            def _send(self, code: int, body: bytes, kind: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/workspaces/ws-test/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def healthy(self) -> None:
        self.answers = {
            NODE_CHECK_STATUS: [
                _sample({"__name__": NODE_CHECK_STATUS, "instance": node, "check": check, "mode": "boot"}, 1)
                for node in ("node-1", "node-2")
                for check in ("gpu-count", "efa-devices")
            ],
            f"max by (instance) ({NODE_CHECK_LAST_RUN})": [_sample({"instance": "node-1"}, 1.0)],
            f"sum by (state) ({SLURM_NODES})": [_sample({"state": "idle"}, 2), _sample({"state": "drained"}, 0)],
            NCCL_BUSBW: [_sample({"__name__": NCCL_BUSBW, "cluster": "c1"}, 480.0)],
            NCCL_BASELINE: [_sample({"__name__": NCCL_BASELINE, "cluster": "c1"}, 487.0)],
        }


def _sample(labels: dict[str, str], value: float) -> dict[str, Any]:
    return {"metric": labels, "value": [1_700_000_000, str(value)]}


@pytest.fixture
def workspace() -> Iterator[FakeWorkspace]:
    fake = FakeWorkspace()
    fake.healthy()
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


# --- a hand-written assembly: one stack with every backend fmc health reads ------------------------------------------
def _run(tmp_path: Path, responses: dict[str, Any], *extra: str, template: dict[str, Any] | None = None) -> Any:
    file = tmp_path / "responses.json"
    file.write_text(json.dumps(responses))
    args = ["health", str(_assembly(tmp_path, template)), "--region", REGION, "--responses", str(file), "--json"]
    result = CliRunner().invoke(cli, args + list(extra))
    assert "Traceback" not in result.output
    return result


def _rows(result: Any, health: str) -> list[dict[str, str]]:
    return [r for r in json.loads(result.stdout)["rows"] if r["health"] == health]


# --- verdicts --------------------------------------------------------------------------------------------------------
def test_all_healthy_exits_0_and_signs_the_queries(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN every backend active, every node present, checks passing and busbw 1.4% below baseline
    result = _run(tmp_path, _responses(workspace.url))
    # THEN HEALTHY, exit 0, the workspace found through DescribeWorkspace and every query signed for "aps"
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "HEALTHY" and data["ok"] is True and data["workspace_url"] == workspace.url + "api/v1/"
    checks = {r["check"] for r in data["rows"] if r["health"] == "HEALTHY"}
    assert {"stack", "pcs cluster", "pcs node group", "eks cluster", "eks node group", "hyperpod cluster"} <= checks
    assert {"parallelcluster", "nodes", "node-join checks", "slurm nodes", "nccl busbw"} <= checks
    assert workspace.authorizations and all("/us-east-1/aps/aws4_request" in a for a in workspace.authorizations)


def test_table_output_prints_the_verdict(tmp_path: Path, workspace: FakeWorkspace) -> None:
    file = tmp_path / "responses.json"
    file.write_text(json.dumps(_responses(workspace.url)))
    result = CliRunner().invoke(cli, ["health", str(_assembly(tmp_path)), "--responses", str(file)])
    assert result.exit_code == 0, result.output
    assert "verdict: HEALTHY" in result.output and "pcs node group" in result.output


@pytest.mark.parametrize(
    ("service", "operation", "field", "status", "check"),
    [
        ("pcs", "GetComputeNodeGroup", "computeNodeGroup", "CREATE_FAILED", "pcs node group"),
        ("pcs", "GetCluster", "cluster", "CREATE_FAILED", "pcs cluster"),
        ("eks", "DescribeNodegroup", "nodegroup", "DEGRADED", "eks node group"),
        ("eks", "DescribeCluster", "cluster", "FAILED", "eks cluster"),
    ],
)
def test_failed_cluster_or_node_group_is_unhealthy(
    tmp_path: Path, workspace: FakeWorkspace, service: str, operation: str, field: str, status: str, check: str
) -> None:
    # GIVEN one cluster or node group in a failed state
    responses = _responses(workspace.url)
    answer = responses[service][operation][field]
    answer["status"] = status
    if service == "eks":
        answer["health"] = {"issues": [{"code": "NodeCreationFailure", "message": "Instances failed to join"}]}
    result = _run(tmp_path, responses)
    # THEN UNHEALTHY, exit 1, the row names the status (and the health issues EKS lists)
    assert result.exit_code == int(ExitCode.CHECKS_FAILED), result.output
    assert json.loads(result.stdout)["verdict"] == "UNHEALTHY"
    rows = _rows(result, "UNHEALTHY")
    assert [r["check"] for r in rows] == [check] and status in rows[0]["detail"]
    if service == "eks":
        assert "NodeCreationFailure: Instances failed to join" in rows[0]["detail"]


def test_missing_nodes_are_degraded(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN the PCS group with 1 of its 2 static nodes running and a HyperPod node failing
    responses = _responses(workspace.url)
    responses["ec2"]["DescribeInstances"][1] = _instances(1, [{"Key": PCS_TAG, "Value": PCS_GROUP}])
    responses["sagemaker"]["ListClusterNodes"]["ClusterNodeSummaries"][1]["InstanceStatus"] = {
        "Status": "Failure",
        "Message": "deep health check failed",
    }
    result = _run(tmp_path, responses)
    # THEN DEGRADED naming both
    assert result.exit_code == 1 and json.loads(result.stdout)["verdict"] == "DEGRADED"
    details = {r["target"]: r["detail"] for r in _rows(result, "DEGRADED")}
    assert details["Fm/PcsGpu"].startswith("1 running (min 2")
    assert details["Fm/HyperPod/gpu/i-hp1"] == "Failure: deep health check failed"


def test_failing_node_check_is_degraded_naming_node_and_check(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN node-2's efa-devices check failing at boot, its reason in fm_node_check_failure_info (as the node checks
    # write them: fmconstructs.health.checks)
    failing = {"instance": "node-2", "check": "efa-devices", "mode": "boot"}
    workspace.answers[NODE_CHECK_STATUS][3] = _sample({"__name__": NODE_CHECK_STATUS, **failing}, 0)
    workspace.answers[NODE_CHECK_FAILURE_INFO] = [
        _sample({"__name__": NODE_CHECK_FAILURE_INFO, **failing, "reason": "16 EFA devices, expected 32"}, 1)
    ]
    result = _run(tmp_path, _responses(workspace.url))
    # THEN DEGRADED, the row names the node and the check with its reason
    assert result.exit_code == 1 and json.loads(result.stdout)["verdict"] == "DEGRADED"
    rows = _rows(result, "DEGRADED")
    assert [(r["check"], r["target"]) for r in rows] == [("node-join checks", "node-2")]
    assert "efa-devices (16 EFA devices, expected 32)" in rows[0]["detail"]


@pytest.mark.parametrize(("busbw", "verdict"), [(389.6, "DEGRADED"), (462.65, "HEALTHY")])
def test_nccl_busbw_against_baseline(tmp_path: Path, workspace: FakeWorkspace, busbw: float, verdict: str) -> None:
    # GIVEN the latest busbw 20% (degraded) or 5% (within the default 10%) below the 487 GB/s baseline
    workspace.answers[NCCL_BUSBW] = [_sample({"__name__": NCCL_BUSBW, "cluster": "c1"}, busbw)]
    result = _run(tmp_path, _responses(workspace.url))
    data = json.loads(result.stdout)
    assert data["verdict"] == verdict, result.output
    row = next(r for r in data["rows"] if r["check"] == "nccl busbw")
    assert row["target"] == "cluster=c1" and f"({'20.0' if verdict == 'DEGRADED' else '5.0'}% below)" in row["detail"]


def test_drained_slurm_nodes_are_degraded_and_say_where_reasons_are(tmp_path: Path, workspace: FakeWorkspace) -> None:
    workspace.answers[f"sum by (state) ({SLURM_NODES})"] = [
        _sample({"state": "idle"}, 1),
        _sample({"state": "drained"}, 1),
    ]
    result = _run(tmp_path, _responses(workspace.url))
    rows = _rows(result, "DEGRADED")
    assert [r["check"] for r in rows] == ["slurm nodes"] and "1 drained" in rows[0]["detail"]
    assert "sinfo -R" in rows[0]["detail"]


def test_unreachable_workspace_gives_unknown_rows(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN the workspace answering an HTML 503 page
    workspace.html_503 = True
    result = _run(tmp_path, _responses(workspace.url))
    # THEN one UNKNOWN row per workspace check, verdict UNKNOWN, exit 1, no traceback
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "UNKNOWN"
    rows = _rows(result, "UNKNOWN")
    assert [r["check"] for r in rows] == ["node-join checks", "slurm nodes", "nccl busbw"]
    assert all("HTTP 503" in r["detail"] and "Service Unavailable" in r["detail"] for r in rows)


def test_workspace_url_option_and_no_series(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN --workspace-url and a workspace without any fm_ series yet
    workspace.answers = {}
    responses = _responses("https://unused.example/")
    result = _run(tmp_path, responses, "--workspace-url", workspace.url + "api/v1/query")
    # THEN the given URL is read, the missing series are SKIP rows and do not change the verdict
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["workspace_url"] == workspace.url + "api/v1/query"
    assert [r["check"] for r in _rows(result, "SKIP")] == ["node-join checks", "slurm nodes", "nccl busbw"]


def test_aws_errors_are_unknown_rows_and_missing_stack_unhealthy(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN eks:DescribeNodegroup denied
    responses = _responses(workspace.url)
    responses["eks"]["DescribeNodegroup"] = {"Error": {"Code": "AccessDeniedException", "Message": "no"}}
    result = _run(tmp_path, responses)
    rows = _rows(result, "UNKNOWN")
    assert [r["target"] for r in rows] == ["Fm/EksGpu"] and "missing permission eks:DescribeNodegroup" in rows[0][
        "detail"
    ]
    # GIVEN the stack not deployed
    responses["cloudformation"]["DescribeStacks"] = {
        "Error": {"Code": "ValidationError", "Message": "Stack with id Fm does not exist"}
    }
    other = tmp_path / "again"
    other.mkdir()
    result = _run(other, responses)
    assert json.loads(result.stdout)["verdict"] == "UNHEALTHY"
    assert _rows(result, "UNHEALTHY")[0]["detail"].startswith("not deployed")


def test_resource_that_failed_to_create_is_unhealthy(tmp_path: Path, workspace: FakeWorkspace) -> None:
    responses = _responses(workspace.url)
    summaries = responses["cloudformation"]["ListStackResources"]["StackResourceSummaries"]
    summaries[1] = {**summaries[1], "ResourceStatus": "CREATE_FAILED", "ResourceStatusReason": "quota exceeded"}
    result = _run(tmp_path, responses)
    rows = _rows(result, "UNHEALTHY")
    assert [r["target"] for r in rows] == ["Fm/PcsGpu"] and "CREATE_FAILED: quota exceeded" in rows[0]["detail"]


# --- errors: one line, the house exit codes --------------------------------------------------------------------------


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("as_json", [False, True])
def test_no_credentials_is_one_line_exit_4(tmp_path: Path, as_json: bool) -> None:
    result = CliRunner().invoke(
        cli, ["health", str(_assembly(tmp_path)), "--region", REGION] + (["--json"] if as_json else [])
    )
    assert result.exit_code == int(ExitCode.NO_CREDENTIALS) == 4, result.output
    assert "Traceback" not in result.output
    if as_json:
        assert json.loads(result.stdout)["error"]["kind"] == "no-credentials"
    else:
        assert (
            result.output.strip().startswith("fmc: error: no AWS credentials found")
            and len(result.output.strip().splitlines()) == 1
        )


@pytest.mark.parametrize(
    "breakage",
    ["no-manifest", "bad-json", "resources-list", "no-cluster"],
)
def test_malformed_assembly_exits_3(tmp_path: Path, breakage: str) -> None:
    out = _assembly(tmp_path)
    template = out / "Fm.template.json"
    if breakage == "no-manifest":
        (out / "manifest.json").unlink()
    elif breakage == "bad-json":
        template.write_text("{not json")
    elif breakage == "resources-list":
        template.write_text(json.dumps({"Resources": []}))
    else:
        template.write_text(json.dumps({"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}}))
    result = CliRunner().invoke(cli, ["health", str(out), "--region", REGION])
    assert result.exit_code == int(ExitCode.ASSEMBLY) == 3, result.output
    assert result.output.startswith("fmc: error: ") and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workspace-url", "ftp://x"], "http:// or https://"),
        (["--nccl-tolerance-percent", "100"], "at most 99.999 percent"),
        (["--nccl-tolerance-percent", "nan"], "a finite number"),
        (["--stack", "Other"], "--stack Other is not in"),
        (["--endpoint-url", "http://127.0.0.1:1", "--responses", "x.json"], "exclude each other"),
    ],
)
def test_bad_usage_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["health", str(_assembly(tmp_path)), "--region", REGION, *args])
    assert result.exit_code == int(ExitCode.USAGE) == 2, result.output
    assert message in result.output


def test_unknown_region_exits_5(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["health", str(_assembly(tmp_path)), "--region", "us-nowhere-1"])
    assert result.exit_code == int(ExitCode.AWS_SETUP) == 5, result.output


# --- the query module's parsing --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        b"<html>503</html>",
        b'{"status": "error", "error": "bad query"}',
        b'{"status": "success", "data": {}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "value": [1, "x"]}]}}',
        b"[]",
    ],
)
def test_parse_vector_refuses_other_shapes(raw: bytes) -> None:
    with pytest.raises(QueryProblem):
        parse_vector(raw)


@pytest.mark.parametrize(
    "url",
    [
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/",
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1",
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/",
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write",
        "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/query",
    ],
)
def test_workspace_base_accepts_every_quoted_form(url: str) -> None:
    assert workspace_base(url) == "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/"


def test_workspace_not_describable_is_unknown_and_metrics_skipped(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN aps:DescribeWorkspace denied and no --workspace-url
    responses = _responses(workspace.url)
    responses["amp"]["DescribeWorkspace"] = {"Error": {"Code": "AccessDeniedException", "Message": "no"}}
    result = _run(tmp_path, responses)
    # THEN an UNKNOWN row naming the permission, the metric rows skipped with the way out, no traceback
    assert result.exit_code == 1 and json.loads(result.stdout)["verdict"] == "UNKNOWN"
    assert "missing permission aps:DescribeWorkspace" in _rows(result, "UNKNOWN")[0]["detail"]
    assert all("--workspace-url" in r["detail"] for r in _rows(result, "SKIP"))
    assert not workspace.authorizations


def test_health_runs_without_aws_cdk(tmp_path: Path, workspace: FakeWorkspace) -> None:
    # GIVEN aws_cdk and jsii made unimportable WHEN fmc health runs in a fresh interpreter
    file = tmp_path / "responses.json"
    file.write_text(json.dumps(_responses(workspace.url)))
    code = (
        "import sys\n"
        "for name in ('aws_cdk', 'jsii'): sys.modules[name] = None  # importing them now fails\n"
        "from fmconstructs.cli.main import main\n"
        f"main(['health', {str(_assembly(tmp_path))!r}, '--responses', {str(file)!r}, '--json'])\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env=env, check=False
    )
    # THEN it answers as usual
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verdict"] == "HEALTHY"


def test_calls_use_the_physical_ids_from_the_stack(tmp_path: Path) -> None:
    # GIVEN a PCS and an EKS cluster with one node group each; every call's parameters recorded (botocore's
    # before-parameter-build event) and answered from the recorded responses
    full = _template()["Resources"]
    template = {"Resources": {k: full[k] for k in ("Pcs", "PcsGpu", "Eks", "EksGpu")}}
    stacks = read_assembly(_assembly(tmp_path, template))
    answers = _responses("http://unused/")
    answers["cloudformation"]["ListStackResources"]["StackResourceSummaries"][4:] = []
    answers["ec2"]["DescribeInstances"].pop(0)
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append((model.name, params))

    clients: dict[str, Any] = {}
    for service in ("cloudformation", "pcs", "eks", "ec2", "autoscaling"):
        clients[service] = attach(
            boto3.client(service, region_name=REGION), service, load_responses_dict(tmp_path, answers)
        )
        clients[service].meta.events.register("before-parameter-build", record)
    report = HealthReport(region=REGION)
    HealthAws(lambda service: clients[service], report).run(stacks)
    # THEN each call names the resource by the physical id CloudFormation reports, and everything is healthy
    running = [
        {"Name": f"tag:{PCS_TAG}", "Values": [PCS_GROUP]},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    assert calls == [
        ("DescribeStacks", {"StackName": "Fm"}),
        ("ListStackResources", {"StackName": "Fm"}),
        ("GetCluster", {"clusterIdentifier": PCS_CLUSTER}),
        ("DescribeCluster", {"name": "eks1"}),
        ("GetComputeNodeGroup", {"clusterIdentifier": PCS_CLUSTER, "computeNodeGroupIdentifier": PCS_GROUP}),
        ("DescribeInstances", {"Filters": running}),
        ("DescribeNodegroup", {"clusterName": "eks1", "nodegroupName": "gpu"}),
        ("DescribeAutoScalingGroups", {"AutoScalingGroupNames": [ASG_NAME]}),
    ]
    assert report.verdict is Health.HEALTHY, report.rows


def load_responses_dict(where: Path, data: dict[str, Any]) -> Recorded:
    file = where / "recorded.json"
    file.write_text(json.dumps(data))
    return load_responses(str(file))
