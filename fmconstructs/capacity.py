"""Capacity choices for GPU fleets: On-Demand, targeted On-Demand Capacity Reservations, Capacity Blocks for ML and
UltraServer Capacity Blocks.

Each choice knows what it puts in a launch template (``InstanceMarketOptions`` and
``CapacityReservationSpecification``, EC2 User Guide "capacity-blocks-launch") and the rules it imposes on node
counts. Validation happens at construction; values that are unresolved tokens are not checked.

**Reservation target per consumer.** EC2 accepts two forms of ``CapacityReservationTarget``
(:class:`ReservationTargetForm`): a reservation id, or the ARN of a Capacity Reservation resource group. Consumers
differ in the form their documentation asks for:

- AWS PCS: "A CapacityReservationSpecification with a valid CapacityReservationId" for every Capacity Block (PCS User
  Guide capacity-blocks-configure-cng; the UltraServer page capacity-blocks-nvidia-imex builds on it);
- self-managed fleets and EKS node groups: either form; an UltraServer Capacity Block may be targeted through a
  resource group that holds it (EC2 User Guide cb-group) or by its reservation id (capacity-blocks-launch).

A consumer asks for its form with ``reservation_target(form, consumer=...)``; without a form the capacity's own
default is used (the one form a reservation was given, or the resource-group ARN of an UltraServer block given both),
which keeps every earlier caller's template unchanged. Asking for a form the capacity was not given raises
:class:`~fmconstructs.errors.FmValidationError` naming the missing parameter and the consumer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from aws_cdk import Token
from aws_cdk import aws_ec2 as ec2

from ._validate import same_zone, subnet_zone
from .catalog import InstanceSpec, UltraServerSpec, get_ultraserver
from .errors import FmValidationError, is_token

_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{8,17}$")
# arn:${Partition}:resource-groups:${Region}:${Account}:group/${GroupName}
_RESOURCE_GROUP_ARN = re.compile(r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]{1,300}$")
_AZ = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")


class ReservationTargetForm(str, Enum):
    """How a launch template names the reservation: the member of EC2 ``CapacityReservationTarget`` it sets."""

    RESERVATION_ID = "CapacityReservationId"
    RESOURCE_GROUP_ARN = "CapacityReservationResourceGroupArn"

    @property
    def parameter(self) -> str:
        """The capacity parameter that carries this form."""
        return "reservation_id" if self is ReservationTargetForm.RESERVATION_ID else "resource_group_arn"


class CapacityKind(str, Enum):
    ON_DEMAND = "on-demand"
    CAPACITY_RESERVATION = "capacity-reservation"
    CAPACITY_BLOCK = "capacity-block"
    ULTRASERVER_CAPACITY_BLOCK = "ultraserver-capacity-block"


def _resolved(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and Token.is_unresolved(value))


def _check_reservation_id(value: str | None) -> None:
    if _resolved(value) and not _RESERVATION_ID.match(str(value)):
        raise FmValidationError("reservation_id", value, "a capacity reservation id like 'cr-0123456789abcdef0'")


def _check_resource_group_arn(value: str | None) -> None:
    if _resolved(value) and not _RESOURCE_GROUP_ARN.match(str(value)):
        raise FmValidationError(
            "resource_group_arn",
            value,
            "a resource group ARN like 'arn:aws:resource-groups:REGION:ACCOUNT:group/NAME'",
        )


def _check_az(value: str | None) -> None:
    if _resolved(value) and not _AZ.match(str(value)):
        raise FmValidationError("availability_zone", value, "an availability zone name like 'us-east-2b'")


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise FmValidationError(name, value, "a positive number of instances")


@dataclass(frozen=True)
class Capacity:
    """Base of the capacity choices. Use :class:`OnDemand`, :class:`CapacityReservation`, :class:`CapacityBlock` or
    :class:`UltraServerCapacityBlock`."""

    @property
    def kind(self) -> CapacityKind:
        raise NotImplementedError

    @property
    def availability_zone(self) -> str | None:
        """The zone this capacity pins the fleet to, when known (a reservation lives in one zone)."""
        return None

    @property
    def max_instances(self) -> int | None:
        """How many instances the capacity holds, when known."""
        return None

    @property
    def is_capacity_block(self) -> bool:
        return self.kind in (CapacityKind.CAPACITY_BLOCK, CapacityKind.ULTRASERVER_CAPACITY_BLOCK)

    @property
    def requires_fixed_size(self) -> bool:
        """Capacity Blocks run a fixed fleet: minimum == maximum (PCS, ParallelCluster and ASG rules)."""
        return self.is_capacity_block

    @property
    def reservation_target_forms(self) -> tuple[ReservationTargetForm, ...]:
        """The forms this capacity can be targeted by (none for On-Demand), the default first."""
        return ()

    def _target_value(self, form: ReservationTargetForm) -> str | None:
        return None

    def reservation_target(
        self, form: ReservationTargetForm | None = None, *, consumer: str | None = None
    ) -> ec2.CfnLaunchTemplate.CapacityReservationTargetProperty | None:
        """``CapacityReservationTarget`` in ``form`` (default: the capacity's default form), None without a reservation.

        :param form: the form the consumer needs; raises when this capacity was not given it.
        :param consumer: who needs the form and where that is documented, for the error message.
        """
        forms = self.reservation_target_forms
        if not forms:
            return None
        chosen = forms[0] if form is None else form
        value = self._target_value(chosen)
        if value is None:
            needs = f"{consumer}, which targets a {self.kind.value} by {chosen.value}" if consumer else chosen.value
            raise FmValidationError(
                chosen.parameter,
                None,
                f"given for {needs} (this {type(self).__name__} has only {', '.join(f.parameter for f in forms)})",
            )
        if chosen is ReservationTargetForm.RESERVATION_ID:
            return ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(capacity_reservation_id=value)
        return ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(capacity_reservation_resource_group_arn=value)

    def market_options(self) -> ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty | None:
        """``InstanceMarketOptions``: ``capacity-block`` for blocks, nothing otherwise."""
        if self.is_capacity_block:
            return ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(market_type="capacity-block")
        return None

    def reservation_specification(
        self, form: ReservationTargetForm | None = None, *, consumer: str | None = None
    ) -> ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty | None:
        """``CapacityReservationSpecification`` targeting the reservation in ``form``, if any (see
        :meth:`reservation_target`)."""
        target = self.reservation_target(form, consumer=consumer)
        if target is None:
            return None
        return ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(capacity_reservation_target=target)

    def validate_for(self, spec: InstanceSpec, *, min_count: int | None = None, max_count: int | None = None) -> None:
        """Check an instance type and node counts against this capacity; raises :class:`FmValidationError`."""
        _check_positive("max_count", max_count)
        if min_count is not None and min_count < 0:
            raise FmValidationError("min_count", min_count, "zero or more")
        if min_count is not None and max_count is not None and min_count > max_count:
            raise FmValidationError("min_count", min_count, f"at most max_count ({max_count})")
        if self.requires_fixed_size and min_count is not None and max_count is not None and min_count != max_count:
            raise FmValidationError(
                "min_count",
                min_count,
                f"equal to max_count ({max_count}) on a Capacity Block (a fixed-size fleet)",
            )
        limit = self.max_instances
        if limit is not None and max_count is not None and max_count > limit:
            raise FmValidationError("max_count", max_count, f"at most the reservation's {limit} instances")

    def check_subnet(self, subnet: ec2.ISubnet) -> None:
        """The subnet must be in the reservation's zone when both zones are known at synth time.

        Skipped when either is unknown: a subnet imported without a zone (``Subnet.from_subnet_id``), a zone that is a
        deploy-time value, no zone given to the reservation, or a zone name compared with a zone id.
        """
        zone = self.availability_zone
        where = subnet_zone(subnet)
        if same_zone(zone, where) is False:
            raise FmValidationError(
                "subnet",
                f"{subnet_label(subnet)} in {where}",
                f"a subnet in {zone}, the availability zone of the {self.kind.value}",
            )


def subnet_label(subnet: ec2.ISubnet) -> str:
    """The subnet's id for a message, or "a subnet whose id is a deploy-time value" (never a raw token)."""
    subnet_id = getattr(subnet, "subnet_id", None)
    if not isinstance(subnet_id, str) or is_token(subnet_id):
        return "a subnet whose id is a deploy-time value"
    return subnet_id


@dataclass(frozen=True)
class OnDemand(Capacity):
    """Plain On-Demand capacity (``open`` reservation preference, EC2's default)."""

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.ON_DEMAND


@dataclass(frozen=True)
class _Reserved(Capacity):
    reservation_id: str | None = None
    resource_group_arn: str | None = None
    instance_count: int | None = None
    """Instances in the reservation, when known (enables the node-count check)."""
    zone: str | None = None
    """The reservation's availability zone, when known (enables the subnet check)."""

    def __post_init__(self) -> None:
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            raise FmValidationError(
                "reservation_id/resource_group_arn",
                (self.reservation_id, self.resource_group_arn),
                f"exactly one of the two for a {self.kind.value}",
            )
        _check_reservation_id(self.reservation_id)
        _check_resource_group_arn(self.resource_group_arn)
        _check_positive("instance_count", self.instance_count)
        _check_az(self.zone)

    @property
    def availability_zone(self) -> str | None:
        return self.zone

    @property
    def max_instances(self) -> int | None:
        return self.instance_count

    @property
    def reservation_target_forms(self) -> tuple[ReservationTargetForm, ...]:
        if self.reservation_id is not None:
            return (ReservationTargetForm.RESERVATION_ID,)
        return (ReservationTargetForm.RESOURCE_GROUP_ARN,)

    def _target_value(self, form: ReservationTargetForm) -> str | None:
        return self.reservation_id if form is ReservationTargetForm.RESERVATION_ID else self.resource_group_arn


@dataclass(frozen=True)
class CapacityReservation(_Reserved):
    """A targeted On-Demand Capacity Reservation, by reservation id or resource-group ARN."""

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.CAPACITY_RESERVATION


@dataclass(frozen=True)
class CapacityBlock(_Reserved):
    """A Capacity Block for ML: market type ``capacity-block`` plus the reservation target (required)."""

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.CAPACITY_BLOCK


@dataclass(frozen=True)
class UltraServerCapacityBlock(Capacity):
    """A Capacity Block of EC2 UltraServers (p6e-gb200 only), targeted by its reservation id, through a Capacity
    Reservation resource group that holds it, or either (give both when consumers differ).

    :param resource_group_arn: a resource group holding the block (EC2 User Guide cb-group); the default target
        when given (self-managed fleets, EKS node groups).
    :param reservation_id: the block's Capacity Reservation id (``cr-...``, EC2 ``DescribeCapacityBlocks``
        ``CapacityReservationIds``); required by AWS PCS, whose launch template names the block by
        ``CapacityReservationId`` (PCS User Guide capacity-blocks-configure-cng, capacity-blocks-nvidia-imex). An
        UltraServer block of several UltraServers may have several reservation ids (the API returns a list;
        UNCONFIRMED how EC2 splits one): give the one the node group uses, and an ``ultraserver_count`` that matches it.
    """

    resource_group_arn: str | None = None
    ultraserver_type: str = "u-p6e-gb200x72"
    ultraserver_count: int = 1
    zone: str | None = None
    reservation_id: str | None = None

    def __post_init__(self) -> None:
        if self.resource_group_arn is None and self.reservation_id is None:
            raise FmValidationError(
                "reservation_id/resource_group_arn",
                (None, None),
                "at least one of the two for an UltraServer Capacity Block (its reservation id, or the ARN of a "
                "Capacity Reservation resource group that holds it)",
            )
        _check_reservation_id(self.reservation_id)
        _check_resource_group_arn(self.resource_group_arn)
        get_ultraserver(self.ultraserver_type)
        _check_positive("ultraserver_count", self.ultraserver_count)
        _check_az(self.zone)

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.ULTRASERVER_CAPACITY_BLOCK

    @property
    def ultraserver(self) -> UltraServerSpec:
        return get_ultraserver(self.ultraserver_type)

    @property
    def availability_zone(self) -> str | None:
        return self.zone

    @property
    def max_instances(self) -> int:
        return self.ultraserver.instance_count * self.ultraserver_count

    @property
    def reservation_target_forms(self) -> tuple[ReservationTargetForm, ...]:
        forms = []
        if self.resource_group_arn is not None:
            forms.append(ReservationTargetForm.RESOURCE_GROUP_ARN)
        if self.reservation_id is not None:
            forms.append(ReservationTargetForm.RESERVATION_ID)
        return tuple(forms)

    def _target_value(self, form: ReservationTargetForm) -> str | None:
        return self.reservation_id if form is ReservationTargetForm.RESERVATION_ID else self.resource_group_arn

    def validate_for(self, spec: InstanceSpec, *, min_count: int | None = None, max_count: int | None = None) -> None:
        if spec.instance_type != self.ultraserver.instance_type:
            raise FmValidationError(
                "instance_type",
                spec.instance_type,
                f"{self.ultraserver.instance_type} on a {self.ultraserver_type} UltraServer Capacity Block",
            )
        super().validate_for(spec, min_count=min_count, max_count=max_count)


def pinned_availability_zone(capacity: Capacity) -> str | None:
    """The availability zone a capacity choice pins the fleet to, or None when it does not (On-Demand) or the zone
    is not known at synth time (pass ``zone=`` to the reservation, or read it at run time with
    :func:`fmconstructs.preflight.describe_reservation`)."""
    return capacity.availability_zone
