"""Input checks shared by every public constructor: types, deploy-time values (CDK tokens), counts, names, zones.

Rules every check keeps (issue 10, "any value known only at deploy time"):

- A value that is an unresolved CDK token (``CfnParameter.value_as_string``/``value_as_number``, ``Fn.import_value``,
  an SSM parameter) is accepted and its value checks are skipped; the error text never shows a raw token.
- A wrong Python type raises :class:`~fmconstructs.errors.FmTypeError` (a ``TypeError`` and an
  :class:`~fmconstructs.errors.FmValidationError`) naming the parameter and the expected type, before anything reaches
  jsii. ``bool`` is never a number; a ``str`` is never a sequence of strings; NaN and infinities are rejected.
- Patterns match the whole string (``re.fullmatch``): a trailing newline never passes.

Number tokens are finite floats near -1.9e289 (aws-cdk-lib ``TokenMap``); :func:`is_token` only asks jsii about finite
floats, so NaN or infinity never reaches the jsii runtime.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from .errors import FmTypeError, FmValidationError, is_token

if TYPE_CHECKING:
    from constructs import Construct

__all__ = [
    "check_bool",
    "check_construct",
    "check_count",
    "check_enum",
    "check_number",
    "check_optional_count",
    "check_str",
    "check_str_sequence",
    "check_zone",
    "is_token",
    "known",
    "subnet_zone",
    "zone_pattern_text",
]

E = TypeVar("E", bound=Enum)
T = TypeVar("T")

# EC2 accepts a zone by name (AvailabilityZone) or id (AvailabilityZoneId) in most APIs (DescribeAvailabilityZones,
# CreateSubnet, CreateCapacityReservation). Names: Region zones ``us-east-1a``, Local Zones ``us-east-1-dfw-2a``,
# Wavelength Zones ``us-east-1-wl1-bos-wlz-1``; ids: ``use1-az4``, ``use1-dfw2-az1``, ``use1-wl1-bos-wlz1``
# (EC2 User Guide "Regions and Zones": zone names and zone IDs; Local Zones User Guide "available-local-zones").
_ZONE_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+[a-z]|[a-z]{2}(-[a-z]+)+-\d+(-[a-z0-9]+)+-\d+[a-z]?")
_ZONE_ID = re.compile(r"[a-z]{2,4}\d+(-[a-z0-9]+)*-(az|wlz)\d+")
zone_pattern_text = "a zone name ('us-east-1a', Local Zone 'us-east-1-dfw-2a') or zone id ('use1-az4')"


def known(value: object) -> bool:
    """True when ``value`` is present and not a deploy-time token (its value can be checked at synth time)."""
    return value is not None and not is_token(value)


def _type_name(value: object) -> str:
    return type(value).__name__


def check_bool(parameter: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise FmTypeError(parameter, value, "a bool (True or False)")
    return value


def check_number(
    parameter: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    integer: bool = False,
    unit: str = "",
) -> Any:
    """A finite int or float (or a number token) within bounds; ``integer`` also rejects 2.5 (but accepts 2.0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        expected = "an integer" if integer else "a number"
        raise FmTypeError(parameter, value, f"{expected}{' of ' + unit if unit else ''} (got a {_type_name(value)})")
    if isinstance(value, float) and not math.isfinite(value):
        raise FmValidationError(parameter, value, "a finite number")
    if is_token(value):
        return value
    if integer and isinstance(value, float) and not value.is_integer():
        raise FmValidationError(parameter, value, f"a whole number{' of ' + unit if unit else ''}")
    if minimum is not None:
        too_small = value <= minimum if exclusive_minimum else value < minimum
        if too_small:
            bound = f"greater than {minimum:g}" if exclusive_minimum else f"at least {minimum:g}"
            raise FmValidationError(parameter, value, f"{bound}{' ' + unit if unit else ''}")
    if maximum is not None and value > maximum:
        raise FmValidationError(parameter, value, f"at most {maximum:g}{' ' + unit if unit else ''}")
    return int(value) if integer and isinstance(value, float) else value


def check_count(parameter: str, value: object, *, minimum: int = 0, maximum: int | None = None) -> Any:
    """A whole number of things (nodes, instances, interfaces), or a number token."""
    return check_number(parameter, value, minimum=minimum, maximum=maximum, integer=True)


def check_optional_count(parameter: str, value: object, *, minimum: int = 0, maximum: int | None = None) -> Any:
    return None if value is None else check_count(parameter, value, minimum=minimum, maximum=maximum)


def check_str(
    parameter: str,
    value: object,
    *,
    pattern: re.Pattern[str] | None = None,
    allowed: str = "a string",
    min_length: int | None = None,
    max_length: int | None = None,
) -> Any:
    """A ``str`` (or a string token) that matches ``pattern`` entirely and has an allowed length."""
    if not isinstance(value, str):
        raise FmTypeError(parameter, value, f"a str (got a {_type_name(value)})")
    if is_token(value):
        return value
    if min_length is not None and len(value) < min_length:
        raise FmValidationError(parameter, value, allowed)
    if max_length is not None and len(value) > max_length:
        raise FmValidationError(parameter, value, allowed)
    if pattern is not None and not pattern.fullmatch(value):
        raise FmValidationError(parameter, value, allowed)
    return value


def check_enum(parameter: str, value: object, enum_type: type[E]) -> E:
    """A member of ``enum_type`` (a plain string is refused: pass the enum member)."""
    if not isinstance(value, enum_type):
        members = ", ".join(f"{enum_type.__name__}.{m.name}" for m in enum_type)
        raise FmTypeError(parameter, value, f"a {enum_type.__name__} ({members})")
    return value


def check_str_sequence(
    parameter: str,
    value: object,
    *,
    item: Callable[[str, object], Any] | None = None,
    min_items: int = 0,
) -> tuple[Any, ...]:
    """A list or tuple of strings (never a bare ``str``, which Python would iterate character by character)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        raise FmTypeError(parameter, value, f"a list of str (got a {_type_name(value)})")
    out = []
    for index, element in enumerate(value):
        name = f"{parameter}[{index}]"
        out.append(item(name, element) if item is not None else check_str(name, element))
    if len(out) < min_items:
        raise FmValidationError(parameter, list(value), f"a list of at least {min_items} item(s)")
    return tuple(out)


def check_sequence(parameter: str, value: object, item: Callable[[str, object], T]) -> tuple[T, ...]:
    """A list or tuple whose elements pass ``item`` (called with ``parameter[i]`` and the element)."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        raise FmTypeError(parameter, value, f"a list (got a {_type_name(value)})")
    return tuple(item(f"{parameter}[{index}]", element) for index, element in enumerate(value))


def _is_construct(value: object) -> TypeGuard[Construct]:
    """``isinstance(value, constructs.Construct)``, without importing ``constructs`` (and starting the jsii runtime)
    while it is not imported: then no value can be a Construct."""
    module = sys.modules.get("constructs")
    return module is not None and isinstance(value, module.Construct)


def check_construct(parameter: str, value: object, *, attribute: str, expected: str) -> Any:
    """A construct that has ``attribute`` (jsii interfaces such as ``ec2.IVpc`` cannot be checked with isinstance).

    :param expected: how the type is named in the message, e.g. ``"an ec2.IVpc"``.
    """
    # Imported resources are jsii proxies (not Construct subclasses): accept anything with a construct node.
    if not (_is_construct(value) or hasattr(value, "node")) or not hasattr(value, attribute):
        raise FmTypeError(parameter, value, f"{expected} (got a {_type_name(value)})")
    return value


def check_zone(parameter: str, value: object) -> Any:
    """An availability zone name, Local Zone / Wavelength Zone name, or zone id, or a string token."""
    if value is None:
        return None
    checked = check_str(parameter, value, allowed=zone_pattern_text)
    if is_token(checked):
        return checked
    if not (_ZONE_NAME.fullmatch(checked) or _ZONE_ID.fullmatch(checked)):
        raise FmValidationError(parameter, value, zone_pattern_text)
    return checked


def is_zone_id(value: str) -> bool:
    """Whether a known zone string is a zone id (``use1-az4``) rather than a name."""
    return bool(_ZONE_ID.fullmatch(value))


def same_zone(a: str | None, b: str | None) -> bool | None:
    """Whether two zones are the same, or None when that cannot be known at synth time (a token, a missing value, or
    a name compared with an id)."""
    if not (known(a) and known(b)):
        return None
    assert a is not None and b is not None
    if is_zone_id(a) != is_zone_id(b):
        return None
    return a == b


# aws-cdk-lib 2.275.0 aws-ec2/lib/vpc.ts ``ImportedSubnet.availabilityZone``: the getter throws
# ``ValidationError(lit`CannotReferenceSubnetSAvailability`, ...)`` when the subnet was imported without
# ``availabilityZone`` (``Subnet.from_subnet_id``, ``from_subnet_attributes`` without it). jsii hands it to Python as a
# ``RuntimeError`` whose message starts with that id; the jsii runtime stays usable afterwards.
_NO_SUBNET_ZONE = "CannotReferenceSubnetSAvailability"


def subnet_zone(subnet: object) -> str | None:
    """The subnet's zone (name or id) when it is known at synth time, else None.

    None for a subnet imported without a zone (reading ``availability_zone`` would raise jsii's
    ``CannotReferenceSubnetSAvailability``), for a zone that is a deploy-time token (an environment-agnostic VPC's
    ``Fn::Select`` of ``Fn::GetAZs``, a ``CfnParameter``), and for an object without ``availability_zone``. Compare
    two zones with :func:`same_zone` (a zone name and a zone id are not comparable at synth time).
    """
    try:
        zone = getattr(subnet, "availability_zone", None)
    except RuntimeError as error:
        if _NO_SUBNET_ZONE in str(error):
            return None
        raise
    if not isinstance(zone, str) or not zone or is_token(zone):
        return None
    return zone


_NOT_GIVEN: Any = object()


def renamed(
    old_name: str, old_value: Any, new_name: str, new_value: Any, *, default: Any = None, removal: str = "0.3.0"
) -> Any:
    """Resolve a renamed keyword: the new one wins; the old one still works, with a ``DeprecationWarning``.

    Giving both raises :class:`~fmconstructs.errors.FmValidationError`. Old names stay one minor version
    (CHANGELOG.md lists every rename).
    """
    import warnings

    if old_value is _NOT_GIVEN or old_value is None:
        return default if new_value is _NOT_GIVEN else new_value
    if new_value is not _NOT_GIVEN and new_value is not None:
        raise FmValidationError(old_name, old_value, f"omitted when {new_name} is given ({old_name} is its old name)")
    warnings.warn(
        f"{old_name} is deprecated and will be removed in fmconstructs {removal}: use {new_name}",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value


NOT_GIVEN: Any = _NOT_GIVEN
"""Default for a renamed keyword's new name, so that ``renamed`` can tell "not given" from an explicit value."""


# --- construct arguments shared by every constructor ----------------------------------------------------------------


def check_scope_id(scope: object, id: object) -> None:
    """``scope`` a construct and ``id`` a non-empty str known at synthesis and unique among the scope's children,
    checked before they reach jsii (which raises its own errors)."""
    if not _is_construct(scope):
        raise FmTypeError("scope", scope, f"a Construct (got a {_type_name(scope)})")
    check_str("id", id, allowed="a construct id (a non-empty str)", min_length=1)
    if is_token(id):
        raise FmValidationError("id", id, "a construct id known at synthesis (construct ids name template resources)")
    assert isinstance(id, str)
    if scope.node.try_find_child(id.replace("/", "--")) is not None:
        raise FmValidationError("id", id, f"unique among the children of {scope.node.path or 'the app'}")


def check_instance(parameter: str, value: object, expected: type | tuple[type, ...], what: str) -> Any:
    """``isinstance`` with the library's error (for Python and jsii classes such as ``Duration``)."""
    if not isinstance(value, expected):
        raise FmTypeError(parameter, value, f"{what} (got a {_type_name(value)})")
    return value


def check_vpc(parameter: str, value: object) -> Any:
    return check_construct(parameter, value, attribute="vpc_id", expected="an ec2.IVpc")


def check_subnet(parameter: str, value: object) -> Any:
    return check_construct(parameter, value, attribute="subnet_id", expected="an ec2.ISubnet")


def check_optional_subnet(parameter: str, value: object) -> Any:
    return None if value is None else check_subnet(parameter, value)


def check_security_group(parameter: str, value: object) -> Any:
    return check_construct(parameter, value, attribute="security_group_id", expected="an ec2.ISecurityGroup")
