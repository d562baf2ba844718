"""GpuEksCluster's endpoint access as read-only attributes, matching what the cluster resource is given."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.errors import is_token

from tests.conftest import new_scene

# public_endpoint_cidrs -> (endpoint_public, endpoint_private, public_access_cidrs)
CASES: list[tuple[list[str] | None, tuple[bool, bool, tuple[str, ...] | None]]] = [
    (None, (False, True, None)),
    (["203.0.113.0/24"], (True, True, ("203.0.113.0/24",))),
    (["203.0.113.0/24", "2001:db8::/32"], (True, True, ("203.0.113.0/24", "2001:db8::/32"))),
    (["0.0.0.0/0"], (True, True, ("0.0.0.0/0",))),
]


def _cluster(cidrs: Any) -> tuple[GpuEksCluster, cdk.Stack]:
    scene = new_scene()
    return GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, system_node_group=None, public_endpoint_cidrs=cidrs), (
        scene.stack
    )


def _vpc_config(stack: cdk.Stack) -> dict[str, Any]:
    clusters = Template.from_stack(stack).find_resources("AWS::EKS::Cluster")
    assert len(clusters) == 1
    config: dict[str, Any] = next(iter(clusters.values()))["Properties"]["ResourcesVpcConfig"]
    return config


@pytest.mark.parametrize(("cidrs", "expected"), CASES, ids=[str(c) for c, _ in CASES])
def test_endpoint_attributes_describe_the_configuration(
    cidrs: list[str] | None, expected: tuple[bool, bool, tuple[str, ...] | None]
) -> None:
    cluster, _ = _cluster(cidrs)
    assert (cluster.endpoint_public, cluster.endpoint_private, cluster.public_access_cidrs) == expected


@pytest.mark.parametrize(("cidrs", "expected"), CASES, ids=[str(c) for c, _ in CASES])
def test_endpoint_attributes_match_the_cluster_resource(
    cidrs: list[str] | None, expected: tuple[bool, bool, tuple[str, ...] | None]
) -> None:
    cluster, stack = _cluster(cidrs)
    config = _vpc_config(stack)
    assert config["EndpointPublicAccess"] is cluster.endpoint_public
    assert config["EndpointPrivateAccess"] is cluster.endpoint_private
    if cluster.public_access_cidrs is None:
        assert "PublicAccessCidrs" not in config
    else:
        assert config["PublicAccessCidrs"] == list(cluster.public_access_cidrs)


def test_deploy_time_cidrs_stay_tokens() -> None:
    scene = new_scene()
    cidrs = cdk.CfnParameter(scene.stack, "Cidrs", type="CommaDelimitedList").value_as_list
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc, system_node_group=None, public_endpoint_cidrs=cidrs)
    assert cluster.endpoint_public and cluster.endpoint_private
    assert cluster.public_access_cidrs is not None
    assert all(is_token(cidr) for cidr in cluster.public_access_cidrs)


@pytest.mark.parametrize("attribute", ["endpoint_public", "endpoint_private", "public_access_cidrs"])
def test_endpoint_attributes_are_read_only(attribute: str) -> None:
    cluster, _ = _cluster(None)
    with pytest.raises(AttributeError):
        setattr(cluster, attribute, True)
