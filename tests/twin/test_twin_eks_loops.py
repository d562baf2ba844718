"""The day-2 loops on EKS, against a stateful fake Kubernetes API, with what the library renders (issue 29, loops a-f).

GIVEN a TrainingPlatform synthesized on EKS (node checks, observability, remediation on) and the EKS twin built from
it (tests/support/twin/eks.py: the rendered gate DaemonSet's command on each node, real node_exporter over the
directory its rendered DaemonSet reads, real Prometheus and Alertmanager with the workspace's rules and routes, the
remediation handler's code with its Kubernetes client on the fake API), WHEN nodes register, GPU pods wait to be
scheduled and faults are injected through the nodes' fake tools, THEN the loops hold. One twin for the module; the
GPU pods are created before the nodes register, so they meet each node the moment it joins (before its gate ran).

Nodes: gpu-1 healthy (then XID 79: replaced), gpu-2 7 GPUs (fails its boot checks: replaced), gpu-3 cordoned by an
operator (then XID 79: left alone), gpu-4 healthy (XID 94: notified only; then XID 119: rebooted, uncordoned).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.platform import Backend
from fmconstructs.remediation.handler import kube as handler_kube

from tests.support.twin.eks import EksTwin, metric_filter_matches
from tests.support.twin.fixtures import require_twin, wait_until
from tests.support.twin.kube_patch import STRATEGIC
from tests.support.twin.nodes import HEALTHY
from tests.support.twin.rendered import build_platform

TAINT = "fmconstructs.io/node-checks"
ANNOTATION = "fmconstructs.io/node-checks"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
WORKLOAD = {"app": "train"}
#: Long enough for an alert's rendered `for` (2m -> 2 s), Alertmanager's group wait and the handler.
ALERT_S = 45.0


def _gpu_pods(twin: EksTwin, count: int, prefix: str = "train") -> None:
    """A training Deployment's pods: tolerate the GPU taint (not the node-checks one), select GPU nodes."""
    for index in range(count):
        twin.api.create_pod(
            f"{prefix}-{index}",
            labels=WORKLOAD,
            tolerations=[GPU_TOLERATION],
            node_selector={"nvidia.com/gpu.present": "true"},
            replicated=True,
        )


def _workload_on(twin: EksTwin, node: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in twin.api.pods_on(node)
        if not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
    ]


def _taints(twin: EksTwin, node: str) -> list[str]:
    return [t["key"] for t in twin.api.node(node)["spec"].get("taints") or []]


def _cordon_as_operator(twin: EksTwin, node: str) -> None:
    """`kubectl cordon`: a strategic merge patch of spec.unschedulable, no fmconstructs annotation."""
    twin.admin().request("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}}, STRATEGIC)


def _remediation_patches(twin: EksTwin, node: str) -> list[Any]:
    return [
        r.body
        for r in twin.api.requests
        if r.method == "PATCH" and r.path.endswith(f"/nodes/{node}") and r.user.startswith("eks:")
    ]


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EksTwin]:
    require_twin()
    rendered = build_platform(Backend.EKS, nodes=4)
    home: Path = tmp_path_factory.mktemp("twin-eks")
    with EksTwin(rendered.template, home) as cluster:
        _gpu_pods(cluster, 6)
        cluster.boot({"gpu-1": HEALTHY, "gpu-2": HEALTHY.but(gpus=7), "gpu-3": HEALTHY, "gpu-4": HEALTHY})
        for slot in ("gpu-1", "gpu-2", "gpu-3", "gpu-4"):
            cluster.wait_gate(slot)
        _cordon_as_operator(cluster, cluster.node("gpu-3").name)
        yield cluster


