"""HyperPod's EKS warnings are members of the one registry (``fmconstructs.errors.WarningId``), ids unchanged."""

from __future__ import annotations

from enum import Enum

import pytest

from fmconstructs.errors import WarningId
from fmconstructs.hyperpod.eks_addons import HyperPodAddonsWarning
from fmconstructs.hyperpod.eks_dependencies import HyperPodEksWarning


@pytest.mark.parametrize(
    ("old", "member", "qualified"),
    [
        (
            HyperPodAddonsWarning.WITHOUT_HYPERPOD_CLUSTER,
            WarningId.HYPERPOD_ADDONS_WITHOUT_HYPERPOD_CLUSTER,
            "fmconstructs:hyperpod-addons-without-hyperpod-cluster",
        ),
        (
            HyperPodEksWarning.DEPENDENCIES_NOT_INSTALLED,
            WarningId.HYPERPOD_DEPENDENCIES_NOT_INSTALLED,
            "fmconstructs:hyperpod-dependencies-not-installed",
        ),
    ],
    ids=["addons-without-hyperpod-cluster", "dependencies-not-installed"],
)
def test_the_old_names_are_the_registry_members_with_the_same_ids(
    old: WarningId, member: WarningId, qualified: str
) -> None:
    assert old is member
    assert member.qualified == qualified


@pytest.mark.parametrize("holder", [HyperPodAddonsWarning, HyperPodEksWarning], ids=lambda c: c.__name__)
def test_the_old_names_are_not_a_second_registry(holder: type) -> None:
    assert not issubclass(holder, Enum)
    members = {name: value for name, value in vars(holder).items() if not name.startswith("_")}
    assert members and all(isinstance(value, WarningId) for value in members.values())
