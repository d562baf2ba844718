"""The client side of an FSx for Lustre file system: node-side mount steps and EKS static PersistentVolume attributes.

:func:`lustre_mount_commands` returns shell commands (for ``ec2.UserData.add_commands``, a Slurm construct's node
set-up or EKS pre-bootstrap user data) that install and run one idempotent script: install the Lustre client if it is
missing, configure LNet over EFA when the file system is EFA-enabled (per-instance-type number of EFA interfaces, a
systemd unit that redoes it at every boot), load the GPUDirect Storage prerequisites, add an ``/etc/fstab`` entry once,
and mount. Running it again (reboot, re-run of user data) changes nothing. The boot log says which path the node takes:
``LNet over EFA with N interfaces`` or ``LNet over TCP because ...``.

:func:`lustre_lnet_commands` runs the same script's LNet steps without mounting (for ParallelCluster, whose cookbook
mounts the file system after the queue's ``OnNodeStart`` custom action).

:func:`lustre_efa_interfaces` resolves how many EFA interfaces a client uses for LNet (the catalog default of the
instance type, an explicit ``efa_interfaces_for_lustre``, capped by the interfaces the node has); node groups pass the
same number to ``LustreFileSystemBase.register_efa_clients`` for the 1,024 EFA connection budget of a file system.

:class:`EksStaticVolume` holds what a static PersistentVolume for the FSx for Lustre CSI driver (``fsx.csi.aws.com``)
needs: the file system id (volume handle), DNS name, mount name and capacity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Token

from .._validate import check_bool, check_count, check_mount_point, check_str, check_str_sequence, known
from .._validate_ids import FSX_FILE_SYSTEM_ID, check_service_id
from ..catalog import InstanceSpec
from ..compute.user_data import install_script_commands
from ..errors import FmTypeError, FmValidationError, is_token
from .efa_limits import efa_maximum_interfaces

LUSTRE_MOUNT_SCRIPT_PATH = "/usr/local/sbin/fmconstructs-lustre-mount"
#: The oneshot unit that configures LNet over EFA at every boot, before remote file systems mount.
LNET_EFA_UNIT = "fmconstructs-lnet-efa.service"

#: The /etc/fstab mount options, after the FSx for Lustre User Guide "Mounting your Amazon FSx file system
#: automatically" (mount-fs-auto-mount-onreboot): ``defaults,relatime,flock,_netdev,x-systemd.automount,
#: x-systemd.requires=network.service`` ("these options ensure that the auto mounter does not run until the network
#: connectivity is online"; the same line in the Amazon File Cache User Guide's page of that name; the FSx copy in
#: awsdocs/amazon-fsx-lustre-user-guide doc_source/mount-fs-auto-mount-onreboot.md has ``noatime`` where the live
#: pages and "Mounting from an Amazon EC2 instance" have ``relatime``).
#: One deliberate difference: the unit the entry requires is ``network-online.target``, not ``network.service``.
#: ``network.service`` is the initscripts unit of Amazon Linux 2; Amazon Linux 2023 configures the network with
#: systemd-networkd (AL2023 User Guide "Networking service") and Ubuntu with netplan/systemd-networkd, so there is no
#: ``network.service`` to require, and systemd fails the start of a unit whose ``Requires=`` unit cannot be started
#: (systemd src/core/unit-dependency-atom.h, UNIT_ATOM_PULL_IN_START: "if that doesn't work the transaction fails"):
#: the automount would fail at the first access after every reboot. ``network-online.target`` exists on every systemd
#: distribution (systemd.special(7)) and is what the FSx guide's reason ("until the network connectivity is online")
#: names; ``_netdev`` already orders network mounts after it (systemd.mount(5)). EFA clients also get
#: ``x-systemd.requires=``/``x-systemd.after=`` :data:`LNET_EFA_UNIT` (the README of AWS's
#: configure-efa-fsx-lustre-client bundle does the same with its own unit).
DEFAULT_MOUNT_OPTIONS: tuple[str, ...] = (
    "defaults",
    "relatime",
    "flock",
    "_netdev",
    "x-systemd.automount",
    "x-systemd.requires=network-online.target",
)

#: The options of the one-off mount command in the FSx for Lustre User Guide "Mounting from an Amazon Elastic Compute
#: Cloud instance" (mounting-ec2-instance): ``sudo mount -t lustre -o relatime,flock <dns_name>@tcp:/<mountname> /fsx``.
MANUAL_MOUNT_OPTIONS = "relatime,flock"
DEFAULT_MOUNT_POINT = "/fsx"

#: The FSx for Lustre CSI driver name.
FSX_CSI_DRIVER = "fsx.csi.aws.com"

#: EFA interfaces a client of a type without a catalog default uses: FSx for Lustre User Guide "Configuring EFA
#: clients" (configure-efa-clients), Step 4 table: "Other instances with multiple network cards: 2", "with a single
#: network card: 1".
OTHER_MULTI_CARD_EFA_INTERFACES = 2
OTHER_SINGLE_CARD_EFA_INTERFACES = 1

_MOUNT_OPTION = re.compile(r"[A-Za-z0-9_.=:/+-]+")
_FAMILY = re.compile(r"[a-z][a-z0-9-]*")
# FSx API (botocore fsx service-2.json): DNSName "^((fs|fc)i?-[0-9a-f]{8,}\..{4,253})$" (16-275 characters),
# LustreFileSystemMountName "^([A-Za-z0-9_-]{1,8})$", FileSystemId "^(fs-[0-9a-f]{8,})$" (11-21 characters).
_DNS_NAME = re.compile(r"(fs|fc)i?-[0-9a-f]{8,}\..{4,253}")
_MOUNT_NAME = re.compile(r"[A-Za-z0-9_-]{1,8}")
#: The longest mount name (FSx API LustreFileSystemMountName, 1-8 characters): what a node set-up's size estimate
#: counts for a mount name known only at deploy time.
MOUNT_NAME_MAX_BYTES = 8
FILE_SYSTEM_ID_PATTERN = FSX_FILE_SYSTEM_ID.pattern

# The node-side script. Arguments: DNS_NAME MOUNT_NAME MOUNT_POINT MOUNT_OPTIONS EFA GDS(0|1) FAMILY, where EFA is
# "off" (the file system is not EFA-enabled), N (EFA interfaces for LNet; 0 keeps LNet on TCP) or "auto" (no instance
# spec: the FSx default for other types, 2 when the node has several EFA devices, else 1) and FAMILY the instance
# family ("-" when unknown). ``$0 --lnet EFA FAMILY`` is what the systemd unit runs at every boot; ``$0 --lnet-only
# EFA FAMILY`` (:func:`lustre_lnet_commands`) installs the client, configures LNet and installs that unit, and mounts
# nothing: for nodes whose file systems something else mounts (ParallelCluster's cookbook mounts ``SharedStorage``).
#
# Sources:
# - Lustre client packages and repositories: FSx for Lustre User Guide "Installing the Lustre client".
# - LNet over EFA (lnet_efa): mirrors the steps of AWS's configure-efa-fsx-lustre-client bundle, the one the FSx
#   for Lustre User Guide "Configuring EFA clients" (configure-efa-clients) links as
#   https://docs.aws.amazon.com/fsx/latest/LustreGuide/samples/configure-efa-fsx-lustre-client.zip; mirrored from
#   bin/configure-efa-fsx-lustre-client.py and setup.sh as fetched on 2026-08-20 (a copy vendored unmodified in
#   liadhweka/wsi-cloud@91dd06db scripts/vendor/configure-efa-fsx-lustre-client; the bundle has no version number
#   and its URL is unversioned, so the node cannot fetch it pinned and checksum-verified: see the module notes).
#   Mirrored: EFA devices are /sys/class/infiniband entries whose driver is "efa"; minimum EFA driver 2.12.1 and,
#   on p6-b200/p6e-gb200/p6-b300, kefalnd 1.1.1; on p6e-gb200 only the host-attached EFAs (PCIe link width other
#   than x16); p5/p5e/p5en keep one EFA per PCIe switch ("selecting 1 every 4" / "1 every 2"), done here by taking
#   evenly spaced devices in PCI order; ksocklnd credits 2560/1280/256 and ptlrpcd_per_cpt_max 32/0 by CPU count
#   (>= 64 / >= 32 CPUs) in modprobe.d; modprobe lnet, kefalnd ipif_name=<TCP interface>, ksocklnd; lnetctl lnet
#   configure; a tcp net on the primary interface; one efa net per interface with --peer-credits 32 (128 above 4
#   interfaces), added in parallel; discovery on; the UDSP rule preferring efa (an existing rule is tolerated);
#   modprobe lustre. Not mirrored: the per-interface CPU partition table (libcfs cpu_pattern, --cpt), which AWS's
#   script writes only for Lustre client builds with tag >= 24. The number of interfaces comes from the caller
#   (catalog default or efa_interfaces_for_lustre) instead of AWS's per-type table, so it matches the number
#   registered against the file system's 1,024 EFA connection budget.
# - The unit mirrors AWS's configure-efa-fsx-lustre-client.service (oneshot, RemainAfterExit, after
#   network-online.target) and is also ordered before remote-fs-pre.target; the fstab entry requires it, as the
#   bundle's README shows for its own unit.
# - Unlike AWS's script (which fails without --allow-no-efa), every EFA problem falls back to LNet over TCP with a
#   log line, so the node still mounts.
_LUSTRE_MOUNT_SCRIPT = r"""#!/bin/bash
# fmconstructs: install the Lustre client, configure LNet and mount an FSx for Lustre file system (idempotent).
# Usage: $0 DNS_NAME MOUNT_NAME MOUNT_POINT MOUNT_OPTIONS EFA(off|auto|N) GDS(0|1) FAMILY
#        $0 --lnet-only EFA FAMILY   (no mount)
#        $0 --lnet EFA FAMILY        (run by fmconstructs-lnet-efa.service at every boot)
set -euo pipefail
unit=fmconstructs-lnet-efa.service
root="${FMCONSTRUCTS_ROOT:-}" # tests only
log() { echo "fmconstructs-lustre: $*"; }
tcp() { log "LNet over TCP because $*"; }
older() { [ "$1" != "$2" ] && [ "$(printf '%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }

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

# LNet over EFA as AWS's configure-efa-fsx-lustre-client does it (see fmconstructs/storage/client.py).
lnet_efa() {
  local want="$1" family="$2" d v eth cpus credits=256 ptl=0 peer=32 current wanted n i failed=0
  local -a found=() devices=() picked=() pids=()
  case "$want" in
    off) tcp "the file system is not EFA-enabled"; return 0 ;;
    0) tcp "this node group uses 0 EFA interfaces for Lustre (efa_interfaces_for_lustre)"; return 0 ;;
  esac
  for d in "$root"/sys/class/infiniband/*; do
    [ -e "$d/device/driver" ] || continue
    [ "$(basename "$(readlink -f "$d/device/driver")")" = efa ] || continue
    if [ "$family" = p6e-gb200 ] && [ "$(cat "$d/device/current_link_width" 2>/dev/null)" = 16 ]; then continue; fi
    found+=("$(readlink -f "$d/device") ${d##*/}")
  done
  [ "${#found[@]}" -gt 0 ] || { tcp "this node has no EFA device"; return 0; }
  mapfile -t devices < <(printf '%s\n' "${found[@]}" | sort | awk '{print $2}')
  modinfo kefalnd >/dev/null 2>&1 || { tcp "this Lustre client has no kefalnd module"; return 0; }
  v=$(modinfo -F version efa 2>/dev/null | tr -cd '0-9.')
  if older "$v" 2.12.1; then tcp "the EFA driver (${v:-none}) is older than 2.12.1"; return 0; fi
  case "$family" in
    p6-b200 | p6e-gb200 | p6-b300)
      v=$(modinfo -F version kefalnd | tr -cd '0-9.')
      if older "$v" 1.1.1; then tcp "kefalnd ${v:-?} is older than 1.1.1, which $family needs"; return 0; fi
      ;;
  esac
  n=${#devices[@]}
  if [ "$want" = auto ]; then want=1; [ "$n" -gt 1 ] && want=2; fi
  if [ "$want" -gt "$n" ]; then log "$want EFA interfaces wanted for LNet, $n found"; want=$n; fi
  for ((i = 0; i < want; i++)); do picked+=("${devices[$((i * n / want))]}"); done
  current=$({ lnetctl net show --net efa 2>/dev/null || true; } | awk '$1 == "0:" {print $2}' | sort | xargs)
  wanted=$(printf '%s\n' "${picked[@]}" | sort | xargs)
  if [ "$current" = "$wanted" ]; then
    log "LNet over EFA with $want interfaces (already configured): $wanted"; return 0
  fi
  cpus=$(nproc)
  [ "$cpus" -ge 32 ] && credits=1280
  [ "$cpus" -ge 64 ] && credits=2560 && ptl=32
  [ "$want" -gt 4 ] && peer=128
  printf 'options ksocklnd credits=%s\noptions ptlrpc ptlrpcd_per_cpt_max=%s\n' "$credits" "$ptl" \
    > "$root/etc/modprobe.d/fmconstructs-lustre.conf"
  eth=$(ip -o -4 route show to default | awk '{print $5; exit}')
  if ! { modprobe lnet && modprobe kefalnd ipif_name="$eth" && modprobe ksocklnd && lnetctl lnet configure; }; then
    tcp "LNet or kefalnd did not load"; return 0
  fi
  { lnetctl net show --net tcp 2>/dev/null || true; } | grep -q "net type: tcp" || lnetctl net add --net tcp --if "$eth"
  for d in $current; do lnetctl net del --net efa --if "$d" || true; done
  for d in "${picked[@]}"; do
    lnetctl net add --net efa --if "$d" --peer-credits "$peer" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
  if [ "$failed" = "$want" ]; then tcp "lnetctl could not add any EFA interface (see dmesg)"; return 0; fi
  lnetctl set discovery 1
  lnetctl udsp add --src efa --priority 0 2>/dev/null || true # fails when the rule exists; AWS's script allows it
  modprobe lustre
  [ "$failed" = 0 ] || log "lnetctl could not add $failed of $want EFA interfaces (see dmesg)"
  log "LNet over EFA with $((want - failed)) interfaces: $wanted"
}