def test_a_node_failing_its_boot_checks_keeps_its_taint_and_takes_no_pod(twin: EksTwin) -> None:
    bad = twin.node("gpu-2")
    assert twin.wait_gate("gpu-2") == 1, bad.gate_log()
    assert TAINT in _taints(twin, bad.name)
    annotation = twin.api.node(bad.name)["metadata"]["annotations"][ANNOTATION]
    assert annotation == "FAIL gpu-count: 7 GPUs visible, expected 8"
    assert _workload_on(twin, bad.name) == []
    # the healthy nodes passed and lost the taint; the pods that waited for a node run on them, none is left
    healthy = [twin.node(slot) for slot in ("gpu-1", "gpu-3", "gpu-4")]
    for node in healthy:
        assert twin.wait_gate(node.slot) == 0, node.gate_log()
        assert TAINT not in _taints(twin, node.name)
        assert twin.api.node(node.name)["metadata"]["annotations"][ANNOTATION].startswith("PASS ")
    assert sum(len(_workload_on(twin, node.name)) for node in healthy) == 6
    assert twin.api.pending() == []
    # more pods fill the schedulable healthy nodes (gpu-3 is cordoned by now), never gpu-2
    _gpu_pods(twin, 6, prefix="later")
    assert twin.api.pending() == []
    for slot in ("gpu-1", "gpu-4"):
        assert _workload_on(twin, twin.node(slot).name), f"no pod on {slot}"
    assert _workload_on(twin, bad.name) == []


def test_a_the_gate_runs_every_boot_check_the_health_page_lists(twin: EksTwin) -> None:
    log = twin.node("gpu-1").gate_log()
    first = log.splitlines()[0]
    assert "dcgm-diag" in first, f"the EKS gate runs fewer checks than every other backend: {first}"


def test_b_a_failed_boot_check_fires_the_alert_and_the_node_is_replaced(twin: EksTwin) -> None:
    bad = twin.node("gpu-2")
    prometheus = twin.monitoring.prometheus
    prometheus.wait_for_alert("FmNodeCheckFailed", labels={"instance": bad.name, "check": "gpu-count"}, timeout_s=30)
    record = twin.bridge.wait_for_record(instance=bad.instance_id, trigger="node-check-failed", timeout_s=ALERT_S)
    assert record["outcome"] == "replaced", record
    (patch,) = _remediation_patches(twin, bad.name)
    annotations = patch["metadata"]["annotations"]
    assert patch["spec"] == {"unschedulable": True}
    assert annotations[handler_kube.CORDONED_BY_ANNOTATION] == handler_kube.CORDONED_BY_REMEDIATION
    assert "gpu-count" in annotations[handler_kube.REASON_ANNOTATION], annotations
    new = twin.replacement_of("gpu-2", bad.instance_id)
    assert twin.wait_gate("gpu-2") == 0, new.gate_log()
    assert TAINT not in _taints(twin, new.name)
    _gpu_pods(twin, 2, prefix="after-b")  # the emptiest schedulable node takes the next pod
    wait_until("a pod on gpu-2's replacement", lambda: _workload_on(twin, new.name), 30)


def test_c_an_xid_79_during_work_cordons_evicts_and_replaces_the_node(twin: EksTwin) -> None:
    node = twin.node("gpu-1")
    running = _workload_on(twin, node.name)
    assert running, "gpu-1 runs no pod to evict"
    twin.set_scenario("gpu-1", HEALTHY.but(xids=(79,)), xid=79)
    twin.monitoring.prometheus.wait_for_alert("GpuCriticalXid", labels={"instance": node.name}, timeout_s=30)
    record = twin.bridge.wait_for_record(instance=node.instance_id, trigger="fatal-xid", timeout_s=ALERT_S)
    assert record["outcome"] == "replaced", record
    for pod in running:
        assert ("Evicted", f"pod default/{pod} deleted (Evicted)") in twin.api.events_for(pod)
    new = twin.replacement_of("gpu-1", node.instance_id)
    assert twin.wait_gate("gpu-1") == 0, new.gate_log()
    assert twin.api.pending() == [], "the evicted pods did not find another node"
    _gpu_pods(twin, 2, prefix="after-c")  # the emptiest schedulable node takes the next pod
    wait_until("a pod on gpu-1's replacement", lambda: _workload_on(twin, new.name), 30)


def test_d_an_xid_94_notifies_and_leaves_the_node_in_service(twin: EksTwin) -> None:
    node = twin.node("gpu-4")
    before = _workload_on(twin, node.name)
    twin.set_scenario("gpu-4", HEALTHY.but(xids=(94,)), xid=94)
    twin.monitoring.prometheus.wait_for_alert("GpuContainedXid", labels={"instance": node.name}, timeout_s=30)
    record = twin.bridge.wait_for_record(instance=node.instance_id, trigger="contained-xid", timeout_s=ALERT_S)
    assert record["outcome"] == "notified", record
    assert not twin.api.node(node.name)["spec"].get("unschedulable")
    assert twin.bridge.instance_state(node.instance_id) == "running"
    assert node.instance_id not in twin.bridge.ec2.rebooted  # type: ignore[union-attr]
    assert set(before) <= set(_workload_on(twin, node.name))


