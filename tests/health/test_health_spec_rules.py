"""The cross-property rules of the node checks and the NCCL check (fmconstructs.health.rules), each with plain
values: no stack."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs.catalog import get_instance_spec
from fmconstructs.errors import FmValidationError
from fmconstructs.health import rules
from fmconstructs.health.spec import DCGM_LEVEL_NOMINAL_SECONDS

P5 = get_instance_spec("p5.48xlarge")


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(FmValidationError, match=message) as error:
        call()
    assert error.value.parameter == parameter


@pytest.mark.parametrize("efa", [0, 1, P5.maximum_efa_interfaces])
def test_efa_interfaces_within_the_catalog_pass(efa):
    rules.efa_interfaces_fit_the_instance_type(efa_interfaces=efa, maximum_efa_interfaces=P5.maximum_efa_interfaces)


@pytest.mark.parametrize("efa", [P5.maximum_efa_interfaces + 1, 64])
def test_efa_interfaces_above_the_catalog_are_refused(efa):
    _refused(
        lambda: rules.efa_interfaces_fit_the_instance_type(
            efa_interfaces=efa, maximum_efa_interfaces=P5.maximum_efa_interfaces
        ),
        "efa_interfaces",
        rf"^efa_interfaces must be .*{P5.maximum_efa_interfaces}.*, got {efa}$",
    )


@pytest.mark.parametrize(("level", "seconds"), [(1, 1), (2, 120), (2, 600), (3, 900), (4, 5)])
def test_a_dcgm_budget_covering_the_level_passes(level, seconds):
    rules.dcgm_budget_covers_the_level(level=level, seconds=seconds, nominal_seconds=DCGM_LEVEL_NOMINAL_SECONDS[level])


@pytest.mark.parametrize(("level", "seconds", "nominal"), [(2, 119, 120), (3, 600, 900)])
def test_a_dcgm_budget_below_the_level_is_refused(level, seconds, nominal):
    _refused(
        lambda: rules.dcgm_budget_covers_the_level(
            level=level, seconds=seconds, nominal_seconds=DCGM_LEVEL_NOMINAL_SECONDS[level]
        ),
        "budget_seconds[dcgm-diag]",
        rf"^budget_seconds\[dcgm-diag\] must be at least {nominal} s for dcgmi diag level {level} \(NVIDIA",
    )


@pytest.mark.parametrize(("pairwise", "nodes"), [(False, 2), (True, 4), (True, 16)])
def test_pairwise_on_four_nodes_or_more_passes(pairwise, nodes):
    rules.pairwise_needs_four_nodes(pairwise=pairwise, nodes=nodes)


@pytest.mark.parametrize("nodes", [2, 3])
def test_pairwise_on_fewer_than_four_nodes_is_refused(nodes):
    _refused(
        lambda: rules.pairwise_needs_four_nodes(pairwise=True, nodes=nodes),
        "nodes",
        rf"^nodes must be at least 4 with pairwise=True \(with fewer, the slowest pair blames no one node\), got {nodes}$",
    )


def test_gpus_per_node_of_the_instance_type_pass():
    rules.gpus_per_node_match_the_instance_type(
        gpus_per_node=P5.gpu.count, instance_type=P5.instance_type, gpu_count=P5.gpu.count
    )


@pytest.mark.parametrize("gpus", [1, 4, 16])
def test_gpus_per_node_not_of_the_instance_type_are_refused(gpus):
    _refused(
        lambda: rules.gpus_per_node_match_the_instance_type(
            gpus_per_node=gpus, instance_type="p5.48xlarge", gpu_count=8
        ),
        "spec.gpus_per_node",
        rf"^spec.gpus_per_node must be 8, the GPUs of p5.48xlarge, got {gpus}$",
    )
