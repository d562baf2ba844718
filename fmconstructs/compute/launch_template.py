"""GpuLaunchTemplate: one EC2 launch template for a catalog GPU instance type.

Composes the catalog, the EFA interface layout, the placement group and the capacity choice into an
``AWS::EC2::LaunchTemplate``. aws-cdk-lib's ``ec2.LaunchTemplate`` cannot express several network cards
(aws-cdk#30891) and sets ``SecurityGroupIds``, which EC2 rejects alongside ``NetworkInterfaces``, so this construct
wraps ``CfnLaunchTemplate`` and exposes an ``ec2.ILaunchTemplate`` for L2 consumers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

import jsii
from aws_cdk import Fn, IResolveContext, IStringProducer, Lazy, Stack, Tags, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, IValidation

from ..capacity import Capacity, OnDemand, ReservationTargetForm
from ..catalog import InstanceSpec, get_instance_spec
from ..errors import FmValidationError, WarningId, add_warning
from ..networking import ClusterPlacementGroup, EfaSecurityGroup, InterfaceLayout, InterfacePolicy
from ..networking.interfaces import EfaCardSelection, plan_network_interfaces
from .user_data import check_user_data_size, nvme_raid_commands

DEFAULT_ROOT_VOLUME_SIZE_GIB = 200

#: The MIME boundary of multi-part user data (any string absent from the parts works).
MIME_BOUNDARY = "==FMCONSTRUCTS-BOUNDARY=="

#: Who asks for a reservation id on Capacity Blocks, for error messages.
PCS_CAPACITY_BLOCK_CONSUMER = "AWS PCS (PCS User Guide capacity-blocks-configure-cng)"


def reservation_target_form_for(policy: InterfacePolicy, capacity: Capacity) -> ReservationTargetForm | None:
    """The ``CapacityReservationTarget`` form a consumer's documentation asks for, or None for the capacity's default.

    AWS PCS: "A CapacityReservationSpecification with a valid CapacityReservationId" in the launch template of a
    Capacity Block node group (PCS User Guide capacity-blocks-configure-cng), UltraServer blocks included
    (capacity-blocks-nvidia-imex). Self-managed fleets and EKS node groups take either form (EC2 User Guide
    capacity-blocks-launch, cb-group): the capacity's default, as before.
    """
    if policy is InterfacePolicy.PCS and capacity.is_capacity_block:
        return ReservationTargetForm.RESERVATION_ID
    return None


class UserDataFormat(str, Enum):
    """How the launch template renders its user data."""

    SHELL = "shell"
    """A plain ``#!/bin/bash`` script (EC2 fleets, Auto Scaling groups)."""
    MIME_MULTIPART = "mime-multipart"
    """MIME multi-part: required by EKS managed node groups whose launch template has user data but no AMI (EKS
    User Guide "launch-templates": EKS merges its own bootstrap part into it) and by AWS PCS (PCS User Guide
    "Working with Amazon EC2 user data"). Extra parts, e.g. an AL2023
    ``application/node.eks.aws`` NodeConfig for nodeadm, are added with :meth:`GpuLaunchTemplate.add_user_data_part`;
    the shell commands become the last part."""


