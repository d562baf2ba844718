"""Client side: node-side mount commands (content, idempotence guards, bash syntax), LNet over EFA as the FSx for Lustre
User Guide "Configuring EFA clients" (configure-efa-clients) and AWS's configure-efa-fsx-lustre-client set it up (run
against stub commands and a fake /sys), and EKS static volume attributes."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace

import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs import EfaSecurityGroup, FmValidationError, get_instance_spec
from fmconstructs.storage import (
    DEFAULT_MOUNT_OPTIONS,
    FSX_CSI_DRIVER,
    LNET_EFA_UNIT,
    LUSTRE_MOUNT_SCRIPT_PATH,
    EksStaticVolume,
    LustreFileSystem,
    LustreMetadataConfiguration,
    lustre_efa_interfaces,
    lustre_mount_commands,
    lustre_mount_script,
)
from fmconstructs.storage.client import lustre_lnet_commands

from tests.conftest import embedded_files, new_scene

DNS = "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"


def _bash_n(text: str, tmp_path) -> None:
    script = tmp_path / "user-data.sh"
    script.write_text("#!/bin/bash\n" + text + "\n")
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.parametrize("efa", [False, True])
def test_rendered_commands_are_valid_bash(efa, tmp_path):
    _bash_n("\n".join(lustre_mount_commands(dns_name=DNS, mount_name="abcdefgh", efa_enabled=efa)), tmp_path)


def test_script_is_valid_bash(tmp_path):
    _bash_n(lustre_mount_script(), tmp_path)


def test_script_passes_shellcheck(tmp_path):
    assert shutil.which("shellcheck"), "shellcheck is missing: `make test` installs it"
    script = tmp_path / "mount.sh"
    script.write_text(lustre_mount_script())
    subprocess.run(["shellcheck", "-S", "warning", str(script)], check=True)


def test_commands_install_then_run_the_script():
    commands = lustre_mount_commands(dns_name=DNS, mount_name="abcdefgh")
    # The script travels compressed (EC2 user data is limited to 16 KB) and is unpacked to its path, mode 0755.
    assert embedded_files("\n".join(commands)) == {LUSTRE_MOUNT_SCRIPT_PATH: lustre_mount_script()}
    assert commands[-1] == (
        f"{LUSTRE_MOUNT_SCRIPT_PATH} '{DNS}' 'abcdefgh' '/fsx' '{','.join(DEFAULT_MOUNT_OPTIONS)}' off 0 -"
    )


def test_default_mount_options_follow_the_fsx_guide():
    # FSx for Lustre User Guide mount-fs-auto-mount-onreboot, with network-online.target for network.service (which
    # Amazon Linux 2023 and Ubuntu do not have: a Requires= on it fails the mount at every boot).
    assert DEFAULT_MOUNT_OPTIONS == (
        "defaults",
        "relatime",
        "flock",
        "_netdev",
        "x-systemd.automount",
        "x-systemd.requires=network-online.target",
    )


def test_the_fstab_entry_never_requires_network_service():
    for efa in (False, True):
        line = lustre_mount_commands(dns_name=DNS, mount_name="abcdefgh", efa_enabled=efa)[-1]
        assert "network.service" not in line
        assert "x-systemd.requires=network-online.target" in line


def test_script_installs_the_lustre_client_per_distribution():
    script = lustre_mount_script()
    assert "dnf install -y lustre-client" in script
    assert "amazon-linux-extras install -y lustre" in script
    assert 'apt-get install -y "lustre-client-modules-$(uname -r)"' in script
    assert "yum install -y kmod-lustre-client lustre-client" in script
    assert "command -v mount.lustre" in script  # skips the install when the image has the client


def test_script_is_idempotent_by_construction():
    script = lustre_mount_script()
    assert "set -euo pipefail" in script
    assert 'mountpoint -q "$mount_point"' in script  # no second mount
    assert '$2 == mp && $3 == "lustre"' in script  # one fstab entry
    assert "lnetctl net show --net efa" in script  # EFA LNet configured once
    assert 'if [ "$current" = "$wanted" ]' in script  # same interfaces already configured: nothing to do
    assert "${dns_name}@tcp:/${mount_name} ${mount_point} lustre ${mount_options} 0 0" in script


def test_script_configures_lnet_over_efa_and_gds():
    script = lustre_mount_script()
    assert "modprobe kefalnd" in script
    assert 'lnetctl net add --net efa --if "$d" --peer-credits "$peer"' in script
    assert "modprobe nvidia_fs" in script


def test_efa_file_system_turns_on_efa_and_gds():
    # Without an instance spec the node decides the count ("auto": the FSx default for other types, 2 or 1).
    commands = lustre_mount_commands(dns_name=DNS, mount_name="m", efa_enabled=True)
    assert commands[-1].endswith(" auto 1 -")
    commands = lustre_mount_commands(dns_name=DNS, mount_name="m", efa_enabled=True, gpudirect_storage=False)
    assert commands[-1].endswith(" auto 0 -")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mount_point": "fsx"}, r"mount_point must be an absolute path of .*, got 'fsx'"),
        ({"mount_point": "/"}, r"mount_point .* got '/'"),
        ({"mount_point": "/a/../etc"}, r"mount_point .* got '/a/../etc'"),
        ({"mount_point": "/fsx; rm -rf /"}, r"mount_point .* got '/fsx; rm -rf /'"),
        ({"mount_options": []}, r"mount_options must be a list of at least 1 item"),
        ({"mount_options": ["flock", "x y"]}, r"mount_options\[1\] must be a mount option without spaces.*, got 'x y'"),
        ({"mount_options": ["a,b"]}, r"mount_options\[0\] must be a mount option"),
        ({"mount_options": "flock"}, r"mount_options must be a list of str \(got a str\)"),
        ({"mount_options": "defaults,flock"}, r"mount_options must be a list of str \(got a str\)"),
        ({"mount_options": ["flock\n"]}, r"mount_options\[0\] must be a mount option"),
        ({"mount_options": [1]}, r"mount_options\[0\] must be a str"),
        ({"mount_point": "/fsx\n"}, r"mount_point must be an absolute path"),
        ({"mount_point": 1}, r"mount_point must be a str"),
        ({"efa_enabled": "yes"}, r"efa_enabled must be a bool"),
        ({"gpudirect_storage": 1}, r"gpudirect_storage must be a bool"),
        (
            {"gpudirect_storage": True},
            r"gpudirect_storage must be False unless the file system is EFA-enabled, got True",
        ),
    ],
)
def test_rejects_invalid_mount_settings(kwargs, match):
    with pytest.raises(FmValidationError, match=match):
        lustre_mount_commands(dns_name=DNS, mount_name="m", **kwargs)


@pytest.fixture(scope="module")
def efa_fs():
    scene = new_scene()
    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc),
    )
    return scene, fs


def test_file_system_mount_commands_resolve_to_its_attributes(efa_fs):
    scene, fs = efa_fs
    user_data = ec2.UserData.for_linux()
    user_data.add_commands(*fs.mount_commands("/fsx"))
    rendered = scene.stack.resolve(user_data.render())
    text = str(rendered)
    assert "LustreMountName" in text and "DNSName" in text
    assert fs.mount_commands()[-1].endswith(" auto 1 -")  # EFA-enabled: LNet over EFA + GDS prerequisites


def test_eks_static_volume_of_a_file_system(efa_fs):
    scene, fs = efa_fs
    volume = fs.eks_static_volume()
    assert volume.storage_capacity_gib == 4800
    assert volume.capacity == "4800Gi"
    assert volume.driver == FSX_CSI_DRIVER == "fsx.csi.aws.com"
    resolved = scene.stack.resolve(volume.volume_attributes)
    assert set(resolved) == {"dnsname", "mountname"}
    assert resolved["mountname"] == {"Fn::GetAtt": [scene.stack.get_logical_id(fs.resource), "LustreMountName"]}
    assert scene.stack.resolve(volume.volume_handle) == {"Ref": scene.stack.get_logical_id(fs.resource)}


def test_eks_persistent_volume_manifest():
    volume = EksStaticVolume(
        file_system_id="fs-0123456789abcdef0", dns_name=DNS, mount_name="abc", storage_capacity_gib=1200
    )
    manifest = volume.to_manifest("fsx-pv")
    assert manifest["kind"] == "PersistentVolume"
    assert manifest["spec"]["capacity"] == {"storage": "1200Gi"}
    assert manifest["spec"]["accessModes"] == ["ReadWriteMany"]
    assert manifest["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert manifest["spec"]["mountOptions"] == ["flock"]
    assert manifest["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "volumeAttributes": {"dnsname": DNS, "mountname": "abc"},
    }


# --- LNet over EFA: per-instance-type interface counts -------------------------------------------------------------
# FSx for Lustre User Guide "Configuring EFA clients" (configure-efa-clients), Step 4 table "Default Number of EFA
# Interfaces": p6-b300.48xlarge 16; p6e-gb200.36xlarge, p6-b200.48xlarge, p5en.48xlarge, p5e.48xlarge, p5.48xlarge 8;
# other instances with multiple network cards 2, with a single network card 1.


@pytest.mark.parametrize(
    ("instance_type", "interfaces", "family"),
    [
        ("p5.48xlarge", 8, "p5"),
        ("p5e.48xlarge", 8, "p5e"),
        ("p5en.48xlarge", 8, "p5en"),
        ("p6-b200.48xlarge", 8, "p6-b200"),
        ("p6e-gb200.36xlarge", 8, "p6e-gb200"),
        ("p6-b300.48xlarge", 16, "p6-b300"),
    ],
)
def test_catalog_default_interfaces_per_instance_type(instance_type, interfaces, family):
    spec = get_instance_spec(instance_type)
    assert lustre_efa_interfaces(efa_enabled=True, instance_spec=spec) == interfaces
    commands = lustre_mount_commands(dns_name=DNS, mount_name="m", efa_enabled=True, instance_spec=spec)
    assert commands[-1].endswith(f" {interfaces} 1 {family}")


def test_explicit_interface_count_overrides_the_catalog():
    spec = get_instance_spec("p6-b300.48xlarge")
    commands = lustre_mount_commands(
        dns_name=DNS, mount_name="m", efa_enabled=True, instance_spec=spec, efa_interfaces_for_lustre=4
    )
    assert commands[-1].endswith(" 4 1 p6-b300")


def test_node_interfaces_cap_the_default():
    """A p6e-gb200 node with the 4 x 400 Gbps layout (cards 1, 5, 9, 13) has 4 EFAs, not the FSx default 8."""
    spec = get_instance_spec("p6e-gb200.36xlarge")
    assert lustre_efa_interfaces(efa_enabled=True, instance_spec=spec, node_efa_interfaces=4) == 4


def test_zero_interfaces_mounts_over_tcp_without_gds():
    spec = get_instance_spec("p5.48xlarge")
    commands = lustre_mount_commands(
        dns_name=DNS, mount_name="m", efa_enabled=True, instance_spec=spec, efa_interfaces_for_lustre=0
    )
    assert commands[-1].endswith(" 0 0 p5")
    with pytest.raises(FmValidationError, match=r"gpudirect_storage must be False when the node mounts over TCP"):
        lustre_mount_commands(
            dns_name=DNS,
            mount_name="m",
            efa_enabled=True,
            instance_spec=spec,
            efa_interfaces_for_lustre=0,
            gpudirect_storage=True,
        )


def test_file_system_without_efa_mounts_over_tcp():
    spec = get_instance_spec("p5.48xlarge")
    commands = lustre_mount_commands(dns_name=DNS, mount_name="m", instance_spec=spec, efa_interfaces_for_lustre=8)
    assert commands[-1].endswith(" off 0 p5")
    assert lustre_efa_interfaces(efa_enabled=False, instance_spec=spec) == 0


@pytest.mark.parametrize(("cards", "expected"), [(2, 2), (1, 1)])
def test_types_without_a_catalog_default_use_the_fsx_guides_other_instances_row(cards, expected):
    base = get_instance_spec("p5.48xlarge")
    spec = replace(
        base,
        instance_type="g6e.48xlarge",
        network_cards=base.network_cards[:cards],
        maximum_efa_interfaces=cards,
        fsx_lustre_efa_interfaces=None,
    )
    assert lustre_efa_interfaces(efa_enabled=True, instance_spec=spec) == expected


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"instance_type": "p6-b200.48xlarge", "efa_interfaces_for_lustre": 9},
            r"efa_interfaces_for_lustre must be at most 8, the EFA interfaces of p6-b200.48xlarge, got 9",
        ),
        (
            {"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": 33},
            r"efa_interfaces_for_lustre must be at most 32, the EFA interfaces of p5.48xlarge, got 33",
        ),
        (
            {"instance_type": "p6e-gb200.36xlarge", "efa_interfaces_for_lustre": 8, "node_efa_interfaces": 4},
            r"efa_interfaces_for_lustre must be at most 4, the EFA interfaces the node attaches .*got 8",
        ),
        ({"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": -1}, r"must be at least 0, got -1"),
        ({"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": True}, r"must be an integer .*got True"),
        ({"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": 2.5}, r"must be a whole number, got 2.5"),
        ({"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": float("nan")}, r"must be a finite number"),
        ({"instance_type": "p5.48xlarge", "efa_interfaces_for_lustre": "8"}, r"must be an integer .*got '8'"),
        ({"instance_type": "p5.48xlarge", "node_efa_interfaces": -2}, r"node_efa_interfaces must be .* got -2"),
    ],
)
def test_rejects_interface_counts_above_the_instance(kwargs, match):
    spec = get_instance_spec(kwargs.pop("instance_type"))
    with pytest.raises(FmValidationError, match=match):
        lustre_mount_commands(dns_name=DNS, mount_name="m", efa_enabled=True, instance_spec=spec, **kwargs)


def test_file_system_mount_commands_take_the_instance_spec(efa_fs):
    _, fs = efa_fs
    commands = fs.mount_commands("/fsx", instance_spec=get_instance_spec("p6-b300.48xlarge"))
    assert commands[-1].endswith(" 16 1 p6-b300")
    commands = fs.mount_commands("/fsx", instance_spec=get_instance_spec("p5.48xlarge"), efa_interfaces_for_lustre=2)
    assert commands[-1].endswith(" 2 1 p5")


def test_user_data_stays_small():
    """EC2 user data is limited to 16 KB (EC2 User Guide "user-data"); the mount script travels gzip-compressed and
    takes under 4.5 KB of it (2.7 KB before LNet over EFA per interface and its boot unit)."""
    commands = lustre_mount_commands(
        dns_name=DNS, mount_name="m", efa_enabled=True, instance_spec=get_instance_spec("p5.48xlarge")
    )
    assert len("\n".join(commands).encode()) < 4608


def test_script_mirrors_aws_lnet_steps():
    """The steps of AWS's configure-efa-fsx-lustre-client (FSx UG "Configuring EFA clients"), in the script."""
    script = lustre_mount_script()
    for step in (
        'modprobe kefalnd ipif_name="$eth"',
        "lnetctl lnet configure",
        'lnetctl net add --net tcp --if "$eth"',
        "lnetctl set discovery 1",
        "lnetctl udsp add --src efa --priority 0",
        "options ksocklnd credits=%s",
        "ptlrpcd_per_cpt_max=%s",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "After=network-online.target",
        "Before=remote-fs-pre.target",
        "x-systemd.requires=$unit,x-systemd.after=$unit",
    ):
        assert step in script, step


