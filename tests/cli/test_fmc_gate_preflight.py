"""`fmc preflight` as a CI gate: no credentials is one error (exit 4), refused credentials too, any botocore error
(an HTML page from a proxy raises ResponseParserError, which is neither ClientError nor BotoCoreError) is a FAIL row,
unknown regions and Capacity Block searches EC2 refuses are refused, and a dry run needs no account (--responses,
--endpoint-url). No call reaches AWS: Stubber, a local HTTP server, or recorded responses."""

from __future__ import annotations

import http.server
import importlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError
from botocore.stub import Stubber
from click.testing import CliRunner

from fmconstructs.catalog import get_instance_spec
from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli
from fmconstructs.cli.preflight_options import CAPACITY_BLOCK_DAYS

pf = importlib.import_module("fmconstructs.cli.preflight")

REGION = "us-east-1"
SUBNET = "subnet-0123456789abcdef0"


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)


def _assembly(root: Path, *, subnet: str = SUBNET, max_nodes: int = 2, region: str = REGION) -> Path:
    efa = get_instance_spec("p5.48xlarge").maximum_efa_interfaces
    interfaces: list[dict[str, Any]] = [{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface"}]
    interfaces += [
        {"NetworkCardIndex": i, "DeviceIndex": 0 if i else 1, "InterfaceType": "efa-only"} for i in range(efa)
    ]
    template = {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {
                    "LaunchTemplateData": {
                        "InstanceType": "p5.48xlarge",
                        "NetworkInterfaces": interfaces,
                        "InstanceMarketOptions": {"MarketType": "capacity-block"},
                    }
                },
            },
            "Fleet": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {
                    "MinSize": "0",
                    "MaxSize": str(max_nodes),
                    "LaunchTemplate": {"LaunchTemplateId": {"Ref": "Lt"}},
                    "VPCZoneIdentifier": [subnet],
                },
            },
        }
    }
    out = root / "cdk.out"
    out.mkdir()
    (out / "Fm.template.json").write_text(json.dumps(template))
    manifest = {
        "artifacts": {
            "Fm": {
                "type": "aws:cloudformation:stack",
                "environment": f"aws://123456789012/{region}",
                "properties": {"templateFile": "Fm.template.json"},
            }
        }
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


# --- credentials ----------------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("as_json", [False, True])
def test_no_credentials_is_one_error_and_exit_4(tmp_path: Path, as_json: bool) -> None:
    # GIVEN no credentials anywhere WHEN preflight runs
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path))] + (["--json"] if as_json else []))
    # THEN one error and its own exit code, not a table of "subnet not found" rows
    assert result.exit_code == int(ExitCode.NO_CREDENTIALS) == 4, result.output
    assert "subnet" not in result.output.lower() and "Traceback" not in result.output
    if as_json:
        data = json.loads(result.stdout)
        assert data["error"]["kind"] == "no-credentials" and "no AWS credentials" in data["error"]["message"]
    else:
        assert result.output.strip().startswith("fmc: error: no AWS credentials found")


@pytest.mark.usefixtures("fake_credentials")
@pytest.mark.parametrize("code", ["AuthFailure", "InvalidClientTokenId", "ExpiredTokenException"])
def test_refused_credentials_end_the_run_with_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    quotas = boto3.client("service-quotas", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_subnets", service_error_code=code, http_status_code=401)
        monkeypatch.setattr(pf, "_session_clients", lambda region, profile: (ec2, quotas, REGION))
        result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path))])
    assert result.exit_code == 4, result.output
    assert f"AWS refused the credentials ({code}" in result.output and "FAIL" not in result.output


