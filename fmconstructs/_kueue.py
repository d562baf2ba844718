"""Kueue object primitives shared by the EKS scheduling construct and the teams renderer: the pinned API version,
the GPU and EFA resource names, a flavor's quota and the ClusterQueue it renders (pure: no aws_cdk).

Below the backends (floor 0, tests/house/floors.py) so that :mod:`fmconstructs.teams` renders ClusterQueues without
importing :mod:`fmconstructs.eks`; :mod:`fmconstructs.eks.scheduling` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._validate_k8s import check_dns_subdomain
from .errors import FmValidationError

#: The served storage version at the Kueue pin (config/components/crd/bases of tag v0.19.2).
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"


@dataclass(frozen=True)
class FlavorQuota:
    """One ResourceFlavor and its ClusterQueue quota (the sum over its node groups)."""

    name: str
    node_labels: Mapping[str, str]
    layers: int
    gpus: int
    efa_interfaces: int
    tolerations: tuple[Mapping[str, str], ...] = ()
    #: False for elastic pools (Karpenter, EKS Auto Mode): no ``topologyName`` (:mod:`fmconstructs.platform.elastic`).
    topology: bool = True


def cluster_queue_manifest(name: str, flavors: Sequence[FlavorQuota]) -> dict[str, Any]:
    """A ``ClusterQueue`` for every namespace with ``nvidia.com/gpu`` and ``vpc.amazonaws.com/efa`` quotas per flavor.
    Other resources (cpu, memory) are not covered; the Kueue configuration ignores them (``IgnoreUndeclared``)."""
    check_dns_subdomain("name", name)
    if not flavors:
        raise FmValidationError("flavors", list(flavors), "at least one GPU node group")
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": [GPU_RESOURCE, EFA_RESOURCE],
                    "flavors": [
                        {
                            "name": f.name,
                            "resources": [
                                {"name": GPU_RESOURCE, "nominalQuota": f.gpus},
                                {"name": EFA_RESOURCE, "nominalQuota": f.efa_interfaces},
                            ],
                        }
                        for f in flavors
                    ],
                }
            ],
        },
    }
