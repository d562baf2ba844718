"""ParallelCluster node groups take ``security_groups`` (one vocabulary across the backends); the old keyword
``additional_security_groups`` still works for one minor version, with a DeprecationWarning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import aws_ec2 as ec2

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.parallelcluster import ComputeResource, HeadNode, LoginNodePool, SlurmQueue

from tests.conftest import Scene


def _head(scene: Scene, **groups: Any) -> HeadNode:
    return HeadNode(instance_type="c7i.large", subnet=scene.subnet_a, **groups)


def _login(scene: Scene, **groups: Any) -> LoginNodePool:
    return LoginNodePool(name="login", instance_type="c7i.large", subnet=scene.subnet_a, **groups)


def _queue(scene: Scene, **groups: Any) -> SlurmQueue:
    resource = ComputeResource(name="c", instance_type="c7i.large")
    return SlurmQueue(name="q", subnets=[scene.subnet_a], compute_resources=[resource], **groups)


BUILDERS: dict[str, Callable[..., Any]] = {"HeadNode": _head, "LoginNodePool": _login, "SlurmQueue": _queue}


def _group(scene: Scene) -> ec2.ISecurityGroup:
    return ec2.SecurityGroup.from_security_group_id(scene.stack, "Extra", "sg-0123456789abcdef0")


@pytest.mark.parametrize("owner", BUILDERS)
def test_security_groups_become_additional_security_groups(scene: Scene, owner: str) -> None:
    node_group = BUILDERS[owner](scene, security_groups=[_group(scene)])
    assert node_group.to_config()["Networking"]["AdditionalSecurityGroups"] == ["sg-0123456789abcdef0"]
    assert "SecurityGroups" not in node_group.to_config()["Networking"]


@pytest.mark.parametrize("owner", BUILDERS)
def test_old_keyword_warns_and_gives_the_same_config(scene: Scene, owner: str) -> None:
    group = _group(scene)
    new = BUILDERS[owner](scene, security_groups=[group])
    with pytest.warns(
        DeprecationWarning, match=rf"{owner}\(additional_security_groups=\) is deprecated.*security_groups="
    ):
        old = BUILDERS[owner](scene, additional_security_groups=[group])
    assert old.to_config() == new.to_config()
    assert old.security_groups == [group]
    with pytest.warns(DeprecationWarning, match=rf"{owner}\.additional_security_groups is deprecated"):
        assert old.additional_security_groups == [group]


@pytest.mark.parametrize("owner", BUILDERS)
def test_old_and_new_keyword_together_refused(scene: Scene, owner: str) -> None:
    group = _group(scene)
    with pytest.raises(FmTypeError, match="additional_security_groups"):
        BUILDERS[owner](scene, security_groups=[group], additional_security_groups=[group])


@pytest.mark.parametrize("owner", BUILDERS)
@pytest.mark.parametrize("bad", ["sg-0123456789abcdef0", [None], ["sg-0123456789abcdef0"]])
def test_bad_security_groups_name_the_new_keyword(scene: Scene, owner: str, bad: object) -> None:
    with pytest.raises(FmValidationError, match=r"^security_groups"):
        BUILDERS[owner](scene, security_groups=bad)