install_lnet_unit() {
  local file=$root/etc/systemd/system/$unit body
  body="[Unit]
Description=fmconstructs: LNet over EFA for FSx for Lustre
Wants=network-online.target remote-fs-pre.target
After=network-online.target
Before=remote-fs-pre.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=$(readlink -f "$0") --lnet $1 $2
[Install]
WantedBy=multi-user.target remote-fs.target"
  if [ "$(cat "$file" 2>/dev/null)" != "$body" ]; then
    echo "$body" > "$file"
    systemctl daemon-reload
  fi
  systemctl enable "$unit"
}

configure_lnet() {
  install_lustre_client
  lnet_efa "$1" "$2"
  case "$1" in
    off | 0) ;;
    *) install_lnet_unit "$1" "$2" ;;
  esac
}

if [ "${1:-}" = --lnet ]; then
  lnet_efa "$2" "$3"
  exit 0
fi
if [ "${1:-}" = --lnet-only ]; then
  configure_lnet "$2" "${3:--}"
  exit 0
fi
dns_name="$1"
mount_name="$2"
mount_point="$3"
mount_options="$4"
efa="$5"
gds="$6"
family="${7:--}"
configure_lnet "$efa" "$family"
case "$efa" in
  off | 0) ;;
  *) mount_options="$mount_options,x-systemd.requires=$unit,x-systemd.after=$unit" ;;