# --- the script on a node: stub commands, a fake /sys and /etc (FMCONSTRUCTS_ROOT) ---------------------------------

_STUBS = {
    # Records every call; "net show --net efa" prints the NIs of $LNET_EFA_NIS (already configured interfaces).
    "lnetctl": """#!/bin/bash
echo "lnetctl $*" >> "$LOG"
if [ "$*" = "net show --net efa" ] && [ -n "${LNET_EFA_NIS:-}" ]; then
  echo "net:"; for nic in $LNET_EFA_NIS; do echo "          interfaces:"; echo "              0: $nic"; done
fi
exit 0
""",
    "modinfo": """#!/bin/bash
case "$*" in
  "-F version efa") echo "${EFA_VERSION-2.13.0g}" ;;
  "-F version kefalnd") echo "${KEFALND_VERSION-1.2.0}" ;;
  kefalnd) [ -z "${NO_KEFALND:-}" ] ;;
  *) exit 0 ;;
esac
""",
    "modprobe": '#!/bin/bash\necho "modprobe $*" >> "$LOG"\n',
    "ip": '#!/bin/bash\necho "default via 10.0.0.1 dev ens5 proto dhcp"\n',
    "systemctl": '#!/bin/bash\necho "systemctl $*" >> "$LOG"\n',
    "mount": '#!/bin/bash\necho "mount $*" >> "$LOG"\n',
    "mountpoint": "#!/bin/bash\nexit 1\n",
    "mount.lustre": "#!/bin/bash\n",
}


