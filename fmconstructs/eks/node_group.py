"""GpuNodeGroup: an EKS managed node group of GPU instances on an EFA launch template from the foundation.

- The launch template is a :class:`~fmconstructs.compute.GpuLaunchTemplate` with the EKS managed-node-group interface
  policy (no ``SubnetId`` in the template, EKS User Guide "device-management-efa"), IMDSv2 with hop limit 1 (only host
  processes and ``hostNetwork`` pods reach the instance metadata: :data:`EKS_IMDS_HOP_LIMIT`), the cluster security
  group and the EFA security group on the interfaces (a template with security groups replaces the cluster group EKS
  would add), and MIME multi-part user data (EKS "launch-templates": required when the template has user data but no
  AMI).
- The AMI type comes from the catalog (``InstanceSpec.eks_ami_type``): AL2023 NVIDIA x86_64, or ARM for GB200.
- EFA groups live in one subnet, so one availability zone (EFA traffic cannot cross zones); the subnet must be in the
  reservation's zone when both are known.
- Placement groups only when asked (``placement_group`` or ``use_placement_group=True``; since 0.2.0, before which
  EFA groups off a Capacity Block got a new one by default). EC2 reserves capacity in a cluster placement group only
  for a reservation created in that group (EC2 User Guide "cr-cpg"; "limitations-placement-groups" recommends
  reserving capacity explicitly in the group you launch into), so a placement group with an On-Demand Capacity
  Reservation not known to be in it warns ``fmconstructs:placement-group-with-capacity-reservation``.
- Any network and deploy-time values: subnets without zone information and number tokens for the node counts are
  accepted; checks that need a value run only when it is known.
- Capacity: On-Demand and targeted ODCRs run as ``ON_DEMAND`` (the reservation target is in the template), Capacity
  Blocks and UltraServer blocks as ``CAPACITY_BLOCK`` (EKS "capacity-blocks-mng": custom launch template required).
- Sizes: ``min_nodes`` defaults to 0 (:func:`~fmconstructs.capacity.default_min_nodes`, the rule PCS and
  ParallelCluster use), ``desired_nodes`` to ``max_nodes``. On a Capacity Block, ``capacity_block_scaling`` chooses
  between two ways to deploy:

  * ``CapacityBlockScaling.AT_DEPLOY`` (default): min = max = desired = the block's size. The block launches
    instances only while it is active (EC2 User Guide capacity-blocks-view: state ``scheduled`` until the start,
    available capacity zero), so the deployment waits for nodes that cannot launch before then (UNCONFIRMED how long
    CloudFormation waits before failing): deploy after the block starts.
  * ``CapacityBlockScaling.ON_BLOCK_EVENTS``: min 0, desired 0, max = ``max_nodes``: deploy any time before the
    block starts; give the group to :class:`~fmconstructs.capacity_events.CapacityBlockEvents`
    (``scaling_targets=``), which sets min = desired = ``max_nodes`` (eks:UpdateNodegroupConfig) when EC2 reports the
    block delivered and 0 on its expiration warning. The template keeps DesiredSize 0 on every deployment: EKS
    changes the group's size only when DesiredSize changes in the template (EKS API NodegroupScalingConfig
    desiredSize: "Whenever this parameter changes, the number of worker nodes in the node group is updated"), so a
    later ``cdk deploy`` that leaves the scaling configuration alone does not scale a running block to 0. Changing
    ``max_nodes`` changes the ScalingConfig; whether CloudFormation then also re-sends the unchanged DesiredSize 0
    is UNCONFIRMED (eksctl#3532 reports that eksctl's CloudFormation-based scaling did reset the desired size):
    change ``max_nodes`` only while the block is not active.
- FSx for Lustre clients (:meth:`GpuNodeGroup.add_lustre_client`): pre-bootstrap shell in the user data installs the
  Lustre client, configures LNet over EFA (FSx for Lustre User Guide "Configuring EFA clients") and mounts the file
  system on the host, as the EKS User Guide "fsx-csi-tuning-efa" does with eksctl ``preBootstrapCommands``.
- Pre-bootstrap steps are a :class:`~fmconstructs.bootstrap.NodeBootstrap` (``launch_template.bootstrap``): with
  ``bootstrap_delivery=None`` (default) they travel as a content-addressed S3 asset fetched by a small loader in the
  shell part of the user data (node role: read on that object only, write to the stack's bootstrap log group; the
  node group waits for those permissions), or inline where the stack does not publish file assets;
  ``BootstrapDelivery.INLINE`` forces the inline form. A group without pre-bootstrap steps has no shell part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Unpack, cast

from aws_cdk import CfnResource
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._renames import RenamedAttribute, renamed_keywords
from .._rules import warn
from .._validate import (
    RemovedAttribute,
    known,
    located,
    removed_keywords,
    same_zone,
    subnet_zone,
)
from .._validate import check_mount_point as _check_mount_point
from ..bootstrap import default_bootstrap_name, step_name
from ..capacity import (
    Capacity,
    CapacityBlockScaling,
    OnDemand,
    check_backend_capacity,
    default_min_nodes,
)
from ..catalog import InstanceSpec, get_instance_spec
from ..compute.launch_template import GpuLaunchTemplate, UserDataFormat
from ..errors import FmTypeError, FmValidationError, is_token
from ..health import NodeHealthOptions
from ..networking import ClusterPlacementGroup, InterfacePolicy
from ..storage.client import lustre_efa_interfaces
from ..storage.lustre import LustreFileSystemBase
from ..storage.lustre_clients import apply_lustre_client_plan, plan_lustre_client
from ..storage.lustre_mount import LustreMount
from . import health as _health
from . import rules
from ._node_group_props import EKS_CLUSTER_TAG, _NodeGroupProps
from ._node_group_props import EKS_IMDS_HOP_LIMIT as EKS_IMDS_HOP_LIMIT
from ._node_group_props import GpuNodeGroupOptions as GpuNodeGroupOptions
from .addons import EFA_PRESENT_LABEL, GPU_PRESENT_LABEL, GPU_TAINT_KEY
from .versions import MIN_ULTRASERVER_VERSION, version_tuple

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

#: Labels on every GPU node (besides ``nvidia.com/gpu.present`` and ``vpc.amazonaws.com/efa.present``).
INSTANCE_TYPE_LABEL = "fmconstructs.io/instance-type"
EFA_COUNT_LABEL = "fmconstructs.io/efa-interface-count"
GPU_COUNT_LABEL = "fmconstructs.io/gpu-count"
CAPACITY_LABEL = "fmconstructs.io/capacity"

#: nodeadm (AL2023) configuration that assembles the NVMe instance-store disks into RAID0 for kubelet and containerd
#: (amazon-eks-ami nodeadm API ``InstanceOptions.localStorage.strategy``).
NODEADM_RAID0_NODE_CONFIG = """---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0
"""


@dataclass(frozen=True)
class LustreClient:
    """An FSx for Lustre file system a node group mounts on its hosts, and how.

    ``efa_interfaces`` is the number of EFA interfaces each node uses for LNet (0: LNet over TCP; None: decided on
    the node), the count the node's user data passes to the mount script.
    """

    file_system: LustreFileSystemBase
    mount_point: str
    efa_interfaces: int | None


def eks_capacity_type(capacity: Capacity) -> eks.CapacityType:
    """``CAPACITY_BLOCK`` for (UltraServer) Capacity Blocks, ``ON_DEMAND`` for On-Demand and ODCRs."""
    if not isinstance(capacity, Capacity):
        raise FmTypeError("capacity", capacity, f"a Capacity (got a {type(capacity).__name__})")
    check_backend_capacity(capacity, backend="EKS managed node groups")
    return eks.CapacityType.CAPACITY_BLOCK if capacity.is_capacity_block else eks.CapacityType.ON_DEMAND


def eks_ami_type(spec: InstanceSpec) -> eks.NodegroupAmiType:
    """The node group AMI type the catalog records for ``spec`` (``EksAmiType`` names match ``NodegroupAmiType``)."""
    if not isinstance(spec, InstanceSpec):
        raise FmTypeError("spec", spec, f"an InstanceSpec (got a {type(spec).__name__})")
    ami_type: eks.NodegroupAmiType = getattr(eks.NodegroupAmiType, spec.eks_ami_type.name)
    return ami_type


def capacity_zone(capacity: Capacity) -> str | None:
    """The zone a capacity pins the fleet to, when it names one (``Capacity.zone``; None for On-Demand)."""
    zone = getattr(capacity, "zone", None)
    return zone if isinstance(zone, str) else None


def _subnet_zone(subnet: ec2.ISubnet) -> str | None:
    """``_validate.subnet_zone``, also treating an element of a list token (``#{Token[...]}``, e.g. a VPC imported with
    ``availability_zones=Fn.get_azs()``) as unknown: ``Token.is_unresolved`` is False for such a string."""
    zone = subnet_zone(subnet)
    return None if zone is not None and "{Token[" in zone else zone


def _describe_subnet(subnet: ec2.ISubnet) -> str:
    """``subnet-0abc in us-east-1b`` for messages; deploy-time ids are named as such, never as raw tokens."""
    subnet_id = subnet.subnet_id
    name = "a subnet with a deploy-time id" if is_token(subnet_id) else subnet_id
    zone = _subnet_zone(subnet)
    return f"{name} in {zone}" if zone is not None else name


def check_mount_point(parameter: str, value: object) -> str:
    """A host mount point: the library's one mount-point rule (:func:`fmconstructs._validate.check_mount_point`)."""
    text: str = _check_mount_point(parameter, value)
    return text


