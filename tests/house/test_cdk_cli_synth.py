"""The real CDK CLI synthesizes the example app through cdk.json, with no AWS account or credentials."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]


def test_npx_cdk_synth(tmp_path):
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    assert cli.exists(), "the pinned CDK CLI is missing: run `make test` (it runs npm ci)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_CLI_TELEMETRY="true",
        AWS_EC2_METADATA_DISABLED="true",
        HOME=str(tmp_path),  # no ~/.aws config or credentials
    )
    out = tmp_path / "cdk.out"
    proc = subprocess.run(
        [shutil.which("npx") or "npx", "cdk", "synth", "--quiet", "--no-notices", "--output", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    template = json.loads((out / "FmCompute.template.json").read_text())
    types = [r["Type"] for r in template["Resources"].values()]
    assert types.count("AWS::EC2::LaunchTemplate") == 8
    manifest = json.loads((out / "manifest.json").read_text())
    for stack in ("FmCompute", "FmStorage", "FmPcsP5", "FmPcsGb200", "FmEksP5en", "FmEksGb200", "FmServeP5en"):
        assert stack in manifest["artifacts"]
