"""Every node scenario of issue 29 against the boot gate the library renders, on real Slurm 24.11, per backend.

GIVEN a TrainingPlatform on p5.48xlarge (8 GPUs, 32 EFA interfaces, NVSwitch fabric manager, Lustre at /fsx, DCGM
level 2 at boot) and a twin cluster of nine nodes, each with one scenario of the issue's list (healthy, Xid 79, 94
and 119 in the kernel log, a missing EFA device, DCGM level 2 failing, 7 GPUs, fabric manager down, no Lustre mount),
WHEN the nodes boot as the service boots them (PCS: user data before slurmd; ParallelCluster: OnNodeConfigured
after slurmd), THEN each node's boot metrics name the one check its fault fails (Xid 94 is contained: it passes),
the faulty nodes never become schedulable, and the healthy ones do.

The scenarios are the fakes' (tests/support/twin/nodes.py); the checks, their order and their messages are the
library's (fmconstructs.health.checks), installed from the synthesized bootstrap archives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fmconstructs.platform import Backend

from tests.support.twin.cluster import TwinCluster
from tests.support.twin.fixtures import require_twin, wait_until
from tests.support.twin.nodes import HEALTHY, Scenario
from tests.support.twin.rendered import build_platform

BACKENDS = [Backend.PCS, Backend.PARALLELCLUSTER]

#: node -> (scenario, the check that fails or None, a fragment of its reason).
CASES: dict[str, tuple[Scenario, str | None, str]] = {
    "gpu-1": (HEALTHY, None, ""),
    "gpu-2": (HEALTHY.but(xids=(79,)), "gpu-xid", "Xid 79 (fatal)"),
    "gpu-3": (HEALTHY.but(xids=(94,)), None, ""),
    "gpu-4": (HEALTHY.but(xids=(119,)), "gpu-xid", "Xid 119 (reset)"),
    "gpu-5": (HEALTHY.but(efa_devices=31), "efa-devices", "31"),
    "gpu-6": (HEALTHY.but(dcgm_fail_level=2), "dcgm-diag", ""),
    "gpu-7": (HEALTHY.but(gpus=7), "gpu-count", "7 GPUs visible, expected 8"),
    "gpu-8": (HEALTHY.but(fabric_manager="inactive"), "fabric-manager", ""),
    "gpu-9": (HEALTHY.but(lustre_mounts=()), "lustre-mount", "/fsx"),
}
_STATUS = re.compile(r'^fm_node_check_status\{check="([^"]+)",mode="boot"\} ([01])$', re.MULTILINE)


@pytest.fixture(scope="module", params=BACKENDS, ids=lambda b: b.value)
def twin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinCluster]:
    require_twin()
    rendered = build_platform(request.param, nodes=len(CASES))
    home: Path = tmp_path_factory.mktemp(f"scenarios-{request.param.value}")
    cluster = TwinCluster(rendered=rendered, home=home, nodes=len(CASES))
    try:
        cluster.start({name: scenario for name, (scenario, _, _) in CASES.items()})
        yield cluster
    finally:
        cluster.stop()


def _boot_metrics(twin: TwinCluster, name: str) -> str:
    assert twin.slurm is not None
    textfile = twin.slurm.nodes[name].textfile_dir / "fm_node_checks_boot.prom"
    wait_until(f"{name}'s boot check metrics", textfile.exists, 90)
    return textfile.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_scenario_fails_exactly_its_check(twin: TwinCluster, name: str) -> None:
    _scenario, failing, fragment = CASES[name]
    text = _boot_metrics(twin, name)
    statuses = dict(_STATUS.findall(text))
    assert statuses, text
    failed = sorted(check for check, value in statuses.items() if value == "0")
    assert failed == ([failing] if failing else []), text
    if failing:
        # The reason series names the failing check and what it saw.
        reason_lines = [line for line in text.splitlines() if line.startswith("fm_node_check_failure_info")]
        assert any(f'check="{failing}"' in line and fragment in line for line in reason_lines), text


@pytest.mark.parametrize("name", sorted(CASES))
def test_only_healthy_nodes_become_schedulable(twin: TwinCluster, name: str) -> None:
    assert twin.slurm is not None
    _scenario, failing, _fragment = CASES[name]
    _boot_metrics(twin, name)
    if failing is None:
        twin.slurm.wait_node(name, r"^(IDLE|MIXED|ALLOCATED)$", timeout_s=90)
        return
    # PCS drains a failing node; ParallelCluster holds it in a reservation of its own (GateHold).
    held = r"RESERVED|DRAIN" if twin.rendered.backend is Backend.PARALLELCLUSTER else r"DRAIN"
    info = twin.slurm.wait_node(name, held, timeout_s=90)
    text = info.get("Reason", "") + " " + info.get("Comment", "")
    assert f"fmconstructs: {failing}:" in text, info
