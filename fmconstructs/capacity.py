"""Capacity choices for GPU fleets: On-Demand, targeted On-Demand Capacity Reservations, Capacity Blocks for ML,
UltraServer Capacity Blocks and interruptible Capacity Reservations (AWS PCS only).

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

**Deploy-time values.** Reservation ids, resource-group ARNs, zones, ``instance_count`` and ``ultraserver_count`` may
be CDK tokens (``CfnParameter.value_as_string``/``value_as_number``, ``Fn.import_value``, SSM parameters): they are
accepted and the checks that need their value (node counts against the reservation, the subnet's zone) are skipped.
No ``CfnRule`` is added: rule functions compare strings only (``Fn::Equals``, ``Fn::Contains``, ``Fn::EachMember*``,
``Fn::ValueOf``; no "less than": CloudFormation Template Reference "intrinsic-function-reference-rules"), so the count
checks cannot move to deploy time; give the parameters ``MinValue``/``MaxValue`` or ``AllowedPattern`` instead. A
subnet parameter of type ``AWS::EC2::Subnet::Id`` could be checked against a known zone with ``Fn::ValueOf`` in an
app's own rule; the constructs cannot tell from a token whether it is such a parameter.

**Zones.** ``zone`` takes a zone name (``us-east-1a``), a Local Zone name (``us-east-1-dfw-2a``, where P6e-GB200
UltraServer blocks are sold) or a zone id (``use1-az4``), as EC2's ``AvailabilityZone``/``AvailabilityZoneId`` do.
A subnet's zone is compared with it only when both are known and of the same kind (a name against an id is unknown
at synth time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ._validate import (
    RemovedAttribute,
    check_count,
    check_enum,
    check_optional_count,
    check_str,
    check_subnet,
    check_zone,
    known,
    removed_keywords,
    same_zone,
    subnet_zone,
)
from ._validate_ids import CAPACITY_RESERVATION_ID, check_service_id
from .catalog import InstanceSpec, UltraServerSpec, get_ultraserver
from .errors import FmTypeError, FmValidationError, is_token

if TYPE_CHECKING:
    # aws_ec2 only where launch-template properties are built: the ``fmc`` command imports this module without Node.js.
    from aws_cdk import aws_ec2 as ec2

# The EC2 API gives CapacityReservationId no pattern (botocore ec2 shape ``CapacityReservationId``: a String); EC2
# resource ids are a prefix, a hyphen and 8 or 17 characters of 0-9/a-f (EC2 User Guide "resource-ids").
_RESERVATION_ID_TEXT = "a capacity reservation id like 'cr-0123456789abcdef0'"
# AWS Resource Groups API ``GroupArn`` pattern (botocore resource-groups shape GroupArn/GroupArnV2), the ARN that
# EC2 ``CapacityReservationTarget.CapacityReservationResourceGroupArn`` takes.
_RESOURCE_GROUP_ARN = re.compile(
    r"arn:aws(-[a-z]+)*:resource-groups:[a-z]{2}(-[a-z]+)+-\d{1}:[0-9]{12}:group/"
    r"([a-zA-Z0-9_\.-]{1,300}|[a-zA-Z0-9_\.-]{1,150}/[a-z0-9]{26})"
)
_RESOURCE_GROUP_ARN_TEXT = "a resource group ARN like 'arn:aws:resource-groups:REGION:ACCOUNT:group/NAME'"


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
    INTERRUPTIBLE_CAPACITY_RESERVATION = "interruptible-capacity-reservation"


class CapacityBlockScaling(str, Enum):
    """When a fleet on a Capacity Block gets its instances.

    - ``AT_DEPLOY``: a fixed fleet created at full size (min = max = desired = the block's size). The deployment
      waits for instances, which a Capacity Block launches only while it is active: deploy after the block starts.
    - ``ON_BLOCK_EVENTS``: the fleet is created empty (min 0, desired 0, max = its size), so the stack can be deployed
      any time before the block starts; :class:`~fmconstructs.capacity_events.CapacityBlockEvents` scales it to its
      size when EC2 reports the block delivered and back to 0 on the expiration warning (EC2 User Guide
      capacity-blocks-monitor: "Capacity Block Delivered" when the reservation starts, "Capacity Block Expiration
      Warning" forty minutes before it ends).
    """

    AT_DEPLOY = "at-deploy"
    ON_BLOCK_EVENTS = "on-block-events"


def default_min_nodes(
    capacity: Capacity, max_nodes: Any, *, scaling: CapacityBlockScaling = CapacityBlockScaling.AT_DEPLOY
) -> Any:
    """The one default minimum fleet size of every backend (PCS, ParallelCluster, EKS, self-managed fleets).

    0 (an idle fleet costs nothing) except on a Capacity Block deployed ``AT_DEPLOY``, which runs a fixed fleet
    (``max_nodes``: PCS, ParallelCluster and Auto Scaling want min == max there, see
    :attr:`Capacity.requires_fixed_size`). On-Demand Capacity Reservations also default to 0: the reservation is
    billed whether instances run or not, but the instances' software and storage are not. ``max_nodes`` may be a
    number token (returned as is).
    """
    if capacity.requires_fixed_size and scaling is CapacityBlockScaling.AT_DEPLOY:
        return max_nodes
    return 0


def _check_reservation_id(value: object) -> None:
    if value is not None:
        check_service_id("reservation_id", value, CAPACITY_RESERVATION_ID)


def _check_resource_group_arn(value: object) -> None:
    if value is not None:
        check_str(
            "resource_group_arn", value, pattern=_RESOURCE_GROUP_ARN, allowed=_RESOURCE_GROUP_ARN_TEXT, max_length=1600
        )


@dataclass(frozen=True)
class Capacity:
    """Base of the capacity choices. Use :class:`OnDemand`, :class:`CapacityReservation`, :class:`CapacityBlock` or
    :class:`UltraServerCapacityBlock`."""

    def __post_init__(self) -> None:
        # The base class (and a subclass that does not say what it is) has no kind: refuse it here, not later.
        if type(self).kind is Capacity.kind:
            raise FmTypeError(
                "capacity",
                self,
                "a concrete capacity: OnDemand(), CapacityReservation(...), CapacityBlock(...), "
                "UltraServerCapacityBlock(...) or InterruptibleCapacityReservation(...) (Capacity is their abstract "
                "base)",
            )

    @property
    def kind(self) -> CapacityKind:
        raise NotImplementedError  # unreachable: __post_init__ refuses classes that do not override kind

    @property
    def zone(self) -> str | None:
        """The zone (name, Local Zone name or zone id) this capacity pins the fleet to, when given (a reservation
        lives in one zone); may be a deploy-time token."""
        return None

    availability_zone = RemovedAttribute("zone")

    @property
    def max_instances(self) -> int | None:
        """How many instances the capacity holds, when known (may be a number token)."""
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
        if form is not None:
            check_enum("form", form, ReservationTargetForm)
        if consumer is not None:
            check_str("consumer", consumer)
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
        from aws_cdk import aws_ec2 as ec2

        if chosen is ReservationTargetForm.RESERVATION_ID:
            return ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(capacity_reservation_id=value)
        return ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(capacity_reservation_resource_group_arn=value)

    def market_options(self) -> ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty | None:
        """``InstanceMarketOptions``: ``capacity-block`` for blocks, nothing otherwise."""
        if self.is_capacity_block:
            from aws_cdk import aws_ec2 as ec2

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
        from aws_cdk import aws_ec2 as ec2

        return ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(capacity_reservation_target=target)

    @removed_keywords("Capacity.validate_for", min_count="min_nodes", max_count="max_nodes")
    def validate_for(
        self,
        spec: InstanceSpec,
        *,
        min_nodes: Any = None,
        max_nodes: Any = None,
        parameters: tuple[str, str] | None = None,
    ) -> None:
        """Check an instance type and a fleet's node counts against this capacity; raises :class:`FmValidationError`.

        Counts may be number tokens: the checks that need their value are skipped.

        :param min_nodes: the fleet's minimum size (None: not checked).
        :param max_nodes: the fleet's maximum size (None: not checked); at most the reservation's size when known.
        :param parameters: how the caller's own parameters are named in messages, e.g.
            ``("min_instance_count", "max_instance_count")``. Default: the keyword names used.
        """
        if not isinstance(spec, InstanceSpec):
            raise FmTypeError("spec", spec, "an InstanceSpec (fmconstructs.get_instance_spec)")
        self._check_instance_type(spec)
        min_name, max_name = ("min_nodes", "max_nodes") if parameters is None else parameters
        minimum = check_optional_count(min_name, min_nodes, minimum=0)
        maximum = check_optional_count(max_name, max_nodes, minimum=1)
        if known(minimum) and known(maximum) and minimum > maximum:
            raise FmValidationError(min_name, minimum, f"at most {max_name} ({maximum})")
        if self.requires_fixed_size and known(minimum) and known(maximum) and minimum != maximum:
            raise FmValidationError(
                min_name,
                minimum,
                f"equal to {max_name} ({maximum}) on a Capacity Block (a fixed-size fleet)",
            )
        limit = self.max_instances
        if known(limit) and known(maximum) and maximum > limit:
            raise FmValidationError(max_name, maximum, f"at most the reservation's {limit} instances")

    def _check_instance_type(self, spec: InstanceSpec) -> None:
        """Instance-type rules of the capacity (UltraServer blocks hold one type)."""

    def check_subnet(self, subnet: ec2.ISubnet) -> None:
        """The subnet must be in the reservation's zone when both zones are known at synth time.

        Skipped when either is unknown: a subnet imported without a zone (``Subnet.from_subnet_id``), a zone that is a
        deploy-time value, no zone given to the reservation, or a zone name compared with a zone id.
        """
        check_subnet("subnet", subnet)
        where = subnet_zone(subnet)
        subnet_is_in_the_capacity_zone(
            subnet=f"{subnet_label(subnet)} in {where}",
            subnet_zone=where,
            capacity_zone=self.zone,
            capacity_kind=self.kind,
            zone_noun="availability zone",
        )


def subnet_is_in_the_capacity_zone(
    *,
    subnet: str,
    subnet_zone: str | None,
    capacity_zone: str | None,
    capacity_kind: CapacityKind,
    parameter: str = "subnet",
    zone_noun: str = "zone",
) -> None:
    """The subnet is in the zone the capacity pins the nodes to, when both zones are known at synthesis (a zone
    name is not compared with a zone id). ``subnet`` is how the message names the subnet (``subnet-0abc in
    us-east-1b``; never a raw token), ``parameter`` the caller's option (``subnet``, ``subnets[1]``)."""
    if same_zone(capacity_zone, subnet_zone) is False:
        raise FmValidationError(
            parameter, subnet, f"a subnet in {capacity_zone}, the {zone_noun} of the {capacity_kind.value}"
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
    """Instances in the reservation, when known (enables the node-count check); may be a number token."""
    zone: str | None = None
    """The reservation's zone (name, Local Zone name or zone id), when known (enables the subnet check)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.reservation_id is None) == (self.resource_group_arn is None):
            raise FmValidationError(
                "reservation_id/resource_group_arn",
                (self.reservation_id, self.resource_group_arn),
                f"exactly one of the two for a {self.kind.value}",
            )
        _check_reservation_id(self.reservation_id)
        _check_resource_group_arn(self.resource_group_arn)
        check_optional_count("instance_count", self.instance_count, minimum=1)
        check_zone("zone", self.zone)

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
    """A targeted On-Demand Capacity Reservation, by reservation id or resource-group ARN.

    :param reservation_id: ``cr-...`` (or a deploy-time value).
    :param resource_group_arn: a Capacity Reservation resource group (or a deploy-time value).
    :param instance_count: the reservation's size, when known (number tokens accepted).
    :param zone: the reservation's zone name, Local Zone name or zone id, when known.
    """

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.CAPACITY_RESERVATION


@dataclass(frozen=True)
class CapacityBlock(_Reserved):
    """A Capacity Block for ML: market type ``capacity-block`` plus the reservation target (required).

    Same parameters as :class:`CapacityReservation`.
    """

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.CAPACITY_BLOCK


@dataclass(frozen=True)
class InterruptibleCapacityReservation(_Reserved):
    """An interruptible Capacity Reservation (I-ODCR) shared with this account: its owner can reclaim it at any time.

    A consumer launch template names the reservation by id and sets market type ``interruptible-capacity-reservation``
    (PCS User Guide "Using I-ODCRs with AWS PCS", capacity-reservations-iodcr: ``CapacityReservationSpecification.
    CapacityReservationTarget.CapacityReservationId`` and ``InstanceMarketOptions.MarketType``; EC2 ``MarketType`` enum,
    botocore 1.44.8). Interruptible reservations are targeted and cannot be added to Capacity Reservation groups (EC2
    User Guide interruptible-capacity-reservations, "Considerations"), so there is no ``resource_group_arn``. When the
    owner reclaims capacity the instances get a two-minute warning and are terminated, with no fallback to On-Demand
    or Spot (same pages): drain on the warning with
    :class:`~fmconstructs.capacity_events.CapacityBlockEvents` ``interruptible_reservation_ids=``.

    Backends: AWS PCS (purchase option ``INTERRUPTIBLE_CAPACITY_RESERVATION``, minimum nodes default 0 as the PCS page
    recommends). Refused elsewhere (:func:`check_backend_capacity`).

    :param reservation_id: the interruptible reservation's id (``cr-...``, or a deploy-time value); required.
    :param instance_count: its size, when known (number tokens accepted): ``max_nodes`` must not exceed it.
    :param zone: its zone name, Local Zone name or zone id, when known.
    """

    def __post_init__(self) -> None:
        if self.resource_group_arn is not None:
            raise FmValidationError(
                "resource_group_arn",
                self.resource_group_arn,
                "None on an InterruptibleCapacityReservation (interruptible reservations cannot be added to Capacity "
                "Reservation groups: give reservation_id)",
            )
        if self.reservation_id is None:
            raise FmValidationError(
                "reservation_id", None, f"{_RESERVATION_ID_TEXT} (an interruptible reservation is targeted by its id)"
            )
        super().__post_init__()

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION

    def market_options(self) -> ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty | None:
        """``InstanceMarketOptions``: market type ``interruptible-capacity-reservation`` (PCS User Guide
        capacity-reservations-iodcr)."""
        from aws_cdk import aws_ec2 as ec2

        return ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(market_type="interruptible-capacity-reservation")


#: Where each backend documents the capacity kinds it accepts, for :func:`check_backend_capacity`'s message.
_INTERRUPTIBLE_UNSUPPORTED = {
    "EKS managed node groups": "EKS CapacityTypes are ON_DEMAND, SPOT and CAPACITY_BLOCK (botocore 1.44.8 eks model)",
    "ParallelCluster": "ParallelCluster 3.16.1 CapacityType is ONDEMAND, SPOT or CAPACITY_BLOCK",
    "self-managed Auto Scaling groups": "not documented for a launch template on an Auto Scaling group (UNCONFIRMED)",
}


def check_backend_capacity(capacity: Capacity, *, backend: str, parameter: str = "capacity") -> Capacity:
    """Refuse a capacity kind ``backend`` does not take: an :class:`InterruptibleCapacityReservation` anywhere but AWS
    PCS (the one backend whose documentation describes it, PCS User Guide capacity-reservations-iodcr)."""
    _check_capacity(parameter, capacity)
    if capacity.kind is CapacityKind.INTERRUPTIBLE_CAPACITY_RESERVATION:
        why = _INTERRUPTIBLE_UNSUPPORTED.get(backend, "not documented for it")
        raise FmValidationError(
            parameter,
            capacity,
            f"OnDemand, CapacityReservation, CapacityBlock or UltraServerCapacityBlock on {backend} (interruptible "
            f"Capacity Reservations are supported on AWS PCS only here: {why})",
        )
    return capacity


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
    :param ultraserver_type: ``u-p6e-gb200x72`` (default) or ``u-p6e-gb200x36``; must be known at synth time (it
        decides the instance type and count).
    :param ultraserver_count: UltraServers in the block (default 1; a number token skips the node-count check).
    :param zone: the block's zone name, Local Zone name (``us-east-1-dfw-2a``) or zone id, when known.
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
        check_str("ultraserver_type", self.ultraserver_type)
        if is_token(self.ultraserver_type):
            raise FmValidationError(
                "ultraserver_type", self.ultraserver_type, "known at synth time (it decides the instance type)"
            )
        get_ultraserver(self.ultraserver_type)
        check_count("ultraserver_count", self.ultraserver_count, minimum=1)
        check_zone("zone", self.zone)

    @property
    def kind(self) -> CapacityKind:
        return CapacityKind.ULTRASERVER_CAPACITY_BLOCK

    @property
    def ultraserver(self) -> UltraServerSpec:
        return get_ultraserver(self.ultraserver_type)

    @property
    def max_instances(self) -> int | None:
        """Instances in the block (None when ``ultraserver_count`` is a deploy-time value)."""
        if not known(self.ultraserver_count):
            return None
        return self.ultraserver.instance_count * int(self.ultraserver_count)

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

    def _check_instance_type(self, spec: InstanceSpec) -> None:
        if spec.instance_type != self.ultraserver.instance_type:
            raise FmValidationError(
                "instance_type",
                spec.instance_type,
                f"{self.ultraserver.instance_type} on a {self.ultraserver_type} UltraServer Capacity Block",
            )


def _check_capacity(parameter: str, capacity: object) -> Capacity:
    if not isinstance(capacity, Capacity):
        raise FmTypeError(
            parameter,
            capacity,
            "a Capacity (OnDemand, CapacityReservation, CapacityBlock, UltraServerCapacityBlock or "
            "InterruptibleCapacityReservation)",
        )
    return capacity


def pinned_zone(capacity: Capacity) -> str | None:
    """The zone (name, Local Zone name or zone id) a capacity choice pins the fleet to, or None when it does not
    (On-Demand) or the zone was not given (pass ``zone=`` to the reservation, or read it at run time with
    :func:`fmconstructs.preflight.describe_reservation`). May be a deploy-time token."""
    return _check_capacity("capacity", capacity).zone
