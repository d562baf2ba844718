"""The remediation handler on EKS against a fake Kubernetes API over TLS (moto for EC2, DynamoDB and SNS): cordon
marked ``fmconstructs.io/cordoned-by: remediation``, eviction through the Eviction API, an operator's cordon left
alone, and every call retried within the invocation's deadline (503 then 200, 429 with Retry-After, a hanging
server)."""

from __future__ import annotations

import json
import time

import pytest
from moto import mock_aws

from fmconstructs.health import metric_names
from fmconstructs.remediation import Action, Trigger
from fmconstructs.remediation.handler import kube

from tests.support.remediation_world import (
    EKS_TARGET,
    KubeServer,
    World,
    alert_record,
    kube_server,
    pod,
    policy,
    sns_event,
)

pytest.importorskip("cryptography.x509")
EKS_TAG = {"eks:cluster-name": "gpu"}
ANNOTATION = metric_names.CORDONED_BY_ANNOTATION


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from kube_server(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def api(server: KubeServer) -> KubeServer:
    state = server.state
    state.nodes.clear()
    state.pods.clear()
    state.protected.clear()
    state.faults.clear()
    state.calls.clear()
    state.always, state.retry_after = "", "1"
    return server


@pytest.fixture
def world(tmp_path):
    with mock_aws():
        yield World(tmp_path)


def _nodes(world: World, api: KubeServer, count: int) -> list[str]:
    ids = world.instances(count, EKS_TAG)
    for n, instance in enumerate(ids):
        api.state.add_node(f"ip-10-0-0-{n}", instance)
        api.state.pods.append(pod(f"worker-{n}", f"ip-10-0-0-{n}"))
    return ids


def test_fatal_xid_cordons_with_the_mark_evicts_and_terminates(world, api):
    (gpu,) = _nodes(world, api, 1)
    api.state.pods.append(pod("dcgm-x", "ip-10-0-0-0", daemonset=True))
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(), EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    node = api.state.nodes["ip-10-0-0-0"]
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][ANNOTATION] == metric_names.CORDONED_BY_REMEDIATION
    assert node["metadata"]["annotations"][kube.REASON_ANNOTATION].startswith("fmconstructs: remediation fatal-xid")
    evictions = [c for c in api.state.calls if c[0] == "POST"]
    assert [c[1] for c in evictions] == ["/api/v1/namespaces/ml/pods/worker-0/eviction"]
    assert evictions[0][2]["kind"] == "Eviction" and evictions[0][2]["apiVersion"] == "policy/v1"
    assert world.state(gpu) in ("shutting-down", "terminated")


def test_reboot_leaves_the_marked_cordon_for_the_node_check_gate(world, api):
    (gpu,) = _nodes(world, api, 1)
    api.state.nodes["ip-10-0-0-0"]["metadata"]["labels"] = {kube.NODE_CHECKS_GROUP_LABEL: "p5-48xlarge-0123abcd"}
    reboot = policy(actions={Trigger.FATAL_XID: Action.REBOOT})
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), reboot, EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["rebooted"]
    node = api.state.nodes["ip-10-0-0-0"]
    assert node["spec"]["unschedulable"] is True and node["metadata"]["annotations"][ANNOTATION] == "remediation"
    (notice,) = world.notices()
    assert "node-check gate checks it at boot and uncordons it" in notice["Message"]


def test_an_operators_cordon_is_left_alone(world, api):
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-9", gpu, unschedulable=True)
    api.state.pods.append(pod("worker-9", "ip-10-0-0-9"))
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(), EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["operator-cordoned"]
    assert api.state.count("PATCH", "/") == api.state.count("POST", "/") == 0
    assert ANNOTATION not in api.state.nodes["ip-10-0-0-9"]["metadata"]["annotations"]
    assert world.state(gpu) == "running"
    (notice,) = world.notices()
    assert notice["Subject"].startswith("[operator-cordoned]")


def test_a_node_remediation_cordoned_is_drained_again(world, api):
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-8", gpu, unschedulable=True, **{ANNOTATION: "remediation"})
    drain = policy(actions={Trigger.FATAL_XID: Action.DRAIN})
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), drain, EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["drained"]


