"""The cross-property rules of the remediation target (fmconstructs.remediation.rules), each with plain values: no
stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs import FmValidationError
from fmconstructs.remediation import rules
from fmconstructs.remediation.policy import Backend


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


@pytest.mark.parametrize(("login", "compute"), [("pcs_login", ("pcs_a", "pcs_b")), (None, ("pcs_a",))])
def test_a_login_group_apart_from_the_compute_groups_passes(login, compute):
    rules.login_group_is_not_a_compute_group(login_node_group_id=login, compute_node_group_ids=compute)


@pytest.mark.parametrize("compute", [("pcs_login",), ("pcs_a", "pcs_login")])
def test_the_login_group_among_the_compute_groups_is_refused(compute):
    _refused(
        lambda: rules.login_group_is_not_a_compute_group(
            login_node_group_id="pcs_login", compute_node_group_ids=compute
        ),
        "compute_node_group_ids",
        "node groups other than the login node group",
    )


@pytest.mark.parametrize(
    ("backend", "login", "compute"),
    [(Backend.PCS, "pcs_login", ("pcs_a",)), (Backend.EKS, None, ()), (Backend.AUTO_SCALING, None, ())],
)
def test_node_groups_for_pcs_or_none_pass(backend, login, compute):
    rules.node_groups_only_for_pcs(backend=backend, login_node_group_id=login, compute_node_group_ids=compute)


@pytest.mark.parametrize(
    ("backend", "login", "compute", "parameter", "message"),
    [
        (Backend.EKS, "pcs_login", (), "login_node_group_id", r"None for Backend.EKS \(PCS only\)"),
        (Backend.PARALLELCLUSTER, None, ("pcs_a",), "compute_node_group_ids", r"\(\) for Backend.PARALLELCLUSTER"),
    ],
)
def test_node_groups_for_another_backend_are_refused(backend, login, compute, parameter, message):
    _refused(
        lambda: rules.node_groups_only_for_pcs(
            backend=backend, login_node_group_id=login, compute_node_group_ids=compute
        ),
        parameter,
        message,
    )


@pytest.mark.parametrize(("backend", "cluster"), [(Backend.EKS, object()), (Backend.PCS, None), (Backend.EKS, None)])
def test_an_eks_cluster_for_eks_or_none_passes(backend, cluster):
    rules.eks_cluster_only_for_eks(backend=backend, eks_cluster=cluster)


@pytest.mark.parametrize("backend", [Backend.PCS, Backend.PARALLELCLUSTER, Backend.AUTO_SCALING])
def test_an_eks_cluster_for_another_backend_is_refused(backend):
    _refused(
        lambda: rules.eks_cluster_only_for_eks(backend=backend, eks_cluster=object()),
        "eks_cluster",
        rf"None for Backend.{backend.name} \(EKS only\)",
    )


def test_pcs_needs_a_login_node_group():
    rules.pcs_needs_a_login_node_group(login_node_group_id="pcs_login")
    _refused(
        lambda: rules.pcs_needs_a_login_node_group(login_node_group_id=None),
        "login_node_group_id",
        "a PCS compute node group id for Backend.PCS",
    )
