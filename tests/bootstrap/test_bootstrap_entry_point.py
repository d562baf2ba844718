"""The frozen entry point (fmconstructs.bootstrap.entry_point): pinned, shellcheck-clean, and in a sandbox with a fake
AWS CLI it runs each SSM parameter's loader with its arguments, in name order, as a ParallelCluster Sequence would:
GIVEN a real NodeBootstrap's static loader and archive behind a parameter WHEN the entry point runs THEN the steps run
with the deploy-time values, exactly as when ParallelCluster runs the loader with the same Args itself."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import aws_cdk as cdk
import pytest

from fmconstructs.bootstrap import NodeBootstrap, render_static_loader
from fmconstructs.bootstrap.entry_point import ENTRY_POINT, ENTRY_POINT_SHA256, entry_point_file, parameter_value

from tests.conftest import ENV, require_tool

#: A fake AWS CLI: SSM answers from $FAKE_SSM/<name with / as _>, s3 cp from $FAKE_S3/<basename of the URL>.
FAKE_AWS = r"""#!/bin/bash
echo "aws $*" >> "$FAKE_AWS_CALLS"
arg() { local want=$1; shift; while [ $# -gt 0 ]; do [ "$1" = "$want" ] && { echo "$2"; return; }; shift; done; }
case "$1 $2" in
  "ssm get-parameters-by-path") ls "$FAKE_SSM" | tr '_' '/' | paste -sd '\t' ;;
  "ssm get-parameter") cat "$FAKE_SSM/$(arg --name "$@" | tr '/' '_')" ;;
  "s3 cp") src=${@: -2:1}; cp "$FAKE_S3/${src##*/}" "${@: -1}" ;;
esac
"""
PATH_ = "/fmconstructs/parallelcluster/train/head/OnNodeConfigured"
SPECIAL = 'v&a|l\\ue/q"$HOME with spaces'


def test_the_entry_point_is_frozen() -> None:
    # Its content-addressed URL is in every deployed head node configuration that uses it: ParallelCluster refuses a
    # change (HeadNodeCustomActionsSchema: UpdatePolicy.UNSUPPORTED). Never edit it; add a new one beside it instead.
    assert hashlib.sha256(ENTRY_POINT.encode()).hexdigest() == ENTRY_POINT_SHA256


def test_the_entry_point_passes_shellcheck(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = entry_point_file(tmp_path)
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


class World:
    """A sandbox root with fake SSM parameters and S3 objects."""

    def __init__(self, root: Path) -> None:
        self.root, self.ssm, self.s3 = root, root / "ssm", root / "s3"
        for folder in (self.ssm, self.s3, root / "fakebin", root / "var/lib/cloud/data"):
            folder.mkdir(parents=True)
        (root / "fakebin/aws").write_text(FAKE_AWS)
        (root / "fakebin/aws").chmod(0o755)
        (root / "var/lib/cloud/data/instance-id").write_text("i-0123456789abcdef0\n")
        self.entry = entry_point_file(root)

    def parameter(self, name: str, value: str) -> None:
        (self.ssm / name.replace("/", "_")).write_text(value + "\n")

    def object(self, url: str, data: bytes) -> None:
        (self.s3 / url.rsplit("/", 1)[-1]).write_bytes(data)

    def run(self, path: str = PATH_) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.root / 'fakebin'}:{os.environ['PATH']}",
            "FMCONSTRUCTS_ROOT": str(self.root),
            "FAKE_SSM": str(self.ssm),
            "FAKE_S3": str(self.s3),
            "FAKE_AWS_CALLS": str(self.root / "aws-calls"),
            "HOME": str(self.root),
        }
        return subprocess.run(
            ["bash", str(self.entry), path, "us-east-1"], env=env, capture_output=True, text=True, timeout=120
        )


def _piece(world: World, stack_id: str, name: str, command: str, value: str) -> None:
    """A real bootstrap's loader and archive as S3 objects and its resolved action as parameter ``<PATH_>/<name>``."""
    outdir = world.root / f"cdk.out.{stack_id}"
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, stack_id, env=ENV)
    boot = NodeBootstrap(stack, "Boot", name=f"pc-{stack_id.lower()}")
    param = cdk.CfnParameter(stack, "Value", default="x").value_as_string
    boot.add_commands(command.replace("VALUE", param))
    action = boot.script_action()
    app.synth()
    manifest = json.loads((outdir / f"{stack_id}.assets.json").read_text())
    for entry in manifest["files"].values():
        path = outdir / entry["source"]["path"]
        world.object(next(iter(entry["destinations"].values()))["objectKey"], path.read_bytes())
    args = []
    for arg in action.args:
        resolved = stack.resolve(arg)
        args.append(resolved if isinstance(resolved, str) else value if resolved == {"Ref": "Value"} else "/fm/logs")
    world.parameter(f"{PATH_}/{name}", parameter_value(stack.resolve(action.script_url), tuple(args)))


def test_the_entry_point_runs_each_piece_with_its_arguments_in_name_order(tmp_path: Path) -> None:
    world = World(tmp_path)
    _piece(world, "Two", "002", 'printf "two:%s\\n" "VALUE" >> "$FMCONSTRUCTS_ROOT/ran"', "second")
    _piece(world, "One", "001", 'printf "one:%s\\n" \'VALUE\' >> "$FMCONSTRUCTS_ROOT/ran"', SPECIAL)
    proc = world.run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "ran").read_text() == f"one:{SPECIAL}\ntwo:second\n"
    calls = (tmp_path / "aws-calls").read_text()
    assert f"ssm get-parameters-by-path --region us-east-1 --path {PATH_}" in calls
    # the static loader is the one ParallelCluster would run with the same Args
    (loader,) = {p.read_text() for p in (tmp_path / "var/lib/fmconstructs/bootstrap/entry").glob("*.sh")}
    assert loader == render_static_loader()


def test_a_failing_piece_stops_the_run_and_fails_the_entry_point(tmp_path: Path) -> None:
    world = World(tmp_path)
    _piece(world, "One", "001", "exit 7", "v")
    _piece(world, "Two", "002", 'touch "$FMCONSTRUCTS_ROOT/two-ran"', "v")
    proc = world.run()
    assert proc.returncode == 1
    assert f"fmconstructs-entry[{PATH_}]: {PATH_}/001 failed" in proc.stderr
    assert not (tmp_path / "two-ran").exists()


@pytest.mark.parametrize("setup", ["none", "no-aws"])
def test_the_entry_point_fails_with_a_reason(tmp_path: Path, setup: str) -> None:
    world = World(tmp_path)
    if setup == "no-aws":
        (tmp_path / "fakebin/aws").unlink()
        env = {"PATH": "/usr/bin:/bin", "FMCONSTRUCTS_ROOT": str(tmp_path), "HOME": str(tmp_path)}
        proc = subprocess.run(["bash", str(world.entry), PATH_, "us-east-1"], env=env, capture_output=True, text=True)
        assert proc.returncode == 1 and "no AWS CLI" in proc.stderr
        return
    proc = world.run()
    assert proc.returncode == 1 and f"no parameter under {PATH_}" in proc.stderr
