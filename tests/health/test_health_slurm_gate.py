"""fmconstructs.health.render_slurm_boot_gate: a node takes no new job until its boot checks pass (drained or, race-free,
reserved while it checks), is resumed only while the drain is still ours (never a node an operator drained), and
stays drained with the failing check as its reason; shellchecked and run in a sandbox with a stateful stub scontrol
(one that can also let an operator drain the node between two of the gate's calls)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.errors import FmValidationError
from fmconstructs.health import (
    CHECKING_REASON,
    PARALLELCLUSTER_SLURM_BIN_DIR,
    CheckName,
    NodeCheckSpec,
    pcs_slurm_bin_dir,
    render_slurm_boot_gate,
)

from tests.conftest import require_tool
from tests.support.health_checks import Run, Sandbox
from tests.support.health_slurm_gate import HOSTNAME, OPERATOR_REASON, RACING_SCONTROL, SCONTROL

NODE = "gpu-st-p5-1"


class Cluster(Sandbox):
    def __init__(self, tmp_path: Path, state: str = "IDLE", reason: str = "") -> None:
        super().__init__(tmp_path, {"hostname": HOSTNAME})
        self.add_stub("scontrol", SCONTROL, directory="opt/slurm/bin")
        self.state_dir = tmp_path / "slurm"
        self.state_dir.mkdir()
        (self.state_dir / "state").write_text(state + "\n")
        (self.state_dir / "reason").write_text(reason)

    def gate(self, spec: NodeCheckSpec | None = None, gate: dict[str, Any] | None = None, **env: str) -> Run:
        script = render_slurm_boot_gate(
            spec or NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=1),
            slurm_bin_dir=PARALLELCLUSTER_SLURM_BIN_DIR,
            **(gate or {}),
        )
        return self.run(script, SLURM_STATE=str(self.state_dir), **env)

    @property
    def node(self) -> tuple[str, str]:
        return (self.state_dir / "state").read_text().strip(), (self.state_dir / "reason").read_text()

    def updates(self, run: Run) -> list[str]:
        return [c for c in run.calls if c.startswith("scontrol update")]


def test_a_passing_node_is_drained_while_checked_then_resumed(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    run = cluster.gate()
    assert run.rc == 0, run.out
    assert cluster.updates(run) == [
        f"scontrol update nodename={NODE} state=drain reason={CHECKING_REASON}",
        f"scontrol update nodename={NODE} state=resume",
    ]
    # drained before the first check ran, resumed after the last
    drain = run.calls.index(cluster.updates(run)[0])
    assert drain < run.calls.index("nvidia-smi --query-gpu=index,driver_version --format=csv,noheader")
    assert run.calls.index("dcgmi diag -r 1") < run.calls.index(f"scontrol update nodename={NODE} state=resume")
    assert cluster.node == ("IDLE", "")
    assert f"GATE: {NODE} passed its checks and takes jobs" in run.log


def test_a_failing_node_stays_drained_with_the_failing_check_as_reason(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    run = cluster.gate(FAKE_GPU_COUNT="7", FAKE_DMESG=r'NVRM: Xid (PCI:0000:53:00): 79, "fallen off"\n')
    assert run.rc == 1
    reason = "fmconstructs: gpu-count: 7 GPUs visible, expected 8"
    assert cluster.updates(run)[-1] == f"scontrol update nodename={NODE} state=drain reason={reason}"
    assert not [c for c in run.calls if "state=resume" in c]
    assert cluster.node == ("IDLE+DRAIN", reason)
    assert f"GATE: {NODE} drained: {reason}" in run.out


def test_a_budget_overrun_is_the_drain_reason(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=1, budget_seconds={CheckName.DCGM_DIAG: 1})
    run = cluster.gate(spec, FAKE_DCGM_SLEEP="30")
    assert run.rc == 1
    assert cluster.node == ("IDLE+DRAIN", "fmconstructs: dcgm-diag: dcgmi diag -r 1 did not finish within 1s")


@pytest.mark.parametrize("failing", [False, True])
def test_a_node_an_operator_drained_is_never_touched(tmp_path: Path, failing: bool) -> None:
    cluster = Cluster(tmp_path, state="IDLE+DRAIN", reason="ops: replacing a DIMM")
    run = cluster.gate(**({"FAKE_EFA_COUNT": "30"} if failing else {}))
    assert run.rc == (1 if failing else 0)
    assert cluster.updates(run) == []
    assert cluster.node == ("IDLE+DRAIN", "ops: replacing a DIMM")
    assert "is drained by someone else (ops: replacing a DIMM [root@2026-12-01T14:00:00])" in run.out
    assert ("FAIL efa-devices" in run.out) is failing  # the checks still ran and logged


@pytest.mark.parametrize("failing", [False, True])
def test_an_operator_drain_during_the_checks_is_kept(tmp_path: Path, failing: bool) -> None:
    cluster = Cluster(tmp_path)
    # an operator drains the node while dcgmi runs
    cluster.add_stub(
        "dcgmi",
        '#!/bin/bash\necho "dcgmi $*" >>"$CALLS"\n'
        f'scontrol update nodename={NODE} state=drain "reason=ops: bad fan"\n'
        f'echo "| Memory | {"Fail" if failing else "Pass"} |"\n',
    )
    run = cluster.gate()
    assert run.rc == (1 if failing else 0)
    assert not [c for c in run.calls if "state=resume" in c]
    assert cluster.node == ("IDLE+DRAIN", "ops: bad fan")
    assert "drained meanwhile by someone else" in run.out


RESERVE = {"drain_while_checking": False, "reserve_while_checking": True}
#: The gate's looks at the node on a pass of a node drained by nobody: its name, its drain (reason, then state), then
#: whether to resume (reason) and whether someone else drained it (reason, state).
LOOKS = range(1, 7)


def racing(tmp_path: Path) -> Cluster:
    cluster = Cluster(tmp_path)
    cluster.add_stub("scontrol", RACING_SCONTROL, directory="opt/slurm/bin")
    return cluster


def test_reserving_while_checking_writes_nothing_to_a_passing_node(tmp_path: Path) -> None:
    cluster = racing(tmp_path)
    run = cluster.gate(gate=RESERVE)
    assert run.rc == 0, run.out
    assert cluster.updates(run) == []
    create = next(i for i, c in enumerate(run.calls) if c.startswith("scontrol create reservation"))
    assert f"ReservationName=fmconstructs-checking-{NODE} Nodes={NODE} Users=root StartTime=now" in run.calls[create]
    assert "Flags=IGNORE_JOBS,OVERLAP" in run.calls[create]
    assert create < run.calls.index("nvidia-smi --query-gpu=index,driver_version --format=csv,noheader")
    delete = run.calls.index(f"scontrol delete reservation fmconstructs-checking-{NODE}")
    assert run.calls.index("dcgmi diag -r 1") < delete
    assert not list((tmp_path / "slurm" / "reservations").iterdir())
    assert cluster.node == ("IDLE", "")


def test_reserving_while_checking_drains_a_failing_node_and_deletes_the_reservation(tmp_path: Path) -> None:
    cluster = racing(tmp_path)
    run = cluster.gate(gate=RESERVE, FAKE_GPU_COUNT="7")
    assert run.rc == 1
    assert cluster.node == ("IDLE+DRAIN", "fmconstructs: gpu-count: 7 GPUs visible, expected 8")
    assert not list((tmp_path / "slurm" / "reservations").iterdir())


@pytest.mark.parametrize("look", LOOKS)
def test_reserving_while_checking_never_loses_an_operator_drain(tmp_path: Path, look: int) -> None:
    # an operator drains the node just before any one of the gate's looks at it (between a look and a write)
    cluster = racing(tmp_path)
    run = cluster.gate(gate=RESERVE, FAKE_DRAIN_AT=str(look))
    assert run.rc == 0, run.out
    assert int((tmp_path / "slurm" / "looks").read_text()) >= look  # the drain landed
    assert not [c for c in run.calls if "state=resume" in c or "reason=fmconstructs" in c]
    assert cluster.node == ("IDLE+DRAIN", OPERATOR_REASON)


def test_draining_while_checking_loses_an_operator_drain_between_its_look_and_its_drain(tmp_path: Path) -> None:
    # What loop (e) of the twin found on PCS (tests/twin/test_twin_slurm_loops.py): the gate reads the reason (none),
    # the operator drains, the gate reads the state (DRAIN, but the reason it read was empty), drains with its own
    # reason over the operator's, passes and resumes. Slurm has no compare-and-set: why PCS reserves instead.
    cluster = racing(tmp_path)
    run = cluster.gate(FAKE_DRAIN_AT="3")
    assert run.rc == 0, run.out
    assert cluster.updates(run) == [
        f"scontrol update nodename={NODE} state=drain reason={CHECKING_REASON}",
        f"scontrol update nodename={NODE} state=resume",
    ]
    assert cluster.node == ("IDLE", "")


def test_reserving_while_checking_resumes_a_drain_of_its_own_from_an_earlier_run(tmp_path: Path) -> None:
    cluster = racing(tmp_path)
    (tmp_path / "slurm" / "state").write_text("IDLE+DRAIN\n")
    (tmp_path / "slurm" / "reason").write_text("fmconstructs: efa-devices: 31 EFA devices, expected 32")
    run = cluster.gate(gate=RESERVE)
    assert run.rc == 0, run.out
    assert cluster.updates(run) == [f"scontrol update nodename={NODE} state=resume"]
    assert cluster.node == ("IDLE", "")


def test_reserving_and_draining_while_checking_are_exclusive() -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge")
    with pytest.raises(FmValidationError) as error:
        render_slurm_boot_gate(spec, slurm_bin_dir="/opt/slurm/bin", reserve_while_checking=True)
    assert error.value.parameter == "reserve_while_checking"


def test_a_node_drained_by_an_earlier_failed_gate_is_resumed_when_it_passes(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, state="IDLE+DRAIN", reason="fmconstructs: gpu-xid: Xid 79 (fatal) on PCI:0000:53:00")
    run = cluster.gate()
    assert run.rc == 0, run.out
    assert cluster.node == ("IDLE", "")


def test_a_node_slurm_marked_down_is_gated_like_any_other(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, state="DOWN", reason="Node unexpectedly rebooted")
    run = cluster.gate()
    assert run.rc == 0, run.out
    assert cluster.updates(run)[0] == f"scontrol update nodename={NODE} state=drain reason={CHECKING_REASON}"
    assert cluster.node == ("IDLE", "")


def test_without_drain_while_checking_a_passing_node_is_left_alone(tmp_path: Path) -> None:
    # ParallelCluster: clustermgtd replaces static nodes in DRAIN, so the gate must not drain a healthy node
    cluster = Cluster(tmp_path)
    run = cluster.gate(gate={"drain_while_checking": False})
    assert run.rc == 0, run.out
    assert cluster.updates(run) == []
    failed = cluster.gate(gate={"drain_while_checking": False}, FAKE_LUSTRE_RC="1", FAKE_FM_STATE="inactive")
    assert failed.rc == 1
    assert cluster.node == ("IDLE+DRAIN", "fmconstructs: fabric-manager: nvidia-fabricmanager is inactive")


def test_the_node_is_found_by_its_address_when_the_hostname_is_not_its_slurm_name(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    run = cluster.gate(FAKE_HOSTNAME="ip-10-0-0-5")
    assert run.rc == 0, run.out
    assert "scontrol show node ip-10-0-0-5" in run.calls and "scontrol -o show node" in run.calls
    assert cluster.updates(run)[-1] == f"scontrol update nodename={NODE} state=resume"


def test_a_custom_node_name_command(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    (tmp_path / "nodename").write_text(NODE + "\n")
    run = cluster.gate(gate={"node_name_command": f"cat {tmp_path}/nodename"}, FAKE_HOSTNAME="whatever")
    assert run.rc == 0, run.out
    assert "scontrol show node whatever" not in run.calls
    assert cluster.updates(run)[0].startswith(f"scontrol update nodename={NODE} state=drain")


def test_without_a_slurm_node_the_checks_run_ungated(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    run = cluster.gate(gate={"node_wait_seconds": 0}, FAKE_HOSTNAME="ip-10-9-9-9", FAKE_IPS="10.9.9.9")
    assert run.rc == 0, run.out
    assert cluster.updates(run) == []
    assert "GATE: no Slurm node found for ip-10-9-9-9 within 0s; checks run without the gate" in run.out


@pytest.mark.parametrize(
    "gate",
    [{}, {"drain_while_checking": False}, RESERVE, {"node_name_command": "cat /etc/fmconstructs/nodename"}],
)
@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p6e-gb200.36xlarge"])
def test_gate_passes_shellcheck(tmp_path: Path, gate: dict[str, Any], instance_type: str) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "gate.sh"
    spec = NodeCheckSpec.for_instance_type(instance_type, lustre_mount_point="/fsx")
    script.write_text(render_slurm_boot_gate(spec, slurm_bin_dir=pcs_slurm_bin_dir("25.05"), **gate))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_gate_uses_the_clusters_slurm() -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge")
    assert pcs_slurm_bin_dir("25.05") == "/opt/aws/pcs/scheduler/slurm-25.05/bin"
    script = render_slurm_boot_gate(spec, slurm_bin_dir=pcs_slurm_bin_dir("25.05"))
    assert 'PATH="/opt/aws/pcs/scheduler/slurm-25.05/bin:${PATH}"' in script
    assert "timeout 30 scontrol" in script
    assert "@" not in script.replace("$@", "").replace("[root@", "")


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"slurm_bin_dir": "opt/slurm/bin"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": "/opt/slurm/bin/"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": "/opt/slurm bin"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": "${Token[TOKEN.12]}"}, "slurm_bin_dir"),
        ({"node_name_command": "echo 'x'"}, "node_name_command"),
        ({"node_name_command": 'echo "x"'}, "node_name_command"),
        ({"node_name_command": "hostname\nreboot"}, "node_name_command"),
        ({"node_name_command": "echo @NODE@"}, "node_name_command"),
        ({"node_name_command": ""}, "node_name_command"),
        ({"drain_while_checking": "yes"}, "drain_while_checking"),
        ({"drain_while_checking": False, "reserve_while_checking": 1}, "reserve_while_checking"),
        ({"node_wait_seconds": -1}, "node_wait_seconds"),
        ({"node_wait_seconds": 3601}, "node_wait_seconds"),
    ],
)
def test_bad_gate_input_is_refused(kwargs: dict[str, Any], parameter: str) -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge")
    with pytest.raises(FmValidationError) as error:
        render_slurm_boot_gate(spec, **{"slurm_bin_dir": "/opt/slurm/bin", **kwargs})
    assert error.value.parameter == parameter


@pytest.mark.parametrize("version", ["25.5", "v25.05", "", "25.05\n"])
def test_bad_pcs_slurm_version_is_refused(version: str) -> None:
    with pytest.raises(FmValidationError):
        pcs_slurm_bin_dir(version)
