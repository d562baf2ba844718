"""HyperPodCluster(removal_policy=...): DESTROY by default, RETAIN on request, SNAPSHOT refused; a fixed cluster name
warns that its create-only properties cannot change in place; TrainingPlatform passes HyperPodOptions' policy."""

from __future__ import annotations

import pytest
from aws_cdk import RemovalPolicy
from aws_cdk.assertions import Annotations, Match

from fmconstructs.errors import FmTypeError, FmValidationError, WarningId
from fmconstructs.hyperpod import HyperPodCluster, HyperPodInstanceGroup, HyperPodOrchestrator
from fmconstructs.hyperpod.data_safety import CREATE_ONLY_PROPERTIES
from fmconstructs.platform import HyperPodOptions

from tests.conftest import new_scene

WARNING = WarningId.HYPERPOD_FIXED_CLUSTER_NAME.qualified


def _cluster(**kwargs: object):
    scene = new_scene("Removal")
    cluster = HyperPodCluster(
        scene.stack,
        "H",
        vpc=scene.vpc,
        instance_groups=[
            HyperPodInstanceGroup(name="controller", instance_type="m5.2xlarge", nodes=1),
            HyperPodInstanceGroup(name="gpu", instance_type="p5.48xlarge", nodes=1),
        ],
        orchestrator=HyperPodOrchestrator.slurm(controller_group="controller"),
        **kwargs,  # type: ignore[arg-type]
    )
    return scene, cluster


@pytest.mark.parametrize(
    ("policy", "expected"),
    [(None, "Delete"), (RemovalPolicy.DESTROY, "Delete"), (RemovalPolicy.RETAIN, "Retain")],
)
def test_removal_policy_on_the_cluster(policy, expected):
    scene, cluster = _cluster(**({} if policy is None else {"removal_policy": policy}))
    scene.template().has_resource(
        "AWS::SageMaker::Cluster", {"DeletionPolicy": expected, "UpdateReplacePolicy": expected}
    )
    assert cluster.removal_policy is (policy or RemovalPolicy.DESTROY)


@pytest.mark.parametrize("bad", [RemovalPolicy.SNAPSHOT, RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE])
def test_policies_a_cluster_cannot_take_are_refused(bad):
    with pytest.raises(
        FmValidationError, match=r"removal_policy must be RemovalPolicy.DESTROY or RemovalPolicy.RETAIN"
    ):
        _cluster(removal_policy=bad)


@pytest.mark.parametrize("bad", ["RETAIN", 1, None])
def test_removal_policy_must_be_an_enum_member(bad):
    with pytest.raises((FmTypeError, FmValidationError), match=r"removal_policy"):
        _cluster(removal_policy=bad)


def test_fixed_cluster_name_warns_with_the_create_only_properties():
    scene, _ = _cluster(cluster_name="team-a")
    warnings = Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(WARNING))
    assert len(warnings) == 1
    text = str(warnings[0].entry.data)
    for prop in CREATE_ONLY_PROPERTIES:
        assert prop in text
    assert "'team-a'" in text


def test_generated_default_name_does_not_warn():
    scene, _ = _cluster()
    assert not Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(WARNING))


def test_create_only_properties_match_the_bundled_schema():
    import json
    from pathlib import Path

    import cfnlint

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    name = json.loads((schemas / "providers" / "us-east-1.json").read_text())["AWS::SageMaker::Cluster"]
    schema = json.loads((schemas / "resources" / f"{name}.json").read_text())
    words = [p.removeprefix("/properties/").replace("/", ".") for p in schema["createOnlyProperties"]]
    assert sorted(words) == sorted(CREATE_ONLY_PROPERTIES)


def test_platform_options_take_a_removal_policy():
    assert HyperPodOptions().removal_policy is RemovalPolicy.DESTROY
    assert HyperPodOptions(removal_policy=RemovalPolicy.RETAIN).removal_policy is RemovalPolicy.RETAIN
    with pytest.raises(FmValidationError, match="removal_policy"):
        HyperPodOptions(removal_policy=RemovalPolicy.SNAPSHOT)


def test_training_platform_passes_the_policy_to_the_cluster():
    from fmconstructs.platform import TrainingPlatform

    scene = new_scene("RemovalPlatform")
    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=HyperPodOptions(removal_policy=RemovalPolicy.RETAIN),
        storage=None,
    )
    assert isinstance(platform.cluster, HyperPodCluster)
    assert platform.cluster.removal_policy is RemovalPolicy.RETAIN
    scene.template().has_resource("AWS::SageMaker::Cluster", {"DeletionPolicy": "Retain"})
