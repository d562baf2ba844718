"""The cross-property rules of LustreFileSystem (fmconstructs.storage.rules), each with plain values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.storage import rules
from fmconstructs.storage.lustre_options import LustreMetadataConfiguration
from fmconstructs.storage.sizing import LustreDeploymentType

P1, P2 = LustreDeploymentType.PERSISTENT_1, LustreDeploymentType.PERSISTENT_2
S1, S2 = LustreDeploymentType.SCRATCH_1, LustreDeploymentType.SCRATCH_2
TOKEN = float("-1.8881545897087626e+289")  # what CfnParameter.value_as_number returns (a number token)
AUTOMATIC = LustreMetadataConfiguration.automatic()
GROUP = object()  # the rule only asks whether a group is given


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


def test_the_module_lists_its_rules():
    assert sorted(rules.__all__) == sorted(
        name
        for name in vars(rules)
        if callable(getattr(rules, name))
        and "_" in name
        and name[0].islower()
        and getattr(getattr(rules, name), "__module__", "") == rules.__name__
    )


# --- throughput_fits_the_deployment_type --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deployment_type", "throughput"),
    [(P2, 125), (P2, 1000), (P1, 50), (P1, 200), (S1, None), (S2, None), (P2, TOKEN), (P2, None)],
)
def test_throughput_fits(deployment_type, throughput):
    rules.throughput_fits_the_deployment_type(deployment_type=deployment_type, throughput_mbps_per_tib=throughput)


@pytest.mark.parametrize(
    ("deployment_type", "throughput", "message"),
    [
        (P2, 50, r"one of 125, 250, 500, 1000 for PERSISTENT_2"),
        (P1, 125, r"one of 50, 100, 200 for PERSISTENT_1"),
        (S2, 200, r"None for SCRATCH_2 \(scratch throughput is a fixed 200 MB/s/TiB baseline\)"),
        (S1, TOKEN, r"None for SCRATCH_1"),
    ],
)
def test_throughput_refused(deployment_type, throughput, message):
    _refused(
        lambda: rules.throughput_fits_the_deployment_type(
            deployment_type=deployment_type, throughput_mbps_per_tib=throughput
        ),
        "throughput_mbps_per_tib",
        message,
    )


# --- efa_needs_persistent_2_metadata_and_a_group ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deployment_type", "efa_enabled", "metadata", "group"),
    [(P2, True, AUTOMATIC, GROUP), (P2, False, None, None), (S2, False, AUTOMATIC, None)],
)
def test_efa_fits(deployment_type, efa_enabled, metadata, group):
    rules.efa_needs_persistent_2_metadata_and_a_group(
        deployment_type=deployment_type,
        efa_enabled=efa_enabled,
        metadata_configuration=metadata,
        efa_security_group=group,
    )


@pytest.mark.parametrize(
    ("deployment_type", "efa_enabled", "metadata", "group", "parameter", "message"),
    [
        (P2, False, None, GROUP, "efa_security_group", "None unless efa_enabled is True"),
        (P1, True, AUTOMATIC, GROUP, "efa_enabled", r"False for PERSISTENT_1 \(EFA needs PERSISTENT_2\)"),
        (S2, True, AUTOMATIC, GROUP, "efa_enabled", "False for SCRATCH_2"),
        (P2, True, None, GROUP, "metadata_configuration", "set .AUTOMATIC or USER_PROVISIONED. when efa_enabled"),
        (P2, True, AUTOMATIC, None, "efa_security_group", "an EfaSecurityGroup or ec2.ISecurityGroup when efa_"),
    ],
)
def test_efa_refused(deployment_type, efa_enabled, metadata, group, parameter, message):
    _refused(
        lambda: rules.efa_needs_persistent_2_metadata_and_a_group(
            deployment_type=deployment_type,
            efa_enabled=efa_enabled,
            metadata_configuration=metadata,
            efa_security_group=group,
        ),
        parameter,
        message,
    )


# --- capacity_fits_the_deployment_type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deployment_type", "capacity", "throughput", "efa_enabled"),
    [
        (P2, 1200, 125, False),
        (P2, 4800, 250, False),
        (S1, 3600, None, False),
        (P2, 38_400, 125, True),
        (P2, 4800, 1000, True),
        (P2, TOKEN, 125, False),  # a deploy-time capacity: FSx checks it
        (P2, 1000, TOKEN, True),  # a deploy-time tier with EFA: the multiple is unknown
        (P2, 1000, 50, True),  # a wrong tier is the throughput rule's to report
    ],
)
def test_capacity_fits(deployment_type, capacity, throughput, efa_enabled):
    rules.capacity_fits_the_deployment_type(
        deployment_type=deployment_type,
        storage_capacity_gib=capacity,
        throughput_mbps_per_tib=throughput,
        efa_enabled=efa_enabled,
    )


@pytest.mark.parametrize(
    ("deployment_type", "capacity", "throughput", "efa_enabled", "message"),
    [
        (P2, 2_147_483_648, 125, False, r"at most 2,147,483,647 \(FSx API CreateFileSystem StorageCapacity\)"),
        (P2, 1000, 125, False, "1200, 2400 or a multiple of 2400"),
        (P2, 4800, 125, True, "multiple of 38400"),
    ],
)
def test_capacity_refused(deployment_type, capacity, throughput, efa_enabled, message):
    _refused(
        lambda: rules.capacity_fits_the_deployment_type(
            deployment_type=deployment_type,
            storage_capacity_gib=capacity,
            throughput_mbps_per_tib=throughput,
            efa_enabled=efa_enabled,
        ),
        "storage_capacity_gib",
        message,
    )


# --- metadata_configuration_needs_persistent_2 --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deployment_type", "metadata"),
    [(P2, AUTOMATIC), (P2, LustreMetadataConfiguration.user_provisioned(1500)), (P2, None), (S2, None), (P1, None)],
)
def test_metadata_fits(deployment_type, metadata):
    rules.metadata_configuration_needs_persistent_2(deployment_type=deployment_type, metadata_configuration=metadata)


@pytest.mark.parametrize(
    ("deployment_type", "metadata", "message"),
    [
        (P1, AUTOMATIC, r"None for PERSISTENT_1 \(PERSISTENT_2 only\)"),
        (S2, AUTOMATIC, r"None for SCRATCH_2 \(PERSISTENT_2 only\)"),
        (P2, "AUTOMATIC", "a LustreMetadataConfiguration"),
    ],
)
def test_metadata_refused(deployment_type, metadata, message):
    _refused(
        lambda: rules.metadata_configuration_needs_persistent_2(
            deployment_type=deployment_type, metadata_configuration=metadata
        ),
        "metadata_configuration",
        message,
    )
