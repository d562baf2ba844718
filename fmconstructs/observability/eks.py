"""Collection from EKS: an Amazon Managed Prometheus managed scraper (``AWS::APS::Scraper``).

Choice: the managed scraper (agentless, runs in the cluster's subnets, no collector pods to operate) scrapes the
DCGM exporter Service that :class:`~fmconstructs.eks.GpuEksCluster` installs and a node-exporter DaemonSet that this
module adds, whose sidecar runs fmconstructs' EFA textfile collector against the host's
``/sys/class/infiniband``. Node exporter's textfile directory is the host's
:data:`~fmconstructs.health.metric_names.NODE_EXPORTER_TEXTFILE_DIR` (the same path as on Slurm nodes), shared with
what runs on the host: the EKS node-check gate writes its results there (:mod:`fmconstructs.eks.health`).
Everything the scraper needs is reachable as a Kubernetes endpoint, so ADOT is not needed. The scraper
authenticates as the Kubernetes user ``aps-collector-user`` (an EKS access entry for its role)
with a read-only ClusterRole (AMP User Guide "AMP-collector-how-to", EKS cluster set-up for managed collectors).
The scrape configuration is checked with ``promtool check config`` in tests; the manifests against Kubernetes
schemas.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks_l1
from constructs import Construct

from .._rules import warn
from .._validate import check_bool, check_instance, check_scope_id, check_sequence, check_subnet, located
from .._validate_k8s import check_namespace
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, check_chart_source
from ..eks.versions import version_tuple
from ..errors import FmTypeError, FmValidationError, is_token
from ..health.nccl_eks_schedule import NCCL_METRICS_SERVICE
from ..serving.observability import ServingAlertThresholds, add_serving_rules, serving_scrape_job
from ._checks import PrometheusDuration, check_aps_workspace_arn, check_prometheus_duration
from .collection import (
    LIFECYCLE_TEXTFILE,
    NODE_EXPORTER_VERSION,
    NODE_LIFECYCLE_SCRIPT,
    TEXTFILE_DIR,
    check_cluster_label,
    scrape_timeout,
    shutdown_wait_seconds,
)
from .eks_attribution import add_kube_state_metrics, app_metrics_job, dcgm_job, kube_state_metrics_job, service_job
from .kueue_metrics import kueue_job
from .option_rules import GRACEFUL_NODE_SHUTDOWN_VERSION as GRACEFUL_NODE_SHUTDOWN_VERSION
from .option_rules import nodes_shut_down_gracefully
from .workspace import PrometheusWorkspace

SCRAPER_USERNAME = "aps-collector-user"
MONITORING_NAMESPACE = "fm-monitoring"
NODE_EXPORTER_SERVICE = "fm-node-exporter"
DCGM_EXPORTER_SERVICE = "dcgm-exporter"  # the dcgm-exporter chart's Service, named after the release
NODE_EXPORTER_IMAGE = f"quay.io/prometheus/node-exporter:v{NODE_EXPORTER_VERSION}"
PYTHON_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"
#: Where node exporter and the EFA collector see the node's textfile directory (the host's
#: :data:`~fmconstructs.health.metric_names.NODE_EXPORTER_TEXTFILE_DIR`, a ``hostPath`` volume).
TEXTFILE_MOUNT = "/textfile"
#: The user the EFA collector runs as (``nobody``), who owns the host's textfile directory so that it can write there.
_COLLECTOR_UID = 65534
#: Kubernetes namespace names are DNS-1123 labels (Kubernetes docs "Namespaces" / "Object Names and IDs": at most 63
#: lowercase alphanumerics or '-', starting and ending with an alphanumeric).


def _synth_label(cluster_label: object) -> str:
    """The cluster label, known at synth time (the scrape configuration is base64-encoded at synth time)."""
    check_cluster_label(cluster_label)
    if is_token(cluster_label):
        raise FmValidationError(
            "cluster_label", cluster_label, "a label known at synth time (the scrape configuration is base64-encoded)"
        )
    return str(cluster_label)


def eks_scrape_config(
    *,
    cluster_label: str,
    scrape_interval: PrometheusDuration = "30s",
    kueue: bool = False,
    serving: bool = False,
) -> dict[str, Any]:
    """The managed scraper's Prometheus configuration: DCGM exporter (its pod attribution labels kept), node exporter
    (with EFA counters), the scheduled NCCL check's metrics Service (:mod:`fmconstructs.health.nccl_eks_schedule`; no
    target without it), kube-state-metrics and the pods that opt in to application metrics (``fm-app``), see
    :mod:`fmconstructs.observability.eks_attribution`.

    :param scrape_interval: a positive Prometheus duration (``'30s'``, ``'1m30s'``) or ``Duration``. The AMP managed
        collector's own minimum, if any, is not in its API reference (UNCONFIRMED); CreateScraper reports it.
    :param kueue: also scrape Kueue's metrics Service (job ``kueue``, :mod:`fmconstructs.observability.kueue_metrics`,
        whose notes say what is UNCONFIRMED). Default False.
    :param serving: also the model servers' vLLM metrics (job ``fm-serving``,
        :func:`fmconstructs.serving.observability.serving_scrape_job`). Default False.
    """
    check_bool("serving", serving)
    cluster_label = _synth_label(cluster_label)
    interval = check_prometheus_duration("scrape_interval", scrape_interval, positive=True)
    check_bool("kueue", kueue)
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": scrape_timeout(interval)},
        "scrape_configs": [
            dcgm_job(DCGM_EXPORTER_SERVICE, cluster_label),
            service_job("node", NODE_EXPORTER_SERVICE, cluster_label),
            service_job("nccl", NCCL_METRICS_SERVICE, cluster_label),
            kube_state_metrics_job(cluster_label),
            app_metrics_job(cluster_label),
            *([kueue_job(cluster_label)] if kueue else []),
            *([serving_scrape_job(cluster_label)] if serving else []),
        ],
    }


def scraper_rbac_manifests() -> list[dict[str, Any]]:
    """Read-only access for the managed scraper's Kubernetes user (AMP User Guide, managed collector set-up)."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "aps-collector-role"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "nodes/proxy", "nodes/metrics", "services", "endpoints", "pods"],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "aps-collector-user-role-binding"},
            "subjects": [{"kind": "User", "name": SCRAPER_USERNAME, "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"kind": "ClusterRole", "name": "aps-collector-role", "apiGroup": "rbac.authorization.k8s.io"},
        },
    ]