@jsii.implements(ec2.IConnectable)
class GpuLaunchTemplate(Construct):
    """A launch template for GPU nodes with every EFA interface the instance type supports.

    Secure by default: IMDSv2 required, encrypted gp3 root volume, no public IP, security groups only on the
    interfaces. User data assembles the NVMe instance-store disks into one RAID0 volume (default ``/scratch``).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: str,
        vpc: ec2.IVpc,
        policy: InterfacePolicy = InterfacePolicy.SELF_MANAGED,
        capacity: Capacity | None = None,
        node_count: int | None = None,
        subnet: ec2.ISubnet | None = None,
        efa_security_group: EfaSecurityGroup | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        placement_group: ClusterPlacementGroup | None = None,
        efa_interface_count: int | None = None,
        extra_ena_interfaces: bool = False,
        efa_cards: EfaCardSelection = EfaCardSelection.RECOMMENDED,
        machine_image: ec2.IMachineImage | None = None,
        instance_profile: iam.IInstanceProfile | None = None,
        http_put_response_hop_limit: int = 1,
        root_volume_size_gib: int = DEFAULT_ROOT_VOLUME_SIZE_GIB,
        root_device_name: str = "/dev/xvda",
        encryption_key: kms.IKey | None = None,
        instance_store_mount_point: str | None = "/scratch",
        launch_template_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        user_data_format: UserDataFormat = UserDataFormat.SHELL,
        reservation_target_form: ReservationTargetForm | None = None,
    ) -> None:
        """
        :param instance_type: a catalog type, e.g. ``p5.48xlarge`` (unknown types raise, listing the supported ones).
        :param vpc: the VPC of the nodes (for the security groups).
        :param policy: which consumer the template is for (default: SELF_MANAGED); see ``InterfacePolicy``.
        :param capacity: On-Demand (default), a targeted ODCR, a Capacity Block or an UltraServer Capacity Block.
        :param node_count: the fleet size, when known: checked against the reservation and used for totals.
        :param subnet: the one subnet of all interfaces (EFA cannot cross AZs); not allowed for EKS managed node
            groups. Checked against the reservation's availability zone when both are known.
        :param efa_security_group: default: a new :class:`EfaSecurityGroup`.
        :param security_groups: groups for the primary interface. Default: a new group with outbound access only.
        :param placement_group: attach a placement group (warned against on Capacity Blocks). Default: none.
        :param efa_interface_count: fewer EFA interfaces than the maximum. Default: all the docs recommend.
        :param extra_ena_interfaces: add ENA interfaces on device 1 of the EFA cards. Default: False.
        :param efa_cards: RECOMMENDED (default: the cards the EFA docs name) or ALL EFA-capable cards.
        :param machine_image: the AMI; default: none in the template (the consumer supplies it).
        :param instance_profile: default: none (the consumer supplies it).
        :param http_put_response_hop_limit: IMDSv2 hop limit, 1-64. Default: 1 (containers need 2).
        :param root_volume_size_gib: encrypted gp3 root volume size. Default: 200.
        :param encryption_key: KMS key for the root volume. Default: the account's EBS default key.
        :param instance_store_mount_point: where the NVMe RAID0 volume is mounted; None skips it. Default: /scratch.
        :param user_data_format: SHELL (default) or MIME_MULTIPART (EKS managed node groups without an AMI id).
        :param reservation_target_form: how ``CapacityReservationTarget`` names the reservation. Default: what the
            policy's consumer documents (:func:`reservation_target_form_for`: the reservation id on PCS Capacity
            Blocks, else the capacity's own form, the resource-group ARN first on an UltraServer block given both).
            Raises when the capacity was not given that form.
        """
        super().__init__(scope, id)
        self.instance_spec: InstanceSpec = get_instance_spec(instance_type)
        self.capacity: Capacity = capacity if capacity is not None else OnDemand()
        self.policy = policy
        self.node_count = node_count
        self.subnet = subnet
        self.placement_group = placement_group
        policy_form = reservation_target_form_for(policy, self.capacity)
        self.reservation_target_form = reservation_target_form or policy_form
        consumer = PCS_CAPACITY_BLOCK_CONSUMER if policy_form is not None and reservation_target_form is None else None

        self._validate(
            node_count=node_count,
            subnet=subnet,
            hop_limit=http_put_response_hop_limit,
            root_volume_size_gib=root_volume_size_gib,
        )
        self.interface_layout: InterfaceLayout = plan_network_interfaces(
            self.instance_spec,
            policy=policy,
            efa_interface_count=efa_interface_count,
            extra_ena_interfaces=extra_ena_interfaces,
            efa_cards=efa_cards,
        )

        self.efa_security_group = efa_security_group or EfaSecurityGroup(self, "EfaSecurityGroup", vpc=vpc)
        if security_groups is None:
            self.security_group: ec2.ISecurityGroup = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description=f"GPU nodes ({instance_type}): outbound only; open inbound through connections",
                allow_all_outbound=True,
            )
            security_groups = [self.security_group]
        else:
            if not security_groups:
                raise FmValidationError("security_groups", [], "None (a new group) or at least one group")
            self.security_group = security_groups[0]
        self._security_groups = tuple(security_groups)
        self.connections = ec2.Connections(security_groups=[*security_groups, self.efa_security_group.security_group])

        self.user_data = ec2.UserData.for_linux()
        self.user_data_format = user_data_format
        self._mime_parts: list[tuple[str, str]] = []
        self.instance_store_mount_point = instance_store_mount_point
        if instance_store_mount_point is not None:
            if self.instance_spec.instance_store is None:
                add_warning(
                    self,
                    WarningId.NO_INSTANCE_STORE,
                    f"{instance_type} has no NVMe instance store; nothing is mounted at {instance_store_mount_point}",
                )
            else:
                self.user_data.add_commands(*nvme_raid_commands(instance_store_mount_point))

        if placement_group is not None and self.capacity.is_capacity_block:
            add_warning(
                self,
                WarningId.PLACEMENT_GROUP_WITH_CAPACITY_BLOCK,
                "A placement group on a Capacity Block risks insufficient-capacity errors: block instances are "
                "already placed together in an EC2 UltraCluster. Remove placement_group unless you need it.",
            )

        data = ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            instance_type=instance_type,
            image_id=machine_image.get_image(self).image_id if machine_image else None,
            iam_instance_profile=(
                ec2.CfnLaunchTemplate.IamInstanceProfileProperty(arn=instance_profile.instance_profile_arn)
                if instance_profile
                else None
            ),
            network_interfaces=self.interface_layout.to_cfn(
                efa_security_group_id=self.efa_security_group.security_group_id,
                security_group_ids=[sg.security_group_id for sg in security_groups],
                subnet_id=subnet.subnet_id if subnet is not None else None,
            ),
            placement=(
                ec2.CfnLaunchTemplate.PlacementProperty(group_name=placement_group.placement_group_name)
                if placement_group
                else None
            ),
            instance_market_options=self.capacity.market_options(),
            capacity_reservation_specification=self.capacity.reservation_specification(
                self.reservation_target_form, consumer=consumer
            ),
            metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                http_tokens="required",
                http_endpoint="enabled",
                http_put_response_hop_limit=http_put_response_hop_limit,
            ),
            block_device_mappings=[
                ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name=root_device_name,
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(
                        volume_type="gp3",
                        volume_size=root_volume_size_gib,
                        encrypted=True,
                        kms_key_id=encryption_key.key_arn if encryption_key else None,
                        delete_on_termination=True,
                    ),
                )
            ],
            user_data=Lazy.uncached_string(_UserDataProducer(self.user_data, self._mime_parts, user_data_format)),
            tag_specifications=[
                ec2.CfnLaunchTemplate.TagSpecificationProperty(
                    resource_type=resource_type,
                    tags=[
                        {"key": k, "value": v}
                        for k, v in {"fmconstructs:instance-type": instance_type, **(tags or {})}.items()
                    ],
                )
                for resource_type in ("instance", "volume", "network-interface")
            ],
        )
        self.resource = ec2.CfnLaunchTemplate(
            self, "Resource", launch_template_data=data, launch_template_name=launch_template_name
        )
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)

        self.node.add_validation(UserDataSizeValidation(self.resource))

        self.launch_template: ec2.ILaunchTemplate = ec2.LaunchTemplate.from_launch_template_attributes(
            self, "Ref", launch_template_id=self.resource.ref, version_number=self.version_number
        )

    # --- validation ---------------------------------------------------------------------------------------------
    def _validate(
        self, *, node_count: int | None, subnet: ec2.ISubnet | None, hop_limit: int, root_volume_size_gib: int
    ) -> None:
        if not 1 <= hop_limit <= 64:
            raise FmValidationError("http_put_response_hop_limit", hop_limit, "between 1 and 64")
        if not 8 <= root_volume_size_gib <= 16384:
            raise FmValidationError("root_volume_size_gib", root_volume_size_gib, "between 8 and 16384 (gp3 limits)")
        if node_count is not None and node_count < 1:
            raise FmValidationError("node_count", node_count, "a positive number of instances")
        self.capacity.validate_for(self.instance_spec, max_count=node_count)
        if subnet is not None:
            if not self.policy.allows_subnet_in_launch_template:
                raise FmValidationError(
                    "subnet",
                    subnet.subnet_id,
                    f"None for the {self.policy.value} policy (the node group supplies the subnets)",
                )
            self.capacity.check_subnet(subnet)

    # --- what later constructs need ----------------------------------------------------------------------------
    def add_user_data(self, *commands: str) -> None:
        """Append shell commands to the node's user data."""
        self.user_data.add_commands(*commands)

    def add_user_data_part(self, content_type: str, body: str) -> None:
        """Add a MIME part (e.g. ``application/node.eks.aws`` with an AL2023 NodeConfig) before the shell part.

        Only for ``user_data_format=MIME_MULTIPART``; parts render in the order they were added.
        """
        if self.user_data_format is not UserDataFormat.MIME_MULTIPART:
            raise FmValidationError(
                "user_data_format", self.user_data_format.value, "'mime-multipart' to add MIME parts to user data"
            )
        if not content_type or "\n" in content_type or MIME_BOUNDARY in body:
            raise FmValidationError("content_type/body", content_type, "a one-line content type and a body")
        self._mime_parts.append((content_type, body))

    @property
    def launch_template_id(self) -> str:
        return self.resource.ref

    @property
    def version_number(self) -> str:
        """The template's latest version number, as a pinned value (Capacity Block fleets must not use $Latest)."""
        return self.resource.attr_latest_version_number

    @property
    def security_groups(self) -> tuple[ec2.ISecurityGroup, ...]:
        """The groups on the primary interface (the EFA group is on every interface)."""
        return self._security_groups

    @property
    def efa_interface_count(self) -> int:
        return self.interface_layout.efa_interface_count

    @property
    def efa_bandwidth_gbps_per_node(self) -> float:
        return self.interface_layout.efa_bandwidth_gbps

    @property
    def gpus_per_node(self) -> int:
        return self.instance_spec.gpu.count

    @property
    def total_gpus(self) -> int | None:
        """GPUs across the fleet when ``node_count`` is known."""
        if self.node_count is None or Token.is_unresolved(self.node_count):
            return None
        return self.node_count * self.gpus_per_node


