"""The remediation handler against moto (DynamoDB, SNS, SQS, EC2, Auto Scaling, SSM), botocore Stubber for error
outcomes, and a local fake Kubernetes API server for EKS."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from moto import mock_aws

from fmconstructs.remediation import Action, JobKill, RemediationPolicy, RemediationTarget, Trigger
from fmconstructs.remediation.handler import index
from fmconstructs.remediation.handler.backends import KubeApi
from fmconstructs.remediation.handler.faults import alert_faults
from fmconstructs.remediation.handler.runtime import NOTICE_ATTRIBUTE, Ledger

REGION = "us-east-1"
TABLE = "remediation-state"
NOW = 1_800_000_000.0  # a fixed clock: every fault of a test falls in the same hour window
PCS_TARGET = {
    "backend": "pcs",
    "cluster": "pcs_c1",
    "login_node_group_id": "pcs_login",
    "compute_node_group_ids": ["pcs_gpu"],
}
NO_RETRY = Config(retries={"total_max_attempts": 1})


def _policy(**kwargs: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"dry_run": False}
    base.update(kwargs)
    return json.loads(RemediationPolicy(**base).to_json())


def _alert_record(alertname: str, instance: str, *, status: str = "firing", **labels: str) -> dict[str, Any]:
    """An SNS record with an Alertmanager message in AMP's documented JSON template form."""
    alert = {
        "status": status,
        "labels": {"alertname": alertname, "instance_id": instance, "instance": instance, **labels},
    }
    message = {"receiver": "sns", "status": status, "alerts": [alert]}
    return {"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message), "MessageAttributes": {}}}


def _sns_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


class _Recorder:
    """An SSM client that records send_command arguments (moto's list_commands reports other instance ids too)."""

    def __init__(self, client: Any, sent: list[dict[str, Any]]) -> None:
        self._client, self._sent = client, sent

    def send_command(self, **kwargs: Any) -> Any:
        self._sent.append(kwargs)
        return self._client.send_command(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class World:
    """moto clients, the state table, the alert topic with an SQS queue subscribed to read the notices."""

    def __init__(self) -> None:
        self.clients = {
            name: boto3.client(name, region_name=REGION)
            for name in ("ec2", "ssm", "sns", "dynamodb", "autoscaling", "eks", "sts", "sqs")
        }
        self.clients["dynamodb"].create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.topic = self.clients["sns"].create_topic(Name="alerts")["TopicArn"]
        queue = self.clients["sqs"].create_queue(QueueName="notices")["QueueUrl"]
        self.queue = queue
        arn = self.clients["sqs"].get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
        self.clients["sns"].subscribe(TopicArn=self.topic, Protocol="sqs", Endpoint=arn["QueueArn"])
        # One of moto's built-in AMIs (moto's own tests use it as EXAMPLE_AMI_ID); listing images is slow in moto.
        self.image = "ami-12c6146b"
        self.sent_commands: list[dict[str, Any]] = []
        self.clients["ssm"] = _Recorder(self.clients["ssm"], self.sent_commands)

    def instances(self, count: int, tags: dict[str, str]) -> list[str]:
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        found = self.clients["ec2"].run_instances(
            ImageId=self.image, MinCount=count, MaxCount=count, InstanceType="p5.48xlarge", TagSpecifications=spec
        )
        return [i["InstanceId"] for i in found["Instances"]]

    def state(self, instance_id: str) -> str:
        found = self.clients["ec2"].describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return str(found["State"]["Name"])

    def notices(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            batch = self.clients["sqs"].receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10)
            messages = batch.get("Messages", [])
            if not messages:
                return out
            for message in messages:
                out.append(json.loads(message["Body"]))
                self.clients["sqs"].delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])

    def run(
        self, event: dict[str, Any], policy: dict[str, Any], target: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        clients = {**self.clients, **kwargs.pop("clients", {})}
        return index.process(
            event,
            clients=clients,
            policy=policy,
            target=target,
            topic_arn=self.topic,
            table=TABLE,
            clock=lambda: NOW,
            **kwargs,
        )


@pytest.fixture
def world():
    with mock_aws():
        yield World()


def _commands(world: World) -> list[dict[str, Any]]:
    return world.sent_commands


def test_burst_of_50_fatal_faults_replaces_at_most_the_limit(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    gpus = world.instances(50, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
    policy = _policy(max_replacements_per_hour=3, job_kill=JobKill.FATAL)
    result = world.run(_sns_event(*[_alert_record("GpuCriticalXid", i) for i in gpus]), policy, PCS_TARGET)
    outcomes = [r["outcome"] for r in result["records"]]
    assert outcomes.count("replaced") == 3
    assert outcomes.count("rate-limited") == 47
    assert sum(world.state(i) in ("shutting-down", "terminated") for i in gpus) == 3
    # Every fault drained or replaced its node through the login node, and every one was notified.
    assert len(_commands(world)) == 50
    assert len(world.notices()) == 50
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
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
    policy = json.loads(RemediationPolicy(job_kill=JobKill.FATAL).to_json())  # dry_run defaults to True
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), policy, PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["dry-run"]
    assert _commands(world) == []
    assert world.state(gpu) == "running"
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[DRY RUN] would replace")
    assert notice["MessageAttributes"][NOTICE_ATTRIBUTE]["Value"] == "remediation"


def test_duplicate_delivery_is_idempotent(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
    policy = _policy(actions={Trigger.EFA_ERROR: Action.DRAIN})
    event = _sns_event(_alert_record("EfaRdmaWorkRequestErrors", gpu))
    first = world.run(event, policy, PCS_TARGET)
    second = world.run(event, policy, PCS_TARGET)
    assert [r["outcome"] for r in first["records"]] == ["drained"]
    assert [r["outcome"] for r in second["records"]] == ["duplicate"]
    assert len(_commands(world)) == 1
    assert len(world.notices()) == 1


def test_pcs_drain_runs_scontrol_on_a_login_node(world):
    (login,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
    world.run(_sns_event(_alert_record("EfaUnresponsiveRemote", gpu)), _policy(), PCS_TARGET)
    (command,) = _commands(world)
    assert command["InstanceIds"] == [login]
    assert command["DocumentName"] == "AWS-RunShellScript"
    script = command["Parameters"]["commands"][0]
    assert "state=DRAIN" in script and 'reason="fmconstructs-remediation: efa-error' in script
    private_ip = world.clients["ec2"].describe_instances(InstanceIds=[gpu])["Reservations"][0]["Instances"][0][
        "PrivateIpAddress"
    ]
    assert f" {private_ip} " in script
    assert world.state(gpu) == "running"


def test_pcs_replacement_without_job_kill_drains_and_defers(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), _policy(), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["replace-deferred"]
    assert world.state(gpu) == "running"
    assert "state=DRAIN" in _commands(world)[0]["Parameters"]["commands"][0]


def test_instances_outside_the_cluster_are_left_alone(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (other,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_other"})
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", other)), _policy(job_kill=JobKill.FATAL), PCS_TARGET)
    assert [r["outcome"] for r in result["records"]] == ["not-in-cluster"]
    assert world.state(other) == "running" and world.notices() == []


def test_parallelcluster_fatal_fault_sets_the_node_down_on_the_head_node(world):
    (head,) = world.instances(1, {"parallelcluster:cluster-name": "train", "parallelcluster:node-type": "HeadNode"})
    (gpu,) = world.instances(1, {"parallelcluster:cluster-name": "train", "parallelcluster:node-type": "Compute"})
    target = json.loads(RemediationTarget.parallelcluster(cluster_name="train").to_json())
    result = world.run(_sns_event(_alert_record("GpuCriticalXid", gpu)), _policy(job_kill=JobKill.FATAL), target)
    assert [r["outcome"] for r in result["records"]] == ["replace-requested"]
    (command,) = _commands(world)
    assert command["InstanceIds"] == [head]
    assert "state=DOWN" in command["Parameters"]["commands"][0]
    assert world.state(gpu) == "running"  # clustermgtd replaces it, not the handler


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
    # The token and the claim were given back: a redelivery may replace it.
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).take("gpu-asg", 1) is True
    assert Ledger(world.clients["dynamodb"], TABLE, lambda: NOW).claim(f"{iid}#fatal-xid") is True


def test_pcs_termination_access_denied_is_notified(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
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


def test_health_scheduled_event_drains_ahead_of_the_date(world):
    world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_login"})
    (gpu,) = world.instances(1, {"aws:pcs:compute-node-group-id": "pcs_gpu"})
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
    assert "state=DRAIN" in _commands(world)[0]["Parameters"]["commands"][0]
    (notice,) = world.notices()
    assert f"Scheduled start: {starts}" in notice["Message"]
    closed = {**event, "detail": {**event["detail"], "statusCode": "closed"}}
    assert world.run(closed, _policy(), PCS_TARGET)["faults"] == 0


def test_own_notices_and_resolved_alerts_are_ignored(world):
    own = {"EventSource": "aws:sns", "Sns": {"Message": "x", "MessageAttributes": {NOTICE_ATTRIBUTE: {"Value": "r"}}}}
    resolved = _alert_record("GpuCriticalXid", "i-0123456789abcdef0", status="resolved")
    result = world.run(_sns_event(own, resolved), _policy(), PCS_TARGET)
    assert result == {"faults": 0, "skipped": 2, "records": []}


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


# --- EKS: a local fake Kubernetes API server --------------------------------------------------------------------


class FakeKube(BaseHTTPRequestHandler):
    nodes: ClassVar[list[dict[str, Any]]] = []
    pods: ClassVar[list[dict[str, Any]]] = []
    protected: ClassVar[set[str]] = set()
    calls: ClassVar[list[tuple[str, str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        return

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        FakeKube.calls.append(("GET", url.path, None))
        if url.path == "/api/v1/nodes":
            self._reply(200, {"items": FakeKube.nodes, "metadata": {}})
        elif url.path == "/api/v1/pods":
            node = urllib.parse.parse_qs(url.query)["fieldSelector"][0].split("=", 1)[1]
            self._reply(200, {"items": [p for p in FakeKube.pods if p["spec"]["nodeName"] == node]})
        else:
            self._reply(404, {})

    def do_PATCH(self) -> None:
        FakeKube.calls.append(("PATCH", self.path, self._body()))
        self._reply(200, {})

    def do_POST(self) -> None:
        body = self._body()
        FakeKube.calls.append(("POST", self.path, body))
        name = body["metadata"]["name"]
        if name in FakeKube.protected:
            self._reply(
                429,
                {
                    "reason": "TooManyRequests",
                    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                },
            )
        else:
            self._reply(201, {})


@pytest.fixture
def kube_server():
    FakeKube.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeKube)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _pod(name: str, node: str, *, daemonset: bool = False) -> dict[str, Any]:
    owners = [{"kind": "DaemonSet", "name": "dcgm"}] if daemonset else [{"kind": "ReplicaSet", "name": "train"}]
    return {
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": owners},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


EKS_TARGET = {"backend": "eks", "cluster": "gpu", "login_node_group_id": "", "compute_node_group_ids": []}


def test_eks_fatal_xid_cordons_evicts_and_terminates(world, kube_server):
    (gpu,) = world.instances(1, {"eks:cluster-name": "gpu"})
    FakeKube.nodes = [{"metadata": {"name": "ip-10-0-0-1"}, "spec": {"providerID": f"aws:///us-east-1a/{gpu}"}}]
    FakeKube.pods = [_pod("worker-0", "ip-10-0-0-1"), _pod("dcgm-x", "ip-10-0-0-1", daemonset=True)]
    FakeKube.protected = set()
    result = world.run(
        _sns_event(_alert_record("GpuCriticalXid", gpu)),
        _policy(),
        EKS_TARGET,
        kube_factory=lambda: KubeApi(kube_server, None, "token"),
    )
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    patch = [c for c in FakeKube.calls if c[0] == "PATCH"]
    assert patch[0][1] == "/api/v1/nodes/ip-10-0-0-1" and patch[0][2]["spec"] == {"unschedulable": True}
    evictions = [c for c in FakeKube.calls if c[0] == "POST"]
    assert [c[1] for c in evictions] == ["/api/v1/namespaces/ml/pods/worker-0/eviction"]
    assert evictions[0][2]["kind"] == "Eviction" and evictions[0][2]["apiVersion"] == "policy/v1"
    assert world.state(gpu) in ("shutting-down", "terminated")


def test_eks_pod_disruption_budget_defers_the_replacement(world, kube_server):
    (gpu,) = world.instances(1, {"eks:cluster-name": "gpu"})
    FakeKube.nodes = [{"metadata": {"name": "ip-10-0-0-2"}, "spec": {"providerID": f"aws:///us-east-1a/{gpu}"}}]
    FakeKube.pods = [_pod("worker-1", "ip-10-0-0-2")]
    FakeKube.protected = {"worker-1"}
    result = world.run(
        _sns_event(_alert_record("GpuCriticalXid", gpu)),
        _policy(),
        EKS_TARGET,
        kube_factory=lambda: KubeApi(kube_server, None, "token"),
    )
    assert [r["outcome"] for r in result["records"]] == ["replace-deferred"]
    assert world.state(gpu) == "running"
    (notice,) = world.notices()
    assert "PodDisruptionBudget" in notice["Message"] and "ml/worker-1" in notice["Message"]
