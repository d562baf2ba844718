"""Node-side collectors against a fake sysfs tree and a fake sinfo; output checked with promtool."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fmconstructs.observability.collection import NODE_LIFECYCLE_SCRIPT
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


# --- clean-shutdown marker (fm_node_shutting_down), read by the NodeStoppedReporting alert ---


@pytest.fixture
def lifecycle_script(tmp_path: Path) -> Path:
    path = tmp_path / "node_lifecycle.sh"
    path.write_text(NODE_LIFECYCLE_SCRIPT)
    return path


def test_lifecycle_script_passes_shellcheck(lifecycle_script):
    proc = subprocess.run(["shellcheck", "-s", "sh", str(lifecycle_script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_start_writes_0_and_stop_without_agent_writes_1(lifecycle_script, tmp_path):
    out = tmp_path / "textfile" / "fm_node_lifecycle.prom"
    out.parent.mkdir()
    subprocess.run(["sh", str(lifecycle_script), "start", str(out)], check=True)
    assert out.read_text().rstrip().endswith("fm_node_shutting_down 0")
    promtool_check(out.read_text())
    subprocess.run(["sh", str(lifecycle_script), "stop", str(out), "0"], check=True)
    assert out.read_text().rstrip().endswith("fm_node_shutting_down 1")
    promtool_check(out.read_text())
    assert [f.name for f in out.parent.iterdir()] == [out.name]  # written through a temporary file, then moved


class FakeAgent:
    """Answers /metrics like a Prometheus agent whose remote-write queue has sent samples up to ``sent()``."""

    def __init__(self, sent) -> None:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                body = (
                    "# TYPE prometheus_remote_storage_queue_highest_sent_timestamp_seconds gauge\n"
                    'prometheus_remote_storage_queue_highest_sent_timestamp_seconds{remote_name="a",url="https://aps"} '
                    f"{sent():.12e}\n"  # Go's client prints large floats with an exponent
                    "prometheus_remote_storage_queue_highest_timestamp_seconds 9e+99\n"
                )
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.requests = 0
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def stop_with_agent(script: Path, out: Path, agent: FakeAgent, seconds: int, interval: int):
    env = {"PATH": "/usr/bin:/bin", "FM_AGENT_URL": agent.url, "FM_SEND_DEADLINE_SECONDS": "0"}
    started = time.time()
    proc = subprocess.run(
        ["sh", str(script), "stop", str(out), str(seconds), str(interval)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc, time.time() - started


def test_stop_waits_until_the_agent_sent_samples_scraped_after_the_marker(lifecycle_script, tmp_path):
    """Slurm nodes: ExecStop returns once the agent's remote-write queue has sent samples one scrape interval newer
    than the marker (so the node job was scraped with it), not at its timeout."""
    written = time.time()
    agent = FakeAgent(lambda: written if time.time() < written + 3 else time.time() + 1)
    try:
        out = tmp_path / "fm_node_lifecycle.prom"
        proc, elapsed = stop_with_agent(lifecycle_script, out, agent, seconds=30, interval=2)
    finally:
        agent.close()
    assert proc.returncode == 0 and "not sent" not in proc.stderr
    assert out.read_text().rstrip().endswith("fm_node_shutting_down 1")
    assert 2 <= elapsed < 10 and agent.requests >= 2


def test_stop_gives_up_at_its_timeout_when_nothing_is_sent(lifecycle_script, tmp_path):
    agent = FakeAgent(lambda: 0.0)
    try:
        out = tmp_path / "fm_node_lifecycle.prom"
        proc, elapsed = stop_with_agent(lifecycle_script, out, agent, seconds=3, interval=30)
    finally:
        agent.close()
    assert proc.returncode == 0  # never blocks the shutdown beyond its budget
    assert "fm_node_shutting_down: not sent in 3s" in proc.stderr
    assert 2 <= elapsed < 8
