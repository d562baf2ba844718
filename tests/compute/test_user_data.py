"""The NVMe RAID0 script: syntax, and behaviour against stub system tools (idempotent, EBS untouched)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fmconstructs import FmValidationError, nvme_raid_commands
from fmconstructs.compute import nvme_raid_script


def make_stubs(bin_dir: Path, log: Path, disks: int) -> None:
    lines = ["/dev/nvme0n1 Amazon Elastic Block Store"] + [
        f"/dev/nvme{i}n1 Amazon EC2 NVMe Instance Storage" for i in range(1, disks + 1)
    ]
    listing = "\\n".join(lines)
    scripts = {
        "lsblk": f'printf "{listing}\\n"',
        # mounted once the stub mount has run
        "mountpoint": f'[ -f "{log}.mounted" ]',
        "mount": f'echo "mount $*" >> "{log}"; touch "{log}.mounted"',
        "mdadm": f'echo "mdadm $*" >> "{log}"',
        "mkfs.xfs": f'echo "mkfs.xfs $*" >> "{log}"',
        "udevadm": "true",
        "chmod": f'echo "chmod $*" >> "{log}"',
        "mkdir": f'echo "mkdir $*" >> "{log}"',
    }
    bin_dir.mkdir()
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)


def run_script(tmp_path: Path, disks: int) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    script = tmp_path / "raid.sh"
    script.write_text(nvme_raid_script())
    log, fstab, bin_dir = tmp_path / "calls.log", tmp_path / "fstab", tmp_path / "bin"
    if not bin_dir.exists():
        make_stubs(bin_dir, log, disks)
    fstab.touch()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FMCONSTRUCTS_FSTAB": str(fstab),
        "FMCONSTRUCTS_BY_LABEL_DIR": str(tmp_path / "by-label"),
    }
    proc = subprocess.run(["bash", str(script), "/scratch", "fmscratch"], env=env, capture_output=True, text=True)
    return proc, log, fstab


def test_script_is_valid_bash():
    subprocess.run(["bash", "-n"], input=nvme_raid_script(), text=True, check=True)


def test_commands_are_valid_bash():
    subprocess.run(["bash", "-n"], input="\n".join(nvme_raid_commands("/scratch")), text=True, check=True)


def test_script_passes_shellcheck(tmp_path):
    assert shutil.which("shellcheck"), "shellcheck is missing: `make test` installs it (Debian package shellcheck)"
    path = tmp_path / "raid.sh"
    path.write_text(nvme_raid_script())
    subprocess.run(["shellcheck", "--severity=warning", str(path)], check=True)


def test_builds_raid0_from_instance_store_disks_only(tmp_path):
    proc, log, fstab = run_script(tmp_path, disks=8)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text()
    assert "mdadm --create /dev/md/fmscratch --level=0 --raid-devices=8" in calls
    assert "/dev/nvme0n1" not in calls  # the EBS root volume
    assert "mkfs.xfs -f -L fmscratch /dev/md/fmscratch" in calls
    assert "mount /scratch" in calls
    assert fstab.read_text().startswith("LABEL=fmscratch /scratch xfs defaults,noatime,nofail")


def test_second_run_is_a_no_op(tmp_path):
    run_script(tmp_path, disks=8)
    calls_after_first = (tmp_path / "calls.log").read_text()
    proc, log, fstab = run_script(tmp_path, disks=8)
    assert proc.returncode == 0
    assert "already mounted" in proc.stdout
    assert log.read_text() == calls_after_first
    assert fstab.read_text().count("LABEL=fmscratch") == 1


def test_single_disk_is_formatted_without_mdadm(tmp_path):
    proc, log, _ = run_script(tmp_path, disks=1)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text()
    assert "mdadm" not in calls
    assert "mkfs.xfs -f -L fmscratch /dev/nvme1n1" in calls


def test_no_instance_store_does_nothing(tmp_path):
    proc, log, fstab = run_script(tmp_path, disks=0)
    assert proc.returncode == 0
    assert "no NVMe instance-store disks" in proc.stdout
    assert not log.exists() and fstab.read_text() == ""


def test_existing_label_is_reused_after_reboot(tmp_path):
    (tmp_path / "by-label").mkdir()
    (tmp_path / "by-label" / "fmscratch").touch()
    proc, log, _ = run_script(tmp_path, disks=8)
    assert proc.returncode == 0
    assert "reusing the existing volume" in proc.stdout
    assert "mdadm" not in log.read_text() and "mkfs" not in log.read_text()


@pytest.mark.parametrize("bad", ["scratch", "/", "/a b", "/x/../etc", "/tmp/", "/$(reboot)"])
def test_mount_point_validation(bad):
    with pytest.raises(
        FmValidationError, match=r"instance_store_mount_point must be an? (absolute|normalized absolute) path"
    ):
        nvme_raid_commands(bad)


@pytest.mark.parametrize("bad", ["", "a-label-too-long", "bad label", "x;y"])
def test_label_validation(bad):
    with pytest.raises(FmValidationError, match=r"label must be 1-12 letters"):
        nvme_raid_commands("/scratch", label=bad)