# --- botocore errors are FAIL rows ------------------------------------------------------------------------------------
@pytest.fixture
def html_proxy() -> Iterator[str]:
    """A local endpoint that answers every call with an HTML page (what a proxy or captive portal sends)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b"<html><body><p>Proxy authentication required</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_response_parser_error_is_neither_client_nor_botocore_error() -> None:
    from botocore.exceptions import BotoCoreError

    assert not issubclass(ResponseParserError, (ClientError, BotoCoreError))


@pytest.mark.usefixtures("no_credentials")
def test_an_html_page_from_a_proxy_is_fail_rows_not_a_traceback(tmp_path: Path, html_proxy: str) -> None:
    # GIVEN every call answered by an HTML page (via --endpoint-url, with no credentials configured)
    result = CliRunner().invoke(
        cli,
        [
            "preflight",
            str(_assembly(tmp_path)),
            "--endpoint-url",
            html_proxy,
            "--json",
            "--find-block",
            "p5.48xlarge:2:7",
        ],
    )
    # THEN FAIL rows naming the unparsable response, exit 1
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert failed and all("not an AWS response" in c["detail"] or "no Subnets" in c["detail"] for c in failed)
    assert {c["check"] for c in failed} >= {"subnets", "block offerings"}
    assert data["endpoint_url"] == html_proxy


class _Broken:
    """A client whose every call returns a response without the fields the checks read."""

    def __getattr__(self, name: str) -> Any:
        return lambda **_: {"Subnets": [{"NoSubnetId": True}], "InstanceTypeOfferings": [{}], "Quota": "x"}


@pytest.mark.usefixtures("fake_credentials")
def test_a_malformed_response_is_a_fail_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pf, "_session_clients", lambda region, profile: (_Broken(), _Broken(), REGION))
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path)), "--json"])
    assert result.exit_code == 1, result.output
    checks = json.loads(result.stdout)["checks"]
    assert any(c["check"] == "subnets" and "check could not run (KeyError" in c["detail"] for c in checks)


# --- regions and --find-block ---------------------------------------------------------------------------------------
@pytest.mark.usefixtures("fake_credentials")
@pytest.mark.parametrize(("args", "pinned"), [(["--region", "us-east-7"], REGION), ([], "mars-north-1")])
def test_unknown_regions_are_refused(tmp_path: Path, args: list[str], pinned: str) -> None:
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path, region=pinned)), *args])
    assert result.exit_code == int(ExitCode.AWS_SETUP) == 5, result.output
    assert "unknown region" in result.output and "Traceback" not in result.output


def test_capacity_block_durations_are_those_ec2_accepts() -> None:
    assert CAPACITY_BLOCK_DAYS[:14] == tuple(range(1, 15))
    assert CAPACITY_BLOCK_DAYS[14:] == tuple(range(21, 183, 7)) and CAPACITY_BLOCK_DAYS[-1] == 182


@pytest.mark.usefixtures("fake_credentials")
@pytest.mark.parametrize(
    "value",
    [
        "p5.48xlarge:2:15",
        "p5.48xlarge:2:20",
        "p5.48xlarge:2:183",
        "p5.48xlarge:2:189",
        "p5.48xlarge:2:0",
        "p5.48xlarge:65:7",
        "p5.48xlarge:0:7",
        "p5.48xlarg:2:7",
        "P5.48xlarge:2:7",
    ],
)
def test_find_block_refuses_what_ec2_refuses(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path)), "--find-block", value])
    assert result.exit_code == 2, result.output
    assert "--find-block" in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("fake_credentials")
@pytest.mark.parametrize(("count", "days"), [(64, 14), (1, 21), (8, 182), (2, 1)])
def test_find_block_accepts_what_ec2_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, days: int
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    quotas = boto3.client("service-quotas", region_name=REGION)
    with Stubber(ec2) as stub:
        subnets = {"Subnets": [{"SubnetId": SUBNET, "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": 100}]}
        stub.add_response("describe_subnets", subnets)
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": [{"Location": "us-east-1a"}]})
        expected = {"InstanceType": "p5.48xlarge", "InstanceCount": count, "CapacityDurationHours": days * 24}
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []}, expected)
        monkeypatch.setattr(pf, "_session_clients", lambda region, profile: (ec2, quotas, REGION))
        result = CliRunner().invoke(
            cli, ["preflight", str(_assembly(tmp_path)), "--find-block", f"p5.48xlarge:{count}:{days}"]
        )
        stub.assert_no_pending_responses()
    assert result.exit_code == 0, result.output


# --- dry runs without an account ------------------------------------------------------------------------------------
def _responses(tmp_path: Path, free_ips: int) -> Path:
    recorded = {
        "ec2": {
            "DescribeSubnets": {
                "Subnets": [{"SubnetId": SUBNET, "AvailabilityZone": "us-east-1a", "AvailableIpAddressCount": free_ips}]
            },
            "DescribeInstanceTypeOfferings": {
                "InstanceTypeOfferings": [
                    {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone", "Location": "us-east-1a"}
                ]
            },
        }
    }
    file = tmp_path / "responses.json"
    file.write_text(json.dumps(recorded))
    return file


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize(("free_ips", "exit_code", "status"), [(100, 0, "PASS"), (1, 1, "FAIL")])
def test_dry_run_from_recorded_responses_needs_no_account(
    tmp_path: Path, free_ips: int, exit_code: int, status: str
) -> None:
    out = _assembly(tmp_path)
    result = CliRunner().invoke(
        cli, ["preflight", str(out), "--responses", str(_responses(tmp_path, free_ips)), "--json"]
    )
    assert result.exit_code == exit_code, result.output
    checks = {c["check"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["subnet IPs"]["status"] == status and checks["subnet IPs"]["target"] == SUBNET
    assert checks["offering"]["status"] == "PASS"


@pytest.mark.usefixtures("no_credentials")
@pytest.mark.parametrize("content", ["[]", '{"ec2": []}', '{"ec2": {"DescribeSubnets": 3}}', "{"])
def test_a_bad_responses_file_is_a_usage_error(tmp_path: Path, content: str) -> None:
    file = tmp_path / "r.json"
    file.write_text(content)
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path)), "--responses", str(file)])
    assert result.exit_code == 2 and "--responses" in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("no_credentials")
def test_an_operation_missing_from_the_responses_file_fails_its_check(tmp_path: Path) -> None:
    file = tmp_path / "r.json"
    file.write_text("{}")
    result = CliRunner().invoke(cli, ["preflight", str(_assembly(tmp_path)), "--responses", str(file), "--json"])
    assert result.exit_code == 1
    (subnets,) = [c for c in json.loads(result.stdout)["checks"] if c["check"] == "subnets"]
    assert "NotRecorded" in subnets["detail"] and "DescribeSubnets" in subnets["detail"]
