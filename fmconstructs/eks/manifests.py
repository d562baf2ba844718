"""Kubernetes manifests fmconstructs renders: a static FSx for Lustre volume and claim, and a DRA ComputeDomain.

Pure functions returning plain dicts, so that tests validate them offline against the Kubernetes schemas
(``kubernetes-validate``) and constructs pass them to ``cluster.add_manifest``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._validate import check_bool, check_count
from .._validate_k8s import check_dns_subdomain, check_namespace
from ..errors import FmTypeError
from ..storage.client import EksStaticVolume

#: The DRA driver's ComputeDomain API (NVIDIA k8s-dra-driver-gpu, ``resource.nvidia.com/v1beta1``).
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"


def check_name(parameter: str, name: object, *, label: bool = False) -> None:
    """A Kubernetes object name: a DNS-1123 subdomain, or a DNS-1123 label for namespaces (Kubernetes "Object Names
    and IDs"; k8s.io/apimachinery ``IsDNS1123Subdomain``/``IsDNS1123Label``). Raises FmTypeError for a non-str."""
    if label:
        check_namespace(parameter, name)
    else:
        check_dns_subdomain(parameter, name)


def _check_volume(volume: object) -> EksStaticVolume:
    if not isinstance(volume, EksStaticVolume):
        raise FmTypeError(
            "volume",
            volume,
            f"an EksStaticVolume (LustreFileSystem.eks_static_volume(); got a {type(volume).__name__})",
        )
    return volume


def lustre_persistent_volume(volume: EksStaticVolume, name: str) -> dict[str, Any]:
    """The static ``PersistentVolume`` of ``volume`` (the storage construct's manifest; ``storageClassName: ""`` so
    that only a claim naming it binds to it)."""
    _check_volume(volume)
    check_name("name", name)
    return volume.to_manifest(name, storage_class_name="", access_modes=("ReadWriteMany",), reclaim_policy="Retain")


def lustre_persistent_volume_claim(
    volume: EksStaticVolume, *, name: str, namespace: str, volume_name: str
) -> dict[str, Any]:
    """A ``PersistentVolumeClaim`` bound to the static volume ``volume_name`` (``volumeName`` pins the binding)."""
    _check_volume(volume)
    check_name("name", name)
    check_name("namespace", namespace, label=True)
    check_name("volume_name", volume_name)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": volume_name,
            "resources": {"requests": {"storage": volume.capacity}},
        },
    }


def namespace_manifest(name: str) -> dict[str, Any]:
    check_name("namespace", name, label=True)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def lustre_static_volume_manifests(
    volume: EksStaticVolume, *, name: str, namespace: str = "default", create_namespace: bool = False
) -> list[dict[str, Any]]:
    """The PersistentVolume ``name`` and a claim ``name`` in ``namespace`` bound to it (plus the namespace)."""
    _check_volume(volume)
    check_name("name", name)
    check_name("namespace", namespace, label=True)
    check_bool("create_namespace", create_namespace)
    out: list[dict[str, Any]] = [namespace_manifest(namespace)] if create_namespace else []
    out.append(lustre_persistent_volume(volume, name))
    out.append(lustre_persistent_volume_claim(volume, name=name, namespace=namespace, volume_name=name))
    return out


def compute_domain_manifest(
    *, name: str, namespace: str, num_nodes: int = 0, channel_claim_template: str | None = None
) -> dict[str, Any]:
    """A ``ComputeDomain`` of the NVIDIA DRA driver: IMEX daemons on the GB200 nodes its pods land on, and a
    ResourceClaimTemplate (default ``<name>-channel``) that pods reference to get an IMEX channel.

    Pods join with ``spec.resourceClaims: [{name: imex, resourceClaimTemplateName: <template>}]`` and
    ``resources.claims: [{name: imex}]`` on the container (NVIDIA DRA driver docs, "ComputeDomains").

    ``num_nodes`` default 0: elastic domains, as the EKS User Guide "ml-eks-nvidia-ultraserver" example sets
    (``numNodes: 0``, "can be set to 0 from NVIDIA DRA Driver version v25.8.0+"); the v25.8.0 CRD
    (resource.nvidia.com_computedomains.yaml) says it "must be zero or greater", recommends zero, and uses a non-zero
    value only to report ``Ready`` once that many IMEX daemons run.
    """
    check_name("name", name)
    check_name("namespace", namespace, label=True)
    # The CRD's numNodes "must be zero or greater" (k8s-dra-driver-gpu v25.8.0 resource.nvidia.com_computedomains.yaml)
    num_nodes = check_count("num_nodes", num_nodes, minimum=0)
    # A token name stays a token when suffixed (CloudFormation joins the parts).
    template = f"{name}-channel" if channel_claim_template is None else channel_claim_template
    check_name("channel_claim_template", template)
    return {
        "apiVersion": COMPUTE_DOMAIN_API_VERSION,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": template}}},
    }


def manifest_kinds(manifests: Sequence[dict[str, Any]]) -> list[str]:
    """``["v1/PersistentVolume", ...]``: a summary for messages and tests."""
    return [f"{m['apiVersion']}/{m['kind']}" for m in manifests]
