"""GpuNodeImage's build and pipeline log groups have names fixed by Image Builder's convention
(``/aws/imagebuilder/<image name>``): by default they are deleted with the stack, so that destroy-then-redeploy of the
same image name does not fail with "already exists" (issue 19, Names); ``log_removal_policy=RETAIN`` keeps them."""

from __future__ import annotations

import pytest
from aws_cdk import RemovalPolicy

from fmconstructs.errors import FmValidationError

from tests.conftest import new_scene
from tests.support.images import _image


def _log_groups(template):
    return template.find_resources("AWS::Logs::LogGroup")


def test_fixed_name_log_groups_are_deleted_with_the_stack_by_default():
    scene = new_scene()
    _image(scene, image_name="fm-logs")
    groups = _log_groups(scene.template())
    names = {g["Properties"]["LogGroupName"]: g for g in groups.values() if "LogGroupName" in g["Properties"]}
    assert set(names) >= {"/aws/imagebuilder/fm-logs", "/aws/imagebuilder/pipeline/fm-logs"}
    for name in ("/aws/imagebuilder/fm-logs", "/aws/imagebuilder/pipeline/fm-logs"):
        assert names[name]["DeletionPolicy"] == "Delete"


def test_log_groups_can_be_retained_while_the_key_and_bucket_keep_their_own_policy():
    scene = new_scene()
    _image(scene, image_name="fm-keep", log_removal_policy=RemovalPolicy.RETAIN, removal_policy=RemovalPolicy.DESTROY)
    template = scene.template()
    for group in _log_groups(template).values():
        if str(group["Properties"].get("LogGroupName", "")).startswith("/aws/imagebuilder/"):
            assert group["DeletionPolicy"] == "Retain"
    keys = template.find_resources("AWS::KMS::Key")
    assert any(k["DeletionPolicy"] == "Delete" for k in keys.values())


@pytest.mark.parametrize("bad", ["retain", 1, None])
def test_log_removal_policy_must_be_a_removal_policy(bad):
    with pytest.raises(FmValidationError, match="log_removal_policy must be"):
        _image(new_scene(), log_removal_policy=bad)