@jsii.implements(IValidation)
class UserDataSizeValidation:
    """Fails synthesis when a launch template's rendered user data would exceed EC2's 16 KB limit
    (``template.node.add_validation(UserDataSizeValidation(template))``)."""

    def __init__(self, template: ec2.CfnLaunchTemplate) -> None:
        self._template = template

    def validate(self) -> list[str]:
        data = self._template.launch_template_data
        user_data = getattr(data, "user_data", None)
        if user_data is None:
            return []
        return check_user_data_size(Stack.of(self._template).resolve(user_data))


@jsii.implements(IStringProducer)
class _UserDataProducer:
    """Renders user data at synthesis time, so commands added after construction are included."""

    def __init__(
        self,
        user_data: ec2.UserData,
        mime_parts: Sequence[tuple[str, str]] = (),
        user_data_format: UserDataFormat = UserDataFormat.SHELL,
    ) -> None:
        self._user_data = user_data
        self._mime_parts = mime_parts
        self._format = user_data_format

    def produce(self, context: IResolveContext) -> str | None:
        rendered = self._user_data.render()
        has_script = rendered.strip() not in ("", "#!/bin/bash")
        if self._format is UserDataFormat.SHELL:
            return Fn.base64(rendered) if has_script else None
        parts = list(self._mime_parts)
        if has_script:
            parts.append(('text/x-shellscript; charset="us-ascii"', rendered))
        if not parts:
            return None
        return Fn.base64(render_mime_multipart(parts))


def render_mime_multipart(parts: Sequence[tuple[str, str]]) -> str:
    """Render ``(content type, body)`` parts as MIME multi-part user data (the format cloud-init and nodeadm read)."""
    # Header order as in the PCS User Guide's example; MIME does not care.
    lines = [f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', "MIME-Version: 1.0", ""]
    for content_type, body in parts:
        # A blank line before every boundary: AWS PCS requires it (PCS User Guide "Working with Amazon EC2 user
        # data"), and RFC 2046 allows it (the line break before a boundary belongs to the boundary).
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    lines += [f"--{MIME_BOUNDARY}--", ""]
    return "\n".join(lines)