esac
if [ "$gds" = "1" ]; then
  # GPUDirect Storage: the NVIDIA driver and the nvidia-fs kernel module (NVIDIA GDS package) on an EFA client.
  if modinfo nvidia_fs >/dev/null 2>&1; then
    modprobe nvidia_fs
    log "nvidia_fs loaded (GPUDirect Storage)"
  else
    log "nvidia_fs is not installed; GPUDirect Storage needs the NVIDIA GDS package in the image"
  fi
fi
mkdir -p "$mount_point"
if ! awk -v mp="$mount_point" '$2 == mp && $3 == "lustre" {found=1} END {exit !found}' "$root/etc/fstab"; then
  echo "${dns_name}@tcp:/${mount_name} ${mount_point} lustre ${mount_options} 0 0" >> "$root/etc/fstab"
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


# Why the script mirrors AWS's set-up instead of running it: the FSx for Lustre User Guide ("Configuring EFA clients")
# hands the set-up out only as https://docs.aws.amazon.com/fsx/latest/LustreGuide/samples/configure-efa-fsx-lustre-
# client.zip, an unversioned URL that AWS republishes in place (its per-type table grew p6-b300 between page
# versions) and for which AWS publishes no checksum; pinning a sha256 would break every node boot the day AWS updates
# the zip, and not pinning it runs unreviewed code as root on every node. The script also needs python3 and picks
# its own number of interfaces per type, which the 1,024 EFA connection budget below must know at synthesis.


