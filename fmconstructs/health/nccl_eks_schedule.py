"""The NCCL check on EKS on a schedule, with its results published to the workspace.

:func:`render_scheduled_nccl_manifests` wraps :func:`~fmconstructs.health.nccl_eks.render_mpijob_manifests`:

- Schedule: a CronJob (``batch/v1``, ``spec.schedule`` of the :class:`~fmconstructs.health.NcclCheckSpec`, in
  ``Etc/UTC``; ``concurrencyPolicy: Forbid``) whose pod deletes the previous ``MPIJob`` (an init container) and
  creates the next one from the manifest a ConfigMap holds. Its ServiceAccount's Role allows exactly ``create`` on
  ``mpijobs.kubeflow.org`` and ``get``/``delete`` on the check's own MPIJob (``resourceNames``), in the namespace.
- Image of that pod: the Kubernetes project's own kubectl image, ``registry.k8s.io/kubectl`` (kubernetes/kubernetes
  PR #116672 "Add an image for kubectl", release note "Added a container image for kubectl at
  registry.k8s.io/kubectl"; kubernetes/sig-release PR #2260: "Starting 1.28, a standalone image for kubectl will be
  released as part of the official images"). Its base may have no shell (kubernetes ``build/common.sh`` on master:
  ``KUBECTL_BASE_IMAGE`` is ``gcr.io/distroless/static-debian13`` when kubectl is statically linked; that it is, per
  ``kube::golang::is_statically_linked``, is UNCONFIRMED), so each container runs one ``kubectl`` command, no shell.
  kubectl uses the pod's service account (in-cluster config).
- Metrics: the launcher's report writes ``fm_nccl.prom`` on the results claim; a one-replica Deployment mounts the
  claim read-only and serves that file on ``/metrics`` (:mod:`.nccl_metrics_server`) behind a Service annotated
  ``prometheus.io/scrape: "true"``, the way the managed scraper's jobs select their targets
  (:func:`fmconstructs.observability.eks.eks_scrape_config`, job ``nccl``). The node exporter's textfile directory on
  EKS is an ``emptyDir`` of its own pod (:func:`fmconstructs.observability.eks.node_exporter_manifests`), so the
  launcher cannot write into it.
- Queue probe: the metrics pod also lists the MPIJob's worker pods on each scrape (its ServiceAccount's Role allows
  ``list`` on pods in the namespace, nothing else) and serves ``fm_nccl_check_deferred``: 1 while a worker waits for
  GPUs that other pods hold (the MPIJob's launcher waits for its workers, ``launcherCreationPolicy:
  WaitForWorkersReady``). ``NcclCheckStale`` stays quiet then; the next CronJob run replaces the waiting MPIJob.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .nccl import JOB_NAME, METRICS_FILE, NcclCheckSpec
from .nccl_eks import RESULTS_MOUNT, render_mpijob_manifests

#: The kubectl image of the CronJob's pod. Tag: the EKS default Kubernetes minor (1.35,
#: :data:`fmconstructs.eks.versions.DEFAULT_KUBERNETES_VERSION`); kubectl supports one minor of skew either way
#: (Kubernetes "Version Skew Policy"). That ``v1.35.0`` is published under this name is seen in public charts and
#: Dockerfiles pulling it (e.g. ``FROM registry.k8s.io/kubectl:v1.35.0``), not in the registry itself: UNCONFIRMED.
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.0"
#: The metrics server's image: the Python image :mod:`fmconstructs.observability.eks` already runs for the EFA
#: collector (``PYTHON_IMAGE``; Docker's official python image on its ECR Public mirror).
METRICS_SERVER_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"
#: The Service the scraper's ``nccl`` job keeps (``__meta_kubernetes_service_name``).
NCCL_METRICS_SERVICE = "fm-nccl-metrics"
NCCL_METRICS_PORT = 9403
LAUNCH_CONFIG_MAP = f"{JOB_NAME}-launch"
LAUNCHER_SERVICE_ACCOUNT = f"{JOB_NAME}-launcher"
#: The metrics pod's service account: it lists the check's worker pods (the queue probe, ``list`` on pods only).
METRICS_SERVICE_ACCOUNT = NCCL_METRICS_SERVICE
MPIJOB_RESOURCE = "mpijobs.v2beta1.kubeflow.org"
_LAUNCH_MOUNT = "/fm-nccl-launch"
_SERVER_MOUNT = "/fm-nccl"
_NON_ROOT = {
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


def metrics_server_script() -> str:
    """The source of :mod:`fmconstructs.health.nccl_metrics_server`, as the metrics pod runs it."""
    return (Path(__file__).parent / "nccl_metrics_server.py").read_text()


def launcher_commands(namespace: str) -> tuple[list[str], list[str]]:
    """The CronJob pod's two commands: delete the previous MPIJob (init container), create the next one."""
    cache = ["--cache-dir=/tmp/kube-cache"]  # kubectl's discovery cache, on the pod's emptyDir
    delete = ["kubectl", "delete", MPIJOB_RESOURCE, JOB_NAME, "--namespace", namespace]
    delete += ["--ignore-not-found", "--wait=false", *cache]
    create = ["kubectl", "create", "--namespace", namespace, "-f", f"{_LAUNCH_MOUNT}/mpijob.json", *cache]
    return delete, create


