"""``TrainingPlatform.add_model_server``: a :class:`~fmconstructs.serving.ModelServer` on the platform's EKS cluster.

The platform is the one-call construct above the backends; serving sits above ``eks``, so the platform wires it here:
the server runs on the platform's :class:`~fmconstructs.eks.GpuEksCluster` (by default on the platform's GPU node
group when it serves on the platform's instance type), reads its weights from S3, Hugging Face or the platform's FSx
for Lustre file system (``fsx_path``: the directory training wrote to), and the platform's managed scraper collects
the vLLM metrics (``AmpEksScraper.enable_serving``: the ``fm-serving`` job, ``fm_serving:*`` rules and alerts).
Only the EKS backend: PCS, ParallelCluster and HyperPod have no GpuEksCluster of the platform's own to serve on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._validate import check_scope_id
from ..serving.model_server import ModelServer
from ..serving.weights import ModelWeights
from . import rules

if TYPE_CHECKING:
    from .platform import TrainingPlatform

__all__ = ["add_model_server"]


def add_model_server(
    platform: TrainingPlatform,
    id: str,
    *,
    name: str,
    weights: ModelWeights | None = None,
    fsx_path: str | None = None,
    instance_type: str | None = None,
    **options: Any,
) -> ModelServer:
    """See :meth:`TrainingPlatform.add_model_server`."""
    rules.model_servers_need_eks(backend=platform.backend.value)
    cluster = platform.eks_cluster
    assert cluster is not None  # the EKS backend always has one
    check_scope_id(platform, id)
    chosen = _weights(platform, weights, fsx_path)
    server_type = instance_type or platform.instance_spec.instance_type
    if (
        server_type == platform.instance_spec.instance_type
        and options.get("node_group") is None
        and options.get("node_pool") is None
    ):
        options["node_group"] = platform.node_group
    server = ModelServer(platform, id, cluster=cluster, name=name, weights=chosen, instance_type=server_type, **options)
    if platform.scraper is not None:
        platform.scraper.enable_serving()
    return server


def _weights(platform: TrainingPlatform, weights: ModelWeights | None, fsx_path: str | None) -> ModelWeights:
    """``weights``, or the directory ``fsx_path`` of the platform's file system: exactly one."""
    rules.exactly_one_weights_source(weights=weights, fsx_path=fsx_path)
    if weights is not None:
        return weights
    rules.fsx_path_needs_storage(fsx_path=fsx_path, has_file_system=platform.file_system is not None)
    assert platform.file_system is not None
    return ModelWeights.from_fsx(platform.file_system, path=str(fsx_path))
