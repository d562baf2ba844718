"""The library installs and works as a dependency of someone else's CDK app: the wheel (built once per run from the
sdist, tests/conftest.py ``release_dist``), installed into a new virtual environment outside this repository,
synthesizes a small app that uses it.

The new environment reuses the dependencies already installed in ``.venv`` (a path entry, so no download and no
editable fmconstructs), installs only the built wheel, and checks with ``pip check`` that the wheel's declared
dependencies are satisfied. This catches missing package data (dashboards, the Grafana handler, ``py.typed``), imports
that only work from the source tree, and broken metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli


USER_APP = """
import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
import fmconstructs
from fmconstructs import GpuLaunchTemplate, OnDemand, EfaSecurityGroup
from fmconstructs.observability.dashboards import load_dashboards

assert "site-packages" in fmconstructs.__file__, fmconstructs.__file__
app = cdk.App(outdir="out")
stack = cdk.Stack(app, "UserStack", env=cdk.Environment(account="111111111111", region="us-west-2"))
vpc = ec2.Vpc.from_vpc_attributes(
    stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-west-2a"],
    private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
)
efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
GpuLaunchTemplate(
    stack, "P5", vpc=vpc, instance_type="p5.48xlarge", capacity=OnDemand(), efa_security_group=efa
)
assert load_dashboards(), "dashboards missing from the wheel"
app.synth()
print("synthesized", fmconstructs.__file__)
"""


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH: a source tree on it would make pip think fmconstructs is installed already.
    kwargs.setdefault("env", {k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, **kwargs)  # type: ignore[call-overload,no-any-return]


def test_wheel_installs_and_a_user_app_synthesizes(tmp_path, release_dist):
    # The wheel built from the sdist (tests/conftest.py: `make dist-check`'s, or built once per run)
    wheels = list(release_dist.glob("fmconstructs-*.whl"))
    assert len(wheels) == 1

    env_dir = tmp_path / "user-venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    # The dependencies installed in .venv, as a plain path entry: their .pth files (the editable fmconstructs) are
    # not processed, so the only fmconstructs is the wheel's.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    installed = _run([*pip, "install", "--no-deps", "--no-index", str(wheels[0])])
    assert installed.returncode == 0, installed.stderr[-3000:]
    checked = _run([*pip, "check"])
    assert checked.returncode == 0, checked.stdout[-3000:]

    app_dir = tmp_path / "user-app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(USER_APP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    ran = _run([str(python), "app.py"], cwd=app_dir, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert str(site) in ran.stdout
    template = json.loads((app_dir / "out" / "UserStack.template.json").read_text())
    assert any(r["Type"] == "AWS::EC2::LaunchTemplate" for r in template["Resources"].values())