def test_a_pod_disruption_budget_defers_the_replacement_unrecorded(world, api):
    (gpu,) = _nodes(world, api, 1)
    api.state.protected = {"worker-0"}
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(), EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["replace-deferred"]
    assert api.state.count("POST", "/api/v1/namespaces/ml/pods/worker-0/eviction") == 1  # a PDB refusal: no retry
    assert world.state(gpu) == "running"
    assert world.ledger_item(f"{gpu}#fatal-xid") == {}
    (notice,) = world.notices()
    assert "PodDisruptionBudget" in notice["Message"] and "ml/worker-0" in notice["Message"]


def test_one_503_does_not_fail_a_burst(world, api):
    # the defect: one 503 failed 3 of 3 nodes
    gpus = _nodes(world, api, 3)
    api.state.faults = {"GET nodes": ["503"], "PATCH node": ["503"], "POST eviction": ["503"]}
    event = sns_event(*[alert_record("GpuCriticalXid", g) for g in gpus])
    result = world.run(event, policy(max_replacements_per_hour=5), EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["replaced"] * 3
    assert api.state.count("GET", "/api/v1/nodes") >= 2  # the 503, then the list (once for the burst)


def test_429_with_retry_after_is_waited_for(world, api):
    (gpu,) = _nodes(world, api, 1)
    api.state.faults = {"PATCH node": ["429", "429"]}
    api.state.retry_after = "2"
    slept: list[float] = []
    factory = api.factory()

    def make(deadline):
        client = factory(deadline)
        client.sleep = slept.append
        return client

    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), policy(), EKS_TARGET, kube_factory=make)
    assert [r["outcome"] for r in result["records"]] == ["replaced"]
    assert slept == [2.0, 2.0]


def test_a_hanging_api_server_stops_the_burst_before_the_deadline(world, api):
    # the defect: a hanging API server made a 50-node burst overrun the function
    gpus = world.instances(50, EKS_TAG)
    api.state.always = "hang"
    budget_s = 27.0  # 10 s kept for the notice, faults start while 15 s remain: about 2 s of work
    started = time.monotonic()
    end = started + budget_s
    event = sns_event(*[alert_record("GpuCriticalXid", g) for g in gpus])
    result = world.run(
        event,
        policy(),
        EKS_TARGET,
        kube_factory=api.factory(timeout_s=0.3),
        remaining_s=lambda: end - time.monotonic(),
    )
    elapsed = time.monotonic() - started
    assert elapsed < budget_s - 10.0
    outcomes = [r["outcome"] for r in result["records"]]
    assert len(outcomes) == 50 and "replaced" not in outcomes
    assert outcomes.count("not-reached") >= 40 and result["unfinished"] >= 40
    assert all(world.state(g) == "running" for g in gpus)
    subjects = [n["Subject"] for n in world.notices()]
    assert any(s.startswith("[not-reached]") for s in subjects)


GATED = {kube.NODE_CHECKS_GROUP_LABEL: "p5-48xlarge-0123abcd"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
PENDING = {"key": kube.NODE_CHECKS_TAINT_KEY, "value": kube.NODE_CHECKS_TAINT_VALUE, "effect": "NoSchedule"}


def test_reboot_puts_the_node_checks_taint_back_so_the_gate_checks_the_node_again(world, api):
    """The defect: after a remediation reboot the gate found no taint, exited 0, and the cordon stayed forever."""
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-7", gpu, labels=GATED, taints=[GPU_TAINT])
    reboot = policy(actions={Trigger.FATAL_XID: Action.REBOOT})
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), reboot, EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["rebooted"]
    node = api.state.nodes["ip-10-0-0-7"]
    assert node["spec"]["taints"] == [GPU_TAINT, PENDING]
    assert node["spec"]["unschedulable"] is True and node["metadata"]["annotations"][ANNOTATION] == "remediation"
    (patch,) = [body for method, _, body in api.state.calls if method == "PATCH" and isinstance(body, list)]
    assert patch[0] == {"op": "test", "path": "/spec/taints", "value": [GPU_TAINT]}  # a concurrent change fails it
    (notice,) = world.notices()
    assert "taint put back" in notice["Message"] and "uncordons it when the checks pass" in notice["Message"]


