"""Kubernetes manifests of vLLM's OpenAI-compatible server (pure functions: no aws_cdk).

- One node per replica: a ``Deployment`` whose pods run ``vllm serve`` with ``--tensor-parallel-size`` over the GPUs
  they ask for (:func:`render_deployment`).
- Several nodes per replica: a ``LeaderWorkerSet`` (:mod:`fmconstructs.serving.lws`) whose groups start a Ray
  cluster (the leader as head, the workers joining it) with the script the vLLM image ships, then the leader runs
  ``vllm serve ... --tensor-parallel-size <GPUs per node> --pipeline-parallel-size <nodes>`` over Ray
  (:func:`render_leader_worker_set`). This follows vLLM's docs/deployment/frameworks/lws.md and kubernetes-sigs/lws
  docs/examples/vllm/GPU/lws.yaml (tag v0.10.0); vLLM's "Distributed inference and serving" page: "The tensor
  parallel size should be the number of GPUs in each node, and the pipeline parallel size should be the number of
  nodes", and multi-node inference requires Ray.
- The ``Service`` ``<name>`` (ClusterIP, port 8000 ``http``) in front of the pods that serve (:func:`render_service`).

Every pod carries :func:`server_labels`. The container serving the API (the single-node pod, the group leader)
exposes port 8000 named ``http`` (the OpenAI API and Prometheus ``/metrics``) and is probed on ``/health``. Worker
pods of a LeaderWorkerSet run Ray only: no port, no probes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._validate import check_count, check_str_sequence
from .._validate_k8s import check_dns_label, check_labels, check_namespace
from .._validate_refs import check_image_reference, check_model_name
from ..catalog import get_instance_spec
from ..errors import FmValidationError, is_token
from . import rules
from .lws import GROUP_SIZE_ENV, LEADER_ADDRESS_ENV, LWS_API_VERSION, WORKER_INDEX_LABEL

# This module imports no aws_cdk (nor fmconstructs.eks, whose package imports it): the ``fmc`` command and tests
# render manifests without the jsii runtime. The two EKS names below are those of fmconstructs.eks.addons
# (GPU_TAINT_KEY, INSTANCE_TYPE_LABEL); tests/serving/test_serving_server.py checks they stay equal.
#: The taint GPU node groups carry (fmconstructs.eks.addons.GPU_TAINT_KEY).
GPU_TAINT_KEY = "nvidia.com/gpu"
#: The well-known node label holding the EC2 instance type (kubelet sets it on every node, managed node groups and
#: Karpenter alike; fmconstructs.eks.addons.INSTANCE_TYPE_LABEL).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

# --- pins ----------------------------------------------------------------------------------------------------------
#: vLLM v0.30.0. The vLLM repository snapshot could not be fetched here (1.1 GB, over the 500 MB limit), so "the newest
#: tag of the snapshot" could not be read: v0.30.0 is the newest ``vllm/vllm-openai`` tag seen pinned in public
#: repositories (2026-09/10: Dockerfiles ``FROM vllm/vllm-openai:v0.30.0``, a Terraform default "checked 2026-09-26");
#: UNCONFIRMED as the newest release. vLLM publishes the server image on Docker Hub as ``vllm/vllm-openai``
#: (docs/deployment/docker.md: "available on Docker Hub as vllm/vllm-openai"). Mirror it into ECR (pull-through cache
#: for Docker Hub, or a copy) for clusters without an internet route and pass ``image=``.
VLLM_VERSION = "v0.30.0"
VLLM_IMAGE_REPOSITORY = "docker.io/vllm/vllm-openai"
VLLM_IMAGE = f"{VLLM_IMAGE_REPOSITORY}:{VLLM_VERSION}"

#: The port and its name every helper of issue 23 uses (OpenAI API and ``/metrics``); vLLM's default ``--port`` is
#: 8000 (docs/deployment/docker.md ``-p 8000:8000``). ``GET /health`` answers 200 while the engine is healthy and 503
#: once it is dead (vllm/entrypoints/serve/instrumentator/health.py, commit 98b137c; later commits move it to
#: vllm/frontend/entrypoints/serve/instrumentator/health.py).
HTTP_PORT = 8000
HTTP_PORT_NAME = "http"
HEALTH_PATH = "/health"

#: The labels on every pod of a ModelServer (issue 23 shared contract).
NAME_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
MODEL_SERVER_LABEL = "fmconstructs.io/model-server"
APP_NAME = "vllm"

#: The script in the vLLM image that starts (leader) or joins (worker) a Ray cluster and waits for
#: ``--ray_cluster_size`` nodes (vllm examples/online_serving/multi-node-serving.sh; the image copies ``examples/`` to
#: ``/vllm-workspace/examples``, the path vLLM's and LWS's examples call).
MULTI_NODE_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"

GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"

#: Probe timing (fmconstructs' choice): loading hundreds of GiB of weights takes minutes, so the startup probe allows
#: 60 minutes (360 x 10 s) before the liveness probe takes over.
STARTUP_PROBE_FAILURES = 360
PROBE_PERIOD_SECONDS = 10


def server_labels(name: str) -> dict[str, str]:
    """The labels of every pod (and object) of the model server ``name``."""
    return {NAME_LABEL: APP_NAME, INSTANCE_LABEL: name, MODEL_SERVER_LABEL: name}


@dataclass(frozen=True)
class Parallelism:
    """How a replica spreads over GPUs: ``gpus_per_pod`` on each of ``nodes`` pods (one pod per node)."""

    nodes: int
    gpus_per_pod: int
    tensor_parallel: int
    pipeline_parallel: int


def plan_parallelism(
    *,
    instance_type: str,
    nodes: int = 1,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
) -> Parallelism:
    """The GPUs and the parallel degrees of one replica on ``nodes`` nodes of ``instance_type`` (catalog).

    One node: the pod asks for ``tensor_parallel x pipeline_parallel`` GPUs (default every GPU of the node, tensor
    parallel), which must divide the node's GPUs. Several nodes: each pod takes a whole node and
    ``tensor_parallel x pipeline_parallel`` must equal every GPU of the replica (default: tensor parallel inside a node,
    pipeline parallel across nodes, as vLLM's distributed serving guide recommends).
    """
    node_gpus = get_instance_spec(instance_type).gpu.count
    nodes = check_count("nodes", nodes, minimum=1)
    if tensor_parallel is not None:
        check_count("tensor_parallel", tensor_parallel, minimum=1)
    if pipeline_parallel is not None:
        check_count("pipeline_parallel", pipeline_parallel, minimum=1)
    if any(is_token(v) for v in (nodes, tensor_parallel, pipeline_parallel)):
        raise FmValidationError("nodes", nodes, "numbers known at synthesis (they shape the manifests)")
    if nodes == 1:
        tp = node_gpus if tensor_parallel is None else tensor_parallel
        pp = 1 if pipeline_parallel is None else pipeline_parallel
        rules.tensor_parallel_divides_the_gpus(
            tensor_parallel=tensor_parallel, degree=tp, gpus=node_gpus, of=instance_type
        )
        rules.one_node_degrees_divide_its_gpus(
            pipeline_parallel=pipeline_parallel, tp=tp, pp=pp, node_gpus=node_gpus, instance_type=instance_type
        )
        return Parallelism(1, tp * pp, tp, pp)
    total = nodes * node_gpus
    tp = node_gpus if tensor_parallel is None else tensor_parallel
    rules.tensor_parallel_divides_the_gpus(
        tensor_parallel=tensor_parallel, degree=tp, gpus=total, of=f"{nodes} x {instance_type}"
    )
    pp = total // tp if pipeline_parallel is None else pipeline_parallel
    rules.replica_degrees_use_every_gpu(pipeline_parallel=pipeline_parallel, tp=tp, pp=pp, gpus=total, nodes=nodes)
    return Parallelism(nodes, node_gpus, tp, pp)


@dataclass(frozen=True)
class WeightsMount:
    """What a weights source adds to the server's pods: the ``model`` argument of ``vllm serve`` (a path in the
    container or a Hugging Face model id) and the volumes, mounts, environment and init containers that provide it."""

    model: str
    volumes: tuple[Mapping[str, Any], ...] = ()
    volume_mounts: tuple[Mapping[str, Any], ...] = ()
    env: tuple[Mapping[str, Any], ...] = ()
    init_containers: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ServerSpec:
    """Everything the renderers need for one model server (built by :class:`~fmconstructs.serving.model_server.
    ModelServer` after validation; tests build it directly)."""

    name: str
    namespace: str
    instance_type: str
    parallelism: Parallelism
    weights: WeightsMount
    image: str = VLLM_IMAGE
    replicas: int = 1
    efa_interfaces: int = 0
    service_account: str | None = None
    served_model_name: str | None = None
    max_model_len: int | None = None
    extra_args: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    shm_size_gib: int = 16

    def __post_init__(self) -> None:
        check_dns_label("name", self.name)
        check_namespace("namespace", self.namespace)
        object.__setattr__(self, "node_selector", check_labels("node_selector", self.node_selector))
        check_image_reference("image", self.image)
        if self.served_model_name is not None:
            check_model_name("served_model_name", self.served_model_name)
        check_count("replicas", self.replicas, minimum=0)
        check_count("efa_interfaces", self.efa_interfaces, minimum=0)
        check_count("shm_size_gib", self.shm_size_gib, minimum=1)
        if self.max_model_len is not None:
            check_count("max_model_len", self.max_model_len, minimum=1)
        check_str_sequence("extra_args", self.extra_args)


def _kubelet_escape(text: str) -> str:
    """Kubelet expands ``$(VAR)`` in ``command`` and ``args``; ``$$`` keeps a literal ``$`` (Kubernetes "Define a
    command and arguments": "$$(VAR_NAME)" is not expanded)."""
    return text.replace("$", "$$")


def vllm_serve_args(spec: ServerSpec) -> list[str]:
    """The arguments after ``vllm serve`` (vLLM engine arguments, docs/configuration/engine_args.md)."""
    p = spec.parallelism
    served = spec.served_model_name or spec.name
    args = [spec.weights.model, "--host", "0.0.0.0", "--port", str(HTTP_PORT), "--served-model-name", served]
    args += ["--tensor-parallel-size", str(p.tensor_parallel)]
    if p.pipeline_parallel > 1:
        args += ["--pipeline-parallel-size", str(p.pipeline_parallel)]
    if p.nodes > 1:
        args += ["--distributed-executor-backend", "ray"]
    if spec.max_model_len is not None:
        args += ["--max-model-len", str(spec.max_model_len)]
    return args + list(spec.extra_args)


def _resources(spec: ServerSpec) -> dict[str, Any]:
    """GPUs, and every EFA interface of the node for a pod that takes the whole node on an EFA type."""
    node_gpus = get_instance_spec(spec.instance_type).gpu.count
    amounts: dict[str, int] = {GPU_RESOURCE: spec.parallelism.gpus_per_pod}
    if spec.efa_interfaces and spec.parallelism.gpus_per_pod == node_gpus:
        amounts[EFA_RESOURCE] = spec.efa_interfaces
    return {"limits": dict(amounts), "requests": dict(amounts)}


def _probes() -> dict[str, Any]:
    get = {"path": HEALTH_PATH, "port": HTTP_PORT_NAME}
    return {
        "startupProbe": {
            "httpGet": dict(get),
            "periodSeconds": PROBE_PERIOD_SECONDS,
            "failureThreshold": STARTUP_PROBE_FAILURES,
        },
        "readinessProbe": {"httpGet": dict(get), "periodSeconds": PROBE_PERIOD_SECONDS, "failureThreshold": 3},
        "livenessProbe": {"httpGet": dict(get), "periodSeconds": PROBE_PERIOD_SECONDS, "failureThreshold": 6},
    }


def _container(spec: ServerSpec, role: str) -> dict[str, Any]:
    """The vLLM container: ``role`` is ``single`` (vllm serve), ``leader`` (Ray head, then vllm serve) or
    ``worker`` (Ray worker only)."""
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}, *(dict(m) for m in spec.weights.volume_mounts)]
    container: dict[str, Any] = {"name": "vllm", "image": spec.image}
    serve = [_kubelet_escape(a) for a in vllm_serve_args(spec)]
    if role == "single":
        container.update(command=["vllm", "serve"], args=serve)
    elif role == "leader":
        script = (
            f"bash {MULTI_NODE_SCRIPT} leader --ray_cluster_size=$({GROUP_SIZE_ENV}); "
            f"exec vllm serve {shlex.join(serve)}"
        )
        container.update(command=["/bin/bash", "-c", script])
    else:
        script = f"bash {MULTI_NODE_SCRIPT} worker --ray_address=$({LEADER_ADDRESS_ENV})"
        container.update(command=["/bin/bash", "-c", script])
    if spec.weights.env:
        container["env"] = [dict(e) for e in spec.weights.env]
    if role != "worker":
        container["ports"] = [{"name": HTTP_PORT_NAME, "containerPort": HTTP_PORT, "protocol": "TCP"}]
        container.update(_probes())
    container["resources"] = _resources(spec)
    container["volumeMounts"] = mounts
    return container


