"""GpuNodeGroup: an EKS managed node group of GPU instances on an EFA launch template from the foundation.

- The launch template is a :class:`~fmconstructs.compute.GpuLaunchTemplate` with the EKS managed-node-group interface
  policy (no ``SubnetId`` in the template, EKS User Guide "device-management-efa"), IMDSv2 with hop limit 2 (pods
  reach the instance metadata through one more hop), the cluster security group and the EFA security group on the
  interfaces (a template with security groups replaces the cluster group EKS would add), and MIME multi-part user
  data (EKS "launch-templates": required when the template has user data but no AMI).
- The AMI type comes from the catalog (``InstanceSpec.eks_ami_type``): AL2023 NVIDIA x86_64, or ARM for GB200.
- EFA groups live in one subnet, so one availability zone (EFA traffic cannot cross zones); the subnet must be in the
  reservation's zone when both are known.
- Capacity: On-Demand and targeted ODCRs run as ``ON_DEMAND`` (the reservation target is in the template), Capacity
  Blocks and UltraServer blocks as ``CAPACITY_BLOCK`` (EKS "capacity-blocks-mng": custom launch template required).
- FSx for Lustre clients (:meth:`GpuNodeGroup.add_lustre_client`): pre-bootstrap shell in the user data installs the
  Lustre client, configures LNet over EFA (FSx for Lustre User Guide "Configuring EFA clients") and mounts the file
  system on the host, as the EKS User Guide "fsx-csi-tuning-efa" does with eksctl ``preBootstrapCommands``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Required, TypedDict

from aws_cdk import Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..capacity import Capacity, OnDemand, UltraServerCapacityBlock
from ..catalog import InstanceSpec, get_instance_spec
from ..compute.launch_template import DEFAULT_ROOT_VOLUME_SIZE_GIB, GpuLaunchTemplate, UserDataFormat
from ..errors import FmValidationError
from ..networking import ClusterPlacementGroup, InterfacePolicy
from ..storage.client import lustre_efa_interfaces
from ..storage.lustre import LustreFileSystemBase
from .addons import EFA_PRESENT_LABEL, GPU_PRESENT_LABEL, GPU_TAINT_KEY
from .versions import MIN_ULTRASERVER_VERSION, version_tuple

if TYPE_CHECKING:
    from .cluster import GpuEksCluster

#: IMDSv2 hop limit for EKS nodes: 2, so that containers (one network hop further) reach the metadata service.
EKS_IMDS_HOP_LIMIT = 2

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


class GpuNodeGroupOptions(TypedDict, total=False):
    """Options of :meth:`GpuEksCluster.add_gpu_node_group` (the :class:`GpuNodeGroup` props without ``cluster``)."""

    instance_type: Required[str]
    max_size: Required[int]
    min_size: int | None
    desired_size: int | None
    capacity: Capacity | None
    subnets: Sequence[ec2.ISubnet] | None
    placement_group: ClusterPlacementGroup | None
    use_placement_group: bool | None
    efa_interface_count: int | None
    labels: Mapping[str, str] | None
    taints: Sequence[eks.TaintSpec] | None
    instance_store_raid0: bool
    root_volume_size_gib: int
    nodegroup_name: str | None
    node_role: iam.IRole | None
    enable_node_auto_repair: bool
    efa_interfaces_for_lustre: int | None


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
    return eks.CapacityType.CAPACITY_BLOCK if capacity.is_capacity_block else eks.CapacityType.ON_DEMAND


def eks_ami_type(spec: InstanceSpec) -> eks.NodegroupAmiType:
    """The node group AMI type the catalog records for ``spec`` (``EksAmiType`` names match ``NodegroupAmiType``)."""
    ami_type: eks.NodegroupAmiType = getattr(eks.NodegroupAmiType, spec.eks_ami_type.name)
    return ami_type


class GpuNodeGroup(Construct):
    """A managed node group of one GPU instance type with every EFA interface, labels and the GPU taint.

    Create it through :meth:`GpuEksCluster.add_gpu_node_group` (same options) or directly with ``cluster=``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: GpuEksCluster,
        instance_type: str,
        max_size: int,
        min_size: int | None = None,
        desired_size: int | None = None,
        capacity: Capacity | None = None,
        subnets: Sequence[ec2.ISubnet] | None = None,
        placement_group: ClusterPlacementGroup | None = None,
        use_placement_group: bool | None = None,
        efa_interface_count: int | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[eks.TaintSpec] | None = None,
        instance_store_raid0: bool = True,
        root_volume_size_gib: int = DEFAULT_ROOT_VOLUME_SIZE_GIB,
        nodegroup_name: str | None = None,
        node_role: iam.IRole | None = None,
        enable_node_auto_repair: bool = True,
        efa_interfaces_for_lustre: int | None = None,
    ) -> None:
        """
        :param cluster: the :class:`GpuEksCluster`.
        :param instance_type: a catalog type (``p5en.48xlarge`` ...); sets the AMI type and the EFA layout.
        :param max_size: maximum nodes; at most the reservation's size when known.
        :param min_size: default: ``max_size`` (a fixed training fleet). On a Capacity Block: 0 (to create the group
            before the block starts) or ``max_size``.
        :param desired_size: default: ``max_size``. On a Capacity Block: 0 or ``max_size``.
        :param capacity: On-Demand (default), ``CapacityReservation``, ``CapacityBlock`` or
            ``UltraServerCapacityBlock``.
        :param subnets: default: the private subnet in the reservation's zone when known, else the VPC's first private
            subnet. EFA groups take exactly one subnet.
        :param placement_group: an existing cluster placement group to use.
        :param use_placement_group: default: True for EFA groups not on a Capacity Block (blocks are already placed
            in an UltraCluster); True without ``placement_group`` creates one.
        :param efa_interface_count: fewer EFA interfaces than the catalog's maximum. Default: the maximum.
        :param labels: extra node labels (merged over the fmconstructs labels).
        :param taints: default: ``nvidia.com/gpu=true:NoSchedule``; pass ``[]`` for none.
        :param instance_store_raid0: assemble the NVMe disks into RAID0 for kubelet/containerd through nodeadm
            (AL2023 ``localStorage.strategy: RAID0``). Default: True (types without instance store skip it).
        :param root_volume_size_gib: encrypted gp3 root volume. Default: 200.
        :param nodegroup_name: default: generated by CloudFormation.
        :param node_role: default: the cluster's node role.
        :param enable_node_auto_repair: EKS node auto repair (replaces nodes with GPU or EFA faults). Default: True.
        :param efa_interfaces_for_lustre: EFA interfaces each node uses for LNet with EFA-enabled FSx for Lustre file
            systems (0: LNet over TCP). Default: the instance type's FSx default
            (``InstanceSpec.fsx_lustre_efa_interfaces``, FSx for Lustre User Guide "Configuring EFA clients"), capped
            by the EFA interfaces the node attaches.
        """
        super().__init__(scope, id)
        self.cluster = cluster
        self.instance_spec: InstanceSpec = get_instance_spec(instance_type)
        self.efa_interfaces_for_lustre = efa_interfaces_for_lustre
        self._lustre_clients: list[LustreClient] = []
        self.capacity: Capacity = capacity if capacity is not None else OnDemand()
        self.capacity_type: eks.CapacityType = eks_capacity_type(self.capacity)
        self.max_size = max_size
        self.min_size = self._default_min(min_size, max_size)
        self.desired_size = max_size if desired_size is None else desired_size
        self._validate_sizes()
        self._validate_instance_and_version()

        self.subnets: tuple[ec2.ISubnet, ...] = tuple(subnets) if subnets is not None else (self._default_subnet(),)
        if use_placement_group is None:
            use_placement_group = placement_group is not None or (
                not self.capacity.is_capacity_block and self.instance_spec.maximum_efa_interfaces > 0
            )
        self.placement_group: ClusterPlacementGroup | None = None
        if use_placement_group:
            self.placement_group = placement_group or ClusterPlacementGroup(self, "PlacementGroup")

        self.launch_template = GpuLaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=instance_type,
            vpc=cluster.vpc,
            policy=InterfacePolicy.EKS_MANAGED_NODE_GROUP,
            capacity=self.capacity,
            node_count=max_size,
            efa_security_group=cluster.efa_security_group,
            security_groups=[cluster.cluster_security_group],
            placement_group=self.placement_group,
            efa_interface_count=efa_interface_count,
            http_put_response_hop_limit=EKS_IMDS_HOP_LIMIT,
            root_volume_size_gib=root_volume_size_gib,
            instance_store_mount_point=None,
            user_data_format=UserDataFormat.MIME_MULTIPART,
            tags={"fmconstructs:eks-cluster": cluster.cluster_name},
        )
        self._validate_subnets()
        # Fails now, not at the first add_lustre_client, when the count exceeds what the nodes have.
        lustre_efa_interfaces(
            efa_enabled=True,
            instance_spec=self.instance_spec,
            efa_interfaces_for_lustre=efa_interfaces_for_lustre,
            node_efa_interfaces=self.efa_interface_count,
        )
        if instance_store_raid0 and self.instance_spec.instance_store is not None:
            self.launch_template.add_user_data_part("application/node.eks.aws", NODEADM_RAID0_NODE_CONFIG)

        self.labels: dict[str, str] = {
            INSTANCE_TYPE_LABEL: instance_type,
            GPU_COUNT_LABEL: str(self.instance_spec.gpu.count),
            EFA_COUNT_LABEL: str(self.efa_interface_count),
            CAPACITY_LABEL: self.capacity.kind.value,
            GPU_PRESENT_LABEL: "true",
            **({EFA_PRESENT_LABEL: "true"} if self.efa_interface_count > 0 else {}),
            **(labels or {}),
        }
        self.taints: tuple[eks.TaintSpec, ...] = (
            tuple(taints)
            if taints is not None
            else (eks.TaintSpec(key=GPU_TAINT_KEY, value="true", effect=eks.TaintEffect.NO_SCHEDULE),)
        )

        self.nodegroup = eks.Nodegroup(
            self,
            "Resource",
            cluster=cluster.icluster,
            nodegroup_name=nodegroup_name,
            ami_type=eks_ami_type(self.instance_spec),
            capacity_type=self.capacity_type,
            min_size=self.min_size,
            max_size=max_size,
            desired_size=self.desired_size,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.launch_template.launch_template_id, version=self.launch_template.version_number
            ),
            subnets=ec2.SubnetSelection(subnets=list(self.subnets)),
            node_role=node_role or cluster.node_role,
            labels=self.labels,
            taints=list(self.taints),
            enable_node_auto_repair=enable_node_auto_repair,
        )

    # --- defaults -----------------------------------------------------------------------------------------------
    def _default_min(self, min_size: int | None, max_size: int) -> int:
        if min_size is not None:
            return min_size
        return max_size

    def _default_subnet(self) -> ec2.ISubnet:
        """The private subnet in the reservation's zone when known, else the first private subnet."""
        private = self.cluster.vpc.private_subnets
        if not private:
            raise FmValidationError("subnets", None, "given, or a VPC with private subnets")
        zone = self.capacity.availability_zone
        if zone is not None and not Token.is_unresolved(zone):
            for subnet in private:
                if subnet.availability_zone == zone:
                    return subnet
            raise FmValidationError(
                "subnets", None, f"a subnet in {zone} (the reservation's zone): the VPC has no private subnet there"
            )
        return private[0]

    # --- validation ---------------------------------------------------------------------------------------------
    def _validate_sizes(self) -> None:
        minimum, maximum, desired = self.min_size, self.max_size, self.desired_size
        if maximum < 1:
            raise FmValidationError("max_size", maximum, "at least 1")
        if minimum < 0 or minimum > maximum:
            raise FmValidationError("min_size", minimum, f"between 0 and max_size ({maximum})")
        if not minimum <= desired <= maximum:
            raise FmValidationError("desired_size", desired, f"between min_size ({minimum}) and max_size ({maximum})")
        # Reservation size (ODCR / block instance count when known) and instance-type rules of the capacity.
        self.capacity.validate_for(self.instance_spec, max_count=maximum)
        if self.capacity.is_capacity_block:
            # EKS "capacity-blocks-mng": a fixed fleet; size 0 while the block is not active (and during upgrades).
            if minimum not in (0, maximum):
                raise FmValidationError(
                    "min_size", minimum, f"0 or max_size ({maximum}) on a Capacity Block (a fixed-size fleet)"
                )
            if desired not in (0, maximum):
                raise FmValidationError(
                    "desired_size",
                    desired,
                    f"0 (before the block starts) or max_size ({maximum}) on a Capacity Block",
                )

    def _validate_instance_and_version(self) -> None:
        spec = self.instance_spec
        if spec.ultraserver_types and not isinstance(self.capacity, UltraServerCapacityBlock):
            raise FmValidationError(
                "capacity",
                self.capacity.kind.value,
                f"an UltraServerCapacityBlock: {spec.instance_type} is sold only as UltraServer Capacity Blocks",
            )
        if spec.ultraserver_types:
            version = version_tuple(self.cluster.version)
            if version < MIN_ULTRASERVER_VERSION:
                needed = ".".join(map(str, MIN_ULTRASERVER_VERSION))
                raise FmValidationError(
                    "cluster.version",
                    self.cluster.version.version,
                    f"{needed} or later for {spec.instance_type} (Dynamic Resource Allocation for IMEX ComputeDomains)",
                )

    def _validate_subnets(self) -> None:
        if not self.subnets:
            raise FmValidationError("subnets", [], "at least one subnet")
        if self.efa_interface_count > 0 and len(self.subnets) != 1:
            raise FmValidationError(
                "subnets",
                [s.subnet_id for s in self.subnets],
                "exactly one subnet for an EFA node group (EFA traffic cannot cross availability zones)",
            )
        for subnet in self.subnets:
            self.capacity.check_subnet(subnet)

    # --- FSx for Lustre clients ---------------------------------------------------------------------------------
    def add_lustre_client(self, file_system: LustreFileSystemBase, *, mount_point: str) -> LustreClient:
        """Mount ``file_system`` at ``mount_point`` on every node of this group, configured before kubelet starts.

        The commands (:meth:`LustreFileSystemBase.mount_commands`) go into the shell part of the launch template's
        MIME user data: cloud-init runs it before the AL2023 node joins the cluster (amazon-eks-ami
        ``nodeadm-run.service`` starts ``After=... cloud-final.service``), which is where the EKS User Guide
        "fsx-csi-tuning-efa" puts the same steps (eksctl ``preBootstrapCommands``: Lustre client, LNet over EFA, host
        mount). They install the Lustre client, configure LNet over EFA on :attr:`LustreClient.efa_interfaces`
        interfaces for an EFA-enabled file system (with a systemd unit that redoes it at every boot; nodes without
        EFA, or with 0 interfaces for Lustre, stay on TCP and say so in the boot log) and mount on the host, so that
        the FSx CSI driver's mounts in pods use the same LNet configuration. The group is registered against the file
        system's 1,024 EFA connection budget (``max_size`` nodes x :attr:`LustreClient.efa_interfaces`; synthesis
        fails above it). Adding the same file system twice returns the first client.
        """
        for client in self._lustre_clients:
            if client.file_system is file_system:
                return client
        spec = self.instance_spec
        node_efa = self.efa_interface_count
        commands = file_system.mount_commands(
            mount_point,
            instance_spec=spec,
            efa_interfaces_for_lustre=self.efa_interfaces_for_lustre,
            node_efa_interfaces=node_efa,
        )
        count = lustre_efa_interfaces(
            efa_enabled=file_system.efa_enabled,
            instance_spec=spec,
            efa_interfaces_for_lustre=self.efa_interfaces_for_lustre,
            node_efa_interfaces=node_efa,
        )
        self.launch_template.add_user_data(*commands)
        if count is not None:
            # FSx for Lustre User Guide "Configuring EFA clients": at most 1,024 EFA connections per file system,
            # one per client EFA interface used for LNet; every node of the group (max_size) counts.
            file_system.register_efa_clients(self, max_nodes=self.max_size, efa_interfaces_per_node=count)
        client = LustreClient(file_system, mount_point, count)
        self._lustre_clients.append(client)
        return client

    @property
    def lustre_clients(self) -> tuple[LustreClient, ...]:
        """The FSx for Lustre file systems this group mounts (see :meth:`add_lustre_client`)."""
        return tuple(self._lustre_clients)

    # --- what callers need --------------------------------------------------------------------------------------
    @property
    def efa_interface_count(self) -> int:
        return self.launch_template.efa_interface_count

    @property
    def nodegroup_name(self) -> str:
        return self.nodegroup.nodegroup_name

    @property
    def gpus_per_node(self) -> int:
        return self.instance_spec.gpu.count

    @property
    def total_gpus(self) -> int:
        """GPUs at the desired size."""
        return self.desired_size * self.gpus_per_node
