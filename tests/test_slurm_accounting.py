"""Slurm accounting, so jobs have users and accounts (issue 22 section 2).

PCS: ``PcsOptions(accounting=, accounting_purge_time_days=)`` reaches ``AWS::PCS::Cluster``
``SlurmConfiguration.Accounting`` (PCS API reference ``AccountingRequest``: Mode STANDARD | NONE, DefaultPurgeTimeInDays
-1 .. 10000, 0 refused) and a cluster with accounting is retained by default.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from fmconstructs import FmValidationError
from fmconstructs.pcs import AccountingMode, PcsAmi
from fmconstructs.platform import PcsOptions, TrainingPlatform
from tests.conftest import new_scene

PCS = "AWS::PCS::Cluster"
AMI = PcsAmi.from_image_id("ami-0123456789abcdef0")


def _pcs_platform(options: PcsOptions) -> Template:
    scene = new_scene()
    TrainingPlatform(scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=options)
    return scene.template()


# --- PCS managed accounting through the platform ----------------------------------------------------------------------
def test_pcs_options_accounting_reaches_the_cluster() -> None:
    # GIVEN PcsOptions with accounting and a purge time; WHEN the platform synthesizes
    template = _pcs_platform(PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=90))
    # THEN the cluster's Slurm configuration carries them, and the cluster (its job history) is retained
    template.has_resource_properties(
        PCS,
        {"SlurmConfiguration": Match.object_like({"Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": 90}})},
    )
    template.has_resource(PCS, {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})


def test_pcs_options_accounting_without_purge_time_keeps_pcs_default() -> None:
    template = _pcs_platform(PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD))
    accounting = next(iter(template.find_resources(PCS).values()))["Properties"]["SlurmConfiguration"]["Accounting"]
    assert accounting == {"Mode": "STANDARD"}


def test_pcs_options_accounting_given_removal_policy_wins() -> None:
    template = _pcs_platform(
        PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, removal_policy=cdk.RemovalPolicy.DESTROY)
    )
    template.has_resource(PCS, {"DeletionPolicy": "Delete"})


def test_pcs_options_purge_days_may_be_a_deploy_time_value() -> None:
    scene = new_scene()
    days = cdk.CfnParameter(scene.stack, "PurgeDays", type="Number", default=30).value_as_number
    options = PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=days)
    TrainingPlatform(scene.stack, "Platform", vpc=scene.vpc, instance_type="p5.48xlarge", nodes=2, orchestrator=options)
    scene.template().has_resource_properties(
        PCS,
        {
            "SlurmConfiguration": Match.object_like(
                {"Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": {"Ref": "PurgeDays"}}}
            )
        },
    )


@pytest.mark.parametrize("days", [-1, 1, 10000])
def test_pcs_options_purge_days_bounds_accepted(days: int) -> None:
    assert PcsOptions(ami=AMI, accounting=AccountingMode.STANDARD, accounting_purge_time_days=days)


_STANDARD = AccountingMode.STANDARD
BAD_PCS: list[tuple[dict[str, Any], str]] = [
    ({"accounting": "STANDARD"}, "accounting"),  # the enum member, not its value
    ({"accounting": None}, "accounting"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 0}, "accounting_purge_time_days"),  # "0 isn't valid"
    ({"accounting": _STANDARD, "accounting_purge_time_days": -2}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 10001}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": 1.5}, "accounting_purge_time_days"),
    ({"accounting": _STANDARD, "accounting_purge_time_days": "30"}, "accounting_purge_time_days"),
    ({"accounting_purge_time_days": 30}, "accounting_purge_time_days"),  # default NONE
    ({"accounting": AccountingMode.NONE, "accounting_purge_time_days": 30}, "accounting_purge_time_days"),
]


@pytest.mark.parametrize(("props", "parameter"), BAD_PCS)
def test_pcs_options_bad_accounting_refused(props: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        PcsOptions(ami=AMI, **props)