def _pod_template(spec: ServerSpec, role: str) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    if spec.service_account is not None:
        pod["serviceAccountName"] = spec.service_account
    pod["nodeSelector"] = {INSTANCE_TYPE_LABEL: spec.instance_type, **dict(spec.node_selector)}
    pod["tolerations"] = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    if spec.weights.init_containers:
        pod["initContainers"] = [dict(c) for c in spec.weights.init_containers]
    pod["containers"] = [_container(spec, role)]
    # Shared memory for the tensor-parallel workers (PyTorch shares tensors through /dev/shm; vLLM's docker docs ask
    # for --ipc=host or --shm-size, the LWS example mounts a Memory emptyDir).
    shm = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{spec.shm_size_gib}Gi"}}
    pod["volumes"] = [shm, *(dict(v) for v in spec.weights.volumes)]
    return {"metadata": {"labels": server_labels(spec.name)}, "spec": pod}


def render_deployment(spec: ServerSpec) -> dict[str, Any]:
    """A ``Deployment`` of ``spec.replicas`` single-node vLLM servers.

    Rolling updates replace one pod at a time without a surge pod (``maxSurge: 0``): a surge pod would need free
    GPUs, which a serving node group sized for its replicas does not have."""
    if spec.parallelism.nodes != 1:
        raise FmValidationError("nodes", spec.parallelism.nodes, "1 for a Deployment (use render_leader_worker_set)")
    labels = server_labels(spec.name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": labels},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": dict(labels)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": _pod_template(spec, "single"),
        },
    }


