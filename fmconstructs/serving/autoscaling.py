"""Autoscaling of a model server on vLLM's queue, read from the Amazon Managed Service for Prometheus workspace.

Choice: KEDA (chart ``kedacore/keda`` :data:`KEDA`) with its ``prometheus`` scaler, not the HPA with a metrics adapter.
Why: the scaler signs its queries to AMP with SigV4 itself (``awsRegion`` trigger metadata and a
``TriggerAuthentication`` with ``podIdentity.provider: aws``: keda-docs content/docs/2.20/scalers/prometheus.md,
"Example: Amazon Managed Service for Prometheus (AMP)"), whereas prometheus-adapter has no SigV4 and needs a signing
proxy in front of the workspace; KEDA also scales to zero (``minReplicaCount: 0`` with an ``activationThreshold``,
keda-docs concepts/scaling-deployments.md "Activating and Scaling thresholds"), which the HPA cannot without the
``HPAScaleToZero`` alpha gate.

Credentials: EKS Pod Identity on the ``keda-operator`` service account (chart values ``serviceAccount.operator.name:
keda-operator``). With ``provider: aws`` and no ``roleArn``, KEDA v2.20.2 loads the AWS SDK's default configuration
(pkg/scalers/aws/aws_config_cache.go ``GetCredentials``: ``config.LoadDefaultConfig`` and no credential override when
``UsingPodIdentity`` has no role ARN), whose default chain reads the Pod Identity agent's container credentials; the
prometheus scaler wraps its HTTP client in ``aws.NewSigV4RoundTripper`` when ``awsRegion`` is set
(pkg/scalers/prometheus_scaler.go at v2.20.2). The operator's role may only ``aps:QueryMetrics`` on the workspaces
granted (:meth:`KedaAutoscaling.grant_query`; AMP API reference "QueryMetrics").

Scaling: KEDA builds an HPA whose external metric is the query's value with metric type ``AverageValue`` (the
default, keda-docs reference/scaledobject-spec.md "triggers": ``metricType`` default ``AverageValue``), so
``threshold`` is the number of waiting (or running) requests per replica the server should carry. Targets are a
``Deployment`` or a ``LeaderWorkerSet`` (``leaderworkerset.x-k8s.io/v1``), whose CRD has the scale subresource
(kubernetes-sigs/lws v0.10.0 config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml ``subresources.scale``:
``specReplicasPath: .spec.replicas``, ``labelSelectorPath: .status.hpaPodSelector``); KEDA scales any resource with
``/scale`` given its ``apiVersion`` and ``kind`` (scaledobject-spec.md "scaleTargetRef").

Metric names: ``vllm:num_requests_waiting`` and ``vllm:num_requests_running`` (gauges of vLLM's Prometheus logger,
vllm/v1/metrics/loggers.py ``PrometheusStatLogger``; seen in vLLM's code and design docs docs/design/v1/metrics.md,
UNCONFIRMED against the exact tag ModelServer pins: the snapshot was too large to fetch). The series carry
``namespace`` and ``model_server`` from the ``fm-serving`` scrape job (issue 23 contract).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, ClassVar

from aws_cdk import Arn, ArnFormat, Aws, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .._rules import warn
from .._validate import check_bool, check_count, check_enum, check_instance, check_number, check_str, located
from ..eks import GpuEksCluster
from ..eks.addons import ChartSource, HelmChartPin
from ..eks.manifests import check_name
from ..eks.metrics_consumers import warn_without_scraper
from ..errors import FmTypeError, FmValidationError, WarningId
from ..observability._checks import check_aps_workspace_arn
from ..observability.workspace import PrometheusWorkspace
from . import rules
from ._cluster_addon import check_chart_inputs, one_per_cluster
from ._pod_identity import pod_identity_role
from .exposure import DEFAULT_NAMESPACE

#: KEDA from kedacore/charts: tag v2.20.2 (commit cbb9bb8ce0809dc9048f72302f7c09765d66ed56) keda/Chart.yaml
#: ``version: 2.20.2``, ``appVersion: 2.20.2`` (image ``ghcr.io/kedacore/keda``, values.yaml ``image.keda``); Helm
#: repository from the charts README (``helm repo add kedacore https://kedacore.github.io/charts``). The CRDs come
#: with the chart (``crds.install``); kedacore/keda tag v2.20.2 is commit 68a5b5028f35b22d50597c69819ab32c4e92f21a.
KEDA = HelmChartPin(
    chart="keda",
    repository="https://kedacore.github.io/charts",
    version="2.20.2",
    namespace="keda",
    release="keda",
)
KEDA_APP_VERSION = "2.20.2"
#: values.yaml ``serviceAccount.operator.name`` (the operator runs the scalers).
KEDA_OPERATOR_SERVICE_ACCOUNT = "keda-operator"
#: The AMP action behind ``/workspaces/<id>/api/v1/query`` (AMP API reference "QueryMetrics"; see
#: :attr:`fmconstructs.observability.workspace.PrometheusWorkspace.query_url`).
QUERY_ACTION = "aps:QueryMetrics"
KEDA_API_VERSION = "keda.sh/v1alpha1"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
#: The pod label and scrape-job label of the issue-23 contract.
MODEL_SERVER_SERIES_LABEL = "model_server"
# A Prometheus label value inside double quotes: no quote, backslash or newline (so no escaping is needed).
_LABEL_VALUE = re.compile(r'[^"\\\n]*')


class ServingMetric(str, Enum):
    """vLLM gauges a server scales on (summed over its pods)."""

    #: requests queued in the scheduler (vllm:num_requests_waiting)
    REQUESTS_WAITING = "vllm:num_requests_waiting"
    #: requests in the running batches (vllm:num_requests_running)
    REQUESTS_RUNNING = "vllm:num_requests_running"


class ScaleTargetKind(str, Enum):
    """What a model server runs as: one Deployment (single node) or one LeaderWorkerSet (multi-node groups)."""

    DEPLOYMENT = "Deployment"
    LEADER_WORKER_SET = "LeaderWorkerSet"


def serving_query(*, server_name: str, namespace: str, metric: ServingMetric, cluster_label: str | None = None) -> str:
    """``sum(<metric>{namespace="<ns>",model_server="<name>"[,cluster="<label>"]})``."""
    check_name("server_name", server_name, label=True)
    check_name("namespace", namespace, label=True)
    check_enum("metric", metric, ServingMetric)
    matchers = [f'namespace="{namespace}"', f'{MODEL_SERVER_SERIES_LABEL}="{server_name}"']
    if cluster_label is not None:
        check_str("cluster_label", cluster_label, min_length=1, pattern=_LABEL_VALUE, allowed="a label value")
        matchers.append(f'cluster="{cluster_label}"')
    return f"sum({metric.value}{{{','.join(matchers)}}})"


def workspace_server_address(workspace_arn: str) -> str:
    """``https://aps-workspaces.<region>.<suffix>/workspaces/<id>`` (the KEDA AMP example's ``serverAddress``; KEDA
    appends ``/api/v1/query``), from the workspace ARN (a token is split at deploy time)."""
    parts = Arn.split(workspace_arn, ArnFormat.SLASH_RESOURCE_NAME)
    return f"https://aps-workspaces.{parts.region}.{Aws.URL_SUFFIX}/workspaces/{parts.resource_name}"


def workspace_region(workspace_arn: str) -> str:
    region = Arn.split(workspace_arn, ArnFormat.SLASH_RESOURCE_NAME).region
    assert region is not None  # an APS workspace ARN always names its Region
    return region


def trigger_authentication_manifest(*, name: str, namespace: str) -> dict[str, Any]:
    """A TriggerAuthentication with ``podIdentity.provider: aws`` and no role: the operator's own (Pod Identity)."""
    check_name("name", name)
    check_name("namespace", namespace, label=True)
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podIdentity": {"provider": "aws"}},
    }