class Node:
    """A fake node: ``/sys/class/infiniband`` EFA devices under PCIe switches, stubbed LNet tools."""

    def __init__(self, tmp_path):
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "log"
        for path in ("sys/class/infiniband", "etc/modprobe.d", "etc/systemd/system", "drivers/efa", "drivers/ena"):
            (self.root / path).mkdir(parents=True)
        (self.root / "etc/fstab").write_text("")
        self.bin.mkdir()
        for name, body in _STUBS.items():
            (self.bin / name).write_text(body)
            (self.bin / name).chmod(0o755)
        self.script = tmp_path / "fmconstructs-lustre-mount"
        self.script.write_text(lustre_mount_script())
        self.env: dict[str, str] = {}

    def add_efas(self, switches: int, per_switch: int, *, x16: set[int] = frozenset(), driver: str = "efa") -> None:
        """EFA devices named so that name order differs from PCI order (device k of switch s is rdmap<k*S+s>)."""
        for s in range(switches):
            for k in range(per_switch):
                device = self.root / f"devices/pci0000:{s:02x}/0000:{s:02x}:00.0/0000:{0x10 + s:02x}:{k:02x}.0"
                device.mkdir(parents=True)
                (device / "driver").symlink_to(self.root / "drivers" / driver)
                if s * per_switch + k in x16:
                    (device / "current_link_width").write_text("16\n")
                entry = self.root / "sys/class/infiniband" / f"rdmap{k * switches + s}s0"
                entry.mkdir()
                (entry / "device").symlink_to(device)

    def run(self, *args: str) -> str:
        self.log.write_text("")
        env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "LOG": str(self.log),
            "FMCONSTRUCTS_ROOT": str(self.root),
            **self.env,
        }
        done = subprocess.run(["bash", str(self.script), *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def efa_nets_added(self) -> list[str]:
        lines = self.log.read_text().splitlines()
        return sorted(line.split("--if ")[1].split()[0] for line in lines if "net add --net efa" in line)


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


@pytest.mark.parametrize(
    ("switches", "per_switch", "wanted", "family"),
    [(8, 4, 8, "p5"), (8, 2, 8, "p5en"), (8, 1, 8, "p6-b200"), (16, 1, 16, "p6-b300"), (8, 4, 16, "p5")],
)
def test_lnet_adds_one_efa_net_per_interface(node, switches, per_switch, wanted, family):
    node.add_efas(switches, per_switch)
    out = node.run("--lnet", str(wanted), family)
    added = node.efa_nets_added()
    assert len(added) == wanted
    assert f"LNet over EFA with {wanted} interfaces" in out
    peer = 128 if wanted > 4 else 32  # AWS's script: --peer-credits 32, 128 above 4 interfaces
    assert all(
        f"--peer-credits {peer}" in line for line in node.log.read_text().splitlines() if "add --net efa" in line
    )


def test_lnet_spreads_interfaces_one_per_pcie_switch(node):
    """p5: 32 EFAs, 4 per PCIe switch; AWS's script keeps 8, one per switch ("selecting 1 every 4")."""
    node.add_efas(8, 4)
    node.run("--lnet", "8", "p5")
    assert node.efa_nets_added() == sorted(f"rdmap{s}s0" for s in range(8))  # device 0 of each switch


def test_lnet_configures_tcp_then_efa_then_discovery_and_udsp(node):
    node.add_efas(2, 1)
    node.run("--lnet", "2", "p5")
    calls = node.log.read_text().splitlines()
    order = [
        "modprobe lnet",
        "modprobe kefalnd ipif_name=ens5",
        "modprobe ksocklnd",
        "lnetctl lnet configure",
        "lnetctl net add --net tcp --if ens5",
        "lnetctl set discovery 1",
        "lnetctl udsp add --src efa --priority 0",
        "modprobe lustre",
    ]
    assert [c for c in calls if c in order] == order
    conf = (node.root / "etc/modprobe.d/fmconstructs-lustre.conf").read_text()
    assert "options ksocklnd credits=" in conf and "options ptlrpc ptlrpcd_per_cpt_max=" in conf


def test_lnet_on_p6e_gb200_skips_the_x16_efas(node):
    """AWS's script adds on p6e-gb200 only the EFAs attached to the host (PCIe link width other than x16)."""
    node.add_efas(8, 2, x16={1, 3, 5, 7, 9, 11, 13, 15})
    node.run("--lnet", "8", "p6e-gb200")
    assert node.efa_nets_added() == sorted(f"rdmap{s}s0" for s in range(8))


def test_lnet_auto_uses_two_interfaces_on_a_multi_efa_node(node):
    node.add_efas(4, 1)
    assert "LNet over EFA with 2 interfaces" in node.run("--lnet", "auto", "-")


def test_lnet_uses_what_the_node_has_when_fewer(node):
    node.add_efas(4, 1)
    out = node.run("--lnet", "8", "p6e-gb200")
    assert "8 EFA interfaces wanted for LNet, 4 found" in out
    assert len(node.efa_nets_added()) == 4


def test_lnet_already_configured_changes_nothing(node):
    node.add_efas(2, 1)
    node.env["LNET_EFA_NIS"] = "rdmap0s0 rdmap1s0"
    out = node.run("--lnet", "2", "p5")
    assert "LNet over EFA with 2 interfaces (already configured)" in out
    assert node.log.read_text().splitlines() == ["lnetctl net show --net efa"]


@pytest.mark.parametrize(
    ("efa", "family", "env", "reason"),
    [
        ("off", "p5", {}, "the file system is not EFA-enabled"),
        ("0", "p5", {}, "this node group uses 0 EFA interfaces for Lustre"),
        ("8", "p5", {"NO_DEVICES": "1"}, "this node has no EFA device"),
        ("8", "p5", {"NO_KEFALND": "1"}, "this Lustre client has no kefalnd module"),
        ("8", "p5", {"EFA_VERSION": "2.10.0"}, "the EFA driver (2.10.0) is older than 2.12.1"),
        ("8", "p6-b200", {"KEFALND_VERSION": "1.0.0"}, "kefalnd 1.0.0 is older than 1.1.1, which p6-b200 needs"),
    ],
)
def test_lnet_over_tcp_says_why(node, efa, family, env, reason):
    if not env.pop("NO_DEVICES", None):
        node.add_efas(8, 1)
    node.env.update(env)
    out = node.run("--lnet", efa, family)
    assert f"LNet over TCP because {reason}" in out
    assert node.efa_nets_added() == []


def test_lnet_ignores_devices_of_other_drivers(node):
    node.add_efas(2, 1, driver="ena")
    assert "LNet over TCP because this node has no EFA device" in node.run("--lnet", "2", "p5")


def test_mount_over_efa_installs_the_boot_unit_and_orders_the_mount_after_it(node, tmp_path):
    node.add_efas(8, 4)
    mount_point = str(tmp_path / "fsx")
    args = [DNS, "abcdefgh", mount_point, ",".join(DEFAULT_MOUNT_OPTIONS), "8", "1", "p5"]
    out = node.run(*args)
    assert "LNet over EFA with 8 interfaces" in out
    unit = (node.root / "etc/systemd/system" / LNET_EFA_UNIT).read_text()
    assert f"ExecStart={node.script} --lnet 8 p5" in unit
    assert "Type=oneshot" in unit and "Before=remote-fs-pre.target" in unit
    assert f"systemctl enable {LNET_EFA_UNIT}" in node.log.read_text()
    fstab = (node.root / "etc/fstab").read_text().splitlines()
    assert fstab == [
        f"{DNS}@tcp:/abcdefgh {mount_point} lustre {','.join(DEFAULT_MOUNT_OPTIONS)},"
        f"x-systemd.requires={LNET_EFA_UNIT},x-systemd.after={LNET_EFA_UNIT} 0 0"
    ]
    node.run(*args)  # a second run (reboot, re-run of user data) adds nothing
    assert len((node.root / "etc/fstab").read_text().splitlines()) == 1


def test_mount_over_tcp_has_no_boot_unit(node, tmp_path):
    mount_point = str(tmp_path / "fsx")
    out = node.run(DNS, "abcdefgh", mount_point, ",".join(DEFAULT_MOUNT_OPTIONS), "off", "0", "-")
    assert "LNet over TCP because the file system is not EFA-enabled" in out
    assert not (node.root / "etc/systemd/system" / LNET_EFA_UNIT).exists()
    assert "x-systemd.requires=fmconstructs" not in (node.root / "etc/fstab").read_text()
    assert f"mount {mount_point}" in node.log.read_text()


@pytest.mark.parametrize(("failing", "expected"), [("rdmap1s0", "LNet over EFA with 1 interfaces"), ("rdmap", None)])
def test_lnet_reports_interfaces_lnetctl_could_not_add(node, failing, expected):
    node.add_efas(2, 1)
    stub = node.bin / "lnetctl"
    stub.write_text(_STUBS["lnetctl"].replace("exit 0", f'case "$*" in *"--if {failing}"*) exit 1 ;; esac\nexit 0'))
    out = node.run("--lnet", "2", "p5")
    if expected:
        assert "lnetctl could not add 1 of 2 EFA interfaces" in out and expected in out
    else:
        assert "LNet over TCP because lnetctl could not add any EFA interface" in out


# --- LNet only (ParallelCluster: its cookbook mounts; fmconstructs configures LNet in OnNodeStart before that) -----
@pytest.mark.parametrize(
    ("instance_type", "kwargs", "args"),
    [
        ("p5.48xlarge", {}, "--lnet-only 8 p5"),
        ("p6-b300.48xlarge", {}, "--lnet-only 16 p6-b300"),
        ("p6e-gb200.36xlarge", {}, "--lnet-only 8 p6e-gb200"),
        ("p5en.48xlarge", {"efa_interfaces_for_lustre": 4}, "--lnet-only 4 p5en"),
        ("p5en.48xlarge", {"efa_interfaces_for_lustre": 0}, "--lnet-only 0 p5en"),
        ("p5.48xlarge", {"node_efa_interfaces": 2}, "--lnet-only 2 p5"),
        (None, {}, "--lnet-only auto -"),
    ],
)
def test_lnet_commands_run_the_same_script_in_its_lnet_only_mode(instance_type, kwargs, args):
    spec = get_instance_spec(instance_type) if instance_type else None
    commands = lustre_lnet_commands(instance_spec=spec, **kwargs)
    assert embedded_files("\n".join(commands)) == {LUSTRE_MOUNT_SCRIPT_PATH: lustre_mount_script()}
    assert commands[-1] == f"{LUSTRE_MOUNT_SCRIPT_PATH} {args}"


def test_lnet_commands_are_valid_bash(tmp_path):
    _bash_n("\n".join(lustre_lnet_commands(instance_spec=get_instance_spec("p5.48xlarge"))), tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"efa_interfaces_for_lustre": 33}, r"efa_interfaces_for_lustre must be at most 32"),
        ({"efa_interfaces_for_lustre": -1}, r"efa_interfaces_for_lustre"),
        ({"node_efa_interfaces": 2, "efa_interfaces_for_lustre": 4}, r"at most 2"),
    ],
)
def test_lnet_commands_reject_interface_counts_the_node_lacks(kwargs, match):
    with pytest.raises(FmValidationError, match=match):
        lustre_lnet_commands(instance_spec=get_instance_spec("p5.48xlarge"), **kwargs)