def test_c_a_reset_xid_reboots_and_the_gate_uncordons_the_node(twin: EksTwin) -> None:
    node = twin.node("gpu-4")
    twin.set_scenario("gpu-4", HEALTHY.but(xids=(94, 119)), xid=119)
    twin.monitoring.prometheus.wait_for_alert(
        "GpuCriticalXid", labels={"instance": node.name, "xid_class": "reset"}, timeout_s=30
    )
    record = twin.bridge.wait_for_record(instance=node.instance_id, trigger="reset-xid", timeout_s=ALERT_S)
    assert record["outcome"] == "rebooted", record
    assert twin.wait_gate("gpu-4", boots=2) == 0, node.gate_log()
    wait_until(
        "gpu-4 uncordoned after its reboot", lambda: not twin.api.node(node.name)["spec"].get("unschedulable"), 30
    )
    annotations = twin.api.node(node.name)["metadata"].get("annotations") or {}
    assert handler_kube.CORDONED_BY_ANNOTATION not in annotations, annotations
    _gpu_pods(twin, 4, prefix="after-reboot")
    wait_until("a pod on gpu-4 again", lambda: _workload_on(twin, node.name), 30)


def test_e_an_operator_cordoned_node_is_never_touched(twin: EksTwin) -> None:
    node = twin.node("gpu-3")
    twin.set_scenario("gpu-3", HEALTHY.but(xids=(79,)), xid=79)
    twin.monitoring.prometheus.wait_for_alert("GpuCriticalXid", labels={"instance": node.name}, timeout_s=30)
    record = twin.bridge.wait_for_record(instance=node.instance_id, trigger="fatal-xid", timeout_s=ALERT_S)
    assert record["outcome"] == "operator-cordoned", record
    assert _remediation_patches(twin, node.name) == []
    after = twin.api.node(node.name)
    assert after["spec"]["unschedulable"] is True
    assert handler_kube.CORDONED_BY_ANNOTATION not in (after["metadata"].get("annotations") or {})
    assert twin.bridge.instance_state(node.instance_id) == "running"


def test_f_a_burst_beyond_the_rate_limit_only_cordons_the_excess(twin: EksTwin) -> None:
    limit = int(twin.remediation.policy["max_replacements_per_hour"])
    slots = ["gpu-1", "gpu-2", "gpu-4"]
    assert len(slots) == limit + 1
    clock = twin.bridge.clock
    wait = clock.twin_seconds_until_next_hour()  # type: ignore[attr-defined]
    time.sleep(wait + 0.5)  # a fresh hourly window: b and c spent this one's replacements
    nodes = {slot: twin.node(slot) for slot in slots}
    for slot in slots:
        twin.set_scenario(slot, HEALTHY.but(xids=(79,)), xid=79)
    records = [
        twin.bridge.wait_for_record(instance=n.instance_id, trigger="fatal-xid", timeout_s=ALERT_S)
        for n in nodes.values()
    ]
    outcomes = sorted(r["outcome"] for r in records)
    assert outcomes == sorted(["replaced"] * limit + ["rate-limited"]), records
    (held,) = [n for n, r in zip(nodes.values(), records, strict=True) if r["outcome"] == "rate-limited"]
    assert twin.bridge.instance_state(held.instance_id) == "running"
    cordoned = twin.api.node(held.name)
    assert cordoned["spec"]["unschedulable"] is True
    assert cordoned["metadata"]["annotations"][handler_kube.CORDONED_BY_ANNOTATION] == "remediation"
    assert _workload_on(twin, held.name) == []
    notices = [n["Subject"] for n in twin.bridge.notices if held.instance_id in n.get("Subject", "")]
    assert any(s.startswith("[rate-limited]") for s in notices), notices
    (metric_filter,) = [
        r["Properties"]
        for r in twin.template["Resources"].values()
        if r["Type"] == "AWS::Logs::MetricFilter"
        and r["Properties"]["MetricTransformations"][0]["MetricName"] == "ReplacementsHeldBack"
    ]
    counted = [e for e in twin.handler_log if metric_filter_matches(metric_filter["FilterPattern"], e)]
    assert len(counted) == 1 and counted[0]["instance"] == held.instance_id, counted
