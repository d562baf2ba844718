"""Input checks of :class:`~.launch_template.GpuLaunchTemplate`: every parameter's type and value before anything
reaches jsii (moved out of ``launch_template.py`` by concern)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._validate import (
    check_bool,
    check_construct,
    check_count,
    check_enum,
    check_kms_key,
    check_mount_point,
    check_optional_count,
    check_security_group,
    check_sequence,
    check_str,
    check_subnet,
    check_vpc,
)
from .._validate_tags import MAX_TAGS_PER_RESOURCE as MAX_TAGS_PER_RESOURCE
from .._validate_tags import check_tags
from ..bootstrap import BootstrapDelivery
from ..bootstrap.loader import NAME_PATTERN
from ..capacity import Capacity, ReservationTargetForm
from ..errors import FmTypeError, FmValidationError, is_token
from ..networking import ClusterPlacementGroup, EfaSecurityGroup, InterfacePolicy
from ..networking.interfaces import EfaCardSelection

if TYPE_CHECKING:
    from .launch_template import _Props

# EC2 API ``LaunchTemplateName`` (botocore ec2 shape LaunchTemplateName: min 3, max 128, pattern).
_LAUNCH_TEMPLATE_NAME = re.compile(r"[a-zA-Z0-9\(\)\.\-/_]+")
# EC2 ``ImageId``: "ami-..." or a Systems Manager parameter "resolve:ssm:..." (botocore ec2
# RequestLaunchTemplateData.ImageId documentation); no pattern in the API model.
_IMAGE_ID = re.compile(r"ami-[0-9a-zA-Z]+|resolve:ssm:\S+")
# EC2 block device ``DeviceName`` ("for example, /dev/sdh or xvdh"); no pattern in the API model.
_DEVICE_NAME = re.compile(r"\S+")


def _check_bootstrap_inputs(*, bootstrap_delivery: object, bootstrap_role: object, bootstrap_name: object) -> None:
    """``bootstrap_delivery``, ``bootstrap_role`` and ``bootstrap_name`` (a name known at synthesis)."""
    if bootstrap_delivery is not None:
        check_enum("bootstrap_delivery", bootstrap_delivery, BootstrapDelivery)
    if bootstrap_role is not None:
        check_construct("bootstrap_role", bootstrap_role, attribute="role_arn", expected="an iam.IRole")
    if bootstrap_name is not None:
        check_str(
            "bootstrap_name", bootstrap_name, pattern=NAME_PATTERN, allowed="1-64 letters, digits, '.', '_' or '-'"
        )
        if is_token(bootstrap_name):
            raise FmValidationError("bootstrap_name", bootstrap_name, "a name known at synthesis")


def _check_inputs(props: _Props) -> dict[str, Any]:
    """Every parameter's type and value, before anything reaches jsii (one small check per parameter)."""
    out = _check_network_inputs(
        instance_type=props.instance_type,
        vpc=props.vpc,
        policy=props.policy,
        capacity=props.capacity,
        max_nodes=props.max_nodes,
        subnet=props.subnet,
        efa_security_group=props.efa_security_group,
        security_groups=props.security_groups,
        placement_group=props.placement_group,
        extra_ena_interfaces=props.extra_ena_interfaces,
        efa_cards=props.efa_cards,
    )
    _check_image_and_volume_inputs(
        machine_image=props.machine_image,
        image_id=props.image_id,
        instance_profile=props.instance_profile,
        http_put_response_hop_limit=props.http_put_response_hop_limit,
        root_volume_size_gib=props.root_volume_size_gib,
        root_device_name=props.root_device_name,
        encryption_key=props.encryption_key,
        instance_store_mount_point=props.instance_store_mount_point,
    )
    _check_template_inputs(
        launch_template_name=props.launch_template_name,
        tags=props.tags,
        user_data_format=props.user_data_format,
        reservation_target_form=props.reservation_target_form,
    )
    _check_bootstrap_inputs(
        bootstrap_delivery=props.bootstrap_delivery,
        bootstrap_role=props.bootstrap_role,
        bootstrap_name=props.bootstrap_name,
    )
    return out


def _check_network_inputs(
    *,
    instance_type: object,
    vpc: object,
    policy: object,
    capacity: object,
    max_nodes: object,
    subnet: object,
    efa_security_group: object,
    security_groups: object,
    placement_group: object,
    extra_ena_interfaces: object,
    efa_cards: object,
) -> dict[str, Any]:
    """The instance type, network and capacity inputs; returns the checked security groups, if given."""
    check_str("instance_type", instance_type)
    if is_token(instance_type):
        raise FmValidationError(
            "instance_type", instance_type, "a catalog instance type known at synth time (it decides the interfaces)"
        )
    check_vpc("vpc", vpc)
    check_enum("policy", policy, InterfacePolicy)
    if capacity is not None and not isinstance(capacity, Capacity):
        raise FmTypeError(
            "capacity",
            capacity,
            "a Capacity (OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock)",
        )
    check_optional_count("max_nodes", max_nodes, minimum=1)
    if subnet is not None:
        check_subnet("subnet", subnet)
    if efa_security_group is not None and not isinstance(efa_security_group, EfaSecurityGroup):
        raise FmTypeError("efa_security_group", efa_security_group, "an fmconstructs EfaSecurityGroup")
    out: dict[str, Any] = {}
    if security_groups is not None:
        groups = check_sequence("security_groups", security_groups, check_security_group)
        if not groups:
            raise FmValidationError("security_groups", [], "None (a new group) or at least one group")
        out["security_groups"] = groups
    if placement_group is not None and not isinstance(placement_group, ClusterPlacementGroup):
        raise FmTypeError("placement_group", placement_group, "an fmconstructs ClusterPlacementGroup")
    check_bool("extra_ena_interfaces", extra_ena_interfaces)
    check_enum("efa_cards", efa_cards, EfaCardSelection)
    return out