def node_exporter_manifests(
    *, namespace: str = MONITORING_NAMESPACE, scrape_interval: PrometheusDuration = "30s"
) -> list[dict[str, Any]]:
    """Namespace, ConfigMap (the collector scripts), DaemonSet (node exporter + collector sidecar) and Service.

    Clean-shutdown marker (``fm_node_shutting_down``, read by the ``NodeStoppedReporting`` alert): the sidecar writes
    0 when it starts; its ``preStop`` hook writes 1 and waits one scrape interval and a margin while node exporter's
    own ``preStop`` sleep keeps serving it, so the managed scraper collects the marker before the pod ends. On a
    scale-in the kubelet runs these hooks through graceful node shutdown ("pods follow the normal pod termination
    process during the node shutdown", Kubernetes docs "Node Shutdowns"), which the EKS AL2023 AMIs turn on from
    Kubernetes 1.34 (amazon-eks-ami nodeadm/internal/kubelet/config.go: shutdownGracePeriod 2m30s, 30 s of it for
    critical pods; a pod without a critical priority class gets the other 2 minutes). A crashed node runs no hook:
    its pod stays a target of the endpoints role (Prometheus discovers not-ready addresses too) and fails scrapes.
    """
    check_namespace("namespace", namespace)
    if is_token(namespace):
        raise FmValidationError("namespace", namespace, "a namespace known at synth time")
    wait = shutdown_wait_seconds(scrape_interval)
    marker = f"{TEXTFILE_MOUNT}/{LIFECYCLE_TEXTFILE}"
    labels = {"app.kubernetes.io/name": NODE_EXPORTER_SERVICE, "app.kubernetes.io/part-of": "fmconstructs"}
    non_root = {
        "runAsNonRoot": True,
        "runAsUser": _COLLECTOR_UID,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "fm-efa-collector", "namespace": namespace},
            "data": {
                "efa_textfile.py": (Path(__file__).parent / "node" / "efa_textfile.py").read_text(),
                "node_lifecycle.sh": NODE_LIFECYCLE_SCRIPT,
            },
        },
        _node_exporter_daemon_set(namespace, labels, wait, marker, non_root),
        _node_exporter_service(namespace, labels),
    ]


