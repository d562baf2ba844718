"""Helpers of tests/eks/test_eks_kueue.py that other test modules use too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

CRDS = Path(__file__).parents[1] / "data" / "kueue_crds"
SCHEMA_FILES = {
    ("kueue.x-k8s.io/v1beta2", "Topology"): "kueue.x-k8s.io_topologies.v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "kueue.x-k8s.io_resourceflavors.v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): "kueue.x-k8s.io_clusterqueues.v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): "kueue.x-k8s.io_localqueues.v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "Cohort"): "kueue.x-k8s.io_cohorts.v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"): "kueue.x-k8s.io_workloadpriorityclasses.v1beta2.json",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io_jobsets.v1alpha2.json",
}


def _strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused (the API server prunes them silently: a typo would be lost)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


_VALIDATORS: dict[tuple[str, str], jsonschema.Draft7Validator] = {}


def validate(manifest: dict[str, Any]) -> None:
    key = (manifest["apiVersion"], manifest["kind"])
    if key not in _VALIDATORS:
        vendored = json.loads((CRDS / SCHEMA_FILES[key]).read_text())
        assert f"{vendored['group']}/{vendored['version']}" == key[0] and vendored["kind"] == key[1]
        _VALIDATORS[key] = jsonschema.Draft7Validator(_strict(vendored["openAPIV3Schema"]))
    _VALIDATORS[key].validate(manifest)
    assert set(manifest["metadata"]) <= {"name", "namespace", "labels", "annotations"}
