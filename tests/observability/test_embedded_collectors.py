"""The collector scripts travel in the nodes' user data without comments and docstrings (the 16 KB inline budget):
the embedded text is the same program as the source, and, run on the same fake Slurm, writes the same metrics."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from fmconstructs.observability.collection import node_files
from fmconstructs.observability.pcs import monitor_pcs_cluster
from fmconstructs.observability.workspace import PrometheusWorkspace
from fmconstructs.pcs import PcsAmi, PcsCluster

from tests.conftest import ENV, new_app
from tests.support.slurm_jobs_textfile import FAKE_SQUEUE

PKG = Path(__file__).resolve().parents[2] / "fmconstructs" / "observability" / "node"
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


def _monitored_login(synthesizer: cdk.IStackSynthesizer | None) -> tuple[cdk.Stack, str]:
    app = new_app()
    stack = cdk.Stack(app, "Login", env=ENV, synthesizer=synthesizer)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1"],
    )
    workspace = PrometheusWorkspace(cdk.Stack(app, "Metrics", env=ENV), "Prometheus")
    pcs = PcsCluster(stack, "Cluster", vpc=vpc)
    login = pcs.add_login_node_group("Login", ami=PcsAmi.from_image_id("ami-0123456789abcdef0"), nodes=1)
    monitor_pcs_cluster(pcs, workspace, cluster_label="t")
    Template.from_stack(stack)
    (step,) = [s for s in login.bootstrap.steps if s.name == "observability"]
    return stack, "\n".join(step.commands)


def test_inline_user_data_login_nodes_skip_the_slurm_exporter_with_a_warning() -> None:
    stack, commands = _monitored_login(cdk.BootstraplessSynthesizer())
    assert "fm_slurm_exporter " not in commands and "fm-slurm-textfile.timer" in commands
    Annotations.from_stack(stack).has_warning(
        "/Login/Cluster", Match.string_like_regexp("login nodes run no Slurm exporter")
    )


def test_asset_user_data_login_nodes_run_the_slurm_exporter() -> None:
    stack, commands = _monitored_login(None)
    assert "fm_slurm_exporter 1.8.4" in commands
    assert not Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("run no Slurm exporter"))
