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

import functools
import math
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeGuard, TypeVar, overload

from .errors import FmTypeError, FmValidationError, is_token

if TYPE_CHECKING:
    from constructs import Construct

__all__ = [
    "check_bool",
    "check_construct",
    "check_count",
    "check_enum",
    "check_first_call",
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
        if attribute == "subnet_id" and (is_token(value) or _looks_like_subnet_id(value)):
            raise FmTypeError(parameter, value, f"{expected}, not a subnet id: {_SUBNET_ID_ADVICE}")
        raise FmTypeError(parameter, value, f"{expected} (got a {_type_name(value)})")
    return value


def _looks_like_subnet_id(value: object) -> bool:
    """A subnet id string (``subnet-...``, an element of a list token) or a list of them, given where a subnet goes."""
    items = value if isinstance(value, list | tuple) else [value]
    return bool(items) and all(isinstance(v, str) and (v.startswith("subnet-") or "Token[" in v) for v in items)


# A List<AWS::EC2::Subnet::Id> CfnParameter's value_as_list is an encoded list token: its elements are not subnets.
_SUBNET_ID_ADVICE = (
    "import each subnet, e.g. ec2.Subnet.from_subnet_id(self, 'Subnet0', Fn.select(0, param.value_as_list)) for a "
    "List<AWS::EC2::Subnet::Id> parameter (add availability_zone= with Subnet.from_subnet_attributes when known)"
)


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


#: The fmconstructs version that removed the names deprecated in 0.2.0 (CHANGELOG.md "Removed" of 0.3.0).
REMOVED_IN = "0.3.0"


def refuse_removed_keywords(owner: str, given: Mapping[str, object], renames: Mapping[str, str]) -> None:
    """Raise :class:`~fmconstructs.errors.FmTypeError` (a ``TypeError``) when ``given`` holds a keyword removed in
    0.3.0, naming its new name: ``max_instance_count must be renamed to max_nodes (...), got 4``."""
    for old, new in renames.items():
        if old in given:
            raise FmTypeError(
                old, given[old], f"renamed to {new} ({owner}({old}=) was removed in fmconstructs {REMOVED_IN})"
            )


def removed_keywords(owner: str, **renames: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a function or ``__init__`` whose keywords ``old=`` were renamed ``new`` and then removed: passing an
    old name raises :func:`refuse_removed_keywords`'s error instead of Python's bare "unexpected keyword argument"."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            refuse_removed_keywords(owner, kwargs, renames)
            return function(*args, **kwargs)

        return wrapper

    return decorate


class RemovedAttribute:
    """A class attribute removed in 0.3.0: reading it raises ``AttributeError`` naming its new name
    (``Capacity.availability_zone was removed in fmconstructs 0.3.0: use Capacity.zone``)."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._old = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self._old = f"{owner.__name__}.{name}"

    @overload
    def __get__(self, instance: None, owner: type) -> RemovedAttribute: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> NoReturn: ...
    def __get__(self, instance: object, owner: type | None = None) -> RemovedAttribute:
        if instance is None:  # the class itself (introspection, documentation tools): the descriptor
            return self
        raise AttributeError(f"{self._old} was removed in fmconstructs {REMOVED_IN}: use {self._new}")


NOT_GIVEN: Any = object()
"""Default of a keyword that must be given, so that the constructor can tell "not given" from an explicit value and
raise :class:`~fmconstructs.errors.FmValidationError` naming it."""


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


def check_first_call(scope: object, id: str, *, method: str, remedy: str) -> None:
    """Refuse a second call of a helper that creates the child ``id`` of ``scope`` (a fixed construct id): the
    library's error naming ``method``, the id and ``remedy`` (what to do), before jsii's "There is already a Construct
    with name ..." error. Helpers that return what they made before call nothing and stay idempotent instead."""
    if not _is_construct(scope):
        raise FmTypeError("scope", scope, f"a Construct (got a {_type_name(scope)})")
    if scope.node.try_find_child(id) is not None:
        raise FmValidationError(
            method,
            f"a second call on {scope.node.path or 'the app'}",
            f"called once: the first call created its child {id!r} ({remedy})",
        )


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


def check_kms_key(parameter: str, value: object) -> Any:
    return check_construct(parameter, value, attribute="key_arn", expected="a kms.IKey")


# --- one line above every public constructor: scope/id first, errors located at the construct path ---------------

P = ParamSpec("P")


def _scope_and_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[object, object]:
    """``scope`` and ``id`` of a constructor call ``(self, scope, id, ...)``, given by position or keyword."""
    scope = args[1] if len(args) > 1 else kwargs.get("scope")
    id = args[2] if len(args) > 2 else kwargs.get("id")
    return scope, id


def construct_path(scope: object, id: object) -> str:
    """The path a construct ``id`` gets under ``scope`` (``Stack/Cluster/P5``), or ``""`` when unknown."""
    if not (_is_construct(scope) and isinstance(id, str)):
        return ""
    parent = scope.node.path
    return f"{parent}/{id}" if parent else id


def located(init: Callable[P, None]) -> Callable[P, None]:
    """Decorate a public construct's ``__init__(self, scope, id, ...)``: check ``scope`` and ``id`` first
    (:func:`check_scope_id`), then run it; an :class:`~fmconstructs.errors.FmValidationError` raised inside names the
    construct path (``"max_nodes must be at least 1, got 0 (at Stack/Cluster/P5)"``), once: nested constructs keep the
    innermost path. ``parameter``, ``value`` and ``allowed`` stay as raised; ``path`` holds the location."""

    @functools.wraps(init)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        scope, id = _scope_and_id(tuple(args), dict(kwargs))
        check_scope_id(scope, id)
        try:
            init(*args, **kwargs)
        except FmValidationError as error:
            raise error.at(construct_path(scope, id)) from error.__cause__

    return wrapper


# --- durations (aws_cdk.Duration) checked before aws-cdk-lib converts them ----------------------------------------


def check_duration_seconds(
    parameter: str, value: object, *, minimum_seconds: int = 0, maximum_seconds: int | None = None
) -> Any:
    """An ``aws_cdk.Duration`` of whole seconds within bounds, as an int of seconds (or a number token).

    aws-cdk-lib raises its own error for ``Duration.millis(1500).to_seconds()`` (not a whole number) and for a
    deploy-time amount in another unit than seconds; here both name the parameter. A deploy-time amount must be
    given as ``Duration.seconds(token)``.
    """
    from aws_cdk import Duration

    duration = check_instance(parameter, value, Duration, "an aws_cdk.Duration such as Duration.minutes(5)")
    try:
        seconds = duration.to_seconds(integral=False)
    except RuntimeError:  # jsii: a token amount in another unit than seconds
        raise FmValidationError(
            parameter, "a deploy-time value", "Duration.seconds(...) when its amount is a deploy-time value"
        ) from None
    if is_token(seconds):
        return seconds
    human = duration.to_human_string()
    if seconds != int(seconds):
        raise FmValidationError(parameter, human, "a whole number of seconds")
    if seconds < minimum_seconds:
        raise FmValidationError(parameter, human, f"at least {minimum_seconds} second(s)")
    if maximum_seconds is not None and seconds > maximum_seconds:
        raise FmValidationError(parameter, human, f"at most {maximum_seconds} seconds")
    return int(seconds)


# CloudWatch periods, in seconds. Metrics (CloudWatch API MetricStat.Period, CloudFormation
# "AWS::CloudWatch::Alarm MetricStat" Period): "a period can be as short as one minute (60 seconds) and must be a
# multiple of 60. For high-resolution metrics ... 1, 5, 10, 20, 30, 60, or any multiple of 60". Alarms (CloudWatch API
# PutMetricAlarm Period): "Valid values are 10, 20, 30, and any multiple of 60".
METRIC_SUB_MINUTE_PERIODS_SECONDS = (1, 5, 10, 20, 30)
ALARM_SUB_MINUTE_PERIODS_SECONDS = (10, 20, 30)


def check_metric_period(parameter: str, value: object, *, alarm: bool = False) -> Any:
    """A CloudWatch metric (or, with ``alarm``, alarm) period: an ``aws_cdk.Duration`` of 1, 5, 10, 20 or 30 seconds
    (alarms: 10, 20 or 30) or a multiple of 60 seconds. Returns the seconds (or a number token)."""
    seconds = check_duration_seconds(parameter, value, minimum_seconds=1)
    if is_token(seconds):
        return seconds
    short = ALARM_SUB_MINUTE_PERIODS_SECONDS if alarm else METRIC_SUB_MINUTE_PERIODS_SECONDS
    if seconds % 60 and seconds not in short:
        valid = [*short, *range(60, (seconds // 60 + 2) * 60, 60)]
        lower = max((s for s in valid if s < seconds), default=None)
        upper = min(s for s in valid if s > seconds)
        nearest = " or ".join(f"{s} s" for s in (lower, upper) if s is not None)
        raise FmValidationError(
            parameter,
            f"{seconds} seconds",
            f"{', '.join(map(str, short))} seconds or a multiple of 60 seconds for a CloudWatch "
            f"{'alarm' if alarm else 'metric'} (nearest: {nearest})",
        )
    return seconds


# --- mount points: one rule for PCS, EKS, ParallelCluster, HyperPod and the Lustre client -------------------------

_MOUNT_POINT_CHARS = re.compile(r"/[A-Za-z0-9._/-]+")
# aws-parallelcluster 3.16.1 validators/cluster_validators.py SharedStorageMountDirValidator: reserved_directories.
RESERVED_MOUNT_DIRECTORIES = frozenset(
    {
        "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/media", "/mnt", "/opt", "/opt/parallelcluster",
        "/opt/parallelcluster/shared", "/opt/parallelcluster/shared_login_nodes", "/opt/slurm", "/opt/intel",
        "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
    }
)  # fmt: skip
# Our own choice (not an AWS rule): nothing is mounted *inside* the operating system's own trees either.
SYSTEM_MOUNT_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr")
MOUNT_POINT_TEXT = "an absolute path of letters, digits, '.', '_', '-' and '/' such as '/fsx'"


def check_mount_point(parameter: str, value: object, *, allow_token: bool = False) -> Any:
    """Where a file system is mounted on nodes: the library's one mount-point rule.

    Absolute, of letters, digits, ``.``, ``_``, ``-`` and ``/``; normalized (``posixpath.normpath(p) == p``, no ``//``
    and no part starting with ``.``, as ParallelCluster's ``file_path`` pattern: ``/fsx/../etc``, ``/fsx/.a`` and
    ``/fsx/`` are refused); not ``/``, not one of ParallelCluster's reserved
    directories (:data:`RESERVED_MOUNT_DIRECTORIES`) and not inside the operating system's trees
    (:data:`SYSTEM_MOUNT_TREES`). A deploy-time value is refused (it is written into node scripts) unless
    ``allow_token``.
    """
    text = check_str(parameter, value, pattern=_MOUNT_POINT_CHARS, allowed=MOUNT_POINT_TEXT)
    if is_token(text):
        if allow_token:
            return text
        raise FmValidationError(parameter, text, "a path known at synthesis (it is written into node scripts)")
    if posixpath.normpath(text) != text or "//" in text or "/." in text:
        raise FmValidationError(
            parameter, text, "a normalized absolute path (no part starting with '.', no '//', no trailing '/')"
        )
    if text == "/" or text in RESERVED_MOUNT_DIRECTORIES:
        reserved = ", ".join(sorted(RESERVED_MOUNT_DIRECTORIES))
        raise FmValidationError(parameter, text, f"a directory other than '/' and the reserved {reserved}")
    if any(text.startswith(tree + "/") for tree in SYSTEM_MOUNT_TREES):
        raise FmValidationError(
            parameter, text, f"a directory outside the system trees {', '.join(SYSTEM_MOUNT_TREES)}"
        )
    return text


# --- Local Zones ---------------------------------------------------------------------------------------------------

# Zone names: a Region zone is "<region><letter>" (us-east-1a); a Local Zone "<region>-<location>-<n><letter>"
# (us-east-1-dfw-2a) and a Wavelength Zone "<region>-wl1-<location>-wlz-<n>" (EC2 User Guide "Regions and Zones";
# Local Zones User Guide "available-local-zones"). Zone ids: use1-az4 (Region), use1-dfw2-az1 (Local Zone).
_REGION_ZONE_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+[a-z]")
_REGION_ZONE_ID = re.compile(r"[a-z]{2,4}\d+-az\d+")


def is_local_zone(zone: str | None) -> bool | None:
    """Whether a zone name or id is a Local Zone or Wavelength Zone (not a Region's own zone); None when unknown."""
    if not known(zone) or not isinstance(zone, str):
        return None
    if _REGION_ZONE_NAME.fullmatch(zone) or _REGION_ZONE_ID.fullmatch(zone):
        return False
    if _ZONE_NAME.fullmatch(zone) or _ZONE_ID.fullmatch(zone):
        return True
    return None
