"""CapacityBlockEvents handler, scaling: EKS managed node groups and Auto Scaling groups follow their block.

GIVEN botocore Stubbers for eks, autoscaling and sns and two targets on the block (a node group and an Auto Scaling
group of 2) plus one on another block, WHEN EC2's Capacity Block events arrive, THEN: delivered -> min and desired 2;
expiration warning -> 0; a duplicate delivery changes nothing on a group already there; throttling is retried with
backoff; AccessDenied on one group is reported in the notice while the other group is still scaled.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmconstructs.capacity_events.handler import index

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BLOCK = "cr-0123456789abcdef0"
OTHER_BLOCK = "cr-0fedcba9876543210"
CLUSTER = "fm-eks"
NODEGROUP = "gpu-p5"
ASG = "fm-gpu-fleet"
KWARGS = {"region_name": "us-east-1", "aws_access_key_id": "AKIDFAKE", "aws_secret_access_key": "fake-secret"}
TARGETS = [
    {"kind": "eks-nodegroup", "name": NODEGROUP, "cluster": CLUSTER, "reservation": BLOCK, "size": 2, "path": "P/Gpu"},
    {"kind": "auto-scaling-group", "name": ASG, "reservation": BLOCK, "size": 2, "path": "P/Fleet"},
    {"kind": "eks-nodegroup", "name": "other", "cluster": CLUSTER, "reservation": OTHER_BLOCK, "size": 4, "path": "O"},
]


class Clients:
    def __init__(self) -> None:
        self.eks = boto3.client("eks", **KWARGS)
        self.autoscaling = boto3.client("autoscaling", **KWARGS)
        self.sns = boto3.client("sns", **KWARGS)
        self.ec2 = boto3.client("ec2", **KWARGS)
        self.ssm = boto3.client("ssm", **KWARGS)
        self.stubs = {name: Stubber(getattr(self, name)) for name in ("eks", "autoscaling", "sns", "ec2", "ssm")}
        self.sleeps: list[float] = []

    def expect_describe(self, minimum: int, desired: int) -> None:
        self.stubs["eks"].add_response(
            "describe_nodegroup",
            {
                "nodegroup": {
                    "nodegroupName": NODEGROUP,
                    "scalingConfig": {"minSize": minimum, "maxSize": 2, "desiredSize": desired},
                }
            },
            {"clusterName": CLUSTER, "nodegroupName": NODEGROUP},
        )

    def expect_update(self, size: int) -> None:
        self.stubs["eks"].add_response(
            "update_nodegroup_config",
            {"update": {"id": f"upd-{size}", "status": "InProgress", "type": "ConfigUpdate"}},
            {
                "clusterName": CLUSTER,
                "nodegroupName": NODEGROUP,
                "scalingConfig": {"minSize": size, "desiredSize": size},
                "clientRequestToken": ANY,
            },
        )

    def expect_asg(self, size: int) -> None:
        self.stubs["autoscaling"].add_response(
            "update_auto_scaling_group", {}, {"AutoScalingGroupName": ASG, "MinSize": size, "DesiredCapacity": size}
        )

    def expect_publish(self) -> None:
        self.stubs["sns"].add_response(
            "publish", {"MessageId": "m-1"}, {"TopicArn": TOPIC, "Subject": ANY, "Message": ANY}
        )

    def run(self, event: dict[str, Any]) -> dict[str, Any]:
        return index.process(
            event,
            ec2=self.ec2,
            ssm=self.ssm,
            sns=self.sns,
            topic_arn=TOPIC,
            login_node_group_id="",
            eks=self.eks,
            scaling_targets=[dict(t) for t in TARGETS],
            autoscaling=self.autoscaling,
            sleep=self.sleeps.append,
        )

    def verify(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def clients() -> Iterator[Clients]:
    made = Clients()
    for stub in made.stubs.values():
        stub.activate()
    yield made
    for stub in made.stubs.values():
        stub.deactivate()


def _event(detail_type: str, reservation_id: str = BLOCK, event_id: str = "evt-1") -> dict[str, Any]:
    return {
        "id": event_id,
        "source": "aws.ec2",
        "detail-type": detail_type,
        "detail": {"capacity-reservation-id": reservation_id, "end-date": "2026-12-08T11:30:00Z"},
    }


DELIVERED = index.DELIVERED_DETAIL_TYPES[0]
WARNING = index.EXPIRY_DETAIL_TYPES[0]


@pytest.mark.parametrize("detail_type", index.DELIVERED_DETAIL_TYPES)
def test_block_delivered_scales_its_groups_up(clients, detail_type):
    clients.expect_describe(0, 0)
    clients.expect_update(2)
    clients.expect_asg(2)
    clients.expect_publish()
    result = clients.run(_event(detail_type))
    clients.verify()
    assert result["scaled"] == [
        f"EKS node group {NODEGROUP}: min and desired 0 -> 2 (update upd-2)",
        f"Auto Scaling group {ASG}: min and desired -> 2",
    ]
    assert "scaling_failures" not in result
    assert f"Scaled: EKS node group {NODEGROUP}" in result["message"]
    assert "other" not in result["message"]  # the target of another block is not touched


@pytest.mark.parametrize("detail_type", index.EXPIRY_DETAIL_TYPES)
def test_expiration_warning_scales_its_groups_to_zero(clients, detail_type):
    clients.expect_describe(2, 2)
    clients.expect_update(0)
    clients.expect_asg(0)
    clients.expect_publish()
    result = clients.run(_event(detail_type))
    clients.verify()
    assert result["scaled"][0] == f"EKS node group {NODEGROUP}: min and desired 2 -> 0 (update upd-0)"
    assert result["scaled"][1] == f"Auto Scaling group {ASG}: min and desired -> 0"


def test_duplicate_delivery_leaves_a_group_already_scaled(clients):
    clients.expect_describe(2, 2)  # the first delivery already scaled it: no UpdateNodegroupConfig
    clients.expect_asg(2)  # absolute sizes: the same call again is harmless
    clients.expect_publish()
    result = clients.run(_event(DELIVERED))
    clients.verify()
    assert result["scaled"][0] == f"EKS node group {NODEGROUP}: already at 2 node(s)"


def test_the_same_event_sends_the_same_request_token():
    target = TARGETS[0]
    first = index.request_token("evt-1", target, 2)
    assert first == index.request_token("evt-1", target, 2)
    assert first != index.request_token("evt-2", target, 2)
    assert first != index.request_token("evt-1", target, 0)
    assert 1 <= len(first) <= 64


def test_throttling_is_retried_with_backoff(clients):
    for _ in range(2):
        clients.stubs["eks"].add_client_error("describe_nodegroup", "ThrottlingException", "Rate exceeded", 429)
    clients.expect_describe(0, 0)
    clients.stubs["eks"].add_client_error("update_nodegroup_config", "TooManyRequestsException", "slow down", 429)
    clients.expect_update(2)
    clients.stubs["autoscaling"].add_client_error("update_auto_scaling_group", "Throttling", "Rate exceeded", 400)
    clients.expect_asg(2)
    clients.expect_publish()
    result = clients.run(_event(DELIVERED))
    clients.verify()
    assert "scaling_failures" not in result and len(result["scaled"]) == 2
    assert len(clients.sleeps) == 4
    # exponential: the second wait of the describe call is longer than the first (jitter stays within 0.5-1.0)
    assert clients.sleeps[1] > clients.sleeps[0] * 1.0
    assert all(0 < delay <= index.SCALING_MAX_DELAY_S for delay in clients.sleeps)


def test_throttling_that_outlasts_the_attempts_is_a_reported_failure(clients):
    for _ in range(index.SCALING_ATTEMPTS):
        clients.stubs["eks"].add_client_error("describe_nodegroup", "ThrottlingException", "Rate exceeded", 429)
    clients.expect_asg(2)
    clients.expect_publish()
    result = clients.run(_event(DELIVERED))
    clients.verify()
    assert len(clients.sleeps) == index.SCALING_ATTEMPTS - 1
    assert "ThrottlingException" in result["scaling_failures"][0]
    assert result["scaled"] == [f"Auto Scaling group {ASG}: min and desired -> 2"]


def test_access_denied_is_reported_and_the_other_group_still_scales(clients):
    clients.expect_describe(0, 0)
    clients.stubs["eks"].add_client_error("update_nodegroup_config", "AccessDeniedException", "not authorized", 403)
    clients.expect_asg(2)
    clients.expect_publish()
    result = clients.run(_event(DELIVERED))
    clients.verify()
    assert clients.sleeps == []  # not retried
    (failure,) = result["scaling_failures"]
    assert failure.startswith(f"eks-nodegroup {NODEGROUP} to 2:") and "AccessDeniedException" in failure
    assert "Scaling FAILED for: eks-nodegroup gpu-p5 to 2" in result["message"]
    assert f"Scaled: Auto Scaling group {ASG}: min and desired -> 2." in result["message"]


def test_access_denied_on_the_auto_scaling_group_is_reported(clients):
    clients.expect_describe(0, 0)
    clients.expect_update(2)
    clients.stubs["autoscaling"].add_client_error("update_auto_scaling_group", "AccessDenied", "not authorized", 403)
    clients.expect_publish()
    result = clients.run(_event(DELIVERED))
    clients.verify()
    (failure,) = result["scaling_failures"]
    assert failure.startswith(f"auto-scaling-group {ASG} to 2:") and "AccessDenied" in failure


def test_another_blocks_events_scale_only_that_blocks_groups(clients):
    clients.stubs["eks"].add_response(
        "describe_nodegroup",
        {"nodegroup": {"nodegroupName": "other", "scalingConfig": {"minSize": 0, "maxSize": 4, "desiredSize": 0}}},
        {"clusterName": CLUSTER, "nodegroupName": "other"},
    )
    clients.stubs["eks"].add_response(
        "update_nodegroup_config",
        {"update": {"id": "upd-o"}},
        {
            "clusterName": CLUSTER,
            "nodegroupName": "other",
            "scalingConfig": {"minSize": 4, "desiredSize": 4},
            "clientRequestToken": ANY,
        },
    )
    clients.expect_publish()
    result = clients.run(_event(DELIVERED, reservation_id=OTHER_BLOCK))
    clients.verify()
    assert result["scaled"] == ["EKS node group other: min and desired 0 -> 4 (update upd-o)"]


@pytest.mark.parametrize("reservation_id", ["cr-x", "", "i-0123456789abcdef0"])
def test_unrecognized_reservation_id_scales_nothing(clients, reservation_id):
    clients.expect_publish()
    result = clients.run(_event(DELIVERED, reservation_id=reservation_id))
    clients.verify()
    assert "scaled" not in result


def test_other_events_scale_nothing(clients):
    clients.expect_publish()
    result = clients.run(_event("EC2 Capacity Reservation Instance Interruption Warning"))
    clients.verify()
    assert "scaled" not in result


def test_unknown_target_kind_is_a_reported_failure():
    done, failed = index.scale_targets(
        [{"kind": "karpenter", "name": "x", "reservation": BLOCK, "size": 1}],
        reservation_id=BLOCK,
        starting=True,
        event_id="e",
        eks=None,
        autoscaling=None,
    )
    assert done == [] and failed == ["karpenter x: unknown target kind"]
