"""The collector scripts travel in the nodes' user data without comments and docstrings (the 16 KB inline budget):
the embedded text is the same program as the source, and, run on the same fake Slurm, writes the same metrics."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from fmconstructs.observability.collection import node_files
from tests.test_slurm_jobs_textfile import FAKE_SQUEUE

PKG = Path(__file__).resolve().parent.parent / "fmconstructs" / "observability" / "node"
SCRIPTS = {"efa_textfile.py": False, "slurm_textfile.py": True}


def _without_docstrings(source: str) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


@pytest.mark.parametrize(("name", "login"), SCRIPTS.items())
def test_embedded_script_is_the_source_program_and_smaller(name: str, login: bool) -> None:
    embedded, mode = node_files(login_node=login)[f"/opt/fmconstructs/{name}"]
    source = (PKG / name).read_text()
    assert mode == 0o755 and embedded.startswith("#!/usr/bin/env python3\n")
    assert ast.dump(ast.parse(embedded)) == _without_docstrings(source)
    assert len(embedded) < 0.9 * len(source)
    assert '"""' not in embedded and "\n#" not in embedded


def test_embedded_slurm_script_writes_what_the_source_writes(tmp_path: Path) -> None:
    sinfo, squeue = tmp_path / "sinfo", tmp_path / "squeue"
    sinfo.write_text("#!/bin/sh\nprintf 'idle 2\\ndown 1\\n'\n")
    squeue.write_text(FAKE_SQUEUE)
    for fake in (sinfo, squeue):
        fake.chmod(0o755)
    embedded = tmp_path / "embedded.py"
    embedded.write_text(node_files(login_node=True)["/opt/fmconstructs/slurm_textfile.py"][0])
    outputs = []
    for script in (PKG / "slurm_textfile.py", embedded):
        out = tmp_path / f"{script.stem}.prom"
        args = [str(out), "--sinfo", str(sinfo), "--squeue", str(squeue)]
        subprocess.run([sys.executable, "-I", str(script), *args], check=True, timeout=60)
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] and 'fm_slurm_job_info{hpc_job="1001"' in outputs[1]


def test_login_node_without_the_slurm_exporter() -> None:
    files = node_files(login_node=True, slurm_exporter=False)
    assert "/etc/systemd/system/fm-slurm-exporter.service" not in files
    assert "/opt/fmconstructs/slurm_textfile.py" in files  # the per-job info stays
