"""The shared NVIDIA IMEX prolog renderer (fmconstructs.compute.imex): its parameters, shellcheck, the script run in a
sandbox (stub commands under FMCONSTRUCTS_ROOT), and bad input.

Sources for the expectations: AWS PCS User Guide "Configure UltraServer instances" (capacity-blocks-nvidia-imex) and
ParallelCluster User Guide "Support NVIDIA-Imex with p6e-gb200 instance" (support-nvidia-imex-p6e-gb200-instance):
exclusive jobs only, the guide's instance types only, nvidia-imex enabled only; channel0 from the major number in
/proc/devices; the job's NodeAddr values into /etc/nvidia-imex/nodes_config.cfg; nvidia-imex stopped (15 s), killed,
started (60 s); exit 0 always.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from fmconstructs import FmValidationError
from fmconstructs.compute import ImexPrologSpec, render_imex_prolog
from fmconstructs.compute.imex import IMEX_CHANNEL_PATH, IMEX_NODES_CONFIG_PATH, IMEX_PROLOG_FLAGS
from fmconstructs.parallelcluster import imex as parallelcluster_imex
from fmconstructs.pcs import user_data as pcs_user_data

from tests.conftest import require_tool

SPEC = ImexPrologSpec(
    guide='Example Guide "IMEX"',
    differences_in="fmconstructs/example.py",
    prolog_path="/opt/example/prolog.d/91_nvidia_imex_prolog.sh",
    slurm_bin_dir="/opt/example/slurm/bin",
    log_file_path="/var/log/example/imex.log",
    instance_families=("p6e-gb200", "p6e-gb300"),
)


def _spec(**changes: Any) -> ImexPrologSpec:
    return dataclasses.replace(SPEC, **changes)


# --- parameters -----------------------------------------------------------------------------------------------------


def test_parameters_reach_the_script() -> None:
    script = render_imex_prolog(SPEC)
    assert script.startswith("#!/bin/bash\n")
    assert 'PATH="/opt/example/slurm/bin:${PATH:-}:' in script
    assert 'LOG_FILE_PATH="${FMCONSTRUCTS_IMEX_LOG:-${root}/var/log/example/imex.log}"' in script
    assert 'ALLOWED_INSTANCE_TYPES="^(p6e-gb200|p6e-gb300)"' in script
    assert "# Installed as /opt/example/prolog.d/91_nvidia_imex_prolog.sh" in script
    assert 'Example Guide "IMEX"' in script and "fmconstructs/example.py" in script
    assert re.search(r"@[A-Z_]+@", script) is None  # every placeholder filled


def test_the_procedure_both_guides_share() -> None:
    script = render_imex_prolog(SPEC)
    assert IMEX_PROLOG_FLAGS == ("Alloc", "NoHold")
    assert IMEX_CHANNEL_PATH == "/dev/nvidia-caps-imex-channels/channel0"
    assert IMEX_NODES_CONFIG_PATH == "/etc/nvidia-imex/nodes_config.cfg"
    assert "IMEX_STOP_TIMEOUT=15" in script and "IMEX_START_TIMEOUT=60" in script
    assert "sed 's/^.* NodeAddr=\\([^ ]*\\).*/\\1/'" in script
    assert "sudo" not in script


@pytest.mark.parametrize(
    ("mode", "expected"), [(None, 'mknod "'), (0o666, 'mknod -m 666 "'), (0o600, 'mknod -m 600 "')]
)
def test_channel_mode(mode: int | None, expected: str) -> None:
    assert f'{expected}${{IMEX_CHANNELS_DIR}}/channel0" c "$major" 0' in render_imex_prolog(_spec(channel_mode=mode))


def test_both_backends_render_with_the_shared_renderer() -> None:
    pcs, pc = pcs_user_data.imex_prolog_spec(), parallelcluster_imex.imex_prolog_spec()
    assert pcs_user_data.imex_prolog_script() == render_imex_prolog(pcs)
    assert parallelcluster_imex.imex_prolog_script() == render_imex_prolog(pc)
    # what differs between the two guides, and nothing else
    assert (pcs.instance_families, pc.instance_families) == (("p6e-gb200", "p6e-gb300"), ("p6e-gb200",))
    assert (pcs.slurm_bin_dir, pc.slurm_bin_dir) == ("/opt/aws/pcs/scheduler/slurm-25.11/bin", "/opt/slurm/bin")
    assert (pcs.channel_mode, pc.channel_mode) == (0o666, None)
    assert pc.log_file_path == "/var/log/parallelcluster/nvidia-imex-prolog.log"
    assert pc.prolog_path == "/opt/slurm/etc/scripts/prolog.d/91_nvidia_imex_prolog.sh"
    differing = [
        (a, b)
        for a, b in zip(render_imex_prolog(pcs).splitlines(), render_imex_prolog(pc).splitlines(), strict=True)
        if a != b
    ]
    assert len(differing) == 9  # 4 header lines, 2 PATH lines, the log file, the instance types, mknod


def test_pcs_install_commands_name_the_path_they_install() -> None:
    commands = pcs_user_data.imex_prolog_install_commands("/shared/slurm/imex.sh", slurm_version="25.05")
    assert "# Installed as /shared/slurm/imex.sh," in commands
    assert commands[-1] == "chmod 0755 /shared/slurm/imex.sh"


@pytest.mark.parametrize(
    "spec",
    [
        SPEC,
        _spec(channel_mode=0o666, instance_families=("p6e-gb200",)),
        pcs_user_data.imex_prolog_spec("25.05"),
        parallelcluster_imex.imex_prolog_spec(),
    ],
    ids=["example", "one-family-with-mode", "pcs", "parallelcluster"],
)
def test_passes_shellcheck(tmp_path: Path, spec: ImexPrologSpec) -> None:
    shellcheck = require_tool("shellcheck", "shellcheck")
    script = tmp_path / "prolog.sh"
    script.write_text(render_imex_prolog(spec))
    result = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


# --- the script, run in a sandbox -------------------------------------------------------------------------------------

_STUBS = {
    "curl": '#!/bin/bash\nfor a in "$@"; do [ "$a" = PUT ] && { echo token; exit 0; }; done\necho "${FAKE_TYPE}"\n',
    # records the nodes file as it is at each call: stop must see the old one
    "systemctl": "#!/bin/bash\n"
    "echo \"systemctl $* config=$(tr '\\n' ' ' <\"${FMCONSTRUCTS_ROOT}/etc/nvidia-imex/nodes_config.cfg\" 2>/dev/null)\""
    ' >>"${CALLS}"\n'
    '[ "$1" = is-enabled ] && exit "${FAKE_IMEX_DISABLED:-0}"\n'
    '[ "$1" = start ] && exit "${FAKE_START_RC:-0}"\nexit 0\n',
    "pkill": '#!/bin/bash\necho "pkill $*" >>"${CALLS}"\nexit 1\n',
    "mknod": '#!/bin/bash\necho "mknod $*" >>"${CALLS}"\n[ "$1" = -m ] && shift 2\ntouch "$1"\necho "mknod noise" >&2\n',
    "logger": '#!/bin/bash\necho "logger $*" >>"${CALLS}.syslog"\n',
}
_SCONTROL = (
    "#!/bin/bash\n"
    'echo "scontrol $*" >>"${CALLS}"\n'
    '[ -n "${FAKE_NO_ADDRESSES:-}" ] && exit 0\n'
    'echo "NodeName=gb-1 Arch=aarch64 NodeAddr=10.0.2.11 NodeHostName=gb-1 State=ALLOCATED"\n'
    'echo "NodeName=gb-2 Arch=aarch64 NodeAddr=10.0.2.12 NodeHostName=gb-2 State=ALLOCATED"\n'
)


class Sandbox:
    def __init__(self, tmp_path: Path, spec: ImexPrologSpec = SPEC) -> None:
        self.root = tmp_path / "root"
        self.calls = tmp_path / "calls"
        self.spec = spec
        for name, body in {**_STUBS, spec.slurm_bin_dir.lstrip("/") + "/scontrol": _SCONTROL}.items():
            stub = self.root / ("bin" if "/" not in name else "") / name
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text(body)
            stub.chmod(0o755)
        (self.root / "proc").mkdir()
        (self.root / "proc/devices").write_text("Character devices:\n195 nvidia\n508 nvidia-caps-imex-channels\n")
        (self.root / spec.log_file_path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        self.prolog = tmp_path / "prolog.sh"
        self.prolog.write_text(render_imex_prolog(spec))

    def run(self, **env: str) -> tuple[int, list[str]]:
        environment = {
            "FMCONSTRUCTS_ROOT": str(self.root),
            "CALLS": str(self.calls),
            "FAKE_TYPE": "p6e-gb300.36xlarge",
            "SLURM_JOB_ID": "7",
            "SLURM_JOB_NODELIST": "gb-[1-2]",
            "SLURM_JOB_OVERSUBSCRIBE": "NO",
            **env,
        }
        done = subprocess.run(
            ["/bin/bash", str(self.prolog)], env=environment, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
        )
        calls = self.calls.read_text().splitlines() if self.calls.exists() else []
        return done.returncode, calls

    @property
    def nodes_config(self) -> Path:
        return self.root / IMEX_NODES_CONFIG_PATH.lstrip("/")

    @property
    def log(self) -> str:
        return (self.root / self.spec.log_file_path.lstrip("/")).read_text()


def _changes(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith(("mknod", "pkill", "systemctl stop", "systemctl start"))]


def test_configures_imex_for_an_exclusive_job(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    status, calls = box.run()
    assert status == 0
    assert box.nodes_config.read_text() == "10.0.2.11\n10.0.2.12\n"
    assert "scontrol -ao show node gb-[1-2]" in calls
    # stopped before the nodes file changes, started after
    assert _changes(calls) == [
        f"mknod {box.root}{IMEX_CHANNEL_PATH} c 508 0",
        "systemctl stop nvidia-imex config=",
        "pkill -9 -x nvidia-imex",
        "systemctl start nvidia-imex config=10.0.2.11 10.0.2.12 ",
    ]
    assert "PROLOG Start JobId=7" in box.log and "PROLOG End JobId=7" in box.log
    syslog = (tmp_path / "calls.syslog").read_text()
    assert "logger -t 91_nvidia_imex_prolog" in syslog and "PROLOG End JobId=7" in syslog


_BACKENDS = pytest.mark.parametrize(
    "spec",
    [pcs_user_data.imex_prolog_spec(), parallelcluster_imex.imex_prolog_spec()],
    ids=["pcs", "parallelcluster"],
)


@_BACKENDS
def test_each_backend_stops_imex_before_rewriting_the_nodes_file(tmp_path: Path, spec: ImexPrologSpec) -> None:
    # The PCS guide's "Limitations": nodes_config.cfg cannot be modified while the service runs (the ParallelCluster
    # page wrote it first; the prolog ParallelCluster nodes got before the shared renderer did too).
    box = Sandbox(tmp_path, spec)
    status, calls = box.run(FAKE_TYPE="p6e-gb200.36xlarge")
    assert status == 0
    assert [c for c in calls if c.startswith("systemctl st")] == [
        "systemctl stop nvidia-imex config=",
        "systemctl start nvidia-imex config=10.0.2.11 10.0.2.12 ",
    ]


@_BACKENDS
def test_each_backend_calls_no_scontrol_without_a_node_list(tmp_path: Path, spec: ImexPrologSpec) -> None:
    box = Sandbox(tmp_path, spec)
    status, calls = box.run(FAKE_TYPE="p6e-gb200.36xlarge", SLURM_JOB_NODELIST="", SLURM_NODELIST="")
    assert status == 0
    assert not [c for c in calls if c.startswith(("scontrol", "systemctl stop", "pkill"))]
    assert not box.nodes_config.exists()


def test_command_errors_go_to_the_log_file(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    box.run()
    assert "mknod noise" in box.log


def test_slurm_bin_dir_comes_first_on_path(tmp_path: Path) -> None:
    # scontrol only exists under the spec's Slurm directory in the sandbox
    box = Sandbox(tmp_path, _spec(slurm_bin_dir="/opt/other/slurm-26.05/bin"))
    status, calls = box.run()
    assert status == 0 and "scontrol -ao show node gb-[1-2]" in calls


def test_channel_mode_is_passed_to_mknod(tmp_path: Path) -> None:
    box = Sandbox(tmp_path, _spec(channel_mode=0o666))
    _, calls = box.run()
    assert f"mknod -m 666 {box.root}{IMEX_CHANNEL_PATH} c 508 0" in calls


def test_reads_slurm_nodelist_when_slurm_job_nodelist_is_unset(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    _, calls = box.run(SLURM_JOB_NODELIST="", SLURM_NODELIST="gb-[1-2]")
    assert "scontrol -ao show node gb-[1-2]" in calls and box.nodes_config.exists()


@pytest.mark.parametrize(
    ("env", "channel"),
    [
        ({"SLURM_JOB_OVERSUBSCRIBE": "OK"}, False),  # a shared job
        ({"SLURM_JOB_OVERSUBSCRIBE": "NO", "SLURM_JOB_EXCLUSIVE": "USER"}, False),  # Slurm 26.05 reports it here
        ({"FAKE_TYPE": "p5en.48xlarge"}, False),  # not one of the spec's families
        ({"FAKE_IMEX_DISABLED": "1"}, False),
        ({"SLURM_JOB_NODELIST": ""}, True),  # no node list: no scontrol call (it would list every node)
        ({"FAKE_NO_ADDRESSES": "1"}, True),  # no addresses: the nodes file stays as it is
    ],
    ids=["shared-job", "exclusive-user", "other-instance-type", "imex-disabled", "no-node-list", "no-addresses"],
)
def test_leaves_imex_alone(tmp_path: Path, env: dict[str, str], channel: bool) -> None:
    box = Sandbox(tmp_path)
    status, calls = box.run(**env)
    assert status == 0
    assert not box.nodes_config.exists()
    assert _changes(calls) == ([f"mknod {box.root}{IMEX_CHANNEL_PATH} c 508 0"] if channel else [])
    assert "PROLOG End JobId=7" in box.log


def test_no_node_list_means_no_scontrol_call(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    _, calls = box.run(SLURM_JOB_NODELIST="")
    assert not [c for c in calls if c.startswith("scontrol")]


@pytest.mark.parametrize("value", ["NODE", "TOPO"])
def test_slurm_job_exclusive_node_or_topo_counts_as_exclusive(tmp_path: Path, value: str) -> None:
    box = Sandbox(tmp_path)
    status, _ = box.run(SLURM_JOB_OVERSUBSCRIBE="OK", SLURM_JOB_EXCLUSIVE=value)
    assert status == 0 and box.nodes_config.exists()


def test_instance_families_limit_the_nodes(tmp_path: Path) -> None:
    box = Sandbox(tmp_path, _spec(instance_families=("p6e-gb200",)))
    box.run()  # a p6e-gb300
    assert not box.nodes_config.exists()


def test_no_channel_without_a_major_number(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    (box.root / "proc/devices").write_text("Character devices:\n195 nvidia\n")
    status, calls = box.run()
    assert status == 0
    assert not [c for c in calls if c.startswith("mknod")]
    assert "no IMEX channel created" in box.log
    assert box.nodes_config.exists()  # the rest still runs


def test_never_fails_the_job(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    status, _ = box.run(FAKE_START_RC="1")
    assert status == 0
    assert "nvidia-imex did not start" in box.log


# --- bad input ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "parameter"),
    [
        ({"guide": "two\nlines"}, "guide"),
        ({"guide": "a @PLACEHOLDER@"}, "guide"),
        ({"guide": ""}, "guide"),
        ({"guide": 5}, "guide"),
        ({"differences_in": "/abs/module.py"}, "differences_in"),
        ({"differences_in": "fmconstructs/x.sh"}, "differences_in"),
        ({"prolog_path": "relative/prolog.sh"}, "prolog_path"),
        ({"prolog_path": "/opt/prolog.sh\n"}, "prolog_path"),
        ({"prolog_path": "/opt/my prolog.sh"}, "prolog_path"),
        ({"slurm_bin_dir": "/opt/slurm/bin/"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": "/opt/slurm-$(reboot)/bin"}, "slurm_bin_dir"),
        ({"slurm_bin_dir": cdk.Token.as_string(cdk.Aws.REGION)}, "slurm_bin_dir"),
        ({"log_file_path": "var/log/x.log"}, "log_file_path"),
        ({"instance_families": ()}, "instance_families"),
        ({"instance_families": "p6e-gb200"}, "instance_families"),
        ({"instance_families": ("p6e-gb200", "p6e-gb200")}, "instance_families"),
        ({"instance_families": ("p6e-gb200.36xlarge",)}, r"instance_families\[0\]"),
        ({"instance_families": ("P6E-GB200",)}, r"instance_families\[0\]"),
        ({"instance_families": ("p6e|.*",)}, r"instance_families\[0\]"),
        ({"channel_mode": 0o1777}, "channel_mode"),
        ({"channel_mode": -1}, "channel_mode"),
        ({"channel_mode": "666"}, "channel_mode"),
        ({"channel_mode": True}, "channel_mode"),
    ],
)
def test_rejects_bad_specs(changes: dict[str, Any], parameter: str) -> None:
    with pytest.raises(FmValidationError, match=rf"^{parameter} must be"):
        _spec(**changes)


def test_rejects_what_is_not_a_spec() -> None:
    with pytest.raises(FmValidationError, match=r"^spec must be an ImexPrologSpec"):
        render_imex_prolog({"guide": "x"})  # type: ignore[arg-type]
