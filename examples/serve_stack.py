"""FmServeP5en: two vLLM model servers on a GPU EKS cluster, weights from S3, metrics in the shared AMP workspace.

- VPC (examples/network.py) and :class:`~fmconstructs.eks.GpuEksCluster` (private endpoint, system node group) with an
  admin role given cluster admin through an access entry, the GPU add-ons.
- A model bucket (:class:`~fmconstructs.storage.DataRepositoryBucket`: SSE-S3, TLS only, versioned, public access
  blocked, RETAIN, server access logs to a log bucket). Upload the weights under ``llama-3.1-405b/`` and
  ``llama-3.1-8b/`` (``aws s3 sync``); each server's role may read only its own prefix, mounted read-only through the
  Mountpoint for Amazon S3 CSI driver add-on.
- ``llama-405b``: 405e9 parameters in bf16 on 2 x ``p5en.48xlarge`` from a Capacity Block (a LeaderWorkerSet of one
  leader and one worker, tensor parallel 8 in a node, pipeline parallel 2 across nodes, every EFA interface of the
  node), refused at synthesis if it did not fit with half the usable HBM left for the KV cache (one node would
  not: :func:`fmconstructs.serving.sizing.check_model_fits`); an internal NLB to the leader (AWS Load Balancer
  Controller); with the workspace, KEDA scales it on ``vllm:num_requests_waiting`` read from AMP.
- ``llama-8b``: 8e9 parameters in bf16 on one GPU (tensor parallel 1) of ``p5.48xlarge`` nodes that Karpenter
  launches On-Demand from the NodePool ``serving-p5`` (one type per pool: p5 has EFA on 32 network cards, see
  :mod:`fmconstructs.eks.karpenter_manifests`), at most 2 nodes; an internal NLB.
- With the workspace: the managed scraper with ``serving=True`` (job ``fm-serving``, the ``fm_serving:*`` rules and
  alerts).

The Capacity Block id is a placeholder; override it with ``-c fmconstructs:capacity-block-id:p5en.48xlarge=cr-...``
(examples/reservations.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmconstructs import CapacityBlock
from fmconstructs.eks import GpuEksCluster, GpuNodeGroup
from fmconstructs.observability.eks import AmpEksScraper
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.serving import ModelDtype, ModelServer, ModelWeights
from fmconstructs.storage import DataRepositoryBucket

from .eks_stack import add_eks_outputs
from .network import access_logs_bucket, example_vpc
from .reservations import PLACEHOLDER_CAPACITY_BLOCK_IDS, capacity_block_id

DEFAULT_CAPACITY_BLOCK_ID = PLACEHOLDER_CAPACITY_BLOCK_IDS["p5en.48xlarge"]
#: The Karpenter NodePool of the single-node server.
SERVING_POOL = "serving-p5"


class ServeStack(Stack):
    """The FmServeP5en example stack."""

    def __init__(
        self, scope: Construct, id: str, *, workspace: PrometheusWorkspace | None = None, **kwargs: Any
    ) -> None:
        """:param workspace: where the AMP managed scraper writes and KEDA reads (FmObservability's); default: no
        scraper and no autoscaling."""
        super().__init__(scope, id, **kwargs)
        # Server access logs through a bucket policy rather than ACLs (same flag as the storage example).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.vpc = example_vpc(self)
        self.admin_role = iam.Role(
            self,
            "ClusterAdminRole",
            assumed_by=iam.AccountRootPrincipal(),
            description="Administrators of the FmServeP5en cluster (EKS access entry, AmazonEKSClusterAdminPolicy)",
        )
        self.cluster = GpuEksCluster(self, "Cluster", vpc=self.vpc, admin_roles=[self.admin_role])
        self.p5en: GpuNodeGroup = self.cluster.add_gpu_node_group(
            "P5en",
            instance_type="p5en.48xlarge",
            capacity=CapacityBlock(reservation_id=capacity_block_id(self, "p5en.48xlarge"), instance_count=2),
            max_nodes=2,
            subnets=[self.vpc.private_subnets[0]],
        )
        self.karpenter = self.cluster.add_karpenter()
        self.karpenter.add_gpu_node_pool(
            SERVING_POOL,
            instance_types=["p5.48xlarge"],
            max_nodes=2,
            subnets=[self.vpc.private_subnets[0]],
        )
        self.addons = self.cluster.add_gpu_addons()
        self.access_logs_bucket = access_logs_bucket(self)
        self.models = DataRepositoryBucket(
            self, "Models", server_access_logs_bucket=self.access_logs_bucket, server_access_logs_prefix="models/"
        )
        self.large = self._large_model(workspace)
        self.small = self._small_model()
        self.scraper = (
            AmpEksScraper(self, "Scraper", cluster=self.cluster, workspace=workspace, cluster_label=id, serving=True)
            if workspace is not None
            else None
        )
        add_eks_outputs(self, self.cluster, node_groups={"P5en": self.p5en})
        CfnOutput(self, "ModelBucket", value=self.models.bucket.bucket_name, description="S3 bucket of the weights")

    def _large_model(self, workspace: PrometheusWorkspace | None) -> ModelServer:
        """405e9 bf16 over 2 x p5en.48xlarge (LeaderWorkerSet) on the Capacity Block group, internal NLB, KEDA."""
        server = ModelServer(
            self,
            "Llama405b",
            cluster=self.cluster,
            name="llama-405b",
            weights=ModelWeights.from_s3(self.models.bucket, prefix="llama-3.1-405b/"),
            instance_type="p5en.48xlarge",
            nodes=2,
            node_group=self.p5en,
            parameters=405e9,
            dtype=ModelDtype.BF16,
            # Half of the usable HBM for the KV cache (long contexts, many requests): one p5en would hold the weights
            # with 23 % left, so the check asks for two nodes (75 GiB of KV cache per GPU).
            kv_cache_fraction=0.5,
            max_model_len=32768,
        )
        server.add_endpoint()
        if workspace is not None:
            # One replica per Capacity Block of two nodes: the autoscaler only keeps it at one (max 1) until more
            # capacity is reserved; raise max_replicas with the block.
            server.add_autoscaling(workspace=workspace, min_replicas=1, max_replicas=1, cluster_label=self.node.id)
        return server

    def _small_model(self) -> ModelServer:
        """8e9 bf16 on one GPU of Karpenter p5.48xlarge nodes (On-Demand), internal NLB."""
        server = ModelServer(
            self,
            "Llama8b",
            cluster=self.cluster,
            name="llama-8b",
            weights=ModelWeights.from_s3(self.models.bucket, prefix="llama-3.1-8b/"),
            instance_type="p5.48xlarge",
            tensor_parallel=1,
            node_pool=SERVING_POOL,
            parameters=8e9,
            dtype=ModelDtype.BF16,
        )
        server.add_endpoint()
        return server