def test_reboot_of_a_node_without_taints_adds_the_list(world, api):
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-6", gpu, labels=GATED)
    reboot = policy(actions={Trigger.FATAL_XID: Action.REBOOT})
    world.run(sns_event(alert_record("GpuCriticalXid", gpu)), reboot, EKS_TARGET, kube_factory=api.factory())
    assert api.state.nodes["ip-10-0-0-6"]["spec"]["taints"] == [PENDING]


def test_reboot_of_a_node_without_a_gate_leaves_its_taints_and_says_so(world, api):
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-5", gpu, taints=[GPU_TAINT])
    reboot = policy(actions={Trigger.FATAL_XID: Action.REBOOT})
    result = world.run(sns_event(alert_record("GpuCriticalXid", gpu)), reboot, EKS_TARGET, kube_factory=api.factory())
    assert [r["outcome"] for r in result["records"]] == ["rebooted"]
    assert api.state.nodes["ip-10-0-0-5"]["spec"]["taints"] == [GPU_TAINT]
    (notice,) = world.notices()
    assert "no node-check gate" in notice["Message"] and "kubectl uncordon" in notice["Message"]


def test_a_node_that_still_has_the_taint_is_not_patched_twice(world, api):
    (gpu,) = world.instances(1, EKS_TAG)
    api.state.add_node("ip-10-0-0-4", gpu, labels=GATED, taints=[GPU_TAINT, PENDING])
    reboot = policy(actions={Trigger.FATAL_XID: Action.REBOOT})
    world.run(sns_event(alert_record("GpuCriticalXid", gpu)), reboot, EKS_TARGET, kube_factory=api.factory())
    assert [b for m, _, b in api.state.calls if m == "PATCH" and isinstance(b, list)] == []
    assert api.state.nodes["ip-10-0-0-4"]["spec"]["taints"] == [GPU_TAINT, PENDING]


def _eks_alert_record(alertname: str, node: str, **labels: str) -> dict[str, object]:
    """An alert as the EKS scrape jobs label it: ``instance`` and ``node`` are the node's name, no ``instance_id``
    (observability/eks_attribution.py ``service_job``)."""
    alert = {"status": "firing", "labels": {"alertname": alertname, "instance": node, "node": node, **labels}}
    message = {"receiver": "sns", "status": "firing", "alerts": [alert]}
    return {"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message), "MessageAttributes": {}}}


def test_an_eks_alert_naming_the_node_acts_on_that_nodes_instance(world, api):
    # found by the cluster twin (tests/twin/test_twin_eks_loops.py): before, every EKS alert was skipped (no
    # instance id in its labels) and EKS remediation never acted on an alert
    (gpu,) = _nodes(world, api, 1)
    event = sns_event(_eks_alert_record("GpuCriticalXid", "ip-10-0-0-0", fmconstructs_trigger="fatal-xid"))
    result = world.run(event, policy(), EKS_TARGET, kube_factory=api.factory())
    assert [(r["instance"], r["outcome"]) for r in result["records"]] == [(gpu, "replaced")]
    assert api.state.nodes["ip-10-0-0-0"]["spec"]["unschedulable"] is True
    assert world.state(gpu) in ("shutting-down", "terminated")


def test_an_eks_alert_naming_a_node_that_is_gone_is_not_in_the_cluster(world, api):
    _nodes(world, api, 1)
    event = sns_event(_eks_alert_record("GpuCriticalXid", "ip-10-9-9-9", fmconstructs_trigger="fatal-xid"))
    result = world.run(event, policy(), EKS_TARGET, kube_factory=api.factory())
    assert [(r["instance"], r["outcome"]) for r in result["records"]] == [("ip-10-9-9-9", "not-in-cluster")]