def test_lnet_only_configures_efa_installs_the_boot_unit_and_mounts_nothing(node):
    node.add_efas(8, 4)
    out = node.run("--lnet-only", "8", "p5")
    assert "Lustre client already installed" in out
    assert "LNet over EFA with 8 interfaces" in out
    assert len(node.efa_nets_added()) == 8
    unit = (node.root / "etc/systemd/system" / LNET_EFA_UNIT).read_text()
    assert f"ExecStart={node.script} --lnet 8 p5" in unit and "Before=remote-fs-pre.target" in unit
    calls = node.log.read_text().splitlines()
    assert f"systemctl enable {LNET_EFA_UNIT}" in calls
    assert not [c for c in calls if c.startswith("mount ")]
    assert (node.root / "etc/fstab").read_text() == ""


def test_lnet_only_again_changes_nothing(node):
    node.add_efas(2, 1)
    node.run("--lnet-only", "2", "p5")
    unit = (node.root / "etc/systemd/system" / LNET_EFA_UNIT).read_text()
    node.env["LNET_EFA_NIS"] = "rdmap0s0 rdmap1s0"
    out = node.run("--lnet-only", "2", "p5")
    assert "LNet over EFA with 2 interfaces (already configured)" in out
    assert (node.root / "etc/systemd/system" / LNET_EFA_UNIT).read_text() == unit
    assert "systemctl daemon-reload" not in node.log.read_text()  # the unit is unchanged


@pytest.mark.parametrize(("efa", "reason"), [("0", "this node group uses 0 EFA interfaces for Lustre")])
def test_lnet_only_over_tcp_installs_no_unit(node, efa, reason):
    node.add_efas(2, 1)
    out = node.run("--lnet-only", efa, "p5")
    assert f"LNet over TCP because {reason}" in out
    assert not (node.root / "etc/systemd/system" / LNET_EFA_UNIT).exists()
    assert node.efa_nets_added() == []