def _check_known_count(parameter: str, value: object) -> int | None:
    """None, or a non-negative whole number known at synthesis (it is written into the node's user data)."""
    if value is None:
        return None
    checked = check_count(parameter, value)
    if is_token(checked):
        raise FmValidationError(
            parameter, value, "a number known at synthesis (it is written into the node-side set-up)"
        )
    return int(checked)


def check_dns_name(value: object) -> str:
    checked: str = check_str(
        "dns_name",
        value,
        pattern=_DNS_NAME,
        allowed="the file system's DNS name (FSx API DNSName, e.g. 'fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com')",
        min_length=16,
        max_length=275,
    )
    return checked


def check_mount_name(value: object) -> str:
    checked: str = check_str(
        "mount_name",
        value,
        pattern=_MOUNT_NAME,
        allowed="the file system's mount name (FSx API LustreFileSystemMountName: 1-8 of A-Z a-z 0-9 _ -)",
    )
    return checked


def _check_mount_point(value: object) -> str:
    checked: str = check_mount_point("mount_point", value, allow_token=True)  # the one rule (fmconstructs._validate)
    return checked


def _check_mount_options(value: object) -> tuple[str, ...]:
    allowed = "a mount option without spaces, commas or quotes, e.g. 'flock' or 'x-systemd.automount'"
    options = check_str_sequence(
        "mount_options",
        value,
        item=lambda name, option: check_str(name, option, pattern=_MOUNT_OPTION, allowed=allowed),
        min_items=1,
    )
    return tuple(options)


