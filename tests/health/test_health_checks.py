"""fmconstructs.health: NodeCheckSpec from the catalog and the launch layout, and the node checks rendered once for
every backend (BOOT and PROLOG), shellchecked and run in a sandbox with stub nvidia-smi, dcgmi, fi_info, systemctl,
findmnt and dmesg on PATH: every check's PASS path, every FAIL path, a check over its budget."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fmconstructs.catalog import get_instance_spec
from fmconstructs.errors import FmValidationError
from fmconstructs.health import (
    DEFAULT_BUDGET_SECONDS,
    DEFAULT_XID_POLICY,
    PROLOG_CHECKS,
    CheckMode,
    CheckName,
    NodeCheckSpec,
    XidClass,
    render_node_checks,
)
from fmconstructs.networking import EfaCardSelection, plan_network_interfaces

from tests.conftest import require_tool
from tests.support.health_checks import Sandbox, p5_spec

# --- stub commands: each answers from FAKE_* variables and records its call in $CALLS -------------------------------


def gb200_spec(**kwargs: Any) -> NodeCheckSpec:
    kwargs.setdefault("dcgm_level", 1)
    return NodeCheckSpec.for_instance_type("p6e-gb200.36xlarge", **kwargs)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


# --- the spec -------------------------------------------------------------------------------------------------------


def test_spec_comes_from_the_catalog_and_the_launch_layout() -> None:
    p5 = NodeCheckSpec.for_instance_type("p5.48xlarge")
    assert (p5.gpu_count, p5.efa_interfaces, p5.fabric_manager, p5.imex) == (8, 32, True, False)
    assert p5.efa_interfaces == plan_network_interfaces(get_instance_spec("p5.48xlarge")).efa_interface_count
    assert p5.lustre_mount_point is None and p5.dcgm_level == 2
    gb200 = NodeCheckSpec.for_instance_type("p6e-gb200.36xlarge", lustre_mount_point="/fsx")
    # the EC2 guide's recommended layout: cards 1, 5, 9, 13; IMEX (UltraServer), no Fabric Manager (arm64)
    assert (gb200.gpu_count, gb200.efa_interfaces, gb200.fabric_manager, gb200.imex) == (4, 4, False, True)
    every_gpu_card = plan_network_interfaces(
        get_instance_spec("p6e-gb200.36xlarge"), efa_cards=EfaCardSelection.EVERY_GPU_CARD
    )
    other = NodeCheckSpec.for_instance_type("p6e-gb200.36xlarge", efa_interfaces=every_gpu_card.efa_interface_count)
    assert other.efa_interfaces == 8


def test_checks_per_mode_and_budgets() -> None:
    spec = p5_spec(budget_seconds={CheckName.GPU_COUNT: 5})
    assert spec.checks(CheckMode.BOOT) == (
        CheckName.GPU_COUNT,
        CheckName.GPU_MEMORY,
        CheckName.GPU_XID,
        CheckName.FABRIC_MANAGER,
        CheckName.EFA_DEVICES,
        CheckName.LUSTRE_MOUNT,
        CheckName.DCGM_DIAG,
    )
    assert CheckName.DCGM_DIAG not in spec.checks(CheckMode.PROLOG)  # aws-parallelcluster#6777
    assert set(PROLOG_CHECKS) == set(CheckName) - {CheckName.DCGM_DIAG}
    assert spec.budget(CheckName.GPU_COUNT, CheckMode.BOOT) == 5
    assert spec.budget(CheckName.EFA_DEVICES, CheckMode.BOOT) == DEFAULT_BUDGET_SECONDS[CheckName.EFA_DEVICES]
    assert spec.budget(CheckName.EFA_DEVICES, CheckMode.PROLOG) == 10
    # prolog: 6 checks, gpu-memory's two commands, at most 10 s each: inside ParallelCluster's BatchStartTimeout=180
    assert spec.total_budget_seconds(CheckMode.PROLOG) == 5 + 2 * 10 + 10 + 10 + 10 + 10 < 180
    bare = NodeCheckSpec.for_instance_type("p5.48xlarge", efa_interfaces=0, dcgm_level=None)
    assert CheckName.EFA_DEVICES not in bare.checks(CheckMode.BOOT)
    assert CheckName.LUSTRE_MOUNT not in bare.checks(CheckMode.BOOT)
    assert CheckName.DCGM_DIAG not in bare.checks(CheckMode.BOOT)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"efa_interfaces": -1}, "efa_interfaces"),
        ({"efa_interfaces": 33}, "efa_interfaces"),
        ({"efa_interfaces": 2.5}, "efa_interfaces"),
        ({"lustre_mount_point": "fsx"}, "lustre_mount_point"),
        ({"lustre_mount_point": "/fsx/"}, "lustre_mount_point"),
        ({"lustre_mount_point": '/fsx"; rm -rf /'}, "lustre_mount_point"),
        ({"dcgm_level": 0}, "dcgm_level"),
        ({"dcgm_level": 5}, "dcgm_level"),
        ({"dcgm_level": 2, "budget_seconds": {CheckName.DCGM_DIAG: 60}}, "budget_seconds[dcgm-diag]"),
        ({"dcgm_level": 3, "budget_seconds": {CheckName.DCGM_DIAG: 600}}, "budget_seconds[dcgm-diag]"),
        ({"budget_seconds": {"gpu-count": 5}}, "budget_seconds"),
        ({"budget_seconds": {CheckName.GPU_COUNT: 0}}, "budget_seconds[gpu-count]"),
        ({"budget_seconds": [(CheckName.GPU_COUNT, 5)]}, "budget_seconds"),
        ({"fatal_xids": (79, 79)}, "fatal_xids"),
        ({"fatal_xids": "79"}, "fatal_xids"),
        ({"fatal_xids": (0,)}, "fatal_xids[0]"),
        ({"xid_policy": (79,)}, "xid_policy"),
        ({"prolog_budget_seconds": 0}, "prolog_budget_seconds"),
        ({"prolog_budget_seconds": 61}, "prolog_budget_seconds"),
        ({"log_file_path": "relative.log"}, "log_file_path"),
    ],
)
def test_bad_spec_input_is_refused(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError) as error:
        NodeCheckSpec.for_instance_type("p5.48xlarge", **kwargs)
    assert error.value.parameter == parameter


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"instance_type": "P5"}, "instance_type"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"gpu_count": True}, "gpu_count"),
        ({"fabric_manager": "yes"}, "fabric_manager"),
        ({"imex": 1}, "imex"),
        ({"efa_interfaces": "${Token[TOKEN.1]}"}, "efa_interfaces"),
    ],
)
def test_bad_direct_spec_is_refused(kwargs: dict[str, Any], parameter: str) -> None:
    base: dict[str, Any] = {
        "instance_type": "p5.48xlarge",
        "gpu_count": 8,
        "efa_interfaces": 32,
        "fabric_manager": True,
        "imex": False,
    }
    with pytest.raises(FmValidationError) as error:
        NodeCheckSpec(**{**base, **kwargs})
    assert error.value.parameter == parameter


def test_unknown_instance_type_and_mode_are_refused() -> None:
    with pytest.raises(FmValidationError) as error:
        NodeCheckSpec.for_instance_type("m5.large")
    assert error.value.parameter == "instance_type"
    with pytest.raises(FmValidationError):
        render_node_checks(p5_spec(), "boot")  # type: ignore[arg-type]
    with pytest.raises(FmValidationError):
        render_node_checks("p5.48xlarge")  # type: ignore[arg-type]


# --- the scripts ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge"])
@pytest.mark.parametrize("mode", list(CheckMode))
def test_scripts_pass_shellcheck(tmp_path: Path, instance_type: str, mode: CheckMode) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "checks.sh"
    spec = NodeCheckSpec.for_instance_type(instance_type, lustre_mount_point="/fsx")
    script.write_text(render_node_checks(spec, mode))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_script_names_the_documented_commands() -> None:
    script = render_node_checks(p5_spec(dcgm_level=2))
    assert "nvidia-smi --query-gpu=index,driver_version --format=csv,noheader" in script
    assert "--query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure" in script
    assert "fi_info -p efa -t FI_EP_RDM" in script  # EC2 User Guide efa-start
    assert "systemctl is-active nvidia-fabricmanager" in script
    assert 'findmnt -t lustre -n "/fsx"' in script
    assert "dcgmi diag -r 2" in script
    assert 'PATH="/opt/amazon/efa/bin:' in script
    assert "@" not in script.replace("$@", "")  # every placeholder filled
    prolog = render_node_checks(p5_spec(), CheckMode.PROLOG)
    assert "dcgmi" not in prolog and "scontrol" not in prolog


def test_every_check_passes_on_a_healthy_node(sandbox: Sandbox) -> None:
    run = sandbox.run(render_node_checks(p5_spec()))
    assert run.rc == 0, run.out
    for check in p5_spec().checks(CheckMode.BOOT):
        assert run.line(check).startswith(f"PASS {check.value}:")
    assert "PASS gpu-count: 8 GPUs, driver 570.172.08" in run.out
    assert "PASS efa-devices: 32 EFA devices" in run.out
    assert re.search(r"fmconstructs node checks \(boot\): 7 passed, 0 failed in \d+s", run.out)
    assert "7 passed, 0 failed" in run.log  # the boot log has the total cost too
    assert "dcgmi diag -r 1" in run.calls
    assert "findmnt -t lustre -n /fsx" in run.calls


@pytest.mark.parametrize(
    ("env", "check", "reason"),
    [
        ({"FAKE_GPU_COUNT": "7"}, CheckName.GPU_COUNT, "7 GPUs visible, expected 8"),
        ({"FAKE_SMI_RC": "9"}, CheckName.GPU_COUNT, "nvidia-smi exited 9: NVIDIA-SMI has failed"),
        ({"FAKE_DRIVER": ""}, CheckName.GPU_COUNT, "nvidia-smi reports no driver version"),
        ({"FAKE_REMAP_PENDING": "Yes"}, CheckName.GPU_MEMORY, "GPU 00000000:53:00.0: row remapping pending"),
        ({"FAKE_REMAP_FAILURE": "1"}, CheckName.GPU_MEMORY, "GPU 00000000:53:00.0: row remapping failed"),
        ({"FAKE_RETIRED_PENDING": "Yes"}, CheckName.GPU_MEMORY, "GPU 00000000:53:00.0: page retirement pending"),
        (
            {"FAKE_DMESG": r"[ 12.3] NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus.\n"},
            CheckName.GPU_XID,
            "Xid 79 (fatal) on PCI:0000:53:00 in the kernel log since boot",
        ),
        ({"FAKE_FM_STATE": "failed"}, CheckName.FABRIC_MANAGER, "nvidia-fabricmanager is failed"),
        ({"FAKE_EFA_COUNT": "31"}, CheckName.EFA_DEVICES, "31 EFA devices, expected 32"),
        ({"FAKE_EFA_COUNT": "0", "FAKE_FI_RC": "61"}, CheckName.EFA_DEVICES, "0 EFA devices, expected 32 (fi_info"),
        ({"FAKE_LUSTRE_RC": "1"}, CheckName.LUSTRE_MOUNT, "no Lustre file system mounted at /fsx"),
        ({"FAKE_DCGM_RESULT": "Fail"}, CheckName.DCGM_DIAG, "dcgmi diag -r 1: Memory Fail"),
        ({"FAKE_DCGM_RC": "226"}, CheckName.DCGM_DIAG, "dcgmi diag -r 1 exited 226"),
    ],
)
def test_each_failure_is_named_with_its_reason(
    sandbox: Sandbox, env: dict[str, str], check: CheckName, reason: str
) -> None:
    run = sandbox.run(render_node_checks(p5_spec()), **env)
    assert run.rc == 1
    assert run.line(check).startswith(f"FAIL {check.value}: {reason}"), run.out
    assert "6 passed, 1 failed" in run.out  # the other checks still ran
    assert f"first failure: {check.value}: {reason}" in run.out
    assert f"FAIL {check.value}: {reason}" in run.log


def test_application_xids_and_two_libfabric_fabrics_pass(sandbox: Sandbox) -> None:
    run = sandbox.run(
        render_node_checks(p5_spec()),
        FAKE_DMESG=r"NVRM: Xid (PCI:0000:53:00): 13, pid=4242, Graphics Exception\n",
        FAKE_EFA_DIRECT="1",  # newer Libfabric: an efa and an efa-direct fabric per device
    )
    assert run.rc == 0, run.out
    node_xids = " ".join(map(str, DEFAULT_XID_POLICY.node_check_xids))
    assert f"PASS gpu-xid: no Xid of {node_xids} since boot" in run.out
    assert "PASS efa-devices: 32 EFA devices" in run.out


def _xid_line(*xids: int) -> str:
    return "".join(rf"[ 9.{x}] NVRM: Xid (PCI:0000:53:00): {x}, pid=42, some text\n" for x in xids)


@pytest.mark.parametrize(
    ("xids", "found"),
    [
        ((119,), "Xid 119 (reset) on PCI:0000:53:00"),  # GSP RPC timeout: NVIDIA RESET_GPU (issue 29: it passed)
        ((48,), "Xid 48 (reset) on PCI:0000:53:00"),
        ((79,), "Xid 79 (fatal) on PCI:0000:53:00"),
        ((119, 79), "Xid 79 (fatal) on PCI:0000:53:00"),  # the fatal one is named, whatever came first
        ((13, 120, 95), "Xid 120 (reset) on PCI:0000:53:00"),  # the first reset-class one
    ],
)
def test_gpu_xid_fails_on_reset_and_fatal_xids_and_names_the_class(
    sandbox: Sandbox, xids: tuple[int, ...], found: str
) -> None:
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.PROLOG), FAKE_DMESG=_xid_line(*xids))
    assert run.rc == 1
    assert run.line(CheckName.GPU_XID).startswith(f"FAIL gpu-xid: {found} in the kernel log since boot"), run.out


@pytest.mark.parametrize("xid", [94, 13, 31, 43, 45, 63, 92])
def test_contained_application_and_unlisted_xids_pass(sandbox: Sandbox, xid: int) -> None:
    run = sandbox.run(render_node_checks(p5_spec(), CheckMode.PROLOG), FAKE_DMESG=_xid_line(xid))
    assert run.rc == 0, run.out
    assert run.line(CheckName.GPU_XID).startswith("PASS gpu-xid: no Xid of "), run.out


def test_a_tuned_policy_reaches_the_check(sandbox: Sandbox) -> None:
    policy = DEFAULT_XID_POLICY.moved([94], to=XidClass.RESET).moved([119], to=None)
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None, xid_policy=policy)
    assert 94 in spec.xid_classes()[XidClass.RESET] and 119 not in spec.xid_classes()[XidClass.RESET]
    failing = sandbox.run(render_node_checks(spec, CheckMode.PROLOG), FAKE_DMESG=_xid_line(94))
    assert "FAIL gpu-xid: Xid 94 (reset) on PCI:0000:53:00" in failing.out
    passing = sandbox.run(render_node_checks(spec, CheckMode.PROLOG), FAKE_DMESG=_xid_line(119))
    assert passing.rc == 0, passing.out


def test_the_deprecated_fatal_xids_still_choose_the_failing_xids(sandbox: Sandbox) -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", dcgm_level=None, fatal_xids=(79, 13))
    assert spec.fatal_xids is None  # consumed into the policy
    assert spec.xid_policy.node_check_xids == (13, 79)
    run = sandbox.run(render_node_checks(spec, CheckMode.PROLOG), FAKE_DMESG=_xid_line(119, 13))
    assert "FAIL gpu-xid: Xid 13 (fatal) on PCI:0000:53:00" in run.out


def test_imex_on_gb200_and_no_fabric_manager(sandbox: Sandbox) -> None:
    ok = sandbox.run(render_node_checks(gb200_spec()), FAKE_GPU_COUNT="4", FAKE_EFA_COUNT="4")
    assert ok.rc == 0, ok.out
    assert "PASS imex: nvidia-imex is enabled" in ok.out
    assert "fabric-manager" not in ok.out and "systemctl is-active nvidia-fabricmanager" not in ok.calls
    bad = sandbox.run(
        render_node_checks(gb200_spec()), FAKE_GPU_COUNT="4", FAKE_EFA_COUNT="4", FAKE_IMEX_STATE="disabled"
    )
    assert bad.rc == 1
    assert bad.line(CheckName.IMEX).startswith("FAIL imex: nvidia-imex is disabled, not enabled")


def test_a_check_over_its_budget_fails_and_the_others_still_run(sandbox: Sandbox) -> None:
    spec = p5_spec(budget_seconds={CheckName.GPU_COUNT: 1, CheckName.DCGM_DIAG: 1})
    run = sandbox.run(render_node_checks(spec), FAKE_SMI_SLEEP="30", FAKE_DCGM_SLEEP="30", timeout=30)
    assert run.rc == 1
    assert run.line(CheckName.GPU_COUNT).startswith("FAIL gpu-count: nvidia-smi did not finish within 1s")
    assert run.line(CheckName.DCGM_DIAG).startswith("FAIL dcgm-diag: dcgmi diag -r 1 did not finish within 1s")
    assert "5 passed, 2 failed" in run.out


def test_prolog_runs_the_lightweight_checks_only(sandbox: Sandbox) -> None:
    run = sandbox.run(render_node_checks(p5_spec(dcgm_level=2), CheckMode.PROLOG))
    assert run.rc == 0, run.out
    assert not [c for c in run.calls if c.startswith("dcgmi")]
    # The elapsed seconds depend on the machine's load; the budget does not.
    assert re.search(r"^PASS gpu-count: 8 GPUs, driver 570\.172\.08 \[\d+s/10s\]$", run.out, re.MULTILINE), run.out
    assert "fmconstructs node checks (prolog): 6 passed, 0 failed" in run.out
    failed = sandbox.run(render_node_checks(p5_spec(), CheckMode.PROLOG), FAKE_LUSTRE_RC="32")
    assert failed.rc == 1  # Slurm drains a node whose prolog fails


def test_checks_a_node_does_not_need_are_not_run(sandbox: Sandbox) -> None:
    spec = NodeCheckSpec.for_instance_type("p5.48xlarge", efa_interfaces=0, dcgm_level=None)
    run = sandbox.run(render_node_checks(spec))
    assert run.rc == 0, run.out
    assert not [c for c in run.calls if c.split()[0] in ("fi_info", "findmnt", "dcgmi")]
    assert "4 passed, 0 failed" in run.out


def test_log_goes_under_the_sandbox_root_by_default(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    script = tmp_path / "s.sh"
    script.write_text(render_node_checks(p5_spec()))
    env = {"PATH": "/usr/bin:/bin", "FMCONSTRUCTS_ROOT": str(box.root), "CALLS": str(box.calls)}
    subprocess.run(["bash", str(script)], env=env, capture_output=True, check=False, timeout=60)
    assert "PASS gpu-count" in (box.root / "var/log/fmconstructs/node-checks.log").read_text()
    assert os.path.isdir(box.root / "bin")


def test_health_imports_no_aws_cdk() -> None:
    # backends and the Node-free fmc CLI can render or inspect the checks without starting Node.js
    code = "import sys, fmconstructs.health; assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
