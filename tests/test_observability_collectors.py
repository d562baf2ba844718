"""Node-side collectors against a fake sysfs tree and a fake sinfo; output checked with promtool."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs.observability.metrics import EFA_COUNTERS, efa_metric
from fmconstructs.observability.node import efa_textfile, slurm_textfile

PKG = Path(efa_textfile.__file__).parent


def fake_sysfs(root: Path, devices: int = 2) -> Path:
    for d in range(devices):
        hw = root / f"rdmap{16 + d}s27" / "ports" / "1" / "hw_counters"
        hw.mkdir(parents=True)
        for i, counter in enumerate(EFA_COUNTERS):
            (hw / counter).write_text(f"{(d + 1) * 1000 + i}\n")
        (hw / "lifespan").write_text("12\n")
        (hw / "Bad-Name").write_text("1\n")  # not a valid metric name: skipped
        (hw / "garbage").write_text("n/a\n")  # not an integer: skipped
    return root


def promtool_check(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it"
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    # check metrics lints naming; exit 0 means parseable and lint-clean
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_efa_counters_are_exported(tmp_path):
    root = fake_sysfs(tmp_path / "infiniband")
    text = efa_textfile.render(efa_textfile.read_counters(root))
    assert f'{efa_metric("rdma_read_wr_err")}{{device="rdmap16s27",port="1"}} 1008' in text
    assert f'{efa_metric("tx_bytes")}{{device="rdmap17s27",port="1"}} 2000' in text
    assert "Bad-Name" not in text and "garbage" not in text
    assert text.rstrip().endswith("fm_efa_collector_success 1")
    for counter in EFA_COUNTERS:
        assert f"# TYPE {efa_metric(counter)} counter" in text
    promtool_check(text)


def test_no_efa_device_reports_failure(tmp_path):
    text = efa_textfile.render(efa_textfile.read_counters(tmp_path / "missing"))
    assert text.rstrip().endswith("fm_efa_collector_success 0")
    promtool_check(text)


def test_efa_script_runs_standalone_and_writes_atomically(tmp_path):
    root = fake_sysfs(tmp_path / "infiniband", devices=1)
    out = tmp_path / "textfile" / "fm_efa.prom"
    subprocess.run(
        [sys.executable, "-I", str(PKG / "efa_textfile.py"), str(out), "--sysfs-root", str(root)], check=True
    )
    assert "fm_efa_collector_success 1" in out.read_text()
    assert not list(out.parent.glob(".fm_efa.*"))


SINFO = """idle 4
allocated 10
mixed 2
down* 1
drained 3
idle~ 12
draining 1
garbage line here
"""


def test_sinfo_states_are_counted():
    counts = slurm_textfile.parse_sinfo(SINFO)
    assert counts["idle"] == 16 and counts["down"] == 1 and counts["drained"] == 3
    assert counts["fail"] == 0  # known states are always present
    text = slurm_textfile.render(counts)
    assert 'fm_slurm_nodes{state="down"} 1' in text
    assert text.rstrip().endswith("fm_slurm_collector_success 1")
    promtool_check(text)


def test_sinfo_failure_is_reported(tmp_path):
    fake = tmp_path / "sinfo"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert slurm_textfile.run_sinfo(str(fake)) is None
    assert slurm_textfile.run_sinfo(str(tmp_path / "absent")) is None
    text = slurm_textfile.render(None)
    assert "fm_slurm_collector_success 0" in text
    promtool_check(text)


@pytest.mark.parametrize("script", ["efa_textfile.py", "slurm_textfile.py"])
def test_scripts_use_only_the_standard_library(script):
    source = (PKG / script).read_text()
    imports = {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    }
    assert imports <= set(sys.stdlib_module_names)


def test_slurm_script_runs_standalone(tmp_path):
    fake = tmp_path / "sinfo"
    fake.write_text("#!/bin/sh\nprintf 'idle 2\\ndown 1\\n'\n")
    fake.chmod(0o755)
    out = tmp_path / "fm_slurm.prom"
    subprocess.run([sys.executable, "-I", str(PKG / "slurm_textfile.py"), str(out), "--sinfo", str(fake)], check=True)
    assert 'fm_slurm_nodes{state="down"} 1' in out.read_text()
