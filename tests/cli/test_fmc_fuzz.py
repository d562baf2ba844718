"""`fmc` never ends with an internal error: malformed assemblies, recorded responses and arguments, on every
subcommand, end with one line and an exit code other than 70 (ExitCode.INTERNAL), and never with a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmconstructs.cli.errors import ExitCode
from fmconstructs.cli.main import cli

_LEAF = st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8)
_KEYS = st.sampled_from(
    [
        "artifacts", "type", "properties", "templateFile", "Resources", "Type", "Properties", "Metadata",
        "aws:cloudformation:stack", "environment", "Instances", "CapacityReservations", "CapacityReservationId",
        "InstanceType", "TotalInstanceCount", "AvailableInstanceCount", "EndDate", "StartDate", "State", "Error",
        "Code", "HTTPStatusCode", "Subnets", "SubnetId", "AvailableIpAddressCount", "Stacks", "StackName",
        "CapacityBlockExtensionOfferings", "UpfrontFee", "Quotas", "Value", "NetworkNodes", "aws:cdk:path",
    ]
)  # fmt: skip
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS | st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
_OPERATIONS = st.sampled_from(
    [
        "DescribeCapacityReservations", "DescribeCapacityBlocks", "DescribeCapacityBlockExtensionOfferings",
        "DescribeInstanceTypes", "DescribeSubnets", "DescribeInstances", "DescribeInstanceTopology",
        "DescribeAvailabilityZones", "GetServiceQuota", "DescribeStacks", "GetTemplate", "GetProducts",
        "DescribeCapacityBlockOfferings", "CreateInterruptibleCapacityReservationAllocation",
    ]
)  # fmt: skip
_RESPONSES = (
    st.dictionaries(
        st.sampled_from(["ec2", "service-quotas", "pricing", "cloudformation", "pcs", "sagemaker", "amp", "x"]),
        st.dictionaries(_OPERATIONS, _JSON | st.lists(_JSON, max_size=2), max_size=4) | _JSON,
        max_size=3,
    )
    | _JSON
)
_WORD = st.sampled_from(["", "x", "-1", "0", "1e400", "nan", "cr-0123456789abcdef0", "p5.48xlarge", "us-east-1"])
_VALUE = _WORD | st.text(max_size=10)

COMMANDS: list[tuple[list[str], list[str]]] = [
    (["plan"], ["--instance-type", "--nodes", "--checkpoint-bytes", "--checkpoint-seconds", "--model-params",
                "--tokens", "--mfu", "--price-per-hour", "--throughput-gbytes-per-s", "--kv-cache-fraction"]),
    (["preflight", "--region", "us-east-1"], ["--training-window-hours", "--find-block"]),
    (["health", "--region", "us-east-1"], ["--stack", "--nccl-tolerance-percent", "--workspace-url"]),
    (["changes"], ["--stack", "--allow"]),
    (["stack-policy"], ["--stack", "--allow"]),
    (["capacity", "blocks", "--region", "us-east-1"], []),
    (["capacity", "extend", "--region", "us-east-1"], ["--reservation", "--days", "--offering"]),
    (["capacity", "lend", "--region", "us-east-1"], ["--reservation", "--count"]),
    (["usage", "--workspace-url", "http://127.0.0.1:9/workspaces/ws-1/"], ["--since", "--by", "--step"]),
]  # fmt: skip
_AWS = {"preflight", "health", "capacity"}


def _write_assembly(root: Path, manifest: Any, template: Any) -> Path:
    out = root / "cdk.out"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps(manifest, default=str))
    (out / "S.template.json").write_text(json.dumps(template, default=str))
    return out


def _assembly_manifest(artifact: Any) -> Any:
    return {"artifacts": {"S": artifact}}


_ARTIFACT = st.fixed_dictionaries(
    {"type": st.sampled_from(["aws:cloudformation:stack", "cdk:tree", "x"]) | _JSON},
    optional={"properties": st.fixed_dictionaries({"templateFile": st.just("S.template.json") | _JSON}) | _JSON},
)
_TEMPLATE = st.fixed_dictionaries(
    {"Resources": st.dictionaries(st.text(min_size=1, max_size=5), _JSON | st.fixed_dictionaries(
        {"Type": st.sampled_from(["AWS::FSx::FileSystem", "AWS::EC2::LaunchTemplate", "AWS::PCS::ComputeNodeGroup",
                                  "AWS::EKS::Nodegroup", "AWS::AutoScaling::AutoScalingGroup"]),
         "Properties": _JSON, "Metadata": _JSON}), max_size=4) | _JSON}
) | _JSON  # fmt: skip


@pytest.fixture(autouse=True)
def _no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


@pytest.mark.parametrize(("command", "options"), COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_input_ends_in_an_internal_error(command: list[str], options: list[str], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = data.draw(st.builds(_assembly_manifest, _ARTIFACT) | _JSON, label="manifest")
        out = _write_assembly(root, manifest, data.draw(_TEMPLATE, label="template"))
        args = [*command, str(out)] if command[0] not in ("capacity",) and not command[0].startswith("usage") else []
        if command[0] == "usage":
            args = [*command, str(out)]
        elif command[0] == "capacity":
            args = list(command)
        for option in data.draw(
            st.lists(st.sampled_from(options), max_size=3, unique=True) if options else st.just([])
        ):
            args += [option, data.draw(_VALUE, label=option)]
        if command[0] in _AWS:
            responses = root / "responses.json"
            responses.write_text(json.dumps(data.draw(_RESPONSES, label="responses"), default=str))
            args += ["--responses", str(responses)]
        if data.draw(st.booleans(), label="json"):
            args.append("--json")
        result = CliRunner().invoke(cli, args)
    assert result.exit_code != int(ExitCode.INTERNAL), (args, result.output)
    assert "Traceback" not in result.output, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, repr(result.exception))


def _mutated(responses: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The recorded responses of a healthy deployment with one operation's answer (or one of its keys) replaced."""
    mutated = json.loads(json.dumps(responses, default=str))
    service = data.draw(st.sampled_from(sorted(mutated)), label="service")
    operation = data.draw(st.sampled_from(sorted(mutated[service])), label="operation")
    answer = mutated[service][operation]
    if isinstance(answer, dict) and answer and data.draw(st.booleans(), label="one key"):
        key = data.draw(st.sampled_from(sorted(answer)), label="key")
        answer[key] = data.draw(_JSON, label="value")
    else:
        mutated[service][operation] = data.draw(_JSON, label="answer")
    return mutated


