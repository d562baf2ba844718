"""The client side of an FSx for Lustre file system: node-side mount steps and EKS static PersistentVolume attributes.

:func:`lustre_mount_commands` returns shell commands (for ``ec2.UserData.add_commands`` or a Slurm construct's node
set-up) that install and run one idempotent script: install the Lustre client if it is missing, configure LNet over
EFA and load the GPUDirect Storage prerequisites when the file system is EFA-enabled, add an ``/etc/fstab`` entry once,
and mount. Running it again (reboot, re-run of user data) changes nothing.

:class:`EksStaticVolume` holds what a static PersistentVolume for the FSx for Lustre CSI driver (``fsx.csi.aws.com``)
needs: the file system id (volume handle), DNS name, mount name and capacity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..compute.user_data import install_script_commands
from ..errors import FmValidationError

LUSTRE_MOUNT_SCRIPT_PATH = "/usr/local/sbin/fmconstructs-lustre-mount"

#: The mount options the FSx for Lustre User Guide gives for /etc/fstab entries.
DEFAULT_MOUNT_OPTIONS: tuple[str, ...] = (
    "defaults",
    "relatime",
    "flock",
    "_netdev",
    "x-systemd.automount",
    "x-systemd.requires=network.service",
)

#: The FSx for Lustre CSI driver name.
FSX_CSI_DRIVER = "fsx.csi.aws.com"

_MOUNT_POINT = re.compile(r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$")
_MOUNT_OPTION = re.compile(r"^[A-Za-z0-9_.=:/+-]+$")

# Arguments: DNS_NAME MOUNT_NAME MOUNT_POINT MOUNT_OPTIONS EFA(0|1) GDS(0|1). The Lustre client packages and
# repositories are those of the FSx for Lustre User Guide "Installing the Lustre client". LNet over EFA uses the
# kefalnd LND of the FSx Lustre 2.15 client; when the node has no EFA device or the client lacks kefalnd, the script
# logs it and mounts over TCP rather than failing the node.
_LUSTRE_MOUNT_SCRIPT = r"""#!/bin/bash
# fmconstructs: install the Lustre client and mount an FSx for Lustre file system (idempotent).
# Usage: $0 DNS_NAME MOUNT_NAME MOUNT_POINT MOUNT_OPTIONS EFA(0|1) GDS(0|1)
set -euo pipefail
dns_name="$1"
mount_name="$2"
mount_point="$3"
mount_options="$4"
efa="$5"
gds="$6"
log() { echo "fmconstructs-lustre-mount: $*"; }

install_lustre_client() {
  local keys_url=https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com
  local repo_url=https://fsx-lustre-client-repo.s3.amazonaws.com
  local ubuntu_keyring=/usr/share/keyrings/fsx-ubuntu-public-key.gpg
  if command -v mount.lustre >/dev/null 2>&1 && modinfo lustre >/dev/null 2>&1; then
    log "Lustre client already installed"
    return 0
  fi
  # shellcheck disable=SC1091
  . /etc/os-release
  case "$ID" in
    amzn)
      if [ "${VERSION_ID%%.*}" = "2" ]; then
        amazon-linux-extras install -y lustre
      else
        dnf install -y lustre-client
      fi
      ;;
    ubuntu)
      install -d -m 0755 /usr/share/keyrings
      curl -fsSL "$keys_url/fsx-ubuntu-public-key.asc" | gpg --dearmor --yes -o "$ubuntu_keyring"
      echo "deb [signed-by=$ubuntu_keyring] $repo_url/ubuntu ${VERSION_CODENAME} main" \
        > /etc/apt/sources.list.d/fsxlustreclientrepo.list
      apt-get update
      DEBIAN_FRONTEND=noninteractive apt-get install -y "lustre-client-modules-$(uname -r)"
      ;;
    rhel | rocky | centos | almalinux)
      curl -fsSL "$keys_url/fsx-rpm-public-key.asc" -o /tmp/fsx-rpm-public-key.asc
      rpm --import /tmp/fsx-rpm-public-key.asc
      curl -fsSL "$repo_url/el/${VERSION_ID%%.*}/fsx-lustre-client.repo" -o /etc/yum.repos.d/aws-fsx.repo
      yum install -y kmod-lustre-client lustre-client
      ;;
    *)
      log "no Lustre client install recipe for $ID; bake the client into the image"
      exit 1
      ;;
  esac
}

configure_lnet_efa() {
  local devices
  devices=$(ls /sys/class/infiniband 2>/dev/null || true)
  if [ -z "$devices" ]; then
    log "no EFA device on this node; LNet stays on TCP"
    return 0
  fi
  if ! modinfo kefalnd >/dev/null 2>&1; then
    log "this Lustre client has no kefalnd (LNet over EFA); LNet stays on TCP"
    return 0
  fi
  modprobe lnet
  lnetctl lnet configure
  if lnetctl net show --net efa 2>/dev/null | grep -q "net type: efa"; then
    log "LNet over EFA already configured"
    return 0
  fi
  modprobe kefalnd
  local primary
  primary=$(ip -o -4 route show to default | awk '{print $5; exit}')
  if ! lnetctl net show --net tcp 2>/dev/null | grep -q "net type: tcp"; then
    lnetctl net add --net tcp --if "$primary"
  fi
  for device in $devices; do
    lnetctl net add --net efa --if "$device" --peer-credits 32
  done
  lnetctl set discovery 1
  lnetctl udsp add --src efa --priority 0
  log "LNet over EFA configured on: $(echo "$devices" | tr '\n' ' ')"
}

