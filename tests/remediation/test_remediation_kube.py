"""The remediation handler's Kubernetes client (handler/kube.py) against a fake API over TLS: retries on 503 and 429
(Retry-After honoured), none on 404 or a PodDisruptionBudget refusal, a timeout per call, and nothing past the
deadline."""

from __future__ import annotations

import socket
import time

import pytest

from fmconstructs.remediation.handler import kube, runtime
from fmconstructs.remediation.handler.kube import KubeApi, KubeError

from tests.support.remediation_world import KubeServer, kube_server, pod

pytest.importorskip("cryptography.x509")


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
    state.add_node("n1", "i-0123456789abcdef0")
    return server


def _client(api: KubeServer, *, left_s: float = 60.0, timeout_s: float = 5.0) -> tuple[KubeApi, list[float]]:
    slept: list[float] = []
    end = time.monotonic() + left_s + runtime.NOTICE_RESERVE_S
    deadline = runtime.Deadline(lambda: end - time.monotonic())
    return KubeApi(api.endpoint, api.ca_pem, "t", deadline=deadline, timeout_s=timeout_s, sleep=slept.append), slept


def test_503_then_200_is_retried(api):
    api.state.faults = {"GET node": ["503"]}
    client, slept = _client(api)
    assert client.node("n1")["metadata"]["name"] == "n1"
    assert api.state.count("GET", "/api/v1/nodes/n1") == 2 and len(slept) == 1


def test_429_waits_for_retry_after(api):
    api.state.faults = {"GET node": ["429"]}
    api.state.retry_after = "3"
    client, slept = _client(api)
    client.node("n1")
    assert slept == [3.0]


def test_a_retry_after_past_the_deadline_gives_up_at_once(api):
    api.state.faults = {"GET node": ["429"]}
    api.state.retry_after = "8"
    client, slept = _client(api, left_s=5.0)
    with pytest.raises(runtime.OutOfTime, match="no time left"):
        client.node("n1")
    assert slept == []


def test_a_missing_object_is_not_retried(api):
    client, _ = _client(api)
    with pytest.raises(KubeError) as info:
        client.node("nope")
    assert info.value.status == 404 and api.state.count("GET", "/api/v1/nodes/nope") == 1


def test_a_disruption_budget_refusal_is_not_retried_but_throttling_is(api):
    api.state.pods.append(pod("w", "n1"))
    api.state.protected = {"w"}
    client, _ = _client(api)
    with pytest.raises(KubeError) as info:
        client.evict("ml", "w")
    assert kube.blocked_by_budget(info.value) and api.state.count("POST", "/") == 1
    api.state.protected = set()
    api.state.faults = {"POST eviction": ["429"]}
    client.evict("ml", "w")
    assert api.state.count("POST", "/") == 3


def test_a_hanging_server_times_out_each_call_and_stops_at_the_deadline(api):
    api.state.always = "hang"
    client, _ = _client(api, left_s=1.2, timeout_s=0.4)
    started = time.monotonic()
    with pytest.raises((runtime.OutOfTime, KubeError)):
        client.node("n1")
    assert time.monotonic() - started < 2.0
    spent, _ = _client(api, left_s=0.0)
    with pytest.raises(runtime.OutOfTime, match="not sent"):
        spent.node("n1")


def test_a_refused_connection_is_retried_then_fails():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    slept: list[float] = []
    client = KubeApi(f"https://127.0.0.1:{port}", None, "t", sleep=slept.append)
    with pytest.raises(KubeError, match="attempt 5"):
        client.node("n1")
    assert len(slept) == kube.KUBE_ATTEMPTS - 1


def test_a_server_with_another_certificate_is_refused_at_once(api, tmp_path):
    from tests.support.capacity_events_eks_handler import _certificate

    _, _, other_ca = _certificate(tmp_path)
    slept: list[float] = []
    client = KubeApi(api.endpoint, other_ca, "t", sleep=slept.append)
    with pytest.raises(KubeError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        client.node("n1")
    assert slept == []


def test_the_node_list_is_read_once_per_invocation(api):
    api.state.add_node("n2", "i-0fedcba9876543210")
    client, _ = _client(api)
    assert client.node_for_instance("i-0fedcba9876543210") == "n2"
    assert client.node_for_instance("i-0123456789abcdef0") == "n1"
    assert client.node_for_instance("i-00000000000000000") == ""
    assert api.state.count("GET", "/api/v1/nodes") == 1


@pytest.mark.parametrize(
    ("node", "operator"),
    [
        ({"spec": {}}, False),
        ({"spec": {"unschedulable": True}}, True),
        ({"spec": {"unschedulable": True}, "metadata": {"annotations": {kube.CORDONED_BY_ANNOTATION: "x"}}}, True),
        (
            {
                "spec": {"unschedulable": True},
                "metadata": {"annotations": {kube.CORDONED_BY_ANNOTATION: kube.CORDONED_BY_REMEDIATION}},
            },
            False,
        ),
    ],
)
def test_a_cordon_without_our_mark_is_someone_elses(node, operator):
    assert kube.cordoned_by_someone_else(node) is operator