@pytest.mark.parametrize("command", ["health", "preflight"])
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_malformed_recorded_answer_of_a_real_deployment_is_no_internal_error(
    command: str, data: st.DataObject
) -> None:
    from tests.support.fmc_health import REGION, _assembly, _responses

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = _assembly(root)
        responses = root / "responses.json"
        responses.write_text(json.dumps(_mutated(_responses("http://127.0.0.1:9/workspaces/ws-1/"), data)))
        args = [command, str(out), "--region", REGION, "--responses", str(responses)]
        if command == "health":
            args += ["--workspace-url", "http://127.0.0.1:9/workspaces/ws-1/"]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code != int(ExitCode.INTERNAL), (args, result.output)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@pytest.mark.parametrize(
    "answer",
    [
        {"CapacityReservations": "cr-0123456789abcdef0"},
        {"CapacityReservations": [5]},
        {"CapacityReservations": [{"CapacityReservationId": "cr-0123456789abcdef0", "TotalInstanceCount": "many"}]},
        {"CapacityReservations": [], "HTTPStatusCode": "ok"},
    ],
)
def test_capacity_refuses_a_recorded_answer_of_the_wrong_shape_with_exit_2(tmp_path: Path, answer: Any) -> None:
    """Recorded answers are checked against the API's output shape, as botocore's Stubber does."""
    responses = tmp_path / "responses.json"
    responses.write_text(json.dumps({"ec2": {"DescribeCapacityReservations": answer}}))
    result = CliRunner().invoke(
        cli, ["capacity", "blocks", "--all", "--region", "us-east-1", "--responses", str(responses)]
    )
    assert result.exit_code == int(ExitCode.USAGE), result.output
    assert "--responses: ec2 DescribeCapacityReservations" in result.output