load_gds_prerequisites() {
  # GPUDirect Storage: the NVIDIA driver and the nvidia-fs kernel module (NVIDIA GDS package) on an EFA-enabled client.
  if modinfo nvidia_fs >/dev/null 2>&1; then
    modprobe nvidia_fs
    log "nvidia_fs loaded (GPUDirect Storage)"
  else
    log "nvidia_fs is not installed; GPUDirect Storage needs the NVIDIA GDS package in the image"
  fi
}

install_lustre_client
if [ "$efa" = "1" ]; then
  configure_lnet_efa
fi
if [ "$gds" = "1" ]; then
  load_gds_prerequisites
fi
mkdir -p "$mount_point"
if ! awk -v mp="$mount_point" '$2 == mp && $3 == "lustre" {found=1} END {exit !found}' /etc/fstab; then
  echo "${dns_name}@tcp:/${mount_name} ${mount_point} lustre ${mount_options} 0 0" >> /etc/fstab
  systemctl daemon-reload || true
fi
if mountpoint -q "$mount_point"; then
  log "$mount_point is already mounted"
else
  mount "$mount_point"
  log "mounted ${dns_name}@tcp:/${mount_name} at $mount_point"
fi
"""


def lustre_mount_script() -> str:
    """The mount script body, for tests and for users who bake it into an image."""
    return _LUSTRE_MOUNT_SCRIPT


def lustre_mount_commands(
    *,
    dns_name: str,
    mount_name: str,
    mount_point: str = "/fsx",
    mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
    efa_enabled: bool = False,
    gpudirect_storage: bool | None = None,
) -> list[str]:
    """Shell commands that install the mount script and run it.

    ``dns_name`` and ``mount_name`` may be tokens (they become ``Fn::Join`` parts of the user data).
    ``mount_point`` (default ``/fsx``), ``mount_options`` (default :data:`DEFAULT_MOUNT_OPTIONS`), ``efa_enabled``
    (configure LNet over EFA; default False), ``gpudirect_storage`` (load the GDS prerequisites; default: same as
    ``efa_enabled``, GDS on FSx needs an EFA-enabled file system).
    """
    if not _MOUNT_POINT.match(mount_point) or ".." in mount_point.split("/"):
        raise FmValidationError("mount_point", mount_point, "an absolute path other than '/' such as '/fsx'")
    options = list(mount_options)
    if not options or not all(_MOUNT_OPTION.match(o) for o in options):
        raise FmValidationError(
            "mount_options", mount_options, "a non-empty list of options without spaces, commas or quotes"
        )
    gds = efa_enabled if gpudirect_storage is None else gpudirect_storage
    if gds and not efa_enabled:
        raise FmValidationError("gpudirect_storage", gds, "False unless the file system is EFA-enabled")
    return install_script_commands(
        LUSTRE_MOUNT_SCRIPT_PATH,
        _LUSTRE_MOUNT_SCRIPT,
        f"'{dns_name}'",
        f"'{mount_name}'",
        f"'{mount_point}'",
        f"'{','.join(options)}'",
        str(int(efa_enabled)),
        str(int(gds)),
    )


@dataclass(frozen=True)
class EksStaticVolume:
    """What a static PersistentVolume for the FSx for Lustre CSI driver needs (values may be tokens)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    storage_capacity_gib: int
    mount_options: tuple[str, ...] = ("flock",)

    @property
    def driver(self) -> str:
        return FSX_CSI_DRIVER

    @property
    def volume_handle(self) -> str:
        """The CSI volume handle: the file system id."""
        return self.file_system_id

    @property
    def volume_attributes(self) -> dict[str, str]:
        """The CSI ``volumeAttributes`` the driver reads."""
        return {"dnsname": self.dns_name, "mountname": self.mount_name}

    @property
    def capacity(self) -> str:
        """The PersistentVolume capacity, e.g. ``4800Gi``."""
        return f"{self.storage_capacity_gib}Gi"

    def to_manifest(
        self,
        name: str,
        *,
        storage_class_name: str = "",
        access_modes: Sequence[str] = ("ReadWriteMany",),
        reclaim_policy: str = "Retain",
    ) -> dict[str, Any]:
        """A ``v1/PersistentVolume`` manifest (for ``cluster.add_manifest``); default reclaim policy Retain."""
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": self.capacity},
                "volumeMode": "Filesystem",
                "accessModes": list(access_modes),
                "mountOptions": list(self.mount_options),
                "persistentVolumeReclaimPolicy": reclaim_policy,
                "storageClassName": storage_class_name,
                "csi": {
                    "driver": self.driver,
                    "volumeHandle": self.volume_handle,
                    "volumeAttributes": self.volume_attributes,
                },
            },
        }