def render_leader_worker_set(spec: ServerSpec) -> dict[str, Any]:
    """A ``LeaderWorkerSet`` of ``spec.replicas`` groups of ``nodes`` pods (one per node): the leader (worker index
    0) serves the API. ``RecreateGroupOnPodRestart``: a failed pod restarts its whole group (the Ray cluster cannot
    lose a member), as the vLLM LWS example sets."""
    if spec.parallelism.nodes < 2:
        raise FmValidationError("nodes", spec.parallelism.nodes, "at least 2 for a LeaderWorkerSet")
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": server_labels(spec.name)},
        "spec": {
            "replicas": spec.replicas,
            "leaderWorkerTemplate": {
                "size": spec.parallelism.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _pod_template(spec, "leader"),
                "workerTemplate": _pod_template(spec, "worker"),
            },
        },
    }


def render_workload(spec: ServerSpec) -> dict[str, Any]:
    """The Deployment (one node per replica) or the LeaderWorkerSet (several)."""
    return render_deployment(spec) if spec.parallelism.nodes == 1 else render_leader_worker_set(spec)


def service_selector(name: str, *, multi_node: bool) -> dict[str, str]:
    """The pods behind the Service: every pod of a single-node server; the leaders (worker index 0) of a
    LeaderWorkerSet (the label the LWS controller sets, api/leaderworkerset/v1/leaderworkerset_types.go v0.10.0)."""
    selector = server_labels(name)
    if multi_node:
        selector[WORKER_INDEX_LABEL] = "0"
    return selector


