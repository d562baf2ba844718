"""The remediation handler against moto (DynamoDB, SNS, SQS, EC2, Auto Scaling), botocore Stubber for error outcomes,
and an SSM double that runs the handler's Slurm script against fake Slurm commands (PCS and ParallelCluster)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from moto import mock_aws

from fmconstructs.remediation import Action, JobKill, RemediationPolicy, RemediationTarget, Trigger
from fmconstructs.remediation.handler.faults import alert_faults
from fmconstructs.remediation.handler.runtime import NOTICE_ATTRIBUTE, Ledger

from tests.support.remediation_world import (
    GPU,
    LOGIN,
    NOW,
    PCS_TARGET,
    REGION,
    TABLE,
    World,
    alert_record,
    sns_event,
)
from tests.support.remediation_world import policy as _policy

NO_RETRY = Config(retries={"total_max_attempts": 1})
PC_HEAD = {"parallelcluster:cluster-name": "train", "parallelcluster:node-type": "HeadNode"}
PC_COMPUTE = {"parallelcluster:cluster-name": "train", "parallelcluster:node-type": "Compute"}
PC_TARGET = json.loads(RemediationTarget.parallelcluster(cluster_name="train").to_json())
_alert_record, _sns_event = alert_record, sns_event


@pytest.fixture
def world(tmp_path):
    with mock_aws():
        yield World(tmp_path)


def _commands(world: World) -> list[dict[str, Any]]:
    return world.ssm.sent


def _addr(world: World, instance_id: str) -> tuple[str, str]:
    found = world.clients["ec2"].describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    return found["PrivateIpAddress"], found["PrivateDnsName"].split(".", 1)[0]


def test_burst_of_50_fatal_faults_replaces_at_most_the_limit(world):
    world.instances(1, LOGIN)
    gpus = world.instances(50, GPU, slurm=True)
    policy = _policy(max_replacements_per_hour=3, job_kill=JobKill.FATAL)
    result = world.run(_sns_event(*[_alert_record("GpuCriticalXid", i) for i in gpus]), policy, PCS_TARGET)
    outcomes = [r["outcome"] for r in result["records"]]
    assert outcomes.count("replaced") == 3
    assert outcomes.count("rate-limited") == 47
    assert sum(world.state(i) in ("shutting-down", "terminated") for i in gpus) == 3
    # The excess is only drained, and every node went through the login node and was notified.
    assert [world.slurm.state(world.node_of(i)) for i in gpus].count("IDLE+DRAIN") == 47
    assert len(_commands(world)) == 50
    notices = world.notices()
    assert len(notices) == 50
    held = [n for n in notices if n["Subject"].startswith("[rate-limited]")]
    assert len(held) == 47 and all("Replacement held back" in n["Message"] for n in held)
    # A second burst in the same hour replaces nothing more.
    again = world.run(_sns_event(*[_alert_record("GpuRowRemapFailure", i) for i in gpus]), policy, PCS_TARGET)
    assert [r["outcome"] for r in again["records"]].count("replaced") == 0


def test_rate_limit_is_per_scope_and_window(world):
    # Atomicity under concurrency is DynamoDB's conditional write (moto does not serialize threads); here the
    # condition itself: 20 takes in one window get exactly the limit.
    clock = [NOW]
    ledger = Ledger(world.clients["dynamodb"], TABLE, lambda: clock[0])
    results = [ledger.take("c1", 5) for _ in range(20)]
    assert results.count(True) == 5 and results[:5] == [True] * 5
    ledger.give_back("c1")
    assert ledger.take("c1", 5) is True and ledger.take("c1", 5) is False
    clock[0] = NOW + 3600  # the next hour
    assert ledger.take("c1", 5) is True
    assert ledger.take("c2", 0) is False


def test_dry_run_only_notifies(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    policy = json.loads(RemediationPolicy(job_kill=JobKill.FATAL).to_json())  # dry_run defaults to True
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), policy, PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["dry-run"]
    assert _commands(world) == []
    assert world.state(gpu) == "running"
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[DRY RUN] would replace")
    assert notice["MessageAttributes"][NOTICE_ATTRIBUTE]["Value"] == "remediation"


def test_duplicate_delivery_is_idempotent(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    policy = _policy(actions={Trigger.EFA_ERROR: Action.DRAIN})
    event = _sns_event(_alert_record("EfaRdmaWorkRequestErrors", gpu))
    first = world.run(event, policy, PCS_TARGET)
    second = world.run(event, policy, PCS_TARGET)
    assert [r["outcome"] for r in first["records"]] == ["drained"]
    assert [r["outcome"] for r in second["records"]] == ["duplicate"]
    assert len(_commands(world)) == 1
    assert len(world.notices()) == 1


def test_pcs_drain_runs_scontrol_on_a_login_node(world):
    (login,) = world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    result = world.run(_sns_event(_alert_record("EfaUnresponsiveRemote", gpu)), _policy(), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["drained"]
    (command,) = _commands(world)
    assert command["InstanceIds"] == [login]
    assert command["DocumentName"] == "AWS-RunShellScript"
    script = command["Parameters"]["commands"][0]
    private_ip = world.clients["ec2"].describe_instances(InstanceIds=[gpu])["Reservations"][0]["Instances"][0][
        "PrivateIpAddress"
    ]
    assert f" {private_ip} " in script
    node = world.node_of(gpu)
    assert world.slurm.state(node) == "IDLE+DRAIN"
    # an fmconstructs: reason: the boot gate resumes the node after a healthy reboot
    assert world.slurm.reason(node) == "fmconstructs: remediation efa-error (alert EfaUnresponsiveRemote)"
    assert world.state(gpu) == "running"


def test_pcs_default_policy_replaces_an_idle_node(world):
    # GIVEN the documented defaults (job_kill NEVER, fatal_triggers FATAL_XID) and a node whose prolog check failed:
    # Slurm requeued the job, so the node is idle
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    node = world.node_of(gpu)
    world.slurm.add_node(node, *_addr(world, gpu), state="IDLE+DRAIN", reason="Prolog error")
    alert = _alert_record("FmNodeCheckFailed", gpu, check="gpu-count", reason="found 7 GPUs, expected 8")
    result = world.run(_sns_event(alert), _policy(), PCS_TARGET)
    # THEN it is set DOWN with the check's reason and replaced at once
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    assert world.state(gpu) in ("shutting-down", "terminated")
    assert world.slurm.state(node) == "DOWN+DRAIN"
    assert world.slurm.reason(node) == (
        "fmconstructs: remediation node-check-failed (alert FmNodeCheckFailed): gpu-count: found 7 GPUs, expected 8"
    )
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[replaced] replace") and "(idle)" in notice["Message"]


def test_pcs_busy_node_is_drained_deferred_and_replaced_when_idle(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    node = world.node_of(gpu)
    world.slurm.set_jobs(node, "4242")
    event = _sns_event(_alert_record("GpuCriticalXid", gpu))
    first = world.run(event, _policy(), PCS_TARGET)
    assert [r["outcome"] for r in first["records"]] == ["replace-deferred"]
    assert (world.state(gpu), world.slurm.state(node)) == ("running", "ALLOCATED+DRAIN")
    assert world.ledger_item(f"{gpu}#fatal-xid") == {}  # not kept as handled
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).take("pcs_c1", 2) is True  # the token came back
    # WHEN the job ends and Alertmanager repeats the alert
    world.slurm.set_jobs(node)
    world.now = NOW + 4 * 3600
    again = world.run(event, _policy(), PCS_TARGET)
    assert [r["outcome"] for r in again["records"]] == ["replaced"]
    assert world.state(gpu) in ("shutting-down", "terminated")


def test_an_operators_drain_is_never_touched(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    node = world.node_of(gpu)
    world.slurm.add_node(node, *_addr(world, gpu), state="IDLE+DRAIN", reason="bad cable, ticket 7")
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), _policy(job_kill=JobKill.FATAL), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["operator-drained"]
    assert (world.slurm.state(node), world.slurm.reason(node)) == ("IDLE+DRAIN", "bad cable, ticket 7")
    assert world.state(gpu) == "running"
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[operator-drained]") and "bad cable, ticket 7" in notice["Message"]
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).take("pcs_c1", 2) is True  # token given back


def test_instances_outside_the_cluster_are_left_alone(world):
    world.instances(1, LOGIN)
    (other,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_other"}, slurm=True)
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", other)), _policy(job_kill=JobKill.FATAL), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["not-in-cluster"]
    assert world.state(other) == "running" and world.notices() == []


def test_parallelcluster_fatal_fault_sets_the_node_down_on_the_head_node(world):
    (head,) = world.instances(1, PC_HEAD)
    (gpu,) = world.instances(1, PC_COMPUTE, slurm=True)
    world.slurm.set_jobs(world.node_of(gpu), "7")
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), _policy(job_kill=JobKill.FATAL), PC_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["replace-requested"]
    (command,) = _commands(world)
    assert command["InstanceIds"] == [head]
    assert world.slurm.state(world.node_of(gpu)) == "DOWN+DRAIN"  # the job ends now (job_kill FATAL)
    assert world.state(gpu) == "running"  # clustermgtd replaces it, not the handler


@pytest.mark.parametrize(("jobs", "state"), [((), "DOWN+DRAIN"), (("7",), "ALLOCATED+DRAIN")])
def test_parallelcluster_default_policy_sets_an_idle_node_down_and_drains_a_busy_one(world, jobs, state):
    world.instances(1, PC_HEAD)
    (gpu,) = world.instances(1, PC_COMPUTE, slurm=True)
    world.slurm.set_jobs(world.node_of(gpu), *jobs)
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), _policy(), PC_TARGET)
    # DOWN: clustermgtd replaces it now; DRAIN: once its jobs end. Either way the replacement is requested.
    assert [r["outcome"] for r in result["records"]] == ["replace-requested"]
    assert world.slurm.state(world.node_of(gpu)) == state
    assert world.ledger_item(f"{gpu}#fatal-xid")["state"] == "done"


def test_parallelcluster_holds_the_excess_in_a_reservation_as_clustermgtd_replaces_drained_nodes(world):
    # found by the cluster twin (tests/twin/test_twin_remediation_loops.py loop f): a rate-limited node drained on
    # ParallelCluster was replaced by clustermgtd within a loop, past max_replacements_per_hour
    world.instances(1, PC_HEAD)
    gpus = world.instances(3, PC_COMPUTE, slurm=True)
    policy = _policy(max_replacements_per_hour=2, job_kill=JobKill.FATAL)
    result = world.run(_sns_event(*[_alert_record("GpuCriticalXid", i) for i in gpus]), policy, PC_TARGET)
    outcomes = [r["outcome"] for r in result["records"]]
    assert outcomes == ["replace-requested", "replace-requested", "rate-limited"]
    held = world.node_of(gpus[2])
    assert "DRAIN" not in world.slurm.state(held) and "RESERVED" in world.slurm.state(held)
    assert world.slurm.reservation(f"fmconstructs-node-checks-{held}") is not None
    assert world.slurm.comment(held).startswith("fmconstructs: remediation fatal-xid")
    (notice,) = [n for n in world.notices() if n["Subject"].startswith("[rate-limited]")]
    assert "held out of work by reservation fmconstructs-node-checks-" in notice["Message"]


def test_auto_scaling_group_replacement_sets_instance_health(world):
    asg = world.clients["autoscaling"]
    world.clients["ec2"].create_launch_template(
        LaunchTemplateName="gpu", LaunchTemplateData={"ImageId": world.image, "InstanceType": "p5.48xlarge"}
    )
    asg.create_auto_scaling_group(
        AutoScalingGroupName="gpu-asg",
        LaunchTemplate={"LaunchTemplateName": "gpu"},
        MinSize=2,
        MaxSize=2,
        DesiredCapacity=2,
        AvailabilityZones=["us-east-1a"],
    )
    instance = asg.describe_auto_scaling_groups()["AutoScalingGroups"][0]["Instances"][0]["InstanceId"]
    target = json.loads(RemediationTarget.auto_scaling_group(group_name="gpu-asg").to_json())
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", instance)), _policy(job_kill=JobKill.FATAL), target)
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    (health,) = asg.describe_auto_scaling_instances(InstanceIds=[instance])["AutoScalingInstances"]
    assert health["HealthStatus"] == "Unhealthy"


def test_auto_scaling_group_drain_and_non_fatal_replacement_only_notify(world):
    asg = world.clients["autoscaling"]
    world.clients["ec2"].create_launch_template(
        LaunchTemplateName="gpu", LaunchTemplateData={"ImageId": world.image, "InstanceType": "p5.48xlarge"}
    )
    asg.create_auto_scaling_group(
        AutoScalingGroupName="gpu-asg",
        LaunchTemplate={"LaunchTemplateName": "gpu"},
        MinSize=1,
        MaxSize=1,
        AvailabilityZones=["us-east-1a"],
    )
    instance = asg.describe_auto_scaling_groups()["AutoScalingGroups"][0]["Instances"][0]["InstanceId"]
    target = json.loads(RemediationTarget.auto_scaling_group(group_name="gpu-asg").to_json())
    event = _sns_event(_alert_record("EfaRdmaWorkRequestErrors", instance), _alert_record("GpuCriticalXid", instance))
    result = world.run(event, _policy(), target)  # job_kill NEVER
    assert [r["outcome"] for r in result["records"]] == ["notified", "replace-deferred"]
    (health,) = asg.describe_auto_scaling_instances(InstanceIds=[instance])["AutoScalingInstances"]
    assert health["HealthStatus"] == "Healthy"


def test_auto_scaling_throttling_is_notified_and_the_token_given_back(world):
    autoscaling = boto3.client("autoscaling", region_name=REGION, config=NO_RETRY)
    stubber = Stubber(autoscaling)
    iid = "i-0123456789abcdef0"
    stubber.add_response(
        "describe_auto_scaling_instances",
        {
            "AutoScalingInstances": [
                {
                    "InstanceId": iid,
                    "AutoScalingGroupName": "gpu-asg",
                    "AvailabilityZone": "us-east-1a",
                    "LifecycleState": "InService",
                    "HealthStatus": "HEALTHY",
                    "ProtectedFromScaleIn": False,
                }
            ]
        },
    )
    stubber.add_client_error("set_instance_health", service_error_code="Throttling", http_status_code=400)
    target = json.loads(RemediationTarget.auto_scaling_group(group_name="gpu-asg").to_json())
    policy = _policy(job_kill=JobKill.FATAL, max_replacements_per_hour=1)
    with stubber:
        result = world.run(
            _sns_event(_alert_record("GpuCriticalXid", iid)), policy, target, clients={"autoscaling": autoscaling}
        )
    assert [r["outcome"] for r in result["records"]] == ["throttled"]
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[throttled] replace")
    # The token and the lease were given back: a redelivery may replace it.
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).take("gpu-asg", 1) is True
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).lease(f"{iid}#fatal-xid", 60).taken


def test_pcs_termination_access_denied_is_notified(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    ec2 = boto3.client("ec2", region_name=REGION, config=NO_RETRY)
    real = world.clients["ec2"]
    stubber = Stubber(ec2)
    stubber.add_response("describe_instances", real.describe_instances(InstanceIds=[gpu]))
    login = real.describe_instances(Filters=[{"Name": "tag:aws:pcs:compute-node-group-id", "Values": ["pcs_login"]}])
    stubber.add_response("describe_instances", login)
    stubber.add_client_error("terminate_instances", service_error_code="UnauthorizedOperation", http_status_code=403)
    with stubber:
        result = world.run(
            _sns_event(_alert_record("GpuCriticalXid", gpu)),
            _policy(job_kill=JobKill.FATAL),
            PCS_TARGET,
            clients={"ec2": ec2},
        )
    assert [r["outcome"] for r in result["records"]] == ["access-denied"]
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[access-denied] replace") and "UnauthorizedOperation" in notice["Message"]
    assert world.ledger_item(f"{gpu}#fatal-xid") == {}  # released: a redelivery acts again


def test_health_scheduled_event_drains_ahead_of_the_date(world):
    world.instances(1, LOGIN)
    (gpu,) = world.instances(1, GPU, slurm=True)
    starts = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(NOW + 14 * 86400))
    event = {
        "source": "aws.health",
        "detail-type": "AWS Health Event",
        "resources": [gpu],
        "detail": {
            "service": "EC2",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": "scheduledChange",
            "statusCode": "upcoming",
            "startTime": starts,
            "affectedEntities": [{"entityValue": gpu}],
        },
    }
    result = world.run(event, _policy(), PCS_TARGET)
    assert [(r["trigger"], r["outcome"]) for r in result["records"]] == [("scheduled-event", "drained")]
    assert world.slurm.state(world.node_of(gpu)) == "IDLE+DRAIN"
    (notice,) = world.notices()
    assert f"Scheduled start: {starts}" in notice["Message"]
    closed = {**event, "detail": {**event["detail"], "statusCode": "closed"}}
    assert world.run(closed, _policy(), PCS_TARGET)["faults"] == 0


def test_own_notices_and_resolved_alerts_are_ignored(world):
    own = {"EventSource": "aws:sns", "Sns": {"Message": "x", "MessageAttributes": {NOTICE_ATTRIBUTE: {"Value": "r"}}}}
    resolved = _alert_record("GpuCriticalXid", "i-0123456789abcdef0", status="resolved")
    result = world.run(_sns_event(own, resolved), _policy(), PCS_TARGET)
    assert result == {"faults": 0, "skipped": 2, "records": [], "unfinished": 0}


def test_default_plain_text_alertmanager_message_is_parsed():
    message = "\n".join(
        [
            "Drain the node.",
            "Alerts Firing:",
            "Labels:",
            " - alertname = GpuCriticalXid",
            " - cluster = c1",
            " - instance_id = i-0123456789abcdef0",
            "Annotations:",
            " - summary = Critical XID 79",
            "Source: http://prometheus",
            "Alerts Resolved:",
            "Labels:",
            " - alertname = GpuCriticalXid",
            " - instance_id = i-0fedcba9876543210",
        ]
    )
    faults, _ = alert_faults(message, {"GpuCriticalXid": "fatal-xid"})
    assert [(f.instance_id, f.trigger, f.cluster) for f in faults] == [("i-0123456789abcdef0", "fatal-xid", "c1")]


def test_node_check_failure_reason_prefix_maps_to_its_trigger():
    message = json.dumps(
        {
            "alerts": [
                {
                    "status": "firing",
                    "labels": {
                        "alertname": "SomeDrain",
                        "instance_id": "i-0123456789abcdef0",
                        "reason": "fmconstructs: gpu-count 7 != 8",
                    },
                }
            ]
        }
    )
    faults, _ = alert_faults(message, {})
    assert [f.trigger for f in faults] == ["node-check-failed"]
