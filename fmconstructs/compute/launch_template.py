"""GpuLaunchTemplate: one EC2 launch template for a catalog GPU instance type.

Composes the catalog, the EFA interface layout, the placement group and the capacity choice into an
``AWS::EC2::LaunchTemplate``. aws-cdk-lib's ``ec2.LaunchTemplate`` cannot express several network cards
(aws-cdk#30891) and sets ``SecurityGroupIds``, which EC2 rejects alongside ``NetworkInterfaces``, so this construct
wraps ``CfnLaunchTemplate`` and exposes an ``ec2.ILaunchTemplate`` for L2 consumers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

import jsii
from aws_cdk import Fn, IResolveContext, IStringProducer, Lazy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct, IValidation

from .._rules import warn
from .._validate import (
    RemovedAttribute,
    check_enum,
    check_str,
    known,
    located,
    removed_keywords,
    subnet_zone,
)
from ..bootstrap import BootstrapDelivery, NodeBootstrap, text_size_bytes
from ..bootstrap.size import size_errors
from ..capacity import Capacity, OnDemand, ReservationTargetForm, subnet_label
from ..catalog import InstanceSpec, get_instance_spec
from ..errors import FmTypeError, FmValidationError
from ..networking import ClusterPlacementGroup, EfaSecurityGroup, InterfaceLayout, InterfacePolicy
from ..networking.interfaces import EfaCardSelection, plan_network_interfaces
from . import _nag, rules
from ._launch_template_inputs import INSTANCE_TYPE_TAG, _check_inputs
from .user_data import check_user_data_size, nvme_raid_commands

#: The step names the launch template gives its built-in set-up.
NVME_RAID_STEP = "nvme-raid"

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
    check_enum("policy", policy, InterfacePolicy)
    if not isinstance(capacity, Capacity):
        raise FmTypeError("capacity", capacity, "a Capacity")
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
@dataclass(frozen=True)
class _Props:
    """The keyword arguments of :class:`GpuLaunchTemplate` as given (checked by ``_check_inputs``), for its steps."""

    instance_type: str
    vpc: ec2.IVpc
    policy: InterfacePolicy
    capacity: Capacity | None
    max_nodes: int | None
    subnet: ec2.ISubnet | None
    efa_security_group: EfaSecurityGroup | None
    security_groups: Sequence[ec2.ISecurityGroup] | None
    placement_group: ClusterPlacementGroup | None
    efa_interface_count: int | None
    extra_ena_interfaces: bool
    efa_cards: EfaCardSelection
    machine_image: ec2.IMachineImage | None
    image_id: str | None
    instance_profile: iam.IInstanceProfile | None
    http_put_response_hop_limit: int
    root_volume_size_gib: int
    root_device_name: str
    encryption_key: kms.IKey | None
    instance_store_mount_point: str | None
    launch_template_name: str | None
    tags: Mapping[str, str] | None
    user_data_format: UserDataFormat
    reservation_target_form: ReservationTargetForm | None
    bootstrap_delivery: BootstrapDelivery | None
    bootstrap_role: iam.IRole | None
    bootstrap_name: str | None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> _Props:
        """The props among a constructor's ``locals()`` (its keyword arguments)."""
        return cls(**{field.name: arguments[field.name] for field in fields(cls)})


