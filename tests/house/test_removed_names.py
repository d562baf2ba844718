"""fmconstructs 0.3.0 removed the names deprecated in 0.2.0 (CHANGELOG.md "Removed" of 0.3.0). A user who upgrades and
still passes an old keyword gets an error naming the old and the new name (an ``FmValidationError`` that is also a
``TypeError``, with the construct path for constructs), not Python's bare "unexpected keyword argument"; reading an old
attribute raises ``AttributeError`` naming its replacement; the old names are gone from the signatures.
"""

from __future__ import annotations

import inspect
import re

import pytest

import fmconstructs
from fmconstructs import FmValidationError
from fmconstructs.capacity import Capacity, OnDemand
from fmconstructs.compute import GpuAutoScalingGroup, GpuLaunchTemplate
from fmconstructs.eks import GpuNodeGroup, GpuNodeGroupOptions, SystemNodeGroupOptions
from fmconstructs.pcs import PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup, SlurmVersion
from fmconstructs.pcs.node_group import PcsGpuNodeGroupOptions, PcsLoginNodeGroupOptions
from fmconstructs.preflight import ReservationInfo, check_capacity
from fmconstructs.storage import size_for_throughput
from fmconstructs.storage.sizing import LustreSizing

from tests.conftest import new_scene
from tests.support.removed_names import REMOVED_ATTRIBUTES, REMOVED_KEYWORDS


@pytest.mark.parametrize(
    ("owner", "call", "old", "new"), REMOVED_KEYWORDS, ids=[f"{o}-{k}" for o, _, k, _ in REMOVED_KEYWORDS]
)
def test_a_removed_keyword_is_refused_naming_its_new_name(owner, call, old, new):
    with pytest.raises(FmValidationError) as error:
        call({old: 4})
    assert isinstance(error.value, TypeError)  # what Python would raise for an unknown keyword, with the rename
    assert (error.value.parameter, error.value.value) == (old, 4)
    message = str(error.value)
    assert message.startswith(
        f"{old} must be renamed to {new} ({owner}({old}=) was removed in fmconstructs 0.3.0), got 4"
    ), message
    if owner[0].isupper() and owner not in ("SystemNodeGroupOptions", "ReservationInfo", "Capacity.validate_for"):
        assert error.value.path == "Test/Old"  # constructs: the error names where


@pytest.mark.parametrize(
    ("owner", "call", "old", "new"), REMOVED_KEYWORDS, ids=[f"{o}-{k}" for o, _, k, _ in REMOVED_KEYWORDS]
)
def test_the_removed_keyword_is_gone_from_the_signature(owner, call, old, new):
    function = {
        "PcsGpuNodeGroup": PcsGpuNodeGroup.__init__,
        "PcsLoginNodeGroup": PcsLoginNodeGroup.__init__,
        "GpuLaunchTemplate": GpuLaunchTemplate.__init__,
        "GpuAutoScalingGroup": GpuAutoScalingGroup.__init__,
        "GpuNodeGroup": GpuNodeGroup.__init__,
        "SystemNodeGroupOptions": SystemNodeGroupOptions.__init__,
        "Capacity.validate_for": Capacity.validate_for,
        "ReservationInfo": ReservationInfo.__init__,
        "check_capacity": check_capacity,
        "size_for_throughput": size_for_throughput,
    }[owner]
    # Node groups take their options as **options: Unpack[<Options>] (one declaration of the keywords).
    options = {
        "PcsGpuNodeGroup": PcsGpuNodeGroupOptions,
        "PcsLoginNodeGroup": PcsLoginNodeGroupOptions,
        "GpuNodeGroup": GpuNodeGroupOptions,
    }.get(owner)
    parameters = set(inspect.signature(function).parameters) | set(options.__annotations__ if options else ())
    assert old not in parameters and new in parameters


def _instance(cls: type) -> object:
    """A real instance where one is cheap; for the constructs, an object of the class made without its constructor
    (the removed attribute reads nothing from the instance)."""
    if cls is SystemNodeGroupOptions:
        return SystemNodeGroupOptions()
    if cls is Capacity:
        return OnDemand()
    if cls is LustreSizing:
        return size_for_throughput(4.5)
    if cls is ReservationInfo:
        return ReservationInfo("cr-0123456789abcdef0", "p5.48xlarge", "us-east-1a", 2, 2, "active", "default")
    return object.__new__(cls)


@pytest.mark.parametrize(
    ("cls", "old", "new"), REMOVED_ATTRIBUTES, ids=[f"{c.__name__}.{a}" for c, a, _ in REMOVED_ATTRIBUTES]
)
def test_a_removed_attribute_names_its_replacement(cls, old, new):
    with pytest.raises(
        AttributeError,
        match=rf"^{cls.__name__}(Base)?\.{old} was removed in fmconstructs 0\.3\.0: use "
        rf"{re.escape(new)}",
    ):
        getattr(_instance(cls), old)


def test_pinned_availability_zone_is_gone():
    assert "pinned_availability_zone" not in fmconstructs.__all__
    with pytest.raises(ImportError):
        from fmconstructs.capacity import pinned_availability_zone  # noqa: F401


def test_slurm_version_as_a_string_is_refused_naming_the_member():
    scene = new_scene()
    with pytest.raises(FmValidationError) as error:
        PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, slurm_version="24.11")
    assert isinstance(error.value, TypeError)
    assert str(error.value).startswith(
        "slurm_version must be SlurmVersion.V24_11, not the plain string (refused since fmconstructs 0.3.0), got "
    ), str(error.value)
    cluster = PcsCluster(scene.stack, "Member", vpc=scene.vpc, slurm_version=SlurmVersion.V24_11)
    assert cluster.slurm_version is SlurmVersion.V24_11


def test_no_deprecation_helper_is_left():
    from fmconstructs import _validate

    assert not hasattr(_validate, "renamed")
