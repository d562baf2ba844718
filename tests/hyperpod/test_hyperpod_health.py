"""describe_cluster_health with botocore's Stubber (no AWS calls)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from fmconstructs.errors import FmTypeError, FmValidationError
from fmconstructs.hyperpod import describe_cluster_health

T0 = "2026-11-30T00:00:00Z"


def node(instance_id: str, group: str, status: str, message: str | None = None) -> dict:
    status_details = {"Status": status}
    if message is not None:
        status_details["Message"] = message
    return {
        "InstanceGroupName": group,
        "InstanceId": instance_id,
        "InstanceType": "ml.p5.48xlarge",
        "LaunchTime": T0,
        "InstanceStatus": status_details,
    }


@pytest.fixture
def client():
    return boto3.client("sagemaker", region_name="us-east-1")


def test_groups_replacement_and_deep_health_checks(client):
    stubber = Stubber(client)
    stubber.add_response(
        "list_cluster_nodes",
        {"ClusterNodeSummaries": [node("i-0000000000000000a", "gpu", "Running"),
                                  node("i-0000000000000000b", "gpu", "DeepHealthCheckInProgress", "InstanceStress")],
         "NextToken": "page2"},
        {"ClusterName": "my-cluster"},
    )  # fmt: skip
    stubber.add_response(
        "list_cluster_nodes",
        {"ClusterNodeSummaries": [node("i-0000000000000000c", "gpu", "ShuttingDown", "replacing after failure"),
                                  node("i-0000000000000000d", "controller", "Running")]},
        {"ClusterName": "my-cluster", "NextToken": "page2"},
    )  # fmt: skip
    with stubber:
        health = describe_cluster_health("my-cluster", client=client)
    stubber.assert_no_pending_responses()
    assert set(health.groups) == {"gpu", "controller"}
    assert health.groups["gpu"].status_counts == {"Running": 1, "DeepHealthCheckInProgress": 1, "ShuttingDown": 1}
    assert health.groups["gpu"].running == 1
    assert [n.instance_id for n in health.being_replaced] == ["i-0000000000000000c"]
    assert [(n.instance_id, n.message) for n in health.deep_health_checks] == [
        ("i-0000000000000000b", "InstanceStress")
    ]
    assert not health.healthy


def test_all_running_is_healthy(client):
    stubber = Stubber(client)
    stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [node("i-0000000000000000a", "gpu", "Running")]},
                         {"ClusterName": "c"})  # fmt: skip
    with stubber:
        assert describe_cluster_health("c", client=client).healthy


def test_empty_cluster_is_not_healthy(client):
    stubber = Stubber(client)
    stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": []}, {"ClusterName": "c"})
    with stubber:
        health = describe_cluster_health("c", client=client)
    assert health.groups == {} and not health.healthy


@pytest.mark.parametrize("name", [3, None, "bad_name", "x\n", "a" * 64, ""])
def test_rejects_bad_cluster_name(name):
    with pytest.raises(FmValidationError, match="cluster_name"):
        describe_cluster_health(name, client=object())


def test_rejects_non_client():
    with pytest.raises(FmTypeError, match="client"):
        describe_cluster_health("c", client=object())