class GpuLaunchTemplate(Construct):
    """A launch template for GPU nodes with every EFA interface the instance type supports.

    Secure by default: IMDSv2 required, encrypted gp3 root volume, no public IP, security groups only on the
    interfaces. The node set-up (:attr:`bootstrap`, a :class:`~fmconstructs.bootstrap.NodeBootstrap`) assembles the
    NVMe instance-store disks into one RAID0 volume (default ``/scratch``) and runs what :meth:`add_user_data` adds;
    it is inline user data by default, or an S3 asset with a small loader (``bootstrap_delivery``). EC2's 16 KB
    user-data limit is checked at synthesis from the text this construct assembles (:class:`UserDataSizeCheck`).

    Deploy-time values (CDK tokens) are accepted for ids, names, ``max_nodes``, ``root_volume_size_gib``,
    ``http_put_response_hop_limit``, ``image_id`` and the capacity's reservation id, size and zone; the checks that
    need their value are skipped. ``instance_type`` and ``efa_interface_count`` must be known at synth time: they
    decide the template's network interfaces.

    :param instance_type: a catalog type, e.g. ``p5.48xlarge`` (unknown types raise, listing the supported ones).
    :param vpc: the VPC of the nodes (for the security groups); may be imported by id (``Vpc.from_vpc_attributes``).
    :param policy: which consumer the template is for (default: SELF_MANAGED); see ``InterfacePolicy``.
    :param capacity: On-Demand (default), a targeted ODCR, a Capacity Block or an UltraServer Capacity Block.
    :param max_nodes: the most nodes that will use the template, when known: checked against the reservation and
        used for totals (a number token skips the check).
    :param subnet: the one subnet of all interfaces (EFA cannot cross AZs); not allowed for EKS managed node
        groups. Checked against the reservation's zone when both zones are known (a subnet imported without a
        zone, or a deploy-time zone, is not checked).
    :param efa_security_group: default: a new :class:`EfaSecurityGroup`.
    :param security_groups: groups for the primary interface. Default: a new group with outbound access only.
    :param placement_group: attach a placement group (warned against on Capacity Blocks). Default: none.
    :param efa_interface_count: fewer EFA interfaces than the selection holds (default: every card of
        ``efa_cards``). Counts that would leave a GPU without EFA are refused where the catalog knows which
        cards each GPU reaches (p6e-gb200: at least one card of [1, 3], [5, 7], [9, 11], [13, 15]); 0 means no
        EFA. Must be known at synth time.
    :param extra_ena_interfaces: add ENA interfaces on device 1 of the EFA cards. Default: False.
    :param efa_cards: which EFA-capable cards get an EFA (:class:`EfaCardSelection`):

        - ``RECOMMENDED`` (default): the cards the EC2 EFA documentation recommends; p6e-gb200: one EFA-only
          interface per GPU on cards 1, 5, 9, 13 (4 x 400 Gbps);
        - ``EVERY_GPU_CARD``: every card a GPU reaches directly; p6e-gb200: 8 x 200 Gbps on cards
          1, 3, 5, ..., 15 (the guide's second layout, same 1,600 Gbps);
        - ``ALL``: every EFA-capable card, ParallelCluster's layout (p6e-gb200: cards 1-16, no more bandwidth).

        On the other catalog types the three are the same layout.
    :param machine_image: the AMI; default: none in the template (the consumer supplies it).
    :param image_id: the AMI id (``ami-...``, or ``resolve:ssm:...`` as EC2 ``ImageId`` accepts), e.g. a
        ``CfnParameter`` of type ``AWS::EC2::Image::Id``; instead of ``machine_image``.
    :param instance_profile: default: none (the consumer supplies it).
    :param http_put_response_hop_limit: IMDSv2 hop limit, 1-64. Default: 1 (containers need 2).
    :param root_volume_size_gib: encrypted gp3 root volume size, 1-65,536 GiB (EC2 gp3 limits; at least the
        AMI's snapshot size). Default: 200.
    :param root_device_name: the AMI's root device. Default: ``/dev/xvda``.
    :param encryption_key: KMS key for the root volume. Default: the account's EBS default key.
    :param instance_store_mount_point: where the NVMe RAID0 volume is mounted; None skips it. Default: /scratch.
    :param launch_template_name: EC2 ``LaunchTemplateName`` (3-128 of ``a-zA-Z0-9().-/_``). Default: generated.
    :param tags: tags on the template, the instances, their volumes and interfaces.
    :param user_data_format: SHELL (default) or MIME_MULTIPART (EKS managed node groups without an AMI id).
    :param reservation_target_form: how ``CapacityReservationTarget`` names the reservation. Default: what the
        policy's consumer documents (:func:`reservation_target_form_for`: the reservation id on PCS Capacity
        Blocks, else the capacity's own form, the resource-group ARN first on an UltraServer block given both).
        Raises when the capacity was not given that form.
    :param bootstrap_delivery: how the node-side set-up (:attr:`bootstrap`) reaches the nodes
        (:class:`~fmconstructs.bootstrap.BootstrapDelivery`): INLINE (default) in the user data, checked against
        EC2's 16 KB; ASSET as an S3 asset fetched by a small loader with ``bootstrap_role``; None: ASSET when a
        role is known and the stack publishes file assets, else INLINE.
    :param bootstrap_role: the node role for asset delivery (read on the asset object, write to the bootstrap
        log group). Default: ``instance_profile.role`` when the profile has one.
    :param bootstrap_name: names the nodes' bootstrap log files and log streams. Default: this construct's path.
    """

    @located
    @removed_keywords("GpuLaunchTemplate", node_count="max_nodes")
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        instance_type: str,
        vpc: ec2.IVpc,
        policy: InterfacePolicy = InterfacePolicy.SELF_MANAGED,
        capacity: Capacity | None = None,
        max_nodes: int | None = None,
        subnet: ec2.ISubnet | None = None,
        efa_security_group: EfaSecurityGroup | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        placement_group: ClusterPlacementGroup | None = None,
        efa_interface_count: int | None = None,
        extra_ena_interfaces: bool = False,
        efa_cards: EfaCardSelection = EfaCardSelection.RECOMMENDED,
        machine_image: ec2.IMachineImage | None = None,
        image_id: str | None = None,
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
        bootstrap_delivery: BootstrapDelivery | None = BootstrapDelivery.INLINE,
        bootstrap_role: iam.IRole | None = None,
        bootstrap_name: str | None = None,
    ) -> None:
        props = _Props.of(locals())
        inputs = _check_inputs(props)
        super().__init__(scope, id)
        consumer = self._record_props(props)
        self._plan_interfaces(props)
        self._build_security_groups(props, inputs)
        self._build_bootstrap(props)
        self._warn_placement_group()
        data = self._launch_template_data(props, consumer)
        self.resource = ec2.CfnLaunchTemplate(
            self, "Resource", launch_template_data=data, launch_template_name=launch_template_name
        )
        self._launch_template_name = launch_template_name
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)

        # EC2's 16 KB, from the text this construct assembles (no read-back of the template through jsii).
        self.node.add_validation(UserDataSizeCheck(self.user_data_text, self.bootstrap))

        self.launch_template: ec2.ILaunchTemplate = ec2.LaunchTemplate.from_launch_template_attributes(
            self, "Ref", launch_template_id=self.resource.ref, version_number=self.version_number
        )
        _nag.acknowledge_launch_template(self)

    # --- constructor steps ----------------------------------------------------------------------------------------
    def _record_props(self, props: _Props) -> str | None:
        """The checked props as attributes; returns the consumer that documents the reservation target form."""
        self.instance_spec: InstanceSpec = get_instance_spec(props.instance_type)
        self.capacity: Capacity = props.capacity if props.capacity is not None else OnDemand()
        self.policy = props.policy
        self.max_nodes: int | None = props.max_nodes
        self.subnet = props.subnet
        self.placement_group = props.placement_group
        policy_form = reservation_target_form_for(props.policy, self.capacity)
        self.reservation_target_form = props.reservation_target_form or policy_form
        return (
            PCS_CAPACITY_BLOCK_CONSUMER if policy_form is not None and props.reservation_target_form is None else None
        )

    def _plan_interfaces(self, props: _Props) -> None:
        """Check the capacity (and subnet) against the type, then lay out the network interfaces."""
        self._validate(subnet=props.subnet)
        self.interface_layout: InterfaceLayout = plan_network_interfaces(
            self.instance_spec,
            policy=props.policy,
            efa_interface_count=props.efa_interface_count,
            extra_ena_interfaces=props.extra_ena_interfaces,
            efa_cards=props.efa_cards,
        )

    def _build_security_groups(self, props: _Props, inputs: Mapping[str, Any]) -> None:
        """The EFA security group and the primary interface's groups (given or a new outbound-only one)."""
        self.efa_security_group = props.efa_security_group or EfaSecurityGroup(self, "EfaSecurityGroup", vpc=props.vpc)
        if props.security_groups is None:
            self.security_group: ec2.ISecurityGroup = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=props.vpc,
                description=f"GPU nodes ({props.instance_type}): outbound only; open inbound through connections",
                allow_all_outbound=True,
            )
            groups: tuple[ec2.ISecurityGroup, ...] = (self.security_group,)
        else:
            groups = inputs["security_groups"]
            self.security_group = groups[0]
        self._security_groups = groups
        self.connections = ec2.Connections(security_groups=[*groups, self.efa_security_group.security_group])

    def _build_bootstrap(self, props: _Props) -> None:
        """The node-side set-up (:attr:`bootstrap`) with the NVMe RAID0 step when the type has an instance store."""
        role = props.bootstrap_role
        if role is None and props.instance_profile is not None:
            role = getattr(props.instance_profile, "role", None)
        #: The node-side set-up: ordered steps, delivered inline or as an S3 asset (see :mod:`fmconstructs.bootstrap`).
        self.bootstrap = NodeBootstrap(
            self,
            "Bootstrap",
            name=props.bootstrap_name,
            delivery=props.bootstrap_delivery,
            role=role,
        )
        self.user_data_format = props.user_data_format
        self._mime_parts: list[tuple[str, str]] = []
        self.instance_store_mount_point = props.instance_store_mount_point
        if props.instance_store_mount_point is not None:
            raid = nvme_raid_commands(props.instance_store_mount_point)
            advice = rules.the_instance_store_is_there_to_mount(
                spec=self.instance_spec, mount_point=props.instance_store_mount_point
            )
            if advice is not None:
                warn(self, advice)
            else:
                self.bootstrap.add_step(NVME_RAID_STEP, raid)

    def _warn_placement_group(self) -> None:
        """Warn against a placement group on a Capacity Block."""
        warn(
            self,
            rules.placement_group_is_not_for_a_capacity_block(
                has_placement_group=self.placement_group is not None,
                is_capacity_block=self.capacity.is_capacity_block,
            ),
        )

    def _launch_template_data(
        self, props: _Props, consumer: str | None
    ) -> ec2.CfnLaunchTemplate.LaunchTemplateDataProperty:
        """The launch template data: type, image, profile, interfaces, placement, capacity, IMDSv2, root volume, user
        data and tags."""
        if props.machine_image is not None:
            image: str | None = props.machine_image.get_image(self).image_id
        else:
            image = props.image_id
        return ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            instance_type=props.instance_type,
            image_id=image,
            iam_instance_profile=(
                ec2.CfnLaunchTemplate.IamInstanceProfileProperty(arn=props.instance_profile.instance_profile_arn)
                if props.instance_profile
                else None
            ),
            network_interfaces=self.interface_layout.to_cfn(
                efa_security_group_id=self.efa_security_group.security_group_id,
                security_group_ids=[sg.security_group_id for sg in self._security_groups],
                subnet_id=self.subnet.subnet_id if self.subnet is not None else None,
            ),
            placement=(
                ec2.CfnLaunchTemplate.PlacementProperty(group_name=self.placement_group.placement_group_name)
                if self.placement_group
                else None
            ),
            instance_market_options=self.capacity.market_options(),
            capacity_reservation_specification=self.capacity.reservation_specification(
                self.reservation_target_form, consumer=consumer
            ),
            metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                http_tokens="required",
                http_endpoint="enabled",
                http_put_response_hop_limit=props.http_put_response_hop_limit,
            ),
            block_device_mappings=[
                ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name=props.root_device_name,
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(
                        volume_type="gp3",
                        volume_size=props.root_volume_size_gib,
                        encrypted=True,
                        kms_key_id=props.encryption_key.key_arn if props.encryption_key else None,
                        delete_on_termination=True,
                    ),
                )
            ],
            user_data=Lazy.uncached_string(_UserDataProducer(self)),
            tag_specifications=[
                ec2.CfnLaunchTemplate.TagSpecificationProperty(
                    resource_type=resource_type,
                    tags=[
                        {"key": k, "value": v}
                        for k, v in {INSTANCE_TYPE_TAG: props.instance_type, **(props.tags or {})}.items()
                    ],
                )
                for resource_type in ("instance", "volume", "network-interface")
            ],
        )

    # --- validation ---------------------------------------------------------------------------------------------
    def _validate(self, *, subnet: ec2.ISubnet | None) -> None:
        self.capacity.validate_for(self.instance_spec, max_nodes=self.max_nodes)
        if subnet is not None:
            rules.subnet_is_for_the_policy(policy=self.policy, subnet=subnet_label(subnet))
            where = subnet_zone(subnet)
            rules.subnet_is_in_the_capacity_zone(
                subnet=f"{subnet_label(subnet)} in {where}",
                subnet_zone=where,
                capacity_zone=self.capacity.zone,
                capacity_kind=self.capacity.kind,
                zone_noun="availability zone",
            )

    # --- what later constructs need ----------------------------------------------------------------------------
    def add_user_data(self, *commands: str) -> None:
        """Append shell commands to the node's set-up (each a ``str``): the bootstrap's trailing ``commands`` step."""
        for index, command in enumerate(commands):
            check_str(f"commands[{index}]", command)
        self.bootstrap.add_commands(*commands)

    @property
    def user_data(self) -> NodeBootstrap:
        """The node-side set-up (:attr:`bootstrap`). Before 0.3 an ``ec2.UserData``; the bootstrap keeps its
        ``add_commands`` and ``render`` (every step as one script)."""
        return self.bootstrap

    def user_data_text(self) -> str | None:
        """The user data before base64 encoding, as Python-side text (deploy-time values as tokens): the shell
        script (inline steps or the asset loader), wrapped as MIME multi-part when the format asks for it."""
        script = self.bootstrap.user_data_script()
        if self.user_data_format is UserDataFormat.SHELL:
            return script
        parts = list(self._mime_parts)
        if script is not None:
            parts.append(('text/x-shellscript; charset="us-ascii"', script))
        return render_mime_multipart(parts) if parts else None

    def user_data_size_bytes(self) -> int:
        """Bytes of the user data once CloudFormation has resolved it (Python-side estimate, see
        :func:`fmconstructs.bootstrap.text_size_bytes`); 0 without user data."""
        text = self.user_data_text()
        return 0 if text is None else text_size_bytes(text, self.bootstrap.known_token_bytes)

    def add_user_data_part(self, content_type: str, body: str) -> None:
        """Add a MIME part (e.g. ``application/node.eks.aws`` with an AL2023 NodeConfig) before the shell part.

        Only for ``user_data_format=MIME_MULTIPART``; parts render in the order they were added.
        """
        check_str("content_type", content_type)
        check_str("body", body)
        if self.user_data_format is not UserDataFormat.MIME_MULTIPART:
            raise FmValidationError(
                "user_data_format", self.user_data_format.value, "'mime-multipart' to add MIME parts to user data"
            )
        if not content_type or "\n" in content_type or "\r" in content_type or MIME_BOUNDARY in body:
            raise FmValidationError("content_type/body", content_type, "a one-line content type and a body")
        self._mime_parts.append((content_type, body))

    node_count = RemovedAttribute("max_nodes")

    @property
    def launch_template_id(self) -> str:
        """The template's id (``lt-...``; ``Ref``)."""
        return self.resource.ref

    @property
    def launch_template_name(self) -> str | None:
        """The name given as ``launch_template_name`` (None: EC2 generated one; read it with
        ``aws ec2 describe-launch-templates --launch-template-ids ID``)."""
        return self._launch_template_name

    @property
    def version_number(self) -> str:
        """The template's latest version number, as a pinned value (Capacity Block fleets must not use $Latest)."""
        return self.resource.attr_latest_version_number

    @property
    def default_version_number(self) -> str:
        """The template's default version number (``DefaultVersionNumber``)."""
        return self.resource.attr_default_version_number

    @property
    def instance_type(self) -> str:
        return self.instance_spec.instance_type

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
        """GPUs across the fleet when ``max_nodes`` is known at synth time."""
        if not known(self.max_nodes):
            return None
        assert self.max_nodes is not None
        return int(self.max_nodes) * self.gpus_per_node


