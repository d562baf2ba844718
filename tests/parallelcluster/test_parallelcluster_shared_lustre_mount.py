"""SharedLustre speaks the one vocabulary: ``mount_point`` (``mount_dir`` deprecated until 0.4.0; the config key stays
``MountDir``) and ``SharedLustre.from_mount(LustreMount)``."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

from fmconstructs import EfaSecurityGroup, LustreFileSystem
from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.parallelcluster import SharedLustre
from fmconstructs.storage import LustreMetadataConfiguration, LustreMount

from tests.conftest import new_scene
from tests.support.parallelcluster import make_cluster


@pytest.fixture(scope="module")
def fs() -> LustreFileSystem:
    scene = new_scene()
    group = EfaSecurityGroup(scene.stack, "Efa", vpc=scene.vpc)
    return LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        subnet=scene.subnet_a,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        efa_enabled=True,
        efa_security_group=group,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
    )


def test_mount_point_is_the_mount_dir_config_key(fs: LustreFileSystem) -> None:
    shared = SharedLustre(file_system=fs, name="scratch", mount_point="/scratch")
    assert shared.mount_point == "/scratch"
    assert shared.to_config()["MountDir"] == "/scratch"
    assert SharedLustre(file_system=fs).to_config()["MountDir"] == "/fsx"


def test_mount_dir_still_works_with_a_deprecation_warning(fs: LustreFileSystem) -> None:
    with pytest.warns(
        DeprecationWarning, match=r"SharedLustre\(mount_dir=\) is deprecated .* 0\.4\.0: use mount_point="
    ):
        old = SharedLustre(file_system=fs, mount_dir="/scratch")  # type: ignore[call-arg]
    assert old == SharedLustre(file_system=fs, mount_point="/scratch")
    assert old.to_config() == SharedLustre(file_system=fs, mount_point="/scratch").to_config()
    with pytest.warns(
        DeprecationWarning, match=r"SharedLustre\.mount_dir is deprecated .*use SharedLustre\.mount_point"
    ):
        assert old.mount_dir == "/scratch"


def test_mount_dir_and_mount_point_together_are_refused(fs: LustreFileSystem) -> None:
    with pytest.raises(FmTypeError, match=r"^mount_dir must be omitted when mount_point is given"):
        SharedLustre(file_system=fs, mount_dir="/a", mount_point="/b")  # type: ignore[call-arg]


@pytest.mark.parametrize("mount_point", ["/", "/fsx\n", "/opt/slurm", "opt/slurm"])
def test_a_bad_mount_point_is_refused_by_its_new_name(fs: LustreFileSystem, mount_point: str) -> None:
    with pytest.raises(FmValidationError, match=r"^mount_point must be "):
        SharedLustre(file_system=fs, mount_point=mount_point)


def test_the_cluster_yaml_is_the_same_with_either_name() -> None:
    configs = []
    for keyword in ("mount_point", "mount_dir"):
        scene = new_scene()
        fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, subnet=scene.subnet_a, storage_capacity_gib=1200)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            given: dict[str, Any] = {keyword: "/scratch"}
            shared = SharedLustre(file_system=fs, name="scratch", **given)
        configs.append(make_cluster(scene, shared_storage=[shared]).to_dict())
    assert configs[0] == configs[1]
    assert configs[0]["SharedStorage"][0]["MountDir"] == "/scratch"


@pytest.mark.parametrize(
    ("mount", "name", "expected"),
    [
        ({}, None, {"name": "fsx", "mount_point": "/fsx", "efa_clients": True}),
        ({"mount_point": "/scratch"}, "scratch", {"name": "scratch", "mount_point": "/scratch", "efa_clients": True}),
        ({"efa_interfaces": 0}, None, {"name": "fsx", "mount_point": "/fsx", "efa_clients": False}),
    ],
)
def test_from_mount(fs: LustreFileSystem, mount: dict[str, Any], name: str | None, expected: dict[str, Any]) -> None:
    shared = SharedLustre.from_mount(LustreMount(fs, **mount), **({} if name is None else {"name": name}))
    assert shared == SharedLustre(file_system=fs, **expected)
    assert dataclasses.replace(shared) == shared  # the direct constructor accepts what the factory made


@pytest.mark.parametrize("efa_interfaces", [1, 2, 8])
def test_from_mount_refuses_a_count_the_queues_cannot_honour(fs: LustreFileSystem, efa_interfaces: int) -> None:
    with pytest.raises(FmValidationError, match=r"^efa_interfaces must be None .* or 0 .*OnNodeStart") as raised:
        SharedLustre.from_mount(LustreMount(fs, efa_interfaces=efa_interfaces))
    assert f"got {efa_interfaces}" in str(raised.value)


@pytest.mark.parametrize("mount", ["fs-0123456789abcdef0", None, 3])
def test_from_mount_refuses_what_is_not_a_lustre_mount(mount: object) -> None:
    with pytest.raises(FmTypeError, match=r"^mount must be a LustreMount"):
        SharedLustre.from_mount(mount)  # type: ignore[arg-type]


def test_from_mount_checks_the_name(fs: LustreFileSystem) -> None:
    with pytest.raises(FmValidationError, match=r"^name must be "):
        SharedLustre.from_mount(LustreMount(fs), name="Not_Valid")


@pytest.mark.parametrize(("given", "absolute"), [("scratch", "/scratch"), ("data/team1", "/data/team1")])
def test_a_relative_mount_point_parallelcluster_accepts_is_taken_as_absolute(
    fs: LustreFileSystem, given: str, absolute: str
) -> None:
    """ParallelCluster's MountDir pattern makes the leading '/' optional (schemas/common_schema.py ``file_path``)."""
    shared = SharedLustre(file_system=fs, name="scratch", mount_point=given)
    assert shared.mount_point == absolute
    assert shared.to_config()["MountDir"] == absolute


@pytest.mark.parametrize("bad", ["", "tmp", "scratch/../etc", "a b"])
def test_a_relative_mount_point_still_meets_the_mount_point_rule(fs: LustreFileSystem, bad: str) -> None:
    with pytest.raises(FmValidationError, match="mount_point"):
        SharedLustre(file_system=fs, name="scratch", mount_point=bad)
