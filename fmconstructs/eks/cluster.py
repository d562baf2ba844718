"""GpuEksCluster: an Amazon EKS cluster (aws-cdk-lib ``aws_eks_v2``) for GPU training.

Secure by default: private API endpoint (public access is opt-in and limited to given CIDRs), every control-plane log
type on, Kubernetes secrets encrypted with a KMS key (rotation on), no implicit admin for the deploying identity
(admins are access entries for the roles you pass), a small system node group for add-ons, and GPU node groups
from :meth:`add_gpu_node_group`. The kubectl handler (a Lambda function in the VPC's private subnets, kubectl from the
``aws-cdk.lambda-layer-kubectl-vNN`` package matching the version) installs the Helm charts and manifests.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Unpack, cast

from aws_cdk import (
    Aws,
    CfnResource,
    Fn,
    RemovalPolicy,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._replacement import warn_fixed_name
from .._validate import (
    RemovedAttribute,
    check_bool,
    check_count,
    check_first_call,
    check_str,
    check_str_sequence,
    known,
    located,
    removed_keywords,
)
from ..budgets import check_new_group_id, check_template_budgets, node_group_scope, node_groups_per_stack
from ..catalog import CATALOG, check_instance_type
from ..errors import FmTypeError, FmValidationError, WarningId, add_warning
from ..networking import EfaSecurityGroup
from ..storage.lustre import LustreFileSystemBase
from . import _cluster_charts as _charts
from . import _nag
from . import addons as _addons
from . import auto_mode as _auto_mode
from . import health as _health
from ._cluster_props import _check_role, _CheckedClusterProps, _ClusterProps, check_cluster_props
from ._names import check_node_labels
from .manifests import check_name, compute_domain_manifest, lustre_static_volume_manifests
from .node_group import GpuNodeGroup, GpuNodeGroupOptions, check_mount_point
from .scheduling import KueueScheduling
from .versions import DEFAULT_KUBERNETES_VERSION, kubectl_layer_for
from .vpc_cni import vpc_cni_with_own_role

if TYPE_CHECKING:
    from .auto_mode import AutoModeGpuNodePools
    from .karpenter import Karpenter
    from .metrics_consumers import MetricsScraper

#: Every control-plane log type (cdk-nag AwsSolutions-EKS2 asks for all of them).
ALL_CONTROL_PLANE_LOGS: tuple[eks.ClusterLoggingTypes, ...] = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)

#: AWS managed policies of the node role (EKS User Guide "create-node-role"), without ``AmazonEKS_CNI_Policy``: the
#: VPC CNI has a role of its own (:mod:`fmconstructs.eks.vpc_cni`; before 0.2.x the node role carried it).
NODE_ROLE_MANAGED_POLICIES: tuple[str, ...] = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
)

#: ``createOnlyProperties`` of ``AWS::EKS::Cluster`` (CloudFormation registry schema, as bundled by cfn-lint 1.58.0).
_EKS_CLUSTER_CREATE_ONLY: dict[str, Any] = {
    "resource_type": "AWS::EKS::Cluster",
    "create_only": (
        "Name",
        "RoleArn",
        "EncryptionConfig",
        "KubernetesNetworkConfig.IpFamily/ServiceIpv4Cidr",
        "AccessConfig.BootstrapClusterCreatorAdminPermissions",
        "BootstrapSelfManagedAddons",
        "OutpostConfig",
    ),
}

#: The EKS access policy granted to admin roles.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


#: GPU node groups a GpuEksCluster keeps in its own stack (then nested stacks of as many: :func:`~fmconstructs.
#: budgets.node_group_scope`). An EKS GPU group is about 16.5 KB of template with the shared node-checks gate (34.5 KB
#: before it; benchmarks/templates.py, p5.48xlarge), so 32 groups are about 590 KB of CloudFormation's 1 MB with the
#: cluster, and no app that deployed before (at most about 27 groups in one stack) has a group moved. Context
#: ``fmconstructs:node-groups-per-stack`` overrides it.
GPU_NODE_GROUPS_PER_STACK = 32


class EksWarning:
    """The EKS constructs' warning ids, now members of :class:`~fmconstructs.errors.WarningId` (kept for imports
    written before 0.3.1; the ids are unchanged, so acknowledgements keep working)."""

    PUBLIC_ENDPOINT_OPEN = WarningId.EKS_PUBLIC_ENDPOINT_OPEN


@dataclass(frozen=True, init=False)
class SystemNodeGroupOptions:
    """The small On-Demand node group that runs add-on controllers (CoreDNS, CSI controllers, DRA controller).

    :param instance_type: default ``m7i.xlarge``.
    :param min_nodes: default 2 (``min_size`` until 0.3.0).
    :param max_nodes: default 4 (``max_size`` until 0.3.0).
    :param desired_nodes: default 2 (``desired_size`` until 0.3.0).
    :param labels: default ``fmconstructs.io/node-role=system``.

    Counts may be number tokens (``CfnParameter.value_as_number``); their range checks are then skipped.
    """

    instance_type: str
    min_nodes: int | float
    max_nodes: int | float
    desired_nodes: int | float
    labels: Mapping[str, str]

    @removed_keywords(
        "SystemNodeGroupOptions", min_size="min_nodes", max_size="max_nodes", desired_size="desired_nodes"
    )
    def __init__(
        self,
        *,
        instance_type: str = "m7i.xlarge",
        min_nodes: int | float = 2,
        max_nodes: int | float = 4,
        desired_nodes: int | float = 2,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        check_instance_type("instance_type", instance_type)  # catalog or botocore's EC2 InstanceType enum
        minimum = check_count("min_nodes", min_nodes)
        maximum = check_count("max_nodes", max_nodes, minimum=1)
        desired = check_count("desired_nodes", desired_nodes)
        if known(minimum) and known(maximum) and minimum > maximum:
            raise FmValidationError("min_nodes", minimum, f"at most max_nodes ({maximum})")
        if known(desired) and ((known(minimum) and desired < minimum) or (known(maximum) and desired > maximum)):
            raise FmValidationError(
                "desired_nodes", desired, f"between min_nodes ({minimum}) and max_nodes ({maximum})"
            )
        checked_labels = (
            check_node_labels("labels", labels) if labels is not None else {"fmconstructs.io/node-role": "system"}
        )
        object.__setattr__(self, "instance_type", instance_type)
        object.__setattr__(self, "min_nodes", minimum)
        object.__setattr__(self, "max_nodes", maximum)
        object.__setattr__(self, "desired_nodes", desired)
        object.__setattr__(self, "labels", checked_labels)

    min_size = RemovedAttribute("min_nodes")
    max_size = RemovedAttribute("max_nodes")
    desired_size = RemovedAttribute("desired_nodes")


@dataclass(frozen=True)
class GpuAddons:
    """What :meth:`GpuEksCluster.add_gpu_addons` installed."""

    nvidia_device_plugin: eks.HelmChart
    efa_device_plugin: eks.HelmChart
    dcgm_exporter: eks.HelmChart
    fsx_csi_driver: eks.Addon
    node_monitoring_agent: eks.Addon | None = None


class GpuEksCluster(Construct):
    """An EKS cluster for GPU training: EFA node groups, device plugins, DCGM exporter, FSx for Lustre volumes.

    :param vpc: the cluster's VPC.
    :param version: Kubernetes version. Default: :data:`~fmconstructs.eks.versions.DEFAULT_KUBERNETES_VERSION`.
    :param cluster_name: default: generated by CloudFormation. 1-100 letters, digits, '-' or '_', starting with a
        letter or digit (EKS API ``CreateCluster.name``); may be a token.
    :param subnets: control-plane ENIs, system nodes and the kubectl handler. Default: the VPC's private subnets.
        Subnets imported without a zone or with deploy-time ids (``Subnet.from_subnet_id(..., Fn.select(i,
        parameter.value_as_list))``) are accepted.
    :param public_endpoint_cidrs: opt-in public API endpoint reachable from these CIDRs (the private endpoint stays
        on). Default: None (private endpoint only).
    :param admin_roles: roles given ``AmazonEKSClusterAdminPolicy`` through access entries. Default: none.
    :param secrets_encryption_key: KMS key for Kubernetes secrets. Default: a new key with rotation.
    :param control_plane_logging: default: every log type.
    :param system_node_group: the add-on node group; None for none. Default: 2 x m7i.xlarge (AL2023).
    :param node_role: the role of the system and GPU nodes. Default: a new role with the EKS node policies
        (:data:`NODE_ROLE_MANAGED_POLICIES`; not ``AmazonEKS_CNI_Policy``: the VPC CNI add-on has its own role,
        :attr:`vpc_cni_role`, through EKS Pod Identity). A given role is used as it is.
    :param kubectl_layer: default: the installed ``aws-cdk.lambda-layer-kubectl-vNN`` of ``version``.
    :param efa_security_group: shared by every GPU node group. Default: a new :class:`EfaSecurityGroup`.
    :param tags: tags of the EKS cluster (EKS API: keys 1-128 characters, values at most 256, at most 50).
    :param removal_policy: RETAIN or DESTROY, passed to ``aws_eks_v2.Cluster(removal_policy=...)``, which applies it
        to every resource of that construct (the ``AWS::EKS::Cluster``, its role and security group, the system
        node group, the kubectl handler, access entries; aws-cdk-lib 2.275 ``ClusterCommonOptions.removalPolicy``);
        GPU node groups are not retained (retained GPU nodes would keep running). Default DESTROY: the cluster
        holds Kubernetes objects only, and those this library creates come back from the template; training data
        and checkpoints live on FSx and S3, which are retained. RETAIN keeps your own objects (workloads, secrets,
        claims) through a stack deletion or a replacement, but the control plane and system nodes keep billing and
        their network interfaces keep a VPC of the same stack from being deleted. A ``cluster_name`` warns
        ``fmconstructs:fixed-name-blocks-replacement`` (Name, RoleArn, EncryptionConfig, ... are create-only).
    :param auto_mode: turn on EKS Auto Mode's compute, without its built-in node pools, for
        :meth:`add_auto_mode_gpu_node_pool` (:mod:`fmconstructs.eks.auto_mode`). Default False.
    """

    @located
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        version: eks.KubernetesVersion | str = DEFAULT_KUBERNETES_VERSION,
        cluster_name: str | None = None,
        subnets: Sequence[ec2.ISubnet] | None = None,
        public_endpoint_cidrs: Sequence[str] | None = None,
        admin_roles: Sequence[iam.IRole] = (),
        secrets_encryption_key: kms.IKey | None = None,
        control_plane_logging: Sequence[eks.ClusterLoggingTypes] = ALL_CONTROL_PLANE_LOGS,
        system_node_group: SystemNodeGroupOptions | None = SystemNodeGroupOptions(),
        node_role: iam.IRole | None = None,
        kubectl_layer: lambda_.ILayerVersion | None = None,
        efa_security_group: EfaSecurityGroup | None = None,
        tags: Mapping[str, str] | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
        auto_mode: bool = False,
    ) -> None:
        given = _ClusterProps.of(locals())
        props = check_cluster_props(given)
        super().__init__(scope, id)
        self.vpc = vpc
        self.version = props.version
        endpoint_access = self._keep_network(props)
        self._build_control_plane(
            props,
            endpoint_access,
            cluster_name=cluster_name,
            secrets_encryption_key=secrets_encryption_key,
            kubectl_layer=kubectl_layer,
            auto_mode=auto_mode,
        )
        self._build_node_access(props, node_role=node_role, efa_security_group=efa_security_group)
        self.system_node_group: eks.Nodegroup | None = self._build_system_node_group(system_node_group)
        self._declare_extensions()
        _nag.acknowledge_cluster(self, own_node_role=node_role is None)
        check_template_budgets(self)  # CloudFormation's template limits, at synthesis (issue 30)

    # --- construction steps ------------------------------------------------------------------------------------
    def _keep_network(self, props: _CheckedClusterProps) -> eks.EndpointAccess:
        """The subnets (at least one) and the endpoint access, kept as attributes."""
        self.subnets: tuple[ec2.ISubnet, ...] = props.subnets
        if not self.subnets:
            raise FmValidationError(
                "subnets",
                [],
                "at least one subnet: given, or the VPC's private subnets (the VPC has none known at synthesis; a VPC "
                "imported by id needs subnets=)",
            )
        cidrs = props.cidrs
        endpoint_access = self._endpoint_access(cidrs)
        # What _endpoint_access configured, in the words of the EKS API (CreateCluster resourcesVpcConfig:
        # endpointPublicAccess, endpointPrivateAccess, publicAccessCidrs): PRIVATE without CIDRs, PUBLIC_AND_PRIVATE
        # limited to them otherwise; the private endpoint is always on. Tokens among the CIDRs are kept as given.
        self._endpoint_public = cidrs is not None
        self._endpoint_private = True
        self._public_access_cidrs: tuple[str, ...] | None = tuple(cidrs) if cidrs is not None else None
        return endpoint_access

    def _build_control_plane(
        self,
        props: _CheckedClusterProps,
        endpoint_access: eks.EndpointAccess,
        *,
        cluster_name: str | None,
        secrets_encryption_key: kms.IKey | None,
        kubectl_layer: lambda_.ILayerVersion | None,
        auto_mode: bool,
    ) -> None:
        """The secrets key (unless given), the kubectl layer and the ``aws_eks_v2.Cluster`` (id ``Resource``)."""
        version = props.version
        removal_policy = props.removal_policy
        self.secrets_encryption_key: kms.IKey = secrets_encryption_key or kms.Key(
            self,
            "SecretsKey",
            description="EKS secrets envelope encryption (fmconstructs GpuEksCluster)",
            enable_key_rotation=True,
        )
        layer = kubectl_layer or kubectl_layer_for(self, "KubectlLayer", version)
        self.cluster = eks.Cluster(
            self,
            "Resource",
            version=version,
            cluster_name=cluster_name,
            vpc=self.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=list(self.subnets))],
            endpoint_access=endpoint_access,
            cluster_logging=list(props.logging_types),
            secrets_encryption_key=self.secrets_encryption_key,
            **_auto_mode.auto_mode_cluster_props(auto_mode),
            bootstrap_cluster_creator_admin_permissions=False,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=layer, private_subnets=list(self.subnets)
            ),
            tags=props.tags or None,
            removal_policy=None if removal_policy is RemovalPolicy.DESTROY else removal_policy,
        )
        self.removal_policy = removal_policy
        self.auto_mode: bool = auto_mode
        #: The managed scrapers collecting this cluster's metrics (each AmpEksScraper adds itself); read at synthesis
        #: by what is inert without one (:mod:`fmconstructs.eks.metrics_consumers`).
        self.metrics_scrapers: list[MetricsScraper] = []
        #: :meth:`add_auto_mode_gpu_node_pool`'s construct, once added.
        self.auto_mode_pools: AutoModeGpuNodePools | None = None
        if auto_mode:
            _auto_mode.acknowledge_cluster_role(self)
        if cluster_name is not None:
            warn_fixed_name(self, parameter="cluster_name", name=cluster_name, **_EKS_CLUSTER_CREATE_ONLY)

    def _build_node_access(
        self, props: _CheckedClusterProps, *, node_role: iam.IRole | None, efa_security_group: EfaSecurityGroup | None
    ) -> None:
        """The node role (unless given), the VPC CNI add-on and its role, the EFA security group, admin entries."""
        self.node_role: iam.IRole = node_role or iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="EKS nodes of the fmconstructs GPU cluster",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_ROLE_MANAGED_POLICIES],
        )
        #: The ``vpc-cni`` add-on and the role of its ``aws-node`` service account (:mod:`fmconstructs.eks.vpc_cni`);
        #: node groups wait for it.
        self.vpc_cni_addon, self.vpc_cni_role = vpc_cni_with_own_role(self, self.cluster)
        self.efa_security_group = efa_security_group or EfaSecurityGroup(self, "EfaSecurityGroup", vpc=self.vpc)
        for role in props.roles:
            self.grant_admin(role)

    def _declare_extensions(self) -> None:
        """What the ``add_*`` methods fill in: GPU node groups, host Lustre mounts, charts, add-on constructs."""
        self.gpu_node_groups: list[GpuNodeGroup] = []
        self._host_lustre_mounts: list[tuple[LustreFileSystemBase, str]] = []
        self._charts: dict[str, eks.HelmChart] = {}
        #: :meth:`add_topology_scheduling`'s construct, once added.
        self.topology_scheduling: KueueScheduling | None = None
        #: :meth:`add_karpenter`'s construct, once added.
        self.karpenter: Karpenter | None = None
        self._chart_sources: dict[str, _addons.ChartSource] = {}
        self._fsx_csi_driver: eks.Addon | None = None
        self._hyperpod_instance_types: list[str] = []
        # GPU DaemonSet charts whose values depend on the HyperPod instance types: id -> values builder.
        self._hyperpod_aware_values: dict[str, Callable[[tuple[str, ...]], dict[str, Any]]] = {}
        self._lazy_values: set[str] = set()

    # --- cluster ------------------------------------------------------------------------------------------------

    def _build_system_node_group(self, options: SystemNodeGroupOptions | None) -> eks.Nodegroup | None:
        """The managed node group for system pods (none without ``options``), after the CNI add-on; with the plan
        record ``fmc plan`` reads."""
        if options is None:
            return None
        group = self.cluster.add_nodegroup_capacity(
            "SystemNodeGroup",
            instance_types=[ec2.InstanceType(options.instance_type)],
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            min_size=options.min_nodes,
            max_size=options.max_nodes,
            desired_size=options.desired_nodes,
            labels=dict(options.labels),
            subnets=ec2.SubnetSelection(subnets=list(self.subnets)),
            node_role=self.node_role,
        )
        group.node.add_dependency(self.vpc_cni_addon)
        write_plan_record(cast(CfnResource, group.node.default_child), PlanKind.NODE_GROUP, backend="eks")
        return group

    def _endpoint_access(self, cidrs: Sequence[str] | None) -> eks.EndpointAccess:
        if cidrs is None:
            return eks.EndpointAccess.PRIVATE
        if not cidrs:
            raise FmValidationError("public_endpoint_cidrs", [], "None (private endpoint only) or at least one CIDR")
        if any(known(cidr) and ipaddress.ip_network(cidr, strict=False).prefixlen == 0 for cidr in cidrs):
            add_warning(
                self,
                WarningId.EKS_PUBLIC_ENDPOINT_OPEN,
                "The cluster API endpoint is public to the whole internet (0.0.0.0/0); limit public_endpoint_cidrs to "
                "your networks or leave it None for a private endpoint.",
            )
        return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*cidrs)

    @property
    def icluster(self) -> eks.ICluster:
        """The L2 cluster as ``eks.ICluster`` (what ``aws_eks_v2`` constructs take as ``cluster=``)."""
        return cast(eks.ICluster, self.cluster)

    @property
    def cluster_name(self) -> str:
        """The cluster's name (a CloudFormation reference)."""
        return self.cluster.cluster_name

    @property
    def cluster_arn(self) -> str:
        """The cluster's ARN (``Fn::GetAtt Arn``)."""
        return self.cluster.cluster_arn

    @property
    def cluster_endpoint(self) -> str:
        """The Kubernetes API server endpoint (``Fn::GetAtt Endpoint``); private unless public_endpoint_cidrs is set."""
        return self.cluster.cluster_endpoint

    @property
    def endpoint_public(self) -> bool:
        """Whether the API server endpoint is reachable from the internet (EKS ``endpointPublicAccess``): True when
        ``public_endpoint_cidrs`` was given, limited to :attr:`public_access_cidrs`."""
        return self._endpoint_public

    @property
    def endpoint_private(self) -> bool:
        """Whether the API server endpoint is reachable from the cluster's VPC (EKS ``endpointPrivateAccess``);
        always True for a :class:`GpuEksCluster`."""
        return self._endpoint_private

    @property
    def public_access_cidrs(self) -> tuple[str, ...] | None:
        """The CIDR blocks the public endpoint admits (EKS ``publicAccessCidrs``), as given to
        ``public_endpoint_cidrs`` (deploy-time values stay tokens); None when there is no public endpoint."""
        return self._public_access_cidrs

    @property
    def update_kubeconfig_command(self) -> str:
        """``aws eks update-kubeconfig --name <name> --region <region>``, resolved by CloudFormation (``Fn::Join`` of
        the cluster name and ``AWS::Region``): the AWS CLI command that writes a kubeconfig entry for this cluster
        (AWS CLI reference "eks update-kubeconfig": ``--name`` the cluster, ``--region`` its Region). The caller
        needs an access entry (``admin_roles``/``grant_admin``) and, with the default private endpoint, network access
        to the VPC."""
        return Fn.join("", ["aws eks update-kubeconfig --name ", self.cluster_name, " --region ", Aws.REGION])

    @property
    def cluster_security_group(self) -> ec2.ISecurityGroup:
        """The EKS-created cluster security group (control plane <-> nodes); on every node's primary interface."""
        return self.cluster.cluster_security_group

    @property
    def connections(self) -> ec2.Connections:
        return self.cluster.connections

    def grant_admin(self, role: iam.IRole) -> None:
        """An access entry giving ``role`` ``AmazonEKSClusterAdminPolicy`` on the whole cluster."""
        _check_role("role", role)
        self.cluster.grant_access(
            f"AdminAccess{role.node.id}",
            role.role_arn,
            [
                eks.AccessPolicy.from_access_policy_name(
                    CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                )
            ],
        )

    # --- GPU node groups ----------------------------------------------------------------------------------------
    def add_gpu_node_group(self, id: str, **options: Unpack[GpuNodeGroupOptions]) -> GpuNodeGroup:
        """Add a :class:`GpuNodeGroup` (see its parameters). P6e-GB200 groups also install the NVIDIA DRA driver."""
        if "cluster" in options:
            raise FmTypeError("cluster", options["cluster"], "omitted: add_gpu_node_group adds to this cluster")  # type: ignore[typeddict-item]
        per_stack = node_groups_per_stack(self, GPU_NODE_GROUPS_PER_STACK)
        check_new_group_id(id, [g.node.id for g in self.gpu_node_groups])
        scope = node_group_scope(self, len(self.gpu_node_groups), per_stack=per_stack)
        group = GpuNodeGroup(scope, id, cluster=self, **options)
        self.gpu_node_groups.append(group)
        for file_system, mount_point in self._host_lustre_mounts:
            group.add_lustre_client(file_system, mount_point=mount_point)
        if group.instance_spec.ultraserver_types:
            self.add_nvidia_dra_driver()
        if self.topology_scheduling is not None:
            self.topology_scheduling.add_node_group(group)
        return group

    def add_topology_scheduling(self, **options: Any) -> KueueScheduling:
        """Kueue (Topology Aware Scheduling over the EKS network-node labels, all-or-nothing admission), JobSet, and
        a ClusterQueue for the GPU node groups with a LocalQueue per namespace; see
        :class:`~fmconstructs.eks.scheduling.KueueScheduling` for ``options``. Once per cluster."""
        check_first_call(
            self, "TopologyScheduling", method="add_topology_scheduling", remedy="use the KueueScheduling it returned"
        )
        if self._hyperpod_instance_types:
            raise FmValidationError(
                "add_topology_scheduling",
                f"a cluster with HyperPod nodes {self.hyperpod_instance_types}",
                "a cluster without SageMaker HyperPod nodes (HyperPod task governance installs its own Kueue; "
                "use its topology annotations, see fmconstructs.eks.scheduling)",
            )
        self.topology_scheduling = KueueScheduling(self, "TopologyScheduling", cluster=self, **options)
        return self.topology_scheduling

    def add_teams(self, teams: Sequence[Any], **options: Any) -> eks.KubernetesManifest:
        """Teams (:class:`~fmconstructs.teams.Team`) as Kueue ClusterQueues in one cohort over the topology-aware
        flavors: :meth:`~fmconstructs.eks.scheduling.KueueScheduling.add_teams` (``options``). Needs
        :meth:`add_topology_scheduling` first."""
        if self.topology_scheduling is None:
            raise FmValidationError(
                "add_teams",
                "a cluster without Kueue",
                "called after add_topology_scheduling() (teams are Kueue queues)",
            )
        return self.topology_scheduling.add_teams(teams, **options)

    def add_karpenter(self, **options: Any) -> Karpenter:
        """Karpenter (pinned chart, controller IAM through Pod Identity, node role and access entry, interruption
        queue) for elastic GPU NodePools; see :class:`~fmconstructs.eks.karpenter.Karpenter` for ``options`` and
        :meth:`~fmconstructs.eks.karpenter.Karpenter.add_gpu_node_pool`. Once per cluster."""
        from .karpenter import Karpenter

        check_first_call(
            self, "Karpenter", method="add_karpenter", remedy="use cluster.karpenter, the Karpenter it returned"
        )
        self.karpenter = Karpenter(self, "Karpenter", cluster=self, **options)
        return self.karpenter

    def add_auto_mode_gpu_node_pool(self, name: str, **options: Any) -> eks.KubernetesManifest:
        """An EKS Auto Mode GPU ``NodeClass`` + ``NodePool`` (needs ``auto_mode=True``); see
        :meth:`~fmconstructs.eks.auto_mode.AutoModeGpuNodePools.add_gpu_node_pool` for ``options``."""
        from .auto_mode import AutoModeGpuNodePools

        if self.auto_mode_pools is None:
            self.auto_mode_pools = AutoModeGpuNodePools(self, "AutoModePools", cluster=self)
        return self.auto_mode_pools.add_gpu_node_pool(name, **options)

    # --- add-ons ------------------------------------------------------------------------------------------------
    _chart = _charts.chart

    def add_nvidia_device_plugin(
        self,
        *,
        version: str | None = None,
        efa_plugin: bool = True,
        gpu_feature_discovery: bool = True,
        source: _addons.ChartSource | None = None,
    ) -> eks.HelmChart:
        """NVIDIA device plugin (``nvidia.com/gpu``); MOFED detection off when the EFA plugin runs (``efa_plugin``).

        ``source``: where the chart (and its image) come from, e.g. a private ECR registry
        (:class:`~fmconstructs.eks.addons.ChartSource`); default the chart's public repository."""
        _addons.check_version("version", version)
        _addons.nvidia_device_plugin_values(efa_plugin=efa_plugin, gpu_feature_discovery=gpu_feature_discovery)
        return self._gpu_chart(
            "NvidiaDevicePlugin",
            _addons.NVIDIA_DEVICE_PLUGIN.with_version(version),
            lambda hyperpod: _addons.nvidia_device_plugin_values(
                efa_plugin=efa_plugin, gpu_feature_discovery=gpu_feature_discovery, hyperpod_instance_types=hyperpod
            ),
            source,
        )

    def add_efa_device_plugin(
        self,
        *,
        version: str | None = None,
        instance_types: Sequence[str] | None = None,
        source: _addons.ChartSource | None = None,
    ) -> eks.HelmChart:
        """EFA device plugin (``vpc.amazonaws.com/efa``) from eks-charts.

        ``instance_types`` default: every catalog type with EFA (so groups added later are covered). A list of
        instance type names (a bare ``str`` is refused). ``source``: see :meth:`add_nvidia_device_plugin`.
        """
        _addons.check_version("version", version)
        types = (
            [spec.instance_type for spec in CATALOG if spec.maximum_efa_interfaces > 0]
            if instance_types is None
            else instance_types
        )
        _addons.efa_device_plugin_values(types)
        return self._gpu_chart(
            "EfaDevicePlugin",
            _addons.EFA_DEVICE_PLUGIN.with_version(version),
            lambda hyperpod: _addons.efa_device_plugin_values(types, hyperpod_instance_types=hyperpod),
            source,
        )

    def add_dcgm_exporter(
        self, *, version: str | None = None, service_monitor: bool = False, source: _addons.ChartSource | None = None
    ) -> eks.HelmChart:
        """DCGM exporter: GPU metrics on port 9400 behind a ClusterIP Service with Prometheus scrape annotations.
        ``source``: see :meth:`add_nvidia_device_plugin`."""
        _addons.check_version("version", version)
        _addons.dcgm_exporter_values(service_monitor=service_monitor)
        return self._gpu_chart(
            "DcgmExporter",
            _addons.DCGM_EXPORTER.with_version(version),
            lambda hyperpod: _addons.dcgm_exporter_values(
                service_monitor=service_monitor, hyperpod_instance_types=hyperpod
            ),
            source,
        )

    def add_nvidia_dra_driver(
        self, *, version: str | None = None, source: _addons.ChartSource | None = None
    ) -> eks.HelmChart:
        """NVIDIA DRA driver with ComputeDomains (IMEX across an NVLink domain) for P6e-GB200 UltraServers.

        ``source``: see :meth:`add_nvidia_device_plugin`. P6e-GB200 node groups install the driver from its public
        repository; for a private registry call this with ``source`` before :meth:`add_gpu_node_group`."""
        _addons.check_version("version", version)
        values = _addons.nvidia_dra_driver_values()
        return self._chart("NvidiaDraDriver", _addons.NVIDIA_DRA_DRIVER.with_version(version), values, source)

    def add_fsx_csi_driver(self, *, addon_version: str | None = None) -> eks.Addon:
        """The FSx for Lustre CSI driver as an EKS managed add-on (static volumes need no controller IAM role).

        ``addon_version`` default: EKS's default build for the cluster's Kubernetes version (see
        :data:`~fmconstructs.eks.addons.FSX_CSI_ADDON_NAME`). The node DaemonSet tolerates all taints (chart default
        ``node.tolerateAllTaints: true``), so it runs on tainted GPU nodes.
        """
        _addons.check_version("addon_version", addon_version)
        if self._fsx_csi_driver is None:
            self._fsx_csi_driver = eks.Addon(
                self,
                "FsxCsiDriver",
                cluster=self.icluster,
                addon_name=_addons.FSX_CSI_ADDON_NAME,
                addon_version=addon_version,
                preserve_on_delete=False,
            )
            if self.system_node_group is not None:
                self._fsx_csi_driver.node.add_dependency(self.system_node_group)
        return self._fsx_csi_driver

    def add_gpu_addons(
        self,
        *,
        nvidia_device_plugin_source: _addons.ChartSource | None = None,
        efa_device_plugin_source: _addons.ChartSource | None = None,
        dcgm_exporter_source: _addons.ChartSource | None = None,
        hyperpod_instance_types: Sequence[str] = (),
    ) -> GpuAddons:
        """The GPU add-ons: NVIDIA device plugin, EFA device plugin, DCGM exporter, the FSx CSI driver and the EKS
        node monitoring agent.

        The ``*_source`` parameters choose where each chart comes from (default: its public repository; see
        :class:`~fmconstructs.eks.addons.ChartSource`). The FSx CSI driver is an EKS managed add-on (images from
        the EKS registry of the cluster's Region). ``hyperpod_instance_types``: see
        :meth:`add_hyperpod_instance_types` (default: none)."""
        types = _addons.check_hyperpod_instance_types("hyperpod_instance_types", hyperpod_instance_types)
        if types:
            self.add_hyperpod_instance_types(types)
        return GpuAddons(
            nvidia_device_plugin=self.add_nvidia_device_plugin(efa_plugin=True, source=nvidia_device_plugin_source),
            efa_device_plugin=self.add_efa_device_plugin(source=efa_device_plugin_source),
            dcgm_exporter=self.add_dcgm_exporter(source=dcgm_exporter_source),
            fsx_csi_driver=self.add_fsx_csi_driver(),
            node_monitoring_agent=self.add_node_monitoring_agent(),
        )

    def add_node_monitoring_agent(self, *, addon_version: str | None = None) -> eks.Addon:
        """The ``eks-node-monitoring-agent`` EKS add-on (GPU, EFA, kernel faults as node conditions for node auto
        repair); GPU node groups with auto repair add it themselves. See :mod:`fmconstructs.eks.health`."""
        return _health.add_node_monitoring_agent(self, addon_version=addon_version)

    # --- SageMaker HyperPod nodes -------------------------------------------------------------------------------
    @property
    def charts(self) -> Mapping[str, eks.HelmChart]:
        """The add-on charts installed so far, by id (``NvidiaDevicePlugin``, ``EfaDevicePlugin``, ``DcgmExporter``,
        ``NvidiaDraDriver``); read-only."""
        return MappingProxyType(self._charts)

    @property
    def hyperpod_instance_types(self) -> tuple[str, ...]:
        """The HyperPod (``ml.``) instance types the GPU add-ons also select (:meth:`add_hyperpod_instance_types`)."""
        return tuple(self._hyperpod_instance_types)

    def add_hyperpod_instance_types(self, instance_types: Sequence[str]) -> tuple[str, ...]:
        """SageMaker HyperPod nodes of these types (``ml.`` names, e.g. ``["ml.p5en.48xlarge"]``) join this cluster
        (``Orchestrator.Eks``): the NVIDIA device plugin, the EFA device plugin (types with EFA) and the DCGM exporter
        also run on them. Returns every type added so far.

        HyperPod nodes carry their ``ml.`` name in ``node.kubernetes.io/instance-type`` and none of the labels
        fmconstructs node groups set, so each chart's ``nodeSelector`` becomes a node affinity that matches either,
        and the pods tolerate HyperPod's ``sagemaker.amazonaws.com/node-health-status=Unschedulable:NoSchedule``
        taint (see :func:`~fmconstructs.eks.addons.nvidia_device_plugin_values`). Works in either order with the
        ``add_*`` methods: charts added earlier get the wider values at synthesis. The FSx CSI driver's node
        DaemonSet already runs on every node (it tolerates all taints), so :meth:`add_lustre_volume` claims mount on
        HyperPod nodes too; the scraper of :mod:`fmconstructs.observability.eks` scrapes the DCGM exporter Service and
        its node exporter tolerates every taint. :class:`fmconstructs.hyperpod.HyperPodEksDependencies` calls this
        for the instance groups of the HyperPod cluster it precedes.
        """
        types = _addons.check_hyperpod_instance_types("instance_types", instance_types)
        if types and self.topology_scheduling is not None:
            raise FmValidationError(
                "instance_types",
                list(types),
                "none on a cluster with add_topology_scheduling (HyperPod task governance installs its own Kueue)",
            )
        for hyperpod_type in types:
            if hyperpod_type not in self._hyperpod_instance_types:
                self._hyperpod_instance_types.append(hyperpod_type)
        if self._hyperpod_instance_types:
            for id in self._hyperpod_aware_values:
                self._render_values_lazily(id)
        return self.hyperpod_instance_types

    _gpu_chart = _charts.gpu_chart
    _render_values_lazily = _charts.render_values_lazily

    # --- workloads ----------------------------------------------------------------------------------------------
    def add_lustre_volume(
        self,
        id: str,
        file_system: LustreFileSystemBase,
        *,
        name: str,
        namespace: str = "default",
        create_namespace: bool = False,
        mount_options: Sequence[str] = ("flock",),
        host_mount_point: str | None = None,
    ) -> eks.KubernetesManifest:
        """A static PersistentVolume ``name`` for ``file_system`` and a claim ``name`` in ``namespace`` bound to it.

        Also installs the FSx CSI add-on and opens the Lustre ports between the file system and the cluster security
        group (on every node's primary interface).

        EFA-enabled file systems are also set up on the GPU nodes themselves (FSx for Lustre User Guide "Configuring
        EFA clients"; EKS User Guide "fsx-csi-tuning-efa"): every GPU node group, including groups added later,
        installs the Lustre client, configures LNet over EFA before kubelet starts and mounts the file system at
        ``host_mount_point`` (see :meth:`GpuNodeGroup.add_lustre_client`), so the CSI driver's mounts in pods go over
        EFA. ``host_mount_point`` default: ``/fsx/<name>`` for an EFA-enabled file system, none otherwise (the CSI
        driver alone, over TCP); give one to mount a TCP file system on the hosts too.

        ``name`` is a Kubernetes DNS-1123 subdomain and ``namespace`` a DNS-1123 label (Kubernetes "Object Names and
        IDs"); ``mount_options`` a list of Lustre mount options (a bare ``str`` is refused).
        """
        check_str("id", id, min_length=1, allowed="a non-empty construct id")
        if not isinstance(file_system, LustreFileSystemBase):
            raise FmTypeError("file_system", file_system, f"a LustreFileSystem (got a {type(file_system).__name__})")
        check_name("name", name)
        check_name("namespace", namespace, label=True)
        check_bool("create_namespace", create_namespace)
        options = check_str_sequence("mount_options", mount_options, item=_check_mount_option, min_items=1)
        if host_mount_point is not None:
            check_mount_point("host_mount_point", host_mount_point)
        self._check_manifest_id(id)
        addon = self.add_fsx_csi_driver()
        file_system.allow_clients_from(self.cluster)
        volume = file_system.eks_static_volume(mount_options=options)
        manifest = self.cluster.add_manifest(
            id,
            *lustre_static_volume_manifests(volume, name=name, namespace=namespace, create_namespace=create_namespace),
        )
        manifest.node.add_dependency(addon)
        if host_mount_point is None and file_system.efa_enabled:
            host_mount_point = f"/fsx/{name}"
        if host_mount_point is not None:
            self._host_lustre_mounts.append((file_system, host_mount_point))
            for group in self.gpu_node_groups:
                group.add_lustre_client(file_system, mount_point=host_mount_point)
        return manifest

    def add_compute_domain(
        self, id: str, *, name: str, num_nodes: int = 0, namespace: str = "default"
    ) -> eks.KubernetesManifest:
        """A DRA ComputeDomain (IMEX channels) for GB200 nodes; installs the DRA driver first.

        ``num_nodes`` default 0 (elastic, the EKS User Guide "ml-eks-nvidia-ultraserver" example); see
        :func:`~fmconstructs.eks.manifests.compute_domain_manifest`.
        """
        check_str("id", id, min_length=1, allowed="a non-empty construct id")
        body = compute_domain_manifest(name=name, namespace=namespace, num_nodes=num_nodes)
        self._check_manifest_id(id)
        chart = self.add_nvidia_dra_driver()
        manifest = self.cluster.add_manifest(id, body)
        manifest.node.add_dependency(chart)
        return manifest

    def _check_manifest_id(self, id: str) -> None:
        """``id`` of a new manifest (``add_manifest`` names it ``manifest-<id>``) not taken yet."""
        if self.cluster.node.try_find_child(f"manifest-{id}") is not None:
            raise FmValidationError(
                "id",
                id,
                "an id no other manifest of this cluster has (add_lustre_volume, add_compute_domain, add_manifest)",
            )


#: A Lustre mount option: what the storage mount script and the CSI driver accept (no spaces, commas or quotes).
_MOUNT_OPTION = re.compile(r"[A-Za-z0-9_.=:/+-]+")


def _check_mount_option(parameter: str, value: object) -> Any:
    return check_str(
        parameter, value, pattern=_MOUNT_OPTION, allowed="a mount option without spaces, commas or quotes ('flock')"
    )
