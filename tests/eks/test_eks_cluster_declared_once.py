"""GpuEksCluster's keyword arguments are declared once: the signature (names, types, defaults, the docstring's
``:param`` list); the constructor builds its record from it (``_ClusterProps.of(locals())``) instead of passing every
keyword a second time. Its public-endpoint warning is a member of the one registry, ``WarningId``."""

from __future__ import annotations

import dataclasses
import inspect
import re

import aws_cdk as cdk
from aws_cdk.assertions import Annotations, Match

from fmconstructs.eks import EksWarning, GpuEksCluster
from fmconstructs.eks._cluster_props import _ClusterProps
from fmconstructs.errors import WarningId

from tests.conftest import new_scene


def _keyword_parameters(function: object) -> list[str]:
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    return [name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_the_record_fields_are_the_constructor_keywords():
    fields = [field.name for field in dataclasses.fields(_ClusterProps)]
    assert fields == _keyword_parameters(GpuEksCluster.__init__)


def test_every_keyword_is_documented_once():
    documented = re.findall(r":param (\w+):", GpuEksCluster.__doc__ or "")
    assert sorted(documented) == sorted(_keyword_parameters(GpuEksCluster.__init__))


def test_the_record_takes_the_keywords_among_locals():
    arguments = {name: object() for name in _keyword_parameters(GpuEksCluster.__init__)}
    record = _ClusterProps.of({**arguments, "self": object(), "scope": object(), "id": "Cluster"})
    assert vars(record) == arguments


def test_the_public_endpoint_warning_is_a_registry_member_with_its_old_id():
    assert WarningId.EKS_PUBLIC_ENDPOINT_OPEN.qualified == "fmconstructs:eks-public-endpoint-open-to-internet"
    assert EksWarning.PUBLIC_ENDPOINT_OPEN is WarningId.EKS_PUBLIC_ENDPOINT_OPEN
    assert EksWarning.PUBLIC_ENDPOINT_OPEN.qualified == "fmconstructs:eks-public-endpoint-open-to-internet"


def _public_endpoint_warnings(acknowledge: str | None) -> list[object]:
    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, public_endpoint_cidrs=["0.0.0.0/0"])
    if acknowledge is not None:
        cdk.Annotations.of(cluster).acknowledge_warning(acknowledge)
    pattern = re.escape(WarningId.EKS_PUBLIC_ENDPOINT_OPEN.qualified)
    return Annotations.from_stack(scene.stack).find_warning("*", Match.string_like_regexp(pattern))


def test_the_public_endpoint_warning_carries_the_registry_id():
    assert _public_endpoint_warnings(acknowledge=None)


def test_an_acknowledgement_written_with_the_old_id_still_silences_it():
    assert _public_endpoint_warnings(acknowledge="fmconstructs:eks-public-endpoint-open-to-internet") == []
