"""The cross-property rules of :class:`~fmconstructs.storage.lustre.LustreFileSystem`, as pure functions (the shape of
:mod:`fmconstructs._rules`): plain values in, no construct or scope; a broken rule raises
:class:`~fmconstructs.errors.FmValidationError` (the constructor calls them from
:mod:`fmconstructs.storage.lustre_rules`, after the type checks).

Checks of one option on its own (types, ranges) stay in :mod:`fmconstructs.storage.lustre_rules`; the rules that need
a construct (the log group's name and environment, the retained fixed-name warning) stay there too. Values that are
deploy-time tokens are never compared: a rule checks only what is known at synthesis.
"""

from __future__ import annotations

from .._validate import known
from ..errors import FmValidationError, one_of
from .lustre_options import LustreMetadataConfiguration
from .sizing import (
    EFA_CAPACITY_MULTIPLE_GIB,
    MAX_STORAGE_CAPACITY_GIB,
    THROUGHPUT_MBPS_PER_TIB,
    LustreDeploymentType,
    capacity_rule,
    is_valid_capacity,
)

__all__ = [
    "capacity_fits_the_deployment_type",
    "efa_needs_persistent_2_metadata_and_a_group",
    "metadata_configuration_needs_persistent_2",
    "throughput_fits_the_deployment_type",
]


def throughput_fits_the_deployment_type(
    *, deployment_type: LustreDeploymentType, throughput_mbps_per_tib: int | None
) -> None:
    """Persistent types take one of their throughput tiers
    (:data:`~fmconstructs.storage.sizing.THROUGHPUT_MBPS_PER_TIB`); scratch types none (a fixed 200 MB/s/TiB
    baseline)."""
    throughput = throughput_mbps_per_tib
    if deployment_type.is_persistent:
        allowed = THROUGHPUT_MBPS_PER_TIB[deployment_type]
        if known(throughput) and throughput not in allowed:
            raise FmValidationError(
                "throughput_mbps_per_tib", throughput, f"{one_of(allowed)} for {deployment_type.value}"
            )
    elif throughput is not None:
        raise FmValidationError(
            "throughput_mbps_per_tib",
            throughput,
            f"None for {deployment_type.value} (scratch throughput is a fixed 200 MB/s/TiB baseline)",
        )


def efa_needs_persistent_2_metadata_and_a_group(
    *,
    deployment_type: LustreDeploymentType,
    efa_enabled: bool,
    metadata_configuration: LustreMetadataConfiguration | None,
    efa_security_group: object | None,
) -> None:
    """An EFA-enabled file system is PERSISTENT_2 with a metadata configuration and an EFA security group; without EFA,
    no EFA security group."""
    if not efa_enabled:
        if efa_security_group is not None:
            raise FmValidationError("efa_security_group", "given", "None unless efa_enabled is True")
        return
    if deployment_type is not LustreDeploymentType.PERSISTENT_2:
        raise FmValidationError(
            "efa_enabled", efa_enabled, f"False for {deployment_type.value} (EFA needs PERSISTENT_2)"
        )
    if metadata_configuration is None:
        raise FmValidationError(
            "metadata_configuration", None, "set (AUTOMATIC or USER_PROVISIONED) when efa_enabled is True"
        )
    if efa_security_group is None:
        raise FmValidationError(
            "efa_security_group", None, "an EfaSecurityGroup or ec2.ISecurityGroup when efa_enabled is True"
        )


def capacity_fits_the_deployment_type(
    *,
    deployment_type: LustreDeploymentType,
    storage_capacity_gib: int,
    throughput_mbps_per_tib: int | None,
    efa_enabled: bool,
) -> None:
    """The storage capacity is at most the FSx maximum and a size the deployment type (and, with EFA, the throughput
    tier) allows (:func:`~fmconstructs.storage.sizing.is_valid_capacity`)."""
    capacity, throughput = storage_capacity_gib, throughput_mbps_per_tib
    if not known(capacity):
        return  # a deploy-time value (checked for type and NaN/inf before): FSx checks it at deploy time
    if capacity > MAX_STORAGE_CAPACITY_GIB:
        raise FmValidationError(
            "storage_capacity_gib",
            capacity,
            f"at most {MAX_STORAGE_CAPACITY_GIB:,} (FSx API CreateFileSystem StorageCapacity)",
        )
    if efa_enabled and not known(throughput):
        return
    if efa_enabled and throughput not in EFA_CAPACITY_MULTIPLE_GIB:
        return  # reported by throughput_fits_the_deployment_type
    if not is_valid_capacity(capacity, deployment_type, throughput, efa_enabled=efa_enabled):
        raise FmValidationError(
            "storage_capacity_gib",
            capacity,
            capacity_rule(deployment_type, throughput, efa_enabled=efa_enabled, near=capacity),
        )


def metadata_configuration_needs_persistent_2(
    *, deployment_type: LustreDeploymentType, metadata_configuration: LustreMetadataConfiguration | None
) -> None:
    """A metadata configuration is for PERSISTENT_2 only (and valid on its own:
    :meth:`LustreMetadataConfiguration.validate`)."""
    metadata = metadata_configuration
    if metadata is None:
        return
    if not isinstance(metadata, LustreMetadataConfiguration):
        raise FmValidationError("metadata_configuration", metadata, "a LustreMetadataConfiguration")
    if deployment_type is not LustreDeploymentType.PERSISTENT_2:
        raise FmValidationError(
            "metadata_configuration", metadata.mode.value, f"None for {deployment_type.value} (PERSISTENT_2 only)"
        )
    metadata.validate()
