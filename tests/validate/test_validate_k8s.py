"""The one Kubernetes name checker (fmconstructs._validate_k8s) against apimachinery's rules, and every place that takes
a Kubernetes name, namespace, label, taint or annotation key using it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fmconstructs import FmValidationError
from fmconstructs._validate_k8s import (
    check_dns_label,
    check_dns_subdomain,
    check_label_key,
    check_label_value,
    check_namespace,
    check_taint_effect,
)

# kubernetes/apimachinery pkg/util/validation/validation.go (dns1123LabelFmt, dns1123SubdomainFmt, 63/253) and
# pkg/api/validate/content/kube.go (labelKeyFmt, labelValueFmt, IsLabelKey: at most one '/', a non-empty
# subdomain prefix, a name of at most 63), written out as Go writes them.
GO_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GO_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
GO_LABEL_KEY_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
GO_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _go_match(pattern: re.Pattern[str], text: str) -> bool:
    # Go's $ matches only at the end (no trailing-newline allowance, unlike Python's $).
    return pattern.match(text) is not None and not text.endswith("\n")


def go_is_label_key(text: str) -> bool:
    parts = text.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _go_match(GO_DNS1123_SUBDOMAIN, prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and _go_match(GO_LABEL_KEY_NAME, name)


def _accepts(check: Callable[..., Any], text: str, **kwargs: Any) -> bool:
    try:
        check("p", text, **kwargs)
    except FmValidationError:
        return False
    return True


NAMES = st.text(alphabet="abz09-.", max_size=70) | st.text(alphabet="aZ9-._/ \n", max_size=20)
KEYS = st.builds(lambda p, n: f"{p}/{n}" if p is not None else n, st.none() | NAMES, NAMES) | NAMES


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_dns_names_match_apimachinery(text: str) -> None:
    assert _accepts(check_dns_label, text) == (len(text) <= 63 and _go_match(GO_DNS1123_LABEL, text))
    assert _accepts(check_namespace, text) == _accepts(check_dns_label, text)
    assert _accepts(check_dns_subdomain, text) == (len(text) <= 253 and _go_match(GO_DNS1123_SUBDOMAIN, text))


@settings(max_examples=300, deadline=None)
@given(KEYS)
def test_label_keys_match_apimachinery(text: str) -> None:
    assert _accepts(check_label_key, text) == go_is_label_key(text)
    assert _accepts(check_label_key, text, max_length=63) == (len(text) <= 63 and go_is_label_key(text))


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_label_values_match_apimachinery(text: str) -> None:
    assert _accepts(check_label_value, text) == (len(text) <= 63 and _go_match(GO_LABEL_VALUE, text))
    assert _accepts(check_label_value, text, allow_empty=False) == (text != "" and _accepts(check_label_value, text))


@pytest.mark.parametrize(
    "key", ["team", "fmconstructs.io/node-checks", "A.b_c-9", f"{'a' * 253}/{'n' * 63}", "nvidia.com/gpu"]
)
def test_legal_label_keys_pass(key: str) -> None:
    assert check_label_key("labels key", key) == key


@pytest.mark.parametrize(
    "key",
    ["", "-team", "team-", "a/b/c", "/team", "UPPER.io/x", "a..b/x", f"{'a' * 254}/x", "n" * 64, "team\n", "a b"],
)
def test_illegal_label_keys_fail(key: str) -> None:
    with pytest.raises(FmValidationError, match=r"^labels key must be a Kubernetes label key"):
        check_label_key("labels key", key)


def test_annotation_keys_ignore_case_as_kubernetes_does() -> None:
    assert check_label_key("pod_annotation", "Example.COM/Warn", kind="annotation") == "Example.COM/Warn"
    with pytest.raises(FmValidationError, match=r"^pod_annotation must be a Kubernetes label key"):
        check_label_key("pod_annotation", "Example.COM/Warn")


@pytest.mark.parametrize("effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
def test_taint_effects(effect: str) -> None:
    assert check_taint_effect("effect", effect) == effect


@pytest.mark.parametrize("effect", ["noschedule", "NO_SCHEDULE", "", "Evict"])
def test_unknown_taint_effects_fail(effect: str) -> None:
    with pytest.raises(FmValidationError, match=r"^effect must be one of 'NoSchedule'"):
        check_taint_effect("effect", effect)


# --- every place that takes a Kubernetes name uses the checker ------------------------------------------------------


def _eks_group(**options: Any) -> Any:
    from fmconstructs.eks import GpuEksCluster

    from tests.conftest import new_scene

    scene = new_scene()
    cluster = GpuEksCluster(scene.stack, "Eks", vpc=scene.vpc)
    return cluster.add_gpu_node_group("Gpu", instance_type="p5en.48xlarge", max_nodes=2, **options)


def _taint(key: str) -> Any:
    from aws_cdk import aws_eks_v2 as eks

    return _eks_group(taints=[eks.TaintSpec(key=key, value="x", effect=eks.TaintEffect.NO_SCHEDULE)])


def _server(**overrides: Any) -> Any:
    from fmconstructs.serving import vllm
    from fmconstructs.serving.weights import claim_mount

    props: dict[str, Any] = {
        "name": "llama",
        "namespace": "fm-serving",
        "instance_type": "p5en.48xlarge",
        "parallelism": vllm.plan_parallelism(instance_type="p5en.48xlarge", nodes=1),
        "weights": claim_mount("llama-weights"),
    }
    return vllm.ServerSpec(**{**props, **overrides})


def _hyperpod_labels(labels: dict[str, str]) -> Any:
    from fmconstructs.hyperpod.instance_group_options import HyperPodKubernetesConfig

    return HyperPodKubernetesConfig(labels=labels)


def _hyperpod_taint(key: str) -> Any:
    from fmconstructs.hyperpod.instance_group_options import KubernetesTaint, TaintEffect

    return KubernetesTaint(key=key, effect=TaintEffect.NO_SCHEDULE)


def _job_warning(annotation: str) -> Any:
    from fmconstructs.capacity_events import JobWarning

    return JobWarning(pod_annotation=annotation)


def _gate(taint_key: str) -> Any:
    from fmconstructs.health import NodeCheckSpec
    from fmconstructs.health.kubernetes_gate import render_kubernetes_node_gate

    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None)
    return render_kubernetes_node_gate(spec, taint_key=taint_key, annotation_key="fmconstructs.io/node-checks")


def _nccl(namespace: str) -> Any:
    from fmconstructs.health import NcclCheckSpec, render_mpijob_manifests

    return render_mpijob_manifests(
        NcclCheckSpec(), image="public.ecr.aws/x/nccl-tests:1", instance_type="p5.48xlarge", results_claim="fsx",
        namespace=namespace,
    )  # fmt: skip


def _node_exporter(namespace: str) -> Any:
    from fmconstructs.observability.eks import node_exporter_manifests

    return node_exporter_manifests(namespace=namespace)


def _karpenter_pool(labels: dict[str, str]) -> Any:
    from fmconstructs.eks.karpenter_manifests import node_pool_manifest

    return node_pool_manifest(
        name="gpu", node_class_name="gpu", instance_types=["p5.48xlarge"], max_nodes=4, labels=labels
    )


#: (site, call with a bad value, the parameter the error names, the checker's phrase)
SITES: list[tuple[str, Callable[[], Any], str, str]] = [
    ("GpuNodeGroup labels key", lambda: _eks_group(labels={"a" * 64: "x"}), "labels key", "label key"),
    ("GpuNodeGroup labels value", lambda: _eks_group(labels={"team": ""}), "labels['team']", "label value"),
    ("GpuNodeGroup taint key", lambda: _taint("a/b/c"), "taints[0].key", "taint key"),
    ("ServerSpec name", lambda: _server(name="Llama"), "name", "DNS-1123 label"),
    ("ServerSpec namespace", lambda: _server(namespace="fm_serving"), "namespace", "DNS-1123 label"),
    ("ServerSpec node_selector", lambda: _server(node_selector={"-x": "y"}), "node_selector key", "label key"),
    ("HyperPod labels key", lambda: _hyperpod_labels({f"{'a' * 10}/{'n' * 64}": "x"}), "labels key", "label key"),
    ("HyperPod labels value", lambda: _hyperpod_labels({"team": "-x"}), "labels['team']", "label value"),
    ("HyperPod taint key", lambda: _hyperpod_taint("bad key"), "key", "taint key"),
    ("JobWarning pod_annotation", lambda: _job_warning("a..b/warn"), "pod_annotation", "annotation key"),
    ("node gate taint_key", lambda: _gate("Bad_Prefix/x"), "taint_key", "taint key"),
    ("NCCL MPIJob namespace", lambda: _nccl("Default"), "namespace", "DNS-1123 label"),
    ("node exporter namespace", lambda: _node_exporter("a" * 64), "namespace", "DNS-1123 label"),
    ("Karpenter NodePool labels", lambda: _karpenter_pool({"team": "a b"}), "labels['team']", "label value"),
]


@pytest.mark.parametrize(("site", "call", "parameter", "phrase"), SITES, ids=[s[0] for s in SITES])
def test_every_kubernetes_name_uses_the_one_checker(
    site: str, call: Callable[[], Any], parameter: str, phrase: str
) -> None:
    with pytest.raises(FmValidationError) as raised:
        call()
    assert raised.value.parameter == parameter, site
    assert f"Kubernetes {phrase}" in str(raised.value)