def _node_exporter_daemon_set(
    namespace: str, labels: dict[str, str], wait: int, marker: str, non_root: dict[str, Any]
) -> dict[str, Any]:
    """Node exporter and the EFA collector sidecar on every node. The textfile directory is the host's
    :data:`~fmconstructs.health.metric_names.NODE_EXPORTER_TEXTFILE_DIR` (``hostPath``, ``DirectoryOrCreate``), so
    node exporter also reads what runs on the host writes there: the node-check gate's ``fm_node_checks_boot.prom``
    (:mod:`fmconstructs.eks.health`). Node exporter mounts it read-only; the init container ``textfile-owner`` (root
    with ``CAP_CHOWN`` only) gives the directory to the collector's user, which then writes ``fm_efa.prom`` and the
    clean-stop marker there. The kubelet creates a missing ``DirectoryOrCreate`` directory "with permission set to
    0755, having the same group and ownership with Kubelet" (Kubernetes docs "Volumes", hostPath)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NODE_EXPORTER_SERVICE, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],  # GPU nodes carry the nvidia.com/gpu taint
                    "hostPID": False,
                    "terminationGracePeriodSeconds": wait + 15,
                    "initContainers": [_textfile_owner_container()],
                    "containers": [
                        _node_exporter_container(wait, non_root),
                        _efa_collector_container(wait, marker, non_root),
                    ],
                    "volumes": [
                        {"name": "root", "hostPath": {"path": "/"}},
                        {"name": "sys", "hostPath": {"path": "/sys"}},
                        {"name": "textfile", "hostPath": {"path": TEXTFILE_DIR, "type": "DirectoryOrCreate"}},
                        {"name": "scripts", "configMap": {"name": "fm-efa-collector"}},
                    ],
                },
            },
        },
    }


def _node_exporter_container(wait: int, non_root: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "node-exporter",
        "image": NODE_EXPORTER_IMAGE,
        "args": [
            "--path.rootfs=/host/root",
            f"--collector.textfile.directory={TEXTFILE_MOUNT}",
            "--web.listen-address=:9100",
        ],
        "ports": [{"name": "metrics", "containerPort": 9100}],
        # keeps serving the shutdown marker while the sidecar's preStop hook waits (the
        # image is busybox-based: node_exporter's Dockerfile at v1.9.1)
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(wait)]}}},
        "securityContext": non_root,
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"memory": "256Mi"},
        },
        "volumeMounts": [
            {
                "name": "root",
                "mountPath": "/host/root",
                "readOnly": True,
                "mountPropagation": "HostToContainer",
            },
            {"name": "textfile", "mountPath": TEXTFILE_MOUNT, "readOnly": True},
        ],
    }


def _textfile_owner_container() -> dict[str, Any]:
    """Gives the host's textfile directory to the collector's user (``chown``, nothing else: root with CAP_CHOWN)."""
    return {
        "name": "textfile-owner",
        "image": NODE_EXPORTER_IMAGE,  # busybox-based: chown is there (node_exporter's Dockerfile)
        "command": ["chown", f"{_COLLECTOR_UID}:{_COLLECTOR_UID}", TEXTFILE_MOUNT],
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]},
        },
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        "volumeMounts": [{"name": "textfile", "mountPath": TEXTFILE_MOUNT}],
    }


def _efa_collector_container(wait: int, marker: str, non_root: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "efa-collector",
        "image": PYTHON_IMAGE,
        "command": ["/bin/sh", "-c"],
        "args": [
            f"sh /scripts/node_lifecycle.sh start {marker}; trap 'exit 0' TERM; "
            f"while true; do python3 -I /scripts/efa_textfile.py {TEXTFILE_MOUNT}/fm_efa.prom "
            "--sysfs-root /host/sys/class/infiniband; sleep 15 & wait $!; done"
        ],
        "lifecycle": {
            "preStop": {"exec": {"command": ["sh", "/scripts/node_lifecycle.sh", "stop", marker, str(wait)]}}
        },
        "securityContext": non_root,
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"memory": "128Mi"},
        },
        "volumeMounts": [
            {"name": "scripts", "mountPath": "/scripts", "readOnly": True},
            {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
            {"name": "textfile", "mountPath": TEXTFILE_MOUNT},
        ],
    }


def _node_exporter_service(namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NODE_EXPORTER_SERVICE,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9100"},
        },
        "spec": {
            "selector": labels,
            "ports": [{"name": "metrics", "port": 9100, "targetPort": 9100}],
            # a terminating pod stays a scrape target while its preStop hook publishes the shutdown marker
            "publishNotReadyAddresses": True,
        },
    }


class AmpEksScraper(Construct):
    """An AMP managed scraper for a :class:`~fmconstructs.eks.GpuEksCluster`, writing to a
    :class:`~fmconstructs.observability.workspace.PrometheusWorkspace` (or any workspace, by ARN)."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        workspace: PrometheusWorkspace | str,
        cluster_label: str,
        subnets: Sequence[ec2.ISubnet] | None = None,
        scrape_interval: PrometheusDuration = "30s",
        install_node_exporter: bool = True,
        install_kube_state_metrics: bool = True,
        kube_state_metrics_source: ChartSource | None = None,
        scrape_kueue: bool = False,
        serving: bool = False,
        serving_thresholds: ServingAlertThresholds | None = None,
        serving_rule_namespace: str | None = None,
    ) -> None:
        """
        :param workspace: the destination: a :class:`PrometheusWorkspace` or a workspace ARN (a deploy-time value
            such as ``Fn.import_value`` is fine).
        :param cluster_label: the ``cluster`` label on every series (1-128 letters, digits or ``_.:/+-``).
        :param subnets: where the scraper's network interfaces go (they must reach the nodes). Default: the VPC's
            private subnets.
        :param scrape_interval: a positive Prometheus duration or ``Duration``. Default ``'30s'``.
        :param install_node_exporter: add the node-exporter + EFA collector DaemonSet. Default True. Its clean-stop
            marker relies on graceful node shutdown: on a cluster older than Kubernetes 1.34 the construct warns
            (``eks-no-graceful-node-shutdown``).
        :param install_kube_state_metrics: install kube-state-metrics (pinned chart, team/job label allowlist; see
            :func:`~fmconstructs.observability.eks_attribution.add_kube_state_metrics`). Default True.
        :param kube_state_metrics_source: where its chart and image come from (a private registry); default public.
        :param scrape_kueue: also scrape the metrics of the Kueue that ``cluster.add_topology_scheduling`` installs
            (job ``kueue``: HTTPS with the scraper's own token, the self-signed certificate not verified) for the
            Queue dashboard's Kueue panels. Default False: whether the managed scraper's token passes Kueue's
            authentication and whether CreateScraper accepts ``insecure_skip_verify`` are UNCONFIRMED
            (:mod:`fmconstructs.observability.kueue_metrics`).
        :param serving: collect the model servers' vLLM metrics (job ``fm-serving``) and add this cluster's
            ``fm_serving:*`` recording rules and alerts to the workspace (:mod:`fmconstructs.serving.observability`).
            Default False.
        :param serving_thresholds: the serving alerts' SLOs and limits; default ``ServingAlertThresholds()``.
        :param serving_rule_namespace: the rule groups namespace of those rules; default
            ``fmconstructs-serving-<cluster_label>``.
        """
        check_scope_id(scope, id)
        check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
        workspace_arn = _workspace_arn(workspace)
        check_bool("install_node_exporter", install_node_exporter)
        check_bool("install_kube_state_metrics", install_kube_state_metrics)
        check_chart_source("kube_state_metrics_source", kube_state_metrics_source)
        check_bool("scrape_kueue", scrape_kueue)
        scrape_config = eks_scrape_config(
            cluster_label=cluster_label, scrape_interval=scrape_interval, kueue=scrape_kueue, serving=serving
        )
        chosen = _scraper_subnets(cluster, subnets)
        super().__init__(scope, id)
        self.scrape_config = scrape_config
        self._config_args: dict[str, Any] = {
            "cluster_label": cluster_label, "scrape_interval": scrape_interval, "kueue": scrape_kueue,
        }  # fmt: skip
        self.cluster_label = cluster_label
        self.workspace_arn: str = workspace_arn
        self.resource = self._build_scraper(cluster, chosen, workspace_arn)
        cluster.metrics_scrapers.append(self)  # what remediation and KEDA autoscaling look for at synthesis
        self.access_entry = self._build_access_entry(cluster)
        self.rbac = cluster.cluster.add_manifest(f"{id}Rbac", *scraper_rbac_manifests())
        self.node_exporter = (
            cluster.cluster.add_manifest(f"{id}NodeExporter", *node_exporter_manifests(scrape_interval=scrape_interval))
            if install_node_exporter
            else None
        )
        if install_node_exporter:
            self._warn_without_graceful_shutdown(cluster)
        self.kube_state_metrics = (
            add_kube_state_metrics(cluster, source=kube_state_metrics_source) if install_kube_state_metrics else None
        )
        self.serving_rules: aps.CfnRuleGroupsNamespace | None = None
        if serving:
            self.enable_serving(thresholds=serving_thresholds, rule_namespace=serving_rule_namespace)

    @property
    def collects_serving(self) -> bool:
        """Whether the scrape configuration has the model servers' job (``serving=True`` or :meth:`enable_serving`)."""
        jobs = self.scrape_config["scrape_configs"]
        return any(job.get("job_name") == serving_scrape_job(self.cluster_label)["job_name"] for job in jobs)

    def _build_scraper(
        self, cluster: GpuEksCluster, subnets: Sequence[ec2.ISubnet], workspace_arn: str
    ) -> aps.CfnScraper:
        """The managed scraper: ENIs in ``subnets`` with the cluster security group, writing to the workspace."""
        return aps.CfnScraper(
            self,
            "Resource",
            source=aps.CfnScraper.SourceProperty(
                eks_configuration=aps.CfnScraper.EksConfigurationProperty(
                    cluster_arn=cluster.cluster_arn,
                    subnet_ids=[s.subnet_id for s in subnets],
                    security_group_ids=[cluster.cluster_security_group.security_group_id],
                )
            ),
            destination=aps.CfnScraper.DestinationProperty(
                amp_configuration=aps.CfnScraper.AmpConfigurationProperty(workspace_arn=workspace_arn)
            ),
            scrape_configuration=aps.CfnScraper.ScrapeConfigurationProperty(
                configuration_blob=_blob(self.scrape_config)
            ),
        )

    def _build_access_entry(self, cluster: GpuEksCluster) -> eks_l1.CfnAccessEntry:
        """The scraper role's EKS access entry (its Kubernetes user, bound by the RBAC manifests)."""
        return eks_l1.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=cluster.cluster_name,
            principal_arn=self.resource.attr_role_arn,
            username=SCRAPER_USERNAME,
            type="STANDARD",
        )

    def enable_serving(
        self, *, thresholds: ServingAlertThresholds | None = None, rule_namespace: str | None = None
    ) -> None:
        """What ``serving=True`` does, for a scraper made without it (``TrainingPlatform.add_model_server``): the
        ``fm-serving`` job joins the scrape configuration and the ``fm_serving:*`` rules and alerts are added. A second
        call does nothing."""
        if self.serving_rules is not None:
            return
        self.scrape_config = eks_scrape_config(**self._config_args, serving=True)
        self.resource.scrape_configuration = aps.CfnScraper.ScrapeConfigurationProperty(
            configuration_blob=_blob(self.scrape_config)
        )
        self.serving_rules = add_serving_rules(
            self,
            "ServingRules",
            workspace_arn=self.workspace_arn,
            cluster_label=self.cluster_label,
            thresholds=thresholds,
            rule_namespace=rule_namespace,
        )

    def _warn_without_graceful_shutdown(self, cluster: GpuEksCluster) -> None:
        warn(self, nodes_shut_down_gracefully(_known_version(cluster)))

    @property
    def scraper_arn(self) -> str:
        return self.resource.attr_arn


