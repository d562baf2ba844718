"""``encryption_key`` is the one keyword for a customer managed KMS key: LustreFileSystem and PlatformStorage's
``kms_key`` keeps working until fmconstructs 0.4.0, with a DeprecationWarning, and gives the same template/value."""

from __future__ import annotations

import json
import warnings

import pytest
from aws_cdk import aws_kms as kms

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.platform import PlatformStorage
from fmconstructs.storage import LustreDeploymentType, LustreFileSystem

from tests.conftest import new_scene


def _lustre_template(keyword: str) -> tuple[str, LustreFileSystem]:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key", enable_key_rotation=True)
    fs = LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, **{keyword: key})
    return json.dumps(scene.template().to_json(), sort_keys=True), fs


def test_lustre_encryption_key_sets_the_kms_key_id_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        template, fs = _lustre_template("encryption_key")
    assert '"KmsKeyId"' in template
    assert fs.encryption_key is not None


def test_lustre_kms_key_warns_and_gives_the_same_template() -> None:
    new, _ = _lustre_template("encryption_key")
    with pytest.warns(DeprecationWarning, match=r"LustreFileSystem\(kms_key=\) is deprecated .*: use encryption_key="):
        old, fs = _lustre_template("kms_key")
    assert old == new
    with pytest.warns(DeprecationWarning, match=r"LustreFileSystem.kms_key is deprecated .*: use .*encryption_key"):
        assert fs.kms_key is fs.encryption_key


def test_lustre_refuses_both_names() -> None:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    with pytest.raises(FmTypeError, match=r"^kms_key must be omitted when encryption_key is given"):
        LustreFileSystem(scene.stack, "Fs", vpc=scene.vpc, storage_capacity_gib=1200, kms_key=key, encryption_key=key)
    assert scene.stack.node.try_find_child("Fs") is None


@pytest.mark.parametrize("keyword", ["encryption_key", "kms_key"])
def test_lustre_errors_name_the_new_keyword(keyword: str) -> None:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(FmValidationError, match=r"^encryption_key must be None for SCRATCH_2"):
            LustreFileSystem(
                scene.stack,
                "Fs",
                vpc=scene.vpc,
                storage_capacity_gib=1200,
                deployment_type=LustreDeploymentType.SCRATCH_2,
                **{keyword: key},
            )
        with pytest.raises(FmTypeError, match=r"^encryption_key must be a kms.IKey"):
            LustreFileSystem(scene.stack, "Fs2", vpc=scene.vpc, storage_capacity_gib=1200, **{keyword: "alias/fsx"})


def test_platform_storage_kms_key_warns_and_gives_the_same_value() -> None:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    new = PlatformStorage.for_throughput(target_gbytes_per_s=1, encryption_key=key)
    with pytest.warns(DeprecationWarning, match=r"PlatformStorage\(kms_key=\) is deprecated .*: use encryption_key="):
        old = PlatformStorage.for_throughput(target_gbytes_per_s=1, kms_key=key)
    assert old == new
    assert old.encryption_key is key
    with pytest.warns(DeprecationWarning, match=r"PlatformStorage.kms_key is deprecated .*: use .*encryption_key"):
        assert old.kms_key is key


@pytest.mark.parametrize(
    "build",
    [
        lambda key: PlatformStorage.for_throughput(target_gbytes_per_s=1, kms_key=key, encryption_key=key),
        lambda key: PlatformStorage.of_capacity(storage_capacity_gib=1200, kms_key=key, encryption_key=key),
    ],
)
def test_platform_storage_refuses_both_names(build: object) -> None:
    scene = new_scene()
    key = kms.Key(scene.stack, "Key")
    with pytest.raises(FmTypeError, match=r"^kms_key must be omitted when encryption_key is given"):
        build(key)  # type: ignore[operator]


@pytest.mark.parametrize("keyword", ["encryption_key", "kms_key"])
def test_platform_storage_errors_name_the_new_keyword(keyword: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(FmTypeError, match=r"^encryption_key must be a kms.IKey"):
            PlatformStorage.for_throughput(target_gbytes_per_s=1, **{keyword: "alias/aws/fsx"})