def _check_replicas(min_replicas: object, max_replicas: object, scale_to_zero: object) -> None:
    check_count("max_replicas", max_replicas, minimum=1)
    zero = check_bool("scale_to_zero", scale_to_zero)
    check_count("min_replicas", min_replicas, minimum=0 if zero else 1)
    rules.scale_to_zero_starts_at_zero(scale_to_zero=zero, min_replicas=min_replicas)
    rules.min_replicas_at_most_max_replicas(min_replicas=min_replicas, max_replicas=max_replicas)


def _number(value: float) -> str:
    """KEDA takes thresholds as strings ('100.50'); whole numbers without a trailing '.0'."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def scaled_object_manifest(
    *,
    server_name: str,
    namespace: str,
    target_kind: ScaleTargetKind,
    server_address: str,
    aws_region: str,
    authentication: str,
    metric: ServingMetric = ServingMetric.REQUESTS_WAITING,
    threshold: float = 5,
    activation_threshold: float = 0,
    min_replicas: int = 1,
    max_replicas: int = 2,
    scale_to_zero: bool = False,
    wake_query: str | None = None,
    cluster_label: str | None = None,
    polling_interval_seconds: int = 30,
    cooldown_period_seconds: int = 300,
) -> dict[str, Any]:
    """A ScaledObject ``<server_name>`` scaling the Deployment or LeaderWorkerSet ``<server_name>`` on ``metric``.

    ``threshold``: the metric's value per replica (> 0; the default 5 waiting requests per replica is fmconstructs'
    starting point, not a sourced figure: tune it to the latency target); ``activation_threshold`` (>= 0): above it
    a server at zero replicas scales up (only used with ``scale_to_zero``); ``wake_query``: a second trigger whose
    series exist while the server is at zero. The defaults of ``pollingInterval`` (30 s) and ``cooldownPeriod``
    (300 s) are KEDA's (scaledobject-spec.md)."""
    check_enum("target_kind", target_kind, ScaleTargetKind)
    check_number("threshold", threshold, minimum=0, exclusive_minimum=True)
    check_number("activation_threshold", activation_threshold, minimum=0)
    _check_replicas(min_replicas, max_replicas, scale_to_zero)
    check_count("polling_interval_seconds", polling_interval_seconds, minimum=1)
    check_count("cooldown_period_seconds", cooldown_period_seconds, minimum=0)
    check_name("authentication", authentication)
    check_str("server_address", server_address, min_length=1, allowed="the workspace URL https://aps-workspaces...")
    check_str("aws_region", aws_region, min_length=1, allowed="the workspace's Region")
    if wake_query is not None:
        check_str("wake_query", wake_query, min_length=1, allowed="a PromQL query returning one value")
    metadata = {
        "serverAddress": server_address,
        "awsRegion": aws_region,
        "query": serving_query(
            server_name=server_name, namespace=namespace, metric=metric, cluster_label=cluster_label
        ),
        "threshold": _number(threshold),
        "activationThreshold": _number(activation_threshold),
    }
    triggers = [_trigger(metadata, authentication, "vllm")]
    if wake_query is not None:
        triggers.append(_trigger({**metadata, "query": wake_query}, authentication, "wake"))
    target: dict[str, str] = {"name": server_name}
    if target_kind is ScaleTargetKind.LEADER_WORKER_SET:
        target = {"apiVersion": LWS_API_VERSION, "kind": target_kind.value, "name": server_name}
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "ScaledObject",
        "metadata": {
            "name": server_name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/instance": server_name},
        },
        "spec": {
            "scaleTargetRef": target,
            "minReplicaCount": min_replicas,
            "maxReplicaCount": max_replicas,
            "pollingInterval": polling_interval_seconds,
            "cooldownPeriod": cooldown_period_seconds,
            "triggers": triggers,
        },
    }


