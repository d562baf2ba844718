"""NodeBootstrap.script_action: the static loader (the same loader logic, values from arguments) as a file asset and
its arguments, for script-URL consumers (ParallelCluster CustomActions). shellcheck, and runs in a sandbox with a fake
AWS CLI, given the arguments as ParallelCluster would pass them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs import FmValidationError
from fmconstructs.bootstrap import NodeBootstrap, ScriptAction, read_tar_gz, render_loader, render_static_loader
from fmconstructs.bootstrap.loader import STATIC_LOADER_FIXED_ARGS

from tests.conftest import ENV, new_app, require_tool

#: Characters that sed, bash pattern replacement or the shell would mangle (see tests/bootstrap/test_bootstrap.py SPECIAL).
#: A test value for the stack-id suffix of the bootstrap log group's name (``Fn::Select`` on ``AWS::StackId``).
STACK_SUFFIX = "0123456789ab"
SPECIAL = 'v&a|l\\ue/q"$HOME@@ with spaces'

FAKE_AWS = r"""#!/bin/bash
# A fake AWS CLI: s3 cp copies $FAKE_S3_OBJECT; every call is logged.
echo "aws $*" >> "$FAKE_AWS_CALLS"
case "$1 $2" in
  "s3 cp") cp "$FAKE_S3_OBJECT" "${@: -1}" ;;
esac
"""


# --- the two renderings -----------------------------------------------------------------------------------------------


def test_static_loader_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "loader.sh"
    path.write_text(render_static_loader())
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_static_loader_embeds_nothing_and_shares_the_loader_logic() -> None:
    static = render_static_loader()
    embedded = render_loader(
        name="n", sha256="0" * 64, bucket="b", key="k.tgz", region="us-east-1", log_group="/g", values=["a"]
    )
    assert re.search(r"@[A-Z_]+@", static) is None  # no placeholder left
    assert "n=${1:?" in static and "FMCONSTRUCTS_VALUES" not in static
    # one loader logic: every line after the values block is the same in both renderings
    tail = static.split('done >"$d/params"\n', 1)[1]
    assert embedded.endswith(tail)
    assert static.count("\n") < 40


# --- the action --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def action_stack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Act", env=ENV)
    value = cdk.CfnParameter(stack, "Value", default="x").value_as_string
    boot = NodeBootstrap(stack, "Boot", name="pc-nodes")
    boot.add_step(
        "first",
        [
            'echo "first" >> "$FMCONSTRUCTS_ROOT/ran"',
            f"printf '%s' '{value}' > \"$FMCONSTRUCTS_ROOT/value\"",
            '"$FMCONSTRUCTS_ROOT/opt/test/hello.sh" > "$FMCONSTRUCTS_ROOT/hello"',
        ],
        files={"/opt/test/hello.sh": ("#!/bin/sh\necho hello\n", 0o755)},
    )
    boot.add_commands('echo "commands ran" >> "$FMCONSTRUCTS_ROOT/ran"')
    action = boot.script_action()
    app.synth()
    return {"stack": stack, "boot": boot, "action": action, "outdir": Path(outdir)}


def _asset_file(outdir: Path, suffix: str) -> Path:
    manifest = json.loads((outdir / "Act.assets.json").read_text())
    (entry,) = [f for f in manifest["files"].values() if f["source"]["path"].endswith(suffix)]
    assert entry["source"]["packaging"] == "file"
    return Path(outdir / str(entry["source"]["path"]))


def _resolved_args(stack: cdk.Stack, action: ScriptAction, value: str) -> list[str]:
    """The Args as CloudFormation would deliver them: the parameter's value and test values for the bucket."""
    out = []
    for arg in action.args:
        resolved = stack.resolve(arg)
        if isinstance(resolved, str):
            out.append(resolved)
        elif resolved == {"Ref": "Value"}:
            out.append(value)
        elif "AWS::StackId" in json.dumps(resolved):  # the bootstrap log group's name: prefix + stack-id suffix
            prefix, suffix = resolved["Fn::Join"][1]
            assert "Fn::Select" in suffix
            out.append(prefix + STACK_SUFFIX)
        else:
            raise AssertionError(resolved)
    return out


