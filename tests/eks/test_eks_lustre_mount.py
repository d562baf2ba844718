"""GpuNodeGroup.add_lustre_client takes the one mount type, fmconstructs.storage.LustreMount (the file system plus
``mount_point=`` form keeps working); the mount's ``efa_interfaces`` and the group's ``efa_interfaces_for_lustre``
must agree when both are given (one LNet configuration per node)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from fmconstructs import LustreFileSystem
from fmconstructs.capacity import CapacityBlock
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup, LustreClient
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.storage import LustreMetadataConfiguration, LustreMount

from tests.conftest import new_scene


def build(**group_options: Any) -> tuple[GpuNodeGroup, LustreFileSystem]:
    """A p5en group of 2 nodes (16 EFA interfaces; FSx UG default 8 for LNet) and an EFA-enabled file system."""
    scene = new_scene("EksLustreMount")
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    group = cluster.add_gpu_node_group(
        "P5en",
        instance_type="p5en.48xlarge",
        capacity=CapacityBlock(reservation_id="cr-0fedcba9876543210", instance_count=2),
        max_nodes=2,
        **group_options,
    )
    fs = LustreFileSystem(
        scene.stack,
        "EfaFs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=cluster.efa_security_group,
    )
    return group, fs


def untokened(group: GpuNodeGroup) -> str:
    """The group's node set-up with its deploy-time values (different tokens in two stacks) masked."""
    return re.sub(r"\$\{Token\[[^]]+\]\}", "TOKEN", group.launch_template.bootstrap.render())


def mount_args(group: GpuNodeGroup) -> str:
    """The arguments the node set-up passes to the Lustre mount script."""
    (step,) = [s for s in group.launch_template.bootstrap.steps if s.name.startswith("lustre")]
    return step.commands[-1].split("fmconstructs-lustre-mount", 1)[1]


def test_a_lustre_mount_gives_the_same_node_set_up_as_the_file_system_form() -> None:
    # GIVEN two identical groups WHEN one takes LustreMount(fs, "/fsx") and the other (fs, mount_point="/fsx")
    by_mount, fs_a = build()
    by_file_system, fs_b = build()
    client = by_mount.add_lustre_client(LustreMount(fs_a, "/fsx"))
    by_file_system.add_lustre_client(fs_b, mount_point="/fsx")
    # THEN the same client, the same commands and the same registration
    assert isinstance(client, LustreClient)
    assert (client.file_system, client.mount_point, client.efa_interfaces) == (fs_a, "/fsx", 8)
    assert untokened(by_mount) == untokened(by_file_system)
    assert [g.max_efa_connections for g in fs_a.efa_client_groups] == [16]
    assert by_mount.lustre_clients == (client,)


def test_a_lustre_mount_defaults_to_fsx() -> None:
    group, fs = build()
    assert group.add_lustre_client(LustreMount(fs)).mount_point == "/fsx"


@pytest.mark.parametrize(
    ("mount_count", "group_count", "expected"),
    [
        (2, None, 2),  # the mount's count
        (None, 2, 2),  # the group's count
        (2, 2, 2),  # both, agreeing
        (0, None, 0),  # TCP from the mount
        (None, None, 8),  # the FSx UG default for p5en
    ],
)
def test_efa_interfaces_come_from_the_mount_or_the_group(
    mount_count: int | None, group_count: int | None, expected: int
) -> None:
    group, fs = build(efa_interfaces_for_lustre=group_count)
    client = group.add_lustre_client(LustreMount(fs, "/fsx", efa_interfaces=mount_count))
    assert client.efa_interfaces == expected
    assert f" {expected} {int(bool(expected))} " in mount_args(group)  # EFA interfaces, GPUDirect Storage
    assert [g.max_efa_connections for g in fs.efa_client_groups] == ([2 * expected] if expected else [])


@pytest.mark.parametrize(("mount_count", "group_count"), [(2, 4), (0, 2), (4, 0)])
def test_a_mount_count_that_disagrees_with_the_group_is_refused(mount_count: int, group_count: int) -> None:
    group, fs = build(efa_interfaces_for_lustre=group_count)
    with pytest.raises(FmValidationError, match=r"^efa_interfaces must be .*efa_interfaces_for_lustre") as raised:
        group.add_lustre_client(LustreMount(fs, "/fsx", efa_interfaces=mount_count))
    assert f"got {mount_count}" in str(raised.value)
    assert str(group_count) in str(raised.value)
    assert group.lustre_clients == ()
    assert fs.efa_client_groups == ()


def test_a_mount_count_above_the_nodes_is_refused() -> None:
    group, fs = build(efa_interface_count=4)
    with pytest.raises(FmValidationError, match=r"at most 4"):
        group.add_lustre_client(LustreMount(fs, "/fsx", efa_interfaces=8))


@pytest.mark.parametrize(
    ("args", "kwargs", "parameter"),
    [
        ("mount", {"mount_point": "/fsx"}, "mount_point"),  # a LustreMount carries its mount point
        ("fs", {}, "mount_point"),  # a file system needs one
        ("text", {"mount_point": "/fsx"}, "file_system"),
        ("none", {"mount_point": "/fsx"}, "file_system"),
    ],
)
def test_bad_arguments_are_refused(args: str, kwargs: dict[str, Any], parameter: str) -> None:
    group, fs = build()
    given: object = {"mount": LustreMount(fs, "/fsx"), "fs": fs, "text": "fs-0123456789abcdef0", "none": None}[args]
    with pytest.raises(FmTypeError, match=rf"^{parameter} must be "):
        group.add_lustre_client(given, **kwargs)  # type: ignore[arg-type]