def _rbac(namespace: str) -> list[dict[str, Any]]:
    meta = {"name": LAUNCHER_SERVICE_ACCOUNT, "namespace": namespace}
    api = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": f"{api}/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [
                # create cannot be limited by name (Kubernetes RBAC: resourceNames do not apply to create)
                {"apiGroups": ["kubeflow.org"], "resources": ["mpijobs"], "verbs": ["create"]},
                {
                    "apiGroups": ["kubeflow.org"],
                    "resources": ["mpijobs"],
                    "resourceNames": [JOB_NAME],
                    "verbs": ["get", "delete"],
                },
            ],
        },
        {
            "apiVersion": f"{api}/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "subjects": [{"kind": "ServiceAccount", "name": LAUNCHER_SERVICE_ACCOUNT, "namespace": namespace}],
            "roleRef": {"apiGroup": api, "kind": "Role", "name": LAUNCHER_SERVICE_ACCOUNT},
        },
    ]


def _metrics_rbac(namespace: str) -> list[dict[str, Any]]:
    """The metrics pod's ServiceAccount, a Role with ``list`` on pods (the probe's label-selected list) and the
    binding (Kubernetes RBAC: a list cannot be limited by resourceNames)."""
    meta = {"name": METRICS_SERVICE_ACCOUNT, "namespace": namespace}
    api = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": f"{api}/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        },
        {
            "apiVersion": f"{api}/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "subjects": [{"kind": "ServiceAccount", "name": METRICS_SERVICE_ACCOUNT, "namespace": namespace}],
            "roleRef": {"apiGroup": api, "kind": "Role", "name": METRICS_SERVICE_ACCOUNT},
        },
    ]


def _kubectl_container(name: str, command: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": KUBECTL_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "securityContext": dict(_NON_ROOT),
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "volumeMounts": [
            {"name": "launch", "mountPath": _LAUNCH_MOUNT, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _cron_job(spec: NcclCheckSpec, namespace: str) -> dict[str, Any]:
    delete, create = launcher_commands(namespace)
    pod = {
        "serviceAccountName": LAUNCHER_SERVICE_ACCOUNT,
        "restartPolicy": "Never",
        "initContainers": [_kubectl_container("delete-previous", delete)],
        "containers": [_kubectl_container("create", create)],
        "volumes": [
            {"name": "launch", "configMap": {"name": LAUNCH_CONFIG_MAP}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": JOB_NAME, "namespace": namespace},
        "spec": {
            "schedule": spec.schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {"backoffLimit": 2, "template": {"spec": pod}}},
        },
    }


def _metrics(namespace: str, results_claim: str) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": NCCL_METRICS_SERVICE, "app.kubernetes.io/part-of": "fmconstructs"}
    container = {
        "name": "metrics",
        "image": METRICS_SERVER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-I", f"{_SERVER_MOUNT}/nccl_metrics_server.py"],
        "args": [
            f"{RESULTS_MOUNT}/{METRICS_FILE}",
            str(NCCL_METRICS_PORT),
            "--probe-job",
            JOB_NAME,
            "--probe-namespace",
            namespace,
        ],
        "ports": [{"name": "metrics", "containerPort": NCCL_METRICS_PORT}],
        "securityContext": dict(_NON_ROOT),
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "volumeMounts": [
            {"name": "server", "mountPath": _SERVER_MOUNT, "readOnly": True},
            {"name": "results", "mountPath": RESULTS_MOUNT, "readOnly": True},
        ],
    }
    pod = {
        "serviceAccountName": METRICS_SERVICE_ACCOUNT,
        "containers": [container],
        "volumes": [
            {"name": "server", "configMap": {"name": f"{JOB_NAME}-report"}},
            {"name": "results", "persistentVolumeClaim": {"claimName": results_claim, "readOnly": True}},
        ],
    }
    meta = {"name": NCCL_METRICS_SERVICE, "namespace": namespace, "labels": labels}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                **meta,
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(NCCL_METRICS_PORT)},
            },
            "spec": {
                "selector": labels,
                "ports": [{"name": "metrics", "port": NCCL_METRICS_PORT, "targetPort": NCCL_METRICS_PORT}],
            },
        },
    ]


def render_scheduled_nccl_manifests(
    spec: NcclCheckSpec,
    *,
    image: str,
    instance_type: str,
    results_claim: str,
    namespace: str = "default",
    efa_per_node: int | None = None,
) -> list[dict[str, Any]]:
    """The scheduled NCCL check on EKS: report ConfigMap (with the metrics server), the ConfigMap holding the
    ``MPIJob``, the launcher's ServiceAccount, Role and RoleBinding, the CronJob, the metrics pod's ServiceAccount,
    Role and RoleBinding, and the metrics Deployment and Service. Parameters as
    :func:`~fmconstructs.health.nccl_eks.render_mpijob_manifests` (validated there)."""
    report, mpijob = render_mpijob_manifests(
        spec,
        image=image,
        instance_type=instance_type,
        results_claim=results_claim,
        namespace=namespace,
        efa_per_node=efa_per_node,
    )
    report["data"]["nccl_metrics_server.py"] = metrics_server_script()
    launch = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": LAUNCH_CONFIG_MAP, "namespace": namespace},
        "data": {"mpijob.json": json.dumps(mpijob, indent=1, sort_keys=True)},
    }
    return [
        report,
        launch,
        *_rbac(namespace),
        _cron_job(spec, namespace),
        *_metrics_rbac(namespace),
        *_metrics(namespace, results_claim),
    ]
