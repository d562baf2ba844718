"""Client side: node-side mount commands (content, idempotence guards, bash syntax) and EKS static volume attributes."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from aws_cdk import aws_ec2 as ec2
from conftest import new_scene

from fmconstructs import EfaSecurityGroup, FmValidationError
from fmconstructs.storage import (
    DEFAULT_MOUNT_OPTIONS,
    FSX_CSI_DRIVER,
    LUSTRE_MOUNT_SCRIPT_PATH,
    EksStaticVolume,
    LustreFileSystem,
    LustreMetadataConfiguration,
    lustre_mount_commands,
    lustre_mount_script,
)
from tests.conftest import embedded_files

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
    assert DEFAULT_MOUNT_OPTIONS == (
        "defaults",
        "relatime",
        "flock",
        "_netdev",
        "x-systemd.automount",
        "x-systemd.requires=network.service",
    )


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
        ({"mount_point": "fsx"}, r"mount_point must be an absolute path other than '/' .*, got 'fsx'"),
        ({"mount_point": "/"}, r"mount_point .* got '/'"),
        ({"mount_point": "/a/../etc"}, r"mount_point .* got '/a/../etc'"),
        ({"mount_point": "/fsx; rm -rf /"}, r"mount_point .* got '/fsx; rm -rf /'"),
        ({"mount_options": []}, r"mount_options must be a non-empty list"),
        ({"mount_options": ["flock", "x y"]}, r"mount_options must be a non-empty list .*, got \['flock', 'x y'\]"),
        ({"mount_options": ["a,b"]}, r"mount_options"),
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
    volume = EksStaticVolume(file_system_id="fs-1", dns_name=DNS, mount_name="abc", storage_capacity_gib=1200)
    manifest = volume.to_manifest("fsx-pv")
    assert manifest["kind"] == "PersistentVolume"
    assert manifest["spec"]["capacity"] == {"storage": "1200Gi"}
    assert manifest["spec"]["accessModes"] == ["ReadWriteMany"]
    assert manifest["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert manifest["spec"]["mountOptions"] == ["flock"]
    assert manifest["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-1",
        "volumeAttributes": {"dnsname": DNS, "mountname": "abc"},
    }
