"""The library's one exception type and its warning ids.

Misuse raises :class:`FmValidationError` at construction time; environment-dependent or soft problems become
``Annotations`` warnings with stable ids (``fmconstructs:<id>``) so that users can acknowledge them and tests can
assert them.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any

from aws_cdk import Annotations
from constructs import IConstruct


class FmValidationError(ValueError):
    """Bad input to an fmconstructs API: names the parameter, the value received and what is allowed."""

    def __init__(self, parameter: str, value: Any, allowed: str) -> None:
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        super().__init__(f"{parameter} must be {allowed}, got {value!r}")


def one_of(values: Iterable[Any]) -> str:
    """Render a closed set of allowed values for an error message: ``one of 'a', 'b'``."""
    return "one of " + ", ".join(repr(v.value if isinstance(v, Enum) else v) for v in values)


class WarningId(str, Enum):
    """Stable ids of the warnings fmconstructs adds (acknowledge with ``Annotations.acknowledge_warning``)."""

    PLACEMENT_GROUP_WITH_CAPACITY_BLOCK = "placement-group-with-capacity-block"
    NO_INSTANCE_STORE = "no-instance-store"
    LUSTRE_OVERLAPPING_DATA_REPOSITORY_PATHS = "lustre-overlapping-data-repository-paths"
    GRAFANA_SERVICE_MANAGED_PERMISSIONS = "grafana-service-managed-permissions"

    @property
    def qualified(self) -> str:
        """The id as it appears in the cloud assembly: ``fmconstructs:<id>``."""
        return f"fmconstructs:{self.value}"


def add_warning(scope: IConstruct, warning: WarningId, message: str) -> None:
    """Attach an acknowledgeable warning to ``scope``."""
    Annotations.of(scope).add_warning_v2(warning.qualified, message)
