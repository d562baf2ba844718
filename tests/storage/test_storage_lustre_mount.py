"""One "Lustre on a node group" input, fmconstructs.storage.LustreMount: PCS ``mounts=`` takes it; FileSystemMount is
its deprecated name and ``efa_interfaces_for_lustre`` the deprecated name of ``efa_interfaces``."""

from __future__ import annotations

import json
import warnings
from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.pcs import FileSystemMount, PcsAmi, PcsCluster
from fmconstructs.storage import LustreFileSystem, LustreMetadataConfiguration, LustreMount

from tests.conftest import Scene, new_scene

AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _scene_with_fs() -> tuple[Scene, PcsCluster, LustreFileSystem]:
    scene = new_scene()
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc)
    fs = LustreFileSystem(
        scene.stack,
        "Fs",
        vpc=scene.vpc,
        storage_capacity_gib=4800,
        throughput_mbps_per_tib=1000,
        metadata_configuration=LustreMetadataConfiguration.automatic(),
        efa_enabled=True,
        efa_security_group=cluster.efa_security_group,
    )
    return scene, cluster, fs


def _pcs_template(make_mount: Any) -> tuple[str, list[int | None]]:
    scene, cluster, fs = _scene_with_fs()
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", ami=AMI, max_nodes=4, mounts=[make_mount(fs)])
    cluster.add_login_node_group("Login", ami=AMI, mounts=[LustreMount(fs)])
    connections = [group.max_efa_connections for group in fs.efa_client_groups]
    return json.dumps(scene.template().to_json(), sort_keys=True), connections


def test_file_system_mount_is_lustre_mount() -> None:
    assert FileSystemMount is LustreMount


def test_pcs_mounts_take_a_lustre_mount_with_efa_interfaces() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        _template, connections = _pcs_template(lambda fs: LustreMount(fs, "/fsx", efa_interfaces=2))
    assert connections == [4 * 2]  # the GPU group registers 2 interfaces per node; login nodes use TCP (0)


def test_the_old_keyword_warns_and_gives_the_same_template() -> None:
    new, _ = _pcs_template(lambda fs: LustreMount(fs, efa_interfaces=2))
    with pytest.warns(DeprecationWarning, match=r"FileSystemMount\(efa_interfaces_for_lustre=\) is deprecated"):
        old, connections = _pcs_template(lambda fs: FileSystemMount(fs, efa_interfaces_for_lustre=2))
    assert old == new
    assert connections == [8]


def test_the_old_attribute_warns_and_reads_the_new_one() -> None:
    _scene, _cluster, fs = _scene_with_fs()
    mount = LustreMount(fs, efa_interfaces=0)
    with pytest.warns(DeprecationWarning, match=r"LustreMount.efa_interfaces_for_lustre is deprecated"):
        assert mount.efa_interfaces_for_lustre == 0
    with pytest.warns(DeprecationWarning, match=r"FileSystemMount\(efa_interfaces_for_lustre=\) is deprecated"):
        assert FileSystemMount(fs, efa_interfaces_for_lustre=0) == mount


def test_both_names_are_refused() -> None:
    _scene, _cluster, fs = _scene_with_fs()
    with pytest.raises(FmTypeError, match=r"^efa_interfaces_for_lustre must be omitted when efa_interfaces is given"):
        LustreMount(fs, efa_interfaces_for_lustre=1, efa_interfaces=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("overrides", "error", "parameter"),
    [
        ({"file_system": "fs-0123456789abcdef0"}, FmTypeError, "file_system"),
        ({"mount_point": "fsx"}, FmValidationError, "mount_point"),
        ({"mount_point": 5}, FmTypeError, "mount_point"),
        ({"efa_interfaces": -1}, FmValidationError, "efa_interfaces"),
        ({"efa_interfaces": 1.5}, FmValidationError, "efa_interfaces"),
        ({"efa_interfaces": "2"}, FmTypeError, "efa_interfaces"),
        ({"efa_interfaces": "token"}, FmValidationError, "efa_interfaces"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    overrides: dict[str, Any], error: type[Exception], parameter: str
) -> None:
    _scene, _cluster, fs = _scene_with_fs()
    if overrides.get("efa_interfaces") == "token":
        overrides = {"efa_interfaces": cdk.Token.as_number(cdk.Fn.ref("Count"))}
    props: dict[str, Any] = {"file_system": fs, **overrides}
    with pytest.raises(error) as caught:
        LustreMount(**props)
    assert str(caught.value).startswith(f"{parameter} must be")
