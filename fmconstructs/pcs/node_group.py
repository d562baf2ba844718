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
capacity-blocks-configure-cng: give an UltraServer block its ``reservation_id``). Scaling is checked against the
capacity: ``max_instance_count`` at most the block's size, and ``min_instance_count == max_instance_count`` on blocks
(min defaults to max there, to 0 elsewhere).

User data, in order: the NVMe RAID0 scratch volume (from the launch template), the file-system mounts
(:class:`FileSystemMount`, via the storage construct's ``mount_commands``), the IMEX prolog when the cluster enables
it, ``user_data_commands``, then anything added later with :meth:`add_user_data` (the hook for your own steps). It
is rendered as the MIME multi-part archive PCS requires (``UserDataFormat.MIME_MULTIPART`` of the launch template)
and runs after the node registers with PCS, before ``slurmd`` starts.

Note for the identity that deploys the stack: PCS needs ``ec2:DescribeCapacityReservations`` to create a Capacity
Block node group, and the block must be scheduled or active at that time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Annotations, Duration, Fn, IResolveContext, IStringProducer, Lazy, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from ..capacity import Capacity, CapacityKind, OnDemand
from ..catalog import CpuArchitecture, InstanceSpec, get_instance_spec
from ..compute import GpuLaunchTemplate
from ..compute.launch_template import DEFAULT_ROOT_VOLUME_SIZE_GIB, UserDataFormat, UserDataSizeValidation
from ..errors import FmValidationError
from ..networking import ClusterPlacementGroup, InterfacePolicy
from ..storage.client import lustre_efa_interfaces
from ..storage.lustre import LustreFileSystemBase
from .ami import PcsAmi
from .cluster import NAME_PATTERN, _check_idle_time
from .iam import PcsInstanceProfile
from .slurm import (
    MIN_SLURM_VERSION_FOR_IMEX,
    MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME,
    NodeGroupSetting,
    PurchaseOption,
    QueueSetting,
    check_settings,
    to_cfn_settings,
)
from .user_data import IMEX_PROLOG_PATH, imex_prolog_install_commands, pcs_mime_user_data

if TYPE_CHECKING:
    from .cluster import PcsCluster
    from .queue import PcsQueue

#: Warning id: an EFA-enabled file system whose EFA group is not the cluster's (LNet over EFA would not connect).
WARNING_FSX_EFA_GROUP = "fmconstructs:pcs-fsx-efa-security-group"
#: ``ComputeNodeGroupSlurmConfiguration.scaleDownIdleTimeInSeconds`` maximum (PCS API reference).
MAX_NODE_GROUP_IDLE_SECONDS = 10_000_000
_COUNT_PARAMETERS = {"min_count": "min_instance_count", "max_count": "max_instance_count"}
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")


@dataclass(frozen=True)
class FileSystemMount:
    """Mount ``file_system`` at ``mount_point`` on every node of a node group (default ``/fsx``)."""

    file_system: LustreFileSystemBase
    mount_point: str = "/fsx"
    efa_interfaces_for_lustre: int | None = None
    """EFA interfaces LNet uses on GPU nodes (default: the FSx UG per-type count, capped by the node's EFA
    interfaces; 0: TCP). See :func:`fmconstructs.storage.client.lustre_efa_interfaces`."""


def purchase_option_for(capacity: Capacity, *, spot: bool = False) -> PurchaseOption:
    """The PCS purchase option for a capacity choice; SPOT only on plain On-Demand capacity."""
    if capacity.is_capacity_block:
        option = PurchaseOption.CAPACITY_BLOCK
    else:
        option = PurchaseOption.SPOT if spot else PurchaseOption.ONDEMAND
    if spot and capacity.kind is not CapacityKind.ON_DEMAND:
        raise FmValidationError(
            "spot", spot, f"False on a {capacity.kind.value} (Spot applies to On-Demand capacity only)"
        )
    return option


@jsii.implements(IStringProducer)
class _MimeUserDataProducer:
    """Renders the node's shell user data as PCS's MIME archive at synthesis (later commands included)."""

    def __init__(self, user_data: ec2.UserData) -> None:
        self._user_data = user_data

    def produce(self, context: IResolveContext) -> str:
        return Fn.base64(pcs_mime_user_data(self._user_data.render()))


class _PcsNodeGroupBase(Construct):
    """What GPU and login node groups share: the cluster, the instance profile, mounts and the user-data hook."""

    cluster: PcsCluster
    user_data: ec2.UserData
    resource: pcs.CfnComputeNodeGroup
    instance_profile: PcsInstanceProfile

    def _setup(self, cluster: PcsCluster, instance_profile: PcsInstanceProfile | None, name: str | None) -> None:
        self.cluster = cluster
        self.instance_profile = instance_profile or cluster.instance_profile
        if name is not None and not Token.is_unresolved(name) and not NAME_PATTERN.match(name):
            raise FmValidationError("node_group_name", name, "a letter followed by 1-40 letters, digits or '-'")

    def _add_mounts(self, mounts: Sequence[FileSystemMount]) -> None:
        points = [m.mount_point for m in mounts]
        if len(points) != len(set(points)):
            raise FmValidationError("mounts", points, "distinct mount points")
        for mount in mounts:
            self.add_mount(mount)

    def add_mount(self, mount: FileSystemMount) -> None:
        """Mount a Lustre file system on the nodes and open the Lustre ports between it and the cluster's group."""
        if not isinstance(mount, FileSystemMount):
            raise FmValidationError("mount", mount, "a FileSystemMount")
        fs = mount.file_system
        fs.allow_clients_from(self.cluster.security_group)
        efa_group = getattr(fs, "efa_security_group", None)
        if (
            fs.efa_enabled
            and efa_group is not None
            and self._uses_efa
            and efa_group is not self.cluster.efa_security_group.security_group
        ):
            Annotations.of(self).add_warning_v2(
                WARNING_FSX_EFA_GROUP,
                f"{fs.node.path} is EFA-enabled with another EFA security group than the cluster's; LNet over "
                "EFA only connects inside one group: pass efa_security_group=cluster.efa_security_group",
            )
        # LNet over EFA with the FSx UG per-type interface count (capped by the node's EFA interfaces); login nodes
        # and nodes without EFA mount over TCP. EFA clients count against the file system's 1,024 EFA connections.
        spec: InstanceSpec | None = getattr(self, "instance_spec", None)
        node_efa = self.efa_interface_count if self._uses_efa else 0
        count = lustre_efa_interfaces(
            efa_enabled=fs.efa_enabled,
            instance_spec=spec,
            efa_interfaces_for_lustre=mount.efa_interfaces_for_lustre,
            node_efa_interfaces=node_efa,
        )
        self.user_data.add_commands(
            *fs.mount_commands(
                mount.mount_point,
                # GPUDirect Storage only where there is EFA for Lustre; default otherwise.
                gpudirect_storage=None if count else False,
                instance_spec=spec,
                efa_interfaces_for_lustre=mount.efa_interfaces_for_lustre,
                node_efa_interfaces=node_efa,
            )
        )
        if count:
            fs.register_efa_clients(self, max_nodes=self._max_nodes, efa_interfaces_per_node=count)

    @property
    def _uses_efa(self) -> bool:
        return False

    @property
    def efa_interface_count(self) -> int:
        return 0

    @property
    def _max_nodes(self) -> int | float:
        raise NotImplementedError

    def add_user_data(self, *commands: str) -> None:
        """The hook for your own node set-up: shell commands appended after the built-in steps (run as root, after
        PCS registration and before ``slurmd`` starts; keep them idempotent, they run on every new node)."""
        self.user_data.add_commands(*commands)

    @property
    def node_group_id(self) -> str:
        return self.resource.attr_id

    @property
    def node_group_arn(self) -> str:
        return self.resource.attr_arn


@jsii.implements(ec2.IConnectable)
class PcsGpuNodeGroup(_PcsNodeGroupBase):
    """A GPU compute node group (``AWS::PCS::ComputeNodeGroup``, child id "Resource"; launch template "LaunchTemplate").

    :param cluster: the :class:`PcsCluster`.
    :param instance_type: a catalog GPU type (``p5.48xlarge``, ``p6e-gb200.36xlarge`` ...).
    :param ami: :class:`PcsAmi` (id or SSM parameter) with the PCS agent, Slurm, EFA and NVIDIA software.
    :param max_instance_count: at most the capacity's instances when known.
    :param min_instance_count: default: ``max_instance_count`` on Capacity Blocks (required there), else 0.
    :param capacity: default On-Demand; UltraServer types (p6e-gb200) need an ``UltraServerCapacityBlock``.
    :param spot: use Spot (On-Demand capacity only). Default False.
    :param subnet: the nodes' one subnet, on every network interface of the launch template and in ``SubnetIds``
        (see the module docstring). Default: the cluster's subnet. Checked against the reservation's zone when both
        are known.
    :param efa_interface_count: fewer EFA interfaces than the catalog maximum. Default: all.
    :param placement_group: default none (Capacity Blocks are already placed together; warned against there).
    :param instance_store_mount_point: NVMe RAID0 scratch; None skips it. Default ``/scratch``.
    :param mounts: Lustre file systems to mount (:class:`FileSystemMount`).
    :param user_data_commands: your own steps, run after the built-in ones (see also :meth:`add_user_data`).
    :param instance_profile: default: the cluster's.
    :param security_groups: more groups for the primary interface, besides the cluster's.
    :param slurm_settings: node-group custom settings (:class:`NodeGroupSetting`); RealMemory at most the
        instance's memory.
    :param scale_down_idle_time: per-group idle time before scale-down (Slurm >= 25.11; 1 s .. 10,000,000 s).
    :param node_group_name: default: generated by CloudFormation.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: PcsCluster,
        instance_type: str,
        ami: PcsAmi,
        max_instance_count: int,
        min_instance_count: int | None = None,
        capacity: Capacity | None = None,
        spot: bool = False,
        subnet: ec2.ISubnet | None = None,
        efa_interface_count: int | None = None,
        placement_group: ClusterPlacementGroup | None = None,
        instance_store_mount_point: str | None = "/scratch",
        mounts: Sequence[FileSystemMount] = (),
        user_data_commands: Sequence[str] = (),
        instance_profile: PcsInstanceProfile | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        slurm_settings: Mapping[NodeGroupSetting, str] | None = None,
        scale_down_idle_time: Duration | None = None,
        root_volume_size_gib: int = DEFAULT_ROOT_VOLUME_SIZE_GIB,
        node_group_name: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.instance_spec: InstanceSpec = get_instance_spec(instance_type)
        self.capacity: Capacity = capacity if capacity is not None else OnDemand()
        if min_instance_count is None:
            min_instance_count = max_instance_count if self.capacity.requires_fixed_size else 0
        self.min_instance_count = min_instance_count
        self.max_instance_count = max_instance_count
        self.subnet: ec2.ISubnet = subnet or cluster.subnet
        self._setup(cluster, instance_profile, node_group_name)
        settings = self._validate(
            ami=ami,
            spot=spot,
            slurm_settings=slurm_settings,
            scale_down_idle_time=scale_down_idle_time,
        )
        self.purchase_option = purchase_option_for(self.capacity, spot=spot)

        self.launch_template = GpuLaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=instance_type,
            vpc=cluster.vpc,
            policy=InterfacePolicy.PCS,
            capacity=self.capacity,
            node_count=max_instance_count,
            # SubnetId on every interface, as every PCS example has it (PCS UG working-with_networking_efa_create-lt).
            subnet=self.subnet,
            efa_security_group=cluster.efa_security_group,
            security_groups=[cluster.security_group, *security_groups],
            placement_group=placement_group,
            efa_interface_count=efa_interface_count,
            instance_store_mount_point=instance_store_mount_point,
            root_volume_size_gib=root_volume_size_gib,
            tags=tags,
            user_data_format=UserDataFormat.MIME_MULTIPART,  # PCS requires MIME multi-part user data
        )
        self.connections = self.launch_template.connections
        self.user_data = self.launch_template.user_data
        self._add_mounts(mounts)
        if cluster.imex_enabled:
            self.user_data.add_commands(
                *imex_prolog_install_commands(IMEX_PROLOG_PATH, slurm_version=cluster.slurm_version.value)
            )
        if user_data_commands:
            self.user_data.add_commands(*user_data_commands)

        self.resource = pcs.CfnComputeNodeGroup(
            self,
            "Resource",
            cluster_id=cluster.cluster_id,
            name=node_group_name,
            ami_id=ami.resolve(self),
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=self.launch_template.launch_template_id,
                version=self.launch_template.version_number,
            ),
            iam_instance_profile_arn=self.instance_profile.instance_profile_arn,
            instance_configs=[pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=instance_type)],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=min_instance_count, max_instance_count=max_instance_count
            ),
            subnet_ids=[self.subnet.subnet_id],
            purchase_option=self.purchase_option.value,
            slurm_configuration=(
                pcs.CfnComputeNodeGroup.SlurmConfigurationProperty(
                    slurm_custom_settings=[
                        pcs.CfnComputeNodeGroup.SlurmCustomSettingProperty(
                            parameter_name=s["ParameterName"], parameter_value=s["ParameterValue"]
                        )
                        for s in to_cfn_settings(settings)
                    ]
                    or None,
                    scale_down_idle_time_in_seconds=(
                        int(scale_down_idle_time.to_seconds()) if scale_down_idle_time is not None else None
                    ),
                )
                if settings or scale_down_idle_time is not None
                else None
            ),
            tags=dict(tags) if tags else None,
        )
        # Nodes register as soon as they boot: the role's policies must exist before PCS launches any.
        self.resource.node.add_dependency(self.instance_profile.policy)

    # --- validation: one small check per rule ---------------------------------------------------------------------
    def _validate(
        self,
        *,
        ami: PcsAmi,
        spot: bool,
        slurm_settings: Mapping[NodeGroupSetting, str] | None,
        scale_down_idle_time: Duration | None,
    ) -> dict[NodeGroupSetting, str]:
        spec, capacity = self.instance_spec, self.capacity
        _check_count("max_instance_count", self.max_instance_count, minimum=1)
        _check_count("min_instance_count", self.min_instance_count, minimum=0)
        if self.min_instance_count > self.max_instance_count:
            raise FmValidationError(
                "min_instance_count", self.min_instance_count, f"at most max_instance_count ({self.max_instance_count})"
            )
        try:
            capacity.validate_for(spec, min_count=self.min_instance_count, max_count=self.max_instance_count)
        except FmValidationError as error:  # name the props of this construct, not the capacity's arguments
            renamed = _COUNT_PARAMETERS.get(error.parameter, error.parameter)
            allowed = error.allowed.replace("max_count", "max_instance_count")
            raise FmValidationError(renamed, error.value, allowed) from error
        capacity.check_subnet(self.subnet)
        purchase_option_for(capacity, spot=spot)
        if not isinstance(ami, PcsAmi):
            raise FmValidationError("ami", ami, "a PcsAmi (PcsAmi.from_image_id or PcsAmi.from_ssm_parameter)")
        ami.check_architecture(spec.architecture, spec.instance_type)
        self._check_ultraserver()
        settings = check_settings("slurm_settings", slurm_settings, NodeGroupSetting)
        real_memory = settings.get(NodeGroupSetting.REAL_MEMORY)
        if real_memory is not None and not Token.is_unresolved(real_memory) and int(real_memory) > spec.memory_mib:
            raise FmValidationError(
                "slurm_settings[RealMemory]",
                real_memory,
                f"at most {spec.memory_mib} MiB, the memory of {spec.instance_type}",
            )
        if scale_down_idle_time is not None:
            version = self.cluster.slurm_version
            if not version.at_least(MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME):
                raise FmValidationError(
                    "scale_down_idle_time",
                    scale_down_idle_time.to_human_string(),
                    f"None on Slurm {version.value} (per-node-group idle time needs "
                    f"{MIN_SLURM_VERSION_FOR_NODE_GROUP_IDLE_TIME.value} or later)",
                )
            _check_idle_time("scale_down_idle_time", scale_down_idle_time, maximum_seconds=MAX_NODE_GROUP_IDLE_SECONDS)
        return settings

    def _check_ultraserver(self) -> None:
        spec, capacity, cluster = self.instance_spec, self.capacity, self.cluster
        on_ultraserver_block = capacity.kind is CapacityKind.ULTRASERVER_CAPACITY_BLOCK
        if spec.ultraserver_types and not on_ultraserver_block:
            raise FmValidationError(
                "capacity",
                capacity.kind.value,
                f"an UltraServerCapacityBlock for {spec.instance_type} (sold only as UltraServer Capacity Blocks: "
                f"{', '.join(spec.ultraserver_types)})",
            )
        if not on_ultraserver_block:
            return
        if not cluster.slurm_version.at_least(MIN_SLURM_VERSION_FOR_IMEX):
            raise FmValidationError(
                "cluster.slurm_version",
                cluster.slurm_version.value,
                f"{MIN_SLURM_VERSION_FOR_IMEX.value} or later for UltraServer node groups (NVIDIA IMEX on PCS)",
            )
        if not cluster.imex_enabled:
            raise FmValidationError(
                "cluster.enable_imex", False, "True for UltraServer node groups (PCS runs IMEX from a Slurm prolog)"
            )

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
        return self.max_instance_count

    @property
    def architecture(self) -> CpuArchitecture:
        return self.instance_spec.architecture

    def add_queue(
        self,
        id: str,
        *,
        queue_name: str | None = None,
        slurm_settings: Mapping[QueueSetting, str] | None = None,
    ) -> PcsQueue:
        """A queue of this node group's cluster that maps this node group alone (created under the cluster)."""
        return self.cluster.add_queue(id, node_groups=[self], queue_name=queue_name, slurm_settings=slurm_settings)


@jsii.implements(ec2.IConnectable)
class PcsLoginNodeGroup(_PcsNodeGroupBase):
    """Login nodes: a static PCS compute node group that no queue maps (users reach it with Session Manager).

    Its launch template is a plain ``AWS::EC2::LaunchTemplate`` (no GPU, no EFA): IMDSv2 required, encrypted gp3
    root volume, the cluster's security group, MIME user data with the same mount and hook steps as GPU groups.

    :param instance_type: default ``m7i.xlarge`` (any type; login nodes are not in the GPU catalog).
    :param instance_count: static number of login nodes (min == max), default 1.
    :param ami: :class:`PcsAmi` with the PCS agent and Slurm (the sample AMIs work here).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: PcsCluster,
        ami: PcsAmi,
        instance_type: str = "m7i.xlarge",
        instance_count: int = 1,
        subnet: ec2.ISubnet | None = None,
        mounts: Sequence[FileSystemMount] = (),
        user_data_commands: Sequence[str] = (),
        instance_profile: PcsInstanceProfile | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        root_volume_size_gib: int = 100,
        node_group_name: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self._setup(cluster, instance_profile, node_group_name)
        if not isinstance(instance_type, str) or not _INSTANCE_TYPE.match(instance_type):
            raise FmValidationError("instance_type", instance_type, "an EC2 instance type such as 'm7i.xlarge'")
        _check_count("instance_count", instance_count, minimum=1)
        if not isinstance(ami, PcsAmi):
            raise FmValidationError("ami", ami, "a PcsAmi (PcsAmi.from_image_id or PcsAmi.from_ssm_parameter)")
        if not 8 <= root_volume_size_gib <= 16384:
            raise FmValidationError("root_volume_size_gib", root_volume_size_gib, "between 8 and 16384 (gp3 limits)")
        self.instance_type = instance_type
        self.instance_count = instance_count
        self.subnet = subnet or cluster.subnet
        groups = [cluster.security_group, *security_groups]
        self.connections = ec2.Connections(security_groups=groups)
        self.user_data = ec2.UserData.for_linux()
        self._add_mounts(mounts)
        if user_data_commands:
            self.user_data.add_commands(*user_data_commands)

        self.launch_template = ec2.CfnLaunchTemplate(
            self,
            "LaunchTemplate",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                instance_type=instance_type,
                security_group_ids=[g.security_group_id for g in groups],
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_tokens="required", http_endpoint="enabled", http_put_response_hop_limit=1
                ),
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name="/dev/xvda",
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            volume_type="gp3",
                            volume_size=root_volume_size_gib,
                            encrypted=True,
                            delete_on_termination=True,
                        ),
                    )
                ],
                user_data=Lazy.uncached_string(_MimeUserDataProducer(self.user_data)),
                tag_specifications=[
                    ec2.CfnLaunchTemplate.TagSpecificationProperty(
                        resource_type=resource_type,
                        tags=[{"key": "fmconstructs:role", "value": "pcs-login"}]
                        + [{"key": k, "value": v} for k, v in (tags or {}).items()],
                    )
                    for resource_type in ("instance", "volume")
                ],
            ),
        )
        self.launch_template.node.add_validation(UserDataSizeValidation(self.launch_template))
        self.resource = pcs.CfnComputeNodeGroup(
            self,
            "Resource",
            cluster_id=cluster.cluster_id,
            name=node_group_name,
            ami_id=ami.resolve(self),
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=self.launch_template.ref, version=self.launch_template.attr_latest_version_number
            ),
            iam_instance_profile_arn=self.instance_profile.instance_profile_arn,
            instance_configs=[pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=instance_type)],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=instance_count, max_instance_count=instance_count
            ),
            subnet_ids=[self.subnet.subnet_id],
            purchase_option=PurchaseOption.ONDEMAND.value,
            tags=dict(tags) if tags else None,
        )
        self.resource.node.add_dependency(self.instance_profile.policy)

    @property
    def _max_nodes(self) -> int | float:
        return self.instance_count


def _check_count(parameter: str, value: int, *, minimum: int) -> None:
    if Token.is_unresolved(value):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FmValidationError(parameter, value, f"an integer of at least {minimum}")
