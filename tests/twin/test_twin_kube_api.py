"""The EKS twin's fake Kubernetes API (tests/support/twin/kube_api.py): the patch formats, the scheduler, evictions and
tokens, driven through the remediation handler's own client over HTTPS (no daemons, no root)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fmconstructs.remediation.handler import kube as handler_kube

from tests.support.twin.kube_api import Budget, FakeKubeApi
from tests.support.twin.kube_patch import JSON_PATCH, MERGE, STRATEGIC, PatchError, apply_patch

TOKEN = "t"
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
PENDING = {"key": "fmconstructs.io/node-checks", "value": "pending", "effect": "NoSchedule"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeKubeApi]:
    with FakeKubeApi(tmp_path, tokens={TOKEN: "admin"}) as server:
        yield server


def _client(api: FakeKubeApi, token: str = TOKEN) -> handler_kube.KubeApi:
    return handler_kube.KubeApi(api.endpoint, api.ca_pem, token)


def test_a_json_patch_whose_test_fails_changes_nothing() -> None:
    node = {"spec": {"taints": [{"key": "a"}, {"key": "b"}]}}
    with pytest.raises(PatchError, match="test operation 0 failed"):
        apply_patch(
            node,
            JSON_PATCH,
            [{"op": "test", "path": "/spec/taints/0/key", "value": "b"}, {"op": "remove", "path": "/spec/taints/0"}],
        )
    patched = apply_patch(
        node,
        JSON_PATCH,
        [{"op": "test", "path": "/spec/taints/1/key", "value": "b"}, {"op": "remove", "path": "/spec/taints/1"}],
    )
    assert patched["spec"]["taints"] == [{"key": "a"}] and len(node["spec"]["taints"]) == 2


def test_merge_patch_null_deletes_and_strategic_directives_are_refused() -> None:
    node = {"metadata": {"annotations": {"x": "1", "y": "2"}}}
    assert apply_patch(node, MERGE, {"metadata": {"annotations": {"x": None}}}) == {
        "metadata": {"annotations": {"y": "2"}}
    }
    with pytest.raises(PatchError, match=r"\$patch"):
        apply_patch(node, STRATEGIC, {"spec": {"taints": [{"$patch": "delete", "key": "a"}]}})
    with pytest.raises(PatchError) as error:
        apply_patch(node, "application/apply-patch+yaml", {})
    assert error.value.status == 415


def test_a_pod_waits_for_a_node_whose_taints_it_tolerates(api: FakeKubeApi) -> None:
    api.create_pod("train-0", tolerations=[GPU], replicated=True)
    api.add_node("n1", provider_id="aws:///z/i-0123456789abcdef0", taints=[{**GPU, "value": "true"}, PENDING])
    assert api.pending() and not api.pods_on("n1")
    _client(api).request("PATCH", "/api/v1/nodes/n1", [{"op": "remove", "path": "/spec/taints/1"}], JSON_PATCH)
    assert [p["metadata"]["name"] for p in api.pods_on("n1")] == ["train-0"]


def test_a_cordon_taints_the_node_and_an_eviction_reschedules_elsewhere(api: FakeKubeApi) -> None:
    api.add_node("n1", provider_id="aws:///z/i-0123456789abcdef0")
    api.create_pod("train-0", replicated=True)
    api.add_node("n2", provider_id="aws:///z/i-0123456789abcdef1")
    kube = _client(api)
    drained = handler_kube.drain_node(kube, "n1", "fmconstructs: remediation test")
    assert drained.evicted == ["default/train-0"]
    assert [t["key"] for t in api.node("n1")["spec"]["taints"]] == ["node.kubernetes.io/unschedulable"]
    assert api.pods_on("n1") == [] and len(api.pods_on("n2")) == 1
    assert kube.instance_of_node("n1") == "i-0123456789abcdef0" and kube.instance_of_node("gone") == ""


def test_a_disruption_budget_blocks_the_eviction_and_a_bad_token_is_refused(api: FakeKubeApi) -> None:
    api.add_node("n1", provider_id="aws:///z/i-0123456789abcdef0")
    api.create_pod("db-0", labels={"app": "db"})
    api.budgets.append(Budget("db", "default", {"app": "db"}))
    assert handler_kube.drain_node(_client(api), "n1", "r").blocked == ["default/db-0"]
    with pytest.raises(handler_kube.KubeError) as error:
        _client(api, "wrong").node("n1")
    assert error.value.status == 401
