"""The ``Custom::FmPcsInstanceHealthChecks`` handler: its PCS calls against botocore's model (Stubber), its retries of
throttling (botocore's own retry path), truthful failures, a Delete that changes nothing, and the wait for ACTIVE on a
fake PCS (is_complete)."""

from __future__ import annotations

import datetime
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from fmconstructs.pcs.handler import index
from fmconstructs.pcs.instance_health import PcsDeepHealthProfile, PcsInstanceHealthChecks, PcsRepairAction

CLUSTER, GROUP = "pcs_abc123", "pcs_def456"
WANTED = PcsInstanceHealthChecks(deep_health_check_on_start=PcsDeepHealthProfile.QUICK).to_api()
EVENT = {
    "RequestType": "Create",
    "ResourceProperties": {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:x",
        "ClusterId": CLUSTER,
        "ComputeNodeGroupId": GROUP,
        "InstanceHealthChecks": WANTED,
    },
}
GET = {"clusterIdentifier": CLUSTER, "computeNodeGroupIdentifier": GROUP}
UPDATE = {**GET, "instanceHealthChecks": WANTED}


def _client() -> Any:
    return boto3.client("pcs", region_name="us-east-1", config=index.CLIENT_CONFIG)


def _group(status: str = "ACTIVE", checks: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A ``ComputeNodeGroup`` with every member the model requires."""
    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    group: dict[str, Any] = {
        "name": "p5-nodes",
        "id": GROUP,
        "arn": f"arn:aws:pcs:us-east-1:123456789012:cluster/{CLUSTER}/computenodegroup/{GROUP}",
        "clusterId": CLUSTER,
        "createdAt": now,
        "modifiedAt": now,
        "status": status,
        "subnetIds": ["subnet-0aaaaaaaaaaaaaaa1"],
        "iamInstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/aws-pcs/p5",
        "scalingConfiguration": {"minInstanceCount": 0, "maxInstanceCount": 2},
        "instanceConfigs": [{"instanceType": "p5.48xlarge"}],
        **extra,
    }
    if checks is not None:
        group["instanceHealthChecks"] = checks
    return {"computeNodeGroup": group}


@pytest.fixture
def pcs() -> Any:
    client = _client()
    with Stubber(client) as stubber:
        client.stubber = stubber
        yield client
        stubber.assert_no_pending_responses()


def test_create_sets_the_checks_once(pcs):
    pcs.stubber.add_response("get_compute_node_group", _group(), GET)
    pcs.stubber.add_response("update_compute_node_group", _group("UPDATING"), UPDATE)
    result = index.on_event(EVENT, pcs=pcs)
    assert result == {"PhysicalResourceId": f"{CLUSTER}/{GROUP}", "Data": {"Changed": "true", "Requested": "true"}}


def test_equal_settings_make_no_call(pcs):
    # PCS returns no repairAction that was not sent, and an unsent one is AUTO: the same settings.
    current = {"healthMonitoring": {"mode": "STANDARD"}, "deepHealthChecks": {"onStart": {"profile": "QUICK"}}}
    pcs.stubber.add_response("get_compute_node_group", _group(checks=current), GET)
    result = index.on_event({**EVENT, "RequestType": "Update"}, pcs=pcs)
    assert result["Data"] == {"Changed": "false", "Requested": "false"}


def test_update_changes_what_differs(pcs):
    wanted = PcsInstanceHealthChecks(monitoring_repair_action=PcsRepairAction.ISOLATE).to_api()
    event = {
        "RequestType": "Update",
        "ResourceProperties": {**EVENT["ResourceProperties"], "InstanceHealthChecks": wanted},
    }
    current = {"healthMonitoring": {"mode": "STANDARD"}}
    pcs.stubber.add_response("get_compute_node_group", _group(checks=current), GET)
    pcs.stubber.add_response("update_compute_node_group", _group("UPDATING"), {**GET, "instanceHealthChecks": wanted})
    assert index.on_event(event, pcs=pcs)["Data"]["Requested"] == "true"


def test_a_busy_group_is_updated_later(pcs):
    pcs.stubber.add_response("get_compute_node_group", _group("UPDATING"), GET)
    assert index.on_event(EVENT, pcs=pcs)["Data"] == {"Changed": "true", "Requested": "false"}


def test_conflict_is_not_a_failure(pcs):
    pcs.stubber.add_response("get_compute_node_group", _group(), GET)
    pcs.stubber.add_client_error("update_compute_node_group", "ConflictException", "busy", 409, expected_params=UPDATE)
    assert index.on_event(EVENT, pcs=pcs)["Data"]["Requested"] == "false"


def test_a_refused_update_fails_with_the_service_message(pcs):
    pcs.stubber.add_response("get_compute_node_group", _group(), GET)
    pcs.stubber.add_client_error(
        "update_compute_node_group",
        "ValidationException",
        "Instance health checks require Slurm version 26.05 or later",
        400,
        expected_params=UPDATE,
    )
    with pytest.raises(index.HealthChecksError, match=r"UpdateComputeNodeGroup .* ValidationException: .*26.05"):
        index.on_event(EVENT, pcs=pcs)


def test_a_failed_group_fails_with_its_error_info(pcs):
    info = [{"code": "InsufficientInstanceCapacity", "message": "no p5 capacity"}]
    pcs.stubber.add_response("get_compute_node_group", _group("UPDATE_FAILED", errorInfo=info), GET)
    with pytest.raises(index.HealthChecksError, match=r"UPDATE_FAILED: InsufficientInstanceCapacity: no p5 capacity"):
        index.is_complete(EVENT, pcs=pcs)


def test_delete_leaves_the_group_as_it_is(pcs):
    event = {"RequestType": "Delete", "PhysicalResourceId": f"{CLUSTER}/{GROUP}", **EVENT}
    event["RequestType"] = "Delete"
    assert index.on_event(event, pcs=pcs) == {"PhysicalResourceId": f"{CLUSTER}/{GROUP}"}
    assert index.is_complete(event, pcs=pcs) == {"IsComplete": True}  # no call: the Stubber holds nothing


def test_missing_property_is_reported():
    with pytest.raises(index.HealthChecksError, match="missing property 'ComputeNodeGroupId'"):
        index.on_event(
            {"RequestType": "Create", "ResourceProperties": {"ClusterId": CLUSTER, "InstanceHealthChecks": {}}}
        )


@pytest.mark.parametrize(
    ("checks", "normal"),
    [
        (None, ("NONE", None, "NONE", None)),
        ({"healthMonitoring": {"mode": "NONE"}}, ("NONE", None, "NONE", None)),
        ({"healthMonitoring": {"mode": "STANDARD"}}, ("STANDARD", "AUTO", "NONE", None)),
        (
            {"deepHealthChecks": {"onStart": {"profile": "LONG", "repairAction": "REPLACE"}}},
            ("NONE", None, "LONG", "REPLACE"),
        ),
    ],
)
def test_normalize_follows_pcs_defaults(checks, normal):
    assert index.normalize(checks) == normal


# --- throttling: botocore's retry path, not the Stubber's (which skips retries) ---------------------------------------
class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = io.BytesIO(body)

    def stream(self, **_: Any) -> Any:
        yield self._body.read()

    def read(self, *_: Any) -> bytes:
        return self._body.read()


def _response(status: int, body: dict[str, Any]) -> AWSResponse:
    raw = json.dumps(body, default=str).encode()
    return AWSResponse(
        "https://pcs.us-east-1.amazonaws.com/", status, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(raw)
    )


def test_throttling_is_retried(monkeypatch):
    monkeypatch.setattr("botocore.endpoint.time.sleep", lambda _seconds: None)  # no real backoff in the test
    client = _client()
    replies = [
        _response(400, {"__type": "ThrottlingException", "message": "Rate exceeded"}),
        _response(400, {"__type": "ThrottlingException", "message": "Rate exceeded"}),
        _response(200, {"computeNodeGroup": {**_group()["computeNodeGroup"], "createdAt": 0, "modifiedAt": 0}}),
    ]
    sent: list[str] = []

    def reply(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.headers["X-Amz-Target"].decode())
        return replies.pop(0)

    client.meta.events.register("before-send.pcs.GetComputeNodeGroup", reply)
    client.meta.events.register("before-send.pcs.UpdateComputeNodeGroup", lambda **_: _response(200, {}))
    assert index.on_event(EVENT, pcs=client)["Data"]["Requested"] == "true"
    assert sent == ["AWSParallelComputingService.GetComputeNodeGroup"] * 3


def test_retry_config_is_botocore_standard():
    # botocore keeps max_attempts (retries) as total_max_attempts (the first call included)
    assert index.CLIENT_CONFIG.retries == {"mode": "standard", "total_max_attempts": 9}


# --- the wait (is_complete) on a fake PCS ------------------------------------------------------------------------------
class FakePcs:
    """A node group that takes ``busy_polls`` answers UPDATING after an update before it is ACTIVE with the settings."""

    def __init__(self, status: str = "ACTIVE", busy_polls: int = 2) -> None:
        self.status, self.busy_polls, self.polls_per_update = status, busy_polls, busy_polls
        self.checks: dict[str, Any] | None = None
        self.pending: dict[str, Any] | None = None
        self.updates = 0

    def get_compute_node_group(self, **_: Any) -> dict[str, Any]:
        if self.status == "UPDATING":
            self.busy_polls -= 1
            if self.busy_polls < 0:
                self.status, self.checks = "ACTIVE", self.pending or self.checks
        return _group(self.status, self.checks)

    def update_compute_node_group(self, *, instanceHealthChecks: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.updates += 1
        self.pending, self.status, self.busy_polls = instanceHealthChecks, "UPDATING", self.polls_per_update
        return _group(self.status, self.checks)


def _wait(fake: FakePcs, polls: int = 10) -> int:
    index.on_event(EVENT, pcs=fake)
    for poll in range(1, polls + 1):
        if index.is_complete(EVENT, pcs=fake)["IsComplete"]:
            return poll
    raise AssertionError("never complete")


def test_waits_until_the_group_is_active_with_the_settings():
    fake = FakePcs(busy_polls=2)
    assert _wait(fake) == 3
    assert fake.updates == 1 and index.normalize(fake.checks) == index.normalize(WANTED)


def test_a_group_busy_at_first_is_updated_once_it_is_active():
    fake = FakePcs(status="UPDATING", busy_polls=1)
    assert _wait(fake) == 3  # (on_event: busy) active: update sent; busy; active with the settings
    assert fake.updates == 1


def test_handler_imports_without_aws_cdk():
    handler_dir = Path(index.__file__).parent
    code = "import sys; sys.modules['aws_cdk'] = None; sys.modules['constructs'] = None; import index"
    subprocess.run([sys.executable, "-c", code], cwd=handler_dir, check=True)
