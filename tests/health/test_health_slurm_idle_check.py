"""fmconstructs.health.render_slurm_idle_check: Slurm's HealthCheckProgram between jobs. A failing node is drained with
``fmconstructs: <check>: <reason>``; a node drained for one of its own checks is resumed once that check passes again;
any other drained node (an operator's, the boot gate's while it checks, remediation's, a boot-only check's) is left
alone and not checked; an operator's drain is never resumed, whenever it lands; each run fits slurmd's 60 s. Shellchecked and run in a sandbox with the
stateful stub scontrol of the boot gate's tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fmconstructs.catalog import CATALOG
from fmconstructs.errors import FmValidationError
from fmconstructs.health import (
    PARALLELCLUSTER_SLURM_BIN_DIR,
    CheckMode,
    CheckName,
    NodeCheckSpec,
    pcs_slurm_bin_dir,
    render_slurm_idle_check,
)
from fmconstructs.health.spec import IDLE_BUDGET_CAP_SECONDS

from tests.conftest import require_tool
from tests.support.health_checks import Run, Sandbox
from tests.support.health_slurm_gate import HOSTNAME, OPERATOR_REASON, RACING_SCONTROL

NODE = "gpu-st-p5-1"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile"
# slurmd kills HealthCheckProgram after 60 s (slurm.conf(5); slurmd.c run_script_health_check: max_wait 60 * 1000).
SLURMD_LIMIT_SECONDS = 60
SCONTROL_CALLS, SCONTROL_TIMEOUT = 3, 5


class Node(Sandbox):
    def __init__(self, tmp_path: Path, state: str = "IDLE", reason: str = "") -> None:
        super().__init__(tmp_path, {"hostname": HOSTNAME})
        self.add_stub("scontrol", RACING_SCONTROL, directory="opt/slurm/bin")
        self.state_dir = tmp_path / "slurm"
        self.state_dir.mkdir()
        (self.state_dir / "state").write_text(state + "\n")
        (self.state_dir / "reason").write_text(reason)

    def check(self, spec: NodeCheckSpec | None = None, **env: str) -> Run:
        script = render_slurm_idle_check(
            spec or NodeCheckSpec.for_instance_type("p5.48xlarge", lustre_mount_point="/fsx"),
            slurm_bin_dir=PARALLELCLUSTER_SLURM_BIN_DIR,
        )
        env.setdefault("SLURMD_NODENAME", NODE)  # what slurmd sets for the program
        return self.run(script, SLURM_STATE=str(self.state_dir), **env)

    @property
    def node(self) -> tuple[str, str]:
        return (self.state_dir / "state").read_text().strip(), (self.state_dir / "reason").read_text()

    @staticmethod
    def updates(run: Run) -> list[str]:
        return [c for c in run.calls if c.startswith("scontrol update")]

    @staticmethod
    def checked(run: Run) -> bool:
        return any(c.startswith("nvidia-smi") for c in run.calls)


def test_a_healthy_idle_node_is_checked_and_left_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.check()
    assert run.rc == 0, run.out
    assert node.checked(run) and node.updates(run) == []
    assert node.node == ("IDLE", "")
    assert not [c for c in run.calls if c.startswith("dcgmi")]  # no DCGM between jobs
    assert "fmconstructs node checks (idle) on p5.48xlarge" in run.out


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"FAKE_GPU_COUNT": "7"}, "fmconstructs: gpu-count: 7 GPUs visible, expected 8"),
        (
            {"FAKE_DMESG": r"NVRM: Xid (PCI:0000:53:00): 79, pid=1\n"},
            "fmconstructs: gpu-xid: Xid 79 (fatal) on PCI:0000:53:00",
        ),
        ({"FAKE_EFA_COUNT": "31"}, "fmconstructs: efa-devices: 31 EFA devices, expected 32"),
        ({"FAKE_LUSTRE_RC": "1"}, "fmconstructs: lustre-mount: no Lustre file system mounted at /fsx"),
    ],
)
def test_a_failing_node_is_drained_with_the_failing_check_as_reason(
    tmp_path: Path, env: dict[str, str], reason: str
) -> None:
    node = Node(tmp_path)
    run = node.check(**env)
    assert run.rc == 1
    (update,) = node.updates(run)
    assert update.startswith(f"scontrol update nodename={NODE} state=drain reason={reason}")
    state, drained_for = node.node
    assert state == "IDLE+DRAIN" and drained_for.startswith(reason)  # the check's own words follow
    assert f"IDLE: {NODE} drained: {drained_for}" in run.out


@pytest.mark.parametrize(
    "reason",
    [
        "ops: replacing a DIMM",  # an operator's drain
        "fmconstructs: node checks running",  # the boot gate, checking
        "fmconstructs: remediation: replace: gpu-xid: Xid 79 (fatal) on PCI:0000:53:00",  # remediation's
        "fmconstructs: dcgm-diag: dcgmi diag -r 2: Memory Fail",  # a boot-only check: no idle run can lift it
        "Prolog error",  # Slurm's own: remediation takes it
    ],
)
@pytest.mark.parametrize("failing", [False, True])
def test_a_drained_node_is_not_checked_and_never_touched(tmp_path: Path, reason: str, failing: bool) -> None:
    node = Node(tmp_path, state="IDLE+DRAIN", reason=reason)
    run = node.check(**({"FAKE_GPU_COUNT": "7"} if failing else {}))
    assert run.rc == 0, run.out
    assert not node.checked(run) and node.updates(run) == []
    assert node.node == ("IDLE+DRAIN", reason)  # never resumed, reason kept


OWN_DRAIN = "fmconstructs: efa-devices: 31 EFA devices, expected 32"


def test_a_node_drained_for_one_of_its_checks_is_resumed_when_it_passes_again(tmp_path: Path) -> None:
    node = Node(tmp_path, state="IDLE+DRAIN", reason=OWN_DRAIN)
    run = node.check()
    assert run.rc == 0, run.out
    assert node.checked(run)
    assert node.updates(run) == [f"scontrol update nodename={NODE} state=resume"]
    assert node.node == ("IDLE", "")
    assert f"IDLE: {NODE} passed the check it was drained for ({OWN_DRAIN}" in run.out


def test_a_node_drained_for_one_of_its_checks_stays_drained_while_it_fails(tmp_path: Path) -> None:
    node = Node(tmp_path, state="IDLE+DRAIN", reason=OWN_DRAIN)
    run = node.check(FAKE_EFA_COUNT="31")
    assert run.rc == 1
    assert node.updates(run) == []
    assert node.node == ("IDLE+DRAIN", OWN_DRAIN)  # the reason is the first failure's, untouched


@pytest.mark.parametrize("look", [1, 2])
def test_an_operator_drain_over_its_own_is_never_resumed(tmp_path: Path, look: int) -> None:
    # the operator drains the node (its reason replaces ours) before the first look, or between it and the resume
    node = Node(tmp_path, state="IDLE+DRAIN", reason=OWN_DRAIN)
    run = node.check(FAKE_DRAIN_AT=str(look))
    assert run.rc == 0, run.out
    assert int((tmp_path / "slurm" / "looks").read_text()) >= look  # the drain landed
    assert node.updates(run) == []
    assert node.node == ("IDLE+DRAIN", OPERATOR_REASON)


@pytest.mark.parametrize("failing", [False, True])
@pytest.mark.parametrize(("state", "reason"), [("IDLE", ""), ("IDLE+DRAIN", OWN_DRAIN), ("IDLE+DRAIN", "ops: x")])
def test_no_run_takes_more_than_three_scontrol_calls(tmp_path: Path, failing: bool, state: str, reason: str) -> None:
    node = Node(tmp_path, state=state, reason=reason)
    run = node.check(**({"FAKE_EFA_COUNT": "31"} if failing else {}))
    assert len([c for c in run.calls if c.startswith("scontrol")]) <= SCONTROL_CALLS, run.calls


def test_a_drain_during_the_checks_is_kept(tmp_path: Path) -> None:
    node = Node(tmp_path)
    # an operator drains the node while fi_info runs; the node then fails its EFA check
    node.add_stub(
        "fi_info",
        '#!/bin/bash\necho "fi_info $*" >>"$CALLS"\n'
        f'scontrol update nodename={NODE} state=drain "reason=ops: bad fan"\n',
    )
    run = node.check()
    assert run.rc == 1
    assert node.updates(run) == [f"scontrol update nodename={NODE} state=drain reason=ops: bad fan"]
    assert node.node == ("IDLE+DRAIN", "ops: bad fan")
    assert "was drained meanwhile; left as it is" in run.out


def test_the_node_name_comes_from_slurmd(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.check(FAKE_HOSTNAME="ip-10-0-0-5", FAKE_GPU_COUNT="7")
    assert "scontrol show node ip-10-0-0-5" not in run.calls  # SLURMD_NODENAME, no lookup
    assert node.updates(run)[0].startswith(f"scontrol update nodename={NODE} state=drain")


def test_without_slurmd_the_node_is_found_by_its_address(tmp_path: Path) -> None:
    node = Node(tmp_path)
    run = node.check(SLURMD_NODENAME="", FAKE_HOSTNAME="ip-10-0-0-5", FAKE_GPU_COUNT="7")
    assert "scontrol -o show node" in run.calls
    assert node.node[0] == "IDLE+DRAIN"


def test_an_unknown_state_runs_the_checks_and_drains_nothing(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.add_stub("scontrol", '#!/bin/bash\necho "scontrol $*" >>"$CALLS"\nexit 1\n', directory="opt/slurm/bin")
    run = node.check(FAKE_GPU_COUNT="7")
    assert run.rc == 1 and node.checked(run)
    assert node.updates(run) == []
    assert f"the state of {NODE} is unknown" in run.out


def test_a_hung_command_fails_within_the_idle_budget(tmp_path: Path) -> None:
    node = Node(tmp_path)
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", prolog_budget_seconds=1)
    run = node.check(spec, FAKE_SMI_SLEEP="30")
    assert run.rc == 1
    assert node.node == ("IDLE+DRAIN", "fmconstructs: gpu-count: nvidia-smi did not finish within 1s")


def test_the_run_writes_idle_metrics(tmp_path: Path) -> None:
    node = Node(tmp_path)
    directory = node.root / TEXTFILE_DIR.lstrip("/")
    directory.mkdir(parents=True)
    node.check(FAKE_GPU_COUNT="7")
    text = (directory / "fm_node_checks_idle.prom").read_text()
    assert 'fm_node_check_status{check="gpu-count",mode="idle"} 0' in text
    assert 'fm_node_check_failure_info{check="gpu-count",mode="idle",reason="7 GPUs visible, expected 8"} 1' in text


@pytest.mark.parametrize("instance_type", sorted(spec.instance_type for spec in CATALOG if spec.gpu.count))
def test_every_idle_run_fits_slurmds_limit(instance_type: str) -> None:
    spec = NodeCheckSpec.for_instance_type(instance_type, lustre_mount_point="/fsx", prolog_budget_seconds=60)
    assert all(spec.budget(check, CheckMode.IDLE) <= IDLE_BUDGET_CAP_SECONDS for check in spec.checks(CheckMode.IDLE))
    assert CheckName.DCGM_DIAG not in spec.checks(CheckMode.IDLE)
    total = spec.total_budget_seconds(CheckMode.IDLE) + SCONTROL_CALLS * SCONTROL_TIMEOUT
    assert total < SLURMD_LIMIT_SECONDS
    script = render_slurm_idle_check(spec, slurm_bin_dir=pcs_slurm_bin_dir("24.11"))
    assert script.count("state=drain") == 1 and script.count("state=resume") == 1
    assert f"timeout {SCONTROL_TIMEOUT} scontrol" in script


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p6e-gb200.36xlarge", "p5en.48xlarge"])
def test_idle_check_passes_shellcheck(tmp_path: Path, instance_type: str) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "idle-check.sh"
    spec = NodeCheckSpec.for_instance_type(instance_type, lustre_mount_point="/fsx")
    script.write_text(render_slurm_idle_check(spec, slurm_bin_dir=pcs_slurm_bin_dir("25.11")))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"slurm_bin_dir": "opt/slurm/bin"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": "${Token[TOKEN.12]}"}, "slurm_bin_dir"),
        ({"node_name_command": 'echo "x"'}, "node_name_command"),
        ({"node_name_command": "hostname\nreboot"}, "node_name_command"),
    ],
)
def test_bad_idle_check_input_is_refused(kwargs: dict[str, str], parameter: str) -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge")
    with pytest.raises(FmValidationError) as error:
        render_slurm_idle_check(spec, **{"slurm_bin_dir": "/opt/slurm/bin", **kwargs})
    assert error.value.parameter == parameter