def _workspace_arn(workspace: object) -> str:
    if isinstance(workspace, PrometheusWorkspace):
        return workspace.workspace_arn
    if isinstance(workspace, str):
        arn: str = check_aps_workspace_arn("workspace", workspace)
        return arn
    raise FmTypeError(
        "workspace", workspace, f"a PrometheusWorkspace or a workspace ARN (got a {type(workspace).__name__})"
    )


def _scraper_subnets(cluster: GpuEksCluster, subnets: Sequence[ec2.ISubnet] | None) -> list[ec2.ISubnet]:
    chosen = (
        list(cluster.vpc.private_subnets) if subnets is None else list(check_sequence("subnets", subnets, check_subnet))
    )
    if not chosen:
        raise FmValidationError("subnets", [], "at least one subnet that reaches the nodes")
    return chosen


def _blob(scrape_config: Mapping[str, Any]) -> str:
    """The scraper's ``ConfigurationBlob``: the scrape configuration as base64-encoded YAML."""
    return base64.b64encode(yaml.safe_dump(dict(scrape_config), sort_keys=False).encode()).decode()


def _known_version(cluster: GpuEksCluster) -> tuple[int, int] | None:
    """The cluster's Kubernetes (major, minor), or None when it is a deploy-time value or not a plain version."""
    version = getattr(cluster, "version", None)
    text = getattr(version, "version", None)
    if not isinstance(text, str) or is_token(text):
        return None
    try:
        return version_tuple(version)  # type: ignore[arg-type]
    except FmValidationError:
        return None
