"""PCS compute node groups: GPU node groups on the foundation's launch template, and login node groups.

A GPU node group (:class:`PcsGpuNodeGroup`) is an ``AWS::PCS::ComputeNodeGroup`` whose custom launch template is a
:class:`~fmconstructs.compute.GpuLaunchTemplate` built with ``InterfacePolicy.PCS`` (``efa`` primary, security groups
and the node group's ``SubnetId`` on every interface, all the EFA interfaces the catalog allows), pinned to the
template's latest version number.

**One subnet per GPU node group.** The PCS API takes a list of subnets for a compute node group
(``CreateComputeNodeGroup.subnetIds``, botocore PCS model), but every PCS launch-template example puts ``SubnetId`` on
each network interface (PCS User Guide working-with_networking_efa_create-lt; aws-hpc-recipes
``pcs/enable_efa/assets/pcs-lt-efa-p5.yaml`` takes one ``NodeGroupSubnetId`` for all 32 interfaces), an interface has
exactly one subnet, EFA traffic does not cross availability zones (EC2 User Guide "efa") and a reservation lives in one
zone. So the launch template and ``SubnetIds`` carry the same one subnet, checked against the reservation's zone;
spread GPU capacity over zones with one node group per subnet.

Capacity maps to the PCS purchase option (:func:`purchase_option_for`): On-Demand -> ONDEMAND (or SPOT with
``spot=True``), a targeted ODCR -> ONDEMAND (the launch template targets the reservation), a Capacity Block or an
UltraServer Capacity Block -> CAPACITY_BLOCK (the launch template carries market type ``capacity-block`` and
``CapacityReservationId``, PCS User Guide "Configure an AWS PCS compute node group to use a Capacity Block"
capacity-blocks-configure-cng: give an UltraServer block its ``reservation_id``), an interruptible Capacity
Reservation -> INTERRUPTIBLE_CAPACITY_RESERVATION (market type ``interruptible-capacity-reservation`` and
``CapacityReservationId``, PCS User Guide capacity-reservations-iodcr). Scaling is checked against the
capacity: ``max_nodes`` at most the block's size, and ``min_nodes == max_nodes`` on blocks (min defaults to max
there, to 0 elsewhere). ``max_nodes``/``min_nodes`` were ``max_instance_count``/``min_instance_count`` and login
groups' ``nodes`` was ``instance_count``: the old names were removed in 0.3.0 (passing one raises a ``TypeError``
naming the new name).

**Any network, deploy-time values.** The subnet may be imported without its zone (``Subnet.from_subnet_id``, an id
from a ``CfnParameter``): the zone check against a reservation runs only when both zones are known. Counts, idle
times, names and AMI ids may be deploy-time values (``CfnParameter``, ``Fn.import_value``); their checks are
skipped. The instance type, the EFA layout and the mount points are synthesis-time choices (the launch template is
derived from them).

**Finding the nodes.** PCS tags every instance it launches with ``aws:pcs:compute-node-group-id`` (PCS User Guide
"Finding compute node group instances in AWS PCS", working-with_cng_find-instances):
:attr:`PcsGpuNodeGroup.find_instances_command` lists a group's running instances, and
:attr:`PcsLoginNodeGroup.session_command` opens a Session Manager shell on a login node (the node role has
``AmazonSSMManagedInstanceCore`` by default; the operator needs the Session Manager plugin of the AWS CLI).

Node set-up (:attr:`bootstrap`, a :class:`~fmconstructs.bootstrap.NodeBootstrap`), in order: the NVMe RAID0 scratch
volume (step ``nvme-raid``, from the launch template), the file-system mounts (``lustre-<mount point>``, via the
storage construct's ``mount_commands``), the IMEX prolog when the cluster enables it (``imex-prolog``), the node
checks and boot gate with node health (``node-health``, :mod:`.health`), then
``user_data_commands`` and anything added later with :meth:`add_user_data` (``commands``, the hook for your own
steps). The user data is the MIME multi-part archive PCS requires (``UserDataFormat.MIME_MULTIPART``); it runs after
the node registers with PCS, before ``slurmd`` starts.

**Delivery** (``bootstrap_delivery``, default None): the steps travel as a content-addressed S3 asset and the user
data is a loader of under 2 KiB (it fetches the asset with the node role, which gets read on that object only,
checks its sha256, runs each step once, logs to ``/var/log/fmconstructs/`` and to the stack's bootstrap log group,
and fails the boot script on a failed step), whenever the stack's synthesizer publishes file assets; in a stack that
does not (a StackSet template) they stay inline, as before 0.3, within EC2's 16 KB. ``BootstrapDelivery.INLINE``
forces the old form. Asset delivery needs the AWS CLI on the AMI (see :mod:`fmconstructs.bootstrap.loader`).

Note for the identity that deploys the stack: PCS needs ``ec2:DescribeCapacityReservations`` to create a Capacity
Block node group, and the block must be scheduled or active at that time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Required, TypedDict, Unpack, cast

import aws_cdk as cdk
import jsii
from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from .._plan_metadata import PlanKind, write_plan_record
from .._validate import (
    RemovedAttribute,
    known,
    located,
    removed_keywords,
    subnet_zone,
)
from ..bootstrap import BootstrapDelivery, default_bootstrap_name
from ..capacity import Capacity, CapacityKind
from ..catalog import CpuArchitecture, InstanceSpec
from ..compute import GpuLaunchTemplate
from ..compute.launch_template import UserDataFormat
from ..errors import WarningId, add_warning
from ..health import NodeHealthOptions
from ..networking import ClusterPlacementGroup, EfaCardSelection, InterfacePolicy
from ..storage.lustre_mount import LustreMount
from . import rules
from ._checks import check_scope_id
from ._node_group_base import NODE_GROUP_ID_TAG as NODE_GROUP_ID_TAG
from ._node_group_base import _PcsNodeGroupBase
from ._node_group_checks import MAX_NODE_GROUP_IDLE_SECONDS as MAX_NODE_GROUP_IDLE_SECONDS
from ._node_group_checks import ROOT_VOLUME_SIZE_GIB_RANGE as ROOT_VOLUME_SIZE_GIB_RANGE
from ._node_group_checks import _GpuNodeProps, _group_path
from .ami import PcsAmi
from .cluster import check_cluster
from .health import NODE_HEALTH_STEP, pcs_node_health_step
from .iam import PcsInstanceProfile
from .instance_health import PcsInstanceHealthChecks, PcsNodeLifecycleActions
from .instance_health_resource import add_instance_health_checks, lifecycle_actions_property
from .login_node_group import PcsLoginNodeGroup as PcsLoginNodeGroup
from .login_node_group import PcsLoginNodeGroupOptions as PcsLoginNodeGroupOptions
from .purchase_option import purchase_option_for as purchase_option_for
from .slurm import (
    NodeGroupSettings,
    QueueSettings,
    settings_in_order,
    to_cfn_settings,
)
from .user_data import IMEX_PROLOG_PATH, imex_prolog_install_commands

if TYPE_CHECKING:
    from .cluster import PcsCluster
    from .queue import PcsQueue


#: Deprecated name of :class:`fmconstructs.storage.LustreMount` (the same class; until fmconstructs 0.4.0), whose
#: ``efa_interfaces_for_lustre`` keyword and attribute are now ``efa_interfaces`` (the old ones warn).
FileSystemMount = LustreMount


class PcsGpuNodeGroupOptions(TypedDict, total=False):
    """The options of :class:`PcsGpuNodeGroup` and :meth:`PcsCluster.add_gpu_node_group` (all but ``cluster``).

    :var instance_type: a catalog GPU type (``p5.48xlarge``, ``p6e-gb200.36xlarge`` ...), known at synthesis.
    :var ami: :class:`PcsAmi` (id or SSM parameter) with the PCS agent, Slurm, EFA and NVIDIA software.
    :var max_nodes: the group's maximum number of nodes (>= 1, or a number token); at most the capacity's
        instances when both are known. Was ``max_instance_count`` (removed in 0.3.0).
    :var min_nodes: default: ``max_nodes`` on Capacity Blocks (required there), else 0. Was ``min_instance_count``
        (removed in 0.3.0).
    :var capacity: default On-Demand; UltraServer types (p6e-gb200) need an ``UltraServerCapacityBlock``.
    :var spot: use Spot (On-Demand capacity only). Default False.
    :var subnet: the nodes' one subnet, on every network interface of the launch template and in ``SubnetIds``
        (see the module docstring); may be imported without its zone. Default: the cluster's subnet. Checked against
        the reservation's zone when both are known.
    :var efa_interface_count: fewer EFA interfaces than the catalog maximum. Default: all.
    :var efa_cards: which network cards carry EFA (:class:`~fmconstructs.networking.EfaCardSelection`). Default
        RECOMMENDED; on p6e-gb200, EVERY_GPU_CARD is the EC2 guide's other 1,600 Gbps layout (8 x 200 Gbps on the odd
        cards 1-15) instead of 4 x 400 Gbps on cards 1, 5, 9, 13.
    :var placement_group: default none (Capacity Blocks are already placed together; warned against there).
    :var instance_store_mount_point: NVMe RAID0 scratch; None skips it. Default ``/scratch``.
    :var mounts: Lustre file systems to mount (:class:`~fmconstructs.storage.LustreMount`).
    :var user_data_commands: your own steps, run after the built-in ones (see also :meth:`add_user_data`).
    :var instance_profile: default: the cluster's.
    :var security_groups: more groups for the primary interface, besides the cluster's.
    :var slurm_settings: node-group custom settings: a :class:`NodeGroupSetting` or a name on the PCS User Guide's
        compute node group list (:data:`~fmconstructs.pcs.slurm.NODE_GROUP_SETTINGS`, e.g. ``"Features"``); other
        names are refused. RealMemory at most the instance's memory.
    :var scale_down_idle_time: per-group idle time before scale-down (Slurm >= 25.11; 1 s .. 10,000,000 s).
    :var root_volume_size_gib: encrypted gp3 root volume (8 .. 16384 GiB). Default 200.
    :var node_group_name: 3-25 characters, a letter then letters, digits or '-' (PCS
        ``CreateComputeNodeGroup.computeNodeGroupName``). Default: generated by CloudFormation.
    :var tags: tags of the node group and of its launch template's instances and volumes.
    :var bootstrap_delivery: how the node set-up reaches the nodes (see the module docstring). Default None: an S3
        asset with a loader when the stack publishes file assets, else inline.
    :var node_health: node-join checks for this group (:mod:`.health`); ``NodeHealthOptions(enabled=False)`` turns
        them off here. Default None: the cluster's ``node_health``.
    :var instance_health_checks: PCS's own health monitoring and deep health checks
        (:class:`~fmconstructs.pcs.PcsInstanceHealthChecks`, Slurm 26.05 or later), set through a custom resource
        (:mod:`.instance_health_resource`); with a deep health check on, the group's boot gate runs no DCGM. Changing
        them replaces the group's instances after their jobs finish (warned). Default None: not managed.
    :var node_lifecycle_actions: PCS node lifecycle scripts (:class:`~fmconstructs.pcs.PcsNodeLifecycleActions`,
        ``NodeLifecycleActions`` of the node group; PCS agent 1.5.0-1 or later). Default None.
    """

    instance_type: Required[str]
    ami: Required[PcsAmi]
    max_nodes: Required[int | float]
    min_nodes: int | float | None
    capacity: Capacity | None
    spot: bool
    subnet: ec2.ISubnet | None
    efa_interface_count: int | None
    efa_cards: EfaCardSelection
    placement_group: ClusterPlacementGroup | None
    instance_store_mount_point: str | None
    mounts: Sequence[LustreMount]
    user_data_commands: Sequence[str]
    instance_profile: PcsInstanceProfile | None
    security_groups: Sequence[ec2.ISecurityGroup]
    slurm_settings: NodeGroupSettings | None
    scale_down_idle_time: Duration | None
    root_volume_size_gib: int | float
    node_group_name: str | None
    tags: Mapping[str, str] | None
    bootstrap_delivery: BootstrapDelivery | None
    node_health: NodeHealthOptions | None
    instance_health_checks: PcsInstanceHealthChecks | None
    node_lifecycle_actions: PcsNodeLifecycleActions | None


IMEX_PROLOG_STEP = "imex-prolog"


@jsii.implements(ec2.IConnectable)
class PcsGpuNodeGroup(_PcsNodeGroupBase):
    """A GPU compute node group (``AWS::PCS::ComputeNodeGroup``, child id "Resource"; launch template "LaunchTemplate").

    :param cluster: the :class:`PcsCluster`.
    :param options: :class:`PcsGpuNodeGroupOptions` (the same keywords as :meth:`PcsCluster.add_gpu_node_group`).
    """

    @located
    @removed_keywords("PcsGpuNodeGroup", max_instance_count="max_nodes", min_instance_count="min_nodes")
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: PcsCluster,
        **options: Unpack[PcsGpuNodeGroupOptions],
    ) -> None:
        check_scope_id(scope, id)
        cluster = check_cluster("cluster", cluster)
        props = _GpuNodeProps.resolve("PcsGpuNodeGroup", options)
        self.instance_health_checks = props.instance_health_checks
        self.node_health = _node_health(props.node_health or cluster.node_health, props.instance_health_checks)
        self.instance_spec: InstanceSpec = props.instance_spec
        self.capacity: Capacity = props.capacity
        max_nodes, min_nodes = props.max_nodes, cast(int | float, props.min_nodes)
        # The controller size holds every node group's nodes (PcsCluster "Controller size").
        cluster._check_node_count(_group_path(scope, id), "max_nodes", max_nodes)
        super().__init__(scope, id)
        self.max_nodes = max_nodes
        self.min_nodes = min_nodes
        self.subnet = props.subnet or cluster.subnet
        self._setup(cluster, props.instance_profile)
        settings = self._validate(ami=props.ami, spot=props.spot, slurm_settings=props.slurm_settings, idle=props.idle)
        self.purchase_option = purchase_option_for(self.capacity, spot=props.spot)
        self.launch_template = self._build_launch_template(props)
        self.connections = self.launch_template.connections
        self.bootstrap = self.launch_template.bootstrap
        self._build_bootstrap_steps(props)
        self._slurm_settings = settings
        self.resource = self._build_resource(props.ami, props, settings)
        # Nodes register as soon as they boot: the role's policies must exist before PCS launches any.
        self.resource.node.add_dependency(self.instance_profile.policy)
        self.instance_health_checks_resource = self._add_instance_health_checks(props.instance_health_checks)
        write_plan_record(self.resource, PlanKind.NODE_GROUP, backend="pcs")  # what `fmc plan` reads
        cluster._register_node_count(self.node.path, "max_nodes", max_nodes)

    # --- build steps ----------------------------------------------------------------------------------------------
    def _build_launch_template(self, props: _GpuNodeProps) -> GpuLaunchTemplate:
        """The foundation's launch template with the PCS interface policy and MIME user data."""
        cluster = self.cluster
        return GpuLaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=self.instance_spec.instance_type,
            vpc=cluster.vpc,
            policy=InterfacePolicy.PCS,
            capacity=self.capacity,
            max_nodes=cast(int, self.max_nodes),  # a whole number, or a number token (rendered, not compared)
            # SubnetId on every interface, as every PCS example has it (PCS UG working-with_networking_efa_create-lt).
            subnet=self.subnet,
            efa_security_group=cluster.efa_security_group,
            security_groups=[cluster.security_group, *props.security_groups],
            placement_group=props.placement_group,
            efa_interface_count=props.efa_interface_count,
            efa_cards=props.efa_cards,
            instance_store_mount_point=props.instance_store_mount_point,
            root_volume_size_gib=cast(int, props.root_volume_size_gib),  # checked: a whole number or a number token
            tags=props.tags,
            user_data_format=UserDataFormat.MIME_MULTIPART,  # PCS requires MIME multi-part user data
            bootstrap_delivery=props.bootstrap_delivery,
            bootstrap_role=self.instance_profile.role,
            bootstrap_name=default_bootstrap_name(self),
        )

    def _build_bootstrap_steps(self, props: _GpuNodeProps) -> None:
        """After the launch template's own steps: mounts, the IMEX prolog, node health, ``user_data_commands``."""
        cluster = self.cluster
        self._add_mounts(props.mounts)
        if cluster.imex_enabled:
            self.bootstrap.add_step(
                IMEX_PROLOG_STEP,
                imex_prolog_install_commands(IMEX_PROLOG_PATH, slurm_version=cluster.slurm_version.value),
            )
        self._add_node_health(props.mounts)
        if props.user_data_commands:
            self.bootstrap.add_commands(*props.user_data_commands)

    def _build_resource(
        self, ami: PcsAmi, props: _GpuNodeProps, settings: Mapping[str, str]
    ) -> pcs.CfnComputeNodeGroup:
        """The ``AWS::PCS::ComputeNodeGroup`` on the launch template's latest version."""
        return pcs.CfnComputeNodeGroup(
            self,
            "Resource",
            cluster_id=self.cluster.cluster_id,
            name=props.node_group_name,
            ami_id=ami.resolve(self),
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=self.launch_template.launch_template_id,
                version=self.launch_template.version_number,
            ),
            iam_instance_profile_arn=self.instance_profile.instance_profile_arn,
            instance_configs=[
                pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=self.instance_spec.instance_type)
            ],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=self.min_nodes, max_instance_count=self.max_nodes
            ),
            subnet_ids=[self.subnet.subnet_id],
            purchase_option=self.purchase_option.value,
            slurm_configuration=_slurm_configuration(settings, props.idle),
            node_lifecycle_actions=(
                lifecycle_actions_property(props.node_lifecycle_actions) if props.node_lifecycle_actions else None
            ),
            tags=props.tags or None,
        )

    def _add_instance_health_checks(self, checks: PcsInstanceHealthChecks | None) -> cdk.CustomResource | None:
        """PCS's instance health checks through the custom resource (:mod:`.instance_health_resource`), announced."""
        if checks is None:
            return None
        resource = add_instance_health_checks(
            self,
            checks,
            cluster_id=self.cluster.cluster_id,
            cluster_arn=self.cluster.cluster_arn,
            node_group_id=self.node_group_id,
            node_group_arn=self.node_group_arn,
            node_role=self.instance_profile.role,
            instance_profile_arn=self.instance_profile.instance_profile_arn,
        )
        add_warning(
            self,
            WarningId.PCS_INSTANCE_HEALTH_CHECKS_REPLACE_INSTANCES,
            "instance_health_checks: changing them replaces all this node group's instances after their running "
            "jobs finish (PCS User Guide 'Configuring instance health checks'); removing the option leaves PCS's "
            "checks as they are (deploy PcsInstanceHealthChecks.off() first to turn them off)",
        )
        return resource

    # --- validation: the cross-property rules (:mod:`.rules`) ---------------------------------------------------------
    def _validate(
        self,
        *,
        ami: PcsAmi,
        spot: bool,
        slurm_settings: NodeGroupSettings | None,
        idle: int | float | None,
    ) -> dict[str, str]:
        spec, capacity, cluster = self.instance_spec, self.capacity, self.cluster
        # min <= max, min == max on Capacity Blocks, max <= the reservation's size; number tokens are not compared.
        capacity.validate_for(spec, min_nodes=self.min_nodes, max_nodes=self.max_nodes)
        subnet_id = self.subnet.subnet_id
        rules.subnet_is_in_the_reservation_zone(
            subnet_zone=subnet_zone(self.subnet),
            capacity_zone=getattr(capacity, "zone", None),
            subnet=subnet_id if known(subnet_id) else self.subnet.node.path,
            capacity_kind=capacity.kind,
        )
        purchase_option_for(capacity, spot=spot)
        ami.check_architecture(spec.architecture, spec.instance_type)
        rules.ultraserver_types_need_an_ultraserver_block(spec, capacity.kind)
        rules.ultraserver_groups_need_imex(
            capacity_kind=capacity.kind, slurm_version=cluster.slurm_version, imex_enabled=cluster.imex_enabled
        )
        # checked by _GpuNodeProps.resolve; NodeGroupSetting keys are str enums
        settings = cast("dict[str, str]", dict(slurm_settings or {}))
        rules.real_memory_fits_the_instance(settings, spec)
        rules.node_group_idle_time_needs_slurm_25_11(idle, cluster.slurm_version)
        rules.instance_health_checks_need_slurm_26_05(self.instance_health_checks, cluster.slurm_version)
        rules.deep_health_checks_need_nvidia_gpus(self.instance_health_checks, spec)
        return settings

    def _add_node_health(self, mounts: Sequence[LustreMount]) -> None:
        """The ``node-health`` step: the boot gate, and the prolog runner and checks of a cluster that runs them."""
        cluster = self.cluster
        if self.node_health is None:
            return
        step = pcs_node_health_step(
            self.node_health,
            instance_type=self.instance_spec.instance_type,
            efa_interfaces=self.efa_interface_count,
            lustre_mount_point=mounts[0].mount_point if mounts else None,
            slurm_version=cluster.slurm_version.value,
            cluster_prolog=cluster.runs_prolog_checks,
            imex=cluster.imex_enabled,
            cluster_idle_checks=cluster.runs_idle_checks,
        )
        if step.files or step.commands:
            self.bootstrap.add_step(NODE_HEALTH_STEP, step.commands, files=step.files)

    @property
    def slurm_custom_settings(self) -> tuple[tuple[str, str], ...]:
        """``SlurmConfiguration.SlurmCustomSettings`` as ``(name, value)`` pairs in the template's order (by name):
        the node attributes PCS puts on this group's ``NodeName`` lines in ``slurm.conf``."""
        return settings_in_order(self._slurm_settings)

    @property
    def _uses_efa(self) -> bool:
        return self.launch_template.efa_interface_count > 0

    @property
    def on_ultraserver(self) -> bool:
        """Whether the group runs on an UltraServer Capacity Block (its queues are exclusive)."""
        return self.capacity.kind is CapacityKind.ULTRASERVER_CAPACITY_BLOCK

    @property
    def efa_interface_count(self) -> int:
        return self.launch_template.efa_interface_count

    @property
    def _max_nodes(self) -> int | float:
        return self.max_nodes

    max_instance_count = RemovedAttribute("max_nodes")
    min_instance_count = RemovedAttribute("min_nodes")

    @property
    def architecture(self) -> CpuArchitecture:
        return self.instance_spec.architecture

    def add_queue(
        self,
        id: str,
        *,
        queue_name: str | None = None,
        slurm_settings: QueueSettings | None = None,
    ) -> PcsQueue:
        """A queue of this node group's cluster that maps this node group alone (created under the cluster)."""
        return self.cluster.add_queue(id, node_groups=[self], queue_name=queue_name, slurm_settings=slurm_settings)


def _node_health(options: NodeHealthOptions | None, checks: PcsInstanceHealthChecks | None) -> NodeHealthOptions | None:
    """The group's node health: without DCGM at boot where PCS's deep health check runs it (nothing runs twice)."""
    if options is None or checks is None or not checks.deep_check_on:
        return options
    return options.without_dcgm()


def _slurm_configuration(
    settings: Mapping[str, str], idle: int | float | None
) -> pcs.CfnComputeNodeGroup.SlurmConfigurationProperty | None:
    """The node group's custom settings and idle time; None when it has neither."""
    if not settings and idle is None:
        return None
    return pcs.CfnComputeNodeGroup.SlurmConfigurationProperty(
        slurm_custom_settings=[
            pcs.CfnComputeNodeGroup.SlurmCustomSettingProperty(
                parameter_name=s["ParameterName"], parameter_value=s["ParameterValue"]
            )
            for s in to_cfn_settings(settings)
        ]
        or None,
        scale_down_idle_time_in_seconds=idle,
    )
