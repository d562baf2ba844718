"""The Slurm script the remediation handler sends through SSM (backends.slurm_script), run with bash against fake
Slurm commands: it finds the one node, leaves an operator's drain alone, drains with an ``fmconstructs:`` reason that
keeps the check's failure readable, sets an idle node DOWN for a replacement and a busy one only DRAIN, and reports
what it did on ``FMC_REMEDIATION`` lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fmconstructs.health.metric_names import NODE_CHECK_REASON_PREFIX
from fmconstructs.remediation.handler import backends as kb

from tests.conftest import require_tool
from tests.support.remediation_slurm import FakeSlurm, ScriptSsm

REASON = "fmconstructs: remediation node-check-failed (alert FmNodeCheckFailed)"


@pytest.fixture
def slurm(tmp_path: Path) -> FakeSlurm:
    fake = FakeSlurm(tmp_path / "slurm")
    fake.add_node("gpu-1", "10.0.0.11", "ip-10-0-0-11")
    fake.add_node("gpu-2", "10.0.0.12", "ip-10-0-0-12")
    return fake


def _run(slurm: FakeSlurm, mode: str, *, wanted: tuple[str, ...] = ("10.0.0.11",), detail: str = "") -> kb.SlurmResult:
    ssm = ScriptSsm([slurm.bin], slurm.env())
    command = ssm.send_command(
        InstanceIds=["i-login"], Parameters={"commands": [kb.slurm_script(list(wanted), mode, REASON, detail)]}
    )
    answer = ssm.get_command_invocation(CommandId=command["Command"]["CommandId"], InstanceId="i-login")
    return kb.SlurmResult(
        "c",
        "i-login",
        answer["Status"],
        answer["ResponseCode"],
        kb.script_fields(answer["StandardOutputContent"]),
        answer["StandardOutputContent"],
        answer["StandardErrorContent"],
    )


def test_remediation_reasons_start_with_the_prefix_the_boot_gate_resumes():
    assert kb.REMEDIATION_REASON_PREFIX.startswith(NODE_CHECK_REASON_PREFIX)
    assert kb.OUR_REASON_PREFIX == NODE_CHECK_REASON_PREFIX


def test_drain_sets_our_reason_with_the_checks_failure(slurm):
    done = _run(slurm, kb.SLURM_DRAIN, detail="gpu-count: 7 != 8")
    assert (done.code, done.result, done.fields["node"], done.jobs) == (0, "drained", "gpu-1", 0)
    assert slurm.state("gpu-1") == "IDLE+DRAIN"
    assert slurm.reason("gpu-1") == f"{REASON}: gpu-count: 7 != 8"
    assert slurm.state("gpu-2") == "IDLE"


def test_the_gates_own_reason_stays_readable_when_the_alert_has_none(slurm):
    slurm.add_node("gpu-1", "10.0.0.11", "ip-10-0-0-11", state="IDLE+DRAIN", reason="fmconstructs: efa: 31 of 32")
    done = _run(slurm, kb.SLURM_DRAIN)
    assert done.result == "drained"
    assert slurm.reason("gpu-1") == f"{REASON}: efa: 31 of 32"
    assert done.fields["previous_reason"] == "fmconstructs: efa: 31 of 32"


@pytest.mark.parametrize("mode", kb.SLURM_MODES)
def test_an_operators_drain_is_left_alone(slurm, mode):
    slurm.add_node("gpu-1", "10.0.0.11", "ip-10-0-0-11", state="IDLE+DRAIN", reason="swap DIMM, ticket 42")
    done = _run(slurm, mode)
    assert (done.code, done.result) == (0, "operator-drained")
    assert done.fields["previous_reason"] == "swap DIMM, ticket 42"
    assert (slurm.state("gpu-1"), slurm.reason("gpu-1")) == ("IDLE+DRAIN", "swap DIMM, ticket 42")
    assert not [line for line in slurm.log() if " update " in f" {line} " or "reboot" in line]


@pytest.mark.parametrize(
    "reason",
    [
        "Prolog error",
        "Kill task failed",
        "fmconstructs-remediation: fatal-xid (x)",
        "Static node maintenance: unhealthy node is being replaced",  # ParallelCluster's clustermgtd
    ],
)
def test_slurms_own_and_legacy_reasons_are_replaced(slurm, reason):
    slurm.add_node("gpu-1", "10.0.0.11", "ip-10-0-0-11", state="IDLE+DRAIN", reason=reason)
    done = _run(slurm, kb.SLURM_REPLACE, detail="dcgm: level 2 failed")
    assert done.result == "down"
    assert slurm.state("gpu-1") == "DOWN+DRAIN"
    assert slurm.reason("gpu-1") == f"{REASON}: dcgm: level 2 failed"


def test_replace_sets_an_idle_node_down(slurm):
    done = _run(slurm, kb.SLURM_REPLACE)
    assert (done.result, done.jobs) == ("down", 0)
    assert slurm.state("gpu-1") == "DOWN+DRAIN"
    # drained first, so that no job starts between the check and DOWN
    updates = [line for line in slurm.log() if line.startswith("scontrol update")]
    assert ["state=DRAIN" in updates[0], "state=DOWN" in updates[1]] == [True, True]


def test_replace_only_drains_a_busy_node(slurm):
    slurm.set_jobs("gpu-1", "101", "102")
    done = _run(slurm, kb.SLURM_REPLACE)
    assert (done.result, done.jobs) == ("busy", 2)
    assert slurm.state("gpu-1") == "ALLOCATED+DRAIN"


def test_down_ends_the_jobs_at_once(slurm):
    slurm.set_jobs("gpu-1", "101")
    done = _run(slurm, kb.SLURM_DOWN)
    assert (done.result, done.jobs) == ("down", 1)
    assert slurm.state("gpu-1") == "DOWN+DRAIN"


def test_hold_keeps_the_node_out_of_work_in_a_reservation_without_drain_or_down(slurm):
    slurm.add_node("q-st-gpu-1", "10.0.0.21", "ip-10-0-0-21")
    slurm.set_jobs("q-st-gpu-1", "7")
    done = _run(slurm, kb.SLURM_HOLD, wanted=("10.0.0.21",), detail="Xid 79 (fatal)")
    assert (done.code, done.result, done.jobs) == (0, "held", 1)
    name = "fmconstructs-node-checks-q-st-gpu-1"
    assert done.fields["reservation"] == name
    assert slurm.reservation(name) == (
        f"ReservationName={name} Nodes=q-st-gpu-1 Users=root StartTime=now Duration=UNLIMITED Flags=IGNORE_JOBS,OVERLAP"
    )
    assert "DRAIN" not in slurm.state("q-st-gpu-1") and "DOWN" not in slurm.state("q-st-gpu-1")
    assert slurm.comment("q-st-gpu-1") == f"{REASON}: Xid 79 (fatal)"


def test_hold_keeps_a_dynamic_node_for_the_gates_minutes_only(slurm):
    done = _run(slurm, kb.SLURM_HOLD)  # gpu-1: not a ParallelCluster static node name
    assert done.result == "held"
    assert "Duration=30 " in str(slurm.reservation("fmconstructs-node-checks-gpu-1"))


def test_hold_drains_when_no_reservation_can_be_made(slurm):
    slurm.fail("create")
    done = _run(slurm, kb.SLURM_HOLD)
    assert (done.code, done.result) == (0, "drained")
    assert slurm.state("gpu-1") == "IDLE+DRAIN" and slurm.reason("gpu-1") == REASON


def test_the_hold_uses_the_boot_gates_reservation_so_a_passing_gate_releases_it():
    from fmconstructs.health.slurm_gate import GateHold
    from fmconstructs.parallelcluster.health import DYNAMIC_HOLD_MINUTES, GATE_HOLD

    assert kb.HOLD_RESERVATION_PREFIX == GateHold().reservation_prefix == GATE_HOLD.reservation_prefix
    assert kb.HOLD_MINUTES == DYNAMIC_HOLD_MINUTES


def test_reboot_is_scheduled_after_the_jobs(slurm):
    done = _run(slurm, kb.SLURM_REBOOT)
    assert done.result == "reboot-scheduled"
    assert any(line.startswith("scontrol reboot ASAP nextstate=RESUME reason=") for line in slurm.log())


def test_a_node_name_wins_over_an_address(tmp_path):
    slurm = FakeSlurm(tmp_path / "slurm")
    # the twin's nodes share one address (NodeHostname=localhost): the name decides
    slurm.add_node("ip-10-0-0-11", "127.0.0.1", "localhost")
    slurm.add_node("ip-10-0-0-12", "127.0.0.1", "localhost")
    done = _run(slurm, kb.SLURM_DRAIN, wanted=("10.0.0.11", "ip-10-0-0-11"))
    assert done.fields["node"] == "ip-10-0-0-11"
    assert slurm.state("ip-10-0-0-12") == "IDLE"


@pytest.mark.parametrize(
    ("wanted", "code", "result"), [(("10.9.9.9",), 3, "no-node"), (("127.0.0.1",), 4, "ambiguous")]
)
def test_no_node_or_several_nodes_fail_without_a_change(tmp_path, wanted, code, result):
    slurm = FakeSlurm(tmp_path / "slurm")
    slurm.add_node("a", "127.0.0.1", "localhost")
    slurm.add_node("b", "127.0.0.1", "localhost")
    done = _run(slurm, kb.SLURM_DRAIN, wanted=wanted)
    assert (done.status, done.code, done.result) == ("Failed", code, result)
    assert slurm.state("a") == slurm.state("b") == "IDLE"


def test_a_failing_scontrol_is_reported(slurm):
    slurm.fail("update")
    done = _run(slurm, kb.SLURM_DRAIN)
    assert (done.status, done.code, done.result) == ("Failed", 5, "failed")
    assert "drain of gpu-1 failed" in done.stderr


def test_alert_text_cannot_reach_the_shell(slurm):
    done = _run(slurm, kb.SLURM_DRAIN, detail="x'; touch /tmp/pwned; echo '$(id) `id` \\ \"q\" @MODE@")
    assert done.result == "drained"
    assert "$(id)" in slurm.reason("gpu-1") and "'" not in slurm.reason("gpu-1")
    assert "@MODE@" not in slurm.reason("gpu-1")


@pytest.mark.parametrize("mode", kb.SLURM_MODES)
def test_script_passes_shellcheck(tmp_path, mode):
    shellcheck = require_tool("shellcheck", "shellcheck")
    path = tmp_path / "remediate.sh"
    path.write_text(kb.slurm_script(["10.0.0.11", "ip-10-0-0-11"], mode, REASON, "gpu-count: 7 != 8"))
    proc = subprocess.run([shellcheck, "-s", "bash", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be one of"):
        kb.slurm_script(["10.0.0.11"], "explode", REASON)