class GpuNodeGroup(Construct):
    """A managed node group of one GPU instance type with every EFA interface, labels and the GPU taint.

    Create it through :meth:`GpuEksCluster.add_gpu_node_group` (same options) or directly with ``cluster=``.

    Subnets and counts may be deploy-time values: subnets imported without a zone (``Subnet.from_subnet_id``, an id
    from a ``CfnParameter``) skip the zone check, and number tokens (``CfnParameter.value_as_number``) for the node
    counts skip the range checks (CloudFormation and EKS check them at deploy time).

    :param cluster: the :class:`GpuEksCluster`.
    :param options: the node group's options, :class:`GpuNodeGroupOptions` (``instance_type`` and ``max_nodes``
        required).
    """

    @located
    @removed_keywords("GpuNodeGroup", max_size="max_nodes", min_size="min_nodes", desired_size="desired_nodes")
    @renamed_keywords("GpuNodeGroup", nodegroup_name="node_group_name")
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        **options: Unpack[GpuNodeGroupOptions],
    ) -> None:
        from .cluster import GpuEksCluster

        if not isinstance(cluster, GpuEksCluster):
            raise FmTypeError("cluster", cluster, f"a GpuEksCluster (got a {type(cluster).__name__})")
        props = _NodeGroupProps.resolve("GpuNodeGroup", options)
        super().__init__(scope, id)
        self.cluster: GpuEksCluster = cluster
        self.instance_spec: InstanceSpec = get_instance_spec(props.instance_type)
        self.efa_interfaces_for_lustre = props.efa_interfaces_for_lustre
        self._lustre_clients: list[LustreClient] = []
        self._keep_capacity_and_sizes(props)
        self._build_placement_group(props)
        self._build_launch_template(props)
        self._keep_labels_and_taints(props)
        self._build_nodegroup(props)
        self._add_node_health(enable_node_auto_repair=props.enable_node_auto_repair)

    # --- construction steps ------------------------------------------------------------------------------------
    def _keep_capacity_and_sizes(self, props: _NodeGroupProps) -> None:
        """The capacity, its EKS capacity type and the node counts (defaults per capacity), checked together."""
        capacity = props.capacity
        max_nodes = props.max_nodes
        min_nodes = props.min_nodes
        desired_nodes = props.desired_nodes
        capacity_block_scaling = props.capacity_block_scaling
        self.capacity: Capacity = capacity if capacity is not None else OnDemand()
        self.capacity_type: eks.CapacityType = eks_capacity_type(self.capacity)
        #: When the group gets its instances on a Capacity Block (see the module docstring).
        self.capacity_block_scaling: CapacityBlockScaling = capacity_block_scaling
        self.max_nodes: int | float = max_nodes
        scaling = capacity_block_scaling
        on_events = scaling is CapacityBlockScaling.ON_BLOCK_EVENTS
        self.min_nodes: int | float = (
            default_min_nodes(self.capacity, max_nodes, scaling=scaling) if min_nodes is None else min_nodes
        )
        self.desired_nodes: int | float = (0 if on_events else max_nodes) if desired_nodes is None else desired_nodes
        self._validate_block_scaling()
        self._validate_sizes()
        self._validate_instance_and_version()

    def _build_placement_group(self, props: _NodeGroupProps) -> None:
        """The subnets (default: one in the capacity's zone) and the placement group: given, new when asked, or none."""
        checked_subnets = props.subnets
        placement_group = props.placement_group
        self.subnets: tuple[ec2.ISubnet, ...] = (
            checked_subnets if checked_subnets is not None else (self._default_subnet(),)
        )
        self.placement_group: ClusterPlacementGroup | None = placement_group
        if self.placement_group is None and props.use_placement_group:
            self.placement_group = ClusterPlacementGroup(self, "PlacementGroup")
        if self.placement_group is not None:
            self._check_placement_group_and_reservation(self.placement_group, created=placement_group is None)

    def _build_launch_template(self, props: _NodeGroupProps) -> None:
        """The EFA launch template (EKS managed-node-group interface policy, MIME user data), then its checks."""
        cluster = self.cluster
        instance_type = props.instance_type
        self.launch_template = GpuLaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=instance_type,
            vpc=cluster.vpc,
            policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP,
            capacity=self.capacity,
            max_nodes=self.max_nodes,  # type: ignore[arg-type]  # an int, or a number token (float)
            efa_security_group=cluster.efa_security_group,
            security_groups=[cluster.cluster_security_group],
            placement_group=self.placement_group,
            efa_interface_count=props.efa_interface_count,
            efa_cards=props.efa_cards,
            http_put_response_hop_limit=props.imds_hop_limit,
            root_volume_size_gib=props.root_volume_size_gib,
            instance_store_mount_point=None,
            user_data_format=UserDataFormat.MIME_MULTIPART,
            tags={**(props.tags or {}), EKS_CLUSTER_TAG: cluster.cluster_name},
            bootstrap_delivery=props.bootstrap_delivery,
            bootstrap_role=props.node_role or cluster.node_role,
            bootstrap_name=default_bootstrap_name(self),
        )
        self._validate_subnets()
        # Fails now, not at the first add_lustre_client, when the count exceeds what the nodes have.
        lustre_efa_interfaces(
            efa_enabled=True,
            instance_spec=self.instance_spec,
            efa_interfaces_for_lustre=props.efa_interfaces_for_lustre,
            node_efa_interfaces=self.efa_interface_count,
        )
        if props.instance_store_raid0 and self.instance_spec.instance_store is not None:
            self.launch_template.add_user_data_part("application/node.eks.aws", NODEADM_RAID0_NODE_CONFIG)

    def _keep_labels_and_taints(self, props: _NodeGroupProps) -> None:
        """The node labels (fmconstructs labels, then the user's, then the node-checks gate) and the taints."""
        instance_type = props.instance_type
        options = props.node_checks
        if options is True:
            options = NodeHealthOptions()
        #: The node checks' options (the same as a Slurm gate's); None: no checks.
        self.node_health: NodeHealthOptions | None = (
            options if isinstance(options, NodeHealthOptions) and options.enabled else None
        )
        node_checks = self.node_health is not None
        user_labels = props.labels
        user_taints = props.taints
        #: Whether nodes join tainted until their checks pass; the gate's name (a node label value) when they do.
        self.node_checks: bool = node_checks
        self.node_checks_group: str | None = (
            _health.node_checks_group_name(instance_type, self.node.path) if node_checks else None
        )
        self.labels: dict[str, str] = {
            INSTANCE_TYPE_LABEL: instance_type,
            GPU_COUNT_LABEL: str(self.instance_spec.gpu.count),
            EFA_COUNT_LABEL: str(self.efa_interface_count),
            CAPACITY_LABEL: self.capacity.kind.value,
            GPU_PRESENT_LABEL: "true",
            **({EFA_PRESENT_LABEL: "true"} if self.efa_interface_count > 0 else {}),
            **(user_labels or {}),
            **({_health.NODE_CHECKS_GROUP_LABEL: self.node_checks_group} if self.node_checks_group else {}),
        }
        self.taints: tuple[eks.TaintSpec, ...] = (
            user_taints
            if user_taints is not None
            else (eks.TaintSpec(key=GPU_TAINT_KEY, value="true", effect=eks.TaintEffect.NO_SCHEDULE),)
        )
        if node_checks and all(t.key != _health.NODE_CHECKS_TAINT_KEY for t in self.taints):
            self.taints = (*self.taints, _health.node_checks_taint())

    def _build_nodegroup(self, props: _NodeGroupProps) -> None:
        """The managed node group (id ``Resource``) on the launch template, after the VPC CNI and the bootstrap
        permissions; with the plan record ``fmc plan`` reads."""
        cluster = self.cluster
        node_role = props.node_role
        enable_node_auto_repair = props.enable_node_auto_repair
        self.nodegroup = eks.Nodegroup(
            self,
            "Resource",
            cluster=cluster.icluster,
            nodegroup_name=props.node_group_name,
            ami_type=eks_ami_type(self.instance_spec),
            capacity_type=self.capacity_type,
            min_size=self.min_nodes,
            max_size=self.max_nodes,
            desired_size=self.desired_nodes,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.launch_template.launch_template_id, version=self.launch_template.version_number
            ),
            subnets=ec2.SubnetSelection(subnets=list(self.subnets)),
            node_role=node_role or cluster.node_role,
            labels=self.labels,
            taints=list(self.taints),
            enable_node_auto_repair=enable_node_auto_repair,
            tags=props.tags,
        )
        # Pod networking on the nodes needs the VPC CNI add-on and its role (the node role no longer carries the CNI
        # policy).
        self.nodegroup.node.add_dependency(cluster.vpc_cni_addon)
        # Nodes fetch their pre-bootstrap asset as they boot: the node role's permissions must exist first.
        if self.nodegroup.node.default_child is not None:
            self.launch_template.bootstrap.add_dependent(self.nodegroup.node.default_child)
            write_plan_record(cast(CfnResource, self.nodegroup.node.default_child), PlanKind.NODE_GROUP, backend="eks")

    def _add_node_health(self, *, enable_node_auto_repair: bool) -> None:
        """Auto repair: the cluster gets the node monitoring agent; node checks: the group's gate first.

        The group does not wait for the agent: it is a DaemonSet that EKS schedules on nodes whenever they join, and
        the Amazon EKS User Guide (node-health) says the agent and automatic node repair "can also be used
        individually", naming no order. Waiting put the agent add-on and, through it, the system node group on the
        GPU groups' deploy path (issue 30: EKS critical path)."""
        if enable_node_auto_repair:
            _health.add_node_monitoring_agent(self.cluster)
        if self.node_health is not None:
            _health.EksNodeChecks.for_cluster(self.cluster).add_node_group(self)

    # --- names removed in 0.3.0 ----------------------------------------------------------------------------------
    max_size = RemovedAttribute("max_nodes")
    min_size = RemovedAttribute("min_nodes")
    desired_size = RemovedAttribute("desired_nodes")

    # --- defaults -----------------------------------------------------------------------------------------------
    def _default_subnet(self) -> ec2.ISubnet:
        """The private subnet in the reservation's zone when known, else the first private subnet."""
        private = self.cluster.vpc.private_subnets
        if not private:
            raise FmValidationError(
                "subnets", None, "given, or a VPC with private subnets known at synthesis (the VPC has none)"
            )
        zone = capacity_zone(self.capacity)
        if not known(zone):
            return private[0]
        matches = [same_zone(zone, _subnet_zone(subnet)) for subnet in private]
        for subnet, match in zip(private, matches, strict=True):
            if match:
                return subnet
        if any(match is None for match in matches):
            raise FmValidationError(
                "subnets",
                None,
                f"given: the reservation is in {zone}, and the zones of the VPC's private subnets are not all known at "
                f"synthesis (pass subnets=[the subnet in {zone}])",
            )
        raise FmValidationError(
            "subnets", None, f"a subnet in {zone} (the reservation's zone): the VPC has no private subnet there"
        )

    # --- validation: the cross-property rules (fmconstructs.eks.rules) -----------------------------------------
    def _validate_sizes(self) -> None:
        minimum, maximum, desired = self.min_nodes, self.max_nodes, self.desired_nodes
        rules.sizes_are_ordered(min_nodes=minimum, max_nodes=maximum, desired_nodes=desired)
        rules.max_nodes_fit_the_reservation(max_nodes=maximum, reservation_instances=self.capacity.max_instances)
        # Instance-type rules of the capacity (UltraServer blocks); node counts are checked above.
        self.capacity.validate_for(self.instance_spec)
        rules.capacity_block_sizes_are_zero_or_max(
            is_capacity_block=self.capacity.is_capacity_block,
            min_nodes=minimum,
            max_nodes=maximum,
            desired_nodes=desired,
        )

    def _validate_block_scaling(self) -> None:
        """``ON_BLOCK_EVENTS``: only on a Capacity Block, and the group starts empty (min and desired 0)."""
        scaling = self.capacity_block_scaling
        rules.on_block_events_needs_a_capacity_block(scaling=scaling, capacity=self.capacity)
        rules.on_block_events_starts_empty(scaling=scaling, min_nodes=self.min_nodes, desired_nodes=self.desired_nodes)

    def _validate_instance_and_version(self) -> None:
        spec = self.instance_spec
        rules.ultraserver_types_need_an_ultraserver_block(spec=spec, capacity=self.capacity)
        if spec.ultraserver_types:
            rules.ultraserver_types_need_a_recent_kubernetes(
                spec=spec,
                version=self.cluster.version.version,
                version_parts=version_tuple(self.cluster.version),
                minimum=MIN_ULTRASERVER_VERSION,
            )

    def _validate_subnets(self) -> None:
        rules.efa_groups_take_one_subnet(efa_interface_count=self.efa_interface_count, subnet_count=len(self.subnets))
        # Only when both zones are known at synthesis (subnets imported without a zone, token zones: skipped).
        rules.subnets_are_in_the_capacity_zone(
            capacity_zone=capacity_zone(self.capacity),
            capacity_kind=self.capacity.kind,
            subnets=[(_subnet_zone(subnet), _describe_subnet(subnet)) for subnet in self.subnets],
        )

    def _check_placement_group_and_reservation(self, placement_group: ClusterPlacementGroup, *, created: bool) -> None:
        """Warn when nodes on an On-Demand Capacity Reservation go into a placement group the reservation is not known
        to be in (:func:`~fmconstructs.eks.rules.placement_group_holds_the_reservation`)."""
        warn(
            self,
            rules.placement_group_holds_the_reservation(
                capacity_kind=self.capacity.kind,
                reservation_group_arn=getattr(self.capacity, "placement_group_arn", None),
                placement_group_arn=placement_group.placement_group_arn,
                created=created,
            ),
        )

    # --- FSx for Lustre clients ---------------------------------------------------------------------------------
    def add_lustre_client(
        self, file_system: LustreFileSystemBase | LustreMount, *, mount_point: str | None = None
    ) -> LustreClient:
        """Mount a file system on every node of this group, configured before kubelet starts: a
        :class:`~fmconstructs.storage.LustreMount` (``add_lustre_client(LustreMount(fs, "/fsx"))``, the one mount type
        every backend takes), or a file system and ``mount_point`` (``add_lustre_client(fs, mount_point="/fsx")``).

        A mount's ``efa_interfaces`` must agree with the group's ``efa_interfaces_for_lustre`` when both are given
        (one LNet configuration per node); either one alone sets the count, neither gives the FSx for Lustre User
        Guide default for the type.

        The commands (:meth:`LustreFileSystemBase.mount_commands`) are the node bootstrap's step
        ``lustre-<mount point>``, run from the shell part of the launch template's MIME user data (the asset loader,
        or the commands themselves with inline delivery): cloud-init runs it before the AL2023 node joins the cluster
        (amazon-eks-ami
        ``nodeadm-run.service`` starts ``After=... cloud-final.service``), which is where the EKS User Guide
        "fsx-csi-tuning-efa" puts the same steps (eksctl ``preBootstrapCommands``: Lustre client, LNet over EFA, host
        mount). They install the Lustre client, configure LNet over EFA on :attr:`LustreClient.efa_interfaces`
        interfaces for an EFA-enabled file system (with a systemd unit that redoes it at every boot; nodes without
        EFA, or with 0 interfaces for Lustre, stay on TCP and say so in the boot log) and mount on the host, so that
        the FSx CSI driver's mounts in pods use the same LNet configuration. The group is registered against the file
        system's 1,024 EFA connection budget (``max_nodes`` nodes x :attr:`LustreClient.efa_interfaces`; synthesis
        fails above it, naming ``max_nodes``; a token ``max_nodes`` warns), and the file system checks that the group
        shares its EFA security group and zone (:meth:`LustreFileSystemBase.register_efa_clients`). Adding the same
        file system twice returns the first client.
        """
        mount = self._lustre_mount(file_system, mount_point)
        file_system, mount_point = mount.file_system, mount.mount_point
        for client in self._lustre_clients:
            if client.file_system is file_system:
                return client
        plan = plan_lustre_client(
            efa_enabled=file_system.efa_enabled,
            dns_name=file_system.dns_name,
            mount_name=file_system.mount_name,
            instance_spec=self.instance_spec,
            max_nodes=self.max_nodes,
            node_efa_interfaces=self.efa_interface_count,
            efa_interfaces=mount.efa_interfaces,
            mount_point=mount_point,
        )
        # FSx for Lustre User Guide "Configuring EFA clients": at most 1,024 EFA connections per file system, one per
        # client EFA interface used for LNet; every node of the group (max_nodes) counts. The file system also checks
        # that the nodes share its EFA security group and zone (EFA does not cross zones).
        apply_lustre_client_plan(
            plan,
            file_system=file_system,
            consumer=self,
            bootstrap=self.launch_template.bootstrap,
            step=step_name("lustre", mount_point),
            efa_security_group=self.cluster.efa_security_group,
            subnets=self.subnets,
        )
        count = plan.efa_interfaces
        client = LustreClient(file_system, mount_point, count)
        self._lustre_clients.append(client)
        return client

    def _lustre_mount(self, file_system: LustreFileSystemBase | LustreMount, mount_point: str | None) -> LustreMount:
        """The one mount type for :meth:`add_lustre_client`'s two forms, with the group's EFA interfaces for Lustre
        when the mount gives none; a mount whose count differs from the group's is refused (one LNet configuration
        per node)."""
        group_count = self.efa_interfaces_for_lustre
        if isinstance(file_system, LustreMount):
            if mount_point is not None:
                raise FmTypeError(
                    "mount_point", mount_point, "omitted when a LustreMount is given (the mount has its mount_point)"
                )
            mount = file_system
            if mount.efa_interfaces is None or group_count is None:
                count = group_count if mount.efa_interfaces is None else mount.efa_interfaces
                return LustreMount(mount.file_system, mount.mount_point, count)
            if mount.efa_interfaces != group_count:
                raise FmValidationError(
                    "efa_interfaces",
                    mount.efa_interfaces,
                    f"the node group's efa_interfaces_for_lustre ({group_count}) or None: each node has one LNet "
                    "configuration for every file system it mounts",
                )
            return mount
        if not isinstance(file_system, LustreFileSystemBase):
            raise FmTypeError(
                "file_system",
                file_system,
                f"a LustreFileSystem or a LustreMount (got a {type(file_system).__name__})",
            )
        if mount_point is None:
            raise FmTypeError("mount_point", None, "given with a file system (or pass a LustreMount)")
        check_mount_point("mount_point", mount_point)
        return LustreMount(file_system, mount_point, group_count)

    @property
    def lustre_clients(self) -> tuple[LustreClient, ...]:
        """The FSx for Lustre file systems this group mounts (see :meth:`add_lustre_client`)."""
        return tuple(self._lustre_clients)

    # --- what callers need --------------------------------------------------------------------------------------
    @property
    def efa_interface_count(self) -> int:
        return self.launch_template.efa_interface_count

    @property
    def node_group_name(self) -> str:
        """The node group's name: a deploy-time value (the node group's ``Ref``), also when ``node_group_name`` is
        given."""
        return self.nodegroup.nodegroup_name

    #: Deprecated name of :attr:`node_group_name` (removed in 0.4.0).
    nodegroup_name = RenamedAttribute("node_group_name")

    @property
    def gpus_per_node(self) -> int:
        return self.instance_spec.gpu.count

    @property
    def total_gpus(self) -> int | None:
        """GPUs at the desired size; None when ``desired_nodes`` is a deploy-time value."""
        if not known(self.desired_nodes):
            return None
        return int(self.desired_nodes) * self.gpus_per_node
