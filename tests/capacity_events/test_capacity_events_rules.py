"""The cross-property rules of CapacityBlockEvents (fmconstructs.capacity_events.rules), each with plain values: no
stack."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs.capacity import CapacityBlockScaling
from fmconstructs.capacity_events import CapacityKind, rules
from fmconstructs.errors import FmValidationError, WarningId

BLOCK_TOKEN = cdk.Fn.ref("Block")  # a deploy-time reservation id (a string token)
IDS = ("cr-0123456789abcdef0", "cr-0123456789abcdef1")


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


# --- job_warning needs a backend ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "pcs", "eks"), [(False, False, False), (True, True, False), (True, False, True), (True, True, True)]
)
def test_job_warning_with_a_backend_or_none_passes(given: bool, pcs: bool, eks: bool) -> None:
    rules.job_warning_needs_a_backend(job_warning_given=given, pcs=pcs, eks=eks)


def test_job_warning_without_a_backend_is_refused() -> None:
    _refused(
        lambda: rules.job_warning_needs_a_backend(job_warning_given=True, pcs=False, eks=False),
        "job_warning",
        r"None unless pcs_login_node_group_id, parallelcluster_cluster_name or eks_cluster is given \(nothing to warn\)",
    )


# --- endpoints need the handler in the VPC --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("given", "in_vpc", "cluster"), [(False, False, False), (False, True, True), (True, True, True)]
)
def test_endpoints_for_a_handler_in_the_vpc_pass(given: bool, in_vpc: bool, cluster: bool) -> None:
    rules.endpoints_need_the_handler_in_the_vpc(endpoints_given=given, eks_in_vpc=in_vpc, eks_cluster_given=cluster)


@pytest.mark.parametrize(("in_vpc", "cluster"), [(False, True), (True, False), (False, False)])
def test_endpoints_for_a_handler_outside_the_vpc_are_refused(in_vpc: bool, cluster: bool) -> None:
    _refused(
        lambda: rules.endpoints_need_the_handler_in_the_vpc(
            endpoints_given=True, eks_in_vpc=in_vpc, eks_cluster_given=cluster
        ),
        "endpoints",
        r"None unless the handler runs in the VPC \(eks_cluster given, eks_in_vpc=True\)",
    )


# --- scaling targets on the reservations ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("blocks", "ids"),
    [([], IDS), ([IDS[0]], IDS), ([IDS[1], IDS[0]], IDS), (["cr-0aaaaaaaaaaaaaaaa"], ()), ([BLOCK_TOKEN], IDS)],
)
def test_targets_on_the_reservations_pass(blocks: list[str], ids: tuple[str, ...]) -> None:
    rules.scaling_targets_are_on_the_reservations(target_blocks=blocks, reservation_ids=ids)


@pytest.mark.parametrize(
    ("blocks", "parameter"),
    [(["cr-0aaaaaaaaaaaaaaaa"], "scaling_targets[0]"), ([IDS[0], "cr-0aaaaaaaaaaaaaaaa"], "scaling_targets[1]")],
)
def test_a_target_on_another_block_is_refused(blocks: list[str], parameter: str) -> None:
    _refused(
        lambda: rules.scaling_targets_are_on_the_reservations(target_blocks=blocks, reservation_ids=IDS),
        parameter,
        rf"a group on one of capacity_reservation_ids \({IDS[0]}, {IDS[1]}\): the rule only receives those blocks'",
    )


# --- a scaling target scales on block events ------------------------------------------------------------------------
def test_an_on_block_events_target_passes() -> None:
    rules.a_scaling_target_scales_on_block_events(
        parameter="scaling_targets[0]", scaling=CapacityBlockScaling.ON_BLOCK_EVENTS
    )


def test_an_at_deploy_target_is_refused() -> None:
    with pytest.raises(FmValidationError, match="a fleet built AT_DEPLOY is a fixed fleet") as error:
        rules.a_scaling_target_scales_on_block_events(
            parameter="scaling_targets[2]", scaling=CapacityBlockScaling.AT_DEPLOY
        )
    assert error.value.parameter == "scaling_targets[2].capacity_block_scaling"
    assert error.value.value == "AT_DEPLOY"


# --- the drain starts before termination ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "minutes"), [(CapacityKind.INSTANCES, 31), (CapacityKind.INSTANCES, 60), (CapacityKind.ULTRASERVER, 61)]
)
def test_a_lead_before_termination_passes(kind: CapacityKind, minutes: int) -> None:
    rules.the_drain_starts_before_termination(parameter="p", lead_minutes=minutes, given=minutes, kind=kind)


@pytest.mark.parametrize(
    ("kind", "minutes", "termination"),
    [(CapacityKind.INSTANCES, 30, 30), (CapacityKind.INSTANCES, 1, 30), (CapacityKind.ULTRASERVER, 60, 60)],
)
def test_a_lead_at_or_after_termination_is_refused(kind: CapacityKind, minutes: int, termination: int) -> None:
    _refused(
        lambda: rules.the_drain_starts_before_termination(
            parameter="drain_lead_minutes", lead_minutes=minutes, given=minutes, kind=kind
        ),
        "drain_lead_minutes",
        rf"more than {termination} minutes: EC2 starts terminating a {kind.value} Capacity Block's instances "
        rf"{termination} minutes before its end",
    )


# --- the handler reaches the AWS APIs (soft) ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("in_vpc", "covered", "isolated"),
    [
        (False, (), ("subnet-1",)),  # outside the VPC: the internet route of Lambda's own network
        (True, ("sns", "ec2"), ("subnet-1",)),  # every API has an endpoint
        (True, (), ()),  # no isolated subnet: a NAT route
    ],
)
def test_a_handler_with_an_api_route_has_no_advice(
    in_vpc: bool, covered: tuple[str, ...], isolated: tuple[str, ...]
) -> None:
    advice = rules.the_handler_reaches_the_aws_apis(
        eks_in_vpc=in_vpc, needed=("sns", "ec2"), covered=covered, isolated_subnet_ids=isolated
    )
    assert advice is None


def test_a_handler_in_isolated_subnets_without_endpoints_is_advised() -> None:
    advice = rules.the_handler_reaches_the_aws_apis(
        eks_in_vpc=True, needed=("sns", "ec2"), covered=("sns",), isolated_subnet_ids=("subnet-1", "subnet-2")
    )
    assert advice is not None
    assert advice.warning is WarningId.CAPACITY_EVENTS_NO_API_ROUTE
    assert "2 of them isolated" in advice.message
    assert "was passed for ec2 (endpoints=)" in advice.message


# --- the handler reaches the API server (soft) ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("in_vpc", "public", "private", "isolated", "cidrs"),
    [
        (True, True, True, ("subnet-1",), None),  # the private endpoint inside the VPC
        (True, True, False, (), None),  # public only, subnets with a NAT route
        (False, True, False, (), None),  # outside the VPC, the default 0.0.0.0/0
        (False, True, True, (), ["0.0.0.0/1", "128.0.0.0/1"]),  # every IPv4 address
    ],
)
def test_a_reachable_api_server_has_no_advice(
    in_vpc: bool, public: bool, private: bool, isolated: tuple[str, ...], cidrs: list[str] | None
) -> None:
    advice = rules.the_handler_reaches_the_api_server(
        eks_in_vpc=in_vpc,
        endpoint_public=public,
        endpoint_private=private,
        isolated_subnet_ids=isolated,
        public_access_cidrs=cidrs,
    )
    assert advice is None


@pytest.mark.parametrize(
    ("in_vpc", "public", "private", "isolated", "cidrs", "text"),
    [
        (True, True, False, ("subnet-1",), None, "public only and the Capacity Block events handler runs"),
        (False, False, True, (), None, "private only (GpuEksCluster public_endpoint_cidrs=None)"),
        (False, True, True, (), ["203.0.113.0/24"], "public endpoint admits only 203.0.113.0/24"),
    ],
)
def test_an_unreachable_api_server_is_advised(
    in_vpc: bool, public: bool, private: bool, isolated: tuple[str, ...], cidrs: list[str] | None, text: str
) -> None:
    advice = rules.the_handler_reaches_the_api_server(
        eks_in_vpc=in_vpc,
        endpoint_public=public,
        endpoint_private=private,
        isolated_subnet_ids=isolated,
        public_access_cidrs=cidrs,
    )
    assert advice is not None
    assert advice.warning is WarningId.CAPACITY_EVENTS_EKS_ENDPOINT_UNREACHABLE
    assert text in advice.message
