"""The EKS node monitoring agent add-on is installed at a pinned version (with its source in
fmconstructs.eks.health), overridable with ``add_node_monitoring_agent(addon_version=...)`` (issue 20: versions pinned
with their source)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from fmconstructs.eks import GpuEksCluster
from fmconstructs.eks.health import NODE_MONITORING_AGENT_ADDON_NAME, NODE_MONITORING_AGENT_ADDON_VERSION
from fmconstructs.errors import FmValidationError


def _agent(template: Template) -> dict[str, Any]:
    (props,) = [
        r["Properties"]
        for r in template.find_resources("AWS::EKS::Addon").values()
        if r["Properties"]["AddonName"] == NODE_MONITORING_AGENT_ADDON_NAME
    ]
    return dict(props)


def test_the_pin_is_an_eks_build_version() -> None:
    assert NODE_MONITORING_AGENT_ADDON_VERSION == "v1.7.0-eksbuild.1"


def test_auto_repair_installs_the_pinned_agent(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_gpu_node_group("P5", instance_type="p5.48xlarge", max_nodes=1)
    assert _agent(Template.from_stack(scene.stack))["AddonVersion"] == NODE_MONITORING_AGENT_ADDON_VERSION


def test_the_version_is_overridable(scene: Any) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    cluster.add_node_monitoring_agent(addon_version="v1.6.7-eksbuild.1")
    assert _agent(Template.from_stack(scene.stack))["AddonVersion"] == "v1.6.7-eksbuild.1"


@pytest.mark.parametrize("version", ["", "v1.7.0 ", "v1.7.0\n", 170])
def test_a_bad_version_is_refused(scene: Any, version: object) -> None:
    cluster = GpuEksCluster(scene.stack, "Cluster", vpc=scene.vpc)
    with pytest.raises(FmValidationError, match="addon_version"):
        cluster.add_node_monitoring_agent(addon_version=version)  # type: ignore[arg-type]