def _sh_quote(value: str) -> str:
    """Single-quote ``value`` for the shell (tokens stay inside the quotes and resolve there)."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def lustre_mount_command(
    *, dns_name: str, mount_name: str, mount_point: str = DEFAULT_MOUNT_POINT, mount_options: str = MANUAL_MOUNT_OPTIONS
) -> str:
    """The command line an operator runs on a client that has the Lustre client installed (FSx for Lustre User Guide
    "Mounting from an Amazon Elastic Compute Cloud instance": ``sudo mount -t lustre -o relatime,flock
    <dns_name>@tcp:/<mountname> /fsx``), with ``mkdir -p`` of the mount point first.

    ``dns_name`` and ``mount_name`` may be tokens (a ``CfnOutput`` resolves them). EFA-enabled file systems mount
    over TCP with this line unless LNet over EFA was set up first (see :func:`lustre_mount_commands`).
    """
    dns = check_dns_name(dns_name)
    name = check_mount_name(mount_name)
    point = _check_mount_point(mount_point)
    options = check_str(
        "mount_options",
        mount_options,
        pattern=re.compile(r"[A-Za-z0-9_.=:/+-]+(,[A-Za-z0-9_.=:/+-]+)*"),
        allowed="comma-separated mount options such as 'relatime,flock'",
    )
    return f"sudo mkdir -p {point} && sudo mount -t lustre -o {options} {dns}@tcp:/{name} {point}"


def lustre_efa_interfaces(
    *,
    efa_enabled: bool,
    instance_spec: InstanceSpec | None = None,
    efa_interfaces_for_lustre: int | None = None,
    node_efa_interfaces: int | None = None,
    instance_type: str | None = None,
) -> int | None:
    """How many EFA interfaces a client uses for LNet: 0 means LNet over TCP, None "decided on the node".

    - ``efa_enabled``: whether the file system is EFA-enabled (False: 0, the client mounts over TCP).
    - ``efa_interfaces_for_lustre``: an explicit count (0 keeps LNet on TCP); at most the EFA interfaces of the
      instance type (``instance_spec.maximum_efa_interfaces``; for a type the catalog does not hold, given as
      ``instance_type``, :data:`~fmconstructs.storage.efa_limits.EFA_MAXIMUM_INTERFACES` when it lists the type) and
      of the node (``node_efa_interfaces``).
    - Default: ``instance_spec.fsx_lustre_efa_interfaces`` (FSx for Lustre User Guide "Configuring EFA clients":
      8 on p5, p5e, p5en, p6-b200, p6e-gb200; 16 on p6-b300), for other types the guide's 2 (several network cards)
      or 1, capped by ``node_efa_interfaces`` (the EFA interfaces the node's launch template attaches). Without an
      instance spec: None (the node uses 2 when it has several EFA devices, else 1, and the count is unknown here).

    Each interface counts as one of the 1,024 EFA connections a file system accepts across its clients.
    """
    efa_enabled = check_bool("efa_enabled", efa_enabled)
    if instance_spec is not None and not isinstance(instance_spec, InstanceSpec):
        raise FmTypeError("instance_spec", instance_spec, "an InstanceSpec (fmconstructs.get_instance_spec)")
    node_efa_interfaces = _check_known_count("node_efa_interfaces", node_efa_interfaces)
    efa_interfaces_for_lustre = _check_known_count("efa_interfaces_for_lustre", efa_interfaces_for_lustre)
    if instance_type is not None:
        instance_type = check_str("instance_type", instance_type)
    caps: list[tuple[int, str]] = []
    if instance_spec is not None:
        caps.append((instance_spec.maximum_efa_interfaces, f"the EFA interfaces of {instance_spec.instance_type}"))
    elif instance_type is not None and known(instance_type):
        maximum = efa_maximum_interfaces(instance_type)
        if maximum is not None:
            caps.append((maximum, f"the EFA interfaces of {instance_type} (EC2 MaximumEfaInterfaces)"))
    if node_efa_interfaces is not None:
        caps.append((node_efa_interfaces, "the EFA interfaces the node attaches (node_efa_interfaces)"))
    if efa_interfaces_for_lustre is not None:
        for cap, what in caps:
            if efa_interfaces_for_lustre > cap:
                raise FmValidationError(
                    "efa_interfaces_for_lustre", efa_interfaces_for_lustre, f"at most {cap}, {what}"
                )
    if not efa_enabled:
        return 0
    if efa_interfaces_for_lustre is not None:
        return efa_interfaces_for_lustre
    if instance_spec is None:
        return 0 if node_efa_interfaces == 0 else None
    default = instance_spec.fsx_lustre_efa_interfaces
    if default is None:
        several = instance_spec.network_card_count > 1
        default = OTHER_MULTI_CARD_EFA_INTERFACES if several else OTHER_SINGLE_CARD_EFA_INTERFACES
    return min([default, *(cap for cap, _ in caps)])


def lustre_mount_commands(
    *,
    dns_name: str,
    mount_name: str,
    mount_point: str = DEFAULT_MOUNT_POINT,
    mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
    efa_enabled: bool = False,
    gpudirect_storage: bool | None = None,
    instance_spec: InstanceSpec | None = None,
    efa_interfaces_for_lustre: int | None = None,
    node_efa_interfaces: int | None = None,
) -> list[str]:
    """Shell commands that install the mount script and run it (root, idempotent; for user data or pre-bootstrap).

    ``dns_name`` and ``mount_name`` may be tokens (they become ``Fn::Join`` parts of the user data).
    ``mount_point`` (default ``/fsx``), ``mount_options`` (default :data:`DEFAULT_MOUNT_OPTIONS`), ``efa_enabled``
    (the file system is EFA-enabled: configure LNet over EFA; default False).

    LNet over EFA uses :func:`lustre_efa_interfaces` interfaces, from ``instance_spec`` (the node's catalog entry;
    default None: the node picks 2 or 1), ``efa_interfaces_for_lustre`` (default: the type's FSx default; 0 keeps
    LNet on TCP) and ``node_efa_interfaces`` (the EFA interfaces the node attaches, a cap; default: the type's).
    ``gpudirect_storage`` (load the GDS prerequisites) defaults to True when the node uses EFA for Lustre.
    """
    dns_name = check_dns_name(dns_name)
    mount_name = check_mount_name(mount_name)
    mount_point = _check_mount_point(mount_point)
    options = _check_mount_options(mount_options)
    efa_enabled = check_bool("efa_enabled", efa_enabled)
    if gpudirect_storage is not None:
        check_bool("gpudirect_storage", gpudirect_storage)
    count = lustre_efa_interfaces(
        efa_enabled=efa_enabled,
        instance_spec=instance_spec,
        efa_interfaces_for_lustre=efa_interfaces_for_lustre,
        node_efa_interfaces=node_efa_interfaces,
    )
    gds = count != 0 if gpudirect_storage is None else gpudirect_storage
    if gds and not efa_enabled:
        raise FmValidationError("gpudirect_storage", gds, "False unless the file system is EFA-enabled")
    if gds and count == 0:
        raise FmValidationError("gpudirect_storage", gds, "False when the node mounts over TCP (0 EFA interfaces)")
    efa = "off" if not efa_enabled else "auto" if count is None else str(count)
    family = instance_spec.family if instance_spec is not None else "-"
    if not _FAMILY.fullmatch(family):
        family = "-"
    return install_script_commands(
        LUSTRE_MOUNT_SCRIPT_PATH,
        _LUSTRE_MOUNT_SCRIPT,
        _sh_quote(dns_name),
        _sh_quote(mount_name),
        _sh_quote(mount_point),
        _sh_quote(",".join(options)),
        efa,
        str(int(gds)),
        family,
    )


def lustre_lnet_commands(
    *,
    instance_spec: InstanceSpec | None,
    efa_interfaces_for_lustre: int | None = None,
    node_efa_interfaces: int | None = None,
) -> list[str]:
    """Shell commands that configure a node's Lustre client for an EFA-enabled file system and mount nothing (root,
    idempotent): install the Lustre client if it is missing, configure LNet over EFA on
    :func:`lustre_efa_interfaces` interfaces, and install the systemd unit that redoes it at every boot, before remote
    file systems mount. The same script and steps as :func:`lustre_mount_commands` (its ``--lnet-only`` mode).

    For nodes whose file system something else mounts after these commands ran: ParallelCluster mounts its
    ``SharedStorage`` itself, and its User Guide tutorial "Creating a cluster with an EFA-enabled FSx Lustre"
    (tutorial-efa-enabled-fsx-lustre) configures the client for EFA in the queue's ``OnNodeStart`` custom action,
    which runs before that mount. The mount line stays ``<dns name>@tcp:/<mount name>``: once LNet has an ``efa``
    network, discovery and the UDSP rule send the file system's traffic over EFA (AWS's
    configure-efa-fsx-lustre-client does the same and mounts with the same line).

    ``instance_spec`` (the node's catalog entry; None: the node picks 2 EFA interfaces when it has several EFA
    devices, else 1), ``efa_interfaces_for_lustre`` (default: the type's FSx default; 0 keeps LNet on TCP) and
    ``node_efa_interfaces`` (the EFA interfaces the node attaches, a cap) as for :func:`lustre_mount_commands`.
    Register the node group with ``LustreFileSystemBase.register_efa_clients`` with the same count. GPUDirect
    Storage's ``nvidia_fs`` is not loaded here (the mount commands do it).
    """
    count = lustre_efa_interfaces(
        efa_enabled=True,
        instance_spec=instance_spec,
        efa_interfaces_for_lustre=efa_interfaces_for_lustre,
        node_efa_interfaces=node_efa_interfaces,
    )
    efa = "auto" if count is None else str(count)
    family = instance_spec.family if instance_spec is not None else "-"
    if not _FAMILY.fullmatch(family):
        family = "-"
    return install_script_commands(LUSTRE_MOUNT_SCRIPT_PATH, _LUSTRE_MOUNT_SCRIPT, "--lnet-only", efa, family)


@dataclass(frozen=True)
class EksStaticVolume:
    """What a static PersistentVolume for the FSx for Lustre CSI driver needs (values may be tokens)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    storage_capacity_gib: int
    mount_options: tuple[str, ...] = ("flock",)

    def __post_init__(self) -> None:
        check_service_id("file_system_id", self.file_system_id, FSX_FILE_SYSTEM_ID)
        check_dns_name(self.dns_name)
        check_mount_name(self.mount_name)
        check_count("storage_capacity_gib", self.storage_capacity_gib, minimum=1)
        # A frozen dataclass: normalise a list to a tuple in place.
        object.__setattr__(self, "mount_options", _check_mount_options(self.mount_options))

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
        """The PersistentVolume capacity, e.g. ``4800Gi`` (a deploy-time capacity resolves in the manifest)."""
        capacity = self.storage_capacity_gib
        text = Token.as_string(capacity) if is_token(capacity) else str(int(capacity))
        return f"{text}Gi"

    def to_manifest(
        self,
        name: str,
        *,
        storage_class_name: str = "",
        access_modes: Sequence[str] = ("ReadWriteMany",),
        reclaim_policy: str = "Retain",
    ) -> dict[str, Any]:
        """A ``v1/PersistentVolume`` manifest (for ``cluster.add_manifest``); default reclaim policy Retain."""
        check_str("name", name, allowed="a PersistentVolume name (a non-empty str)", min_length=1)
        check_str("storage_class_name", storage_class_name)
        modes = check_str_sequence("access_modes", access_modes, min_items=1)
        check_str(
            "reclaim_policy",
            reclaim_policy,
            pattern=re.compile("Retain|Delete|Recycle"),
            allowed="'Retain', 'Delete' or 'Recycle' (Kubernetes persistentVolumeReclaimPolicy)",
        )
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": self.capacity},
                "volumeMode": "Filesystem",
                "accessModes": list(modes),
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
