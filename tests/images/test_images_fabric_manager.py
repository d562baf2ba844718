"""The Fabric Manager component installs ``nvidia-fabricmanager`` (the name ParallelCluster's cookbook installs:
aws-parallelcluster-cookbook resources/fabric_manager/partial/_fabric_manager_common.rb), not the retired
``nvidia-fabric-manager``, and keeps a Fabric Manager the parent image already ships (issue 18)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fmconstructs.images import fabric_manager_component

DRIVER = "580.95.05"
_BASIC_TOOLS = ("bash", "cat", "grep", "sed", "awk", "head", "sort", "printf", "mktemp", "rm", "tr", "echo")


def _build_script() -> str:
    return fabric_manager_component().scripts()["build.Install"]


_NO_UNIT = 'echo "systemctl $*" >> "$HOME/calls"; [ "$1" != cat ]'


def _run_build(tmp_path: Path, *, dnf: str, systemctl: str = _NO_UNIT):
    """Run the rendered build step with stub modinfo/nvidia-smi/dnf/systemctl; returns the process and the calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in _BASIC_TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    stubs = {
        "modinfo": f'if [ "$1" = -F ]; then echo {DRIVER}; else exit 0; fi',
        "nvidia-smi": "exit 0",
        "dnf": f'echo "dnf $*" >> "$HOME/calls"\n{dnf}',
        "systemctl": systemctl,
    }
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", "-c", _build_script()], capture_output=True, text=True, env=env, check=False)
    calls_file = tmp_path / "calls"
    calls = calls_file.read_text().splitlines() if calls_file.exists() else []
    return proc, calls


@pytest.mark.skipif(Path("/usr/bin/nv-fabricmanager").exists(), reason="this machine has Fabric Manager installed")
def test_installs_nvidia_fabricmanager_at_the_driver_version(tmp_path: Path) -> None:
    proc, calls = _run_build(tmp_path, dnf="exit 0")
    assert proc.returncode == 0, proc.stderr
    dnf_calls = [c for c in calls if c.startswith("dnf")]
    assert dnf_calls == [f"dnf install -y nvidia-fabricmanager-{DRIVER}"]


@pytest.mark.skipif(Path("/usr/bin/nv-fabricmanager").exists(), reason="this machine has Fabric Manager installed")
def test_falls_back_to_the_older_rpm_name_only_when_the_new_one_is_missing(tmp_path: Path) -> None:
    proc, calls = _run_build(tmp_path, dnf='case "$3" in nvidia-fabricmanager-*) exit 1;; esac; exit 0')
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c.startswith("dnf")] == [
        f"dnf install -y nvidia-fabricmanager-{DRIVER}",
        f"dnf install -y nvidia-fabric-manager-{DRIVER}",
    ]


@pytest.mark.skipif(Path("/usr/bin/nv-fabricmanager").exists(), reason="this machine has Fabric Manager installed")
def test_fails_naming_the_package_when_no_repository_has_it(tmp_path: Path) -> None:
    proc, _ = _run_build(tmp_path, dnf="exit 1")
    assert proc.returncode != 0
    assert f"no nvidia-fabricmanager-{DRIVER}" in proc.stderr


def test_rendered_script_names_the_cookbook_package_first() -> None:
    script = _build_script()
    # The cookbook's fabric_manager_installed?: a parent (DLAMI) that ships /usr/bin/nv-fabricmanager keeps it.
    assert "[ -x /usr/bin/nv-fabricmanager ]" in script
    new, old = script.index('"nvidia-fabricmanager-$driver"'), script.index('"nvidia-fabric-manager-$driver"')
    assert new < old
