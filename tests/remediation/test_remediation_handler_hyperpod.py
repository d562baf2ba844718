"""The remediation handler on SageMaker HyperPod: ListClusterNodes, BatchReplaceClusterNodes and
BatchRebootClusterNodes through botocore's Stubber (moto has none of them), the ledger and notices in moto."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from moto import mock_aws

from fmconstructs.remediation import JobKill, RemediationTarget, Trigger
from fmconstructs.remediation.handler import backends as kb

from tests.support.remediation_world import REGION, World, alert_record, sns_event
from tests.support.remediation_world import policy as _policy

CLUSTER = "train"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"
TARGET = json.loads(RemediationTarget.hyperpod(cluster_name=CLUSTER, cluster_arn=ARN).to_json())
NO_RETRY = Config(retries={"total_max_attempts": 1})
LAUNCHED = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _id(n: int) -> str:
    return f"i-{n:017x}"


def _summary(n: int, *, status: str = "Running", group: str = "gpu") -> dict[str, Any]:
    return {
        "InstanceGroupName": group,
        "InstanceId": _id(n),
        "InstanceType": "ml.p5.48xlarge",
        "LaunchTime": LAUNCHED,
        "InstanceStatus": {"Status": status},
        "PrivateDnsHostname": f"ip-10-1-0-{n}.ec2.internal",
    }


def _stubbed() -> tuple[Any, Stubber]:
    client = boto3.client("sagemaker", region_name=REGION, config=NO_RETRY)
    return client, Stubber(client)


def _list(stubber: Stubber, *summaries: dict[str, Any]) -> None:
    stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": list(summaries)}, {"ClusterName": CLUSTER})


@pytest.fixture
def world(tmp_path):
    with mock_aws():
        yield World(tmp_path)


def _run(world: World, stubber: Stubber, client: Any, event: dict[str, Any], **policy: Any) -> list[str]:
    with stubber:
        result = world.run(event, _policy(**policy), TARGET, clients={"sagemaker": client})
        stubber.assert_no_pending_responses()
    return [r["outcome"] for r in result["records"]]


def test_a_fatal_xid_replaces_the_node_with_batch_replace_cluster_nodes(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(1), _summary(2))
    stubber.add_response(
        "batch_replace_cluster_nodes", {"Successful": [_id(2)]}, {"ClusterName": CLUSTER, "NodeIds": [_id(2)]}
    )
    outcomes = _run(world, stubber, client, sns_event(alert_record("GpuCriticalXid", _id(2))), job_kill=JobKill.FATAL)
    assert outcomes == ["replaced"]
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[replaced]") and "BatchReplaceClusterNodes" in notice["Message"]


def test_a_failed_node_check_replaces_without_job_kill(world):
    # the node that failed a check is out of work already (Slurm drained it), so job_kill NEVER does not defer it
    client, stubber = _stubbed()
    _list(stubber, _summary(3))
    stubber.add_response(
        "batch_replace_cluster_nodes", {"Successful": [_id(3)]}, {"ClusterName": CLUSTER, "NodeIds": [_id(3)]}
    )
    event = sns_event(alert_record("FmNodeCheckFailed", _id(3), check="efa-devices"))
    assert _run(world, stubber, client, event) == ["replaced"]


def test_without_job_kill_a_fatal_xid_is_deferred_and_nothing_is_called(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(4))
    assert _run(world, stubber, client, sns_event(alert_record("GpuCriticalXid", _id(4)))) == ["replace-deferred"]


def test_a_drain_only_notifies(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(5))
    assert _run(world, stubber, client, sns_event(alert_record("EfaRdmaWorkRequestErrors", _id(5)))) == ["notified"]
    (notice,) = world.notices()
    assert "cannot drain" in notice["Message"]


def test_a_reset_xid_reboots_with_batch_reboot_cluster_nodes(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(6))
    stubber.add_response(
        "batch_reboot_cluster_nodes", {"Successful": [_id(6)]}, {"ClusterName": CLUSTER, "NodeIds": [_id(6)]}
    )
    event = sns_event(alert_record("GpuCriticalXid", _id(6), fmconstructs_trigger="reset-xid"))
    assert _run(world, stubber, client, event, job_kill=JobKill.FATAL, fatal_triggers=[Trigger.RESET_XID]) == [
        "rebooted"
    ]


def test_a_node_the_call_lists_as_failed_is_that_nodes_failure_and_its_token_comes_back(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(7))
    failed = {"NodeId": _id(7), "ErrorCode": "InstanceIdInUse", "Message": "another operation is in progress"}
    stubber.add_response("batch_replace_cluster_nodes", {"Failed": [failed]})
    event = sns_event(alert_record("GpuCriticalXid", _id(7)))
    # max 1 per hour: the failed call gave its token back (and released the lease), so the redelivery replaces
    assert _run(world, stubber, client, event, job_kill=JobKill.FATAL, max_replacements_per_hour=1) == ["failed"]
    assert "InstanceIdInUse" in world.notices()[0]["Message"]
    client, stubber = _stubbed()
    _list(stubber, _summary(7))
    stubber.add_response("batch_replace_cluster_nodes", {"Successful": [_id(7)]})
    assert _run(world, stubber, client, event, job_kill=JobKill.FATAL, max_replacements_per_hour=1) == ["replaced"]


def test_beyond_the_hourly_limit_the_node_is_left_as_it_is(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(8), _summary(9))
    stubber.add_response("batch_replace_cluster_nodes", {"Successful": [_id(8)]})
    _list(stubber, _summary(8), _summary(9))
    event = sns_event(alert_record("GpuCriticalXid", _id(8)), alert_record("GpuCriticalXid", _id(9)))
    outcomes = _run(world, stubber, client, event, job_kill=JobKill.FATAL, max_replacements_per_hour=1)
    assert outcomes == ["replaced", "rate-limited"]


@pytest.mark.parametrize(("status", "outcome"), [("ShuttingDown", "instance-gone"), ("NotFound", "instance-gone")])
def test_a_node_on_its_way_out_is_not_acted_on(world, status, outcome):
    client, stubber = _stubbed()
    _list(stubber, _summary(10, status=status))
    assert _run(world, stubber, client, sns_event(alert_record("GpuCriticalXid", _id(10)))) == [outcome]


def test_an_instance_outside_the_cluster_is_left_alone_after_every_page(world):
    client, stubber = _stubbed()
    stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [_summary(1)], "NextToken": "p2"})
    stubber.add_response(
        "list_cluster_nodes", {"ClusterNodeSummaries": [_summary(2)]}, {"ClusterName": CLUSTER, "NextToken": "p2"}
    )
    outcomes = _run(world, stubber, client, sns_event(alert_record("GpuCriticalXid", _id(99))), job_kill=JobKill.FATAL)
    assert outcomes == ["not-in-cluster"]


def test_an_alert_naming_a_slurm_node_finds_its_instance_by_private_dns_host_name(world):
    client, stubber = _stubbed()
    _list(stubber, _summary(11), _summary(12))  # the node name -> instance id
    _list(stubber, _summary(11), _summary(12))  # membership
    stubber.add_response("batch_replace_cluster_nodes", {"Successful": [_id(12)]})
    record = alert_record("GpuCriticalXid", "", node="ip-10-1-0-12")
    assert _run(world, stubber, client, sns_event(record), job_kill=JobKill.FATAL) == ["replaced"]


def test_batches_are_chunks_of_at_most_25_node_ids():
    client, stubber = _stubbed()
    ids = [_id(n) for n in range(1, 31)]
    stubber.add_response(
        "batch_replace_cluster_nodes", {"Successful": ids[:25]}, {"ClusterName": CLUSTER, "NodeIds": ids[:25]}
    )
    failed = {"NodeId": ids[29], "ErrorCode": "InvalidInstanceStatus", "Message": "not now"}
    stubber.add_response(
        "batch_replace_cluster_nodes",
        {"Successful": ids[25:29], "Failed": [failed]},
        {"ClusterName": CLUSTER, "NodeIds": ids[25:]},
    )
    with stubber:
        done, errors = kb.hyperpod_batch(client, kb.HYPERPOD_REPLACE, CLUSTER, ids)
    assert done == ids[:29]
    assert list(errors) == [ids[29]] and errors[ids[29]].response["Error"]["Code"] == "InvalidInstanceStatus"


def test_batch_refuses_other_operations():
    client, _ = _stubbed()
    with pytest.raises(ValueError, match="operation must be"):
        kb.hyperpod_batch(client, "terminate_instances", CLUSTER, [_id(1)])