def _trigger(metadata: dict[str, str], authentication: str, name: str) -> dict[str, Any]:
    return {
        "type": "prometheus",
        "name": name,
        "metadata": dict(metadata),
        "authenticationRef": {"name": authentication},
    }


class KedaAutoscaling(Construct):
    """KEDA on a GPU EKS cluster; its operator may query the AMP workspaces granted (one per cluster: :meth:`of`)."""

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
        :param cluster: the cluster (KEDA runs on its system node group).
        :param version: the chart version; default :data:`KEDA` (2.20.2).
        :param source: where the chart and its images come from; KEDA's values take ``image.keda``,
            ``image.metricsApiServer`` and ``image.webhooks`` (``registry``/``repository``/``tag``, values.yaml), so
            mirror them with ``ChartSource.oci(...).with_values({"image": {...}})``. Default: the public repository.
        """
        chosen = check_chart_inputs(cluster, version, source)
        if chosen is not None and chosen.image_repository is not None:
            raise FmValidationError(
                "source",
                chosen.image_repository,
                "a ChartSource without with_image (KEDA has three images: with_values)",
            )
        super().__init__(scope, id)
        self.cluster = cluster
        self.role, self.pod_identity_association, before = pod_identity_role(
            self,
            "Operator",
            cluster=cluster,
            namespace=KEDA.namespace,
            service_account=KEDA_OPERATOR_SERVICE_ACCOUNT,
            description="KEDA operator: Prometheus queries to AMP (EKS Pod Identity, keda namespace)",
        )
        self.policy = iam.Policy(self, "OperatorPolicy", roles=[self.role])
        self._granted: set[str] = set()
        values = {"serviceAccount": {"operator": {"create": True, "name": KEDA_OPERATOR_SERVICE_ACCOUNT}}}
        # helm --wait: KEDA's admission webhook validates ScaledObjects, and its CRDs come with the chart.
        self.chart: eks.HelmChart = cluster._chart("Keda", KEDA.with_version(version), values, chosen, wait=True)
        self.chart.node.add_dependency(*before)

    @classmethod
    def of(cls, cluster: GpuEksCluster) -> KedaAutoscaling:
        """The cluster's KEDA, created (as the cluster's child ``Keda``) on first use."""
        return one_per_cluster(cls, cluster, "Keda")

    def grant_query(self, workspace_arn: str) -> None:
        """Let the operator run ``aps:QueryMetrics`` on this workspace (once per workspace)."""
        key = Stack.of(self).resolve(workspace_arn)
        key_text = str(key)
        if key_text in self._granted:
            return
        self._granted.add(key_text)
        self.policy.add_statements(iam.PolicyStatement(actions=[QUERY_ACTION], resources=[workspace_arn]))


def check_workspace(parameter: str, workspace: object) -> str:
    """A :class:`PrometheusWorkspace` or a workspace ARN -> the ARN."""
    if isinstance(workspace, PrometheusWorkspace):
        return workspace.workspace_arn
    if isinstance(workspace, str):
        arn: str = check_aps_workspace_arn(parameter, workspace)
        return arn
    raise FmTypeError(
        parameter, workspace, f"a PrometheusWorkspace or a workspace ARN (got a {type(workspace).__name__})"
    )


@dataclass(frozen=True)
class _Props:
    """The keyword arguments of :class:`ModelServerAutoscaler` as given; all but the construct's own (cluster,
    workspace, keda) are :func:`scaled_object_manifest` keywords of the same name."""

    cluster: GpuEksCluster
    server_name: str
    workspace: PrometheusWorkspace | str
    namespace: str
    target_kind: ScaleTargetKind
    metric: ServingMetric
    threshold: float
    min_replicas: int
    max_replicas: int
    scale_to_zero: bool
    activation_threshold: float
    wake_query: str | None
    cluster_label: str | None
    polling_interval_seconds: int
    cooldown_period_seconds: int
    keda: KedaAutoscaling | None

    #: The fields that are the construct's own (not keywords of :func:`scaled_object_manifest`).
    OWN: ClassVar[frozenset[str]] = frozenset({"cluster", "workspace", "keda"})

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Props:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{item.name: arguments[item.name] for item in fields(cls)})

    def manifest_keywords(self) -> dict[str, Any]:
        """The props :func:`scaled_object_manifest` takes, by name (not copied, unlike ``dataclasses.asdict``)."""
        return {item.name: getattr(self, item.name) for item in fields(self) if item.name not in self.OWN}


class ModelServerAutoscaler(Construct):
    """KEDA scaling of one model server on its vLLM queue in the AMP workspace the ``fm-serving`` job writes to."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        server_name: str,
        workspace: PrometheusWorkspace | str,
        namespace: str = DEFAULT_NAMESPACE,
        target_kind: ScaleTargetKind = ScaleTargetKind.DEPLOYMENT,
        metric: ServingMetric = ServingMetric.REQUESTS_WAITING,
        threshold: float = 5,
        min_replicas: int = 1,
        max_replicas: int = 2,
        scale_to_zero: bool = False,
        activation_threshold: float = 0,
        wake_query: str | None = None,
        cluster_label: str | None = None,
        polling_interval_seconds: int = 30,
        cooldown_period_seconds: int = 300,
        keda: KedaAutoscaling | None = None,
    ) -> None:
        """
        :param cluster: the cluster the server runs on.
        :param server_name: the ModelServer's name: its Deployment or LeaderWorkerSet and the ``model_server`` label
            of its series.
        :param workspace: the AMP workspace the managed scraper writes to (a PrometheusWorkspace or its ARN); the KEDA
            operator may query it (``aps:QueryMetrics`` on that workspace only).
        :param namespace: default ``fm-serving``; must exist first (make :attr:`manifest` depend on its creator).
        :param target_kind: DEPLOYMENT (single node) or LEADER_WORKER_SET (multi-node). Default DEPLOYMENT.
        :param metric: default REQUESTS_WAITING.
        :param threshold: the metric's value per replica (KEDA AverageValue target), > 0. Default 5.
        :param min_replicas: default 1 (0 only with ``scale_to_zero``).
        :param max_replicas: default 2. Each replica is a whole GPU node (or LWS group): size it to the capacity.
        :param scale_to_zero: ``minReplicaCount: 0``. vLLM's series vanish with the last pod, so without
            ``wake_query`` nothing scales the server up again: that combination warns
            ``fmconstructs:serving-scale-to-zero-without-wake``. Default False.
        :param activation_threshold: at zero replicas, scale up when a trigger's value exceeds it (>= 0). Default 0.
        :param wake_query: a PromQL query whose series exist while the server is at zero (e.g. a gateway's request
            rate); a second trigger with the same threshold. Default: none.
        :param cluster_label: also match ``cluster="<label>"`` (a workspace shared by clusters). Default: none.
        :param polling_interval_seconds: default 30 (KEDA's). :param cooldown_period_seconds: default 300 (KEDA's).
        :param keda: default: the cluster's (:meth:`KedaAutoscaling.of`).
        """
        props = _Props.of(locals())
        check_instance("cluster", cluster, GpuEksCluster, "a GpuEksCluster")
        workspace_arn = check_workspace("workspace", workspace)
        if keda is not None:
            check_instance("keda", keda, KedaAutoscaling, "a KedaAutoscaling")
        authentication = f"{server_name}-amp" if isinstance(server_name, str) else ""
        body = [
            scaled_object_manifest(
                **props.manifest_keywords(),
                server_address=workspace_server_address(workspace_arn),
                aws_region=workspace_region(workspace_arn),
                authentication=authentication,
            ),
        ]
        body.insert(0, trigger_authentication_manifest(name=authentication, namespace=namespace))
        super().__init__(scope, id)
        self.keda = keda or KedaAutoscaling.of(cluster)
        self.keda.grant_query(workspace_arn)
        self.manifest_body = body
        self.manifest = eks.KubernetesManifest(self, "Manifest", cluster=cluster.icluster, manifest=body)
        self.manifest.node.add_dependency(self.keda.chart)
        self._warn(props)

    def _warn(self, props: _Props) -> None:
        """What would leave the server unscaled: no scraper collecting serving metrics, scale to zero without wake."""
        warn_without_scraper(
            self,
            props.cluster,
            warning=WarningId.SERVING_AUTOSCALER_WITHOUT_SCRAPER,
            message=(
                f"ModelServerAutoscaler {props.server_name!r} scales on vLLM series in the workspace, but no "
                "AmpEksScraper(serving=True) collects this cluster's serving metrics: the server would never "
                "scale. Add one (or enable_serving() on the cluster's scraper)."
            ),
            serving=True,
        )
        warn(
            self,
            rules.scale_to_zero_needs_a_wake_query(
                server_name=props.server_name,
                metric=props.metric.value,
                scale_to_zero=props.scale_to_zero,
                wake_query=props.wake_query,
            ),
        )