def _check_image_and_volume_inputs(
    *,
    machine_image: object,
    image_id: object,
    instance_profile: object,
    http_put_response_hop_limit: object,
    root_volume_size_gib: object,
    root_device_name: object,
    encryption_key: object,
    instance_store_mount_point: object,
) -> None:
    """The image, instance profile, metadata and volume inputs."""
    if machine_image is not None and not hasattr(machine_image, "get_image"):
        raise FmTypeError("machine_image", machine_image, "an ec2.IMachineImage (ec2.MachineImage....)")
    if image_id is not None:
        check_str("image_id", image_id, pattern=_IMAGE_ID, allowed="an AMI id ('ami-...') or 'resolve:ssm:PARAMETER'")
        if machine_image is not None:
            raise FmValidationError("image_id", image_id, "omitted when machine_image is given (give one of the two)")
    if instance_profile is not None and not hasattr(instance_profile, "instance_profile_arn"):
        raise FmTypeError("instance_profile", instance_profile, "an iam.IInstanceProfile")
    # EC2 API LaunchTemplateInstanceMetadataOptionsRequest.HttpPutResponseHopLimit: "Integers from 1 to 64".
    check_count("http_put_response_hop_limit", http_put_response_hop_limit, minimum=1, maximum=64)
    # EC2 API LaunchTemplateEbsBlockDeviceRequest.VolumeSize: "gp3: 1 - 65,536 GiB" (botocore 1.44).
    check_count("root_volume_size_gib", root_volume_size_gib, minimum=1, maximum=65536)
    check_str("root_device_name", root_device_name, pattern=_DEVICE_NAME, allowed="a device name such as '/dev/xvda'")
    if encryption_key is not None:
        check_kms_key("encryption_key", encryption_key)
    if instance_store_mount_point is not None:  # the one mount-point rule, checked again where it is rendered
        check_mount_point("instance_store_mount_point", instance_store_mount_point)


#: Keys the library adds to the launch template's tag specifications (launch_template.py; EKS node groups add
#: ``fmconstructs:eks-cluster`` through ``tags``, which counts as the user's).
#: The tag the launch template puts on what it launches, naming the instance type.
INSTANCE_TYPE_TAG = "fmconstructs:instance-type"
LAUNCH_TEMPLATE_TAG_KEYS = frozenset({INSTANCE_TYPE_TAG})


def _check_template_inputs(
    *,
    launch_template_name: object,
    tags: object,
    user_data_format: object,
    reservation_target_form: object,
) -> None:
    """The launch template's name, tags, user data format and reservation target form."""
    if launch_template_name is not None:
        check_str(
            "launch_template_name",
            launch_template_name,
            pattern=_LAUNCH_TEMPLATE_NAME,
            min_length=3,
            max_length=128,
            allowed="3-128 characters of a-z, A-Z, 0-9, (, ), ., -, / and _ (EC2 LaunchTemplateName)",
        )
    if isinstance(tags, Mapping):
        # The template also tags what it launches with its own keys (LAUNCH_TEMPLATE_TAG_KEYS, the EKS cluster's
        # node group adds fmconstructs:eks-cluster): the user's tags leave room for them.
        own = len(LAUNCH_TEMPLATE_TAG_KEYS - set(tags))
        if len(tags) + own > MAX_TAGS_PER_RESOURCE:
            raise FmValidationError(
                "tags",
                f"{len(tags)} tags",
                f"at most {MAX_TAGS_PER_RESOURCE - own} tags: the launch template adds "
                f"{', '.join(sorted(LAUNCH_TEMPLATE_TAG_KEYS - set(tags)))} to the instances, volumes and network "
                f"interfaces it launches, and AWS allows {MAX_TAGS_PER_RESOURCE} tags per resource",
            )
    if tags is not None:
        check_tags("tags", tags)  # the one tag checker (AWS tag naming rules)
    from .launch_template import UserDataFormat  # here: launch_template imports this module first

    check_enum("user_data_format", user_data_format, UserDataFormat)
    if reservation_target_form is not None:
        check_enum("reservation_target_form", reservation_target_form, ReservationTargetForm)
