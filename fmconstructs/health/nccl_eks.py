"""The scheduled NCCL check on EKS: a Kubeflow MPI operator ``MPIJob`` (``kubeflow.org/v2beta1``) and the ConfigMap
that carries :mod:`~fmconstructs.health.nccl_report`.

The shape follows aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml
(launcher running ``mpirun --allow-run-as-root --tag-output``, workers asking for ``nvidia.com/gpu``,
``vpc.amazonaws.com/efa``, ``hugepages-2Mi: 5120Mi`` and ``memory: 32000Mi``, ``/dev/shm`` from the host). The image
is a required parameter: AWS publishes no pinned nccl-tests image that this library could verify (the awsome README
builds ``nccl-tests.Dockerfile`` or names ``public.ecr.aws/hpc-cloud/nccl-tests:<tag>`` "after that tag has been
published"), so pass the image you built from that Dockerfile, by tag or digest.
"""

from __future__ import annotations

import shlex
from typing import Any

from .._validate import check_count
from .._validate_k8s import check_dns_subdomain, check_namespace
from .._validate_refs import check_image_reference
from ..catalog import get_instance_spec
from ..errors import FmValidationError
from ..networking.interfaces import plan_network_interfaces
from . import rules
from .nccl import JOB_NAME, LD_LIBRARY_PATH, METRICS_FILE, NcclCheckSpec, _mpirun_command, report_script

REPORT_MOUNT = "/fm-nccl"
RESULTS_MOUNT = "/results"


def _check_image(image: str) -> str:
    checked: str = check_image_reference("image", image, pinned=True)
    return checked


def _launcher_script(spec: NcclCheckSpec, instance_type: str) -> str:
    ranks = str(spec.nodes * spec.gpus_per_node)
    command = _mpirun_command(spec, ranks)
    command[1:1] = ["--allow-run-as-root", "--tag-output"]
    baseline = f"{RESULTS_MOUNT}/baseline-{spec.nodes}x{spec.gpus_per_node}-{spec.max_bytes}.json"
    return (
        "set -uo pipefail\n"
        f"mkdir -p {RESULTS_MOUNT}/logs\n"
        f'log="{RESULTS_MOUNT}/logs/allreduce-$(date +%s).log"\n'
        + " ".join(shlex.quote(w) for w in command)
        + ' 2>&1 | tee "$log"\n'
        "test_status=${PIPESTATUS[0]}\n"
        f'python3 -I {REPORT_MOUNT}/nccl_report.py --log "$log" --baseline {baseline} '
        f"--output {RESULTS_MOUNT}/{METRICS_FILE} "
        + " ".join(shlex.quote(a) for a in spec.report_arguments(instance_type))
        + "\n"
        "report_status=$?\n"
        '[ "$test_status" -eq 0 ] || exit "$test_status"\n'
        'exit "$report_status"\n'
    )


def _env() -> list[dict[str, str]]:
    return [{"name": "LD_LIBRARY_PATH", "value": f"{LD_LIBRARY_PATH}:/opt/nccl/build/lib"}]


def _launcher_replica(spec: NcclCheckSpec, image: str, results_claim: str, instance_type: str) -> dict[str, Any]:
    """One launcher pod: mpirun, then the report from the ConfigMap, results on the claim."""
    container = {
        "name": "launcher",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": _env(),
        "command": ["/bin/bash", "-c", _launcher_script(spec, instance_type)],
        "volumeMounts": [
            {"name": "report", "mountPath": REPORT_MOUNT, "readOnly": True},
            {"name": "results", "mountPath": RESULTS_MOUNT},
        ],
    }
    volumes = [
        {"name": "report", "configMap": {"name": f"{JOB_NAME}-report"}},
        {"name": "results", "persistentVolumeClaim": {"claimName": results_claim}},
    ]
    pod = {"restartPolicy": "Never", "containers": [container], "volumes": volumes}
    return {"replicas": 1, "template": {"spec": pod}}


