"""Karpenter's restricted tag keys and label keys are refused where Karpenter would refuse them (EC2NodeClass
spec.tags XValidation; NodePool spec.template.metadata.labels x-kubernetes-validations), with aws: tag keys."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import FmValidationError
from fmconstructs.eks.auto_mode import auto_mode_node_class_manifest
from fmconstructs.eks.karpenter_manifests import ec2_node_class_manifest, node_pool_manifest


def _node_class(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "gpu",
        "role": "NodeRole",
        "subnet_ids": ["subnet-0123456789abcdef0"],
        "security_group_ids": ["sg-0123456789abcdef0"],
    }
    return ec2_node_class_manifest(**{**props, **overrides})


def _auto_node_class(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "gpu",
        "role": "NodeRole",
        "subnet_ids": ["subnet-0123456789abcdef0"],
        "security_group_ids": ["sg-0123456789abcdef0"],
    }
    return auto_mode_node_class_manifest(**{**props, **overrides})


def _pool(**overrides: Any) -> dict[str, Any]:
    return node_pool_manifest(
        name="gpu", node_class_name="gpu", instance_types=["p5.48xlarge"], max_nodes=4, **overrides
    )


RESTRICTED_TAGS = [
    "aws:cloudformation:stack-name",
    "AWS:team",
    "kubernetes.io/cluster/training",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
]


@pytest.mark.parametrize("build", [_node_class, _auto_node_class], ids=["ec2nodeclass", "auto-mode"])
@pytest.mark.parametrize("key", RESTRICTED_TAGS)
def test_restricted_tag_keys_are_refused(build: Any, key: str) -> None:
    with pytest.raises(FmValidationError, match=r"^tags key must be a tag key") as caught:
        build(tags={key: "x"})
    assert caught.value.value == key


@pytest.mark.parametrize("build", [_node_class, _auto_node_class], ids=["ec2nodeclass", "auto-mode"])
@pytest.mark.parametrize("key", ["team", "cost-center", "karpenter.sh/discovery", "example.com/owner", "eks:team"])
def test_other_tag_keys_are_kept(build: Any, key: str) -> None:
    assert build(tags={key: "x"})["spec"]["tags"] == {key: "x"}


def test_selector_tags_may_name_aws_keys() -> None:
    """Selecting subnets by an AWS tag is legal (the selector reads tags, it does not set them)."""
    manifest = _node_class(subnet_ids=[], subnet_tags={"aws:cloudformation:stack-name": "Network"})
    assert {"tags": {"aws:cloudformation:stack-name": "Network"}} in manifest["spec"]["subnetSelectorTerms"]


RESTRICTED_LABELS = [
    "kubernetes.io/hostname",
    "karpenter.sh/nodepool",
    "karpenter.sh/registered",
    "kubernetes.io/role",
    "node-role.kubernetes.io/worker",
    "k8s.io/team",
    "karpenter.k8s.aws/ec2nodeclass",
]


@pytest.mark.parametrize("key", RESTRICTED_LABELS)
def test_restricted_label_keys_are_refused(key: str) -> None:
    with pytest.raises(FmValidationError, match=r"^labels key must be a label key Karpenter leaves to the user"):
        _pool(labels={key: "x"})


@pytest.mark.parametrize(
    "key",
    [
        "team",
        "example.com/team",
        "node.kubernetes.io/role",  # the node.kubernetes.io domain is the user's
        "node-restriction.kubernetes.io/team",
        "topology.kubernetes.io/zone",
        "kops.k8s.io/instancegroup",
        "karpenter.sh/capacity-type",
        "karpenter.k8s.aws/instance-family",
    ],
)
def test_user_and_well_known_label_keys_are_kept(key: str) -> None:
    assert _pool(labels={key: "x"})["spec"]["template"]["metadata"]["labels"][key] == "x"
