"""``ModelServer``: vLLM's OpenAI-compatible server on a :class:`~fmconstructs.eks.GpuEksCluster`.

One node per replica runs as a Deployment, several as a LeaderWorkerSet (the LWS controller is installed once per
cluster); the weights come from S3, FSx for Lustre or Hugging Face (:mod:`fmconstructs.serving.weights`); a
ClusterIP Service ``<name>`` in ``namespace`` fronts the pods. Exposure, autoscaling and observability build on the
hooks :attr:`ModelServer.service_name`, :attr:`~ModelServer.namespace` and :attr:`~ModelServer.selector_labels`.

Given ``parameters`` and ``dtype``, the constructor refuses a model that does not fit the layout
(:func:`fmconstructs.serving.sizing.check_model_fits`, the numbers ``fmc plan --model-params`` shows). Capacity: a GPU
node group of the cluster (``node_group``) or a Karpenter NodePool (``node_pool``, from
:meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool`). :meth:`ModelServer.add_endpoint` puts an internal
load balancer in front of it (:mod:`~fmconstructs.serving.exposure`), :meth:`ModelServer.add_autoscaling` scales it
with KEDA on its vLLM queue in the AMP workspace (:mod:`~fmconstructs.serving.autoscaling`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_eks as eks_l1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from .. import _nag
from .._rules import warn
from .._validate import check_count, check_first_call, check_number, located
from .._validate_k8s import check_label_key, check_label_value
from .._validate_refs import check_image_reference, check_model_name
from ..catalog import InstanceSpec, get_instance_spec
from ..eks import addons as _addons
from ..eks.manifests import check_name
from ..eks.vpc_cni import POD_IDENTITY_PRINCIPAL
from ..errors import FmTypeError, FmValidationError, is_token
from ..networking.interfaces import plan_network_interfaces
from . import rules, vllm
from .autoscaling import ModelServerAutoscaler, ScaleTargetKind, ServingMetric
from .exposure import (
    DEFAULT_HEALTH_CHECK_PATH,
    AwsLoadBalancerController,
    LoadBalancerKind,
    LoadBalancerScheme,
    ModelServerEndpoint,
)
from .lws import add_lws_controller
from .sizing import DEFAULT_KV_CACHE_FRACTION, ModelDtype, ServingLayout, check_model_fits
from .weights import (
    MOUNTPOINT_S3_CSI_ADDON_NAME,
    MOUNTPOINT_S3_CSI_ADDON_VERSION,
    ModelWeights,
    WeightsSource,
    claim_mount,
    hugging_face_mount,
    s3_read_statements,
    s3_volume_manifests,
)

if TYPE_CHECKING:
    from ..eks.cluster import GpuEksCluster
    from ..eks.node_group import GpuNodeGroup
    from ..observability.workspace import PrometheusWorkspace

__all__ = ["KARPENTER_NODE_POOL_LABEL", "ModelServer"]

#: The label Karpenter puts on every node it launches for a NodePool: kubernetes-sigs/karpenter pkg/apis/v1/labels.go
#: ``NodePoolLabelKey = apis.Group + "/nodepool"`` (group ``karpenter.sh``), one of its ``WellKnownLabels``.
KARPENTER_NODE_POOL_LABEL = "karpenter.sh/nodepool"


class ModelServer(Construct):
    """A vLLM model server (OpenAI API on port 8000) on GPU nodes of ``cluster``.

    :param name: the server's name: its Service, workload and pod labels (a DNS-1123 label, at most 63).
    :param weights: :meth:`ModelWeights.from_s3`, :meth:`~ModelWeights.from_fsx` or
        :meth:`~ModelWeights.from_hugging_face`.
    :param instance_type: the GPU type the pods run on (catalog); pods select it with the node label
        ``node.kubernetes.io/instance-type`` and tolerate the GPU taint.
    :param nodes: nodes per replica. 1: a Deployment; more: a LeaderWorkerSet (installs the LWS controller).
    :param replicas: copies of the server. Default 1 (0 keeps the objects with no pods).
    :param tensor_parallel: default: the GPUs of a node. ``pipeline_parallel``: default 1 on one node, ``nodes``
        on several. One node: their product is the pod's GPUs and must divide the node's; several: it must be
        every GPU of the replica.
    :param namespace: created once per cluster. Default ``fm-serving``.
    :param max_model_len: ``--max-model-len``; default: the model's.
    :param served_model_name: the model name clients send; default ``name``.
    :param extra_args: more ``vllm serve`` arguments (not those set above).
    :param image: the vLLM image; default :data:`~fmconstructs.serving.vllm.VLLM_IMAGE` (mirror it into ECR for
        clusters without an internet route).
    :param node_group: a GPU node group of ``cluster`` to run on: its labels join the node selector and its EFA
        interface count is used. Default: any node of ``instance_type``.
    :param node_pool: a Karpenter NodePool of ``cluster`` (its name, or the manifest
        :meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool` returned) whose instance types include
        ``instance_type``: the pods select ``karpenter.sh/nodepool: <name>`` and tolerate the GPU taint, and are
        applied after the pool. Not with ``node_group``.
    :param node_selector: more node labels the pods require.
    :param shm_size_gib: the in-memory ``/dev/shm``. Default 16.
    :param parameters: the model's parameter count (e.g. ``70e9``); with ``dtype`` (a
        :class:`~fmconstructs.serving.sizing.ModelDtype`, e.g. ``ModelDtype.BF16``), the server is refused when
        the model does not fit ``nodes`` x ``instance_type`` with this tensor/pipeline layout, naming the smallest
        layout that fits (:func:`~fmconstructs.serving.sizing.check_model_fits`). Give both or neither.
    :param kv_cache_fraction: the share of usable GPU memory that must stay free for the KV cache in that check.
        Default :data:`~fmconstructs.serving.sizing.DEFAULT_KV_CACHE_FRACTION` (0.2).
    :param lws_source: where the LWS chart and image come from (multi-node only); see
        :class:`~fmconstructs.eks.addons.ChartSource`.
    :param mountpoint_addon_version: the ``aws-mountpoint-s3-csi-driver`` add-on version (S3 weights); default
        EKS's default for the cluster's Kubernetes version.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        name: str,
        weights: ModelWeights,
        instance_type: str,
        nodes: int = 1,
        replicas: int = 1,
        tensor_parallel: int | None = None,
        pipeline_parallel: int | None = None,
        namespace: str = "fm-serving",
        max_model_len: int | None = None,
        served_model_name: str | None = None,
        extra_args: Sequence[str] = (),
        image: str | None = None,
        node_group: GpuNodeGroup | None = None,
        node_pool: str | eks.KubernetesManifest | None = None,
        node_selector: Mapping[str, str] | None = None,
        shm_size_gib: int = 16,
        parameters: float | None = None,
        dtype: ModelDtype | None = None,
        kv_cache_fraction: float = DEFAULT_KV_CACHE_FRACTION,
        lws_source: _addons.ChartSource | None = None,
        mountpoint_addon_version: str | None = MOUNTPOINT_S3_CSI_ADDON_VERSION,
    ) -> None:
        self._validate(cluster, name, weights, namespace, node_group, parameters, dtype)
        spec = get_instance_spec(instance_type)
        parallelism = self._plan_layout(
            spec.instance_type, nodes, tensor_parallel, pipeline_parallel, parameters, dtype, kv_cache_fraction
        )
        check_count("replicas", replicas, minimum=0)
        self._check_options(max_model_len, served_model_name, image, shm_size_gib, lws_source, mountpoint_addon_version)
        args = vllm.check_extra_args("extra_args", extra_args)
        pool = _check_node_pool(cluster, node_pool, node_group, spec.instance_type)
        selector = self._check_selector(node_selector, node_group, spec.instance_type)
        if pool is not None:
            selector[KARPENTER_NODE_POOL_LABEL] = pool[0]
        super().__init__(scope, id)
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.weights = weights
        self.instance_type = spec.instance_type
        self.parallelism = parallelism
        self.replicas = replicas
        self.parameters = parameters
        self.dtype = dtype
        self.image = image or vllm.VLLM_IMAGE
        #: The Karpenter NodePool's name and manifest when the server runs on one.
        self.node_pool: tuple[str, eks.KubernetesManifest] | None = pool
        efa = _efa_interface_count(spec, node_group)
        if pool is None:
            self._warn_without_node_group(node_group)
        self.namespace_manifest = self._add_namespace()
        self.role: iam.Role | None = None
        self.service_account_manifest = self._add_service_account()
        mount, weights_manifest = self._add_weights(mountpoint_addon_version)
        self.lws_chart: eks.HelmChart | None = self._add_lws_controller(lws_source)
        self.server_spec = vllm.ServerSpec(
            name=name,
            namespace=namespace,
            instance_type=spec.instance_type,
            parallelism=parallelism,
            weights=mount,
            image=self.image,
            replicas=replicas,
            efa_interfaces=efa,
            service_account=self.service_account_name,
            served_model_name=served_model_name,
            max_model_len=max_model_len,
            extra_args=args,
            node_selector=selector,
            shm_size_gib=shm_size_gib,
        )
        self.workload = self._add_workload(weights_manifest)
        self.service = self._add_service()

    def _plan_layout(
        self,
        instance_type: str,
        nodes: int,
        tensor_parallel: int | None,
        pipeline_parallel: int | None,
        parameters: float | None,
        dtype: ModelDtype | None,
        kv_cache_fraction: float,
    ) -> vllm.Parallelism:
        """The tensor/pipeline layout; sets :attr:`layout` when the model-fit check ran (``parameters``/``dtype``)."""
        parallelism = vllm.plan_parallelism(
            instance_type=instance_type,
            nodes=nodes,
            tensor_parallel=tensor_parallel,
            pipeline_parallel=pipeline_parallel,
        )
        self.layout: ServingLayout | None = _check_fit(parallelism, instance_type, parameters, dtype, kv_cache_fraction)
        return parallelism

    # --- validation -----------------------------------------------------------------------------------------------
    @staticmethod
    def _check_options(
        max_model_len: object,
        served_model_name: object,
        image: object,
        shm_size_gib: object,
        lws_source: object,
        mountpoint_addon_version: object,
    ) -> None:
        if max_model_len is not None:
            check_count("max_model_len", max_model_len, minimum=1)
        if served_model_name is not None:
            check_model_name("served_model_name", served_model_name)
        if image is not None:
            check_image_reference("image", image)
        check_count("shm_size_gib", shm_size_gib, minimum=1)
        _addons.check_chart_source("lws_source", lws_source)
        _addons.check_version("mountpoint_addon_version", mountpoint_addon_version)

    @staticmethod
    def _validate(
        cluster: object,
        name: object,
        weights: object,
        namespace: object,
        node_group: object,
        parameters: object,
        dtype: object,
    ) -> None:
        from ..eks.cluster import GpuEksCluster
        from ..eks.node_group import GpuNodeGroup

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        check_name("name", name, label=True)
        if is_token(name):
            raise FmValidationError("name", name, "a name known at synthesis (it names Kubernetes objects)")
        check_name("namespace", namespace, label=True)
        if is_token(namespace):
            raise FmValidationError("namespace", namespace, "a namespace known at synthesis")
        if not isinstance(weights, ModelWeights):
            raise FmTypeError("weights", weights, f"a ModelWeights (got a {type(weights).__name__})")
        if node_group is not None and not isinstance(node_group, GpuNodeGroup):
            raise FmTypeError("node_group", node_group, f"a GpuNodeGroup (got a {type(node_group).__name__})")
        if node_group is not None:
            rules.a_node_group_serves_its_cluster(
                node_group_path=node_group.node.path, of_the_cluster=node_group in cluster.gpu_node_groups
            )
        if parameters is not None:
            check_number("parameters", parameters, minimum=1)
        if dtype is not None and not isinstance(dtype, ModelDtype):
            raise FmTypeError(
                "dtype", dtype, f"a ModelDtype such as ModelDtype.BF16, not a {type(dtype).__name__} ({_DTYPES})"
            )
        rules.model_size_comes_with_its_dtype(parameters=parameters, dtype=dtype)

    @staticmethod
    def _check_selector(
        node_selector: Mapping[str, str] | None, node_group: GpuNodeGroup | None, instance_type: str
    ) -> dict[str, str]:
        selector: dict[str, str] = {}
        if node_group is not None:
            rules.a_node_group_runs_the_server_type(
                node_group_type=node_group.instance_spec.instance_type, instance_type=instance_type
            )
            from ..eks.node_group import CAPACITY_LABEL
            from ..eks.node_group import INSTANCE_TYPE_LABEL as GROUP_TYPE_LABEL

            selector.update({k: node_group.labels[k] for k in (GROUP_TYPE_LABEL, CAPACITY_LABEL)})
        if node_selector is not None:
            if not isinstance(node_selector, Mapping):
                raise FmTypeError("node_selector", node_selector, "a dict of node labels")
            for key, value in node_selector.items():
                check_label_key(f"node_selector[{key!r}]", key)
                check_label_value(f"node_selector[{key!r}]", value)
                selector[key] = value
        return selector

    def _warn_without_node_group(self, node_group: GpuNodeGroup | None) -> None:
        if node_group is not None:
            return
        types = {g.instance_spec.instance_type for g in self.cluster.gpu_node_groups}
        warn(
            self,
            rules.nodes_of_the_server_type_join_the_cluster(
                server_path=self.node.path, instance_type=self.instance_type, node_group_types=types
            ),
        )

    # --- build steps ---------------------------------------------------------------------------------------------
    @property
    def service_name(self) -> str:
        """The ClusterIP Service of the server (``<name>`` in :attr:`namespace`), port 8000 ``http``."""
        return self.name

    @property
    def service_account_name(self) -> str:
        return self.name

    @property
    def selector_labels(self) -> dict[str, str]:
        """The labels of the pods that serve the API (what the Service selects)."""
        return vllm.service_selector(self.name, multi_node=self.parallelism.nodes > 1)

    @property
    def pod_labels(self) -> dict[str, str]:
        """The labels every pod of the server carries (leaders and workers)."""
        return vllm.server_labels(self.name)

    def _add_namespace(self) -> eks.KubernetesManifest:
        """The namespace, once per cluster (servers sharing it share the manifest)."""
        owner = self.cluster
        id = f"ServingNamespace-{self.namespace}"
        found = owner.node.try_find_child(id)
        if isinstance(found, eks.KubernetesManifest):
            return found
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        return eks.KubernetesManifest(owner, id, cluster=owner.icluster, manifest=[body])

    def _add_service_account(self) -> eks.KubernetesManifest:
        """The pods' service account; with a role (EKS Pod Identity) when the weights need AWS access."""
        body = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": self.service_account_name, "namespace": self.namespace, "labels": self.pod_labels},
        }
        manifest = eks.KubernetesManifest(self, "ServiceAccount", cluster=self.cluster.icluster, manifest=[body])
        manifest.node.add_dependency(self.namespace_manifest)
        if self.weights.needs_aws_access:
            self.role = self._pod_identity_role()
        return manifest

    def _pod_identity_role(self) -> iam.Role:
        """A role only this server's service account can assume (the trust policy of
        :mod:`fmconstructs.eks.vpc_cni`: session tags of the cluster, namespace and service account)."""
        eks_cluster = self.cluster.cluster
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                POD_IDENTITY_PRINCIPAL,
                conditions={
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-arn": eks_cluster.cluster_arn,
                        "aws:RequestTag/kubernetes-namespace": self.namespace,
                        "aws:RequestTag/kubernetes-service-account": self.service_account_name,
                    }
                },
            ).with_session_tags(),
            description=f"fmconstructs model server {self.name} ({self.namespace}): its weights",
        )
        association = eks_l1.CfnPodIdentityAssociation(
            self,
            "PodIdentity",
            cluster_name=eks_cluster.cluster_name,
            namespace=self.namespace,
            service_account=self.service_account_name,
            role_arn=role.role_arn,
        )
        agent = eks_cluster.eks_pod_identity_agent
        if agent is not None:
            association.node.add_dependency(agent)
        self._association = association
        return role

    def _add_weights(self, addon_version: str | None) -> tuple[vllm.WeightsMount, IConstruct | None]:
        """Grant the role, create the volume (or the token fetch) and return what the pods mount."""
        w = self.weights
        if w.source is WeightsSource.S3:
            assert w.bucket is not None and w.prefix is not None and self.role is not None
            for statement in s3_read_statements(w.bucket, w.prefix):
                self.role.add_to_principal_policy(statement)
            if w.bucket.encryption_key is not None:
                w.bucket.encryption_key.grant_decrypt(self.role)
            _nag.acknowledge(
                self.role,
                _nag.iam5_resource(self, w.bucket.arn_for_objects(f"{w.prefix}*")),
                "the model server reads every object under its model's prefix (only that prefix); the object names "
                "are the model's files, unknown at synthesis",
            )
            addon = self._mountpoint_addon(addon_version)
            manifest = eks.KubernetesManifest(
                self,
                "Weights",
                cluster=self.cluster.icluster,
                manifest=s3_volume_manifests(
                    name=self.name, namespace=self.namespace, bucket_name=w.bucket.bucket_name, prefix=w.prefix
                ),
            )
            manifest.node.add_dependency(addon, self.namespace_manifest)
            return claim_mount(f"{self.name}-weights"), manifest
        if w.source is WeightsSource.FSX:
            assert w.file_system is not None and w.path is not None
            manifest = self.cluster.add_lustre_volume(
                f"ServingWeights-{self.namespace}-{self.name}",
                w.file_system,
                name=f"{self.namespace}-{self.name}-weights",
                namespace=self.namespace,
            )
            manifest.node.add_dependency(self.namespace_manifest)
            return claim_mount(f"{self.namespace}-{self.name}-weights", sub_path=w.path), manifest
        assert w.model_id is not None
        if w.token is None:
            return hugging_face_mount(w.model_id), None
        assert self.role is not None
        w.token.grant_read(self.role)
        region = Stack.of(self).region
        return hugging_face_mount(w.model_id, token_secret_arn=w.token.secret_arn, region=region), None

    def _mountpoint_addon(self, addon_version: str | None) -> IConstruct:
        """The ``aws-mountpoint-s3-csi-driver`` add-on, once per cluster (no role: pod-level credentials)."""
        owner = self.cluster
        found = owner.node.try_find_child("MountpointS3CsiDriver")
        if found is not None:
            return found
        addon = eks.Addon(
            owner,
            "MountpointS3CsiDriver",
            cluster=owner.icluster,
            addon_name=MOUNTPOINT_S3_CSI_ADDON_NAME,
            addon_version=addon_version,
            preserve_on_delete=False,
        )
        if owner.system_node_group is not None:
            addon.node.add_dependency(owner.system_node_group)
        return addon

    def _add_lws_controller(self, lws_source: _addons.ChartSource | None) -> eks.HelmChart | None:
        """The LeaderWorkerSet controller of the cluster, for a server of several nodes per replica."""
        if self.parallelism.nodes > 1:
            return add_lws_controller(self.cluster, source=lws_source)
        return None

    def _add_workload(self, weights_manifest: IConstruct | None) -> eks.KubernetesManifest:
        body = vllm.render_workload(self.server_spec)
        manifest = eks.KubernetesManifest(self, "Workload", cluster=self.cluster.icluster, manifest=[body])
        manifest.node.add_dependency(self.service_account_manifest)
        pool_manifest = None if self.node_pool is None else self.node_pool[1]
        for before in (weights_manifest, self.lws_chart, getattr(self, "_association", None), pool_manifest):
            if before is not None:
                manifest.node.add_dependency(before)
        return manifest

    def _add_service(self) -> eks.KubernetesManifest:
        body = vllm.render_service(name=self.name, namespace=self.namespace, multi_node=self.parallelism.nodes > 1)
        manifest = eks.KubernetesManifest(self, "Service", cluster=self.cluster.icluster, manifest=[body])
        manifest.node.add_dependency(self.namespace_manifest)
        return manifest

    def manifests(self) -> list[dict[str, Any]]:
        """The workload and Service bodies (as rendered; tokens unresolved)."""
        return vllm.render_server_manifests(self.server_spec)

    # --- exposure and autoscaling ------------------------------------------------------------------------------
    def add_endpoint(
        self,
        *,
        kind: LoadBalancerKind = LoadBalancerKind.NLB,
        certificate: acm.ICertificate | None = None,
        scheme: LoadBalancerScheme = LoadBalancerScheme.INTERNAL,
        allow_internet_facing: bool = False,
        health_check_path: str = DEFAULT_HEALTH_CHECK_PATH,
        controller: AwsLoadBalancerController | None = None,
    ) -> ModelServerEndpoint:
        """A load balancer in front of this server (:class:`~fmconstructs.serving.exposure.ModelServerEndpoint`,
        child ``Endpoint``; once per server): an internal NLB by default, only the LeaderWorkerSet leaders (the pods
        that serve the API) of a multi-node server, applied after the server's namespace and Service. TLS on 443 with
        ``certificate``; ``scheme=INTERNET_FACING`` needs ``allow_internet_facing=True`` and warns."""
        check_first_call(
            self, "Endpoint", method="add_endpoint", remedy="one endpoint per model server: keep the first"
        )
        endpoint = ModelServerEndpoint(
            self,
            "Endpoint",
            cluster=self.cluster,
            server_name=self.name,
            namespace=self.namespace,
            kind=kind,
            certificate=certificate,
            scheme=scheme,
            allow_internet_facing=allow_internet_facing,
            health_check_path=health_check_path,
            leaders_only=kind is LoadBalancerKind.NLB and self.parallelism.nodes > 1,
            controller=controller,
        )
        endpoint.manifest.node.add_dependency(self.namespace_manifest, self.service)
        return endpoint

    def add_autoscaling(
        self,
        *,
        workspace: PrometheusWorkspace | str,
        metric: ServingMetric = ServingMetric.REQUESTS_WAITING,
        threshold: float = 5,
        min_replicas: int = 1,
        max_replicas: int = 2,
        scale_to_zero: bool = False,
        **options: Any,
    ) -> ModelServerAutoscaler:
        """KEDA scaling of this server's Deployment or LeaderWorkerSet on its vLLM queue in ``workspace`` (the AMP
        workspace an ``AmpEksScraper(serving=True)`` writes to): :class:`~fmconstructs.serving.autoscaling.
        ModelServerAutoscaler`, child ``Autoscaling``, once per server, applied after the workload. ``options``: the
        autoscaler's other parameters (``activation_threshold``, ``wake_query``, ``cluster_label``,
        ``polling_interval_seconds``, ``cooldown_period_seconds``, ``keda``). Each replica is a whole node (or a
        LeaderWorkerSet group): size ``max_replicas`` to the capacity."""
        check_first_call(
            self, "Autoscaling", method="add_autoscaling", remedy="one autoscaler per model server: keep the first"
        )
        multi = self.parallelism.nodes > 1
        autoscaler = ModelServerAutoscaler(
            self,
            "Autoscaling",
            cluster=self.cluster,
            server_name=self.name,
            namespace=self.namespace,
            workspace=workspace,
            target_kind=ScaleTargetKind.LEADER_WORKER_SET if multi else ScaleTargetKind.DEPLOYMENT,
            metric=metric,
            threshold=threshold,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            scale_to_zero=scale_to_zero,
            **options,
        )
        autoscaler.manifest.node.add_dependency(self.namespace_manifest, self.workload)
        return autoscaler


_DTYPES = ", ".join(f"ModelDtype.{m.name}" for m in ModelDtype)


def _check_fit(
    parallelism: vllm.Parallelism,
    instance_type: str,
    parameters: float | None,
    dtype: ModelDtype | None,
    kv_cache_fraction: float,
) -> ServingLayout | None:
    """The model-fit check of :mod:`fmconstructs.serving.sizing` for this layout (None without a model size). The
    error names ``nodes`` (with the smallest node count that fits), or ``tensor_parallel`` when one node would do
    with another degree."""
    if parameters is None or dtype is None:
        return None
    single = parallelism.nodes == 1
    pods_gpus = parallelism.tensor_parallel * parallelism.pipeline_parallel
    node_gpus = get_instance_spec(instance_type).gpu.count
    blame = "tensor_parallel" if single and pods_gpus < node_gpus else "nodes"
    # Several nodes use every GPU of the replica, so only the node count matters (and vLLM may split tensor
    # parallelism across nodes, which the sizing module does not model); one node: the pod's share of the GPUs.
    return check_model_fits(
        parameters=parameters,
        dtype=dtype,
        instance_type=instance_type,
        nodes=parallelism.nodes,
        tensor_parallel=parallelism.tensor_parallel if single else None,
        pipeline_parallel=parallelism.pipeline_parallel if single else None,
        kv_cache_fraction=kv_cache_fraction,
        parameter=blame,
    )


def _check_node_pool(
    cluster: GpuEksCluster, node_pool: object, node_group: object, instance_type: str
) -> tuple[str, eks.KubernetesManifest] | None:
    """The NodePool's name and manifest: one of ``cluster.karpenter``'s pools, holding ``instance_type``."""
    if node_pool is None:
        return None
    rules.one_source_of_capacity(node_pool=node_pool, node_group=node_group)
    karpenter = cluster.karpenter
    pools: dict[str, eks.KubernetesManifest] = {} if karpenter is None else dict(karpenter.node_pools)
    if isinstance(node_pool, eks.KubernetesManifest):
        names = [name for name, manifest in pools.items() if manifest is node_pool]
        if not names:
            raise FmValidationError("node_pool", node_pool.node.path, "a NodePool added with cluster.karpenter")
        name = names[0]
    elif isinstance(node_pool, str):
        if node_pool not in pools:
            known = ", ".join(sorted(pools)) or "none: call cluster.add_karpenter().add_gpu_node_pool(...) first"
            raise FmValidationError("node_pool", node_pool, f"a NodePool of cluster.karpenter ({known})")
        name = node_pool
    else:
        raise FmTypeError("node_pool", node_pool, f"a NodePool name or its manifest (got a {type(node_pool).__name__})")
    assert karpenter is not None
    rules.a_node_pool_launches_the_server_type(
        node_pool=name, pool_types=karpenter.node_pool_instance_types[name], instance_type=instance_type
    )
    return name, pools[name]


def _efa_interface_count(spec: InstanceSpec, node_group: GpuNodeGroup | None) -> int:
    """The EFA interfaces the pods get: the node group's, else the catalog plan of ``spec``."""
    if node_group is not None:
        return node_group.efa_interface_count
    return plan_network_interfaces(spec).efa_interface_count
