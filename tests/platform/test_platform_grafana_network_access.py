"""TrainingPlatform's Grafana behind network access control (issue 18 section 7): PlatformObservability takes
``grafana_network_access``; the workspace gets ``NetworkAccessControl`` and the provisioner runs in the platform's VPC
and subnet (a restricted workspace refuses callers from outside the allowed networks)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs.errors import FmValidationError
from fmconstructs.observability.grafana import GrafanaNetworkAccess, GrafanaWorkspace
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.platform import PcsOptions, PlatformObservability, PlatformStorage, TrainingPlatform

from tests.conftest import new_scene
from tests.support.platform import AMI

ACCESS = GrafanaNetworkAccess(vpc_endpoint_ids=["vpce-0123456789abcdef0"], allowed_cidrs=["203.0.113.0/24"])


def _platform(observability: PlatformObservability) -> tuple[TrainingPlatform, Template]:
    scene = new_scene()
    platform = TrainingPlatform(
        scene.stack,
        "Platform",
        vpc=scene.vpc,
        instance_type="p5.48xlarge",
        nodes=2,
        orchestrator=PcsOptions(ami=AMI),
        storage=PlatformStorage.for_throughput(target_gbytes_per_s=4.6875),
        observability=observability,
    )
    return platform, scene.template()


@pytest.fixture(scope="module")
def restricted() -> tuple[TrainingPlatform, Template]:
    return _platform(PlatformObservability.new(grafana_network_access=ACCESS))


def test_workspace_takes_the_network_access_control(restricted):
    # GIVEN a platform whose new Grafana workspace allows one VPC endpoint and one CIDR
    _, template = restricted
    # THEN the workspace lists the endpoint and a prefix list for the CIDR
    template.has_resource_properties(
        "AWS::Grafana::Workspace",
        {
            "NetworkAccessControl": Match.object_like(
                {"VpceIds": ["vpce-0123456789abcdef0"], "PrefixListIds": Match.any_value()}
            )
        },
    )


def test_provisioner_runs_in_the_platform_subnet(restricted):
    # GIVEN the restricted workspace
    platform, template = restricted
    # THEN the provisioner Lambda has a VpcConfig in the platform's subnet
    functions: dict[str, Any] = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"VpcConfig": Match.any_value()}}
    )
    subnet_lists = [f["Properties"]["VpcConfig"]["SubnetIds"] for f in functions.values()]
    assert [platform.subnet.subnet_id] in subnet_lists


def test_default_workspace_is_open_and_provisioned_outside_the_vpc():
    # GIVEN the default observability
    _, template = _platform(PlatformObservability.new())
    # THEN no network access control and no Lambda in a VPC
    workspace = next(iter(template.find_resources("AWS::Grafana::Workspace").values()))
    assert "NetworkAccessControl" not in workspace["Properties"]
    assert template.find_resources("AWS::Lambda::Function", {"Properties": {"VpcConfig": Match.any_value()}}) == {}


def test_network_access_without_a_new_grafana_is_refused():
    # WHEN network access is asked for while no Grafana workspace is created
    with pytest.raises(FmValidationError, match="grafana_network_access must be None unless the platform creates"):
        PlatformObservability.new(grafana=False, grafana_network_access=ACCESS)


def test_network_access_with_existing_workspaces_is_refused():
    scene = new_scene()
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    grafana = GrafanaWorkspace(scene.stack, "Grafana", prometheus_workspace_arns=[workspace.workspace_arn])
    with pytest.raises(FmValidationError, match="grafana_network_access"):
        PlatformObservability(
            prometheus_workspace=workspace,
            grafana_workspace=grafana,
            grafana_network_access=ACCESS,
        )


@pytest.mark.parametrize("bad", ["vpce-0123456789abcdef0", ["203.0.113.0/24"], 3])
def test_network_access_of_the_wrong_type_is_refused(bad):
    with pytest.raises(FmValidationError, match="grafana_network_access must be a GrafanaNetworkAccess"):
        PlatformObservability.new(grafana_network_access=bad)