@jsii.implements(IValidation)
class UserDataSizeCheck:
    """Fails synthesis when user data would exceed EC2's 16 KB limit, computed from the Python-side text the
    construct assembled (``text()``: shell lines, MIME parts, the loader; tokens at their bound), without resolving
    the launch template through jsii. Asset delivery is checked too (its loader is small, but it is user data)."""

    def __init__(self, text: Callable[[], str | None], bootstrap: NodeBootstrap | None = None) -> None:
        self._text = text
        self._bootstrap = bootstrap

    def validate(self) -> list[str]:
        text = self._text()
        if text is None:
            return []
        known = self._bootstrap.known_token_bytes if self._bootstrap is not None else None
        return size_errors(text_size_bytes(text, known))


@jsii.implements(IValidation)
class UserDataSizeValidation:
    """Fails synthesis when a launch template's rendered user data would exceed EC2's 16 KB limit
    (``template.node.add_validation(UserDataSizeValidation(template))``).

    It resolves the whole ``LaunchTemplateData`` through jsii, which is slow (most of a GPU launch template's
    synthesis time before 0.3): fmconstructs' own templates use :class:`UserDataSizeCheck`. Kept for templates built
    elsewhere."""

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
    """Renders user data at synthesis time, so steps added after construction are included."""

    def __init__(self, template: GpuLaunchTemplate) -> None:
        self._template = template

    def produce(self, context: IResolveContext) -> str | None:
        text = self._template.user_data_text()
        return Fn.base64(text) if text is not None else None


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