def test_action_points_at_the_static_loader_and_passes_every_value(action_stack: dict[str, Any]) -> None:
    stack, boot, action, outdir = (action_stack[k] for k in ("stack", "boot", "action", "outdir"))
    assert isinstance(action, ScriptAction)
    loader = _asset_file(outdir, ".sh")
    assert loader.read_text() == render_static_loader()
    archive = _asset_file(outdir, ".tgz")
    sha256 = hashlib.sha256(archive.read_bytes()).hexdigest()
    script_url = stack.resolve(action.script_url)
    bucket = "s3://cdk-hnb659fds-assets-123456789012-us-east-1/"
    assert script_url.startswith(bucket) and script_url.endswith(".sh")
    args = [stack.resolve(a) for a in action.args]
    assert args[0] == "pc-nodes" and args[1] == sha256
    assert args[2].startswith(bucket) and args[2].endswith(".tgz")
    assert args[3] == "us-east-1"
    assert args[4] == {
        "Fn::Join": [
            "",
            [
                "/fmconstructs/node-bootstrap/Act/",
                {
                    "Fn::Select": [
                        4,
                        {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]},
                    ]
                },
            ],
        ]
    }
    assert args[STATIC_LOADER_FIXED_ARGS:] == [{"Ref": "Value"}]
    assert [stack.resolve(k) for k in action.object_keys] == [script_url.rsplit("/", 1)[1], args[2].rsplit("/", 1)[1]]
    assert "@@FMCONSTRUCTS_VALUE_1@@" in read_tar_gz(archive.read_bytes())["steps/001-first/run.sh"][0].decode()
    assert boot.script_action() is action  # idempotent


def test_action_grants_nothing_by_itself(action_stack: dict[str, Any]) -> None:
    template = Template.from_stack(action_stack["stack"])
    assert template.find_resources("AWS::IAM::Policy") == {}
    statements = action_stack["stack"].resolve(
        [s.to_statement_json() for s in action_stack["action"].policy_statements()]
    )
    (read, log) = statements
    assert read["Action"] == "s3:GetObject" and len(read["Resource"]) == 2  # the two objects, not the bucket
    keys = [action_stack["stack"].resolve(k) for k in action_stack["action"].object_keys]
    assert [r["Fn::Join"][1][-1] for r in read["Resource"]] == [
        f":s3:::cdk-hnb659fds-assets-123456789012-us-east-1/{k}" for k in keys
    ]
    assert log["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]


def test_the_loader_file_is_content_addressed() -> None:
    def loader_hash(stack_id: str, command: str) -> str:
        stack = cdk.Stack(new_app(), stack_id, env=ENV)
        boot = NodeBootstrap(stack, "Boot")
        boot.add_commands(command)
        action = boot.script_action()
        return str(stack.resolve(action.script_url).rsplit("/", 1)[1])

    assert loader_hash("One", "echo one") == loader_hash("Two", "echo two")  # one S3 object for every bootstrap


def test_steps_added_after_script_action_fail_synthesis() -> None:
    stack = cdk.Stack(new_app(), "Late", env=ENV)
    boot = NodeBootstrap(stack, "Boot")
    boot.add_commands("echo one")
    boot.script_action()
    boot.add_commands("echo too late")
    with pytest.raises(RuntimeError, match="a step was added after the node bootstrap was packaged"):
        cdk.Stage.of(stack).synth()  # type: ignore[union-attr]


def test_script_action_needs_steps() -> None:
    stack = cdk.Stack(new_app(), "Empty", env=ENV)
    with pytest.raises(FmValidationError, match="at least one step"):
        NodeBootstrap(stack, "Boot").script_action()


def test_script_action_needs_a_synthesizer_that_publishes_assets() -> None:
    stack = cdk.Stack(
        new_app(),
        "NoAssets",
        env=ENV,
        synthesizer=cdk.BootstraplessSynthesizer(deploy_role_arn="arn:aws:iam::123456789012:role/d"),
    )
    boot = NodeBootstrap(stack, "Boot")
    boot.add_commands("echo one")
    with pytest.raises(FmValidationError, match="publishes file assets"):
        boot.script_action()


# --- the static loader in a sandbox -----------------------------------------------------------------------------------


class Sandbox:
    def __init__(self, root: Path, loader: Path, s3_object: Path) -> None:
        self.root = root
        self.bin = root / "fakebin"
        self.bin.mkdir(parents=True)
        (self.bin / "aws").write_text(FAKE_AWS)
        (self.bin / "aws").chmod(0o755)
        (root / "var/lib/cloud/data").mkdir(parents=True)
        (root / "var/lib/cloud/data/instance-id").write_text("i-0123456789abcdef0\n")
        self.loader = loader
        self.s3_object = s3_object

    def run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "FMCONSTRUCTS_ROOT": str(self.root),
            "FAKE_S3_OBJECT": str(self.s3_object),
            "FAKE_AWS_CALLS": str(self.root / "aws-calls"),
            "HOME": str(self.root),
        }
        # ParallelCluster runs the downloaded script with Args as its arguments (custom-bootstrap-actions-v3).
        return subprocess.run(["bash", str(self.loader), *args], env=env, capture_output=True, text=True, timeout=120)

    def read(self, name: str) -> str:
        path = self.root / name
        return path.read_text() if path.exists() else ""


