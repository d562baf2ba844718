"""A plain ``str`` where a list of strings is expected is refused everywhere (it would be read one character at a
time): a sample of every kind of list parameter, through the public API."""

from __future__ import annotations

from typing import Any

import pytest

from fmconstructs.bootstrap.node_bootstrap import BootstrapStep
from fmconstructs.errors import FmTypeError
from fmconstructs.observability.grafana.workspace import GrafanaNetworkAccess
from fmconstructs.remediation.policy import RemediationTarget
from fmconstructs.storage.client import lustre_mount_commands
from fmconstructs.topology.slurm import InstanceTopology, check_block_sizes, hostlist, render_topology_conf

CALLS: list[tuple[str, Any]] = [
    ("commands", lambda: BootstrapStep("step", "echo hi")),
    ("prefix_list_ids", lambda: GrafanaNetworkAccess(prefix_list_ids="pl-0123")),
    (
        "compute_node_group_ids",
        lambda: RemediationTarget.pcs(
            cluster_id="pcs_c1", login_node_group_id="pcs_l1", compute_node_group_ids="pcs_g1"
        ),
    ),
    (
        "mount_options",
        lambda: lustre_mount_commands(
            dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            mount_name="abcdefgh",
            mount_point="/fsx",
            mount_options="flock",
        ),
    ),
    ("names", lambda: hostlist("gpu-1")),
    ("all_nodes", lambda: render_topology_conf([], node_names={}, all_nodes="gpu-1")),
    ("network_nodes", lambda: InstanceTopology("i-1", "p5.48xlarge", "nn-a")),
    ("block_sizes", lambda: check_block_sizes("2,4")),
]


@pytest.mark.parametrize(("parameter", "call"), CALLS, ids=[c[0] for c in CALLS])
def test_a_plain_string_is_refused_naming_the_parameter(parameter: str, call: Any) -> None:
    with pytest.raises(TypeError, match=parameter) as caught:
        call()
    if isinstance(caught.value, FmTypeError):
        assert caught.value.parameter == parameter


def test_lists_and_tuples_are_taken() -> None:
    assert BootstrapStep("step", ["echo hi"]).commands == ("echo hi",)
    assert hostlist(("gpu-1", "gpu-2")) == "gpu-[1-2]"
