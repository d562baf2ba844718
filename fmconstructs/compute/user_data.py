"""Node-side shell steps shared by every GPU node: the NVMe instance-store RAID0 volume."""

from __future__ import annotations

import re

from .._validate import check_mount_point, check_str
from ..bootstrap.archive import embedded_files_commands
from ..bootstrap.size import MAX_USER_DATA_BYTES as _MAX_USER_DATA_BYTES
from ..bootstrap.size import REFERENCE_BYTES, check_user_data_size, estimated_size_bytes
from ..errors import FmValidationError, is_token

__all__ = [
    "MAX_USER_DATA_BYTES",
    "NVME_RAID_SCRIPT_PATH",
    "check_user_data_size",
    "embedded_files_commands",
    "estimated_size_bytes",
    "install_script_commands",
    "nvme_raid_commands",
    "nvme_raid_script",
]

# Whole-string patterns (fullmatch): a trailing newline never passes into the node script.
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,12}")  # XFS labels hold at most 12 characters

NVME_RAID_SCRIPT_PATH = "/usr/local/sbin/fmconstructs-nvme-raid"

# The script is idempotent: on a reboot the array is already assembled and labelled, so it only mounts it; after a
# stop/start the instance store is blank again and it rebuilds the array. Instance-store disks are found by their
# NVMe model string ("Amazon EC2 NVMe Instance Storage", EC2 User Guide "ssd-instance-store"), so EBS volumes are
# never touched.
_NVME_RAID_SCRIPT = r"""#!/bin/bash
# fmconstructs: assemble the NVMe instance-store disks into one RAID0 XFS volume. Usage: $0 MOUNT_POINT LABEL
set -euo pipefail
mount_point="$1"
label="$2"
# Overridable for tests only.
fstab="${FMCONSTRUCTS_FSTAB:-/etc/fstab}"
by_label="${FMCONSTRUCTS_BY_LABEL_DIR:-/dev/disk/by-label}"
if mountpoint -q "$mount_point"; then
  echo "fmconstructs-nvme-raid: $mount_point is already mounted"
  exit 0
fi
mapfile -t disks < <(lsblk --nodeps --paths --noheadings --output NAME,MODEL \
  | awk '/Amazon EC2 NVMe Instance Storage/ {print $1}')
if [ "${#disks[@]}" -eq 0 ]; then
  echo "fmconstructs-nvme-raid: no NVMe instance-store disks found, nothing to do"
  exit 0
fi
mkdir -p "$mount_point"
if [ -e "$by_label/$label" ]; then
  echo "fmconstructs-nvme-raid: reusing the existing volume labelled $label"
elif [ "${#disks[@]}" -eq 1 ]; then
  mkfs.xfs -f -L "$label" "${disks[0]}"
else
  if ! command -v mdadm >/dev/null 2>&1; then
    dnf install -y mdadm || yum install -y mdadm || (apt-get update && apt-get install -y mdadm)
  fi
  mdadm --create "/dev/md/$label" --level=0 --raid-devices="${#disks[@]}" --name="$label" --force --run "${disks[@]}"
  udevadm settle
  mkfs.xfs -f -L "$label" "/dev/md/$label"
fi
udevadm settle
if ! grep -q "^LABEL=$label " "$fstab"; then
  echo "LABEL=$label $mount_point xfs defaults,noatime,nofail,x-systemd.device-timeout=10s 0 2" >> "$fstab"
fi
mount "$mount_point"
chmod 1777 "$mount_point"
echo "fmconstructs-nvme-raid: ${#disks[@]} disk(s) mounted at $mount_point"
"""


def nvme_raid_commands(mount_point: str = "/scratch", *, label: str = "fmscratch") -> list[str]:
    """Shell commands that install and run the NVMe RAID0 script, mounting the volume at ``mount_point``."""
    check_str("instance_store_mount_point", mount_point)
    check_str("label", label)
    if is_token(mount_point) or is_token(label):
        raise FmValidationError(
            "instance_store_mount_point" if is_token(mount_point) else "label",
            mount_point if is_token(mount_point) else label,
            "known at synth time (it is written into the node script)",
        )
    check_mount_point("instance_store_mount_point", mount_point)
    if not _LABEL.fullmatch(label):
        raise FmValidationError("label", label, "1-12 letters, digits, '-' or '_' (an XFS label)")
    return install_script_commands(NVME_RAID_SCRIPT_PATH, _NVME_RAID_SCRIPT, mount_point, label)


def nvme_raid_script() -> str:
    """The script body, for tests and for users who install it themselves."""
    return _NVME_RAID_SCRIPT


# EC2's 16 KB limit, the size estimate and the compressed files in user data live with the node bootstrap (the one
# module that renders node-side delivery); re-exported here for callers of fmconstructs < 0.3.
MAX_USER_DATA_BYTES = _MAX_USER_DATA_BYTES
_REFERENCE_BYTES = REFERENCE_BYTES


def install_script_commands(path: str, script: str, *args: str) -> list[str]:
    """Install ``script`` at ``path`` (mode 0755, compressed in the user data) and run it with ``args``."""
    name = path.rsplit("/", 1)[-1]
    return [*embedded_files_commands({path: (script, 0o755)}, name=name), " ".join([path, *args])]