@pytest.fixture
def sandbox(action_stack: dict[str, Any], tmp_path: Path) -> Sandbox:
    outdir = action_stack["outdir"]
    return Sandbox(tmp_path / "root", _asset_file(outdir, ".sh"), _asset_file(outdir, ".tgz"))


def test_static_loader_fetches_verifies_and_runs_every_step(action_stack: dict[str, Any], sandbox: Sandbox) -> None:
    args = _resolved_args(action_stack["stack"], action_stack["action"], SPECIAL)
    proc = sandbox.run(args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sandbox.read("ran") == "first\ncommands ran\n"
    assert sandbox.read("value") == SPECIAL  # the value argument, intact
    assert sandbox.read("hello") == "hello\n"
    calls = sandbox.read("aws-calls")
    assert f"aws s3 cp --region us-east-1 --only-show-errors {args[2]} " in calls
    assert args[2].startswith("s3://cdk-hnb659fds-assets-123456789012-us-east-1/") and args[2].endswith(".tgz")
    assert (
        f"--log-group-name /fmconstructs/node-bootstrap/Act/{STACK_SUFFIX} --log-stream-name pc-nodes/i-0123456789abcdef0"
        in calls
    )
    second = sandbox.run(args)
    assert second.returncode == 0 and "already ran" in second.stdout
    assert sandbox.read("ran") == "first\ncommands ran\n"


def test_static_loader_refuses_a_wrong_checksum(action_stack: dict[str, Any], sandbox: Sandbox) -> None:
    args = _resolved_args(action_stack["stack"], action_stack["action"], "x")
    args[1] = "f" * 64
    proc = sandbox.run(args)
    assert proc.returncode == 1
    assert "sha256 mismatch" in proc.stdout
    assert sandbox.read("ran") == ""


@pytest.mark.parametrize("count", [0, 1, 4])
def test_static_loader_without_its_arguments_fails_before_doing_anything(sandbox: Sandbox, count: int) -> None:
    proc = sandbox.run(["a", "0" * 64, "s3://b/k.tgz", "us-east-1"][:count])
    assert proc.returncode != 0
    assert sandbox.read("aws-calls") == ""
    assert not (sandbox.root / "var/lib/fmconstructs").exists()
