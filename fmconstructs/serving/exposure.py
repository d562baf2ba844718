"""Exposure of a model server: the AWS Load Balancer Controller and an internal NLB Service or ALB Ingress.

- :class:`AwsLoadBalancerController` installs the controller's Helm chart (``eks/aws-load-balancer-controller``,
  :data:`LOAD_BALANCER_CONTROLLER`) on a :class:`~fmconstructs.eks.GpuEksCluster`, with the controller's documented
  IAM policy (vendored verbatim, :data:`IAM_POLICY_FILE`) on a role of its own through EKS Pod Identity ("Option B:
  Recommended, Pod Identity" of the controller's docs/deploy/installation.md at v3.5.0).
- :func:`nlb_service_manifest` and :func:`alb_ingress_manifest` render what the controller turns into a load balancer
  in front of the pods of one model server (annotation names and values from the controller's
  docs/guide/service/annotations.md and docs/guide/ingress/annotations.md at tag v3.5.0).
- :class:`ModelServerEndpoint` applies one of them to the cluster: internal by default; ``internet-facing`` only with
  ``allow_internet_facing=True``, and then with the warning ``fmconstructs:serving-internet-facing-endpoint``.

Where internal load balancers go (the controller's docs/deploy/subnet_discovery.md at v3.5.0): private subnets tagged
``kubernetes.io/role/internal-elb`` (``1`` or empty); when no subnet of the VPC carries a role tag, the subnets whose
route table has no route to an internet gateway. Tag the cluster's private subnets to choose them explicitly.

The policy's resource ARNs start ``arn:aws:`` (the commercial partition, as the controller ships it); GovCloud and
China use the controller's ``iam_policy_us-gov.json`` / ``iam_policy_cn.json`` instead, which this module does not
vendor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import Enum
from importlib import resources
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .. import _nag
from .._rules import warn
from .._validate import check_bool, check_construct, check_count, check_enum, check_instance, located
from .._validate_refs import check_url_path
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, HelmChartPin
from ..eks.manifests import check_name
from ..errors import FmValidationError
from . import rules
from ._cluster_addon import check_chart_inputs, one_per_cluster
from ._pod_identity import pod_identity_role

#: The chart from aws/eks-charts ``stable/aws-load-balancer-controller/Chart.yaml`` at master commit 5239609
#: (2026-08-03, "aws-load-balancer-controller: v3.5.0 (#1354)"): ``version: 3.5.0``, ``appVersion: v3.5.0``; Helm
#: repository https://aws.github.io/eks-charts (the chart's ``home``/``sources`` and the controller's
#: installation.md ``helm repo add eks https://aws.github.io/eks-charts``). Namespace and release as installation.md's
#: ``helm install aws-load-balancer-controller eks/aws-load-balancer-controller -n kube-system``.
LOAD_BALANCER_CONTROLLER = HelmChartPin(
    chart="aws-load-balancer-controller",
    repository="https://aws.github.io/eks-charts",
    version="3.5.0",
    namespace="kube-system",
    release="aws-load-balancer-controller",
)
#: The controller version the chart runs (values.yaml ``image.tag: v3.5.0``, image
#: ``public.ecr.aws/eks/aws-load-balancer-controller``); kubernetes-sigs/aws-load-balancer-controller tag v3.5.0
#: (commit 11eb202c97e4ae2ee45e0658c4cde9a4b59f33d4).
LOAD_BALANCER_CONTROLLER_APP_VERSION = "v3.5.0"
#: The service account the chart creates (values.yaml ``serviceAccount.name``; set, not generated).
LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller"
#: The controller's reference IAM policy, docs/install/iam_policy.json at tag v3.5.0 (installation.md: "If your
#: cluster is in any other region: curl -o iam-policy.json https://raw.githubusercontent.com/kubernetes-sigs/
#: aws-load-balancer-controller/v3.5.0/docs/install/iam_policy.json"), vendored unchanged as package data (git blob
#: 761d0e733c41089c91ea009dd29faf71918085e5, checked by tests/serving/test_serving_exposure.py).
IAM_POLICY_FILE = "aws_load_balancer_controller_iam_policy.json"
#: The IngressClass the chart creates (values.yaml ``ingressClass: alb``, ``createIngressClassResource: true``).
ALB_INGRESS_CLASS = "alb"
#: The ModelServer contract (issue 23): default namespace, the pod label every server's pods carry, vLLM's port.
DEFAULT_NAMESPACE = "fm-serving"
MODEL_SERVER_LABEL = "fmconstructs.io/model-server"
VLLM_PORT = 8000
#: vLLM's health route. docs.vllm.ai "vllm.entrypoints.api_server" shows ``@app.get("/health")``; the same route on
#: the OpenAI-compatible server (vllm/entrypoints/openai/api_server.py) at the pinned tag is UNCONFIRMED.
DEFAULT_HEALTH_CHECK_PATH = "/health"
#: The label LeaderWorkerSet puts on every pod of a group, "0" on the leader (kubernetes-sigs/lws v0.10.0
#: api/leaderworkerset/v1/leaderworkerset_types.go ``WorkerIndexLabelKey``;
#: pkg/controllers/leaderworkerset_controller.go selects leaders with ``WorkerIndexLabelKey: "0"``). Only the leader
#: of a multi-node vLLM server serves the API (LWS docs/examples/vllm/GPU/lws.yaml: its Service selects the leader).
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"

# Service annotations (docs/guide/service/annotations.md, v3.5.0): ``aws-load-balancer-type: external`` hands the
# Service to this controller, ``nlb-target-type: ip`` registers pod IPs, ``scheme`` internal|internet-facing (default
# internal), ``ssl-cert`` one or more ACM certificate ARNs, ``ssl-ports`` the TLS frontend ports (names or numbers),
# ``healthcheck-protocol``/``-path``/``-port`` the target group health check.
_SVC = "service.beta.kubernetes.io/aws-load-balancer-"
# Ingress annotations (docs/guide/ingress/annotations.md, v3.5.0): ``scheme``, ``target-type`` instance|ip,
# ``listen-ports`` (JSON list of {"HTTP": port} / {"HTTPS": port}), ``certificate-arn``, ``healthcheck-path``.
_ALB = "alb.ingress.kubernetes.io/"
_MAX_SERVER_NAME = 63 - len("-nlb")


class LoadBalancerScheme(str, Enum):
    """Where the load balancer answers (the controllers' ``scheme`` annotation values)."""

    INTERNAL = "internal"
    INTERNET_FACING = "internet-facing"


class LoadBalancerKind(str, Enum):
    """An NLB from a ``LoadBalancer`` Service (TCP/TLS) or an ALB from an Ingress (HTTP/HTTPS)."""

    NLB = "nlb"
    ALB = "alb"


def load_balancer_controller_policy() -> dict[str, Any]:
    """The vendored policy document (:data:`IAM_POLICY_FILE`), as the controller ships it."""
    text = resources.files(__package__).joinpath("data", IAM_POLICY_FILE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def load_balancer_controller_values(*, cluster_name: str, region: str, vpc_id: str) -> dict[str, Any]:
    """Values of the chart (keys from its values.yaml at 3.5.0): ``clusterName`` (required by installation.md's
    ``--set clusterName=``), ``region`` and ``vpcId`` (so the controller needs no IMDS: installation.md "Instead of
    depending on IMDSv2, you can specify the AWS Region ... and the AWS VPC"), the service account name."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "serviceAccount": {"create": True, "name": LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT},
    }


class AwsLoadBalancerController(Construct):
    """The AWS Load Balancer Controller on a GPU EKS cluster (one per cluster: :meth:`of`)."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        version: str | None = None,
        source: ChartSource | None = None,
    ) -> None:
        """
        :param cluster: the cluster (its system node group runs the controller's two replicas).
        :param version: the chart version; default :data:`LOAD_BALANCER_CONTROLLER` (3.5.0). Another version may need
            another IAM policy: the vendored one is v3.5.0's.
        :param source: where the chart and its image come from (private clusters: ``ChartSource.oci(...)
            .with_image("<account>.dkr.ecr.<region>.amazonaws.com/eks/aws-load-balancer-controller", tag="v3.5.0")``
            after copying ``public.ecr.aws/eks/aws-load-balancer-controller:v3.5.0``). Default: the public repository.
        """
        chosen = check_chart_inputs(cluster, version, source)
        super().__init__(scope, id)
        self.cluster = cluster
        self.role, self.pod_identity_association, before = pod_identity_role(
            self,
            "Controller",
            cluster=cluster,
            namespace=LOAD_BALANCER_CONTROLLER.namespace,
            service_account=LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT,
            description="AWS Load Balancer Controller (EKS Pod Identity, kube-system)",
        )
        self.policy = self._attach_policy()
        values = load_balancer_controller_values(
            cluster_name=cluster.cluster_name, region=Stack.of(self).region, vpc_id=cluster.vpc.vpc_id
        )
        # helm --wait: its webhooks must serve before Services and Ingresses are applied.
        self.chart: eks.HelmChart = cluster._chart(
            "AwsLoadBalancerController", LOAD_BALANCER_CONTROLLER.with_version(version), values, chosen, wait=True
        )
        self.chart.node.add_dependency(*before, self.policy)

    @classmethod
    def of(
        cls, cluster: GpuEksCluster, *, version: str | None = None, source: ChartSource | None = None
    ) -> AwsLoadBalancerController:
        """The cluster's controller, created (as the cluster's child ``AwsLoadBalancerController``) on first use."""
        return one_per_cluster(cls, cluster, "AwsLoadBalancerController", version=version, source=source)

    def _attach_policy(self) -> iam.Policy:
        document = load_balancer_controller_policy()
        policy = iam.Policy(self, "ControllerPolicy", document=iam.PolicyDocument.from_json(document))
        policy.attach_to_role(self.role)
        _nag.acknowledge_all(
            policy,
            policy_wildcard_findings(document),
            "the AWS Load Balancer Controller's own reference policy (docs/install/iam_policy.json at v3.5.0), used "
            "verbatim: it creates and tags load balancers, target groups and security groups whose names it "
            "generates, and its mutating calls are conditioned on the elbv2.k8s.aws/cluster tag it sets",
        )
        return policy


def policy_wildcard_findings(document: Mapping[str, Any]) -> list[str]:
    """The cdk-nag AwsSolutions-IAM5 findings of a literal policy document (wildcard actions and resources)."""
    findings: list[str] = []
    for statement in document["Statement"]:
        for key, kind in (("Action", "Action"), ("Resource", "Resource")):
            values = statement.get(key, [])
            for value in [values] if isinstance(values, str) else values:
                finding = f"{_nag.IAM5}[{kind}::{value}]"
                if "*" in value and finding not in findings:
                    findings.append(finding)
    return findings


def _check_common(server_name: object, namespace: object, service_port: object, health_check_path: object) -> None:
    check_name("server_name", server_name, label=True)
    check_name("namespace", namespace, label=True)
    if len(str(server_name)) > _MAX_SERVER_NAME:
        # Service names are DNS-1035 labels of at most 63 characters (Kubernetes "Object Names and IDs"); the NLB
        # Service is <server_name>-nlb.
        raise FmValidationError("server_name", server_name, f"at most {_MAX_SERVER_NAME} characters")
    check_count("service_port", service_port, minimum=1, maximum=65535)
    # The load balancer's health check path: botocore elbv2 Path (1-1024), an RFC 3986 absolute path.
    check_url_path("health_check_path", health_check_path, max_length=1024)


def _metadata(name: str, namespace: str, server_name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": server_name},
        "annotations": annotations,
    }


def nlb_service_manifest(
    *,
    server_name: str,
    namespace: str = DEFAULT_NAMESPACE,
    certificate: acm.ICertificate | None = None,
    scheme: LoadBalancerScheme = LoadBalancerScheme.INTERNAL,
    health_check_path: str = DEFAULT_HEALTH_CHECK_PATH,
    leaders_only: bool = False,
) -> dict[str, Any]:
    """A ``LoadBalancer`` Service ``<server_name>-nlb`` selecting the server's pods (``fmconstructs.io/model-server``;
    with ``leaders_only``, only LeaderWorkerSet leaders) and targeting their vLLM port by IP: port 443 (TLS,
    ``certificate``) or port 80 (TCP) to container port 8000."""
    _check_common(server_name, namespace, VLLM_PORT, health_check_path)
    check_enum("scheme", scheme, LoadBalancerScheme)
    selector = {MODEL_SERVER_LABEL: server_name}
    if check_bool("leaders_only", leaders_only):
        selector[LWS_WORKER_INDEX_LABEL] = "0"
    annotations = {
        f"{_SVC}type": "external",
        f"{_SVC}nlb-target-type": "ip",
        f"{_SVC}scheme": scheme.value,
        f"{_SVC}healthcheck-protocol": "http",
        f"{_SVC}healthcheck-path": health_check_path,
        f"{_SVC}healthcheck-port": "traffic-port",
    }
    port: dict[str, Any] = {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    if certificate is not None:
        check_construct("certificate", certificate, attribute="certificate_arn", expected="an acm.ICertificate")
        annotations[f"{_SVC}ssl-cert"] = certificate.certificate_arn
        annotations[f"{_SVC}ssl-ports"] = "https"
        port = {"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(f"{server_name}-nlb", namespace, server_name, annotations),
        "spec": {"type": "LoadBalancer", "selector": selector, "ports": [port]},
    }


def alb_ingress_manifest(
    *,
    server_name: str,
    namespace: str = DEFAULT_NAMESPACE,
    certificate: acm.ICertificate | None = None,
    scheme: LoadBalancerScheme = LoadBalancerScheme.INTERNAL,
    service_port: int = VLLM_PORT,
    health_check_path: str = DEFAULT_HEALTH_CHECK_PATH,
) -> dict[str, Any]:
    """An Ingress ``<server_name>`` (class ``alb``) routing every path to the server's Service ``<server_name>`` on
    ``service_port``, pod IPs as targets; HTTPS on 443 with ``certificate``, else HTTP on 80."""
    _check_common(server_name, namespace, service_port, health_check_path)
    check_enum("scheme", scheme, LoadBalancerScheme)
    annotations = {
        f"{_ALB}scheme": scheme.value,
        f"{_ALB}target-type": "ip",
        f"{_ALB}healthcheck-path": health_check_path,
        f"{_ALB}listen-ports": json.dumps([{"HTTP": 80}], separators=(",", ":")),
    }
    if certificate is not None:
        check_construct("certificate", certificate, attribute="certificate_arn", expected="an acm.ICertificate")
        annotations[f"{_ALB}certificate-arn"] = certificate.certificate_arn
        annotations[f"{_ALB}listen-ports"] = json.dumps([{"HTTPS": 443}], separators=(",", ":"))
    backend = {"service": {"name": server_name, "port": {"number": service_port}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _metadata(server_name, namespace, server_name, annotations),
        "spec": {
            "ingressClassName": ALB_INGRESS_CLASS,
            "rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}],
        },
    }


class ModelServerEndpoint(Construct):
    """A load balancer in front of one model server's pods (internal unless ``allow_internet_facing``)."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        server_name: str,
        namespace: str = DEFAULT_NAMESPACE,
        kind: LoadBalancerKind = LoadBalancerKind.NLB,
        certificate: acm.ICertificate | None = None,
        scheme: LoadBalancerScheme = LoadBalancerScheme.INTERNAL,
        allow_internet_facing: bool = False,
        service_port: int = VLLM_PORT,
        health_check_path: str = DEFAULT_HEALTH_CHECK_PATH,
        leaders_only: bool = False,
        controller: AwsLoadBalancerController | None = None,
    ) -> None:
        """
        :param cluster: the cluster the server runs on.
        :param server_name: the ModelServer's name (its pods carry ``fmconstructs.io/model-server: <name>``; its
            Service is ``<name>``).
        :param namespace: default ``fm-serving``. The namespace must exist first: make :attr:`manifest` depend on the
            construct that creates it.
        :param kind: NLB (a ``<name>-nlb`` Service, TCP/TLS) or ALB (an Ingress to the ``<name>`` Service). Default NLB.
        :param certificate: an ACM certificate: TLS on port 443 (NLB TLS listener, ALB HTTPS listener). Default: none
            (plain TCP/HTTP on port 80 inside the VPC).
        :param scheme: default INTERNAL. INTERNET_FACING needs ``allow_internet_facing=True`` and warns.
        :param allow_internet_facing: the explicit opt-in for a public endpoint. Default False.
        :param service_port: the port of the ``<name>`` Service (ALB only). Default 8000.
        :param health_check_path: the target group health check. Default ``/health``.
        :param leaders_only: NLB only: select the leader pods of a LeaderWorkerSet server (worker index 0), the only
            ones serving the API. Default False (a single-node server: every pod serves). The ALB routes to the
            ``<name>`` Service, whose selector the ModelServer sets.
        :param controller: default: the cluster's (:meth:`AwsLoadBalancerController.of`).
        """
        check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
        check_enum("kind", kind, LoadBalancerKind)
        check_enum("scheme", scheme, LoadBalancerScheme)
        rules.internet_facing_needs_the_opt_in(
            scheme=scheme.value,
            internet_facing=scheme is LoadBalancerScheme.INTERNET_FACING,
            allow_internet_facing=check_bool("allow_internet_facing", allow_internet_facing),
        )
        if controller is not None:
            check_instance("controller", controller, AwsLoadBalancerController, "an AwsLoadBalancerController")
        if kind is LoadBalancerKind.NLB:
            body = nlb_service_manifest(
                server_name=server_name, namespace=namespace, certificate=certificate, scheme=scheme,
                health_check_path=health_check_path, leaders_only=leaders_only,
            )  # fmt: skip
        else:
            body = alb_ingress_manifest(
                server_name=server_name, namespace=namespace, certificate=certificate, scheme=scheme,
                service_port=service_port, health_check_path=health_check_path,
            )  # fmt: skip
        super().__init__(scope, id)
        self.controller = controller or AwsLoadBalancerController.of(cluster)
        self.kind = kind
        self.scheme = scheme
        self.manifest_body = body
        self.manifest = eks.KubernetesManifest(self, "Manifest", cluster=cluster.icluster, manifest=[body])
        self.manifest.node.add_dependency(self.controller.chart)
        warn(
            self,
            rules.an_internet_facing_endpoint_is_open_to_all(
                server_name=server_name, kind=kind.name, internet_facing=scheme is LoadBalancerScheme.INTERNET_FACING
            ),
        )
