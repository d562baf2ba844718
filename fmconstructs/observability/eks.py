"""Collection from EKS: an Amazon Managed Prometheus managed scraper (``AWS::APS::Scraper``).

Choice: the managed scraper (agentless, runs in the cluster's subnets, no collector pods to operate) scrapes the
DCGM exporter Service that :class:`~fmconstructs.eks.GpuEksCluster` installs and a node-exporter DaemonSet that this
module adds, whose sidecar runs fmconstructs' EFA textfile collector against the host's
``/sys/class/infiniband``. Everything the scraper needs is reachable as a Kubernetes endpoint, so ADOT is not
needed. The scraper authenticates as the Kubernetes user ``aps-collector-user`` (an EKS access entry for its role)
with a read-only ClusterRole (AMP User Guide "AMP-collector-how-to", EKS cluster set-up for managed collectors).
The scrape configuration is checked with ``promtool check config`` in tests; the manifests against Kubernetes
schemas.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks_l1
from constructs import Construct

from ..eks import GpuEksCluster
from ..errors import FmValidationError
from .collection import NODE_EXPORTER_VERSION, NodeLabels
from .workspace import PrometheusWorkspace

SCRAPER_USERNAME = "aps-collector-user"
MONITORING_NAMESPACE = "fm-monitoring"
NODE_EXPORTER_SERVICE = "fm-node-exporter"
DCGM_EXPORTER_SERVICE = "dcgm-exporter"  # the dcgm-exporter chart's Service, named after the release
NODE_EXPORTER_IMAGE = f"quay.io/prometheus/node-exporter:v{NODE_EXPORTER_VERSION}"
PYTHON_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"


def _job(name: str, service: str, cluster_label: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "kubernetes_sd_configs": [{"role": "endpoints"}],
        "relabel_configs": [
            {"source_labels": ["__meta_kubernetes_service_name"], "action": "keep", "regex": service},
            {
                "source_labels": ["__meta_kubernetes_service_annotation_prometheus_io_scrape"],
                "action": "keep",
                "regex": "true",
            },
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "instance"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
            {"target_label": "cluster", "replacement": cluster_label},
        ],
    }


def eks_scrape_config(*, cluster_label: str, scrape_interval: str = "30s") -> dict[str, Any]:
    """The managed scraper's Prometheus configuration: DCGM exporter and node exporter (with EFA counters)."""
    NodeLabels(cluster=cluster_label)  # validates the label value
    if scrape_interval not in ("15s", "30s", "60s", "1m"):
        raise FmValidationError("scrape_interval", scrape_interval, "one of '15s', '30s', '60s', '1m'")
    return {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": "10s"},
        "scrape_configs": [
            _job("dcgm", DCGM_EXPORTER_SERVICE, cluster_label),
            _job("node", NODE_EXPORTER_SERVICE, cluster_label),
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


def node_exporter_manifests(*, namespace: str = MONITORING_NAMESPACE) -> list[dict[str, Any]]:
    """Namespace, ConfigMap (the EFA collector script), DaemonSet (node exporter + EFA sidecar) and Service."""
    script = (Path(__file__).parent / "node" / "efa_textfile.py").read_text()
    labels = {"app.kubernetes.io/name": NODE_EXPORTER_SERVICE, "app.kubernetes.io/part-of": "fmconstructs"}
    non_root = {
        "runAsNonRoot": True,
        "runAsUser": 65534,
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
            "data": {"efa_textfile.py": script},
        },
        {
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
                        "containers": [
                            {
                                "name": "node-exporter",
                                "image": NODE_EXPORTER_IMAGE,
                                "args": [
                                    "--path.rootfs=/host/root",
                                    "--collector.textfile.directory=/textfile",
                                    "--web.listen-address=:9100",
                                ],
                                "ports": [{"name": "metrics", "containerPort": 9100}],
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
                                    {"name": "textfile", "mountPath": "/textfile", "readOnly": True},
                                ],
                            },
                            {
                                "name": "efa-collector",
                                "image": PYTHON_IMAGE,
                                "command": ["/bin/sh", "-c"],
                                "args": [
                                    "while true; do python3 -I /scripts/efa_textfile.py /textfile/fm_efa.prom "
                                    "--sysfs-root /host/sys/class/infiniband; sleep 15; done"
                                ],
                                "securityContext": non_root,
                                "resources": {
                                    "requests": {"cpu": "10m", "memory": "32Mi"},
                                    "limits": {"memory": "128Mi"},
                                },
                                "volumeMounts": [
                                    {"name": "scripts", "mountPath": "/scripts", "readOnly": True},
                                    {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
                                    {"name": "textfile", "mountPath": "/textfile"},
                                ],
                            },
                        ],
                        "volumes": [
                            {"name": "root", "hostPath": {"path": "/"}},
                            {"name": "sys", "hostPath": {"path": "/sys"}},
                            {"name": "textfile", "emptyDir": {}},
                            {"name": "scripts", "configMap": {"name": "fm-efa-collector"}},
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": NODE_EXPORTER_SERVICE,
                "namespace": namespace,
                "labels": labels,
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9100"},
            },
            "spec": {"selector": labels, "ports": [{"name": "metrics", "port": 9100, "targetPort": 9100}]},
        },
    ]


class AmpEksScraper(Construct):
    """An AMP managed scraper for a :class:`~fmconstructs.eks.GpuEksCluster`, writing to a
    :class:`~fmconstructs.observability.workspace.PrometheusWorkspace`."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        workspace: PrometheusWorkspace,
        cluster_label: str,
        subnets: Sequence[ec2.ISubnet] | None = None,
        scrape_interval: str = "30s",
        install_node_exporter: bool = True,
    ) -> None:
        """
        :param subnets: where the scraper's network interfaces go (they must reach the nodes). Default: the VPC's
            private subnets.
        :param install_node_exporter: add the node-exporter + EFA collector DaemonSet. Default True.
        """
        super().__init__(scope, id)
        self.scrape_config = eks_scrape_config(cluster_label=cluster_label, scrape_interval=scrape_interval)
        blob = base64.b64encode(yaml.safe_dump(self.scrape_config, sort_keys=False).encode()).decode()
        chosen = list(subnets) if subnets is not None else list(cluster.vpc.private_subnets)
        if not chosen:
            raise FmValidationError("subnets", [], "at least one subnet that reaches the nodes")
        self.resource = aps.CfnScraper(
            self,
            "Resource",
            source=aps.CfnScraper.SourceProperty(
                eks_configuration=aps.CfnScraper.EksConfigurationProperty(
                    cluster_arn=cluster.cluster_arn,
                    subnet_ids=[s.subnet_id for s in chosen],
                    security_group_ids=[cluster.cluster_security_group.security_group_id],
                )
            ),
            destination=aps.CfnScraper.DestinationProperty(
                amp_configuration=aps.CfnScraper.AmpConfigurationProperty(workspace_arn=workspace.workspace_arn)
            ),
            scrape_configuration=aps.CfnScraper.ScrapeConfigurationProperty(configuration_blob=blob),
        )
        self.access_entry = eks_l1.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=cluster.cluster_name,
            principal_arn=self.resource.attr_role_arn,
            username=SCRAPER_USERNAME,
            type="STANDARD",
        )
        self.rbac = cluster.cluster.add_manifest(f"{id}Rbac", *scraper_rbac_manifests())
        self.node_exporter = (
            cluster.cluster.add_manifest(f"{id}NodeExporter", *node_exporter_manifests())
            if install_node_exporter
            else None
        )

    @property
    def scraper_arn(self) -> str:
        return self.resource.attr_arn
