"""Karpenter on a :class:`~fmconstructs.eks.cluster.GpuEksCluster`: elastic GPU NodePools for serving and training.

Generic (``fmconstructs.eks``, not ``fmconstructs.serving``): model servers (issue 23) and elastic training pools
(issue 24 section 4) use the same install. ``GpuEksCluster.add_karpenter(...)`` adds :class:`Karpenter`, then
:meth:`Karpenter.add_gpu_node_pool` adds an ``EC2NodeClass`` + ``NodePool`` pair
(:mod:`fmconstructs.eks.karpenter_manifests`, which also answers whether Karpenter can launch the multi-EFA layouts).

What is installed, from Karpenter's "Getting Started with Karpenter" at v1.14 (aws/karpenter-provider-aws
``website/content/en/v1.14/getting-started/getting-started-with-karpenter``: ``_index.md``, ``scripts/step02-create-
cluster.sh``, ``scripts/step08-apply-helm-chart.sh`` and ``cloudformation.yaml``, commit 1d927085 "docs: update for
patch release v1.14.1"):

- The chart ``oci://public.ecr.aws/karpenter/karpenter`` version 1.14.1 (:data:`KARPENTER`) in ``kube-system``
  (``KARPENTER_NAMESPACE="kube-system"``), with ``settings.clusterName``, ``settings.interruptionQueue`` and the
  controller's 1 CPU / 1 Gi requests and limits, as step08 sets them (values keys checked in tests against the
  chart's values.yaml at tag v1.14.1). The controller keeps the chart's affinity (not on Karpenter nodes), so it runs
  on the cluster's system node group.
- The controller role through EKS Pod Identity (step02: ``podIdentityAssociations`` for service account
  ``karpenter`` in the Karpenter namespace, and the ``eks-pod-identity-agent`` add-on), with the six policies of
  ``cloudformation.yaml`` (:mod:`fmconstructs.eks.karpenter_iam`, scoped to this cluster's tags as upstream).
- The node role (cloudformation.yaml ``KarpenterNodeRole``: trusted by EC2) with the cluster's node policies
  (:data:`~fmconstructs.eks.cluster.NODE_ROLE_MANAGED_POLICIES`). Upstream also attaches ``AmazonEKS_CNI_Policy``
  (here the VPC CNI has its own Pod Identity role, :mod:`fmconstructs.eks.vpc_cni`) and
  ``AmazonSSMManagedInstanceCore`` (not attached, as on the library's node groups; pass ``node_role`` to use another).
- An EKS access entry of type ``EC2_LINUX`` for the node role (EKS API CreateAccessEntry ``type``: "If the
  principalArn is for an IAM role that's used for self-managed Amazon EC2 nodes, specify EC2_LINUX"; Karpenter's own
  e2e environment creates exactly that, test/pkg/environment/aws/expectations.go). The Getting Started still maps the
  role in ``aws-auth``; access entries are the EKS API's replacement and what ``GpuEksCluster`` uses.
- The interruption queue: SQS, 300 s retention, SQS-managed encryption (``KarpenterInterruptionQueue``), TLS only
  (``DenyHTTP``), and the five EventBridge rules of cloudformation.yaml (AWS Health events, spot interruption
  warnings, rebalance recommendations, instance state changes, capacity reservation interruption warnings) targeting
  it. The queue policy lets ``events.amazonaws.com`` send only from these rules (``aws:SourceArn``, aws-cdk-lib's SQS
  target); upstream's statement allows ``events.amazonaws.com`` and ``sqs.amazonaws.com`` without a source condition.

Private clusters: ``source=ChartSource.oci("oci://<account>.dkr.ecr.<region>.amazonaws.com/<path>/karpenter")
.with_image("<account>.dkr.ecr.<region>.amazonaws.com/karpenter/controller")`` pulls the chart and the controller
image from ECR (``controller.image`` in the chart; the digest pin is cleared, the tag defaults to 1.14.1). VPCs
without internet access: ``isolated_vpc=True`` (``settings.isolatedVPC`` and an instance profile made here, see
:class:`Karpenter`), plus the interface endpoints Getting Started "Private Clusters" lists (ec2, ecr.api, ecr.dkr, s3,
sts, ssm, sqs, eks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from aws_cdk import Duration
from aws_cdk import aws_eks as eks_l1
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .. import _nag
from .._validate import check_bool, check_construct, located
from ..errors import FmTypeError
from . import _node_pools
from . import addons as _addons
from . import karpenter_iam as _iam
from . import karpenter_manifests as _manifests
from ._node_pools import GpuNodePoolOptions
from .vpc_cni import POD_IDENTITY_PRINCIPAL

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

__all__ = ["KARPENTER", "KARPENTER_IMAGE_REPOSITORY", "Karpenter", "karpenter_values"]

#: Karpenter 1.14.1: the newest release tag of aws/karpenter-provider-aws in the fetched snapshot (tag v1.14.1,
#: commit bde00654cd316fddb3dccfba3f5ac07039865429; charts/karpenter/Chart.yaml ``version: 1.14.1`` after the release
#: commit 1d927085). Getting Started installs ``helm upgrade --install karpenter oci://public.ecr.aws/karpenter/
#: karpenter --version "${KARPENTER_VERSION}" --namespace "${KARPENTER_NAMESPACE}"`` (step08) with
#: ``KARPENTER_VERSION="1.14.1"`` and ``KARPENTER_NAMESPACE="kube-system"`` (_index.md at v1.14). The public ECR
#: registry needs no login (step08 logs out of it for an unauthenticated pull); the kubectl handler pulls a non-ECR
#: ``oci://`` chart without one.
KARPENTER = _addons.HelmChartPin(
    chart="karpenter",
    repository="oci://public.ecr.aws/karpenter/karpenter",
    version="1.14.1",  # charts/karpenter/Chart.yaml at tag v1.14.1; Getting Started KARPENTER_VERSION (see above)
    namespace="kube-system",
    release="karpenter",
)
#: The controller image (charts/karpenter/values.yaml ``controller.image.repository``; hack/release/common.sh sets
#: its tag and digest when it publishes the chart).
KARPENTER_IMAGE_REPOSITORY = "public.ecr.aws/karpenter/controller"
#: The controller's service account: ``karpenter.serviceAccountName`` is the chart's fullname, the release name
#: ``karpenter`` (charts/karpenter/templates/_helpers.tpl); set explicitly in the values.
SERVICE_ACCOUNT = "karpenter"
#: step08-apply-helm-chart.sh: ``controller.resources.requests/limits`` cpu=1, memory=1Gi.
_CONTROLLER_RESOURCES = {"cpu": "1", "memory": "1Gi"}
#: cloudformation.yaml ``KarpenterInterruptionQueue``: ``MessageRetentionPeriod: 300``.
INTERRUPTION_QUEUE_RETENTION_SECONDS = 300
#: cloudformation.yaml's EventBridge rules: rule id -> (source, detail-type).
INTERRUPTION_RULES: dict[str, tuple[str, str]] = {
    "ScheduledChangeRule": ("aws.health", "AWS Health Event"),
    "SpotInterruptionRule": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "RebalanceRule": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "InstanceStateChangeRule": ("aws.ec2", "EC2 Instance State-change Notification"),
    "CapacityReservationInterruptionRule": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def karpenter_values(
    *,
    cluster_name: str,
    interruption_queue_name: str,
    source: _addons.ChartSource | None = None,
    isolated_vpc: bool = False,
) -> dict[str, Any]:
    """Helm values for the Karpenter chart (keys of charts/karpenter/values.yaml at v1.14.1); ``isolated_vpc`` sets
    ``settings.isolatedVPC`` (Getting Started "Private Clusters": ``--set settings.isolatedVPC=true``; reference/
    settings.md ``ISOLATED_VPC``: "assume we can't reach AWS services which don't have a VPC endpoint", no pricing
    API look-ups)."""
    check_bool("isolated_vpc", isolated_vpc)
    controller: dict[str, Any] = {
        "resources": {"requests": dict(_CONTROLLER_RESOURCES), "limits": dict(_CONTROLLER_RESOURCES)}
    }
    if source is not None and source.image_repository is not None:
        # The published chart pins the image by digest (controller.image.digest); a mirror re-tags, so clear it.
        controller["image"] = {
            "repository": source.image_repository,
            "tag": source.image_tag or KARPENTER.version,
            "digest": "",
        }
    return {
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue_name,
            **({"isolatedVPC": True} if isolated_vpc else {}),
        },
        "controller": controller,
    }


class KarpenterGpuNodePoolOptions(GpuNodePoolOptions, total=False):
    """The options of :meth:`Karpenter.add_gpu_node_pool`: :class:`~fmconstructs.eks._node_pools.GpuNodePoolOptions`
    and these (the ``EC2NodeClass``'s and the pool's weight; see
    :func:`~fmconstructs.eks.karpenter_manifests.ec2_node_class_manifest`).

    :var ami_version: ``latest`` (default) or an amazon-eks-ami release tag (``v20240807``) to pin.
    :var root_volume_size_gib: encrypted gp3 root volume. Default: 200.
    :var imds_hop_limit: IMDSv2 hop limit, 1 (default) to 64 (containers need 2).
    :var weight: the pool's priority among pools (1-100). Default: none.
    """

    ami_version: str
    root_volume_size_gib: int
    imds_hop_limit: int
    weight: int | None


class Karpenter(Construct):
    """Karpenter 1.14.1 on ``cluster``: controller (Pod Identity), node role and access entry, interruption queue.
    Use :meth:`GpuEksCluster.add_karpenter`; add pools with :meth:`add_gpu_node_pool`."""

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        version: str | None = None,
        source: _addons.ChartSource | None = None,
        node_role: iam.IRole | None = None,
        isolated_vpc: bool = False,
    ) -> None:
        """
        :param version: the chart version (default :data:`KARPENTER`'s 1.14.1; the IAM policies and CRDs are those
            of 1.14: read the upgrade guide before moving).
        :param source: where the chart and controller image come from (see the module docstring).
        :param node_role: the role of Karpenter's nodes. Default: a new role (EC2 principal, the node policies).
            Not the cluster's node role: managed node groups already hold its access entry.
        :param isolated_vpc: for VPCs without internet access: ``settings.isolatedVPC`` and an instance profile made
            here for the node role (node classes name it in ``spec.instanceProfile``), because "there is currently no
            VPC private endpoint for the IAM API. As a result, you cannot use the default ``spec.role`` field"
            (Getting Started "Private Clusters", v1.14). Default False (upstream's default: Karpenter manages the
            instance profiles).
        """
        super().__init__(scope, id)
        from .cluster import GpuEksCluster

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        _addons.check_version("version", version)
        _addons.check_chart_source("source", source)
        if node_role is not None:
            check_construct("node_role", node_role, attribute="role_arn", expected="an iam.IRole")
        check_bool("isolated_vpc", isolated_vpc)
        self.cluster: GpuEksCluster = cluster
        self.pin = KARPENTER.with_version(version)
        self.isolated_vpc = isolated_vpc
        self.interruption_queue = self._interruption_queue()
        self.node_role: iam.IRole = node_role or self._node_role()
        self.node_access_entry = _node_pools.node_access_entry(
            self, cluster, self.node_role, entry_type=eks.AccessEntryType.EC2_LINUX
        )
        #: The node role's instance profile when ``isolated_vpc`` (else Karpenter makes them).
        self.instance_profile: iam.CfnInstanceProfile | None = (
            iam.CfnInstanceProfile(self, "NodeInstanceProfile", roles=[self.node_role.role_name])
            if isolated_vpc
            else None
        )
        self.controller_role = self._controller_role()
        self.chart = self._install(source)
        self.node_pools: dict[str, eks.KubernetesManifest] = {}
        #: The instance types of each NodePool (what a model server on the pool checks against).
        self.node_pool_instance_types: dict[str, tuple[str, ...]] = {}
        self._acknowledge(own_node_role=node_role is None)

    # --- build steps ------------------------------------------------------------------------------------------
    def _interruption_queue(self) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            "InterruptionQueue",
            retention_period=Duration.seconds(INTERRUPTION_QUEUE_RETENTION_SECONDS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        for rule_id, (source, detail_type) in INTERRUPTION_RULES.items():
            events.Rule(
                self,
                rule_id,
                event_pattern=events.EventPattern(source=[source], detail_type=[detail_type]),
                targets=[targets.SqsQueue(queue)],
            )
        return queue

    def _node_role(self) -> iam.Role:
        from .cluster import NODE_ROLE_MANAGED_POLICIES

        return _node_pools.node_role(
            self,
            description="Nodes that Karpenter launches for the fmconstructs GPU cluster",
            managed_policies=NODE_ROLE_MANAGED_POLICIES,
        )

    def _controller_role(self) -> iam.Role:
        cluster = self.cluster.cluster
        role = iam.Role(
            self,
            "ControllerRole",
            assumed_by=iam.ServicePrincipal(
                POD_IDENTITY_PRINCIPAL,
                conditions={
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-arn": cluster.cluster_arn,
                        "aws:RequestTag/kubernetes-namespace": self.pin.namespace,
                        "aws:RequestTag/kubernetes-service-account": SERVICE_ACCOUNT,
                    }
                },
            ).with_session_tags(),
            description="Karpenter controller (EKS Pod Identity)",
        )
        self.controller_policies: dict[str, iam.CfnManagedPolicy] = {}
        for name in _iam.CONTROLLER_POLICIES:
            self.controller_policies[name] = iam.CfnManagedPolicy(
                self,
                name,
                description=f"Karpenter controller: upstream KarpenterController{name.removesuffix('Policy')}Policy",
                policy_document=_iam.policy_document(
                    name,
                    cluster_name=cluster.cluster_name,
                    node_role_arn=self.node_role.role_arn,
                    interruption_queue_arn=self.interruption_queue.queue_arn,
                ),
                roles=[role.role_name],
            )
            _acknowledge_string_document(self.controller_policies[name])
        agent = cluster.eks_pod_identity_agent
        self.pod_identity_association = eks_l1.CfnPodIdentityAssociation(
            self,
            "PodIdentityAssociation",
            cluster_name=cluster.cluster_name,
            namespace=self.pin.namespace,
            service_account=SERVICE_ACCOUNT,
            role_arn=role.role_arn,
        )
        if agent is not None:
            self.pod_identity_association.node.add_dependency(agent)
        return role

    def _install(self, source: _addons.ChartSource | None) -> eks.HelmChart:
        values = karpenter_values(
            cluster_name=self.cluster.cluster_name,
            interruption_queue_name=self.interruption_queue.queue_name,
            source=source,
            isolated_vpc=self.isolated_vpc,
        )
        # The image goes through the chart's own key (controller.image); the source keeps the chart and values.
        chart_source = None if source is None else _addons.ChartSource(source.repository, values=source.values)
        chart = self.cluster._chart(
            "Karpenter", self.pin, values, chart_source, wait=self.cluster.system_node_group is not None
        )
        # The controller starts with its credentials in place.
        chart.node.add_dependency(self.pod_identity_association)
        for policy in self.controller_policies.values():
            chart.node.add_dependency(policy)
        return chart

    def _acknowledge(self, *, own_node_role: bool) -> None:
        from ._nag import _NODE_ROLE_REASONS

        if own_node_role:
            for policy, reason in _NODE_ROLE_REASONS.items():
                _nag.acknowledge(self.node_role, _nag.aws_managed_policy_finding(policy), reason)
        _nag.acknowledge(
            self.interruption_queue,
            "AwsSolutions-SQS3",
            "Karpenter's interruption queue has no dead-letter queue upstream (cloudformation.yaml); its messages "
            "expire after 300 seconds because a late interruption notice is useless",
        )

    # --- node pools -------------------------------------------------------------------------------------------
    def add_gpu_node_pool(self, name: str, **options: Unpack[KarpenterGpuNodePoolOptions]) -> eks.KubernetesManifest:
        """An ``EC2NodeClass`` and a ``NodePool``, both named ``name``, for GPU ``instance_types``: see
        :class:`KarpenterGpuNodePoolOptions` (:class:`~fmconstructs.eks._node_pools.GpuNodePoolOptions` and
        Karpenter's own), :func:`~fmconstructs.eks.karpenter_manifests.ec2_node_class_manifest` and
        :func:`~fmconstructs.eks.karpenter_manifests.node_pool_manifest`."""
        pool = _node_pools.resolve_gpu_node_pool(
            "Karpenter.add_gpu_node_pool",
            self.cluster,
            name,
            options,
            declared=KarpenterGpuNodePoolOptions.__annotations__,
            taken=self.node_pools,
            check_instance_types=_manifests.check_karpenter_instance_types,
        )
        node_class = _manifests.ec2_node_class_manifest(
            name=name,
            role=None if self.instance_profile is not None else self.node_role.role_name,
            instance_profile=None if self.instance_profile is None else self.instance_profile.ref,
            subnet_ids=pool.placement.subnet_ids,
            security_group_ids=pool.placement.security_group_ids,
            ami_version=options.get("ami_version", "latest"),
            root_volume_size_gib=options.get("root_volume_size_gib", 200),
            imds_hop_limit=options.get("imds_hop_limit", 1),
            capacity_reservations=pool.capacity_reservations,
            efa_instance_type=pool.efa_instance_type,
            tags=options.get("tags"),
        )
        node_pool = _manifests.node_pool_manifest(
            name=name,
            node_class_name=name,
            instance_types=[spec.instance_type for spec in pool.specs],
            weight=options.get("weight"),
            **pool.node_pool_options,
        )
        manifest = self.cluster.cluster.add_manifest(f"KarpenterPool-{name}", node_class, node_pool)
        manifest.node.add_dependency(self.chart)  # the chart installs the CRDs
        manifest.node.add_dependency(self.node_access_entry)
        self.node_pools[name] = manifest
        self.node_pool_instance_types[name] = tuple(spec.instance_type for spec in pool.specs)
        return manifest


#: Why the controller policies are JSON strings (see :mod:`fmconstructs.eks.karpenter_iam`).
_STRING_DOCUMENT_REASON = (
    "Karpenter's upstream template (cloudformation.yaml v1.14) writes each controller PolicyDocument as a JSON string "
    "under Fn::Sub because the cluster name is part of a condition key (aws:ResourceTag/kubernetes.io/cluster/<name>); "
    "CloudFormation accepts a JSON string for this Json property, the schema check only expects an object"
)


def _acknowledge_string_document(policy: iam.CfnManagedPolicy) -> None:
    _nag.acknowledge_cfn_lint(policy, "E3510", _STRING_DOCUMENT_REASON)
    _nag.acknowledge(policy, "CloudFormation-Validate::E3510", _STRING_DOCUMENT_REASON)