def _worker_replica(
    spec: NcclCheckSpec, image: str, instance_type: str, resources: dict[str, int | str]
) -> dict[str, Any]:
    """``spec.nodes`` worker pods, each holding a whole node's GPUs and EFA interfaces."""
    container = {
        "name": "worker",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": _env(),
        "resources": {"limits": dict(resources), "requests": dict(resources)},
        "volumeMounts": [{"name": "shmem", "mountPath": "/dev/shm"}],
    }
    pod = {
        "nodeSelector": {"node.kubernetes.io/instance-type": instance_type},
        "containers": [container],
        "volumes": [{"name": "shmem", "hostPath": {"path": "/dev/shm"}}],
    }
    return {"replicas": spec.nodes, "template": {"spec": pod}}


def render_mpijob_manifests(
    spec: NcclCheckSpec,
    *,
    image: str,
    instance_type: str,
    results_claim: str,
    namespace: str = "default",
    efa_per_node: int | None = None,
) -> list[dict[str, Any]]:
    """The ConfigMap with the report script and the ``MPIJob`` (apply both; delete the MPIJob before the next run).

    :param image: an nccl-tests image with Open MPI, EFA and ``/opt/nccl-tests/build/all_reduce_perf`` (built from
        awsome-distributed-training ``nccl-tests.Dockerfile``), pinned by tag or digest.
    :param instance_type: the workers' ``node.kubernetes.io/instance-type``; GPUs per node come from the catalog, and
        so does the baseline's floor (``spec.instance_type`` must be None or the same).
    :param results_claim: a PersistentVolumeClaim (e.g. FSx for Lustre) for logs, the baseline and the metrics file.
    :param efa_per_node: ``vpc.amazonaws.com/efa`` per worker; default: the EFA interfaces of the catalog's layout.
    """
    _check_image(image)
    if spec.pairwise:
        # Not rendered for the MPIJob: its launcher runs one all-node test (per-node attribution is Slurm only).
        raise FmValidationError("spec.pairwise", True, "False on EKS (pairwise runs are rendered for Slurm only)")
    check_dns_subdomain("results_claim", results_claim)  # a PersistentVolumeClaim name (an object name)
    check_namespace("namespace", namespace)
    instance = get_instance_spec(instance_type)
    if spec.instance_type is not None and spec.instance_type != instance_type:
        raise FmValidationError(
            "spec.instance_type", spec.instance_type, f"None or the workers' instance_type ({instance_type!r})"
        )
    rules.gpus_per_node_match_the_instance_type(
        gpus_per_node=spec.gpus_per_node, instance_type=instance_type, gpu_count=instance.gpu.count
    )
    default_efa = plan_network_interfaces(instance).efa_interface_count
    efa = default_efa if efa_per_node is None else check_count("efa_per_node", efa_per_node, minimum=1)
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{JOB_NAME}-report", "namespace": namespace},
        "data": {"nccl_report.py": report_script()},
    }
    # hugepages and memory as awsome-distributed-training nccl-tests.yaml asks for them.
    resources: dict[str, int | str] = {
        "nvidia.com/gpu": spec.gpus_per_node,
        "hugepages-2Mi": "5120Mi",
        "memory": "32000Mi",
    }
    if efa:
        resources["vpc.amazonaws.com/efa"] = efa
    launcher = _launcher_replica(spec, image, results_claim, instance_type)
    worker = _worker_replica(spec, image, instance_type, resources)
    mpijob = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": JOB_NAME, "namespace": namespace},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            # The launcher starts once every worker is ready (kubeflow/mpi-operator v2beta1 types.go, since v0.5.0:
            # "does not fail trying to connect to worker"): while a long job holds the GPUs the check waits, deferred,
            # instead of failing (the default AtStartup launcher would run mpirun against pending workers).
            "launcherCreationPolicy": "WaitForWorkersReady",
            "slotsPerWorker": spec.gpus_per_node,
            "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker},
        },
    }
    return [config_map, mpijob]
