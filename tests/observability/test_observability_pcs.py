"""monitor_pcs_cluster: every node group, including ones added after the call, sends metrics to the workspace."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fmconstructs import CapacityBlock, FmValidationError
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import PcsAmi, PcsCluster, PcsGpuNodeGroup, PcsLoginNodeGroup

from tests.conftest import ENV, new_scene


@pytest.fixture(scope="module")
def monitored():
    scene = new_scene()
    metrics_stack = cdk.Stack(scene.app, "Metrics", env=ENV)
    workspace = PrometheusWorkspace(metrics_stack, "Prometheus")
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    ami = PcsAmi.from_image_id("ami-0123456789abcdef0")
    cluster.add_login_node_group("Login", ami=ami)
    monitor_pcs_cluster(cluster, workspace, cluster_label="training")
    # added after the call: still monitored
    p5 = cluster.add_gpu_node_group(
        "P5",
        instance_type="p5.48xlarge",
        ami=ami,
        capacity=CapacityBlock(reservation_id="cr-0123456789abcdef0", instance_count=2),
        max_nodes=2,
    )
    p5.add_queue("Gpu", queue_name="gpu")
    return Template.from_stack(scene.stack), scene.stack


def _node_set_up(stack, instance_type):
    """Every step of the node group's bootstrap as one script (the node groups deliver it as an S3 asset)."""
    for group in stack.node.find_all():
        if isinstance(group, PcsLoginNodeGroup) and group.instance_type == instance_type:
            return group.bootstrap.render()
        if isinstance(group, PcsGpuNodeGroup) and group.instance_spec.instance_type == instance_type:
            return group.bootstrap.render()
    raise AssertionError(instance_type)


def test_gpu_nodes_run_the_agent_and_exporters(monitored):
    _, stack = monitored
    text = _node_set_up(stack, "p5.48xlarge")
    assert "fm-prometheus-agent.service" in text and "fm-efa-textfile.timer" in text
    assert "fm-dcgm-exporter" in text
    assert "cluster: training" in text and "node_group: P5" in text and "instance_type: p5.48xlarge" in text
    assert "queue: gpu" in text
    assert "fm-slurm-textfile" not in text


def test_login_node_collects_slurm_states(monitored):
    _, stack = monitored
    text = _node_set_up(stack, "m7i.xlarge")
    assert "fm-slurm-textfile.timer" in text and "queue: login" in text


def test_node_role_may_remote_write_to_the_workspace_only(monitored):
    template, _ = monitored
    statements = [
        s
        for res in template.find_resources("AWS::IAM::Policy").values()
        for s in res["Properties"]["PolicyDocument"]["Statement"]
        if "aps:RemoteWrite" in str(s["Action"])
    ]
    assert len(statements) == 1
    assert statements[0]["Action"] == "aps:RemoteWrite"
    assert "Fn::ImportValue" in str(statements[0]["Resource"])  # the workspace lives in the Metrics stack


def test_invalid_cluster_label(scene):
    cluster = PcsCluster(scene.stack, "Cluster", vpc=scene.vpc, subnet=scene.subnet_a)
    workspace = PrometheusWorkspace(scene.stack, "Prometheus")
    with pytest.raises(FmValidationError, match=r"^cluster_label must be 1-128 letters"):
        monitor_pcs_cluster(cluster, workspace, cluster_label="bad label")
