"""Helpers of tests/observability/test_observability_exporter_source.py that other test modules use too."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path


def fake_tool(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def run_node_shell(lines: list[str], root: Path, tools: Path, calls: str) -> subprocess.CompletedProcess[str]:
    text = "\n".join(lines).replace("/opt/fmconstructs", str(root / "opt"))
    script = f"set -uo pipefail\ngoarch=amd64\nmkdir -p {root / 'opt'}\n{text}\n{calls}\n"
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=root)
