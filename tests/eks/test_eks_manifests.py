"""Manifests fmconstructs renders for EKS, validated offline against the Kubernetes OpenAPI schemas."""

from __future__ import annotations

import kubernetes_validate
import pytest

from fmconstructs import FmValidationError
from fmconstructs.eks import DEFAULT_KUBERNETES_VERSION, compute_domain_manifest, lustre_static_volume_manifests
from fmconstructs.eks.manifests import COMPUTE_DOMAIN_API_VERSION, manifest_kinds
from fmconstructs.storage import EksStaticVolume

K8S_VERSION = DEFAULT_KUBERNETES_VERSION.version

VOLUME = EksStaticVolume(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
    storage_capacity_gib=2400,
)


@pytest.fixture(scope="module")
def volume_manifests():
    return lustre_static_volume_manifests(VOLUME, name="fsx-training", namespace="training", create_namespace=True)


def test_static_volume_manifests_are_namespace_pv_and_pvc(volume_manifests):
    assert manifest_kinds(volume_manifests) == ["v1/Namespace", "v1/PersistentVolume", "v1/PersistentVolumeClaim"]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_static_volume_manifests_validate_against_kubernetes_schemas(volume_manifests, index):
    # GIVEN a rendered manifest WHEN validated strictly (unknown fields rejected) THEN it matches the schema
    assert kubernetes_validate.validate(volume_manifests[index], K8S_VERSION, strict=True) == K8S_VERSION


def test_pv_uses_fsx_csi_driver_with_file_system_attributes(volume_manifests):
    pv = volume_manifests[1]
    assert pv["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "volumeAttributes": {"dnsname": VOLUME.dns_name, "mountname": "abcdefgh"},
    }
    assert pv["spec"]["capacity"] == {"storage": "2400Gi"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["storageClassName"] == ""


def test_pvc_binds_to_the_static_volume(volume_manifests):
    pvc = volume_manifests[2]
    assert pvc["metadata"] == {"name": "fsx-training", "namespace": "training"}
    assert pvc["spec"]["volumeName"] == "fsx-training"
    assert pvc["spec"]["storageClassName"] == ""
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2400Gi"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_a_schema_violation_is_caught_by_the_validator():
    bad = lustre_static_volume_manifests(VOLUME, name="fsx")[0]
    bad["spec"]["capacity"] = "2400Gi"  # must be a map
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_compute_domain_manifest_shape():
    manifest = compute_domain_manifest(name="gb200-domain", namespace="training", num_nodes=18)
    assert manifest == {
        "apiVersion": COMPUTE_DOMAIN_API_VERSION,
        "kind": "ComputeDomain",
        "metadata": {"name": "gb200-domain", "namespace": "training"},
        "spec": {"numNodes": 18, "channel": {"resourceClaimTemplate": {"name": "gb200-domain-channel"}}},
    }
    # ObjectMeta of a custom resource still follows the core schema.
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": manifest["metadata"]}, K8S_VERSION, strict=True
    )


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"name": "Bad_Name", "namespace": "default"}, "name"),
        ({"name": "ok", "namespace": "UPPER"}, "namespace"),
        ({"name": "ok", "namespace": "a" * 64}, "namespace"),
        # Kubernetes' own rules (k8s.io/apimachinery IsDNS1123Subdomain/IsDNS1123Label), matched on the whole string.
        ({"name": "fsx\n", "namespace": "default"}, "name"),
        ({"name": "ok", "namespace": "default\n"}, "namespace"),
        ({"name": "a..b", "namespace": "default"}, "name"),
        ({"name": "a.-b", "namespace": "default"}, "name"),
        ({"name": "f" * 254, "namespace": "default"}, "name"),
        ({"name": "ok", "namespace": "a.b"}, "namespace"),
    ],
)
def test_static_volume_rejects_invalid_names(kwargs, parameter):
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be a Kubernetes DNS-1123"):
        lustre_static_volume_manifests(VOLUME, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"volume": "fs-0123456789abcdef0", "name": "fsx"}, "volume"),
        ({"volume": VOLUME, "name": 5}, "name"),
        ({"volume": VOLUME, "name": "fsx", "namespace": None}, "namespace"),
        ({"volume": VOLUME, "name": "fsx", "create_namespace": "yes"}, "create_namespace"),
    ],
)
def test_static_volume_rejects_wrong_types(kwargs, parameter):
    with pytest.raises(TypeError, match=rf"^{parameter} must be"):
        lustre_static_volume_manifests(**kwargs)


@pytest.mark.parametrize("num_nodes", [True, "2", float("nan"), float("inf"), 2.5])
def test_compute_domain_rejects_non_counts(num_nodes):
    with pytest.raises(FmValidationError, match=r"^num_nodes must be"):
        compute_domain_manifest(name="d", namespace="default", num_nodes=num_nodes)


def test_names_at_kubernetes_limits_pass():
    manifests = lustre_static_volume_manifests(VOLUME, name="a" * 253, namespace="n" * 63, create_namespace=True)
    assert [m["metadata"]["name"] for m in manifests] == ["n" * 63, "a" * 253, "a" * 253]


def test_compute_domain_defaults_to_an_elastic_domain():
    # EKS User Guide ml-eks-nvidia-ultraserver: "numNodes: 0 # This can be set to 0 from NVIDIA DRA Driver version
    # v25.8.0+"; the v25.8.0 CRD: "Must be zero or greater".
    assert compute_domain_manifest(name="d", namespace="default")["spec"]["numNodes"] == 0


@pytest.mark.parametrize("num_nodes", [-1, -18])
def test_compute_domain_rejects_negative_nodes(num_nodes):
    with pytest.raises(FmValidationError, match=rf"^num_nodes must be at least 0, got {num_nodes}$"):
        compute_domain_manifest(name="d", namespace="default", num_nodes=num_nodes)