def render_service(*, name: str, namespace: str, multi_node: bool = False) -> dict[str, Any]:
    """The ClusterIP ``Service`` ``name`` on port 8000 (``http``) of the serving pods."""
    check_dns_label("name", name)
    check_namespace("namespace", namespace)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": server_labels(name)},
        "spec": {
            "type": "ClusterIP",
            "selector": service_selector(name, multi_node=multi_node),
            "ports": [{"name": HTTP_PORT_NAME, "port": HTTP_PORT, "targetPort": HTTP_PORT_NAME, "protocol": "TCP"}],
        },
    }


def render_server_manifests(spec: ServerSpec) -> list[dict[str, Any]]:
    """The workload and its Service."""
    return [
        render_workload(spec),
        render_service(name=spec.name, namespace=spec.namespace, multi_node=spec.parallelism.nodes > 1),
    ]


def check_extra_args(parameter: str, value: Sequence[str]) -> tuple[str, ...]:
    """Extra ``vllm serve`` arguments: strings; the ones fmconstructs sets itself are refused (set them through the
    construct's parameters)."""
    args = check_str_sequence(parameter, value)
    owned = {
        "--host",
        "--port",
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--distributed-executor-backend",
        "--max-model-len",
        "--served-model-name",
    }
    for index, arg in enumerate(args):
        if not is_token(arg) and arg.split("=", 1)[0] in owned:
            raise FmValidationError(
                f"{parameter}[{index}]", arg, "an argument fmconstructs does not set (use the construct's parameters)"
            )
    return tuple(args)
